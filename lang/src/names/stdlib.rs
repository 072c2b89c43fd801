//! The public names of the built-in standard-library modules (language.md decision 12):
//! what `import from` may take and what the checker accepts after `m.`. The interpreter
//! implements them in `interp::stdlib`; each table here must list exactly what its module
//! answers.

/// The built-in standard-library modules.
pub const MODULES: &[&str] = &[
    "math", "random", "json", "time", "datetime", "uuid", "re", "asyncio",
];

/// Every public name of a built-in module (`&[]` for any other name).
pub fn members(module: &str) -> &'static [&'static str] {
    match module {
        "math" => MATH,
        "random" => RANDOM,
        "json" => JSON,
        "time" => TIME,
        "datetime" => DATETIME,
        "uuid" => UUID,
        "re" => RE,
        "asyncio" => ASYNCIO,
        _ => &[],
    }
}

/// `math`.
pub const MATH: &[&str] = &[
    "pi",
    "e",
    "tau",
    "inf",
    "nan",
    "sqrt",
    "floor",
    "ceil",
    "fabs",
    "pow",
    "exp",
    "log",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "hypot",
    "isclose",
    "isnan",
    "isinf",
    "isfinite",
    "gcd",
    "lcm",
    "factorial",
    "isqrt",
    "dist",
    "frexp",
    "ldexp",
    "modf",
    "trunc",
    "prod",
    "fsum",
    "comb",
    "perm",
    "copysign",
    "degrees",
    "radians",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "cbrt",
    "expm1",
    "log1p",
    "fmod",
    "remainder",
    "erf",
    "erfc",
    "gamma",
    "lgamma",
];

/// `random`.
pub const RANDOM: &[&str] = &[
    "seed",
    "random",
    "randint",
    "randrange",
    "uniform",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "getrandbits",
];

/// `json`.
pub const JSON: &[&str] = &["dumps", "loads", "JSONDecodeError"];

/// `time`.
pub const TIME: &[&str] = &[
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "sleep",
];

/// `datetime`.
pub const DATETIME: &[&str] = &[
    "datetime",
    "date",
    "timedelta",
    "timezone",
    "time",
    "MINYEAR",
    "MAXYEAR",
];

/// `uuid`.
pub const UUID: &[&str] = &["uuid4", "UUID"];

/// `re`.
pub const RE: &[&str] = &[
    "compile",
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "split",
    "escape",
    "purge",
    "error",
    "Pattern",
    "Match",
    "I",
    "IGNORECASE",
    "M",
    "MULTILINE",
    "S",
    "DOTALL",
    "X",
    "VERBOSE",
    "A",
    "ASCII",
    "U",
    "UNICODE",
    "NOFLAG",
];

/// `asyncio`.
pub const ASYNCIO: &[&str] = &["run", "sleep", "gather"];
