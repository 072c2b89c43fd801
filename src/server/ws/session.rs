//! The session actor: one per WebSocket connection. It owns the connection's outbox and
//! its state (who the caller is, messages waiting to run, heartbeat), and handles:
//!
//! - client frames (a `StreamHandler` over `wire::Frames`): JSON text is a walker run,
//!   `{"type": "ping"}` is answered `{"type": "pong"}`, protocol pings are ponged,
//!   continuation frames are joined (at most `max_frame_bytes`, else close 4413);
//! - the outcome of its runs (an actor future per run; one run at a time, in arrival
//!   order, at most `max_queued_messages` waiting);
//! - `Deliver` (a hub's broadcast), `CloseSession` (shutdown), `Tick` (heartbeat).
//!
//! Writing never blocks the actor: frames go into a bounded outbox that the response
//! body (`wire::WsBody`) drains into the socket. A full outbox means the client does not
//! read: the session is closed with 1013 ("try again later") rather than slowing anyone
//! else.

use super::messages::{CloseSession, Deliver, Join, Leave, Publish, Tick};
use super::wire::{CloseCode, CloseReason, Frames, Item, Outgoing, WsBody};
use super::{Registry, hub::Hub};
use crate::server::AppState;
use crate::server::auth;
use crate::server::envelope::{ws_failure, ws_success};
use crate::server::errors::{ApiError, ErrorCode};
use crate::server::middleware::new_trace_id;
use crate::server::params::json_kind;
use actix::{
    Actor, ActorContext as _, ActorFutureExt as _, Addr, AsyncContext as _, Handler, StreamHandler,
    WrapFuture as _,
};
use actix_http::ws::{Message, ProtocolError};
use actix_web::web::{self, Bytes, BytesMut};
use actors::identity::IdentityHandle as Identity;
use actors::runtime::{CallError, CallOutcome, CallRequest, Caller, EndpointKind, Start};
use bytestring::ByteString;
use serde_json::{Map, Value as Json};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Close codes of decisions.md and RFC 6455.
pub const CLOSE_UNAUTHORIZED: u16 = 4401;
pub const CLOSE_TOO_BIG: u16 = 4413;
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_GOING_AWAY: u16 = 1001;
pub const CLOSE_PROTOCOL: u16 = 1002;
pub const CLOSE_TRY_AGAIN: u16 = 1013;

/// Who the session's runs run as.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Known: from the `token` query parameter, the first message, or the guest.
    Ready { caller: Caller, authenticated: bool },
    /// A public walker without a query token: the guest, unless the first message
    /// carries a `token`.
    GuestUnlessFirst,
    /// A private walker without a query token: the first message must carry one.
    Pending,
}

/// The limits a session runs under (`[scale.websocket]`).
#[derive(Clone, Debug)]
pub struct Limits {
    pub ping_interval: Duration,
    pub idle_timeout: Duration,
    pub auth_timeout: Duration,
    pub max_frame_bytes: usize,
    pub outbox_capacity: usize,
    pub max_queued: usize,
}

/// A session's bounded outbox, as its hub holds it: a broadcast frame goes straight into
/// it (no hop through the session actor's mailbox, one wake-up per delivery instead of
/// two); a full or closed outbox is the hub's to handle (`hub::Hub::deliver`).
#[derive(Clone, Debug)]
pub struct Outbox(mpsc::Sender<Outgoing>);

/// Why `Outbox::offer` did not take a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// `outbox_capacity` frames wait: the client does not read.
    Full,
    /// The session's writer has ended.
    Closed,
}

impl Outbox {
    /// Queue `frame` for the client without waiting.
    pub fn offer(&self, frame: ByteString) -> Result<(), Refused> {
        self.0.try_send(Outgoing::Text(frame)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Refused::Full,
            mpsc::error::TrySendError::Closed(_) => Refused::Closed,
        })
    }

    /// The session's writer has ended (the socket is gone).
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The close reason of a session whose client does not read.
pub const SLOW_CLIENT_REASON: &str = "too many frames waiting: the client does not read";

/// One client message waiting for its run.
#[derive(Debug)]
struct Job {
    args: Map<String, Json>,
    /// The first message's `token`, to be verified before the run.
    token: Option<String>,
}

/// A message arriving in continuation frames.
#[derive(Debug)]
struct Fragments {
    text: bool,
    bytes: BytesMut,
}

pub struct WsSession {
    id: u64,
    walker: String,
    state: web::Data<AppState>,
    identity: Option<web::Data<Identity>>,
    registry: Arc<Registry>,
    limits: Limits,
    auth: Auth,
    outbox: mpsc::Sender<Outgoing>,
    closer: Option<oneshot::Sender<Option<CloseReason>>>,
    waiting: VecDeque<Job>,
    running: bool,
    first_seen: bool,
    fragments: Option<Fragments>,
    /// This walker's hub, when it broadcasts.
    hub: Option<Addr<Hub>>,
    opened: Instant,
    last_heard: Instant,
    last_ping: Instant,
}

/// Everything a session starts with.
pub struct Opening {
    pub id: u64,
    pub walker: String,
    pub state: web::Data<AppState>,
    pub identity: Option<web::Data<Identity>>,
    pub registry: Arc<Registry>,
    pub limits: Limits,
    pub auth: Auth,
    pub hub: Option<Addr<Hub>>,
}

impl WsSession {
    /// Start the actor for an upgraded connection: it reads the client's frames from
    /// `payload`; the returned body (the response's) writes its outbox to the client.
    pub fn start(opening: Opening, payload: web::Payload) -> (Addr<WsSession>, Outbox, WsBody) {
        let (outbox, rx) = mpsc::channel(opening.limits.outbox_capacity.max(1));
        let handle = Outbox(outbox.clone());
        let (closer, close_rx) = oneshot::channel();
        let (gone, gone_rx) = oneshot::channel();
        let body = WsBody::new(rx, close_rx, gone);
        let frames = Frames::new(
            payload.into_inner(),
            opening.limits.max_frame_bytes,
            gone_rx,
        );
        let now = Instant::now();
        let addr = WsSession::create(move |ctx| {
            ctx.add_stream(frames);
            WsSession {
                id: opening.id,
                walker: opening.walker,
                state: opening.state,
                identity: opening.identity,
                registry: opening.registry,
                limits: opening.limits,
                auth: opening.auth,
                outbox,
                closer: Some(closer),
                waiting: VecDeque::new(),
                running: false,
                first_seen: false,
                fragments: None,
                hub: opening.hub,
                opened: now,
                last_heard: now,
                last_ping: now,
            }
        });
        (addr, handle, body)
    }

    /// Queue a frame for the client; a full outbox closes the session (1013).
    fn send(&mut self, out: Outgoing, ctx: &mut actix::Context<Self>) {
        match self.outbox.try_send(out) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::info!(
                    target: "svc::ws",
                    session = self.id,
                    walker = %self.walker,
                    "closing a session whose client does not read: {} frames waiting",
                    self.limits.outbox_capacity
                );
                self.close(CLOSE_TRY_AGAIN, SLOW_CLIENT_REASON, ctx);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => ctx.stop(),
        }
    }

    fn send_text(&mut self, text: impl Into<ByteString>, ctx: &mut actix::Context<Self>) {
        crate::metrics::global().ws_message(&self.walker, "out");
        self.send(Outgoing::Text(text.into()), ctx);
    }

    fn send_error(&mut self, error: &ApiError, ctx: &mut actix::Context<Self>) {
        self.send_text(ws_failure(error), ctx);
    }

    /// Close with `code` (the writer sends the close frame) and stop.
    fn close(&mut self, code: u16, reason: &str, ctx: &mut actix::Context<Self>) {
        if let Some(closer) = self.closer.take() {
            let _ = closer.send(Some(CloseReason {
                code: CloseCode::from(code),
                description: Some(reason.to_string()),
            }));
        }
        ctx.stop();
    }

    /// Join this walker's hub (again, when the session authenticates).
    fn join_hub(&self, ctx: &mut actix::Context<Self>) {
        let authenticated = match &self.auth {
            Auth::Ready { authenticated, .. } => *authenticated,
            Auth::GuestUnlessFirst => false,
            Auth::Pending => return,
        };
        if let Some(hub) = &self.hub {
            hub.do_send(Join {
                session: self.id,
                to: ctx.address().recipient(),
                close: ctx.address().recipient(),
                outbox: Outbox(self.outbox.clone()),
                authenticated,
            });
        }
    }

    /// A complete text message from the client.
    fn on_text(&mut self, text: &str, ctx: &mut actix::Context<Self>) {
        let value: Json = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return self.send_error(
                    &ApiError::validation("message", format!("invalid JSON: {e}")),
                    ctx,
                );
            }
        };
        let Json::Object(mut args) = value else {
            return self.send_error(
                &ApiError::validation(
                    "message",
                    format!(
                        "expected a JSON object of the walker's fields, got {}",
                        json_kind(&value)
                    ),
                ),
                ctx,
            );
        };
        if args.get("type").and_then(Json::as_str) == Some("ping") {
            return self.send_text(r#"{"type":"pong"}"#, ctx);
        }
        // `token` is the transport's: taken from the first message, and dropped from
        // later ones unless the walker has a field of that name.
        let first = !self.first_seen;
        self.first_seen = true;
        let token = if first {
            match args.remove("token") {
                Some(Json::String(t)) => Some(t),
                Some(_) => {
                    return self.close(
                        CLOSE_UNAUTHORIZED,
                        "invalid token: `token` must be a string",
                        ctx,
                    );
                }
                None => None,
            }
        } else {
            if !self.walker_has_field("token") {
                args.remove("token");
            }
            None
        };
        let token = match (&self.auth, token) {
            (Auth::Pending, None) if first => {
                return self.close(
                    CLOSE_UNAUTHORIZED,
                    "authentication required: send a token (query parameter or first message)",
                    ctx,
                );
            }
            (Auth::GuestUnlessFirst, None) if first => {
                self.auth = Auth::Ready {
                    caller: Caller::default(),
                    authenticated: false,
                };
                None
            }
            // A session authenticated by its query token ignores a first-message token.
            (Auth::Ready { .. }, _) => None,
            (_, token) => token,
        };
        if self.waiting.len() >= self.limits.max_queued {
            return self.send_error(
                &ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    format!(
                        "too many messages waiting: {} are queued on this connection \
                         ([scale.websocket] max_queued_messages)",
                        self.limits.max_queued
                    ),
                ),
                ctx,
            );
        }
        self.waiting.push_back(Job { args, token });
        self.pump(ctx);
    }

    fn walker_has_field(&self, name: &str) -> bool {
        self.state
            .table()
            .websocket(&self.walker)
            .is_some_and(|e| e.params.iter().any(|p| p.name == name))
    }

    /// Start the next waiting run, unless one is running.
    fn pump(&mut self, ctx: &mut actix::Context<Self>) {
        if self.running {
            return;
        }
        let Some(job) = self.waiting.pop_front() else {
            return;
        };
        // The current table: after a `--dev` reload the next message runs the new code.
        let Some(endpoint) = self.state.table().websocket(&self.walker) else {
            self.send_error(
                &ApiError::new(
                    ErrorCode::NotFound,
                    format!("no WebSocket walker '{}'", self.walker),
                ),
                ctx,
            );
            return self.pump(ctx);
        };
        let known = match &self.auth {
            Auth::Ready { caller, .. } => Some(caller.clone()),
            _ => None,
        };
        let runtime = self.state.runtime.clone();
        let identity = self.identity.clone();
        let name = self.walker.clone();
        let public = endpoint.public;
        let run = RunPlan {
            broadcast: endpoint.spec.broadcast,
            private: !public,
        };
        self.running = true;
        let work = async move {
            let (caller, fresh) = match (known, job.token) {
                (Some(c), _) => (c, false),
                (None, token) => {
                    match auth::resolve(
                        identity.as_ref().map(|d| d.get_ref()),
                        public,
                        token.as_deref(),
                    )
                    .await
                    {
                        Ok(c) => {
                            let fresh = c.user_id.is_some();
                            (c, fresh)
                        }
                        Err(e) => return Done::Unauthorized(e),
                    }
                }
            };
            let outcome = runtime
                .call(CallRequest {
                    kind: EndpointKind::Walker,
                    name: name.clone(),
                    args: job.args,
                    start: Start::Root,
                    caller: caller.clone(),
                    trace_id: new_trace_id(),
                })
                .await;
            crate::metrics::global().run("ws", &name, crate::metrics::run_outcome(&outcome));
            Done::Ran {
                caller,
                fresh,
                outcome,
            }
        };
        ctx.spawn(
            work.into_actor(self)
                .map(move |done, act, ctx| act.finish(done, run, ctx)),
        );
    }

    fn finish(&mut self, done: Done, run: RunPlan, ctx: &mut actix::Context<Self>) {
        self.running = false;
        match done {
            Done::Unauthorized(e) => return self.close(CLOSE_UNAUTHORIZED, &e.message, ctx),
            Done::Ran {
                caller,
                fresh,
                outcome,
            } => {
                if !matches!(self.auth, Auth::Ready { .. }) {
                    self.auth = Auth::Ready {
                        caller,
                        authenticated: fresh,
                    };
                    self.join_hub(ctx);
                }
                match outcome {
                    Ok(outcome) => self.reply(&outcome, run, ctx),
                    Err(CallError::Cancelled) => return ctx.stop(),
                    Err(e) => self.send_error(&ApiError::from(e), ctx),
                }
            }
        }
        self.pump(ctx);
    }

    /// A successful run: to the hub when the walker broadcasts, else to this client.
    fn reply(&mut self, outcome: &CallOutcome, run: RunPlan, ctx: &mut actix::Context<Self>) {
        let frame = ByteString::from(ws_success(outcome));
        match (&self.hub, run.broadcast) {
            (Some(hub), true) => hub.do_send(Publish {
                frame,
                private: run.private,
            }),
            _ => self.send_text(frame, ctx),
        }
    }

    /// A data frame, whole or joined from continuations.
    fn on_data(&mut self, text: bool, bytes: Bytes, ctx: &mut actix::Context<Self>) {
        if !text {
            return self.send_error(
                &ApiError::new(
                    ErrorCode::UnsupportedMediaType,
                    "binary frames are not supported: send a JSON object as a text frame",
                ),
                ctx,
            );
        }
        match std::str::from_utf8(&bytes) {
            Ok(s) => self.on_text(s, ctx),
            Err(_) => self.close(CLOSE_PROTOCOL, "text frame is not UTF-8", ctx),
        }
    }

    fn on_continuation(&mut self, item: Item, ctx: &mut actix::Context<Self>) {
        let (start, text, bytes, last) = match item {
            Item::FirstText(b) => (true, true, b, false),
            Item::FirstBinary(b) => (true, false, b, false),
            Item::Continue(b) => (false, false, b, false),
            Item::Last(b) => (false, false, b, true),
        };
        if start {
            self.fragments = Some(Fragments {
                text,
                bytes: BytesMut::new(),
            });
        }
        let Some(f) = self.fragments.as_mut() else {
            return self.close(CLOSE_PROTOCOL, "continuation without a first frame", ctx);
        };
        if f.bytes.len() + bytes.len() > self.limits.max_frame_bytes {
            return self.too_big(ctx);
        }
        f.bytes.extend_from_slice(&bytes);
        if last && let Some(f) = self.fragments.take() {
            self.on_data(f.text, f.bytes.freeze(), ctx);
        }
    }

    fn too_big(&mut self, ctx: &mut actix::Context<Self>) {
        let reason = format!(
            "message too big: at most {} bytes ([scale.websocket] max_frame_bytes)",
            self.limits.max_frame_bytes
        );
        self.close(CLOSE_TOO_BIG, &reason, ctx);
    }
}

/// How a run's success is delivered, fixed when it starts.
#[derive(Clone, Copy, Debug)]
struct RunPlan {
    broadcast: bool,
    private: bool,
}

/// A run's end, back in the actor.
enum Done {
    Unauthorized(ApiError),
    Ran {
        caller: Caller,
        /// The caller was authenticated by this run's first-message token.
        fresh: bool,
        outcome: Result<CallOutcome, CallError>,
    },
}

impl Actor for WsSession {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut actix::Context<Self>) {
        // The upgrade handler joined the hub already (before answering the handshake);
        // `join_hub` runs again when a first message authenticates the session.
        let tick = self
            .limits
            .ping_interval
            .min(self.limits.idle_timeout / 4)
            .min(self.limits.auth_timeout / 4)
            .clamp(Duration::from_millis(20), Duration::from_secs(1));
        crate::metrics::global().ws_session(&self.walker, 1);
        ctx.run_interval(tick, |_, ctx| ctx.notify(Tick));
    }

    fn stopped(&mut self, _: &mut actix::Context<Self>) {
        crate::metrics::global().ws_session(&self.walker, -1);
        if let Some(hub) = &self.hub {
            hub.do_send(Leave { session: self.id });
        }
        // A stop without `close` (the client went away): the writer just ends.
        if let Some(closer) = self.closer.take() {
            let _ = closer.send(None);
        }
        self.registry.remove(self.id);
        tracing::debug!(
            target: "svc::ws",
            session = self.id,
            walker = %self.walker,
            open = self.registry.open(),
            "session closed"
        );
    }
}

impl StreamHandler<Result<Message, ProtocolError>> for WsSession {
    fn handle(&mut self, item: Result<Message, ProtocolError>, ctx: &mut actix::Context<Self>) {
        self.last_heard = Instant::now();
        let msg = match item {
            Ok(msg) => msg,
            Err(ProtocolError::Overflow) => return self.too_big(ctx),
            Err(e) => return self.close(CLOSE_PROTOCOL, &format!("protocol error: {e}"), ctx),
        };
        match msg {
            Message::Text(text) => {
                crate::metrics::global().ws_message(&self.walker, "in");
                if self.fragments.is_some() {
                    return self.close(
                        CLOSE_PROTOCOL,
                        "text frame inside a fragmented message",
                        ctx,
                    );
                }
                self.on_text(&text, ctx);
            }
            Message::Binary(bytes) => {
                crate::metrics::global().ws_message(&self.walker, "in");
                self.on_data(false, bytes, ctx);
            }
            Message::Continuation(item) => self.on_continuation(item, ctx),
            Message::Ping(bytes) => self.send(Outgoing::Pong(bytes), ctx),
            Message::Pong(_) | Message::Nop => {}
            Message::Close(reason) => {
                // Answer the client's close with its own code, then stop.
                if let Some(closer) = self.closer.take() {
                    let _ = closer.send(reason.or(Some(CloseCode::Normal.into())));
                }
                ctx.stop();
            }
        }
    }

    fn finished(&mut self, ctx: &mut actix::Context<Self>) {
        ctx.stop();
    }
}

impl Handler<Deliver> for WsSession {
    type Result = ();

    fn handle(&mut self, msg: Deliver, ctx: &mut actix::Context<Self>) {
        self.send(Outgoing::Text(msg.0), ctx);
    }
}

impl Handler<CloseSession> for WsSession {
    type Result = ();

    fn handle(&mut self, msg: CloseSession, ctx: &mut actix::Context<Self>) {
        self.close(msg.code, &msg.reason, ctx);
    }
}

impl Handler<Tick> for WsSession {
    type Result = ();

    fn handle(&mut self, _: Tick, ctx: &mut actix::Context<Self>) {
        let now = Instant::now();
        if now.duration_since(self.last_heard) >= self.limits.idle_timeout {
            return self.close(CLOSE_NORMAL, "idle timeout", ctx);
        }
        if matches!(self.auth, Auth::Pending)
            && !self.running
            && now.duration_since(self.opened) >= self.limits.auth_timeout
        {
            return self.close(
                CLOSE_UNAUTHORIZED,
                "authentication required: no token arrived in time",
                ctx,
            );
        }
        if now.duration_since(self.last_ping) >= self.limits.ping_interval {
            self.last_ping = now;
            self.send(Outgoing::Ping, ctx);
        }
    }
}
