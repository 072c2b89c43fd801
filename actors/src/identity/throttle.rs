//! Sliding-window rate limits, in process: at most `max` events per key within `window`.
//! Used for failed logins (per identity and per client address), verification mails (per
//! user) and reset requests (per e-mail). State is per server process; the number of keys
//! tracked is bounded so a flood of distinct keys cannot grow memory without limit.
//!
//! Limits that guard expensive work (bcrypt) take their slot *before* the work, with
//! [`Limiter::reserve`]: the check and the count are one step under the lock, so N
//! parallel attempts cannot all pass a check made before any of them was counted. The
//! [`Reservation`] is given back when dropped (the attempt turned out not to count: a
//! successful login, a request refused for another reason) unless it is kept.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys tracked at most; beyond that, keys with no event inside the window are pruned,
/// and if none can be, new keys are not tracked until some expire.
const MAX_KEYS: usize = 100_000;

pub struct Limiter {
    max: u32,
    window: Duration,
    events: Mutex<HashMap<String, VecDeque<Instant>>>,
    /// Reservations still in flight per key (counted in `events`, neither kept nor
    /// withdrawn yet).
    pending: Mutex<HashMap<String, u32>>,
    /// Woken whenever a reservation is settled (kept or withdrawn): what
    /// `reserve_wait` waits for.
    settled: tokio::sync::Notify,
}

/// Longest [`Limiter::reserve_wait`] waits for attempts in flight to resolve.
const RESERVE_WAIT: Duration = Duration::from_secs(30);

/// Why [`Limiter::try_reserve`] did not reserve.
enum NotNow {
    /// The limit is used up by events that count: retry after this many seconds.
    Full(u64),
    /// Attempts in flight fill the limit; they may yet be withdrawn.
    Busy,
}

impl Limiter {
    pub fn new(max: u32, window: Duration) -> Limiter {
        Limiter {
            max: max.max(1),
            window,
            events: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            settled: tokio::sync::Notify::new(),
        }
    }

    /// Like [`Limiter::reserve`], but when the limit is full only because of attempts
    /// still in flight (which a success withdraws), wait for them instead of refusing:
    /// parallel attempts can never exceed the limit, and parallel *successful* attempts
    /// are never refused. `Err(retry_after)` once the events that count fill the limit.
    pub async fn reserve_wait(&self, key: &str) -> Result<Reservation<'_>, u64> {
        let deadline = tokio::time::Instant::now() + RESERVE_WAIT;
        loop {
            // Registered before the check, so a settle between the check and the wait
            // is not missed.
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            match self.try_reserve(key) {
                Ok(r) => return Ok(r),
                Err(NotNow::Full(secs)) => return Err(secs),
                Err(NotNow::Busy) => {
                    if tokio::time::timeout_at(deadline, settled).await.is_err() {
                        return Err(1);
                    }
                }
            }
        }
    }

    fn try_reserve(&self, key: &str) -> Result<Reservation<'_>, NotNow> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .copied()
            .unwrap_or(0);
        match self.reserve(key) {
            Ok(r) => Ok(r),
            Err(secs) => {
                let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
                let counted = events.get(key).map_or(0, VecDeque::len);
                if counted.saturating_sub(pending as usize) >= self.max as usize {
                    Err(NotNow::Full(secs))
                } else {
                    Err(NotNow::Busy)
                }
            }
        }
    }

    fn settle(&self, key: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = pending.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                pending.remove(key);
            }
        }
        drop(pending);
        self.settled.notify_waiters();
    }

    /// `Some(seconds until a slot frees)` when `key` has used up its events.
    #[cfg(test)]
    pub fn blocked(&self, key: &str) -> Option<u64> {
        let now = Instant::now();
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let q = events.get_mut(key)?;
        self.expire(q, now);
        self.retry_after(q, now)
    }

    /// Record one event for `key`.
    #[cfg(test)]
    pub fn record(&self, key: &str) {
        let now = Instant::now();
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if !events.contains_key(key) && !self.make_room(&mut events, now) {
            return;
        }
        let q = events.entry(key.to_string()).or_default();
        self.expire(q, now);
        q.push_back(now);
        // Only the newest `max` events matter.
        while q.len() > self.max as usize {
            q.pop_front();
        }
    }

    /// Record an event unless `key` is already at its limit (`Err(retry_after)`).
    pub fn acquire(&self, key: &str) -> Result<(), u64> {
        self.reserve(key).map(Reservation::keep)
    }

    /// Count one event for `key` now, unless `key` is at its limit (`Err(retry_after)`);
    /// the event is withdrawn when the returned [`Reservation`] is dropped without
    /// [`Reservation::keep`].
    pub fn reserve(&self, key: &str) -> Result<Reservation<'_>, u64> {
        let now = Instant::now();
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let mut reservation = Reservation {
            limiter: self,
            key: key.to_string(),
            at: None,
        };
        if !events.contains_key(key) && !self.make_room(&mut events, now) {
            // Not tracked (too many keys): nothing to count or withdraw.
            return Ok(reservation);
        }
        let q = events.entry(key.to_string()).or_default();
        self.expire(q, now);
        if let Some(secs) = self.retry_after(q, now) {
            return Err(secs);
        }
        q.push_back(now);
        reservation.at = Some(now);
        *self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.to_string())
            .or_insert(0) += 1;
        Ok(reservation)
    }

    /// Withdraw the event of `key` recorded at `at`, if it is still counted.
    fn withdraw(&self, key: &str, at: Instant) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(q) = events.get_mut(key) {
            if let Some(i) = q.iter().rposition(|t| *t == at) {
                q.remove(i);
            }
            if q.is_empty() {
                events.remove(key);
            }
        }
    }

    /// Forget `key` (a successful login clears its failures).
    pub fn clear(&self, key: &str) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.remove(key);
    }

    fn expire(&self, q: &mut VecDeque<Instant>, now: Instant) {
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.window)
        {
            q.pop_front();
        }
    }

    fn retry_after(&self, q: &VecDeque<Instant>, now: Instant) -> Option<u64> {
        if q.len() < self.max as usize {
            return None;
        }
        let oldest = *q.front()?;
        let free_at = oldest + self.window;
        Some(free_at.saturating_duration_since(now).as_secs().max(1))
    }

    /// Whether a new key may be tracked (pruning expired keys when full).
    fn make_room(&self, events: &mut HashMap<String, VecDeque<Instant>>, now: Instant) -> bool {
        if events.len() < MAX_KEYS {
            return true;
        }
        events.retain(|_, q| {
            q.back()
                .is_some_and(|t| now.duration_since(*t) < self.window)
        });
        events.len() < MAX_KEYS
    }
}

/// One event counted by [`Limiter::reserve`]: withdrawn on drop unless kept.
#[must_use = "dropping a reservation withdraws it at once"]
pub struct Reservation<'a> {
    limiter: &'a Limiter,
    key: String,
    /// When it was counted (`None`: the key is not tracked).
    at: Option<Instant>,
}

impl Reservation<'_> {
    /// The event counts (a failed attempt).
    pub fn keep(mut self) {
        if self.at.take().is_some() {
            self.limiter.settle(&self.key);
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(at) = self.at.take() {
            self.limiter.withdraw(&self.key, at);
            self.limiter.settle(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_within_the_window() {
        let l = Limiter::new(2, Duration::from_secs(60));
        assert_eq!(l.blocked("a"), None);
        l.record("a");
        assert_eq!(l.blocked("a"), None);
        l.record("a");
        let secs = l.blocked("a").expect("blocked");
        assert!((59..=60).contains(&secs), "{secs}");
        assert_eq!(l.blocked("b"), None);
        l.clear("a");
        assert_eq!(l.blocked("a"), None);
        assert!(l.acquire("c").is_ok() && l.acquire("c").is_ok());
        assert!(l.acquire("c").is_err());
    }

    #[tokio::test]
    async fn a_reservation_waits_for_attempts_in_flight() {
        let l = Limiter::new(2, Duration::from_secs(60));
        let a = l.reserve("k").expect("first");
        let b = l.reserve("k").expect("second");
        let waiter = async {
            let r = l.reserve_wait("k").await;
            r.map(Reservation::keep)
        };
        let release = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            // `a` succeeded (withdrawn); `b` failed (kept).
            drop(a);
            b.keep();
        };
        let (waited, ()) = tokio::join!(waiter, release);
        assert!(waited.is_ok(), "a slot freed by a success is taken");
        // Two kept failures fill the limit: refused at once, not waiting.
        let started = Instant::now();
        assert!(l.reserve_wait("k").await.is_err());
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn reservations_count_at_once_and_withdraw_on_drop() {
        let l = Limiter::new(2, Duration::from_secs(60));
        let a = l.reserve("k").expect("first");
        let b = l.reserve("k").expect("second");
        assert!(l.reserve("k").is_err(), "two in flight fill the limit");
        drop(a);
        let c = l.reserve("k").expect("a slot was given back");
        b.keep();
        c.keep();
        assert!(l.blocked("k").is_some());
        l.clear("k");
        let d = l.reserve("k").expect("cleared");
        l.clear("k");
        drop(d);
        assert_eq!(l.blocked("k"), None);
    }

    #[test]
    fn events_expire() {
        let l = Limiter::new(1, Duration::from_millis(30));
        l.record("a");
        assert!(l.blocked("a").is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(l.blocked("a"), None);
    }
}
