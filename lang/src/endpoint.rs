//! The plain data a server exchanges with the language: the endpoint table (walkers and
//! functions with typed parameters and `@restspec` options), `@subscribe` handlers and
//! the outcome of a served call. A low module: the interpreter fills these in and
//! `serve` hands them out, so neither has to import the other's driver.

use crate::host::{AnchorId, HostError};
use serde_json::Value as Json;

/// A walker or a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointKind {
    Walker,
    Function,
}

/// The declared type of a parameter, as far as the server cares.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeInfo {
    Any,
    Int,
    Float,
    Str,
    Bool,
    None,
    List(Box<TypeInfo>),
    Tuple(Vec<TypeInfo>),
    Dict(Box<TypeInfo>, Box<TypeInfo>),
    /// `T | None`
    Optional(Box<TypeInfo>),
    Union(Vec<TypeInfo>),
    /// A multipart file upload (`UploadFile`).
    UploadFile,
    /// An `obj`/node archetype by name (a JSON object of its fields).
    Object(String),
    /// An enum by name with its member values.
    Enum(String, Vec<Json>),
}

/// One parameter: a walker `has` field or a function parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    pub ty: TypeInfo,
    pub required: bool,
    /// The default value as JSON, when it is a constant the server can show.
    pub default: Option<Json>,
}

/// The protocol of `@restspec(protocol=...)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Webhook,
    Websocket,
}

/// `@restspec(...)` options, with the spec's defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct RestSpec {
    /// Upper-case HTTP method (`POST` by default).
    pub method: String,
    /// Custom path (`None` = `/walker/<name>` or `/function/<name>`).
    pub path: Option<String>,
    pub protocol: Protocol,
    pub broadcast: bool,
    /// Content type for `envelope=false` (`None` = `text/plain; charset=utf-8`).
    pub produces: Option<String>,
    pub envelope: bool,
    /// The alternate webhook flavor: where the walker's caller puts the key (the
    /// `webhook` setting of a `__specs__` class inside the walker). A walker with it is a
    /// WEBHOOK walker served at `/webhook/walker/<name>`.
    pub webhook: Option<WebhookKeySpec>,
}

/// Where an alternate-flavor webhook call carries its key (spec "Alternate webhook
/// flavor").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPlacement {
    Header,
    Query,
    Path,
    Body,
}

impl KeyPlacement {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyPlacement::Header => "header",
            KeyPlacement::Query => "query",
            KeyPlacement::Path => "path",
            KeyPlacement::Body => "body",
        }
    }
}

/// A walker's `__specs__` `webhook` setting: `{"type": header|query|path|body, "name": ..}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookKeySpec {
    pub placement: KeyPlacement,
    /// Header name, query parameter, path variable or body field (default `X-API-KEY`).
    pub name: String,
}

/// The default key name of the alternate webhook flavor.
pub const DEFAULT_WEBHOOK_KEY_NAME: &str = "X-API-KEY";

impl Default for RestSpec {
    fn default() -> RestSpec {
        RestSpec {
            method: "POST".into(),
            path: None,
            protocol: Protocol::Http,
            broadcast: false,
            produces: None,
            envelope: true,
            webhook: None,
        }
    }
}

/// One walker or function of the app, as an endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointInfo {
    pub kind: EndpointKind,
    pub name: String,
    /// Declared `:pub` (no token needed).
    pub public: bool,
    pub params: Vec<ParamInfo>,
    /// Declared return type of a function.
    pub returns: Option<TypeInfo>,
    pub spec: RestSpec,
    /// Docstring, if any.
    pub doc: Option<String>,
    /// Walkers: an `async walker`.
    pub is_async: bool,
}

/// Where a walker starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The running user's root.
    Root,
    /// A node by id (the user must be able to read it).
    Node(AnchorId),
}

/// A successful call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// Function: the return value. Walker: the executed walker as an object.
    pub result: Json,
    /// Walker: its reports. Function: reports made outside any walk (usually empty).
    pub reports: Vec<Json>,
}

/// Why a call failed. The server maps each to an HTTP status and error code.
#[derive(Clone, Debug, PartialEq)]
pub enum CallError {
    /// No such walker/function in the app (404).
    NotFound(String),
    /// Arguments did not validate: `(field, message)` pairs (422).
    Validation(Vec<(String, String)>),
    /// The svc code raised: the rendered message with its source position (500).
    Runtime { exc_type: String, message: String },
    /// A resource limit was hit (500).
    Limit(String),
    /// The commit lost an optimistic-concurrency race (409 after replays).
    Conflict(String),
    /// A commit lost a race after an earlier `commit()` of the same call had stored
    /// something: replaying would repeat those effects, so the call fails (409) at once.
    ConflictAfterCommit(String),
    /// The result would exceed `Limits::max_response_bytes` (500).
    ResponseTooLarge(String),
    /// The run queue is full: try again later (503 with `Retry-After`).
    Overloaded(String),
    /// The store was restarted while the call ran; nothing was committed: try again
    /// (503 with `Retry-After`).
    Unavailable(String),
    /// The caller went away before the call finished; nothing was committed.
    Cancelled,
    /// Storage failed (500).
    Host(String),
}

impl CallError {
    /// A storage failure of a call. `after_commit`: an earlier `commit()` of the same
    /// call already stored something, so a lost race cannot be replayed.
    pub fn from_host(e: HostError, after_commit: bool) -> CallError {
        match e {
            HostError::Conflict(m) if after_commit => CallError::ConflictAfterCommit(m),
            HostError::Conflict(m) => CallError::Conflict(m),
            HostError::Unavailable(m) => CallError::Unavailable(m),
            other => CallError::Host(other.to_string()),
        }
    }
}

/// `retry=` of one `@subscribe`: what it overrides of `[scale.events.retry]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryOverride {
    pub max_attempts: Option<u32>,
    pub backoff_seconds: Option<Vec<f64>>,
    pub dead_letter_suffix: Option<String>,
}

/// One `@subscribe(topic, group=, retry=, start_from=)` handler of the app: a
/// module-level `def` taking one `Event`.
#[derive(Clone, Debug, PartialEq)]
pub struct SubscriptionInfo {
    /// The handler function's name.
    pub handler: String,
    pub topic: String,
    /// `None` = the configured default group.
    pub group: Option<String>,
    /// `latest` (default), `earliest` or a broker position; used only when the group is
    /// created.
    pub start_from: Option<String>,
    pub retry: RetryOverride,
}

/// Which JSON a graph query answers with (decisions.md "Graph").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphShape {
    /// `/graph/data`: `{version, nodes: [{id, label, type}], edges: [{id, from, to, label}]}`.
    Data,
    /// `/traverse`: `{nodes: [{id, type, edges, context?}], edges: [{id, type, source,
    /// target, context?}]}`.
    Traverse,
}

/// A bounded, access-checked view of the graph from one anchor (`graph_view`).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphQuery {
    /// The start node or edge; `None` = the caller's root.
    pub source: Option<AnchorId>,
    /// Hops from the source; `None` = until the bounds stop the walk.
    pub depth: Option<u32>,
    /// Include archetype fields (`context`) in a `Traverse` answer.
    pub detailed: bool,
    /// Only nodes of these types (or their subtypes); `None` = all.
    pub node_types: Option<Vec<String>>,
    /// Only edges of these types (or their subtypes); `None` = all.
    pub edge_types: Option<Vec<String>>,
    /// At most this many nodes and edges; a walk cut short says `truncated: true`.
    pub max_nodes: usize,
    pub max_edges: usize,
    pub shape: GraphShape,
}
