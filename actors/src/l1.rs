//! The embedded tier's process-wide parts: the **L1 anchor cache** shared by every run
//! worker of a `svc start` process, and **group commit** (many calls' commit sets in one
//! SQLite transaction). Both hang off one `EmbeddedShared`, created by the runtime and
//! handed to every worker connection (`SqliteStore::with_shared`); `svc run` and `svc db`
//! open their store without it and behave exactly as before.
//!
//! ## The cache (the L1 actor)
//!
//! Messages (methods, called synchronously on the caller's thread, see ARCHITECTURE.md
//! "Embedded tier: L1 cache and group commit" for why): `lookup` / `lookup_edges`
//! (a hit), `fill` / `fill_edges` (a miss answered by SQLite), `committed` (what a
//! commit changed, applied in commit order by the group's leader), `invalidate` (the
//! cross-replica listener), `clear` (a store restart, an app reload, a write by another
//! process).
//!
//! Correctness rules:
//! - An entry holds an anchor as stored at version `v` (and, when known, the node's
//!   edge list at the same `v`: every edge-list change bumps the node's version). It is
//!   kept equal to the row by the commits of this process: the group leader applies
//!   each committed call's changes to the cache while it still holds the write lock, so
//!   updates land in commit order.
//! - A miss is filled only if no commit touched the entry's shard between the start of
//!   the SQLite read and the fill (per-shard epochs), so a slow reader never puts an
//!   older row back over a newer one.
//! - Writes by other processes (another `svc start` replica on the same file, `svc run`,
//!   `svc db recover-all`) bump `meta.commit_seq` like ours do: a connection checks it
//!   once per call attempt (and the leader in every group commit) and a value the cache
//!   has not seen clears the whole cache.
//! - A cached read is still only a read: a commit checks every version it depends on
//!   against SQLite inside its transaction, so even a stale entry could only cause a
//!   replay, never a lost update.
//! - It holds what reads brought in: a commit updates cached entries but never adds
//!   one (a created anchor is cached when something first reads it).
//! - The cache is bounded by an approximate byte size (`[scale.database]
//!   l1_cache_bytes`); a full shard drops arbitrary entries.

use lang::host::{AnchorId, StoredAnchor};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

type IdMap<V> = HashMap<AnchorId, V, lang::serve::FxBuild>;

/// Shards of the cache (a power of two); each has its own lock and byte budget.
const SHARDS: usize = 64;

/// Default byte bound of the cache (`l1_cache_bytes`).
pub const DEFAULT_CACHE_BYTES: usize = 64 * 1024 * 1024;
/// Default most calls per group commit (`group_commit_max`).
pub const DEFAULT_GROUP_MAX: usize = 64;
/// Default longest wait of a group's leader for more calls (`group_commit_wait_us`). The
/// leader waits only while other call attempts are running (they may commit soon), so a
/// lone call never waits.
pub const DEFAULT_GROUP_WAIT: Duration = Duration::from_micros(100);

/// Default most handed-off commits waiting at once (`group_commit_pipeline`).
pub const DEFAULT_PIPELINE: usize = 256;

/// Settings of the embedded tier's shared parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddedTuning {
    /// Approximate bytes the L1 cache may hold; 0 turns it off.
    pub cache_bytes: usize,
    /// Most calls whose commit sets share one transaction (1 = no grouping).
    pub group_max: usize,
    /// How long a group's leader waits at most for more calls before it writes, while
    /// other call attempts are still running (0 = it takes whatever queued while the
    /// previous group was being written).
    pub group_wait: Duration,
    /// Most handed-off commits that may wait for their group at once (the pipelined
    /// commit: a run worker hands its call's commit set to the group and takes its next
    /// call; the reply waits for the COMMIT). Past it a worker waits for its own commit;
    /// 0 = every worker waits for its commit (no pipelining).
    pub pipeline: usize,
    /// When the write-ahead log is copied back into the file (`crate::checkpoint`).
    pub checkpoint: crate::checkpoint::CheckpointTuning,
}

impl Default for EmbeddedTuning {
    fn default() -> EmbeddedTuning {
        EmbeddedTuning {
            cache_bytes: DEFAULT_CACHE_BYTES,
            group_max: DEFAULT_GROUP_MAX,
            group_wait: DEFAULT_GROUP_WAIT,
            pipeline: DEFAULT_PIPELINE,
            checkpoint: crate::checkpoint::CheckpointTuning::default(),
        }
    }
}

/// One cached anchor.
struct Entry {
    /// As stored (`edges` is `None`; the list is below).
    anchor: StoredAnchor,
    version: u64,
    /// The node's edge list at `version`, when it was read.
    edges: Option<Vec<AnchorId>>,
    /// Bytes charged to the shard.
    size: usize,
}

fn anchor_size(a: &StoredAnchor) -> usize {
    160 + a.fields.len()
        + a.arch_module.len()
        + a.arch_type.len()
        + a.fingerprint.len()
        + a.access.roots.len() * 24
}

fn edges_size(e: &Option<Vec<AnchorId>>) -> usize {
    e.as_ref().map_or(0, |e| e.len() * 16)
}

#[derive(Default)]
struct Shard {
    map: IdMap<Entry>,
    bytes: usize,
    /// Bumped by every change the commits of this process make in the shard.
    epoch: u64,
}

impl Shard {
    fn remove(&mut self, id: &AnchorId) {
        if let Some(old) = self.map.remove(id) {
            self.bytes -= old.size;
        }
    }

    fn put(&mut self, id: AnchorId, mut entry: Entry, budget: usize, evicted: &AtomicU64) {
        entry.size = anchor_size(&entry.anchor) + edges_size(&entry.edges);
        self.remove(&id);
        if entry.size > budget {
            return;
        }
        while self.bytes + entry.size > budget {
            let Some(&victim) = self.map.keys().next() else {
                break;
            };
            self.remove(&victim);
            evicted.fetch_add(1, Ordering::Relaxed);
        }
        self.bytes += entry.size;
        self.map.insert(id, entry);
    }
}

/// What one committed call changed in one anchor, for the cache.
#[derive(Debug)]
pub(crate) struct Change {
    pub id: AnchorId,
    /// The version before this call (0 = the row did not exist).
    pub before: u64,
    /// The version after it.
    pub after: u64,
    /// The new stored form, when the call wrote the anchor.
    pub anchor: Option<StoredAnchor>,
    /// Edge ids appended and removed, in order.
    pub edge_adds: Vec<AnchorId>,
    pub edge_removes: Vec<AnchorId>,
}

/// Counters of the cache, for tests and metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub clears: u64,
    /// Entries and approximate bytes held now.
    pub entries: u64,
    pub bytes: u64,
    /// Transactions written by group commit, and the calls they carried.
    pub groups: u64,
    pub grouped_calls: u64,
    /// Commits handed off: the worker went on before they were written (pipelined).
    pub handed_off: u64,
    /// The checkpointer's passive checkpoints, log restarts, restarts left busy by
    /// readers, and failures (`crate::checkpoint`).
    pub checkpoints: u64,
    pub wal_restarts: u64,
    pub wal_restarts_busy: u64,
    pub checkpoint_errors: u64,
}

/// The shared parts of one embedded store in one process; see the module docs.
pub struct EmbeddedShared {
    shards: Box<[Mutex<Shard>]>,
    shard_budget: usize,
    enabled: bool,
    /// The `meta.commit_seq` the cache agrees with.
    known_seq: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    clears: AtomicU64,
    groups: AtomicU64,
    grouped_calls: AtomicU64,
    pub(crate) group: Group,
    pub(crate) tuning: EmbeddedTuning,
    /// Call attempts on this store that are running and have not queued a commit yet
    /// (`Attempt`): a group's leader waits for them (`group_wait`), nobody else.
    pub(crate) running: AtomicUsize,
    /// Held by a group's leader from its transaction until the cache agrees with it,
    /// and by a connection resynchronising the cache with `meta.commit_seq`.
    writer: Mutex<()>,
    /// The checkpointer's mailbox (nudged after every group) and whether one runs.
    pub(crate) checkpoints: std::sync::Arc<crate::checkpoint::Mailbox>,
    pub(crate) checkpointer_attached: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for EmbeddedShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedShared")
            .field("tuning", &self.tuning)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn shard_of(id: AnchorId) -> usize {
    // Ids are random: their low bits spread evenly.
    (id as usize) & (SHARDS - 1)
}

impl EmbeddedShared {
    pub fn new(tuning: EmbeddedTuning) -> EmbeddedShared {
        EmbeddedShared {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: tuning.cache_bytes / SHARDS,
            enabled: tuning.cache_bytes > 0,
            known_seq: AtomicU64::new(u64::MAX),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            clears: AtomicU64::new(0),
            groups: AtomicU64::new(0),
            grouped_calls: AtomicU64::new(0),
            group: Group::default(),
            tuning,
            running: AtomicUsize::new(0),
            writer: Mutex::new(()),
            checkpoints: Default::default(),
            checkpointer_attached: Default::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn stats(&self) -> CacheStats {
        let (mut entries, mut bytes) = (0u64, 0u64);
        for shard in self.shards.iter() {
            let s = lock(shard);
            entries += s.map.len() as u64;
            bytes += s.bytes as u64;
        }
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            clears: self.clears.load(Ordering::Relaxed),
            entries,
            bytes,
            groups: self.groups.load(Ordering::Relaxed),
            grouped_calls: self.grouped_calls.load(Ordering::Relaxed),
            handed_off: self.group.handed_off_total.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.passive.load(Ordering::Relaxed),
            wal_restarts: self.checkpoints.restarts.load(Ordering::Relaxed),
            wal_restarts_busy: self.checkpoints.busy.load(Ordering::Relaxed),
            checkpoint_errors: self.checkpoints.errors.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, ()> {
        lock(&self.writer)
    }

    pub(crate) fn known_seq(&self) -> u64 {
        self.known_seq.load(Ordering::Acquire)
    }

    pub(crate) fn set_known_seq(&self, seq: u64) {
        self.known_seq.store(seq, Ordering::Release);
    }

    pub(crate) fn count_group(&self, calls: usize) {
        self.groups.fetch_add(1, Ordering::Relaxed);
        self.grouped_calls
            .fetch_add(calls as u64, Ordering::Relaxed);
    }

    /// A cached anchor with its version.
    pub(crate) fn lookup(&self, id: AnchorId) -> Option<(StoredAnchor, u64)> {
        if !self.enabled {
            return None;
        }
        let shard = lock(&self.shards[shard_of(id)]);
        match shard.map.get(&id) {
            Some(e) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some((e.anchor.clone(), e.version))
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// A cached node's edge list.
    pub(crate) fn lookup_edges(&self, id: AnchorId) -> Option<Vec<AnchorId>> {
        if !self.enabled {
            return None;
        }
        let shard = lock(&self.shards[shard_of(id)]);
        match shard.map.get(&id).and_then(|e| e.edges.as_ref()) {
            Some(edges) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(edges.clone())
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// The epoch of `id`'s shard: take it before reading SQLite, hand it to `fill`.
    pub(crate) fn epoch(&self, id: AnchorId) -> u64 {
        lock(&self.shards[shard_of(id)]).epoch
    }

    /// Remember `anchor` at `version`, read from SQLite after `epoch` was taken; skipped
    /// when a commit changed the shard since.
    pub(crate) fn fill(&self, epoch: u64, anchor: &StoredAnchor, version: u64) {
        if !self.enabled {
            return;
        }
        let id = anchor.id;
        let mut shard = lock(&self.shards[shard_of(id)]);
        if shard.epoch != epoch {
            return;
        }
        // An entry already at this version keeps its edge list.
        let edges = match shard.map.get_mut(&id) {
            Some(e) if e.version == version => e.edges.take(),
            _ => None,
        };
        let mut stored = anchor.clone();
        stored.edges = None;
        shard.put(
            id,
            Entry {
                anchor: stored,
                version,
                edges,
                size: 0,
            },
            self.shard_budget,
            &self.evictions,
        );
    }

    /// Remember node `id`'s edge list, read at `version` (in one read transaction with
    /// the version) after `epoch` was taken. Only an entry at that version takes it.
    pub(crate) fn fill_edges(&self, epoch: u64, id: AnchorId, version: u64, edges: &[AnchorId]) {
        if !self.enabled {
            return;
        }
        let mut shard = lock(&self.shards[shard_of(id)]);
        if shard.epoch != epoch {
            return;
        }
        let Some(mut entry) = shard.map.remove(&id) else {
            return;
        };
        shard.bytes -= entry.size;
        if entry.version != version {
            return;
        }
        entry.edges = Some(edges.to_vec());
        shard.put(id, entry, self.shard_budget, &self.evictions);
    }

    /// Apply one committed call's changes (the group leader, in commit order).
    pub(crate) fn committed(&self, changes: Vec<Change>, deleted: &[AnchorId]) {
        if !self.enabled {
            return;
        }
        for change in changes {
            let mut shard = lock(&self.shards[shard_of(change.id)]);
            shard.epoch += 1;
            // Only what a read brought in is kept current: an anchor the call created
            // (or one not cached) stays out until something reads it, so a stream of new
            // nodes nobody reads back does not fill the cache and evict the hot ones.
            let Some(old) = shard.map.remove(&change.id) else {
                continue;
            };
            shard.bytes -= old.size;
            // The entry was current before the call: carry what the call did not change.
            let current = (old.version == change.before).then_some(old);
            let (anchor, mut edges) = match (change.anchor, current) {
                (Some(anchor), Some(old)) => (anchor, old.edges),
                (Some(anchor), None) => (anchor, None),
                (None, Some(old)) => (old.anchor, old.edges),
                (None, None) => continue,
            };
            if let Some(list) = &mut edges {
                if !change.edge_removes.is_empty() {
                    list.retain(|e| !change.edge_removes.contains(e));
                }
                list.extend_from_slice(&change.edge_adds);
            }
            let mut anchor = anchor;
            anchor.edges = None;
            shard.put(
                change.id,
                Entry {
                    anchor,
                    version: change.after,
                    edges,
                    size: 0,
                },
                self.shard_budget,
                &self.evictions,
            );
        }
        self.invalidate(deleted);
    }

    /// Drop `ids` (deleted, quarantined, or written by another replica).
    pub fn invalidate(&self, ids: &[AnchorId]) {
        for &id in ids {
            let mut shard = lock(&self.shards[shard_of(id)]);
            shard.epoch += 1;
            shard.remove(&id);
        }
    }

    /// Drop everything (a store restart, an app reload, another process wrote).
    pub fn clear(&self) {
        self.clears.fetch_add(1, Ordering::Relaxed);
        for shard in self.shards.iter() {
            let mut s = lock(shard);
            s.epoch += 1;
            s.map.clear();
            s.bytes = 0;
        }
    }
}

/// A commit's outcome: the version of each written or re-linked anchor afterwards, or
/// why nothing of the call was committed.
pub(crate) type Outcome = Result<Vec<(AnchorId, u64)>, crate::store::StoreError>;

/// What finishes a pipelined call once its group is written: its reply, its replay
/// after a lost race, or its error. Run by the leader that wrote the group, after the
/// COMMIT and the cache update, outside every lock of the group.
pub(crate) type Completion = Box<dyn FnOnce(Outcome) + Send>;

/// The queue of group commit: calls whose commit sets wait to be written, and whether a
/// leader is writing now. A call either waits for its outcome (`commit`) or hands its
/// set off with a `Completion` and goes on (`hand_off`, the pipelined commit).
#[derive(Default)]
pub(crate) struct Group {
    state: Mutex<GroupState>,
    /// Wakes waiting calls after each group a leader wrote.
    wake: Condvar,
    /// Wakes a leader that gathers (`group_wait`) when a call queues.
    arrivals: Condvar,
    /// Calls handed off so far (`CacheStats::handed_off`).
    handed_off_total: AtomicU64,
}

#[derive(Default)]
struct GroupState {
    queue: std::collections::VecDeque<std::sync::Arc<Pending>>,
    leading: bool,
    /// A leader waits for more calls (`arrivals`).
    gathering: bool,
    /// Handed-off calls not yet completed (at most `EmbeddedTuning::pipeline`).
    handed_off: usize,
}

/// One running call attempt on the embedded store, counted in
/// `EmbeddedShared::running` from its first read until it queues its commit or ends.
pub(crate) struct Attempt {
    shared: std::sync::Arc<EmbeddedShared>,
}

impl Attempt {
    pub(crate) fn new(shared: std::sync::Arc<EmbeddedShared>) -> Attempt {
        shared.running.fetch_add(1, Ordering::AcqRel);
        Attempt { shared }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        self.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One call's commit set in the queue, and its outcome once written.
pub(crate) struct Pending {
    pub changes: lang::host::CommitSet,
    outcome: Mutex<Option<Outcome>>,
    /// A handed-off call's completion (the leader runs it with the outcome).
    completion: Mutex<Option<Completion>>,
    /// Counted in `GroupState::handed_off` until completed.
    handed_off: std::sync::atomic::AtomicBool,
    /// The leader is done with it: the outcome is set (a waiting call takes it) or was
    /// given to the completion.
    done: std::sync::atomic::AtomicBool,
}

impl Pending {
    pub(crate) fn new(changes: lang::host::CommitSet) -> Pending {
        Pending {
            changes,
            outcome: Mutex::new(None),
            completion: Mutex::new(None),
            handed_off: Default::default(),
            done: Default::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.take()
    }

    pub(crate) fn set(&self, outcome: Outcome) {
        *lock(&self.outcome) = Some(outcome);
    }

    fn take(&self) -> Option<Outcome> {
        lock(&self.outcome).take()
    }

    fn is_set(&self) -> bool {
        lock(&self.outcome).is_some()
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

impl Group {
    /// Queue `changes` and wait until a group carrying them is written; the outcome.
    /// The caller becomes the leader when nobody leads (`lead`).
    pub(crate) fn commit(
        &self,
        changes: lang::host::CommitSet,
        tuning: &EmbeddedTuning,
        running: &AtomicUsize,
        write: impl FnMut(&[std::sync::Arc<Pending>]),
    ) -> Outcome {
        let me = std::sync::Arc::new(Pending::new(changes));
        self.join(&me, tuning, running, write);
        me.take().unwrap_or_else(|| {
            Err(crate::store::StoreError::Meta(
                "the group commit ended without an outcome for this call".into(),
            ))
        })
    }

    /// The pipelined commit: queue `changes` with `completion` and return as soon as
    /// another thread leads (the caller takes its next call while the leader writes);
    /// `completion` runs with the outcome once the group is written. When nobody leads,
    /// the caller leads. When `tuning.pipeline` handed-off calls already wait, the caller
    /// waits until its own call is completed (back-pressure), as `commit` would.
    pub(crate) fn hand_off(
        &self,
        changes: lang::host::CommitSet,
        completion: Completion,
        tuning: &EmbeddedTuning,
        running: &AtomicUsize,
        write: impl FnMut(&[std::sync::Arc<Pending>]),
    ) {
        let me = std::sync::Arc::new(Pending::new(changes));
        *lock(&me.completion) = Some(completion);
        self.join(&me, tuning, running, write);
    }

    /// Queue `me`, then lead, return (handed off) or wait until it is done.
    fn join(
        &self,
        me: &std::sync::Arc<Pending>,
        tuning: &EmbeddedTuning,
        running: &AtomicUsize,
        mut write: impl FnMut(&[std::sync::Arc<Pending>]),
    ) {
        let mut state = lock(&self.state);
        let handed_off = lock(&me.completion).is_some() && state.handed_off < tuning.pipeline;
        if handed_off {
            state.handed_off += 1;
            me.handed_off.store(true, Ordering::Release);
            self.handed_off_total.fetch_add(1, Ordering::Relaxed);
        }
        state.queue.push_back(std::sync::Arc::clone(me));
        if state.gathering {
            self.arrivals.notify_one();
        }
        loop {
            if me.is_done() {
                return;
            }
            if !state.leading {
                state.leading = true;
                drop(state);
                self.lead(tuning, running, &mut write);
                state = lock(&self.state);
                continue;
            }
            if handed_off {
                return;
            }
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Write groups until the queue is empty: each of at most `group_max` calls in queue
    /// order, gathered for up to `group_wait` while other attempts still run. `write`
    /// must set every member's outcome; the members are then completed (`finish`). A
    /// leader drains the whole queue because handed-off calls do not wait: nobody else
    /// would write them.
    fn lead(
        &self,
        tuning: &EmbeddedTuning,
        running: &AtomicUsize,
        write: &mut impl FnMut(&[std::sync::Arc<Pending>]),
    ) {
        let mut guard = LeaderGuard {
            group: self,
            batch: Vec::new(),
            leading: true,
        };
        loop {
            let mut state = lock(&self.state);
            if state.queue.is_empty() {
                // Under the same lock as the check: a call queued after it finds nobody
                // leading and leads itself.
                state.leading = false;
                guard.leading = false;
                return;
            }
            let max = tuning.group_max.max(1);
            if !tuning.group_wait.is_zero() {
                let deadline = std::time::Instant::now() + tuning.group_wait;
                state.gathering = true;
                while state.queue.len() < max && running.load(Ordering::Acquire) > 0 {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        break;
                    }
                    state = self
                        .arrivals
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                state.gathering = false;
            }
            let take = state.queue.len().min(max);
            guard.batch = state.queue.drain(..take).collect();
            drop(state);
            write(&guard.batch);
            guard.finish();
        }
    }
}

/// The batch a leader is writing, and its leadership. `finish` completes the batch.
/// Dropped while still leading (a panic in `write`), it answers every member of the
/// batch left without an outcome and every call still queued with an error (nothing of
/// theirs was committed: the transaction did not end, or they were not written yet), so
/// no handed-off call is left without an answer, then ends the leadership.
struct LeaderGuard<'a> {
    group: &'a Group,
    batch: Vec<std::sync::Arc<Pending>>,
    leading: bool,
}

impl LeaderGuard<'_> {
    /// Complete every member of the batch: a waiting call is woken to take its outcome,
    /// a handed-off call's completion runs here.
    fn finish(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        let mut released = 0;
        for p in &batch {
            if !p.is_set() {
                p.set(Err(crate::store::StoreError::Meta(
                    "the group commit's writer failed; nothing of this call was committed".into(),
                )));
            }
            let completion = lock(&p.completion).take();
            match completion {
                Some(completion) => {
                    let outcome = p.take().unwrap_or_else(|| {
                        Err(crate::store::StoreError::Meta("no outcome".into()))
                    });
                    p.done.store(true, Ordering::Release);
                    // A completion only answers and counts; should it panic, the other
                    // members are still completed.
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        completion(outcome)
                    }));
                    if ran.is_err() {
                        tracing::error!("a pipelined call's completion panicked");
                    }
                }
                None => p.done.store(true, Ordering::Release),
            }
            if p.handed_off.swap(false, Ordering::AcqRel) {
                released += 1;
            }
        }
        let mut state = lock(&self.group.state);
        state.handed_off -= released;
        drop(state);
        self.group.wake.notify_all();
    }
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if !self.leading {
            return;
        }
        let mut state = lock(&self.group.state);
        self.batch.extend(state.queue.drain(..));
        drop(state);
        self.finish();
        let mut state = lock(&self.group.state);
        state.leading = false;
        drop(state);
        self.group.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;
    use lang::host::CommitSet;
    use std::sync::Arc;
    use std::sync::mpsc;

    fn set(tag: AnchorId) -> CommitSet {
        CommitSet {
            deletes: vec![tag],
            ..CommitSet::default()
        }
    }

    fn tuning(pipeline: usize) -> EmbeddedTuning {
        EmbeddedTuning {
            group_wait: Duration::ZERO,
            pipeline,
            ..EmbeddedTuning::default()
        }
    }

    /// Every member committed: its outcome names its own tag.
    fn write_ok(batch: &[Arc<Pending>]) {
        for p in batch {
            p.set(Ok(vec![(p.changes.deletes[0], 1)]));
        }
    }

    /// A leader on another thread, blocked inside its first write until `release` is
    /// sent; later batches are written by `then`. Returns once it is blocked.
    struct BlockedLeader {
        release: mpsc::Sender<()>,
        thread: std::thread::JoinHandle<Outcome>,
        batches: Arc<Mutex<Vec<Vec<AnchorId>>>>,
    }

    fn blocked_leader(
        group: &Arc<Group>,
        tuning: &EmbeddedTuning,
        then: fn(&[Arc<Pending>]),
    ) -> BlockedLeader {
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let batches: Arc<Mutex<Vec<Vec<AnchorId>>>> = Arc::default();
        let (group, tuning, seen) = (Arc::clone(group), tuning.clone(), Arc::clone(&batches));
        let thread = std::thread::spawn(move || {
            let running = AtomicUsize::new(0);
            group.commit(set(1), &tuning, &running, |batch| {
                let first = lock(&seen).is_empty();
                lock(&seen).push(batch.iter().map(|p| p.changes.deletes[0]).collect());
                if first {
                    entered_tx.send(()).expect("entered");
                    release_rx.recv().expect("release");
                    write_ok(batch);
                } else {
                    then(batch);
                }
            })
        });
        entered_rx.recv().expect("the leader writes");
        BlockedLeader {
            release,
            thread,
            batches,
        }
    }

    fn answer_to(tx: mpsc::Sender<Outcome>) -> Completion {
        Box::new(move |outcome| tx.send(outcome).expect("send"))
    }

    fn must_not_write(_: &[Arc<Pending>]) {
        panic!("a handed-off call wrote while another thread led");
    }

    /// The pipelined commit: a call handed off while another thread writes returns at
    /// once, is not answered before its own group is written, and is written by the
    /// leader (who drains the queue) in the next group.
    #[test]
    fn a_handed_off_call_returns_at_once_and_is_answered_after_its_group() {
        let group = Arc::new(Group::default());
        let tuning = tuning(8);
        let leader = blocked_leader(&group, &tuning, write_ok);
        let running = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel();
        group.hand_off(set(2), answer_to(tx), &tuning, &running, must_not_write);
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "answered before its group was written"
        );
        leader.release.send(()).expect("release");
        let answer = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
        assert_eq!(answer.expect("committed"), vec![(2, 1)]);
        assert_eq!(
            leader.thread.join().expect("leader").expect("ok"),
            vec![(1, 1)]
        );
        assert_eq!(*lock(&leader.batches), vec![vec![1], vec![2]]);
        assert_eq!(lock(&group.state).handed_off, 0);
        assert_eq!(group.handed_off_total.load(Ordering::Relaxed), 1);
    }

    /// A group that fails as a whole (its COMMIT failed) answers every call queued
    /// behind it with that error: the handed-off ones through their completions, the
    /// waiting one directly. None of them is answered as committed.
    #[test]
    fn a_failed_group_answers_every_call_queued_behind_it_with_an_error() {
        let group = Arc::new(Group::default());
        let tuning = tuning(8);
        let leader = blocked_leader(&group, &tuning, |batch| {
            for p in batch {
                p.set(Err(StoreError::Meta(
                    "group commit failed: disk I/O error".into(),
                )));
            }
        });
        let running = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        for tag in 2..5 {
            group.hand_off(
                set(tag),
                answer_to(tx.clone()),
                &tuning,
                &running,
                must_not_write,
            );
        }
        let waiter = {
            let (group, tuning, running) =
                (Arc::clone(&group), tuning.clone(), Arc::clone(&running));
            std::thread::spawn(move || group.commit(set(5), &tuning, &running, must_not_write))
        };
        // The waiter queues behind the handed-off calls.
        while lock(&group.state).queue.len() < 4 {
            std::thread::yield_now();
        }
        leader.release.send(()).expect("release");
        for _ in 2..5 {
            let answer = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
            assert!(
                matches!(&answer, Err(StoreError::Meta(m)) if m.contains("disk I/O")),
                "{answer:?}"
            );
        }
        let waited = waiter.join().expect("waiter");
        assert!(matches!(waited, Err(StoreError::Meta(_))), "{waited:?}");
        assert!(leader.thread.join().expect("leader").is_ok());
        assert_eq!(*lock(&leader.batches), vec![vec![1], vec![2, 3, 4, 5]]);
    }

    /// A leader whose write panics leaves no call unanswered: the members of its batch
    /// and every call still queued get an error, and the next call leads again.
    #[test]
    fn a_panicking_leader_answers_its_batch_and_the_queue() {
        let group = Arc::new(Group::default());
        let tuning = EmbeddedTuning {
            group_max: 2,
            ..tuning(8)
        };
        let leader = blocked_leader(&group, &tuning, |_| panic!("writer panic (expected)"));
        let running = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel();
        for tag in 2..6 {
            group.hand_off(
                set(tag),
                answer_to(tx.clone()),
                &tuning,
                &running,
                must_not_write,
            );
        }
        leader.release.send(()).expect("release");
        for _ in 2..6 {
            let answer = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
            assert!(matches!(answer, Err(StoreError::Meta(_))), "{answer:?}");
        }
        assert!(
            leader.thread.join().is_err(),
            "the leader's panic propagates"
        );
        let state = lock(&group.state);
        assert!(!state.leading && state.queue.is_empty() && state.handed_off == 0);
        drop(state);
        assert_eq!(
            group
                .commit(set(7), &tuning, &running, write_ok)
                .expect("ok"),
            vec![(7, 1)]
        );
    }

    /// Past `pipeline` handed-off calls a worker waits until its own call is answered
    /// (back-pressure), and its completion has run when it returns.
    #[test]
    fn past_the_pipeline_bound_a_hand_off_waits_for_its_answer() {
        let group = Arc::new(Group::default());
        let tuning = tuning(1);
        let leader = blocked_leader(&group, &tuning, write_ok);
        let running = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        group.hand_off(
            set(2),
            answer_to(tx.clone()),
            &tuning,
            &running,
            must_not_write,
        );
        let (returned_tx, returned_rx) = mpsc::channel();
        let second = {
            let (group, tuning, running) =
                (Arc::clone(&group), tuning.clone(), Arc::clone(&running));
            std::thread::spawn(move || {
                group.hand_off(set(3), answer_to(tx), &tuning, &running, must_not_write);
                returned_tx.send(()).expect("returned");
            })
        };
        assert!(
            returned_rx
                .recv_timeout(Duration::from_millis(100))
                .is_err(),
            "returned past the bound before its call was written"
        );
        leader.release.send(()).expect("release");
        returned_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("returns once written");
        let mut answers: Vec<_> = (0..2)
            .map(|_| {
                rx.try_recv()
                    .expect("answered before the hand-off returned")
            })
            .map(|a| a.expect("ok")[0].0)
            .collect();
        answers.sort_unstable();
        assert_eq!(answers, vec![2, 3]);
        second.join().expect("second");
        leader.thread.join().expect("leader").expect("ok");
        assert_eq!(group.handed_off_total.load(Ordering::Relaxed), 1);
    }
}
