//! Process metrics for `GET /metrics` (decisions.md "Metrics"): counters, gauges and one
//! histogram, rendered in the Prometheus text exposition format 0.0.4.
//!
//! One registry per process ([`global`]), like a Prometheus client's default registry:
//! the HTTP layer, WebSocket sessions, event consumers and the publisher record into it
//! without holding a handle. Gauges that the runtime already knows (queue depth,
//! replays, commits) are read from it when scraped, not copied.
//!
//! Bounded: each family keeps at most `[scale.server] metrics_max_series` label sets
//! (default 10,000); samples of further label sets are dropped and counted in
//! `svc_metrics_series_dropped_total`, so a flood of distinct topic or route names
//! cannot grow memory without bound. Route labels are route templates, never raw paths.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Content type of the exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Default of `[scale.server] metrics_max_series`.
pub const DEFAULT_MAX_SERIES: usize = 10_000;
/// `backend` of `svc_store_commits_total`: the embedded store, the document database.
pub const BACKEND_SQLITE: &str = "sqlite";
pub const BACKEND_DOCDB: &str = "docdb";
/// Upper bounds (seconds) of the request-duration histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Label values of one series.
type Labels = Vec<String>;

/// One metric family: its series by label values, bounded. A series is keyed by its
/// label values encoded into one string (each as `<byte length>:<value>`), so recording a
/// sample looks the series up without allocating (a per-thread buffer holds the key).
struct Family<T> {
    series: Mutex<BTreeMap<String, T>>,
}

impl<T: Default> Family<T> {
    fn new() -> Family<T> {
        Family {
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// Apply `f` to the series of `labels`, creating it if the family has room.
    fn with(&self, labels: &[&str], f: impl FnOnce(&mut T)) {
        thread_local! {
            static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        KEY.with_borrow_mut(|key| {
            encode_labels(labels, key);
            let registry = global();
            let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(v) = series.get_mut(key.as_str()) {
                f(v);
                return;
            }
            if series.len() >= registry.max_series.load(Ordering::Relaxed) {
                registry.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            f(series.entry(key.clone()).or_default());
        });
    }

    /// Every series with its label values, ordered by them.
    fn snapshot(&self) -> Vec<(Labels, T)>
    where
        T: Clone,
    {
        let mut out: Vec<(Labels, T)> = {
            let series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
            series
                .iter()
                .map(|(k, v)| (decode_labels(k), v.clone()))
                .collect()
        };
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// `labels` as one key: each value as its byte length, `:`, the value.
fn encode_labels(labels: &[&str], key: &mut String) {
    key.clear();
    for l in labels {
        push_decimal(key, l.len());
        key.push(':');
        key.push_str(l);
    }
}

/// `n` in decimal, without the formatting machinery (a key is made per sample).
fn push_decimal(out: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// The label values of a key made by [`encode_labels`].
fn decode_labels(mut key: &str) -> Labels {
    let mut out = Vec::new();
    while let Some((len, rest)) = key.split_once(':') {
        let len = len.parse::<usize>().unwrap_or(rest.len());
        let (Some(value), Some(tail)) = (rest.get(..len), rest.get(len..)) else {
            out.push(rest.to_string());
            break;
        };
        out.push(value.to_string());
        key = tail;
    }
    out
}

#[derive(Clone, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// The process's metrics.
pub struct Registry {
    start_time: SystemTime,
    max_series: AtomicUsize,
    dropped: AtomicU64,
    http_requests: Family<u64>,
    http_duration: Family<Histogram>,
    runs: Family<u64>,
    ws_sessions: Family<i64>,
    ws_messages: Family<u64>,
    events_published: Family<u64>,
    events_handled: Family<u64>,
}

/// The process-wide registry (created on first use; `svc start` touches it first thing
/// so `process_start_time_seconds` is the server's start).
pub fn global() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        start_time: SystemTime::now(),
        max_series: AtomicUsize::new(DEFAULT_MAX_SERIES),
        dropped: AtomicU64::new(0),
        http_requests: Family::new(),
        http_duration: Family::new(),
        runs: Family::new(),
        ws_sessions: Family::new(),
        ws_messages: Family::new(),
        events_published: Family::new(),
        events_handled: Family::new(),
    })
}

/// What a run ended with, as `svc_runs_total`'s `outcome` label.
pub fn run_outcome<T>(reply: &Result<T, actors::runtime::CallError>) -> &'static str {
    match reply {
        Ok(_) => "ok",
        Err(e) => error_outcome(e),
    }
}

/// The `outcome` label of a failed run.
pub fn error_outcome(e: &actors::runtime::CallError) -> &'static str {
    use actors::runtime::CallError as E;
    match e {
        E::Conflict(_) | E::ConflictAfterCommit(_) => "conflict",
        E::Cancelled => "cancelled",
        _ => "error",
    }
}

/// An HTTP method as a label: the standard ones by name, anything else `other`.
fn method_label(method: &str) -> &str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
    ];
    if KNOWN.contains(&method) {
        method
    } else {
        "other"
    }
}

impl Registry {
    /// `[scale.server] metrics_max_series`.
    pub fn set_max_series(&self, n: usize) {
        self.max_series.store(n.max(1), Ordering::Relaxed);
    }

    /// One answered HTTP request; `route` is its route template or `unmatched`.
    pub fn http_request(
        &self,
        method: &str,
        route: &str,
        status: actix_web::http::StatusCode,
        took: Duration,
    ) {
        let method = method_label(method);
        self.http_requests
            .with(&[method, route, status.as_str()], |n| *n += 1);
        let secs = took.as_secs_f64();
        self.http_duration.with(&[method, route], |h| {
            for (i, le) in BUCKETS.iter().enumerate() {
                if secs <= *le {
                    h.buckets[i] += 1;
                }
            }
            h.sum += secs;
            h.count += 1;
        });
    }

    /// One finished run: `kind` is `walker`, `function`, `event` or `ws`.
    pub fn run(&self, kind: &str, name: &str, outcome: &str) {
        self.runs.with(&[kind, name, outcome], |n| *n += 1);
    }

    /// A WebSocket session of `walker` opened (`+1`) or closed (`-1`).
    pub fn ws_session(&self, walker: &str, delta: i64) {
        self.ws_sessions.with(&[walker], |n| *n += delta);
    }

    /// One WebSocket message of `walker`, `direction` `in` or `out`.
    pub fn ws_message(&self, walker: &str, direction: &str) {
        self.ws_messages(walker, direction, 1);
    }

    /// `n` WebSocket messages of `walker` (a broadcast counts one per receiver).
    pub fn ws_messages(&self, walker: &str, direction: &str, n: u64) {
        if n > 0 {
            self.ws_messages.with(&[walker, direction], |c| *c += n);
        }
    }

    pub fn event_published(&self, topic: &str) {
        self.events_published.with(&[topic], |n| *n += 1);
    }

    /// One delivery handled: `outcome` `ok`, `retry` or `dead_letter`.
    pub fn event_handled(&self, topic: &str, group: &str, outcome: &str) {
        self.events_handled
            .with(&[topic, group, outcome], |n| *n += 1);
    }

    /// The exposition text; `runtime` adds the run pool's and the store's figures, the
    /// commits labelled with `store_backend` ([`BACKEND_SQLITE`] or [`BACKEND_DOCDB`]).
    pub fn render(
        &self,
        runtime: Option<&actors::runtime::Runtime>,
        store_backend: &str,
    ) -> String {
        let mut out = String::with_capacity(4096);
        counter_family(
            &mut out,
            "svc_http_requests_total",
            "HTTP requests answered, by method, route template and status.",
            &["method", "route", "status"],
            &self.http_requests.snapshot(),
        );
        header(
            &mut out,
            "svc_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            "histogram",
        );
        for (labels, h) in self.http_duration.snapshot() {
            let base = label_text(&["method", "route"], &labels);
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "svc_http_request_duration_seconds_bucket{{{base},le=\"{le}\"}} {}",
                    h.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_sum{{{base}}} {}",
                float(h.sum)
            );
            let _ = writeln!(
                out,
                "svc_http_request_duration_seconds_count{{{base}}} {}",
                h.count
            );
        }
        counter_family(
            &mut out,
            "svc_runs_total",
            "Walker, function, event and WebSocket runs, by kind, name and outcome.",
            &["kind", "name", "outcome"],
            &self.runs.snapshot(),
        );
        let (replays, queue, commits) = match runtime {
            Some(rt) => {
                let c = rt.commits();
                (
                    rt.replays(),
                    rt.queue_depth(),
                    [
                        ("ok", c.ok.load(Ordering::Relaxed)),
                        ("conflict", c.conflict.load(Ordering::Relaxed)),
                        ("error", c.failed.load(Ordering::Relaxed)),
                    ],
                )
            }
            None => (0, 0, [("ok", 0), ("conflict", 0), ("error", 0)]),
        };
        single(
            &mut out,
            "svc_run_replays_total",
            "Calls replayed after losing an optimistic-concurrency race.",
            "counter",
            &replays.to_string(),
        );
        single(
            &mut out,
            "svc_run_queue_depth",
            "Calls waiting for a run worker.",
            "gauge",
            &queue.to_string(),
        );
        let (inline, handoffs) = runtime.map_or((0, 0), actors::runtime::Runtime::inline_runs);
        single(
            &mut out,
            "svc_runs_inline_total",
            "Runs started on the HTTP thread that received the call (quick endpoints).",
            "counter",
            &inline.to_string(),
        );
        single(
            &mut out,
            "svc_runs_inline_handoffs_total",
            "Inline runs that lost an optimistic-concurrency race and were replayed by the run pool.",
            "counter",
            &handoffs.to_string(),
        );
        // The embedded tier's process-wide L1 anchor cache and group commit (absent on
        // the document tier).
        if let Some(l1) = runtime.and_then(|rt| rt.l1_stats()) {
            for (name, help, kind, value) in [
                (
                    "svc_l1_cache_hits_total",
                    "Anchor and edge-list reads answered by the L1 cache.",
                    "counter",
                    l1.hits,
                ),
                (
                    "svc_l1_cache_misses_total",
                    "Anchor and edge-list reads the L1 cache sent to the store.",
                    "counter",
                    l1.misses,
                ),
                (
                    "svc_l1_cache_evictions_total",
                    "L1 cache entries dropped to stay within l1_cache_bytes.",
                    "counter",
                    l1.evictions,
                ),
                (
                    "svc_l1_cache_clears_total",
                    "Times the whole L1 cache was dropped (another process wrote, restart, reload).",
                    "counter",
                    l1.clears,
                ),
                (
                    "svc_l1_cache_entries",
                    "Anchors held by the L1 cache.",
                    "gauge",
                    l1.entries,
                ),
                (
                    "svc_l1_cache_bytes",
                    "Approximate bytes held by the L1 cache (bounded by l1_cache_bytes).",
                    "gauge",
                    l1.bytes,
                ),
                (
                    "svc_group_commits_total",
                    "SQLite transactions written by group commit.",
                    "counter",
                    l1.groups,
                ),
                (
                    "svc_group_commit_calls_total",
                    "Call commits carried by those transactions.",
                    "counter",
                    l1.grouped_calls,
                ),
                (
                    "svc_group_commit_handed_off_total",
                    "Call commits handed to the group with their reply (pipelined: the run worker does not wait for the COMMIT, the reply does).",
                    "counter",
                    l1.handed_off,
                ),
                (
                    "svc_checkpoints_total",
                    "Write-ahead log checkpoints run beside the commits by the checkpointer.",
                    "counter",
                    l1.checkpoints,
                ),
                (
                    "svc_wal_restarts_total",
                    "Times the write-ahead log passed wal_max_bytes and was started over.",
                    "counter",
                    l1.wal_restarts,
                ),
                (
                    "svc_wal_restarts_busy_total",
                    "Log restarts that readers kept from finishing (retried on the next commit).",
                    "counter",
                    l1.wal_restarts_busy,
                ),
                (
                    "svc_checkpoint_errors_total",
                    "Checkpoints that failed (the checkpointer reopens its connection).",
                    "counter",
                    l1.checkpoint_errors,
                ),
            ] {
                single(&mut out, name, help, kind, &value.to_string());
            }
        }
        // The document tier's L2 cache in the cache store (absent without one).
        if let Some(l2) = runtime.and_then(|rt| rt.l2_stats()) {
            for (name, help, value) in [
                (
                    "svc_l2_cache_hits_total",
                    "Anchor reads answered by the L2 cache in the cache store.",
                    l2.hits,
                ),
                (
                    "svc_l2_cache_misses_total",
                    "Anchor reads the L2 cache sent on to the document database.",
                    l2.misses,
                ),
                (
                    "svc_l2_cache_errors_total",
                    "Failed cache-store operations of the L2 cache (each turns it off until a reconnect).",
                    l2.errors,
                ),
            ] {
                single(&mut out, name, help, "counter", &value.to_string());
            }
        }
        header(
            &mut out,
            "svc_ws_sessions",
            "Open WebSocket sessions, by walker.",
            "gauge",
        );
        for (labels, n) in self.ws_sessions.snapshot() {
            let _ = writeln!(
                out,
                "svc_ws_sessions{{{}}} {n}",
                label_text(&["walker"], &labels)
            );
        }
        counter_family(
            &mut out,
            "svc_ws_messages_total",
            "WebSocket messages, by walker and direction (in, out).",
            &["walker", "direction"],
            &self.ws_messages.snapshot(),
        );
        counter_family(
            &mut out,
            "svc_events_published_total",
            "Events published, by topic.",
            &["topic"],
            &self.events_published.snapshot(),
        );
        counter_family(
            &mut out,
            "svc_events_handled_total",
            "Event deliveries handled, by topic, group and outcome.",
            &["topic", "group", "outcome"],
            &self.events_handled.snapshot(),
        );
        header(
            &mut out,
            "svc_store_commits_total",
            "Commits of served calls, by store backend and outcome.",
            "counter",
        );
        for (outcome, n) in commits {
            let _ = writeln!(
                out,
                "svc_store_commits_total{{backend=\"{store_backend}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        single(
            &mut out,
            "svc_metrics_series_dropped_total",
            "Samples dropped because their family reached metrics_max_series label sets.",
            "counter",
            &self.dropped.load(Ordering::Relaxed).to_string(),
        );
        if let Some(rss) = resident_memory_bytes() {
            single(
                &mut out,
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                "gauge",
                &rss.to_string(),
            );
        }
        let start = self
            .start_time
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        single(
            &mut out,
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds.",
            "gauge",
            &float(start),
        );
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, help: &str, kind: &str, value: &str) {
    header(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

fn counter_family(
    out: &mut String,
    name: &str,
    help: &str,
    label_names: &[&str],
    series: &[(Labels, u64)],
) {
    header(out, name, help, "counter");
    for (labels, n) in series {
        let _ = writeln!(out, "{name}{{{}}} {n}", label_text(label_names, labels));
    }
}

/// `a="x",b="y"` with the format's escapes (`\\`, `\"`, `\n`).
fn label_text(names: &[&str], values: &[String]) -> String {
    let mut text = String::new();
    for (i, (name, value)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(name);
        text.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                '"' => text.push_str("\\\""),
                '\n' => text.push_str("\\n"),
                c => text.push(c),
            }
        }
        text.push('"');
    }
    text
}

/// A float as the format writes it (Go-style: `Inf`/`NaN` spelled out).
fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// `VmRSS` of `/proc/self/status` (Linux); `None` elsewhere.
fn resident_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Whether `given` equals `expected`, in time independent of where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_round_trip_any_text() {
        let long = "x".repeat(1234);
        let labels = [
            "",
            "12:3",
            "/items/{id}",
            "ünï:cödé",
            "a:b:c",
            long.as_str(),
        ];
        let mut key = String::new();
        encode_labels(&labels, &mut key);
        assert_eq!(decode_labels(&key), labels);
        encode_labels(&[], &mut key);
        assert!(decode_labels(&key).is_empty());
    }

    #[test]
    fn labels_are_escaped() {
        let text = label_text(&["a", "b"], &["x\"y".into(), "p\\q\nr".into()]);
        assert_eq!(text, r#"a="x\"y",b="p\\q\nr""#);
    }

    #[test]
    fn odd_methods_share_one_label() {
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("BREW"), "other");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("ab", "abc"));
    }
}
