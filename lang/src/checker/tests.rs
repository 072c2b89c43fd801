//! Checker tests: every valid program under `tests/fixtures/lang` must check with zero
//! errors, and every `tests/fixtures/check/<name>.svc` must render exactly its
//! `<name>.err` (regenerate with `SVC_CHECK_BLESS=1`, then review by eye).

use super::check_module;
use crate::diag::Diagnostic;
use crate::host::MemoryHost;
use crate::span::SourceFile;
use std::path::{Path, PathBuf};

fn fixtures(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(sub)
}

fn svc_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            svc_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "svc") {
            out.push(p);
        }
    }
}

/// What `svc check <name>.svc` prints to stderr, run from the file's directory.
fn render_check(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = SourceFile::new(name, text);
    let parsed = crate::parser::parse(&file.text);
    let mut diags = parsed.diagnostics;
    if !diags.iter().any(Diagnostic::is_error) {
        diags.extend(check_module(&parsed.module, path, &mut MemoryHost::new()));
    }
    diags.sort_by_key(|d| (d.span.start, d.severity));
    diags.iter().map(|d| d.render(&file) + "\n").collect()
}

/// Check a source string (as `main.svc` in a directory without other modules).
fn check_src(src: &str) -> Vec<Diagnostic> {
    let parsed = crate::parser::parse(src);
    assert!(
        !parsed.diagnostics.iter().any(Diagnostic::is_error),
        "parse errors: {:?}",
        parsed.diagnostics
    );
    check_module(
        &parsed.module,
        Path::new("/nonexistent-dir/main.svc"),
        &mut MemoryHost::new(),
    )
}

fn codes(src: &str) -> Vec<&'static str> {
    check_src(src).iter().map(|d| d.code.as_str()).collect()
}

/// Run-time error fixtures whose mistake the checker finds before the program runs (so
/// `svc run` stops at the diagnostic): they are the only `lang` fixtures allowed errors.
const STATICALLY_INVALID: &[&str] = &[
    "errors_runtime/ability_trigger_instance.svc",
    "errors_runtime/name_error_undefined.svc",
    "functions/repeated_keyword_refused.svc",
    "vm/errors_caught.svc",
    "vm/globals.svc",
];

#[test]
fn valid_programs_have_no_errors() {
    let mut files = Vec::new();
    svc_files(&fixtures("lang"), &mut files);
    files.sort();
    let mut failures = String::new();
    for f in &files {
        if STATICALLY_INVALID.iter().any(|s| f.ends_with(s)) {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let parsed = crate::parser::parse(&text);
            let diags = check_module(&parsed.module, f, &mut MemoryHost::new());
            assert!(
                diags.iter().any(Diagnostic::is_error),
                "{} should not check",
                f.display()
            );
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let parsed = crate::parser::parse(&text);
        if parsed.diagnostics.iter().any(Diagnostic::is_error) {
            continue;
        }
        let diags = check_module(&parsed.module, f, &mut MemoryHost::new());
        let file = SourceFile::new(f.display().to_string(), text.clone());
        for d in diags.iter().filter(|d| d.is_error()) {
            failures.push_str(&d.render(&file));
        }
    }
    assert!(
        failures.is_empty(),
        "false errors on valid programs:\n{failures}"
    );
}

#[test]
fn check_fixtures_match() {
    let mut files = Vec::new();
    svc_files(&fixtures("check"), &mut files);
    files.sort();
    let bless = std::env::var_os("SVC_CHECK_BLESS").is_some();
    let mut failures = Vec::new();
    for f in &files {
        let actual = render_check(f);
        let err = f.with_extension("err");
        if bless {
            std::fs::write(&err, &actual).unwrap_or_else(|e| panic!("{}: {e}", err.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&err).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- actual\n{actual}",
                f.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scoping_rules() {
    // Module globals from entry blocks are visible in functions; closures see enclosing
    // locals; comprehension and except names bind.
    assert!(
        codes(
            "def f -> int { return total + g(); }\n\
         def g -> int { n = 1; def h -> int { return n; } return h(); }\n\
         with entry { total = 3; xs = [i * 2 for i in range(3)]; \
         try { print(f()); } except Exception as e { print(e); } print(xs); }"
        )
        .is_empty()
    );
    // Members are not bare names in methods.
    let d = check_src("obj C { has count: int = 0; def inc { count += 1; } }");
    assert_eq!(d.len(), 1);
    assert!(
        d[0].message.contains("did you mean `self.count`"),
        "{}",
        d[0].message
    );
}

#[test]
fn never_panics_on_recovered_trees() {
    for src in [
        "node A { has x: int = ; }",
        "with entry { x = (1 + ; }",
        "impl . { }",
        "walker W { can a with entry { visit [-->; } }",
        "def f(a: int = { }",
        "edge E: A --> { }",
        "import from { };",
    ] {
        let parsed = crate::parser::parse(src);
        let _ = check_module(
            &parsed.module,
            Path::new("main.svc"),
            &mut MemoryHost::new(),
        );
    }
}

#[test]
#[ignore = "diagnostic dump for review"]
fn dump_lang_warnings() {
    let mut files = Vec::new();
    svc_files(&fixtures("lang"), &mut files);
    files.sort();
    for f in &files {
        let out = render_check(f);
        if !out.is_empty() {
            eprintln!("== {}\n{out}", f.display());
        }
    }
    eprintln!("{} files", files.len());
}

/// Valid constructs that must never produce an error (each snippet is a whole program).
#[test]
fn tricky_valid_programs() {
    let programs = [
        // Class-body code sees earlier fields and globs; defaults of params too.
        "glob K = 2; obj A { has a: int = K, b: int = a * 2; def f(x: int = K) -> int { return x; } }",
        // Forward declarations are not duplicates; impl gives the body and its params.
        "edge E; edge E { has w: int = 0; } def f(x: int) -> int; impl f { return x; }",
        // Globs declared inside functions are module globals.
        "def setup { glob counter = 0; } def use -> int { return counter; }",
        // Match captures, class patterns and value patterns.
        "enum C { RED, BLUE } obj P { has x: int = 0; }
         def m(v: any) -> any { match v { case P(x=xx): return xx; case C.RED: return 1;
         case [h, *t]: return t; case {\"k\": kv}: return kv; case _: return None; } }",
        // Nested comprehension targets, walrus in a comprehension, lambda params.
        "with entry { xss = [[1], [2, 3]]; print([y for xs in xss for y in xs if (z := y) > 1], z); \
         f = lambda (a: int, b: int = 2) -> int { c = a + b; return c; }; print(f(1)); }",
        // Except-as, for over tuples, iter-for, while-else, del.
        "with entry { d = {\"a\": 1}; for (k, v) in d.items() { print(k, v); } \
         for i = 0 while i < 2 with i += 1 { continue; } n = 3; \
         while n > 0 { n -= 1; } else { print(\"done\"); } \
         try { x = 1 / 0; } except ZeroDivisionError as e { print(e); } del d; }",
        // Walker state through self, here/visitor where they belong, typed context.
        "node N { has v: int = 0; can greet with W entry { visitor.total += self.v; } }
         walker W { has total: int = 0; can go with Root entry { visit [-->]; }
         can at with N entry { ->N { print(here.v); } visit [-->[?:N, v > 0]]; } }
         with entry { root ++> N(v=1); w = root spawn W(); print(w.total, w.reports); }",
        // Inherited fields, defaults overridden, walker spawn with keywords.
        "node B { has id: int; } node U(B) { has id: int = 0, name: str = \"\"; }
         with entry { print(U(), U(1, \"a\"), U(name=\"b\")); }",
        // A local shadowing a module def skips the arity check.
        "def f(a: int) -> int { return a; } def g(f: any) -> any { return f(1, 2); }",
        // Builtins, exceptions and object-spatial names resolve.
        "with entry { print(len([1]), isinstance(1, int), jid(root), AccessLevel.READ, \
         ConnectPerm, GenericEdge, Root, __name__); raise ValueError(\"x\"); }",
        // Decorated functions are not arity-checked.
        "def deco(f: any) -> any { return f; } @deco def h(a: int) -> int { return a; } \
         with entry { print(h()); }",
        // Imports of http and typing-free annotations.
        "import from http { HTTPMethod } def f(x: Optional[int] = None) -> list[Any] { return [x]; }",
        // Typed endpoints on edges, union triggers, exit abilities.
        "node A {} node B {} edge E: A --> B {} edge F: A | Root --> B;
         walker W { can a with A | B entry { skip; } can z with exit { disengage; } }",
        // Test blocks may return.
        "def add(a: int, b: int) -> int { return a + b; } test \"adds\" { assert add(1, 2) == 3; return; }",
    ];
    for p in programs {
        let parsed = crate::parser::parse(p);
        let perrs: Vec<_> = parsed.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert!(perrs.is_empty(), "parse errors in {p}: {perrs:?}");
        let errors: Vec<String> = check_module(
            &parsed.module,
            Path::new("/x/main.svc"),
            &mut MemoryHost::new(),
        )
        .into_iter()
        .filter(Diagnostic::is_error)
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
        assert!(errors.is_empty(), "false errors in {p}: {errors:?}");
    }
}

#[test]
fn generic_params_are_known_in_annotations() {
    // `obj Box[T]` / `def first[U]`: the erased parameters are not undefined names.
    let src = "obj Box[T] { has item: T; def get -> T { return self.item; } }
               def first[U](xs: list[U]) -> U { return xs[0]; }
               with entry { print(Box(1).get(), first([2])); }";
    let all = codes(src);
    assert!(!all.contains(&"W2001"), "false W2001 in {src}: {all:?}");
    // A misspelt type elsewhere still warns.
    assert!(codes("obj Box[T] { has item: Tt; }").contains(&"W2001"));
}

#[test]
fn each_code_fires() {
    let cases: &[(&str, &str)] = &[
        ("with entry { print(nope); }", "E2001"),
        ("node N { has x: Nope = 1; }", "W2001"),
        (
            "def f(a: int) -> int { return a; } with entry { f(1, 2); }",
            "E2002",
        ),
        (
            "obj O { has name: str; } with entry { O(nam=\"x\"); }",
            "E2003",
        ),
        ("walker W { can a with root entry { } }", "E2004"),
        ("enum C { A } walker W { can a with C entry { } }", "W2004"),
        ("glob x: int = \"a\";", "E2005"),
        ("with entry { return; }", "E2006"),
        ("with entry { break; }", "E2007"),
        ("with entry { skip; }", "E2008"),
        ("def f { disengage; }", "W2008"),
        ("with entry { print(here); }", "W2009"),
        ("obj A {} obj A {}", "E2009"),
        ("import from http { Nope }", "E2010"),
        ("import from nosuch { X }", "E2011"),
        ("import numpy;", "E2012"),
        ("impl Nope.f { }", "E2013"),
        ("node A {} node B: A --> A {}", "E2027"),
        ("walker W {} node A {} edge E: A --> W {}", "E2028"),
        (
            "import math; with entry { print(math.sqroot(2)); }",
            "E2030",
        ),
        ("import from datetime { datetim }", "E2030"),
        ("def f(x: int) { } with entry { f(\"a\"); }", "E2005"),
        (
            "obj P { has x: int = 0; } with entry { p = P(); print(p.y); }",
            "E2034",
        ),
    ];
    for (src, code) in cases {
        let got = codes(src);
        assert!(got.contains(code), "{src}: expected {code}, got {got:?}");
    }
}

#[test]
fn literal_arguments_against_declared_types() {
    let src = "obj P { has x: int = 0; has s: str = \"\"; def m(k: float) { } }\n\
               def f(a: int, b: str = \"\", *, c: list = []) { }\n\
               with entry { f(\"1\"); f(1, 2); f(1, c={}); P(\"x\"); P(s=3); \
               p = P(); p.m(\"k\"); f(True, \"ok\", c=[1]); P(1, \"s\"); p.m(2); }";
    let d = check_src(src);
    let got: Vec<(&str, &str)> = d
        .iter()
        .map(|d| (d.code.as_str(), d.message.as_str()))
        .collect();
    assert_eq!(got.len(), 6, "{got:#?}");
    assert!(got.iter().all(|(c, _)| *c == "E2005"), "{got:#?}");
    let expected = [
        "`a` of `f` expects `int`, found `str`",
        "`b` of `f` expects `str`, found `int`",
        "`c` of `f` expects `list`, found `dict`",
        "`x` of `P` expects `int`, found `str`",
        "`s` of `P` expects `str`, found `int`",
        "`k` of `m` expects `float`, found `str`",
    ];
    for (i, want) in expected.iter().enumerate() {
        assert!(got[i].1.contains(want), "{got:#?}");
    }
}

#[test]
fn attributes_of_known_instances() {
    let errs = |src: &str| -> Vec<String> {
        check_src(src)
            .into_iter()
            .filter(|d| d.code == "E2034")
            .map(|d| d.message)
            .collect()
    };
    // A constructed local, a module-level instance bound once and `self` of an
    // archetype nothing extends; inherited members and abilities are found (a `glob`
    // is never typed: any def may rebind it).
    let found = errs(
        "node B { has base: int = 0; def hello { } }\n\
         node N(B) { has name: str = \"\"; def nope_not { return self.nmae; } }\n\
         def f { n = N(); print(n.name, n.base, n.hello(), n.nam); }\n\
         with entry { g = N(); }\n\
         with entry { print(g.mising); }",
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("`N` has no field or ability `nmae`"),
        "{found:#?}"
    );
    assert!(found[0].contains("did you mean `name`?"), "{found:#?}");
    assert!(found[1].contains("`nam`"), "{found:#?}");
    assert!(found[2].contains("`mising`"), "{found:#?}");
    // Nothing certain: the attribute is assigned somewhere, `setattr` or `__dict__` is
    // used, the name is rebound to something else, a parameter, a subclass may be
    // `self`, a non-local base, a class, a dunder, a walker's `reports`.
    let none = [
        "obj P {} with entry { p = P(); p.y = 1; print(p.y); }",
        "obj P {} def f(q: P) { q.z += 1; } with entry { p = P(); print(p.z); }",
        "obj P {} with entry { p = P(); setattr(p, \"y\", 1); print(p.y); }",
        "obj P {} with entry { p = P(); p.__dict__[\"y\"] = 1; print(p.y); }",
        "obj P {} obj Q { has y: int = 0; } with entry { p = P(); p = Q(); print(p.y); }",
        "obj P {} def f(p: P) { print(p.y); }",
        "obj A { def f { return self.extra; } } obj B(A) { has extra: int = 1; }",
        "obj E(Exception) {} with entry { e = E(); print(e.args); }",
        "class C { def init(self: C) { self.y = 1; } } with entry { print(C().y); }",
        "obj P {} with entry { p = P(); print(p.__class__, p.__name__x); }",
        "walker W {} with entry { w = W(); print(w.reports); }",
        "obj P {} with entry { for p in [P()] { print(p.y); } }",
        "obj P {} with entry { p = P(); print(p?.y, p?.y?.z); }",
        "import math; with entry { print(math?.nope); }",
    ];
    for src in none {
        assert!(errs(src).is_empty(), "{src}: {:?}", errs(src));
    }
}
