//! What a server needs from the language: the endpoint table of a loaded program
//! (walkers and functions with their parameters and `@restspec` options) and calls that
//! take and give JSON. This is the only place where program values cross to JSON for the
//! HTTP layer; the wire format itself (the envelope) belongs to the server.

pub use crate::endpoint::*;
use crate::host::{AnchorId, Host};
pub use crate::interp::serve_support::LoadedApp;
use crate::interp::{Interp, Program};
use crate::limits::Limits;
use serde_json::{Map, Value as Json};
use std::path::Path;

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
