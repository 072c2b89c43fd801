//! Inline runs (`actors/src/runtime/inline.rs`): a quick endpoint's calls run on the
//! HTTP thread that received them. Observed through `/metrics`
//! (`svc_runs_inline_total`, `svc_runs_inline_handoffs_total`) and the answers: the
//! same results, deep recursion on an HTTP thread, slow endpoints kept on the pool,
//! exact concurrent increments when inline attempts lose races, the switch, and a
//! user's own small `RUST_MIN_STACK`.

use crate::TempDir;
use crate::support::{ServerGuard, get, post_json};
use serde_json::json;

const APP: &str = r#"import time;

node Counter {
    has n: int = 0;
}

def:pub add(a: int, b: int) -> int {
    return a + b;
}

def:pub deep(n: int) -> int {
    if n <= 0 {
        return 0;
    }
    return 1 + deep(n - 1);
}

def:pub slow() -> int {
    time.sleep(0.02);
    return 1;
}

walker:pub bump {
    can go with Root entry {
        found = [-->[?:Counter]];
        if found {
            found[0].n += 1;
        } else {
            here ++> Counter(n=1);
        }
    }
}

walker:pub total {
    can go with Root entry {
        found = [-->[?:Counter]];
        report found[0].n if found else 0;
    }
}
"#;

fn app(tag: &str, toml: Option<&str>) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("main.svc", APP);
    if let Some(toml) = toml {
        dir.write("svc.toml", toml);
    }
    dir
}

/// A counter's value on `/metrics`.
fn metric(port: u16, name: &str) -> u64 {
    let body = get(port, "/metrics").body;
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{body}"))
}

fn call(port: u16, path: &str, body: &str) -> serde_json::Value {
    let resp = post_json(port, path, body);
    assert_eq!(resp.status, 200, "{path}: {}", resp.body);
    resp.json()["data"].clone()
}

#[test]
fn quick_calls_run_inline_deep_ones_too_and_slow_ones_stay_on_the_pool() {
    let dir = app("inline", None);
    let s = ServerGuard::start(dir.path(), &["main.svc"]);
    let port = s.port;
    assert_eq!(metric(port, "svc_runs_inline_total"), 0);
    for i in 0..60 {
        assert_eq!(
            call(port, "/function/add", &format!(r#"{{"a": {i}, "b": 1}}"#))["result"],
            json!(i + 1)
        );
    }
    let after_add = metric(port, "svc_runs_inline_total");
    assert!(
        after_add >= 20,
        "a quick function runs inline after its warm-up runs: {after_add}"
    );

    // Deep recursion on an HTTP thread: warm `deep` up with shallow calls, then recurse
    // 990 frames (under the 1,000 limit), then past the limit.
    for _ in 0..40 {
        assert_eq!(
            call(port, "/function/deep", r#"{"n": 1}"#)["result"],
            json!(1)
        );
    }
    let before_deep = metric(port, "svc_runs_inline_total");
    assert_eq!(
        call(port, "/function/deep", r#"{"n": 990}"#)["result"],
        json!(990)
    );
    assert!(metric(port, "svc_runs_inline_total") > before_deep);
    let resp = post_json(port, "/function/deep", r#"{"n": 5000}"#);
    assert!(
        resp.body.contains("RecursionError"),
        "{}: {}",
        resp.status,
        resp.body
    );
    assert_eq!(
        call(port, "/function/add", r#"{"a": 2, "b": 2}"#)["result"],
        json!(4)
    );

    // 20 ms per call is past the 1 ms bound: never inline.
    let before_slow = metric(port, "svc_runs_inline_total");
    for _ in 0..24 {
        assert_eq!(call(port, "/function/slow", "{}")["result"], json!(1));
    }
    assert_eq!(metric(port, "svc_runs_inline_total"), before_slow);
    assert_eq!(s.terminate().code(), Some(0));
}

/// Every call inline (the bound lifted, writers allowed): concurrent increments of one
/// node from many clients lose races; the losers are replayed by the pool and the count
/// ends exact.
#[test]
fn inline_attempts_that_lose_races_are_replayed_and_nothing_is_lost() {
    const CLIENTS: usize = 8;
    const EACH: usize = 40;
    let dir = app(
        "inline-race",
        Some(
            "[scale.limits]\ninline_run_max_us = 1000000\ninline_writers = true\n\
             max_replays = 100\n",
        ),
    );
    let s = ServerGuard::start(dir.path(), &["main.svc"]);
    let port = s.port;
    // Warm-up: the walker needs runs on record before it may run inline.
    for _ in 0..20 {
        call(port, "/walker/bump", "{}");
    }
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|_| post_json(port, "/walker/bump", "{}"))
                    .filter(|r| r.status != 200)
                    .map(|r| r.body)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for c in clients {
        let failures = c.join().expect("client thread");
        assert!(failures.is_empty(), "{failures:?}");
    }
    assert_eq!(
        call(port, "/walker/total", "{}")["reports"],
        json!([20 + CLIENTS * EACH])
    );
    assert!(metric(port, "svc_runs_inline_total") >= (CLIENTS * EACH) as u64 / 2);
    assert_eq!(s.terminate().code(), Some(0));
}

/// By default an endpoint that commits runs on the pool (where concurrent commits share
/// a group commit), however quick, while a quick reader of the same data runs inline;
/// the writer's count stays exact.
#[test]
fn writers_stay_on_the_pool_by_default_and_readers_run_inline() {
    // A generous bound: a debug build under a loaded test run can take more than the
    // default 1 ms per read, and this test is about writers, not the bound.
    let dir = app(
        "inline-writers",
        Some("[scale.limits]\ninline_run_max_us = 100000\n"),
    );
    let s = ServerGuard::start(dir.path(), &["main.svc"]);
    let port = s.port;
    for _ in 0..40 {
        call(port, "/walker/bump", "{}");
    }
    assert_eq!(metric(port, "svc_runs_inline_total"), 0);
    for _ in 0..40 {
        assert_eq!(call(port, "/walker/total", "{}")["reports"], json!([40]));
    }
    let readers = metric(port, "svc_runs_inline_total");
    assert!(readers >= 20, "a quick reader runs inline: {readers}");
    for _ in 0..10 {
        call(port, "/walker/bump", "{}");
    }
    assert_eq!(metric(port, "svc_runs_inline_total"), readers);
    assert_eq!(call(port, "/walker/total", "{}")["reports"], json!([50]));
    assert_eq!(s.terminate().code(), Some(0));
}

/// `inline_run_max_us = 0` and a small `RUST_MIN_STACK` of the user's both keep every
/// call on the pool; deep recursion still works there.
#[test]
fn the_switch_and_a_small_thread_stack_keep_calls_on_the_pool() {
    let off = app(
        "inline-off",
        Some("[scale.limits]\ninline_run_max_us = 0\n"),
    );
    let small = app("inline-small", None);
    let servers = [
        ServerGuard::replica(off.path(), &[]),
        ServerGuard::replica(small.path(), &[("RUST_MIN_STACK", "2097152")]),
    ];
    for s in &servers {
        for _ in 0..40 {
            call(s.port, "/function/add", r#"{"a": 1, "b": 1}"#);
        }
        assert_eq!(
            call(s.port, "/function/deep", r#"{"n": 990}"#)["result"],
            json!(990)
        );
        assert_eq!(metric(s.port, "svc_runs_inline_total"), 0);
    }
    for s in servers {
        assert_eq!(s.terminate().code(), Some(0));
    }
}
