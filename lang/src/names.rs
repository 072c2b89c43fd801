//! The builtin-name tables: which names the language predefines (Python builtins and
//! types, the object-spatial builtins, the event built-ins and their module paths). A
//! low module: the checker resolves names with them and the interpreter installs them,
//! so neither imports the other for it.

pub mod stdlib;

/// Names of the builtin functions implemented here (the checker uses this list for name
/// resolution). Builtin types (`int`, `str`, `range`, `type`, ...) are in [`BUILTIN_TYPES`]:
/// they are classes, called through `interp::builtins::construct_builtin`.
pub const BUILTIN_FUNCTIONS: &[&str] = &[
    "print",
    "len",
    "repr",
    "abs",
    "round",
    "min",
    "max",
    "sum",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "map",
    "filter",
    "any",
    "all",
    "isinstance",
    "issubclass",
    "hasattr",
    "getattr",
    "vars",
    "setattr",
    "delattr",
    "hash",
    "id",
    "ord",
    "chr",
    "divmod",
    "pow",
    "bin",
    "hex",
    "oct",
    "iter",
    "next",
    "input",
    "callable",
    "dir",
    "open",
    "format",
    "ascii",
];

/// Builtin types callable as constructors through `interp::builtins::construct_builtin`.
pub const BUILTIN_TYPES: &[&str] = &[
    "int",
    "float",
    "str",
    "bool",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "range",
    "type",
    "object",
];

/// Object-spatial builtins handled by the interpreter itself.
pub const OSP_BUILTINS: &[&str] = &[
    "jid",
    "jobj",
    "grant",
    "revoke",
    "allroots",
    "save",
    "commit",
    "on_commit",
    "printgraph",
    "perm_grant",
    "perm_revoke",
    "allow_root",
    "disallow_root",
    "restspec",
    "schedule",
    "destroy",
    "kvstore",
];

/// Import paths of the original that resolve to the event built-ins (decisions.md).
pub const EVENT_MODULES: &[&str] = &[
    "jaclang.scale.events.publisher",
    "jaclang.scale.events.subscriber",
    "jaclang.scale.events.broker",
    "events",
];

/// The names those modules provide.
pub const EVENT_NAMES: &[&str] = &["publish", "subscribe", "Event", "broker"];

/// Import paths of the consumer-side controls of service-to-service calls: svc's own
/// `sv_client` and the original's `jaclang.runtimelib` (which provides `sv_client`).
pub const SV_CLIENT_MODULES: &[&str] = &["sv_client", "jaclang.runtimelib"];

/// The functions of `sv_client` (spec "Service-to-service calls", point 8).
pub const SV_CLIENT_NAMES: &[&str] = &[
    "register",
    "unregister",
    "register_test_client",
    "unregister_test_client",
    "clear_test_clients",
    "resolve_url",
];

/// The environment variable naming a provider's URL: `SVC_SV_<MODULE>_URL`, the module
/// name upper-cased with every other character as `_`.
pub fn sv_env_var(module: &str) -> String {
    let upper: String = module
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("SVC_SV_{upper}_URL")
}
