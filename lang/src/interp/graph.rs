//! The graph arena (the run's L1): nodes and edges by handle, edge queries, connect and
//! disconnect, and the change log that becomes a `CommitSet`.

use super::value::*;
use super::{Interp, R};
use crate::ast::{self, EdgeDir};
use crate::host::{AccessPolicy, AnchorId, EdgeEnds};
use std::hash::{BuildHasher, Hasher};
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

/// One node or edge in memory.
pub struct Slot {
    pub id: AnchorId,
    pub class: Rc<Class>,
    pub fields: Vec<Value>,
    /// Nodes: edge ids in creation order (complete only when `edges_loaded`).
    pub edges: Vec<AnchorId>,
    /// False while a loaded node's edge list is still in the store: appends are logged
    /// without reading it; a traversal loads it first (`Interp::ensure_edges`).
    pub edges_loaded: bool,
    /// Edges: the two ends.
    pub ends: Option<EdgeEnds>,
    pub owner: AnchorId,
    pub access: AccessPolicy,
    pub state: SlotState,
}

/// All anchors a run touched.
pub struct Graph {
    pub slots: Vec<Slot>,
    pub by_id: FxHashMap<AnchorId, Handle>,
    pub edge_adds: Vec<(AnchorId, AnchorId)>,
    pub edge_removes: Vec<(AnchorId, AnchorId)>,
    pub deletes: Vec<AnchorId>,
    /// Nodes whose edge lists this run read (for `CommitSet::edges_read`).
    pub edges_read: FxHashMap<AnchorId, ()>,
    rng: (u64, u64),
}

impl Default for Graph {
    fn default() -> Graph {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id() as u64);
        let a = h.finish() | 1;
        let mut h2 = std::collections::hash_map::RandomState::new().build_hasher();
        h2.write_u64(a);
        let b = h2.finish() | 2;
        Graph {
            slots: Vec::new(),
            by_id: FxHashMap::default(),
            edge_adds: Vec::new(),
            edge_removes: Vec::new(),
            deletes: Vec::new(),
            edges_read: FxHashMap::default(),
            rng: (a, b),
        }
    }
}

impl Graph {
    /// 128 random bits (xorshift128+ seeded from the OS-random `RandomState`).
    pub fn fresh_id(&mut self) -> AnchorId {
        let mut next = || {
            let (mut s1, s0) = self.rng;
            let r = s0.wrapping_add(s1);
            s1 ^= s1 << 23;
            self.rng = (s0, s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26));
            r
        };
        let hi = next();
        let lo = next();
        (u128::from(hi) << 64) | u128::from(lo)
    }

    pub fn new_anchor(&mut self, class: Rc<Class>, fields: Vec<Value>, owner: AnchorId) -> Handle {
        let id = self.fresh_id();
        self.insert(Slot {
            id,
            class,
            fields,
            edges: Vec::new(),
            edges_loaded: true,
            ends: None,
            owner,
            access: AccessPolicy::default(),
            state: SlotState::New,
        })
    }

    pub fn insert(&mut self, slot: Slot) -> Handle {
        let h = self.slots.len() as Handle;
        self.by_id.insert(slot.id, h);
        self.slots.push(slot);
        h
    }

    pub fn slot(&self, h: Handle) -> &Slot {
        &self.slots[h as usize]
    }

    pub fn slot_mut(&mut self, h: Handle) -> &mut Slot {
        &mut self.slots[h as usize]
    }

    pub fn mark_dirty(&mut self, h: Handle) {
        let s = &mut self.slots[h as usize];
        if s.state == SlotState::Clean {
            s.state = SlotState::Dirty;
        }
    }

    /// Log `edge` as appended to node `h`: O(1) whatever the node's degree. If the
    /// node's stored list is not loaded yet, `edges` holds just the pending appends.
    pub fn append_edge(&mut self, h: Handle, edge: AnchorId) {
        let slot = &mut self.slots[h as usize];
        slot.edges.push(edge);
        let node = slot.id;
        self.edge_adds.push((node, edge));
    }

    pub fn is_live(&self, h: Handle) -> bool {
        self.slots[h as usize].state != SlotState::Deleted
    }
}

/// How a hop moves from a node along one edge.
fn far_end(ends: &EdgeEnds, from: AnchorId, dir: EdgeDir) -> Option<AnchorId> {
    let out = ends.source == from;
    let inn = ends.target == from;
    match dir {
        EdgeDir::Out if out => Some(ends.target),
        EdgeDir::Out if ends.undirected && inn => Some(ends.source),
        EdgeDir::In if inn => Some(ends.source),
        EdgeDir::In if ends.undirected && out => Some(ends.target),
        EdgeDir::Any if out => Some(ends.target),
        EdgeDir::Any if inn => Some(ends.source),
        _ => None,
    }
}

impl Interp<'_> {
    /// The handle of an anchor id, loading it through the host on first use.
    pub fn handle_of(&mut self, id: AnchorId) -> R<Option<Handle>> {
        if let Some(&h) = self.graph.by_id.get(&id) {
            return Ok(if self.graph.is_live(h) { Some(h) } else { None });
        }
        self.load_anchor(id)
    }

    /// Make sure node `h`'s edge list is in memory (lazy-loading hosts leave it out).
    pub(crate) fn ensure_edges(&mut self, h: Handle) -> R<()> {
        if self.graph.slot(h).edges_loaded {
            return Ok(());
        }
        let id = self.graph.slot(h).id;
        let mut stored = self.host.load_edges(id).map_err(super::Interrupt::Host)?;
        // Edges this run already deleted stay gone; appends made before the load are not
        // committed yet, so they follow the stored ones.
        stored.retain(|e| {
            self.graph
                .by_id
                .get(e)
                .is_none_or(|&eh| self.graph.is_live(eh))
        });
        let slot = self.graph.slot_mut(h);
        let pending = std::mem::take(&mut slot.edges);
        slot.edges = stored;
        slot.edges.extend(pending);
        slot.edges_loaded = true;
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
        if let Some(h) = self.handle_of(id)? {
            return Ok(h);
        }
        let class = self
            .builtin_class("Root")
            .ok_or_else(|| super::Interrupt::Limit("Root class missing".into()))?;
        Ok(self.graph.insert(Slot {
            id,
            class,
            fields: Vec::new(),
            edges: Vec::new(),
            edges_loaded: true,
            ends: None,
            owner: id,
            access: AccessPolicy::default(),
            state: SlotState::New,
        }))
    }

    pub fn anchor_class(&self, h: Handle) -> Rc<Class> {
        self.graph.slot(h).class.clone()
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
                self.graph.new_anchor(c, Vec::new(), owner)
            }
        };
        self.check_connect(src)?;
        self.check_connect(dst)?;
        let (sid, did, eid) = (
            self.graph.slot(src).id,
            self.graph.slot(dst).id,
            self.graph.slot(e).id,
        );
        self.graph.slot_mut(e).ends = Some(EdgeEnds {
            source: sid,
            target: did,
            undirected,
        });
        self.graph.append_edge(src, eid);
        if did != sid {
            self.graph.append_edge(dst, eid);
        }
        Ok(e)
    }

    /// Remove one edge from the graph (both ends' edge lists) and delete it.
    pub fn remove_edge(&mut self, e: Handle) -> R<()> {
        let Some(ends) = self.graph.slot(e).ends else {
            return Ok(());
        };
        let eid = self.graph.slot(e).id;
        let ends_ids = if ends.source == ends.target {
            vec![ends.source]
        } else {
            vec![ends.source, ends.target]
        };
        for end in ends_ids {
            if let Some(h) = self.handle_of(end)? {
                let slot = self.graph.slot_mut(h);
                if let Some(pos) = slot.edges.iter().position(|x| *x == eid) {
                    slot.edges.remove(pos);
                }
            }
            self.graph.edge_removes.push((end, eid));
        }
        self.mark_deleted(e);
        Ok(())
    }

    fn mark_deleted(&mut self, h: Handle) {
        let s = self.graph.slot_mut(h);
        if s.state != SlotState::Deleted {
            let was_new = s.state == SlotState::New;
            s.state = SlotState::Deleted;
            let id = s.id;
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
                let edges = self.graph.slot(h).edges.clone();
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
            let nid = self.graph.slot(n).id;
            self.graph.edges_read.insert(nid, ());
            let edge_ids = self.graph.slot(n).edges.clone();
            self.prefetch(&edge_ids)?;
            let far_ids: Vec<AnchorId> = edge_ids
                .iter()
                .filter_map(|e| self.graph.by_id.get(e))
                .filter_map(|&e| self.graph.slot(e).ends)
                .filter_map(|ends| far_end(&ends, nid, op.dir))
                .collect();
            self.prefetch(&far_ids)?;
            for eid in edge_ids {
                let Some(e) = self.handle_of(eid)? else {
                    continue;
                };
                let Some(ends) = self.graph.slot(e).ends else {
                    continue;
                };
                let Some(far) = far_end(&ends, nid, op.dir) else {
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
                let Some(fh) = self.handle_of(far)? else {
                    continue;
                };
                if !self.can_read(fh) {
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
            let Some(fv) = self.try_field(target, &c.field.name) else {
                return Ok(false);
            };
            let rhs = self.eval(&c.value, ctx)?;
            if !self.compare(c.op, &fv, &rhs)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A field of a node/edge/object, or `None` if it has no such field.
    pub(crate) fn try_field(&self, v: &Value, name: &str) -> Option<Value> {
        match v {
            Value::Anchor(h) => {
                let s = self.graph.slot(*h);
                s.class.field_index.get(name).map(|&i| s.fields[i].clone())
            }
            Value::Instance(i) => i
                .class
                .field_index
                .get(name)
                .map(|&ix| i.fields.borrow()[ix].clone()),
            Value::Dict(d) => d.borrow().get(&HashKey(Value::str(name))).cloned(),
            _ => None,
        }
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
                let pins = self.anchors_of(&pv)?;
                pairs.retain(|(_, n)| pins.contains(n));
            }
            let mut seen_nodes = FxHashMap::default();
            let mut nodes = Vec::with_capacity(pairs.len());
            for (_, n) in &pairs {
                if seen_nodes.insert(*n, ()).is_none() {
                    nodes.push(*n);
                }
            }
            current = nodes;
            last = pairs;
        }
        let mut seen = FxHashMap::default();
        last.retain(|(e, _)| seen.insert(*e, ()).is_none());
        Ok((current, last))
    }

    // -----------------------------------------------------------------------------------
    // Access control
    // -----------------------------------------------------------------------------------

    /// The level the current root has on an anchor.
    pub fn access_level(&self, h: Handle) -> i8 {
        let s = self.graph.slot(h);
        let me = self.host.user_root();
        if s.owner == me || s.id == me {
            return crate::host::level::WRITE;
        }
        if let Some((_, l)) = s.access.roots.iter().find(|(r, _)| *r == me) {
            return *l;
        }
        let shared = self.host.shared_root();
        let mut level = s.access.public.unwrap_or(crate::host::level::NO_ACCESS);
        // The shared root is floored at CONNECT unless explicitly set (spec rule 16).
        if s.id == shared && s.access.public.is_none() {
            level = crate::host::level::CONNECT;
        }
        level
    }

    pub fn can_read(&self, h: Handle) -> bool {
        self.access_level(h) >= crate::host::level::READ
    }

    pub(crate) fn check_connect(&self, h: Handle) -> R<()> {
        self.check_level(h, crate::host::level::CONNECT, "CONNECT")
    }

    pub(crate) fn check_write(&self, h: Handle) -> R<()> {
        self.check_level(h, crate::host::level::WRITE, "WRITE")
    }

    fn check_level(&self, h: Handle, level: i8, name: &str) -> R<()> {
        if self.access_level(h) >= level {
            return Ok(());
        }
        let id = crate::host::format_id(self.graph.slot(h).id);
        Err(self.err("PermissionError", format!("no {name} access to {id}")))
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
