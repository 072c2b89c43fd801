//! What a server needs from the language: the endpoint table of a loaded program
//! (walkers and functions with their parameters and `@restspec` options) and calls that
//! take and give JSON. This is the only place where program values cross to JSON for the
//! HTTP layer; the wire format itself (the envelope) belongs to the server.

use crate::driver::Limits;
use crate::host::{AnchorId, Host};
use crate::interp::{Interp, Program};
use serde_json::{Map, Value as Json};
use std::path::Path;

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

/// A program loaded for serving: parse, check and run module-level code once; each call
/// then starts from this state with a fresh graph.
pub struct LoadedApp {
    pub program: Program,
    pub endpoints: Vec<EndpointInfo>,
    /// The `@subscribe` handlers (not endpoints), in file order.
    pub subscriptions: Vec<SubscriptionInfo>,
    /// Text the module-level code printed while loading.
    pub load_output: String,
}

/// Load `path` for serving; `Err` is the text for stderr (diagnostics or a runtime error).
/// Module code and plain `with entry` blocks run; `with entry:__main__` blocks do not
/// (the server imports the app; see `load_app_as_main`).
pub fn load_app(path: &Path, host: &mut dyn Host, limits: &Limits) -> Result<LoadedApp, String> {
    crate::interp::serve_support::load_app(path, host, limits, false)
}

/// `load_app`, treating the entry as the main module when `as_main` (`svc start --main`):
/// its `with entry:__main__` blocks run too.
pub fn load_app_as_main(
    path: &Path,
    host: &mut dyn Host,
    limits: &Limits,
    as_main: bool,
) -> Result<LoadedApp, String> {
    crate::interp::serve_support::load_app(path, host, limits, as_main)
}

/// Run walker `name` with `args` (JSON object of its `has` fields) from `start`, commit,
/// and return the walker and its reports as JSON.
pub fn spawn_walker(
    app: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    name: &str,
    args: &Map<String, Json>,
    start: Start,
) -> Result<CallOutcome, CallError> {
    let mut it = Interp::with_program(host, limits.clone(), app);
    it.serve_spawn(name, args, start)
}

/// Call function `name` with `args` (JSON object of its parameters), commit, and return
/// its result as JSON.
pub fn call_function(
    app: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    name: &str,
    args: &Map<String, Json>,
) -> Result<CallOutcome, CallError> {
    let mut it = Interp::with_program(host, limits.clone(), app);
    it.serve_call(name, args)
}

/// Make an instance of the app's `obj` named `class` (its `has` fields from `fields`,
/// coerced by type; fields it does not declare are left out), call `method` on it with
/// positional `args`, commit, and return the result as JSON. Hosts use it for plug-ins
/// written in svc, such as an e-mail provider named `package.module:ClassName`.
pub fn call_object_method(
    app: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    class: &str,
    fields: &Map<String, Json>,
    method: &str,
    args: &[Json],
) -> Result<Json, CallError> {
    let mut it = Interp::with_program(host, limits.clone(), app);
    it.serve_object_method(class, fields, method, args)
}

/// Deliver one event to the `@subscribe` handler `handler`: a fresh run calls it with
/// the `Event` built from `record` (a JSON object of the record's fields, as
/// `interp::events::EVENT_FIELDS` names them) and commits. A raised exception is
/// `CallError::Runtime` (the delivery failed).
pub fn deliver_event(
    app: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    handler: &str,
    record: &Json,
) -> Result<CallOutcome, CallError> {
    let mut it = Interp::with_program(host, limits.clone(), app);
    it.serve_event(handler, record)
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

/// The part of the graph the caller may read from `query.source`, breadth-first along
/// outgoing edges, as JSON (`CallOutcome::result`). Nothing is committed. An unknown or
/// unreadable source is `CallError::NotFound`.
pub fn graph_view(
    app: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    query: &GraphQuery,
) -> Result<CallOutcome, CallError> {
    let mut it = Interp::with_program(host, limits.clone(), app);
    it.serve_graph(query)
}
