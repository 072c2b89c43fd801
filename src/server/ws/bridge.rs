//! The Redis bridge: carries WebSocket broadcasts between replicas over the cache store's
//! pub/sub, when a cache URL resolves (`CACHE_URL`, else `[scale.database] cache_url`).
//!
//! - **Out.** A hub hands every local broadcast to [`Handle::publish`] (a bounded
//!   channel, never waiting); the publisher task sends it as `PUBLISH <channel>
//!   {"replica", "walker", "private", "frame"}` on one multiplexed connection.
//! - **In.** The subscriber task holds one `SUBSCRIBE <channel>` connection and gives
//!   each message of *another* replica (the replica id is random per process) to the
//!   registry, which passes it to that walker's hub, if the walker has sessions here. A
//!   replica skips its own messages: its hub delivered them already, so every client
//!   gets each broadcast exactly once.
//! - **Failure.** Both tasks reconnect with capped exponential backoff (100 ms doubling
//!   to 10 s). While the cache store is unreachable the feature is off (logged once per
//!   outage, with the reason): broadcasts reach this replica's clients only and are not
//!   queued for later.
//!
//! Redis stays here, in the binary; `lang` and `actors` know nothing of it.

use super::Registry;
use actix::ArbiterHandle;
use bytestring::ByteString;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// First retry delay after a failure; doubled per failure up to [`BACKOFF_MAX`].
pub const BACKOFF_MIN: Duration = Duration::from_millis(100);
pub const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Broadcasts waiting for the publisher at most; more are dropped (logged).
const OUTBOUND_CAPACITY: usize = 4096;

/// What hubs hold to publish: cheap to clone.
#[derive(Clone, Debug)]
pub struct Handle {
    tx: mpsc::Sender<Outbound>,
}

#[derive(Debug)]
struct Outbound {
    walker: String,
    private: bool,
    frame: ByteString,
}

/// One message on the channel.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    replica: String,
    walker: String,
    private: bool,
    frame: String,
}

impl Handle {
    /// Queue a local broadcast for the other replicas; never waits.
    pub fn publish(&self, walker: &str, private: bool, frame: &ByteString) {
        let out = Outbound {
            walker: walker.to_string(),
            private,
            frame: frame.clone(),
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(out) {
            tracing::warn!(
                target: "svc::ws",
                walker,
                "cross-replica broadcast dropped: {OUTBOUND_CAPACITY} broadcasts are waiting \
                 for the cache store"
            );
        }
    }
}

/// Capped exponential backoff.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { next: BACKOFF_MIN }
    }
}

impl Backoff {
    /// The delay before the next attempt (then doubled, at most [`BACKOFF_MAX`]).
    pub fn next_delay(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        now
    }

    pub fn reset(&mut self) {
        self.next = BACKOFF_MIN;
    }
}

/// Start the bridge on `home` (the hubs' arbiter): `None`, with the reason logged, when
/// the URL is not a usable Redis URL.
pub fn start(
    url: &str,
    channel: &str,
    replica: String,
    registry: Weak<Registry>,
    home: &ArbiterHandle,
) -> Option<Handle> {
    let shown = redact(url);
    let client = match redis::Client::open(url) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(
                target: "svc::ws",
                "WebSocket broadcast across replicas: off (cache URL {shown} is not usable: {e}); \
                 broadcasts reach this process's clients only"
            );
            return None;
        }
    };
    tracing::info!(
        target: "svc::ws",
        "WebSocket broadcast across replicas: over the cache store {shown}, pub/sub channel \
         {channel} (replica {replica})"
    );
    let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
    let shared = Arc::new(Shared {
        client,
        channel: channel.to_string(),
        replica,
        shown,
    });
    home.spawn(publisher(Arc::clone(&shared), rx));
    home.spawn(subscriber(shared, registry));
    Some(Handle { tx })
}

struct Shared {
    client: redis::Client,
    channel: String,
    replica: String,
    /// The URL without credentials, for logs.
    shown: String,
}

async fn publisher(shared: Arc<Shared>, mut rx: mpsc::Receiver<Outbound>) {
    let mut out = PublishConnection::new(
        shared.client.clone(),
        shared.channel.clone(),
        shared.shown.clone(),
        "cross-replica WebSocket broadcast",
    );
    while let Some(broadcast) = rx.recv().await {
        // While the cache store is off, this broadcast stays local.
        if !out.ready().await {
            continue;
        }
        let wire = Wire {
            replica: shared.replica.clone(),
            walker: broadcast.walker,
            private: broadcast.private,
            frame: broadcast.frame.to_string(),
        };
        if let Ok(payload) = serde_json::to_string(&wire) {
            out.publish(payload).await;
        }
    }
}

/// One `PUBLISH` connection to the cache store, shared by the WebSocket bridge and the L1
/// invalidation publisher: connected on demand, and after a failure re-tried no sooner
/// than a capped exponential backoff allows (messages in between are skipped: the
/// feature is off meanwhile, logged once per outage).
pub(crate) struct PublishConnection {
    client: redis::Client,
    channel: String,
    /// The URL without credentials, for logs.
    shown: String,
    /// What is published, for logs.
    what: &'static str,
    conn: Option<redis::aio::MultiplexedConnection>,
    backoff: Backoff,
    retry_at: tokio::time::Instant,
    down: bool,
}

impl PublishConnection {
    pub(crate) fn new(
        client: redis::Client,
        channel: String,
        shown: String,
        what: &'static str,
    ) -> PublishConnection {
        PublishConnection {
            client,
            channel,
            shown,
            what,
            conn: None,
            backoff: Backoff::default(),
            retry_at: tokio::time::Instant::now(),
            down: false,
        }
    }

    /// Connected, connecting now if the backoff allows; `false` while off.
    pub(crate) async fn ready(&mut self) -> bool {
        if self.conn.is_some() {
            return true;
        }
        if tokio::time::Instant::now() < self.retry_at {
            return false;
        }
        match connect(self.client.get_multiplexed_async_connection()).await {
            Ok(c) => {
                self.conn = Some(c);
                self.backoff.reset();
                if self.down {
                    tracing::info!(
                        "cache store {} reachable again: {} on",
                        self.shown,
                        self.what
                    );
                    self.down = false;
                }
                true
            }
            Err(e) => {
                if !self.down {
                    tracing::warn!(
                        "{} off: cannot publish to the cache store {}: {e}; retrying with backoff",
                        self.what,
                        self.shown
                    );
                    self.down = true;
                }
                self.retry_at = tokio::time::Instant::now() + self.backoff.next_delay();
                false
            }
        }
    }

    /// `PUBLISH` `payload` on the channel; `false` (logged, connection dropped) when it
    /// failed.
    pub(crate) async fn publish(&mut self, payload: String) -> bool {
        let Some(c) = self.conn.as_mut() else {
            return false;
        };
        let sent: redis::RedisResult<i64> = redis::cmd("PUBLISH")
            .arg(&self.channel)
            .arg(payload)
            .query_async(c)
            .await;
        match sent {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(
                    "{} lost a message: PUBLISH to {} failed: {e}; reconnecting",
                    self.what,
                    self.shown
                );
                self.conn = None;
                self.down = true;
                self.retry_at = tokio::time::Instant::now() + self.backoff.next_delay();
                false
            }
        }
    }
}

async fn subscriber(shared: Arc<Shared>, registry: Weak<Registry>) {
    let mut backoff = Backoff::default();
    let mut down = false;
    loop {
        if registry.strong_count() == 0 {
            return;
        }
        match connect(shared.client.get_async_pubsub()).await {
            Ok(mut pubsub) => match pubsub.subscribe(&shared.channel).await {
                Ok(()) => {
                    backoff.reset();
                    tracing::info!(
                        target: "svc::ws",
                        "WebSocket broadcast across replicas: on, subscribed to {} on {}",
                        shared.channel,
                        shared.shown
                    );
                    let mut messages = pubsub.on_message();
                    while let Some(msg) = messages.next().await {
                        let Some(registry) = registry.upgrade() else {
                            return;
                        };
                        receive(&shared, &registry, msg.get_payload_bytes());
                    }
                    tracing::warn!(
                        target: "svc::ws",
                        "cross-replica broadcast off: lost the cache store {}; reconnecting with \
                         backoff",
                        shared.shown
                    );
                    down = true;
                }
                Err(e) => log_down(&shared, &mut down, &e.to_string()),
            },
            Err(e) => log_down(&shared, &mut down, &e),
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

fn log_down(shared: &Shared, down: &mut bool, reason: &str) {
    if !*down {
        tracing::warn!(
            target: "svc::ws",
            "WebSocket broadcast across replicas: off (cache store {} unreachable: {reason}); \
             broadcasts reach this process's clients only; retrying with backoff (at most \
             every {} s)",
            shared.shown,
            BACKOFF_MAX.as_secs()
        );
        *down = true;
    } else {
        tracing::debug!(target: "svc::ws", "cache store {} still unreachable: {reason}", shared.shown);
    }
}

/// One message from the channel: another replica's broadcast goes to the walker's hub.
fn receive(shared: &Shared, registry: &Registry, payload: &[u8]) {
    let wire: Wire = match serde_json::from_slice(payload) {
        Ok(w) => w,
        Err(e) => {
            tracing::debug!(target: "svc::ws", "ignored a malformed broadcast on {}: {e}", shared.channel);
            return;
        }
    };
    if wire.replica == shared.replica {
        return; // ours: delivered locally already
    }
    registry.deliver_remote(&wire.walker, wire.private, ByteString::from(wire.frame));
}

pub(crate) async fn connect<T>(
    attempt: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no connection within {} s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

/// A URL without its user and password, for logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<cache URL>".into();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap() {
        let mut b = Backoff::default();
        let delays: Vec<u64> = (0..10).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000, 10000]
        );
        b.reset();
        assert_eq!(b.next_delay(), BACKOFF_MIN);
    }

    #[test]
    fn credentials_stay_out_of_logs() {
        assert_eq!(
            redact("redis://:secret@cache:6379/0"),
            "redis://***@cache:6379/0"
        );
        assert_eq!(redact("redis://cache:6379"), "redis://cache:6379");
        assert_eq!(redact("nonsense"), "<cache URL>");
    }
}
