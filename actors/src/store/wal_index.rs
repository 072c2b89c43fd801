//! A cheap "has anyone committed?" check for the embedded store, read from SQLite's
//! WAL-index file (`<store>-shm`) instead of a read transaction.
//!
//! Why: under `svc start` every call attempt that uses the process-wide L1 cache first
//! makes sure no other process wrote the store since the cache last agreed with it
//! (`meta.commit_seq`, `SqliteStore::cache`). That check was a read transaction per
//! attempt: `btreeBeginTrans`, the shared-memory lock's `fcntl`s, a B-tree seek. In a
//! profile of the WebSocket echo (a walker run per message, nothing written) it was
//! about 10% of the server's time, the largest cost the server adds per message
//! (benches/ws/README.md).
//!
//! What is read: the first 96 bytes of the WAL-index, its header, kept by SQLite in two
//! copies (format: sqlite.org/walformat.html, "The WAL-Index Header"; stable since WAL
//! mode appeared in 3.7.0). Every write transaction of every process rewrites it (its
//! change counter, last frame, salts and checksum) before the commit is visible to any
//! reader, and a writer writes the second copy first. So when both copies are
//! byte-for-byte what they were at a moment when the cache agreed with
//! `meta.commit_seq`, no transaction has become visible since, and the read
//! transaction can be skipped; any difference (a commit, a torn read of a header being
//! written, a restarted log, a recovery) sends the attempt to the full check. The
//! header is read *before* the full check and remembered only when that check found
//! the cache current, so a commit landing between the two can only make the next
//! attempt check again, never skip a check it needs.
//!
//! The file is opened only after this connection has run a statement (so SQLite has it
//! mapped and, while the connection lives, no process can delete it), and is dropped
//! whenever the connection is replaced. Without a WAL-index (a store not in WAL mode,
//! an unreadable file) every attempt makes the full check, as before.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes of the WAL-index header: two copies of the 48-byte `WalIndexHdr`.
const HEADER_BYTES: usize = 96;

/// One connection's view of its store's WAL-index header.
#[derive(Debug, Default)]
pub(crate) struct WalIndexWatch {
    file: Option<File>,
    /// The header as it was when the L1 cache last agreed with `meta.commit_seq`.
    quiet: Option<[u8; HEADER_BYTES]>,
}

impl WalIndexWatch {
    /// The header now, or `None` when the file is not open or cannot be read whole.
    pub(crate) fn read(&self) -> Option<[u8; HEADER_BYTES]> {
        let file = self.file.as_ref()?;
        let mut buf = [0u8; HEADER_BYTES];
        file.read_exact_at(&mut buf, 0).ok()?;
        Some(buf)
    }

    /// Whether `header` (from [`read`](Self::read)) shows no commit since the cache last
    /// agreed with the store.
    pub(crate) fn unchanged(&self, header: Option<&[u8; HEADER_BYTES]>) -> bool {
        matches!((header, self.quiet.as_ref()), (Some(now), Some(quiet)) if now == quiet)
    }

    /// The full check found the cache current: `header` (read before it) is quiet. Opens
    /// the file the first time (the connection has just used it).
    pub(crate) fn settle(&mut self, store: &Path, header: Option<[u8; HEADER_BYTES]>) {
        if self.file.is_none() {
            self.file = File::open(shm_path(store)).ok();
            self.quiet = None;
            return;
        }
        self.quiet = header;
    }

    /// Forget everything (the connection was replaced).
    pub(crate) fn reset(&mut self) {
        self.file = None;
        self.quiet = None;
    }
}

fn shm_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_os_string();
    name.push("-shm");
    PathBuf::from(name)
}
