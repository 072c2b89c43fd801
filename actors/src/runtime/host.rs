//! The `Host`s of the server: `ServeHost` (one per call attempt, over the worker's
//! store connection, acting for the caller's root) and `LoadHost` (loading the app's
//! module code, with the sources it read recorded or replayed so every worker runs the
//! same text).

use super::hot::HotAnchors;
use super::run::{Mailbox, RunId};
use super::supervisor::StoreLeases;
use super::{CallError, CommitSink, Committed};
use crate::store::{StoreError, VersionTracker};
use crate::tier::AnchorStore;
use lang::host::{AnchorId, CommitSet, Host, HostError, Stale, StoredAnchor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Map a store error to the interpreter's, remembering whether the connection failed.
fn host_error(e: StoreError, failed: &mut bool) -> HostError {
    if !matches!(e, StoreError::Conflict { .. }) {
        *failed = true;
    }
    HostError::from(e)
}

/// The `Host` of one call attempt. Reads and the commit go through the worker's
/// connection with the shared `VersionTracker` bookkeeping (the same as `svc run`), so a
/// commit over stale reads fails with `HostError::Conflict` and the worker replays.
pub(crate) struct ServeHost<'a> {
    store: &'a mut AnchorStore,
    versions: &'a mut VersionTracker,
    user_root: AnchorId,
    shared_root: AnchorId,
    trace_id: &'a str,
    /// Anchors claimed by escalated calls; a commit touching one waits for its release.
    hot: &'a HotAnchors,
    /// This call's token in `hot`.
    call: u64,
    /// The run actor's mailbox: `Stale` messages reach the interpreter through it.
    mailbox: &'a Mailbox,
    /// The supervisor's leases and the generation of this call's connection: a commit
    /// on a revoked connection is refused (retryable).
    lease: (&'a StoreLeases, u64),
    /// Told about each successful commit, with the run's id.
    notify: Option<(RunId, &'a CommitSink)>,
    /// A store operation failed for a reason other than a conflict: the worker re-opens
    /// its connection after the call.
    pub(crate) store_failed: bool,
    /// This host committed a non-empty commit set (the endpoint writes: `inline.rs`).
    pub(crate) wrote: bool,
    /// Anchors this host loaded or committed (a bulk call retires its worker:
    /// `RunWorker::retiring`).
    pub(crate) anchors: usize,
    /// Native services (`RuntimeConfig::natives`).
    natives: Option<&'a crate::natives::NativesHandle>,
    /// Counts this host's commits by outcome.
    commits: Option<&'a super::CommitCounts>,
    /// The calling request's `Authorization` header, for natives.
    authorization: Option<&'a str>,
    /// `commit_last` may leave the commit to the worker (`take_deferred`).
    pipeline: bool,
    /// The last commit, prepared and not yet sent (`commit_last` while pipelining).
    deferred: Option<DeferredCommit>,
    /// Commits of this host that succeeded.
    commits_done: u32,
    /// A deferred commit sent later by this host (the run asked for more) failed: the
    /// call's outcome, whatever the run made of the error.
    flush_failed: Option<CallError>,
}

/// A call's last commit set, handed from the interpreter to the worker, which gives it
/// to the group (`AnchorStore::hand_off`) and answers the call once it is written.
pub(crate) struct DeferredCommit {
    /// As sent: `read_versions` holds what this attempt read (`VersionTracker::prepare`).
    pub(crate) changes: CommitSet,
    /// For the commit sink, after success.
    pub(crate) notice: Option<Committed>,
    /// An earlier commit of the same call stored something: a lost race is then
    /// `ConflictAfterCommit`, never replayed.
    pub(crate) after_commit: bool,
}

impl<'a> ServeHost<'a> {
    /// A host acting for `user_root`, with `shared_root` as `root.shared`. The tracker
    /// must be clear (a fresh attempt).
    pub(crate) fn new(
        store: &'a mut AnchorStore,
        versions: &'a mut VersionTracker,
        user_root: AnchorId,
        shared_root: AnchorId,
        trace_id: &'a str,
        hot: &'a HotAnchors,
        call: u64,
        mailbox: &'a Mailbox,
        lease: (&'a StoreLeases, u64),
    ) -> ServeHost<'a> {
        ServeHost {
            store,
            versions,
            user_root,
            shared_root,
            trace_id,
            hot,
            call,
            mailbox,
            lease,
            notify: None,
            store_failed: false,
            wrote: false,
            anchors: 0,
            natives: None,
            commits: None,
            authorization: None,
            pipeline: false,
            deferred: None,
            commits_done: 0,
            flush_failed: None,
        }
    }

    /// Let `commit_last` defer the call's last commit to the worker (`take_deferred`).
    pub(crate) fn pipelined(mut self, on: bool) -> ServeHost<'a> {
        self.pipeline = on;
        self
    }

    /// The deferred last commit, for the worker to hand to the group.
    pub(crate) fn take_deferred(&mut self) -> Option<DeferredCommit> {
        self.deferred.take()
    }

    /// The failure of a deferred commit this host had to send itself, if it failed.
    pub(crate) fn take_flush_failure(&mut self) -> Option<CallError> {
        self.flush_failed.take()
    }

    /// Send the deferred commit now (the run asks the host for more after it, or the
    /// worker does not pipeline this outcome). Its failure is also kept for the worker
    /// (`take_flush_failure`): the run may swallow the error it gets here.
    pub(crate) fn flush(&mut self) -> Result<(), HostError> {
        let Some(deferred) = self.deferred.take() else {
            return Ok(());
        };
        let done = self.store.commit(&deferred.changes);
        if let Some(counts) = self.commits {
            counts.count(&done);
        }
        match done {
            Ok(after) => {
                self.versions.committed(after, &deferred.changes.deletes);
                self.commits_done += 1;
                self.tell_sink(deferred.notice);
                Ok(())
            }
            Err(e) => {
                let e = host_error(e, &mut self.store_failed);
                self.flush_failed = Some(CallError::from_host(e.clone(), deferred.after_commit));
                Err(e)
            }
        }
    }

    fn tell_sink(&self, notice: Option<Committed>) {
        if let (Some((_, sink)), Some(notice)) = (self.notify, notice)
            && !(notice.written.is_empty() && notice.deleted.is_empty())
        {
            sink(notice);
        }
    }

    /// The calling request's `Authorization` header, handed to natives.
    pub(crate) fn with_authorization(mut self, authorization: Option<&'a str>) -> ServeHost<'a> {
        self.authorization = authorization;
        self
    }

    /// Count each commit of this host in `counts`.
    pub(crate) fn count_commits(mut self, counts: &'a super::CommitCounts) -> ServeHost<'a> {
        self.commits = Some(counts);
        self
    }

    /// Report each successful commit of this host to `sink` as `run`'s.
    pub(crate) fn notify_commits(mut self, run: RunId, sink: Option<&'a CommitSink>) -> Self {
        self.notify = sink.map(|s| (run, s));
        self
    }

    /// Answer `call_native` through `natives`.
    pub(crate) fn with_natives(
        mut self,
        natives: Option<&'a crate::natives::NativesHandle>,
    ) -> ServeHost<'a> {
        self.natives = natives;
        self
    }
}

impl Host for ServeHost<'_> {
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        self.flush()?;
        let loaded = self
            .versions
            .load(self.store, id)
            .map_err(|e| host_error(e, &mut self.store_failed))?;
        self.anchors += usize::from(loaded.is_some());
        Ok(loaded)
    }

    fn load_many(&mut self, ids: &[AnchorId]) -> Result<Vec<StoredAnchor>, HostError> {
        self.flush()?;
        let loaded = self
            .versions
            .load_many(self.store, ids)
            .map_err(|e| host_error(e, &mut self.store_failed))?;
        self.anchors += loaded.len();
        Ok(loaded)
    }

    fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, HostError> {
        self.flush()?;
        self.versions
            .load_edges(self.store, id)
            .map_err(|e| host_error(e, &mut self.store_failed))
    }

    fn commit(&mut self, changes: CommitSet) -> Result<(), HostError> {
        self.flush()?;
        let (leases, generation) = self.lease;
        if leases.current() != generation {
            return Err(HostError::Unavailable(
                "the store tier was restarted while the call ran".into(),
            ));
        }
        self.wrote |= !changes.is_empty();
        self.anchors += changes.upserts.len() + changes.deletes.len();
        // A call that escalated on an anchor this commit touches goes first.
        self.hot.wait_clear(self.call, &changes);
        let notice = self.notify.map(|(run, _)| committed(run, &changes));
        let done = self.versions.commit(self.store, changes);
        if let Some(counts) = self.commits {
            counts.count(&done);
        }
        done.map_err(|e| host_error(e, &mut self.store_failed))?;
        self.commits_done += 1;
        self.tell_sink(notice);
        Ok(())
    }

    /// While pipelining, the set is prepared (lease, claims and read versions checked
    /// as `commit` does) and kept for the worker: the call's answer then waits for the
    /// group that writes it, while the worker takes its next call.
    fn commit_last(&mut self, changes: CommitSet) -> Result<(), HostError> {
        if !self.pipeline || self.deferred.is_some() || changes.is_empty() {
            return self.commit(changes);
        }
        let (leases, generation) = self.lease;
        if leases.current() != generation {
            return Err(HostError::Unavailable(
                "the store tier was restarted while the call ran".into(),
            ));
        }
        self.wrote = true;
        self.anchors += changes.upserts.len() + changes.deletes.len();
        self.hot.wait_clear(self.call, &changes);
        let notice = self.notify.map(|(run, _)| committed(run, &changes));
        self.deferred = Some(DeferredCommit {
            changes: self.versions.prepare(changes),
            notice,
            after_commit: self.commits_done > 0,
        });
        Ok(())
    }

    fn user_root(&self) -> AnchorId {
        self.user_root
    }

    fn shared_root(&self) -> AnchorId {
        self.shared_root
    }

    /// `print` and `report` output of a served call is a log line, never part of the
    /// HTTP response.
    fn write_stdout(&mut self, text: &str) {
        let text = text.strip_suffix('\n').unwrap_or(text);
        tracing::debug!(target: "svc::stdout", trace_id = self.trace_id, "{text}");
    }

    fn list_dir(&mut self, dir: &Path) -> Vec<String> {
        lang::host::list_dir_names(dir)
    }

    fn read_module(&mut self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    fn call_native(
        &mut self,
        name: &str,
        args: &[serde_json::Value],
    ) -> Option<Result<serde_json::Value, HostError>> {
        if let Err(e) = self.flush() {
            return Some(Err(e));
        }
        if let Some(answer) = crate::kvstore::call(name, args, Some(&*self.mailbox.cancel)) {
            return Some(answer);
        }
        let call = crate::natives::NativeCall {
            trace_id: self.trace_id,
            cancel: Some(&self.mailbox.cancel),
            authorization: self.authorization,
        };
        self.natives?.call(name, args, call)
    }

    fn take_stale(&mut self) -> Option<Stale> {
        let stale = self.mailbox.take_stale()?;
        Some(if stale.all {
            Stale::All
        } else {
            Stale::Anchors(stale.anchors)
        })
    }
}

/// The anchors a commit changes: written (upserted or re-linked) and deleted.
fn committed(run: RunId, changes: &CommitSet) -> Committed {
    let mut written: Vec<AnchorId> = changes.upserts.iter().map(|a| a.id).collect();
    for &(node, _) in changes.edge_adds.iter().chain(&changes.edge_removes) {
        written.push(node);
    }
    written.sort_unstable();
    written.dedup();
    Committed {
        run,
        written,
        deleted: changes.deletes.clone(),
    }
}

/// Where `LoadHost` gets module sources.
pub(crate) enum Sources<'a> {
    /// Read from disk and record every file read (the validating load).
    Record(&'a mut HashMap<PathBuf, String>),
    /// Serve the recorded text; a path not recorded is read from disk.
    Replay(&'a HashMap<PathBuf, String>),
}

/// The `Host` used while an app's module code runs (`lang::serve::load_app`), acting for
/// the shared root. The validating load commits (module-level code takes effect once per
/// load of the app); a worker's own load of already validated sources discards its
/// commit, so N workers do not repeat the module code's writes N times.
pub(crate) struct LoadHost<'a> {
    store: &'a mut AnchorStore,
    versions: VersionTracker,
    root: AnchorId,
    sources: Sources<'a>,
    commit: bool,
}

impl<'a> LoadHost<'a> {
    pub(crate) fn new(store: &'a mut AnchorStore, sources: Sources<'a>, commit: bool) -> Self {
        let root = store.root_id();
        LoadHost {
            store,
            versions: VersionTracker::default(),
            root,
            sources,
            commit,
        }
    }
}

impl Host for LoadHost<'_> {
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        Ok(self.versions.load(self.store, id)?)
    }

    fn load_many(&mut self, ids: &[AnchorId]) -> Result<Vec<StoredAnchor>, HostError> {
        Ok(self.versions.load_many(self.store, ids)?)
    }

    fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, HostError> {
        Ok(self.versions.load_edges(self.store, id)?)
    }

    fn commit(&mut self, changes: CommitSet) -> Result<(), HostError> {
        if self.commit {
            self.versions.commit(self.store, changes)?;
        }
        Ok(())
    }

    fn user_root(&self) -> AnchorId {
        self.root
    }

    fn write_stdout(&mut self, text: &str) {
        // `load_app` captures module output itself; this is only reached if it doesn't.
        let text = text.strip_suffix('\n').unwrap_or(text);
        tracing::debug!(target: "svc::stdout", "{text}");
    }

    fn call_native(
        &mut self,
        name: &str,
        args: &[serde_json::Value],
    ) -> Option<Result<serde_json::Value, HostError>> {
        crate::kvstore::call(name, args, None)
    }

    fn list_dir(&mut self, dir: &Path) -> Vec<String> {
        lang::host::list_dir_names(dir)
    }

    fn read_module(&mut self, path: &Path) -> Option<String> {
        match &mut self.sources {
            Sources::Record(seen) => {
                let text = std::fs::read_to_string(path).ok()?;
                seen.insert(path.to_path_buf(), text.clone());
                Some(text)
            }
            Sources::Replay(known) => match known.get(path) {
                Some(text) => Some(text.clone()),
                None => std::fs::read_to_string(path).ok(),
            },
        }
    }
}
