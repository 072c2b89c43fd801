//! The `explain_error` catalogue: for every diagnostic code of `lang::diag::Code`, every
//! runtime error kind an svc program can raise, the run limits and the HTTP error codes
//! of the envelope, a title, an explanation, a suggestion, a small example and the
//! `svc://` page to read next.
//!
//! [`explain`] looks for a diagnostic code (`E2001`) in the message first, then for an
//! exception class name (`ZeroDivisionError`) or an HTTP error code (`CONFLICT`), then
//! for known message text (`division by zero`), and otherwise answers with generic
//! advice. Matching is bounded: only the first [`MAX_MESSAGE_CHARS`] characters are read.

use lang::diag::Code;

/// The answer of `explain_error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    pub title: String,
    pub explanation: String,
    pub suggestion: String,
    pub example: String,
    pub docs_uri: String,
}

/// Longest prefix of an error message that is searched (a pasted log can be huge).
pub const MAX_MESSAGE_CHARS: usize = 16 * 1024;

/// What the language table lacks for a diagnostic code: how to fix it, the page to read,
/// and message fragments that identify it when the code itself was not pasted.
struct CodeHint {
    code: &'static str,
    suggestion: &'static str,
    docs_uri: &'static str,
    fragments: &'static [&'static str],
}

/// One row per `lang::diag::Code` (a unit test holds this table to `Code::ALL`).
const CODE_HINTS: &[CodeHint] = &[
    CodeHint {
        code: "E0001",
        docs_uri: "svc://guide/pitfalls",
        suggestion: "Read the expected token in the message and look just before the caret: a missing `;` after a statement, an unclosed `{`, or code outside `with entry { ... }` are the usual causes. Every statement ends with `;` and every block uses braces.",
        fragments: &[
            "expected `;`",
            "expected an expression",
            "expected a declaration",
            "statements must be inside `with entry",
        ],
    },
    CodeHint {
        code: "E0022",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Write the lambda with parenthesised, typed parameters and a braced body: `lambda (x: int) -> int { return x + 1; }`.",
        fragments: &["after lambda parameters"],
    },
    CodeHint {
        code: "E0026",
        docs_uri: "svc://docs/osp",
        suggestion: "Give the operator both sides: `a ++> b;` connects, `a del --> b;` disconnects (infix, not `del a --> b`).",
        fragments: &["requires a right operand", "connect/disconnect operator"],
    },
    CodeHint {
        code: "E0034",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Use `def name(params) { ... }` for a method or function; keep `can` for abilities: `can name with Type entry { ... }`.",
        fragments: &["`can` declares an event ability"],
    },
    CodeHint {
        code: "E0048",
        docs_uri: "svc://docs/osp",
        suggestion: "Put the filter in square brackets after the edge reference: `[-->[?:Todo]]`, `[-->[?done == True]]`.",
        fragments: &["filter form was removed"],
    },
    CodeHint {
        code: "E0067",
        docs_uri: "svc://docs/foundation",
        suggestion: "Rename the field (for example `def_` or `kind`): a backtick lets a keyword be a variable name, but not a field named after a reserved word.",
        fragments: &["is a reserved word and cannot name a field"],
    },
    CodeHint {
        code: "E0101",
        docs_uri: "svc://docs/foundation",
        suggestion: "Close the block comment with `*#`, or use `#` line comments.",
        fragments: &["unterminated block comment"],
    },
    CodeHint {
        code: "E2001",
        docs_uri: "svc://guide/pitfalls",
        suggestion: "Check the spelling, declare the name before using it (a `glob`, a `def`, an archetype or a local), or import it from its module with `import from module { name }`. Inside a method, fields are `self.field`.",
        fragments: &["cannot find name"],
    },
    CodeHint {
        code: "E2002",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Pass at most one positional argument per `has` field (inherited fields first), or use keyword arguments: `Todo(title=\"x\", done=False)`.",
        fragments: &["positional argument", "given twice"],
    },
    CodeHint {
        code: "E2003",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Only instance `has` fields are constructor arguments; set a `static has` through the class, and check the keyword's spelling.",
        fragments: &["not a constructor argument", "has no field"],
    },
    CodeHint {
        code: "E2004",
        docs_uri: "svc://guide/walkers",
        suggestion: "Name a type in the trigger: `with Root entry` (capital R: the type of `root`), `with Todo entry`, `with MyWalker entry`.",
        fragments: &["ability trigger must be a type"],
    },
    CodeHint {
        code: "E2005",
        docs_uri: "svc://docs/primitives",
        suggestion: "Give the variable a value of its declared type, convert explicitly (`int(\"3\")`, `str(3)`), or change the annotation.",
        fragments: &["mismatched types"],
    },
    CodeHint {
        code: "E2006",
        docs_uri: "svc://docs/walker-responses",
        suggestion: "`return` only ends a `def` or an ability. At module level, end a `with entry` block by structuring it with `if`; in a walker, use `report` to send values back and `disengage` to stop.",
        fragments: &["`return` outside of a function"],
    },
    CodeHint {
        code: "E2007",
        docs_uri: "svc://docs/foundation",
        suggestion: "Use `break`/`continue` only inside `for` or `while`; in an ability use `skip` (leave this ability) or `disengage` (stop the walker).",
        fragments: &["outside of a loop"],
    },
    CodeHint {
        code: "E2008",
        docs_uri: "svc://guide/walkers",
        suggestion: "Move the `visit`, `report`, `skip` or `disengage` into a walker ability (`can name with Type entry { ... }`), or call the function from one.",
        fragments: &["needs a running walker", "outside of an ability"],
    },
    CodeHint {
        code: "E2009",
        docs_uri: "svc://docs/code-organization",
        suggestion: "Rename one of the two definitions or delete the duplicate; a field is declared once per archetype (a subclass overrides it by redeclaring it only in its own body).",
        fragments: &["is defined multiple times"],
    },
    CodeHint {
        code: "E2010",
        docs_uri: "svc://docs/code-organization",
        suggestion: "Check the imported name against the module's declarations; only module-level names (archetypes, `def`s, `glob`s) can be imported.",
        fragments: &["cannot import name"],
    },
    CodeHint {
        code: "E2011",
        docs_uri: "svc://docs/code-organization",
        suggestion: "Put `<module>.svc` next to the importing file (dots in the module path are directories), or fix the module name.",
        fragments: &["not found (no"],
    },
    CodeHint {
        code: "E2012",
        docs_uri: "svc://docs/python-integration",
        suggestion: "Remove the import and use svc's built-ins (`len`, `sorted`, `range`, `str` methods, `kvstore`, `store`, `publish`...), or call an HTTP service with `sv import`. Python packages cannot be loaded.",
        fragments: &["is a Python module", "no Python underneath"],
    },
    CodeHint {
        code: "E2013",
        docs_uri: "svc://docs/code-organization",
        suggestion: "Write `impl Archetype.member { ... }` for a declared node, edge, walker or obj; a plain function is implemented by its own `def` body.",
        fragments: &["`impl` needs an archetype"],
    },
    CodeHint {
        code: "E2027",
        docs_uri: "svc://docs/osp",
        suggestion: "Move the endpoint clause to an edge: `edge Authored: User --> Post {}`; a node, walker or obj declares no endpoints.",
        fragments: &["typed endpoints are only allowed on edges"],
    },
    CodeHint {
        code: "E2028",
        docs_uri: "svc://docs/osp",
        suggestion: "Name node types on both sides of a typed edge: `edge Owns: Root --> Item {}` (the type `Root`, not the value `root`).",
        fragments: &["edge endpoints must be node types"],
    },
    CodeHint {
        code: "E2029",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Move the `yield` into a `def`: a function with a `yield` is a generator; entry blocks and lambdas cannot yield.",
        fragments: &["`yield` outside of a function"],
    },
    CodeHint {
        code: "E2031",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Write `yield v;` as a statement or `x = yield v;` as an assignment, then use `x` in the larger expression.",
        fragments: &["`yield` inside an expression"],
    },
    CodeHint {
        code: "E2032",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Mark the enclosing function `async def` (or the ability `async can`), or run the coroutine from synchronous code with `asyncio.run(coro)`.",
        fragments: &["`await` outside an async function"],
    },
    CodeHint {
        code: "E2033",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Drop `async` to make a plain generator, or build and return a list from the async function.",
        fragments: &["async generators are not supported"],
    },
    CodeHint {
        code: "E2035",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Give each keyword argument once per call: drop the repeated `name=value`, or pass the second value to the parameter it was meant for.",
        fragments: &["keyword argument repeated"],
    },
    CodeHint {
        code: "E2034",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Fix the spelling (the message suggests the nearest member), declare the field with `has` or the method with `def` in the archetype, or assign the attribute before reading it.",
        fragments: &["has no field or ability"],
    },
    CodeHint {
        code: "E2030",
        docs_uri: "svc://docs/python-integration",
        suggestion: "Use a name the built-in module provides (the message suggests the closest one); svc's math, random, json, time, datetime, uuid, re and asyncio modules implement a fixed subset.",
        fragments: &["has no attribute"],
    },
    CodeHint {
        code: "W2001",
        docs_uri: "svc://docs/primitives",
        suggestion: "Declare or import the type, or fix its spelling; built-in types are `int float str bool list dict set tuple any`.",
        fragments: &[],
    },
    CodeHint {
        code: "W2004",
        docs_uri: "svc://guide/walkers",
        suggestion: "Trigger abilities on node, edge or walker types only; to act on an enum value, test it inside the ability body.",
        fragments: &["never triggers"],
    },
    CodeHint {
        code: "W2008",
        docs_uri: "svc://guide/walkers",
        suggestion: "Keep traversal statements in abilities, or make sure the function is only called from a walker's ability.",
        fragments: &["in a plain function only works"],
    },
    CodeHint {
        code: "W2009",
        docs_uri: "svc://guide/walkers",
        suggestion: "Use `here` in walker abilities (the node being visited) and `visitor` in node abilities (the walker visiting); in a node ability the node itself is `self`.",
        fragments: &[
            "is only defined in a walker's abilities",
            "is only defined in node",
        ],
    },
    CodeHint {
        code: "W2010",
        docs_uri: "svc://docs/functions-objects",
        suggestion: "Assign the local before reading it, give it another name than the module-level one, or declare the module-level name with `glob` so the def rebinds it.",
        fragments: &["is read before it is assigned"],
    },
];

/// A runtime error kind, a run limit or an HTTP error code.
struct Entry {
    /// The name looked for as a whole word: an exception class or an HTTP code.
    name: &'static str,
    title: &'static str,
    explanation: &'static str,
    suggestion: &'static str,
    example: &'static str,
    docs_uri: &'static str,
    /// Message text that identifies it (svc prints `Error: <message>` without the class).
    fragments: &'static [&'static str],
}

const RUNTIME: &[Entry] = &[
    Entry {
        name: "ZeroDivisionError",
        title: "division by zero",
        explanation: "An `/`, `//` or `%` had zero on the right. It is an ordinary exception: uncaught, it stops `svc run` with exit 1, and a served call answers 500 `EXECUTION_ERROR`.",
        suggestion: "Check the divisor first (`if n != 0 { ... }`) or catch it: `try { r = a / b; } except ZeroDivisionError { r = 0; }`.",
        example: "with entry { total = 10; n = 0; print(total / n); }",
        docs_uri: "svc://docs/primitives",
        fragments: &["division by zero", "modulo by zero"],
    },
    Entry {
        name: "NameError",
        title: "name is not defined",
        explanation: "The program read a name that has no binding at that point of the run. `svc check` reports most of these ahead of time as E2001; at run time it is raised when the line is reached.",
        suggestion: "Run `svc check` to find every undefined name. Bind the name before use, fix its spelling, import it, or read a field through `self.` / `here.`.",
        example: "with entry { print(totl); }",
        docs_uri: "svc://guide/pitfalls",
        fragments: &["is not defined"],
    },
    Entry {
        name: "AttributeError",
        title: "no such attribute",
        explanation: "The value has no field or method of that name: a typo, a field that an older version of a stored node did not have, or calling a method on `None`.",
        suggestion: "Check the archetype's `has` fields and the value's type (`print(type(x).__name__)`); guard optional values with `if x is not None`. Use `hasattr(x, \"f\")` for optional fields.",
        example: "node Todo { has title: str; }\nwith entry { t = Todo(title=\"a\"); print(t.name); }",
        docs_uri: "svc://docs/functions-objects",
        fragments: &["has no attribute"],
    },
    Entry {
        name: "TypeError",
        title: "wrong type for an operation",
        explanation: "An operation or call got a value of the wrong type: adding a string and an int, calling something that is not callable, the wrong number of arguments, or an unhashable dict key.",
        suggestion: "Convert explicitly (`str(n)`, `int(s)`), check the function's parameters, and use f-strings for text: `f\"{n} items\"`.",
        example: "with entry { n = 3; print(\"items: \" + n); }",
        docs_uri: "svc://docs/primitives",
        fragments: &[
            "can only concatenate",
            "unsupported operand",
            "is not callable",
            "takes",
            "argument",
            "unhashable",
        ],
    },
    Entry {
        name: "ValueError",
        title: "right type, wrong value",
        explanation: "A value had an acceptable type but not an acceptable content: `int(\"abc\")`, `list.remove` of a missing item, unpacking the wrong number of items, or a bad argument to a built-in such as `kvstore` without a URI.",
        suggestion: "Validate input before converting (`s.isdigit()`), or catch it: `try { n = int(s); } except ValueError { n = 0; }`.",
        example: "with entry { print(int(\"abc\")); }",
        docs_uri: "svc://docs/primitives",
        fragments: &[
            "invalid literal",
            "not enough values to unpack",
            "too many values to unpack",
            "not in list",
        ],
    },
    Entry {
        name: "KeyError",
        title: "missing dictionary key",
        explanation: "`d[key]` read a key the dict does not hold. The message is the key itself, e.g. `Error: 'k'`.",
        suggestion: "Use `d.get(key, default)`, test `key in d` first, or catch `KeyError`.",
        example: "with entry { d = {\"a\": 1}; print(d[\"b\"]); }",
        docs_uri: "svc://docs/primitives",
        fragments: &[],
    },
    Entry {
        name: "IndexError",
        title: "index out of range",
        explanation: "A list, tuple or string index is past its end; a frequent case is `w.reports[0]` when the walker reported nothing.",
        suggestion: "Check `len(xs)` first, or use `xs[0] if xs else None`. For walker reports, make sure the walker reached a node where it reports.",
        example: "walker Find { can go with Root entry { visit [-->]; } }\nwith entry { w = root spawn Find(); print(w.reports[0]); }",
        docs_uri: "svc://docs/walker-responses",
        fragments: &["index out of range"],
    },
    Entry {
        name: "RecursionError",
        title: "call stack too deep",
        explanation: "svc calls (functions, abilities, nested spawns) went deeper than the depth limit (1000 by default; `svc run --max-depth`, `[scale.limits] max_call_depth`). svc never overflows the native stack: it raises this instead.",
        suggestion: "Add or fix the base case, or turn the recursion into a loop; to walk a deep graph use a walker (its traversal is a queue, not recursion).",
        example: "def down(n: int) -> int { return down(n + 1); }\nwith entry { down(0); }",
        docs_uri: "svc://guide/limits",
        fragments: &["maximum recursion depth"],
    },
    Entry {
        name: "MemoryError",
        title: "value too large",
        explanation: "One operation would build a string or collection beyond the run's bounds (64 MiB of text, 10,000,000 items by default). svc computes the size first and refuses before allocating; the error is catchable.",
        suggestion: "Build less at once (page through data, stream with a loop), or raise `[scale.limits] max_string_bytes` / `max_collection_items` if the size is intended.",
        example: "with entry { xs = [0] * 100000000000; }",
        docs_uri: "svc://guide/limits",
        fragments: &["result would have", "would be longer than"],
    },
    Entry {
        name: "AssertionError",
        title: "assertion failed",
        explanation: "An `assert cond, msg;` found its condition false; the message is `msg` (or empty).",
        suggestion: "Fix the data or the condition; in tests keep the message specific so the failure says what went wrong.",
        example: "with entry { xs = []; assert len(xs) > 0, \"expected at least one item\"; }",
        docs_uri: "svc://docs/testing",
        fragments: &[],
    },
    Entry {
        name: "RuntimeError",
        title: "runtime error (service-to-service calls and more)",
        explanation: "A general failure. Service-to-service calls raise it as `sv-to-sv RPC 'module.func' failed: <msg>` or `sv-to-sv walker spawn 'module.Walker' failed: <msg>`: the provider was unreachable, answered an error envelope, or the target is not `:pub`.",
        suggestion: "For sv calls: make sure the provider is running (or set `SVC_SV_<MODULE>_URL`), that the function or walker is declared `:pub`, and read `<msg>`, the provider's own error.",
        example: "with entry { raise RuntimeError(\"boom\"); }",
        docs_uri: "svc://docs/code-organization",
        fragments: &["sv-to-sv"],
    },
    Entry {
        name: "TimeoutError",
        title: "operation timed out",
        explanation: "A `kvstore` operation (5 s to connect, 10 s per operation) or an object-storage operation took too long. It is catchable.",
        suggestion: "Check that the cache or database server is reachable and healthy; catch `TimeoutError` to degrade gracefully.",
        example: "def:pub hits() -> int {\n    try { return kvstore(\"app\", \"cache\").incr(\"hits\"); }\n    except TimeoutError { return -1; }\n}",
        docs_uri: "svc://guide/limits",
        fragments: &["timed out"],
    },
    Entry {
        name: "ConnectionError",
        title: "store unreachable",
        explanation: "`kvstore(...)` could not connect to its cache or document database.",
        suggestion: "Check `CACHE_URL` / `DOCDB_URI` (or `[scale.database]` in svc.toml) and that the server is up.",
        example: "def:pub hits() -> int { return kvstore(\"app\", \"cache\", uri=\"redis://127.0.0.1:1\").incr(\"hits\"); }",
        docs_uri: "svc://docs/config",
        fragments: &["connection refused"],
    },
    Entry {
        name: "NotImplementedError",
        title: "not supported by this backend or build",
        explanation: "The method does not exist on this kvstore backend (for example `find` on the cache store, or `set_nx_with_ttl` on the document store), or the feature is not in this build (`clouddoc`).",
        suggestion: "Use the backend that has the method: queries on `docdb`, TTLs, counters and locks on `cache`.",
        example: "def:pub q() -> list { return kvstore(\"app\", \"cache\").find(\"users\", {}); }",
        docs_uri: "svc://guide/patterns",
        fragments: &["not configured in this build"],
    },
    Entry {
        name: "ReferenceError",
        title: "stale handle",
        explanation: "A node or storage handle was kept past the run that created it (for example in a `glob` reused by a later request).",
        suggestion: "Keep ids (`jid(node)`) across requests, not node values, and look nodes up again with `jobj(id)`.",
        example: "with entry { print(jobj(jid(root)) == root); }",
        docs_uri: "svc://guide/persistence",
        fragments: &["stale"],
    },
    Entry {
        name: "OSError",
        title: "storage or system error",
        explanation: "A `store()` file operation failed (missing file, a path outside the storage root, a full queue). `FileNotFoundError` and `PermissionError` are kinds of it.",
        suggestion: "Check the path (relative to the storage `base_path`), that it exists (`s.exists(path)`), and the storage configuration.",
        example: "def:pub read(path: str) -> str { return store().download(path).decode(); }",
        docs_uri: "svc://docs/config",
        fragments: &["No such file"],
    },
    Entry {
        name: "ModuleNotFoundError",
        title: "provider module not found at start",
        explanation: "At `svc start`, a module imported with `sv import` has no source in the start directory, so its provider cannot be started.",
        suggestion: "Run `svc start` from the directory that holds the provider's `.svc` file, or set `SVC_SV_<MODULE>_URL` to a provider already running.",
        example: "sv import from billing { charge }\nwith entry { print(charge(amount=3)); }",
        docs_uri: "svc://docs/code-organization",
        fragments: &[],
    },
    Entry {
        name: "time budget exceeded",
        title: "run stopped: time budget",
        explanation: "The run passed its wall-clock limit (`svc run --timeout`, 30 s per served call by `[scale.limits] call_timeout_seconds`, 10 s in the tool server's `run_svc`). It cannot be caught by `except`.",
        suggestion: "Look for a loop that never ends or a walk that revisits nodes (cycles: keep a visited set or use typed edges); move heavy work to an event handler.",
        example: "with entry { while True { x = 1; } }",
        docs_uri: "svc://guide/limits",
        fragments: &["time budget exceeded"],
    },
    Entry {
        name: "operation budget exceeded",
        title: "run stopped: operation budget",
        explanation: "The run executed more statements and calls than `--max-ops` allows. It cannot be caught.",
        suggestion: "Reduce the work (an accidental infinite loop is the usual cause) or raise the budget.",
        example: "with entry { n = 0; while True { n += 1; } }",
        docs_uri: "svc://guide/limits",
        fragments: &["operation budget exceeded"],
    },
];

const HTTP: &[Entry] = &[
    Entry {
        name: "VALIDATION_ERROR",
        title: "request does not match the endpoint (422/400)",
        explanation: "The JSON body was malformed, not an object, missing a required `has` field or parameter, had a wrong type, or named an unknown field. `error.details` lists `{field, message}`.",
        suggestion: "Send a JSON object with exactly the walker's `has` fields (or the function's parameters) and their types; `/docs` and `/openapi.json` list them.",
        example: "walker:pub add_todo { has title: str; can go with Root entry { here ++> Todo(title=self.title); } }\nnode Todo { has title: str; }",
        docs_uri: "svc://docs/walker-responses",
        fragments: &[],
    },
    Entry {
        name: "UNAUTHORIZED",
        title: "missing or invalid token (401)",
        explanation: "The endpoint is not `:pub` and the request had no valid `Authorization: Bearer <token>` (missing, expired, or signed with another `JWT_SECRET`).",
        suggestion: "Log in with `POST /user/login` and send the token, or declare the walker `walker:pub` if anyone may call it.",
        example: "walker:pub ping { can go with Root entry { report \"pong\"; } }",
        docs_uri: "svc://docs/tutorial-fullstack-auth",
        fragments: &[],
    },
    Entry {
        name: "FORBIDDEN",
        title: "not allowed (403)",
        explanation: "The caller is authenticated but may not do this: a non-admin on an admin route, a webhook key not allowed for this walker, or a protected account.",
        suggestion: "Use an account with the needed role, or widen the API key's `allowed_walkers`.",
        example: "walker:pub status { can go with Root entry { report \"ok\"; } }",
        docs_uri: "svc://guide/access-control",
        fragments: &[],
    },
    Entry {
        name: "NOT_FOUND",
        title: "no such endpoint or object (404)",
        explanation: "No walker or function has that name or path (WEBSOCKET and WEBHOOK walkers are not under `/walker/`), or an id names a node the caller may not read.",
        suggestion: "Compare the URL with `svc start --faux`, which prints every endpoint; remember `/walker/<name>` and `/function/<name>`.",
        example: "def:pub add(a: int, b: int) -> int { return a + b; }",
        docs_uri: "svc://guide/http-api",
        fragments: &[],
    },
    Entry {
        name: "METHOD_NOT_ALLOWED",
        title: "wrong HTTP method (405)",
        explanation: "The endpoint exists but answers another method: POST by default, or the `method` of its `@restspec`.",
        suggestion: "Call it with the declared method, or declare the one you need: `@restspec(method=HTTPMethod.GET)` with `import from http { HTTPMethod }`.",
        example: "import from http { HTTPMethod }\n@restspec(method=HTTPMethod.GET)\ndef:pub health_check() -> str { return \"ok\"; }",
        docs_uri: "svc://guide/http-api",
        fragments: &[],
    },
    Entry {
        name: "EXECUTION_ERROR",
        title: "the walker or function failed (500)",
        explanation: "The code raised an uncaught error or hit the call's time limit; `error.message` holds the svc message and source position. Nothing of the failed call is committed.",
        suggestion: "Reproduce it with `svc run` on a small script that spawns the walker, or read the message's own explanation with explain_error.",
        example: "def:pub ratio(a: int, b: int) -> float { return a / b; }",
        docs_uri: "svc://docs/debugging",
        fragments: &[],
    },
    Entry {
        name: "CONFLICT",
        title: "write conflict after replays (409)",
        explanation: "Another request (or replica) changed the same nodes at the same time; svc replayed the call up to `[scale.limits] max_replays` times and it still lost.",
        suggestion: "Retry the request; reduce contention on one hot node (for example one counter node for all users) by spreading writes or using `kvstore` `incr`.",
        example: "node Counter { has n: int = 0; }",
        docs_uri: "svc://docs/concurrency",
        fragments: &[],
    },
    Entry {
        name: "PAYLOAD_TOO_LARGE",
        title: "request body too large (413)",
        explanation: "The body is larger than `[scale.server] max_body_bytes` (1 MiB by default).",
        suggestion: "Send less per request, upload files through `store()`, or raise the limit.",
        example: "def:pub echo(text: str) -> int { return len(text); }",
        docs_uri: "svc://guide/limits",
        fragments: &[],
    },
    Entry {
        name: "RESPONSE_TOO_LARGE",
        title: "result too large (500)",
        explanation: "The call's JSON result and reports passed `[scale.limits] max_response_bytes` (16 MiB).",
        suggestion: "Paginate: take `offset`/`limit` fields and report one page.",
        example: "walker:pub page { has offset: int = 0, limit: int = 50; can go with Root entry { report [-->][self.offset:self.offset + self.limit]; } }",
        docs_uri: "svc://guide/patterns",
        fragments: &[],
    },
    Entry {
        name: "RATE_LIMITED",
        title: "too many attempts (429)",
        explanation: "Too many failed logins, registrations or verification mails in the window; `Retry-After` says when to try again.",
        suggestion: "Wait for `Retry-After`; in tests use distinct identities or raise the `[scale.auth]` limits.",
        example: "walker:pub ping { can go with Root entry { report \"pong\"; } }",
        docs_uri: "svc://guide/limits",
        fragments: &[],
    },
    Entry {
        name: "INVALID_SIGNATURE",
        title: "webhook signature rejected (401)",
        explanation: "`X-Webhook-Signature` is missing or is not the lowercase hex HMAC-SHA256 of the raw body keyed with the API key (or the timestamp is too old with `replay_guard`).",
        suggestion: "Sign the exact bytes you send, with the key itself as the HMAC key.",
        example: "@restspec(protocol=APIProtocol.WEBHOOK)\nwalker on_payment { has amount: int = 0; can go with Root entry { report self.amount; } }",
        docs_uri: "svc://guide/realtime",
        fragments: &[],
    },
    Entry {
        name: "SERVICE_UNAVAILABLE",
        title: "server busy or draining (503)",
        explanation: "A queue is full (calls waiting for a worker, password hashing) or the server is shutting down.",
        suggestion: "Retry after `Retry-After`; add replicas if it persists.",
        example: "walker:pub ping { can go with Root entry { report \"pong\"; } }",
        docs_uri: "svc://docs/jac-scale",
        fragments: &[],
    },
];

/// Explain an error message: a diagnostic code, an exception class, an HTTP error code,
/// known message text, or generic advice when nothing matches.
pub fn explain(error_message: &str) -> Explanation {
    let msg: String = error_message.chars().take(MAX_MESSAGE_CHARS).collect();
    if let Some(code) = find_code(&msg) {
        return explain_code(code);
    }
    for e in RUNTIME.iter().chain(HTTP) {
        if contains_word(&msg, e.name) {
            return explain_entry(e);
        }
    }
    let lower = msg.to_lowercase();
    for h in CODE_HINTS {
        if h.fragments
            .iter()
            .any(|f| lower.contains(&f.to_lowercase()))
            && let Some(code) = Code::ALL.iter().find(|c| c.as_str() == h.code)
        {
            return explain_code(*code);
        }
    }
    for e in RUNTIME {
        if e.fragments
            .iter()
            .any(|f| lower.contains(&f.to_lowercase()))
        {
            return explain_entry(e);
        }
    }
    generic()
}

/// The first diagnostic code of the table that appears in the message as a word.
fn find_code(msg: &str) -> Option<Code> {
    let bytes = msg.as_bytes();
    for (i, w) in bytes.windows(5).enumerate() {
        if !(w[0] == b'E' || w[0] == b'W') || !w[1..].iter().all(u8::is_ascii_digit) {
            continue;
        }
        let before_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let after_ok = bytes.get(i + 5).is_none_or(|b| !b.is_ascii_alphanumeric());
        if before_ok
            && after_ok
            && let Some(code) = Code::ALL.iter().find(|c| c.as_str().as_bytes() == w)
        {
            return Some(*code);
        }
    }
    None
}

fn contains_word(haystack: &str, word: &str) -> bool {
    haystack.match_indices(word).any(|(i, _)| {
        let before = haystack[..i].chars().next_back();
        let after = haystack[i + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        boundary(before) && boundary(after)
    })
}

fn hint(code: Code) -> Option<&'static CodeHint> {
    CODE_HINTS.iter().find(|h| h.code == code.as_str())
}

fn explain_code(code: Code) -> Explanation {
    let kind = if code.as_str().starts_with('W') {
        "warning"
    } else {
        "error"
    };
    let stops = if code.is_fatal() {
        " `svc run` refuses to start on it."
    } else if kind == "error" {
        " `svc check` reports it; `svc run` fails only when the line is reached."
    } else {
        " It is a warning: the program still runs."
    };
    let (suggestion, docs_uri) = match hint(code) {
        Some(h) => (h.suggestion, h.docs_uri),
        None => (
            "Read the message and the underlined source line; `svc check FILE.svc` lists every diagnostic at once.",
            "svc://guide/errors",
        ),
    };
    Explanation {
        title: format!("{}: {}", code.as_str(), code.title()),
        explanation: format!("{} ({kind} {}).{stops}", code.explanation(), code.as_str()),
        suggestion: suggestion.to_string(),
        example: code.example().to_string(),
        docs_uri: docs_uri.to_string(),
    }
}

fn explain_entry(e: &Entry) -> Explanation {
    Explanation {
        title: format!("{}: {}", e.name, e.title),
        explanation: e.explanation.to_string(),
        suggestion: e.suggestion.to_string(),
        example: e.example.to_string(),
        docs_uri: e.docs_uri.to_string(),
    }
}

fn generic() -> Explanation {
    Explanation {
        title: "Unrecognised error".to_string(),
        explanation: "This message matches no svc diagnostic code, runtime error kind or HTTP error code in the catalogue. svc reports compile problems as `file:line:col: error[CODE]: message`, runtime errors as `Error: <message>` with the source line and the call frames, and HTTP failures as the envelope's `error.code`.".to_string(),
        suggestion: "Run `svc check FILE.svc` to list compile diagnostics with their codes and pass one of them (for example `E2001`) to explain_error; for a runtime failure, reproduce it with `svc run` and read the underlined line and the `at ...` frames.".to_string(),
        example: "node Todo { has title: str; }\nwith entry { t = Todo(title=\"write docs\"); print(t.title); }".to_string(),
        docs_uri: "svc://guide/errors".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A code added to `lang::diag::Code` without a row here fails this test.
    #[test]
    fn every_lang_code_has_a_catalogue_row() {
        for code in Code::ALL {
            assert!(hint(*code).is_some(), "{code} has no row in CODE_HINTS");
            let e = explain(&format!("x.svc:1:1: error[{code}]: something"));
            assert!(e.title.starts_with(code.as_str()), "{code}: {}", e.title);
            assert!(!e.suggestion.is_empty() && !e.example.is_empty());
            assert!(e.docs_uri.starts_with("svc://"));
        }
        for h in CODE_HINTS {
            assert!(
                Code::ALL.iter().any(|c| c.as_str() == h.code),
                "{} is not a lang code",
                h.code
            );
        }
    }

    #[test]
    fn docs_uris_name_bundled_pages() {
        let uris: Vec<&str> = CODE_HINTS
            .iter()
            .map(|h| h.docs_uri)
            .chain(RUNTIME.iter().chain(HTTP).map(|e| e.docs_uri))
            .chain(["svc://guide/errors"])
            .collect();
        for uri in uris {
            assert!(super::super::docs().iter().any(|d| d.uri == uri), "{uri}");
        }
    }

    #[test]
    fn matches_codes_classes_http_codes_and_text() {
        assert!(
            explain("error[E2027]: typed endpoints")
                .title
                .starts_with("E2027")
        );
        assert!(explain("W2009 here").title.starts_with("W2009"));
        assert!(
            explain("ZeroDivisionError: x")
                .title
                .starts_with("ZeroDivisionError")
        );
        assert!(
            explain("Error: division by zero")
                .title
                .starts_with("ZeroDivisionError")
        );
        assert!(
            explain("Error: name 'x' is not defined")
                .title
                .starts_with("NameError")
        );
        assert!(explain("409 CONFLICT").title.starts_with("CONFLICT"));
        assert!(
            explain("cannot find name `y` in this scope")
                .title
                .starts_with("E2001")
        );
        assert!(
            explain("'numpy' is a Python module")
                .title
                .starts_with("E2012")
        );
        // Not a code: part of a longer word.
        assert_eq!(explain("XE2001Y").title, "Unrecognised error");
        assert_eq!(explain("").title, "Unrecognised error");
        assert_eq!(explain("E9999 whatever").title, "Unrecognised error");
        // Hostile input is bounded and never panics.
        let huge = "é".repeat(1 << 20);
        assert_eq!(explain(&huge).title, "Unrecognised error");
    }
}
