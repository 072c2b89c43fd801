//! WebSocket walkers (`/ws/<walker>`) against a real `svc start`, with the hand-written
//! client of `support` (handshake and masked frames over a `TcpStream`): reply and error
//! frames, ping/pong and heartbeat, authentication (4401), the frame limit (4413),
//! broadcast to every session exactly once, clean-up, `--dev` reload, shutdown (1001),
//! and two replicas sharing a real `redis-server`.

use crate::TempDir;
use crate::support::{Frame, Redis, ServerGuard, WsClient, free_port, json_call, wait_until};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

const APP: &str = r#"
node Note { has text: str; }

@restspec(protocol=APIProtocol.WEBSOCKET)
async walker:pub echo {
    has text: str;
    has n: int = 0;

    async can run with Root entry {
        report {"echo": self.text, "n": self.n};
        report "second";
    }
}

@restspec(protocol=APIProtocol.WEBSOCKET)
async walker notes {
    has text: str;

    can run with Root entry {
        here ++> Note(text=self.text);
        report len([-->][?:Note]);
    }
}

@restspec(protocol=APIProtocol.WEBSOCKET, broadcast=True)
async walker:pub chat {
    has text: str;

    can run with Root entry {
        report self.text;
    }
}

@restspec(protocol=APIProtocol.WEBSOCKET, broadcast=True)
async walker news {
    has text: str;

    can run with Root entry {
        report self.text;
    }
}

@restspec(protocol=APIProtocol.WEBSOCKET, broadcast=True)
async walker:pub blast {
    has text: str;
    has times: int = 1;

    can run with Root entry {
        report self.text * self.times;
    }
}

walker:pub plain {
    can run with Root entry { report 1; }
}
"#;

const SECRET: &str = "websocket-tests-secret-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(15);

/// An app directory with `APP` and a `svc.toml` (cheap bcrypt, plus `websocket` keys).
fn app(websocket: &str) -> TempDir {
    let dir = TempDir::new("ws");
    dir.write("main.svc", APP);
    dir.write(
        "svc.toml",
        &format!("[scale.auth]\nbcrypt_cost = 4\n\n[scale.websocket]\n{websocket}\n"),
    );
    dir
}

fn serve(dir: &TempDir) -> ServerGuard {
    ServerGuard::start(dir.path(), &["main.svc"])
}

fn connect(server: &ServerGuard, path: &str) -> WsClient {
    WsClient::connect(server.port, path)
        .unwrap_or_else(|r| panic!("no upgrade for {path}: {} {}", r.status, r.body))
}

/// Register `name` and log in: the session token.
fn token(port: u16, name: &str) -> String {
    crate::support::register_and_login(port, name)
}

fn reports(frame: &Value) -> Value {
    assert_eq!(frame["ok"], json!(true), "{frame}");
    frame["data"]["reports"].clone()
}

fn error_code(frame: &Value) -> String {
    assert_eq!(frame["ok"], json!(false), "{frame}");
    frame["error"]["code"].as_str().expect("a code").to_string()
}

#[test]
fn echo_replies_with_result_and_reports() {
    let dir = app("");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/echo");
    ws.send_json(&json!({"text": "hi", "n": 2}));
    let frame = ws.recv_json();
    let keys: Vec<&str> = frame
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ok", "data"], "{frame}");
    assert_eq!(reports(&frame), json!([{"echo": "hi", "n": 2}, "second"]));
    assert!(frame["data"].get("result").is_some(), "{frame}");
    // The connection carries many messages.
    ws.send_json(&json!({"text": "again"}));
    assert_eq!(
        reports(&ws.recv_json()),
        json!([{"echo": "again", "n": 0}, "second"])
    );
}

#[test]
fn validation_errors_are_error_frames() {
    let dir = app("");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/echo");
    ws.send_json(&json!({"n": "many"}));
    let frame = ws.recv_json();
    assert_eq!(error_code(&frame), "VALIDATION_ERROR");
    assert!(frame["error"]["message"].is_string(), "{frame}");
    ws.send_json(&json!({"text": "still open"}));
    assert_eq!(reports(&ws.recv_json())[0]["echo"], json!("still open"));
}

#[test]
fn bad_frames_get_error_frames_and_the_socket_stays_open() {
    let dir = app("");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/echo");
    ws.send_text("{not json");
    assert_eq!(error_code(&ws.recv_json()), "VALIDATION_ERROR");
    ws.send_text("[1, 2]");
    assert_eq!(error_code(&ws.recv_json()), "VALIDATION_ERROR");
    ws.send_frame(0x2, true, b"\x00\x01");
    assert_eq!(error_code(&ws.recv_json()), "UNSUPPORTED_MEDIA_TYPE");
    ws.send_json(&json!({"text": "fine"}));
    assert_eq!(reports(&ws.recv_json())[0]["echo"], json!("fine"));
}

#[test]
fn unknown_and_plain_walkers_are_404_before_the_upgrade() {
    let dir = app("");
    let server = serve(&dir);
    for path in ["/ws/nope", "/ws/plain"] {
        let Err(resp) = WsClient::connect(server.port, path) else {
            panic!("{path} upgraded");
        };
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(resp.json()["error"]["code"], json!("NOT_FOUND"), "{path}");
    }
    // And a WEBSOCKET walker is not served under /walker/.
    let r = json_call(
        server.port,
        "POST",
        "/walker/echo",
        None,
        &json!({"text": "x"}),
    );
    assert_eq!(r.status, 404, "{}", r.body);
}

#[test]
fn json_and_protocol_ping_pong() {
    let dir = app("");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/echo");
    ws.send_json(&json!({"type": "ping"}));
    assert_eq!(ws.recv_json(), json!({"type": "pong"}));
    ws.send_frame(0x9, true, b"are you there");
    assert_eq!(ws.recv(), Frame::Pong(b"are you there".to_vec()));
}

#[test]
fn server_pings_and_closes_silent_sessions() {
    let dir = app("ping_interval_seconds = 0.2\nidle_timeout_seconds = 1.5");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/echo");
    let mut quiet = connect(&server, "/ws/echo");
    // One client answers every ping for longer than the idle timeout...
    let answering = std::thread::spawn(move || {
        for _ in 0..12 {
            match ws.recv() {
                Frame::Ping(p) => ws.send_frame(0xA, true, &p),
                other => panic!("the answering client got {other:?}"),
            }
        }
        ws
    });
    // ...the other stays silent and is closed.
    let (code, reason) = loop {
        match quiet.recv() {
            Frame::Ping(_) => {}
            Frame::Close(code, reason) => break (code, reason),
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(code, Some(1000), "{reason}");
    assert!(reason.contains("idle"), "{reason}");
    let mut ws = answering.join().expect("the answering client");
    ws.send_json(&json!({"text": "alive"}));
    assert_eq!(reports(&ws.recv_json())[0]["echo"], json!("alive"));
}

#[test]
fn private_walker_without_token_closes_4401() {
    let dir = app("auth_timeout_seconds = 1.0");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/notes");
    ws.send_json(&json!({"text": "a"}));
    assert_eq!(ws.recv_close().0, Some(4401));
    // Silent: closed when the token does not come in time.
    let mut silent = connect(&server, "/ws/notes");
    assert_eq!(silent.recv_close().0, Some(4401));
    // A bad token in the query, on a public walker too.
    for path in ["/ws/notes?token=nonsense", "/ws/echo?token=nonsense"] {
        let mut bad = connect(&server, path);
        assert_eq!(bad.recv_close().0, Some(4401), "{path}");
    }
}

#[test]
fn token_in_the_query_runs_on_the_users_root() {
    let dir = app("");
    let server = serve(&dir);
    let t = token(server.port, "alice");
    let mut ws = connect(&server, &format!("/ws/notes?token={t}"));
    ws.send_json(&json!({"text": "one"}));
    assert_eq!(reports(&ws.recv_json()), json!([1]));
    ws.send_json(&json!({"text": "two"}));
    assert_eq!(reports(&ws.recv_json()), json!([2]));
    // Another user has another root.
    let u = token(server.port, "bob");
    let mut other = connect(&server, &format!("/ws/notes?token={u}"));
    other.send_json(&json!({"text": "one"}));
    assert_eq!(reports(&other.recv_json()), json!([1]));
}

#[test]
fn token_in_the_first_message() {
    let dir = app("");
    let server = serve(&dir);
    let t = token(server.port, "carol");
    let mut ws = connect(&server, "/ws/notes");
    ws.send_json(&json!({"token": t, "text": "one"}));
    assert_eq!(reports(&ws.recv_json()), json!([1]));
    ws.send_json(&json!({"text": "two"}));
    assert_eq!(reports(&ws.recv_json()), json!([2]));
    // A wrong token in the first message closes with 4401.
    let mut bad = connect(&server, "/ws/notes");
    bad.send_json(&json!({"token": "nonsense", "text": "x"}));
    assert_eq!(bad.recv_close().0, Some(4401));
}

#[test]
fn frames_over_64_kib_close_4413() {
    let dir = app("");
    let server = serve(&dir);
    let big = format!(r#"{{"text": "{}"}}"#, "x".repeat(70_000));
    let mut ws = connect(&server, "/ws/echo");
    ws.send_text(&big);
    assert_eq!(ws.recv_close().0, Some(4413));
    // The same message in fragments of 16 KiB.
    let mut ws = connect(&server, "/ws/echo");
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(16 * 1024).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        ws.send_frame(opcode, i + 1 == chunks.len(), chunk);
    }
    assert_eq!(ws.recv_close().0, Some(4413));
    // Just under the limit, fragmented, is one message.
    let ok = format!(r#"{{"text": "{}"}}"#, "y".repeat(60_000));
    let mut ws = connect(&server, "/ws/echo");
    let chunks: Vec<&[u8]> = ok.as_bytes().chunks(20_000).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        ws.send_frame(opcode, i + 1 == chunks.len(), chunk);
    }
    assert_eq!(
        reports(&ws.recv_json())[0]["echo"].as_str().map(str::len),
        Some(60_000)
    );
}

/// Every client's next frame is the reply carrying `text`.
fn all_receive(clients: &mut [WsClient], text: &str) {
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(reports(&c.recv_json()), json!([text]), "client {i}");
    }
}

#[test]
fn broadcast_reaches_every_session_exactly_once() {
    let dir = app("");
    let server = serve(&dir);
    let mut clients: Vec<WsClient> = (0..4).map(|_| connect(&server, "/ws/chat")).collect();
    clients[0].send_json(&json!({"text": "m1"}));
    all_receive(&mut clients, "m1");
    // A duplicate of m1 would come before m2.
    clients[2].send_json(&json!({"text": "m2"}));
    all_receive(&mut clients, "m2");
    // Error frames are not broadcast.
    clients[1].send_json(&json!({"nope": 1}));
    assert_eq!(error_code(&clients[1].recv_json()), "VALIDATION_ERROR");
    clients[3].send_json(&json!({"text": "m3"}));
    all_receive(&mut clients, "m3");
    // A non-broadcast walker answers only its sender.
    let mut echo = connect(&server, "/ws/echo");
    echo.send_json(&json!({"text": "solo"}));
    assert_eq!(reports(&echo.recv_json())[0]["echo"], json!("solo"));
    clients[0].send_json(&json!({"type": "ping"}));
    assert_eq!(clients[0].recv_json(), json!({"type": "pong"}));
}

#[test]
fn private_broadcast_reaches_authenticated_sessions_only() {
    let dir = app("auth_timeout_seconds = 30");
    let server = serve(&dir);
    let a = token(server.port, "dave");
    let c = token(server.port, "erin");
    let by_query = connect(&server, &format!("/ws/news?token={a}"));
    let mut waiting = connect(&server, "/ws/news"); // no token yet
    let mut by_message = connect(&server, "/ws/news");
    by_message.send_json(&json!({"token": c, "text": "hello"}));
    let mut authed = [by_query, by_message];
    all_receive(&mut authed, "hello");
    authed[0].send_json(&json!({"text": "news"}));
    all_receive(&mut authed, "news");
    // The unauthenticated session got neither: its first frame is the 4401 close.
    waiting.send_json(&json!({"text": "let me in"}));
    match waiting.recv() {
        Frame::Close(code, _) => assert_eq!(code, Some(4401)),
        other => panic!("an unauthenticated session received {other:?}"),
    }
}

/// A client that does not read is closed with 1013 while the others go on.
#[test]
fn a_slow_client_is_closed_and_never_stalls_the_others() {
    let dir = app("outbox_capacity = 4");
    let server = serve(&dir);
    let mut slow = connect(&server, "/ws/blast"); // never reads until the end
    let mut fast = connect(&server, "/ws/blast");
    // 60 broadcasts of 1 MB each: far more than the socket buffers, the writer's
    // channel and the outbox can hold for the slow client. (Each frame may take a while
    // on a loaded machine: debug builds, every test in parallel.)
    let chunk = "z".repeat(1000);
    for i in 0..60 {
        fast.send_json(&json!({"text": chunk, "times": 1000}));
        let got = reports(&fast.recv_json_within(Duration::from_secs(60)));
        assert_eq!(
            got[0].as_str().map(str::len),
            Some(1_000_000),
            "broadcast {i}"
        );
    }
    let code = loop {
        match slow
            .recv_within(Duration::from_secs(60))
            .expect("frames, then the close")
        {
            Frame::Text(_) | Frame::Ping(_) => {}
            Frame::Close(code, _) => break code,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(code, Some(1013));
}

#[test]
fn faux_lists_websocket_walkers() {
    let dir = app("");
    let out = crate::svc_in(dir.path(), &["start", "main.svc", "--faux"]);
    let text = crate::stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("WEBSOCKET /ws/chat  (walker chat, public, broadcast)"),
        "{text}"
    );
    assert!(
        text.contains("WEBSOCKET /ws/notes  (walker notes, bearer token required)"),
        "{text}"
    );
}

#[test]
fn disconnected_sessions_are_cleaned_up() {
    let dir = app("max_connections = 2");
    let server = ServerGuard::launch(
        dir.path(),
        &[
            "main.svc",
            "--host",
            "127.0.0.1",
            "--port",
            &free_port().to_string(),
        ],
        &[("SVC_LOG", "info,svc::ws=debug")],
    );
    let mut first = connect(&server, "/ws/chat");
    let second = connect(&server, "/ws/chat");
    let Err(full) = WsClient::connect(server.port, "/ws/chat") else {
        panic!("a third session was admitted");
    };
    assert_eq!(full.status, 503, "{}", full.body);
    // A clean close and a vanished client both free their slot and leave the hub.
    first.send_close(1000);
    assert_eq!(first.recv_close().0, Some(1000));
    drop(second);
    assert!(
        wait_until(WAIT, || server.stderr().contains("members=0")),
        "the hub still has members\n{}",
        server.output()
    );
    let mut a = connect(&server, "/ws/chat");
    let mut b = connect(&server, "/ws/chat");
    a.send_json(&json!({"text": "after"}));
    assert_eq!(reports(&b.recv_json()), json!(["after"]));
    assert_eq!(reports(&a.recv_json()), json!(["after"]));
}

#[test]
fn shutdown_closes_sockets_with_1001() {
    let dir = app("");
    let server = serve(&dir);
    let mut ws = connect(&server, "/ws/chat");
    ws.send_json(&json!({"text": "x"}));
    assert_eq!(reports(&ws.recv_json()), json!(["x"]));
    let started = std::time::Instant::now();
    let status = server.terminate();
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "shutdown waited for the socket"
    );
    assert_eq!(ws.recv_close().0, Some(1001));
}

#[test]
fn dev_reload_keeps_the_socket_and_runs_new_code() {
    let dir = app("");
    let server = ServerGuard::start(dir.path(), &["main.svc", "--dev"]);
    let mut ws = connect(&server, "/ws/echo");
    ws.send_json(&json!({"text": "v1"}));
    assert_eq!(reports(&ws.recv_json())[1], json!("second"));
    dir.write(
        "main.svc",
        &APP.replace(r#"report "second";"#, r#"report "reloaded";"#),
    );
    let reloaded = wait_until(WAIT, || {
        ws.send_json(&json!({"text": "v2"}));
        reports(&ws.recv_json())[1] == json!("reloaded")
    });
    assert!(reloaded, "the open socket never ran the new code");
}

fn replica(dir: &TempDir, cache_url: &str) -> ServerGuard {
    let port = free_port().to_string();
    ServerGuard::launch(
        dir.path(),
        &["main.svc", "--host", "127.0.0.1", "--port", &port],
        &[("CACHE_URL", cache_url), ("JWT_SECRET", SECRET)],
    )
}

fn subscribed(server: &ServerGuard) -> bool {
    server
        .stderr()
        .contains("on, subscribed to svc:ws:broadcast")
}

#[test]
fn two_replicas_share_broadcasts_over_redis() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dir = app("");
    let a = replica(&dir, &redis.url());
    let b = replica(&dir, &redis.url());
    for s in [&a, &b] {
        assert!(
            wait_until(WAIT, || subscribed(s)),
            "no subscription\n{}",
            s.output()
        );
    }
    let mut clients = vec![
        connect(&a, "/ws/chat"),
        connect(&b, "/ws/chat"),
        connect(&b, "/ws/chat"),
    ];
    clients[0].send_json(&json!({"text": "from a"}));
    all_receive(&mut clients, "from a");
    // No duplicates: each client's next frame is the next broadcast.
    clients[1].send_json(&json!({"text": "from b"}));
    all_receive(&mut clients, "from b");
    clients[0].send_json(&json!({"text": "again a"}));
    all_receive(&mut clients, "again a");
    // Private broadcasts cross replicas to authenticated sessions.
    let t = token(a.port, "frank");
    let mut pair = [
        connect(&a, &format!("/ws/news?token={t}")),
        connect(&b, &format!("/ws/news?token={t}")),
    ];
    pair[1].send_json(&json!({"text": "private"}));
    all_receive(&mut pair, "private");
    pair[0].send_json(&json!({"type": "ping"}));
    assert_eq!(pair[0].recv_json(), json!({"type": "pong"}));
}

#[test]
fn unreachable_cache_store_means_local_broadcast_then_reconnects() {
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
        return;
    }
    let port = free_port();
    let dir = app("");
    let server = replica(&dir, &format!("redis://127.0.0.1:{port}/"));
    assert!(
        wait_until(WAIT, || server
            .stderr()
            .contains("WebSocket broadcast across replicas: off")),
        "the reason was not logged\n{}",
        server.output()
    );
    let mut clients = [connect(&server, "/ws/chat"), connect(&server, "/ws/chat")];
    clients[0].send_json(&json!({"text": "local"}));
    all_receive(&mut clients, "local");
    // The cache store comes up: the bridge reconnects by itself (backoff at most 10 s).
    let Some(redis) = Redis::start_on(port) else {
        return;
    };
    let subscriptions = || {
        server
            .stderr()
            .matches("on, subscribed to svc:ws:broadcast")
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(30), || subscriptions() == 1),
        "never connected\n{}",
        server.output()
    );
    // Lost and back again: the subscription is made anew.
    drop(redis);
    assert!(
        wait_until(WAIT, || server.stderr().contains("lost the cache store")),
        "the loss was not logged\n{}",
        server.output()
    );
    let Some(_redis) = Redis::start_on(port) else {
        return;
    };
    assert!(
        wait_until(Duration::from_secs(30), || subscriptions() == 2),
        "never reconnected\n{}",
        server.output()
    );
    clients[1].send_json(&json!({"text": "still local"}));
    all_receive(&mut clients, "still local");
}
