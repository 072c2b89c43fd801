//! Runs hosted on the requester's own thread.
//!
//! A call normally goes to the pool's mailbox and a `RunWorker` thread takes it: two
//! thread hand-offs (there and back), each a wake-up of a sleeping thread. For a function
//! that adds two numbers those hand-offs cost more than the call. So an HTTP worker
//! thread may host runs too: `Runtime::host_runs_here` (called by the HTTP layer on each
//! of its worker threads) gives the thread its own `RunWorker`, created on first use,
//! and `Runtime::launch` starts a run there, on the spot, when its endpoint has been
//! quick. The run is the same run actor either way (registered, `Cancel`/`Stale` through
//! its mailbox, one reply); only its host differs.
//!
//! **Which calls.** Every served call's run time is recorded per endpoint (an
//! exponentially weighted mean of the last ~8 runs, `EndpointStats`). A call runs inline
//! when its endpoint has at least `WARM_RUNS` runs on record and a mean at or under
//! `[scale.limits] inline_run_max_us` (default 1,000 µs; 0 turns inline runs off), the
//! thread is not already inside an inline run, and the call is a plain call (not an event
//! delivery or a graph view). An endpoint that turns slow (a sleep, a service-to-service
//! call, a big commit) moves its mean past the bound within a run or two and goes back
//! to the pool; one that turns quick again comes back. The cost of the policy is that one
//! slow run of a quick endpoint holds the connections of its HTTP thread for its duration
//! (at most the call timeout), as a slow synchronous handler would.
//!
//! **Conflicts.** An inline run makes one attempt. If its commit loses an
//! optimistic-concurrency race, the call is handed to the pool, where the replay loop
//! (with its backoff sleeps and anchor claims) runs it again: an HTTP thread never sleeps
//! on a backoff.
//!
//! **Stack.** Interpreter threads need `lang::driver::INTERPRETER_STACK_BYTES` of stack.
//! The HTTP threads are made by actix with the process's default thread stack size,
//! which `svc start` raises to that size (`RUST_MIN_STACK`, set before any thread
//! starts). `host_runs_here` checks the thread's real stack and refuses (logged once)
//! when it is smaller, so a user's own `RUST_MIN_STACK` can only turn inline runs off,
//! never overflow a stack. (The workspace forbids `unsafe`, so the stack's extent comes
//! from `/proc/self/maps`, read once per thread.)

use super::worker::{PoolShared, RunWorker};
use super::{EndpointKind, RunInput};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// Runs an endpoint must have on record before it may run inline.
pub(crate) const WARM_RUNS: u32 = 16;

/// Endpoints tracked at most (names come from the app's endpoint table; the bound only
/// guards against an app with an unusual number of them).
const MAX_TRACKED: usize = 4096;

/// Runs without a commit after which an endpoint that wrote counts as a reader again.
const WRITER_MEMORY: u32 = 8;

/// Run time of one endpoint: an exponentially weighted mean (weight 1/8 per new run), and
/// whether it writes (a commit in one of its last `WRITER_MEMORY` runs).
#[derive(Default)]
struct Stat {
    mean_ns: AtomicU64,
    runs: AtomicU32,
    /// `WRITER_MEMORY` after a run that committed, one less after each run that did not.
    writes: AtomicU32,
}

impl Stat {
    fn record(&self, took: Duration, wrote: bool) {
        let writes = self.writes.load(Ordering::Relaxed);
        if wrote {
            self.writes.store(WRITER_MEMORY, Ordering::Relaxed);
        } else if writes > 0 {
            self.writes.store(writes - 1, Ordering::Relaxed);
        }
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let runs = self.runs.load(Ordering::Relaxed);
        let mean = self.mean_ns.load(Ordering::Relaxed);
        // Racing updates may lose a sample; the mean stays a mean of recent runs.
        let next = if runs == 0 {
            sample
        } else {
            mean - mean / 8 + sample / 8
        };
        self.mean_ns.store(next, Ordering::Relaxed);
        if runs < u32::MAX {
            self.runs.store(runs + 1, Ordering::Relaxed);
        }
    }

    fn quick(&self, max_ns: u64, writers: bool) -> bool {
        self.runs.load(Ordering::Relaxed) >= WARM_RUNS
            && self.mean_ns.load(Ordering::Relaxed) <= max_ns
            && (writers || self.writes.load(Ordering::Relaxed) == 0)
    }
}

/// Endpoint names (from the app's endpoint table, never from a client) to their stats,
/// hashed with the interpreter's Fx hasher: every call looks its endpoint up twice
/// (`quick`, `record`), and SipHash was most of that.
type StatTable = HashMap<Box<str>, Stat, lang::serve::FxBuild>;

/// Run times per endpoint, shared by every host of the pool.
#[derive(Default)]
pub(crate) struct EndpointStats {
    /// Walkers, then functions.
    by_kind: [RwLock<StatTable>; 2],
}

impl EndpointStats {
    fn table(&self, kind: EndpointKind) -> &RwLock<StatTable> {
        match kind {
            EndpointKind::Walker => &self.by_kind[0],
            EndpointKind::Function => &self.by_kind[1],
        }
    }

    /// Record one run of `name`, `wrote` when it committed something (its stat's fields
    /// are atomics: a known endpoint needs only the read lock).
    pub(crate) fn record(&self, kind: EndpointKind, name: &str, took: Duration, wrote: bool) {
        let table = self.table(kind);
        if let Some(stat) = table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
        {
            stat.record(took, wrote);
            return;
        }
        let mut map = table.write().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_TRACKED && !map.contains_key(name) {
            return;
        }
        map.entry(name.into()).or_default().record(took, wrote);
    }

    /// Whether `name`'s recent runs were quick enough to run inline, and (unless
    /// `writers`) committed nothing.
    pub(crate) fn quick(&self, kind: EndpointKind, name: &str, max_ns: u64, writers: bool) -> bool {
        self.table(kind)
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .is_some_and(|stat| stat.quick(max_ns, writers))
    }
}

/// The run host of one requester thread.
struct LocalHost {
    /// The pool this host belongs to (a thread may outlive a `Runtime`, e.g. in tests).
    shared: Arc<PoolShared>,
    /// Created on the first inline run (it loads the app: no cost for threads that never
    /// host one).
    worker: Option<RunWorker>,
}

thread_local! {
    static LOCAL: RefCell<Option<LocalHost>> = const { RefCell::new(None) };
}

/// Let this thread host runs of `shared`'s pool. `false` (and nothing changes) when the
/// thread's stack is smaller than an interpreter thread's.
pub(crate) fn host_here(shared: &Arc<PoolShared>) -> bool {
    let Some(stack) = current_stack_bytes() else {
        return false;
    };
    // What already runs above this frame (the thread's event loop) takes a little of
    // it; an interpreter thread starts with its full size.
    if stack < lang::driver::INTERPRETER_STACK_BYTES - (2 << 20) {
        tracing::info!(
            stack_bytes = stack,
            "this HTTP thread's stack is smaller than an interpreter thread's: its calls run on the run pool"
        );
        return false;
    }
    LOCAL.with(|local| {
        if let Ok(mut local) = local.try_borrow_mut() {
            let same = local
                .as_ref()
                .is_some_and(|host| Arc::ptr_eq(&host.shared, shared));
            if !same {
                *local = Some(LocalHost {
                    shared: Arc::clone(shared),
                    worker: None,
                });
            }
        }
    });
    true
}

/// Whether this thread may start `kind`/`name` of `shared`'s pool inline now.
pub(crate) fn may_run_here(
    shared: &Arc<PoolShared>,
    input: &RunInput,
    kind: EndpointKind,
    name: &str,
) -> bool {
    if shared.inline_max_ns == 0 || !matches!(input, RunInput::Call) {
        return false;
    }
    let hosted = LOCAL.with(|local| {
        local.try_borrow().is_ok_and(|local| {
            local
                .as_ref()
                .is_some_and(|host| Arc::ptr_eq(&host.shared, shared))
        })
    });
    hosted
        && shared
            .stats
            .quick(kind, name, shared.inline_max_ns, shared.inline_writers)
}

/// Run the call in `slot` on this thread's host. `None` leaves (or puts back) the call
/// in `slot` for the pool: the host is busy or not this pool's, or the attempt lost a
/// race and must be replayed.
pub(crate) fn run_here(
    shared: &Arc<PoolShared>,
    slot: &mut Option<super::messages::RunCall>,
) -> Option<super::RunReply> {
    LOCAL.with(|local| {
        let mut local = local.try_borrow_mut().ok()?;
        let host = local.as_mut().filter(|h| Arc::ptr_eq(&h.shared, shared))?;
        let worker = host.worker.get_or_insert_with(|| {
            let (worker, ready) = RunWorker::start(Arc::clone(&host.shared));
            if let Err(text) = ready {
                // The worker retries the load on its next call; that call's answer
                // carries the error.
                tracing::warn!("an HTTP thread could not load the app to host runs: {text}");
            }
            worker
        });
        worker.handle_inline(slot)
    })
}

/// How much of the calling thread's stack lies below this function's frame: the
/// distance from a local to the low end of the memory mapping that holds it (the
/// thread's stack; its guard page below is a mapping of its own), from
/// `/proc/self/maps`. `None` when that cannot be read.
fn current_stack_bytes() -> Option<usize> {
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker).addr();
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let (low, high) = line.split(' ').next()?.split_once('-')?;
        let low = usize::from_str_radix(low, 16).ok()?;
        let high = usize::from_str_radix(high, 16).ok()?;
        (low <= here && here < high).then(|| here - low)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_quick_after_warm_runs_under_the_bound() {
        let stats = EndpointStats::default();
        for _ in 0..WARM_RUNS - 1 {
            stats.record(
                EndpointKind::Function,
                "add",
                Duration::from_micros(20),
                false,
            );
        }
        assert!(!stats.quick(EndpointKind::Function, "add", 1_000_000, false));
        stats.record(
            EndpointKind::Function,
            "add",
            Duration::from_micros(20),
            false,
        );
        assert!(stats.quick(EndpointKind::Function, "add", 1_000_000, false));
        // Same name, other kind: not known.
        assert!(!stats.quick(EndpointKind::Walker, "add", 1_000_000, false));
    }

    #[test]
    fn one_slow_run_sends_an_endpoint_back_to_the_pool_and_quick_runs_bring_it_back() {
        let stats = EndpointStats::default();
        for _ in 0..WARM_RUNS {
            stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), false);
        }
        assert!(stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
        stats.record(EndpointKind::Walker, "w", Duration::from_millis(20), false);
        assert!(!stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
        for _ in 0..40 {
            stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), false);
        }
        assert!(stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
    }

    #[test]
    fn an_endpoint_that_commits_goes_to_the_pool_until_it_stops_writing() {
        let stats = EndpointStats::default();
        for _ in 0..WARM_RUNS {
            stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), false);
        }
        assert!(stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
        stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), true);
        assert!(!stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
        assert!(stats.quick(EndpointKind::Walker, "w", 1_000_000, true));
        for _ in 0..WRITER_MEMORY - 1 {
            stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), false);
        }
        assert!(!stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
        stats.record(EndpointKind::Walker, "w", Duration::from_micros(50), false);
        assert!(stats.quick(EndpointKind::Walker, "w", 1_000_000, false));
    }

    #[test]
    fn the_stack_below_a_thread_is_read() {
        let size = current_stack_bytes().expect("the stack size");
        assert!(size >= 16 << 10, "{size}");
        let small = std::thread::Builder::new()
            .stack_size(4 << 20)
            .spawn(current_stack_bytes)
            .expect("spawn")
            .join()
            .expect("join")
            .expect("size");
        assert!((1 << 20..=4 << 20).contains(&small), "{small}");
        let big = std::thread::Builder::new()
            .stack_size(lang::driver::INTERPRETER_STACK_BYTES)
            .spawn(current_stack_bytes)
            .expect("spawn")
            .join()
            .expect("join")
            .expect("size");
        assert!(
            big >= lang::driver::INTERPRETER_STACK_BYTES - (1 << 20),
            "{big}"
        );
    }
}
