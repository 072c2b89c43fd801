//! The embedded tier's **checkpointer**: an actor on its own thread (`svc-checkpoint`)
//! that copies the SQLite write-ahead log back into the store file, so that no call's
//! commit waits for it.
//!
//! Why it exists: SQLite checkpoints automatically inside `COMMIT` once the log passes
//! 1,000 pages. Under group commit (`crate::l1`) that commit is the group leader's, so
//! every call of the group (and every call queued behind it) waited for the copy and
//! two `fsync`s; node creation ran at half its earlier rate (benches/load/README.md). With the
//! checkpointer attached, the run workers' connections turn the automatic checkpoint off
//! and the leader only sends a nudge after each group.
//!
//! Messages: `nudge` (a group committed; coalesced, never blocks the sender) and `stop`
//! (the store's leases are dropped; joined). Every worker connection's WAL hook records
//! how many frames the log holds after each commit. On a nudge, at most once per
//! `interval`:
//! - below `wal_bytes`, a PASSIVE checkpoint, which runs beside the writers: commits keep
//!   appending while it copies what is already in the log;
//! - past it, first the same PASSIVE checkpoint, then, holding the group commit's
//!   writer lock (calls committing meanwhile wait in the group queue), a RESTART
//!   checkpoint: only the frames appended during the passive one are left to copy, and
//!   the next commit writes the log from its start again. A log that commits keep
//!   growing is never started over otherwise, which is why passive checkpoints alone
//!   cannot bound it. The restart waits up to `READER_WAIT` for readers still on the
//!   old log (polling every 50 µs); past that it is counted busy and tried again on the
//!   next nudge.
//! - Should the log still pass twice `wal_bytes` (the checkpointer starved of CPU or of
//!   the writer lock by back-to-back groups), the next group's leader wakes it at once
//!   and waits for the restart before taking the writer lock (back-pressure, at most a
//!   second).
//!
//! The log's size is therefore bounded by twice `wal_bytes` plus one group's pages.
//! Errors are logged (at most one line per minute) and the connection is reopened on
//! the next nudge.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Default `[scale.database] wal_max_bytes`: the log size past which the checkpointer
/// restarts it.
pub const DEFAULT_WAL_BYTES: u64 = 64 * 1024 * 1024;
/// Default `[scale.database] checkpoint_interval_ms`: the least time between two
/// checkpoints.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// How long a group's leader waits for a restart once the log is past twice its bound.
const HARD_BOUND_WAIT: Duration = Duration::from_secs(1);

/// How long a RESTART waits for readers on the old log while commits wait behind it;
/// past it the restart is counted busy and tried again on the next nudge.
const READER_WAIT: Duration = Duration::from_millis(200);

/// The checkpointer's mailbox, shared with the group leaders that nudge it.
pub(crate) struct Mailbox {
    /// A nudge is waiting (checked without the lock, so a nudge costs one atomic swap
    /// while one is already pending).
    nudged: AtomicBool,
    /// A group's leader waits for a restart: skip the pause between checkpoints.
    urgent: AtomicBool,
    /// Frames in the log after the last commit (SQLite's WAL hook on every worker
    /// connection sets it).
    pub(crate) frames: AtomicU64,
    /// `wal_bytes` in frames (set when the checkpointer learns the page size).
    limit_frames: AtomicU64,
    stop: Mutex<bool>,
    wake: Condvar,
    /// Signalled after every restart, for leaders waiting below the hard bound.
    restarted: Condvar,
    /// Counters: checkpoints run, log restarts, restarts left busy, errors.
    pub(crate) passive: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) busy: AtomicU64,
    pub(crate) errors: AtomicU64,
}

impl Default for Mailbox {
    fn default() -> Mailbox {
        Mailbox {
            nudged: AtomicBool::new(false),
            urgent: AtomicBool::new(false),
            frames: AtomicU64::new(0),
            limit_frames: AtomicU64::new(u64::MAX),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            restarted: Condvar::new(),
            passive: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }
}

impl Mailbox {
    /// The log holds more than twice `wal_bytes`: the checkpointer fell behind (starved
    /// of CPU, or of the writer lock by back-to-back groups).
    fn past_hard_bound(&self) -> bool {
        self.frames.load(Ordering::Acquire) / 2 > self.limit_frames.load(Ordering::Acquire)
    }

    /// Called by a group's leader before it takes the writer lock: while the log is past
    /// twice its bound, wake the checkpointer at once and wait for its restart (at most
    /// `HARD_BOUND_WAIT`; a restart kept busy by readers lets the group write anyway).
    pub(crate) fn wait_below_hard_bound(&self) {
        if !self.past_hard_bound() {
            return;
        }
        let deadline = Instant::now() + HARD_BOUND_WAIT;
        self.urgent.store(true, Ordering::Release);
        self.nudged.store(true, Ordering::Release);
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        self.wake.notify_all();
        while !*stop && self.past_hard_bound() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            stop = self
                .restarted
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// A RESTART finished (`busy` false) or not.
    pub(crate) fn restarted(&self, busy: bool) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        if busy {
            self.busy.fetch_add(1, Ordering::Relaxed);
        } else {
            // The next commit writes from the log's start (its hook will say).
            self.frames.store(0, Ordering::Release);
        }
        self.urgent.store(false, Ordering::Release);
        let _stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        self.restarted.notify_all();
    }

    /// A group committed: ask for a checkpoint (coalesced with any pending one).
    pub(crate) fn nudge(&self) {
        if !self.nudged.swap(true, Ordering::AcqRel) {
            let _stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            self.wake.notify_one();
        }
    }

    /// Wait for a nudge or a stop, at most `timeout` (`None`: no limit). Returns false on
    /// stop.
    fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *stop {
                return false;
            }
            if deadline.is_some() && self.urgent.load(Ordering::Acquire) {
                return true;
            }
            if deadline.is_none() && self.nudged.swap(false, Ordering::AcqRel) {
                return true;
            }
            match deadline {
                None => {
                    stop = self.wake.wait(stop).unwrap_or_else(PoisonError::into_inner);
                }
                Some(at) => {
                    let now = Instant::now();
                    if now >= at {
                        return true;
                    }
                    stop = self
                        .wake
                        .wait_timeout(stop, at - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }
}

/// Settings of the checkpointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointTuning {
    /// Log size past which the checkpointer restarts the log under the writer lock.
    pub wal_bytes: u64,
    /// The least time between two checkpoints.
    pub interval: Duration,
}

impl Default for CheckpointTuning {
    fn default() -> CheckpointTuning {
        CheckpointTuning {
            wal_bytes: DEFAULT_WAL_BYTES,
            interval: DEFAULT_INTERVAL,
        }
    }
}

/// The running checkpointer; dropping it stops and joins the thread.
pub(crate) struct Checkpointer {
    mailbox: Arc<Mailbox>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpointer").finish_non_exhaustive()
    }
}

impl Checkpointer {
    /// Start the checkpointer of the store file at `path`, nudged through `shared`.
    pub(crate) fn start(
        path: PathBuf,
        shared: &Arc<crate::l1::EmbeddedShared>,
    ) -> std::io::Result<Checkpointer> {
        let mailbox = Arc::clone(&shared.checkpoints);
        let tuning = shared.tuning.checkpoint.clone();
        let writer = Arc::clone(shared);
        let thread = std::thread::Builder::new()
            .name("svc-checkpoint".into())
            .spawn({
                let mailbox = Arc::clone(&mailbox);
                move || run(&path, &mailbox, &tuning, &writer)
            })?;
        shared.checkpointer_attached.store(true, Ordering::Release);
        Ok(Checkpointer {
            mailbox,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        *self
            .mailbox
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.mailbox.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The checkpointer's busy handler: retry every 50 µs, for at most `READER_WAIT`.
fn reader_wait(attempt: i32) -> bool {
    const POLL: Duration = Duration::from_micros(50);
    let waited = POLL.saturating_mul(u32::try_from(attempt).unwrap_or(u32::MAX));
    if waited >= READER_WAIT {
        return false;
    }
    std::thread::sleep(POLL);
    true
}

/// The checkpointer's connection and the page size it counts the log in.
struct Conn {
    conn: rusqlite::Connection,
    page_size: u64,
}

fn open(path: &std::path::Path) -> rusqlite::Result<Conn> {
    let mut conn = rusqlite::Connection::open(path)?;
    // A RESTART waits for readers still on the old log; they are single statements of
    // a call, so poll every 50 µs instead of SQLite's sleeps of 1 ms and more, which the
    // commits waiting behind the writer lock would pay.
    conn.busy_handler(Some(reader_wait))?;
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(Conn {
        conn,
        page_size: u64::try_from(page_size).unwrap_or(4096).max(512),
    })
}

/// One `PRAGMA wal_checkpoint(MODE)`: (busy, frames in the log).
pub(crate) fn checkpoint(conn: &rusqlite::Connection, mode: &str) -> rusqlite::Result<(bool, u64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        let busy: i64 = r.get(0)?;
        let log: i64 = r.get(1)?;
        Ok((busy != 0, u64::try_from(log).unwrap_or(0)))
    })
}

fn run(
    path: &std::path::Path,
    mailbox: &Mailbox,
    tuning: &CheckpointTuning,
    shared: &crate::l1::EmbeddedShared,
) {
    let mut conn: Option<Conn> = None;
    let mut last_log: Option<Instant> = None;
    while mailbox.wait(None) {
        let outcome = (|| -> rusqlite::Result<()> {
            if conn.is_none() {
                let c = open(path)?;
                mailbox
                    .limit_frames
                    .store(tuning.wal_bytes / c.page_size, Ordering::Release);
                conn = Some(c);
            }
            let Some(c) = conn.as_ref() else {
                return Ok(());
            };
            let frames = mailbox.frames.load(Ordering::Acquire);
            if frames.saturating_mul(c.page_size) > tuning.wal_bytes {
                // Copy what is there beside the writers first, so the restart under the
                // writer lock has only the frames appended meanwhile left to copy.
                checkpoint(&c.conn, "PASSIVE")?;
                mailbox.passive.fetch_add(1, Ordering::Relaxed);
                let _writer = shared.writer();
                let (busy, _) = checkpoint(&c.conn, "RESTART")?;
                mailbox.restarted(busy);
            } else {
                checkpoint(&c.conn, "PASSIVE")?;
                mailbox.passive.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            conn = None;
            mailbox.errors.fetch_add(1, Ordering::Relaxed);
            if last_log.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                last_log = Some(Instant::now());
                tracing::warn!(store = %path.display(), error = %e, "checkpoint failed; retrying on the next commit");
            }
        }
        // At most one checkpoint per interval; nudges meanwhile coalesce into one.
        if !mailbox.wait(Some(tuning.interval)) {
            break;
        }
    }
}
