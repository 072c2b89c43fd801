//! Runtime values: Python-like scalars and containers, archetype classes and instances.
//!
//! Nodes and edges live in the interpreter's graph arena (the request-scoped L1) and are
//! referred to by `Value::Anchor(handle)`; objects, walkers and exceptions are reference-
//! counted instances.

use crate::ast::{self, ArchKind};
use indexmap::{IndexMap, IndexSet};
use num_bigint::BigInt;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::rc::Rc;

/// A small, fast, non-cryptographic hasher (FxHash) for interpreter maps.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub use super::pystr::PyStr;

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = HashMap<K, V, FxBuild>;

/// Python dict: insertion-ordered.
pub type Dict = IndexMap<HashKey, Value, FxBuild>;
/// Python set: the items in insertion order (it derefs to the `IndexSet`), and the
/// iteration order of a set of numbers once computed (`ops::set_items`), cached until
/// the set is next changed: every mutable access (`DerefMut`) clears it.
#[derive(Clone, Default, Debug)]
pub struct Set {
    items: IndexSet<HashKey, FxBuild>,
    /// Indexes into `items` in iteration order; `Some(None)`: insertion order.
    order: std::cell::OnceCell<Option<Rc<[usize]>>>,
}

impl Set {
    pub fn with_capacity_and_hasher(n: usize, hasher: FxBuild) -> Set {
        Set {
            items: IndexSet::with_capacity_and_hasher(n, hasher),
            order: Default::default(),
        }
    }

    /// The cached iteration order, computed by `f` when there is none.
    pub fn order_with(&self, f: impl FnOnce() -> Option<Rc<[usize]>>) -> Option<Rc<[usize]>> {
        self.order.get_or_init(f).clone()
    }

    /// Set the iteration order (a set display CPython builds through a `frozenset`).
    pub fn set_order(&mut self, order: Rc<[usize]>) {
        self.order = std::cell::OnceCell::from(Some(order));
    }
}

impl std::ops::Deref for Set {
    type Target = IndexSet<HashKey, FxBuild>;
    fn deref(&self) -> &Self::Target {
        &self.items
    }
}

impl std::ops::DerefMut for Set {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.order.take();
        &mut self.items
    }
}

impl FromIterator<HashKey> for Set {
    fn from_iter<I: IntoIterator<Item = HashKey>>(iter: I) -> Set {
        Set {
            items: iter.into_iter().collect(),
            order: Default::default(),
        }
    }
}

/// Handle of a node or edge in the graph arena. Each run numbers its handles from its
/// own base (`Graph::base`), so a handle kept past its run (in a module global) is
/// recognised as stale instead of naming another node.
pub type Handle = u64;

/// The builtin name of Python's `NotImplemented`, held as `Value::Builtin` (a singleton:
/// `is` compares builtins by name) and shown as `NotImplemented`.
pub const NOT_IMPLEMENTED: &str = "NotImplemented";

#[derive(Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    BigInt(Rc<BigInt>),
    Float(f64),
    Str(PyStr),
    /// An immutable `bytes` value (`b"..."`, `bytes(...)`, `str.encode()`).
    Bytes(Rc<[u8]>),
    /// A mutable `bytearray` (`interp/builtins/bytearray.rs`).
    ByteArray(Rc<RefCell<Vec<u8>>>),
    /// A `complex` number (real, imaginary).
    Complex(f64, f64),
    /// A `slice(start, stop, step)` object (any values, as Python keeps them).
    Slice(Rc<[Value; 3]>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<Vec<Value>>),
    Dict(Rc<RefCell<Dict>>),
    Set(Rc<RefCell<Set>>),
    /// A `frozenset`: a set that is never changed after it is made, so it hashes (by
    /// its items, whatever their order) and can be a dict key or a set member.
    FrozenSet(Rc<RefCell<Set>>),
    /// `range(start, stop, step)`
    Range(i64, i64, i64),
    /// A user function, method or lambda (unbound).
    Func(Rc<Function>),
    /// A function bound to its receiver (`obj.method`).
    Bound(Rc<(Value, Rc<Function>)>),
    /// A builtin function by name (`len`, `print`, ...).
    Builtin(Rc<str>),
    /// A builtin method bound to its receiver (`xs.append`).
    BuiltinMethod(Rc<(Value, Rc<str>)>),
    /// A type: archetype, exception type, enum or builtin type (`int`, `str`, ...).
    Class(Rc<Class>),
    /// An `obj`/`walker`/`class`/exception instance.
    Instance(Rc<Instance>),
    /// A node or edge in the graph arena.
    Anchor(Handle),
    EnumMember(Rc<EnumMember>),
    Module(Rc<ModuleObj>),
    /// A one-shot iterator over items read when it was made (`iter`, `reversed`, ...),
    /// with the kind of value it came from (its type name); `map`, `filter`, `zip` and
    /// `enumerate` are `Lazy`.
    Iter(Rc<RefCell<IterItems>>, IterKind),
    /// `super` bound to an instance and the class whose parent to search.
    Super(Rc<(Value, Rc<Class>)>),
    /// A generator object (a call of a function whose body holds `yield`).
    Generator(Rc<super::generator::Generator>),
    /// A coroutine: the pending call of an `async def` or spawn of an `async walker`.
    Coroutine(Rc<super::coroutine::Coroutine>),
    /// A lazy `map`, `filter`, `zip` or `enumerate` object (`interp/lazy.rs`).
    Lazy(Rc<super::lazy::Lazy>),
    /// A dict view: `d.keys()`, `d.values()`, `d.items()` (`interp/dictview.rs`).
    View(Rc<super::dictview::DictView>),
}

/// The items a loop or a one-shot iterator yields: a list read live, by index, so items
/// appended (or removed) while it runs are seen as CPython's list iterator sees them
/// (`for n in queue { queue.append(...) }` walks the new items too); anything else a
/// snapshot taken when the loop or iterator started.
#[derive(Debug)]
pub enum IterItems {
    List(Rc<RefCell<Vec<Value>>>, usize),
    Snapshot(std::vec::IntoIter<Value>),
}

impl IterItems {
    pub fn snapshot(items: Vec<Value>) -> IterItems {
        IterItems::Snapshot(items.into_iter())
    }

    /// Items left (a list's count now).
    pub fn remaining(&self) -> usize {
        match self {
            IterItems::List(l, i) => l.borrow().len().saturating_sub(*i),
            IterItems::Snapshot(items) => items.len(),
        }
    }
}

impl Iterator for IterItems {
    type Item = Value;

    #[inline]
    fn next(&mut self) -> Option<Value> {
        match self {
            IterItems::Snapshot(items) => items.next(),
            IterItems::List(l, i) => {
                let v = l.borrow().get(*i).cloned();
                match v {
                    Some(_) => *i += 1,
                    // Once exhausted it stays so (CPython drops the list), even if the
                    // list grows later.
                    None => *self = IterItems::snapshot(Vec::new()),
                }
                v
            }
        }
    }
}

/// What a one-shot iterator walks, for its CPython type name (`type(iter([])).__name__`
/// is `list_iterator`). The items themselves are a snapshot either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterKind {
    List,
    ListReverse,
    Tuple,
    /// A `str` of ASCII text only (CPython keeps those apart).
    StrAscii,
    Str,
    Bytes,
    ByteArray,
    Set,
    Range,
    DictKey,
    DictValue,
    DictItem,
    DictReverseKey,
    DictReverseValue,
    DictReverseItem,
    /// `reversed()` of a tuple, str, bytes or other sequence.
    Reversed,
    /// `re.finditer` (CPython's `callable_iterator`).
    Callable,
    /// Made inside svc with no Python counterpart (a lazy object's source).
    Other,
}

impl IterKind {
    /// Every kind, for the builtin classes `type()` answers with.
    pub const ALL: [IterKind; 18] = [
        IterKind::List,
        IterKind::ListReverse,
        IterKind::Tuple,
        IterKind::StrAscii,
        IterKind::Str,
        IterKind::Bytes,
        IterKind::ByteArray,
        IterKind::Set,
        IterKind::Range,
        IterKind::DictKey,
        IterKind::DictValue,
        IterKind::DictItem,
        IterKind::DictReverseKey,
        IterKind::DictReverseValue,
        IterKind::DictReverseItem,
        IterKind::Reversed,
        IterKind::Callable,
        IterKind::Other,
    ];

    /// The kind of `iter(v)` (`reverse`: of `reversed(v)`), by `v`'s type.
    pub fn of(v: &Value, reverse: bool) -> IterKind {
        use super::dictview::ViewKind;
        match (v, reverse) {
            (Value::List(_), false) => IterKind::List,
            (Value::List(_), true) => IterKind::ListReverse,
            (Value::Tuple(_), false) => IterKind::Tuple,
            (Value::Str(s), false) if s.is_ascii() => IterKind::StrAscii,
            (Value::Str(_), false) => IterKind::Str,
            (Value::Bytes(_), false) => IterKind::Bytes,
            (Value::ByteArray(_), false) => IterKind::ByteArray,
            (Value::Set(_) | Value::FrozenSet(_), false) => IterKind::Set,
            (Value::Range(..), _) => IterKind::Range,
            (Value::Dict(_), false) => IterKind::DictKey,
            (Value::Dict(_), true) => IterKind::DictReverseKey,
            (Value::View(view), false) => match view.kind {
                ViewKind::Keys => IterKind::DictKey,
                ViewKind::Values => IterKind::DictValue,
                ViewKind::Items => IterKind::DictItem,
            },
            (Value::View(view), true) => match view.kind {
                ViewKind::Keys => IterKind::DictReverseKey,
                ViewKind::Values => IterKind::DictReverseValue,
                ViewKind::Items => IterKind::DictReverseItem,
            },
            (_, true) => IterKind::Reversed,
            _ => IterKind::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IterKind::List => "list_iterator",
            IterKind::ListReverse => "list_reverseiterator",
            IterKind::Tuple => "tuple_iterator",
            IterKind::StrAscii => "str_ascii_iterator",
            IterKind::Str => "str_iterator",
            IterKind::Bytes => "bytes_iterator",
            IterKind::ByteArray => "bytearray_iterator",
            IterKind::Set => "set_iterator",
            IterKind::Range => "range_iterator",
            IterKind::DictKey => "dict_keyiterator",
            IterKind::DictValue => "dict_valueiterator",
            IterKind::DictItem => "dict_itemiterator",
            IterKind::DictReverseKey => "dict_reversekeyiterator",
            IterKind::DictReverseValue => "dict_reversevalueiterator",
            IterKind::DictReverseItem => "dict_reverseitemiterator",
            IterKind::Reversed => "reversed",
            IterKind::Callable => "callable_iterator",
            IterKind::Other => "iterator",
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::None => write!(f, "None"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::BigInt(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Anchor(h) => write!(f, "<anchor {h}>"),
            other => write!(f, "<{}>", other.type_name()),
        }
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(PyStr::from(s))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }

    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    pub fn dict(d: Dict) -> Value {
        Value::Dict(Rc::new(RefCell::new(d)))
    }

    pub fn from_bigint(b: BigInt) -> Value {
        use num_traits::ToPrimitive;
        match b.to_i64() {
            Some(i) => Value::Int(i),
            None => Value::BigInt(Rc::new(b)),
        }
    }

    /// The Python type name (`int`, `str`, `list`, the archetype name ...). Anchors need
    /// the graph, so they answer `node` here; the interpreter gives the real name.
    pub fn type_name(&self) -> &str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::ByteArray(_) => "bytearray",
            Value::Complex(..) => "complex",
            Value::Slice(_) => "slice",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::FrozenSet(_) => "frozenset",
            Value::Range(..) => "range",
            Value::Func(_) => "function",
            Value::Bound(_) => "method",
            Value::Builtin(n) if &**n == NOT_IMPLEMENTED => "NotImplementedType",
            Value::Builtin(_) | Value::BuiltinMethod(_) => "builtin_function_or_method",
            Value::Class(_) => "type",
            Value::Instance(i) => &i.class.name,
            Value::Anchor(_) => "node",
            Value::EnumMember(m) => &m.class.name,
            Value::Module(_) => "module",
            Value::Iter(_, k) => k.name(),
            Value::Super(_) => "super",
            Value::Generator(_) => "generator",
            Value::Coroutine(_) => "coroutine",
            Value::Lazy(l) => l.kind.name(),
            Value::View(v) => v.type_name(),
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }
}

/// What kind of type a `Class` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    Arch(ArchKind),
    /// The root node type `Root`.
    Root,
    /// `GenericEdge`, the type of untyped edges.
    GenericEdge,
    Enum,
    /// A builtin exception type (or a user class deriving from one: see `is_exception`).
    Exception,
    /// `int`, `str`, `list`, ...
    Builtin,
}

/// A `has` field of an archetype (inherited fields first).
#[derive(Debug)]
pub struct FieldDef {
    pub name: Rc<str>,
    pub ty: Option<Rc<ast::Expr>>,
    pub default: Option<Rc<ast::Expr>>,
    pub postinit: bool,
    /// Declared in a `static has`: lives on the class, not the instance.
    pub is_static: bool,
    pub access: Option<ast::Access>,
}

/// One event ability (`can x with T entry`) in slot order.
#[derive(Debug)]
pub struct AbilityDef {
    pub name: Option<Rc<str>>,
    pub trigger: Option<Rc<ast::Expr>>,
    /// Trigger types, resolved on first use.
    pub resolved: RefCell<Option<Vec<Rc<Class>>>>,
    pub is_exit: bool,
    pub func: Rc<Function>,
}

/// `arch_module`, `arch_type` and `fingerprint` of a class, shared with every stored
/// anchor (no allocation per anchor).
#[derive(Clone, Debug, Default)]
pub struct StoredNames {
    pub module: std::sync::Arc<str>,
    pub name: std::sync::Arc<str>,
    /// Short digest of the field names (persistence schema check).
    pub fingerprint: std::sync::Arc<str>,
}

impl StoredNames {
    pub fn new(module: &str, name: &str, fingerprint: &str) -> StoredNames {
        StoredNames {
            module: module.into(),
            name: name.into(),
            fingerprint: fingerprint.into(),
        }
    }
}

/// The ambient base type of every node (`Class::is_sub`).
pub const OSP_NODE_BASE: &str = "Node";
/// The ambient base type of every edge (`Class::is_sub`).
pub const OSP_EDGE_BASE: &str = "Edge";

pub struct Class {
    pub name: Rc<str>,
    pub kind: ClassKind,
    /// Declaring module (file stem); `builtins` for builtin types.
    pub module: Rc<str>,
    pub bases: Vec<Rc<Class>>,
    /// Ancestors in method resolution order (nearest first; the class itself excluded).
    pub mro: Vec<Rc<Class>>,
    /// Instance fields, inherited first.
    pub fields: Vec<FieldDef>,
    pub field_index: FxHashMap<Rc<str>, usize>,
    /// Methods declared by this class only (lookup walks the `mro`). Added through
    /// [`Class::add_method`], which moves the methods epoch.
    pub methods: RefCell<FxHashMap<Rc<str>, Rc<Function>>>,
    /// Event abilities in slot order, inherited first; an `override` or same-name ability
    /// replaces the base slot in place.
    pub abilities: RefCell<Vec<Rc<AbilityDef>>>,
    /// Static fields and enum members.
    pub statics: RefCell<FxHashMap<Rc<str>, Value>>,
    /// Enum members in declaration order.
    pub members: RefCell<Vec<Rc<EnumMember>>>,
    pub access: Option<ast::Access>,
    pub decorators: Vec<Rc<ast::Expr>>,
    /// Edge typed endpoints `edge E: A --> B` (typing only).
    pub endpoints: Option<(Rc<ast::Expr>, Rc<ast::Expr>)>,
    /// Identity used for hashing and `is`.
    pub id: u64,
    /// The module scope the class was declared in (for evaluating defaults/triggers).
    pub scope: RefCell<Option<ScopeRef>>,
    /// Names a store records with each anchor of this class.
    pub stored: StoredNames,
    /// The walker's own declaration span (for diagnostics).
    pub span: crate::span::Span,
    pub file: u32,
    /// `async walker`: a spawn makes a coroutine.
    pub is_async: bool,
    /// Declared with `class` (Python semantics: no generated `init`, `repr` or `==`).
    /// Kept apart from `kind` because a `class` deriving from an exception is stored with
    /// the `obj` kind.
    pub python_class: bool,
    /// The archetype this one is declared inside (`obj Outer { obj Inner {} }`), for
    /// the dotted `__qualname__` a dataclass `repr` shows (`Outer.Inner(x=1)`).
    pub outer: RefCell<Option<std::rc::Weak<Class>>>,
    /// Declared in a function body: the start of the `__qualname__` (`make.<locals>`,
    /// `ast::Archetype::locals`).
    pub locals: Option<Rc<str>>,
}

impl Class {
    /// A class of the `builtins` module with no fields, methods or statics.
    pub fn bare_builtin(
        name: &str,
        kind: ClassKind,
        bases: Vec<Rc<Class>>,
        mro: Vec<Rc<Class>>,
    ) -> Class {
        Class {
            name: Rc::from(name),
            kind,
            module: Rc::from("builtins"),
            bases,
            mro,
            fields: Vec::new(),
            field_index: Default::default(),
            methods: Default::default(),
            abilities: Default::default(),
            statics: Default::default(),
            members: Default::default(),
            access: None,
            decorators: Vec::new(),
            endpoints: None,
            id: next_id(),
            scope: Default::default(),
            stored: StoredNames::new("builtins", name, ""),
            span: crate::span::Span::DUMMY,
            file: 0,
            is_async: false,
            python_class: false,
            outer: Default::default(),
            locals: None,
        }
    }

    /// Python's `__qualname__`: the names of the enclosing archetypes, outermost first,
    /// then this one's, joined by dots; the outermost's function prefix first when it
    /// was declared in a function body (`make.<locals>.Local`).
    pub fn qualname(&self) -> Rc<str> {
        let mut outer = self.outer.borrow().as_ref().and_then(|w| w.upgrade());
        if outer.is_none() && self.locals.is_none() {
            return self.name.clone();
        }
        let mut parts = vec![self.name.clone()];
        let mut locals = self.locals.clone();
        while let Some(c) = outer {
            parts.push(c.name.clone());
            locals = c.locals.clone();
            outer = c.outer.borrow().as_ref().and_then(|w| w.upgrade());
        }
        parts.extend(locals);
        parts.reverse();
        Rc::from(parts.join("."))
    }
}

impl fmt::Debug for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<class {}>", self.name)
    }
}

impl Class {
    /// A built-in `obj` class whose instances hold `fields` (untyped, no defaults): the
    /// objects the runtime hands out (`Event`, `KvStore`, `Storage`).
    pub fn builtin_record(name: &str, fields: &[&str]) -> Class {
        let mut class = Class::bare_builtin(
            name,
            ClassKind::Arch(crate::ast::ArchKind::Obj),
            vec![],
            vec![],
        );
        for (i, field) in fields.iter().enumerate() {
            let name: Rc<str> = Rc::from(*field);
            class.field_index.insert(name.clone(), i);
            class.fields.push(FieldDef {
                name,
                ty: None,
                default: None,
                postinit: false,
                is_static: false,
                access: None,
            });
        }
        class
    }

    /// The slot of instance field `name`. Field names come from the same parse as the
    /// attribute names that read them (interned), so a short field list is searched by
    /// length and pointer before text; a long one uses the index.
    #[inline]
    pub fn field_slot(&self, name: &str) -> Option<usize> {
        if self.fields.len() > 8 {
            return self.field_index.get(name).copied();
        }
        let (ptr, len) = (name.as_ptr(), name.len());
        let i = self
            .fields
            .iter()
            .position(|f| f.name.len() == len && (f.name.as_ptr() == ptr || *f.name == *name))?;
        // `field_index` is authoritative (a field list and its index agree by
        // construction; this keeps a mismatch from ever reading the wrong slot).
        debug_assert_eq!(self.field_index.get(name), Some(&i));
        Some(i)
    }

    /// `self` is `other` or a subclass of it.
    pub fn is_sub(&self, other: &Class) -> bool {
        self.mro.iter().any(|c| c.id == other.id)
            || self.id == other.id
            || (other.kind == ClassKind::Builtin && self.is_sub_of_osp_base(other))
    }

    /// Jac's ambient base types `Node` and `Edge`: every node (root included) is a
    /// `Node`, every edge (untyped ones included) an `Edge`, so `with Node entry`, a
    /// `[?:Edge]` filter and `isinstance(x, Node)` match them all.
    fn is_sub_of_osp_base(&self, base: &Class) -> bool {
        if base.module.as_ref() != "builtins" {
            return false;
        }
        match &*base.name {
            OSP_NODE_BASE => self.arch_kind() == Some(ArchKind::Node),
            OSP_EDGE_BASE => self.arch_kind() == Some(ArchKind::Edge),
            _ => false,
        }
    }

    /// An exception class whose `repr` is its fields' (`AppError(code=404)`), as the
    /// dataclass jaclang makes of an `obj` deriving from an exception: a class in its
    /// line was declared with `obj` (a `class` below it inherits that `repr`).
    pub fn has_record_repr(&self) -> bool {
        std::iter::once(self)
            .chain(self.mro.iter().map(|c| &**c))
            .any(|c| matches!(c.kind, ClassKind::Arch(_)) && !c.python_class)
    }

    pub fn arch_kind(&self) -> Option<ArchKind> {
        match self.kind {
            ClassKind::Arch(k) => Some(k),
            ClassKind::Root => Some(ArchKind::Node),
            ClassKind::GenericEdge => Some(ArchKind::Edge),
            _ => None,
        }
    }

    pub fn is_node(&self) -> bool {
        self.arch_kind() == Some(ArchKind::Node)
    }

    pub fn is_edge(&self) -> bool {
        self.arch_kind() == Some(ArchKind::Edge)
    }

    pub fn is_walker(&self) -> bool {
        self.arch_kind() == Some(ArchKind::Walker)
    }

    pub fn is_exception(&self) -> bool {
        self.kind == ClassKind::Exception || self.mro.iter().any(|c| c.kind == ClassKind::Exception)
    }

    /// Declare (or replace) method `name`. Moves [`methods_epoch`], so every cached
    /// method lookup of the compiled core is looked up again.
    pub fn add_method(&self, name: Rc<str>, f: Rc<Function>) {
        self.methods.borrow_mut().insert(name, f);
        METHODS_EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn find_method(&self, name: &str) -> Option<Rc<Function>> {
        if let Some(f) = self.methods.borrow().get(name) {
            return Some(f.clone());
        }
        for c in &self.mro {
            if let Some(f) = c.methods.borrow().get(name) {
                return Some(f.clone());
            }
        }
        None
    }

    /// The user's `__repr__` an instance of this class prints with. jaclang makes each
    /// `obj`/`node`/`edge`/`walker` a dataclass, and every class deriving from one
    /// (a `class` too); a dataclass generates a `__repr__` of its own fields unless its
    /// body defines one. So an inherited `__repr__` counts only when no such class lies
    /// between it and this class (in a line of plain `class`es it is inherited as in
    /// Python).
    pub fn user_repr(&self) -> Option<Rc<Function>> {
        for c in std::iter::once(self).chain(self.mro.iter().map(|c| &**c)) {
            if let Some(f) = c.methods.borrow().get("__repr__") {
                return Some(f.clone());
            }
            if matches!(c.kind, ClassKind::Arch(_)) && c.has_record_repr() {
                return None;
            }
        }
        None
    }

    pub fn find_static(&self, name: &str) -> Option<Value> {
        if let Some(v) = self.statics.borrow().get(name) {
            return Some(v.clone());
        }
        for c in &self.mro {
            if let Some(v) = c.statics.borrow().get(name) {
                return Some(v.clone());
            }
        }
        None
    }
}

/// How many times any class has gained or replaced a method (`Class::add_method`),
/// in this process. A method lookup cached while it had some value holds until it
/// moves (classes are per thread, so a change elsewhere only costs a lookup).
static METHODS_EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The current methods epoch (see [`Class::add_method`]).
#[inline]
pub fn methods_epoch() -> u64 {
    METHODS_EPOCH.load(std::sync::atomic::Ordering::Relaxed)
}

pub struct Instance {
    pub class: Rc<Class>,
    pub fields: RefCell<Vec<Value>>,
    /// Attributes not declared with `has` (exception `args`, walker `reports`, dynamic
    /// attributes set on `class` instances).
    /// In the order they were first set (what `__dict__` lists after the fields).
    pub extra: RefCell<Option<Box<IndexMap<Rc<str>, Value, FxBuild>>>>,
    pub id: u64,
    /// What the class's `__hash__` returned when the instance last became a dict key or
    /// set member (`Interp::hash_key`); the key hashes by it.
    pub user_hash: std::cell::Cell<Option<i64>>,
}

impl Instance {
    pub fn get_extra(&self, name: &str) -> Option<Value> {
        self.extra
            .borrow()
            .as_ref()
            .and_then(|m| m.get(name).cloned())
    }

    pub fn set_extra(&self, name: Rc<str>, value: Value) {
        self.extra
            .borrow_mut()
            .get_or_insert_with(Default::default)
            .insert(name, value);
    }
}

#[derive(Debug)]
pub struct EnumMember {
    pub class: Rc<Class>,
    pub name: Rc<str>,
    pub value: Value,
}

pub struct ModuleObj {
    pub name: Rc<str>,
    pub scope: ScopeRef,
}

/// Parameters of a user function, resolved from the AST once.
#[derive(Debug)]
pub struct ParamDef {
    pub name: Rc<str>,
    pub kind: ast::ParamKind,
    pub default: Option<Rc<ast::Expr>>,
    pub ty: Option<Rc<ast::Expr>>,
}

/// The body of a function.
#[derive(Debug)]
pub enum FuncBody {
    Block(Rc<[ast::Stmt]>),
    /// A body with `yield`, compiled for the generator machine (`interp/generator.rs`).
    Generator(Rc<super::generator::GenCode>),
    /// Declared without a body and never implemented.
    Missing,
}

pub struct Function {
    pub name: Rc<str>,
    pub params: Vec<ParamDef>,
    pub body: RefCell<FuncBody>,
    /// Scope the function closes over (module globals, or an enclosing frame).
    pub closure: ScopeRef,
    /// Class the function is a method of (for `super` and implicit `self`).
    pub owner: RefCell<Option<std::rc::Weak<Class>>>,
    pub is_static: bool,
    /// `class def`: called with `cls` bound to the class it is called on.
    pub is_classmethod: bool,
    pub is_lambda: bool,
    /// `async def` / `async can`: a call makes a coroutine (`interp/coroutine.rs`).
    pub is_async: bool,
    /// `self`, `here` and `visitor` of the frame a lambda or nested def was made in.
    pub captured: Option<(Option<Value>, Option<Value>, Option<Value>)>,
    /// Default values, each evaluated at its first use and kept for every later call
    /// (`params.rs`): a mutable default is shared, as in Python.
    pub defaults: RefCell<Vec<Option<Value>>>,
    pub decorators: Vec<Rc<ast::Expr>>,
    pub access: Option<ast::Access>,
    pub ret: Option<Rc<ast::Expr>>,
    pub file: u32,
    pub span: crate::span::Span,
    /// The compiled body, decided at the first call (`interp/vm`).
    pub(crate) code: super::vm::CodeCell,
    /// The names the body assigns, for the tree-walker's reads (`Scope::assigned`),
    /// found at the first tree-walked call of that body.
    pub(crate) assigned: RefCell<Option<(Rc<[ast::Stmt]>, Rc<[Rc<str>]>)>>,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<function {}>", self.name)
    }
}

impl Function {
    /// A method called on an instance (`self` implicit): neither static nor a class
    /// method, declared in a class.
    /// A method declared on a class (not a lambda or nested def made inside one, which
    /// carry their owner for `super` and their maker's `self` in `captured`).
    pub fn is_instance_method(&self) -> bool {
        !self.is_static
            && !self.is_classmethod
            && !self.is_lambda
            && self.captured.is_none()
            && self.owner.borrow().is_some()
    }
}

/// A variable scope. Function frames chain to the scope they close over; assignment
/// rebinds the nearest enclosing binding that is a function's local or a `glob`, never
/// another module-level name (see `scope_rebind`; Jac has no `global`/`nonlocal`).
pub struct Scope {
    pub vars: Vars,
    pub parent: Option<ScopeRef>,
    /// `Some` on a module scope: the names its `glob` statements declared, the only
    /// module bindings an assignment in a nested scope (a def) rebinds.
    #[allow(clippy::box_collection)] // one word on every scope; only module scopes have it
    pub globs: Option<Box<std::collections::HashSet<Rc<str>>>>,
    /// On a tree-walked function frame: the names the def assigns. Reading one that
    /// is not bound yet looks only where an assignment could rebind it
    /// (`scope_get_enclosing`), else it is an UnboundLocalError.
    pub assigned: Option<Rc<[Rc<str>]>>,
    /// A comprehension's or generator expression's own scope: an assignment
    /// expression (`:=`) in it binds in the nearest enclosing scope that is not one.
    pub comprehension: bool,
}

pub type ScopeRef = Rc<RefCell<Scope>>;

impl Scope {
    pub fn new_ref(parent: Option<ScopeRef>) -> ScopeRef {
        Rc::new(RefCell::new(Scope {
            vars: Vars::default(),
            parent,
            globs: None,
            assigned: None,
            comprehension: false,
        }))
    }

    /// The scope of a comprehension or generator expression evaluated in `parent`.
    pub fn new_comprehension(parent: ScopeRef) -> ScopeRef {
        let s = Scope::new_ref(Some(parent));
        s.borrow_mut().comprehension = true;
        s
    }

    /// A module's top-level scope (chained to the builtins).
    pub fn new_module(builtins: ScopeRef) -> ScopeRef {
        Rc::new(RefCell::new(Scope {
            vars: Vars::default(),
            parent: Some(builtins),
            globs: Some(Box::default()),
            assigned: None,
            comprehension: false,
        }))
    }

    /// A scope with room for `n` bindings before it grows (a function frame).
    pub fn with_capacity(parent: Option<ScopeRef>, n: usize) -> ScopeRef {
        Rc::new(RefCell::new(Scope {
            vars: Vars::with_capacity(n),
            parent,
            globs: None,
            assigned: None,
            comprehension: false,
        }))
    }
}

/// Bindings a scope keeps in a plain vector before it builds a hash index.
const SMALL_SCOPE: usize = 12;

/// The bindings of one scope, in insertion order. A small scope (a function frame, a
/// comprehension, a short module) is a vector of slots searched by name: the parser
/// interns names, so a binding and the name nodes that use it share one `Rc<str>` and
/// most probes are a length and pointer comparison. A scope that grows past
/// `SMALL_SCOPE` bindings (the builtins, a large module) adds a hash index by name.
#[derive(Default)]
pub struct Vars {
    slots: Vec<(Rc<str>, Value)>,
    index: Option<Box<FxHashMap<Rc<str>, usize>>>,
}

impl Vars {
    pub fn with_capacity(n: usize) -> Vars {
        Vars {
            slots: Vec::with_capacity(n.min(SMALL_SCOPE)),
            index: None,
        }
    }

    #[inline]
    fn position(&self, name: &str) -> Option<usize> {
        if let Some(index) = &self.index {
            return index.get(name).copied();
        }
        let (ptr, len) = (name.as_ptr(), name.len());
        self.slots
            .iter()
            .position(|(k, _)| k.len() == len && (k.as_ptr() == ptr || **k == *name))
    }

    #[inline]
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.position(name).map(|i| &self.slots[i].1)
    }

    #[inline]
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.position(name).map(|i| &mut self.slots[i].1)
    }

    /// The position of `name`, trying `hint` first: a binding whose key is `name`
    /// itself (the same interned `Rc`) at that position is the binding, since a name
    /// is bound once per scope. `hint` is updated on a miss. The compiled core keeps
    /// one hint per name of a code object (`vm::Code::name_hints`).
    #[inline]
    pub fn position_hinted(&self, hint: &std::cell::Cell<u32>, name: &Rc<str>) -> Option<usize> {
        let h = hint.get() as usize;
        if let Some((k, _)) = self.slots.get(h)
            && Rc::ptr_eq(k, name)
        {
            return Some(h);
        }
        let i = self.position(name)?;
        hint.set(u32::try_from(i).unwrap_or(u32::MAX));
        Some(i)
    }

    /// The value bound to `name`, found from its position `hint` as
    /// `position_hinted` finds it (one bounds check on a hit).
    #[inline]
    pub fn get_hinted(&self, hint: &std::cell::Cell<u32>, name: &Rc<str>) -> Option<&Value> {
        if let Some((k, v)) = self.slots.get(hint.get() as usize)
            && Rc::ptr_eq(k, name)
        {
            return Some(v);
        }
        let i = self.position(name)?;
        hint.set(u32::try_from(i).unwrap_or(u32::MAX));
        self.slots.get(i).map(|(_, v)| v)
    }

    /// The value at position `i` (from `position_hinted`).
    #[inline]
    pub fn at(&self, i: usize) -> Option<&Value> {
        self.slots.get(i).map(|(_, v)| v)
    }

    /// The value at position `i`, to rebind it.
    #[inline]
    pub fn at_mut(&mut self, i: usize) -> Option<&mut Value> {
        self.slots.get_mut(i).map(|(_, v)| v)
    }

    /// The bound names, in binding order.
    pub fn names(&self) -> impl Iterator<Item = &Rc<str>> {
        self.slots.iter().map(|(n, _)| n)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Bind `name` (rebinding it if it is bound); returns the previous value.
    pub fn insert(&mut self, name: Rc<str>, value: Value) -> Option<Value> {
        if let Some(i) = self.position(&name) {
            return Some(std::mem::replace(&mut self.slots[i].1, value));
        }
        if let Some(index) = &mut self.index {
            index.insert(name.clone(), self.slots.len());
        } else if self.slots.len() >= SMALL_SCOPE {
            let mut index: FxHashMap<Rc<str>, usize> = FxHashMap::default();
            index.reserve(self.slots.len() * 2);
            for (i, (k, _)) in self.slots.iter().enumerate() {
                index.insert(k.clone(), i);
            }
            index.insert(name.clone(), self.slots.len());
            self.index = Some(Box::new(index));
        }
        self.slots.push((name, value));
        None
    }

    /// Unbind `name`; returns its value if it was bound.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.position(name)?;
        let (_, v) = self.slots.remove(i);
        if let Some(index) = &mut self.index {
            index.remove(name);
            for (_, at) in index.iter_mut() {
                if *at > i {
                    *at -= 1;
                }
            }
        }
        Some(v)
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Unbind everything (keeps the vector's room).
    pub fn clear(&mut self) {
        self.slots.clear();
        self.index = None;
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A copy of the bindings in order (to bind them elsewhere while this scope is
    /// borrowed no longer).
    pub fn to_vec(&self) -> Vec<(Rc<str>, Value)> {
        self.slots.clone()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Rc<str>, &Value)> {
        self.slots.iter().map(|(k, v)| (k, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.slots.iter().map(|(_, v)| v)
    }
}

/// Look a name up along the scope chain.
pub fn scope_get(scope: &ScopeRef, name: &str) -> Option<Value> {
    let s = scope.borrow();
    if let Some(v) = s.vars.get(name) {
        return Some(v.clone());
    }
    let mut cur = s.parent.clone();
    drop(s);
    while let Some(sc) = cur {
        let b = sc.borrow();
        if let Some(v) = b.vars.get(name) {
            return Some(v.clone());
        }
        cur = b.parent.clone();
    }
    None
}

/// Assign: rebind the nearest enclosing binding, or create one in `scope`.
pub fn scope_set(scope: &ScopeRef, name: &Rc<str>, value: Value) {
    let parent = {
        let mut b = scope.borrow_mut();
        if let Some(slot) = b.vars.get_mut(name) {
            *slot = value;
            return;
        }
        // Module code binds its own names; it never rebinds a builtin.
        if b.globs.is_some() {
            None
        } else {
            b.parent.clone()
        }
    };
    let value = match parent {
        Some(p) => match scope_rebind_enclosing(&p, name, value) {
            Ok(()) => return,
            Err(v) => v,
        },
        None => value,
    };
    scope.borrow_mut().vars.insert(name.clone(), value);
}

/// Whether an assignment made in a scope nested in `s` may rebind `s`'s binding of
/// `name`: any function (or comprehension) scope's, a module scope's only for a `glob`.
/// Defs, classes, imports and names assigned in `with entry` stay put: assigning one
/// inside a def makes a local, as in jaclang.
fn rebindable(s: &Scope, name: &str) -> bool {
    s.globs.as_ref().is_none_or(|g| g.contains(name))
}

/// The one scoping rule of assignment, shared by the tree-walker (`scope_set`, from
/// the frame's parent) and the compiled core (`StoreLocal` of an unbound slot, from
/// the def's closure): rebind the nearest binding of `name` that `rebindable` allows,
/// searching from the enclosing scope `first` outwards and stopping at the module
/// scope (builtins are never rebound). `Err` gives the value back when no binding may
/// take it: the caller binds it locally.
pub fn scope_rebind_enclosing(first: &ScopeRef, name: &str, value: Value) -> Result<(), Value> {
    let mut next = Some(first.clone());
    while let Some(sc) = next {
        let mut b = sc.borrow_mut();
        let s = &mut *b;
        if rebindable(s, name)
            && let Some(slot) = s.vars.get_mut(name)
        {
            *slot = value;
            return Ok(());
        }
        if s.globs.is_some() {
            return Err(value);
        }
        next = s.parent.clone();
    }
    Err(value)
}

/// Read `name` from the bindings an assignment of it could rebind
/// (`scope_rebind_enclosing`, same search from `first`). The compiled core reads a
/// local the def assigns but has not bound yet this way; `None` is Python's
/// UnboundLocalError.
pub fn scope_get_enclosing(first: &ScopeRef, name: &str) -> Option<Value> {
    let mut next = Some(first.clone());
    while let Some(sc) = next {
        let b = sc.borrow();
        if rebindable(&b, name)
            && let Some(v) = b.vars.get(name)
        {
            return Some(v.clone());
        }
        if b.globs.is_some() {
            return None;
        }
        next = b.parent.clone();
    }
    None
}

/// Record `name` as a `glob` of the module scope `scope` chains to (a `glob` statement
/// in a block binds at module level).
pub fn mark_glob(scope: &ScopeRef, name: &Rc<str>) {
    let mut cur = scope.clone();
    loop {
        let next = {
            let mut b = cur.borrow_mut();
            if let Some(g) = b.globs.as_mut() {
                g.insert(name.clone());
                return;
            }
            b.parent.clone()
        };
        match next {
            Some(p) => cur = p,
            None => return,
        }
    }
}

/// `name += tail` on a string binding without copying the string: when the nearest
/// binding of `name` still holds `cur`'s storage (the value read before the right side
/// ran), `cur` is dropped and the bound string grows, in place when the binding held its
/// only reference. Otherwise (rebound meanwhile, unbound, not a string) `cur` comes back.
pub fn scope_append_str(scope: &ScopeRef, name: &str, cur: Value, tail: &str) -> Result<(), Value> {
    let Value::Str(c) = &cur else {
        return Err(cur);
    };
    let mut sc = scope.clone();
    loop {
        let next = {
            let mut b = sc.borrow_mut();
            if let Some(slot) = b.vars.get_mut(name) {
                return match slot {
                    Value::Str(s) if PyStr::ptr_eq(s, c) => {
                        drop(cur);
                        s.push_str(tail);
                        Ok(())
                    }
                    _ => Err(cur),
                };
            }
            b.parent.clone()
        };
        match next {
            Some(p) => sc = p,
            None => return Err(cur),
        }
    }
}

/// Where an assignment expression (`name := v`) evaluated in `scope` binds: the
/// nearest scope out from it that is not a comprehension's (Python's rule), then by
/// `scope_set`'s rules there.
pub fn walrus_scope(scope: &ScopeRef) -> ScopeRef {
    let mut target = scope.clone();
    loop {
        let parent = {
            let s = target.borrow();
            if !s.comprehension {
                break;
            }
            s.parent.clone()
        };
        match parent {
            Some(p) => target = p,
            None => break,
        }
    }
    target
}

/// Bind in `scope` itself (parameters, typed declarations, loop targets of comprehensions).
pub fn scope_define(scope: &ScopeRef, name: Rc<str>, value: Value) {
    scope.borrow_mut().vars.insert(name, value);
}

/// Remove a binding along the chain (`del x`). Returns false if the name is unbound.
pub fn scope_remove(scope: &ScopeRef, name: &str) -> bool {
    let mut cur = Some(scope.clone());
    while let Some(sc) = cur {
        let mut b = sc.borrow_mut();
        if b.vars.remove(name).is_some() {
            return true;
        }
        cur = b.parent.clone();
    }
    false
}

/// A hashable wrapper with Python equality: `1 == 1.0 == True`, strings by content,
/// tuples by items, everything else by identity.
#[derive(Clone, Debug)]
pub struct HashKey(pub Value);

/// Identity of a reference value, for `is` and identity hashing.
pub fn identity(v: &Value) -> Option<usize> {
    Some(match v {
        Value::List(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Dict(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Set(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::FrozenSet(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::ByteArray(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Tuple(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Func(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Class(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Instance(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::EnumMember(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Module(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Iter(r, _) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Generator(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Coroutine(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Lazy(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::View(r) => Rc::as_ptr(r) as *const u8 as usize,
        Value::Anchor(h) => *h as usize,
        _ => return None,
    })
}

impl Hash for HashKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

fn hash_value<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::None => state.write_u8(0),
        Value::Bool(b) => state.write_u64(u64::from(*b)),
        Value::Int(i) => state.write_u64(*i as u64),
        Value::BigInt(b) => {
            state.write_u8(7);
            b.to_signed_bytes_le().hash(state);
        }
        // An integral float hashes as the int it equals (`1e19` and `10**19` are one
        // dict key, as in Python); `num_of` draws the same line.
        Value::Float(x) => match num_of(v) {
            Some(Num::I(i)) => state.write_u64(i as u64),
            Some(Num::B(b)) => {
                state.write_u8(7);
                b.to_signed_bytes_le().hash(state);
            }
            _ => state.write_u64(x.to_bits()),
        },
        Value::Str(s) => s.hash(state),
        Value::Bytes(b) => {
            state.write_u8(11);
            b.hash(state);
        }
        // Order-independent: the items' own hashes combined by a commutative sum.
        Value::FrozenSet(s) => {
            state.write_u8(14);
            let mut acc = 0u64;
            for k in s.borrow().iter() {
                let mut h = FxHasher::default();
                hash_value(&k.0, &mut h);
                acc = acc.wrapping_add(h.finish());
            }
            state.write_u64(acc);
            state.write_usize(s.borrow().len());
        }
        // A complex with no imaginary part is the same key as its real part.
        Value::Complex(re, 0.0) => hash_value(&Value::Float(*re), state),
        Value::Complex(re, im) => {
            state.write_u8(12);
            state.write_u64(re.to_bits());
            state.write_u64(im.to_bits());
        }
        Value::Slice(s) => {
            state.write_u8(13);
            for i in s.iter() {
                hash_value(i, state);
            }
        }
        Value::Tuple(items) => {
            state.write_u8(3);
            for i in items.iter() {
                hash_value(i, state);
            }
        }
        Value::Range(a, b, c) => {
            range_identity(*a, *b, *c).hash(state);
        }
        Value::Builtin(n) => n.hash(state),
        // A stdlib value (`datetime`, `timedelta`, `UUID` ...) hashes by its fields.
        Value::Instance(i) if super::stdlib::hashes_by_value(&i.class) => {
            state.write_u8(7);
            let n = super::stdlib::identity_fields(&i.class);
            for f in i.fields.borrow().iter().take(n) {
                hash_value(f, state);
            }
        }
        // An object keyed by its class's `__hash__` hashes as that int would.
        Value::Instance(i) if i.user_hash.get().is_some() => {
            state.write_u64(i.user_hash.get().unwrap_or(0) as u64)
        }
        // A typed enum's member (`enum E: int`) hashes as its value, so it is the same
        // dict key (Python's `IntEnum`/`StrEnum`).
        Value::EnumMember(m) if super::decl_later::enum_value_type(&m.class).is_some() => {
            hash_value(&m.value, state)
        }
        other => state.write_usize(identity(other).unwrap_or(0)),
    }
}

impl PartialEq for HashKey {
    fn eq(&self, other: &HashKey) -> bool {
        key_eq(&self.0, &other.0)
    }
}

impl Eq for HashKey {}

/// What makes two ranges equal, as CPython compares them: the same items, so the length,
/// the first item when there is one and the step when there are two.
fn range_identity(a: i64, b: i64, c: i64) -> (usize, Option<i64>, Option<i64>) {
    let n = super::builtins::range_len(a, b, c);
    (n, (n > 0).then_some(a), (n > 1).then_some(c))
}

/// Equality for hashable values (no user code runs).
pub fn key_eq(a: &Value, b: &Value) -> bool {
    use Value as V;
    match (a, b) {
        (V::None, V::None) => true,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Bytes(x), V::Bytes(y)) => x == y,
        (V::FrozenSet(x), V::FrozenSet(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.iter().all(|k| y.contains(k))
        }
        (V::Slice(x), V::Slice(y)) => x.iter().zip(y.iter()).all(|(p, q)| key_eq(p, q)),
        (V::Complex(a, b), V::Complex(c, d)) => a == c && b == d,
        (V::Complex(re, im), other) | (other, V::Complex(re, im))
            if matches!(other, V::Int(_) | V::BigInt(_) | V::Bool(_) | V::Float(_)) =>
        {
            *im == 0.0 && key_eq(&V::Float(*re), other)
        }
        (V::Tuple(x), V::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| key_eq(p, q))
        }
        (V::Range(a1, b1, c1), V::Range(a2, b2, c2)) => {
            range_identity(*a1, *b1, *c1) == range_identity(*a2, *b2, *c2)
        }
        (V::Builtin(x), V::Builtin(y)) => x == y,
        (V::Instance(x), V::Instance(y))
            if super::stdlib::hashes_by_value(&x.class)
                && x.class.stored.name == y.class.stored.name =>
        {
            let (p, q) = (x.fields.borrow(), y.fields.borrow());
            let n = super::stdlib::identity_fields(&x.class);
            p.len() == q.len() && p.iter().zip(q.iter()).take(n).all(|(m, n)| key_eq(m, n))
        }
        (V::EnumMember(m), other) | (other, V::EnumMember(m))
            if super::decl_later::enum_value_type(&m.class).is_some() =>
        {
            match other {
                V::EnumMember(o) if Rc::ptr_eq(m, o) => true,
                V::EnumMember(o) if super::decl_later::enum_value_type(&o.class).is_some() => {
                    key_eq(&m.value, &o.value)
                }
                _ => key_eq(&m.value, other),
            }
        }
        _ => {
            if let (Some(x), Some(y)) = (num_of(a), num_of(b)) {
                return x == y;
            }
            match (identity(a), identity(b)) {
                (Some(x), Some(y)) => {
                    x == y && std::mem::discriminant(a) == std::mem::discriminant(b)
                }
                _ => false,
            }
        }
    }
}

/// A numeric view used for cross-type numeric equality.
#[derive(PartialEq, Debug)]
pub enum Num {
    I(i64),
    B(BigInt),
    F(f64),
}

pub fn num_of(v: &Value) -> Option<Num> {
    match v {
        Value::Bool(b) => Some(Num::I(i64::from(*b))),
        Value::Int(i) => Some(Num::I(*i)),
        Value::BigInt(b) => Some(Num::B((**b).clone())),
        // An integral float is viewed as its int: exactly an `i64` below 2**63 in
        // magnitude (`-2**63` included), a big int beyond, as `Value::from_bigint` splits
        // ints.
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => {
            // 2**63, exact as a float.
            let limit = -(i64::MIN as f64);
            if (-limit..limit).contains(f) {
                Some(Num::I(*f as i64))
            } else {
                crate::pyfmt::float_to_int(*f).map(Num::B)
            }
        }
        Value::Float(f) => Some(Num::F(*f)),
        _ => None,
    }
}

/// Unique ids for classes and instances (identity for `is`, hashing and repr).
pub fn next_id() -> u64 {
    thread_local! {
        static NEXT: Cell<u64> = const { Cell::new(1) };
    }
    NEXT.with(|n| {
        let v = n.get();
        n.set(v + 1);
        v
    })
}

#[cfg(test)]
mod tests {
    use super::{Value, Vars};
    use std::rc::Rc;

    fn int(v: Option<&Value>) -> Option<i64> {
        match v {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }
    }

    #[test]
    fn vars_find_by_text_and_pointer_across_the_index_switch() {
        let mut vars = Vars::default();
        let names: Vec<Rc<str>> = (0..40).map(|i| Rc::from(format!("v{i}"))).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(vars.insert(n.clone(), Value::Int(i as i64)).is_none());
            // Every binding so far is found, by the same Rc and by an equal string.
            for (j, m) in names[..=i].iter().enumerate() {
                assert_eq!(int(vars.get(m)), Some(j as i64));
                assert_eq!(int(vars.get(&format!("v{j}"))), Some(j as i64));
            }
        }
        assert_eq!(vars.len(), 40);
        // Rebinding keeps one entry.
        assert_eq!(
            int(vars.insert(names[3].clone(), Value::Int(99)).as_ref()),
            Some(3)
        );
        assert_eq!(int(vars.get("v3")), Some(99));
        assert_eq!(vars.len(), 40);
        // Removal keeps the others reachable (the index is shifted).
        assert_eq!(int(vars.remove("v0").as_ref()), Some(0));
        assert!(vars.get("v0").is_none());
        for j in 1..40 {
            assert!(vars.get(&format!("v{j}")).is_some(), "v{j}");
        }
        assert!(vars.get("v40").is_none() && vars.get("").is_none());
        vars.clear();
        assert!(vars.is_empty() && vars.get("v5").is_none());
        vars.insert(names[5].clone(), Value::Int(5));
        assert_eq!(int(vars.get("v5")), Some(5));
    }
}
