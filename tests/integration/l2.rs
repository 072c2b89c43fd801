//! The document tier's L2 cache in the cache store (issue 10, "Memory hierarchy"): real
//! `secantusd-py` and `redis-server` on free loopback ports, stopped by PID. Replicas
//! read each other's writes fresh through L2, increments stay exact, a reader that fills
//! an old version after a commit loses (driven step by step through the store's own
//! API), and a cache store that dies and comes back from a snapshot leaves no stale
//! read. Skipped with a message when either server is not installed.

use crate::TempDir;
use crate::kvstore::Server;
use crate::support::{Redis, ServerGuard, free_port, json_call, wait_until};
use actors::docstore::{DocStore, DocTarget};
use actors::l2::L2Settings;
use lang::host::{AccessPolicy, AnchorId, AnchorKind, CommitSet, StoredAnchor, format_id};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

const APP: &str = r#"
node Note { has text: str = ""; }
node Counter { has n: int = 0; }

def:pub seed(text: str) -> int {
    root ++> Note(text=text);
    return 1;
}

def:pub rewrite(text: str) -> int {
    for n in [root -->][?:Note] { n.text = text; }
    return 1;
}

def:pub read() -> list {
    return [n.text for n in [root -->][?:Note]];
}

walker:pub bump {
    can go with Root entry {
        found = [-->[?:Counter]];
        if not found {
            here ++> Counter();
            found = [-->[?:Counter]];
        }
        c = found[0];
        c.n += 1;
        report c.n;
    }
}
"#;

const WAIT: Duration = Duration::from_secs(30);

/// Both servers, or `None` (skipped) when one is not installed.
fn servers() -> Option<(Server, Redis)> {
    let db = Server::docdb()?;
    let redis = Redis::start()?;
    Some((db, redis))
}

fn replica(dir: &TempDir, uri: &str, cache: &str) -> ServerGuard {
    let r = ServerGuard::replica(
        dir.path(),
        &[
            ("JWT_SECRET", "l2-test-secret-0123456789abcdef"),
            ("DOCDB_URI", uri),
            ("CACHE_URL", cache),
        ],
    );
    assert!(
        wait_until(WAIT, || r
            .stderr()
            .contains("L2 cache: on, over the cache store")),
        "the startup log says L2 is on:\n{}",
        r.output()
    );
    r
}

fn function(server: &ServerGuard, name: &str, body: Value) -> Value {
    let resp = json_call(
        server.port,
        "POST",
        &format!("/function/{name}"),
        None,
        &body,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["data"]["result"].clone()
}

/// A counter of `/metrics`.
fn metric(server: &ServerGuard, name: &str) -> u64 {
    let resp = json_call(server.port, "GET", "/metrics", None, &json!({}));
    resp.body
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /metrics:\n{}", resp.body))
}

#[test]
fn replicas_read_each_others_writes_fresh_through_l2_and_count_exactly() {
    let Some((db, redis)) = servers() else {
        return;
    };
    let dir = TempDir::new("l2-replicas");
    dir.write("main.svc", APP);
    let uri = format!("{}l2replicas", db.mongo_url());
    let a = replica(&dir, &uri, &redis.url());
    let b = replica(&dir, &uri, &redis.url());

    function(&a, "seed", json!({"text": "v0"}));
    // Each round: B reads (an L2 hit after the first), A writes, B must see A's write
    // at once, not the entry it read a moment ago.
    for round in 1..=5 {
        let before = function(&b, "read", json!({}));
        assert_eq!(before, json!([format!("v{}", round - 1)]));
        function(&a, "rewrite", json!({"text": format!("v{round}")}));
        assert_eq!(
            function(&b, "read", json!({})),
            json!([format!("v{round}")]),
            "round {round}: B reads A's write"
        );
    }
    assert!(
        metric(&b, "svc_l2_cache_hits_total") > 0,
        "B read through L2"
    );
    assert_eq!(metric(&b, "svc_l2_cache_errors_total"), 0);

    // Concurrent increments from both replicas (two clients each), the first racing to
    // create the counter: one counter, every increment exactly once.
    const PER_CLIENT: usize = 10;
    let seen: Vec<i64> = std::thread::scope(|s| {
        let handles: Vec<_> = [&a, &a, &b, &b]
            .into_iter()
            .map(|r| {
                s.spawn(move || {
                    (0..PER_CLIENT)
                        .map(|_| {
                            let resp = json_call(r.port, "POST", "/walker/bump", None, &json!({}));
                            assert_eq!(resp.status, 200, "{}", resp.body);
                            resp.json()["data"]["reports"][0].as_i64().expect("a count")
                        })
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    let total = (PER_CLIENT * 4) as i64;
    assert_eq!(seen.len() as i64, total);
    assert_eq!(
        seen.iter().copied().collect::<BTreeSet<i64>>(),
        (1..=total).collect::<BTreeSet<i64>>(),
        "each increment seen exactly once"
    );
}

fn note(id: AnchorId, root: AnchorId, text: &str) -> StoredAnchor {
    StoredAnchor {
        id,
        kind: AnchorKind::Node,
        arch_module: "main".into(),
        arch_type: "Note".into(),
        fingerprint: "".into(),
        owner: root,
        access: AccessPolicy::default(),
        fields: json!({ "text": text }).to_string(),
        ends: None,
        edges: None,
    }
}

fn write(store: &mut DocStore, anchor: StoredAnchor, read: u64) {
    let id = anchor.id;
    store
        .commit(&CommitSet {
            upserts: vec![anchor],
            read_versions: vec![(id, read)],
            ..CommitSet::default()
        })
        .expect("commit");
}

/// The classic race, step by step: a reader looks the node up in L2 and reads version 1
/// from L3; a writer commits version 2 (and reflects it in L2); then the reader's fill of
/// version 1 arrives. It must lose: the next load answers version 2, from L2. The same
/// for a delete (a tombstone), and a fill across a new generation is refused too.
#[test]
fn a_reader_filling_an_old_version_after_a_commit_leaves_no_stale_entry() {
    let Some((db, redis)) = servers() else {
        return;
    };
    let target = DocTarget {
        uri: format!("{}l2race", db.mongo_url()),
        l2: Some(L2Settings {
            url: redis.url(),
            ttl: Duration::from_secs(60),
        }),
    };
    let mut writer = DocStore::open(&target).expect("open");
    let mut reader = DocStore::open(&target).expect("open");
    let l2 = writer.l2().expect("L2 attached").clone();
    let root = writer.root_id();
    let space = format_id(root);
    let id: AnchorId = 0x5eed_0000_0000_0000_0000_0000_0000_0001;

    write(&mut writer, note(id, root, "one"), 0);
    // The reader's lookup (it would miss on a colder cache) and the document it got
    // from L3 at version 1.
    let (observed, slots) = l2.read(&space, &[id]).expect("L2 is on");
    let (version, old_doc) = slots[0].clone().expect("the commit put version 1 in L2");
    assert_eq!(version, 1);
    write(&mut writer, note(id, root, "two"), 1);
    // The slow reader's fill lands after the writer's update.
    l2.fill(&space, &observed, &[(id, (1, old_doc.clone()))]);
    let hits = l2.stats().hits;
    let (anchor, version) = reader.load_versioned(id).expect("load").expect("present");
    assert_eq!((anchor.fields.as_str(), version), (r#"{"text":"two"}"#, 2));
    assert_eq!(l2.stats().hits, hits + 1, "answered by L2");

    // A delete leaves a tombstone: the old version cannot come back either.
    let (observed, _) = l2.read(&space, &[id]).expect("L2 is on");
    writer
        .commit(&CommitSet {
            deletes: vec![id],
            read_versions: vec![(id, 2)],
            ..CommitSet::default()
        })
        .expect("delete");
    l2.fill(&space, &observed, &[(id, (2, old_doc.clone()))]);
    assert_eq!(reader.load_versioned(id).expect("load"), None);
    let (_, slots) = l2.read(&space, &[id]).expect("L2 is on");
    assert_eq!(slots[0], None, "no entry readable for a deleted anchor");

    // A new generation (quarantine recovery, an alias) refuses fills observed before it,
    // while a fill observed under it is taken.
    let other: AnchorId = id + 1;
    write(&mut writer, note(other, root, "x"), 0);
    let (before, slots) = l2.read(&space, &[other]).expect("L2 is on");
    let (_, doc) = slots[0].clone().expect("cached");
    l2.invalidate_all(&space);
    l2.fill(&space, &before, &[(other, (1, doc.clone()))]);
    let (now, slots) = l2.read(&space, &[other]).expect("L2 is on");
    assert_eq!(
        slots[0], None,
        "a fill from before the new generation is refused"
    );
    l2.fill(&space, &now, &[(other, (1, doc.clone()))]);
    let (_, slots) = l2.read(&space, &[other]).expect("L2 is on");
    assert_eq!(
        slots[0],
        Some((1, doc)),
        "a fill under the current generation is kept"
    );
}

/// `redis-server` on `port` keeping its snapshot in `dir` (restarts load it).
fn redis_with_snapshot(port: u16, dir: &TempDir) -> Option<Redis> {
    Redis::start_with(
        port,
        &[
            "--dbfilename".as_ref(),
            "l2.rdb".as_ref(),
            "--dir".as_ref(),
            dir.path().as_os_str(),
        ],
    )
}

/// The cache store dies mid-run: calls keep succeeding (L2 is skipped). It comes back
/// from a snapshot that still holds the old entry: no replica reads it, not even one
/// started afterwards that never saw the outage.
#[test]
fn a_cache_store_outage_fails_no_call_and_leaves_no_stale_read() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let data = TempDir::new("l2-redis-data");
    let port = free_port();
    let Some(redis) = redis_with_snapshot(port, &data) else {
        return;
    };
    let cache = format!("redis://127.0.0.1:{port}/");
    let dir = TempDir::new("l2-outage");
    dir.write("main.svc", APP);
    let uri = format!("{}l2outage", db.mongo_url());
    let a = replica(&dir, &uri, &cache);
    let b = replica(&dir, &uri, &cache);
    function(&a, "seed", json!({"text": "old"}));
    assert_eq!(function(&b, "read", json!({})), json!(["old"]));
    // The snapshot holds the entries of "old".
    let client = redis::Client::open(cache.as_str()).expect("url");
    let mut conn = client.get_connection().expect("connect");
    let _: () = redis::cmd("SAVE").query(&mut conn).expect("SAVE");
    drop(conn);
    drop(redis);

    function(&a, "rewrite", json!({"text": "new"}));
    assert_eq!(function(&b, "read", json!({})), json!(["new"]));
    assert_eq!(function(&a, "read", json!({})), json!(["new"]));
    assert!(
        wait_until(WAIT, || a.stderr().contains("L2 cache: off (cache store")),
        "the outage is logged:\n{}",
        a.output()
    );

    let redis = redis_with_snapshot(port, &data).expect("restarted");
    // A replica that never saw the outage reads first, then the others.
    let c = replica(&dir, &uri, &cache);
    assert_eq!(function(&c, "read", json!({})), json!(["new"]));
    assert_eq!(
        metric(&c, "svc_l2_cache_errors_total"),
        0,
        "C saw no outage"
    );
    for r in [&a, &b, &c] {
        assert_eq!(function(r, "read", json!({})), json!(["new"]));
    }
    // Past its reconnect backoff B reads through L2 again, still fresh.
    let hits = metric(&b, "svc_l2_cache_hits_total");
    assert!(
        wait_until(WAIT, || {
            function(&b, "read", json!({})) == json!(["new"])
                && metric(&b, "svc_l2_cache_hits_total") > hits
        }),
        "B reads through L2 again:\n{}",
        b.output()
    );
    drop(redis);
}

/// Quarantine, `svc db alias add` and `recover-all` with L2 on: the same outcome as
/// without it.
#[test]
fn quarantine_and_recovery_work_the_same_with_l2() {
    let Some((db, redis)) = servers() else {
        return;
    };
    let uri = format!("{}l2renames", db.mongo_url());
    let cache = redis.url();
    crate::docdb::rename_flow(&[("DOCDB_URI", uri.as_str()), ("CACHE_URL", cache.as_str())]);
}
