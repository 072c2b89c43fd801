//! The in-memory broker: one process, no persistence. Per topic a bounded log
//! (`max_retained_events`, oldest dropped) and per consumer group a cursor and the
//! deliveries not yet acknowledged, each with its visibility deadline: an expired one is
//! handed out again by the next fetch (a pull consumer that never acks, a handler that
//! outlived its deadline). Waiters: consumer actors await a per-topic `Notify`,
//! `broker.consume` on a run worker waits on a `Condvar`, both with a deadline.

use super::wire::Record;
use super::{Delivery, StartFrom};
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often a blocked `broker.consume` checks whether its run was cancelled.
pub const CANCEL_CHECK: Duration = Duration::from_millis(50);

pub struct LocalBroker {
    state: Mutex<State>,
    /// `broker.consume` callers waiting on a run worker.
    cond: Condvar,
    max_retained: usize,
    visibility: Duration,
}

#[derive(Default)]
struct State {
    topics: HashMap<String, Topic>,
    /// Threads waiting on `cond` (publish notifies only when some are).
    sync_waiters: usize,
}

#[derive(Default)]
struct Topic {
    /// Offset of `log[0]`.
    base: u64,
    log: VecDeque<Arc<Record>>,
    groups: HashMap<String, Group>,
    notify: Arc<Notify>,
}

struct Group {
    /// Next offset to hand out.
    next: u64,
    /// Delivered, not acknowledged: offset → (event, visibility deadline).
    pending: HashMap<u64, (Arc<Record>, Instant)>,
    /// No pending deadline is earlier than this (deadlines only move later), so a fetch
    /// scans `pending` for expired deliveries only once one may have expired.
    first_due: Option<Instant>,
}

impl Topic {
    fn end(&self) -> u64 {
        self.base + self.log.len() as u64
    }
}

impl LocalBroker {
    pub fn new(max_retained: usize, visibility: Duration) -> LocalBroker {
        LocalBroker {
            state: Mutex::new(State::default()),
            cond: Condvar::new(),
            max_retained: max_retained.max(1),
            visibility,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Append an event to `topic` and wake its waiters.
    pub fn publish(&self, topic: &str, record: Record) {
        let record = Arc::new(record);
        let mut state = self.lock();
        if !state.topics.contains_key(topic) {
            state.topics.insert(topic.to_string(), Topic::default());
        }
        let Some(t) = state.topics.get_mut(topic) else {
            return;
        };
        t.log.push_back(record);
        if t.log.len() > self.max_retained {
            t.log.pop_front();
            t.base += 1;
        }
        t.notify.notify_waiters();
        if state.sync_waiters > 0 {
            self.cond.notify_all();
        }
    }

    /// Create `group` on `topic` unless it exists (an existing group keeps its
    /// position and ignores `start`).
    pub fn ensure_group(&self, topic: &str, group: &str, start: &StartFrom) {
        let mut state = self.lock();
        ensure(&mut state, topic, group, start);
    }

    /// Up to `max` deliveries for `group`: expired unacknowledged ones first, then new
    /// events. Waits up to `wait` for at least one.
    pub async fn fetch(
        &self,
        topic: &str,
        group: &str,
        max: usize,
        wait: Duration,
    ) -> Vec<Delivery> {
        let deadline = Instant::now() + wait;
        loop {
            let notify = {
                let mut state = self.lock();
                let out = self.take(&mut state, topic, group, max);
                if !out.is_empty() {
                    return out;
                }
                match state.topics.get(topic) {
                    Some(t) => Arc::clone(&t.notify),
                    None => return out,
                }
            };
            // Register before re-checking, so a publish in between is not missed.
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                let out = self.take(&mut state, topic, group, max);
                if !out.is_empty() {
                    return out;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Vec::new();
            }
            let _ = tokio::time::timeout(deadline - now, notified).await;
            if Instant::now() >= deadline {
                let mut state = self.lock();
                return self.take(&mut state, topic, group, max);
            }
        }
    }

    /// `broker.consume` on a run worker: like `fetch`, blocking the thread; gives up
    /// early once `cancelled` (checked every [`CANCEL_CHECK`]).
    pub fn fetch_blocking(
        &self,
        topic: &str,
        group: &str,
        start: &StartFrom,
        max: usize,
        wait: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Vec<Delivery> {
        let deadline = Instant::now() + wait;
        let mut state = self.lock();
        ensure(&mut state, topic, group, start);
        loop {
            let out = self.take(&mut state, topic, group, max);
            let now = Instant::now();
            if !out.is_empty() || now >= deadline || cancelled() {
                return out;
            }
            state.sync_waiters += 1;
            let (s, _) = self
                .cond
                .wait_timeout(state, (deadline - now).min(CANCEL_CHECK))
                .unwrap_or_else(|e| e.into_inner());
            state = s;
            state.sync_waiters -= 1;
        }
    }

    fn take(&self, state: &mut State, topic: &str, group: &str, max: usize) -> Vec<Delivery> {
        let Some(t) = state.topics.get_mut(topic) else {
            return Vec::new();
        };
        let (base, end) = (t.base, t.end());
        let Some(g) = t.groups.get_mut(group) else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut out = Vec::new();
        if g.first_due.is_some_and(|d| d <= now) {
            let mut expired: Vec<u64> = g
                .pending
                .iter()
                .filter(|(_, (_, due))| *due <= now)
                .map(|(o, _)| *o)
                .collect();
            expired.sort_unstable();
            for offset in expired.into_iter().take(max) {
                if let Some((record, due)) = g.pending.get_mut(&offset) {
                    *due = now + self.visibility;
                    out.push(delivery(topic, group, offset, record));
                }
            }
            g.first_due = g.pending.values().map(|(_, due)| *due).min();
        }
        if g.next < base {
            tracing::warn!(
                target: "svc::events",
                topic,
                group,
                lost = base - g.next,
                "consumer group fell behind [scale.events] max_retained_events; the oldest \
                 events were dropped before it read them"
            );
            g.next = base;
        }
        while out.len() < max && g.next < end {
            let offset = g.next;
            g.next += 1;
            let Some(record) = t.log.get((offset - base) as usize) else {
                break;
            };
            let due = now + self.visibility;
            g.pending.insert(offset, (Arc::clone(record), due));
            g.first_due = Some(g.first_due.map_or(due, |d| d.min(due)));
            out.push(delivery(topic, group, offset, record));
        }
        out
    }

    /// Acknowledge several deliveries under one lock (a consumer's batch); returns how
    /// many were pending.
    pub fn ack_many<'a>(
        &self,
        topic: &str,
        group: &str,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> usize {
        let mut state = self.lock();
        let Some(g) = state
            .topics
            .get_mut(topic)
            .and_then(|t| t.groups.get_mut(group))
        else {
            return 0;
        };
        ids.into_iter()
            .filter_map(|id| id.parse::<u64>().ok())
            .filter(|offset| g.pending.remove(offset).is_some())
            .count()
    }

    /// `touch` for several deliveries under one lock.
    pub fn touch_many<'a>(&self, topic: &str, group: &str, ids: impl IntoIterator<Item = &'a str>) {
        let due = Instant::now() + self.visibility;
        let mut state = self.lock();
        let Some(g) = state
            .topics
            .get_mut(topic)
            .and_then(|t| t.groups.get_mut(group))
        else {
            return;
        };
        for offset in ids.into_iter().filter_map(|id| id.parse::<u64>().ok()) {
            if let Some((_, d)) = g.pending.get_mut(&offset) {
                *d = due;
            }
        }
    }

    /// Acknowledge one delivery; `false` if it was not pending.
    pub fn ack(&self, topic: &str, group: &str, id: &str) -> bool {
        let Ok(offset) = id.parse::<u64>() else {
            return false;
        };
        let mut state = self.lock();
        state
            .topics
            .get_mut(topic)
            .and_then(|t| t.groups.get_mut(group))
            .is_some_and(|g| g.pending.remove(&offset).is_some())
    }

    /// Push a pending delivery's visibility deadline out again (a handler still working
    /// on it, e.g. between retries).
    pub fn touch(&self, topic: &str, group: &str, id: &str) {
        let Ok(offset) = id.parse::<u64>() else {
            return;
        };
        let mut state = self.lock();
        if let Some((_, due)) = state
            .topics
            .get_mut(topic)
            .and_then(|t| t.groups.get_mut(group))
            .and_then(|g| g.pending.get_mut(&offset))
        {
            *due = Instant::now() + self.visibility;
        }
    }
}

fn ensure(state: &mut State, topic: &str, group: &str, start: &StartFrom) {
    let t = state.topics.entry(topic.to_string()).or_default();
    if t.groups.contains_key(group) {
        return;
    }
    let next = match start {
        StartFrom::Latest => t.end(),
        StartFrom::Earliest => t.base,
        StartFrom::At(token) => token
            .parse::<u64>()
            .map_or(t.end(), |o| o.clamp(t.base, t.end())),
    };
    t.groups.insert(
        group.to_string(),
        Group {
            next,
            pending: HashMap::new(),
            first_due: None,
        },
    );
}

fn delivery(topic: &str, group: &str, offset: u64, record: &Arc<Record>) -> Delivery {
    let mut record = Record::clone(record);
    let id = offset.to_string();
    record.insert("delivery_id".into(), Json::from(id.as_str()));
    record.insert("delivery_topic".into(), Json::from(topic));
    record.insert("delivery_group".into(), Json::from(group));
    Delivery {
        id,
        record,
        previous: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(n: i64) -> Record {
        json!({"data": n}).as_object().cloned().expect("object")
    }

    fn broker(visibility_ms: u64) -> LocalBroker {
        LocalBroker::new(100, Duration::from_millis(visibility_ms))
    }

    #[test]
    fn latest_group_sees_only_later_events_and_earliest_replays() {
        let b = broker(10_000);
        b.publish("t", rec(1));
        let zero = Duration::ZERO;
        let got = b.fetch_blocking("t", "late", &StartFrom::Latest, 10, zero, &|| false);
        assert!(got.is_empty());
        b.publish("t", rec(2));
        let got = b.fetch_blocking("t", "late", &StartFrom::Latest, 10, zero, &|| false);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].record["data"], 2);
        let got = b.fetch_blocking("t", "all", &StartFrom::Earliest, 10, zero, &|| false);
        assert_eq!(
            got.iter()
                .map(|d| d.record["data"].clone())
                .collect::<Vec<_>>(),
            [json!(1), json!(2)]
        );
    }

    #[test]
    fn unacknowledged_events_come_back_after_the_visibility_timeout() {
        let b = broker(30);
        b.ensure_group("t", "g", &StartFrom::Latest);
        b.publish("t", rec(1));
        let first = b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false);
        assert_eq!(first.len(), 1);
        assert!(
            b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false)
                .is_empty()
        );
        std::thread::sleep(Duration::from_millis(40));
        let again = b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].id, first[0].id);
        assert!(b.ack("t", "g", &again[0].id));
        assert!(!b.ack("t", "g", &again[0].id), "acknowledged once");
        std::thread::sleep(Duration::from_millis(40));
        assert!(
            b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false)
                .is_empty()
        );
    }

    #[test]
    fn batch_ack_and_touch_apply_to_each_delivery() {
        let b = broker(300);
        b.ensure_group("t", "g", &StartFrom::Latest);
        for n in 0..4 {
            b.publish("t", rec(n));
        }
        let got = b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false);
        assert_eq!(got.len(), 4);
        let ids: Vec<&str> = got.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(b.ack_many("t", "g", [ids[0], ids[2], "nonsense"]), 2);
        assert_eq!(b.ack_many("t", "g", [ids[0]]), 0, "acknowledged once");
        // Kept visible by a refresh: not handed out again at the first deadline.
        std::thread::sleep(Duration::from_millis(180));
        b.touch_many("t", "g", [ids[1]]);
        std::thread::sleep(Duration::from_millis(180));
        let again = b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false);
        assert_eq!(
            again.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            [ids[3]],
            "only the expired, unacknowledged one"
        );
        std::thread::sleep(Duration::from_millis(350));
        let later = b.fetch_blocking("t", "g", &StartFrom::Latest, 10, Duration::ZERO, &|| false);
        let mut later: Vec<&str> = later.iter().map(|d| d.id.as_str()).collect();
        later.sort_unstable();
        assert_eq!(later, [ids[1], ids[3]], "both expired since");
    }

    #[test]
    fn retention_drops_the_oldest() {
        let b = LocalBroker::new(2, Duration::from_secs(30));
        for n in 0..5 {
            b.publish("t", rec(n));
        }
        let got = b.fetch_blocking("t", "g", &StartFrom::Earliest, 10, Duration::ZERO, &|| {
            false
        });
        assert_eq!(
            got.iter()
                .map(|d| d.record["data"].clone())
                .collect::<Vec<_>>(),
            [json!(3), json!(4)]
        );
    }
}
