//! Typed messages of the runtime's actors, named as commands: what a run actor (started
//! by `RunCall`, then `run::RunMsg`), the run pool (`RunWorker`) and the store supervisor
//! (`StoreSupervisor`) accept.

use super::run::{Registration, RunAddr, RunMsg};
use super::{CallError, CallOutcome, CallRequest};
use actix::Message;
use lang::host::AnchorId;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The start message of a run actor: run one walker or function call (with its replays)
/// on a run worker (a `JobQueue` job). Its answer is the run's `RunReply`.
#[derive(Debug)]
pub struct RunCall {
    pub req: CallRequest,
    /// What the run does besides a plain walker or function call.
    pub input: RunInput,
    /// Counts the call in `Runtime::in_flight` until the worker drops the message (after
    /// the call finished, or unprocessed when the pool is gone).
    pub in_flight: InFlight,
    /// The run actor's address: its mailbox (`Cancel`, `Stale`) is polled by the run.
    pub run: RunAddr,
    /// Keeps the run in the registry until the worker is done with it.
    pub(crate) registration: Registration,
}

/// What a run does: the call `req` names, an event delivery or a graph view.
#[derive(Debug)]
pub enum RunInput {
    /// Run walker or function `req.name` with `req.args`.
    Call,
    /// An event delivery: call `req.name` (a `@subscribe` handler) with the `Event` of
    /// this record instead of the function's JSON arguments.
    Event(serde_json::Value),
    /// Read the graph the caller may see (`lang::serve::graph_view`); commits nothing.
    Graph(lang::serve::GraphQuery),
    /// Several event deliveries to the same handler in one run-actor message
    /// (`Runtime::deliver_events`): each is handled as `Event` would be (its own
    /// interpreter run, its own commit, its own replays and trace id), one after the
    /// other on the same worker; the per-event outcomes go back on the batch's own
    /// channel, in order.
    Events(EventBatch),
}

/// The deliveries of one `RunInput::Events` message.
#[derive(Debug)]
pub struct EventBatch {
    /// Each delivery's record (a JSON object) and trace id.
    pub records: Vec<(serde_json::Value, String)>,
    /// Receives one reply per record, in order (a record not reached because the run was
    /// cancelled answers `Cancelled`).
    pub replies: tokio::sync::oneshot::Sender<Vec<RunReply>>,
}

/// A run actor's one reply to its requester: the result and the reports, or the error.
pub type RunReply = Result<CallOutcome, CallError>;

/// Sends `RunMsg::Cancel` to a run when dropped, unless disarmed: the requester's future
/// holds it, so a requester that goes away (actix drops the handler's future, a
/// WebSocket session stops) cancels its run.
pub struct CancelOnDrop(Option<RunAddr>);

impl CancelOnDrop {
    pub fn new(run: &RunAddr) -> CancelOnDrop {
        CancelOnDrop(Some(run.clone()))
    }

    /// The answer arrived: nothing to cancel.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(run) = self.0.take() {
            run.send(RunMsg::Cancel);
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

/// Restart the store tier now (an operator's request, or a test): the supervisor
/// re-opens the file and revokes every worker's connection.
#[derive(Debug)]
pub struct RestartStore {
    pub reason: String,
}

impl Message for RestartStore {
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
