//! Crossing the host boundary: anchors to and from their stored form, and the commit of
//! a run's changes.

use super::encode::{Dialect, Key, Part, Shape, TextOut, identity};
use super::graph::{EdgeList, Links, Slot, SlotEnds, SlotState};
use super::value::*;
use super::{Interp, Interrupt, R};
use crate::host::{AnchorKind, CommitSet, StoredAnchor, format_id, parse_id};
use serde_json::{Map, Value as J};
use std::rc::Rc;

/// Deepest nesting of a stored field value. The JSON reader of the stores refuses
/// nesting beyond 128, so a row written deeper could never be read back.
const STORE_MAX_DEPTH: usize = 100;

impl Interp<'_> {
    /// Materialise an anchor from the host into the arena.
    pub(crate) fn load_anchor(&mut self, id: crate::host::AnchorId) -> R<Option<Handle>> {
        let stored = match self.host.load(id) {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(None),
            Err(e) => return Err(Interrupt::Host(e)),
        };
        self.materialise(stored)
    }

    /// Load every id not yet in the arena with one host call (a traversal's prefetch).
    pub(crate) fn prefetch(&mut self, ids: &[crate::host::AnchorId]) -> R<()> {
        let missing: Vec<crate::host::AnchorId> = ids
            .iter()
            .copied()
            .filter(|id| !self.graph.contains_id(*id))
            .collect();
        if missing.len() < 2 {
            return Ok(());
        }
        let loaded = self.host.load_many(&missing).map_err(Interrupt::Host)?;
        for stored in loaded {
            if !self.graph.contains_id(stored.id) {
                self.materialise(stored)?;
            }
        }
        Ok(())
    }

    /// Put a stored anchor into the arena. Its fields stay as stored text until first
    /// used (`decode_fields`), so loading never follows references.
    pub(crate) fn materialise(&mut self, stored: StoredAnchor) -> R<Option<Handle>> {
        let Some(class) = self.classes.get(&*stored.arch_type).cloned() else {
            // The archetype no longer exists in this program: leave it unread.
            return Ok(None);
        };
        let mut slot = Slot::new(class, Vec::new(), SlotState::Clean);
        slot.pending = Some(Box::new(stored.fields));
        slot.links = match stored.ends {
            Some(ends) => Links::Edge(SlotEnds::stored(ends)),
            None => Links::Node {
                loaded: stored.edges.is_some(),
                edges: EdgeList::Ids(Box::new(stored.edges.unwrap_or_default())),
            },
        };
        slot.access = stored.access.into();
        let h = self.graph.insert(stored.id, stored.owner, slot);
        Ok(Some(h))
    }

    /// The run actor's `Stale` message: reload each named anchor this run holds unmodified
    /// and whose fields it has not read yet (still `pending`), so what it reads next is
    /// current. Anything the run already read stays as it was (its decisions were made
    /// on it; a commit that writes it is version-checked). An anchor deleted elsewhere
    /// or now of another archetype is left alone for the commit to find.
    pub(crate) fn refresh_stale(&mut self, stale: crate::host::Stale) -> R<()> {
        let unread = |slot: &Slot| slot.state == SlotState::Clean && slot.pending.is_some();
        let ids: Vec<crate::host::AnchorId> = match stale {
            crate::host::Stale::Anchors(ids) => ids
                .into_iter()
                .filter(|id| {
                    self.graph
                        .handle_by_id(*id)
                        .is_some_and(|h| unread(self.graph.slot(h)))
                })
                .collect(),
            crate::host::Stale::All => self
                .graph
                .indexed_slots()
                .filter(|(_, s)| unread(s))
                .map(|(id, _)| id)
                .collect(),
        };
        for id in ids {
            let Some(stored) = self.host.load(id).map_err(Interrupt::Host)? else {
                continue;
            };
            let Some(h) = self.graph.handle_by_id(id) else {
                continue;
            };
            let slot = self.graph.slot_mut(h);
            if *slot.class.name != *stored.arch_type {
                continue;
            }
            slot.pending = Some(Box::new(stored.fields));
            slot.access = stored.access.into();
            self.graph.set_owner(h, stored.owner);
        }
        Ok(())
    }

    /// Decode a loaded anchor's stored fields into values (once). A reference in a field
    /// loads the referenced row (without decoding its fields in turn).
    pub(crate) fn decode_fields(&mut self, h: Handle) -> R<()> {
        let Some(text) = self.graph.slot_mut(h).pending.take() else {
            return Ok(());
        };
        let class = self.graph.slot(h).class.clone();
        let stored_fields = match serde_json::from_str::<Map<String, J>>(&text) {
            Ok(m) => m,
            Err(e) => {
                let id = format_id(self.graph.id_of(h));
                return Err(Interrupt::Host(crate::host::HostError::Store(format!(
                    "stored anchor {id} has unreadable fields: {e}"
                ))));
            }
        };
        let mut fields = Vec::with_capacity(class.fields.len());
        for f in &class.fields {
            let v = match stored_fields.get(&*f.name) {
                Some(j) => self.from_json(j)?,
                None => match &f.default {
                    // A field added since the anchor was written gets its default.
                    Some(d) => {
                        let scope = class
                            .scope
                            .borrow()
                            .clone()
                            .unwrap_or_else(|| self.builtins.clone());
                        let ctx = super::Ctx {
                            scope,
                            this: None,
                            here: None,
                            visitor: None,
                            class: Some(class.clone()),
                            file: class.file,
                        };
                        self.eval(d, &ctx)?
                    }
                    None => Value::None,
                },
            };
            fields.push(v);
        }
        self.graph.slot_mut(h).fields = fields.into_boxed_slice();
        Ok(())
    }

    /// Value of a stored JSON field.
    #[allow(clippy::wrong_self_convention)] // `self` is the interpreter doing the conversion, not the value converted
    pub fn from_json(&mut self, j: &J) -> R<Value> {
        Ok(match j {
            J::Null => Value::None,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            J::String(s) => Value::str(s),
            J::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(self.from_json(x)?);
                }
                Value::list(out)
            }
            J::Object(m) => {
                if let Some(J::String(id)) = m.get("__ref__") {
                    return Ok(
                        match parse_id(id)
                            .map(|id| self.handle_of(id))
                            .transpose()?
                            .flatten()
                        {
                            Some(h) => Value::Anchor(h),
                            None => Value::None,
                        },
                    );
                }
                if let Some(J::String(b)) = m.get("__bigint__") {
                    return Ok(b
                        .parse::<num_bigint::BigInt>()
                        .map(Value::from_bigint)
                        .unwrap_or(Value::None));
                }
                if let Some(J::Array(p)) = m.get("__complex__") {
                    let part = |i: usize| match p.get(i) {
                        Some(J::String(t)) => crate::pyfmt::parse_float(t),
                        _ => None,
                    };
                    return Ok(match (p.len(), part(0), part(1)) {
                        (2, Some(re), Some(im)) => Value::Complex(re, im),
                        _ => Value::None,
                    });
                }
                if let Some(J::String(h)) = m.get("__bytes__") {
                    return Ok(match crate::pyfmt::bytes_fromhex(h) {
                        Ok(b) => Value::Bytes(Rc::from(b)),
                        Err(_) => Value::None,
                    });
                }
                if let Some(J::String(h)) = m.get("__bytearray__") {
                    return Ok(match crate::pyfmt::bytes_fromhex(h) {
                        Ok(b) => super::builtins::bytearray::new(b),
                        Err(_) => Value::None,
                    });
                }
                if let Some(J::String(f)) = m.get("__float__") {
                    return Ok(Value::Float(
                        crate::pyfmt::parse_float(f).unwrap_or(f64::NAN),
                    ));
                }
                if let Some(J::Array(items)) = m.get("__tuple__") {
                    let mut out = Vec::new();
                    for x in items {
                        out.push(self.from_json(x)?);
                    }
                    return Ok(Value::tuple(out));
                }
                for tag in ["__set__", "__frozenset__"] {
                    if let Some(J::Array(items)) = m.get(tag) {
                        let mut s = Set::default();
                        for x in items {
                            let v = self.from_json(x)?;
                            s.insert(self.hash_key(&v)?);
                        }
                        let s = Rc::new(std::cell::RefCell::new(s));
                        return Ok(if tag == "__set__" {
                            Value::Set(s)
                        } else {
                            Value::FrozenSet(s)
                        });
                    }
                }
                if let Some(J::Array(pairs)) = m.get("__dict__") {
                    let mut d = Dict::default();
                    for p in pairs {
                        if let J::Array(kv) = p
                            && kv.len() == 2
                        {
                            let k = self.from_json(&kv[0])?;
                            let v = self.from_json(&kv[1])?;
                            d.insert(self.hash_key(&k)?, v);
                        }
                    }
                    return Ok(Value::dict(d));
                }
                if let Some(v) = self.stdlib_from_stored(m)? {
                    return Ok(v);
                }
                if let (Some(J::String(e)), Some(J::String(n))) = (m.get("__enum__"), m.get("name"))
                {
                    if let Some(c) = self.classes.get(e.as_str()).cloned()
                        && let Some(v) = c.find_static(n)
                    {
                        return Ok(v);
                    }
                    return Ok(Value::None);
                }
                if let Some(J::String(o)) = m.get("__obj__") {
                    let Some(class) = self.classes.get(o.as_str()).cloned() else {
                        return Ok(Value::None);
                    };
                    let empty = Map::new();
                    let stored = match m.get("fields") {
                        Some(J::Object(f)) => f,
                        _ => &empty,
                    };
                    let mut fields = Vec::with_capacity(class.fields.len());
                    for f in &class.fields {
                        fields.push(match stored.get(&*f.name) {
                            Some(x) => self.from_json(x)?,
                            None => Value::None,
                        });
                    }
                    return Ok(Value::Instance(Rc::new(Instance {
                        class,
                        fields: std::cell::RefCell::new(fields),
                        extra: Default::default(),
                        id: next_id(),
                        user_hash: Default::default(),
                    })));
                }
                let mut d = Dict::default();
                for (k, x) in m {
                    let v = self.from_json(x)?;
                    d.insert(HashKey(Value::str(k)), v);
                }
                Value::dict(d)
            }
        })
    }

    /// Persist everything the run changed through the host, then run `on_commit`
    /// callbacks.
    pub fn commit(&mut self) -> R<()> {
        self.commit_as(false)
    }

    /// `commit` as a served call's last step (`Host::commit_last` when no `on_commit`
    /// callback is registered).
    pub(crate) fn commit_last(&mut self) -> R<()> {
        self.commit_as(true)
    }

    fn commit_as(&mut self, last: bool) -> R<()> {
        let mut set = CommitSet::default();
        // A host that keeps nothing (`svc run --no-store`) gets no changes, but every
        // stored form is still made, so what cannot be persisted fails as it would.
        let kept = self.host.keeps_commits();
        if !kept {
            self.commit_discarded()?;
        } else {
            let n = self.graph.slots.len();
            for h in 0..n {
                let (state, keep) = {
                    let s = &self.graph.slots[h];
                    (s.state, persisted(s))
                };
                if !matches!(state, SlotState::New | SlotState::Dirty) || !keep {
                    continue;
                }
                let h = self.graph.handle_at(h);
                let stored = self.stored_form(h)?;
                set.upserts.push(stored);
            }
            let live_new: FxHashMap<crate::host::AnchorId, bool> = self
                .graph
                .slots_with_ids()
                .filter(|(_, s)| s.state != SlotState::Deleted)
                .map(|(id, s)| (id, persisted(s)))
                .collect();
            set.edge_adds = std::mem::take(&mut self.graph.edge_adds)
                .into_iter()
                .filter(|(n, e)| {
                    live_new.get(n).copied().unwrap_or(false) && live_new.contains_key(e)
                })
                .collect();
            set.edge_removes = std::mem::take(&mut self.graph.edge_removes);
            set.deletes = std::mem::take(&mut self.graph.deletes);
            // Traversed edge lists stay checked by every later commit of the call.
            set.edges_read = self.graph.edges_read.keys().copied().collect();
            if !set.is_empty() {
                if last && self.on_commit.is_empty() {
                    self.host.commit_last(set)
                } else {
                    self.host.commit(set)
                }
                .map_err(Interrupt::Host)?;
                self.durable_commits += 1;
            }
            for s in &mut self.graph.slots {
                if matches!(s.state, SlotState::New | SlotState::Dirty) {
                    s.state = SlotState::Clean;
                }
            }
        }
        let callbacks = std::mem::take(&mut self.on_commit);
        for cb in callbacks {
            self.call_value(&cb, vec![], vec![])?;
        }
        Ok(())
    }

    /// The commit of a host that keeps nothing (`svc run --no-store`): every changed
    /// anchor that would be stored is checked (`check_storable`) and marked clean in
    /// one pass over the slots (a stored commit makes every stored form before it
    /// marks any slot). When a check fails, the slots this pass already marked get
    /// their state back, so the graph is as a failed stored commit leaves it.
    fn commit_discarded(&mut self) -> R<()> {
        let mut discarded = false;
        // The slots marked so far, as runs of adjacent slots of one state before:
        // (first index, end index, state). A run that made its anchors one after
        // another has a run or two, not an entry per slot.
        let mut marked: Vec<(usize, usize, SlotState)> = Vec::new();
        let n = self.graph.slots.len();
        for i in 0..n {
            let s = &mut self.graph.slots[i];
            let state = s.state;
            if !matches!(state, SlotState::New | SlotState::Dirty) {
                continue;
            }
            if persisted(s) {
                if !plain_fields(s) {
                    let h = self.graph.handle_at(i);
                    if let Err(e) = self.check_storable(h) {
                        for &(start, end, before) in &marked {
                            for j in start..end {
                                self.graph.slots[j].state = before;
                            }
                        }
                        return Err(e);
                    }
                }
                discarded = true;
            }
            match marked.last_mut() {
                Some(run) if run.1 == i && run.2 == state => run.1 = i + 1,
                _ => marked.push((i, i + 1, state)),
            }
            self.graph.slots[i].state = SlotState::Clean;
        }
        let g = &mut self.graph;
        discarded |= g.edges_added
            || !(g.edge_adds.is_empty() && g.edge_removes.is_empty() && g.deletes.is_empty());
        g.edges_added = false;
        g.edge_adds.clear();
        g.edge_removes.clear();
        g.deletes.clear();
        // Counted as a commit that stored something, as the host would have.
        if discarded {
            self.durable_commits += 1;
        }
        Ok(())
    }

    /// What `stored_form` checks, for a host that keeps nothing: the stored text is
    /// made only when some field holds a value other than `None`, a bool, a number, a
    /// string, an anchor or an enum member (whose encoding cannot fail), so a value that
    /// cannot be persisted fails with the same error at the same point.
    fn check_storable(&mut self, h: Handle) -> R<()> {
        self.decode_fields(h)?;
        if plain_fields(self.graph.slot(h)) {
            return Ok(());
        }
        self.stored_form(h).map(drop)
    }

    fn stored_form(&mut self, h: Handle) -> R<StoredAnchor> {
        self.decode_fields(h)?;
        let (id, owner) = (self.graph.id_of(h), self.graph.owner_of(h));
        let (class, fields, ends, access) = {
            let s = self.graph.slot(h);
            (
                s.class.clone(),
                s.fields.clone(),
                s.ends().map(|e| e.ids()),
                crate::host::AccessPolicy::clone(&s.access),
            )
        };
        let mut out = TextOut::compact(16 + 24 * fields.len());
        let entries = class
            .fields
            .iter()
            .zip(fields)
            .filter(|(f, _)| !f.is_static)
            .map(|(f, x)| (Key::Name(f.name.clone()), Part::Value(x)))
            .collect();
        self.encode_shape(&mut Store, Shape::Object { id: None, entries }, 0, &mut out)?;
        let text = out.text;
        Ok(StoredAnchor {
            id,
            kind: if class.is_edge() {
                AnchorKind::Edge
            } else {
                AnchorKind::Node
            },
            arch_module: class.stored.module.clone(),
            arch_type: class.stored.name.clone(),
            fingerprint: class.stored.fingerprint.clone(),
            owner,
            access,
            fields: text,
            ends,
            edges: None,
        })
    }
}

/// The stored form of field values (`stored_form`): JSON text that reads back as the
/// same value. Tuples, sets, dicts with keys other than plain strings, big ints and
/// non-finite floats are tagged objects (`{"__tuple__": [...]}`); anchors are references
/// by id (`{"__ref__": id}`); objects carry their archetype's name. Deeper than
/// `STORE_MAX_DEPTH`, or a container inside itself, is a `ValueError`, never a crash and
/// never a row the store could not read back.
struct Store;

impl Store {
    /// `{"<tag>": [items]}`: the tag adds no nesting level. `id`: the container's
    /// identity, for cycle detection.
    fn tagged(id: Option<usize>, tag: &'static str, items: Vec<Part>) -> Shape {
        Shape::Object {
            id,
            entries: vec![(
                Key::Fixed(tag),
                Part::Shape {
                    shape: Box::new(Shape::Array { id: None, items }),
                    deeper: false,
                },
            )],
        }
    }
}

impl Dialect for Store {
    type Out = TextOut;

    fn shape(
        &mut self,
        it: &mut Interp<'_>,
        v: &Value,
        depth: usize,
        out: &mut TextOut,
    ) -> R<Shape> {
        use std::fmt::Write as _;
        if depth > STORE_MAX_DEPTH {
            return Err(self.cycle(it));
        }
        match v {
            _ if out.scalar(v) => {}
            Value::BigInt(b) => {
                let _ = write!(out.text, "{{\"__bigint__\":\"{b}\"}}");
            }
            Value::Float(f) if f.is_finite() => {
                // Keep floats floats on reload (`1.0`, not `1`).
                let r = crate::pyfmt::float_repr(*f);
                out.raw(&r);
                if !r.contains(['.', 'e', 'E']) {
                    out.raw(".0");
                }
            }
            Value::Float(f) => {
                let _ = write!(
                    out.text,
                    "{{\"__float__\":\"{}\"}}",
                    crate::pyfmt::float_repr(*f)
                );
            }
            // Two hex digits a byte: readable, and read back by `bytes.fromhex`.
            Value::Bytes(b) => {
                let _ = write!(
                    out.text,
                    "{{\"__bytes__\":\"{}\"}}",
                    crate::pyfmt::bytes_hex(b, None, 1)
                );
            }
            Value::ByteArray(b) => {
                let _ = write!(
                    out.text,
                    "{{\"__bytearray__\":\"{}\"}}",
                    crate::pyfmt::bytes_hex(&b.borrow(), None, 1)
                );
            }
            // Each part as its `repr` text, so infinities and NaN survive.
            Value::Complex(re, im) => {
                let _ = write!(
                    out.text,
                    "{{\"__complex__\":[\"{}\",\"{}\"]}}",
                    crate::pyfmt::float_repr(*re),
                    crate::pyfmt::float_repr(*im)
                );
            }
            Value::List(l) => return Ok(Shape::list(l)),
            Value::Tuple(t) => {
                return Ok(Store::tagged(
                    Some(identity(t)),
                    "__tuple__",
                    t.iter().cloned().map(Part::Value).collect(),
                ));
            }
            Value::Set(s) => {
                let items = s
                    .borrow()
                    .iter()
                    .map(|k| Part::Value(k.0.clone()))
                    .collect();
                return Ok(Store::tagged(None, "__set__", items));
            }
            Value::FrozenSet(s) => {
                let items = s
                    .borrow()
                    .iter()
                    .map(|k| Part::Value(k.0.clone()))
                    .collect();
                return Ok(Store::tagged(None, "__frozenset__", items));
            }
            Value::Dict(d)
                if d.borrow()
                    .keys()
                    .all(|k| matches!(&k.0, Value::Str(s) if !s.starts_with("__"))) =>
            {
                return Ok(Shape::dict(d));
            }
            Value::Dict(d) => {
                let d_ref = d.borrow();
                // `{"__dict__": [[key, value], ...]}`.
                let pairs = d_ref
                    .iter()
                    .map(|(k, x)| Part::Shape {
                        shape: Box::new(Shape::Array {
                            id: None,
                            items: vec![Part::Value(k.0.clone()), Part::Value(x.clone())],
                        }),
                        deeper: false,
                    })
                    .collect();
                return Ok(Store::tagged(Some(identity(d)), "__dict__", pairs));
            }
            Value::Anchor(h) => {
                let _ = write!(
                    out.text,
                    "{{\"__ref__\":\"{}\"}}",
                    format_id(it.graph.id_of(*h))
                );
            }
            Value::EnumMember(m) => {
                out.raw("{\"__enum__\":");
                out.string(&m.class.name);
                out.raw(",\"name\":");
                out.string(&m.name);
                out.raw("}");
            }
            Value::Instance(_) if let Some(j) = it.stdlib_to_stored(v)? => {
                let _ = write!(out.text, "{j}");
            }
            Value::Instance(i) => {
                let class = i.class.clone();
                let fields = class
                    .fields
                    .iter()
                    .zip(i.fields.borrow().iter())
                    .filter(|(f, _)| !f.is_static)
                    .map(|(f, x)| (Key::Name(f.name.clone()), Part::Value(x.clone())))
                    .collect();
                return Ok(Shape::Object {
                    id: Some(identity(i)),
                    entries: vec![
                        (
                            Key::Fixed("__obj__"),
                            Part::Lit(J::String(class.name.to_string())),
                        ),
                        (
                            Key::Fixed("fields"),
                            Part::Shape {
                                shape: Box::new(Shape::Object {
                                    id: None,
                                    entries: fields,
                                }),
                                deeper: true,
                            },
                        ),
                    ],
                });
            }
            other => {
                let t = it.type_name_of(other);
                return Err(it.err("TypeError", format!("cannot persist a value of type '{t}'")));
            }
        }
        Ok(Shape::Leaf)
    }

    fn key(&mut self, it: &mut Interp<'_>, key: Key, out: &mut TextOut) -> R<bool> {
        use super::encode::Out as _;
        match key.text() {
            Ok(text) => out.key(text),
            // Only plain-string dicts are written as objects.
            Err(other) => {
                let text = it.to_str(other)?;
                out.key(&text);
            }
        }
        Ok(true)
    }

    fn cycle(&mut self, it: &mut Interp<'_>) -> Interrupt {
        it.err(
            "ValueError",
            format!(
                "cannot store a value nested more than {STORE_MAX_DEPTH} levels deep \
                 (a circular reference?)"
            ),
        )
    }
}

/// Whether a commit stores slot `s` when it changed: nodes created and never connected
/// (other than roots) are not persisted.
fn persisted(s: &Slot) -> bool {
    !(s.class.is_node()
        && s.state == SlotState::New
        && s.edges().is_empty()
        && s.class.kind != ClassKind::Root)
}

/// Whether slot `s` has its fields decoded and every one is `None`, a bool, a number, a
/// string, an anchor or an enum member (static fields aside): values whose encoding
/// cannot fail, so its stored text need not be made to know it can be stored.
fn plain_fields(s: &Slot) -> bool {
    s.pending.is_none()
        && s.class.fields.iter().zip(&s.fields).all(|(f, v)| {
            f.is_static
                || matches!(
                    v,
                    Value::None
                        | Value::Bool(_)
                        | Value::Int(_)
                        | Value::BigInt(_)
                        | Value::Float(_)
                        | Value::Str(_)
                        | Value::Anchor(_)
                        | Value::EnumMember(_)
                )
        })
}
