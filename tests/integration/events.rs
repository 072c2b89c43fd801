//! Event streaming against real `svc start` processes: `@subscribe` handlers, retries and
//! the dead-letter topic, pull `broker.consume`/`broker.ack`, on the in-memory broker and
//! on Redis streams shared by two replicas (a real `redis-server` on a free loopback
//! port, killed by PID). Handling is observed through the app itself: handlers write
//! `Mark` nodes, function endpoints list them.

use crate::TempDir;
use crate::support::Redis;
use crate::support::{ServerGuard, free_port, json_call, wait_until};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

const APP: &str = r#"
node Mark {
    has kind: str;
    has event_id: str;
    has n: int = 0;
}

def:pub emit(topic: str, count: int, first: int = 0) -> int {
    for i in range(count) {
        publish(topic, Event(data={"i": first + i}, trace_id="t"));
    }
    return count;
}

def:pub ids(kind: str) -> list {
    return [m.event_id for m in [root -->[?:Mark]] if m.kind == kind];
}

def:pub numbers(kind: str) -> list {
    return [m.n for m in [root -->[?:Mark]] if m.kind == kind];
}

def:pub pull(topic: str, n: int, wait: float, ack: bool) -> list {
    out = [];
    for e in broker.consume(topic, n, wait) {
        out.append({"id": e.id, "data": e.data, "type": e.event_type, "source": e.source});
        if ack {
            broker.ack(e);
        }
    }
    return out;
}

@subscribe("orders", group="workers")
def on_order(e: Event) {
    root ++> Mark(kind="handled", event_id=e.id, n=e.data["i"]);
}

@subscribe("slow", group="workers")
def on_slow(e: Event) {
    seen = [m for m in [root -->[?:Mark]] if m.kind == "started" and m.event_id == e.id];
    if not seen {
        root ++> Mark(kind="started", event_id=e.id);
        commit();
        # Hold the delivery: a pull from a topic nobody publishes to waits its timeout.
        broker.consume("nothing-is-published-here", 1, 25);
    }
    root ++> Mark(kind="handled", event_id=e.id);
}

@subscribe("fails", group="workers")
def on_fail(e: Event) {
    root ++> Mark(kind="attempt", event_id=e.id);
    commit();
    raise ValueError("always fails");
}

@subscribe("mixed", group="workers")
def on_mixed(e: Event) {
    if e.data["i"] == 3 {
        root ++> Mark(kind="mixed-attempt", event_id=e.id, n=e.data["i"]);
        commit();
        raise ValueError("event 3 always fails");
    }
    root ++> Mark(kind="mixed-ok", event_id=e.id, n=e.data["i"]);
}

@subscribe("fails.dlq", group="workers")
def on_dead(e: Event) {
    root ++> Mark(kind="dead", event_id=e.id);
}
"#;

const CONFIG: &str = r#"
[scale.auth]
bcrypt_cost = 4

[scale.events]
enabled = true
visibility_timeout_seconds = 2.0
poll_interval_seconds = 0.2

[scale.events.retry]
max_attempts = 3
backoff_seconds = [0.05, 0.1]
"#;

const SECRET: &str = "events-tests-secret-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(60);

fn app() -> TempDir {
    let dir = TempDir::new("events");
    dir.write("main.svc", APP);
    dir.write("svc.toml", CONFIG);
    dir
}

/// A `svc start` of the app, with `CACHE_URL` when given; waits for the events log line.
fn replica(dir: &TempDir, cache_url: Option<&str>) -> ServerGuard {
    let mut env = vec![("JWT_SECRET", SECRET)];
    if let Some(url) = cache_url {
        env.push(("CACHE_URL", url));
    }
    let server = ServerGuard::replica(dir.path(), &env);
    let kind = if cache_url.is_some() {
        "cache"
    } else {
        "local"
    };
    let line = format!("events: broker {kind}, 5 subscription(s)");
    assert!(
        wait_until(WAIT, || server.stderr().contains(&line)),
        "no `{line}`\n{}",
        server.output()
    );
    server
}

/// Call a public function endpoint; its `data.result`.
fn call(server: &ServerGuard, name: &str, args: Value) -> Value {
    let r = json_call(
        server.port,
        "POST",
        &format!("/function/{name}"),
        None,
        &args,
    );
    assert_eq!(r.status, 200, "{name}: {}\n{}", r.body, server.output());
    r.json()["data"]["result"].clone()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn ids(server: &ServerGuard, kind: &str) -> Vec<String> {
    strings(&call(server, "ids", json!({ "kind": kind })))
}

/// Wait until `kind` marks reach `n`; then they must be `n` distinct events.
fn wait_for_marks(server: &ServerGuard, kind: &str, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let reached = wait_until(WAIT, || {
        seen = ids(server, kind);
        seen.len() >= n
    });
    assert!(
        reached,
        "{} of {n} `{kind}` marks\n{}",
        seen.len(),
        server.output()
    );
    seen
}

fn assert_distinct(ids: &[String]) {
    let set: HashSet<&String> = ids.iter().collect();
    assert_eq!(set.len(), ids.len(), "an event was handled twice: {ids:?}");
}

#[test]
fn in_memory_broker_runs_subscribers() {
    let dir = app();
    let server = replica(&dir, None);
    assert_eq!(
        call(&server, "emit", json!({"topic": "orders", "count": 20})),
        20
    );
    let handled = wait_for_marks(&server, "handled", 20);
    assert_eq!(handled.len(), 20);
    assert_distinct(&handled);
    let mut numbers: Vec<i64> = call(&server, "numbers", json!({"kind": "handled"}))
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..20).collect::<Vec<i64>>());
}

#[test]
fn in_memory_failing_handler_is_retried_then_dead_lettered() {
    let dir = app();
    let server = replica(&dir, None);
    call(&server, "emit", json!({"topic": "fails", "count": 1}));
    let dead = wait_for_marks(&server, "dead", 1);
    let attempts = ids(&server, "attempt");
    assert_eq!(attempts.len(), 3, "max_attempts = 3: {attempts:?}");
    assert!(
        attempts.iter().all(|a| *a == dead[0]),
        "the same event: {attempts:?} {dead:?}"
    );
}

#[test]
fn pull_consume_acks_and_redelivers_unacknowledged_events() {
    let dir = app();
    let server = replica(&dir, None);
    let pull = |n: i64, wait: f64, ack: bool| {
        call(
            &server,
            "pull",
            json!({"topic": "jobs", "n": n, "wait": wait, "ack": ack}),
        )
    };
    // The first consume creates the group at `latest`.
    assert_eq!(pull(10, 0.0, true), json!([]));
    call(&server, "emit", json!({"topic": "jobs", "count": 3}));
    let got = pull(2, 1.0, true);
    assert_eq!(got.as_array().map(Vec::len), Some(2), "{got}");
    assert_eq!(got[0]["type"], "jobs", "event_type defaults to the topic");
    assert_eq!(got[0]["source"], "svc-scale");
    assert_eq!(got[0]["data"], json!({"i": 0}));
    // Not acknowledged: invisible until the visibility timeout (2 s), then back.
    let third = pull(10, 1.0, false);
    assert_eq!(third.as_array().map(Vec::len), Some(1), "{third}");
    assert_eq!(pull(10, 0.0, false), json!([]));
    let mut again = json!([]);
    assert!(
        wait_until(WAIT, || {
            again = pull(10, 0.5, true);
            again != json!([])
        }),
        "never redelivered"
    );
    assert_eq!(again[0]["id"], third[0]["id"]);
    assert_eq!(pull(10, 0.0, true), json!([]));
}

#[test]
fn disabled_events_are_no_ops() {
    let dir = TempDir::new("events-off");
    dir.write("main.svc", APP);
    dir.write("svc.toml", "[scale.auth]\nbcrypt_cost = 4\n");
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    assert_eq!(
        call(&server, "emit", json!({"topic": "orders", "count": 2})),
        2
    );
    assert_eq!(
        call(
            &server,
            "pull",
            json!({"topic": "orders", "n": 5, "wait": 0.0, "ack": true})
        ),
        json!([])
    );
    assert!(
        server
            .stderr()
            .contains("5 @subscribe handler(s) not wired"),
        "{}",
        server.output()
    );
}

/// Events published together reach the consumer together and go to the run pool in
/// batches (`delivery_batch`): one event of the batch whose handler raises is retried
/// alone and dead-lettered, every other event of the batch is handled exactly once.
fn a_failure_inside_a_batch_retries_only_that_event(cache_url: Option<&str>) {
    let dir = app();
    let a = replica(&dir, cache_url);
    let b = cache_url.map(|u| replica(&dir, Some(u)));
    call(&a, "emit", json!({"topic": "mixed", "count": 40}));
    let ok = wait_for_marks(&a, "mixed-ok", 39);
    assert_distinct(&ok);
    let dead_lettered =
        |s: &ServerGuard| s.stderr().contains("event moved to the dead-letter topic");
    assert!(
        wait_until(WAIT, || dead_lettered(&a)
            || b.as_ref().is_some_and(dead_lettered)),
        "{}",
        a.output()
    );
    let attempts = ids(&a, "mixed-attempt");
    assert_eq!(
        attempts.len(),
        3,
        "event 3 alone, max_attempts = 3: {attempts:?}"
    );
    assert!(attempts.iter().all(|x| *x == attempts[0]), "{attempts:?}");
    // Nothing else arrives late: each other event was handled once.
    std::thread::sleep(Duration::from_millis(500));
    let ok = ids(&a, "mixed-ok");
    assert_eq!(ok.len(), 39, "{ok:?}");
    assert_distinct(&ok);
    let mut numbers: Vec<i64> = call(&a, "numbers", json!({"kind": "mixed-ok"}))
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..40).filter(|i| *i != 3).collect::<Vec<i64>>());
}

#[test]
fn in_memory_batch_failure_retries_only_that_event() {
    a_failure_inside_a_batch_retries_only_that_event(None);
}

#[test]
fn redis_batch_failure_retries_only_that_event() {
    let Some(redis) = Redis::start() else {
        return;
    };
    a_failure_inside_a_batch_retries_only_that_event(Some(&redis.url()));
}

// --- Redis streams, two replicas -------------------------------------------------------

#[test]
fn two_replicas_handle_each_event_exactly_once() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app();
    let a = replica(&dir, Some(&redis.url()));
    let b = replica(&dir, Some(&redis.url()));
    call(&a, "emit", json!({"topic": "orders", "count": 30}));
    let handled = wait_for_marks(&b, "handled", 30);
    assert_eq!(handled.len(), 30);
    assert_distinct(&handled);
}

#[test]
fn a_thousand_events_none_lost() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app();
    let a = replica(&dir, Some(&redis.url()));
    let b = replica(&dir, Some(&redis.url()));
    call(&a, "emit", json!({"topic": "orders", "count": 500}));
    call(
        &b,
        "emit",
        json!({"topic": "orders", "count": 500, "first": 500}),
    );
    let handled = wait_for_marks(&a, "handled", 1000);
    assert_eq!(handled.len(), 1000);
    assert_distinct(&handled);
    let mut numbers: Vec<i64> = call(&a, "numbers", json!({"kind": "handled"}))
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..1000).collect::<Vec<i64>>());
}

#[test]
fn an_event_of_a_killed_replica_is_redelivered_to_the_other() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app();
    let a = replica(&dir, Some(&redis.url()));
    call(&a, "emit", json!({"topic": "slow", "count": 1}));
    // A's handler has started (and holds the event) before B exists.
    let started = wait_for_marks(&a, "started", 1);
    let b = replica(&dir, Some(&redis.url()));
    drop(a); // SIGKILL while the handler runs
    let handled = wait_for_marks(&b, "handled", 1);
    assert_eq!(
        handled, started,
        "the same event, handled once, by the other replica"
    );
    assert_eq!(
        ids(&b, "started"),
        started,
        "the second delivery saw the first's mark"
    );
}

#[test]
fn a_failing_handler_dead_letters_after_the_configured_attempts() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app();
    let a = replica(&dir, Some(&redis.url()));
    let b = replica(&dir, Some(&redis.url()));
    call(&a, "emit", json!({"topic": "fails", "count": 1}));
    let dead = wait_for_marks(&b, "dead", 1);
    let attempts = ids(&b, "attempt");
    assert_eq!(attempts.len(), 3, "max_attempts = 3: {attempts:?}");
    assert!(
        attempts.iter().all(|x| *x == dead[0]),
        "{attempts:?} {dead:?}"
    );
}

/// `--dev`: a reload that adds a `@subscribe` handler wires it (and one that removes a
/// handler stops its consumer); events published after the reload reach the new handler.
#[test]
fn a_dev_reload_rewires_subscriptions() {
    let dir = app();
    let without = APP.replace(
        "@subscribe(\"orders\", group=\"workers\")\ndef on_order",
        "def on_order",
    );
    dir.write("main.svc", &without);
    let port = free_port().to_string();
    let server = ServerGuard::launch(
        dir.path(),
        &[
            "main.svc",
            "--dev",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--workers",
            "2",
        ],
        &[("JWT_SECRET", SECRET)],
    );
    assert!(
        wait_until(WAIT, || server.stderr().contains("4 subscription(s)")),
        "{}",
        server.output()
    );
    // Different size, so the watcher sees the change even within one mtime tick.
    dir.write("main.svc", &format!("{APP}\n# reloaded\n"));
    assert!(
        wait_until(WAIT, || server
            .stderr()
            .contains("reload rewired the @subscribe handlers")),
        "{}",
        server.output()
    );
    call(&server, "emit", json!({"topic": "orders", "count": 3}));
    let handled = wait_for_marks(&server, "handled", 3);
    assert_distinct(&handled);
}

/// An event whose consumer died mid-event has used an attempt: with `max_attempts = 1`
/// the replica that claims it dead-letters it instead of running it again (an event that
/// kills its consumer cannot take down replica after replica).
#[test]
fn a_delivery_that_was_never_acknowledged_counts_as_an_attempt() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app();
    dir.write(
        "svc.toml",
        &CONFIG.replace("max_attempts = 3", "max_attempts = 1"),
    );
    let a = replica(&dir, Some(&redis.url()));
    call(&a, "emit", json!({"topic": "slow", "count": 1}));
    wait_for_marks(&a, "started", 1);
    let b = replica(&dir, Some(&redis.url()));
    drop(a); // SIGKILL while the handler runs
    assert!(
        wait_until(WAIT, || b.stderr().contains(
            "dead-lettering an event whose earlier deliveries were never acknowledged"
        )),
        "{}",
        b.output()
    );
    assert!(ids(&b, "handled").is_empty(), "not run again");
}
