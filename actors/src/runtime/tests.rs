//! Tests of the runtime: real worker threads, a real store file in a temp dir, a small
//! app written by each test, all inside an actix `System`.

use super::*;
use crate::store::{RunHost, SqliteStore, random_id};
use serde_json::{Value as Json, json};
use std::sync::atomic::AtomicU64;

/// A function name that makes the worker panic (test builds only).
pub(super) const PANIC_PROBE: &str = "__panic_probe__";

const APP: &str = r#"
node Item { has name: str = ""; }

def add(a: int, b: int) -> int { return a + b; }
def greet(name: str, punct: str = "!") -> str { return f"hello {name}{punct}"; }
def boom(x: int) -> float { return x / 0; }
def count() -> int { return len([root -->]); }
def shared_count() -> int { return len([root.shared -->]); }
def attach_shared(name: str) -> int { root.shared ++> Item(name=name); return 1; }
def version() -> int { return 1; }
def deep(n: int) -> int { if n == 0 { return 0; } return 1 + deep(n - 1); }

walker Make {
    has name: str;
    can go with Root entry { here ++> Item(name=self.name); report self.name; }
}

walker Add {
    can go with Root entry { here ++> Item(); }
}

walker Names {
    can go with Root entry { visit [-->]; }
    can see with Item entry { report here.name; }
}
"#;

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "svc-runtime-{tag}-{}-{n}-{:x}",
            std::process::id(),
            random_id() as u32
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write app");
        path
    }

    fn config(&self, workers: usize) -> RuntimeConfig {
        let mut config = RuntimeConfig::new(
            self.0.join("main.svc"),
            self.0.join(".svc/data/anchor_store.db"),
        );
        config.workers = workers;
        config
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn args(value: Json) -> serde_json::Map<String, Json> {
    match value {
        Json::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn request(kind: EndpointKind, name: &str, a: Json) -> CallRequest {
    CallRequest {
        kind,
        name: name.to_string(),
        args: args(a),
        start: Start::Root,
        caller: Caller::default(),
        trace_id: "test".to_string(),
    }
}

async fn function(rt: &Runtime, name: &str, a: Json) -> Result<CallOutcome, CallError> {
    rt.call(request(EndpointKind::Function, name, a)).await
}

async fn walker(rt: &Runtime, name: &str, a: Json) -> Result<CallOutcome, CallError> {
    rt.call(request(EndpointKind::Walker, name, a)).await
}

async fn count(rt: &Runtime) -> Json {
    function(rt, "count", json!({}))
        .await
        .expect("count")
        .result
}

/// Run `f` inside a fresh actix System.
fn in_system<F: std::future::Future>(f: F) -> F::Output {
    actix::System::new().block_on(f)
}

#[test]
fn runtime_is_a_send_sync_handle() {
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Runtime>();
}

#[test]
fn start_reports_endpoints_and_load_output() {
    let dir = TempDir::new("start");
    dir.write(
        "main.svc",
        &format!("{APP}\nwith entry {{ print(\"loaded\"); }}\n"),
    );
    in_system(async {
        let (rt, loaded) = Runtime::start(dir.config(2)).expect("start");
        let names: Vec<&str> = loaded.endpoints.iter().map(|e| e.name.as_str()).collect();
        assert!(
            names.contains(&"add") && names.contains(&"Make"),
            "{names:?}"
        );
        assert_eq!(loaded.load_output, "loaded\n");
        let on_disk = SqliteStore::open(dir.config(1).store_path).expect("open");
        assert_eq!(rt.shared_root(), on_disk.root_id());
        assert_eq!(rt.store_path(), dir.config(1).store_path);
        let health = rt.store_health().await.expect("health");
        assert_eq!(health.shared_root, rt.shared_root());
        assert_eq!(rt.in_flight(), 0);
    });
}

#[test]
fn start_fails_with_diagnostics() {
    let dir = TempDir::new("bad");
    dir.write("main.svc", "def broken( { return 1; }\n");
    in_system(async {
        let err = Runtime::start(dir.config(1)).expect_err("must fail");
        assert!(err.contains("error"), "{err}");
    });
    assert!(Runtime::start(dir.config(1)).is_err(), "outside a System");
}

#[test]
fn function_calls_with_json_args() {
    let dir = TempDir::new("fn");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        let out = function(&rt, "add", json!({"a": 2, "b": 3}))
            .await
            .expect("add");
        assert_eq!(out.result, json!(5));
        assert_eq!(out.reports, Vec::<Json>::new());
        // Strings coerce to the declared int; defaults apply.
        let out = function(&rt, "add", json!({"a": "40", "b": 2}))
            .await
            .expect("add");
        assert_eq!(out.result, json!(42));
        let out = function(&rt, "greet", json!({"name": "svc"}))
            .await
            .expect("greet");
        assert_eq!(out.result, json!("hello svc!"));
        // Deep recursion needs the worker's big stack.
        let out = function(&rt, "deep", json!({"n": 900}))
            .await
            .expect("deep");
        assert_eq!(out.result, json!(900));
        assert_eq!(rt.in_flight(), 0);
    });
}

#[test]
fn walker_runs_commits_and_reports() {
    let dir = TempDir::new("walker");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        let out = walker(&rt, "Make", json!({"name": "a"}))
            .await
            .expect("make");
        assert_eq!(out.reports, vec![json!("a")]);
        assert_eq!(out.result["name"], json!("a"));
        assert_eq!(out.result["_svc_type"], json!("Make"));
        assert_eq!(out.result["_svc_archetype"], json!("walker"));
        walker(&rt, "Make", json!({"name": "b"}))
            .await
            .expect("make");
        let out = walker(&rt, "Names", json!({})).await.expect("names");
        assert_eq!(out.reports, vec![json!("a"), json!("b")]);
        assert_eq!(count(&rt).await, json!(2));
    });
}

#[test]
fn not_found_validation_and_runtime_errors() {
    let dir = TempDir::new("errors");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(1)).expect("start");
        let e = function(&rt, "nope", json!({})).await.expect_err("404");
        assert!(matches!(e, CallError::NotFound(_)), "{e:?}");
        let e = walker(&rt, "add", json!({}))
            .await
            .expect_err("not a walker");
        assert!(matches!(e, CallError::NotFound(_)), "{e:?}");

        let e = function(&rt, "add", json!({"a": "x", "c": 1}))
            .await
            .expect_err("422");
        let CallError::Validation(problems) = e else {
            panic!("{e:?}")
        };
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert!(fields.contains(&"a"), "{problems:?}");
        assert!(fields.contains(&"c"), "{problems:?}");
        assert!(fields.contains(&"b"), "missing b: {problems:?}");

        let e = function(&rt, "boom", json!({"x": 1}))
            .await
            .expect_err("500");
        let CallError::Runtime { exc_type, message } = e else {
            panic!("{e:?}")
        };
        assert_eq!(exc_type, "ZeroDivisionError");
        assert!(message.starts_with("ZeroDivisionError:"), "{message}");
        assert!(message.contains("main.svc:"), "position: {message}");

        let mut start_elsewhere = request(EndpointKind::Walker, "Names", json!({}));
        start_elsewhere.start = Start::Node(0xdead);
        let e = rt.call(start_elsewhere).await.expect_err("no such node");
        assert!(matches!(e, CallError::NotFound(_)), "{e:?}");
        assert_eq!(rt.in_flight(), 0);
    });
}

#[test]
fn concurrent_writers_both_land() {
    let dir = TempDir::new("race");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        let writer = |rt: Runtime| async move {
            for _ in 0..200 {
                walker(&rt, "Add", json!({})).await.expect("add");
            }
        };
        tokio::join!(writer(rt.clone()), writer(rt.clone()));
        assert_eq!(count(&rt).await, json!(400));
        println!("replays: {}", rt.replays());
        assert_eq!(rt.in_flight(), 0);
    });
}

#[test]
fn without_replays_a_lost_race_is_a_conflict_and_lands_nothing() {
    let dir = TempDir::new("noreplay");
    dir.write("main.svc", APP);
    let mut config = dir.config(2);
    config.max_replays = 0;
    in_system(async {
        let (rt, _) = Runtime::start(config).expect("start");
        let writer = |rt: Runtime| async move {
            let mut landed = 0;
            for _ in 0..200 {
                match walker(&rt, "Add", json!({})).await {
                    Ok(_) => landed += 1,
                    Err(CallError::Conflict(m)) => assert!(m.contains("conflict"), "{m}"),
                    Err(e) => panic!("{e:?}"),
                }
            }
            landed
        };
        let (a, b) = tokio::join!(writer(rt.clone()), writer(rt.clone()));
        assert_eq!(count(&rt).await, json!(a + b));
        assert_eq!(rt.replays(), 0);
    });
}

#[test]
fn user_roots_are_separate_from_the_shared_root() {
    let dir = TempDir::new("roots");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        walker(&rt, "Make", json!({"name": "guest"}))
            .await
            .expect("guest");
        let user = Caller {
            user_id: Some("u1".into()),
            root: Some(random_id()),
            authorization: None,
        };
        let mut mine = request(EndpointKind::Walker, "Make", json!({"name": "mine"}));
        mine.caller = user.clone();
        rt.call(mine).await.expect("user walker");
        let mut names = request(EndpointKind::Walker, "Names", json!({}));
        names.caller = user.clone();
        let out = rt.call(names).await.expect("names");
        assert_eq!(out.reports, vec![json!("mine")]);
        // Nodes attached to the shared root stay closed to others (rule 16): the user
        // sees none of the guest's, but may attach its own (CONNECT floor).
        let as_user = |name: &str, a: Json| {
            let mut req = request(EndpointKind::Function, name, a);
            req.caller = user.clone();
            req
        };
        let shared = rt.call(as_user("shared_count", json!({})));
        assert_eq!(shared.await.expect("shared").result, json!(0));
        let attach = rt.call(as_user("attach_shared", json!({"name": "u"})));
        attach.await.expect("attach to the shared root");
        let shared = rt.call(as_user("shared_count", json!({})));
        assert_eq!(shared.await.expect("shared").result, json!(1));
        assert_eq!(count(&rt).await, json!(1), "the guest sees only its own");
    });
}

#[test]
fn reload_picks_up_a_changed_file() {
    let dir = TempDir::new("reload");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        assert_eq!(
            function(&rt, "version", json!({})).await.expect("v").result,
            json!(1)
        );
        dir.write("main.svc", &APP.replace("return 1; }", "return 2; }"));
        let loaded = rt.reload().await.expect("reload");
        assert!(loaded.endpoints.iter().any(|e| e.name == "version"));
        // Every worker runs the new app.
        for _ in 0..8 {
            assert_eq!(
                function(&rt, "version", json!({})).await.expect("v").result,
                json!(2)
            );
        }
        // A broken file leaves the old app running.
        dir.write("main.svc", "def version( -> int { return 3; }\n");
        assert!(rt.reload().await.is_err());
        for _ in 0..8 {
            assert_eq!(
                function(&rt, "version", json!({})).await.expect("v").result,
                json!(2)
            );
        }
    });
}

#[test]
fn restart_keeps_data_seeded_by_svc_run() {
    let dir = TempDir::new("restart");
    let config = dir.config(2);
    // `svc run` seeds the same store through the same root.
    let seed = dir.write(
        "seed.svc",
        "node Item { has name: str = \"\"; }\nwith entry { root ++> Item(name=\"seeded\"); }\n",
    );
    {
        let store = SqliteStore::open(&config.store_path).expect("open");
        let mut host = RunHost::new(store, false);
        let outcome = lang::run_file(&seed, &mut host, &lang::RunOptions::default());
        assert_eq!(outcome.error, None);
    }
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(config.clone()).expect("start");
        assert_eq!(count(&rt).await, json!(1));
        walker(&rt, "Make", json!({"name": "x"}))
            .await
            .expect("make");
        assert_eq!(count(&rt).await, json!(2));
    });
    in_system(async {
        let (rt, _) = Runtime::start(config.clone()).expect("restart");
        let out = walker(&rt, "Names", json!({})).await.expect("names");
        assert_eq!(out.reports, vec![json!("seeded"), json!("x")]);
    });
}

#[test]
fn module_code_commits_once_not_per_worker() {
    let dir = TempDir::new("module");
    dir.write(
        "main.svc",
        &format!("{APP}\nwith entry {{ root ++> Item(name=\"boot\"); }}\n"),
    );
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(3)).expect("start");
        assert_eq!(count(&rt).await, json!(1));
    });
}

#[test]
fn workers_load_the_app_on_their_first_call_not_at_start() {
    let dir = TempDir::new("lazy");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(4)).expect("start");
        // Only the validating load has run: no worker holds a program yet.
        assert_eq!(rt.app_loads(), 0);
        let sum = function(&rt, "add", json!({"a": 2, "b": 3})).await;
        assert_eq!(sum.expect("add").result, json!(5));
        // The worker that took the call loaded the app; the other three did not.
        assert_eq!(rt.app_loads(), 1);
    });
}

/// A bulk call (here 5,000 children of root in one commit) retires its worker: the
/// answer comes first, then a fresh worker in a fresh thread takes its place and loads
/// the app on its next call. Calls below the bound keep their worker.
#[test]
fn a_bulk_call_retires_its_worker_for_a_fresh_one() {
    let dir = TempDir::new("retire");
    dir.write(
        "main.svc",
        r#"
node Item { has n: int = 0; }
def add(n: int) -> int { for i in range(n) { root ++> Item(n=i); } return n; }
def count() -> int { return len([root -->]); }
"#,
    );
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(1)).expect("start");
        for _ in 0..3 {
            function(&rt, "add", json!({"n": 10})).await.expect("small");
        }
        assert_eq!(rt.app_loads(), 1, "small calls keep their worker");
        let bulk = function(&rt, "add", json!({"n": 5000})).await;
        assert_eq!(bulk.expect("bulk").result, json!(5000));
        function(&rt, "add", json!({"n": 1})).await.expect("after");
        assert_eq!(rt.app_loads(), 2, "the successor loaded the app");
        function(&rt, "add", json!({"n": 1}))
            .await
            .expect("after again");
        assert_eq!(rt.app_loads(), 2);
        // Nothing was lost with the retired worker (this read of 5,032 anchors is a bulk
        // call too).
        let count = function(&rt, "count", json!({})).await.expect("count");
        assert_eq!(count.result, json!(5032));
    });
}

/// `retire_anchors` is the bound (`[scale.limits] worker_retire_anchors`): a lower one
/// makes a smaller call a bulk call, and 0 keeps every worker however large its calls.
#[test]
fn the_retire_bound_is_configurable_and_zero_never_retires() {
    let dir = TempDir::new("retire-bound");
    dir.write(
        "main.svc",
        r#"
node Item { has n: int = 0; }
def add(n: int) -> int { for i in range(n) { root ++> Item(n=i); } return n; }
"#,
    );
    in_system(async {
        let mut config = dir.config(1);
        config.retire_anchors = 50;
        let (rt, _) = Runtime::start(config).expect("start");
        function(&rt, "add", json!({"n": 20})).await.expect("small");
        assert_eq!(rt.app_loads(), 1);
        function(&rt, "add", json!({"n": 60})).await.expect("bulk");
        function(&rt, "add", json!({"n": 1})).await.expect("after");
        assert_eq!(rt.app_loads(), 2, "60 anchors are past a bound of 50");
    });
    let dir = TempDir::new("retire-never");
    dir.write(
        "main.svc",
        r#"
node Item { has n: int = 0; }
def add(n: int) -> int { for i in range(n) { root ++> Item(n=i); } return n; }
"#,
    );
    in_system(async {
        let mut config = dir.config(1);
        config.retire_anchors = 0;
        let (rt, _) = Runtime::start(config).expect("start");
        function(&rt, "add", json!({"n": 5000}))
            .await
            .expect("bulk");
        function(&rt, "add", json!({"n": 1})).await.expect("after");
        assert_eq!(rt.app_loads(), 1, "0 never retires a worker");
    });
}

#[test]
fn a_panicking_call_does_not_stop_the_worker() {
    let dir = TempDir::new("panic");
    dir.write("main.svc", APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(1)).expect("start");
        let e = function(&rt, PANIC_PROBE, json!({}))
            .await
            .expect_err("panic");
        assert_eq!(e, CallError::Host("internal error".into()));
        let out = function(&rt, "add", json!({"a": 1, "b": 1}))
            .await
            .expect("still serving");
        assert_eq!(out.result, json!(2));
        assert_eq!(rt.in_flight(), 0);
    });
}

const RUN_APP: &str = r#"
node Note { has text: str = ""; }

def seed() -> str { n = Note(text="old"); root ++> n; return jid(n); }
def rewrite(text: str) -> int { for n in [root -->] { n.text = text; } return 1; }
def spin() -> int { i = 0; while True { i += 1; } return i; }
def slow_write(spins: int) -> int {
    i = 0;
    while i < spins { i += 1; }
    root ++> Note(text="slow");
    return len([root -->]);
}
def late_read(spins: int) -> str {
    notes = [root -->];
    i = 0;
    while i < spins { i += 1; }
    return notes[0].text;
}
def early_read(spins: int) -> str {
    notes = [root -->];
    text = notes[0].text;
    i = 0;
    while i < spins { i += 1; }
    return text;
}
"#;

/// Wait (up to 10 s) until `n` run actors are alive.
async fn until_live(rt: &Runtime, n: usize) {
    for _ in 0..1000 {
        if rt.live_runs() == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("expected {n} live runs, have {}", rt.live_runs());
}

#[test]
fn a_run_actor_stops_on_its_cancel_message_and_unregisters() {
    let dir = TempDir::new("cancel");
    dir.write("main.svc", RUN_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        assert_eq!(rt.live_runs(), 0);
        let (addr, run) = rt.start_run(request(EndpointKind::Function, "spin", json!({})));
        let id = addr.id();
        let control = async {
            until_live(&rt, 1).await;
            assert!(rt.send(id, RunMsg::Cancel));
        };
        let (result, ()) = tokio::join!(run, control);
        assert_eq!(result, Err(CallError::Cancelled));
        assert_eq!(rt.live_runs(), 0);
        assert!(
            !rt.send(id, RunMsg::Cancel),
            "a finished run is unregistered"
        );
        // The worker keeps serving.
        assert!(function(&rt, "seed", json!({})).await.is_ok());
    });
}

/// A restart of the store tier revokes the workers' connections: a call running on one
/// commits nothing and gets the retryable `Unavailable`; the next call re-opens and lands.
#[test]
fn a_store_restart_revokes_connections_in_use() {
    let dir = TempDir::new("restart");
    dir.write("main.svc", RUN_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(1)).expect("start");
        let run = function(&rt, "slow_write", json!({"spins": 300_000}));
        let control = async {
            until_live(&rt, 1).await;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            rt.restart_store("test").await.expect("restart");
        };
        let (result, ()) = tokio::join!(run, control);
        assert!(
            matches!(result, Err(CallError::Unavailable(_))),
            "{result:?}"
        );
        let health = rt.store_health().await.expect("healthy after the restart");
        assert_eq!(health.restarts, 1);
        let out = function(&rt, "slow_write", json!({"spins": 1})).await;
        assert_eq!(out.expect("lands on a fresh connection").result, json!(1));
    });
}

const COUNTER_APP: &str = r#"
node Counter { has n: int = 0; }

def setup() -> int { root ++> Counter(); return 1; }
def total() -> int { return [root -->[?:Counter]][0].n; }
def children() -> int { return len([root -->]); }

walker Bump {
    can go with Root entry { visit [-->]; }
    can bump with Counter entry { here.n += 1; report here.n; }
}

walker Noted {
    has done: list = [];
    can go with Root entry {
        visit [-->];
    }
    can bump with Counter entry {
        here.n += 1;
        on_commit(lambda { self.done.append(1); });
    }
}

walker Once {
    can go with Root entry {
        if len([-->]) == 1 { here ++> Counter(n=100); }
    }
}
"#;

/// The pipelined commit against lost races: every `Bump` reads the counter and writes
/// it back, so concurrent calls conflict. A call whose first attempt's commit set was
/// handed off (its worker already on its next call) and then lost is replayed from
/// scratch; the set it handed off carried the version it read, so no increment is lost
/// and every answer is the value that call stored.
#[test]
fn pipelined_commits_that_lose_a_race_are_replayed_and_nothing_is_lost() {
    let dir = TempDir::new("pipeline");
    dir.write("main.svc", COUNTER_APP);
    let mut config = dir.config(4);
    config.max_replays = 64;
    in_system(async {
        let (rt, _) = Runtime::start(config).expect("start");
        function(&rt, "setup", json!({})).await.expect("setup");
        const WRITERS: usize = 8;
        const EACH: usize = 25;
        let writer = |rt: Runtime| async move {
            let mut seen = Vec::new();
            for _ in 0..EACH {
                let out = walker(&rt, "Bump", json!({})).await.expect("bump");
                seen.push(out.reports[0].as_i64().expect("n"));
            }
            seen
        };
        let all = futures_util::future::join_all((0..WRITERS).map(|_| writer(rt.clone()))).await;
        let mut values: Vec<i64> = all.into_iter().flatten().collect();
        values.sort_unstable();
        let expected: Vec<i64> = (1..=(WRITERS * EACH) as i64).collect();
        assert_eq!(values, expected, "each call answers the value it stored");
        assert_eq!(
            function(&rt, "total", json!({}))
                .await
                .expect("total")
                .result,
            json!(WRITERS * EACH)
        );
        let stats = rt.l1_stats().expect("embedded");
        assert!(stats.handed_off > 0, "{stats:?}");
        assert!(
            rt.replays() > 0,
            "no race was lost: the test proves nothing"
        );
        assert_eq!(rt.in_flight(), 0);
    });
}

/// A call that registers an `on_commit` callback is not pipelined: it commits in place,
/// so its callback runs after the commit succeeded (here it records itself in the
/// walker, which the answer shows), once per successful call, even when calls race
/// and replay.
#[test]
fn calls_with_on_commit_callbacks_commit_in_place_and_run_them_once() {
    let dir = TempDir::new("pipeline-on-commit");
    dir.write("main.svc", COUNTER_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(4)).expect("start");
        function(&rt, "setup", json!({})).await.expect("setup");
        let handed_off = rt.l1_stats().expect("embedded").handed_off;
        let calls = (0..24).map(|_| {
            let rt = rt.clone();
            async move { walker(&rt, "Noted", json!({})).await.expect("noted") }
        });
        for out in futures_util::future::join_all(calls).await {
            assert_eq!(out.result["done"], json!([1]), "{}", out.result);
        }
        assert_eq!(
            function(&rt, "total", json!({}))
                .await
                .expect("total")
                .result,
            json!(24)
        );
        assert_eq!(rt.l1_stats().expect("embedded").handed_off, handed_off);
    });
}

/// A worker's first call pipelines its commit like every later one: the connection it
/// opens for that call is the one that decides (a worker opens its store lazily, so
/// deciding before the open kept every worker's first commit in place).
#[test]
fn a_workers_first_call_pipelines_its_commit() {
    let dir = TempDir::new("pipeline-first");
    dir.write("main.svc", COUNTER_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(1)).expect("start");
        function(&rt, "setup", json!({})).await.expect("setup");
        assert_eq!(rt.l1_stats().expect("embedded").handed_off, 1);
        walker(&rt, "Bump", json!({})).await.expect("bump");
        assert_eq!(rt.l1_stats().expect("embedded").handed_off, 2);
    });
}

/// Check-then-create under the pipelined commit: each `Once` reads root's edge list
/// and adds a child only when there is one; concurrent calls leave exactly one.
#[test]
fn pipelined_check_then_create_leaves_one_child() {
    let dir = TempDir::new("pipeline-once");
    dir.write("main.svc", COUNTER_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(4)).expect("start");
        function(&rt, "setup", json!({})).await.expect("setup");
        let calls = (0..32).map(|_| {
            let rt = rt.clone();
            async move { walker(&rt, "Once", json!({})).await.expect("once") }
        });
        futures_util::future::join_all(calls).await;
        assert_eq!(
            function(&rt, "children", json!({}))
                .await
                .expect("children")
                .result,
            json!(2)
        );
        assert!(rt.l1_stats().expect("embedded").handed_off > 0);
    });
}

/// A run told an anchor is stale reloads it if it has not read its fields yet, and keeps
/// what it has already read.
#[test]
fn a_stale_message_reloads_unread_anchors_only() {
    let dir = TempDir::new("stale");
    dir.write("main.svc", RUN_APP);
    in_system(async {
        let (rt, _) = Runtime::start(dir.config(2)).expect("start");
        let seeded = function(&rt, "seed", json!({})).await.expect("seed").result;
        let id = lang::host::parse_id(seeded.as_str().expect("jid")).expect("an anchor id");
        for (name, expect) in [
            ("late_read", "new-late_read"),
            ("early_read", "new-late_read"),
        ] {
            let run = function(&rt, name, json!({"spins": 400_000}));
            let control = async {
                until_live(&rt, 1).await;
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                let text = format!("new-{name}");
                let changed = function(&rt, "rewrite", json!({"text": text})).await;
                assert!(changed.is_ok(), "{changed:?}");
                assert_eq!(rt.flag_stale(&[id], None), 1, "one live run is told");
            };
            let (result, ()) = tokio::join!(run, control);
            let text = result.expect(name).result;
            // late_read had not read the note: it sees the rewrite. early_read had read
            // it before: it keeps what it read (the previous rewrite).
            assert_eq!(text, json!(expect), "{name}");
        }
    });
}

/// `cargo test --release -p actors -- --ignored --nocapture call_throughput` prints the
/// calls/s of a trivial function through `Runtime::call`.
#[test]
#[ignore = "timing probe; run in release"]
fn call_throughput() {
    const CALLS: usize = 20_000;
    let dir = TempDir::new("bench");
    dir.write("main.svc", APP);
    in_system(async {
        let workers = std::thread::available_parallelism().map_or(2, usize::from);
        let (rt, _) = Runtime::start(dir.config(workers)).expect("start");
        let t = std::time::Instant::now();
        for _ in 0..CALLS / 10 {
            function(&rt, "add", json!({"a": 1, "b": 2}))
                .await
                .expect("add");
        }
        let seq = (CALLS / 10) as f64 / t.elapsed().as_secs_f64();
        for concurrency in [16usize, 64] {
            let t = std::time::Instant::now();
            let lane = |rt: Runtime| async move {
                for _ in 0..CALLS / concurrency {
                    function(&rt, "add", json!({"a": 1, "b": 2}))
                        .await
                        .expect("add");
                }
            };
            let lanes: Vec<_> = (0..concurrency)
                .map(|_| actix::spawn(lane(rt.clone())))
                .collect();
            for l in lanes {
                l.await.expect("lane");
            }
            let rate = CALLS as f64 / t.elapsed().as_secs_f64();
            println!(
                "{workers} workers, {concurrency} concurrent callers: {rate:.0} calls/s \
                 (one caller: {seq:.0} calls/s)"
            );
        }
        // Each call loads the root with its whole edge list, so the rate falls as the
        // root grows: report it per 1,000 children.
        for thousand in 1..=3 {
            let t = std::time::Instant::now();
            for _ in 0..1_000 {
                walker(&rt, "Add", json!({})).await.expect("walker");
            }
            let rate = 1_000.0 / t.elapsed().as_secs_f64();
            println!(
                "walker `here ++> Item()`, one caller, root with up to {thousand}k \
                 children: {rate:.0} calls/s"
            );
        }
    });
}
