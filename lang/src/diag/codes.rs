//! The table of diagnostic codes: every code the lexer, parser and checker report, with
//! a title, an explanation and an example, and whether `svc run` refuses to start on it.
//!
//! One row per code, checked by the compiler: a diagnostic is built from a `Code`, never
//! from a string, so a code missing here does not compile. `svc check` and (later)
//! `explain_error` read the same rows.

/// Declares `Code` and its table. Each row: `Code: fatal, "title", "explanation",
/// "example"`, where `fatal` marks the structural checks that stop `svc run` before the
/// program executes (`Diagnostic::stops_run`).
macro_rules! diagnostic_codes {
    ($($code:ident: $fatal:literal, $title:literal, $explanation:literal, $example:literal;)*) => {
        /// A diagnostic code (`E0001`, `W2004`, ...).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($code,)*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$code,)*];

            /// The code as written in a diagnostic: `E2027`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$code => stringify!($code),)*
                }
            }

            /// A short title.
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$code => $title,)*
                }
            }

            /// What the diagnostic means and how to fix it.
            pub fn explanation(self) -> &'static str {
                match self {
                    $(Code::$code => $explanation,)*
                }
            }

            /// A short program that triggers it.
            pub fn example(self) -> &'static str {
                match self {
                    $(Code::$code => $example,)*
                }
            }

            /// `svc run` stops before executing on this error (a structural check).
            pub fn is_fatal(self) -> bool {
                match self {
                    $(Code::$code => $fatal,)*
                }
            }
        }
    };
}

diagnostic_codes! {
    E0001: false, "syntax error",
        "The source does not follow the grammar; the message says what was expected.",
        "with entry { x = ; }";
    E0022: false, "lambda without a braced body",
        "Lambdas take a braced body; the colon form `lambda x: x + 1` was removed.",
        "f = lambda (x: int) -> int : x + 1;";
    E0026: false, "malformed connect or disconnect",
        "A connect/disconnect operator needs both operands; disconnect is written infix.",
        "with entry { root ++> ; }";
    E0034: false, "`can` without an event clause",
        "`can` declares an event ability and needs `with [T] entry|exit`; use `def` for a function.",
        "obj A { can f() { } }";
    E0048: false, "removed `(?...)` filter form",
        "Edge filters are written `[?...]`, e.g. `[-->[?:T]]`.",
        "with entry { xs = [-->(?:T)]; }";
    E0067: false, "reserved word as a field name",
        "A backtick lets a keyword be used as a name, but a Python reserved word (`def`, \
         `class`, `if`, ...) still cannot name a field of an archetype.",
        "obj A { has `def: int = 1; }";
    E0101: false, "unterminated block comment",
        "A `#*` block comment has no closing `*#`.",
        "#* never closed";
    E2001: false, "undefined name",
        "The name is not defined in any enclosing scope, module or builtin.",
        "with entry { print(undefined_name); }";
    E2002: false, "wrong constructor arguments",
        "An archetype is constructed with more positional arguments than it has `has` fields, or a field twice.",
        "obj A { has x: int; } with entry { A(1, 2); }";
    E2003: false, "not a constructor argument",
        "The keyword names a static field or no field of the archetype.",
        "obj A { static has n: int = 0; } with entry { A(n=1); }";
    E2004: false, "ability trigger is not a type",
        "An ability trigger must name a node, edge or walker type, not an instance or a function.",
        "walker W { can go with root entry { } }";
    E2005: false, "mismatched types",
        "A typed declaration is given a literal of another type.",
        "with entry { x: int = \"text\"; }";
    E2006: true, "`return` outside of a function",
        "`return` is only allowed inside a function or ability body.",
        "with entry { return 1; }";
    E2007: true, "`break` or `continue` outside of a loop",
        "`break` and `continue` need an enclosing loop.",
        "with entry { break; }";
    E2029: true, "`yield` outside of a function",
        "`yield` makes the function it is in a generator; it is not allowed at module level, \
         in an entry block or in a lambda.",
        "with entry { yield 1; }";
    E2031: true, "`yield` in a condition or loop header",
        "svc runs `yield` in an expression statement, an assignment or a `return` (nested \
         in their expressions too: `print(yield 1);`); in an `if`/`while` condition, a `for` \
         header or another statement's part it is refused: assign it first (`v = yield x;`).",
        "def g { if (yield 1) { print(1); } }";
    E2032: true, "`await` outside of an async function",
        "`await` runs a coroutine to its end; it is allowed only in an `async def` or \
         `async can` body. From synchronous code (a `with entry` block, a plain `def`) run \
         the coroutine with `asyncio.run(...)`.",
        "async def f() -> int { return 1; } with entry { x = await f(); }";
    E2033: true, "`yield` in an async function",
        "An `async def` with `yield` would be an async generator, which svc does not \
         support. Drop `async` to make a plain generator, or collect the values in a list.",
        "async def g() { yield 1; }";
    E2035: true, "keyword argument repeated",
        "A call names the same keyword argument twice (`f(x=1, x=2)`). Python and jaclang \
         refuse the program before it runs; so does `svc run`. Keep one of them.",
        "def f(x: int) { } with entry { f(x=1, x=2); }";
    E2034: false, "attribute the instance certainly lacks",
        "The value is an instance of an archetype of this module (built here by its constructor, or `self` of an archetype nothing extends), and neither the archetype nor its bases declare this field or ability, and the module assigns no attribute of that name: reading it is an AttributeError at run time.",
        "obj P { has x: int = 0; } with entry { p = P(); print(p.y); }";
    E2008: false, "walker statement outside of an ability",
        "`visit`, `report`, `skip` and `disengage` need a running walker.",
        "def f() { disengage; }";
    E2009: true, "duplicate definition",
        "A name or a field is defined twice in the same scope or archetype.",
        "def f() { } def f() { }";
    E2010: true, "cannot import name",
        "The imported module exists but does not define the name.",
        "import from helpers { missing_name }";
    E2011: true, "module not found",
        "No `.svc` file for the module was found next to the importing file.",
        "import missing_module;";
    E2012: true, "Python module import",
        "svc has no Python underneath: Python modules cannot be imported.",
        "import numpy;";
    E2013: true, "`impl` target is not an archetype",
        "`impl A.member` needs `A` to be an archetype declared in the module.",
        "def f() { } impl f.g() { }";
    E2027: true, "typed endpoints on a non-edge",
        "Typed endpoints (`A --> B`) are only allowed on edge archetypes.",
        "node N: A --> B { }";
    E2028: true, "edge endpoint is not a node type",
        "The endpoints of a typed edge must be node types (`Root`, not `root`).",
        "edge E: root --> A { }";
    E2030: true, "unknown member of a built-in module",
        "The standard-library modules built into svc (`math`, `random`, `json`, `time`, `datetime`, `uuid`, `re`) provide a fixed set of names (language.md decision 12); this one is not among them.",
        "import math; with entry { print(math.sqroot(2)); }";
    W2001: false, "undefined name in an annotation",
        "A type annotation names something that is not defined; annotations are not evaluated, so this is a warning.",
        "def f(x: Undefined) { }";
    W2004: false, "ability never triggers",
        "The trigger names an enum or a non-archetype type, so the ability can never run.",
        "enum Color { RED } walker W { can go with Color entry { } }";
    W2008: false, "walker statement in a plain function",
        "`visit`, `report`, `skip` or `disengage` in a plain function only work when a walker's ability calls it.",
        "def helper() { visit [-->]; }";
    W2009: false, "`here` or `visitor` out of place",
        "`here` is defined in a walker's abilities, `visitor` in node and edge abilities.",
        "node N { can f with W entry { print(here); } }";
    W2010: false, "local variable read before it is assigned",
        "A def assigns this name later, which makes it local to the whole def (unless an enclosing function binds it or it is a `glob`); reading it before any assignment ran is an UnboundLocalError at run time.",
        "with entry { n = 1; } def f() { print(n); n = 2; }";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::Code;

    #[test]
    fn codes_are_unique_well_formed_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert_eq!(s.len(), 5, "{s}");
            assert!(s.starts_with('E') || s.starts_with('W'), "{s}");
            assert!(s[1..].chars().all(|d| d.is_ascii_digit()), "{s}");
            assert!(!c.title().is_empty() && !c.explanation().is_empty());
            assert!(!c.example().is_empty());
            // Only errors can stop a run.
            assert!(!c.is_fatal() || s.starts_with('E'), "{s}");
        }
    }
}
