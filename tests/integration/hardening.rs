//! Hostile use of a served app (issue 7): access through stored references, `save`
//! and unlinking without rights, deep and shared structures, cyclic values, calls that
//! commit twice, spawns inside functions and node handles kept in module globals. Every test checks the server is still alive afterwards.

use crate::TempDir;
use crate::support::{Response, ServerGuard, get, json_call};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const APP: &str = r#"
node Secret {
    has text: str;
}

node Board {
    has title: str = "board";
    has owner: Secret | None = None;
    has tags: list[str] = [];
}

edge Link {
    has note: str = "";
}

node Cell {
    has n: int = 0;
    has a: Cell | None = None;
    has b: Cell | None = None;
}

node Counter {
    has n: int = 0;
}

node Log {
    has what: str = "";
}

node Note {
    has text: str = "";
}

obj Parent {
    has name: str = "p";
    has child: any = None;
}

obj Child {
    has parent: any = None;
}

node Holder {
    has thing: any = None;
}

glob pinned = root;

"""A private secret reachable from a public board on the shared root."""
walker make_board {
    can go with Root entry {
        s = Secret(text="top secret");
        here ++> s;
        b = Board(owner=s);
        root.shared ++> b;
        b +>: Link(note="private link") :+> s;
        perm_grant(b, "READ");
        report jid(b);
        report jid(s);
    }
}

walker share_secret {
    has secret_id: str;
    has user_root: str;
    has allow: bool = True;

    can go with Root entry {
        s = jobj(self.secret_id);
        if self.allow {
            grant(s, self.user_root);
        } else {
            revoke(s, self.user_root);
        }
    }
}

walker read_board {
    has board_id: str;

    can go with Root entry {
        report jobj(self.board_id);
    }
}

walker read_owner_text {
    has board_id: str;

    can go with Root entry {
        report jobj(self.board_id).owner.text;
    }
}

walker board_links {
    has board_id: str;

    can go with Root entry {
        b = jobj(self.board_id);
        report [edge b ->:Link:->];
    }
}

walker tag_board {
    has board_id: str;

    can go with Root entry {
        b = jobj(self.board_id);
        b.tags.append("vandal");
        save(b);
    }
}

walker unlink_board {
    has board_id: str;

    can go with Root entry {
        b = jobj(self.board_id);
        root.shared del --> b;
    }
}

walker:pub board_tags {
    has board_id: str;

    can go with Root entry {
        report jobj(self.board_id).tags;
    }
}

"""Cells that each refer to the next two: a response that expands every path grows
like Fibonacci."""
walker:pub make_cells {
    has count: int = 40;

    can go with Root entry {
        cells = [Cell(n=i) for i in range(self.count)];
        for i in range(self.count) {
            root ++> cells[i];
            if i + 1 < self.count { cells[i].a = cells[i + 1]; }
            if i + 2 < self.count { cells[i].b = cells[i + 2]; }
        }
        cells[self.count - 1].a = cells[0];
        report jid(cells[0]);
    }
}

walker:pub show_cell {
    has cell_id: str;
    has printed: bool = False;

    can go with Root entry {
        c = jobj(self.cell_id);
        if self.printed {
            report len(str(c));
        } else {
            report c;
        }
    }
}

"""A chain of nodes linked by a field, each reachable by an edge."""
walker:pub make_chain {
    has length: int = 1000;

    can go with Root entry {
        head = Cell(n=0);
        root ++> head;
        prev = head;
        for i in range(1, self.length) {
            c = Cell(n=i, a=prev);
            prev ++> c;
            prev = c;
        }
        root ++> prev;
        report jid(prev);
    }
}

walker:pub chain_top {
    has cell_id: str;

    can go with Root entry {
        c = jobj(self.cell_id);
        report c.n;
        report c.a.n;
    }
}

def:pub store_cycle() -> str {
    p = Parent();
    c = Child(parent=p);
    p.child = c;
    root ++> Holder(thing=p);
    return "stored";
}

def:pub make_counter() -> str {
    c = Counter(n=0);
    root ++> c;
    return jid(c);
}

def:pub counter_value(counter_id: str) -> int {
    return jobj(counter_id).n;
}

def:pub bump(counter_id: str, by: int = 1) -> int {
    c = jobj(counter_id);
    c.n = c.n + by;
    return c.n;
}

"""Reads the counter, commits a log entry, works a while, then writes what it read."""
def:pub slow_bump(counter_id: str, spin: int = 1500000) -> int {
    c = jobj(counter_id);
    seen = c.n;
    root ++> Log(what="slow_bump started");
    commit();
    x = 0;
    for i in range(spin) { x = x + 1; }
    c.n = seen + 10;
    return c.n;
}

walker add_note {
    has text: str = "spawned";

    can go with Root entry {
        here ++> Note(text=self.text);
    }
}

def:pub spawn_then_fail() -> int {
    root spawn add_note(text="must not persist");
    return 1 // 0;
}

def:pub log_count() -> int {
    return len([root --> [?:Log]]);
}

def:pub note_count() -> int {
    return len([root --> [?:Note]]);
}

def:pub spin(n: int = 3000000) -> int {
    x = 0;
    for i in range(n) { x = x + 1; }
    return x;
}

def:pub big(n: int = 5000) -> str {
    return "x" * n;
}

def:pub nested(n: int) -> list {
    x: any = 1;
    for i in range(n) {
        x = [x];
    }
    return x;
}

def:pub pinned_id() -> str {
    return jid(pinned);
}

def:pub shared_id() -> str {
    return jid(root.shared);
}
"#;

/// A server on a fresh copy of `APP`, with cheap bcrypt for the logins.
fn start(tag: &str, extra_toml: &str) -> (TempDir, ServerGuard) {
    let dir = TempDir::new(tag);
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.auth]\nbcrypt_cost = 4\n{extra_toml}"),
    );
    let server = ServerGuard::start(dir.path(), &["main.svc"]);
    (dir, server)
}

fn call(port: u16, path: &str, token: Option<&str>, body: Value) -> Response {
    json_call(port, "POST", path, token, &body)
}

/// The envelope's `data` after asserting the status.
fn data(resp: &Response, status: u16) -> Value {
    assert_eq!(resp.status, status, "{}", resp.body);
    resp.json()["data"].clone()
}

fn reports(resp: &Response) -> Vec<Value> {
    data(resp, 200)["reports"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn result(resp: &Response) -> Value {
    data(resp, 200)["result"].clone()
}

/// `(token, root_id)` of a new user.
fn user(port: u16, name: &str) -> (String, String) {
    let reg = call(
        port,
        "/user/register",
        None,
        json!({"identities": [{"type": "username", "value": name}],
               "credential": {"type": "password", "password": "pw-123456"}}),
    );
    assert_eq!(reg.status, 201, "{}", reg.body);
    let login = call(
        port,
        "/user/login",
        None,
        json!({"identity": {"type": "username", "value": name},
               "credential": {"type": "password", "password": "pw-123456"}}),
    );
    let d = data(&login, 200);
    (
        d["token"].as_str().unwrap_or_default().to_string(),
        d["root_id"].as_str().unwrap_or_default().to_string(),
    )
}

fn assert_alive(server: &ServerGuard) {
    assert_eq!(
        get(server.port, "/healthz").status,
        200,
        "{}",
        server.output()
    );
}

#[test]
fn stored_references_saves_and_unlinks_check_access() {
    let (_dir, server) = start("hard-access", "");
    let port = server.port;
    let (alice, _) = user(port, "alice");
    let (bob, bob_root) = user(port, "bob");
    let made = reports(&call(port, "/walker/make_board", Some(&alice), json!({})));
    let (board, secret) = (made[0].as_str().unwrap_or_default(), made[1].clone());
    // Run a walker whose one field is the board's id.
    let on_board = |walker: &str, token: Option<&str>| {
        call(
            port,
            &format!("/walker/{walker}"),
            token,
            json!({"board_id": board}),
        )
    };

    // Bob reads the public board; the private secret it points at is a stub.
    let seen = reports(&on_board("read_board", Some(&bob)));
    let owner = &seen[0]["owner"];
    assert_eq!(owner["_svc_restricted"], json!(true), "{owner}");
    assert_eq!(owner["_svc_id"], secret, "{owner}");
    assert!(owner.get("text").is_none(), "{owner}");
    // Reading through the reference is refused.
    let r = on_board("read_owner_text", Some(&bob));
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("PermissionError"), "{}", r.body);
    // The edge to the private secret is not returned either.
    let links = reports(&on_board("board_links", Some(&bob)));
    assert_eq!(links[0], json!([]), "{links:?}");

    // Granted, Bob reads it; revoked, at once no longer.
    let grant = json!({"secret_id": secret, "user_root": bob_root});
    call(port, "/walker/share_secret", Some(&alice), grant.clone());
    let text = reports(&on_board("read_owner_text", Some(&bob)));
    assert_eq!(text, vec![json!("top secret")]);
    let mut revoke = grant;
    revoke["allow"] = json!(false);
    call(port, "/walker/share_secret", Some(&alice), revoke);
    let r = on_board("read_owner_text", Some(&bob));
    assert_eq!(r.status, 500, "{}", r.body);

    // save() after an in-place change needs WRITE; nothing is stored.
    let r = on_board("tag_board", Some(&bob));
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("PermissionError"), "{}", r.body);
    let tags = reports(&on_board("board_tags", None));
    assert_eq!(tags, vec![json!([])]);

    // Unlinking needs CONNECT on both ends: Bob only reads the board.
    let r = on_board("unlink_board", Some(&bob));
    assert_eq!(r.status, 500, "{}", r.body);
    let still = reports(&on_board("read_board", Some(&alice)));
    assert_eq!(still[0]["_svc_id"], json!(board));
    assert_alive(&server);
}

#[test]
fn shared_and_cyclic_structures_stay_small_and_never_crash() {
    let (_dir, server) = start("hard-shapes", "");
    let port = server.port;
    let first = reports(&call(
        port,
        "/walker/make_cells",
        None,
        json!({"count": 40}),
    ));
    let cell = first[0].clone();
    // Each cell is expanded once; repeats and the cycle are references.
    let r = call(port, "/walker/show_cell", None, json!({"cell_id": cell}));
    assert!(r.body.len() < 100_000, "{} bytes", r.body.len());
    assert!(r.body.contains("\"_svc_ref\":true"), "{}", r.body);
    // Printing bounds shared structure too (a MemoryError, or a bounded text).
    let r = call(
        port,
        "/walker/show_cell",
        None,
        json!({"cell_id": cell, "printed": true}),
    );
    assert!(
        r.status == 200 || r.body.contains("MemoryError"),
        "{}",
        r.body
    );
    // An object that refers back to its parent cannot be stored: a clear error.
    let r = call(port, "/function/store_cycle", None, json!({}));
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("ValueError"), "{}", r.body);
    assert_alive(&server);
}

#[test]
fn a_long_chain_of_references_loads_one_hop_at_a_time() {
    let (_dir, server) = start("hard-chain", "");
    let port = server.port;
    let top = reports(&call(
        port,
        "/walker/make_chain",
        None,
        json!({"length": 3000}),
    ));
    let got = reports(&call(
        port,
        "/walker/chain_top",
        None,
        json!({"cell_id": top[0]}),
    ));
    assert_eq!(got, vec![json!(2999), json!(2998)]);
    assert_alive(&server);
}

#[test]
fn a_call_that_commits_twice_is_never_silently_overwritten() {
    let (_dir, server) = start("hard-commit", "");
    let port = server.port;
    let counter = result(&call(port, "/function/make_counter", None, json!({})));
    let slow = {
        let counter = counter.clone();
        std::thread::spawn(move || {
            call(
                port,
                "/function/slow_bump",
                None,
                json!({"counter_id": counter}),
            )
        })
    };
    // Wait until the slow call has made its first commit, then update concurrently.
    let deadline = Instant::now() + Duration::from_secs(20);
    while result(&call(port, "/function/log_count", None, json!({}))) != json!(1) {
        assert!(Instant::now() < deadline, "{}", server.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    let bumped = result(&call(
        port,
        "/function/bump",
        None,
        json!({"counter_id": counter}),
    ));
    assert_eq!(bumped, json!(1));
    let slow = slow.join().expect("slow call");
    // The slow call read n=0 before the bump: it must not overwrite it with 10.
    assert_eq!(slow.status, 409, "{}", slow.body);
    assert_eq!(slow.json()["error"]["code"], json!("CONFLICT"));
    let n = result(&call(
        port,
        "/function/counter_value",
        None,
        json!({"counter_id": counter}),
    ));
    assert_eq!(n, json!(1));
    assert_alive(&server);
}

#[test]
fn a_spawn_inside_a_failing_function_commits_nothing() {
    let (_dir, server) = start("hard-spawn", "");
    let port = server.port;
    let r = call(port, "/function/spawn_then_fail", None, json!({}));
    assert_eq!(r.status, 500, "{}", r.body);
    let n = result(&call(port, "/function/note_count", None, json!({})));
    assert_eq!(n, json!(0));
    assert_alive(&server);
}

#[test]
fn a_node_in_a_module_global_is_the_same_node_in_every_request() {
    let (_dir, server) = start("hard-glob", "");
    let port = server.port;
    let shared = result(&call(port, "/function/shared_id", None, json!({})));
    for _ in 0..4 {
        let pinned = call(port, "/function/pinned_id", None, json!({}));
        assert_eq!(result(&pinned), shared);
    }
    assert_alive(&server);
}

#[test]
fn the_run_queue_and_the_response_size_are_bounded() {
    let (_dir, server) = start(
        "hard-queue",
        "[scale.limits]\nrun_queue_capacity = 1\nmax_response_bytes = 2000\n",
    );
    let port = server.port;
    let r = call(port, "/function/big", None, json!({"n": 5000}));
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], json!("RESPONSE_TOO_LARGE"));
    assert_eq!(
        result(&call(port, "/function/big", None, json!({"n": 10}))),
        json!("xxxxxxxxxx")
    );
    // Two workers busy and one call queued: a fourth concurrent call is refused at once.
    let calls: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || call(port, "/function/spin", None, json!({"n": 2000000})))
        })
        .collect();
    let answers: Vec<Response> = calls
        .into_iter()
        .map(|c| c.join().expect("spin call"))
        .collect();
    let refused: Vec<&Response> = answers.iter().filter(|r| r.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in &refused {
        assert_eq!(r.json()["error"]["code"], json!("SERVICE_UNAVAILABLE"));
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 503));
    assert_alive(&server);
}

/// The wire form's depth bound holds for the innermost scalar too: a value 100 levels
/// down is sent, one 101 levels down is the app's error.
#[test]
fn a_result_nested_past_the_wire_depth_is_refused_down_to_its_scalar() {
    let (_dir, server) = start("hard-deep", "");
    let port = server.port;
    let mut expect = json!(1);
    for _ in 0..100 {
        expect = json!([expect]);
    }
    assert_eq!(
        result(&call(port, "/function/nested", None, json!({"n": 100}))),
        expect
    );
    let r = call(port, "/function/nested", None, json!({"n": 101}));
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(
        r.json()["error"]["message"],
        json!("ValueError: value nested more than 100 levels deep cannot be sent")
    );
    assert_alive(&server);
}

/// A client that hangs up while its call runs cancels the run at its next check: with
/// both run workers spinning for clients that went away, a third call is answered at
/// once instead of after the spins (which would outlast the 10 s read timeout below).
#[test]
fn a_client_that_hangs_up_cancels_its_running_call() {
    use std::io::{Read as _, Write as _};
    let (_dir, server) = start("hangup", "[scale.limits]\ncall_timeout_seconds = 300\n");
    let port = server.port;
    let body = r#"{"n": 2000000000}"#;
    for _ in 0..2 {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let head = format!(
            "POST /function/spin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("send");
        std::thread::sleep(Duration::from_millis(200));
        drop(stream);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .stderr()
        .matches("call cancelled: the client went away")
        .count()
        < 2
    {
        assert!(
            Instant::now() < deadline,
            "no cancellation logged\n{}",
            server.output()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let small = r#"{"n": 10}"#;
    let head = format!(
        "POST /function/spin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{small}",
        small.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("answered while the abandoned spins would still run");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""result":10"#), "{answer}");
    assert_alive(&server);
}

/// Watching for hang-ups costs no extra descriptor: 40 open keep-alive connections hold
/// about 40 descriptors in the server, not 80.
#[test]
fn open_connections_cost_one_descriptor_each() {
    use std::io::{Read as _, Write as _};
    let (_dir, server) = start("fds", "");
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = fds();
    let body = r#"{"n": 1}"#;
    let request = format!(
        "POST /function/spin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut streams = Vec::new();
    for _ in 0..40 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(request.as_bytes()).expect("send");
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).expect("an answer");
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        );
        streams.push(s);
    }
    let during = fds();
    assert!(
        during < before + 60,
        "40 keep-alive connections hold {} descriptors",
        during - before
    );
    drop(streams);
    assert_alive(&server);
}
