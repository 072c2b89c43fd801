//! The host boundary: the only way the interpreter reaches storage, output and native
//! services. `svc run` implements it over the embedded SQLite store; the server's actors
//! implement it per request; `MemoryHost` keeps everything in process.

use std::collections::HashMap;
use std::sync::Arc;

/// Anchor id: 128 random bits, shown as 32 lowercase hex characters (see `jid`).
pub type AnchorId = u128;

/// Access levels of the spec ("Access levels").
pub mod level {
    pub const NO_ACCESS: i8 = -1;
    pub const READ: i8 = 0;
    pub const CONNECT: i8 = 1;
    pub const WRITE: i8 = 2;
}

/// The extension of the modules a module imports and of its annex files: a `.jac` file
/// (Jac's own spelling, which `svc run` accepts) finds `.jac` siblings, any other `.svc`.
pub fn module_ext(path: &std::path::Path) -> &'static str {
    if path.extension().is_some_and(|e| e == "jac") {
        "jac"
    } else {
        "svc"
    }
}

pub fn format_id(id: AnchorId) -> String {
    format!("{id:032x}")
}

pub fn parse_id(text: &str) -> Option<AnchorId> {
    let t = text.trim();
    if t.len() != 32 && t.len() != 36 {
        return None;
    }
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    u128::from_str_radix(&hex, 16).ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnchorKind {
    Node,
    Edge,
    Walker,
}

impl AnchorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnchorKind::Node => "node",
            AnchorKind::Edge => "edge",
            AnchorKind::Walker => "walker",
        }
    }

    pub fn parse(s: &str) -> Option<AnchorKind> {
        match s {
            "node" => Some(AnchorKind::Node),
            "edge" => Some(AnchorKind::Edge),
            "walker" => Some(AnchorKind::Walker),
            _ => None,
        }
    }
}

/// Who may do what with an anchor besides its owner root.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessPolicy {
    /// Level granted to every root (`None` = not opened: NO_ACCESS for others).
    pub public: Option<i8>,
    /// Per-root levels (`allow_root`, `grant(node, user)`).
    pub roots: Vec<(AnchorId, i8)>,
}

/// The two ends of a stored edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeEnds {
    pub source: AnchorId,
    pub target: AnchorId,
    pub undirected: bool,
}

/// The stored form of a node, edge or walker.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredAnchor {
    pub id: AnchorId,
    pub kind: AnchorKind,
    /// Module the archetype was declared in (file stem, `builtins` for `Root`).
    pub arch_module: Arc<str>,
    /// Archetype name (`Root` for a root node, `GenericEdge` for an untyped edge).
    pub arch_type: Arc<str>,
    /// Digest of the archetype's field names and types when the anchor was written.
    pub fingerprint: Arc<str>,
    /// Root that owns the anchor.
    pub owner: AnchorId,
    pub access: AccessPolicy,
    /// The `has` fields as the text of one JSON object (archetype values inside are
    /// `{"__ref__": id}` or nested objects with `__obj__`). Kept as text: the interpreter
    /// writes it directly and a store saves it as is.
    pub fields: String,
    /// Edges only.
    pub ends: Option<EdgeEnds>,
    /// Nodes only: the node's edge ids in creation order, or `None` when the host loads
    /// edge lists lazily (`Host::load_edges` then answers when a traversal needs them).
    /// In a commit, edge membership travels in `CommitSet::edge_adds`/`edge_removes`
    /// instead, so appending a child costs O(1) however many children a node has.
    pub edges: Option<Vec<AnchorId>>,
}

/// Everything one run changed, applied atomically by `Host::commit`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitSet {
    /// New or changed anchors (full field payload; `edges` is ignored).
    pub upserts: Vec<StoredAnchor>,
    /// `(node, edge)`: append `edge` to `node`'s edge list.
    pub edge_adds: Vec<(AnchorId, AnchorId)>,
    /// `(node, edge)`: remove `edge` from `node`'s edge list.
    pub edge_removes: Vec<(AnchorId, AnchorId)>,
    /// Anchors deleted (their own edge lists go with them).
    pub deletes: Vec<AnchorId>,
    /// Versions read by the run, for optimistic concurrency: `(id, version)`.
    pub read_versions: Vec<(AnchorId, u64)>,
    /// Nodes whose edge lists the run read (traversed). A host checks the version of a
    /// node it appends to only when the run read that node's edges: a blind append
    /// commutes with other appends, while check-then-create must not race.
    pub edges_read: Vec<AnchorId>,
}

impl CommitSet {
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty()
            && self.edge_adds.is_empty()
            && self.edge_removes.is_empty()
            && self.deletes.is_empty()
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum HostError {
    /// Another run committed a conflicting change first; the caller may replay the run.
    #[error("write conflict on anchor {0}")]
    Conflict(String),
    #[error("store error: {0}")]
    Store(String),
    /// The store was restarted under the run (its connection revoked): nothing of the run
    /// was committed and a retry will run on a fresh connection.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Other(String),
}

/// What the interpreter needs from the world.
pub trait Host {
    /// Load one anchor by id (`None` if absent). Called at most once per id per run: the
    /// interpreter keeps what it loaded (the request-scoped L1).
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError>;

    /// Load several anchors at once (absent ids are left out). Traversals prefetch a
    /// node's edges and far ends with this, so a store can answer in a few queries.
    fn load_many(&mut self, ids: &[AnchorId]) -> Result<Vec<StoredAnchor>, HostError> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(a) = self.load(id)? {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// The edge ids of node `id` in creation order (called when a load left them out).
    fn load_edges(&mut self, id: AnchorId) -> Result<Vec<AnchorId>, HostError> {
        Ok(self.load(id)?.and_then(|a| a.edges).unwrap_or_default())
    }

    /// Persist a run's changes atomically.
    fn commit(&mut self, changes: CommitSet) -> Result<(), HostError>;

    /// `commit` for a served call's last commit, when no `on_commit` callback waits for
    /// it: a host may finish it after returning (the server's pipelined commit) as long
    /// as the call's answer waits for its outcome, and whatever the run asks the host
    /// afterwards (a load, another commit) waits for it first. The default commits now.
    fn commit_last(&mut self, changes: CommitSet) -> Result<(), HostError> {
        self.commit(changes)
    }

    /// Whether `commit` keeps anything (a host dropped with its run may not). When it
    /// does not, the interpreter still builds and checks each anchor's stored form, so
    /// a value that cannot be persisted fails the run the same way, but sends no
    /// changes.
    fn keeps_commits(&self) -> bool {
        true
    }

    /// Root of the user the run acts for.
    fn user_root(&self) -> AnchorId;

    /// The shared public root (`root.shared`); equals `user_root` outside a server.
    fn shared_root(&self) -> AnchorId {
        self.user_root()
    }

    /// Where `print` and `report` output goes.
    fn write_stdout(&mut self, text: &str);

    /// A native builtin the host provides (kvstore, store(), publish, ...). `None` means
    /// the host does not know the name.
    fn call_native(
        &mut self,
        _name: &str,
        _args: &[serde_json::Value],
    ) -> Option<Result<serde_json::Value, HostError>> {
        None
    }

    /// Read another `.svc` module's source for `import from mod { .. }`; `None` if absent.
    fn read_module(&mut self, _path: &std::path::Path) -> Option<String> {
        None
    }

    /// The file names in a directory (for finding annex files such as
    /// `mod.impl.svc`); empty when it does not exist or the host has no files.
    fn list_dir(&mut self, _dir: &std::path::Path) -> Vec<String> {
        Vec::new()
    }

    /// The identity of a module file, so two import paths naming one file load it once:
    /// its canonical path (`None` if it cannot be resolved, e.g. the file is missing).
    fn module_key(&mut self, path: &std::path::Path) -> Option<std::path::PathBuf> {
        path.canonicalize().ok()
    }

    /// Render uncaught errors without the `✖` glyph (the `NO_EMOJI` convention of the
    /// process environment).
    fn plain_glyphs(&self) -> bool {
        std::env::var_os("NO_EMOJI").is_some()
    }

    /// Anchors changed elsewhere since this run may have loaded them (the run actor's
    /// `Stale` messages), polled with the cancel flag. The interpreter reloads those it
    /// holds unmodified and has not read the fields of; `None` = nothing new.
    fn take_stale(&mut self) -> Option<Stale> {
        None
    }

    // The clock, the OS random source and sleeping, for the standard-library modules
    // (`time`, `datetime`, `random`, `uuid`). The defaults use the process's own; a host
    // may fix them (tests) or account for them.

    /// Wall-clock time: nanoseconds since the Unix epoch (negative before it).
    fn unix_time_nanos(&mut self) -> i128 {
        match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        }
    }

    /// A monotonic clock in nanoseconds (an arbitrary origin, never going back).
    fn monotonic_nanos(&mut self) -> u128 {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos()
    }

    /// Fill `buf` from the OS random source: the kernel's generator (`/dev/urandom`,
    /// opened once per process). Seeds `random`, feeds `ids` (anchor ids, `uuid4`).
    fn random_bytes(&mut self, buf: &mut [u8]) {
        use std::io::Read as _;
        static URANDOM: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
        let device = URANDOM.get_or_init(|| std::fs::File::open("/dev/urandom").ok());
        if let Some(mut file) = device.as_ref()
            && file.read_exact(buf).is_ok()
        {
            return;
        }
        // Without the device: std's `RandomState` keys come from the OS random source
        // (getrandom); each hasher built from a fresh one gives 64 unpredictable bits.
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in buf.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            let bytes = h.finish().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// Block the run for `d` (`time.sleep`; the interpreter has already bounded `d` by
    /// the run's time limit).
    fn sleep(&mut self, d: std::time::Duration) {
        std::thread::sleep(d);
    }
}

/// What `Host::take_stale` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stale {
    Anchors(Vec<AnchorId>),
    /// Too many to list: any anchor may be stale.
    All,
}

/// A host that keeps the graph in memory and collects stdout: used by tests, benches,
/// the MCP `run_svc` tool and `svc run --no-store`.
#[derive(Default)]
pub struct MemoryHost {
    pub anchors: HashMap<AnchorId, StoredAnchor>,
    pub stdout: String,
    /// Echo stdout to the process's stdout as well as collecting it.
    pub echo: bool,
    pub root: AnchorId,
    /// Keep nothing a commit sends (`svc run --no-store`): the run's own graph already
    /// holds every anchor it made for the rest of the run (a run loads an id from the
    /// host only when its graph does not have it), so a host that is dropped with the
    /// run has no reader for them. The interpreter still builds the stored form of each
    /// anchor, so a value that cannot be persisted fails the run as before.
    pub discard: bool,
}

impl MemoryHost {
    pub fn new() -> MemoryHost {
        MemoryHost {
            root: 1,
            ..MemoryHost::default()
        }
    }
}

impl Host for MemoryHost {
    fn load(&mut self, id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        Ok(self.anchors.get(&id).cloned())
    }

    fn commit(&mut self, changes: CommitSet) -> Result<(), HostError> {
        if self.discard {
            return Ok(());
        }
        self.anchors.reserve(changes.upserts.len());
        for a in changes.upserts {
            let edges = self.anchors.get(&a.id).and_then(|old| old.edges.clone());
            let edges = Some(edges.unwrap_or_default());
            self.anchors.insert(a.id, StoredAnchor { edges, ..a });
        }
        for (node, edge) in changes.edge_adds {
            if let Some(n) = self.anchors.get_mut(&node) {
                n.edges.get_or_insert_with(Vec::new).push(edge);
            }
        }
        for (node, edge) in changes.edge_removes {
            if let Some(n) = self.anchors.get_mut(&node)
                && let Some(edges) = n.edges.as_mut()
            {
                edges.retain(|e| *e != edge);
            }
        }
        for id in changes.deletes {
            self.anchors.remove(&id);
        }
        Ok(())
    }

    fn keeps_commits(&self) -> bool {
        !self.discard
    }

    fn user_root(&self) -> AnchorId {
        self.root
    }

    fn write_stdout(&mut self, text: &str) {
        if self.echo {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
        }
        self.stdout.push_str(text);
    }

    fn read_module(&mut self, path: &std::path::Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    fn list_dir(&mut self, dir: &std::path::Path) -> Vec<String> {
        list_dir_names(dir)
    }
}

/// The names of the files in `dir`, sorted (for hosts that read the file system).
pub fn list_dir_names(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(id: AnchorId) -> StoredAnchor {
        StoredAnchor {
            id,
            kind: AnchorKind::Node,
            arch_module: "main".into(),
            arch_type: "Item".into(),
            fingerprint: "".into(),
            owner: 1,
            access: Default::default(),
            fields: "{}".into(),
            ends: None,
            edges: None,
        }
    }

    fn changes() -> CommitSet {
        CommitSet {
            upserts: vec![anchor(1), anchor(2)],
            edge_adds: vec![(1, 2)],
            ..CommitSet::default()
        }
    }

    #[test]
    fn memory_host_keeps_commits() {
        let mut host = MemoryHost::new();
        host.commit(changes()).expect("commit");
        assert_eq!(host.anchors.len(), 2);
        assert_eq!(host.load_edges(1).expect("edges"), vec![2]);
    }

    #[test]
    fn discarding_memory_host_keeps_nothing() {
        let mut host = MemoryHost::new();
        assert!(host.keeps_commits());
        host.discard = true;
        assert!(!host.keeps_commits());
        host.commit(changes()).expect("commit");
        assert!(host.anchors.is_empty());
        assert!(host.load(1).expect("load").is_none());
    }
}
