//! Unit tests of the compiler tools, over small snippets and every `.svc` file under
//! `tests/fixtures/` and `examples/`.

use super::*;
use std::path::{Path, PathBuf};

fn svc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("tests/fixtures"), root.join("examples")];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "svc") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() > 50, "fixtures not found");
    out
}

/// The module's Debug form with every span removed: equal for the same tree.
fn shape(src: &str) -> String {
    let m = crate::parser::parse(src).module;
    let d = format!("{m:?}");
    let mut out = String::with_capacity(d.len());
    let mut rest = d.as_str();
    while let Some(i) = rest.find("Span {") {
        out.push_str(&rest[..i]);
        let j = rest[i..].find('}').map_or(rest.len(), |j| i + j + 1);
        rest = &rest[j..];
    }
    out.push_str(rest);
    out
}

fn parses_clean(src: &str) -> bool {
    !crate::parser::parse(src)
        .diagnostics
        .iter()
        .any(|d| d.is_error())
}

#[test]
fn format_fixtures_same_tree_idempotent_comments_kept() {
    let mut checked = 0;
    for p in svc_files() {
        let src = std::fs::read_to_string(&p).expect("read fixture");
        if !parses_clean(&src) {
            assert!(
                format_source(&src).is_err(),
                "{}: formatted broken code",
                p.display()
            );
            continue;
        }
        let once = format_source(&src).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(
            shape(&src),
            shape(&once),
            "{}: tree changed:\n{once}",
            p.display()
        );
        let twice = format_source(&once).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(once, twice, "{}: not idempotent", p.display());
        assert_eq!(
            format::comments(&src),
            format::comments(&once),
            "{}: comments",
            p.display()
        );
        checked += 1;
    }
    assert!(checked > 50);
}

#[test]
fn token_table_covers_every_lexer_keyword_and_punctuation() {
    // The lexer's keyword table, read from its source so a new keyword cannot be missed.
    let lexer_src = include_str!("../lexer.rs");
    let kw_fn = &lexer_src[lexer_src.find("pub fn keyword(").expect("keyword fn")..];
    let kw_fn = &kw_fn[..kw_fn.find("_ => return None").expect("end of keyword fn")];
    let table = grammar_tokens();
    let spec = grammar_spec();
    let mut n = 0;
    for line in kw_fn.lines() {
        let Some(rest) = line.trim().strip_prefix('"') else {
            continue;
        };
        let word = &rest[..rest.find('"').expect("closing quote")];
        n += 1;
        assert!(
            table.contains(&format!("`{word}`")),
            "token table lacks keyword `{word}`"
        );
        assert!(
            spec.contains(&format!("\"{word}\"")),
            "grammar never mentions `{word}`"
        );
    }
    assert!(n > 50, "keywords not found in lexer.rs");
    // Every fixed spelling of `TokenKind::text` is in the table.
    let text_fn = &lexer_src[lexer_src.find("pub fn text(self)").expect("text fn")..];
    let text_fn = &text_fn[..text_fn.find("pub fn describe").expect("end of text fn")];
    for line in text_fn.lines() {
        let Some((_, rhs)) = line.split_once("=> \"") else {
            continue;
        };
        let spelling = &rhs[..rhs.rfind('"').expect("closing quote")];
        let shown = spelling.replace('|', "\\|");
        assert!(
            table.contains(&format!("`{shown}`")),
            "token table lacks `{spelling}`"
        );
    }
    for row in grammar::TOKENS {
        if row.kind.is_keyword() {
            let t = row.kind.text().expect("keyword text");
            assert_eq!(crate::lexer::keyword(t), Some(row.kind), "{t}");
        }
    }
}

#[test]
fn grammar_spec_has_the_main_rules() {
    let g = grammar_spec();
    for rule in [
        "module",
        "archetype",
        "ability",
        "statement",
        "expression",
        "edge_ref",
        "connect_op",
        "filter",
    ] {
        assert!(g.contains(&format!("\n{rule} ")), "rule {rule}");
    }
}

fn codes(src: &str) -> Vec<String> {
    lint_source(src, false)
        .violations
        .into_iter()
        .map(|v| v.code)
        .collect()
}

#[test]
fn lint_finds_each_rule() {
    let src = "import from m { a, b };\ndef f(list: int) -> int {\n    x = 1;\n    y = a;\n    return y;\n    print(y);\n}\nwith entry {\n    if f(1) == None {\n        print(f(1))\n    }\n}\n";
    let c = codes(src);
    for code in ["L001", "L002", "L003", "L004", "L005", "L006"] {
        assert!(c.iter().any(|x| x == code), "{code} missing in {c:?}");
    }
    let fixed = lint_source(src, true);
    assert!(fixed.changed);
    let fixed_code = fixed.fixed_code.expect("fixed");
    assert!(fixed_code.contains("print(f(1));"), "{fixed_code}");
    assert!(
        !codes(&fixed_code)
            .iter()
            .any(|x| x == "L005" || x == "L007")
    );
}

#[test]
fn lint_reports_compiler_errors_with_severity_error() {
    let r = lint_source("with entry { x = ; }", true);
    assert!(
        r.violations
            .iter()
            .any(|v| v.severity == "error" && v.code.starts_with('E'))
    );
    assert!(r.violations.iter().all(|v| v.severity == "error"));
    assert!(r.fixed_code.is_none() && !r.changed);
    let r = lint_source("with entry { print(undefined_name); }", false);
    assert!(
        r.violations.iter().any(|v| v.severity == "error"),
        "{:?}",
        r.violations
    );
}

#[test]
fn lint_is_quiet_on_clean_code() {
    let src = "def add(a: int, b: int) -> int {\n    total = a + b;\n    return total;\n}\n\nwith entry {\n    print(add(1, 2));\n}\n";
    let r = lint_source(src, true);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(!r.changed);
}

#[test]
fn lint_every_fixture_without_panicking() {
    for p in svc_files() {
        let src = std::fs::read_to_string(&p).expect("read fixture");
        let r = lint_source(&src, true);
        if std::env::var_os("SVC_LINT_DUMP").is_some() {
            for v in r.violations.iter().filter(|v| v.code.starts_with('L')) {
                eprintln!(
                    "{}:{}:{}: {} {}",
                    p.display(),
                    v.line,
                    v.col,
                    v.code,
                    v.message
                );
            }
        }
        if let Some(fixed) = &r.fixed_code {
            assert!(parses_clean(fixed), "{}: fix broke the code", p.display());
        }
    }
}

/// Run `cmd` with `input` on stdin; `None` when the program is not installed.
fn run_checker(cmd: &str, args: &[&str], input: &str) -> Option<(bool, String)> {
    use std::io::Write as _;
    let mut child = std::process::Command::new(cmd)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(input.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Check many programs with one checker process: programs are sent NUL-separated and
/// the checker prints the indexes of the invalid ones.
fn batch_check(cmd: &str, args: &[&str], programs: &[String]) -> Option<Vec<usize>> {
    let input = programs.join("\0");
    let (ok, err) = run_checker(cmd, args, &input)?;
    assert!(ok, "checker failed: {err}");
    Some(
        err.split_whitespace()
            .filter_map(|w| w.strip_prefix("BAD:"))
            .filter_map(|n| n.parse().ok())
            .collect(),
    )
}

fn translated_fixtures(f: fn(&str) -> Result<String, Vec<String>>) -> (Vec<PathBuf>, Vec<String>) {
    let mut paths = Vec::new();
    let mut programs = Vec::new();
    for p in svc_files() {
        let src = std::fs::read_to_string(&p).expect("read fixture");
        if !parses_clean(&src) {
            assert!(f(&src).is_err());
            continue;
        }
        let code = f(&src).unwrap_or_else(|w| panic!("{}: {w:?}", p.display()));
        paths.push(p);
        programs.push(code);
    }
    assert!(programs.len() > 50);
    (paths, programs)
}

#[test]
fn python_translation_of_every_fixture_is_valid_python() {
    let (paths, programs) = translated_fixtures(svc_to_python);
    let script = "import ast,sys\nfor i, p in enumerate(sys.stdin.read().split('\\0')):\n    try:\n        ast.parse(p)\n    except SyntaxError as e:\n        print(f'BAD:{i} {e}', file=sys.stderr)\n";
    let Some(bad) = batch_check("python3", &["-c", script], &programs) else {
        eprintln!("python3 not installed: translation not checked");
        return;
    };
    if let Some(&i) = bad.first() {
        panic!("{}: invalid Python:\n{}", paths[i].display(), programs[i]);
    }
}

#[test]
fn python_translation_runs_objects_and_functions() {
    let src = "obj Point {\n    has x: int, y: int = 0;\n    def norm2() -> int { return self.x * self.x + self.y * self.y; }\n}\n\ndef total(ps: list) -> int {\n    s = 0;\n    for p in ps { s += p.norm2(); }\n    return s;\n}\n\nwith entry {\n    ps = [Point(x=1, y=2), Point(3)];\n    print(f\"total={total(ps)}\", total(ps) |> str);\n}\n";
    let py = svc_to_python(src).expect("translates");
    assert!(
        py.contains("@dataclass") && py.contains("class Point:"),
        "{py}"
    );
    if let Some((ok, err)) = run_checker("python3", &["-"], &py) {
        assert!(ok, "{err}\n{py}");
    }
    let (_, warnings) = svc_to_python_with_warnings(src).expect("translates");
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn python_translation_warns_on_object_spatial_code() {
    let src = "node N { has v: int = 0; }\nwalker W {\n    can go with N entry { visit [-->]; report here.v; }\n}\nwith entry { root ++> N(); root spawn W(); }\n";
    let (py, warnings) = svc_to_python_with_warnings(src).expect("translates");
    assert!(warnings.iter().any(|w| w.contains("visit")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("spawn")), "{warnings:?}");
    assert!(py.contains("class N:"));
    assert!(svc_to_python("with entry { x = ; }").is_err());
}

#[test]
fn js_translation_of_every_fixture_is_valid_javascript() {
    let (paths, programs) = translated_fixtures(svc_to_js);
    let script = "const vm = require('vm'); let d = ''; process.stdin.on('data', (c) => d += c); process.stdin.on('end', () => { d.split('\\0').forEach((p, i) => { try { new vm.Script(p); } catch (e) { console.error('BAD:' + i + ' ' + e.message); } }); });";
    let Some(bad) = batch_check("node", &["-e", script], &programs) else {
        eprintln!("node not installed: translation not checked");
        return;
    };
    if let Some(&i) = bad.first() {
        panic!(
            "{}: invalid JavaScript:\n{}",
            paths[i].display(),
            programs[i]
        );
    }
}

#[test]
fn js_translation_runs_objects_and_functions() {
    let src = "obj Point {\n    has x: int, y: int = 0;\n    def norm2() -> int { return self.x * self.x + self.y * self.y; }\n}\n\ndef total(ps: list) -> int {\n    s = 0;\n    for p in ps { s += p.norm2(); }\n    return s;\n}\n\nwith entry {\n    ps = [Point(y=2, x=1), Point(3)];\n    print(f\"total={total(ps)}\", [p.x for p in ps if p.y > 0]);\n}\n";
    let (js, warnings) = svc_to_js_with_warnings(src).expect("translates");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        js.contains("class Point {") && js.contains("function total(ps)"),
        "{js}"
    );
    let path = std::env::temp_dir().join(format!("svc-to-js-{}.js", std::process::id()));
    std::fs::write(&path, &js).expect("write js");
    let check = std::process::Command::new("node")
        .arg("--check")
        .arg(&path)
        .output();
    let run = std::process::Command::new("node").arg(&path).output();
    let _ = std::fs::remove_file(&path);
    let (Ok(check), Ok(run)) = (check, run) else {
        eprintln!("node not installed: translation not run");
        return;
    };
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "total=14 [1]\n",
        "{js}"
    );
}

#[test]
fn js_translation_stubs_nodes_and_walkers() {
    let src = "node N { has v: int = 0; def double() -> int { return self.v * 2; } }\nwalker W {\n    can go with N entry { visit [-->]; }\n}\nwith entry { root ++> N(); }\n";
    let (js, warnings) = svc_to_js_with_warnings(src).expect("translates");
    assert!(
        js.contains("class N {") && js.contains("class W {") && js.contains("go(here)"),
        "{js}"
    );
    assert!(warnings.iter().any(|w| w.contains("stub")), "{warnings:?}");
    assert!(svc_to_js("obj {").is_err());
}

#[test]
fn deep_operator_chains_are_bounded() {
    // Under the tools' depth cap: every tool answers (on a default 2 MiB test thread).
    let ok = format!(
        "with entry {{\n    x = 1{};\n    print(x);\n}}\n",
        " + 1".repeat(350)
    );
    assert!(format_source(&ok).is_ok());
    assert!(ast_tree(&ok).is_ok() && ast_json(&ok).is_ok());
    assert!(svc_to_python(&ok).is_ok() && svc_to_js(&ok).is_ok());
    let _ = lint_source(&ok, true);
    // Far over it: a clear error, never a stack overflow. The parser's own tree for such
    // a chain is as deep as the chain (and dropping it recurses), so this runs on a thread
    // with the interpreter's stack, as hosts run the tools.
    let worker = std::thread::Builder::new()
        .stack_size(crate::driver::INTERPRETER_STACK_BYTES)
        .spawn(|| {
            let deep = format!("with entry {{ x = 1{}; }}\n", " + 1".repeat(20_000));
            let err = format_source(&deep).expect_err("too deep");
            // The parser's nesting cap counts long chains too, so it refuses first.
            assert!(
                err.message.contains("nesting is too deep")
                    || err.message.contains("nested more than"),
                "{err}"
            );
            assert!(
                ast_json(&deep).is_err()
                    && svc_to_python(&deep).is_err()
                    && svc_to_js(&deep).is_err()
            );
            let lint = lint_source(&deep, true);
            assert!(lint.violations.iter().any(|v| v.severity == "error"));
        })
        .expect("spawn");
    worker.join().expect("deep chain handled");
}

#[test]
fn ast_dumps_name_kinds_and_spans() {
    let src = "node N { has v: int = 1; }\nwith entry { root ++> N(); }\n";
    let tree = ast_tree(src).expect("tree");
    assert!(tree.contains("Archetype node N  [1:1-1:27]"), "{tree}");
    assert!(tree.contains("HasVar v"), "{tree}");
    assert!(tree.contains("Connect out"), "{tree}");
    let json = ast_json(src).expect("json");
    assert_eq!(json["ast"]["kind"], "Module");
    assert_eq!(json["ast"]["children"][0]["kind"], "Archetype");
    assert_eq!(json["ast"]["children"][0]["span"]["line"], 1);
    assert_eq!(json["truncated"], false);
    let broken = ast_json("with entry { x = ; }").expect("dumped with errors");
    assert!(!broken["errors"].as_array().expect("errors").is_empty());
    let big = format!("with entry {{ x = [{}]; }}\n", "1, ".repeat(6000));
    let json = ast_json(&big).expect("json");
    assert_eq!(json["truncated"], true);
    assert!(ast_tree(&big).expect("tree").contains("more nodes"));
}
