//! Typed messages of the runtime's actors, named as commands: what the run pool
//! (`RunWorker`) and the store supervisor (`StoreSupervisor`) accept.

use super::CallRequest;
use actix::Message;
use lang::host::AnchorId;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Run one walker or function call (with its replays) on a run worker (a `JobQueue` job).
#[derive(Debug)]
pub struct RunCall {
    pub req: CallRequest,
    /// Counts the call in `Runtime::in_flight` until the worker drops the message (after
    /// the call finished, or unprocessed when the pool is gone).
    pub in_flight: InFlight,
    /// Set when the caller stopped waiting (`CancelOnDrop`): a queued call is dropped,
    /// a running one stops at its next check unless it already committed.
    pub cancel: Arc<AtomicBool>,
}

/// Sets a call's cancel flag when dropped, unless disarmed: the HTTP handler's future
/// holds it, so a client that disconnects (actix drops the future) cancels the call.
pub struct CancelOnDrop(Option<Arc<AtomicBool>>);

impl CancelOnDrop {
    pub fn new(flag: &Arc<AtomicBool>) -> CancelOnDrop {
        CancelOnDrop(Some(Arc::clone(flag)))
    }

    /// The answer arrived: nothing to cancel.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Probe the store file (`StoreSupervisor`); a failed probe restarts the supervisor,
/// which re-opens the file.
#[derive(Debug)]
pub struct CheckStore;

impl Message for CheckStore {
    type Result = Result<StoreHealth, String>;
}

/// A worker saw a store error (not a conflict) and re-opened its own connection; the
/// supervisor probes the file and restarts if the probe fails.
#[derive(Debug)]
pub struct ReportStoreFailure {
    pub error: String,
}

impl Message for ReportStoreFailure {
    type Result = ();
}

/// Answer of `CheckStore`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreHealth {
    /// The store's root: the shared public root of the served app.
    pub shared_root: AnchorId,
    /// How many times the supervisor re-opened the store since start.
    pub restarts: u32,
}

/// One call counted in the runtime's in-flight counter; decrements on drop.
#[derive(Debug)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Count one more call in `counter`.
    pub fn enter(counter: &Arc<AtomicUsize>) -> InFlight {
        counter.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(counter))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
