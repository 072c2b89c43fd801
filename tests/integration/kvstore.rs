//! `kvstore(...)` end to end: `svc run` programs and `svc start` replicas against a real
//! `redis-server` (the cache backend) and SecantusDB (`secantusd-py`, the Mongo-wire
//! document database), each started here on a free loopback port and killed by PID.
//! A test whose server is not installed is skipped with a message (`.ci/run` installs
//! both).

use crate::support::{ServerGuard, free_port, json_call, wait_until};
use crate::{TempDir, stderr, stdout, svc};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// A database server on a loopback port, killed (by PID) on drop.
pub(crate) struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// `None` (with a message) when `program` is not installed.
    fn spawn(program: &str, args: &[String], port: u16) -> Option<Server> {
        let spawned = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("SKIPPED: {program} is not installed (see .ci/run)");
                return None;
            }
            Err(e) => panic!("cannot start {program}: {e}"),
        };
        let server = Server { child, port };
        assert!(
            wait_until(WAIT, || TcpStream::connect(("127.0.0.1", port)).is_ok()),
            "{program} did not listen on {port}"
        );
        Some(server)
    }

    pub(crate) fn redis() -> Option<Server> {
        let port = free_port();
        let args = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        .map(String::from);
        Server::spawn("redis-server", &args, port)
    }

    pub(crate) fn docdb() -> Option<Server> {
        Server::docdb_at(free_port(), ":memory:")
    }

    /// SecantusDB on `port` keeping its data at `storage` (`:memory:` = none).
    pub(crate) fn docdb_at(port: u16, storage: &str) -> Option<Server> {
        let args = [
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--storage-path",
            storage,
            "--log-level",
            "WARNING",
        ]
        .map(String::from);
        Server::spawn("secantusd-py", &args, port)
    }

    /// Stop it with SIGTERM (a clean shutdown that keeps what it stored) and wait.
    pub(crate) fn terminate(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    pub(crate) fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn mongo_url(&self) -> String {
        format!("mongodb://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `svc run main.svc` in a fresh directory holding `src` (and `svc.toml` when given),
/// with `env`; `(exit code, stdout, stderr)`.
fn run(src: &str, toml: Option<&str>, env: &[(&str, &str)]) -> (i32, String, String) {
    let dir = TempDir::new("kv");
    dir.write("main.svc", src);
    if let Some(t) = toml {
        dir.write("svc.toml", t);
    }
    let out = svc()
        .current_dir(dir.path())
        .args(["run", "main.svc"])
        .env_remove("CACHE_URL")
        .env_remove("DOCDB_URI")
        .envs(env.iter().copied())
        .output()
        .expect("spawn svc");
    (out.status.code().unwrap_or(-1), stdout(&out), stderr(&out))
}

/// `run` that must succeed; its stdout.
fn run_ok(src: &str, env: &[(&str, &str)]) -> String {
    let (code, out, err) = run(src, None, env);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    out
}

const CACHE_PROGRAM: &str = r#"
with entry {
    kv = kvstore("app", "cache");
    print(kv.set("a", {"x": [1, 2.5, "s", None, True]}));
    print(kv.get("a"), kv.get("missing"));
    print(kv.exists("a"), kv.exists("missing"));
    print(kv.incr("n"), kv.incr("n"), kv.get("n"));
    print(kv.set_with_ttl("t", "v", 100), kv.get("t"));
    print(kv.expire("t", 50), kv.expire("nope", 5));
    print(kv.scan_keys(), kv.scan_keys("t*"));
    print(kv.delete("a"), kv.delete("a"), kv.get("a"));
    other = kvstore("other", "cache");
    print(other.get("n"), other.scan_keys());
    try { kv.incr("t"); } except ValueError as e { print("ValueError"); }
    try { kv.set_with_ttl("z", 1, 0); } except ValueError as e { print(e); }
}
"#;

#[test]
fn cache_methods_in_svc_run() {
    let Some(redis) = Server::redis() else { return };
    let url = redis.redis_url();
    let out = run_ok(CACHE_PROGRAM, &[("CACHE_URL", &url)]);
    assert_eq!(
        out,
        "True\n\
         {'x': [1, 2.5, 's', None, True]} None\n\
         True False\n\
         1 2 2\n\
         True v\n\
         True False\n\
         ['a', 'n', 't'] ['t']\n\
         True False None\n\
         None []\n\
         ValueError\n\
         kvstore: ttl must be a positive number of seconds\n"
    );
}

#[test]
fn cache_ttl_expires_keys() {
    let Some(redis) = Server::redis() else { return };
    let url = redis.redis_url();
    run_ok(
        r#"with entry { kvstore("app", "cache").set_with_ttl("short", 1, 1); }"#,
        &[("CACHE_URL", &url)],
    );
    let gone = wait_until(WAIT, || {
        run_ok(
            r#"with entry { print(kvstore("app", "cache").exists("short")); }"#,
            &[("CACHE_URL", &url)],
        ) == "False\n"
    });
    assert!(gone, "a key set with a 1 s TTL never expired");
}

#[test]
fn lock_primitives_in_svc_run() {
    let Some(redis) = Server::redis() else { return };
    let url = redis.redis_url();
    let out = run_ok(
        r#"
with entry {
    kv = kvstore("app", "cache");
    print(kv.set_nx_with_ttl("lock", "tok1", 30), kv.set_nx_with_ttl("lock", "tok2", 30));
    print(kv.get("lock"));
    print(kv.delete_if_equals("lock", "tok2"), kv.exists("lock"));
    print(kv.delete_if_equals("lock", "tok1"), kv.exists("lock"));
    print(kv.set_nx_with_ttl("lock", "tok2", 30));
    print(kv.delete_if_equals("gone", "x"));
    print(kv.set_nx_with_ttl("obj", {"owner": "a"}, 30), kv.delete_if_equals("obj", {"owner": "a"}));
}
"#,
        &[("CACHE_URL", &url)],
    );
    assert_eq!(
        out,
        "True False\ntok1\nFalse True\nTrue False\nTrue\nFalse\nTrue True\n"
    );
}

/// A program calling each of `calls` on `kvstore("app", db_type)` and printing the
/// `NotImplementedError` each raises.
fn not_implemented_program(db_type: &str, calls: &[&str]) -> String {
    let mut src = format!("with entry {{\n    db = kvstore(\"app\", \"{db_type}\");\n");
    for c in calls {
        src.push_str(&format!(
            "    try {{ db.{c}; print(\"no error\"); }} except NotImplementedError as e {{ print(e); }}\n"
        ));
    }
    src.push_str("}\n");
    src
}

#[test]
fn docdb_methods_raise_not_implemented_on_cache() {
    let Some(redis) = Server::redis() else { return };
    let calls = [
        "find_one('c', {})",
        "find('c')",
        "insert_one('c', {})",
        "insert_many('c', [])",
        "update_one('c', {}, {})",
        "update_many('c', {}, {})",
        "delete_one('c', {})",
        "delete_many('c', {})",
        "find_by_id('c', 'x')",
        "update_by_id('c', 'x', {})",
        "delete_by_id('c', 'x')",
        "find_nodes('N')",
    ];
    let src = not_implemented_program("cache", &calls);
    let out = run_ok(&src, &[("CACHE_URL", &redis.redis_url())]);
    let expected: String = calls
        .iter()
        .map(|c| {
            let m = c.split('(').next().unwrap_or("");
            format!("kvstore: the cache backend does not support {m}()\n")
        })
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn cache_methods_raise_not_implemented_on_docdb() {
    let Some(db) = Server::docdb() else { return };
    let calls = [
        "set_with_ttl('k', 1, 5)",
        "expire('k', 5)",
        "incr('k')",
        "scan_keys('*')",
        "set_nx_with_ttl('k', 1, 5)",
        "delete_if_equals('k', 1)",
    ];
    let src = not_implemented_program("docdb", &calls);
    let out = run_ok(&src, &[("DOCDB_URI", &db.mongo_url())]);
    let expected: String = calls
        .iter()
        .map(|c| {
            let m = c.split('(').next().unwrap_or("");
            format!("kvstore: the docdb backend does not support {m}()\n")
        })
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn clouddoc_is_not_configured_in_this_build() {
    let (code, out, err) = run(r#"with entry { kvstore("app", "clouddoc"); }"#, None, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("kvstore: the clouddoc backend is not configured in this build"),
        "{err}"
    );
    let out = run_ok(
        r#"with entry {
    try { kvstore("app", "clouddoc"); } except NotImplementedError as e { print("NotImplementedError"); }
}"#,
        &[],
    );
    assert_eq!(out, "NotImplementedError\n");
}

#[test]
fn uri_priority_is_argument_then_environment_then_svc_toml() {
    let (Some(a), Some(b)) = (Server::redis(), Server::redis()) else {
        return;
    };
    let (ua, ub) = (a.redis_url(), b.redis_url());
    for (url, mark) in [(&ua, "A"), (&ub, "B")] {
        run_ok(
            &format!(r#"with entry {{ kvstore("p", "cache", "{url}").set("mark", "{mark}"); }}"#),
            &[],
        );
    }
    let read = r#"with entry { print(kvstore("p", "cache").get("mark")); }"#;
    let toml = format!("[scale.database]\ncache_url = \"{ua}\"\n");
    let (code, out, err) = run(read, Some(&toml), &[]);
    assert_eq!((code, out.as_str()), (0, "A\n"), "svc.toml: {err}");
    let (code, out, err) = run(read, Some(&toml), &[("CACHE_URL", &ub)]);
    assert_eq!((code, out.as_str()), (0, "B\n"), "env over svc.toml: {err}");
    let explicit = format!(r#"with entry {{ print(kvstore("p", "cache", "{ua}").get("mark")); }}"#);
    let (code, out, err) = run(&explicit, Some(&toml), &[("CACHE_URL", &ub)]);
    assert_eq!((code, out.as_str()), (0, "A\n"), "argument over env: {err}");
    let (code, _, err) = run(read, None, &[]);
    assert_eq!(code, 1);
    assert!(err.contains("kvstore: no cache URL"), "{err}");
}

#[test]
fn an_unreachable_store_is_a_connection_error() {
    let port = free_port();
    let out = run_ok(
        &format!(
            r#"with entry {{
    try {{ kvstore("p", "cache", "redis://127.0.0.1:{port}/").get("k"); }}
    except ConnectionError as e {{ print("ConnectionError"); }}
}}"#
        ),
        &[],
    );
    assert_eq!(out, "ConnectionError\n");
}

const DOCDB_PROGRAM: &str = r#"
with entry {
    db = kvstore("app", "docdb");
    print(db.set("k", {"a": 1}), db.get("k"), db.exists("k"));
    print(db.set("k", [2]), db.get("k"), db.get("k", "other"));
    print(db.delete("k"), db.exists("k"), db.get("k"), db.delete("k"));
    a = db.insert_one("things", {"name": "a", "n": 1, "tag": "x"});
    print(type(a).__name__, len(a));
    ids = db.insert_many("things", [
        {"name": "b", "n": 2, "tag": "y"},
        {"name": "c", "n": 3, "tag": "x"},
        {"_id": "d-id", "name": "d", "n": 4, "tag": "y"}
    ]);
    print(len(ids), ids[2]);
    def names(f: dict) -> list {
        return [d["name"] for d in db.find("things", f, sort={"n": 1})];
    }
    print("eq", names({"n": {"$eq": 2}}), names({"tag": "x"}));
    print("gt", names({"n": {"$gt": 2}}), "gte", names({"n": {"$gte": 2}}));
    print("lt", names({"n": {"$lt": 2}}), "lte", names({"n": {"$lte": 2}}));
    print("in", names({"n": {"$in": [1, 4]}}), "ne", names({"n": {"$ne": 1}}));
    print("nin", names({"n": {"$nin": [1, 4]}}));
    print("and", names({"$and": [{"n": {"$gt": 1}}, {"tag": "x"}]}));
    print("or", names({"$or": [{"n": 1}, {"name": "d"}]}));
    print("limit", len(db.find("things", {}, limit=2)), "all", len(db.find("things")));
    print(db.find_one("things", {"name": "c"})["n"], db.find_one("things", {"name": "zz"}));
    print(db.find_by_id("things", a)["name"], db.find_by_id("things", "d-id")["n"]);
    print(db.find_by_id("things", "nope"));
    print(db.update_one("things", {"name": "a"}, {"$inc": {"n": 10}}), names({"n": {"$gt": 10}}));
    print(db.update_many("things", {"tag": "x"}, {"flag": True}), names({"flag": True}));
    print(db.update_one("things", {"name": "e"}, {"$set": {"n": 5}}, upsert=True), names({"n": 5}));
    print(db.update_by_id("things", "d-id", {"n": 40}), db.find_by_id("things", "d-id")["n"]);
    print(db.update_by_id("things", "nope", {"n": 1}));
    print(db.delete_by_id("things", a), db.delete_by_id("things", a));
    print(db.delete_one("things", {"tag": "y"}), db.delete_many("things", {}), db.find("things"));
    try { db.find("things", {"n": {"$where": "1"}}); } except ValueError as e { print(e); }
    try { db.find("things", {"$nor": []}); } except ValueError as e { print("ValueError"); }
}
"#;

#[test]
fn docdb_methods_and_filter_operators_in_svc_run() {
    let Some(db) = Server::docdb() else { return };
    let out = run_ok(DOCDB_PROGRAM, &[("DOCDB_URI", &db.mongo_url())]);
    assert_eq!(
        out,
        "True {'a': 1} True\n\
         True [2] None\n\
         True False None False\n\
         str 24\n\
         3 d-id\n\
         eq ['b'] ['a', 'c']\n\
         gt ['c', 'd'] gte ['b', 'c', 'd']\n\
         lt ['a'] lte ['a', 'b']\n\
         in ['a', 'd'] ne ['b', 'c', 'd']\n\
         nin ['b', 'c']\n\
         and ['c']\n\
         or ['a', 'd']\n\
         limit 2 all 4\n\
         3 None\n\
         a 4\n\
         None\n\
         1 ['a']\n\
         2 ['c', 'a']\n\
         1 ['e']\n\
         True 40\n\
         False\n\
         True False\n\
         1 3 []\n\
         kvstore: unsupported filter operator '$where' (docdb supports $eq, $ne, $gt, $gte, \
         $lt, $lte, $in, $nin, $and, $or)\n\
         ValueError\n"
    );
}

#[test]
fn find_nodes_gives_readable_nodes_of_the_type() {
    let Some(db) = Server::docdb() else { return };
    let url = db.mongo_url();
    let stranger = "f".repeat(32);
    // Anchor documents as the document tier stores them; `ROOT` is filled in with the
    // running program's root so the owned ones are readable.
    let src = format!(
        r#"
node Task {{ has title: str, done: bool = False; }}
with entry {{
    db = kvstore("app", "docdb");
    me = jid(root);
    def doc(id: str, owner: str, t: str, title: str, done: bool) -> dict {{
        return {{"_id": id, "kind": "node", "arch_module": "main", "arch_type": t,
                "fingerprint": "", "format_version": 1, "owner": owner,
                "access": {{"public": None, "roots": []}},
                "fields": {{"title": title, "done": done}}}};
    }}
    db.insert_many("_anchors", [
        doc("{a}", me, "Task", "write", False),
        doc("{b}", me, "Task", "test", True),
        doc("{c}", me, "Other", "not a task", False),
        doc("{d}", "{stranger}", "Task", "not mine", False),
        doc("{e}", me, "Gone", "undeclared", False)
    ]);
    open = db.find_nodes("Task", {{"done": False}});
    print([t.title for t in open], [type(t).__name__ for t in open]);
    print(sorted([t.title for t in db.find_nodes("Task")]));
    print([t.title for t in db.find_nodes("Task", {{"$or": [{{"title": "test"}}, {{"title": "x"}}]}})]);
    print(db.find_nodes("Task", {{}}, "empty"));
}}
"#,
        a = "a".repeat(32),
        b = "b".repeat(32),
        c = "c".repeat(32),
        d = "d".repeat(32),
        e = "e".repeat(32),
    );
    let out = run_ok(&src, &[("DOCDB_URI", &url)]);
    assert_eq!(out, "['write'] ['Task']\n['test', 'write']\n['test']\n[]\n");
}

#[test]
fn bad_arguments_are_python_errors() {
    let Some(redis) = Server::redis() else { return };
    let calls = [
        "kv.get()",
        "kv.get(1)",
        "kv.set(\"k\", 1, 2)",
        "kv.set_with_ttl(\"k\", 1, ttl=\"x\")",
        "kv.get(\"k\", nope=1)",
        "kv.set(\"k\", kv)",
        "kv.set(\"k\", 10 ** 30)",
        "kvstore(\"app\", \"sql\")",
        "kv.nothing()",
    ];
    let mut src = String::from("with entry {\n    kv = kvstore(\"app\", \"cache\");\n");
    for c in calls {
        src.push_str(&format!(
            "    try {{ {c}; }} except TypeError as e {{ print(\"TypeError:\", e); }} \
             except ValueError as e {{ print(\"ValueError:\", e); }} \
             except AttributeError as e {{ print(\"AttributeError:\", e); }}\n"
        ));
    }
    src.push_str("}\n");
    let out = run_ok(&src, &[("CACHE_URL", &redis.redis_url())]);
    assert_eq!(
        out,
        "TypeError: get() missing required argument: 'key'\n\
         TypeError: get(): key must be str, not int\n\
         TypeError: set() takes 2 positional arguments but 3 were given\n\
         TypeError: set_with_ttl(): ttl must be int, not str\n\
         TypeError: get() got an unexpected keyword argument 'nope'\n\
         TypeError: Object of type KvStore is not JSON serializable\n\
         ValueError: kvstore: int too large to store (the stores keep 64-bit ints)\n\
         ValueError: kvstore: unknown db_type 'sql' (expected 'docdb', 'clouddoc' or 'cache')\n\
         AttributeError: 'KvStore' object has no attribute 'nothing'\n"
    );
}

const LOCK_APP: &str = r#"
glob kv = kvstore("locks", "cache");

def:pub acquire(name: str, token: str, ttl: int = 30) -> bool {
    return kv.set_nx_with_ttl(name, token, ttl);
}

def:pub release(name: str, token: str) -> bool {
    return kv.delete_if_equals(name, token);
}

walker:pub remember {
    has key: str, value: str;
    can go with Root entry {
        db = kvstore("app", "docdb");
        db.set(self.key, self.value);
        report db.get(self.key);
    }
}

walker:pub recall {
    has key: str;
    can go with Root entry {
        report kvstore("app", "docdb").get(self.key);
    }
}
"#;

fn replica(dir: &TempDir, env: &[(&str, &str)]) -> ServerGuard {
    let mut all = vec![("JWT_SECRET", "kvstore-test-secret-0123456789abcdef")];
    all.extend_from_slice(env);
    ServerGuard::replica(dir.path(), &all)
}

fn call(server: &ServerGuard, path: &str, body: Value) -> Value {
    let resp = json_call(server.port, "POST", path, None, &body);
    assert_eq!(resp.status, 200, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(true), "{}", resp.body);
    v["data"].clone()
}

fn acquire(server: &ServerGuard, name: &str, token: &str) -> bool {
    call(
        server,
        "/function/acquire",
        json!({"name": name, "token": token}),
    )["result"]
        == json!(true)
}

fn release(server: &ServerGuard, name: &str, token: &str) -> bool {
    call(
        server,
        "/function/release",
        json!({"name": name, "token": token}),
    )["result"]
        == json!(true)
}

#[test]
fn locks_exclude_across_two_replicas() {
    let (Some(redis), Some(db)) = (Server::redis(), Server::docdb()) else {
        return;
    };
    let dir = TempDir::new("kv-locks");
    dir.write("main.svc", LOCK_APP);
    dir.write("svc.toml", "[scale.auth]\nbcrypt_cost = 4\n");
    let (cache, docdb) = (redis.redis_url(), db.mongo_url());
    let env = [("CACHE_URL", cache.as_str()), ("DOCDB_URI", docdb.as_str())];
    let a = replica(&dir, &env);
    let b = replica(&dir, &env);

    // Mutex: one holder at a time; only the holder's token releases it.
    assert!(acquire(&a, "m", "token-a"), "A takes the free lock");
    assert!(
        !acquire(&b, "m", "token-b"),
        "B is excluded while A holds it"
    );
    assert!(!release(&b, "m", "token-b"), "B cannot release A's lock");
    assert!(!acquire(&b, "m", "token-b"), "still held by A");
    assert!(release(&a, "m", "token-a"), "A releases its own lock");
    assert!(acquire(&b, "m", "token-b"), "B takes it once free");
    assert!(!acquire(&a, "m", "token-a"));

    // A race for a fresh lock from both replicas at once: exactly one winner.
    let winners: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let server = if i % 2 == 0 { &a } else { &b };
                s.spawn(move || usize::from(acquire(server, "race", &format!("t{i}"))))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("caller thread"))
            .sum()
    });
    assert_eq!(winners, 1, "exactly one replica call wins a fresh lock");

    // The document store is shared too: a walker's write on A is read on B.
    let wrote = call(&a, "/walker/remember", json!({"key": "k", "value": "v"}));
    assert_eq!(wrote["reports"], json!(["v"]));
    let read = call(&b, "/walker/recall", json!({"key": "k"}));
    assert_eq!(read["reports"], json!(["v"]));
}

#[test]
fn a_lock_lapses_with_its_ttl() {
    let Some(redis) = Server::redis() else { return };
    let dir = TempDir::new("kv-ttl");
    dir.write("main.svc", LOCK_APP);
    dir.write("svc.toml", "[scale.auth]\nbcrypt_cost = 4\n");
    let cache = redis.redis_url();
    let a = replica(&dir, &[("CACHE_URL", cache.as_str())]);
    let body = json!({"name": "debounce", "token": "x", "ttl": 1});
    assert_eq!(
        call(&a, "/function/acquire", body.clone())["result"],
        json!(true)
    );
    assert_eq!(
        call(&a, "/function/acquire", body.clone())["result"],
        json!(false)
    );
    let lapsed = wait_until(WAIT, || {
        call(&a, "/function/acquire", body.clone())["result"] == json!(true)
    });
    assert!(lapsed, "the debounce key never lapsed");
}

#[test]
fn a_store_that_stops_answering_is_a_timeout_error() {
    let Some(redis) = Server::redis() else { return };
    let url = redis.redis_url();
    let pid = redis.child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    let started = std::time::Instant::now();
    let (code, out, err) = run(
        r#"with entry {
    try { kvstore("p", "cache").get("k"); } except TimeoutError as e { print("TimeoutError"); }
}"#,
        None,
        &[("CACHE_URL", &url)],
    );
    let waited = started.elapsed();
    signal("-CONT");
    assert_eq!((code, out.as_str()), (0, "TimeoutError\n"), "{err}");
    assert!(
        waited < Duration::from_secs(20),
        "one operation waited {waited:?} (bound: 10 s, plus the process start)"
    );
}

#[test]
fn not_implemented_reaches_an_http_caller_as_an_execution_error() {
    let Some(redis) = Server::redis() else { return };
    let dir = TempDir::new("kv-http");
    dir.write(
        "main.svc",
        r#"
def:pub lookup() -> dict {
    return kvstore("app", "cache").find_one("c", {});
}
"#,
    );
    dir.write("svc.toml", "[scale.auth]\nbcrypt_cost = 4\n");
    let cache = redis.redis_url();
    let server = replica(&dir, &[("CACHE_URL", cache.as_str())]);
    let resp = json_call(server.port, "POST", "/function/lookup", None, &json!({}));
    assert_eq!(resp.status, 500, "{}", resp.body);
    let v = resp.json();
    assert_eq!(v["ok"], json!(false), "{}", resp.body);
    assert!(
        resp.body
            .contains("kvstore: the cache backend does not support find_one()"),
        "{}",
        resp.body
    );
}
