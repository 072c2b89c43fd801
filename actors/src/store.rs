//! The embedded anchor store (SQLite, WAL) and `RunHost`, the `Host` used by `svc run`.
//!
//! One database file holds every anchor of an app (default `.svc/data/anchor_store.db`
//! next to the entry file). Layout:
//!
//! - `anchors`: one row per node, edge or walker; `fields` and `access` are JSON text;
//!   `version` starts at 1 and is bumped by every write (optimistic concurrency).
//! - `anchor_edges(node_id, seq, edge_id)`: a node's edge list in creation order. The
//!   primary key `(node_id, seq)` makes "append a child" one indexed `max(seq)` lookup
//!   plus one INSERT, whatever the number of children; `(node_id, edge_id)` is indexed
//!   for removals.
//! - `anchors_quarantine`: rows that could not be decoded, moved aside with a reason,
//!   never dropped.
//! - `meta`: `format_version` and `root_id` (created on first open).
//!
//! The file holds the user store too (password hashes): it is created with mode 0600 and
//! its directory with 0700 ([`prepare_private_file`]); SQLite gives the `-wal` and `-shm`
//! files the database file's mode.

use lang::host::{
    AccessPolicy, AnchorId, AnchorKind, CommitSet, EdgeEnds, Host, HostError, StoredAnchor,
    format_id, parse_id,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use std::collections::{HashMap, HashSet};

/// Maps and sets keyed by anchor id: ids are random, so a fast non-cryptographic hash
/// is enough (bulk commits hash hundreds of thousands of ids).
type IdMap<V> = HashMap<AnchorId, V, lang::serve::FxBuild>;
type IdSet = HashSet<AnchorId, lang::serve::FxBuild>;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod wal_index;

/// Version of the on-disk layout written by this build.
pub const FORMAT_VERSION: i64 = 1;

/// How long a writer waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS anchors (
    id             TEXT PRIMARY KEY,  -- 32 lowercase hex
    kind           TEXT NOT NULL,     -- node | edge | walker
    arch_module    TEXT NOT NULL,
    arch_type      TEXT NOT NULL,
    fingerprint    TEXT NOT NULL,
    format_version INTEGER NOT NULL,
    owner          TEXT NOT NULL,
    access         TEXT NOT NULL,     -- json {public, roots}
    fields         TEXT NOT NULL,     -- json object of `has` fields
    source         TEXT,              -- edges only
    target         TEXT,              -- edges only
    undirected     INTEGER,           -- edges only
    version        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS anchor_edges (
    node_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    edge_id TEXT NOT NULL,
    PRIMARY KEY (node_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS anchor_edges_by_edge ON anchor_edges (node_id, edge_id);
CREATE TABLE IF NOT EXISTS anchors_aliases (
    old_name TEXT PRIMARY KEY,        -- module.Name (or Name)
    new_name TEXT NOT NULL            -- module.Name
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS anchors_quarantine (
    id             TEXT NOT NULL,
    raw            TEXT NOT NULL,     -- json object of the original row
    reason         TEXT NOT NULL,
    quarantined_at TEXT NOT NULL      -- unix seconds
);
";

const SELECT_ANCHOR: &str = "SELECT id, kind, arch_module, arch_type, fingerprint, format_version, \
     owner, access, fields, source, target, undirected, version FROM anchors WHERE id = ?1";
/// Ids per query in `load_many_versioned`.
const LOAD_CHUNK: usize = 128;

/// Rows (anchors and edge-list entries) one attempt may read or write on a worker
/// connection of `svc start` before the connection is replaced at the next attempt's
/// start (`SqliteStore::recycle`): SQLite's page cache never shrinks the hash table it
/// grew for a bulk call, and empties it by a scan of the whole table at nearly every
/// transaction under concurrent writers. Opening a connection costs about as much as
/// a few hundred rows, so this stays a small share of a bulk call.
const RECYCLE_ROWS: usize = 4096;

/// The statement of `load_many_versioned`, with `LOAD_CHUNK` placeholders.
fn load_many_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let marks = vec!["?"; LOAD_CHUNK].join(", ");
        format!(
            "SELECT id, kind, arch_module, arch_type, fingerprint, format_version, owner, \
             access, fields, source, target, undirected, version FROM anchors \
             WHERE id IN ({marks})"
        )
    })
}

const ANCHOR_COLUMNS: [&str; 13] = [
    "id",
    "kind",
    "arch_module",
    "arch_type",
    "fingerprint",
    "format_version",
    "owner",
    "access",
    "fields",
    "source",
    "target",
    "undirected",
    "version",
];
const UPSERT_ANCHOR: &str = "INSERT INTO anchors (id, kind, arch_module, arch_type, fingerprint, \
     format_version, owner, access, fields, source, target, undirected, version) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 1) \
     ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, arch_module = excluded.arch_module, \
     arch_type = excluded.arch_type, fingerprint = excluded.fingerprint, \
     format_version = excluded.format_version, owner = excluded.owner, \
     access = excluded.access, fields = excluded.fields, source = excluded.source, \
     target = excluded.target, undirected = excluded.undirected, \
     version = anchors.version + 1";
/// `UPSERT_ANCHOR` answering the row's version after the write.
const UPSERT_ANCHOR_RETURNING: &str = "INSERT INTO anchors (id, kind, arch_module, arch_type, \
     fingerprint, format_version, owner, access, fields, source, target, undirected, version) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 1) \
     ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, arch_module = excluded.arch_module, \
     arch_type = excluded.arch_type, fingerprint = excluded.fingerprint, \
     format_version = excluded.format_version, owner = excluded.owner, \
     access = excluded.access, fields = excluded.fields, source = excluded.source, \
     target = excluded.target, undirected = excluded.undirected, \
     version = anchors.version + 1 RETURNING version";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create store directory or file {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Another writer changed an anchor this run read; the run may be replayed.
    #[error("write conflict on anchor {id}: read version {read}, stored version {stored}")]
    Conflict { id: String, read: u64, stored: u64 },
    #[error("store format version {found} is newer than this build supports ({supported})")]
    FormatVersion { found: i64, supported: i64 },
    #[error("store metadata is corrupt: {0}")]
    Meta(String),
    #[error("document database: {0}")]
    Doc(String),
    /// The document database did not answer (down, unreachable, too slow).
    #[error("{0}")]
    Unreachable(String),
}

/// Create `dir` and its missing parents with mode 0700 (existing directories are left
/// as they are).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Make sure the database file `path` exists before SQLite opens it, created with mode
/// 0600 in a directory created 0700: SQLite would create it with the process umask
/// (often world-readable), and it gives the `-wal` and `-shm` files the mode of the
/// database file. An existing file is left as it is.
pub fn prepare_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

impl From<StoreError> for HostError {
    fn from(e: StoreError) -> HostError {
        match e {
            StoreError::Conflict { id, .. } => HostError::Conflict(id),
            StoreError::Unreachable(m) => HostError::Unavailable(m),
            other => HostError::Store(other.to_string()),
        }
    }
}

/// The embedded anchor store over one SQLite file.
pub struct SqliteStore {
    conn: Connection,
    root: AnchorId,
    path: PathBuf,
    /// Class-rename aliases (`anchors_aliases`), read on open.
    aliases: std::collections::HashMap<String, String>,
    /// The app's archetypes: rows of others are quarantined when read.
    archetypes: crate::docstore::Archetypes,
    /// The process-wide L1 cache and group commit of `svc start` (`crate::l1`); `None`
    /// for `svc run` and `svc db`.
    shared: Option<std::sync::Arc<crate::l1::EmbeddedShared>>,
    /// This call attempt already checked `meta.commit_seq` against the cache.
    validated: bool,
    /// This call attempt, counted as running until it queues its commit or ends (a
    /// group's leader waits for running attempts, `l1::Group::commit`).
    attempt: Option<crate::l1::Attempt>,
    /// Rows this connection read or wrote since the last attempt began: past
    /// `RECYCLE_ROWS` the next attempt gets a fresh connection (`begin_attempt`).
    bulk_rows: usize,
    /// Connections replaced so far (`recycle`).
    recycled: u64,
    /// A group this connection led failed as a whole (`take_group_failure`).
    group_failure: Option<String>,
    /// The WAL-index header as of the cache's last agreement with the store: an
    /// unchanged header spares an attempt its `meta.commit_seq` read (`wal_index`).
    wal: wal_index::WalIndexWatch,
    /// Attempts that read `meta.commit_seq` (the full check; the unit tests read it).
    seq_checks: u64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("root", &format_id(self.root))
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Open (or create) the store at `path`, creating parent directories, the schema and,
    /// on first open, the root node.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        prepare_private_file(&path).map_err(|source| StoreError::Dir {
            path: path.clone(),
            source,
        })?;
        let mut conn = open_conn(&path)?;

        // IMMEDIATE: two processes opening a fresh store at once must agree on one root.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        let found: Option<String> = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'format_version'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        match found {
            None => {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('format_version', ?1)",
                    [FORMAT_VERSION.to_string()],
                )?;
            }
            Some(text) => {
                let found: i64 = text
                    .parse()
                    .map_err(|_| StoreError::Meta(format!("format_version {text:?}")))?;
                if found > FORMAT_VERSION {
                    return Err(StoreError::FormatVersion {
                        found,
                        supported: FORMAT_VERSION,
                    });
                }
            }
        }
        let root_text: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'root_id'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let root = match root_text {
            Some(text) => {
                parse_id(&text).ok_or_else(|| StoreError::Meta(format!("root_id {text:?}")))?
            }
            None => {
                let root = random_id();
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('root_id', ?1)",
                    [format_id(root)],
                )?;
                let anchor = root_anchor(root);
                write_anchor(&tx, &anchor)?;
                root
            }
        };
        tx.commit()?;
        let mut store = SqliteStore {
            conn,
            root,
            path,
            aliases: Default::default(),
            archetypes: Default::default(),
            shared: None,
            validated: false,
            attempt: None,
            bulk_rows: 0,
            recycled: 0,
            group_failure: None,
            wal: Default::default(),
            seq_checks: 0,
        };
        store.reload_aliases()?;
        Ok(store)
    }

    /// Read `anchors_aliases` into the alias map (done on every open).
    pub fn reload_aliases(&mut self) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT old_name, new_name FROM anchors_aliases")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut map = std::collections::HashMap::new();
        for row in rows {
            let (from, to) = row?;
            map.insert(from, to);
        }
        drop(stmt);
        self.aliases = map;
        Ok(())
    }

    /// Set which archetypes the app declares (rows of others are quarantined on read).
    pub fn set_archetypes(&mut self, archetypes: crate::docstore::Archetypes) {
        self.archetypes = archetypes;
    }

    /// Decode a row, apply aliases, check the archetype.
    fn decode(&self, raw: &[SqlValue]) -> Result<(StoredAnchor, u64), String> {
        let (mut anchor, version) = decode_anchor(raw)?;
        if !self.aliases.is_empty() || self.archetypes.known.is_some() {
            crate::docstore::resolve_archetype(&mut anchor, &self.aliases, &self.archetypes)?;
        }
        Ok((anchor, version))
    }

    /// Register `from` → `to` in `anchors_aliases`.
    pub fn add_alias(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO anchors_aliases (old_name, new_name) VALUES (?1, ?2) \
             ON CONFLICT (old_name) DO UPDATE SET new_name = excluded.new_name",
            [from, to],
        )?;
        bump_seq(&self.conn)?;
        self.reload_aliases()
    }

    pub fn aliases(&self) -> &std::collections::HashMap<String, String> {
        &self.aliases
    }

    pub fn count_aliases(&self) -> Result<u64, StoreError> {
        self.count("SELECT count(*) FROM anchors_aliases")
    }

    /// Quarantined rows, oldest first.
    pub fn quarantined(&self) -> Result<Vec<crate::docstore::Quarantined>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT rowid, id, raw, reason, quarantined_at FROM anchors_quarantine ORDER BY rowid",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(crate::docstore::Quarantined {
                entry: r.get::<_, i64>(0)?.to_string(),
                anchor: r.get(1)?,
                raw: serde_json::from_str(&r.get::<_, String>(2)?)
                    .unwrap_or(serde_json::Value::Null),
                reason: r.get(3)?,
                quarantined_at: r.get::<_, String>(4)?.parse().unwrap_or(0),
            })
        })?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(StoreError::from)
    }

    /// Move every quarantined row that reads now (after aliases) back; returns
    /// `(recovered, total)`.
    pub fn recover_all(&mut self) -> Result<(u64, u64), StoreError> {
        let entries = self.quarantined()?;
        let total = entries.len() as u64;
        let mut recovered = 0;
        for entry in entries {
            let Some(object) = entry.raw.as_object() else {
                continue;
            };
            let raw: Vec<SqlValue> = ANCHOR_COLUMNS
                .iter()
                .map(|c| match object.get(*c) {
                    Some(serde_json::Value::String(t)) => SqlValue::Text(t.clone()),
                    Some(serde_json::Value::Number(n)) => match n.as_i64() {
                        Some(i) => SqlValue::Integer(i),
                        None => SqlValue::Real(n.as_f64().unwrap_or(0.0)),
                    },
                    _ => SqlValue::Null,
                })
                .collect();
            let Ok((anchor, version)) = self.decode(&raw) else {
                continue;
            };
            let tx = self.conn.transaction()?;
            write_anchor(&tx, &anchor)?;
            tx.execute(
                "UPDATE anchors SET version = ?2 WHERE id = ?1",
                params![IdText::new(anchor.id), version as i64],
            )?;
            tx.execute(
                "DELETE FROM anchors_quarantine WHERE rowid = ?1",
                [entry.entry.parse::<i64>().unwrap_or(-1)],
            )?;
            bump_seq(&tx)?;
            tx.commit()?;
            if let Some(shared) = &self.shared {
                shared.invalidate(&[anchor.id]);
            }
            recovered += 1;
        }
        Ok((recovered, total))
    }

    /// Anchor counts per `(kind, arch_module, arch_type)`.
    pub fn census(&self) -> Result<Vec<(String, String, String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, arch_module, arch_type, count(*) FROM anchors \
             GROUP BY kind, arch_module, arch_type ORDER BY kind, arch_module, arch_type",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            ))
        })?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(StoreError::from)
    }

    /// The root node of `svc run` (the single local user's root).
    pub fn root_id(&self) -> AnchorId {
        self.root
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Load one anchor. A row that cannot be decoded is moved to `anchors_quarantine`
    /// (with the reason) and reported as absent.
    pub fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, StoreError> {
        Ok(self.load_versioned(id)?.map(|(anchor, _)| anchor))
    }

    /// Attach the process-wide L1 cache and group commit (`svc start`).
    pub fn set_shared(
        &mut self,
        shared: std::sync::Arc<crate::l1::EmbeddedShared>,
    ) -> Result<(), StoreError> {
        hand_checkpoints_to(&mut self.conn, &shared)?;
        self.shared = Some(shared);
        Ok(())
    }

    /// A new call attempt begins: the next cached read checks `meta.commit_seq` first
    /// (a write by another process since then clears the cache). Under `svc start`, a
    /// connection that read or wrote more than `RECYCLE_ROWS` rows since the last
    /// attempt is replaced by a fresh one first (see `RECYCLE_ROWS`).
    pub fn begin_attempt(&mut self) {
        if self.bulk_rows > RECYCLE_ROWS {
            self.recycle();
        }
        self.bulk_rows = 0;
        self.validated = false;
        self.attempt = self
            .shared
            .as_ref()
            .map(|s| crate::l1::Attempt::new(std::sync::Arc::clone(s)));
    }

    /// The call attempt ended (whatever its outcome): it no longer counts as running.
    pub fn end_attempt(&mut self) {
        self.attempt = None;
    }

    /// Swap the connection for a fresh one (shared tier only, between attempts, so no
    /// transaction is open). SQLite's page cache keeps the size of its hash table once
    /// grown, and every read transaction after another connection's commit empties the
    /// cache by scanning that whole table; a connection that once held a bulk call's
    /// pages paid for it on every later call. A connection that cannot be opened leaves
    /// the old one in use (the next bulk attempt tries again).
    fn recycle(&mut self) {
        let Some(shared) = self.shared.as_ref() else {
            return;
        };
        let fresh = open_conn(&self.path).and_then(|mut conn| {
            hand_checkpoints_to(&mut conn, shared)?;
            Ok(conn)
        });
        match fresh {
            Ok(conn) => {
                self.conn = conn;
                self.wal.reset();
                self.recycled += 1;
            }
            Err(e) => tracing::warn!(
                "could not replace a store connection after a bulk call (keeping it): {e}"
            ),
        }
    }

    /// Attempts that made the full check of `meta.commit_seq` (the others found the
    /// WAL-index header unchanged, `wal_index`).
    pub fn seq_checks(&self) -> u64 {
        self.seq_checks
    }

    /// Connections this store replaced after bulk attempts (`recycle`).
    pub fn recycled(&self) -> u64 {
        self.recycled
    }

    /// The shared cache, checked against writes of other processes once per attempt.
    fn cache(&mut self) -> Result<Option<std::sync::Arc<crate::l1::EmbeddedShared>>, StoreError> {
        let Some(shared) = self.shared.as_ref().filter(|s| s.enabled()) else {
            return Ok(None);
        };
        let shared = std::sync::Arc::clone(shared);
        if !self.validated {
            // Read before the full check, remembered only after it (`wal_index`).
            let header = self.wal.read();
            if !self.wal.unchanged(header.as_ref()) {
                self.seq_checks += 1;
                let seq = read_seq(&self.conn)?;
                if seq != shared.known_seq() {
                    let _writer = shared.writer();
                    let seq = read_seq(&self.conn)?;
                    if seq != shared.known_seq() {
                        shared.clear();
                        shared.set_known_seq(seq);
                    }
                }
                self.wal.settle(&self.path, header);
            }
            self.validated = true;
        }
        Ok(Some(shared))
    }

    /// `load` plus the row's current version, for optimistic concurrency (from the L1
    /// cache when attached and current).
    pub fn load_versioned(
        &mut self,
        id: AnchorId,
    ) -> Result<Option<(StoredAnchor, u64)>, StoreError> {
        let Some(cache) = self.cache()? else {
            return self.read_versioned(id);
        };
        if let Some(hit) = cache.lookup(id) {
            return Ok(Some(hit));
        }
        let epoch = cache.epoch(id);
        let found = self.read_versioned(id)?;
        if let Some((anchor, version)) = &found {
            cache.fill(epoch, anchor, *version);
        }
        Ok(found)
    }

    fn read_versioned(&mut self, id: AnchorId) -> Result<Option<(StoredAnchor, u64)>, StoreError> {
        let key = format_id(id);
        let raw: Option<Vec<SqlValue>> = {
            let mut stmt = self.conn.prepare_cached(SELECT_ANCHOR)?;
            stmt.query_row([&key], |row| {
                (0..ANCHOR_COLUMNS.len())
                    .map(|i| row.get::<_, SqlValue>(i))
                    .collect()
            })
            .optional()?
        };
        let Some(raw) = raw else {
            return Ok(None);
        };
        match self.decode(&raw) {
            Ok(found) => Ok(Some(found)),
            Err(reason) => {
                self.quarantine(&key, &raw, &reason)?;
                Ok(None)
            }
        }
    }

    /// A node's edge ids in creation order. Loads leave edge lists out (a node may have
    /// millions of children); a traversal asks for them with this.
    pub fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, StoreError> {
        let Some(cache) = self.cache()? else {
            return self.read_edges(id);
        };
        if let Some(hit) = cache.lookup_edges(id) {
            return Ok(hit);
        }
        // The list and the node's version in one read transaction, so the cache gets a
        // list that belongs to the version it files it under.
        let epoch = cache.epoch(id);
        let tx = self.conn.transaction()?;
        let version: Option<i64> = tx
            .prepare_cached("SELECT version FROM anchors WHERE id = ?1")?
            .query_row([IdText::new(id)], |r| r.get(0))
            .optional()?;
        let edges = read_edges_on(&tx, id)?;
        tx.commit()?;
        self.bulk_rows += edges.len();
        if let Some(version) = version {
            cache.fill_edges(epoch, id, u64::try_from(version).unwrap_or(0), &edges);
        }
        Ok(edges)
    }

    fn read_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, StoreError> {
        let edges = read_edges_on(&self.conn, id)?;
        self.bulk_rows += edges.len();
        Ok(edges)
    }

    /// Load several anchors with their versions in a few queries (`LOAD_CHUNK` ids per
    /// query, read in one transaction so rows and edge lists agree). Absent ids are left
    /// out; undecodable rows are quarantined and left out, as in `load`. With the L1
    /// cache attached, only the ids it does not hold go to SQLite.
    pub fn load_many_versioned(
        &mut self,
        ids: &[AnchorId],
    ) -> Result<Vec<(StoredAnchor, u64)>, StoreError> {
        let Some(cache) = self.cache()? else {
            return self.read_many_versioned(ids);
        };
        let mut out = Vec::with_capacity(ids.len());
        let mut missing: Vec<AnchorId> = Vec::new();
        let mut epochs: IdMap<u64> = IdMap::default();
        for &id in ids {
            match cache.lookup(id) {
                Some(hit) => out.push(hit),
                None => {
                    epochs.insert(id, cache.epoch(id));
                    missing.push(id);
                }
            }
        }
        if !missing.is_empty() {
            for (anchor, version) in self.read_many_versioned(&missing)? {
                if let Some(&epoch) = epochs.get(&anchor.id) {
                    cache.fill(epoch, &anchor, version);
                }
                out.push((anchor, version));
            }
        }
        Ok(out)
    }

    fn read_many_versioned(
        &mut self,
        ids: &[AnchorId],
    ) -> Result<Vec<(StoredAnchor, u64)>, StoreError> {
        let mut unique: IdSet = IdSet::with_capacity_and_hasher(ids.len(), Default::default());
        let ids: Vec<AnchorId> = ids
            .iter()
            .copied()
            .filter(|id| unique.insert(*id))
            .collect();
        let mut rows: Vec<Vec<SqlValue>> = Vec::with_capacity(ids.len());
        {
            let tx = self.conn.transaction()?;
            let mut select_anchors = tx.prepare_cached(load_many_sql())?;
            for chunk in ids.chunks(LOAD_CHUNK) {
                // Pad the last chunk with a repeated id so one cached statement serves all.
                let keys: Vec<IdText> = (0..LOAD_CHUNK)
                    .map(|i| IdText::new(chunk[i.min(chunk.len() - 1)]))
                    .collect();
                let params = rusqlite::params_from_iter(keys.iter());
                let mut found = select_anchors.query(params)?;
                while let Some(row) = found.next()? {
                    let raw = (0..ANCHOR_COLUMNS.len())
                        .map(|i| row.get::<_, SqlValue>(i))
                        .collect::<Result<Vec<_>, _>>()?;
                    rows.push(raw);
                }
            }
            drop(select_anchors);
            tx.commit()?;
        }
        self.bulk_rows += rows.len();

        let mut out = Vec::with_capacity(rows.len());
        for raw in rows {
            let key = match &raw[0] {
                SqlValue::Text(t) => t.clone(),
                other => format!("{other:?}"),
            };
            match self.decode(&raw) {
                Ok(found) => out.push(found),
                Err(reason) => self.quarantine(&key, &raw, &reason)?,
            }
        }
        Ok(out)
    }

    /// Move one undecodable row to `anchors_quarantine`, in a transaction. Its edge list
    /// stays in `anchor_edges` so a recovered row gets its children back.
    fn quarantine(&mut self, key: &str, raw: &[SqlValue], reason: &str) -> Result<(), StoreError> {
        let mut object = serde_json::Map::new();
        for (name, value) in ANCHOR_COLUMNS.iter().zip(raw) {
            object.insert((*name).to_string(), sql_to_json(value));
        }
        let raw_text = serde_json::Value::Object(object).to_string();
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO anchors_quarantine (id, raw, reason, quarantined_at) \
             VALUES (?1, ?2, ?3, ?4)",
            params![key, raw_text, reason, unix_seconds().to_string()],
        )?;
        tx.execute("DELETE FROM anchors WHERE id = ?1", [key])?;
        bump_seq(&tx)?;
        tx.commit()?;
        if let (Some(shared), Some(id)) = (&self.shared, parse_id(key)) {
            shared.invalidate(&[id]);
        }
        Ok(())
    }

    /// Apply one run's changes in a single transaction. Every `read_versions` entry is
    /// checked first (version 0 = "read as absent"); a mismatch rolls everything back
    /// with `StoreError::Conflict`. Upserts bump `version`; a node whose edge list
    /// changes is bumped once too, so two runs that both read a node and both append a
    /// child cannot both commit.
    /// Returns the version each written or re-linked anchor has afterwards, so a run
    /// that commits again keeps checking what it read (`VersionTracker`).
    ///
    /// With the shared tier attached (`svc start`) the commit joins a group: one
    /// transaction carries the commit sets of the calls committing at the same time,
    /// each in its own savepoint (checked and rolled back on its own), and the L1 cache
    /// is updated before any of them returns.
    pub fn commit(&mut self, changes: &CommitSet) -> Result<Vec<(AnchorId, u64)>, StoreError> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(shared) = self.shared.clone() {
            // Queued: a leader gathering a group no longer waits for this attempt.
            self.attempt = None;
            return shared.group.commit(
                changes.clone(),
                &shared.tuning,
                &shared.running,
                |batch| self.write_group(&shared, batch),
            );
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        bump_seq(&tx)?;
        let (after, _) = apply_changes(&tx, changes, false)?;
        tx.commit()?;
        Ok(after)
    }

    /// The pipelined commit (`l1::Group::hand_off`): queue `changes` and return, mostly
    /// before they are written; `completion` gets the outcome once they are. Only with
    /// the shared tier attached and `pipeline` above 0 (`pipelines`); otherwise the
    /// commit is made here and `completion` runs before this returns. While this
    /// connection leads, it writes the queued groups first.
    pub(crate) fn hand_off(&mut self, changes: CommitSet, completion: crate::l1::Completion) {
        match self.shared.clone().filter(|s| s.tuning.pipeline > 0) {
            Some(shared) if !changes.is_empty() => {
                self.attempt = None;
                shared.group.hand_off(
                    changes,
                    completion,
                    &shared.tuning,
                    &shared.running,
                    |batch| self.write_group(&shared, batch),
                );
            }
            _ => completion(self.commit(&changes)),
        }
    }

    /// Whether `hand_off` pipelines (the shared tier with `pipeline` above 0).
    pub fn pipelines(&self) -> bool {
        self.shared.as_ref().is_some_and(|s| s.tuning.pipeline > 0)
    }

    /// Why the last group this connection led failed as a whole (then the connection
    /// is suspect and its owner re-opens it); cleared by reading.
    pub fn take_group_failure(&mut self) -> Option<String> {
        self.group_failure.take()
    }

    /// One transaction over `batch`: `commit_seq` bumped once, each call's changes in its
    /// own savepoint (released, or rolled back alone), one COMMIT. Returns the new
    /// `commit_seq` and each call's outcome.
    fn group_transaction(
        &mut self,
        batch: &[std::sync::Arc<crate::l1::Pending>],
        track: bool,
    ) -> Result<(u64, Vec<Result<Applied, StoreError>>), StoreError> {
        // The transaction's own statements come from the statement cache: parsed once
        // per connection, not four times per group plus two per call.
        self.bulk_rows += batch
            .iter()
            .map(|p| {
                let c = &p.changes;
                c.upserts.len() + c.edge_adds.len() + c.edge_removes.len() + c.deletes.len()
            })
            .sum::<usize>();
        let conn = &self.conn;
        run_cached(conn, "BEGIN IMMEDIATE")?;
        // Whatever ends this function early (an error, a panic) rolls the group back.
        let _open = RollbackOnExit(conn);
        let seq = bump_seq(conn)?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for pending in batch {
            run_cached(conn, "SAVEPOINT call")?;
            match apply_changes(conn, &pending.changes, track) {
                Ok(done) => {
                    run_cached(conn, "RELEASE call")?;
                    outcomes.push(Ok(done));
                }
                Err(e) => {
                    // Undo what this call wrote; the others' writes stay.
                    run_cached(conn, "ROLLBACK TO call")?;
                    run_cached(conn, "RELEASE call")?;
                    outcomes.push(Err(e));
                }
            }
        }
        run_cached(conn, "COMMIT")?;
        Ok((seq, outcomes))
    }

    /// The group leader's work: one IMMEDIATE transaction, a savepoint per call, one
    /// COMMIT; then the cache, in call order; then every member's outcome.
    fn write_group(
        &mut self,
        shared: &crate::l1::EmbeddedShared,
        batch: &[std::sync::Arc<crate::l1::Pending>],
    ) {
        // Back-pressure: while the log is past twice its bound, wait (at most a second)
        // for the checkpointer to start it over before writing more.
        shared.checkpoints.wait_below_hard_bound();
        let _writer = shared.writer();
        let written = self.group_transaction(batch, shared.enabled());
        match written {
            Ok((seq, outcomes)) => {
                shared.count_group(batch.len());
                // Another process wrote since the cache last agreed with the file.
                if seq.wrapping_sub(1) != shared.known_seq() {
                    shared.clear();
                }
                for (pending, outcome) in batch.iter().zip(outcomes) {
                    match outcome {
                        Ok((after, changes)) => {
                            shared.committed(changes, &pending.changes.deletes);
                            pending.set(Ok(after));
                        }
                        Err(e) => pending.set(Err(e)),
                    }
                }
                shared.set_known_seq(seq);
                shared.checkpoints.nudge();
            }
            Err(e) => {
                // Nothing of the group was committed.
                self.group_failure = Some(e.to_string());
                for pending in batch {
                    pending.set(Err(StoreError::Meta(format!("group commit failed: {e}"))));
                }
            }
        }
    }

    /// Current version of an anchor (`None` if absent).
    pub fn version(&self, id: AnchorId) -> Result<Option<u64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT version FROM anchors WHERE id = ?1")?;
        let v: Option<i64> = stmt.query_row([format_id(id)], |r| r.get(0)).optional()?;
        Ok(v.map(|v| u64::try_from(v).unwrap_or(0)))
    }

    pub fn count_anchors(&self) -> Result<u64, StoreError> {
        self.count("SELECT count(*) FROM anchors")
    }

    pub fn count_quarantined(&self) -> Result<u64, StoreError> {
        self.count("SELECT count(*) FROM anchors_quarantine")
    }

    fn count(&self, sql: &str) -> Result<u64, StoreError> {
        let n: i64 = self.conn.query_row(sql, [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Make sure root node `id` exists (a user's root, created on first use). Returns
    /// `true` when this call created it. An existing root is left untouched (its version
    /// is not bumped).
    pub fn ensure_root(&mut self, id: AnchorId) -> Result<bool, StoreError> {
        if self.version(id)?.is_some() {
            return Ok(false);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let exists: Option<i64> = tx
            .query_row(
                "SELECT 1 FROM anchors WHERE id = ?1",
                [IdText::new(id)],
                |r| r.get(0),
            )
            .optional()?;
        if exists.is_some() {
            return Ok(false);
        }
        write_anchor(&tx, &root_anchor(id))?;
        tx.commit()?;
        Ok(true)
    }

    /// A cheap liveness probe of the connection and the file: reads the stored root id
    /// and checks it is still this store's root.
    pub fn check_health(&self) -> Result<(), StoreError> {
        let text: String =
            self.conn
                .query_row("SELECT value FROM meta WHERE key = 'root_id'", [], |r| {
                    r.get(0)
                })?;
        match parse_id(&text) {
            Some(root) if root == self.root => Ok(()),
            _ => Err(StoreError::Meta(format!("root_id changed to {text:?}"))),
        }
    }
}

/// A connection to the store file with the settings every connection uses (busy
/// timeout, WAL, page cache, memory map, statement cache); the schema is `open`'s.
fn open_conn(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // `journal_mode` answers with a row, so it is queried rather than executed.
    // 4 KiB pages (applies when the file is created). A served call's commit changes
    // a handful of random B-tree leaves, and each goes into the write-ahead log
    // whole: with 16 KiB pages node creation under `svc start` wrote ~100 KB of log
    // per call and ran at half the rate (benches/load/README.md, 2026-11-27); a bulk
    // commit of 100,000 nodes (`svc run`) is ~15% slower with 4 KiB, the lesser cost.
    // Files created with another page size keep it.
    conn.execute_batch("PRAGMA page_size = 4096;")?;
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    // A 64 MiB page cache keeps a bulk commit's B-tree pages in memory; reads go
    // through a memory map (up to 256 MiB of the file) instead of copies. Temporary
    // storage in memory: a group commit's savepoints journal every page they change,
    // which spilled past 64 KiB into a new file in /var/tmp per
    // commit (an open, a write and a close per call, seen with strace).
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; \
         PRAGMA mmap_size = 268435456; PRAGMA temp_store = MEMORY;",
    )?;
    conn.set_prepared_statement_cache_capacity(32);
    // Keep cached statements' query plans across re-binds: without this, SQLite
    // re-prepares `... WHERE id = ?1` on every use from the statement cache (measured:
    // a fifth of a 100-node walk's time).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(conn)
}

/// Under `svc start` the checkpointer copies the log back outside every commit; SQLite's
/// automatic checkpoint would run inside the group leader's COMMIT (`crate::checkpoint`).
/// So a worker connection turns it off and reports the log's length after each commit.
fn hand_checkpoints_to(
    conn: &mut Connection,
    shared: &crate::l1::EmbeddedShared,
) -> Result<(), StoreError> {
    if shared
        .checkpointer_attached
        .load(std::sync::atomic::Ordering::Acquire)
    {
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")?;
        let mailbox = std::sync::Arc::clone(&shared.checkpoints);
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, frames| {
            mailbox.frames.store(
                u64::try_from(frames).unwrap_or(0),
                std::sync::atomic::Ordering::Release,
            );
            Ok(())
        }))?;
    }
    Ok(())
}

/// The root node as stored on first open (both tiers).
pub(crate) fn root_anchor(root: AnchorId) -> StoredAnchor {
    StoredAnchor {
        id: root,
        kind: AnchorKind::Node,
        arch_module: "builtins".into(),
        arch_type: "Root".into(),
        fingerprint: "".into(),
        owner: root,
        access: AccessPolicy::default(),
        fields: "{}".to_string(),
        ends: None,
        edges: None,
    }
}

/// What `apply_changes` did: each written or re-linked anchor's version afterwards, and
/// (when tracking) the per-anchor changes for the L1 cache.
type Applied = (Vec<(AnchorId, u64)>, Vec<crate::l1::Change>);

/// Run a statement without parameters or rows from the connection's statement cache.
fn run_cached(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// Rolls back the transaction still open on the connection when dropped (after a
/// successful COMMIT there is none, and it does nothing).
struct RollbackOnExit<'a>(&'a Connection);

impl Drop for RollbackOnExit<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            // If even this fails, the next BEGIN on the connection fails and says so.
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// `meta.commit_seq`: bumped by every transaction that changes anchors (any process,
/// any build with the L1 cache), so a process can tell its cache went stale.
fn bump_seq(conn: &Connection) -> Result<u64, StoreError> {
    let seq: i64 = conn
        .prepare_cached(
            "INSERT INTO meta (key, value) VALUES ('commit_seq', '1') \
             ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) \
             RETURNING CAST(value AS INTEGER)",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(u64::try_from(seq).unwrap_or(0))
}

/// The current `meta.commit_seq` (0 before the first write).
fn read_seq(conn: &Connection) -> Result<u64, StoreError> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'commit_seq'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(seq.map_or(0, |v| u64::try_from(v).unwrap_or(0)))
}

/// A node's edge ids in creation order, on `conn`.
fn read_edges_on(conn: &Connection, id: AnchorId) -> Result<Vec<AnchorId>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT edge_id FROM anchor_edges WHERE node_id = ?1 ORDER BY seq")?;
    let rows = stmt.query_map([IdText::new(id)], |r| r.get::<_, SqlValue>(0))?;
    let mut out = Vec::new();
    for row in rows {
        // An undecodable entry is skipped here and left in the table for recovery.
        if let SqlValue::Text(t) = row?
            && let Some(e) = parse_id(&t)
        {
            out.push(e);
        }
    }
    Ok(out)
}

/// One call's changes inside an open transaction (or savepoint) on `conn`: the version
/// checks, upserts, edge appends and removals, deletes and version bumps. Returns the
/// version of every written or re-linked anchor afterwards and, when `track`, what
/// changed per anchor for the L1 cache.
fn apply_changes(
    conn: &Connection,
    changes: &CommitSet,
    track: bool,
) -> Result<Applied, StoreError> {
    {
        let mut version_of = conn.prepare_cached("SELECT version FROM anchors WHERE id = ?1")?;
        for &(id, read) in &changes.read_versions {
            let stored: Option<i64> = version_of
                .query_row([IdText::new(id)], |r| r.get(0))
                .optional()?;
            let stored = stored.map_or(0, |v| u64::try_from(v).unwrap_or(0));
            if stored != read {
                return Err(StoreError::Conflict {
                    id: format_id(id),
                    read,
                    stored,
                });
            }
        }
    }

    // Per written anchor: writes, and (tracking) the version before the first write and
    // after the last.
    let mut written: IdMap<(u64, u64, u64)> =
        IdMap::with_capacity_and_hasher(changes.upserts.len(), Default::default());
    {
        let mut upsert = conn.prepare_cached(if track {
            UPSERT_ANCHOR_RETURNING
        } else {
            UPSERT_ANCHOR
        })?;
        let mut buf = Vec::with_capacity(256);
        // Key order keeps B-tree inserts local (ids are random); the sort is stable,
        // so a repeated id still ends with its last write.
        let mut ordered: Vec<&StoredAnchor> = changes.upserts.iter().collect();
        ordered.sort_by_key(|a| a.id);
        for anchor in ordered {
            let now = write_anchor_with(&mut upsert, anchor, &mut buf, track)?;
            let entry = written
                .entry(anchor.id)
                .or_insert((0, now.saturating_sub(1), now));
            entry.0 += 1;
            entry.2 = now;
        }
    }

    let mut touched: IdSet = IdSet::default();
    {
        let mut max_seq =
            conn.prepare_cached("SELECT max(seq) FROM anchor_edges WHERE node_id = ?1")?;
        let mut append = conn.prepare_cached(
            "INSERT INTO anchor_edges (node_id, seq, edge_id) VALUES (?1, ?2, ?3)",
        )?;
        // One `max(seq)` lookup per node per commit, then consecutive sequence numbers.
        let mut next_seq: IdMap<i64> = IdMap::default();
        // Grouped by node (stable: each node's appends keep their order).
        let mut adds: Vec<(AnchorId, AnchorId)> = changes.edge_adds.clone();
        adds.sort_by_key(|&(node, _)| node);
        for (node, edge) in adds {
            let node_key = IdText::new(node);
            let seq = match next_seq.get(&node) {
                Some(&seq) => seq,
                None => {
                    let max: Option<i64> = max_seq.query_row([node_key], |r| r.get(0))?;
                    max.unwrap_or(0) + 1
                }
            };
            append.execute(params![node_key, seq, IdText::new(edge)])?;
            next_seq.insert(node, seq + 1);
            touched.insert(node);
        }
        let mut remove =
            conn.prepare_cached("DELETE FROM anchor_edges WHERE node_id = ?1 AND edge_id = ?2")?;
        for &(node, edge) in &changes.edge_removes {
            remove.execute([IdText::new(node), IdText::new(edge)])?;
            touched.insert(node);
        }
    }

    let deleted: IdSet = changes.deletes.iter().copied().collect();
    {
        let mut delete_anchor = conn.prepare_cached("DELETE FROM anchors WHERE id = ?1")?;
        let mut delete_edges =
            conn.prepare_cached("DELETE FROM anchor_edges WHERE node_id = ?1")?;
        for &id in &changes.deletes {
            let key = IdText::new(id);
            delete_anchor.execute([key])?;
            delete_edges.execute([key])?;
            touched.remove(&id);
        }
    }

    let mut after: Vec<(AnchorId, u64)> = Vec::with_capacity(written.len() + touched.len());
    let mut cache: Vec<crate::l1::Change> = Vec::new();
    {
        let mut bump = conn.prepare_cached(
            "UPDATE anchors SET version = version + 1 WHERE id = ?1 RETURNING version",
        )?;
        let read: IdMap<u64> = changes.read_versions.iter().copied().collect();
        // Tracking: each written anchor's last write (a bulk commit writes thousands).
        let last: IdMap<usize> = if track {
            changes
                .upserts
                .iter()
                .enumerate()
                .map(|(i, a)| (a.id, i))
                .collect()
        } else {
            IdMap::default()
        };
        for &id in touched.iter().filter(|id| !written.contains_key(id)) {
            // The node's version now (a blind append's node may have moved meanwhile).
            let now = bump
                .query_row([IdText::new(id)], |r| r.get::<_, i64>(0))
                .optional()?
                .map(|v| u64::try_from(v).unwrap_or(0));
            if let Some(now) = now {
                after.push((id, now));
                if track {
                    cache.push(crate::l1::Change {
                        id,
                        before: now - 1,
                        after: now,
                        anchor: None,
                        edge_adds: Vec::new(),
                        edge_removes: Vec::new(),
                    });
                }
            }
        }
        // An upsert adds one to the version it checked (0 = absent, so a new anchor
        // ends at its number of writes); tracking, the store said so itself.
        for (&id, &(writes, before, now)) in &written {
            let now = if track {
                now
            } else {
                read.get(&id).copied().unwrap_or(0) + writes
            };
            after.push((id, now));
            if track && !deleted.contains(&id) {
                let anchor = last.get(&id).map(|&i| changes.upserts[i].clone());
                cache.push(crate::l1::Change {
                    id,
                    before,
                    after: now,
                    anchor,
                    edge_adds: Vec::new(),
                    edge_removes: Vec::new(),
                });
            }
        }
    }
    if track && !(changes.edge_adds.is_empty() && changes.edge_removes.is_empty()) {
        let at: IdMap<usize> = cache.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
        for &(node, edge) in &changes.edge_adds {
            if let Some(&i) = at.get(&node) {
                cache[i].edge_adds.push(edge);
            }
        }
        for &(node, edge) in &changes.edge_removes {
            if let Some(&i) = at.get(&node) {
                cache[i].edge_removes.push(edge);
            }
        }
    }
    Ok((after, cache))
}

fn write_anchor(conn: &Connection, a: &StoredAnchor) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(UPSERT_ANCHOR)?;
    write_anchor_with(&mut stmt, a, &mut Vec::new(), false)?;
    Ok(())
}

/// Upsert one anchor with an already prepared `UPSERT_ANCHOR` statement; `buf` is scratch
/// space reused across calls so a bulk commit does not allocate per row.
fn write_anchor_with(
    stmt: &mut rusqlite::Statement<'_>,
    a: &StoredAnchor,
    buf: &mut Vec<u8>,
    returning: bool,
) -> Result<u64, StoreError> {
    buf.clear();
    encode_access(&a.access, buf);
    let access = &buf[..];
    let fields = a.fields.as_bytes();
    let (source, target, undirected) = match a.ends {
        Some(e) => (
            Some(IdText::new(e.source)),
            Some(IdText::new(e.target)),
            Some(e.undirected),
        ),
        None => (None, None, None),
    };
    let (id, owner) = (IdText::new(a.id), IdText::new(a.owner));
    let (access, fields) = (Utf8(access), Utf8(fields));
    let params = params![
        id,
        a.kind.as_str(),
        &*a.arch_module,
        &*a.arch_type,
        &*a.fingerprint,
        FORMAT_VERSION,
        owner,
        access,
        fields,
        source,
        target,
        undirected,
    ];
    if returning {
        // `UPSERT_ANCHOR_RETURNING`: the row's version after this write.
        let v: i64 = stmt.query_row(params, |r| r.get(0))?;
        return Ok(u64::try_from(v).unwrap_or(0));
    }
    stmt.execute(params)?;
    Ok(0)
}

/// An anchor id as its 32 lowercase hex characters, on the stack (binds as TEXT).
#[derive(Clone, Copy)]
struct IdText([u8; 32]);

impl IdText {
    fn new(id: AnchorId) -> IdText {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (pair, byte) in out.chunks_exact_mut(2).zip(id.to_be_bytes()) {
            pair[0] = HEX[usize::from(byte >> 4)];
            pair[1] = HEX[usize::from(byte & 0xf)];
        }
        IdText(out)
    }
}

impl rusqlite::ToSql for IdText {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::Borrowed(
            rusqlite::types::ValueRef::Text(&self.0),
        ))
    }
}

/// Bytes known to be UTF-8 (serde_json output), bound as TEXT without a copy.
struct Utf8<'a>(&'a [u8]);

impl rusqlite::ToSql for Utf8<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::Borrowed(
            rusqlite::types::ValueRef::Text(self.0),
        ))
    }
}

/// `{"public":L|null,"roots":[["<id>",L],...]}`, appended to `out`.
fn encode_access(access: &AccessPolicy, out: &mut Vec<u8>) {
    use std::io::Write as _;
    let _ = match access.public {
        Some(level) => write!(out, "{{\"public\":{level},\"roots\":["),
        None => write!(out, "{{\"public\":null,\"roots\":["),
    };
    for (i, (root, level)) in access.roots.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(&IdText::new(*root).0);
        let _ = write!(out, "\",{level}]");
    }
    out.extend_from_slice(b"]}");
}

fn decode_access(text: &str) -> Result<AccessPolicy, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("access is not JSON: {e}"))?;
    let level = |v: &serde_json::Value| -> Result<i8, String> {
        v.as_i64()
            .and_then(|n| i8::try_from(n).ok())
            .filter(|n| (-1..=2).contains(n))
            .ok_or_else(|| format!("bad access level {v}"))
    };
    let public = match value.get("public") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(level(v)?),
    };
    let mut roots = Vec::new();
    match value.get("roots") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(items)) => {
            for item in items {
                let pair = item.as_array().filter(|p| p.len() == 2);
                let Some(pair) = pair else {
                    return Err(format!("bad access entry {item}"));
                };
                let root = pair[0]
                    .as_str()
                    .and_then(parse_id)
                    .ok_or_else(|| format!("bad root id in access entry {item}"))?;
                roots.push((root, level(&pair[1])?));
            }
        }
        Some(other) => return Err(format!("access roots is not a list: {other}")),
    }
    Ok(AccessPolicy { public, roots })
}

fn text(raw: &[SqlValue], i: usize) -> Result<&str, String> {
    match &raw[i] {
        SqlValue::Text(s) => Ok(s),
        other => Err(format!(
            "column {} is not text: {other:?}",
            ANCHOR_COLUMNS[i]
        )),
    }
}

fn opt_text(raw: &[SqlValue], i: usize) -> Result<Option<&str>, String> {
    match &raw[i] {
        SqlValue::Null => Ok(None),
        _ => text(raw, i).map(Some),
    }
}

fn id_column(raw: &[SqlValue], i: usize) -> Result<AnchorId, String> {
    let t = text(raw, i)?;
    parse_id(t).ok_or_else(|| format!("column {} is not an anchor id: {t:?}", ANCHOR_COLUMNS[i]))
}

/// Decode one `anchors` row (columns in `ANCHOR_COLUMNS` order) plus its edge list.
fn decode_anchor(raw: &[SqlValue]) -> Result<(StoredAnchor, u64), String> {
    let id = id_column(raw, 0)?;
    let kind_text = text(raw, 1)?;
    let kind = AnchorKind::parse(kind_text).ok_or_else(|| format!("unknown kind {kind_text:?}"))?;
    let arch_module = text(raw, 2)?.into();
    let arch_type = text(raw, 3)?.into();
    let fingerprint = text(raw, 4)?.into();
    match &raw[5] {
        SqlValue::Integer(v) if *v <= FORMAT_VERSION => {}
        other => return Err(format!("unsupported format_version {other:?}")),
    }
    let owner = id_column(raw, 6)?;
    let access = decode_access(text(raw, 7)?)?;
    let fields = text(raw, 8)?;
    // Validate without building a tree: the interpreter parses it when it needs it.
    if !fields.trim_start().starts_with('{') {
        return Err("fields is not a JSON object".to_string());
    }
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(fields) {
        return Err(format!("fields is not JSON: {e}"));
    }
    let fields = fields.to_string();
    let ends = match (opt_text(raw, 9)?, opt_text(raw, 10)?) {
        (Some(s), Some(t)) => {
            let source = parse_id(s).ok_or_else(|| format!("bad source id {s:?}"))?;
            let target = parse_id(t).ok_or_else(|| format!("bad target id {t:?}"))?;
            let undirected = matches!(raw[11], SqlValue::Integer(v) if v != 0);
            Some(EdgeEnds {
                source,
                target,
                undirected,
            })
        }
        (None, None) => None,
        _ => return Err("edge has only one end".to_string()),
    };
    if kind == AnchorKind::Edge && ends.is_none() {
        return Err("edge without source/target".to_string());
    }
    let version = match raw[12] {
        SqlValue::Integer(v) if v >= 1 => v as u64,
        ref other => return Err(format!("bad version {other:?}")),
    };
    let anchor = StoredAnchor {
        id,
        kind,
        arch_module,
        arch_type,
        fingerprint,
        owner,
        access,
        fields,
        ends,
        // Left out: `load_edges` answers when a traversal needs them.
        edges: None,
    };
    Ok((anchor, version))
}

fn sql_to_json(value: &SqlValue) -> serde_json::Value {
    match value {
        SqlValue::Null => serde_json::Value::Null,
        SqlValue::Integer(i) => serde_json::Value::from(*i),
        SqlValue::Real(f) => serde_json::Value::from(*f),
        SqlValue::Text(s) => serde_json::Value::from(s.as_str()),
        SqlValue::Blob(b) => {
            let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
            serde_json::json!({ "blob_hex": hex })
        }
    }
}

pub(crate) fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh random 128-bit anchor id, never zero. The process seeds once from
/// `/dev/urandom` (falling back to time and process id) and then mixes a counter through
/// splitmix64, so ids are unique within the process and unpredictable across processes
/// without a system call per id.
pub fn random_id() -> AnchorId {
    static SEED: OnceLock<(u64, u64)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let &(hi_seed, lo_seed) = SEED.get_or_init(|| {
        let mut bytes = [0u8; 16];
        let from_os = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .is_ok();
        if from_os {
            let seed = u128::from_le_bytes(bytes);
            ((seed >> 64) as u64, seed as u64)
        } else {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let base = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
            (splitmix64(base), splitmix64(base ^ 0x5851_F42D_4C95_7F2D))
        }
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // splitmix64 is a bijection, so distinct counters give distinct halves.
    let id = (u128::from(splitmix64(hi_seed ^ n)) << 64) | u128::from(splitmix64(lo_seed ^ n));
    if id == 0 { 1 } else { id }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The optimistic-concurrency bookkeeping of one run, shared by every `Host` over a
/// `SqliteStore` (`RunHost` of `svc run`, the server's per-call host): it remembers the
/// version of each anchor the run loaded and, at commit, adds those versions to the
/// `read_versions` of the anchors the commit writes, deletes or re-links, so a run that
/// read stale data fails with `StoreError::Conflict` instead of overwriting.
#[derive(Debug, Default)]
pub struct VersionTracker {
    loaded: IdMap<u64>,
}

/// Entries a `VersionTracker` keeps room for from one run to the next. A worker's
/// tracker lives as long as the worker, and a hash map's `clear` costs its capacity, not
/// its length: after one bulk call (100,000 anchors written) every later call would clear
/// a table sized for it. Past this capacity the map is dropped instead.
const TRACKER_KEPT_CAPACITY: usize = 1024;

impl VersionTracker {
    /// Forget everything (a fresh run, or a replay).
    pub fn clear(&mut self) {
        if self.loaded.capacity() > TRACKER_KEPT_CAPACITY {
            self.loaded = IdMap::default();
        } else {
            self.loaded.clear();
        }
    }

    /// `store.load_versioned`, remembering the version.
    pub fn load(
        &mut self,
        store: &mut crate::tier::AnchorStore,
        id: AnchorId,
    ) -> Result<Option<StoredAnchor>, StoreError> {
        match store.load_versioned(id)? {
            Some((anchor, version)) => {
                self.loaded.insert(id, version);
                Ok(Some(anchor))
            }
            None => Ok(None),
        }
    }

    /// A node's edge list (`store.load_edges`).
    pub fn load_edges(
        &mut self,
        store: &mut crate::tier::AnchorStore,
        id: AnchorId,
    ) -> Result<Vec<AnchorId>, StoreError> {
        store.load_edges(id)
    }

    /// `store.load_many_versioned`, remembering the versions.
    pub fn load_many(
        &mut self,
        store: &mut crate::tier::AnchorStore,
        ids: &[AnchorId],
    ) -> Result<Vec<StoredAnchor>, StoreError> {
        let found = store.load_many_versioned(ids)?;
        Ok(found
            .into_iter()
            .map(|(anchor, version)| {
                self.loaded.insert(anchor.id, version);
                anchor
            })
            .collect())
    }

    /// Add the remembered versions of the anchors `changes` touches to its
    /// `read_versions` (entries already there win), then commit. The tracker keeps
    /// checking after a successful commit (a call may commit again), with the new
    /// versions of what it wrote.
    pub fn commit(
        &mut self,
        store: &mut crate::tier::AnchorStore,
        changes: CommitSet,
    ) -> Result<(), StoreError> {
        let changes = self.prepare(changes);
        let after = store.commit(&changes)?;
        self.committed(after, &changes.deletes);
        Ok(())
    }

    /// `changes` as `commit` sends it: with the remembered versions of the anchors it
    /// writes, deletes or re-links added to its `read_versions` (entries already there
    /// win). A pipelined commit sends this set later (`SqliteStore::hand_off`), still
    /// checked against the versions this attempt read.
    pub fn prepare(&self, mut changes: CommitSet) -> CommitSet {
        let mut checked: IdSet = changes.read_versions.iter().map(|(id, _)| *id).collect();
        // Re-linking a node is checked only when the run read that node's edge list: a
        // blind append commutes with other appends (two runs adding children to one node
        // both land), while a check-then-create must not race.
        let edges_read: IdSet = changes.edges_read.iter().copied().collect();
        let relinked = changes
            .edge_adds
            .iter()
            .chain(changes.edge_removes.iter())
            .map(|(node, _)| *node)
            .filter(|node| edges_read.contains(node));
        let written = changes
            .upserts
            .iter()
            .map(|a| a.id)
            .chain(changes.deletes.iter().copied())
            .chain(relinked);
        let mut extra = Vec::new();
        for id in written {
            if checked.insert(id)
                && let Some(&version) = self.loaded.get(&id)
            {
                extra.push((id, version));
            }
        }
        changes.read_versions.extend(extra);
        changes
    }

    /// What the run read stays checked until its last commit: the anchors a commit wrote
    /// now have the versions it gave them (`after`), deleted ones are gone.
    pub fn committed(&mut self, after: Vec<(AnchorId, u64)>, deletes: &[AnchorId]) {
        for (id, version) in after {
            self.loaded.insert(id, version);
        }
        for id in deletes {
            self.loaded.remove(id);
        }
    }
}

/// The `Host` of `svc run`: graph in the embedded store, output straight to the
/// process's stdout (flushed per call), modules read from disk.
///
/// It remembers the version of every anchor it loaded and adds those versions to the
/// `read_versions` of a commit that writes, deletes or re-links them, so two concurrent
/// `svc run`s of one app cannot silently overwrite each other.
pub struct RunHost {
    pub store: crate::tier::AnchorStore,
    pub root: AnchorId,
    /// `true`: write output to stdout; `false`: keep it in memory (see `captured`).
    pub echo_stdout: bool,
    captured: String,
    versions: VersionTracker,
    /// Native services (the event broker of `svc run`), if any.
    natives: Option<crate::natives::NativesHandle>,
}

impl RunHost {
    /// Answer `Host::call_native` through `natives` (the binary's event broker).
    pub fn with_natives(mut self, natives: Option<crate::natives::NativesHandle>) -> RunHost {
        self.natives = natives;
        self
    }

    pub fn new(store: impl Into<crate::tier::AnchorStore>, echo_stdout: bool) -> RunHost {
        let store = store.into();
        let root = store.root_id();
        RunHost {
            store,
            root,
            echo_stdout,
            captured: String::new(),
            versions: VersionTracker::default(),
            natives: None,
        }
    }

    /// Output collected while `echo_stdout` was off.
    pub fn captured(&self) -> &str {
        &self.captured
    }
}

impl Host for RunHost {
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        Ok(self.versions.load(&mut self.store, id)?)
    }

    fn load_many(&mut self, ids: &[AnchorId]) -> Result<Vec<StoredAnchor>, HostError> {
        Ok(self.versions.load_many(&mut self.store, ids)?)
    }

    fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, HostError> {
        Ok(self.versions.load_edges(&mut self.store, id)?)
    }

    fn commit(&mut self, changes: CommitSet) -> Result<(), HostError> {
        Ok(self.versions.commit(&mut self.store, changes)?)
    }

    fn user_root(&self) -> AnchorId {
        self.root
    }

    fn write_stdout(&mut self, text: &str) {
        if self.echo_stdout {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`svc run x.svc | head`) is not an error of the program.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        } else {
            self.captured.push_str(text);
        }
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
        if let Some(answer) = crate::kvstore::call(name, args, None) {
            return Some(answer);
        }
        self.natives
            .as_ref()?
            .call(name, args, crate::natives::NativeCall::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static N: AtomicU64 = AtomicU64::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!(
                "svc-store-{tag}-{}-{n}-{:x}",
                std::process::id(),
                random_id() as u32
            ));
            std::fs::create_dir_all(&dir).expect("create temp dir");
            TempDir(dir)
        }

        fn db(&self) -> PathBuf {
            self.0.join(".svc/data/anchor_store.db")
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// `fields` (a JSON object's text) with its `name` replaced.
    fn set_name(fields: &str, name: &str) -> String {
        let mut m: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(fields).expect("fields json");
        m.insert("name".into(), serde_json::json!(name));
        serde_json::Value::Object(m).to_string()
    }

    fn node(id: AnchorId, owner: AnchorId, name: &str) -> StoredAnchor {
        let mut fields = serde_json::Map::new();
        fields.insert("name".into(), serde_json::json!(name));
        fields.insert(
            "tags".into(),
            serde_json::json!(["a", {"__ref__": format_id(owner)}]),
        );
        StoredAnchor {
            id,
            kind: AnchorKind::Node,
            arch_module: "main".into(),
            arch_type: "Item".into(),
            fingerprint: "fp1".into(),
            owner,
            access: AccessPolicy {
                public: Some(0),
                roots: vec![(owner, 2)],
            },
            fields: serde_json::Value::Object(fields).to_string(),
            ends: None,
            edges: None,
        }
    }

    fn edge(id: AnchorId, owner: AnchorId, source: AnchorId, target: AnchorId) -> StoredAnchor {
        StoredAnchor {
            id,
            kind: AnchorKind::Edge,
            arch_module: "builtins".into(),
            arch_type: "GenericEdge".into(),
            fingerprint: "".into(),
            owner,
            access: AccessPolicy::default(),
            fields: "{}".to_string(),
            ends: Some(EdgeEnds {
                source,
                target,
                undirected: false,
            }),
            edges: None,
        }
    }

    #[test]
    fn open_creates_root_and_reopen_keeps_it() {
        let dir = TempDir::new("root");
        let root = {
            let mut store = SqliteStore::open(dir.db()).expect("open");
            let root = store.root_id();
            let loaded = store.load(root).expect("load").expect("root exists");
            assert_eq!(&*loaded.arch_type, "Root");
            assert_eq!(loaded.owner, root);
            root
        };
        let store = SqliteStore::open(dir.db()).expect("reopen");
        assert_eq!(store.root_id(), root);
        assert_eq!(store.count_anchors().expect("count"), 1);
    }

    /// The store holds password hashes: file, WAL and SHM 0600, directories 0700,
    /// whatever the umask.
    #[test]
    fn store_files_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new("modes");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let mut set = CommitSet::default();
        set.upserts.push(node(random_id(), root, "a"));
        store.commit(&set).expect("commit");
        let mode = |p: PathBuf| {
            std::fs::metadata(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(dir.db()), 0o600);
        for suffix in ["-wal", "-shm"] {
            let mut p = dir.db().into_os_string();
            p.push(suffix);
            assert_eq!(mode(PathBuf::from(p)), 0o600, "{suffix}");
        }
        assert_eq!(mode(dir.0.join(".svc/data")), 0o700);
        assert_eq!(mode(dir.0.join(".svc")), 0o700);
    }

    #[test]
    fn round_trip() {
        let dir = TempDir::new("rt");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let n = node(0xabc, root, "first");
        let e = edge(0xdef, root, root, n.id);
        let commit = CommitSet {
            upserts: vec![n.clone(), e.clone()],
            edge_adds: vec![(root, e.id)],
            ..CommitSet::default()
        };
        store.commit(&commit).expect("commit");
        assert_eq!(store.load(n.id).expect("load"), Some(n.clone()));
        assert_eq!(store.load(e.id).expect("load"), Some(e));
        assert_eq!(store.load_edges(root).expect("edges"), vec![0xdef]);
        assert_eq!(store.load(0x1234).expect("load"), None);

        // An update replaces the fields and bumps the version.
        assert_eq!(store.version(n.id).expect("version"), Some(1));
        let mut changed = n.clone();
        changed.fields = set_name(&changed.fields, "second");
        store
            .commit(&CommitSet {
                upserts: vec![changed.clone()],
                ..CommitSet::default()
            })
            .expect("commit");
        assert_eq!(store.load(n.id).expect("load"), Some(changed));
        assert_eq!(store.version(n.id).expect("version"), Some(2));
    }

    #[test]
    fn edge_append_keeps_order_across_commits() {
        let dir = TempDir::new("order");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let ids: Vec<AnchorId> = (100..110).collect();
        for chunk in ids.chunks(3) {
            let adds = chunk.iter().map(|e| (root, *e)).collect();
            store
                .commit(&CommitSet {
                    edge_adds: adds,
                    ..CommitSet::default()
                })
                .expect("commit");
        }
        assert_eq!(store.load_edges(root).expect("edges"), ids);

        // Removing from the middle keeps the rest in order; appending goes to the end.
        store
            .commit(&CommitSet {
                edge_removes: vec![(root, 104)],
                edge_adds: vec![(root, 7)],
                ..CommitSet::default()
            })
            .expect("commit");
        let mut expected = ids.clone();
        expected.retain(|e| *e != 104);
        expected.push(7);
        assert_eq!(store.load_edges(root).expect("edges"), expected);
    }

    #[test]
    fn delete_removes_anchor_and_its_edge_list() {
        let dir = TempDir::new("del");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let n = node(0x10, root, "gone");
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                edge_adds: vec![(n.id, 0x11), (n.id, 0x12)],
                ..CommitSet::default()
            })
            .expect("commit");
        assert_eq!(store.count_anchors().expect("count"), 2);
        store
            .commit(&CommitSet {
                deletes: vec![n.id],
                ..CommitSet::default()
            })
            .expect("commit");
        assert_eq!(store.load(n.id).expect("load"), None);
        assert_eq!(store.count_anchors().expect("count"), 1);
        // Re-creating the id starts with an empty edge list.
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        assert_eq!(
            store.load_edges(n.id).expect("edges"),
            Vec::<AnchorId>::new()
        );
    }

    #[test]
    fn corrupted_row_is_quarantined_not_dropped() {
        let dir = TempDir::new("quar");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let n = node(0x77, root, "ok");
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        store
            .conn
            .execute(
                "UPDATE anchors SET fields = '{not json' WHERE id = ?1",
                [format_id(n.id)],
            )
            .expect("corrupt the row");
        assert_eq!(store.load(n.id).expect("load"), None);
        assert_eq!(store.count_quarantined().expect("count"), 1);
        assert_eq!(
            store.count_anchors().expect("count"),
            1,
            "only the root remains"
        );
        let (raw, reason): (String, String) = store
            .conn
            .query_row(
                "SELECT raw, reason FROM anchors_quarantine WHERE id = ?1",
                [format_id(n.id)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("quarantine row");
        assert!(
            raw.contains("{not json"),
            "raw keeps the original text: {raw}"
        );
        assert!(
            reason.contains("fields"),
            "reason names the problem: {reason}"
        );

        // An unknown kind is quarantined the same way.
        let m = node(0x78, root, "odd");
        store
            .commit(&CommitSet {
                upserts: vec![m.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        store
            .conn
            .execute(
                "UPDATE anchors SET kind = 'gizmo' WHERE id = ?1",
                [format_id(m.id)],
            )
            .expect("corrupt the row");
        assert_eq!(store.load(m.id).expect("load"), None);
        assert_eq!(store.count_quarantined().expect("count"), 2);

        // A node whose edge list holds something that is not an id still loads; the bad
        // entry is skipped by `load_edges` and left in the table for recovery.
        let k = node(0x79, root, "edgy");
        store
            .commit(&CommitSet {
                upserts: vec![k.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        store
            .conn
            .execute(
                "INSERT INTO anchor_edges (node_id, seq, edge_id) VALUES (?1, 1, 42)",
                [format_id(k.id)],
            )
            .expect("corrupt the edge list");
        assert_eq!(store.load(k.id).expect("load"), Some(k.clone()));
        assert_eq!(
            store.load_edges(k.id).expect("edges"),
            Vec::<AnchorId>::new()
        );
        assert_eq!(store.count_quarantined().expect("count"), 2);
    }

    /// Group commit: one transaction, each call checked and rolled back on its own; the
    /// L1 cache follows the winners, with versions and edge lists exact.
    #[test]
    fn group_commit_isolates_a_conflicting_call_and_keeps_the_cache_exact() {
        use crate::l1::{EmbeddedShared, EmbeddedTuning, Pending};
        use std::sync::Arc;
        let dir = TempDir::new("group");
        let shared = Arc::new(EmbeddedShared::new(EmbeddedTuning::default()));
        let mut store = SqliteStore::open(dir.db()).expect("open");
        store.set_shared(Arc::clone(&shared)).expect("attach");
        let root = store.root_id();
        let n = node(0x5, root, "v1");
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                edge_adds: vec![(root, 0x5)],
                ..CommitSet::default()
            })
            .expect("c");
        store.begin_attempt();
        let (_, v) = store.load_versioned(n.id).expect("load").expect("node");
        assert_eq!(store.load_edges(root).expect("edges"), vec![0x5]);
        let (_, root_v) = store.load_versioned(root).expect("load").expect("root");

        let mut first = n.clone();
        first.fields = set_name(&first.fields, "first");
        let mut loser = n.clone();
        loser.fields = set_name(&loser.fields, "loser");
        let batch: Vec<Arc<Pending>> = vec![
            // Writes n over the version it read.
            Arc::new(Pending::new(CommitSet {
                upserts: vec![first.clone()],
                read_versions: vec![(n.id, v)],
                ..CommitSet::default()
            })),
            // Read the same version: after the first call it is stale.
            Arc::new(Pending::new(CommitSet {
                upserts: vec![loser, node(0x6, root, "never")],
                edge_adds: vec![(root, 0x6)],
                read_versions: vec![(n.id, v)],
                ..CommitSet::default()
            })),
            // A blind append commutes with everything.
            Arc::new(Pending::new(CommitSet {
                upserts: vec![node(0x7, root, "third")],
                edge_adds: vec![(root, 0x7)],
                ..CommitSet::default()
            })),
        ];
        store.write_group(&shared, &batch);
        let outcomes: Vec<_> = batch.iter().map(|p| p.outcome().expect("set")).collect();
        assert_eq!(
            outcomes[0].as_ref().expect("first wins").as_slice(),
            [(n.id, v + 1)]
        );
        assert!(
            matches!(outcomes[1], Err(StoreError::Conflict { .. })),
            "{:?}",
            outcomes[1]
        );
        let third = outcomes[2].as_ref().expect("third commits");
        assert!(third.contains(&(root, root_v + 1)), "{third:?}");

        // The cache answers with the winners' rows, the same as SQLite.
        store.begin_attempt();
        let cached = store.load_versioned(n.id).expect("load").expect("node");
        assert_eq!(cached, (first.clone(), v + 1));
        assert_eq!(store.load_edges(root).expect("edges"), vec![0x5, 0x7]);
        assert_eq!(store.load(0x6).expect("load"), None);
        let mut plain = SqliteStore::open(dir.db()).expect("open");
        assert_eq!(plain.load_versioned(n.id).expect("load"), Some(cached));
        assert_eq!(plain.load_edges(root).expect("edges"), vec![0x5, 0x7]);
        assert_eq!(plain.version(root).expect("v"), Some(root_v + 1));

        // Another connection's write (another process) is seen at the next attempt.
        let mut theirs = first.clone();
        theirs.fields = set_name(&theirs.fields, "theirs");
        plain
            .commit(&CommitSet {
                upserts: vec![theirs.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        store.begin_attempt();
        assert_eq!(
            store.load_versioned(n.id).expect("load"),
            Some((theirs, v + 2))
        );
        let stats = shared.stats();
        assert!(stats.hits > 0 && stats.clears > 0, "{stats:?}");
    }

    /// Attempts on a store nobody writes skip the `meta.commit_seq` read once the
    /// WAL-index header is known quiet; a commit by another connection (another process)
    /// changes the header, and the next attempt checks, clears and reads it fresh.
    #[test]
    fn a_quiet_wal_index_spares_the_check_and_a_write_elsewhere_is_still_seen() {
        use crate::l1::{EmbeddedShared, EmbeddedTuning};
        use std::sync::Arc;
        let dir = TempDir::new("walindex");
        let shared = Arc::new(EmbeddedShared::new(EmbeddedTuning::default()));
        let mut store = SqliteStore::open(dir.db()).expect("open");
        store.set_shared(Arc::clone(&shared)).expect("attach");
        let root = store.root_id();
        let n = node(0x5, root, "mine");
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                edge_adds: vec![(root, 0x5)],
                ..CommitSet::default()
            })
            .expect("c");
        let mut version = 0;
        for _ in 0..5 {
            store.begin_attempt();
            let (got, v) = store.load_versioned(n.id).expect("load").expect("node");
            assert_eq!(got, n);
            version = v;
            store.end_attempt();
        }
        // The first attempt opens the WAL-index, the second finds its header quiet.
        assert_eq!(store.seq_checks(), 2, "three attempts skipped the read");
        let mut plain = SqliteStore::open(dir.db()).expect("open");
        let mut theirs = n.clone();
        theirs.fields = set_name(&theirs.fields, "theirs");
        plain
            .commit(&CommitSet {
                upserts: vec![theirs.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        store.begin_attempt();
        assert_eq!(
            store.load_versioned(n.id).expect("load"),
            Some((theirs, version + 1)),
            "the other connection's write is read, not the cached row"
        );
        store.end_attempt();
        assert_eq!(store.seq_checks(), 3);
        assert!(shared.stats().clears > 0);
        // Quiet again: the header after their commit is remembered.
        store.begin_attempt();
        store.load_versioned(n.id).expect("load");
        store.end_attempt();
        assert_eq!(store.seq_checks(), 3);
    }

    /// A commit keeps cached entries current but adds none: nodes a call creates are
    /// cached only once read, so creating many of them (root's siblings) neither grows
    /// the cache nor evicts what is read.
    #[test]
    fn created_anchors_enter_the_cache_only_when_read() {
        use crate::l1::{EmbeddedShared, EmbeddedTuning};
        use std::sync::Arc;
        let dir = TempDir::new("created");
        let shared = Arc::new(EmbeddedShared::new(EmbeddedTuning::default()));
        let mut store = SqliteStore::open(dir.db()).expect("open");
        store.set_shared(Arc::clone(&shared)).expect("attach");
        let root = store.root_id();
        store.begin_attempt();
        let (_, root_v) = store.load_versioned(root).expect("load").expect("root");
        assert_eq!(
            store.load_edges(root).expect("edges"),
            Vec::<AnchorId>::new()
        );
        assert_eq!(shared.stats().entries, 1, "root");

        let ids: Vec<AnchorId> = (0x10..0x30).collect();
        store
            .commit(&CommitSet {
                upserts: ids.iter().map(|&id| node(id, root, "sibling")).collect(),
                edge_adds: ids.iter().map(|&id| (root, id)).collect(),
                ..CommitSet::default()
            })
            .expect("commit");
        assert_eq!(shared.stats().entries, 1, "{:?}", shared.stats());
        // The cached root followed the commit: new version, list appended.
        store.begin_attempt();
        let hits = shared.stats().hits;
        let (_, v) = store.load_versioned(root).expect("load").expect("root");
        assert_eq!(v, root_v + 1);
        assert_eq!(store.load_edges(root).expect("edges"), ids);
        assert_eq!(shared.stats().hits, hits + 2);

        // A created node is read from SQLite once, then from the cache.
        let misses = shared.stats().misses;
        let first = store.load_versioned(0x10).expect("load").expect("node");
        assert_eq!(first, (node(0x10, root, "sibling"), 1));
        assert_eq!(shared.stats().misses, misses + 1);
        assert_eq!(store.load_versioned(0x10).expect("load"), Some(first));
        assert_eq!(shared.stats().entries, 2);
    }

    /// A temporary table lives and dies with its connection: it tells whether `store`
    /// still uses the connection the probe was made on.
    fn has_probe(store: &SqliteStore) -> bool {
        store
            .conn
            .query_row(
                "SELECT count(*) FROM temp.sqlite_master WHERE name = 'probe'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .expect("probe")
            == 1
    }

    #[test]
    fn a_bulk_attempt_leaves_a_fresh_connection_for_the_next() {
        use crate::l1::{EmbeddedShared, EmbeddedTuning};
        use std::sync::Arc;
        let dir = TempDir::new("recycle");
        let shared = Arc::new(EmbeddedShared::new(EmbeddedTuning::default()));
        shared
            .checkpointer_attached
            .store(true, std::sync::atomic::Ordering::Release);
        let mut store = SqliteStore::open(dir.db()).expect("open");
        store.set_shared(Arc::clone(&shared)).expect("attach");
        let root = store.root_id();
        store
            .conn
            .execute_batch("CREATE TEMP TABLE probe (x)")
            .expect("probe");

        // Small attempts keep their connection.
        for id in 0x10..0x20 {
            store.begin_attempt();
            store
                .commit(&CommitSet {
                    upserts: vec![node(id, root, "small")],
                    edge_adds: vec![(root, id)],
                    ..CommitSet::default()
                })
                .expect("commit");
            store.end_attempt();
        }
        store.begin_attempt();
        assert!(has_probe(&store), "a small attempt kept its connection");
        assert_eq!(store.recycled(), 0);

        // A bulk one (more rows than RECYCLE_ROWS) leaves a fresh one behind.
        let ids: Vec<AnchorId> = (0x1000..0x1000 + RECYCLE_ROWS as AnchorId).collect();
        store
            .commit(&CommitSet {
                upserts: ids.iter().map(|&id| node(id, root, "bulk")).collect(),
                edge_adds: ids.iter().map(|&id| (root, id)).collect(),
                ..CommitSet::default()
            })
            .expect("bulk commit");
        store.end_attempt();
        store.begin_attempt();
        assert!(
            !has_probe(&store),
            "the bulk attempt's connection was replaced"
        );
        assert_eq!(store.recycled(), 1);
        // The fresh connection is set up as the first was: no automatic checkpoints,
        // and it sees everything.
        let auto: i64 = store
            .conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .expect("pragma");
        assert_eq!(auto, 0);
        assert_eq!(
            store.load_edges(root).expect("edges").len(),
            0x10 + RECYCLE_ROWS
        );
        store.end_attempt();

        // That attempt read the long list from SQLite: it counts too.
        store.begin_attempt();
        assert_eq!(store.recycled(), 2);
        // Once the L1 cache holds the list, reading it costs the connection nothing.
        store.load_versioned(root).expect("load").expect("root");
        store.load_edges(root).expect("edges");
        store.end_attempt();
        store.begin_attempt();
        assert_eq!(
            store.recycled(),
            3,
            "the read that filled the cache counted"
        );
        store
            .conn
            .execute_batch("CREATE TEMP TABLE probe (x)")
            .expect("probe");
        assert_eq!(
            store.load_edges(root).expect("edges").len(),
            0x10 + RECYCLE_ROWS
        );
        store.end_attempt();
        store.begin_attempt();
        assert!(has_probe(&store));
        assert_eq!(store.recycled(), 3);

        // `svc run`'s store (no shared tier) never swaps its connection.
        let mut plain = SqliteStore::open(dir.db()).expect("open");
        plain
            .conn
            .execute_batch("CREATE TEMP TABLE probe (x)")
            .expect("probe");
        plain.begin_attempt();
        assert_eq!(
            plain.load_edges(root).expect("edges").len(),
            0x10 + RECYCLE_ROWS
        );
        plain.begin_attempt();
        assert!(has_probe(&plain));
    }

    #[test]
    fn a_tracker_drops_a_map_grown_by_a_bulk_run() {
        let mut tracker = VersionTracker::default();
        for id in 0..20_000u128 {
            tracker.loaded.insert(id, 1);
        }
        tracker.clear();
        assert!(tracker.loaded.is_empty());
        assert!(
            tracker.loaded.capacity() <= TRACKER_KEPT_CAPACITY,
            "capacity {} kept after a bulk run",
            tracker.loaded.capacity()
        );
        // A small map keeps its room (no allocation per run).
        for id in 0..100u128 {
            tracker.loaded.insert(id, 1);
        }
        let room = tracker.loaded.capacity();
        tracker.clear();
        assert_eq!(tracker.loaded.capacity(), room);
    }

    #[test]
    fn stale_read_version_conflicts_and_rolls_back() {
        let dir = TempDir::new("conflict");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let n = node(0x5, root, "v1");
        store
            .commit(&CommitSet {
                upserts: vec![n.clone()],
                ..CommitSet::default()
            })
            .expect("c");
        let (_, read) = store.load_versioned(n.id).expect("load").expect("node");

        // Another writer gets there first.
        let mut other = n.clone();
        other.fields = set_name(&other.fields, "theirs");
        store
            .commit(&CommitSet {
                upserts: vec![other.clone()],
                ..CommitSet::default()
            })
            .expect("c");

        let mut mine = n.clone();
        mine.fields = set_name(&mine.fields, "mine");
        let result = store.commit(&CommitSet {
            upserts: vec![mine, node(0x6, root, "new")],
            edge_adds: vec![(root, 0x99)],
            read_versions: vec![(n.id, read)],
            ..CommitSet::default()
        });
        assert!(
            matches!(result, Err(StoreError::Conflict { .. })),
            "got {result:?}"
        );
        // Nothing of the losing commit landed.
        assert_eq!(store.load(n.id).expect("load"), Some(other));
        assert_eq!(store.load(0x6).expect("load"), None);
        assert!(store.load_edges(root).expect("edges").is_empty());

        // "Read as absent" (version 0) conflicts once someone created the anchor.
        let result = store.commit(&CommitSet {
            upserts: vec![node(0x5, root, "again")],
            read_versions: vec![(n.id, 0)],
            ..CommitSet::default()
        });
        assert!(matches!(result, Err(StoreError::Conflict { .. })));
    }

    #[test]
    fn run_host_detects_concurrent_child_append() {
        let dir = TempDir::new("host");
        let mut a = RunHost::new(SqliteStore::open(dir.db()).expect("open"), false);
        let mut b = RunHost::new(SqliteStore::open(dir.db()).expect("open"), false);
        let root = a.user_root();
        assert_eq!(b.user_root(), root);
        // Two runs that traversed root (read its edge list) and then add a child: the
        // second must lose (check-then-create).
        a.load(root).expect("load");
        b.load(root).expect("load");
        let child = |id, read: bool| CommitSet {
            upserts: vec![node(id, root, "c")],
            edge_adds: vec![(root, id + 1)],
            edges_read: if read { vec![root] } else { vec![] },
            ..CommitSet::default()
        };
        a.commit(child(0x100, true)).expect("first writer wins");
        assert!(matches!(
            b.commit(child(0x200, true)),
            Err(HostError::Conflict(_))
        ));
        // Blind appends (edge list not read) commute: both land.
        a.load(root).expect("load");
        b.load(root).expect("load");
        a.commit(child(0x300, false)).expect("append");
        b.commit(child(0x400, false)).expect("append");
        assert_eq!(
            a.store.load_edges(root).expect("edges"),
            vec![0x101, 0x301, 0x401]
        );
        b.write_stdout("hello\n");
        assert_eq!(b.captured(), "hello\n");
    }

    #[test]
    fn ensure_root_creates_once_and_keeps_the_version() {
        let dir = TempDir::new("roots");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let user = random_id();
        assert!(store.ensure_root(user).expect("create"));
        assert!(!store.ensure_root(user).expect("exists"));
        assert!(
            !store
                .ensure_root(store.root_id())
                .expect("shared root exists")
        );
        assert_eq!(store.version(user).expect("version"), Some(1));
        let root = store.load(user).expect("load").expect("root");
        assert_eq!((&*root.arch_type, root.owner), ("Root", user));
        store.check_health().expect("healthy");
    }

    #[test]
    fn load_many_batches_and_skips_absent_and_corrupt() {
        let dir = TempDir::new("many");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let nodes: Vec<StoredAnchor> = (0..300u128)
            .map(|i| node(0x1000 + i, root, &format!("n{i}")))
            .collect();
        let adds = nodes
            .iter()
            .map(|n| (root, n.id))
            .chain([(0x1000, 0x9), (0x1000, 0x8)]);
        store
            .commit(&CommitSet {
                upserts: nodes.clone(),
                edge_adds: adds.collect(),
                ..CommitSet::default()
            })
            .expect("commit");
        store
            .conn
            .execute(
                "UPDATE anchors SET access = 'x' WHERE id = ?1",
                [format_id(0x1005)],
            )
            .expect("corrupt one row");

        let mut ask: Vec<AnchorId> = nodes.iter().map(|n| n.id).collect();
        ask.extend([root, 0xdead, 0x1000]); // the root, an absent id, a repeat
        let found = store.load_many_versioned(&ask).expect("load_many");
        assert_eq!(found.len(), 300, "299 good nodes plus the root");
        assert_eq!(store.count_quarantined().expect("count"), 1);
        let by_id: HashMap<AnchorId, &StoredAnchor> =
            found.iter().map(|(a, _)| (a.id, a)).collect();
        assert_eq!(store.load_edges(0x1000).expect("edges"), vec![0x9, 0x8]);
        assert_eq!(by_id[&0x1001], &nodes[1]);
        assert_eq!(store.load_edges(root).expect("edges").len(), 300);
        assert!(!by_id.contains_key(&0x1005));
    }

    #[test]
    fn id_text_matches_format_id() {
        for id in [0, 1, 0xabc, u128::MAX, random_id()] {
            assert_eq!(
                std::str::from_utf8(&IdText::new(id).0).expect("ascii"),
                format_id(id)
            );
        }
    }

    #[test]
    fn random_ids_differ() {
        let ids: HashSet<AnchorId> = (0..100).map(|_| random_id()).collect();
        assert_eq!(ids.len(), 100);
    }

    /// `cargo test --release -p actors -- --ignored --nocapture bulk` prints the time of
    /// the acceptance case: 100,000 new nodes plus 100,000 edge appends in one commit.
    #[test]
    #[ignore = "timing probe; run in release"]
    fn bulk_commit_timing() {
        let dir = TempDir::new("bulk");
        let mut store = SqliteStore::open(dir.db()).expect("open");
        let root = store.root_id();
        let mut commit = CommitSet::default();
        for _ in 0..100_000 {
            let id = random_id();
            commit.upserts.push(node(id, root, "n"));
            commit.edge_adds.push((root, random_id()));
        }
        let start = std::time::Instant::now();
        store.commit(&commit).expect("commit");
        let took = start.elapsed();
        println!("bulk commit: {took:?}");
        assert_eq!(store.load_edges(root).expect("edges").len(), 100_000);
    }
}
