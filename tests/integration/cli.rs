//! The `svc` command line: help, exit codes, missing files, and `svc run` persistence.

use crate::{TempDir, stderr, stdout, svc, svc_in};

const COUNT_ITEMS: &str =
    "node Item {}\n\nwith entry {\n    root ++> Item();\n    print(len([root -->]));\n}\n";

#[test]
fn help_lists_the_commands() {
    let out = svc().arg("--help").output().expect("spawn svc");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for word in ["run", "check", "Usage"] {
        assert!(text.contains(word), "--help lacks {word:?}:\n{text}");
    }
}

#[test]
fn run_help_explains_the_store() {
    let out = svc().args(["run", "--help"]).output().expect("spawn svc");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(".svc/data"),
        "run --help should name the store:\n{text}"
    );
    assert!(text.contains("--no-store"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["frobnicate"][..], &["run"][..], &[][..]] {
        let out = svc().args(args).output().expect("spawn svc");
        assert_eq!(out.status.code(), Some(2), "svc {args:?}: {}", stderr(&out));
    }
}

#[test]
fn missing_file_is_a_clear_error() {
    let dir = TempDir::new("missing");
    for cmd in ["run", "check"] {
        let out = svc_in(dir.path(), &[cmd, "nope.svc"]);
        assert_eq!(out.status.code(), Some(1), "svc {cmd}");
        let err = stderr(&out);
        assert!(
            err.contains("nope.svc"),
            "svc {cmd}: message should name the file: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn run_persists_the_root_graph_between_runs() {
    let dir = TempDir::new("persist");
    dir.write("main.svc", COUNT_ITEMS);
    let first = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(
        first.status.success(),
        "first run failed: {}",
        stderr(&first)
    );
    assert_eq!(stdout(&first), "1\n");
    assert!(
        dir.path().join(".svc/data/anchor_store.db").is_file(),
        "store not created"
    );

    let second = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(
        second.status.success(),
        "second run failed: {}",
        stderr(&second)
    );
    assert_eq!(stdout(&second), "2\n");
}

#[test]
fn run_store_is_next_to_the_file_not_the_cwd() {
    let dir = TempDir::new("beside");
    std::fs::create_dir_all(dir.path().join("app")).expect("mkdir");
    dir.write("app/main.svc", COUNT_ITEMS);
    let out = svc_in(dir.path(), &["run", "app/main.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join("app/.svc/data/anchor_store.db").is_file());
    assert!(!dir.path().join(".svc").exists());
}

#[test]
fn no_store_does_not_persist() {
    let dir = TempDir::new("nostore");
    dir.write("main.svc", COUNT_ITEMS);
    for _ in 0..2 {
        let out = svc_in(dir.path(), &["run", "--no-store", "main.svc"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "1\n");
    }
    assert!(
        !dir.path().join(".svc").exists(),
        "--no-store must not create .svc/"
    );
}

/// A graph built, walked (the walk commits), extended and walked again, then a field no
/// store can hold: the same output and error with and without `--no-store`, whose host
/// keeps nothing a commit sends.
const WALK_AFTER_COMMIT: &str = r#"node Item {
    has n: int, f: any = None;
}

walker Sum {
    has total: int = 0;

    can start with Root entry {
        visit [-->];
    }

    can item with Item entry {
        self.total += here.n;
    }
}

with entry {
    for i in range(5) {
        root ++> Item(n=i);
    }
    print("first", (root spawn Sum()).total);
    root ++> Item(n=10);
    print("second", (root spawn Sum()).total, len([root-->]));
    root ++> Item(n=1, f=print);
    print("third", (root spawn Sum()).total);
}
"#;

#[test]
fn no_store_reads_its_graph_after_commits_and_fails_as_a_stored_run() {
    let stored = TempDir::new("walkstored");
    stored.write("main.svc", WALK_AFTER_COMMIT);
    let memory = TempDir::new("walknostore");
    memory.write("main.svc", WALK_AFTER_COMMIT);
    let a = svc_in(stored.path(), &["run", "main.svc"]);
    let b = svc_in(memory.path(), &["run", "--no-store", "main.svc"]);
    assert_eq!(stdout(&b), "first 10\nsecond 20 6\n");
    assert_eq!(stdout(&a), stdout(&b));
    assert_eq!(b.status.code(), Some(1));
    assert_eq!(a.status.code(), Some(1));
    assert!(
        stderr(&b).contains("cannot persist a value of type 'builtin_function_or_method'"),
        "{}",
        stderr(&b)
    );
    assert_eq!(stderr(&a), stderr(&b));
}

#[test]
fn run_error_exits_1_with_message_on_stderr() {
    let dir = TempDir::new("runerr");
    dir.write(
        "main.svc",
        "with entry {\n    print(\"before\");\n    x = 1 / 0;\n}\n",
    );
    let out = svc_in(dir.path(), &["run", "main.svc"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "before\n");
    assert!(
        stderr(&out).contains("division by zero"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_clean_file_exits_0() {
    let dir = TempDir::new("checkok");
    dir.write("main.svc", COUNT_ITEMS);
    let out = svc_in(dir.path(), &["check", "main.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok: main.svc\n");
    assert_eq!(stderr(&out), "");
    assert!(
        !dir.path().join(".svc").exists(),
        "check must not open the store"
    );
}

#[test]
fn check_failing_file_exits_1_with_diagnostics() {
    let dir = TempDir::new("checkerr");
    dir.write("main.svc", "with entry {\n    x = (1 + ;\n}\n");
    let out = svc_in(dir.path(), &["check", "main.svc"]);
    assert_eq!(out.status.code(), Some(1), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("main.svc:2:"),
        "diagnostic should point at line 2: {err}"
    );
    assert!(err.contains("error["), "{err}");
    assert_eq!(stdout(&out), "");
}

/// A 60,000-operator chain (`1+1+...`) or postfix chain (`x.a.a.a...`) is refused with the
/// nesting diagnostic by `svc run`, `svc check` and `svc format`; it used to overflow the
/// stack of every pass that walks the tree. A 3,000-operator chain still runs.
#[test]
fn very_long_operator_chains_are_refused_not_crashed() {
    let dir = TempDir::new("long-chain");
    let long = format!(
        "with entry {{ x = {}; print(x); }}\n",
        vec!["1"; 60_000].join("+")
    );
    let postfix = format!(
        "obj A {{ has a: int = 0; }}\nwith entry {{ x = A(); print(x{}); }}\n",
        ".a".repeat(60_000)
    );
    for (name, text) in [("long.svc", &long), ("postfix.svc", &postfix)] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        for cmd in [
            &["run", "--no-store"][..],
            &["check"][..],
            &["format", "--check"][..],
        ] {
            let out = svc().args(cmd).arg(&path).output().expect("spawn svc");
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{cmd:?} {name}: {err}");
            assert!(err.contains("nesting is too deep"), "{cmd:?} {name}: {err}");
        }
    }
    let fine = dir.path().join("fine.svc");
    std::fs::write(
        &fine,
        format!("with entry {{ print({}); }}\n", vec!["1"; 3_000].join("+")),
    )
    .expect("write");
    let out = svc()
        .args(["run", "--no-store"])
        .arg(&fine)
        .output()
        .expect("spawn svc");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "3000\n");
}

/// A `.jac` program imports `.jac` modules beside it, `include`s them and loads its
/// `.impl.jac` annexes, as `jac run` does; `svc check` resolves the same files.
#[test]
fn jac_files_import_and_annex_jac_siblings() {
    let dir = TempDir::new("jacsiblings");
    dir.write(
        "helpers.jac",
        "glob GREETING = \"hi\";\ndef shout(s: str) -> str { return s.upper() + \"!\"; }\n",
    );
    dir.write("extra.jac", "def twice(x: int) -> int { return x * 2; }\n");
    dir.write(
        "main.jac",
        "include extra;\nimport from helpers { shout }\nimport helpers;\n\
         obj Calc { has n: int = 2; def double() -> int; }\n\
         with entry { print(shout(helpers.GREETING), twice(3), Calc().double()); }\n",
    );
    dir.write(
        "main.impl.jac",
        "impl Calc.double() -> int { return self.n * 10; }\n",
    );
    let out = svc_in(dir.path(), &["run", "--no-store", "main.jac"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "HI! 6 20\n");
    let out = svc_in(dir.path(), &["check", "main.jac"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn bytes_and_complex_in_node_fields_survive_the_store() {
    let dir = TempDir::new("bytes-stored");
    dir.write(
        "main.svc",
        r#"node Blob { has data: any = None; }
with entry {
    found = [root -->[?:Blob]];
    if found {
        print(found[0].data);
    } else {
        root ++> Blob(data=[b"\x00'bin\xff", {"k": b""}, (b"t",), complex(1.5, float("-inf")), bytearray(b"m\x01"), frozenset([7])]);
        print("stored");
    }
}
"#,
    );
    let first = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first), "stored\n");
    let second = svc_in(dir.path(), &["run", "main.svc"]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        stdout(&second),
        "[b\"\\x00'bin\\xff\", {'k': b''}, (b't',), (1.5-infj), bytearray(b'm\\x01'), frozenset({7})]\n"
    );
}
