//! Consumer-group actors: one per `@subscribe` handler, each on its own OS thread named
//! `svc-scale-local-<topic>-<group>` (in-memory broker) or
//! `svc-scale-broker-<topic>-<group>` (stream broker), running a current-thread tokio
//! runtime.
//!
//! The actor owns its broker connections and its deliveries in flight (at most
//! `max_in_flight`). Its loop: fetch up to the free room (expired unacknowledged events
//! first, then new ones, waiting at most `poll_interval_seconds`), cut what came into
//! batches of at most `delivery_batch`, and start one task per batch. A batch task sends
//! the batch to the run pool as one run-actor message (`Runtime::deliver_events`): a
//! worker runs the handler once per event, each its own run committed at its end, and
//! answers one outcome per event. The events whose run returned `Ok` are acknowledged
//! together (one `XACK` / one lock); each event whose handler raised continues alone:
//! retried after `backoff_seconds[attempt-1]` (clamped to the last) up to
//! `max_attempts` as a single-event run (`Runtime::deliver_event`), then published to
//! `<topic><dead_letter_suffix>` and the original acknowledged. While a task holds
//! deliveries (running or backing off) it refreshes their visibility every third of the
//! timeout, so only a consumer that stopped (crashed) loses them to another.
//!
//! Messages: `stop` (a watch channel set at shutdown): the loop ends, tasks get a
//! grace period to finish, the rest are dropped (their runs are cancelled, their events
//! stay unacknowledged and are delivered again later); backoff sleeps end at once.

use super::{Broker, Delivery, Events, StartFrom, cache::CacheConn, secs, wire};
use actors::runtime::{CallError, RunReply, Runtime, SubscriptionInfo};
use serde_json::Value as Json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

/// How long deliveries in flight may finish after the stop signal.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Delay before redelivering when the run pool refused (queue full, store restart).
const BUSY_DELAY: Duration = Duration::from_millis(100);

/// One subscription with the configuration applied.
#[derive(Clone, Debug)]
pub struct Subscription {
    pub handler: String,
    pub topic: String,
    pub group: String,
    pub start: StartFrom,
    pub max_attempts: u32,
    pub backoff: Vec<Duration>,
    pub dead_letter_topic: String,
}

impl Subscription {
    pub fn new(info: &SubscriptionInfo, config: &crate::config::EventsConfig) -> Subscription {
        let retry = &info.retry;
        let backoff = retry
            .backoff_seconds
            .as_ref()
            .filter(|b| !b.is_empty())
            .unwrap_or(&config.retry.backoff_seconds)
            .iter()
            .map(|s| secs(*s))
            .collect();
        let suffix = retry
            .dead_letter_suffix
            .as_deref()
            .unwrap_or(&config.retry.dead_letter_suffix);
        Subscription {
            handler: info.handler.clone(),
            topic: info.topic.clone(),
            group: info
                .group
                .clone()
                .filter(|g| !g.is_empty())
                .unwrap_or_else(|| config.consumer_group.clone()),
            start: StartFrom::parse(info.start_from.as_deref()),
            max_attempts: retry
                .max_attempts
                .unwrap_or(config.retry.max_attempts)
                .max(1),
            backoff,
            dead_letter_topic: format!("{}{suffix}", info.topic),
        }
    }

    /// The delay before retry `attempt` (1-based: after the first failure).
    fn delay(&self, attempt: u32) -> Duration {
        let i = (attempt.max(1) - 1) as usize;
        self.backoff
            .get(i)
            .or(self.backoff.last())
            .copied()
            .unwrap_or_default()
    }
}

/// The running consumer-group actors of one process.
pub struct Consumers {
    stop: watch::Sender<bool>,
    threads: Vec<(String, std::thread::JoinHandle<()>)>,
    done: std_mpsc::Receiver<String>,
}

impl Consumers {
    /// Start one actor per subscription (each on its own thread).
    pub fn start(events: &Arc<Events>, runtime: &Runtime, subs: &[SubscriptionInfo]) -> Consumers {
        let (stop, _) = watch::channel(false);
        let (done_tx, done) = std_mpsc::channel();
        let mut threads = Vec::new();
        let prefix = match events.broker {
            Broker::Local(_) => "svc-scale-local",
            Broker::Cache(_) => "svc-scale-broker",
        };
        for (i, info) in subs.iter().enumerate() {
            let sub = Subscription::new(info, &events.config);
            // A thread name may not hold NUL: control characters become `_`.
            let name: String = format!("{prefix}-{}-{}", sub.topic, sub.group)
                .chars()
                .map(|c| if c.is_control() { '_' } else { c })
                .collect();
            let actor = Actor {
                events: Arc::clone(events),
                runtime: runtime.clone(),
                consumer: format!("{}-{i}", events.replica),
                sub: Arc::new(sub),
                stop: stop.subscribe(),
            };
            let done_tx = done_tx.clone();
            let thread_name = name.clone();
            let spawned = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt.block_on(actor.run()),
                        Err(e) => {
                            tracing::error!(target: "svc::events", "{thread_name}: no runtime: {e}")
                        }
                    }
                    let _ = done_tx.send(thread_name);
                });
            match spawned {
                Ok(t) => threads.push((name, t)),
                Err(e) => {
                    tracing::error!(target: "svc::events", "cannot start consumer {name}: {e}")
                }
            }
        }
        Consumers {
            stop,
            threads,
            done,
        }
    }

    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Signal every actor to stop and join them, waiting at most `within` in all.
    pub fn stop_and_join(self, within: Duration) {
        let _ = self.stop.send(true);
        let deadline = Instant::now() + within;
        let mut left: Vec<(String, std::thread::JoinHandle<()>)> = self.threads;
        while !left.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match self.done.recv_timeout(deadline - now) {
                Ok(name) => {
                    if let Some(i) = left.iter().position(|(n, _)| *n == name) {
                        let (_, t) = left.swap_remove(i);
                        let _ = t.join();
                    }
                }
                Err(_) => break,
            }
        }
        for (name, _) in &left {
            tracing::warn!(target: "svc::events", consumer = %name, "consumer did not stop in time; exiting without it");
        }
    }
}

/// One consumer-group actor.
struct Actor {
    events: Arc<Events>,
    runtime: Runtime,
    /// This actor's consumer name in its group.
    consumer: String,
    sub: Arc<Subscription>,
    stop: watch::Receiver<bool>,
}

/// What a delivery task needs to acknowledge, refresh and dead-letter.
#[derive(Clone)]
enum Link {
    Local(Arc<Events>),
    Cache(Arc<Events>, redis::aio::MultiplexedConnection),
}

impl Actor {
    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Sleep `d`; `false` if the stop signal came first.
    async fn pause(&self, d: Duration) -> bool {
        pause(&self.stop, d).await
    }

    async fn run(self) {
        let name = std::thread::current()
            .name()
            .unwrap_or("consumer")
            .to_string();
        tracing::debug!(target: "svc::events", consumer = %name, "consumer started");
        let mut tasks: JoinSet<()> = JoinSet::new();
        // Deliveries held now: each carries a `Slot` until it is acknowledged,
        // dead-lettered or given up, so a batch's handled events free their room while
        // one failed event of it backs off.
        let held = Arc::new(Held::default());
        let max = self.events.config.max_in_flight.max(1);
        let batch = self.events.config.delivery_batch.clamp(1, max);
        let poll = secs(self.events.config.poll_interval_seconds);
        let visibility = secs(self.events.config.visibility_timeout_seconds);
        let mut backoff = crate::server::ws::bridge::Backoff::default();
        let mut conn: Option<CacheConn> = None;
        let mut group_ready = false;
        let mut last_claim: Option<Instant> = None;
        let mut outage = false;
        while !self.stopped() {
            while tasks.try_join_next().is_some() {}
            let room = max.saturating_sub(held.count.load(Ordering::Acquire));
            if room == 0 {
                let mut stop = self.stop.clone();
                tokio::select! {
                    _ = held.freed.notified() => {}
                    _ = stop.wait_for(|s| *s) => break,
                }
                continue;
            }
            let fetched = match &self.events.broker {
                Broker::Local(b) => {
                    if !group_ready {
                        b.ensure_group(&self.sub.topic, &self.sub.group, &self.sub.start);
                        group_ready = true;
                    }
                    let ds = b.fetch(&self.sub.topic, &self.sub.group, room, poll).await;
                    Ok((ds, Vec::new()))
                }
                Broker::Cache(b) => {
                    let r = async {
                        if conn.is_none() {
                            conn = Some(b.consumer_conn().await?);
                            group_ready = false;
                        }
                        let c = conn.as_mut().ok_or_else(|| {
                            redis::RedisError::from((redis::ErrorKind::Io, "no connection"))
                        })?;
                        if !group_ready {
                            b.ensure_group(c, &self.sub.topic, &self.sub.group, &self.sub.start)
                                .await?;
                            group_ready = true;
                        }
                        // Take over events others left unacknowledged, a few times per
                        // visibility timeout.
                        let claim = last_claim.is_none_or(|t| t.elapsed() >= visibility / 4);
                        if claim {
                            last_claim = Some(Instant::now());
                        }
                        let f = b
                            .fetch(
                                c,
                                &self.sub.topic,
                                &self.sub.group,
                                &self.consumer,
                                room,
                                claim,
                            )
                            .await?;
                        Ok::<_, redis::RedisError>((f.deliveries, f.invalid))
                    }
                    .await;
                    if r.is_err() {
                        conn = None;
                    }
                    r.map_err(|e| e.to_string())
                }
            };
            match fetched {
                Ok((deliveries, invalid)) => {
                    if outage {
                        tracing::info!(target: "svc::events", consumer = %name, "cache store reachable again");
                        outage = false;
                    }
                    backoff.reset();
                    let link = self.link(&conn);
                    for (id, raw) in invalid {
                        self.dead_letter_invalid(&link, &id, &raw).await;
                    }
                    let mut deliveries = deliveries.into_iter().peekable();
                    while deliveries.peek().is_some() {
                        let chunk: Vec<(Delivery, Slot)> = deliveries
                            .by_ref()
                            .take(batch)
                            .map(|d| (d, Slot::take(&held)))
                            .collect();
                        tasks.spawn(deliver_batch(
                            self.runtime.clone(),
                            Arc::clone(&self.sub),
                            link.clone(),
                            self.consumer.clone(),
                            self.stop.clone(),
                            chunk,
                        ));
                    }
                }
                Err(e) => {
                    if !outage {
                        tracing::warn!(target: "svc::events", consumer = %name, "cannot read from the cache store ({e}); retrying");
                        outage = true;
                    }
                    if !self.pause(backoff.next_delay()).await {
                        break;
                    }
                }
            }
        }
        // Stopping: let deliveries in flight finish for a while, then drop them (their
        // runs are cancelled; their events stay unacknowledged).
        let grace = tokio::time::sleep(STOP_GRACE);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                next = tasks.join_next() => if next.is_none() { break },
                _ = &mut grace => {
                    tracing::warn!(target: "svc::events", consumer = %name, left = tasks.len(), "stopping with deliveries in flight; they will be delivered again");
                    tasks.shutdown().await;
                    break;
                }
            }
        }
        tracing::debug!(target: "svc::events", consumer = %name, "consumer stopped");
    }

    fn link(&self, conn: &Option<CacheConn>) -> Link {
        match conn {
            Some(c) => Link::Cache(Arc::clone(&self.events), c.writer.clone()),
            None => Link::Local(Arc::clone(&self.events)),
        }
    }

    /// A stream entry that is not a valid event: its raw text goes to the dead-letter
    /// topic (as an event whose data is the text) and the entry is acknowledged.
    async fn dead_letter_invalid(&self, link: &Link, id: &str, raw: &str) {
        let Link::Cache(events, writer) = link else {
            return;
        };
        let Broker::Cache(b) = &events.broker else {
            return;
        };
        let mut writer = writer.clone();
        let mut record = wire::Record::new();
        record.insert("data".into(), Json::from(raw));
        let event_id = lang::serve::events::uuid4(&mut lang::host::MemoryHost::new());
        record.insert("id".into(), Json::from(event_id));
        record.insert(
            "source".into(),
            Json::from(lang::serve::events::EVENT_SOURCE),
        );
        record.insert(
            "time".into(),
            Json::from(lang::serve::events::now_rfc3339()),
        );
        record.insert("event_type".into(), Json::from("svc.invalid_event"));
        let payload = wire::encode(&self.sub.dead_letter_topic, &record);
        if b.publish_raw(&mut writer, &self.sub.dead_letter_topic, &payload)
            .await
            .is_ok()
        {
            let _ = b
                .ack(&mut writer, &self.sub.topic, &self.sub.group, id)
                .await;
        }
    }
}

async fn pause(stop: &watch::Receiver<bool>, d: Duration) -> bool {
    let mut waiter = stop.clone();
    tokio::select! {
        _ = tokio::time::sleep(d) => !*stop.borrow(),
        _ = waiter.wait_for(|s| *s) => false,
    }
}

/// The deliveries a consumer holds (at most `max_in_flight`), and a wake-up for the
/// actor when one is released.
#[derive(Default)]
struct Held {
    count: AtomicUsize,
    freed: Notify,
}

/// One held delivery's share of `Held`: released when dropped (acknowledged,
/// dead-lettered, given up at shutdown, or its task aborted).
struct Slot(Arc<Held>);

impl Slot {
    fn take(held: &Arc<Held>) -> Slot {
        held.count.fetch_add(1, Ordering::AcqRel);
        Slot(Arc::clone(held))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify_one();
    }
}

fn ids<T>(ds: &[(Delivery, T)]) -> Vec<&str> {
    ds.iter().map(|(d, _)| d.id.as_str()).collect()
}

fn trace_id_of(d: &Delivery) -> String {
    match d.record.get("trace_id").and_then(Json::as_str) {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => d
            .record
            .get("id")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string(),
    }
}

/// One batch of deliveries: one run-actor message for all of them
/// (`Runtime::deliver_events`), then one acknowledgement for those handled; each one
/// whose handler raised goes on alone through `deliver` (backoff, retries, dead
/// letter), so a failure retries that event only. Deliveries the pool refused (queue
/// full, store restart) are sent again after `BUSY_DELAY` without counting an attempt.
/// Returns once every delivery of the batch is acknowledged, dead-lettered or given up
/// (stopped).
async fn deliver_batch(
    runtime: Runtime,
    sub: Arc<Subscription>,
    link: Link,
    consumer: String,
    stop: watch::Receiver<bool>,
    batch: Vec<(Delivery, Slot)>,
) {
    let mut singles: JoinSet<()> = JoinSet::new();
    let visibility = match &link {
        Link::Local(e) | Link::Cache(e, _) => secs(e.config.visibility_timeout_seconds),
    };
    let refresh = (visibility / 3).max(Duration::from_millis(10));
    let mut todo = Vec::with_capacity(batch.len());
    for (d, slot) in batch {
        if d.previous > 0 {
            // Taken over from a consumer that stopped mid-event: handled alone, with
            // its earlier deliveries counted as failed attempts.
            singles.spawn(deliver(
                runtime.clone(),
                Arc::clone(&sub),
                link.clone(),
                consumer.clone(),
                stop.clone(),
                d,
                None,
                slot,
            ));
        } else {
            todo.push((d, slot));
        }
    }
    while !todo.is_empty() {
        let records = todo
            .iter()
            .map(|(d, _)| (Json::Object(d.record.clone()), trace_id_of(d)))
            .collect();
        let reply = runtime.deliver_events(&sub.handler, records);
        tokio::pin!(reply);
        // Keep the deliveries ours while the handler runs.
        let outcome = loop {
            tokio::select! {
                r = &mut reply => break r,
                _ = tokio::time::sleep(refresh) => touch_many(&link, &sub, &consumer, &ids(&todo)).await,
            }
        };
        let replies: Vec<RunReply> = match outcome {
            Ok(r) => r,
            Err(CallError::Overloaded(_) | CallError::Unavailable(_)) => {
                if !pause(&stop, BUSY_DELAY).await {
                    break;
                }
                continue;
            }
            Err(CallError::Cancelled) => break,
            Err(e) => vec![Err(e); todo.len()],
        };
        let mut replies = replies.into_iter();
        let mut handled = Vec::new();
        let mut refused = Vec::new();
        for (d, slot) in todo {
            let r = replies
                .next()
                .unwrap_or_else(|| Err(CallError::Host("no reply for this event".into())));
            match r {
                Ok(_) => handled.push((d, slot)),
                Err(CallError::Overloaded(_) | CallError::Unavailable(_)) => {
                    refused.push((d, slot))
                }
                Err(CallError::Cancelled) => {}
                Err(e) => {
                    singles.spawn(deliver(
                        runtime.clone(),
                        Arc::clone(&sub),
                        link.clone(),
                        consumer.clone(),
                        stop.clone(),
                        d,
                        Some(e),
                        slot,
                    ));
                }
            }
        }
        if !handled.is_empty() {
            let metrics = crate::metrics::global();
            for _ in &handled {
                metrics.run("event", &sub.handler, "ok");
                metrics.event_handled(&sub.topic, &sub.group, "ok");
            }
            ack_many(&link, &sub, &ids(&handled)).await;
            drop(handled);
        }
        todo = refused;
        if !todo.is_empty() && !pause(&stop, BUSY_DELAY).await {
            break;
        }
    }
    while singles.join_next().await.is_some() {}
}

/// One delivery: run the handler (retrying with backoff), then acknowledge it or
/// dead-letter it. `failed` is the error of a first attempt already made (in a batch):
/// the next step is then its backoff. Returns without acknowledging when stopped.
async fn deliver(
    runtime: Runtime,
    sub: Arc<Subscription>,
    link: Link,
    consumer: String,
    stop: watch::Receiver<bool>,
    d: Delivery,
    failed: Option<CallError>,
    _slot: Slot,
) {
    let mut first: Option<RunReply> = failed.map(Err);
    let visibility = match &link {
        Link::Local(e) | Link::Cache(e, _) => secs(e.config.visibility_timeout_seconds),
    };
    let refresh = (visibility / 3).max(Duration::from_millis(10));
    let trace_id = trace_id_of(&d);
    // Deliveries that ended without an acknowledgement count as failed attempts.
    let mut attempt: u32 = d.previous.saturating_add(1);
    let mut last_error = format!(
        "delivered {} time(s) before without an acknowledgement (its consumer stopped \
         mid-event)",
        d.previous
    );
    if attempt > sub.max_attempts {
        tracing::warn!(
            target: "svc::events",
            topic = %sub.topic,
            group = %sub.group,
            handler = %sub.handler,
            event_id = d.record.get("id").and_then(Json::as_str).unwrap_or_default(),
            previous = d.previous,
            "dead-lettering an event whose earlier deliveries were never acknowledged"
        );
        dead_letter(&link, &sub, &d, d.previous, &last_error).await;
        return;
    }
    loop {
        let outcome = match first.take() {
            Some(outcome) => outcome,
            None => {
                let (_, reply) = runtime.deliver_event(
                    &sub.handler,
                    Json::Object(d.record.clone()),
                    trace_id.clone(),
                );
                tokio::pin!(reply);
                // Keep the delivery ours while the handler runs.
                loop {
                    tokio::select! {
                        r = &mut reply => break r,
                        _ = tokio::time::sleep(refresh) => touch(&link, &sub, &consumer, &d.id).await,
                    }
                }
            }
        };
        match outcome {
            Ok(_) => {
                crate::metrics::global().run("event", &sub.handler, "ok");
                crate::metrics::global().event_handled(&sub.topic, &sub.group, "ok");
                ack(&link, &sub, &d.id).await;
                return;
            }
            Err(CallError::Overloaded(_) | CallError::Unavailable(_)) => {
                // Not the handler's failure: try again shortly, without counting.
                if !pause(&stop, BUSY_DELAY).await {
                    return;
                }
                continue;
            }
            Err(CallError::Cancelled) => return,
            Err(e) => {
                let metrics = crate::metrics::global();
                metrics.run("event", &sub.handler, crate::metrics::error_outcome(&e));
                let outcome = if attempt >= sub.max_attempts {
                    "dead_letter"
                } else {
                    "retry"
                };
                metrics.event_handled(&sub.topic, &sub.group, outcome);
                last_error = describe(&e);
                tracing::warn!(
                    target: "svc::events",
                    topic = %sub.topic,
                    group = %sub.group,
                    handler = %sub.handler,
                    event_id = d.record.get("id").and_then(Json::as_str).unwrap_or_default(),
                    attempt,
                    max_attempts = sub.max_attempts,
                    "event handler failed: {last_error}"
                );
            }
        }
        if attempt >= sub.max_attempts {
            break;
        }
        // Back off, keeping the delivery visible to nobody else meanwhile.
        let until = Instant::now() + sub.delay(attempt);
        loop {
            touch(&link, &sub, &consumer, &d.id).await;
            let now = Instant::now();
            if now >= until {
                break;
            }
            if !pause(&stop, (until - now).min(refresh)).await {
                return;
            }
        }
        attempt += 1;
    }
    dead_letter(&link, &sub, &d, attempt, &last_error).await;
}

fn describe(e: &CallError) -> String {
    match e {
        CallError::Runtime { message, .. } => message.clone(),
        other => format!("{other:?}"),
    }
}

async fn ack(link: &Link, sub: &Subscription, id: &str) {
    match link {
        Link::Local(events) => {
            if let Broker::Local(b) = &events.broker {
                b.ack(&sub.topic, &sub.group, id);
            }
        }
        Link::Cache(events, writer) => {
            if let Broker::Cache(b) = &events.broker
                && let Err(e) = b.ack(&mut writer.clone(), &sub.topic, &sub.group, id).await
            {
                tracing::warn!(target: "svc::events", topic = %sub.topic, id, "acknowledgement failed ({e}); the event will be delivered again");
            }
        }
    }
}

/// Acknowledge the handled deliveries of a batch: one lock, or one `XACK` with all ids.
async fn ack_many(link: &Link, sub: &Subscription, ids: &[&str]) {
    match link {
        Link::Local(events) => {
            if let Broker::Local(b) = &events.broker {
                b.ack_many(&sub.topic, &sub.group, ids.iter().copied());
            }
        }
        Link::Cache(events, writer) => {
            if let Broker::Cache(b) = &events.broker
                && let Err(e) = b
                    .ack_many(
                        &mut writer.clone(),
                        &sub.topic,
                        &sub.group,
                        ids.iter().copied(),
                    )
                    .await
            {
                tracing::warn!(target: "svc::events", topic = %sub.topic, events = ids.len(), "acknowledgement failed ({e}); the events will be delivered again");
            }
        }
    }
}

/// Refresh the visibility of a batch's deliveries: one lock, or one `XCLAIM ... JUSTID`.
async fn touch_many(link: &Link, sub: &Subscription, consumer: &str, ids: &[&str]) {
    match link {
        Link::Local(events) => {
            if let Broker::Local(b) = &events.broker {
                b.touch_many(&sub.topic, &sub.group, ids.iter().copied());
            }
        }
        Link::Cache(events, writer) => {
            if let Broker::Cache(b) = &events.broker {
                let _ = b
                    .touch_many(
                        &mut writer.clone(),
                        &sub.topic,
                        &sub.group,
                        consumer,
                        ids.iter().copied(),
                    )
                    .await;
            }
        }
    }
}

async fn touch(link: &Link, sub: &Subscription, consumer: &str, id: &str) {
    match link {
        Link::Local(events) => {
            if let Broker::Local(b) = &events.broker {
                b.touch(&sub.topic, &sub.group, id);
            }
        }
        Link::Cache(events, writer) => {
            if let Broker::Cache(b) = &events.broker {
                let _ = b
                    .touch(&mut writer.clone(), &sub.topic, &sub.group, consumer, id)
                    .await;
            }
        }
    }
}

/// Publish the event to the dead-letter topic, then acknowledge the original (only if
/// the publish succeeded: at-least-once).
async fn dead_letter(link: &Link, sub: &Subscription, d: &Delivery, attempts: u32, error: &str) {
    let mut record = d.record.clone();
    for k in ["delivery_id", "delivery_topic", "delivery_group"] {
        record.remove(k);
    }
    if let Some(Json::Object(h)) = record.get_mut("headers") {
        h.insert("dead_letter_topic".into(), Json::from(sub.topic.as_str()));
        h.insert(
            "dead_letter_attempts".into(),
            Json::from(attempts.to_string()),
        );
        h.insert("dead_letter_error".into(), Json::from(error));
    }
    tracing::warn!(
        target: "svc::events",
        topic = %sub.topic,
        dead_letter_topic = %sub.dead_letter_topic,
        event_id = d.record.get("id").and_then(Json::as_str).unwrap_or_default(),
        attempts,
        "event moved to the dead-letter topic"
    );
    match link {
        Link::Local(events) => {
            if let Broker::Local(b) = &events.broker {
                b.publish(&sub.dead_letter_topic, record);
                b.ack(&sub.topic, &sub.group, &d.id);
            }
        }
        Link::Cache(events, writer) => {
            if let Broker::Cache(b) = &events.broker {
                let payload = wire::encode(&sub.dead_letter_topic, &record);
                let mut w = writer.clone();
                match b
                    .publish_raw(&mut w, &sub.dead_letter_topic, &payload)
                    .await
                {
                    Ok(()) => {
                        let _ = b.ack(&mut w, &sub.topic, &sub.group, &d.id).await;
                    }
                    Err(e) => {
                        tracing::warn!(target: "svc::events", topic = %sub.topic, "dead-lettering failed ({e}); the event will be delivered again")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actors::runtime::RetryOverride;

    fn info(retry: RetryOverride) -> SubscriptionInfo {
        SubscriptionInfo {
            handler: "h".into(),
            topic: "orders".into(),
            group: None,
            start_from: None,
            retry,
        }
    }

    #[test]
    fn defaults_come_from_the_configuration() {
        let config = crate::config::EventsConfig::default();
        let sub = Subscription::new(&info(RetryOverride::default()), &config);
        assert_eq!(sub.group, "svc-scale");
        assert_eq!(sub.start, StartFrom::Latest);
        assert_eq!(sub.max_attempts, 3);
        assert_eq!(sub.dead_letter_topic, "orders.dlq");
        let delays: Vec<u64> = (1..=5).map(|a| sub.delay(a).as_secs()).collect();
        assert_eq!(delays, [1, 5, 30, 30, 30], "clamped to the last value");
    }

    #[test]
    fn retry_of_subscribe_overrides_them() {
        let config = crate::config::EventsConfig::default();
        let sub = Subscription::new(
            &info(RetryOverride {
                max_attempts: Some(5),
                backoff_seconds: Some(vec![0.5]),
                dead_letter_suffix: Some("-dead".into()),
            }),
            &config,
        );
        assert_eq!(sub.max_attempts, 5);
        assert_eq!(sub.delay(3), Duration::from_millis(500));
        assert_eq!(sub.dead_letter_topic, "orders-dead");
    }
}
