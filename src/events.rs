//! Event streaming (service-spec "Events", decisions.md "Events"): the broker chosen at
//! start, the natives behind the language's `publish` / `broker.consume` / `broker.ack`
//! (`actors::natives::Natives`, called on run workers), and the consumer-group actors of
//! the app's `@subscribe` handlers (`consumer.rs`).
//!
//! - **Broker.** Off unless `[scale.events] enabled`. The stream broker (`cache.rs`,
//!   Redis streams) when a cache URL resolves (`[scale.events] url`, else the WebSocket
//!   bridge's resolution: `CACHE_URL` beats `[scale.database] cache_url`) and parses;
//!   else the in-memory broker (`local.rs`). The choice and its reason are logged.
//! - **Publish** never waits: in memory it is one append under a lock; to the stream
//!   broker it is a `try_send` into a bounded queue (`publish_queue_capacity`) drained by
//!   the `svc-scale-publisher` thread, which pipelines `XADD`s. Failures are logged and
//!   swallowed (fire-and-forget).
//! - **`svc run`** uses the in-memory broker of its own process when events are enabled
//!   (a script can publish and `broker.consume` its own events; `@subscribe` handlers
//!   run only under `svc start`), and no broker when they are not.
//!
//! Redis stays in the binary: `lang` and `actors` know nothing of it.

pub mod cache;
pub mod consumer;
pub mod local;
pub mod wire;

use crate::config::EventsConfig;
use actors::natives::{NativeCall, Natives, NativesHandle};
use lang::host::HostError;
use lang::serve::events::natives;
use serde_json::Value as Json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use wire::Record;

/// Where a new consumer group starts (`start_from`; ignored by an existing group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartFrom {
    /// Only events published after the group was created (the default).
    Latest,
    /// Every event the broker still retains.
    Earliest,
    /// A broker position: an offset (in memory) or a stream id (`1700000000000-0`).
    At(String),
}

impl StartFrom {
    pub fn parse(text: Option<&str>) -> StartFrom {
        match text.map(str::trim) {
            None | Some("" | "latest" | "$") => StartFrom::Latest,
            Some("earliest" | "0") => StartFrom::Earliest,
            Some(other) => StartFrom::At(other.to_string()),
        }
    }
}

/// One event handed to a consumer: its record has `delivery_id`, `delivery_topic` and
/// `delivery_group` filled in.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The broker's id of this delivery (an offset, or the stream entry id).
    pub id: String,
    pub record: Record,
    /// Earlier deliveries of this event to the group that ended without an
    /// acknowledgement (a consumer that crashed or lost it): each counts as a failed
    /// attempt, so an event that kills its consumer is dead-lettered after
    /// `max_attempts` however many processes it takes down.
    pub previous: u32,
}

/// The broker in use.
pub enum Broker {
    Local(local::LocalBroker),
    Cache(cache::CacheBroker),
}

impl Broker {
    /// `local` or `cache` (the spec's names in the start-up log).
    pub fn kind(&self) -> &'static str {
        match self {
            Broker::Local(_) => "local",
            Broker::Cache(_) => "cache",
        }
    }
}

/// The event service of one process: settings, broker, publisher queue.
pub struct Events {
    pub config: EventsConfig,
    pub broker: Broker,
    /// Random per process: names this replica's consumers in their groups.
    pub replica: String,
    /// The stream broker's publisher queue (taken at shutdown to flush it).
    publisher: Mutex<Option<mpsc::Sender<(String, String)>>>,
    publisher_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Events {
    /// The event service `svc start` runs with, or `None` (logged) when events are off.
    /// `cache_url` is the resolved `CACHE_URL` / `[scale.database] cache_url`.
    pub fn start(config: &EventsConfig, cache_url: Option<&str>) -> Option<Arc<Events>> {
        if !config.enabled {
            tracing::info!(
                target: "svc::events",
                "events: off ([scale.events] enabled = false): publish, subscribe and consume \
                 are no-ops"
            );
            return None;
        }
        let (url, from) = match (&config.url, cache_url) {
            (Some(u), _) => (Some(u.as_str()), "[scale.events] url"),
            (None, Some(u)) => (
                Some(u),
                "the cache URL (CACHE_URL / [scale.database] cache_url)",
            ),
            (None, None) => (None, ""),
        };
        let broker = match url {
            None => {
                tracing::info!(
                    target: "svc::events",
                    "events: broker local (in-memory, this process only, not durable): no cache \
                     URL is set ([scale.events] url, CACHE_URL or [scale.database] cache_url)"
                );
                Broker::Local(Self::local_broker(config))
            }
            Some(url) => {
                let shown = crate::server::ws::bridge::redact(url);
                match redis::Client::open(url) {
                    Ok(client) => {
                        tracing::info!(
                            target: "svc::events",
                            "events: broker cache (Redis streams at {shown}, durable, shared by \
                             replicas): {from} is set"
                        );
                        Broker::Cache(cache::CacheBroker::new(
                            client,
                            shown,
                            config.max_retained_events,
                            config.max_event_bytes,
                            secs(config.visibility_timeout_seconds),
                            secs(config.poll_interval_seconds),
                        ))
                    }
                    Err(e) => {
                        tracing::warn!(
                            target: "svc::events",
                            "events: broker local (in-memory, this process only): {from} {shown} \
                             is not a usable cache URL ({e})"
                        );
                        Broker::Local(Self::local_broker(config))
                    }
                }
            }
        };
        Some(Self::with_broker(config, broker))
    }

    /// The in-memory event service of `svc run` (or `None` when events are off).
    pub fn for_script(config: &EventsConfig) -> Option<Arc<Events>> {
        config
            .enabled
            .then(|| Self::with_broker(config, Broker::Local(Self::local_broker(config))))
    }

    fn local_broker(config: &EventsConfig) -> local::LocalBroker {
        local::LocalBroker::new(
            config.max_retained_events,
            secs(config.visibility_timeout_seconds),
        )
    }

    fn with_broker(config: &EventsConfig, broker: Broker) -> Arc<Events> {
        let events = Arc::new(Events {
            config: config.clone(),
            broker,
            replica: format!("{:016x}", actors::random_id() as u64),
            publisher: Mutex::new(None),
            publisher_thread: Mutex::new(None),
        });
        if let Broker::Cache(_) = &events.broker {
            let (tx, rx) = mpsc::channel(config.publish_queue_capacity.max(1));
            let worker = Arc::clone(&events);
            let thread = std::thread::Builder::new()
                .name("svc-scale-publisher".into())
                .spawn(move || publisher(&worker, rx));
            match thread {
                Ok(t) => {
                    *lock(&events.publisher) = Some(tx);
                    *lock(&events.publisher_thread) = Some(t);
                }
                Err(e) => {
                    tracing::error!(target: "svc::events", "events: cannot start the publisher thread: {e}")
                }
            }
        }
        events
    }

    /// The natives to plug into the runtime's hosts.
    pub fn natives(self: &Arc<Self>) -> NativesHandle {
        NativesHandle(Arc::clone(self) as Arc<dyn Natives>)
    }

    /// Publish `record` to `topic`; never waits, never fails (problems are logged).
    pub fn publish(&self, topic: &str, record: Record) {
        crate::metrics::global().event_published(topic);
        match &self.broker {
            Broker::Local(b) => b.publish(topic, record),
            Broker::Cache(b) => {
                let payload = wire::encode(topic, &record);
                if payload.len() > b.max_event_bytes {
                    tracing::warn!(
                        target: "svc::events",
                        topic,
                        bytes = payload.len(),
                        "event not published: larger than [scale.events] max_event_bytes ({})",
                        b.max_event_bytes
                    );
                    return;
                }
                let tx = lock(&self.publisher).clone();
                let Some(tx) = tx else {
                    tracing::warn!(target: "svc::events", topic, "event not published: the publisher is stopped");
                    return;
                };
                if let Err(mpsc::error::TrySendError::Full(_)) =
                    tx.try_send((topic.to_string(), payload))
                {
                    tracing::warn!(
                        target: "svc::events",
                        topic,
                        "event dropped: {} events are waiting for the cache store \
                         ([scale.events] publish_queue_capacity)",
                        self.config.publish_queue_capacity
                    );
                }
            }
        }
    }

    /// Flush the publisher queue (at most `within`) and stop its thread.
    pub fn shutdown(&self, within: Duration) {
        drop(lock(&self.publisher).take());
        let Some(thread) = lock(&self.publisher_thread).take() else {
            return;
        };
        let deadline = std::time::Instant::now() + within;
        while !thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if thread.is_finished() {
            let _ = thread.join();
        } else {
            tracing::warn!(target: "svc::events", "events: exiting with published events not yet written to the cache store");
        }
    }

    fn consume(&self, args: &[Json], call: NativeCall<'_>) -> Result<Json, HostError> {
        let topic = args.first().and_then(Json::as_str).unwrap_or_default();
        let max = args
            .get(1)
            .and_then(Json::as_u64)
            .unwrap_or(1)
            .clamp(1, self.config.max_consume_messages as u64) as usize;
        let wait = args.get(2).and_then(Json::as_f64).unwrap_or(0.0);
        let wait = Duration::from_secs_f64(if wait.is_finite() {
            wait.clamp(0.0, 3600.0)
        } else {
            0.0
        });
        let start = StartFrom::parse(args.get(3).and_then(Json::as_str));
        let group = args
            .get(4)
            .and_then(Json::as_str)
            .filter(|g| !g.is_empty())
            .unwrap_or(&self.config.consumer_group);
        let deliveries = match &self.broker {
            Broker::Local(b) => {
                b.fetch_blocking(topic, group, &start, max, wait, &|| call.cancelled())
            }
            Broker::Cache(b) => {
                let consumer = format!("{}-pull", self.replica);
                b.consume_blocking(topic, group, &consumer, &start, max, wait, &|| {
                    call.cancelled()
                })
                .map_err(|e| HostError::Other(format!("cache store: {e}")))?
            }
        };
        Ok(Json::Array(
            deliveries
                .into_iter()
                .map(|d| Json::Object(d.record))
                .collect(),
        ))
    }

    fn ack(&self, args: &[Json]) -> Result<Json, HostError> {
        let record = args.first().and_then(Json::as_object);
        let field = |k: &str| {
            record
                .and_then(|r| r.get(k))
                .and_then(Json::as_str)
                .unwrap_or_default()
        };
        let (topic, group, id) = (
            field("delivery_topic"),
            field("delivery_group"),
            field("delivery_id"),
        );
        if topic.is_empty() || group.is_empty() || id.is_empty() {
            return Ok(Json::Bool(false));
        }
        let done = match &self.broker {
            Broker::Local(b) => b.ack(topic, group, id),
            Broker::Cache(b) => b
                .ack_blocking(topic, group, id)
                .map_err(|e| HostError::Other(format!("cache store: {e}")))?,
        };
        Ok(Json::Bool(done))
    }
}

impl Natives for Events {
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        let trace_id = call.trace_id;
        match name {
            natives::PUBLISH => {
                let topic = args.first().and_then(Json::as_str).unwrap_or_default();
                let Some(Json::Object(record)) = args.get(1) else {
                    return Some(Ok(Json::Null));
                };
                let mut record = record.clone();
                // An event made inside a request carries the request's trace id.
                if record
                    .get("trace_id")
                    .and_then(Json::as_str)
                    .is_none_or(str::is_empty)
                    && !trace_id.is_empty()
                {
                    record.insert("trace_id".into(), Json::from(trace_id));
                }
                for k in ["delivery_id", "delivery_topic", "delivery_group"] {
                    record.remove(k);
                }
                if !topic.is_empty() {
                    self.publish(topic, record);
                }
                Some(Ok(Json::Null))
            }
            natives::CONSUME => Some(self.consume(args, call)),
            natives::ACK => Some(self.ack(args)),
            _ => None,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seconds from the configuration as a `Duration` (the config bounds them).
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() {
        s.clamp(0.0, 86_400.0)
    } else {
        0.0
    })
}

/// Events pipelined into one round trip at most.
const PUBLISH_BATCH: usize = 512;

/// The `svc-scale-publisher` thread: drains the queue in batches, one pipelined round
/// trip per batch, reconnecting with capped backoff; ends when the queue is closed and
/// empty.
fn publisher(events: &Arc<Events>, mut rx: mpsc::Receiver<(String, String)>) {
    let Broker::Cache(broker) = &events.broker else {
        return;
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(target: "svc::events", "events: publisher runtime: {e}");
            return;
        }
    };
    rt.block_on(async {
        let mut conn: Option<redis::aio::MultiplexedConnection> = None;
        let mut backoff = crate::server::ws::bridge::Backoff::default();
        let mut batch = Vec::with_capacity(PUBLISH_BATCH);
        while rx.recv_many(&mut batch, PUBLISH_BATCH).await > 0 {
            loop {
                let c = match conn.as_mut() {
                    Some(c) => c,
                    None => match broker.connect().await {
                        Ok(c) => conn.insert(c),
                        Err(e) => {
                            tracing::warn!(target: "svc::events", "events: cannot reach the cache store {} ({e}); retrying", broker.shown);
                            if rx.is_closed() {
                                tracing::warn!(target: "svc::events", dropped = batch.len(), "events: shutting down with unpublished events");
                                batch.clear();
                                break;
                            }
                            tokio::time::sleep(backoff.next_delay()).await;
                            continue;
                        }
                    },
                };
                let mut pipe = redis::pipe();
                for (topic, payload) in &batch {
                    pipe.add_command(broker.xadd(topic, payload)).ignore();
                }
                match pipe.query_async::<()>(c).await {
                    Ok(()) => {
                        backoff.reset();
                        batch.clear();
                        break;
                    }
                    Err(e) => {
                        // The batch may be partly written: published events are
                        // fire-and-forget, so it is dropped rather than duplicated.
                        tracing::warn!(target: "svc::events", dropped = batch.len(), "events: publishing to the cache store failed ({e}); events dropped");
                        conn = None;
                        batch.clear();
                        break;
                    }
                }
            }
        }
    });
}
