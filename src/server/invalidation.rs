//! Cross-replica L1 invalidation (spec "Memory hierarchy"), when a cache URL resolves and
//! `[scale.database] cache_l1_invalidation_enabled` is on (the default).
//!
//! - **Out.** Every successful commit of a served call is a `Committed` notice from the
//!   run worker (`RuntimeConfig::committed`): queued here without waiting (a bounded
//!   channel; a full one drops the notice, logged: invalidation is a hint, commits stay
//!   version-checked) and sent by the publisher task as `PUBLISH <channel> {"replica",
//!   "run", "written", "deleted"}` (anchor ids in their text form).
//! - **In.** The subscriber task holds one `SUBSCRIBE <channel>` connection and hands
//!   each message, this replica's own included, to the `InvalidationListener` actor (one
//!   per process), whose one message is `Invalidate`. It flags the anchors stale in every
//!   live run of this process (`Runtime::flag_stale`, the run actors' `Stale` message):
//!   for its own replica's notice every run but the writer; deletes flag everyone. A run
//!   then reloads those it holds unmodified and has not read yet.
//! - **Failure.** Both tasks reconnect with capped exponential backoff (the WebSocket
//!   bridge's `Backoff`, 100 ms to 10 s); while the cache store is unreachable the
//!   feature is off (logged once per outage) and only per-run L1 caches remain.

use super::ws::bridge::{Backoff, PublishConnection, connect, redact};
use actix::{Actor, Addr, Context, Handler, Message};
use actors::runtime::{CommitSink, Committed, RunId, Runtime};
use futures_util::StreamExt as _;
use lang::host::{AnchorId, format_id, parse_id};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Commit notices waiting for the publisher at most; more are dropped (logged).
const OUTBOUND_CAPACITY: usize = 8192;
/// Anchors one notice names at most (a bigger commit is sent in several messages).
const MAX_IDS_PER_MESSAGE: usize = 1024;

/// One message on the channel.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    replica: String,
    run: u64,
    written: Vec<String>,
    deleted: Vec<String>,
}

/// The publishing half, created before the runtime (whose workers feed it).
pub struct Publisher {
    client: redis::Client,
    channel: String,
    shown: String,
    replica: String,
    tx: mpsc::Sender<Committed>,
    rx: mpsc::Receiver<Committed>,
}

impl Publisher {
    /// `None` (logged) without a cache URL, with the feature switched off, or with an
    /// unusable URL.
    pub fn new(cache_url: Option<&str>, channel: Option<&str>) -> Option<Publisher> {
        let Some(url) = cache_url else {
            tracing::info!(
                target: "svc::cache",
                "L1 invalidation across replicas: off (no cache URL); each run keeps its own L1"
            );
            return None;
        };
        let Some(channel) = channel else {
            tracing::info!(
                target: "svc::cache",
                "L1 invalidation across replicas: off ([scale.database] \
                 cache_l1_invalidation_enabled = false)"
            );
            return None;
        };
        let shown = redact(url);
        let client = match redis::Client::open(url) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(
                    target: "svc::cache",
                    "L1 invalidation across replicas: off (cache URL {shown} is not usable: {e})"
                );
                return None;
            }
        };
        let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
        Some(Publisher {
            client,
            channel: channel.to_string(),
            shown,
            replica: format!("{:032x}", actors::random_id()),
            tx,
            rx,
        })
    }

    /// What the run workers call after each commit: queue the notice, never wait.
    pub fn sink(&self) -> CommitSink {
        let tx = self.tx.clone();
        Arc::new(move |notice: Committed| {
            if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(notice) {
                tracing::warn!(
                    target: "svc::cache",
                    "an L1 invalidation was dropped: {OUTBOUND_CAPACITY} are waiting for the \
                     cache store"
                );
            }
        })
    }

    /// Start the publisher task and the listener (actor and subscriber task) on the
    /// current arbiter.
    pub fn start(self, runtime: &Runtime) {
        tracing::info!(
            target: "svc::cache",
            "L1 invalidation across replicas: over the cache store {}, channel {} (replica {})",
            self.shown,
            self.channel,
            self.replica
        );
        let shared = Arc::new(Shared {
            client: self.client,
            channel: self.channel,
            shown: self.shown,
            replica: self.replica,
        });
        let listener = InvalidationListener {
            runtime: runtime.clone(),
            replica: shared.replica.clone(),
        }
        .start();
        actix::spawn(publisher(Arc::clone(&shared), self.rx));
        actix::spawn(subscriber(shared, listener));
    }
}

struct Shared {
    client: redis::Client,
    channel: String,
    shown: String,
    replica: String,
}

/// `Invalidate`: anchors another run changed.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Invalidate {
    /// The writing replica and run.
    pub replica: String,
    pub run: RunId,
    pub written: Vec<AnchorId>,
    pub deleted: Vec<AnchorId>,
}

/// The process's one invalidation listener: turns channel messages into the run
/// actors' `Stale` messages.
pub struct InvalidationListener {
    runtime: Runtime,
    replica: String,
}

impl Actor for InvalidationListener {
    type Context = Context<Self>;
}

impl Handler<Invalidate> for InvalidationListener {
    type Result = ();

    fn handle(&mut self, msg: Invalidate, _: &mut Context<Self>) {
        // The writer's own L1 is current; everyone else's copy may not be.
        let writer = (msg.replica == self.replica).then_some(msg.run);
        let told = self.runtime.flag_stale(&msg.written, writer)
            + self.runtime.flag_stale(&msg.deleted, None);
        tracing::trace!(
            target: "svc::cache",
            written = msg.written.len(),
            deleted = msg.deleted.len(),
            told,
            "anchors flagged stale"
        );
    }
}

async fn publisher(shared: Arc<Shared>, mut rx: mpsc::Receiver<Committed>) {
    let mut out = PublishConnection::new(
        shared.client.clone(),
        shared.channel.clone(),
        shared.shown.clone(),
        "L1 invalidation across replicas",
    );
    while let Some(notice) = rx.recv().await {
        if !out.ready().await {
            continue;
        }
        for payload in messages(&shared.replica, &notice) {
            if !out.publish(payload).await {
                break;
            }
        }
    }
}

/// The channel messages of one notice (at most `MAX_IDS_PER_MESSAGE` ids each).
fn messages(replica: &str, notice: &Committed) -> Vec<String> {
    let ids = |v: &[AnchorId]| v.iter().map(|&id| format_id(id)).collect::<Vec<_>>();
    let mut out = Vec::new();
    let mut written = notice.written.chunks(MAX_IDS_PER_MESSAGE);
    let mut deleted = notice.deleted.chunks(MAX_IDS_PER_MESSAGE);
    loop {
        let (w, d) = (written.next(), deleted.next());
        if w.is_none() && d.is_none() {
            return out;
        }
        let wire = Wire {
            replica: replica.to_string(),
            run: notice.run.0,
            written: w.map(ids).unwrap_or_default(),
            deleted: d.map(ids).unwrap_or_default(),
        };
        if let Ok(text) = serde_json::to_string(&wire) {
            out.push(text);
        }
    }
}

async fn subscriber(shared: Arc<Shared>, listener: Addr<InvalidationListener>) {
    let mut backoff = Backoff::default();
    let mut down = false;
    loop {
        if !listener.connected() {
            return;
        }
        let reason = match connect(shared.client.get_async_pubsub()).await {
            Ok(mut pubsub) => match pubsub.subscribe(&shared.channel).await {
                Ok(()) => {
                    backoff.reset();
                    tracing::info!(
                        target: "svc::cache",
                        "L1 invalidation across replicas: on, subscribed to {} on {}",
                        shared.channel,
                        shared.shown
                    );
                    down = false;
                    let mut stream = pubsub.on_message();
                    while let Some(msg) = stream.next().await {
                        if let Some(invalidate) = receive(msg.get_payload_bytes()) {
                            listener.do_send(invalidate);
                        }
                    }
                    "the connection was lost".to_string()
                }
                Err(e) => e.to_string(),
            },
            Err(e) => e,
        };
        if !down {
            tracing::warn!(
                target: "svc::cache",
                "L1 invalidation across replicas: off (cache store {}: {reason}); only \
                 per-run L1 caches remain; reconnecting with backoff",
                shared.shown
            );
            down = true;
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// A channel message as the listener's message; malformed ones are ignored.
fn receive(payload: &[u8]) -> Option<Invalidate> {
    let wire: Wire = serde_json::from_slice(payload).ok()?;
    let ids = |v: Vec<String>| v.iter().filter_map(|s| parse_id(s)).collect::<Vec<_>>();
    Some(Invalidate {
        replica: wire.replica,
        run: RunId(wire.run),
        written: ids(wire.written),
        deleted: ids(wire.deleted),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_in_bounded_messages() {
        let written: Vec<AnchorId> = (1..=2500u128).collect();
        let notice = Committed {
            run: RunId(7),
            written: written.clone(),
            deleted: vec![99],
        };
        let texts = messages("r1", &notice);
        assert_eq!(texts.len(), 3, "2,500 ids in messages of at most 1,024");
        let back: Vec<Invalidate> = texts.iter().filter_map(|t| receive(t.as_bytes())).collect();
        let all: Vec<AnchorId> = back.iter().flat_map(|m| m.written.clone()).collect();
        assert_eq!(all, written);
        assert_eq!(back[0].deleted, vec![99]);
        assert!(back.iter().all(|m| m.run == RunId(7) && m.replica == "r1"));
        assert!(receive(b"not json").is_none());
    }
}
