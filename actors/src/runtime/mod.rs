//! The actor runtime behind `svc start`: runs an app's walkers and functions off the
//! HTTP threads, over the embedded store, with optimistic-concurrency replay.
//!
//! # README
//!
//! **Shape.** `Runtime` is a small `Clone + Send + Sync` handle (actor addresses and an
//! `Arc`). Behind it:
//!
//! - a run pool (`queue.rs`): one OS thread per `RunWorker` (`worker.rs`), each with
//!   `lang::driver::INTERPRETER_STACK_BYTES` of stack (deep svc recursion), pulling jobs
//!   from one `JobQueue`. A call is one `RunCall` job answered through a one-shot channel
//!   by whichever worker is free. (The pool started as an actix `SyncArbiter`; its
//!   dispatcher thread added a wake-up per call that cost more than a function call
//!   itself, so the queue replaced it. The store supervisor remains an actix actor.)
//! - inline hosts (`inline.rs`): a thread that called `Runtime::host_runs_here` (each
//!   HTTP worker thread) runs a quick endpoint's calls itself, on its own `RunWorker`,
//!   with no hand-off; a lost race hands the call to the pool for its replays.
//! - a `StoreSupervisor` (`supervisor.rs`, actix `Supervised`, on its own arbiter) that
//!   owns the store file: the connection opened at start (schema, shared root), a probe
//!   every 10 s and on `CheckStore`/`ReportStoreFailure`, restart = re-open.
//!
//! **Each worker owns its state.** `lang::serve::Program` is `!Send`, so the pool's
//! factory runs inside each worker thread and loads the app there; each worker also
//! opens its own `SqliteStore` connection (WAL: readers run concurrently, writers are
//! serialised by SQLite with the busy timeout). After a store error a worker drops its
//! connection, re-opens it on the next call and tells the supervisor.
//!
//! **Loading.** `Runtime::start` loads the app once to validate it (on a helper thread
//! with the interpreter's stack, not the caller's: module code may recurse), recording
//! every source file read. That load commits module-level writes, once. Workers then
//! load, each on its first call, from the recorded text (`app::SourceBoard`) and discard their module-level
//! commits, so N workers do not repeat them. `Runtime::reload` queues a reload job for one
//! worker, which re-reads the files (committing) and publishes a new generation; every
//! other worker sees the generation change (one atomic load per call) and re-loads from
//! the published text before its next call. A failed reload publishes nothing.
//!
//! **Calls.** `ServeHost` (`host.rs`) acts for the caller's root (`Caller::root`, or
//! the shared root for guests; a user root is created in the store on first use) with
//! `shared_root()` = the store's root, the same root `svc run` uses, so `svc run` can
//! seed what `svc start` serves. It reuses `store::VersionTracker` (the bookkeeping of
//! `svc run`'s `RunHost`). The run's L1 is the interpreter's own per-run graph. Output
//! (`print`, `report`) goes to `tracing` at debug level (target `svc::stdout`), never to
//! the response.
//!
//! **Conflicts.** A commit that loses an optimistic-concurrency race is replayed from
//! scratch (fresh interpreter run, fresh version tracker) up to `max_replays` times with
//! a randomized, doubling backoff (0.1 ms to about 30 ms), then fails with `CallError::Conflict`.
//! Pure optimistic replay can starve a call on a hot node (two workers appending to one
//! root: the winner commits again between the loser's read and its commit), so from the
//! third attempt a call claims the anchors it lost on (`hot.rs`): other commits touching
//! them wait for it (at most 1 s), commits touching anything else never wait.
//!
//! **Failure.** A panic inside a call is caught in the worker (`catch_unwind`), answered
//! as `CallError::Host("internal error")`, logged, and the worker keeps serving with a
//! fresh store connection. `in_flight` counts calls from `call` until their worker is
//! done with them (for draining at shutdown).

mod app;
mod host;
mod hot;
mod inline;
pub mod messages;
mod queue;
pub mod run;
mod supervisor;
mod worker;

#[cfg(test)]
mod tests;

pub use lang::serve::{
    CallError, CallOutcome, EndpointInfo, EndpointKind, RetryOverride, Start, SubscriptionInfo,
};
pub use messages::{RunInput, RunReply, StoreHealth};
pub use run::{RunAddr, RunId, RunMsg};
pub use supervisor::StoreSupervisor;
pub use worker::{DEFAULT_RETIRE_ANCHORS, RunWorker};

use crate::tier::{AnchorStore, StoreTarget};
use actix::{Addr, Arbiter, Supervisor, System};
use futures_util::future::Either;
use lang::host::AnchorId;
use messages::{CancelOnDrop, CheckStore, InFlight, RestartStore, RunCall};
use queue::{Job, JobQueue};
use run::RunRegistry;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use supervisor::StoreLeases;
use worker::PoolShared;

/// Run workers per available core by default.
pub const WORKERS_PER_CORE: usize = 4;

/// The default number of run workers: [`WORKERS_PER_CORE`] per available core. More
/// workers than cores because a run holds its worker while its commit waits for a group
/// commit (`crate::l1`): with one worker per core, at most that many calls could share a
/// group, and each commit would write alone. Measured in `benches/load` (ARCHITECTURE.md
/// "Embedded tier").
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from) * WORKERS_PER_CORE
}

/// How to start a `Runtime`.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// The app's main `.svc` file.
    pub entry: PathBuf,
    /// The SQLite file (`shelf_db_path`); parent directories are created. Unused when
    /// `docdb_uri` is set.
    pub store_path: PathBuf,
    /// The document database (`DOCDB_URI` / `docdb_uri`): when set, the graph lives
    /// there instead of the embedded store.
    pub docdb_uri: Option<String>,
    /// Run workers (interpreter threads); `RuntimeConfig::new` uses the available cores.
    pub workers: usize,
    /// Limits of each call (timeout, operations, depth); a replay starts them afresh.
    pub limits: lang::Limits,
    /// Optimistic-concurrency replays of a call before it fails with `Conflict`
    /// (default 8).
    pub max_replays: u32,
    /// Treat the entry as the main module (`svc start --main`): its
    /// `with entry:__main__` blocks run at load.
    pub as_main: bool,
    /// Calls waiting for a worker at most; more are refused (503) (default 1024).
    pub queue_capacity: usize,
    /// Told about every successful commit of a served call (the cross-replica
    /// invalidation publisher); called on the worker thread, so it must not block.
    pub committed: Option<CommitSink>,
    /// Native services answering `Host::call_native` in every call (the event broker);
    /// `None` = none (event built-ins are no-ops).
    pub natives: Option<crate::natives::NativesHandle>,
    /// The embedded tier's L1 cache bound and group-commit bounds (`[scale.database]
    /// l1_cache_bytes`, `group_commit_max`, `group_commit_wait_us`).
    pub embedded: crate::l1::EmbeddedTuning,
    /// The document tier's L2 cache in the cache store (`crate::l2`): `None` = none.
    /// Ignored on the embedded tier.
    pub l2: Option<crate::l2::L2Settings>,
    /// A call whose endpoint's recent runs took at most this long (mean, microseconds)
    /// runs on the requester's thread when that thread hosts runs
    /// (`Runtime::host_runs_here`); 0 = every call goes to the pool (default 1,000).
    pub inline_run_max_us: u64,
    /// Whether an endpoint whose recent runs committed may run inline (default false:
    /// writers go to the pool, where their commits can share a group commit).
    pub inline_writers: bool,
    /// Anchors (loaded or committed) past which one call retires its run worker for a
    /// fresh thread (`worker::DEFAULT_RETIRE_ANCHORS`, 4,096); 0 = never.
    pub retire_anchors: usize,
}

/// What a successful commit changed, for the invalidation tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The run that wrote (its own L1 is current).
    pub run: RunId,
    /// Anchors written or re-linked.
    pub written: Vec<AnchorId>,
    /// Anchors deleted.
    pub deleted: Vec<AnchorId>,
}

/// Receiver of `Committed` notices; must return at once (queue, never wait).
pub type CommitSink = Arc<dyn Fn(Committed) + Send + Sync>;

impl RuntimeConfig {
    /// The graph tier this configuration names (the document database when a URI is
    /// set, else the embedded file).
    pub fn target(&self) -> StoreTarget {
        StoreTarget::choose(self.store_path.clone(), self.docdb_uri.as_deref())
            .with_l2(self.l2.clone())
    }

    /// Defaults: [`default_workers`], default limits, 8 replays.
    pub fn new(entry: impl Into<PathBuf>, store_path: impl Into<PathBuf>) -> RuntimeConfig {
        RuntimeConfig {
            entry: entry.into(),
            store_path: store_path.into(),
            docdb_uri: None,
            workers: default_workers(),
            limits: lang::Limits::default(),
            max_replays: 8,
            as_main: false,
            queue_capacity: 1024,
            committed: None,
            natives: None,
            embedded: crate::l1::EmbeddedTuning::default(),
            l2: None,
            inline_run_max_us: 1_000,
            inline_writers: false,
            retire_anchors: worker::DEFAULT_RETIRE_ANCHORS,
        }
    }
}

/// The user id logged for runs made by the server itself (event deliveries).
pub const SYSTEM_PRINCIPAL: &str = "__system__";

/// Who is calling: the seam the identity issue fills in. `root: None` = the guest, whose
/// root is the shared public root.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The authenticated user's id (logged with the call), `None` for the guest.
    pub user_id: Option<String>,
    /// The user's root node; created in the store on first use if absent.
    pub root: Option<AnchorId>,
    /// The request's `Authorization` header, forwarded by service-to-service calls the
    /// run makes (`NativeCall::authorization`); `None` for runs without one.
    pub authorization: Option<String>,
}

/// One walker or function call.
#[derive(Clone, Debug)]
pub struct CallRequest {
    pub kind: EndpointKind,
    /// Walker or function name.
    pub name: String,
    /// Walker `has` fields or function parameters, as JSON (validated by the language).
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Where a walker starts (ignored for functions).
    pub start: Start,
    pub caller: Caller,
    /// The request's trace id, attached to the call's log lines and output.
    pub trace_id: String,
}

/// What a (re)loaded app shows the HTTP layer.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The app's walkers and functions, in file order.
    pub endpoints: Vec<EndpointInfo>,
    /// The app's `@subscribe` event handlers, in file order (wired at server start).
    pub subscriptions: Vec<SubscriptionInfo>,
    /// What the module-level code printed while loading.
    pub load_output: String,
    /// Names of the archetypes the app declares.
    pub archetypes: Vec<String>,
}

/// Commits of served calls by outcome, counted by every call's host (`/metrics`).
#[derive(Debug, Default)]
pub struct CommitCounts {
    pub ok: AtomicU64,
    /// Lost an optimistic-concurrency race (the call replays or fails with 409).
    pub conflict: AtomicU64,
    /// The store refused the commit for another reason.
    pub failed: AtomicU64,
}

impl CommitCounts {
    fn count<T>(&self, outcome: &Result<T, crate::store::StoreError>) {
        let counter = match outcome {
            Ok(_) => &self.ok,
            Err(crate::store::StoreError::Conflict { .. }) => &self.conflict,
            Err(_) => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Handle to the running runtime: actor addresses only, cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Runtime {
    queue: Arc<JobQueue>,
    supervisor: Addr<StoreSupervisor>,
    inner: Arc<Inner>,
}

struct Inner {
    store_path: PathBuf,
    target: StoreTarget,
    shared_root: AnchorId,
    in_flight: Arc<AtomicUsize>,
    replays: Arc<AtomicU64>,
    commits: Arc<CommitCounts>,
    /// The live run actors.
    runs: Arc<RunRegistry>,
    /// The supervisor's arbiter, stopped with the last handle (or a failed start).
    arbiter: Arbiter,
    /// The run pool's queue, closed with the last handle (the workers then exit).
    queue: Arc<JobQueue>,
    /// The embedded tier's process-wide L1 cache (`None` on the document tier).
    l1: Option<Arc<crate::l1::EmbeddedShared>>,
    /// The document tier's L2 cache (`None`: embedded tier, or no cache store).
    l2: Option<Arc<crate::l2::L2>>,
    /// What every host of the pool shares (the pool's workers and the threads that
    /// host runs inline).
    pool: Arc<PoolShared>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.queue.close();
        self.arbiter.stop();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("store_path", &self.inner.store_path)
            .field(
                "shared_root",
                &lang::host::format_id(self.inner.shared_root),
            )
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Must be called inside a running actix System (the HTTP layer runs it). Opens the
    /// store, loads the app once to validate it and get the endpoint table (`Err` = text
    /// for stderr: diagnostics or the runtime error), then starts the store supervisor
    /// and the worker pool (each worker loads the app on its first call). Blocks the
    /// calling thread while loading (startup only).
    pub fn start(config: RuntimeConfig) -> Result<(Runtime, Loaded), String> {
        if System::try_current().is_none() {
            return Err("error: the runtime must be started inside an actix System\n".into());
        }
        let workers = config.workers.max(1);
        let target = config.target();
        let store = AnchorStore::open(&target)
            .map_err(|e| format!("error: cannot open the {}: {e}\n", target.describe()))?;
        let shared_root = store.root_id();
        let l2 = match &store {
            AnchorStore::Document(d) => d.l2().cloned(),
            AnchorStore::Embedded(_) => None,
        };
        let (mut store, validated) =
            app::validate_on_thread(&config.entry, store, &config.limits, config.as_main)?;
        let (loaded, files) = validated?;
        let archetypes = crate::docstore::Archetypes {
            known: Some(Arc::new(loaded.archetypes.iter().cloned().collect())),
        };
        store.set_archetypes(archetypes.clone());

        let arbiter = Arbiter::new();
        let leases = Arc::new(StoreLeases::new(
            target.clone(),
            archetypes,
            config.embedded.clone(),
        ));
        let supervisor = {
            let leases = Arc::clone(&leases);
            Supervisor::start_in_arbiter(&arbiter.handle(), move |_| {
                StoreSupervisor::new(store, leases)
            })
        };
        let queue = Arc::new(JobQueue::new(config.queue_capacity));
        let replays = Arc::new(AtomicU64::new(0));
        let commits = Arc::new(CommitCounts::default());
        let pool = Arc::new(PoolShared {
            entry: config.entry.clone(),
            leases: Arc::clone(&leases),
            limits: config.limits.clone(),
            max_replays: config.max_replays,
            as_main: config.as_main,
            shared_root,
            board: app::SourceBoard::new(files),
            supervisor: supervisor.clone().recipient(),
            replays: Arc::clone(&replays),
            hot: hot::HotAnchors::default(),
            committed: config.committed.clone(),
            next_call: AtomicU64::new(1),
            natives: config.natives.clone(),
            commits: Arc::clone(&commits),
            stats: inline::EndpointStats::default(),
            inline_max_ns: config.inline_run_max_us.saturating_mul(1_000),
            inline_writers: config.inline_writers,
            inline_runs: AtomicU64::new(0),
            inline_handoffs: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            retire_anchors: config.retire_anchors,
        });
        let inner = Inner {
            store_path: config.store_path.clone(),
            target,
            shared_root,
            in_flight: Arc::new(AtomicUsize::new(0)),
            replays,
            commits,
            runs: Arc::new(RunRegistry::default()),
            arbiter,
            queue,
            l1: leases.shared().cloned(),
            l2,
            pool,
        };
        // A failed start drops `inner`: the queue closes (started workers exit) and
        // the supervisor's arbiter stops. The workers load the app on their first call.
        queue::start_pool(workers, &inner.pool, &inner.queue)?;
        let runtime = Runtime {
            queue: Arc::clone(&inner.queue),
            supervisor,
            inner: Arc::new(inner),
        };
        Ok((runtime, loaded))
    }

    /// Start a run actor for one walker or function call and await its reply. A call
    /// whose commit keeps losing optimistic-concurrency races fails with `Conflict` after
    /// `max_replays` replays; a stopped pool or a panic is `Host`.
    ///
    /// The pool's mailbox holds at most `queue_capacity` waiting runs: beyond that the
    /// call fails at once with `Overloaded` (503). Dropping the returned future (the
    /// requester went away) sends the run `Cancel`: a queued run is skipped, a running
    /// one stops at its next check unless it already committed.
    pub async fn call(&self, req: CallRequest) -> RunReply {
        self.start_run(req).1.await
    }

    /// Start a run actor for one event delivery: call the `@subscribe` handler
    /// `handler` with the `Event` of `record` (a JSON object of the record's fields) as
    /// the system principal on the shared root, committing at its end. The reply is the
    /// run's outcome: `Ok` once its commit is done (the delivery may be acknowledged),
    /// `Err(Runtime)` when the handler raised. Queueing and cancellation as `start_run`.
    pub fn deliver_event(
        &self,
        handler: &str,
        record: serde_json::Value,
        trace_id: String,
    ) -> (RunAddr, impl Future<Output = RunReply> + Send + 'static) {
        self.launch(event_call(handler, trace_id), RunInput::Event(record))
    }

    /// Start one run actor for several deliveries to the same `@subscribe` handler
    /// (`records`: each record with its trace id): one queued message, handled on one
    /// worker, each delivery exactly as `deliver_event` would (its own run, commit,
    /// replays). The reply is one outcome per record, in order; `Err` when the whole
    /// batch was refused or cancelled (`Overloaded` when the queue is full). Dropping
    /// the future cancels the records not yet run.
    pub fn deliver_events(
        &self,
        handler: &str,
        records: Vec<(serde_json::Value, String)>,
    ) -> impl Future<Output = Result<Vec<RunReply>, CallError>> + Send + 'static {
        let req = event_call(handler, String::new());
        let (replies, answers) = tokio::sync::oneshot::channel();
        let (_, reply) = self.launch(
            req,
            RunInput::Events(messages::EventBatch { records, replies }),
        );
        async move {
            reply.await?;
            answers
                .await
                .map_err(|_| CallError::Host("run pool stopped".into()))
        }
    }

    /// Start a run actor that reads the graph `caller` may see (`lang::serve::graph_view`:
    /// access-checked, bounded by the query and the call limits) and await its JSON.
    /// Nothing is committed. Queueing and cancellation as `call`.
    pub async fn graph(
        &self,
        caller: Caller,
        query: lang::serve::GraphQuery,
        trace_id: String,
    ) -> RunReply {
        let req = CallRequest {
            kind: EndpointKind::Function,
            name: "graph".to_string(),
            args: serde_json::Map::new(),
            start: Start::Root,
            caller,
            trace_id,
        };
        self.launch(req, RunInput::Graph(query)).1.await
    }

    /// Start a run actor (queued at once) and return its address with the future of its
    /// reply, for requesters that talk to the run while it lives. Dropping the future
    /// cancels the run, as with `call`.
    pub fn start_run(
        &self,
        req: CallRequest,
    ) -> (RunAddr, impl Future<Output = RunReply> + Send + 'static) {
        self.launch(req, RunInput::Call)
    }

    fn launch(
        &self,
        req: CallRequest,
        input: RunInput,
    ) -> (RunAddr, impl Future<Output = RunReply> + Send + 'static) {
        let in_flight = InFlight::enter(&self.inner.in_flight);
        let (run, registration) = self.inner.runs.spawn();
        let addr = run.clone();
        let guard = CancelOnDrop::new(&run);
        let mut call = Some(RunCall {
            req,
            input,
            in_flight,
            run,
            registration,
        });
        if let Some(answer) = self.try_inline(&mut call) {
            guard.disarm();
            return (addr, Either::Left(std::future::ready(answer)));
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let refused = match call {
            Some(call) => self.queue.push(Job::Call(call, reply)).is_err(),
            None => false,
        };
        let refused = refused.then(|| {
            CallError::Overloaded(format!(
                "the server is busy: {} calls are waiting ([scale.limits] run_queue_capacity)",
                self.queue.capacity()
            ))
        });
        let reply = async move {
            if let Some(error) = refused {
                guard.disarm();
                return Err(error);
            }
            let answer = answer
                .await
                .unwrap_or_else(|_| Err(CallError::Host("run pool stopped".into())));
            guard.disarm();
            answer
        };
        (addr, Either::Right(reply))
    }

    /// Let the calling thread host runs of this runtime (`inline.rs`): a quick call
    /// started from this thread then runs here, with no hand-off to the pool. The HTTP
    /// layer calls it on each of its worker threads. `false` when the thread's stack is
    /// too small for the interpreter (inline runs stay off on it).
    pub fn host_runs_here(&self) -> bool {
        inline::host_here(&self.inner.pool)
    }

    /// Runs started inline so far, and how many of them lost a race and were replayed
    /// by the pool (`/metrics`).
    pub fn inline_runs(&self) -> (u64, u64) {
        let pool = &self.inner.pool;
        (
            pool.inline_runs.load(Ordering::Relaxed),
            pool.inline_handoffs.load(Ordering::Relaxed),
        )
    }

    /// Programs the pool's hosts have loaded from the published sources so far (each
    /// worker loads on its first call; a reload adds one per host that runs again).
    pub fn app_loads(&self) -> u64 {
        self.inner.pool.loads.load(Ordering::Relaxed)
    }

    /// Run the call in `slot` on this thread when it may (`inline::may_run_here`). `None`
    /// leaves the call in `slot` for the pool: not inline, or an inline attempt that
    /// must be replayed.
    fn try_inline(&self, slot: &mut Option<RunCall>) -> Option<RunReply> {
        let pool = &self.inner.pool;
        let call = slot.as_ref()?;
        if !inline::may_run_here(pool, &call.input, call.req.kind, &call.req.name) {
            return None;
        }
        inline::run_here(pool, slot)
    }

    /// Send a message to a live run; `false` when no such run is alive.
    pub fn send(&self, run: RunId, msg: RunMsg) -> bool {
        match self.inner.runs.get(run) {
            Some(addr) => {
                addr.send(msg);
                true
            }
            None => false,
        }
    }

    /// Tell every live run of this process but `except` that `anchors` changed (the
    /// invalidation listener's message); returns how many runs were told.
    pub fn flag_stale(&self, anchors: &[AnchorId], except: Option<RunId>) -> usize {
        if anchors.is_empty() {
            return 0;
        }
        // Another replica wrote them (`except` is `None`; this process's own commits are
        // already in the cache): the process-wide L1 must not serve the old rows.
        if let Some(l1) = self.inner.l1.as_ref().filter(|_| except.is_none()) {
            l1.invalidate(anchors);
        }
        self.inner
            .runs
            .broadcast(&RunMsg::Stale(anchors.to_vec()), except)
    }

    /// The embedded tier's L1 cache counters (`None` on the document tier).
    pub fn l1_stats(&self) -> Option<crate::l1::CacheStats> {
        self.inner.l1.as_ref().map(|l1| l1.stats())
    }

    /// The document tier's L2 cache counters (`None` without one).
    pub fn l2_stats(&self) -> Option<crate::l2::L2Stats> {
        self.inner.l2.as_ref().map(|l2| l2.stats())
    }

    /// Run actors alive now (queued or running).
    pub fn live_runs(&self) -> usize {
        self.inner.runs.len()
    }

    /// Re-load the app from disk in every worker (dev mode); `Err` (text for stderr)
    /// leaves the old app running. Every call sent after this returns `Ok` runs the new
    /// app.
    pub async fn reload(&self) -> Result<Loaded, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        // A reload is never refused for capacity.
        let _ = self.queue.push(Job::Reload(reply));
        answer
            .await
            .unwrap_or_else(|_| Err("error: run pool stopped\n".into()))
    }

    /// Probe the store through its supervisor (for health endpoints); a failed probe
    /// makes the supervisor re-open the file.
    pub async fn store_health(&self) -> Result<StoreHealth, String> {
        match self.supervisor.send(CheckStore).await {
            Ok(health) => health,
            Err(e) => Err(format!("store supervisor unavailable: {e}")),
        }
    }

    /// Restart the store tier: the supervisor re-opens the file and revokes the workers'
    /// connections (each re-opens before its next call; a call running on a revoked
    /// connection fails with the retryable `Unavailable` instead of committing).
    pub async fn restart_store(&self, reason: &str) -> Result<(), String> {
        self.supervisor
            .send(RestartStore {
                reason: reason.to_string(),
            })
            .await
            .map_err(|e| format!("store supervisor unavailable: {e}"))
    }

    /// The shared public root (the guest's root, `root.shared`; the root `svc run` uses).
    pub fn shared_root(&self) -> AnchorId {
        self.inner.shared_root
    }

    /// The SQLite file of the store.
    pub fn store_path(&self) -> &Path {
        &self.inner.store_path
    }

    /// Which backend holds the graph.
    pub fn store_target(&self) -> &StoreTarget {
        &self.inner.target
    }

    /// Number of calls currently running or queued (for graceful shutdown draining).
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    /// Optimistic-concurrency replays made since start (all workers), for metrics.
    pub fn replays(&self) -> u64 {
        self.inner.replays.load(Ordering::Relaxed)
    }

    /// Calls waiting in the run pool's queue now.
    pub fn queue_depth(&self) -> usize {
        self.queue.len()
    }

    /// Commits of served calls so far, by outcome.
    pub fn commits(&self) -> &CommitCounts {
        &self.inner.commits
    }
}

/// The call of an `@subscribe` handler: a function run as the system principal on the
/// shared root.
fn event_call(handler: &str, trace_id: String) -> CallRequest {
    CallRequest {
        kind: EndpointKind::Function,
        name: handler.to_string(),
        args: serde_json::Map::new(),
        start: Start::Root,
        caller: Caller {
            user_id: Some(SYSTEM_PRINCIPAL.to_string()),
            root: None,
            authorization: None,
        },
        trace_id,
    }
}
