//! Ambient names (Python builtins, exceptions, object-spatial builtins, host natives),
//! known Python modules, and the "did you mean" edit-distance helper.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Python builtin functions and constants a program may name without an import.
const PY_BUILTINS: &[&str] = &[
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "exit",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "quit",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "NotImplemented",
    "Ellipsis",
    "__name__",
    "__file__",
    "__doc__",
    "__import__",
];

/// Python's exception classes (the svc interpreter defines the common ones).
const EXCEPTIONS: &[&str] = &[
    "BaseException",
    "Exception",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "EOFError",
    "EnvironmentError",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "GeneratorExit",
    "IOError",
    "ImportError",
    "IndentationError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "NotADirectoryError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PermissionError",
    "ProcessLookupError",
    "RecursionError",
    "ReferenceError",
    "RuntimeError",
    "StopAsyncIteration",
    "StopIteration",
    "SyntaxError",
    "SystemError",
    "SystemExit",
    "TabError",
    "TimeoutError",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "ValueError",
    "ZeroDivisionError",
    "Warning",
    "UserWarning",
    "DeprecationWarning",
    "RuntimeWarning",
    "ExceptionGroup",
    "BaseExceptionGroup",
];

/// Ambient object-spatial types and constants, and the server helpers a host provides
/// natively (the object-spatial builtin functions come from `interp::OSP_BUILTINS`).
const AMBIENT_NAMES: &[&str] = &[
    "Root",
    "GenericEdge",
    "Node",
    "Edge",
    // The enclosing type (`interp::Interp::self_type`), in annotations and as a value.
    "Self",
    "AccessLevel",
    "APIProtocol",
    "ScheduleTrigger",
    "NoPerm",
    "ReadPerm",
    "ConnectPerm",
    "WritePerm",
    "any",
    // Host natives (service-spec: storage, kvstore, events, sv-to-sv registry).
    "store",
    "StorageFactory",
    "kvstore",
    "publish",
    "Event",
    "subscribe",
    "broker",
    // (and `crate::names::SV_CLIENT_NAMES`, the sv-to-sv registry functions)
    "new",
    "archetype_alias",
];

/// Names accepted inside type annotations only (typing names, width types).
const ANNOTATION_NAMES: &[&str] = &[
    "Optional",
    // The server's multipart file parameter type (service-spec "`@restspec` options").
    "UploadFile",
    "Union",
    "Any",
    "Callable",
    "List",
    "Dict",
    "Set",
    "FrozenSet",
    "Tuple",
    "Type",
    "Iterable",
    "Iterator",
    "Generator",
    "Sequence",
    "Mapping",
    "MutableMapping",
    "Literal",
    "TypeVar",
    "Self",
    "Awaitable",
    "Coroutine",
    "AsyncIterator",
    "NoReturn",
    "Never",
    "ClassVar",
    "Final",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f32",
    "f64",
    "JsxElement",
];

/// Builtin names that are types (valid in `isinstance`, as triggers they never match).
const TYPE_LIKE: &[&str] = &[
    "bool",
    "bytearray",
    "bytes",
    "complex",
    "dict",
    "float",
    "frozenset",
    "int",
    "list",
    "memoryview",
    "object",
    "range",
    "set",
    "slice",
    "str",
    "tuple",
    "type",
    "any",
];

/// Top-level names of Python modules (stdlib and common packages): importing one is
/// E2012 unless a `.svc` file of that name sits beside the importing file.
const PY_MODULES: &[&str] = &[
    "__future__",
    "abc",
    "argparse",
    "array",
    "ast",
    "base64",
    "binascii",
    "bisect",
    "builtins",
    "calendar",
    "cmath",
    "collections",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "csv",
    "ctypes",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "dis",
    "email",
    "enum",
    "errno",
    "fnmatch",
    "fractions",
    "functools",
    "gc",
    "getpass",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "locale",
    "logging",
    "lzma",
    "math",
    "mimetypes",
    "multiprocessing",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "platform",
    "pprint",
    "queue",
    "random",
    "re",
    "secrets",
    "select",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "ssl",
    "stat",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "sys",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tomllib",
    "traceback",
    "types",
    "typing",
    "typing_extensions",
    "unicodedata",
    "unittest",
    "urllib",
    "uuid",
    "warnings",
    "weakref",
    "xml",
    "zipfile",
    "zlib",
    "zoneinfo",
    "numpy",
    "pandas",
    "requests",
    "httpx",
    "pydantic",
    "fastapi",
    "jaclang",
    "jac_scale",
    "byllm",
    "mtllm",
    "dotenv",
    "yaml",
    "aiohttp",
    "bcrypt",
    "jwt",
    "redis",
    "pymongo",
];

fn set(lists: &[&[&'static str]]) -> HashSet<&'static str> {
    lists.iter().flat_map(|l| l.iter().copied()).collect()
}

fn builtins() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        set(&[
            PY_BUILTINS,
            EXCEPTIONS,
            AMBIENT_NAMES,
            crate::names::SV_CLIENT_NAMES,
            crate::names::BUILTIN_FUNCTIONS,
            crate::names::BUILTIN_TYPES,
            crate::names::OSP_BUILTINS,
        ])
    })
}

/// A name every scope sees without binding it.
pub(super) fn is_builtin(name: &str) -> bool {
    builtins().contains(name) || name.starts_with("schema_")
}

/// A name accepted in a type annotation without being bound.
pub(super) fn is_annotation_name(name: &str) -> bool {
    ANNOTATION_NAMES.contains(&name)
}

/// A builtin naming a type (class), as opposed to a builtin function.
pub(super) fn is_builtin_type(name: &str) -> bool {
    TYPE_LIKE.contains(&name)
        || EXCEPTIONS.contains(&name)
        || matches!(
            name,
            "Root"
                | "GenericEdge"
                | "Node"
                | "Edge"
                | "AccessLevel"
                | "APIProtocol"
                | "ScheduleTrigger"
        )
}

pub(super) fn is_python_module(name: &str) -> bool {
    PY_MODULES.contains(&name)
}

/// Every ambient name, for suggestions.
pub(super) fn all_builtins() -> impl Iterator<Item = &'static str> {
    builtins().iter().copied()
}

/// Edit distance with adjacent transpositions (optimal string alignment), giving up
/// (returning `limit + 1`) once it certainly exceeds `limit`.
pub(super) fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let w = b.len() + 1;
    // Three rows: i-2, i-1, i.
    let mut rows = vec![0usize; 3 * w];
    for (j, x) in rows.iter_mut().take(w).enumerate() {
        *x = j;
    }
    for i in 1..=a.len() {
        let (cur, prev, prev2) = ((i % 3) * w, ((i - 1) % 3) * w, ((i + 1) % 3) * w);
        rows[cur] = i;
        let mut row_min = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[prev + j - 1] + cost)
                .min(rows[prev + j] + 1)
                .min(rows[cur + j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[prev2 + j - 2] + 1);
            }
            rows[cur + j] = d;
            row_min = row_min.min(d);
        }
        if row_min > limit {
            return limit + 1;
        }
    }
    rows[(a.len() % 3) * w + b.len()]
}

/// The closest candidate, by distance, then rank (lower first), then alphabetically.
/// Allowed distance: 1 for names shorter than 6 characters, else 2; never for a single
/// character.
pub(super) fn best_match<'c>(
    name: &str,
    candidates: impl IntoIterator<Item = (&'c str, u8)>,
) -> Option<&'c str> {
    let len = name.chars().count();
    let limit = match len {
        0 | 1 => return None,
        2..=5 => 1,
        _ => 2,
    };
    let mut best: Option<(usize, u8, &'c str)> = None;
    for (cand, rank) in candidates {
        if cand == name || cand.starts_with(' ') {
            continue;
        }
        let d = edit_distance(name, cand, limit);
        if d > limit {
            continue;
        }
        let key = (d, rank, cand);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("usr", "user", 2), 1);
        assert_eq!(edit_distance("kitten", "sitting", 5), 3);
        assert_eq!(edit_distance("abc", "xyz12345", 2), 3);
        assert_eq!(edit_distance("Psot", "Post", 2), 1);
        assert_eq!(edit_distance("ab", "ba", 2), 1);
        assert_eq!(edit_distance("", "ab", 2), 2);
        assert_eq!(best_match("Usr", [("chr", 2)]), None);
        assert_eq!(best_match("qeury", [("query", 0)]), Some("query"));
        assert_eq!(best_match("usr", [("user", 1), ("use", 0)]), Some("use"));
        assert_eq!(best_match("x", [("y", 0)]), None);
        assert_eq!(best_match("nme", [("name", 0), ("age", 0)]), Some("name"));
    }
}
