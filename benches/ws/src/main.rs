//! `ws-load`: WebSocket load client for `svc start` (see benches/ws/README.md).
//!
//! Three measurements against one running server, in this order:
//! 1. idle: N sockets connected to the echo walker, doing nothing; the server's VmRSS;
//!    then every socket is checked alive with `{"type": "ping"}` -> `{"type": "pong"}`;
//! 2. echo: C clients, each sending a frame and awaiting its reply in a loop;
//! 3. broadcast: N clients on a broadcast walker, a few of them also sending; every
//!    frame any client receives counts as one delivery.
//!
//! It prints one markdown table and exits 1 if any reply was an error frame, a
//! connection failed, a reply did not arrive in time, or a broadcast was lost or
//! delivered twice.

use futures_util::stream::{self, SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

type Ws = WebSocketStream<TcpStream>;

/// How long a reply (or a broadcast, or a handshake) may take before it counts as lost.
const REPLY_TIMEOUT: Duration = Duration::from_secs(15);

/// Read buffer of each socket.
const READ_BUFFER_BYTES: usize = 8 * 1024;

const USAGE: &str = "\
usage: ws-load --url-base ws://127.0.0.1:PORT [options]

  --server-pid PID          read the server's VmRSS from /proc/PID/status (idle row)
  --echo-walker NAME        WEBSOCKET walker that reports its `text` (default echo)
  --broadcast-walker NAME   broadcast=True walker that reports its `text` (default shout)
  --echo-clients LIST       comma-separated client counts (default 16,256)
  --broadcast-clients LIST  comma-separated client counts (default 100,1000)
  --idle N                  idle sockets for the RSS row (default 10000; 0 = skip)
  --senders N               broadcast senders among the clients (default 4)
  --window N                per sender, broadcasts in flight (not yet received by every
                            client); default 32: keep it under the server's
                            max_queued_messages (64), and senders x window under its
                            outbox_capacity (256)
  --duration SECS           measured time per run (default 5)
  --warmup SECS             unmeasured time before each run (default 1)
  --connect-batch N         handshakes in flight while connecting (default 200)
  --python-echo RT/S        the Python original's echo round trips/s (default 558)
  --python-broadcast N/S    the Python original's broadcast deliveries/s (default 8100)
  --label NAME              the server's name in the table's title (default svc)
";

struct Config {
    url_base: String,
    server_pid: Option<u32>,
    echo_walker: String,
    broadcast_walker: String,
    echo_clients: Vec<usize>,
    broadcast_clients: Vec<usize>,
    idle: usize,
    senders: usize,
    window: usize,
    duration: Duration,
    warmup: Duration,
    connect_batch: usize,
    python_echo: f64,
    python_broadcast: f64,
    label: String,
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config {
        url_base: String::new(),
        server_pid: None,
        echo_walker: "echo".into(),
        broadcast_walker: "shout".into(),
        echo_clients: vec![16, 256],
        broadcast_clients: vec![100, 1000],
        idle: 10_000,
        senders: 4,
        window: 32,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        connect_batch: 200,
        python_echo: 558.0,
        python_broadcast: 8100.0,
        label: "svc".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |what: &str| format!("{flag}: {what} expected, got {value:?}");
        let num = |v: &str| v.trim().parse::<usize>().map_err(|_| bad("a number"));
        let secs = |v: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|s| *s >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| bad("seconds"))
        };
        // An empty list skips those runs.
        let list = |v: &str| {
            v.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(num)
                .collect::<Result<Vec<_>, _>>()
        };
        match flag.as_str() {
            "--url-base" => cfg.url_base = value.trim_end_matches('/').to_string(),
            "--server-pid" => cfg.server_pid = Some(num(&value)? as u32),
            "--echo-walker" => cfg.echo_walker = value,
            "--broadcast-walker" => cfg.broadcast_walker = value,
            "--echo-clients" => cfg.echo_clients = list(&value)?,
            "--broadcast-clients" => cfg.broadcast_clients = list(&value)?,
            "--idle" => cfg.idle = num(&value)?,
            "--senders" => cfg.senders = num(&value)?.max(1),
            "--window" => cfg.window = num(&value)?.max(1),
            "--duration" => cfg.duration = secs(&value)?,
            "--warmup" => cfg.warmup = secs(&value)?,
            "--connect-batch" => cfg.connect_batch = num(&value)?.max(1),
            "--python-echo" => cfg.python_echo = value.parse().map_err(|_| bad("a number"))?,
            "--label" => cfg.label = value,
            "--python-broadcast" => {
                cfg.python_broadcast = value.parse().map_err(|_| bad("a number"))?
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if !cfg.url_base.starts_with("ws://") {
        return Err("--url-base ws://HOST:PORT is required".into());
    }
    Ok(cfg)
}

/// Failures seen anywhere: counted, the first few kept for the report.
#[derive(Default)]
struct Failures {
    count: AtomicU64,
    first: Mutex<Vec<String>>,
}

impl Failures {
    fn add(&self, what: String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.len() < 10 {
            eprintln!("ws-load: {what}");
            first.push(what);
        }
    }
    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

fn shorten(text: &str) -> String {
    let mut s: String = text.chars().take(200).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// Ok for a success envelope `{"ok": true, ...}`; the fast path is the exact prefix the
/// server writes, anything else is parsed.
fn check_reply(text: &str) -> Result<(), String> {
    if text.starts_with(r#"{"ok":true,"#) {
        return Ok(());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.get("ok") == Some(&serde_json::Value::Bool(true)) => Ok(()),
        _ => Err(format!("error frame: {}", shorten(text))),
    }
}

async fn connect(url: &str) -> Result<Ws, String> {
    let hostport = url
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| format!("bad url {url}"))?;
    let attempt = async {
        let tcp = TcpStream::connect(hostport)
            .await
            .map_err(|e| format!("connect {hostport}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| format!("nodelay: {e}"))?;
        // tungstenite zero-fills its whole read buffer before every read (128 KiB by
        // default): that was 40 % of this client's CPU. Frames here are ~100 bytes.
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
        let (ws, _) = tokio_tungstenite::client_async_with_config(url, tcp, Some(config))
            .await
            .map_err(|e| format!("handshake {url}: {e}"))?;
        Ok(ws)
    };
    tokio::time::timeout(REPLY_TIMEOUT, attempt)
        .await
        .map_err(|_| format!("handshake {url}: timed out"))?
}

/// Opens `n` sockets to `url`, `batch` handshakes at a time. Every failure is recorded.
async fn connect_many(url: &str, n: usize, batch: usize, failures: &Failures) -> Vec<Ws> {
    let results: Vec<Result<Ws, String>> = stream::iter(0..n)
        .map(|_| connect(url))
        .buffer_unordered(batch)
        .collect()
        .await;
    let mut out = Vec::with_capacity(n);
    for r in results {
        match r {
            Ok(ws) => out.push(ws),
            Err(e) => failures.add(e),
        }
    }
    out
}

/// The next text frame (pings are answered by tungstenite, pongs skipped); Err on close,
/// a protocol error or REPLY_TIMEOUT.
async fn next_text<S>(ws: &mut S) -> Result<String, String>
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let msg = tokio::time::timeout(REPLY_TIMEOUT, ws.next())
            .await
            .map_err(|_| "no reply within the timeout".to_string())?;
        match msg {
            Some(Ok(Message::Text(t))) => return Ok(t.as_str().to_owned()),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            Some(Ok(Message::Binary(_))) => return Err("unexpected binary frame".into()),
            Some(Ok(Message::Close(frame))) => {
                return Err(format!("server closed the socket: {frame:?}"));
            }
            Some(Err(e)) => return Err(format!("socket error: {e}")),
            None => return Err("socket closed".into()),
        }
    }
}

/// Closes every socket politely: a close frame, then wait for the server's close frame
/// (not for the end of the TCP stream, which svc sends up to a second later).
async fn close_all(sockets: Vec<Ws>) {
    stream::iter(sockets)
        .for_each_concurrent(1000, |mut ws| async move {
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                let _ = ws.send(Message::Close(None)).await;
                while let Some(Ok(msg)) = ws.next().await {
                    if msg.is_close() {
                        break;
                    }
                }
            })
            .await;
        })
        .await;
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// CPU time (user + system) of a process in clock ticks, from /proc/PID/stat.
fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: utime and stime are the
    // 12th and 13th of them.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second of /proc/PID/stat (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// Busy clock ticks of the whole machine (all CPUs), from the first line of /proc/stat:
/// user, nice, system, irq, softirq and steal (time the hypervisor gave to others);
/// not idle, iowait, or guest time (already counted in user and nice).
fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .take(8)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = f[..] else {
        return None;
    };
    Some(user + nice + system + irq + softirq + steal)
}

/// A measured window: its length and the cores the server, this client and the rest of
/// the machine kept busy.
struct Window {
    t0: Instant,
    server_pid: Option<u32>,
    server0: Option<u64>,
    client0: Option<u64>,
    machine0: Option<u64>,
}

#[derive(Default, Clone, Copy)]
struct Measured {
    seconds: f64,
    server_cores: Option<f64>,
    client_cores: Option<f64>,
    /// Everything else on the machine (other processes, interrupts).
    other_cores: Option<f64>,
}

impl Window {
    fn start(server_pid: Option<u32>) -> Window {
        Window {
            t0: Instant::now(),
            server_pid,
            server0: server_pid.and_then(|p| cpu_ticks(&p.to_string())),
            client0: cpu_ticks("self"),
            machine0: machine_busy_ticks(),
        }
    }

    fn end(&self) -> Measured {
        let seconds = self.t0.elapsed().as_secs_f64();
        let cores = |a: Option<u64>, b: Option<u64>| {
            Some(b?.saturating_sub(a?) as f64 / TICKS_PER_SECOND / seconds)
        };
        let server_cores = cores(
            self.server0,
            self.server_pid.and_then(|p| cpu_ticks(&p.to_string())),
        );
        let client_cores = cores(self.client0, cpu_ticks("self"));
        let machine = cores(self.machine0, machine_busy_ticks());
        Measured {
            seconds,
            server_cores,
            client_cores,
            other_cores: (|| Some((machine? - server_cores? - client_cores?).max(0.0)))(),
        }
    }
}

fn cpu_cell(m: &Measured) -> String {
    let cell = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
    format!(
        "{} / {} / {}",
        cell(m.server_cores),
        cell(m.client_cores),
        cell(m.other_cores)
    )
}

// ------------------------------------------------------------------------------ idle

struct IdleResult {
    sockets: usize,
    rss_before_kb: Option<u64>,
    rss_kb: Option<u64>,
}

async fn idle_run(cfg: &Config, failures: &Arc<Failures>) -> IdleResult {
    let url = format!("{}/ws/{}", cfg.url_base, cfg.echo_walker);
    let rss_before_kb = cfg.server_pid.and_then(rss_kb);
    let started = Instant::now();
    let sockets = connect_many(&url, cfg.idle, cfg.connect_batch, failures).await;
    eprintln!(
        "== idle: {} of {} sockets connected in {:.1} s",
        sockets.len(),
        cfg.idle,
        started.elapsed().as_secs_f64()
    );
    // Let the server finish setting up the last sessions before reading its RSS.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss = cfg.server_pid.and_then(rss_kb);
    // Every socket must still be served: ping each one at the application level.
    let alive = Arc::new(AtomicU64::new(0));
    let sockets: Vec<Ws> = stream::iter(sockets)
        .map(|mut ws| {
            let failures = failures.clone();
            let alive = alive.clone();
            async move {
                let r = async {
                    ws.send(Message::text(r#"{"type":"ping"}"#))
                        .await
                        .map_err(|e| format!("idle socket: send: {e}"))?;
                    let reply = next_text(&mut ws).await?;
                    let v: serde_json::Value = serde_json::from_str(&reply)
                        .map_err(|_| format!("idle socket: not JSON: {}", shorten(&reply)))?;
                    if v.get("type").and_then(|t| t.as_str()) != Some("pong") {
                        return Err(format!(
                            "idle socket: wanted a pong, got {}",
                            shorten(&reply)
                        ));
                    }
                    Ok(())
                }
                .await;
                match r {
                    Ok(()) => {
                        alive.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => failures.add(e),
                }
                ws
            }
        })
        .buffer_unordered(cfg.connect_batch)
        .collect()
        .await;
    let alive = alive.load(Ordering::Relaxed) as usize;
    eprintln!("== idle: {alive} sockets answered a ping after the RSS reading");
    let closing = Instant::now();
    close_all(sockets).await;
    eprintln!(
        "== idle: closed in {:.1} s",
        closing.elapsed().as_secs_f64()
    );
    IdleResult {
        sockets: alive,
        rss_before_kb,
        rss_kb: rss,
    }
}

// ------------------------------------------------------------------------------ echo

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

struct EchoResult {
    clients: usize,
    round_trips: u64,
    measured: Measured,
    p50_ms: f64,
    p99_ms: f64,
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

async fn echo_run(cfg: &Config, clients: usize, failures: &Arc<Failures>) -> EchoResult {
    let url = format!("{}/ws/{}", cfg.url_base, cfg.echo_walker);
    let sockets = connect_many(&url, clients, cfg.connect_batch, failures).await;
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let mut tasks = Vec::with_capacity(sockets.len());
    for (i, mut ws) in sockets.into_iter().enumerate() {
        let phase = phase.clone();
        let failures = failures.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies_us: Vec<u32> = Vec::with_capacity(1 << 14);
            let mut n: u64 = 0;
            let result: Result<(), String> = async {
                while phase.load(Ordering::Relaxed) != STOP {
                    let text = format!("c{i}-{n}");
                    n += 1;
                    let sent = Instant::now();
                    ws.send(Message::text(format!(r#"{{"text":"{text}"}}"#)))
                        .await
                        .map_err(|e| format!("echo client {i}: send: {e}"))?;
                    let reply = next_text(&mut ws)
                        .await
                        .map_err(|e| format!("echo client {i}: {e}"))?;
                    let took = sent.elapsed();
                    check_reply(&reply).map_err(|e| format!("echo client {i}: {e}"))?;
                    // The walker reports the text back: the reply is this message's.
                    if !reply.contains(&format!(r#""{text}""#)) {
                        return Err(format!(
                            "echo client {i}: reply to another message: {}",
                            shorten(&reply)
                        ));
                    }
                    if phase.load(Ordering::Relaxed) == MEASURE {
                        latencies_us.push(took.as_micros().min(u32::MAX as u128) as u32);
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = result {
                failures.add(e);
            }
            (ws, latencies_us)
        }));
    }
    tokio::time::sleep(cfg.warmup).await;
    phase.store(MEASURE, Ordering::Relaxed);
    let window = Window::start(cfg.server_pid);
    tokio::time::sleep(cfg.duration).await;
    phase.store(STOP, Ordering::Relaxed);
    let measured = window.end();
    let mut all: Vec<u32> = Vec::new();
    let mut sockets = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok((ws, lat)) => {
                all.extend_from_slice(&lat);
                sockets.push(ws);
            }
            Err(e) => failures.add(format!("echo task panicked: {e}")),
        }
    }
    close_all(sockets).await;
    all.sort_unstable();
    EchoResult {
        clients,
        round_trips: all.len() as u64,
        measured,
        p50_ms: percentile(&all, 0.50),
        p99_ms: percentile(&all, 0.99),
    }
}

// ------------------------------------------------------------------------------ broadcast

/// Shared by the receivers and senders of one broadcast run.
///
/// The hub sends broadcasts to every session in one order, so a client's k-th data
/// frame is the k-th broadcast. `slots[k % slots.len()]` counts the clients that have
/// received broadcast k; the client that makes it reach `clients` resets the slot, counts
/// the broadcast as complete and gives its sender (named in the frame) a window permit
/// back. Completions come in order (the last client to get k gets k+1 after it), and at
/// most `slots.len()` (senders × window) broadcasts are unfinished, so a slot is free
/// again before it is reused.
struct Board {
    clients: u64,
    slots: Vec<AtomicU64>,
    completed: AtomicU64,
    /// Data broadcasts sent.
    sent: AtomicU64,
    /// Per sender: broadcasts it may still send before earlier ones reach every client.
    windows: Vec<Semaphore>,
    synced: AtomicU64,
    stop: AtomicBool,
    /// Data frames each client has received.
    received: Vec<AtomicU64>,
}

const SYNC_FRAME: &str = r#"{"text":"sync"}"#;

/// Sender `id` sends `{"text": "m<id>"}`; the reply reports the text back.
fn data_frame(id: usize) -> String {
    format!(r#"{{"text":"m{id}"}}"#)
}

/// The sender of a data broadcast, from the `m<id>` it reports.
fn sender_of(text: &str) -> Option<usize> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.pointer("/data/reports/0")?
        .as_str()?
        .strip_prefix('m')?
        .parse()
        .ok()
}

async fn receive_broadcasts<S>(id: usize, mut rx: S, board: Arc<Board>, failures: Arc<Failures>)
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let mut synced = false;
    let mut k: u64 = 0;
    loop {
        let msg = match rx.next().await {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(_))) | None if board.stop.load(Ordering::Relaxed) => return,
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            Some(Ok(other)) => {
                failures.add(format!("broadcast client {id}: unexpected {other:?}"));
                return;
            }
            Some(Err(e)) => {
                if !board.stop.load(Ordering::Relaxed) {
                    failures.add(format!("broadcast client {id}: socket error: {e}"));
                }
                return;
            }
            None => {
                failures.add(format!("broadcast client {id}: socket closed"));
                return;
            }
        };
        let text = msg.as_str();
        if let Err(e) = check_reply(text) {
            failures.add(format!("broadcast client {id}: {e}"));
            continue;
        }
        // Probes sent before the run: they show the hub has this session.
        if text.contains(r#""sync""#) {
            if !synced {
                synced = true;
                board.synced.fetch_add(1, Ordering::SeqCst);
            }
            continue;
        }
        let slot = &board.slots[(k % board.slots.len() as u64) as usize];
        k += 1;
        board.received[id].store(k, Ordering::Relaxed);
        if slot.fetch_add(1, Ordering::AcqRel) + 1 == board.clients {
            slot.store(0, Ordering::Release);
            board.completed.fetch_add(1, Ordering::AcqRel);
            match sender_of(text).and_then(|s| board.windows.get(s)) {
                Some(w) => w.add_permits(1),
                None => {
                    failures.add(format!("broadcast: no sender in {}", shorten(text)));
                    return;
                }
            }
        }
    }
}

async fn send_broadcasts<S>(id: usize, mut tx: S, board: Arc<Board>, failures: Arc<Failures>) -> S
where
    S: SinkExt<Message> + Unpin,
    S::Error: std::fmt::Display,
{
    let window = &board.windows[id];
    let frame = data_frame(id);
    while !board.stop.load(Ordering::Relaxed) {
        // Wait for a free place in the window, checking the stop flag now and then.
        match tokio::time::timeout(Duration::from_millis(100), window.acquire()).await {
            Ok(Ok(permit)) => permit.forget(),
            Ok(Err(_)) => break,
            Err(_) => continue,
        }
        if board.stop.load(Ordering::Relaxed) {
            window.add_permits(1);
            break;
        }
        board.sent.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = tx.send(Message::text(frame.as_str())).await {
            failures.add(format!("broadcast sender {id}: send: {e}"));
            break;
        }
    }
    tx
}

/// Sends a close frame on every write half; the receivers see the server's answer.
async fn close_sinks(sinks: Vec<SplitSink<Ws, Message>>) {
    stream::iter(sinks)
        .for_each_concurrent(1000, |mut tx| async move {
            let close = tx.send(Message::Close(None));
            let _ = tokio::time::timeout(Duration::from_secs(2), close).await;
        })
        .await;
}

struct BroadcastResult {
    clients: usize,
    deliveries: u64,
    measured: Measured,
    broadcasts: u64,
}

async fn broadcast_run(cfg: &Config, clients: usize, failures: &Arc<Failures>) -> BroadcastResult {
    let url = format!("{}/ws/{}", cfg.url_base, cfg.broadcast_walker);
    let sockets = connect_many(&url, clients, cfg.connect_batch, failures).await;
    let n = sockets.len();
    let senders = cfg.senders.min(n.max(1));
    let board = Arc::new(Board {
        clients: n as u64,
        slots: (0..senders * cfg.window)
            .map(|_| AtomicU64::new(0))
            .collect(),
        completed: AtomicU64::new(0),
        sent: AtomicU64::new(0),
        windows: (0..senders).map(|_| Semaphore::new(cfg.window)).collect(),
        synced: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        received: (0..n).map(|_| AtomicU64::new(0)).collect(),
    });
    let empty = BroadcastResult {
        clients,
        deliveries: 0,
        measured: Measured::default(),
        broadcasts: 0,
    };
    if n == 0 {
        return empty;
    }
    let mut sinks: Vec<SplitSink<Ws, Message>> = Vec::with_capacity(senders);
    let mut receivers = Vec::with_capacity(n);
    for (id, ws) in sockets.into_iter().enumerate() {
        let (tx, rx): (SplitSink<Ws, Message>, SplitStream<Ws>) = ws.split();
        // The first `senders` write halves send; the others are kept to close politely.
        sinks.push(tx);
        receivers.push(tokio::spawn(receive_broadcasts(
            id,
            rx,
            board.clone(),
            failures.clone(),
        )));
    }

    // Probe until every session has received a broadcast: from then on the hub has them
    // all, and no data broadcast can miss one.
    let sync_deadline = Instant::now() + REPLY_TIMEOUT;
    let failures_before = failures.count();
    while board.synced.load(Ordering::SeqCst) < n as u64 {
        let problem = if failures.count() > failures_before {
            Some("the probe broadcasts failed".to_string())
        } else if Instant::now() > sync_deadline {
            Some(format!(
                "only {} clients received the probe broadcasts",
                board.synced.load(Ordering::SeqCst)
            ))
        } else if let Err(e) = sinks[0].send(Message::text(SYNC_FRAME)).await {
            Some(format!("probe: send: {e}"))
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.add(format!("broadcast to {n}: {problem}; run skipped"));
            board.stop.store(true, Ordering::SeqCst);
            close_sinks(sinks).await;
            return empty;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut send_tasks = Vec::with_capacity(senders);
    let mut idle_sinks = sinks.split_off(senders);
    for (id, tx) in sinks.into_iter().enumerate() {
        send_tasks.push(tokio::spawn(send_broadcasts(
            id,
            tx,
            board.clone(),
            failures.clone(),
        )));
    }
    tokio::time::sleep(cfg.warmup).await;
    let c0 = board.completed.load(Ordering::SeqCst);
    let measure = Window::start(cfg.server_pid);
    tokio::time::sleep(cfg.duration).await;
    let c1 = board.completed.load(Ordering::SeqCst);
    let measured = measure.end();
    board.stop.store(true, Ordering::SeqCst);
    let mut all_sinks = Vec::with_capacity(n);
    for t in send_tasks {
        match t.await {
            Ok(tx) => all_sinks.push(tx),
            Err(e) => failures.add(format!("broadcast sender panicked: {e}")),
        }
    }
    all_sinks.append(&mut idle_sinks);
    // Every broadcast sent must reach every client, exactly once.
    let sent = board.sent.load(Ordering::SeqCst);
    let drain_deadline = Instant::now() + REPLY_TIMEOUT;
    while board.completed.load(Ordering::SeqCst) < sent && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Room for duplicates to show up.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let completed = board.completed.load(Ordering::SeqCst);
    if completed != sent {
        failures.add(format!(
            "broadcast to {n}: {} of {sent} broadcasts did not reach every client",
            sent - completed.min(sent)
        ));
    }
    let wrong = board
        .received
        .iter()
        .filter(|r| r.load(Ordering::Relaxed) != sent)
        .count();
    if wrong > 0 {
        failures.add(format!(
            "broadcast to {n}: {wrong} clients did not receive exactly {sent} broadcasts"
        ));
    }
    close_sinks(all_sinks).await;
    for r in receivers {
        let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
    }
    BroadcastResult {
        clients,
        deliveries: (c1 - c0) * n as u64,
        measured,
        broadcasts: sent,
    }
}

// ------------------------------------------------------------------------------ report

fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "–".into()
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "yes" } else { "**no**" }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("ws-load: {e}");
            }
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let failures = Arc::new(Failures::default());
    let mut rows: Vec<String> = Vec::new();

    if cfg.idle > 0 {
        let r = idle_run(&cfg, &failures).await;
        let (value, ok) = match r.rss_kb {
            Some(kb) => {
                let mb = kb as f64 / 1024.0;
                let mut value = format!("{mb:.1} MB");
                if let Some(b) = r.rss_before_kb {
                    value += &format!(
                        " ({:.1} MB before connecting, {:.1} KB per socket)",
                        b as f64 / 1024.0,
                        (kb.saturating_sub(b)) as f64 / r.sockets.max(1) as f64
                    );
                }
                if r.sockets != cfg.idle {
                    value += &format!("; only {} sockets live", r.sockets);
                }
                (value, mb <= 200.0 && r.sockets == cfg.idle)
            }
            None => ("n/a (no --server-pid)".into(), false),
        };
        rows.push(format!(
            "| server RSS, {} idle sockets | {value} | – | – | – | ≤ 200 MB | {} | – |",
            thousands(cfg.idle as f64),
            met(ok)
        ));
    }

    for &c in &cfg.echo_clients {
        let r = echo_run(&cfg, c, &failures).await;
        let rate = r.round_trips as f64 / r.measured.seconds;
        eprintln!(
            "== echo, {c} clients: {} round trips in {:.2} s",
            r.round_trips, r.measured.seconds
        );
        rows.push(format!(
            "| echo, {} clients | {} round trips/s | {} | {} | {} | ≥ 50,000 round trips/s | {} | {} round trips/s |",
            r.clients,
            thousands(rate),
            ms(r.p50_ms),
            ms(r.p99_ms),
            cpu_cell(&r.measured),
            met(rate >= 50_000.0),
            thousands(cfg.python_echo)
        ));
    }

    for &c in &cfg.broadcast_clients {
        let r = broadcast_run(&cfg, c, &failures).await;
        let rate = if r.measured.seconds > 0.0 {
            r.deliveries as f64 / r.measured.seconds
        } else {
            0.0
        };
        eprintln!(
            "== broadcast to {c}: {} deliveries in {:.2} s; {} broadcasts sent in all",
            r.deliveries, r.measured.seconds, r.broadcasts
        );
        rows.push(format!(
            "| broadcast to {} clients | {} deliveries/s | – | – | {} | ≥ 1,000,000 deliveries/s | {} | {} deliveries/s |",
            thousands(r.clients as f64),
            thousands(rate),
            cpu_cell(&r.measured),
            met(rate >= 1_000_000.0),
            thousands(cfg.python_broadcast)
        ));
    }

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "{} WebSocket load ({cores} cores shared by client and server; {} s measured after {} s warm-up per run)",
        cfg.label,
        cfg.duration.as_secs_f64(),
        cfg.warmup.as_secs_f64()
    );
    println!();
    println!(
        "| measurement | result | p50 ms | p99 ms | cores busy: server / client / other | goal | goal met | Python original |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in &rows {
        println!("{row}");
    }
    if let Some(kb) = cfg.server_pid.and_then(rss_kb) {
        println!();
        println!("server RSS at the end: {:.1} MB", kb as f64 / 1024.0);
    }
    let n = failures.count();
    if n > 0 {
        eprintln!("ws-load: FAILED: {n} errors (first ones printed above)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
