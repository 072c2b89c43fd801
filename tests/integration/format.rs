//! `svc format FILE... [--check]`: rewriting files, `--check`, errors and exit codes.

use crate::{TempDir, stderr, stdout, svc_in};

const MESSY: &str =
    "# keep me\nnode   Item{has name:str;}\nwith entry {x=1;   print( x ) ;  # trailing\n}\n";
const TIDY: &str = "# keep me\nnode Item {\n    has name: str;\n}\nwith entry {\n    x = 1;\n    print(x);  # trailing\n}\n";

#[test]
fn format_rewrites_files_and_keeps_comments() {
    let dir = TempDir::new("fmt-rewrite");
    let file = dir.write("main.svc", MESSY);
    let out = svc_in(dir.path(), &["format", "main.svc"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("reformatted: main.svc"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), TIDY);
    // Formatting again changes nothing.
    let out = svc_in(dir.path(), &["format", "main.svc"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("0 file(s) reformatted, 1 unchanged"),
        "{}",
        stdout(&out)
    );
    // And the program still runs the same.
    let run = svc_in(dir.path(), &["run", "--no-store", "main.svc"]);
    assert_eq!(stdout(&run), "1\n", "{}", stderr(&run));
}

#[test]
fn format_check_writes_nothing_and_exits_1() {
    let dir = TempDir::new("fmt-check");
    let messy = dir.write("a.svc", MESSY);
    dir.write("b.svc", TIDY);
    let out = svc_in(dir.path(), &["format", "--check", "a.svc", "b.svc"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("would reformat: a.svc"), "{text}");
    assert!(!text.contains("b.svc"), "{text}");
    assert_eq!(std::fs::read_to_string(&messy).expect("read"), MESSY);
    let out = svc_in(dir.path(), &["format", "--check", "b.svc"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn format_walks_directories_and_reports_broken_files() {
    let dir = TempDir::new("fmt-dir");
    dir.write("ok.svc", MESSY);
    dir.write("broken.svc", "with entry { x = ; }\n");
    let out = svc_in(dir.path(), &["format", "."]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("broken.svc") && err.contains("syntax error"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ok.svc")).expect("read"),
        TIDY
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("broken.svc")).expect("read"),
        "with entry { x = ; }\n"
    );
}

#[test]
fn format_usage_and_missing_files() {
    let dir = TempDir::new("fmt-usage");
    let out = svc_in(dir.path(), &["format"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = svc_in(dir.path(), &["format", "nope.svc"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nope.svc"), "{}", stderr(&out));
}
