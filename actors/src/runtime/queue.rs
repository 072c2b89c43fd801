//! The run pool's job queue: a call goes from the HTTP thread straight to a free
//! interpreter thread and its answer straight back through a one-shot channel. (An actix
//! `SyncArbiter` routes every message through a dispatcher on another thread, one more
//! wake-up per call; on the function endpoint that hop cost more than the call itself.)

use super::messages::RunCall;
use super::worker::{PoolShared, Replay, RunWorker};
use super::{CallError, CallOutcome, Loaded};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use tokio::sync::oneshot;

/// Work for a run worker.
pub(crate) enum Job {
    Call(RunCall, oneshot::Sender<Result<CallOutcome, CallError>>),
    /// A call whose pipelined commit lost an optimistic-concurrency race: run it again
    /// from scratch (after the backoff), with the replay count and the anchors it lost on.
    Replay(
        RunCall,
        oneshot::Sender<Result<CallOutcome, CallError>>,
        Box<Replay>,
    ),
    Reload(oneshot::Sender<Result<Loaded, String>>),
}

/// `JobQueue::push` refused a call: the queue is at capacity.
#[derive(Debug)]
pub(crate) struct QueueFull;

/// A blocking multi-consumer queue of jobs, bounded for calls.
pub(crate) struct JobQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
    /// Calls waiting at most (a reload is always accepted).
    capacity: usize,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Job>,
    closed: bool,
    /// Workers blocked on the condition variable (a push wakes one only if any).
    sleepers: usize,
}

/// How many times an idle worker re-checks the queue (yielding its CPU in between)
/// before it blocks. Under load the next call usually arrives within that window, so
/// neither side pays a futex wake-up per call.
const SPINS_BEFORE_SLEEP: u32 = 64;

impl JobQueue {
    pub(crate) fn new(capacity: usize) -> JobQueue {
        JobQueue {
            state: Mutex::default(),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Jobs waiting for a worker now.
    pub(crate) fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .jobs
            .len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Queue a job; `Err` (the job dropped) when `capacity` calls already wait. When the
    /// pool has stopped the job is dropped, and with it its answer channel: the waiting
    /// caller sees the pool gone.
    pub(crate) fn push(&self, job: Job) -> Result<(), QueueFull> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            return Ok(());
        }
        if matches!(job, Job::Call(..)) && state.jobs.len() >= self.capacity {
            return Err(QueueFull);
        }
        state.jobs.push_back(job);
        let wake = state.sleepers > 0;
        drop(state);
        if wake {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Queue a replay ahead of the waiting calls, whatever the capacity: it was admitted
    /// already. Dropped (its caller sees the pool gone) once the pool has stopped.
    pub(crate) fn push_replay(&self, job: Job) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            return;
        }
        state.jobs.push_front(job);
        let wake = state.sleepers > 0;
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    /// The next job, waiting for one; `None` once the queue is closed and drained. An
    /// idle worker re-checks a few times, yielding its CPU, before it blocks.
    fn pop(&self) -> Option<Job> {
        let mut spins = 0;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            if state.closed {
                return None;
            }
            if spins < SPINS_BEFORE_SLEEP {
                spins += 1;
                drop(state);
                std::thread::yield_now();
                state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            state.sleepers += 1;
            state = self
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.sleepers -= 1;
            spins = 0;
        }
    }

    /// Stop the pool: workers finish the queued jobs, then exit.
    pub(crate) fn close(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        self.ready.notify_all();
    }
}

/// Start `workers` interpreter threads (each with the interpreter's stack) serving
/// `queue`. A worker loads the app and opens its store connection when it takes its
/// first job, not here: `Runtime::start` has validated the app already, an idle server
/// keeps one program (the validating load's) instead of one per worker, and start-up
/// does not wait for N loads (ARCHITECTURE.md, "Start-up and per-request logging").
pub(crate) fn start_pool(
    workers: usize,
    shared: &Arc<PoolShared>,
    queue: &Arc<JobQueue>,
) -> Result<(), String> {
    for n in 1..=workers {
        spawn_worker(n, Arc::clone(shared), Arc::clone(queue))
            .map_err(|e| format!("error: cannot start a run worker: {e}\n"))?;
    }
    Ok(())
}

/// Start run worker `n` in its own thread. A worker that ran a bulk call ends after
/// answering it and starts its successor under the same number (`RunWorker::retiring`);
/// when the successor's thread cannot be made, the old worker serves on.
fn spawn_worker(
    n: usize,
    shared: Arc<PoolShared>,
    queue: Arc<JobQueue>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("svc-run-{n}"))
        .stack_size(lang::driver::INTERPRETER_STACK_BYTES)
        .spawn(move || {
            let mut worker = RunWorker::idle(Arc::clone(&shared));
            while serve(&mut worker, &queue) {
                // Retiring: the program and the connection go with this thread's heap.
                drop(worker);
                match spawn_worker(n, Arc::clone(&shared), Arc::clone(&queue)) {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::warn!("a run worker could not be replaced (serving on): {e}");
                        worker = RunWorker::idle(Arc::clone(&shared));
                    }
                }
            }
        })
}

/// A worker's loop: run jobs until the queue closes (`false`) or the worker retires after
/// a bulk call (`true`). A run cancelled while it waited is skipped (answered
/// `Cancelled`, in case its requester still listens).
fn serve(worker: &mut RunWorker, queue: &Arc<JobQueue>) -> bool {
    while let Some(job) = queue.pop() {
        let (call, reply, replay) = match job {
            Job::Call(call, reply) => (call, reply, None),
            Job::Replay(call, reply, replay) => (call, reply, Some(replay)),
            Job::Reload(reply) => {
                let _ = reply.send(worker.handle_reload());
                continue;
            }
        };
        // Its requester went away (or sent `Cancel`) while the run was queued.
        if reply.is_closed() || call.run.is_cancelled() {
            tracing::info!(
                trace_id = %call.req.trace_id,
                name = %call.req.name,
                run = %call.run.id(),
                "queued call cancelled: the client went away"
            );
            drop(call);
            let _ = reply.send(Err(CallError::Cancelled));
            continue;
        }
        worker.serve_call(call, reply, queue, replay);
        if worker.retiring() {
            return true;
        }
    }
    false
}
