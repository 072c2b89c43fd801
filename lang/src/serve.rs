//! What a server needs from the language: the endpoint table of a loaded program
//! (walkers and functions with their parameters and `@restspec` options) and calls that
//! take and give JSON. This is the only place where program values cross to JSON for the
//! HTTP layer; the wire format itself (the envelope) belongs to the server.

pub use crate::endpoint::*;
use crate::host::Host;
use crate::interp::Interp;
pub use crate::interp::Program;
pub use crate::interp::serve_support::LoadedApp;
/// The hasher of the interpreter's own maps (anchor-id keyed maps elsewhere use it too).
pub use crate::interp::value::FxBuild;

/// What the server's event broker shares with the language: the native names the
/// interpreter calls through `Host`, and how an event record's fields are made.
pub mod events {
    pub use crate::ids::uuid4;
    pub use crate::interp::events::{EVENT_FIELDS, EVENT_SOURCE, natives, now_rfc3339, rfc3339};
}

/// The native names of `kvstore(...)` objects the interpreter calls through `Host`.
pub mod kvstore {
    pub use crate::interp::kvstore::natives;
}
use crate::limits::Limits;
use serde_json::{Map, Value as Json};
use std::path::Path;

/// Load `path` for serving; `Err` is the text for stderr (diagnostics or a runtime error).
/// Module code and plain `with entry` blocks run; `with entry:__main__` blocks do not
/// (the server imports the app; see `load_app_as_main`).
pub fn load_app(path: &Path, host: &mut dyn Host, limits: &Limits) -> Result<LoadedApp, String> {
    load_app_as_main(path, host, limits, false)
}

/// `load_app`, treating the entry as the main module when `as_main` (`svc start --main`):
/// its `with entry:__main__` blocks run too.
pub fn load_app_as_main(
    path: &Path,
    host: &mut dyn Host,
    limits: &Limits,
    as_main: bool,
) -> Result<LoadedApp, String> {
    let crate::load::Checked { file, module } =
        crate::load::read(path, host).and_then(|file| crate::load::for_run(path, file, host))?;
    crate::interp::serve_support::load_app(path, file, &module, host, limits, as_main)
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
    let outcome = it.serve_spawn(name, args, start);
    it.keep_scratch();
    outcome
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
    let outcome = it.serve_call(name, args);
    it.keep_scratch();
    outcome
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
    let outcome = it.serve_object_method(class, fields, method, args);
    it.keep_scratch();
    outcome
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
    let outcome = it.serve_event(handler, record);
    it.keep_scratch();
    outcome
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
    let outcome = it.serve_graph(query);
    it.keep_scratch();
    outcome
}

/// Why a loaded module does not provide an object with a required interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterfaceError {
    /// The module defines no global of that name.
    Missing,
    /// The name is bound to something other than a type.
    NotAType,
    /// The type is a node, edge, walker or enum, not an `obj` or `class`.
    NotAnObject,
    /// `methods[i]` is missing, has no body, or cannot take that many positional
    /// arguments.
    Method(usize),
}

/// Check that `program`'s main module defines an `obj` (or `class`) named `class` whose
/// methods `methods` (name, positional argument count) each have a body and accept that
/// many positional arguments. Plug-ins written in svc (the e-mail provider) are checked
/// with it before their first call.
pub fn check_object_interface(
    program: &Program,
    host: &mut dyn Host,
    limits: &Limits,
    class: &str,
    methods: &[(&str, usize)],
) -> Result<(), InterfaceError> {
    use crate::ast::ArchKind;
    use crate::interp::value::{ClassKind, FuncBody, Value};
    let it = Interp::with_program(host, limits.clone(), program);
    let c = match it.main_global(class) {
        Some(Value::Class(c)) => c,
        Some(_) => return Err(InterfaceError::NotAType),
        None => return Err(InterfaceError::Missing),
    };
    if !matches!(
        c.kind,
        ClassKind::Arch(ArchKind::Obj) | ClassKind::Arch(ArchKind::Class)
    ) {
        return Err(InterfaceError::NotAnObject);
    }
    for (i, (method, positional)) in methods.iter().enumerate() {
        let callable = c.find_method(method).is_some_and(|f| {
            !matches!(*f.body.borrow(), FuncBody::Missing)
                && accepts_positional(&f.params, *positional)
        });
        if !callable {
            return Err(InterfaceError::Method(i));
        }
    }
    Ok(())
}

/// Whether a function with `params` can be called with exactly `n` positional arguments.
fn accepts_positional(params: &[crate::interp::value::ParamDef], n: usize) -> bool {
    use crate::ast::ParamKind;
    let mut slots = 0;
    let mut keyword_only = false;
    let mut var_args = false;
    for p in params {
        match p.kind {
            ParamKind::Normal if keyword_only => {
                if p.default.is_none() {
                    return false;
                }
            }
            ParamKind::Normal => {
                if slots >= n && p.default.is_none() {
                    return false;
                }
                slots += 1;
            }
            ParamKind::VarArgs => {
                var_args = true;
                keyword_only = true;
            }
            ParamKind::KwOnlyMarker => keyword_only = true,
            ParamKind::KwArgs | ParamKind::PosOnlyMarker => {}
        }
    }
    var_args || slots >= n
}
