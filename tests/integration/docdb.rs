//! The document-database tier end to end: `svc start` replicas sharing one SecantusDB
//! (the Mongo-wire server `.ci/run` installs, started here on a free loopback port and
//! killed by PID), and `svc db` on both backends. Skipped with a message when
//! `secantusd-py` is not installed.

use crate::kvstore::Server;
use crate::support::{ServerGuard, free_port, json_call};
use crate::{TempDir, stderr, stdout, svc};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const COUNTER_APP: &str = r#"
node Counter { has n: int = 0; }
node Todo { has title: str; }

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

walker:pub counters {
    can go with Root entry { report len([-->[?:Counter]]); }
}

walker:pub add_todo {
    has title: str;
    can go with Root entry { here ++> Todo(title=self.title); }
}

walker:pub todos {
    can go with Root entry { report [t.title for t in [-->[?:Todo]]]; }
}

walker mine {
    can go with Root entry {
        here ++> Todo(title="private");
        report len([-->[?:Todo]]);
    }
}

walker:pub query {
    has db: str;
    can go with Root entry {
        report [t.title for t in kvstore(self.db, "docdb").find_nodes("Todo", {"title": "milk"})];
    }
}
"#;

fn replica(dir: &TempDir, uri: &str) -> ServerGuard {
    ServerGuard::replica(
        dir.path(),
        &[
            ("JWT_SECRET", "docdb-test-secret-0123456789abcdef"),
            ("DOCDB_URI", uri),
        ],
    )
}

fn call(server: &ServerGuard, walker: &str, body: Value) -> Value {
    let resp = json_call(
        server.port,
        "POST",
        &format!("/walker/{walker}"),
        None,
        &body,
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["data"]["reports"].clone()
}

#[test]
fn replicas_share_one_graph_and_concurrent_increments_are_exact() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let dir = TempDir::new("docdb-replicas");
    dir.write("main.svc", COUNTER_APP);
    let uri = format!("{}replicas", db.mongo_url());
    let replicas: Vec<ServerGuard> = (0..3).map(|_| replica(&dir, &uri)).collect();
    for r in &replicas {
        assert!(
            r.stdout()
                .contains("(store: document database at mongodb://127.0.0.1:"),
            "startup line names the backend:\n{}",
            r.stdout()
        );
    }

    // A write on one replica is read fresh on the others.
    call(&replicas[0], "add_todo", json!({"title": "milk"}));
    for r in &replicas[1..] {
        assert_eq!(call(r, "todos", json!({})), json!([["milk"]]));
    }
    // A user registered on one replica calls private walkers on the others (replicas of
    // one app directory share its user store), on one root.
    let token = crate::support::register_and_login(replicas[0].port, "ann");
    for (i, r) in replicas.iter().enumerate() {
        let resp = json_call(r.port, "POST", "/walker/mine", Some(&token), &json!({}));
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(resp.json()["data"]["reports"], json!([i + 1]));
    }

    // svc code can query the graph's collection (`find_nodes`' default `_anchors`).
    assert_eq!(
        call(&replicas[2], "query", json!({"db": "replicas"})),
        json!([["milk"]])
    );

    // Concurrent increments from every replica, the first ones racing to create the
    // counter (check-then-create): exactly one counter, every increment once.
    const PER_CLIENT: usize = 12;
    let seen: Vec<Vec<i64>> = std::thread::scope(|s| {
        let handles: Vec<_> = replicas
            .iter()
            .flat_map(|r| [r, r])
            .map(|r| {
                s.spawn(move || {
                    (0..PER_CLIENT)
                        .map(|_| call(r, "bump", json!({}))[0].as_i64().expect("a count"))
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let all: Vec<i64> = seen.into_iter().flatten().collect();
    let total = (PER_CLIENT * 6) as i64;
    let distinct: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len() as i64, total);
    assert_eq!(
        distinct,
        (1..=total).collect::<BTreeSet<i64>>(),
        "each increment seen exactly once"
    );
    for r in &replicas {
        assert_eq!(call(r, "counters", json!({})), json!([1]));
    }
}

#[test]
fn a_renamed_archetype_is_quarantined_then_recovered_with_an_alias() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let uri = format!("{}renames", db.mongo_url());
    rename_flow(&[("DOCDB_URI", uri.as_str())]);
}

#[test]
fn the_embedded_store_quarantines_and_recovers_the_same_way() {
    rename_flow(&[]);
}

const NOTE_APP: &str = r#"
node Note { has text: str; }
node Tag { has name: str; }
walker:pub add {
    has text: str;
    can go with Root entry {
        n = here ++> Note(text=self.text);
        n ++> Tag(name="t");
    }
}
walker:pub notes {
    can go with Root entry {
        report [f"{n.text}:{len([n -->])}" for n in [-->[?:Note]]];
    }
}
"#;

/// v1 stores a `Note`; v2 renames the class `Memo`: reading quarantines the old node;
/// `svc db alias add` + `recover-all` bring it back as a `Memo`.
pub(crate) fn rename_flow(env: &[(&str, &str)]) {
    let dir = TempDir::new("docdb-rename");
    dir.write("main.svc", NOTE_APP);
    let mut all = vec![("JWT_SECRET", "docdb-test-secret-0123456789abcdef")];
    all.extend_from_slice(env);
    let start = || {
        let port = free_port().to_string();
        ServerGuard::launch(
            dir.path(),
            &["main.svc", "--host", "127.0.0.1", "--port", &port],
            &all,
        )
    };
    let db = |args: &[&str]| {
        let out = svc()
            .current_dir(dir.path())
            .arg("db")
            .args(args)
            .args(["--app", "main.svc"])
            .env_remove("DOCDB_URI")
            .envs(env.iter().copied())
            .output()
            .expect("svc db");
        (out.status.code(), stdout(&out), stderr(&out))
    };

    let v1 = start();
    call(&v1, "add", json!({"text": "hello"}));
    assert_eq!(call(&v1, "notes", json!({})), json!([["hello:1"]]));
    drop(v1);

    let (code, out, err) = db(&["inspect"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("format_version=1 anchors=")
            && first.ends_with("quarantined=0 aliases=0"),
        "{out}"
    );
    assert!(out.contains("main.Note"), "{out}");

    dir.write("main.svc", &NOTE_APP.replace("Note", "Memo"));
    let v2 = start();
    assert_eq!(
        call(&v2, "notes", json!({})),
        json!([[]]),
        "unreadable: not shown"
    );
    drop(v2);
    let (code, out, err) = db(&["quarantine", "list"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("main.Note"),
        "the reason names the archetype: {out}"
    );
    let anchor = out
        .split_whitespace()
        .nth(1)
        .expect("anchor id")
        .to_string();
    let (code, shown, _) = db(&["quarantine", "show", &anchor]);
    assert_eq!(code, Some(0));
    let shown: Value = serde_json::from_str(&shown).expect("json");
    assert_eq!(shown["anchor_id"], json!(anchor));

    // Nothing reads yet: recover-all leaves it.
    let (_, out, _) = db(&["recover-all"]);
    assert_eq!(out.trim(), "Recovered 0 of 1 quarantined rows.");
    // Bad input exits 1.
    let (code, _, err) = db(&["alias", "add", "main.Note", "not a name"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, _, _) = db(&["quarantine", "show", "no-such-entry"]);
    assert_eq!(code, Some(1));

    let (code, out, err) = db(&["alias", "add", "main.Note", "main.Memo"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "Alias registered: main.Note -> main.Memo");
    let (_, out, _) = db(&["recover-all"]);
    assert_eq!(out.trim(), "Recovered 1 of 1 quarantined rows.");
    let (_, out, _) = db(&["inspect"]);
    assert!(
        out.lines()
            .next()
            .unwrap_or_default()
            .ends_with("quarantined=0 aliases=1"),
        "{out}"
    );

    let v3 = start();
    assert_eq!(
        call(&v3, "notes", json!({})),
        json!([["hello:1"]]),
        "recovered with its edges"
    );
}

#[test]
fn a_replica_killed_mid_load_loses_nothing_it_acknowledged() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let dir = TempDir::new("docdb-kill");
    dir.write("main.svc", COUNTER_APP);
    let uri = format!("{}killed", db.mongo_url());
    let victim = replica(&dir, &uri);
    let survivor = replica(&dir, &uri);
    let port = victim.port;
    let acknowledged = std::thread::spawn(move || {
        let mut done = Vec::new();
        for i in 0.. {
            let title = format!("t{i}");
            // The kill resets the connection mid-request: the client's view is "not
            // acknowledged" (the support client panics on a reset; caught here).
            let body = json!({"title": title});
            let answered = std::panic::catch_unwind(|| {
                json_call(port, "POST", "/walker/add_todo", None, &body).status
            });
            if !matches!(answered, Ok(200)) {
                break;
            }
            done.push(title);
        }
        done
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = std::process::Command::new("kill")
        .args(["-9", &victim.pid().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let acknowledged = acknowledged.join().expect("client");
    assert!(!acknowledged.is_empty(), "some writes were acknowledged");
    let stored = call(&survivor, "todos", json!({}));
    let stored: BTreeSet<String> = stored[0]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    for title in &acknowledged {
        assert!(stored.contains(title), "acknowledged {title} was lost");
    }
    assert!(
        stored.len() <= acknowledged.len() + 1,
        "at most the in-flight write extra"
    );
}

/// The document database stops answering: calls fail with 503 + `Retry-After` and a
/// message without driver internals; once it is back, calls succeed again.
#[test]
fn a_database_outage_is_503_and_service_resumes() {
    let storage = TempDir::new("docdb-outage-data");
    let port = free_port();
    let path = storage.path().join("db").display().to_string();
    let Some(db) = Server::docdb_at(port, &path) else {
        return;
    };
    let dir = TempDir::new("docdb-outage");
    dir.write("main.svc", COUNTER_APP);
    // The default pool (eight run workers): most have not loaded the app when the
    // database goes away.
    let uri = format!("{}outage", db.mongo_url());
    let server = ServerGuard::main_with(
        dir.path(),
        "8",
        &[
            ("JWT_SECRET", "docdb-test-secret-0123456789abcdef"),
            ("DOCDB_URI", &uri),
        ],
    );
    assert_eq!(call(&server, "bump", json!({})), json!([1]));
    db.terminate();
    // Several calls, so that workers which have not loaded the app yet (they open the
    // store to load it) answer some of them: each is 503 too, never a 500.
    for _ in 0..4 {
        let resp = json_call(server.port, "POST", "/walker/bump", None, &json!({}));
        assert_eq!(resp.status, 503, "{}", resp.body);
        assert_eq!(resp.header("retry-after"), Some("1"));
        assert!(
            !resp.body.contains("127.0.0.1"),
            "no internals: {}",
            resp.body
        );
    }
    let _db = Server::docdb_at(port, &path).expect("restarted");
    let resumed = crate::support::wait_until(std::time::Duration::from_secs(60), || {
        json_call(server.port, "POST", "/walker/bump", None, &json!({})).status == 200
    });
    assert!(resumed, "{}", server.output());
    assert_eq!(
        call(&server, "bump", json!({}))[0].as_i64().map(|n| n >= 3),
        Some(true)
    );
}

/// Unlinking and linking in one call (a `$pull` and a `$push` on one node's edge list)
/// keeps the list in order on the document tier.
#[test]
fn edges_removed_and_added_in_one_call_stay_in_order() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let dir = TempDir::new("docdb-relink");
    dir.write(
        "main.svc",
        r#"
node Todo { has title: str; }
walker:pub add { has title: str; can go with Root entry { here ++> Todo(title=self.title); } }
walker:pub swap {
    has title: str;
    can go with Root entry {
        here del--> [-->[?:Todo]][0];
        here ++> Todo(title=self.title);
    }
}
walker:pub list { can go with Root entry { report [t.title for t in [-->[?:Todo]]]; } }
"#,
    );
    let server = replica(&dir, &format!("{}relink", db.mongo_url()));
    for t in ["a", "b", "c"] {
        call(&server, "add", json!({"title": t}));
    }
    call(&server, "swap", json!({"title": "d"}));
    assert_eq!(call(&server, "list", json!({})), json!([["b", "c", "d"]]));
}

/// `svc_store_commits_total` names the backend the commits went to (decisions.md
/// "Metrics"): `docdb` when the graph lives in the document database (it said `sqlite`
/// whatever the backend).
#[test]
fn metrics_name_the_document_backend_of_commits() {
    let Some(db) = Server::docdb() else {
        return;
    };
    let dir = TempDir::new("docdb-metrics");
    dir.write("main.svc", COUNTER_APP);
    let uri = format!("{}metrics", db.mongo_url());
    let server = replica(&dir, &uri);
    call(&server, "add_todo", json!({"title": "milk"}));
    let text = crate::support::get(server.port, "/metrics").body;
    assert!(
        text.contains("svc_store_commits_total{backend=\"docdb\",outcome=\"ok\"} 1\n"),
        "{text}"
    );
    assert!(!text.contains("backend=\"sqlite\""), "{text}");
}
