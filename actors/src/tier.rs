//! `AnchorStore`: the persistent graph tier, whichever backend serves it — the embedded
//! `SqliteStore` (the zero-setup default) or the document database's `DocStore` (when a
//! `DOCDB_URI` is configured). Both keep the same contract (versions, optimistic
//! concurrency, quarantine), so the run workers, `svc run` and `svc db` hold one of these.

use crate::docstore::{Archetypes, DocStore, DocTarget, Quarantined};
use crate::store::{SqliteStore, StoreError};
use lang::host::{AnchorId, CommitSet, StoredAnchor};
use std::path::PathBuf;

/// Which backend holds the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreTarget {
    /// The embedded SQLite file.
    Embedded(PathBuf),
    /// A MongoDB-wire document database.
    Document(DocTarget),
}

impl StoreTarget {
    /// `DOCDB_URI` / `docdb_uri` wins over the embedded file when set.
    pub fn choose(shelf_db_path: PathBuf, docdb_uri: Option<&str>) -> StoreTarget {
        match docdb_uri.map(str::trim).filter(|u| !u.is_empty()) {
            Some(uri) => StoreTarget::Document(DocTarget::new(uri)),
            None => StoreTarget::Embedded(shelf_db_path),
        }
    }

    /// Read the document tier through the L2 cache `l2` (no effect on the embedded
    /// tier, whose process-wide L1 serves instead).
    pub fn with_l2(self, l2: Option<crate::l2::L2Settings>) -> StoreTarget {
        match self {
            StoreTarget::Document(mut t) => {
                t.l2 = l2;
                StoreTarget::Document(t)
            }
            embedded => embedded,
        }
    }

    /// What the startup line and logs say about it (passwords redacted; a path as the
    /// user wrote it, without a leading `./`).
    pub fn describe(&self) -> String {
        match self {
            StoreTarget::Embedded(path) => {
                let text = path.display().to_string();
                let shown = text.strip_prefix("./").unwrap_or(&text);
                format!("embedded SQLite at {shown}")
            }
            StoreTarget::Document(t) => format!("document database at {}", t.redacted()),
        }
    }
}

/// One connection to the graph tier.
#[derive(Debug)]
pub enum AnchorStore {
    Embedded(SqliteStore),
    Document(DocStore),
}

impl From<SqliteStore> for AnchorStore {
    fn from(s: SqliteStore) -> AnchorStore {
        AnchorStore::Embedded(s)
    }
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            AnchorStore::Embedded($s) => $e,
            AnchorStore::Document($s) => $e,
        }
    };
}

impl AnchorStore {
    pub fn open(target: &StoreTarget) -> Result<AnchorStore, StoreError> {
        Ok(match target {
            StoreTarget::Embedded(path) => AnchorStore::Embedded(SqliteStore::open(path)?),
            StoreTarget::Document(t) => AnchorStore::Document(DocStore::open(t)?),
        })
    }

    /// Anchors of archetypes the app does not declare (after aliases) are quarantined
    /// when read.
    pub fn set_archetypes(&mut self, archetypes: Archetypes) {
        each!(self, s => s.set_archetypes(archetypes))
    }

    pub fn add_alias(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        each!(self, s => s.add_alias(from, to))
    }

    pub fn aliases(&self) -> &std::collections::HashMap<String, String> {
        each!(self, s => s.aliases())
    }

    pub fn count_aliases(&self) -> Result<u64, StoreError> {
        each!(self, s => s.count_aliases())
    }

    pub fn quarantined(&self) -> Result<Vec<Quarantined>, StoreError> {
        each!(self, s => s.quarantined())
    }

    pub fn recover_all(&mut self) -> Result<(u64, u64), StoreError> {
        each!(self, s => s.recover_all())
    }

    pub fn census(&self) -> Result<Vec<(String, String, String, u64)>, StoreError> {
        each!(self, s => s.census())
    }

    pub fn root_id(&self) -> AnchorId {
        each!(self, s => s.root_id())
    }

    pub fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, StoreError> {
        each!(self, s => s.load(id))
    }

    pub fn load_versioned(
        &mut self,
        id: AnchorId,
    ) -> Result<Option<(StoredAnchor, u64)>, StoreError> {
        each!(self, s => s.load_versioned(id))
    }

    pub fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, StoreError> {
        each!(self, s => s.load_edges(id))
    }

    pub fn load_many_versioned(
        &mut self,
        ids: &[AnchorId],
    ) -> Result<Vec<(StoredAnchor, u64)>, StoreError> {
        each!(self, s => s.load_many_versioned(ids))
    }

    pub fn commit(&mut self, changes: &CommitSet) -> Result<Vec<(AnchorId, u64)>, StoreError> {
        each!(self, s => s.commit(changes))
    }

    /// Whether `hand_off` pipelines: the embedded tier under `svc start` with
    /// `group_commit_pipeline` above 0.
    pub fn pipelines(&self) -> bool {
        matches!(self, AnchorStore::Embedded(s) if s.pipelines())
    }

    /// Commit `changes` and give the outcome to `completion`: pipelined on the embedded
    /// tier (`SqliteStore::hand_off`, usually returning before the write), at once
    /// elsewhere.
    pub(crate) fn hand_off(&mut self, changes: CommitSet, completion: crate::l1::Completion) {
        match self {
            AnchorStore::Embedded(s) => s.hand_off(changes, completion),
            AnchorStore::Document(s) => completion(s.commit(&changes)),
        }
    }

    /// Why the last group this connection led failed as a whole, if it did.
    pub fn take_group_failure(&mut self) -> Option<String> {
        match self {
            AnchorStore::Embedded(s) => s.take_group_failure(),
            AnchorStore::Document(_) => None,
        }
    }

    pub fn version(&self, id: AnchorId) -> Result<Option<u64>, StoreError> {
        each!(self, s => s.version(id))
    }

    pub fn count_anchors(&self) -> Result<u64, StoreError> {
        each!(self, s => s.count_anchors())
    }

    pub fn count_quarantined(&self) -> Result<u64, StoreError> {
        each!(self, s => s.count_quarantined())
    }

    pub fn ensure_root(&mut self, id: AnchorId) -> Result<bool, StoreError> {
        each!(self, s => s.ensure_root(id))
    }

    pub fn check_health(&self) -> Result<(), StoreError> {
        each!(self, s => s.check_health())
    }

    /// A call attempt begins (the embedded tier re-checks its L1 cache against writes
    /// of other processes before its next read; the document tier drops what it read
    /// ahead for the last attempt).
    pub fn begin_attempt(&mut self) {
        each!(self, s => s.begin_attempt())
    }

    /// The call attempt ended (the embedded tier stops counting it as running, so a
    /// group commit's leader does not wait for it).
    pub fn end_attempt(&mut self) {
        if let AnchorStore::Embedded(s) = self {
            s.end_attempt();
        }
    }
}
