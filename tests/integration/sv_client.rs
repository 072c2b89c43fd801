//! The per-provider client actor behind service-to-service calls, through a real
//! `svc start` consumer: calls share kept-alive connections; a provider that closes
//! them (its own keep-alive timeout, or a scripted stand-in that drops a connection at
//! the worst moments) costs no failed call; a half-sent answer's connection is never
//! reused; a provider killed mid-call gives the spec's error, then the open breaker
//! refuses at once and a probe closes it again; a cancelled calling run stops waiting;
//! the pool's bound turns an excess call into a clear error.

use crate::TempDir;
use crate::support::{ServerGuard, free_port, post_json};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PROVIDER: &str = r#"
import time;

def:pub add(a: int, b: int) -> int {
    return a + b;
}

def:pub slow(s: float) -> int {
    time.sleep(s);
    return 1;
}
"#;

const CONSUMER: &str = r#"
sv import from provider { add, slow }

def:pub total(x: int) -> int {
    return add(a=x, b=1);
}

def:pub wait(s: float) -> int {
    return slow(s);
}

def:pub local() -> int {
    return 7;
}
"#;

/// A consumer app directory: `main.svc`, the provider's source beside it (its stubs
/// are typed from it) and `svc.toml` with `[scale.sv]` lines.
fn consumer_dir(tag: &str, sv: &str) -> TempDir {
    let dir = TempDir::new(tag);
    dir.write("provider.svc", PROVIDER);
    dir.write("main.svc", CONSUMER);
    dir.write("svc.toml", &format!("[scale.sv]\n{sv}"));
    dir
}

/// `svc start main.svc` with the provider at `url`.
fn consumer(dir: &TempDir, url: &str, workers: &str) -> ServerGuard {
    ServerGuard::main_with(dir.path(), workers, &[("SVC_SV_PROVIDER_URL", url)])
}

fn total(port: u16, x: i64) -> Value {
    let r = post_json(port, "/function/total", &json!({"x": x}).to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["result"].clone()
}

/// The message of a call that fails with the usual 500 envelope.
fn failure(port: u16, function: &str, body: &Value) -> String {
    let r = post_json(port, &format!("/function/{function}"), &body.to_string());
    assert_eq!(r.status, 500, "{}", r.body);
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// What the stand-in provider does with one request.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Answer and keep the connection.
    Answer,
    /// Answer, then close without saying so (no `Connection: close`).
    AnswerAndClose,
    /// Read the request and close without a byte of answer.
    Drop,
    /// Promise 100 bytes, send 10, close.
    HalfAnswer,
}

/// A stand-in provider on a real socket: answers `POST /function/add` with the sum of
/// `a` and `b`, acting on each request as `script(connection number, request number on
/// that connection)` says. It counts connections and the requests it answered.
struct Stub {
    port: u16,
    connections: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Stub {
    fn start(script: fn(usize, usize) -> Act) -> Stub {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let answered = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (c, a, p) = (
            Arc::clone(&connections),
            Arc::clone(&answered),
            Arc::clone(&paths),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let n = c.fetch_add(1, Ordering::SeqCst);
                let (a, p) = (Arc::clone(&a), Arc::clone(&p));
                std::thread::spawn(move || serve(stream, n, script, &a, &p));
            }
        });
        Stub {
            port,
            connections,
            answered,
            paths,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve(
    stream: TcpStream,
    connection: usize,
    script: fn(usize, usize) -> Act,
    answered: &AtomicUsize,
    paths: &Mutex<Vec<String>>,
) {
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    for index in 0.. {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let args: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
        let envelope = json!({"ok": true, "type": "response",
                              "data": {"result": sum, "reports": []}, "error": null})
        .to_string();
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{envelope}",
            envelope.len()
        );
        match script(connection, index) {
            Act::Answer | Act::AnswerAndClose => {
                if writer.write_all(answer.as_bytes()).is_err() {
                    return;
                }
                answered.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut p) = paths.lock() {
                    p.push(path);
                }
                if matches!(script(connection, index), Act::AnswerAndClose) {
                    return;
                }
            }
            Act::Drop => return,
            Act::HalfAnswer => {
                let _ = writer.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ok\": tru",
                );
                return;
            }
        }
    }
}

/// The stub's count once it reaches `expected` (or after a second): the stub counts an
/// answer after writing it, so the caller may read the reply before the count moves.
/// A count past `expected` (a request answered twice) is returned as it is.
fn settled(count: &AtomicUsize, expected: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(1);
    while count.load(Ordering::SeqCst) < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    count.load(Ordering::SeqCst)
}

/// Sequential calls travel on one kept-alive connection (the fresh-connection client
/// opened one per call).
#[test]
fn calls_share_a_kept_alive_connection() {
    let stub = Stub::start(|_, _| Act::Answer);
    let dir = consumer_dir("svc-pool", "");
    let server = consumer(&dir, &stub.url(), "1");
    for x in 0..10 {
        assert_eq!(total(server.port, x), json!(x + 1));
    }
    assert_eq!(stub.connections.load(Ordering::SeqCst), 1);
    assert_eq!(settled(&stub.answered, 10), 10);
    let paths = stub.paths.lock().map(|p| p.clone()).unwrap_or_default();
    assert!(paths.iter().all(|p| p == "/function/add"), "{paths:?}");
}

/// A provider that closes connections behind the pool's back: after every answer, or
/// (the keep-alive race) on reading the second request of a connection, without
/// answering it. No call fails, though a call gets one attempt (no retries to hide
/// behind), and no request is answered twice.
#[test]
fn a_provider_closing_connections_costs_no_call() {
    for script in [
        (|_, _| Act::AnswerAndClose) as fn(usize, usize) -> Act,
        |_, i| if i == 0 { Act::Answer } else { Act::Drop },
    ] {
        let stub = Stub::start(script);
        let dir = consumer_dir("svc-pool-close", "max_attempts = 1\n");
        let server = consumer(&dir, &stub.url(), "2");
        for x in 0..12 {
            assert_eq!(total(server.port, x), json!(x + 1));
        }
        assert_eq!(settled(&stub.answered, 12), 12);
    }
}

/// A connection whose answer broke off half-way is dropped: the call is retried on a
/// new connection (a transport failure), and the broken one never carries another.
#[test]
fn a_half_read_connection_is_never_reused() {
    let stub = Stub::start(|c, _| if c == 0 { Act::HalfAnswer } else { Act::Answer });
    let dir = consumer_dir("svc-pool-half", "max_attempts = 2\n");
    let server = consumer(&dir, &stub.url(), "1");
    assert_eq!(total(server.port, 1), json!(2));
    assert_eq!(total(server.port, 2), json!(3));
    assert_eq!(stub.connections.load(Ordering::SeqCst), 2);
}

/// Two real `svc start` processes: the provider's keep-alive timeout (5 s) closes the
/// pooled connection while the consumer keeps it longer; the next call recovers on a
/// new connection, within its single attempt.
#[test]
fn a_real_provider_closing_idle_connections_costs_no_call() {
    let dir = consumer_dir(
        "svc-pool-real",
        "pool_idle_seconds = 60\nmax_attempts = 1\n",
    );
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    let url = format!("http://127.0.0.1:{}", provider.port);
    let server = consumer(&dir, &url, "2");
    assert_eq!(total(server.port, 1), json!(2));
    assert_eq!(total(server.port, 2), json!(3));
    std::thread::sleep(Duration::from_millis(6500));
    for x in 0..4 {
        assert_eq!(total(server.port, x), json!(x + 1));
    }
}

/// A provider killed while a call runs: the call fails with the spec's message; the
/// next failure opens the breaker, which then refuses at once; a provider back on the
/// same port answers the probe after `breaker_open_seconds` and calls flow again.
#[test]
fn a_provider_killed_mid_call_opens_the_breaker() {
    let dir = consumer_dir(
        "svc-breaker",
        "max_attempts = 2\nbreaker_failures = 2\nbreaker_open_seconds = 2.0\n",
    );
    let provider_port = free_port();
    let provider = ServerGuard::start_on(dir.path(), &["provider.svc"], provider_port);
    let url = format!("http://127.0.0.1:{}", provider.port);
    let server = consumer(&dir, &url, "2");
    assert_eq!(total(server.port, 1), json!(2));
    let port = server.port;
    let in_flight = std::thread::spawn(move || failure(port, "wait", &json!({"s": 5.0})));
    std::thread::sleep(Duration::from_millis(700));
    drop(provider); // SIGKILL, mid-call
    let msg = in_flight.join().expect("the call thread");
    assert!(
        msg.contains("sv-to-sv RPC 'provider.slow' failed: cannot connect to http://127.0.0.1:"),
        "{msg}"
    );
    let msg = failure(port, "total", &json!({"x": 1}));
    assert!(
        msg.contains("sv-to-sv RPC 'provider.add' failed: cannot connect"),
        "{msg}"
    );
    let started = Instant::now();
    let msg = failure(port, "total", &json!({"x": 1}));
    assert!(
        msg.contains(
            "sv-to-sv RPC 'provider.add' failed: circuit open after 2 consecutive failures"
        ),
        "{msg}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once"
    );
    let _back = ServerGuard::start_on(dir.path(), &["provider.svc"], provider_port);
    assert!(
        crate::support::wait_until(Duration::from_secs(10), || {
            post_json(port, "/function/total", r#"{"x": 4}"#).status == 200
        }),
        "the probe never closed the breaker"
    );
    assert_eq!(total(port, 5), json!(6));
}

/// A calling run cancelled while its call waits on a slow provider (its client went
/// away) stops waiting: the consumer's only worker is free for the next call long
/// before the provider would have answered.
#[test]
fn a_cancelled_run_stops_waiting_for_its_provider() {
    let dir = consumer_dir("svc-cancel", "");
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    let url = format!("http://127.0.0.1:{}", provider.port);
    let server = consumer(&dir, &url, "1");
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    let body = r#"{"s": 20}"#;
    write!(
        stream,
        "POST /function/wait HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    std::thread::sleep(Duration::from_millis(800));
    drop(stream);
    let started = Instant::now();
    let r = post_json(server.port, "/function/local", "{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the worker waited {:?} for a cancelled call",
        started.elapsed()
    );
}

/// With one connection per provider and room for one call waiting for it, a third
/// concurrent call is refused at once with a clear message instead of queueing.
#[test]
fn the_pool_bound_refuses_an_excess_call_clearly() {
    let dir = consumer_dir(
        "svc-pool-bound",
        "pool_max_connections = 1\nmailbox_capacity = 1\n",
    );
    let provider = ServerGuard::start(dir.path(), &["provider.svc"]);
    let url = format!("http://127.0.0.1:{}", provider.port);
    let server = consumer(&dir, &url, "3");
    let port = server.port;
    // Spaced, so each is in the actor's queue before the next arrives.
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let call =
                std::thread::spawn(move || post_json(port, "/function/wait", r#"{"s": 1.5}"#));
            std::thread::sleep(Duration::from_millis(300));
            call
        })
        .collect();
    let answers: Vec<_> = calls
        .into_iter()
        .map(|c| c.join().expect("call thread"))
        .collect();
    let ok = answers.iter().filter(|r| r.status == 200).count();
    let busy: Vec<_> = answers
        .iter()
        .filter(|r| r.status == 500)
        .map(|r| {
            r.json()["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!((ok, busy.len()), (2, 1), "{answers:?}");
    assert!(
        busy[0].contains(
            "sv-to-sv RPC 'provider.slow' failed: the client of provider at http://127.0.0.1:"
        ) && busy[0].contains("is busy"),
        "{busy:?}"
    );
}
