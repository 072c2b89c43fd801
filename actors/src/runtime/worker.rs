//! `RunWorker`: one interpreter thread of the run pool, fed by the pool's `JobQueue`.
//! It owns its own `Program` (loaded in its thread), its own store connection and the
//! replay loop of optimistic concurrency.

use super::app::{self, SourceBoard};
use super::host::{DeferredCommit, ServeHost};
use super::hot::HotAnchors;
use super::messages::{EventBatch, ReportStoreFailure, RunCall, RunInput};
use super::run::RunAddr;
use super::supervisor::StoreLeases;
use super::{CallError, CallOutcome, CallRequest, EndpointKind, Loaded};
use crate::store::{VersionTracker, random_id};
use crate::tier::AnchorStore;
use actix::Recipient;
use lang::Limits;
use lang::host::AnchorId;
use lang::host::parse_id;
use lang::serve::Program;
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What every worker of a pool shares (read-only, except the board).
pub(crate) struct PoolShared {
    pub(crate) entry: PathBuf,
    /// The store connections, leased from the supervisor.
    pub(crate) leases: Arc<StoreLeases>,
    pub(crate) limits: Limits,
    pub(crate) max_replays: u32,
    pub(crate) as_main: bool,
    pub(crate) shared_root: AnchorId,
    pub(crate) board: SourceBoard,
    pub(crate) supervisor: Recipient<ReportStoreFailure>,
    /// Replays made so far (all workers), for metrics.
    pub(crate) replays: Arc<AtomicU64>,
    /// Anchors claimed by escalated calls (see `ESCALATE_AFTER`).
    pub(crate) hot: HotAnchors,
    /// Tokens of calls in `hot`.
    pub(crate) next_call: AtomicU64,
    /// Told about every successful commit (the invalidation publisher).
    pub(crate) committed: Option<super::CommitSink>,
    /// Native services of every call (`RuntimeConfig::natives`).
    pub(crate) natives: Option<crate::natives::NativesHandle>,
    /// Commits of served calls by outcome (`Runtime::commits`).
    pub(crate) commits: Arc<super::CommitCounts>,
    /// Recent run times per endpoint (which calls may run inline, `inline.rs`).
    pub(crate) stats: super::inline::EndpointStats,
    /// A call runs inline when its endpoint's mean run time is at most this; 0 = never.
    pub(crate) inline_max_ns: u64,
    /// Endpoints that commit may run inline too (`RuntimeConfig::inline_writers`).
    pub(crate) inline_writers: bool,
    /// Runs started inline so far, and inline runs handed to the pool to replay.
    pub(crate) inline_runs: AtomicU64,
    pub(crate) inline_handoffs: AtomicU64,
    /// Programs loaded from the published sources by this pool's hosts (workers and
    /// inline hosts load on their first call, not at start).
    pub(crate) loads: AtomicU64,
    /// Anchors past which a call retires its worker (`DEFAULT_RETIRE_ANCHORS`; 0 = never).
    pub(crate) retire_anchors: usize,
}

/// Replays after which a call claims the anchors it lost races on. Pure optimistic
/// replay can starve a call on a hot node (a writer that keeps committing between the
/// loser's read and its commit); with the claim, other commits touching those anchors
/// wait for it, while calls touching anything else run on undisturbed.
const ESCALATE_AFTER: u32 = 2;

/// Default of `RuntimeConfig::retire_anchors` (`[scale.limits] worker_retire_anchors`):
/// anchors (loaded or committed) past which one call is a bulk call and its worker
/// retires after answering it (`RunWorker::retiring`): the thread ends and a fresh one
/// takes its place. A bulk call leaves its thread's allocator heap spread over the pages
/// it grew to; a thread's end hands those pages back (after 100,000 siblings added by ten
/// calls: 81 MB resident instead of 184–203, benches/load/README.md, "Siblings"), and
/// the fresh worker loads the app and opens its connection on its first call, which
/// costs about what a few hundred anchors do.
pub const DEFAULT_RETIRE_ANCHORS: usize = 4096;

/// The program a worker runs and the source generation it was loaded from.
struct WorkerApp {
    program: Program,
    generation: u64,
}

/// One interpreter thread. Created by the pool's factory inside its own thread (with
/// `lang::driver::INTERPRETER_STACK_BYTES` of stack), so the `!Send` program never moves.
pub struct RunWorker {
    shared: Arc<PoolShared>,
    store: Option<AnchorStore>,
    /// The lease generation `store` was opened under.
    lease: u64,
    app: Option<WorkerApp>,
    versions: VersionTracker,
    /// User roots known to exist in the store (created on first use).
    known_roots: HashSet<AnchorId>,
    /// The last call's run committed something (its endpoint writes: `inline.rs`).
    last_wrote: bool,
    /// A call of this worker was a bulk call (`PoolShared::retire_anchors`): the pool replaces it.
    bulk: bool,
}

impl RunWorker {
    /// A worker with no connection and no program yet: both come with its first call
    /// (`run_attempts` refreshes the app before every call), so a worker that never runs
    /// one costs a parked thread and nothing more.
    pub(crate) fn idle(shared: Arc<PoolShared>) -> RunWorker {
        RunWorker {
            shared,
            store: None,
            lease: 0,
            app: None,
            versions: VersionTracker::default(),
            known_roots: HashSet::new(),
            last_wrote: false,
            bulk: false,
        }
    }

    /// Open a connection and load the published app. `Err` (the text for stderr) still
    /// yields a worker, which retries on its next message.
    pub(crate) fn start(shared: Arc<PoolShared>) -> (RunWorker, Result<(), String>) {
        let mut worker = RunWorker::idle(shared);
        let ready = catch_unwind(AssertUnwindSafe(|| worker.refresh_app()))
            .unwrap_or_else(|_| Err("error: internal error while loading the app\n".into()));
        (worker, ready)
    }

    /// The store connection, opened on demand, and re-opened when the supervisor has
    /// revoked its lease (a restart of the store tier).
    fn store(&mut self) -> Result<&mut AnchorStore, String> {
        let current = self.shared.leases.current();
        let store = match self.store.take() {
            Some(store) if self.lease == current => store,
            stale => {
                if stale.is_some() {
                    self.versions.clear();
                    self.known_roots.clear();
                }
                let (store, lease) = self.shared.leases.open()?;
                self.lease = lease;
                store
            }
        };
        Ok(self.store.insert(store))
    }

    /// Whether this worker ran a bulk call (`PoolShared::retire_anchors`) and should end, for a fresh
    /// worker in a fresh thread to take its place.
    pub(crate) fn retiring(&self) -> bool {
        self.bulk
    }

    /// Drop the connection (it is re-opened on the next use) and tell the supervisor.
    fn reset_store(&mut self, error: String) {
        self.store = None;
        self.versions.clear();
        self.known_roots.clear();
        self.shared.supervisor.do_send(ReportStoreFailure { error });
    }

    /// Load the published sources if this worker has none or an older generation. A
    /// failed reload of an already running worker keeps its old program.
    fn refresh_app(&mut self) -> Result<(), String> {
        let published = self.shared.board.generation();
        if self.app.as_ref().is_some_and(|a| a.generation == published) {
            return Ok(());
        }
        let source = self.shared.board.current();
        let entry = self.shared.entry.clone();
        let limits = self.shared.limits.clone();
        let as_main = self.shared.as_main;
        let store = self.store()?;
        match app::load_published(&entry, &source, store, &limits, as_main) {
            Ok(program) => {
                let archetypes = crate::docstore::Archetypes {
                    known: Some(Arc::new(program.archetype_names().into_iter().collect())),
                };
                self.shared.leases.set_archetypes(archetypes.clone());
                if let Some(store) = self.store.as_mut() {
                    store.set_archetypes(archetypes);
                }
                self.app = Some(WorkerApp {
                    program,
                    generation: source.generation,
                });
                self.shared.loads.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(text) => match &mut self.app {
                Some(app) => {
                    tracing::error!(
                        generation = source.generation,
                        "a worker could not load the reloaded app; it keeps the old one: {text}"
                    );
                    app.generation = source.generation;
                    Ok(())
                }
                None => Err(text),
            },
        }
    }

    /// One call with its replays; `inline`: one attempt only (a lost race returns
    /// `Conflict` at once, for the pool to replay). `pipeline`: an attempt whose run
    /// succeeded may end with its last commit not yet written (`Ran::Deferred`), for the
    /// caller to hand to the group. `replay`: where an earlier attempt left off (a
    /// pipelined commit that lost a race); the backoff comes first.
    fn run(
        &mut self,
        req: &CallRequest,
        input: &RunInput,
        run: &RunAddr,
        inline: bool,
        pipeline: bool,
        replay: Option<Box<Replay>>,
    ) -> Ran {
        match self.run_attempts(req, input, run, inline, pipeline, replay) {
            Ok(ran) => ran,
            Err(e) => Ran::Done(Err(e)),
        }
    }

    fn run_attempts(
        &mut self,
        req: &CallRequest,
        input: &RunInput,
        run: &RunAddr,
        inline: bool,
        pipeline: bool,
        replay: Option<Box<Replay>>,
    ) -> Result<Ran, CallError> {
        #[cfg(test)]
        if req.name == super::tests::PANIC_PROBE {
            panic!("panic probe");
        }
        // The store first: a worker that has not loaded the app yet opens it to load, and
        // a database that does not answer then is retryable (503), not a failed load.
        self.store().map_err(CallError::Unavailable)?;
        self.refresh_app().map_err(CallError::Host)?;
        let shared_root = self.shared.shared_root;
        let user_root = req.caller.root.unwrap_or(shared_root);
        if user_root != shared_root && !self.known_roots.contains(&user_root) {
            let created = self
                .store()
                .map_err(CallError::Unavailable)?
                .ensure_root(user_root);
            match created {
                Ok(_) => {
                    self.known_roots.insert(user_root);
                }
                Err(e) => {
                    let unreachable = matches!(e, crate::store::StoreError::Unreachable(_));
                    let text = format!("store error: {e}");
                    self.reset_store(text.clone());
                    // A database that does not answer is retryable (503), not a defect.
                    return Err(if unreachable {
                        CallError::Unavailable(text)
                    } else {
                        CallError::Host(text)
                    });
                }
            }
        }
        let shared = Arc::clone(&self.shared);
        let (call, mut contended, mut attempt) = match replay {
            Some(replay) => {
                backoff(replay.attempt, replay.took);
                (replay.call, replay.contended, replay.attempt)
            }
            None => (
                shared.next_call.fetch_add(1, Ordering::Relaxed),
                Vec::new(),
                0,
            ),
        };
        let mut limits = shared.limits.clone();
        let cancel = &run.mailbox().cancel;
        limits.cancel = Some(Arc::clone(cancel));
        loop {
            if cancel.load(Ordering::Relaxed) {
                tracing::info!(trace_id = %req.trace_id, name = %req.name, run = %run.id(), "call cancelled: the client went away");
                return Err(CallError::Cancelled);
            }
            // The store cannot be opened (a database that does not answer): retryable.
            self.store().map_err(CallError::Unavailable)?;
            let attempt_started = std::time::Instant::now();
            // A call that lost `ESCALATE_AFTER` races claims the anchors it lost on:
            // other commits touching them wait for it, nothing else does.
            let claim = (attempt >= ESCALATE_AFTER).then(|| shared.hot.claim(call, &contended));
            let (Some(store), Some(app)) = (self.store.as_mut(), self.app.as_ref()) else {
                return Err(CallError::Host("the app is not loaded".into()));
            };
            self.versions.clear();
            let pipelines = store.pipelines();
            store.begin_attempt();
            let mut host = ServeHost::new(
                store,
                &mut self.versions,
                user_root,
                shared_root,
                &req.trace_id,
                &shared.hot,
                call,
                run.mailbox(),
                (&shared.leases, self.lease),
            )
            .notify_commits(run.id(), shared.committed.as_ref())
            .with_natives(shared.natives.as_ref())
            .count_commits(&shared.commits)
            .with_authorization(req.caller.authorization.as_deref())
            // An escalated call keeps its claim until its commit is written: it commits
            // in place.
            .pipelined(pipeline && pipelines && claim.is_none() && matches!(input, RunInput::Call));
            let result = match (req.kind, input) {
                (_, RunInput::Event(record)) => {
                    lang::serve::deliver_event(&app.program, &mut host, &limits, &req.name, record)
                }
                (_, RunInput::Events(_)) => Err(CallError::Host(
                    "an event batch is split by serve_call".into(),
                )),
                (_, RunInput::Graph(query)) => {
                    lang::serve::graph_view(&app.program, &mut host, &limits, query)
                }
                (EndpointKind::Walker, RunInput::Call) => lang::serve::spawn_walker(
                    &app.program,
                    &mut host,
                    &limits,
                    &req.name,
                    &req.args,
                    req.start,
                ),
                (EndpointKind::Function, RunInput::Call) => lang::serve::call_function(
                    &app.program,
                    &mut host,
                    &limits,
                    &req.name,
                    &req.args,
                ),
            };
            // A run that succeeded leaves its last commit to the caller (pipelined);
            // otherwise a commit still deferred is sent now, and a deferred commit that
            // failed is the call's outcome, whatever the run made of its error.
            let mut result = result;
            let mut deferred = None;
            if result.is_ok() && !host.store_failed {
                deferred = host.take_deferred();
            }
            let _ = host.flush();
            if let Some(failed) = host.take_flush_failure() {
                result = Err(failed);
            }
            self.last_wrote = host.wrote;
            let retire = self.shared.retire_anchors;
            self.bulk |= retire > 0 && host.anchors > retire;
            if host.store_failed {
                let text = match &result {
                    Err(CallError::Host(m)) => m.clone(),
                    _ => "store error".to_string(),
                };
                self.reset_store(text);
            }
            if let Some(store) = self.store.as_mut() {
                store.end_attempt();
            }
            let result = match (deferred, result) {
                (Some(commit), Ok(outcome)) => {
                    return Ok(Ran::Deferred(Box::new(DeferredCall {
                        outcome,
                        commit,
                        replay: Replay {
                            attempt,
                            contended,
                            call,
                            took: attempt_started.elapsed(),
                        },
                    })));
                }
                // A deferred commit under a failed outcome is dropped unsent.
                (_, result) => result,
            };
            match result {
                conflict @ Err(CallError::Conflict(_)) if inline => return Ok(Ran::Done(conflict)),
                Err(CallError::Conflict(anchor)) if attempt < self.shared.max_replays => {
                    attempt += 1;
                    self.shared.replays.fetch_add(1, Ordering::Relaxed);
                    if let Some(id) = parse_id(&anchor)
                        && !contended.contains(&id)
                    {
                        contended.push(id);
                    }
                    tracing::debug!(
                        trace_id = %req.trace_id,
                        user = req.caller.user_id.as_deref().unwrap_or("guest"),
                        name = %req.name,
                        attempt,
                        %anchor,
                        "write conflict; replaying the call"
                    );
                    drop(claim);
                    backoff(attempt, attempt_started.elapsed());
                }
                Err(CallError::Conflict(anchor)) => {
                    return Err(CallError::Conflict(format!(
                        "write conflict on anchor {anchor} after {attempt} replays"
                    )));
                }
                Err(CallError::Cancelled) => {
                    tracing::info!(trace_id = %req.trace_id, name = %req.name, run = %run.id(), "call cancelled: the client went away");
                    return Err(CallError::Cancelled);
                }
                other => return Ok(Ran::Done(other)),
            }
        }
    }

    /// The validating reload: read the files again, run the module code (committing),
    /// and publish the sources for the other workers.
    fn reload(&mut self) -> Result<Loaded, String> {
        let entry = self.shared.entry.clone();
        let limits = self.shared.limits.clone();
        let as_main = self.shared.as_main;
        let store = self.store().map_err(|e| format!("error: {e}\n"))?;
        let (program, loaded, files) = app::load_from_disk(&entry, store, &limits, as_main)?;
        let generation = self.shared.board.publish(files);
        self.app = Some(WorkerApp {
            program,
            generation,
        });
        Ok(loaded)
    }
}

/// Sleep a random while before replay `attempt` (1-based): a quarter of a ceiling that
/// doubles per attempt plus up to the ceiling again, so two losers do not collide again
/// in lockstep. The ceiling starts at the larger of 0.2 ms and the lost attempt's own
/// duration (a call on the document tier takes milliseconds, and its rivals may be other
/// replicas, which the in-process claim does not order) and is capped at 250 ms.
fn backoff(attempt: u32, took: Duration) {
    let base_us = (took.as_micros() as u64).clamp(200, 50_000);
    let ceiling_us: u64 = (base_us << attempt.min(7)).min(250_000);
    let jitter = (random_id() as u64) % ceiling_us;
    std::thread::sleep(Duration::from_micros(ceiling_us / 4 + jitter));
}

/// Where a call's replays stand: carried by a `Job::Replay` when a pipelined commit lost
/// its race after the worker had moved on.
pub(crate) struct Replay {
    /// Replays made so far (the next attempt is this one).
    attempt: u32,
    /// Anchors the call lost races on (claimed after `ESCALATE_AFTER` replays).
    contended: Vec<AnchorId>,
    /// The call's token in `HotAnchors`.
    call: u64,
    /// How long the lost attempt ran (the backoff's base).
    took: Duration,
}

/// A call attempt whose run succeeded with its last commit not yet written.
pub(crate) struct DeferredCall {
    outcome: CallOutcome,
    commit: DeferredCommit,
    /// Where the replays stand, should the commit lose its race.
    replay: Replay,
}

/// How `RunWorker::run` ended.
pub(crate) enum Ran {
    /// The call's answer.
    Done(Result<CallOutcome, CallError>),
    /// The run succeeded; its last commit is to be handed to the group, and the answer
    /// waits for it (`RunWorker::hand_off`).
    Deferred(Box<DeferredCall>),
}

type Reply = tokio::sync::oneshot::Sender<Result<CallOutcome, CallError>>;

impl RunWorker {
    /// Run one call (with its replays) and answer it through `reply`; a panic is caught,
    /// the worker re-opens its store and keeps serving. A plain call's last commit is
    /// pipelined when the store allows it: handed to the group with what answers the
    /// call once it is written (`hand_off`), while this worker returns for its next job.
    pub(crate) fn serve_call(
        &mut self,
        msg: RunCall,
        reply: Reply,
        queue: &Arc<super::queue::JobQueue>,
        replay: Option<Box<Replay>>,
    ) {
        let RunCall {
            mut req,
            input,
            in_flight,
            run,
            registration,
        } = msg;
        if let RunInput::Events(EventBatch { records, replies }) = input {
            // One message, many deliveries: each is its own run (interpreter, commit,
            // replays) as if it had come alone; a cancelled batch answers the rest
            // `Cancelled` at once (`run` checks the flag first).
            let mut out = Vec::with_capacity(records.len());
            for (record, trace_id) in records {
                req.trace_id = trace_id;
                out.push(self.run_done(&req, &RunInput::Event(record), &run, false));
            }
            drop(registration);
            drop(in_flight);
            let _ = replies.send(out);
            let _ = reply.send(Ok(CallOutcome {
                result: serde_json::Value::Null,
                reports: Vec::new(),
            }));
            return;
        }
        let started = std::time::Instant::now();
        self.last_wrote = false;
        // Whether the store pipelines is asked of the connection the attempt uses
        // (`run_attempts`): a worker opens it lazily, on its first call.
        let pipeline = matches!(input, RunInput::Call);
        match self.run_caught(&req, &input, &run, false, pipeline, replay) {
            Ran::Done(outcome) => {
                if matches!(input, RunInput::Call) {
                    self.shared.stats.record(
                        req.kind,
                        &req.name,
                        started.elapsed(),
                        self.last_wrote,
                    );
                }
                drop(registration);
                drop(in_flight);
                let _ = reply.send(outcome);
            }
            Ran::Deferred(deferred) => {
                let msg = RunCall {
                    req,
                    input,
                    in_flight,
                    run,
                    registration,
                };
                self.hand_off(msg, reply, queue, *deferred, started);
            }
        }
    }

    /// Hand a call's last commit to the group with its completion: once the group is
    /// written, the call is answered (success: the run's outcome, after the commit sink
    /// heard of it), replayed on the pool (a lost race, nothing of it committed, the
    /// run's outcome dropped) or failed (any other error; nothing of it committed). The
    /// completion runs on whichever worker wrote the group. This worker leads the group
    /// itself when nobody does, and waits when too many commits are handed off already.
    fn hand_off(
        &mut self,
        msg: RunCall,
        reply: Reply,
        queue: &Arc<super::queue::JobQueue>,
        deferred: DeferredCall,
        started: std::time::Instant,
    ) {
        let DeferredCall {
            outcome,
            commit,
            mut replay,
        } = deferred;
        let DeferredCommit {
            changes,
            notice,
            after_commit,
        } = commit;
        let shared = Arc::clone(&self.shared);
        let queue = Arc::clone(queue);
        let completion: crate::l1::Completion = Box::new(move |written| {
            shared.commits.count(&written);
            let answer = match written {
                Ok(_) => {
                    if let (Some(sink), Some(notice)) = (&shared.committed, notice)
                        && !(notice.written.is_empty() && notice.deleted.is_empty())
                    {
                        sink(notice);
                    }
                    Ok(outcome)
                }
                Err(e) => match CallError::from_host(e.into(), after_commit) {
                    CallError::Conflict(anchor) if replay.attempt < shared.max_replays => {
                        replay.attempt += 1;
                        shared.replays.fetch_add(1, Ordering::Relaxed);
                        if let Some(id) = parse_id(&anchor)
                            && !replay.contended.contains(&id)
                        {
                            replay.contended.push(id);
                        }
                        tracing::debug!(
                            trace_id = %msg.req.trace_id,
                            name = %msg.req.name,
                            attempt = replay.attempt,
                            %anchor,
                            "write conflict on a pipelined commit; replaying the call"
                        );
                        queue.push_replay(super::queue::Job::Replay(msg, reply, Box::new(replay)));
                        return;
                    }
                    CallError::Conflict(anchor) => Err(CallError::Conflict(format!(
                        "write conflict on anchor {anchor} after {} replays",
                        replay.attempt
                    ))),
                    other => Err(other),
                },
            };
            shared
                .stats
                .record(msg.req.kind, &msg.req.name, started.elapsed(), true);
            drop(msg);
            let _ = reply.send(answer);
        });
        let Some(store) = self.store.as_mut() else {
            completion(Err(crate::store::StoreError::Meta(
                "the store connection was lost before the commit".into(),
            )));
            return;
        };
        let handed = catch_unwind(AssertUnwindSafe(|| store.hand_off(changes, completion)));
        match handed {
            Ok(()) => {
                if let Some(text) = store.take_group_failure() {
                    self.reset_store(format!("store error: group commit failed: {text}"));
                }
            }
            Err(_) => {
                tracing::error!(
                    "a group commit panicked; the worker re-opens its store and keeps serving"
                );
                self.store = None;
                self.versions.clear();
            }
        }
    }

    /// Run the call in `slot` on the requester's thread (`inline.rs`): one attempt. The
    /// answer, or `None` with the call back in `slot` when that attempt lost an
    /// optimistic-concurrency race (nothing was committed) and the pool must replay it.
    pub(crate) fn handle_inline(
        &mut self,
        slot: &mut Option<RunCall>,
    ) -> Option<Result<CallOutcome, CallError>> {
        let msg = slot.take()?;
        self.shared.inline_runs.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        self.last_wrote = false;
        let outcome = self.run_done(&msg.req, &msg.input, &msg.run, true);
        self.shared.stats.record(
            msg.req.kind,
            &msg.req.name,
            started.elapsed(),
            self.last_wrote,
        );
        // In one-attempt mode a `Conflict` is always a lost race left for the pool.
        if matches!(outcome, Err(CallError::Conflict(_))) {
            self.shared.inline_handoffs.fetch_add(1, Ordering::Relaxed);
            *slot = Some(msg);
            return None;
        }
        Some(outcome)
    }

    /// `run_caught` without pipelining: the answer.
    fn run_done(
        &mut self,
        req: &CallRequest,
        input: &RunInput,
        run: &RunAddr,
        inline: bool,
    ) -> Result<CallOutcome, CallError> {
        match self.run_caught(req, input, run, inline, false, None) {
            Ran::Done(outcome) => outcome,
            Ran::Deferred(_) => Err(CallError::Host(
                "internal error: a commit was deferred without pipelining".into(),
            )),
        }
    }

    fn run_caught(
        &mut self,
        req: &CallRequest,
        input: &RunInput,
        run: &RunAddr,
        inline: bool,
        pipeline: bool,
        replay: Option<Box<Replay>>,
    ) -> Ran {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.run(req, input, run, inline, pipeline, replay)
        }));
        outcome.unwrap_or_else(|_| {
            tracing::error!(
                trace_id = %req.trace_id,
                user = req.caller.user_id.as_deref().unwrap_or("guest"),
                name = %req.name,
                "a call panicked; the worker re-opens its store and keeps serving"
            );
            self.store = None;
            self.versions.clear();
            Ran::Done(Err(CallError::Host("internal error".into())))
        })
    }

    /// Reload the app from disk and publish it (`Reload`).
    pub(crate) fn handle_reload(&mut self) -> Result<Loaded, String> {
        catch_unwind(AssertUnwindSafe(|| self.reload()))
            .unwrap_or_else(|_| Err("error: internal error while reloading the app\n".into()))
    }
}
