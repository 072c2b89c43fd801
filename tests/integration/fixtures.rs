//! Data-driven fixture suites: every `tests/fixtures/<suite>/**/*.svc` runs through the
//! real binary in a fresh temp dir and its output is compared with files beside it.
//!
//! - `lang/`: `x.svc` runs with `svc run x.svc`; `x.out` is the exact expected stdout, an
//!   `x.exit1` marker means exit code 1 is expected (else 0), an optional `x.err` is the
//!   exact expected stderr. A `.svc` with neither `.out` nor `.exit1` is a helper module
//!   (imported by fixtures beside it) and is copied along, not run.
//! - `check/`: `x.svc` runs with `svc check x.svc`; `x.err` is the exact expected stderr
//!   (missing = empty); exit code 1 is expected iff it contains `error[`.
//!
//! One `#[test]` per suite runs all its files in parallel and reports every mismatch at
//! the end. Environment:
//! - `SVC_FIXTURE=substr` runs only fixtures whose path contains `substr`;
//! - `SVC_BLESS=1` rewrites `check/**/*.err` and existing `lang/**/*.err` from the actual
//!   output; `SVC_BLESS=all` also rewrites `lang/**/*.out` and the `.exit1` markers;
//! - `SVC_FIXTURE_TIMEOUT=secs` (default 60) kills a fixture that runs too long.

use crate::{TempDir, svc};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[test]
fn lang_fixtures() {
    run_suite(Suite::Lang);
}

/// The same `lang` fixtures on the tree-walker alone (`svc run --no-vm`): the compiled
/// core and the tree-walker must print the same bytes (stdout, and stderr where an
/// `.err` is kept).
#[test]
fn lang_fixtures_no_vm() {
    run_suite(Suite::LangNoVm);
}

#[test]
fn check_fixtures() {
    run_suite(Suite::Check);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suite {
    Lang,
    /// `lang` with `--no-vm` (never blesses).
    LangNoVm,
    Check,
}

impl Suite {
    fn dir_name(self) -> &'static str {
        match self {
            Suite::Lang | Suite::LangNoVm => "lang",
            Suite::Check => "check",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Suite::Lang | Suite::LangNoVm => "run",
            Suite::Check => "check",
        }
    }

    fn extra_args(self) -> &'static [&'static str] {
        match self {
            Suite::LangNoVm => &["--no-vm"],
            _ => &[],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bless {
    Off,
    /// `SVC_BLESS=1`: stderr expectations only.
    Stderr,
    /// `SVC_BLESS=all`: stdout, stderr and exit markers.
    All,
}

fn bless_mode() -> Bless {
    match std::env::var("SVC_BLESS").as_deref() {
        Ok("all") => Bless::All,
        Ok("" | "0") | Err(_) => Bless::Off,
        Ok(_) => Bless::Stderr,
    }
}

/// What one run produced.
struct Actual {
    stdout: String,
    stderr: String,
    /// `None`: killed by a signal or by the timeout.
    code: Option<i32>,
    timed_out: bool,
}

fn run_suite(suite: Suite) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(suite.dir_name());
    let bless = match suite {
        Suite::LangNoVm => Bless::Off,
        _ => bless_mode(),
    };
    let filter = std::env::var("SVC_FIXTURE").unwrap_or_default();

    let mut all = Vec::new();
    collect_svc_files(&root, &mut all);
    all.sort();
    let is_case = |svc: &PathBuf| match suite {
        Suite::Check => true,
        Suite::Lang | Suite::LangNoVm => {
            bless == Bless::All
                || svc.with_extension("out").exists()
                || svc.with_extension("exit1").exists()
        }
    };
    let cases: Vec<PathBuf> = all
        .iter()
        .filter(|p| is_case(p))
        .filter(|p| filter.is_empty() || p.to_string_lossy().contains(&filter))
        .cloned()
        .collect();
    if cases.is_empty() {
        eprintln!(
            "no {} fixtures under {} (filter {filter:?})",
            suite.dir_name(),
            root.display()
        );
        return;
    }

    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(cases.len());
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    if let Some(report) = run_case(suite, case, bless) {
                        failures
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((case.clone(), report));
                    }
                }
            });
        }
    });

    let mut failures = failures
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failures.is_empty() {
        eprintln!("{} {} fixtures passed", cases.len(), suite.dir_name());
        return;
    }
    failures.sort_by(|a, b| a.0.cmp(&b.0));
    let mut text = String::new();
    for (case, report) in &failures {
        let shown = case
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(case);
        let _ = writeln!(text, "\n=== {} ===\n{report}", shown.display());
    }
    let _ = writeln!(
        text,
        "\n{} of {} {} fixtures failed (rerun one with SVC_FIXTURE=name; \
         update expectations with SVC_BLESS=1 or SVC_BLESS=all)",
        failures.len(),
        cases.len(),
        suite.dir_name()
    );
    eprintln!("{text}");
    panic!(
        "{} of {} {} fixtures failed",
        failures.len(),
        cases.len(),
        suite.dir_name()
    );
}

fn collect_svc_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_svc_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "svc") {
            out.push(path);
        }
    }
}

fn read_opt(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Run one fixture; `Some(report)` describes every mismatch left after blessing.
fn run_case(suite: Suite, case: &Path, bless: Bless) -> Option<String> {
    let actual = match execute(suite, case) {
        Ok(actual) => actual,
        Err(e) => return Some(format!("could not run: {e}")),
    };
    let mut report = String::new();
    if actual.timed_out {
        let _ = writeln!(report, "timed out (SVC_FIXTURE_TIMEOUT)");
    }
    let err_path = case.with_extension("err");
    match suite {
        Suite::Check => {
            if bless != Bless::Off {
                write_expected(&err_path, &actual.stderr, &mut report);
            }
            let expected_err = read_opt(&err_path).unwrap_or_default();
            let expected_code = if expected_err.contains("error[") {
                1
            } else {
                0
            };
            compare_code(expected_code, &actual, &mut report);
            compare_text("stderr", &expected_err, &actual.stderr, &mut report);
        }
        Suite::Lang | Suite::LangNoVm => {
            let out_path = case.with_extension("out");
            let exit1_path = case.with_extension("exit1");
            let had_err = err_path.exists();
            if bless == Bless::All {
                write_expected(&out_path, &actual.stdout, &mut report);
                let failed = actual.code == Some(1);
                if failed && !exit1_path.exists() {
                    write_expected(&exit1_path, "", &mut report);
                } else if !failed && exit1_path.exists() {
                    let _ = std::fs::remove_file(&exit1_path);
                }
                if had_err || failed {
                    write_expected(&err_path, &actual.stderr, &mut report);
                }
            } else if bless == Bless::Stderr && had_err {
                write_expected(&err_path, &actual.stderr, &mut report);
            }
            let expected_code = if exit1_path.exists() { 1 } else { 0 };
            compare_code(expected_code, &actual, &mut report);
            match read_opt(&out_path) {
                Some(expected) => compare_text("stdout", &expected, &actual.stdout, &mut report),
                None => {
                    let _ = writeln!(
                        report,
                        "missing {} (SVC_BLESS=all creates it)",
                        name(&out_path)
                    );
                }
            }
            if let Some(expected) = read_opt(&err_path) {
                compare_text("stderr", &expected, &actual.stderr, &mut report);
            }
        }
    }
    if report.is_empty() {
        None
    } else {
        // Without an stderr expectation, a failing run's stderr is the best clue.
        if suite != Suite::Check && !err_path.exists() && !actual.stderr.is_empty() {
            let _ = writeln!(report, "--- stderr ---\n{}", clip(&actual.stderr, 40));
        }
        Some(report)
    }
}

fn name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn write_expected(path: &Path, text: &str, report: &mut String) {
    if let Err(e) = std::fs::write(path, text) {
        let _ = writeln!(report, "cannot bless {}: {e}", path.display());
    }
}

fn compare_code(expected: i32, actual: &Actual, report: &mut String) {
    if actual.code != Some(expected) {
        let shown = actual
            .code
            .map_or_else(|| "killed".to_string(), |c| c.to_string());
        let _ = writeln!(report, "exit code: expected {expected}, got {shown}");
    }
}

fn compare_text(what: &str, expected: &str, actual: &str, report: &mut String) {
    if expected != actual {
        let _ = writeln!(report, "{what} differs (- expected, + actual):");
        report.push_str(&diff(expected, actual));
    }
}

/// Copy the fixture and the helper modules beside it into a fresh directory, run the
/// binary there with the fixture's bare file name, and collect its output.
fn execute(suite: Suite, case: &Path) -> std::io::Result<Actual> {
    let tmp = TempDir::new("fx");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work)?;
    let file_name = case
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    std::fs::copy(case, work.join(&file_name))?;
    if let Some(dir) = case.parent() {
        for entry in std::fs::read_dir(dir)?.flatten() {
            let path = entry.path();
            let helper = path.extension().is_some_and(|e| e == "svc")
                && path != case
                && !path.with_extension("out").exists()
                && !path.with_extension("exit1").exists();
            if helper && let Some(n) = path.file_name() {
                std::fs::copy(&path, work.join(n))?;
            }
        }
    }

    let out_file = tmp.path().join("stdout");
    let err_file = tmp.path().join("stderr");
    let mut child = svc()
        .current_dir(&work)
        .arg(suite.command())
        .args(suite.extra_args())
        .arg(&file_name)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file)?)
        .stderr(std::fs::File::create(&err_file)?)
        .spawn()?;

    let limit = std::env::var("SVC_FIXTURE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_secs);
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let lossy =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Ok(Actual {
        stdout: lossy(&out_file),
        stderr: lossy(&err_file),
        code: status.and_then(|s| s.code()),
        timed_out,
    })
}

fn clip(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text.to_string();
    }
    format!(
        "{}\n... ({} more lines)\n",
        lines[..max_lines].join("\n"),
        lines.len() - max_lines
    )
}

/// A unified-style line diff (LCS) with two lines of context, at most 80 lines shown.
/// Lines are shown with `{:?}`-style escapes only when they differ just in whitespace.
fn diff(expected: &str, actual: &str) -> String {
    const CONTEXT: usize = 2;
    const MAX_SHOWN: usize = 80;
    let a: Vec<&str> = expected.split_inclusive('\n').collect();
    let b: Vec<&str> = actual.split_inclusive('\n').collect();

    // Trim the common prefix and suffix so the quadratic table stays small.
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);

    // ops over the middle: ' ' keep, '-' expected only, '+' actual only.
    let mut ops: Vec<(char, &str)> = Vec::new();
    if mid_a.len().saturating_mul(mid_b.len()) <= 4_000_000 {
        let (n, m) = (mid_a.len(), mid_b.len());
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * (m + 1) + j] = if mid_a[i] == mid_b[j] {
                    lcs[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    lcs[(i + 1) * (m + 1) + j].max(lcs[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && mid_a[i] == mid_b[j] {
                ops.push((' ', mid_a[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1]) {
                ops.push(('-', mid_a[i]));
                i += 1;
            } else {
                ops.push(('+', mid_b[j]));
                j += 1;
            }
        }
    } else {
        ops.extend(mid_a.iter().map(|l| ('-', *l)));
        ops.extend(mid_b.iter().map(|l| ('+', *l)));
    }

    let mut full: Vec<(char, &str)> = a[prefix.saturating_sub(CONTEXT)..prefix]
        .iter()
        .map(|l| (' ', *l))
        .collect();
    full.extend(ops);
    full.extend(
        a[a.len() - suffix..]
            .iter()
            .take(CONTEXT)
            .map(|l| (' ', *l)),
    );

    let mut out = String::new();
    let first_line = prefix.saturating_sub(CONTEXT) + 1;
    let _ = writeln!(out, "@@ from expected line {first_line} @@");
    let mut shown = 0;
    let mut kept_run = 0;
    for (k, (op, line)) in full.iter().enumerate() {
        if *op == ' ' {
            // Collapse long unchanged stretches between hunks.
            let near_change = full[k.saturating_sub(CONTEXT)..(k + CONTEXT + 1).min(full.len())]
                .iter()
                .any(|(o, _)| *o != ' ');
            if !near_change {
                kept_run += 1;
                continue;
            }
        }
        if kept_run > 0 {
            let _ = writeln!(out, "  ... {kept_run} unchanged lines");
            kept_run = 0;
        }
        if shown == MAX_SHOWN {
            let _ = writeln!(out, "  ... (diff truncated)");
            break;
        }
        shown += 1;
        out.push_str(&render_line(*op, line));
    }
    if expected.is_empty() {
        out.push_str("  (expected is empty)\n");
    }
    if actual.is_empty() {
        out.push_str("  (actual is empty)\n");
    }
    out
}

fn render_line(op: char, line: &str) -> String {
    match line.strip_suffix('\n') {
        Some(body) if !body.ends_with([' ', '\t', '\r']) => format!("{op} {body}\n"),
        Some(body) => format!("{op} {body:?}\n"),
        None => format!("{op} {line:?} (no newline at end)\n"),
    }
}

#[test]
fn diff_shows_changed_lines_with_context() {
    let d = diff("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nX\ne\nf\n");
    assert!(d.contains("- d\n"), "{d}");
    assert!(d.contains("+ X\n"), "{d}");
    assert!(d.contains("  c\n") && d.contains("  e\n"), "{d}");
    assert!(!d.contains("  a\n"), "context is limited: {d}");
    let d = diff("x\n", "x");
    assert!(d.contains("no newline"), "{d}");
}
