//! The JSON-RPC 2.0 front of the stdio and SSE transports. rmcp speaks the MCP methods;
//! this layer makes the envelope rules exact before a message reaches it: a parse error
//! is answered `-32700`, a malformed message `-32600`, an unknown method `-32601`,
//! missing or ill-typed parameters of the core methods `-32602` (each with the request's
//! id when it has a usable one), notifications are never answered, and a batch (a JSON
//! array) is split, run, and answered with one array of the responses in the order they
//! complete (nothing at all for a batch of notifications).

use rmcp::ServiceExt as _;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

/// Largest JSON-RPC message (one line on stdio, one body on HTTP).
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;
/// Largest batch.
pub const MAX_BATCH: usize = 100;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// Request methods the server knows (MCP's client requests).
const REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Notifications passed on; others are dropped (never answered).
const NOTIFICATIONS: &[&str] = &[
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/elicitation/response",
];

pub fn error(id: Json, code: i64, message: &str) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What to do with one message.
pub enum Verdict {
    /// Pass it to rmcp. `Some(id)` for a request (an answer will come).
    Forward(Option<Json>),
    /// Answer this at once.
    Reply(Json),
    /// Say nothing (a notification we do not handle).
    Drop,
}

fn usable_id(v: Option<&Json>) -> Option<Json> {
    match v {
        Some(Json::String(s)) => Some(Json::String(s.clone())),
        Some(Json::Number(n)) if n.is_i64() || n.is_u64() => Some(Json::Number(n.clone())),
        _ => None,
    }
}

fn params_error(method: &str, params: Option<&Json>) -> Option<String> {
    let p = match params {
        None => None,
        Some(Json::Object(m)) => Some(m),
        Some(_) => return Some("`params` must be an object".into()),
    };
    let need_str = |key: &str| -> Option<String> {
        match p.and_then(|m| m.get(key)) {
            Some(Json::String(_)) => None,
            Some(_) => Some(format!("`params.{key}` must be a string")),
            None => Some(format!("missing `params.{key}`")),
        }
    };
    let need_obj = |key: &str| -> Option<String> {
        match p.and_then(|m| m.get(key)) {
            Some(Json::Object(_)) => None,
            Some(_) => Some(format!("`params.{key}` must be an object")),
            None => Some(format!("missing `params.{key}`")),
        }
    };
    match method {
        "initialize" => need_str("protocolVersion")
            .or_else(|| need_obj("capabilities"))
            .or_else(|| need_obj("clientInfo")),
        "tools/call" => need_str("name").or_else(|| match p.and_then(|m| m.get("arguments")) {
            None | Some(Json::Null) | Some(Json::Object(_)) => None,
            Some(_) => Some("`params.arguments` must be an object".into()),
        }),
        "prompts/get" => need_str("name").or_else(|| match p.and_then(|m| m.get("arguments")) {
            None | Some(Json::Null) | Some(Json::Object(_)) => None,
            Some(_) => Some("`params.arguments` must be an object".into()),
        }),
        "resources/read" => need_str("uri"),
        _ => None,
    }
}

/// Judge one (non-batch) message.
pub fn classify(msg: &Json) -> Verdict {
    let Json::Object(m) = msg else {
        return Verdict::Reply(error(
            Json::Null,
            INVALID_REQUEST,
            "Invalid Request: a message must be a JSON object",
        ));
    };
    let id_field = m.get("id");
    let id = usable_id(id_field);
    let reply_id = id.clone().unwrap_or(Json::Null);
    if m.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return Verdict::Reply(error(
            reply_id,
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"",
        ));
    }
    if id_field.is_some() && id.is_none() {
        return Verdict::Reply(error(
            Json::Null,
            INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer",
        ));
    }
    match m.get("method") {
        Some(Json::String(method)) => {
            if id.is_none() {
                // A notification: never answered.
                return if NOTIFICATIONS.contains(&method.as_str()) {
                    Verdict::Forward(None)
                } else {
                    Verdict::Drop
                };
            }
            if !REQUESTS.contains(&method.as_str()) {
                return Verdict::Reply(error(
                    reply_id,
                    METHOD_NOT_FOUND,
                    &format!("Method not found: {method}"),
                ));
            }
            if let Some(problem) = params_error(method, m.get("params")) {
                return Verdict::Reply(error(
                    reply_id,
                    INVALID_PARAMS,
                    &format!("Invalid params: {problem}"),
                ));
            }
            Verdict::Forward(None).with_id(id)
        }
        Some(_) => Verdict::Reply(error(
            reply_id,
            INVALID_REQUEST,
            "Invalid Request: `method` must be a string",
        )),
        None => {
            // A response to a request of ours.
            if id.is_some() && (m.contains_key("result") || m.contains_key("error")) {
                Verdict::Forward(None)
            } else {
                Verdict::Reply(error(
                    reply_id,
                    INVALID_REQUEST,
                    "Invalid Request: no `method`",
                ))
            }
        }
    }
}

impl Verdict {
    fn with_id(self, id: Option<Json>) -> Verdict {
        match self {
            Verdict::Forward(_) => Verdict::Forward(id),
            other => other,
        }
    }
}

struct Batch {
    remaining: usize,
    responses: Vec<Json>,
}

#[derive(Default)]
struct State {
    /// A request that starts rmcp's lifecycle went through (before it, rmcp would end
    /// the session on a notification).
    started: bool,
    batches: HashMap<u64, Batch>,
    /// Request id (as JSON text) of every request in flight → the batch waiting for
    /// its response, if any.
    pending: HashMap<String, Option<u64>>,
    next_batch: u64,
}

/// One client's session: an rmcp server behind the gate. Answers go to `out`, one
/// JSON text per message.
pub struct Gate {
    to_server: mpsc::UnboundedSender<String>,
    out: mpsc::UnboundedSender<String>,
    state: Mutex<State>,
}

impl Gate {
    /// Start an rmcp server for `handler`; what it says goes to `out`. The server ends
    /// when the gate is dropped.
    pub fn start(
        handler: super::handler::Handler,
        out: mpsc::UnboundedSender<String>,
    ) -> Arc<Gate> {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_io);
        let (client_read, mut client_write) = tokio::io::split(client_io);
        let (to_server, mut inbox) = mpsc::unbounded_channel::<String>();
        let gate = Arc::new(Gate {
            to_server,
            out,
            state: Mutex::new(State::default()),
        });
        tokio::spawn(async move {
            if let Ok(running) = handler.serve((server_read, server_write)).await {
                let _ = running.waiting().await;
            }
        });
        tokio::spawn(async move {
            while let Some(line) = inbox.recv().await {
                if client_write.write_all(line.as_bytes()).await.is_err()
                    || client_write.write_all(b"\n").await.is_err()
                {
                    break;
                }
            }
            let _ = client_write.shutdown().await;
        });
        let weak = Arc::downgrade(&gate);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(client_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(gate) = weak.upgrade() else { break };
                gate.on_server_line(&line);
            }
        });
        gate
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn on_server_line(&self, line: &str) {
        let Ok(v) = serde_json::from_str::<Json>(line) else {
            let _ = self.out.send(line.to_string());
            return;
        };
        let is_response = v.get("method").is_none();
        if is_response && let Some(id) = v.get("id") {
            let key = id.to_string();
            let mut st = self.lock();
            if let Some(Some(batch_id)) = st.pending.remove(&key) {
                let done = st.batches.get_mut(&batch_id).map(|b| {
                    b.responses.push(v.clone());
                    b.remaining = b.remaining.saturating_sub(1);
                    b.remaining == 0
                });
                if done == Some(true)
                    && let Some(b) = st.batches.remove(&batch_id)
                {
                    drop(st);
                    self.emit_batch(b.responses);
                }
                return;
            }
        }
        let _ = self.out.send(line.to_string());
    }

    fn emit_batch(&self, responses: Vec<Json>) {
        if !responses.is_empty() {
            let _ = self.out.send(Json::Array(responses).to_string());
        }
    }

    /// Decide and forward one message; `Some(answer)` to send back at once.
    fn admit(&self, msg: &Json, batch: Option<u64>) -> Option<Json> {
        match classify(msg) {
            Verdict::Reply(r) => Some(r),
            Verdict::Drop => None,
            Verdict::Forward(id) => {
                let mut st = self.lock();
                let method = msg.get("method").and_then(Json::as_str).unwrap_or_default();
                if id.is_none() && !st.started {
                    return None; // notification or response before the session exists
                }
                if id.is_some() {
                    let has_meta = msg.pointer("/params/_meta").is_some_and(Json::is_object);
                    if method == "initialize"
                        || (has_meta && method != "ping" && method != "server/discover")
                    {
                        st.started = true;
                    }
                    if let Some(id) = &id {
                        let key = id.to_string();
                        if st.pending.contains_key(&key) {
                            return Some(error(
                                id.clone(),
                                INVALID_REQUEST,
                                "Invalid Request: this `id` is already in flight",
                            ));
                        }
                        st.pending.insert(key, batch);
                        if let Some(bt) = batch.and_then(|b| st.batches.get_mut(&b)) {
                            bt.remaining += 1;
                        }
                    }
                }
                drop(st);
                let _ = self.to_server.send(msg.to_string());
                None
            }
        }
    }

    pub fn reject_too_large(&self) {
        let _ = self.out.send(
            error(
                Json::Null,
                INVALID_REQUEST,
                "Invalid Request: message larger than 4 MiB",
            )
            .to_string(),
        );
    }

    /// Take one raw message (a line on stdio, a POST body on SSE). Immediate answers
    /// (errors) go to `out`, like everything else.
    pub fn submit(&self, raw: &str) {
        let raw = raw.trim();
        if raw.is_empty() {
            return;
        }
        if raw.len() > MAX_MESSAGE_BYTES {
            self.reject_too_large();
            return;
        }
        let value: Json = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                let _ = self
                    .out
                    .send(error(Json::Null, PARSE_ERROR, &format!("Parse error: {e}")).to_string());
                return;
            }
        };
        match value {
            Json::Array(items) => {
                if items.is_empty() {
                    let _ = self.out.send(
                        error(Json::Null, INVALID_REQUEST, "Invalid Request: empty batch")
                            .to_string(),
                    );
                    return;
                }
                if items.len() > MAX_BATCH {
                    let _ = self.out.send(
                        error(
                            Json::Null,
                            INVALID_REQUEST,
                            "Invalid Request: more than 100 messages in one batch",
                        )
                        .to_string(),
                    );
                    return;
                }
                let batch_id = {
                    let mut st = self.lock();
                    st.next_batch += 1;
                    let b = st.next_batch;
                    // `remaining` starts at 1 so the batch cannot complete while it is
                    // still being admitted; the extra count is dropped below.
                    st.batches.insert(
                        b,
                        Batch {
                            remaining: 1,
                            responses: Vec::new(),
                        },
                    );
                    b
                };
                let mut immediate = Vec::new();
                for item in &items {
                    if let Some(r) = self.admit(item, Some(batch_id)) {
                        immediate.push(r);
                    }
                }
                let mut st = self.lock();
                let done = match st.batches.get_mut(&batch_id) {
                    Some(b) => {
                        b.responses.extend(immediate);
                        b.remaining -= 1;
                        b.remaining == 0
                    }
                    None => false,
                };
                if done && let Some(b) = st.batches.remove(&batch_id) {
                    drop(st);
                    self.emit_batch(b.responses);
                }
            }
            single => {
                if let Some(r) = self.admit(&single, None) {
                    let _ = self.out.send(r.to_string());
                }
            }
        }
    }
}

/// Serve one session on standard input and output until input ends.
pub async fn serve_stdio(handler: super::handler::Handler) -> anyhow::Result<()> {
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
    let gate = Gate::start(handler, out_tx);
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err()
                || stdout.write_all(b"\n").await.is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    });
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        // Read one line, but never hold more than the message limit in memory.
        let mut too_long = false;
        loop {
            let buf = stdin.fill_buf().await?;
            if buf.is_empty() {
                break;
            }
            let (chunk, found) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let n = chunk.len();
            if !too_long {
                if line.len() + n > MAX_MESSAGE_BYTES + 1 {
                    too_long = true;
                    line.clear();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            stdin.consume(n);
            if found {
                break;
            }
        }
        if too_long {
            gate.reject_too_large();
            continue;
        }
        if line.is_empty() {
            break; // end of input
        }
        gate.submit(&String::from_utf8_lossy(&line));
    }
    // Input ended: let the answers to what was already sent go out (bounded wait).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(12), async {
        loop {
            let idle = gate.lock().pending.is_empty();
            if idle {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    drop(gate);
    writer.abort();
    Ok(())
}
