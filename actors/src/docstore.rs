//! The document-database anchor tier (service spec "Default persistence", item 2 on): the
//! graph in a MongoDB-wire database when `DOCDB_URI` / `[scale.database] docdb_uri` is
//! set, with the same operations and the same optimistic-concurrency contract as the
//! embedded `SqliteStore`, so the run workers, the supervisor and `svc db` do not care
//! which tier serves.
//!
//! Layout, in the URI's database (`svc` when the URI names none):
//! - `_anchors`: one document per node, edge or walker, `_id` = the 32-hex anchor id,
//!   stamped `arch_module`, `arch_type`, `fingerprint`, `format_version`, plus `kind`,
//!   `owner`, `access {public, roots: [[root, level]]}`, `fields` (the `has` fields as a
//!   sub-document; `fields_json` text instead when a value has no exact BSON form, e.g.
//!   an integer beyond 64 bits or a key starting with `$`), `source`/`target`/
//!   `undirected` (edges), `edges` (a node's edge ids in creation order) and `version`.
//! - `_anchors_quarantine`: documents that could not be read (corrupt, or of an archetype
//!   the app does not declare and no alias resolves), `{anchor_id, raw, reason,
//!   quarantined_at}`. Never dropped; `svc db recover-all` moves back what reads now.
//! - `_anchors_aliases`: `{_id: "old.module.Name", target: "new.module.Name"}`, merged into
//!   the store's alias map on every connect.
//! - `_anchors_meta`: `{_id: "store", root_id, format_version}`.
//!
//! A commit is one multi-document transaction: every read version is checked inside it,
//! writes bump `version`, and a concurrent transaction touching the same documents makes
//! one of the two fail with a write conflict, which is reported as `StoreError::Conflict`
//! (the run is replayed). Versions of anchors the run only read are checked by a read in
//! the transaction's snapshot.
//!
//! The `mongodb` client is async; the run workers are plain threads. Each operation is
//! spawned on the tier's own small tokio runtime (`svc-docdb`) and its caller waits for
//! the answer with a deadline (`OP_TIMEOUT`), as the kvstore service does. A
//! `mongodb::Client` is a pool: every worker's `DocStore` shares one per URI.

use crate::bson_json;
use crate::l2::{Cached, L2, L2Settings, Observed};
use crate::store::{FORMAT_VERSION, StoreError, random_id, root_anchor, unix_seconds};
use futures_util::TryStreamExt as _;
use lang::host::{
    AccessPolicy, AnchorId, AnchorKind, CommitSet, EdgeEnds, StoredAnchor, format_id, parse_id,
};
use mongodb::bson::{Bson, Document, doc};
use serde_json::{Map, Value as Json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};
use std::time::Duration;

/// Longest wait for one operation (a commit's whole transaction included).
pub const OP_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait for a server to answer at all (server selection, connecting).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default database when the URI names none.
pub const DEFAULT_DATABASE: &str = "svc";
/// The anchor collection (the default `col_name` of `kvstore(...).find_nodes`, so svc
/// code can query the graph's nodes); its companions are `<collection>_quarantine`,
/// `_aliases`, `_meta`.
pub const COLLECTION: &str = "_anchors";
/// Ids per `$in` query of `load_many_versioned`.
const LOAD_CHUNK: usize = 256;
/// A node's edge list comes with the node when it has at most this many edges (one
/// round trip per hop of a traversal instead of two); a longer one is loaded on demand.
const INLINE_EDGES: usize = 64;
/// Edge documents read ahead (with their node) and not yet used, at most; beyond, the
/// oldest reads are dropped (they are read again when needed).
const AHEAD_MAX: usize = 4096;
/// Retries of a commit whose outcome is unknown.
const COMMIT_RETRIES: u32 = 4;
/// Deepest `fields` value stored as a sub-document (deeper ones are kept as text).
const MAX_BSON_DEPTH: usize = 64;

/// Where the document tier lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocTarget {
    pub uri: String,
    /// The L2 cache in the cache store (`crate::l2`), when configured.
    pub l2: Option<L2Settings>,
}

impl DocTarget {
    pub fn new(uri: impl Into<String>) -> DocTarget {
        DocTarget {
            uri: uri.into(),
            l2: None,
        }
    }

    /// The URI with any password replaced, for logs and startup output.
    pub fn redacted(&self) -> String {
        redact(&self.uri)
    }
}

/// `mongodb://user:secret@host/db` → `mongodb://user:***@host/db`.
pub fn redact(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://") else {
        return uri.to_string();
    };
    let rest = &uri[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            let creds = &authority[..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{}:***@{}", &uri[..scheme_end + 3], user, &rest[at + 1..])
        }
        None => uri.to_string(),
    }
}

/// The tier's runtime and one client per URI.
struct Tier {
    runtime: Option<tokio::runtime::Runtime>,
    clients: Mutex<HashMap<String, mongodb::Client>>,
}

fn tier() -> &'static Tier {
    static TIER: OnceLock<Tier> = OnceLock::new();
    TIER.get_or_init(|| Tier {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("svc-docdb")
            .enable_all()
            .build()
            .ok(),
        clients: Mutex::new(HashMap::new()),
    })
}

/// Run `fut` on the tier's runtime and wait for it (at most `OP_TIMEOUT`).
pub(crate) fn block<T, F>(fut: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
{
    let Some(runtime) = tier().runtime.as_ref() else {
        return Err(StoreError::Doc(
            "cannot start the document database runtime".into(),
        ));
    };
    let (tx, rx) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(fut.await);
    });
    match rx.recv_timeout(OP_TIMEOUT) {
        Ok(answer) => answer,
        Err(_) => Err(StoreError::Unreachable(format!(
            "the document database did not answer within {} s",
            OP_TIMEOUT.as_secs()
        ))),
    }
}

pub(crate) fn client_for(uri: &str) -> Result<mongodb::Client, StoreError> {
    if let Some(c) = tier()
        .clients
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(uri)
    {
        return Ok(c.clone());
    }
    let owned = uri.to_string();
    let client = block(async move {
        let mut options = mongodb::options::ClientOptions::parse(&owned)
            .await
            .map_err(|e| StoreError::Doc(format!("bad document database URI: {e}")))?;
        options.connect_timeout = Some(CONNECT_TIMEOUT);
        options.server_selection_timeout = Some(CONNECT_TIMEOUT);
        options.app_name = Some("svc".into());
        mongodb::Client::with_options(options)
            .map_err(|e| StoreError::Doc(format!("bad document database URI: {e}")))
    })?;
    tier()
        .clients
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(uri.to_string(), client.clone());
    Ok(client)
}

/// A driver error as a store error: write conflicts are `Conflict` (replayable),
/// unreachable servers `Unreachable`.
fn failure(e: mongodb::error::Error, id: &str) -> StoreError {
    use mongodb::error::ErrorKind as K;
    let conflict = matches!(&*e.kind, K::Command(c) if c.code == 112)
        || e.contains_label(mongodb::error::TRANSIENT_TRANSACTION_ERROR);
    if conflict {
        return StoreError::Conflict {
            id: id.to_string(),
            read: 0,
            stored: 0,
        };
    }
    match &*e.kind {
        K::ServerSelection { .. } | K::Io(_) | K::ConnectionPoolCleared { .. } => {
            StoreError::Unreachable(format!("cannot reach the document database: {e}"))
        }
        _ => StoreError::Doc(e.to_string()),
    }
}

fn db_failure(e: mongodb::error::Error) -> StoreError {
    failure(e, "")
}

/// The collections of one store.
#[derive(Clone)]
struct Collections {
    anchors: mongodb::Collection<Document>,
    quarantine: mongodb::Collection<Document>,
    aliases: mongodb::Collection<Document>,
    meta: mongodb::Collection<Document>,
}

/// Archetype names the app declares, and the rename aliases: what decides whether a
/// stored document can be read (`None` = accept every archetype).
#[derive(Clone, Debug, Default)]
pub struct Archetypes {
    /// `Name` of every archetype the app declares (the interpreter resolves by name).
    pub known: Option<Arc<HashSet<String>>>,
}

/// The document tier over one database. Cheap to clone (the client is a pool).
#[derive(Clone)]
pub struct DocStore {
    client: mongodb::Client,
    cols: Collections,
    root: AnchorId,
    target: DocTarget,
    database: String,
    aliases: Arc<HashMap<String, String>>,
    archetypes: Archetypes,
    /// The L2 cache (`crate::l2`) and this store's space in it (its root id).
    l2: Option<Arc<L2>>,
    space: String,
    /// Edge documents read with their node by a single load (`$lookup`), so the hop
    /// that follows costs one round trip, not two. Each is used once, by a load in the
    /// same call attempt (cleared by `begin_attempt` and by a commit).
    ahead: HashMap<AnchorId, Document>,
}

impl std::fmt::Debug for DocStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocStore")
            .field("uri", &self.target.redacted())
            .field("database", &self.database)
            .field("root", &format_id(self.root))
            .finish_non_exhaustive()
    }
}

impl DocStore {
    /// Connect, create the meta document and the shared root on first use (two replicas
    /// starting at once agree on one root), and read the aliases.
    pub fn open(target: &DocTarget) -> Result<DocStore, StoreError> {
        if !(target.uri.starts_with("mongodb://") || target.uri.starts_with("mongodb+srv://")) {
            return Err(StoreError::Doc(format!(
                "a document database URI starts with mongodb:// or mongodb+srv:// (got {})",
                target.redacted()
            )));
        }
        let client = client_for(&target.uri)?;
        let database = client
            .default_database()
            .map(|d| d.name().to_string())
            .unwrap_or_else(|| DEFAULT_DATABASE.to_string());
        let db = client.database(&database);
        let cols = Collections {
            anchors: db.collection(COLLECTION),
            quarantine: db.collection(&format!("{COLLECTION}_quarantine")),
            aliases: db.collection(&format!("{COLLECTION}_aliases")),
            meta: db.collection(&format!("{COLLECTION}_meta")),
        };
        let c = cols.clone();
        let root = block(async move {
            let proposed = random_id();
            // Upsert with $setOnInsert: whoever inserts first wins, everyone reads it.
            c.meta
                .update_one(
                    doc! {"_id": "store"},
                    doc! {"$setOnInsert": {
                        "root_id": format_id(proposed),
                        "format_version": FORMAT_VERSION,
                    }},
                )
                .upsert(true)
                .await
                .map_err(db_failure)?;
            let meta = c
                .meta
                .find_one(doc! {"_id": "store"})
                .await
                .map_err(db_failure)?
                .ok_or_else(|| StoreError::Meta("the store's meta document vanished".into()))?;
            let found = int(meta.get("format_version")).unwrap_or(0);
            if found > FORMAT_VERSION {
                return Err(StoreError::FormatVersion {
                    found,
                    supported: FORMAT_VERSION,
                });
            }
            let root = meta
                .get_str("root_id")
                .ok()
                .and_then(parse_id)
                .ok_or_else(|| StoreError::Meta(format!("root_id in {meta}")))?;
            let root_doc = anchor_doc(&root_anchor(root), 1);
            c.anchors
                .update_one(
                    doc! {"_id": format_id(root)},
                    doc! {"$setOnInsert": root_doc},
                )
                .upsert(true)
                .await
                .map_err(db_failure)?;
            Ok(root)
        })?;
        let mut store = DocStore {
            client,
            cols,
            root,
            target: target.clone(),
            database,
            aliases: Arc::new(HashMap::new()),
            archetypes: Archetypes::default(),
            l2: None,
            space: format_id(root),
            ahead: HashMap::new(),
        };
        if let Some(settings) = &target.l2 {
            match crate::l2::shared(settings) {
                Ok(l2) => store.l2 = Some(l2),
                Err(e) => tracing::warn!(target: "svc::cache", "L2 cache: off ({e})"),
            }
        }
        store.reload_aliases()?;
        Ok(store)
    }

    /// A call attempt begins: what was read ahead for the last one is dropped.
    pub fn begin_attempt(&mut self) {
        self.ahead.clear();
    }

    /// An edge document read ahead for this attempt, decoded (used once).
    fn take_ahead(&mut self, id: AnchorId) -> Option<(StoredAnchor, u64)> {
        let raw = self.ahead.remove(&id)?;
        self.decode(&raw).ok()
    }

    /// One anchor as a load reads it, with its inline edges' documents (one `$lookup`
    /// in the same round trip) kept in `ahead` for the hop that follows.
    fn find_with_edges(&mut self, id: AnchorId) -> Result<Option<Document>, StoreError> {
        let anchors = self.cols.anchors.clone();
        let key = format_id(id);
        let pipeline = vec![
            doc! {"$match": {"_id": key}},
            doc! {"$addFields": {"edges": {"$cond": [
                {"$isArray": "$edges"},
                {"$slice": ["$edges", (INLINE_EDGES + 1) as i64]},
                "$$REMOVE",
            ]}}},
            doc! {"$lookup": {
                "from": COLLECTION,
                "localField": "edges",
                "foreignField": "_id",
                "as": AHEAD_FIELD,
            }},
        ];
        let found = block(async move {
            let mut cursor = anchors.aggregate(pipeline).await.map_err(db_failure)?;
            cursor.try_next().await.map_err(db_failure)
        })?;
        let Some(mut raw) = found else {
            return Ok(None);
        };
        if let Ok(edges) = raw.get_array_mut(AHEAD_FIELD) {
            let read: Vec<Bson> = std::mem::take(edges);
            if self.ahead.len() + read.len() > AHEAD_MAX {
                self.ahead.clear();
            }
            for e in read {
                if let Bson::Document(d) = e
                    && let Some(eid) = d.get_str("_id").ok().and_then(parse_id)
                {
                    self.ahead.insert(eid, d);
                }
            }
        }
        raw.remove(AHEAD_FIELD);
        Ok(Some(raw))
    }

    /// The L2 cache this store reads through, if any.
    pub fn l2(&self) -> Option<&Arc<L2>> {
        self.l2.as_ref()
    }

    /// Look `ids` up in L2 (`None`: no L2, or it is off).
    fn l2_read(&self, ids: &[AnchorId]) -> Option<(Observed, Vec<Option<Cached>>)> {
        self.l2.as_ref()?.read(&self.space, ids)
    }

    /// Decode a cached document; `None` (read L3 instead) when it does not read, so a
    /// document that must be quarantined is quarantined from its L3 copy.
    fn decode_cached(&self, bytes: &[u8]) -> Option<(StoredAnchor, u64)> {
        let raw = Document::from_reader(bytes).ok()?;
        self.decode(&raw).ok()
    }

    /// Write L3 reads back into L2 after a lookup missed.
    fn l2_fill(&self, observed: Option<&Observed>, entries: &[(AnchorId, Cached)]) {
        if let (Some(l2), Some(observed)) = (&self.l2, observed) {
            l2.fill(&self.space, observed, entries);
        }
    }

    /// Read `<collection>_aliases` into the alias map (done on every connect).
    pub fn reload_aliases(&mut self) -> Result<(), StoreError> {
        let aliases = self.cols.aliases.clone();
        let map = block(async move {
            let docs: Vec<Document> = aliases
                .find(doc! {})
                .await
                .map_err(db_failure)?
                .try_collect()
                .await
                .map_err(db_failure)?;
            let mut map = HashMap::new();
            for d in docs {
                if let (Ok(from), Ok(to)) = (d.get_str("_id"), d.get_str("target")) {
                    map.insert(from.to_string(), to.to_string());
                }
            }
            Ok(map)
        })?;
        self.aliases = Arc::new(map);
        Ok(())
    }

    /// Set which archetypes the app declares: documents of any other archetype (after
    /// aliases) are quarantined when read.
    pub fn set_archetypes(&mut self, archetypes: Archetypes) {
        self.archetypes = archetypes;
    }

    pub fn root_id(&self) -> AnchorId {
        self.root
    }

    pub fn aliases(&self) -> &HashMap<String, String> {
        &self.aliases
    }

    pub fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, StoreError> {
        Ok(self.load_versioned(id)?.map(|(a, _)| a))
    }

    /// One anchor document with `projection` applied.
    fn find_anchor(
        &self,
        id: AnchorId,
        projection: Document,
    ) -> Result<Option<Document>, StoreError> {
        let anchors = self.cols.anchors.clone();
        let key = format_id(id);
        block(async move {
            anchors
                .find_one(doc! {"_id": key})
                .projection(projection)
                .await
                .map_err(db_failure)
        })
    }

    pub fn load_versioned(
        &mut self,
        id: AnchorId,
    ) -> Result<Option<(StoredAnchor, u64)>, StoreError> {
        if let Some(found) = self.take_ahead(id) {
            return Ok(Some(found));
        }
        let cached = self.l2_read(&[id]);
        if let Some((_, slots)) = &cached
            && let Some(Some((_, bytes))) = slots.first()
            && let Some(found) = self.decode_cached(bytes)
        {
            return Ok(Some(found));
        }
        let Some(raw) = self.find_with_edges(id)? else {
            return Ok(None);
        };
        match self.decode(&raw) {
            Ok(found) => {
                if let Some((observed, _)) = &cached
                    && let Ok(bytes) = raw.to_vec()
                {
                    self.l2_fill(Some(observed), &[(id, (found.1, bytes))]);
                }
                Ok(Some(found))
            }
            Err(reason) => {
                self.quarantine(raw, &reason)?;
                Ok(None)
            }
        }
    }

    pub fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, StoreError> {
        let found = self.find_anchor(id, doc! {"edges": 1})?;
        Ok(found
            .as_ref()
            .and_then(|d| d.get_array("edges").ok())
            .map(|edges| edge_ids(edges))
            .unwrap_or_default())
    }

    pub fn load_many_versioned(
        &mut self,
        ids: &[AnchorId],
    ) -> Result<Vec<(StoredAnchor, u64)>, StoreError> {
        let mut seen = HashSet::with_capacity(ids.len());
        let mut out = Vec::with_capacity(ids.len());
        let mut unique: Vec<AnchorId> = Vec::with_capacity(ids.len());
        for &id in ids {
            if seen.insert(id) {
                match self.take_ahead(id) {
                    Some(found) => out.push(found),
                    None => unique.push(id),
                }
            }
        }
        // L2 first (one MGET per 256 ids); what it misses goes to L3.
        let cached = self.l2_read(&unique);
        let missing: Vec<AnchorId> = match &cached {
            Some((_, slots)) => {
                let mut missing = Vec::new();
                for (id, slot) in unique.iter().zip(slots) {
                    match slot.as_ref().and_then(|(_, b)| self.decode_cached(b)) {
                        Some(found) => out.push(found),
                        None => missing.push(*id),
                    }
                }
                missing
            }
            None => unique,
        };
        let mut fills: Vec<(AnchorId, Cached)> = Vec::new();
        for chunk in missing.chunks(LOAD_CHUNK) {
            let anchors = self.cols.anchors.clone();
            let chunk: Vec<Bson> = chunk
                .iter()
                .map(|id| Bson::String(format_id(*id)))
                .collect();
            let docs = block(async move {
                anchors
                    .find(doc! {"_id": {"$in": chunk}})
                    .projection(inline_edges())
                    .await
                    .map_err(db_failure)?
                    .try_collect::<Vec<Document>>()
                    .await
                    .map_err(db_failure)
            })?;
            for raw in docs {
                match self.decode(&raw) {
                    Ok(found) => {
                        if cached.is_some()
                            && let Ok(bytes) = raw.to_vec()
                        {
                            fills.push((found.0.id, (found.1, bytes)));
                        }
                        out.push(found);
                    }
                    Err(reason) => self.quarantine(raw, &reason)?,
                }
            }
        }
        self.l2_fill(cached.as_ref().map(|(o, _)| o), &fills);
        Ok(out)
    }

    /// Decode one anchor document (aliases applied, archetype checked).
    fn decode(&self, raw: &Document) -> Result<(StoredAnchor, u64), String> {
        let (mut anchor, version) = decode_anchor(raw)?;
        resolve_archetype(&mut anchor, &self.aliases, &self.archetypes)?;
        if anchor.kind == AnchorKind::Node
            && let Ok(edges) = raw.get_array("edges")
            && edges.len() <= INLINE_EDGES
        {
            anchor.edges = Some(edge_ids(edges));
        }
        Ok((anchor, version))
    }

    /// Move one unreadable document to the quarantine collection.
    fn quarantine(&mut self, raw: Document, reason: &str) -> Result<(), StoreError> {
        let cols = self.cols.clone();
        let key = raw.get("_id").cloned().unwrap_or(Bson::Null);
        let reason = reason.to_string();
        tracing::warn!(anchor = %key, "quarantined an unreadable anchor document: {reason}");
        let client = self.client.clone();
        let id = match &key {
            Bson::String(k) => parse_id(k),
            _ => None,
        };
        block(async move {
            let mut session = client.start_session().await.map_err(db_failure)?;
            session.start_transaction().await.map_err(db_failure)?;
            // The whole document (loads leave most of a node's edge list out), so a
            // recovered node gets all its edges back.
            let whole = cols
                .anchors
                .find_one(doc! {"_id": key.clone()})
                .session(&mut session)
                .await
                .map_err(db_failure)?;
            let Some(raw) = whole.or(Some(raw)) else {
                return Ok(());
            };
            cols.quarantine
                .insert_one(doc! {
                    "anchor_id": key.clone(),
                    "raw": raw,
                    "reason": reason,
                    "quarantined_at": unix_seconds() as i64,
                })
                .session(&mut session)
                .await
                .map_err(db_failure)?;
            cols.anchors
                .delete_one(doc! {"_id": key})
                .session(&mut session)
                .await
                .map_err(db_failure)?;
            commit_surely(&mut session).await
        })?;
        // Gone from L3: a tombstone, so no reader puts the unreadable copy back in L2.
        if let (Some(l2), Some(id)) = (&self.l2, id) {
            l2.update(&self.space, &[], &[id]);
        }
        Ok(())
    }

    /// Apply one run's changes in one transaction; see the module docs. Returns the
    /// version of each written or re-linked anchor afterwards.
    pub fn commit(&mut self, changes: &CommitSet) -> Result<Vec<(AnchorId, u64)>, StoreError> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        self.ahead.clear();
        let changes = changes.clone();
        let anchors = self.cols.anchors.clone();
        let client = self.client.clone();
        let want_docs = self.l2.as_ref().is_some_and(|l2| !l2.is_down());
        let deleted = changes.deletes.clone();
        let done =
            block(async move { commit_in_transaction(client, anchors, changes, want_docs).await })?;
        // Reflect the commit in L2 before the call is answered (one round trip). With L2
        // off now, `update` marks the store for a new generation on reconnect.
        if let Some(l2) = &self.l2 {
            let entries: Vec<(AnchorId, Cached)> = done
                .docs
                .iter()
                .filter_map(|d| {
                    let id = d.get_str("_id").ok().and_then(parse_id)?;
                    let version = int(d.get("version"))?;
                    Some((id, (version.max(1) as u64, d.to_vec().ok()?)))
                })
                .collect();
            if entries.len() == done.docs.len() || !want_docs {
                l2.update(&self.space, &entries, &deleted);
            } else {
                // A document that does not encode: its old entry must not stay readable.
                l2.invalidate_all(&self.space);
            }
        }
        Ok(done.versions)
    }

    pub fn version(&self, id: AnchorId) -> Result<Option<u64>, StoreError> {
        let found = self.find_anchor(id, doc! {"version": 1})?;
        Ok(found
            .and_then(|d| int(d.get("version")))
            .map(|v| v.max(0) as u64))
    }

    pub fn count_anchors(&self) -> Result<u64, StoreError> {
        count(self.cols.anchors.clone())
    }

    pub fn count_quarantined(&self) -> Result<u64, StoreError> {
        count(self.cols.quarantine.clone())
    }

    pub fn count_aliases(&self) -> Result<u64, StoreError> {
        count(self.cols.aliases.clone())
    }

    /// Create root `id` if absent; `true` when this call created it.
    pub fn ensure_root(&mut self, id: AnchorId) -> Result<bool, StoreError> {
        let anchors = self.cols.anchors.clone();
        let root_doc = anchor_doc(&root_anchor(id), 1);
        block(async move {
            let r = anchors
                .update_one(doc! {"_id": format_id(id)}, doc! {"$setOnInsert": root_doc})
                .upsert(true)
                .await
                .map_err(db_failure)?;
            Ok(r.upserted_id.is_some())
        })
    }

    /// A cheap liveness probe: the meta document still names this store's root.
    pub fn check_health(&self) -> Result<(), StoreError> {
        let meta = self.cols.meta.clone();
        let root = self.root;
        block(async move {
            let found = meta
                .find_one(doc! {"_id": "store"})
                .await
                .map_err(db_failure)?;
            match found.as_ref().and_then(|d| d.get_str("root_id").ok()) {
                Some(text) if parse_id(text) == Some(root) => Ok(()),
                other => Err(StoreError::Meta(format!("root_id changed to {other:?}"))),
            }
        })
    }

    /// Register `from` → `to` (both `module.Name`) in `<collection>_aliases`.
    pub fn add_alias(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        let aliases = self.cols.aliases.clone();
        let (from, to) = (from.to_string(), to.to_string());
        block(async move {
            aliases
                .update_one(doc! {"_id": &from}, doc! {"$set": {"target": &to}})
                .upsert(true)
                .await
                .map_err(db_failure)?;
            Ok(())
        })?;
        // Documents read under the old aliases may have been cached: start over.
        if let Some(l2) = &self.l2 {
            l2.invalidate_all(&self.space);
        }
        self.reload_aliases()
    }

    /// Quarantined entries: `(entry id, anchor id, reason, quarantined_at)`.
    pub fn quarantined(&self) -> Result<Vec<Quarantined>, StoreError> {
        let quarantine = self.cols.quarantine.clone();
        let docs = block(async move {
            quarantine
                .find(doc! {})
                .sort(doc! {"quarantined_at": 1})
                .await
                .map_err(db_failure)?
                .try_collect::<Vec<Document>>()
                .await
                .map_err(db_failure)
        })?;
        Ok(docs.iter().map(quarantined_entry).collect())
    }

    /// Move every quarantined document that reads now (after aliases) back; returns
    /// `(recovered, total)`.
    pub fn recover_all(&mut self) -> Result<(u64, u64), StoreError> {
        let quarantine = self.cols.quarantine.clone();
        let docs = block(async move {
            quarantine
                .find(doc! {})
                .await
                .map_err(db_failure)?
                .try_collect::<Vec<Document>>()
                .await
                .map_err(db_failure)
        })?;
        let total = docs.len() as u64;
        let mut recovered = 0;
        for entry in docs {
            let Ok(raw) = entry.get_document("raw") else {
                continue;
            };
            if self.decode(raw).is_err() {
                continue;
            }
            let cols = self.cols.clone();
            let client = self.client.clone();
            let raw = raw.clone();
            let entry_id = entry.get("_id").cloned().unwrap_or(Bson::Null);
            block(async move {
                let mut session = client.start_session().await.map_err(db_failure)?;
                session.start_transaction().await.map_err(db_failure)?;
                let key = raw.get("_id").cloned().unwrap_or(Bson::Null);
                cols.anchors
                    .replace_one(doc! {"_id": key}, raw)
                    .upsert(true)
                    .session(&mut session)
                    .await
                    .map_err(db_failure)?;
                cols.quarantine
                    .delete_one(doc! {"_id": entry_id})
                    .session(&mut session)
                    .await
                    .map_err(db_failure)?;
                commit_surely(&mut session).await
            })?;
            recovered += 1;
        }
        // Recovered documents come back at their old versions, under tombstones: a new
        // generation makes every L2 entry of this store unreadable.
        if recovered > 0
            && let Some(l2) = &self.l2
        {
            l2.invalidate_all(&self.space);
        }
        Ok((recovered, total))
    }

    /// Anchor counts per `(kind, arch_module, arch_type)`.
    pub fn census(&self) -> Result<Vec<(String, String, String, u64)>, StoreError> {
        let anchors = self.cols.anchors.clone();
        let docs = block(async move {
            anchors
                .aggregate(vec![doc! {"$group": {
                    "_id": {"kind": "$kind", "m": "$arch_module", "t": "$arch_type"},
                    "n": {"$sum": 1},
                }}])
                .await
                .map_err(db_failure)?
                .try_collect::<Vec<Document>>()
                .await
                .map_err(db_failure)
        })?;
        let mut out: Vec<(String, String, String, u64)> = docs
            .iter()
            .map(|d| {
                let key = d.get_document("_id").ok();
                let s = |k: &str| {
                    key.and_then(|g| g.get_str(k).ok())
                        .unwrap_or("")
                        .to_string()
                };
                (
                    s("kind"),
                    s("m"),
                    s("t"),
                    int(d.get("n")).unwrap_or(0).max(0) as u64,
                )
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

/// One quarantined entry as `svc db quarantine` shows it.
#[derive(Clone, Debug)]
pub struct Quarantined {
    pub entry: String,
    pub anchor: String,
    pub reason: String,
    pub quarantined_at: i64,
    pub raw: Json,
}

fn quarantined_entry(d: &Document) -> Quarantined {
    let entry = match d.get("_id") {
        Some(Bson::ObjectId(o)) => o.to_hex(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Quarantined {
        entry,
        anchor: match d.get("anchor_id") {
            Some(Bson::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        reason: d.get_str("reason").unwrap_or("").to_string(),
        quarantined_at: int(d.get("quarantined_at")).unwrap_or(0),
        raw: d
            .get_document("raw")
            .map(|d| {
                bson_json::doc_json(d, bson_json::MAX_DEPTH).map_or_else(
                    |_| {
                        Json::String(format!(
                            "(nested more than {} levels deep)",
                            bson_json::MAX_DEPTH
                        ))
                    },
                    Json::Object,
                )
            })
            .unwrap_or(Json::Null),
    }
}

fn count(col: mongodb::Collection<Document>) -> Result<u64, StoreError> {
    block(async move { col.count_documents(doc! {}).await.map_err(db_failure) })
}

/// What a committed transaction produced: the version of each written or re-linked
/// anchor, and (when asked for, for L2) each one's document as a load would read it.
struct CommitDone {
    versions: Vec<(AnchorId, u64)>,
    docs: Vec<Document>,
}

async fn commit_in_transaction(
    client: mongodb::Client,
    anchors: mongodb::Collection<Document>,
    changes: CommitSet,
    want_docs: bool,
) -> Result<CommitDone, StoreError> {
    use mongodb::options::ReturnDocument;
    let mut session = client.start_session().await.map_err(db_failure)?;
    session.start_transaction().await.map_err(db_failure)?;

    // Check every read version (0 = read as absent) in the transaction's snapshot.
    let mut stored: HashMap<AnchorId, u64> = HashMap::new();
    for chunk in changes.read_versions.chunks(LOAD_CHUNK) {
        let keys: Vec<Bson> = chunk
            .iter()
            .map(|(id, _)| Bson::String(format_id(*id)))
            .collect();
        let mut cursor = anchors
            .find(doc! {"_id": {"$in": keys}})
            .projection(doc! {"version": 1})
            .session(&mut session)
            .await
            .map_err(db_failure)?;
        while let Some(d) = cursor.next(&mut session).await {
            let d = d.map_err(db_failure)?;
            if let (Some(id), Some(v)) = (
                d.get_str("_id").ok().and_then(parse_id),
                int(d.get("version")),
            ) {
                stored.insert(id, v.max(0) as u64);
            }
        }
    }
    for &(id, read) in &changes.read_versions {
        let now = stored.get(&id).copied().unwrap_or(0);
        if now != read {
            return Err(StoreError::Conflict {
                id: format_id(id),
                read,
                stored: now,
            });
        }
    }
    let read: HashMap<AnchorId, u64> = changes.read_versions.iter().copied().collect();
    let deleted: HashSet<AnchorId> = changes.deletes.iter().copied().collect();

    // Edge list changes, grouped by node (each node bumped once), in first-seen order.
    let mut order: Vec<AnchorId> = Vec::new();
    let mut relinks: HashMap<AnchorId, (Vec<Bson>, Vec<Bson>)> = HashMap::new();
    let appends = changes.edge_adds.iter().map(|p| (p, true));
    let removals = changes.edge_removes.iter().map(|p| (p, false));
    for (&(node, edge), add) in appends.chain(removals) {
        if deleted.contains(&node) {
            continue;
        }
        let (adds, removes) = relinks.entry(node).or_insert_with(|| {
            order.push(node);
            Default::default()
        });
        let list = if add { adds } else { removes };
        list.push(Bson::String(format_id(edge)));
    }

    // The projection of what a statement hands back: the document as a load reads it
    // (for L2), else only its version.
    let returned = || {
        if want_docs {
            inline_edges()
        } else {
            doc! {"version": 1}
        }
    };
    let mut docs: HashMap<AnchorId, Document> = HashMap::new();

    // Upserts: the last write of an id wins; the version goes up once per write. A node
    // written and only appended to takes its appends in the same statement.
    let mut writes: HashMap<AnchorId, u64> = HashMap::new();
    let mut last: HashMap<AnchorId, &StoredAnchor> = HashMap::new();
    for a in &changes.upserts {
        *writes.entry(a.id).or_insert(0) += 1;
        last.insert(a.id, a);
    }
    let mut upsert_order: Vec<AnchorId> = last.keys().copied().collect();
    // Id order: deterministic statements (and lock order across rival transactions).
    upsert_order.sort_unstable();
    for id in upsert_order {
        let anchor = last[&id];
        let key = format_id(id);
        let n = writes.get(&id).copied().unwrap_or(1) as i64;
        let mut set = anchor_doc(anchor, 0);
        set.remove("version");
        set.remove("edges");
        let mut update = doc! {"$set": set, "$inc": {"version": n}};
        let appends_only = relinks
            .get(&id)
            .filter(|(adds, removes)| !adds.is_empty() && removes.is_empty())
            .is_some();
        if appends_only && let Some((adds, _)) = relinks.remove(&id) {
            // `$push` creates the list on insert.
            update.insert("$push", doc! {"edges": {"$each": adds}});
        } else if anchor.kind == AnchorKind::Node {
            update.insert("$setOnInsert", doc! {"edges": []});
        }
        let written = anchors
            .find_one_and_update(doc! {"_id": &key}, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .projection(returned())
            .session(&mut session)
            .await
            .map_err(|e| failure(e, &key))?;
        if want_docs && let Some(d) = written {
            docs.insert(id, d);
        }
    }

    let mut after: Vec<(AnchorId, u64)> = Vec::new();
    for node in order {
        let Some((adds, removes)) = relinks.remove(&node) else {
            continue;
        };
        let key = format_id(node);
        let mut update = Document::new();
        if !adds.is_empty() {
            update.insert("$push", doc! {"edges": {"$each": adds}});
        }
        if !removes.is_empty() {
            // $push and $pull on one array cannot share an update.
            if update.contains_key("$push") {
                anchors
                    .update_one(
                        doc! {"_id": &key},
                        doc! {"$pull": {"edges": {"$in": removes}}},
                    )
                    .session(&mut session)
                    .await
                    .map_err(|e| failure(e, &key))?;
            } else {
                update.insert("$pull", doc! {"edges": {"$in": removes}});
            }
        }
        let bump = !writes.contains_key(&node);
        if bump {
            update.insert("$inc", doc! {"version": 1});
        }
        let now = anchors
            .find_one_and_update(doc! {"_id": &key}, update)
            .return_document(ReturnDocument::After)
            .projection(returned())
            .session(&mut session)
            .await
            .map_err(|e| failure(e, &key))?;
        if bump && let Some(v) = now.as_ref().and_then(|d| int(d.get("version"))) {
            after.push((node, v.max(0) as u64));
        }
        if want_docs && let Some(d) = now {
            docs.insert(node, d);
        }
    }
    for (&id, &n) in &writes {
        if !deleted.contains(&id) {
            after.push((id, read.get(&id).copied().unwrap_or(0) + n));
        }
    }

    if !changes.deletes.is_empty() {
        let keys: Vec<Bson> = changes
            .deletes
            .iter()
            .map(|id| Bson::String(format_id(*id)))
            .collect();
        anchors
            .delete_many(doc! {"_id": {"$in": keys}})
            .session(&mut session)
            .await
            .map_err(db_failure)?;
    }
    commit_surely(&mut session).await?;
    let docs = docs
        .into_iter()
        .filter(|(id, _)| !deleted.contains(id))
        .map(|(_, d)| d)
        .collect();
    Ok(CommitDone {
        versions: after,
        docs,
    })
}

/// Apply a rename alias (`module.Name` or a bare `Name` as key, `module.Name` as
/// target) to a stored anchor, then check the app declares its archetype. `Err` = the
/// reason to quarantine it.
pub(crate) fn resolve_archetype(
    anchor: &mut StoredAnchor,
    aliases: &HashMap<String, String>,
    archetypes: &Archetypes,
) -> Result<(), String> {
    if !aliases.is_empty() {
        let qualified = format!("{}.{}", anchor.arch_module, anchor.arch_type);
        let renamed = aliases
            .get(&qualified)
            .or_else(|| aliases.get(&*anchor.arch_type));
        if let Some(to) = renamed {
            let (module, name) = match to.rsplit_once('.') {
                Some((m, n)) => (m.to_string(), n.to_string()),
                None => (anchor.arch_module.to_string(), to.clone()),
            };
            anchor.arch_module = module.into();
            anchor.arch_type = name.into();
        }
    }
    if let Some(known) = &archetypes.known
        && !is_builtin_type(&anchor.arch_type)
        && !known.contains(&*anchor.arch_type)
    {
        return Err(format!(
            "archetype {}.{} is not declared by the app (rename it back, or register the \
             new name with `svc db alias add`, then `svc db recover-all`)",
            anchor.arch_module, anchor.arch_type
        ));
    }
    Ok(())
}

/// Commit the session's transaction. When the outcome is unknown (the connection broke
/// after the commit was sent) the commit is retried, as the protocol allows, until it is
/// known: treating it as a conflict would replay a call that may have committed.
async fn commit_surely(session: &mut mongodb::ClientSession) -> Result<(), StoreError> {
    let mut tries = 0;
    loop {
        match session.commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(e)
                if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
                    && tries < COMMIT_RETRIES =>
            {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 << tries)).await;
            }
            Err(e) if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT) => {
                // Not a conflict and not "nothing saved": the caller must not replay.
                return Err(StoreError::Doc(format!(
                    "the outcome of a commit is unknown (the database stopped answering): {e}"
                )));
            }
            Err(e) => return Err(db_failure(e)),
        }
    }
}

/// Where a single load's `$lookup` puts the node's edge documents (removed before the
/// document is decoded or cached).
const AHEAD_FIELD: &str = "_svc_ahead";

/// The projection of a load: everything, with at most `INLINE_EDGES + 1` edge ids (so
/// a complete list is told from a cut one).
fn inline_edges() -> Document {
    doc! {"edges": {"$slice": (INLINE_EDGES + 1) as i64}}
}

/// Edge ids of a stored `edges` array (an unreadable entry is skipped).
fn edge_ids(edges: &[Bson]) -> Vec<AnchorId> {
    edges
        .iter()
        .filter_map(|e| match e {
            Bson::String(s) => parse_id(s),
            _ => None,
        })
        .collect()
}

fn is_builtin_type(name: &str) -> bool {
    matches!(name, "Root" | "GenericEdge" | "Node" | "Edge" | "Walker")
}

fn int(b: Option<&Bson>) -> Option<i64> {
    match b? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.fract() == 0.0 => Some(*f as i64),
        _ => None,
    }
}

/// `true` when `j` has an exact BSON form (so `fields` can be a sub-document).
fn exact_in_bson(j: &Json, depth: usize) -> bool {
    if depth > MAX_BSON_DEPTH {
        return false;
    }
    match j {
        Json::Number(n) => n.is_i64() || n.is_f64(),
        Json::Array(items) => items.iter().all(|i| exact_in_bson(i, depth + 1)),
        Json::Object(m) => m
            .iter()
            .all(|(k, v)| safe_key(k) && exact_in_bson(v, depth + 1)),
        _ => true,
    }
}

fn safe_key(k: &str) -> bool {
    !k.starts_with('$') && !k.contains('.') && !k.contains('\0')
}

/// The document of an anchor (`version` as given; the caller sets or strips it).
fn anchor_doc(a: &StoredAnchor, version: i64) -> Document {
    let mut d = Document::new();
    d.insert("_id", format_id(a.id));
    d.insert("kind", a.kind.as_str());
    d.insert("arch_module", &*a.arch_module);
    d.insert("arch_type", &*a.arch_type);
    d.insert("fingerprint", &*a.fingerprint);
    d.insert("format_version", FORMAT_VERSION);
    d.insert("owner", format_id(a.owner));
    let roots: Vec<Bson> = a
        .access
        .roots
        .iter()
        .map(|(r, l)| {
            Bson::Array(vec![
                Bson::String(format_id(*r)),
                Bson::Int32(i32::from(*l)),
            ])
        })
        .collect();
    d.insert(
        "access",
        doc! {
            "public": a.access.public.map_or(Bson::Null, |l| Bson::Int32(i32::from(l))),
            "roots": roots,
        },
    );
    // A sub-document only when it reads back as the very same text (numbers beyond
    // 64 bits, `$` keys and very deep values keep the text form).
    let as_doc = serde_json::from_str::<Map<String, Json>>(&a.fields)
        .ok()
        .filter(|m| m.iter().all(|(k, v)| safe_key(k) && exact_in_bson(v, 1)))
        .and_then(|m| bson_json::to_doc(&m, bson_json::MAX_DEPTH).ok())
        .filter(|doc| {
            bson_json::doc_json(doc, bson_json::MAX_DEPTH)
                .ok()
                .and_then(|m| serde_json::to_string(&m).ok())
                .as_deref()
                == Some(a.fields.as_str())
        });
    match as_doc {
        Some(fields) => {
            d.insert("fields", fields);
        }
        None => {
            d.insert("fields", Document::new());
            d.insert("fields_json", a.fields.clone());
        }
    }
    if let Some(ends) = a.ends {
        d.insert("source", format_id(ends.source));
        d.insert("target", format_id(ends.target));
        d.insert("undirected", ends.undirected);
    }
    if a.kind == AnchorKind::Node {
        d.insert("edges", Vec::<Bson>::new());
    }
    d.insert("version", version);
    d
}

fn decode_anchor(d: &Document) -> Result<(StoredAnchor, u64), String> {
    let text = |k: &str| -> Result<&str, String> {
        d.get_str(k)
            .map_err(|_| format!("field {k} is missing or not text"))
    };
    let id_of = |k: &str| -> Result<AnchorId, String> {
        let t = text(k)?;
        parse_id(t).ok_or_else(|| format!("field {k} is not an anchor id: {t:?}"))
    };
    let id = id_of("_id")?;
    let kind_text = text("kind")?;
    let kind = AnchorKind::parse(kind_text).ok_or_else(|| format!("unknown kind {kind_text:?}"))?;
    match int(d.get("format_version")) {
        Some(v) if v <= FORMAT_VERSION => {}
        other => return Err(format!("unsupported format_version {other:?}")),
    }
    let owner = id_of("owner")?;
    let access = match d.get("access") {
        None | Some(Bson::Null) => AccessPolicy::default(),
        Some(Bson::Document(a)) => {
            let level = |b: &Bson| -> Result<i8, String> {
                int(Some(b))
                    .and_then(|n| i8::try_from(n).ok())
                    .filter(|n| (-1..=2).contains(n))
                    .ok_or_else(|| format!("bad access level {b}"))
            };
            let public = match a.get("public") {
                None | Some(Bson::Null) => None,
                Some(b) => Some(level(b)?),
            };
            let mut roots = Vec::new();
            if let Ok(items) = a.get_array("roots") {
                for item in items {
                    let Bson::Array(pair) = item else {
                        return Err(format!("bad access entry {item}"));
                    };
                    let (Some(Bson::String(r)), Some(l)) = (pair.first(), pair.get(1)) else {
                        return Err(format!("bad access entry {item}"));
                    };
                    let r = parse_id(r).ok_or_else(|| format!("bad root id {r:?}"))?;
                    roots.push((r, level(l)?));
                }
            }
            AccessPolicy { public, roots }
        }
        Some(other) => return Err(format!("access is not a document: {other}")),
    };
    let fields = match (d.get("fields_json"), d.get("fields")) {
        (Some(Bson::String(t)), _) => {
            if serde_json::from_str::<Map<String, Json>>(t).is_err() {
                return Err("fields_json is not a JSON object".into());
            }
            t.clone()
        }
        (_, Some(Bson::Document(f))) => bson_json::doc_json(f, bson_json::MAX_DEPTH)
            .map_err(|_| format!("fields nest more than {} levels deep", bson_json::MAX_DEPTH))
            .and_then(|m| serde_json::to_string(&m).map_err(|e| e.to_string()))?,
        (_, None) => "{}".to_string(),
        (_, Some(other)) => return Err(format!("fields is not a document: {other}")),
    };
    let ends = match (d.get("source"), d.get("target")) {
        (Some(Bson::String(s)), Some(Bson::String(t))) => Some(EdgeEnds {
            source: parse_id(s).ok_or_else(|| format!("bad source id {s:?}"))?,
            target: parse_id(t).ok_or_else(|| format!("bad target id {t:?}"))?,
            undirected: d.get_bool("undirected").unwrap_or(false),
        }),
        (None, None) => None,
        _ => return Err("edge has only one end".into()),
    };
    if kind == AnchorKind::Edge && ends.is_none() {
        return Err("edge without source/target".into());
    }
    let version = match int(d.get("version")) {
        Some(v) if v >= 1 => v as u64,
        other => return Err(format!("bad version {other:?}")),
    };
    Ok((
        StoredAnchor {
            id,
            kind,
            arch_module: text("arch_module")?.into(),
            arch_type: text("arch_type")?.into(),
            fingerprint: text("fingerprint")?.into(),
            owner,
            access,
            fields,
            ends,
            edges: None,
        },
        version,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("mongodb://u:pw@h:1/db?x=1"),
            "mongodb://u:***@h:1/db?x=1"
        );
        assert_eq!(redact("mongodb://h:1/db"), "mongodb://h:1/db");
    }

    #[test]
    fn documents_round_trip() {
        let a = StoredAnchor {
            id: 7,
            kind: AnchorKind::Edge,
            arch_module: "app".into(),
            arch_type: "Likes".into(),
            fingerprint: "f".into(),
            owner: 9,
            access: AccessPolicy {
                public: Some(0),
                roots: vec![(3, 2)],
            },
            fields: r#"{"n":1,"x":1.5,"big":123456789012345678901234567890,"s":"t"}"#.into(),
            ends: Some(EdgeEnds {
                source: 1,
                target: 2,
                undirected: true,
            }),
            edges: None,
        };
        let d = anchor_doc(&a, 3);
        assert!(
            d.get("fields_json").is_some(),
            "a bigint keeps the text form"
        );
        let (back, v) = decode_anchor(&d).expect("decodes");
        assert_eq!(v, 3);
        assert_eq!(back, a);
        let plain = StoredAnchor {
            fields: r#"{"n":1,"x":1.5,"l":[1,{"a":null}]}"#.into(),
            kind: AnchorKind::Node,
            ends: None,
            ..a
        };
        let d = anchor_doc(&plain, 1);
        assert!(d.get("fields_json").is_none());
        assert_eq!(decode_anchor(&d).expect("decodes").0, plain);
    }
}
