//! The graph arena (the run's L1): nodes and edges by handle, edge queries, connect and
//! disconnect, and the change log that becomes a `CommitSet`.

mod id_index;

use super::value::*;
use super::{Interp, R};
use crate::ast::{self, EdgeDir};
use crate::host::{AccessPolicy, AnchorId, EdgeEnds, level};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Created by this run, not yet stored.
    New,
    /// Loaded and unchanged.
    Clean,
    /// Loaded and changed.
    Dirty,
    Deleted,
}

/// One node or edge in memory. Its id is not here but in `Graph::slot_ids` (by the
/// same index: a slot never changes its id) and its owner is an index into
/// `Graph::owners`, so a slot holds no 16-byte-aligned field: 96 bytes (160 before,
/// 192 before that), which is most of an anchor's memory.
pub struct Slot {
    pub class: Rc<Class>,
    /// One per field of the class (a slice: its length never changes).
    pub fields: Box<[Value]>,
    /// The stored `has` fields (JSON object text) of a loaded anchor, decoded into
    /// `fields` on first use (`Interp::decode_fields`). Loading an anchor therefore never
    /// loads what its fields refer to: a chain of a million stored references costs one
    /// row per hop actually taken, and no native recursion. Boxed once more so the
    /// option is one pointer.
    #[allow(clippy::box_collection)] // one word instead of two on every slot
    pub pending: Option<Box<String>>,
    /// A node's edge list, or an edge's ends.
    pub links: Links,
    /// Index of the owner's id in `Graph::owners` (read through `Graph::owner_of`).
    owner: u32,
    pub access: SlotAccess,
    pub state: SlotState,
}

/// What a slot links: a node its edges, an edge its two ends. One or the other, in
/// the same bytes (the kind in the niche of the ends' `undirected` flag).
pub enum Links {
    /// A node's edges (also an edge's until `connect` gives it its ends: none).
    Node {
        /// Edges in creation order (complete only when `loaded`).
        edges: EdgeList,
        /// False while a loaded node's edge list is still in the store: appends are
        /// logged without reading it; a traversal loads it first
        /// (`Interp::ensure_edges`).
        loaded: bool,
    },
    /// An edge's ends.
    Edge(SlotEnds),
}

/// The edge list of a slot that has none (an edge's).
static NO_EDGES: EdgeList = EdgeList::Slots(Vec::new());

impl Slot {
    /// A slot of `class` with `fields`, no edges and no policy of its own, in `state`
    /// (`Graph::insert` gives it its id and owner).
    pub fn new(class: Rc<Class>, fields: Vec<Value>, state: SlotState) -> Slot {
        Slot {
            class,
            fields: fields.into_boxed_slice(),
            pending: None,
            links: Links::Node {
                edges: EdgeList::default(),
                loaded: true,
            },
            owner: 0,
            access: SlotAccess::default(),
            state,
        }
    }

    /// An edge's ends, once `connect` (or the store) gave them.
    #[inline]
    pub fn ends(&self) -> Option<SlotEnds> {
        match &self.links {
            Links::Edge(ends) => Some(*ends),
            Links::Node { .. } => None,
        }
    }

    /// A node's edges (empty for an edge).
    #[inline]
    pub fn edges(&self) -> &EdgeList {
        match &self.links {
            Links::Node { edges, .. } => edges,
            Links::Edge(_) => &NO_EDGES,
        }
    }

    /// Is the edge list complete in memory (always, for an edge)?
    fn edges_loaded(&self) -> bool {
        match &self.links {
            Links::Node { loaded, .. } => *loaded,
            Links::Edge(_) => true,
        }
    }
}

/// A slot's access policy, out of line: most anchors keep the default (no grants), so
/// a slot holds one pointer instead of the policy's 32 bytes. Reads through `Deref`
/// (the default policy when none was set); writing through `DerefMut` makes one.
#[derive(Default)]
pub struct SlotAccess(Option<Box<AccessPolicy>>);

/// The policy of a slot that has none of its own.
static NO_POLICY: AccessPolicy = AccessPolicy {
    public: None,
    roots: Vec::new(),
};

impl From<AccessPolicy> for SlotAccess {
    fn from(policy: AccessPolicy) -> SlotAccess {
        if policy == AccessPolicy::default() {
            SlotAccess(None)
        } else {
            SlotAccess(Some(Box::new(policy)))
        }
    }
}

impl std::ops::Deref for SlotAccess {
    type Target = AccessPolicy;
    fn deref(&self) -> &AccessPolicy {
        self.0.as_deref().unwrap_or(&NO_POLICY)
    }
}

impl std::ops::DerefMut for SlotAccess {
    fn deref_mut(&mut self) -> &mut AccessPolicy {
        self.0.get_or_insert_with(Box::default)
    }
}

/// A node's edges, in creation order: the edges' slot indexes while every edge of the
/// list is a slot of this graph that `connect` appended (a node made by this run), else
/// their ids (a list loaded from the store, appends to it, or an index beyond `u32`).
/// A slot never changes its id and no second slot is made for an id already held, so
/// an index names the same anchor its id would: a hop over a list of indexes needs no
/// id lookup, and an entry is 4 bytes instead of 16.
pub enum EdgeList {
    Slots(Vec<u32>),
    /// Boxed: the enum is then the size of one `Vec` (the kind in the niche of the
    /// indexes' capacity), 24 bytes a slot instead of 32.
    #[allow(clippy::box_collection)] // one word instead of three on every slot
    Ids(Box<Vec<AnchorId>>),
}

impl Default for EdgeList {
    fn default() -> EdgeList {
        EdgeList::Slots(Vec::new())
    }
}

impl EdgeList {
    pub fn len(&self) -> usize {
        match self {
            EdgeList::Slots(v) => v.len(),
            EdgeList::Ids(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The edges' ids, in order (`slot_ids` = `Graph::slot_ids`).
    fn ids(&self, slot_ids: &[AnchorId]) -> Vec<AnchorId> {
        match self {
            EdgeList::Slots(v) => v
                .iter()
                .filter_map(|&i| slot_ids.get(i as usize).copied())
                .collect(),
            EdgeList::Ids(v) => v.to_vec(),
        }
    }

    /// The list's ids, in order.
    fn into_ids(self, slot_ids: &[AnchorId]) -> Vec<AnchorId> {
        match self {
            EdgeList::Slots(_) => self.ids(slot_ids),
            EdgeList::Ids(v) => *v,
        }
    }

    /// Append edge `id` at slot `index` (an index when the list is one of indexes and
    /// the index fits, else the id: the list becomes one of ids).
    fn push(&mut self, id: AnchorId, index: usize, slot_ids: &[AnchorId]) {
        let at = u32::try_from(index).ok().filter(|&i| i != NO_SLOT);
        match (self, at) {
            (EdgeList::Slots(v), Some(i)) => {
                // Room for one edge first (most nodes have one: an item under its hub),
                // not the four a first push reserves; a second edge grows it as before.
                if v.capacity() == 0 {
                    v.reserve_exact(1);
                }
                v.push(i);
            }
            (EdgeList::Ids(v), _) => v.push(id),
            (list @ EdgeList::Slots(_), None) => {
                let mut ids = std::mem::take(list).into_ids(slot_ids);
                ids.push(id);
                *list = EdgeList::Ids(Box::new(ids));
            }
        }
    }

    /// Remove the first entry of edge `id`.
    fn remove(&mut self, id: AnchorId, slot_ids: &[AnchorId]) {
        match self {
            EdgeList::Slots(v) => {
                if let Some(pos) = v
                    .iter()
                    .position(|&i| slot_ids.get(i as usize) == Some(&id))
                {
                    v.remove(pos);
                }
            }
            EdgeList::Ids(v) => {
                if let Some(pos) = v.iter().position(|x| *x == id) {
                    v.remove(pos);
                }
            }
        }
    }
}

/// No slot index known for an end (`SlotEnds`).
const NO_SLOT: u32 = u32::MAX;

/// An edge's two ends in the arena: their ids ([`EdgeEnds`], what is stored) and,
/// when `connect` made the edge, the ends' slot indexes, so a hop reaches the far node
/// without an id lookup ([`NO_SLOT`] for an edge loaded from the store). The ids are
/// kept as two 8-byte halves, so a slot needs no 16-byte alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotEnds {
    source: SplitId,
    target: SplitId,
    source_slot: u32,
    target_slot: u32,
    pub undirected: bool,
}

/// An anchor id as its two 64-bit halves (8-byte aligned where a `u128` is 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SplitId(u64, u64);

impl SplitId {
    #[inline]
    fn new(id: AnchorId) -> SplitId {
        SplitId((id >> 64) as u64, id as u64)
    }

    #[inline]
    fn get(self) -> AnchorId {
        (u128::from(self.0) << 64) | u128::from(self.1)
    }
}

impl SlotEnds {
    /// The ends of a loaded edge (slots not known).
    pub fn stored(ends: EdgeEnds) -> SlotEnds {
        SlotEnds {
            source: SplitId::new(ends.source),
            target: SplitId::new(ends.target),
            source_slot: NO_SLOT,
            target_slot: NO_SLOT,
            undirected: ends.undirected,
        }
    }

    #[inline]
    pub fn source(&self) -> AnchorId {
        self.source.get()
    }

    #[inline]
    pub fn target(&self) -> AnchorId {
        self.target.get()
    }

    /// The ids, as stored.
    pub fn ids(&self) -> EdgeEnds {
        EdgeEnds {
            source: self.source(),
            target: self.target(),
            undirected: self.undirected,
        }
    }
}

/// The arena's slots in chunks that never move: chunk 0 holds the first
/// [`FIRST_CHUNK`] slots and chunk `k` the next `FIRST_CHUNK << (k - 1)`, so the
/// capacity doubles as a `Vec`'s would, but growing copies no slot and touches each
/// fresh page once (a `Vec<Slot>` copies every slot at each doubling: with the other
/// vectors' growth, 15% of the samples of a run that makes 100,000 nodes, 8% after).
/// Indexed like a slice (`slots[i]`).
#[derive(Default)]
pub struct Slots {
    chunks: Vec<Vec<Slot>>,
    len: usize,
}

/// Slots in the first chunk (a power of two).
const FIRST_CHUNK: usize = 64;

impl Slots {
    /// (chunk, offset) of slot `i`.
    #[inline]
    fn locate(i: usize) -> (usize, usize) {
        let k = (usize::BITS - (i / FIRST_CHUNK).leading_zeros()) as usize;
        if k == 0 {
            (0, i)
        } else {
            (k, i - (FIRST_CHUNK << (k - 1)))
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, slot: Slot) {
        let (k, _) = Self::locate(self.len);
        if k == self.chunks.len() {
            let cap = if k == 0 {
                FIRST_CHUNK
            } else {
                FIRST_CHUNK << (k - 1)
            };
            self.chunks.push(Vec::with_capacity(cap));
        }
        if let Some(chunk) = self.chunks.get_mut(k) {
            chunk.push(slot);
            self.len += 1;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.chunks.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.chunks.iter_mut().flatten()
    }
}

impl std::ops::Index<usize> for Slots {
    type Output = Slot;

    #[inline]
    fn index(&self, i: usize) -> &Slot {
        let (k, j) = Self::locate(i);
        &self.chunks[k][j]
    }
}

impl std::ops::IndexMut<usize> for Slots {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Slot {
        let (k, j) = Self::locate(i);
        &mut self.chunks[k][j]
    }
}

impl<'a> IntoIterator for &'a mut Slots {
    type Item = &'a mut Slot;
    type IntoIter = std::iter::Flatten<std::slice::IterMut<'a, Vec<Slot>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter_mut().flatten()
    }
}

/// All anchors a run touched.
pub struct Graph {
    pub slots: Slots,
    /// Id → slot index of every slot (the last one made for an id), read through
    /// `handle_by_id`; slots are indexed at the first lookup after they are made.
    ids: id_index::IdIndex,
    /// The id of `slots[i]` for every `i` (a slot never changes its id; `id_of`): what
    /// the index reads to place a slot and to confirm a match, 16 bytes apart, so
    /// indexing 100,000 new slots reads them in sequence.
    slot_ids: Vec<AnchorId>,
    /// The distinct owners of the slots (a slot keeps an index here: most of a run's
    /// anchors share one or two owners), and each one's index.
    owners: Vec<AnchorId>,
    owner_index: FxHashMap<AnchorId, u32>,
    /// Edges appended, for the commit set; not logged when the host keeps no commits
    /// (`log_edge_adds` false, `svc run --no-store`), where `edges_added` says whether
    /// there were any since the last commit.
    pub edge_adds: Vec<(AnchorId, AnchorId)>,
    pub log_edge_adds: bool,
    pub edges_added: bool,
    pub edge_removes: Vec<(AnchorId, AnchorId)>,
    pub deletes: Vec<AnchorId>,
    /// Nodes whose edge lists this run read (for `CommitSet::edges_read`).
    pub edges_read: FxHashMap<AnchorId, ()>,
    /// First handle of this run: `slots[i]` has handle `base + i`. The run that loads a
    /// program has base 0; its handles kept in module globals are *pinned*.
    pub base: u64,
    /// Pinned handles (from the program's load run) → index in `slots`, resolved by id
    /// at the start of each run.
    pub pinned: FxHashMap<Handle, usize>,
    /// The same pins by slot index: the handle `handle_by_id` gives for them.
    pinned_at: FxHashMap<usize, Handle>,
    /// What a stale handle (from an earlier run) reads: a deleted placeholder.
    dead: Box<Slot>,
    /// (id, slot index) of each root `ensure_root` found or made, so evaluating `root`
    /// again needs no id lookup (which would index every slot made since the last one).
    root_slots: Vec<(AnchorId, usize)>,
}

thread_local! {
    /// One per thread: every run's stale placeholder shares it (no allocation per run).
    static STALE_CLASS: Rc<Class> = make_stale_class();
}

/// The class of the placeholder a stale handle reads: a node type with no fields.
fn stale_class() -> Rc<Class> {
    STALE_CLASS.with(Rc::clone)
}

fn make_stale_class() -> Rc<Class> {
    Rc::new(Class::bare_builtin(
        "StaleNode",
        ClassKind::Arch(crate::ast::ArchKind::Node),
        Vec::new(),
        Vec::new(),
    ))
}

fn stale_slot() -> Box<Slot> {
    Box::new(Slot::new(stale_class(), Vec::new(), SlotState::Deleted))
}

impl Default for Graph {
    fn default() -> Graph {
        Graph {
            slots: Slots::default(),
            ids: id_index::IdIndex::default(),
            slot_ids: Vec::new(),
            edge_adds: Vec::new(),
            log_edge_adds: true,
            edges_added: false,
            edge_removes: Vec::new(),
            deletes: Vec::new(),
            edges_read: FxHashMap::default(),
            base: 0,
            pinned: FxHashMap::default(),
            pinned_at: FxHashMap::default(),
            dead: stale_slot(),
            root_slots: Vec::new(),
            owners: Vec::new(),
            owner_index: FxHashMap::default(),
        }
    }
}

impl Graph {
    /// A new anchor with id `id` (from `Interp::fresh_anchor_id`).
    pub fn new_anchor(
        &mut self,
        id: AnchorId,
        class: Rc<Class>,
        fields: Vec<Value>,
        owner: AnchorId,
    ) -> Handle {
        self.insert(id, owner, Slot::new(class, fields, SlotState::New))
    }

    /// Put `slot` into the arena as anchor `id` owned by root `owner`.
    pub fn insert(&mut self, id: AnchorId, owner: AnchorId, mut slot: Slot) -> Handle {
        slot.owner = self.intern_owner(owner);
        let index = self.slots.len();
        self.slot_ids.push(id);
        self.slots.push(slot);
        self.handle_at(index)
    }

    /// The index of `owner` in `owners`, added at its first use (the last one added is
    /// checked before the map: a run's new anchors are nearly all its user's).
    fn intern_owner(&mut self, owner: AnchorId) -> u32 {
        if self.owners.last() == Some(&owner) {
            return (self.owners.len() - 1) as u32;
        }
        if let Some(&i) = self.owner_index.get(&owner) {
            return i;
        }
        let i = self.owners.len() as u32;
        self.owners.push(owner);
        self.owner_index.insert(owner, i);
        i
    }

    /// The id of anchor `h` (0 for a stale handle, as its placeholder).
    #[inline]
    pub fn id_of(&self, h: Handle) -> AnchorId {
        match self.index(h) {
            Some(i) => self.slot_ids[i],
            None => 0,
        }
    }

    /// The root that owns anchor `h` (0 for a stale handle).
    #[inline]
    pub fn owner_of(&self, h: Handle) -> AnchorId {
        match self.index(h) {
            Some(i) => self.owners[self.slots[i].owner as usize],
            None => 0,
        }
    }

    /// Make root `owner` the owner of anchor `h` (a reload found another).
    pub fn set_owner(&mut self, h: Handle, owner: AnchorId) {
        let ix = self.intern_owner(owner);
        if let Some(i) = self.index(h) {
            self.slots[i].owner = ix;
        }
    }

    /// The handle of anchor `id` if this run's graph holds it (live or not): the pinned
    /// handle of a pinned anchor, else that of its slot.
    #[inline]
    pub fn handle_by_id(&self, id: AnchorId) -> Option<Handle> {
        let ids = &self.slot_ids;
        let index = self.ids.get(id, ids.len(), |i| ids[i])?;
        self.handle_of_index(index)
    }

    /// The handle `handle_by_id` gives for the id of `slots[index]`: the pinned handle
    /// of a pinned slot, else the slot's own; `None` past the arena's end.
    #[inline]
    fn handle_of_index(&self, index: usize) -> Option<Handle> {
        if index >= self.slots.len() {
            return None;
        }
        if !self.pinned_at.is_empty()
            && let Some(&pin) = self.pinned_at.get(&index)
        {
            return Some(pin);
        }
        Some(self.handle_at(index))
    }

    /// The handle of root `id` as `ensure_root` last found or made it (what
    /// `handle_by_id` gives for it: a slot never changes its id), if any.
    fn root_hint(&self, id: AnchorId) -> Option<Handle> {
        let &(_, index) = self.root_slots.iter().find(|(r, _)| *r == id)?;
        self.handle_of_index(index)
    }

    /// Remember root `id`'s slot (that of handle `h`).
    fn note_root(&mut self, id: AnchorId, h: Handle) {
        let Some(index) = self.index(h) else {
            return;
        };
        match self.root_slots.iter_mut().find(|(r, _)| *r == id) {
            Some(entry) => entry.1 = index,
            None => self.root_slots.push((id, index)),
        }
    }

    /// The ids of node `h`'s edges, in order.
    pub fn edge_ids(&self, h: Handle) -> Vec<AnchorId> {
        self.slot(h).edges().ids(&self.slot_ids)
    }

    /// Node `h`'s edges, in order, as handles where the list has them (a list of slot
    /// indexes: `ids` is then empty) or as the graph's `handle_by_id` of each id (`ids`
    /// holds them, `None` where the graph holds no such anchor).
    fn edge_handles(&self, h: Handle) -> (Vec<AnchorId>, Vec<Option<Handle>>) {
        match self.slot(h).edges() {
            EdgeList::Slots(v) => (
                Vec::new(),
                v.iter()
                    .map(|&i| self.handle_of_index(i as usize))
                    .collect(),
            ),
            EdgeList::Ids(ids) => (
                ids.to_vec(),
                ids.iter().map(|id| self.handle_by_id(*id)).collect(),
            ),
        }
    }

    /// Remove edge `eid` from node `h`'s edge list (its first entry).
    fn remove_edge_entry(&mut self, h: Handle, eid: AnchorId) {
        if let Some(i) = self.index(h)
            && let Links::Node { edges, .. } = &mut self.slots[i].links
        {
            edges.remove(eid, &self.slot_ids);
        }
    }

    /// Does this run's graph hold anchor `id`?
    #[inline]
    pub fn contains_id(&self, id: AnchorId) -> bool {
        let ids = &self.slot_ids;
        self.ids.get(id, ids.len(), |i| ids[i]).is_some()
    }

    /// Every slot with its id, in arena order.
    pub fn slots_with_ids(&self) -> impl Iterator<Item = (AnchorId, &Slot)> + '_ {
        self.slot_ids.iter().copied().zip(self.slots.iter())
    }

    /// The slots `handle_by_id` finds with their ids, one per id held, in no
    /// particular order.
    pub fn indexed_slots(&self) -> impl Iterator<Item = (AnchorId, &Slot)> + '_ {
        let ids = &self.slot_ids;
        let indexes = self.ids.indexes(ids.len(), |i| ids[i]);
        indexes.into_iter().map(|i| (ids[i], &self.slots[i]))
    }

    /// Make `pin` (a handle of the program's load run) name `slots[index]`.
    pub fn pin(&mut self, pin: Handle, index: usize) {
        self.pinned.insert(pin, index);
        self.pinned_at.insert(index, pin);
    }

    /// The handle of `slots[index]`.
    #[inline]
    pub fn handle_at(&self, index: usize) -> Handle {
        self.base + index as Handle
    }

    /// Index in `slots` of a handle of this run or a pinned one; `None` = stale.
    #[inline]
    fn index(&self, h: Handle) -> Option<usize> {
        if h >= self.base {
            let i = (h - self.base) as usize;
            (i < self.slots.len()).then_some(i)
        } else {
            self.pinned.get(&h).copied()
        }
    }

    /// Is `h` a handle from an earlier run that this run cannot resolve?
    pub fn is_stale(&self, h: Handle) -> bool {
        self.index(h).is_none()
    }

    // `slot`, `slot_mut` and `is_live` are marked `#[inline]`: they are called from
    // every module of the interpreter (a handle resolved per field read, hop and
    // visit), most of them in other codegen units than this one.
    #[inline]
    pub fn slot(&self, h: Handle) -> &Slot {
        match self.index(h) {
            Some(i) => &self.slots[i],
            None => &self.dead,
        }
    }

    #[inline]
    pub fn slot_mut(&mut self, h: Handle) -> &mut Slot {
        match self.index(h) {
            Some(i) => &mut self.slots[i],
            // Writes through a stale handle land here and are never committed.
            None => {
                self.dead.state = SlotState::Deleted;
                &mut self.dead
            }
        }
    }

    pub fn mark_dirty(&mut self, h: Handle) {
        let s = self.slot_mut(h);
        if s.state == SlotState::Clean {
            s.state = SlotState::Dirty;
        }
    }

    /// Log edge `e` as appended to node `h`: O(1) whatever the node's degree. If the
    /// node's stored list is not loaded yet, `edges` holds just the pending appends.
    pub fn append_edge(&mut self, h: Handle, e: Handle) {
        let at = self.index(e).unwrap_or(usize::MAX);
        let edge = self.id_of(e);
        let node = self.id_of(h);
        let slot = match self.index(h) {
            Some(i) => &mut self.slots[i],
            // Writes through a stale handle land here and are never committed.
            None => {
                self.dead.state = SlotState::Deleted;
                &mut self.dead
            }
        };
        // Only nodes are connected (`connect_values` refuses an edge as an end).
        if let Links::Node { edges, .. } = &mut slot.links {
            edges.push(edge, at, &self.slot_ids);
        }
        if self.log_edge_adds {
            self.edge_adds.push((node, edge));
        } else {
            self.edges_added = true;
        }
    }

    #[inline]
    pub fn is_live(&self, h: Handle) -> bool {
        self.slot(h).state != SlotState::Deleted
    }
}

/// How a hop moves from a node along one edge: the far end's id and its slot index
/// (`NO_SLOT` when not known).
fn far_end(ends: &SlotEnds, from: AnchorId, dir: EdgeDir) -> Option<(AnchorId, u32)> {
    let (source, target) = (ends.source(), ends.target());
    let out = source == from;
    let inn = target == from;
    let source = (source, ends.source_slot);
    let target = (target, ends.target_slot);
    match dir {
        EdgeDir::Out if out => Some(target),
        EdgeDir::Out if ends.undirected && inn => Some(source),
        EdgeDir::In if inn => Some(source),
        EdgeDir::In if ends.undirected && out => Some(target),
        EdgeDir::Any if out => Some(target),
        EdgeDir::Any if inn => Some(source),
        _ => None,
    }
}

/// A slot index as `SlotEnds` keeps it (`NO_SLOT` when none or beyond `u32`).
fn slot_u32(index: Option<usize>) -> u32 {
    index.and_then(|i| u32::try_from(i).ok()).unwrap_or(NO_SLOT)
}

impl Interp<'_> {
    /// A new anchor id: the creation time in milliseconds in the top 48 bits, then 80
    /// random bits from the host's OS random source (`ids::random`), the layout of a
    /// version-7 UUID. Time first so that anchors created together sort together: the
    /// stores' primary-key B-trees then grow at their right edge, and a group of commits
    /// shares a few leaf pages instead of dirtying a random leaf per new anchor (see
    /// ARCHITECTURE.md "Embedded tier"). The low bits stay random (the L1 cache shards on
    /// them).
    pub fn fresh_anchor_id(&mut self) -> AnchorId {
        let bits: [u8; 10] = crate::ids::random(&mut *self.host);
        let mut raw = [0u8; 16];
        raw[6..].copy_from_slice(&bits);
        let random = u128::from_be_bytes(raw);
        let nanos = self.host.unix_time_nanos();
        // Divided as an `i64` while it fits (until 2262): an `i128` division is a call
        // into the compiler's runtime, half as costly as reading the clock itself.
        let millis = match i64::try_from(nanos) {
            Ok(n) => (n / 1_000_000).max(0) as u128,
            Err(_) => (nanos / 1_000_000).max(0) as u128,
        };
        ((millis & 0xffff_ffff_ffff) << 80) | random
    }

    /// The handle of an anchor id, loading it through the host on first use.
    pub fn handle_of(&mut self, id: AnchorId) -> R<Option<Handle>> {
        if let Some(h) = self.graph.handle_by_id(id) {
            return Ok(if self.graph.is_live(h) { Some(h) } else { None });
        }
        self.load_anchor(id)
    }

    /// Make sure node `h`'s edge list is in memory (lazy-loading hosts leave it out).
    pub(crate) fn ensure_edges(&mut self, h: Handle) -> R<()> {
        if self.graph.slot(h).edges_loaded() {
            return Ok(());
        }
        let id = self.graph.id_of(h);
        let mut stored = self.host.load_edges(id).map_err(super::Interrupt::Host)?;
        // Edges this run already deleted stay gone; appends made before the load are not
        // committed yet, so they follow the stored ones.
        stored.retain(|e| {
            self.graph
                .handle_by_id(*e)
                .is_none_or(|eh| self.graph.is_live(eh))
        });
        let pending = match &mut self.graph.slot_mut(h).links {
            Links::Node { edges, .. } => std::mem::take(edges),
            Links::Edge(_) => return Ok(()),
        };
        stored.extend(pending.into_ids(&self.graph.slot_ids));
        if let Links::Node { edges, loaded } = &mut self.graph.slot_mut(h).links {
            *edges = EdgeList::Ids(Box::new(stored));
            *loaded = true;
        }
        Ok(())
    }

    /// The current user's root node, loaded or created.
    pub fn root_handle(&mut self) -> R<Handle> {
        let id = self.host.user_root();
        self.ensure_root(id)
    }

    pub fn shared_root_handle(&mut self) -> R<Handle> {
        let id = self.host.shared_root();
        self.ensure_root(id)
    }

    fn ensure_root(&mut self, id: AnchorId) -> R<Handle> {
        if let Some(h) = self.graph.root_hint(id)
            && self.graph.is_live(h)
        {
            return Ok(h);
        }
        if let Some(h) = self.handle_of(id)? {
            self.graph.note_root(id, h);
            return Ok(h);
        }
        let class = self
            .builtin_class("Root")
            .ok_or_else(|| super::Interrupt::Limit("Root class missing".into()))?;
        let h = self
            .graph
            .insert(id, id, Slot::new(class, Vec::new(), SlotState::New));
        self.graph.note_root(id, h);
        Ok(h)
    }

    /// Connect `src` to `dst` with a new edge (of `edge` class, or `GenericEdge`).
    pub fn connect(
        &mut self,
        src: Handle,
        dst: Handle,
        edge: Option<Value>,
        undirected: bool,
    ) -> R<Handle> {
        let e = match edge {
            Some(Value::Anchor(e)) if self.graph.slot(e).class.is_edge() => e,
            Some(Value::Class(c)) if c.is_edge() => match self.construct(&c, vec![], vec![])? {
                Value::Anchor(e) => e,
                _ => return Err(self.err("TypeError", "edge constructor did not make an edge")),
            },
            Some(other) => {
                let t = self.type_name_of(&other);
                return Err(self.err("TypeError", format!("expected an edge, got '{t}'")));
            }
            None => {
                let c = self
                    .builtin_class("GenericEdge")
                    .ok_or_else(|| super::Interrupt::Limit("GenericEdge missing".into()))?;
                let owner = self.host.user_root();
                let id = self.fresh_anchor_id();
                self.graph.new_anchor(id, c, Vec::new(), owner)
            }
        };
        self.check_connect(src)?;
        self.check_connect(dst)?;
        let (sid, did) = (self.graph.id_of(src), self.graph.id_of(dst));
        let ends = SlotEnds {
            source: SplitId::new(sid),
            target: SplitId::new(did),
            source_slot: slot_u32(self.graph.index(src)),
            target_slot: slot_u32(self.graph.index(dst)),
            undirected,
        };
        self.graph.slot_mut(e).links = Links::Edge(ends);
        self.graph.append_edge(src, e);
        if did != sid {
            self.graph.append_edge(dst, e);
        }
        Ok(e)
    }

    /// Remove one edge from the graph (both ends' edge lists) and delete it.
    pub fn remove_edge(&mut self, e: Handle) -> R<()> {
        let Some(ends) = self.graph.slot(e).ends() else {
            return Ok(());
        };
        let eid = self.graph.id_of(e);
        let (source, target) = (ends.source(), ends.target());
        let ends_ids = if source == target {
            vec![source]
        } else {
            vec![source, target]
        };
        for end in ends_ids {
            if let Some(h) = self.handle_of(end)? {
                self.graph.remove_edge_entry(h, eid);
            }
            self.graph.edge_removes.push((end, eid));
        }
        self.mark_deleted(e);
        Ok(())
    }

    fn mark_deleted(&mut self, h: Handle) {
        let id = self.graph.id_of(h);
        let s = self.graph.slot_mut(h);
        if s.state != SlotState::Deleted {
            let was_new = s.state == SlotState::New;
            s.state = SlotState::Deleted;
            if !was_new {
                self.graph.deletes.push(id);
            }
        }
    }

    /// `del node` / `del edge` / `del [..]`.
    pub fn destroy(&mut self, v: &Value) -> R<()> {
        match v {
            Value::Anchor(h) => {
                let h = *h;
                if !self.graph.is_live(h) {
                    return Ok(());
                }
                self.check_write(h)?;
                if self.graph.slot(h).class.is_edge() {
                    return self.remove_edge(h);
                }
                self.ensure_edges(h)?;
                let edges = self.graph.edge_ids(h);
                for eid in edges {
                    if let Some(e) = self.handle_of(eid)? {
                        self.remove_edge(e)?;
                    }
                }
                self.mark_deleted(h);
                Ok(())
            }
            Value::List(items) => {
                let items = items.borrow().clone();
                for i in &items {
                    self.destroy(i)?;
                }
                Ok(())
            }
            Value::Tuple(items) => {
                for i in items.iter() {
                    self.destroy(i)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Does `e`'s class match an edge-type filter value (a class or tuple of classes)?
    pub fn class_matches(&self, class: &Class, ty: &Value) -> bool {
        match ty {
            Value::Class(c) => class.is_sub(c),
            Value::Tuple(items) => items.iter().any(|t| self.class_matches(class, t)),
            _ => false,
        }
    }

    /// Evaluate one hop from a set of nodes: the edges crossed and the far nodes, both
    /// de-duplicated, in edge-creation order.
    pub(crate) fn hop(
        &mut self,
        from: &[Handle],
        op: &ast::EdgeOp,
        edge_type: Option<&Value>,
        ctx: &super::Ctx,
    ) -> R<Vec<(Handle, Handle)>> {
        let mut out: Vec<(Handle, Handle)> = Vec::new();
        for &n in from {
            self.ensure_edges(n)?;
            let nid = self.graph.id_of(n);
            self.graph.edges_read.insert(nid, ());
            // Each edge and each far end is looked up in the graph once (the prefetches
            // load what it lacks, as before): `None` where it holds no such anchor,
            // which the loop then asks `handle_of` for, one by one. A handle found is
            // checked for liveness where it is used, as `handle_of` does (a slot, once
            // made, stays the one of its id). A list of slot indexes (a node made by
            // this run) and the ends' slot indexes `connect` kept give the handles
            // without an id lookup; `edge_ids` is then empty (every edge has a handle).
            let (edge_ids, mut edges) = self.graph.edge_handles(n);
            if edges.iter().filter(|h| h.is_none()).nth(1).is_some() {
                self.prefetch(&edge_ids)?;
                for (h, id) in edges.iter_mut().zip(&edge_ids) {
                    if h.is_none() {
                        *h = self.graph.handle_by_id(*id);
                    }
                }
            }
            let mut fars: Vec<Option<(AnchorId, Option<Handle>)>> = vec![None; edges.len()];
            let mut far_missing = 0usize;
            for (e, far) in edges.iter().zip(fars.iter_mut()) {
                if let Some(e) = e
                    && let Some(ends) = self.graph.slot(*e).ends()
                    && let Some((id, at)) = far_end(&ends, nid, op.dir)
                {
                    let fh = if at == NO_SLOT {
                        self.graph.handle_by_id(id)
                    } else {
                        self.graph.handle_of_index(at as usize)
                    };
                    far_missing += usize::from(fh.is_none());
                    *far = Some((id, fh));
                }
            }
            if far_missing >= 2 {
                let far_ids: Vec<AnchorId> = fars.iter().flatten().map(|f| f.0).collect();
                self.prefetch(&far_ids)?;
            }
            for (k, (eh, resolved)) in edges.into_iter().zip(fars).enumerate() {
                let e = match eh {
                    Some(e) if self.graph.is_live(e) => e,
                    Some(_) => continue,
                    None => match edge_ids.get(k) {
                        Some(eid) => match self.handle_of(*eid)? {
                            Some(e) => e,
                            None => continue,
                        },
                        None => continue,
                    },
                };
                let Some(ends) = self.graph.slot(e).ends() else {
                    continue;
                };
                let Some((far, _)) = far_end(&ends, nid, op.dir) else {
                    continue;
                };
                if let Some(t) = edge_type
                    && !self.class_matches(&self.graph.slot(e).class, t)
                {
                    continue;
                }
                if !op.conds.is_empty() && !self.conds_hold(&Value::Anchor(e), &op.conds, ctx)? {
                    continue;
                }
                // An edge loaded only in this loop has its far end found here.
                let fh = match resolved {
                    Some((id, Some(fh))) if id == far => self.graph.is_live(fh).then_some(fh),
                    _ => self.handle_of(far)?,
                };
                let Some(fh) = fh else {
                    continue;
                };
                if !self.can_read(fh)? || !self.can_read(e)? {
                    continue;
                }
                out.push((e, fh));
            }
        }
        Ok(out)
    }

    /// `field op value` conditions of a filter, all of which must hold.
    pub(crate) fn conds_hold(
        &mut self,
        target: &Value,
        conds: &[ast::FieldCond],
        ctx: &super::Ctx,
    ) -> R<bool> {
        for c in conds {
            let Some(fv) = self.try_field(target, &c.field.name)? else {
                return Ok(false);
            };
            let rhs = self.eval(&c.value, ctx)?;
            if !self.compare(c.op, &fv, &rhs)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A field of a node/edge/object, or `None` if it has no such field (or, for an
    /// anchor, when the caller may not read it).
    pub(crate) fn try_field(&mut self, v: &Value, name: &str) -> R<Option<Value>> {
        Ok(match v {
            Value::Anchor(h) => {
                let h = *h;
                if !self.can_read(h)? {
                    return Ok(None);
                }
                self.decode_fields(h)?;
                let s = self.graph.slot(h);
                s.class.field_index.get(name).map(|&i| s.fields[i].clone())
            }
            Value::Instance(i) => i
                .class
                .field_index
                .get(name)
                .map(|&ix| i.fields.borrow()[ix].clone()),
            Value::Dict(d) => d.borrow().get(&HashKey(Value::str(name))).cloned(),
            _ => None,
        })
    }

    /// Apply a `[?:T, a > 1]` filter to a list of values.
    pub(crate) fn apply_filter(
        &mut self,
        items: Vec<Value>,
        filter: &ast::Filter,
        ctx: &super::Ctx,
    ) -> R<Vec<Value>> {
        let ty = match &filter.ty {
            Some(t) => Some(self.eval(t, ctx)?),
            None => None,
        };
        let mut out = Vec::with_capacity(items.len());
        for v in items {
            if let Some(t) = &ty
                && !self.isinstance(&v, t)?
            {
                continue;
            }
            if !filter.conds.is_empty() && !self.conds_hold(&v, &filter.conds, ctx)? {
                continue;
            }
            out.push(v);
        }
        Ok(out)
    }

    /// Nodes (or handles of anchors) named by a value: a node, or a list of nodes.
    pub(crate) fn anchors_of(&mut self, v: &Value) -> R<Vec<Handle>> {
        match v {
            Value::Anchor(h) => Ok(vec![*h]),
            Value::List(items) => Ok(anchor_handles(&items.borrow())),
            Value::Tuple(items) => Ok(anchor_handles(items)),
            Value::None => Ok(vec![]),
            other => {
                let t = self.type_name_of(other);
                Err(self.err(
                    "TypeError",
                    format!("expected a node or a list of nodes, got '{t}'"),
                ))
            }
        }
    }

    /// The default anchor of an edge reference: `self` in node/edge abilities and
    /// methods, `here` in walker abilities.
    pub(crate) fn default_anchor(&self, ctx: &super::Ctx) -> R<Value> {
        if let Some(v @ Value::Anchor(_)) = &ctx.this {
            return Ok(v.clone());
        }
        if let Some(h) = &ctx.here {
            return Ok(h.clone());
        }
        Err(self.err("NameError", "name 'self' is not defined"))
    }

    /// Evaluate an edge reference. Returns `(edges, nodes)` of the last hop, each
    /// de-duplicated (edges by identity, nodes by identity).
    pub(crate) fn eval_edge_ref(
        &mut self,
        r: &ast::EdgeRef,
        ctx: &super::Ctx,
    ) -> R<(Vec<Handle>, Vec<(Handle, Handle)>)> {
        let start = match &r.anchor {
            Some(a) => self.eval(a, ctx)?,
            None => self.default_anchor(ctx)?,
        };
        self.edge_ref_from(start, r, ctx)
    }

    /// The hops of edge reference `r` from its evaluated start anchor `start` (what
    /// `eval_edge_ref` does after the anchor; the compiled core evaluates the anchor
    /// itself).
    pub(crate) fn edge_ref_from(
        &mut self,
        start: Value,
        r: &ast::EdgeRef,
        ctx: &super::Ctx,
    ) -> R<(Vec<Handle>, Vec<(Handle, Handle)>)> {
        let mut current = self.anchors_of(&start)?;
        let mut last: Vec<(Handle, Handle)> = Vec::new();
        for hop in &r.hops {
            let et = match &hop.op.edge_type {
                Some(t) => Some(self.eval(t, ctx)?),
                None => None,
            };
            let mut pairs = self.hop(&current, &hop.op, et.as_ref(), ctx)?;
            if let Some(f) = &hop.filter {
                let ty = match &f.ty {
                    Some(t) => Some(self.eval(t, ctx)?),
                    None => None,
                };
                let mut kept = Vec::with_capacity(pairs.len());
                for (e, n) in pairs {
                    let nv = Value::Anchor(n);
                    if let Some(t) = &ty
                        && !self.isinstance(&nv, t)?
                    {
                        continue;
                    }
                    if !f.conds.is_empty() && !self.conds_hold(&nv, &f.conds, ctx)? {
                        continue;
                    }
                    kept.push((e, n));
                }
                pairs = kept;
            }
            if let Some(pin) = &hop.pin {
                let pv = self.eval(pin, ctx)?;
                if let Value::Class(_) = &pv {
                    // `[x --> Item]`: a node type at the end keeps the nodes of that type.
                    let mut kept = Vec::with_capacity(pairs.len());
                    for (e, n) in pairs {
                        if self.isinstance(&Value::Anchor(n), &pv)? {
                            kept.push((e, n));
                        }
                    }
                    pairs = kept;
                } else {
                    let pins = self.anchors_of(&pv)?;
                    pairs.retain(|(_, n)| pins.contains(n));
                }
            }
            let mut seen_nodes =
                FxHashMap::with_capacity_and_hasher(pairs.len(), Default::default());
            let mut nodes = Vec::with_capacity(pairs.len());
            for (_, n) in &pairs {
                if seen_nodes.insert(*n, ()).is_none() {
                    nodes.push(*n);
                }
            }
            current = nodes;
            last = pairs;
        }
        let mut seen = FxHashMap::with_capacity_and_hasher(last.len(), Default::default());
        last.retain(|(e, _)| seen.insert(*e, ()).is_none());
        Ok((current, last))
    }

    // -----------------------------------------------------------------------------------
    // Access control
    // -----------------------------------------------------------------------------------

    /// The level the current root has on an anchor by its own policy: owner → WRITE,
    /// a per-root grant, else the public level (the shared root floored at CONNECT).
    /// Callers decide through `may`/`check_access`, never by reading this directly.
    fn own_level(&self, h: Handle) -> i8 {
        let s = self.graph.slot(h);
        let me = self.host.user_root();
        let id = self.graph.id_of(h);
        if self.graph.owner_of(h) == me || id == me {
            return level::WRITE;
        }
        if let Some((_, l)) = s.access.roots.iter().find(|(r, _)| *r == me) {
            return *l;
        }
        let shared = self.host.shared_root();
        let mut l = s.access.public.unwrap_or(level::NO_ACCESS);
        // The shared root is floored at CONNECT unless explicitly set (spec rule 16).
        if id == shared && s.access.public.is_none() {
            l = level::CONNECT;
        }
        l
    }

    /// THE access decision: may the current root act on anchor `h` at `need`
    /// (`level::READ` to load, traverse, return or print; `CONNECT` to attach or detach
    /// an edge; `WRITE` to change, save or delete)? Every path that reads, returns,
    /// prints, saves, links or unlinks an anchor asks here.
    ///
    /// An edge is readable by its own policy, or when both of its ends are readable (it
    /// says nothing the two nodes do not already show): a node a user attached to
    /// `root.shared` and then opened is visible with the edge that leads to it.
    pub(crate) fn may(&mut self, h: Handle, need: i8) -> R<bool> {
        if !self.graph.is_live(h) {
            return Ok(false);
        }
        let own = self.own_level(h);
        if own >= need {
            return Ok(true);
        }
        if need != level::READ {
            return Ok(false);
        }
        let Some(ends) = self.graph.slot(h).ends() else {
            return Ok(false);
        };
        for end in [ends.source(), ends.target()] {
            match self.handle_of(end)? {
                Some(e) if self.own_level(e) >= level::READ => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// `may`, or a `PermissionError` naming the level and the anchor.
    pub(crate) fn check_access(&mut self, h: Handle, need: i8) -> R<()> {
        if self.may(h, need)? {
            return Ok(());
        }
        if self.graph.is_stale(h) {
            return Err(self.err(
                "ReferenceError",
                "this node handle belongs to an earlier request and cannot be used here; \
                 keep jid(node) and look the node up with jobj(id) instead",
            ));
        }
        let name = match need {
            level::READ => "READ",
            level::CONNECT => "CONNECT",
            _ => "WRITE",
        };
        let id = crate::host::format_id(self.graph.id_of(h));
        Err(self.err("PermissionError", format!("no {name} access to {id}")))
    }

    pub(crate) fn can_read(&mut self, h: Handle) -> R<bool> {
        self.may(h, level::READ)
    }

    pub(crate) fn check_read(&mut self, h: Handle) -> R<()> {
        self.check_access(h, level::READ)
    }

    pub(crate) fn check_connect(&mut self, h: Handle) -> R<()> {
        self.check_access(h, level::CONNECT)
    }

    pub(crate) fn check_write(&mut self, h: Handle) -> R<()> {
        self.check_access(h, level::WRITE)
    }

    /// The fields of anchor `h` after a READ check (decoded from storage on first use).
    pub(crate) fn readable_fields(&mut self, h: Handle) -> R<()> {
        self.check_read(h)?;
        self.decode_fields(h)
    }
}

/// The anchors among `items`, in order.
fn anchor_handles(items: &[Value]) -> Vec<Handle> {
    items
        .iter()
        .filter_map(|x| {
            if let Value::Anchor(h) = x {
                Some(*h)
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{EdgeList, FIRST_CHUNK, Slots, stale_slot};

    #[test]
    fn slot_ends_and_edge_lists_make_a_slot_no_larger() {
        // The edge list's kind sits in the niche of a `Vec`'s capacity (its list of
        // ids is boxed), the access policy is out of line, a node's edges and an
        // edge's ends share their bytes, and the id and owner live in the graph's
        // tables, and the fields are a boxed slice: a slot is 96 bytes (160 and 192
        // before).
        assert_eq!(std::mem::size_of::<EdgeList>(), 24);
        assert_eq!(std::mem::size_of::<super::SlotAccess>(), 8);
        assert_eq!(std::mem::size_of::<super::SlotEnds>(), 48);
        assert_eq!(std::mem::size_of::<super::Links>(), 48);
        assert_eq!(std::mem::align_of::<super::Slot>(), 8);
        assert!(std::mem::size_of::<super::Slot>() <= 96);
    }

    #[test]
    fn edge_lists_keep_slot_indexes_until_an_entry_must_be_an_id() {
        let ids: Vec<u128> = (100..110).collect();
        let mut list = EdgeList::default();
        list.push(100, 0, &ids);
        list.push(103, 3, &ids);
        list.push(105, 5, &ids);
        assert!(matches!(list, EdgeList::Slots(_)));
        assert_eq!(list.ids(&ids), vec![100, 103, 105]);
        list.remove(103, &ids);
        assert!(matches!(list, EdgeList::Slots(_)));
        assert_eq!(list.ids(&ids), vec![100, 105]);
        // An index that cannot be kept (beyond `u32`, or unknown) turns the list into
        // one of ids, in the same order.
        list.push(999, usize::MAX, &ids);
        assert!(matches!(list, EdgeList::Ids(_)));
        assert_eq!(list.ids(&ids), vec![100, 105, 999]);
        list.push(107, 7, &ids);
        list.remove(100, &ids);
        assert_eq!(list.len(), 3);
        assert_eq!(list.into_ids(&ids), vec![105, 999, 107]);
    }

    #[test]
    fn slots_keep_order_and_index_across_chunks() {
        let mut slots = Slots::default();
        let n = FIRST_CHUNK * 9 + 5;
        for i in 0..n {
            let mut s = *stale_slot();
            s.owner = i as u32;
            slots.push(s);
        }
        assert_eq!(slots.len(), n);
        // Chunk boundaries: 64, 128, 256, 512 ...
        for i in [0, 63, 64, 65, 127, 128, 255, 256, 511, 512, n - 1] {
            assert_eq!(slots[i].owner, i as u32, "slot {i}");
        }
        assert!(slots.iter().map(|s| s.owner).eq(0..n as u32));
        for s in &mut slots {
            s.owner += 1;
        }
        slots[100].owner = 0;
        let owners: Vec<u32> = slots.iter_mut().map(|s| s.owner).collect();
        assert_eq!(owners[99], 100);
        assert_eq!(owners[100], 0);
        assert_eq!(owners[n - 1], n as u32);
    }

    #[test]
    fn slots_locate_covers_each_index_once() {
        let mut expect = (0, 0);
        for i in 0..FIRST_CHUNK * 16 {
            let at = Slots::locate(i);
            assert_eq!(at, expect, "index {i}");
            let cap = if at.0 == 0 {
                FIRST_CHUNK
            } else {
                FIRST_CHUNK << (at.0 - 1)
            };
            expect = if at.1 + 1 == cap {
                (at.0 + 1, 0)
            } else {
                (at.0, at.1 + 1)
            };
        }
    }
}
