//! The builtin-name tables: which names the language predefines (Python builtins and
//! types, the object-spatial builtins, the event built-ins and their module paths). A
//! low module: the checker resolves names with them and the interpreter installs them,
//! so neither imports the other for it.

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
    "setattr",
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
