//! Cross-replica L1 invalidation (issue 10, "Memory hierarchy"): two `svc start`
//! replicas share one store file and a real `redis-server`; a write on one replica is
//! seen by a run already in flight on the other, which had loaded the node but not read
//! it yet.

use crate::TempDir;
use crate::support::{Redis, ServerGuard, free_port, json_call, wait_until};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const APP: &str = r#"
node Note {
    has text: str = "";
}

def:pub seed() -> str {
    n = Note(text="old");
    root ++> n;
    return jid(n);
}

def:pub rewrite(text: str) -> int {
    for n in [root -->] { n.text = text; }
    return 1;
}

"""Load the note, keep busy, then read it."""
def:pub late_read(spins: int) -> str {
    notes = [root -->];
    i = 0;
    while i < spins { i += 1; }
    return notes[0].text;
}
"#;

const WAIT: Duration = Duration::from_secs(15);

fn replica(dir: &TempDir, extra_env: &[(&str, &str)]) -> ServerGuard {
    let port = free_port().to_string();
    ServerGuard::launch(
        dir.path(),
        &["main.svc", "--host", "127.0.0.1", "--port", &port],
        extra_env,
    )
}

fn result(port: u16, name: &str, body: Value) -> Value {
    let r = json_call(port, "POST", &format!("/function/{name}"), None, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["result"].clone()
}

/// A late reader on replica A started before replica B's write returns what B wrote
/// when invalidation is on, and its own stale copy when it is off.
fn late_read_sees(invalidation: bool) -> Value {
    let redis = Redis::start().expect("redis-server (installed by .ci/run)");
    let dir = TempDir::new("invalidate");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.database]\ncache_l1_invalidation_enabled = {invalidation}\n"),
    );
    let url = redis.url();
    let env = [
        ("CACHE_URL", url.as_str()),
        ("JWT_SECRET", "s3cret-s3cret-s3cret-s3cret-s3cret"),
    ];
    let a = replica(&dir, &env);
    let b = replica(&dir, &env);
    if invalidation {
        for s in [&a, &b] {
            assert!(
                wait_until(WAIT, || s
                    .stderr()
                    .contains("on, subscribed to svc:anchor:invalidate")),
                "{}",
                s.output()
            );
        }
    }
    result(a.port, "seed", json!({}));
    // Calibrate: spins for about two seconds of this machine's interpreter.
    let started = Instant::now();
    result(a.port, "late_read", json!({"spins": 200_000}));
    let per_spin = started.elapsed().as_secs_f64() / 200_000.0;
    let spins = ((2.0 / per_spin) as u64).clamp(200_000, 200_000_000);
    let port = a.port;
    let late = std::thread::spawn(move || result(port, "late_read", json!({"spins": spins})));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(result(b.port, "rewrite", json!({"text": "new"})), json!(1));
    let seen = late.join().expect("late reader");
    // Both replicas are still serving.
    assert_eq!(
        result(b.port, "late_read", json!({"spins": 0})),
        json!("new")
    );
    seen
}

#[test]
fn a_write_on_one_replica_refreshes_unread_copies_on_the_other() {
    assert_eq!(late_read_sees(true), json!("new"));
}

#[test]
fn without_invalidation_a_run_keeps_the_copy_it_loaded() {
    assert_eq!(late_read_sees(false), json!("old"));
}
