//! WebSocket walkers (spec "WebSocket endpoint", decisions.md "WebSocket"): `GET
//! /ws/<walker>` upgrades to a WebSocket served by one session actor
//! (`session::WsSession`); each client message is one walker run on the caller's root.
//! Walkers declared `broadcast=True` have one hub actor (`hub::Hub`) that sends every
//! reply to every session of the walker, and, when a cache URL resolves, to the other
//! replicas through the Redis bridge (`bridge`).
//!
//! Before the upgrade: an unknown walker (or one that is not WEBSOCKET) is 404, a
//! draining server or a full house (`max_connections`) 503, a request that is no
//! WebSocket handshake 400, all as the JSON envelope. Authentication happens after the
//! upgrade so a browser sees the close code: the token comes from the `token` query
//! parameter (or an `Authorization: Bearer` header), else from a `token` field of the
//! first message; an invalid token, or none for a private walker, closes with 4401.
//!
//! The `Registry` (in `AppState`) knows every open session (for `max_connections` and to
//! close them all with 1001 on shutdown) and every hub.

pub mod bridge;
pub mod hub;
pub mod messages;
pub mod session;
pub mod wire;

use super::AppState;
use super::auth;
use super::errors::{ApiError, ErrorCode};
use super::params::percent_decode;
use crate::config::WebsocketConfig;
use actix::{Actor as _, Addr, ArbiterHandle};
use actix_web::{HttpRequest, HttpResponse, web};
use actors::identity::IdentityHandle as Identity;
use bytestring::ByteString;
use hub::Hub;
use messages::{CloseSession, Join, RemoteBroadcast};
use session::{Auth, Limits, Opening, WsSession};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Open sessions and hubs of this process.
pub struct Registry {
    config: WebsocketConfig,
    next_id: AtomicU64,
    open: AtomicUsize,
    sessions: Mutex<HashMap<u64, Addr<WsSession>>>,
    hubs: Mutex<HashMap<String, Addr<Hub>>>,
    /// Where hubs and the bridge run (the server's main arbiter).
    home: ArbiterHandle,
    bridge: Option<bridge::Handle>,
}

impl Registry {
    /// Must run inside the actix System: hubs and the bridge live on the current arbiter.
    /// With a cache URL the Redis bridge starts (the mode is logged either way).
    pub fn start(config: WebsocketConfig, cache_url: Option<&str>) -> Arc<Registry> {
        let home = actix::Arbiter::current();
        let channel = config.broadcast_channel.clone();
        Arc::new_cyclic(|weak| {
            let bridge = match cache_url {
                Some(url) => bridge::start(
                    url,
                    &channel,
                    format!("{:032x}", actors::random_id()),
                    weak.clone(),
                    &home,
                ),
                None => {
                    tracing::info!(
                        target: "svc::ws",
                        "WebSocket broadcast: this process only (no cache URL; set CACHE_URL \
                         or [scale.database] cache_url to share broadcasts across replicas)"
                    );
                    None
                }
            };
            Registry {
                config,
                next_id: AtomicU64::new(1),
                open: AtomicUsize::new(0),
                sessions: Mutex::new(HashMap::new()),
                hubs: Mutex::new(HashMap::new()),
                home,
                bridge,
            }
        })
    }

    /// Sessions open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Take a slot for a new session, or 503 when `max_connections` are open.
    fn admit(&self) -> Result<u64, ApiError> {
        let max = self.config.max_connections;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| {
                ApiError::unavailable(
                    format!(
                        "too many WebSocket connections: {max} are open \
                         ([scale.websocket] max_connections)"
                    ),
                    1,
                )
            })?;
        Ok(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn register(&self, id: u64, addr: Addr<WsSession>) {
        lock(&self.sessions).insert(id, addr);
    }

    /// A session stopped: its slot is free.
    pub fn remove(&self, id: u64) {
        if lock(&self.sessions).remove(&id).is_some() {
            self.open.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The hub of `walker`, started on first use.
    fn hub(&self, walker: &str) -> Addr<Hub> {
        let mut hubs = lock(&self.hubs);
        if let Some(h) = hubs.get(walker).filter(|h| h.connected()) {
            return h.clone();
        }
        let hub = Hub::new(walker.to_string(), self.bridge.clone());
        let addr = Hub::start_in_arbiter(&self.home, move |_| hub);
        hubs.insert(walker.to_string(), addr.clone());
        addr
    }

    /// Another replica's broadcast: to the walker's hub, if it has sessions here.
    pub fn deliver_remote(&self, walker: &str, private: bool, frame: ByteString) {
        if let Some(hub) = lock(&self.hubs).get(walker) {
            hub.do_send(RemoteBroadcast { frame, private });
        }
    }

    /// Close every session (shutdown: 1001).
    pub fn close_all(&self, code: u16, reason: &str) {
        let sessions: Vec<Addr<WsSession>> = lock(&self.sessions).values().cloned().collect();
        for s in sessions {
            s.do_send(CloseSession {
                code,
                reason: reason.to_string(),
            });
        }
    }

    fn limits(&self) -> Limits {
        let c = &self.config;
        Limits {
            ping_interval: Duration::from_secs_f64(c.ping_interval_seconds),
            idle_timeout: Duration::from_secs_f64(c.idle_timeout_seconds),
            auth_timeout: Duration::from_secs_f64(c.auth_timeout_seconds),
            max_frame_bytes: c.max_frame_bytes,
            outbox_capacity: c.outbox_capacity,
            max_queued: c.max_queued_messages,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Mount `GET /ws/{walker}`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/ws/{walker}").route(web::get().to(connect)));
}

/// `GET /ws/<walker>`: check, upgrade, start the session actor.
async fn connect(
    req: HttpRequest,
    body: web::Payload,
    walker: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let walker = walker.into_inner();
    let Some(endpoint) = state.table().websocket(&walker) else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no WebSocket walker '{walker}'"),
        ));
    };
    if state.draining.load(Ordering::Acquire) {
        return Err(ApiError::unavailable("the server is shutting down", 1));
    }
    let registry = Arc::clone(&state.ws);
    let identity = req.app_data::<web::Data<Identity>>().cloned();
    let auth = handshake_auth(&req, identity.as_deref().map(|d| &**d), endpoint.public).await;
    wire::verify(&req).map_err(|e| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("expected a WebSocket handshake: {e}"),
        )
    })?;
    let limits = registry.limits();
    let auth = match auth {
        Ok(a) => a,
        Err(e) => {
            // Upgrade, then close at once with 4401 (the reason as the close frame's).
            let (outbox, rx) = tokio::sync::mpsc::channel(1);
            drop(outbox);
            let (closer, close_rx) = tokio::sync::oneshot::channel();
            let (gone, _) = tokio::sync::oneshot::channel();
            let _ = closer.send(Some(wire::CloseReason {
                code: session::CLOSE_UNAUTHORIZED.into(),
                description: Some(e.message),
            }));
            drop(body);
            return Ok(wire::upgrade(&req, wire::WsBody::new(rx, close_rx, gone)));
        }
    };
    let id = registry.admit()?;
    let hub = endpoint.spec.broadcast.then(|| registry.hub(&walker));
    let hub_join = hub.clone();
    let joined = match &auth {
        Auth::Ready { authenticated, .. } => Some(*authenticated),
        Auth::GuestUnlessFirst => Some(false),
        Auth::Pending => None,
    };
    let opening = Opening {
        id,
        walker,
        state: state.clone(),
        identity,
        registry: Arc::clone(&registry),
        limits,
        auth,
        hub,
    };
    let (addr, outbox, body) = WsSession::start(opening, body);
    // Join the hub before the handshake is answered: a client that has its 101 receives
    // every broadcast made after it (a join from the session's own start could still be
    // on its way when another client's message is broadcast).
    if let (Some(hub), Some(authenticated)) = (&hub_join, joined) {
        let _ = hub
            .send(Join {
                session: id,
                to: addr.clone().recipient(),
                close: addr.clone().recipient(),
                outbox,
                authenticated,
            })
            .await;
    }
    registry.register(id, addr);
    Ok(wire::upgrade(&req, body))
}

/// Who the session starts as. A token sent with the handshake (`token` query
/// parameter, else an `Authorization: Bearer` header) is checked now, by the HTTP path's
/// own function; its verdict is given after the upgrade (close 4401), where every
/// WebSocket client can read it. Without one the first message may carry it.
async fn handshake_auth(
    req: &HttpRequest,
    identity: Option<&Identity>,
    public: bool,
) -> Result<Auth, ApiError> {
    let token = match query_token(req.query_string()) {
        Some(t) => Some(t),
        None => auth::bearer_token(req.headers())?.map(str::to_string),
    };
    match token {
        Some(t) => Ok(Auth::Ready {
            caller: auth::resolve(identity, public, Some(&t)).await?,
            authenticated: true,
        }),
        None if public => Ok(Auth::GuestUnlessFirst),
        None => Ok(Auth::Pending),
    }
}

/// The `token` query parameter, percent-decoded; empty counts as absent.
fn query_token(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| percent_decode(v, true))
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_from_the_query() {
        assert_eq!(query_token("token=abc").as_deref(), Some("abc"));
        assert_eq!(query_token("x=1&token=a%2Eb").as_deref(), Some("a.b"));
        assert_eq!(query_token("tokens=1"), None);
        assert_eq!(query_token("token="), None);
        assert_eq!(query_token("token"), None);
        assert_eq!(query_token(""), None);
    }
}
