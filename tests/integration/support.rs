//! Helpers for tests that talk to a running `svc start`: a `ServerGuard` that starts the
//! real binary and kills it on drop, and a tiny HTTP/1.1 client over `TcpStream`
//! (`Connection: close`, so a response ends at EOF).

use crate::svc;
use serde_json::Value;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The first header of this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// Send one request to `127.0.0.1:port`; `headers` are extra headers.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to svc");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("set timeout");
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    // The server may answer (413) and close before reading everything.
    let _ = stream.write_all(&bytes);
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut raw = Vec::new();
    let _ = reader.read_to_end(&mut raw);
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(&raw) } else { raw };
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&raw[..end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or(0);
        if size == 0 || raw.len() < end + 2 + size {
            return out;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
}

pub fn get(port: u16, path: &str) -> Response {
    request(port, "GET", path, &[], None)
}

/// POST a JSON body.
pub fn post_json(port: u16, path: &str, body: &str) -> Response {
    request(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    )
}

/// Send a JSON body with `method`, with `Authorization: Bearer <token>` when given.
pub fn json_call(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    request(
        port,
        method,
        path,
        &headers,
        Some(body.to_string().as_bytes()),
    )
}

/// A running `svc start`, killed on drop. Its stdout and stderr are collected.
pub struct ServerGuard {
    child: Child,
    pub port: u16,
    /// The bind address of the startup line.
    pub host: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

/// A port that was free a moment ago (the server falls back if it is taken by then, and
/// the guard reads the real port from the startup line).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl ServerGuard {
    /// `svc start <args> --host 127.0.0.1 --port <free>` in `dir`; waits for /healthz.
    pub fn start(dir: &Path, args: &[&str]) -> ServerGuard {
        ServerGuard::start_on(dir, args, free_port())
    }

    pub fn start_on(dir: &Path, args: &[&str], port: u16) -> ServerGuard {
        let port_text = port.to_string();
        let mut all = args.to_vec();
        all.extend([
            "--host",
            "127.0.0.1",
            "--port",
            &port_text,
            "--workers",
            "2",
        ]);
        ServerGuard::launch(dir, &all, &[])
    }

    /// `svc start main.svc --host 127.0.0.1 --port <free> --workers 2` in `dir` with extra
    /// environment variables (one replica of a multi-process test); waits for /healthz.
    pub fn replica(dir: &Path, env: &[(&str, &str)]) -> ServerGuard {
        ServerGuard::main_with(dir, "2", env)
    }

    /// `svc start main.svc --host 127.0.0.1 --port <free> --workers <workers>` in `dir`
    /// with extra environment variables; waits for /healthz.
    pub fn main_with(dir: &Path, workers: &str, env: &[(&str, &str)]) -> ServerGuard {
        let port = free_port().to_string();
        let args = [
            "main.svc",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--workers",
            workers,
        ];
        ServerGuard::launch(dir, &args, env)
    }

    /// `svc start <args>` in `dir` with extra environment variables and nothing added
    /// (no `--host`, `--port`); waits for /healthz on the loopback address.
    pub fn launch(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> ServerGuard {
        let mut child = svc()
            .current_dir(dir)
            .arg("start")
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn svc start");
        let stdout = collect(child.stdout.take());
        let stderr = collect(child.stderr.take());
        let mut guard = ServerGuard {
            child,
            port: 0,
            host: String::new(),
            stdout,
            stderr,
        };
        (guard.host, guard.port) = guard.wait_for_address();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if TcpStream::connect(("127.0.0.1", guard.port)).is_ok()
                && get(guard.port, "/healthz").status == 200
            {
                return guard;
            }
            assert!(
                Instant::now() < deadline,
                "svc never became healthy\n{}",
                guard.output()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The host and port from `svc: serving ... at http://HOST:PORT ...`.
    fn wait_for_address(&mut self) -> (String, u16) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = self.stdout();
            if let Some(rest) = text.split(" at http://").nth(1)
                && let Some((address, _)) = rest.split_once(' ')
                && let Some((host, port)) = address.rsplit_once(':')
                && let Ok(port) = port.parse()
            {
                return (host.to_string(), port);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("svc start exited early ({status})\n{}", self.output());
            }
            assert!(
                Instant::now() < deadline,
                "no startup line\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn output(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout(), self.stderr())
    }

    /// Send SIGTERM and wait (up to 15 s) for the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "svc ignored SIGTERM\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drain a child pipe into a shared string on a thread.
fn collect(pipe: Option<impl std::io::Read + Send + 'static>) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    if let Some(mut pipe) = pipe {
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
    }
    out
}

/// One WebSocket frame as the test client sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// The close code (none when the frame had no payload) and reason.
    Close(Option<u16>, String),
}

/// A minimal WebSocket client (RFC 6455) over a blocking `TcpStream`: handshake,
/// masked frames out, unmasked frames in; enough to drive `/ws/<walker>`.
pub struct WsClient {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// The default wait for a frame the test expects.
pub const WS_WAIT: Duration = Duration::from_secs(15);

impl WsClient {
    /// Open `ws://127.0.0.1:port{path}`; `Err` is the HTTP answer when it is not 101.
    pub fn connect(port: u16, path: &str) -> Result<WsClient, Response> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to svc");
        stream.set_nodelay(true).expect("nodelay");
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).expect("send handshake");
        let mut client = WsClient {
            stream,
            buf: Vec::new(),
        };
        let deadline = Instant::now() + WS_WAIT;
        let end = loop {
            if let Some(i) = client.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(client.fill(deadline), "no handshake answer from {path}");
        };
        let head: Vec<u8> = client.buf.drain(..end).collect();
        let head = String::from_utf8_lossy(&head).into_owned();
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line in {head:?}"));
        if status == 101 {
            return Ok(client);
        }
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let length = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        while client.buf.len() < length && client.fill(deadline) {}
        let body =
            String::from_utf8_lossy(&client.buf[..length.min(client.buf.len())]).into_owned();
        Err(Response {
            status,
            headers,
            body,
        })
    }

    /// Read more bytes into the buffer; false at the deadline or at EOF.
    fn fill(&mut self, deadline: Instant) -> bool {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        let _ = self.stream.set_read_timeout(Some(deadline - now));
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Send one frame (masked, as a client must).
    pub fn send_frame(&mut self, opcode: u8, fin: bool, payload: &[u8]) {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        // The server may close first (4413): a failed write is seen by the next read.
        let _ = self.stream.write_all(&out);
    }

    pub fn send_text(&mut self, text: &str) {
        self.send_frame(0x1, true, text.as_bytes());
    }

    pub fn send_json(&mut self, value: &Value) {
        self.send_text(&value.to_string());
    }

    /// Send a close frame with `code`.
    pub fn send_close(&mut self, code: u16) {
        self.send_frame(0x8, true, &code.to_be_bytes());
    }

    /// The next frame within `wait`, or `None` (timeout or EOF).
    pub fn recv_within(&mut self, wait: Duration) -> Option<Frame> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some((frame, used)) = parse_frame(&self.buf) {
                self.buf.drain(..used);
                return Some(frame);
            }
            if !self.fill(deadline) {
                return None;
            }
        }
    }

    /// The next frame (within [`WS_WAIT`]); panics when none comes.
    pub fn recv(&mut self) -> Frame {
        self.recv_within(WS_WAIT)
            .expect("a frame from the server within the wait")
    }

    /// The next text frame as JSON, skipping (and answering) protocol pings; panics on
    /// anything else.
    pub fn recv_json(&mut self) -> Value {
        self.recv_json_within(WS_WAIT)
    }

    /// [`WsClient::recv_json`] with its own wait for each frame.
    pub fn recv_json_within(&mut self, wait: Duration) -> Value {
        loop {
            let frame = self
                .recv_within(wait)
                .expect("a frame from the server within the wait");
            match frame {
                Frame::Text(t) => {
                    return serde_json::from_str(&t)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {t}"));
                }
                Frame::Ping(p) => self.send_frame(0xA, true, &p),
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Wait for the server's close frame, skipping others; its code and reason.
    pub fn recv_close(&mut self) -> (Option<u16>, String) {
        loop {
            match self.recv() {
                Frame::Close(code, reason) => return (code, reason),
                Frame::Ping(_) | Frame::Pong(_) => {}
                other => panic!("expected a close frame, got {other:?}"),
            }
        }
    }
}

/// One complete server frame at the start of `buf` and its length.
fn parse_frame(buf: &[u8]) -> Option<(Frame, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0F;
    assert_eq!(buf[1] & 0x80, 0, "a server frame must not be masked");
    let (len, mut at) = match buf[1] & 0x7F {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => {
            let b: [u8; 8] = buf.get(2..10)?.try_into().ok()?;
            (u64::from_be_bytes(b) as usize, 10)
        }
        n => (n as usize, 2),
    };
    let payload = buf.get(at..at + len)?.to_vec();
    at += len;
    assert!(buf[0] & 0x80 != 0, "the server does not fragment");
    let frame = match opcode {
        0x1 => Frame::Text(String::from_utf8(payload).expect("UTF-8 text frame")),
        0x2 => Frame::Binary(payload),
        0x8 => {
            let code = (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
            let reason = String::from_utf8_lossy(payload.get(2..).unwrap_or_default()).into_owned();
            Frame::Close(code, reason)
        }
        0x9 => Frame::Ping(payload),
        0xA => Frame::Pong(payload),
        other => panic!("unexpected opcode {other}"),
    };
    Some((frame, at))
}

/// Poll `check` until it holds or `wait` passes; whether it held.
pub fn wait_until(wait: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `redis-server` on a free loopback port, killed (by PID) on drop.
pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    /// `None` (with a message) when `redis-server` is not installed.
    pub fn start() -> Option<Redis> {
        Redis::start_on(free_port())
    }

    pub fn start_on(port: u16) -> Option<Redis> {
        Redis::start_with(port, &[])
    }

    /// Like [`Redis::start_on`], with more `redis-server` arguments (e.g. a snapshot
    /// directory a restart loads).
    pub fn start_with(port: u16, extra: &[&std::ffi::OsStr]) -> Option<Redis> {
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server)");
                return None;
            }
            Err(e) => panic!("cannot start redis-server: {e}"),
        };
        let redis = Redis { child, port };
        assert!(
            wait_until(Duration::from_secs(15), || TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "redis-server did not listen on {port}"
        );
        Some(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Register `name` (username identity, a fixed password) and log in: the session token.
pub fn register_and_login(port: u16, name: &str) -> String {
    let body = serde_json::json!({"identities": [{"type": "username", "value": name}],
                                  "credential": {"type": "password", "password": "pw-123456"}});
    let r = json_call(port, "POST", "/user/register", None, &body);
    assert!(
        r.status == 200 || r.status == 201,
        "{} {}",
        r.status,
        r.body
    );
    let body = serde_json::json!({"identity": {"type": "username", "value": name},
                                  "credential": {"type": "password", "password": "pw-123456"}});
    let r = json_call(port, "POST", "/user/login", None, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string()
}
