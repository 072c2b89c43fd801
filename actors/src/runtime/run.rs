//! Run actors: every walker or function call (HTTP request, WebSocket message, later an
//! event delivery) is a run actor with a `RunId`, registered in the process's
//! `RunRegistry` while it lives.
//!
//! A run actor is started by its first message (`RunCall`, the "start" message, queued
//! on the run pool's mailbox) and hosted by whichever run worker thread takes it: the
//! worker owns the `Program` and the store connection, so the run's interpreter state
//! never crosses threads. While it runs, other actors reach it through its address
//! (`RunAddr`, also its registry entry) with typed `RunMsg` messages:
//!
//! | message | sent by | effect |
//! |---|---|---|
//! | `Cancel` | the HTTP layer (the client went away), a WebSocket session (closed), shutdown | a queued run is dropped; a running one stops at its next check unless it already committed |
//! | `Stale(anchors)` | the invalidation listener (`Runtime::flag_stale`) | at its next check the run reloads those anchors if it holds them unmodified and has not read their fields yet; anything it already read stays and is checked at commit |
//!
//! It answers its requester once, with its typed reply (`RunReply`: the result and the
//! reports, or the error), through the one-shot channel that came with the start
//! message.
//!
//! **Why the mailbox is two fields and not a queue.** The interpreter polls its mailbox
//! every 1,024 operations; a message queue would cost a lock per poll. `Cancel` is
//! idempotent (a flag), and `Stale` messages merge (a set of anchors). The set is bounded
//! (`MAX_STALE_ANCHORS`): beyond it the run is told "everything may be stale", which is
//! always safe (it only reloads what it has not read). So the mailbox is bounded and a
//! send never blocks the sender.

use lang::host::AnchorId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A run actor's id, unique within the process (logged with the run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub u64);

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run-{}", self.0)
    }
}

/// Messages a live run accepts (see the module docs for who sends which).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunMsg {
    /// Stop: the requester went away.
    Cancel,
    /// These anchors changed elsewhere since the run may have loaded them.
    Stale(Vec<AnchorId>),
}

/// Anchors a run's mailbox holds at most before it degrades to "everything is stale".
pub const MAX_STALE_ANCHORS: usize = 4096;

/// Stale anchors waiting for the run's next check.
#[derive(Debug, Default)]
pub(crate) struct StaleSet {
    pub(crate) anchors: Vec<AnchorId>,
    /// More than `MAX_STALE_ANCHORS` arrived: treat every anchor as stale.
    pub(crate) all: bool,
}

/// A run actor's mailbox (shared by its address and the worker hosting it).
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    /// `Cancel` received; also the interpreter's `Limits::cancel` flag.
    pub(crate) cancel: Arc<AtomicBool>,
    /// Set with `stale`, so the interpreter's poll is one atomic load.
    has_stale: AtomicBool,
    stale: Mutex<StaleSet>,
}

impl Mailbox {
    /// Take the stale anchors received since the last call (`None` = nothing new).
    pub(crate) fn take_stale(&self) -> Option<StaleSet> {
        if !self.has_stale.swap(false, Ordering::AcqRel) {
            return None;
        }
        let mut stale = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
        Some(std::mem::take(&mut *stale))
    }
}

/// The address of a run actor: cheap to clone, `Send + Sync`.
#[derive(Clone, Debug)]
pub struct RunAddr {
    id: RunId,
    mailbox: Arc<Mailbox>,
}

impl RunAddr {
    pub(crate) fn new(id: RunId) -> RunAddr {
        RunAddr {
            id,
            mailbox: Arc::new(Mailbox::default()),
        }
    }

    pub fn id(&self) -> RunId {
        self.id
    }

    pub(crate) fn mailbox(&self) -> &Arc<Mailbox> {
        &self.mailbox
    }

    /// Deliver a message. Never blocks; the mailbox merges what it cannot keep apart.
    pub fn send(&self, msg: RunMsg) {
        match msg {
            RunMsg::Cancel => self.mailbox.cancel.store(true, Ordering::Relaxed),
            RunMsg::Stale(anchors) => {
                if anchors.is_empty() {
                    return;
                }
                let mut stale = self
                    .mailbox
                    .stale
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if !stale.all {
                    if stale.anchors.len() + anchors.len() > MAX_STALE_ANCHORS {
                        stale.all = true;
                        stale.anchors = Vec::new();
                    } else {
                        stale.anchors.extend(anchors);
                    }
                }
                drop(stale);
                self.mailbox.has_stale.store(true, Ordering::Release);
            }
        }
    }

    /// Whether `Cancel` arrived.
    pub fn is_cancelled(&self) -> bool {
        self.mailbox.cancel.load(Ordering::Relaxed)
    }
}

/// Shards of the registry: runs start and end on every HTTP thread at once.
const SHARDS: usize = 8;

/// One shard: run ids (handed out in sequence, never from a client) to addresses,
/// hashed with the Fx hasher (a run is inserted and removed on every call). The key is
/// the id without its shard digits (`RunRegistry::key`): the ids of one shard share
/// their low bits, which the Fx hash would keep.
type Shard = Mutex<HashMap<u64, RunAddr, lang::serve::FxBuild>>;

/// The live run actors of the process, by id.
#[derive(Debug)]
pub(crate) struct RunRegistry {
    next: AtomicU64,
    shards: [Shard; SHARDS],
}

impl Default for RunRegistry {
    fn default() -> RunRegistry {
        RunRegistry {
            next: AtomicU64::new(1),
            shards: std::array::from_fn(|_| Mutex::new(HashMap::default())),
        }
    }
}

impl RunRegistry {
    fn shard(&self, id: RunId) -> &Shard {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    /// `id`'s key within its shard.
    fn key(id: RunId) -> u64 {
        id.0 / SHARDS as u64
    }

    /// Create and register a new run actor; it is unregistered when the returned
    /// `Registration` is dropped (by the worker, when the run has answered).
    pub(crate) fn spawn(self: &Arc<Self>) -> (RunAddr, Registration) {
        let id = RunId(self.next.fetch_add(1, Ordering::Relaxed));
        let addr = RunAddr::new(id);
        self.shard(id)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(Self::key(id), addr.clone());
        let registration = Registration {
            registry: Arc::clone(self),
            id,
        };
        (addr, registration)
    }

    pub(crate) fn get(&self, id: RunId) -> Option<RunAddr> {
        self.shard(id)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&Self::key(id))
            .cloned()
    }

    /// Send `msg` to every live run but `except`; returns how many received it.
    pub(crate) fn broadcast(&self, msg: &RunMsg, except: Option<RunId>) -> usize {
        let mut sent = 0;
        for shard in &self.shards {
            let addrs: Vec<RunAddr> = shard
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .filter(|a| Some(a.id) != except)
                .cloned()
                .collect();
            for addr in addrs {
                addr.send(msg.clone());
                sent += 1;
            }
        }
        sent
    }

    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}

/// Keeps a run registered; dropping it unregisters the run.
#[derive(Debug)]
pub(crate) struct Registration {
    registry: Arc<RunRegistry>,
    id: RunId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry
            .shard(self.id)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&RunRegistry::key(self.id));
    }
}
