//! The embedded tier under `svc start` with its process-wide L1 anchor cache and group
//! commit (ARCHITECTURE.md "Embedded tier: L1 cache and group commit"), through HTTP:
//! concurrent increments on one node end exact, check-then-create leaves one child, a
//! write is read fresh by the next call (also a write by another process), a server
//! killed with SIGKILL under load keeps every acknowledged write, the cache stays
//! within `l1_cache_bytes`, and the write-ahead log within `wal_max_bytes` while the
//! checkpointer copies it back beside the commits.

use crate::support::{ServerGuard, get, post_json};
use crate::{TempDir, stderr, svc_in};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const APP: &str = r#"
node Counter {
    has n: int = 0;
}

node Note {
    has text: str;
}

node Item {
    has n: int;
    has pad: str = "";
}

"""Increment the one Counter under root, creating it when there is none."""
walker:pub bump {
    can go with Root entry {
        found = [-->[?:Counter]];
        if len(found) == 0 {
            c = Counter();
            here ++> c;
        } else {
            c = found[0];
        }
        c.n += 1;
        report c.n;
    }
}

walker:pub counters {
    can go with Root entry {
        found = [-->[?:Counter]];
        report {"count": len(found), "n": sum([c.n for c in found])};
    }
}

"""Set the text of the one Note under root."""
walker:pub set_note {
    has text: str;

    can go with Root entry {
        found = [-->[?:Note]];
        if len(found) == 0 {
            here ++> Note(text=self.text);
        } else {
            found[0].text = self.text;
        }
        report self.text;
    }
}

walker:pub get_note {
    can go with Root entry {
        found = [-->[?:Note]];
        report found[0].text if found else None;
    }
}

walker:pub add_item {
    has n: int;
    has pad: str = "";

    can go with Root entry {
        here ++> Item(n=self.n, pad=self.pad);
        report self.n;
    }
}

walker:pub new_note {
    can go with Root entry {
        n = Note(text="x");
        here ++> n;
        report n;
    }
}

walker:pub count_items {
    can go with Root entry {
        items = [-->[?:Item]];
        report {"count": len(items), "sum": sum([i.n for i in items]), "ns": [i.n for i in items]};
    }
}
"#;

fn reports(resp: &crate::support::Response) -> Value {
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["data"]["reports"].clone()
}

/// A metric's value from `/metrics` (a line `name value`).
fn metric(port: u16, name: &str) -> f64 {
    let body = get(port, "/metrics").body;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{body}"))
}

#[test]
fn concurrent_increments_and_check_then_create_stay_exact() {
    const THREADS: usize = 8;
    const EACH: usize = 25;
    let dir = TempDir::new("tier-inc");
    dir.write("main.svc", APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|_| post_json(port, "/walker/bump", "{}"))
                    .filter(|r| r.status != 200)
                    .map(|r| (r.status, r.body))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for w in workers {
        let failures = w.join().expect("thread");
        assert!(failures.is_empty(), "{failures:?}");
    }
    // Every increment landed on one Counter (the racing first calls created one).
    assert_eq!(
        reports(&post_json(port, "/walker/counters", "{}")),
        json!([{"count": 1, "n": THREADS * EACH}]),
        "{}",
        s.output()
    );
    // The reads were served by the cache, the commits by group commit.
    assert!(metric(port, "svc_l1_cache_hits_total") > 0.0);
    assert!(metric(port, "svc_group_commit_calls_total") >= (THREADS * EACH) as f64);
}

/// Anchor ids start with their creation time: nodes created one after another sort in
/// creation order (so the store's B-trees grow at their right edge, ARCHITECTURE.md
/// "Embedded tier"), and are still 32 hex digits.
#[test]
fn nodes_created_one_after_another_have_increasing_ids() {
    let dir = TempDir::new("tier-ids");
    dir.write("main.svc", APP);
    let s = ServerGuard::start(dir.path(), &["main.svc"]);
    let mut ids = Vec::new();
    for _ in 0..5 {
        let r = reports(&post_json(s.port, "/walker/new_note", "{}"));
        let id = r[0]["_svc_id"].as_str().expect("an id").to_string();
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        ids.push(id);
        std::thread::sleep(Duration::from_millis(3));
    }
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(s.terminate().code(), Some(0));
}

#[test]
fn a_write_is_read_fresh_by_the_next_call_even_from_another_process() {
    let dir = TempDir::new("tier-fresh");
    dir.write("main.svc", APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    for i in 0..20 {
        let text = format!("v{i}");
        let body = json!({ "text": text }).to_string();
        assert_eq!(
            reports(&post_json(port, "/walker/set_note", &body)),
            json!([text])
        );
        assert_eq!(
            reports(&post_json(port, "/walker/get_note", "{}")),
            json!([text])
        );
    }
    // Another process writes the same store (`svc run` on the app directory): the
    // server's cache must not answer with its old copy.
    dir.write(
        "other.svc",
        "import from main { Note }\n\nwith entry {\n    for n in [root -->[?:Note]] {\n        n.text = \"from svc run\";\n    }\n}\n",
    );
    let out = svc_in(dir.path(), &["run", "other.svc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        reports(&post_json(port, "/walker/get_note", "{}")),
        json!(["from svc run"])
    );
    // And the server's next write is checked against that write, not lost under it.
    assert_eq!(
        reports(&post_json(port, "/walker/set_note", r#"{"text": "after"}"#)),
        json!(["after"])
    );
    assert_eq!(
        reports(&post_json(port, "/walker/get_note", "{}")),
        json!(["after"])
    );
    assert!(metric(port, "svc_l1_cache_clears_total") >= 1.0);
}

#[test]
fn the_cache_stays_within_its_bound() {
    // 2 KiB per shard (the cache has 64): a few Items each, far fewer than are read.
    const BOUND: usize = 128 * 1024;
    const ITEMS: usize = 400;
    let dir = TempDir::new("tier-bound");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.database]\nl1_cache_bytes = {BOUND}\n"),
    );
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    let pad = "x".repeat(500);
    for n in 0..ITEMS {
        let body = json!({ "n": n, "pad": pad }).to_string();
        assert_eq!(post_json(port, "/walker/add_item", &body).status, 200);
    }
    for _ in 0..3 {
        let r = reports(&post_json(port, "/walker/count_items", "{}"));
        assert_eq!(r[0]["count"], json!(ITEMS));
        assert_eq!(r[0]["sum"], json!(ITEMS * (ITEMS - 1) / 2));
        let bytes = metric(port, "svc_l1_cache_bytes");
        assert!(bytes > 0.0 && bytes <= BOUND as f64, "{bytes}");
    }
    assert!(metric(port, "svc_l1_cache_evictions_total") > 0.0);
}

#[test]
fn the_checkpointer_keeps_the_write_ahead_log_within_its_bound() {
    // 1 MiB: SQLite's own automatic checkpoint (1,000 pages) would let the log reach
    // about 4 MiB (16 MiB with the 16 KiB pages of earlier store files).
    const WAL_MAX: u64 = 1024 * 1024;
    const THREADS: usize = 8;
    const EACH: usize = 150;
    let dir = TempDir::new("tier-wal");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.database]\nwal_max_bytes = {WAL_MAX}\ncheckpoint_interval_ms = 5\n"),
    );
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    let wal = dir.path().join(".svc/data/anchor_store.db-wal");
    let pad = "y".repeat(2000);
    let largest = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Watch the log's file size while the writers run.
    let watcher = {
        let (wal, largest, done) = (wal.clone(), Arc::clone(&largest), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Ok(m) = std::fs::metadata(&wal) {
                    largest.fetch_max(m.len(), Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let pad = pad.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let body = json!({ "n": t * EACH + i, "pad": pad }).to_string();
                    let r = post_json(port, "/walker/add_item", &body);
                    assert_eq!(r.status, 200, "{}", r.body);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    done.store(true, Ordering::Relaxed);
    watcher.join().expect("watcher");
    let r = reports(&post_json(port, "/walker/count_items", "{}"));
    assert_eq!(r[0]["count"], json!(THREADS * EACH));
    assert!(metric(port, "svc_checkpoints_total") >= 1.0);
    assert!(metric(port, "svc_wal_restarts_total") >= 1.0);
    assert_eq!(metric(port, "svc_checkpoint_errors_total"), 0.0);
    // Twice the bound plus one group's pages.
    let largest = largest.load(Ordering::Relaxed);
    assert!(
        largest <= 3 * WAL_MAX,
        "the write-ahead log reached {largest} bytes (bound {WAL_MAX})\n{}",
        s.output()
    );
}

#[test]
fn sigkill_under_load_loses_nothing_acknowledged() {
    const THREADS: usize = 6;
    let dir = TempDir::new("tier-kill");
    dir.write("main.svc", APP);
    let s = ServerGuard::start(dir.path(), &[]);
    let port = s.port;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let mut n = t * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    let body = json!({ "n": n }).to_string();
                    // A request cut by the kill fails; only 200s are acknowledged.
                    let r = std::panic::catch_unwind(|| post_json(port, "/walker/add_item", &body));
                    match r {
                        Ok(r) if r.status == 200 => acked.push(n as i64),
                        Ok(_) => {}
                        Err(_) => break,
                    }
                    n += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = s.pid().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .expect("run kill");
    assert!(killed.success());
    stop.store(true, Ordering::Relaxed);
    let mut acked: Vec<i64> = Vec::new();
    for w in writers {
        acked.extend(w.join().expect("writer"));
    }
    drop(s);
    assert!(
        !acked.is_empty(),
        "no write was acknowledged before the kill"
    );

    let s = ServerGuard::start(dir.path(), &[]);
    let r = reports(&post_json(s.port, "/walker/count_items", "{}"));
    let stored: std::collections::HashSet<i64> = r[0]["ns"]
        .as_array()
        .expect("ns")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    let lost: Vec<&i64> = acked.iter().filter(|n| !stored.contains(n)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost",
        lost.len(),
        acked.len()
    );
    // Nothing doubled: one Item per number.
    assert_eq!(r[0]["count"].as_u64(), Some(stored.len() as u64));
}
