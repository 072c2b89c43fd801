//! Methods of `list`, `dict`, `set`, `tuple` and `range` values.

use super::args::{
    Kwargs, bind, eq, index_of, is_scalar, no_kwargs, one, opt_index, range_args, scalar_eq,
};
use super::{functions, sort};
use crate::interp::dictview::{DictView, ViewKind};
use crate::interp::value::{Dict, FxBuild, HashKey, Set, Value};
use crate::interp::{Interp, Interrupt};
use std::cell::RefCell;
use std::rc::Rc;

type R<T> = Result<T, Interrupt>;
type ListRef = Rc<RefCell<Vec<Value>>>;

pub(super) const LIST_METHODS: &[&str] = &[
    "append", "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse", "copy",
    "clear",
];
pub(super) const DICT_METHODS: &[&str] = &[
    "get",
    "keys",
    "values",
    "items",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "copy",
    "clear",
    "fromkeys",
];
pub(super) const SET_METHODS: &[&str] = &[
    "add",
    "discard",
    "remove",
    "pop",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "update",
    "intersection_update",
    "difference_update",
    "symmetric_difference_update",
    "issubset",
    "issuperset",
    "isdisjoint",
    "copy",
    "clear",
];
/// The methods of `frozenset`: those of `set` that change nothing.
pub(super) const FROZENSET_METHODS: &[&str] = &[
    "copy",
    "difference",
    "intersection",
    "isdisjoint",
    "issubset",
    "issuperset",
    "symmetric_difference",
    "union",
];
pub(super) const TUPLE_METHODS: &[&str] = &["index", "count"];
pub(super) const RANGE_METHODS: &[&str] = &["index", "count"];

/// Number of items of `range(a, b, c)`.
pub(crate) fn range_len(a: i64, b: i64, c: i64) -> usize {
    let (a, b, c) = (i128::from(a), i128::from(b), i128::from(c));
    let n = if c > 0 && a < b {
        (b - a - 1) / c + 1
    } else if c < 0 && a > b {
        (a - b - 1) / (-c) + 1
    } else {
        0
    };
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A hashable dict key: scalars directly, everything else through the interpreter (which
/// rejects unhashable values); an object keyed by its class's `__hash__` finds an equal
/// key of `d`.
fn dkey(it: &mut Interp, d: &RefCell<Dict>, v: Value) -> R<HashKey> {
    if is_scalar(&v) {
        Ok(HashKey(v))
    } else {
        it.dict_key(d, &v)
    }
}

/// [`dkey`] for a set's member.
fn skey(it: &mut Interp, s: &RefCell<Set>, v: Value) -> R<HashKey> {
    if is_scalar(&v) {
        Ok(HashKey(v))
    } else {
        it.set_key(s, &v)
    }
}

/// `KeyError(key)`: the key itself is the exception's argument.
pub(super) fn key_error(it: &Interp, k: Value) -> Interrupt {
    match it.builtin_class("KeyError") {
        Some(c) => {
            let value = it.make_exception(c, vec![k]);
            Interrupt::Exc(Box::new(crate::interp::PyErr {
                value,
                trace: Vec::new(),
                origin: None,
            }))
        }
        None => it.err("KeyError", ""),
    }
}

/// Clamp Python-style `start`/`end` bounds to `0..=len`.
pub(super) fn clamp_bounds(start: Option<i64>, end: Option<i64>, len: usize) -> (usize, usize) {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let fix = |i: i64| -> usize {
        let i = if i < 0 {
            (i.saturating_add(n)).max(0)
        } else {
            i.min(n)
        };
        usize::try_from(i).unwrap_or(0)
    };
    (fix(start.unwrap_or(0)), fix(end.unwrap_or(n)))
}

/// First index in `start..end` where the item equals `x` (no borrow is held while user
/// `__eq__` code runs).
fn list_find(
    it: &mut Interp,
    l: &ListRef,
    x: &Value,
    start: usize,
    end: usize,
) -> R<Option<usize>> {
    let mut i = start;
    if is_scalar(x) {
        let b = l.borrow();
        let stop = end.min(b.len());
        while i < stop {
            match scalar_eq(&b[i], x) {
                Some(true) => return Ok(Some(i)),
                Some(false) => i += 1,
                None => break,
            }
        }
        if i >= stop {
            return Ok(None);
        }
    }
    loop {
        let item = {
            let b = l.borrow();
            match b.get(i) {
                Some(v) if i < end => v.clone(),
                _ => return Ok(None),
            }
        };
        if eq(it, &item, x)? {
            return Ok(Some(i));
        }
        i += 1;
    }
}

fn count_in(it: &mut Interp, items: &[Value], x: &Value) -> R<usize> {
    let mut n = 0;
    for v in items {
        if eq(it, v, x)? {
            n += 1;
        }
    }
    Ok(n)
}

fn int(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn list_len(l: &ListRef) -> usize {
    l.borrow().len()
}

/// Methods of `list`.
pub(super) fn list_method(
    it: &mut Interp,
    l: &ListRef,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "append" => {
            it.check_growth(list_len(l), 1)?;
            if args.len() == 1 && kwargs.is_empty() {
                if let Some(x) = args.into_iter().next() {
                    l.borrow_mut().push(x);
                }
            } else {
                let x = one(it, "list.append", args, &kwargs)?;
                l.borrow_mut().push(x);
            }
            Value::None
        }
        "extend" => {
            let src = one(it, "list.extend", args, &kwargs)?;
            let items = match &src {
                Value::List(o) => o.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                other => it.iterate(other)?,
            };
            it.check_growth(list_len(l), items.len())?;
            l.borrow_mut().extend(items);
            Value::None
        }
        "insert" => {
            range_args(it, "insert", &args, &kwargs, 2, 2)?;
            it.check_growth(list_len(l), 1)?;
            let mut a = args.into_iter();
            let i = index_of(it, &a.next().unwrap_or(Value::None))?;
            let x = a.next().unwrap_or(Value::None);
            let mut b = l.borrow_mut();
            let at = insert_position(i, b.len());
            b.insert(at, x);
            Value::None
        }
        "pop" => {
            range_args(it, "pop", &args, &kwargs, 0, 1)?;
            let i = match args.first() {
                Some(v) => index_of(it, v)?,
                None => -1,
            };
            let mut b = l.borrow_mut();
            if b.is_empty() {
                drop(b);
                return Err(it.err("IndexError", "pop from empty list"));
            }
            let Some(j) = pop_position(i, b.len()) else {
                drop(b);
                return Err(it.err("IndexError", "pop index out of range"));
            };
            if j + 1 == b.len() {
                b.pop().unwrap_or(Value::None)
            } else {
                b.remove(j)
            }
        }
        "remove" => {
            let x = one(it, "list.remove", args, &kwargs)?;
            let n = list_len(l);
            match list_find(it, l, &x, 0, n)? {
                Some(i) => {
                    let mut b = l.borrow_mut();
                    if i < b.len() {
                        b.remove(i);
                    }
                }
                None => return Err(it.err("ValueError", "list.remove(x): x not in list")),
            }
            Value::None
        }
        "index" => {
            range_args(it, "index", &args, &kwargs, 1, 3)?;
            let x = args.first().cloned().unwrap_or(Value::None);
            let s = opt_index(it, args.get(1))?;
            let e = opt_index(it, args.get(2))?;
            let (s, e) = clamp_bounds(s, e, list_len(l));
            match list_find(it, l, &x, s, e)? {
                Some(i) => int(i),
                None => {
                    let r = it.repr(&x)?;
                    return Err(it.err("ValueError", format!("{r} is not in list")));
                }
            }
        }
        "count" => {
            let x = one(it, "list.count", args, &kwargs)?;
            let items = l.borrow().clone();
            int(count_in(it, &items, &x)?)
        }
        "sort" => {
            if !args.is_empty() {
                return Err(it.err("TypeError", "sort() takes no positional arguments"));
            }
            let (key, reverse) = functions::sort_kwargs(it, "sort", kwargs)?;
            // Like CPython, the list looks empty while it is being sorted.
            let items = std::mem::take(&mut *l.borrow_mut());
            let (items, err) = sort::sort_values(it, items, key.as_ref(), reverse);
            let mut b = l.borrow_mut();
            let modified = !b.is_empty();
            *b = items;
            if let Some(e) = err {
                return Err(e);
            }
            if modified {
                drop(b);
                return Err(it.err("ValueError", "list modified during sort"));
            }
            Value::None
        }
        "reverse" => {
            no_kwargs(it, "list.reverse", &kwargs)?;
            l.borrow_mut().reverse();
            Value::None
        }
        "copy" => {
            no_kwargs(it, "list.copy", &kwargs)?;
            Value::list(l.borrow().clone())
        }
        "clear" => {
            no_kwargs(it, "list.clear", &kwargs)?;
            let old = std::mem::take(&mut *l.borrow_mut());
            drop(old);
            Value::None
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Add `(key, value)` pairs from `src` (a dict or an iterable of pairs) to `d`.
pub(super) fn dict_update_from(it: &mut Interp, d: &RefCell<Dict>, src: &Value) -> R<()> {
    match src {
        Value::Dict(o) => {
            {
                let (me, other) = (d.borrow(), o.borrow());
                it.check_merge(me.len(), other.len(), || {
                    other.keys().filter(|k| !me.contains_key(*k)).count()
                })?;
            }
            let pairs: Vec<(HashKey, Value)> = o
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut b = d.borrow_mut();
            for (k, v) in pairs {
                b.insert(k, v);
            }
        }
        other => {
            let items = it.iterate(other)?;
            for (n, item) in items.into_iter().enumerate() {
                let pair = match &item {
                    Value::Tuple(t) => t.to_vec(),
                    Value::List(l) => l.borrow().clone(),
                    Value::Str(_)
                    | Value::Iter(..)
                    | Value::Lazy(_)
                    | Value::Set(_)
                    | Value::FrozenSet(_)
                    | Value::Dict(_)
                    | Value::Range(..) => it.iterate(&item)?,
                    _ => {
                        return Err(it.err(
                            "TypeError",
                            format!("cannot convert dictionary update sequence element #{n} to a sequence"),
                        ));
                    }
                };
                if pair.len() != 2 {
                    return Err(it.err(
                        "ValueError",
                        format!(
                            "dictionary update sequence element #{n} has length {}; 2 is required",
                            pair.len()
                        ),
                    ));
                }
                let mut p = pair.into_iter();
                let k = dkey(it, d, p.next().unwrap_or(Value::None))?;
                let v = p.next().unwrap_or(Value::None);
                {
                    let b = d.borrow();
                    it.check_insert(b.len(), b.contains_key(&k))?;
                }
                d.borrow_mut().insert(k, v);
            }
        }
    }
    Ok(())
}

/// Methods of `dict`.
pub(super) fn dict_method(
    it: &mut Interp,
    d: &Rc<RefCell<Dict>>,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "get" => {
            range_args(it, "get", &args, &kwargs, 1, 2)?;
            let mut a = args.into_iter();
            let k = dkey(it, d, a.next().unwrap_or(Value::None))?;
            let found = d.borrow().get(&k).cloned();
            match found {
                Some(v) => v,
                None => a.next().unwrap_or(Value::None),
            }
        }
        "keys" => {
            no_args(it, "dict.keys", &args, &kwargs)?;
            DictView::make(d, ViewKind::Keys)
        }
        "values" => {
            no_args(it, "dict.values", &args, &kwargs)?;
            DictView::make(d, ViewKind::Values)
        }
        "items" => {
            no_args(it, "dict.items", &args, &kwargs)?;
            DictView::make(d, ViewKind::Items)
        }
        "update" => {
            if args.len() > 1 {
                return Err(it.err(
                    "TypeError",
                    format!("update expected at most 1 argument, got {}", args.len()),
                ));
            }
            if let Some(src) = args.first() {
                dict_update_from(it, d, src)?;
            }
            it.check_growth(d.borrow().len(), kwargs.len())?;
            let mut b = d.borrow_mut();
            for (k, v) in kwargs {
                b.insert(HashKey(Value::Str(k.into())), v);
            }
            Value::None
        }
        "setdefault" => {
            range_args(it, "setdefault", &args, &kwargs, 1, 2)?;
            let mut a = args.into_iter();
            let k = dkey(it, d, a.next().unwrap_or(Value::None))?;
            let default = a.next().unwrap_or(Value::None);
            {
                let b = d.borrow();
                it.check_insert(b.len(), b.contains_key(&k))?;
            }
            d.borrow_mut().entry(k).or_insert(default).clone()
        }
        "pop" => {
            range_args(it, "pop", &args, &kwargs, 1, 2)?;
            let mut a = args.into_iter();
            let kv = a.next().unwrap_or(Value::None);
            let k = dkey(it, d, kv.clone())?;
            let removed = d.borrow_mut().shift_remove(&k);
            match (removed, a.next()) {
                (Some(v), _) => v,
                (None, Some(default)) => default,
                (None, None) => return Err(key_error(it, kv)),
            }
        }
        "popitem" => {
            no_args(it, "dict.popitem", &args, &kwargs)?;
            let last = d.borrow_mut().pop();
            match last {
                Some((k, v)) => Value::tuple(vec![k.0, v]),
                None => return Err(key_error(it, Value::str("popitem(): dictionary is empty"))),
            }
        }
        "copy" => {
            no_args(it, "dict.copy", &args, &kwargs)?;
            Value::dict(d.borrow().clone())
        }
        "clear" => {
            no_args(it, "dict.clear", &args, &kwargs)?;
            let old = std::mem::take(&mut *d.borrow_mut());
            drop(old);
            Value::None
        }
        "fromkeys" => dict_fromkeys(it, args, kwargs)?,
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `dict.fromkeys(iterable, value=None)`.
pub(super) fn dict_fromkeys(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    range_args(it, "fromkeys", &args, &kwargs, 1, 2)?;
    let mut a = args.into_iter();
    let src = a.next().unwrap_or(Value::None);
    let value = a.next().unwrap_or(Value::None);
    let mut out = Dict::with_hasher(FxBuild::default());
    for k in it.iterate(&src)? {
        let k = it.new_dict_key(&out, &k)?;
        it.check_insert(out.len(), out.contains_key(&k))?;
        out.insert(k, value.clone());
    }
    Ok(Value::dict(out))
}

fn no_args(it: &Interp, fname: &str, args: &[Value], kwargs: &Kwargs) -> R<()> {
    no_kwargs(it, fname, kwargs)?;
    if args.is_empty() {
        Ok(())
    } else {
        Err(it.err(
            "TypeError",
            format!("{fname}() takes no arguments ({} given)", args.len()),
        ))
    }
}

/// The items of `v` as set keys.
pub(crate) fn set_of(it: &mut Interp, v: &Value) -> R<Set> {
    match v {
        Value::Set(s) | Value::FrozenSet(s) => Ok(s.borrow().clone()),
        Value::Dict(d) => Ok(d.borrow().keys().cloned().collect()),
        other => {
            let items = it.iterate(other)?;
            let mut out = Set::with_capacity_and_hasher(items.len(), FxBuild::default());
            for x in items {
                let k = it.new_set_key(&out, &x)?;
                out.insert(k);
            }
            Ok(out)
        }
    }
}

/// Methods of `frozenset`: `set`'s methods that change nothing, giving a `frozenset`
/// (`copy` gives the value itself, as CPython does).
pub(super) fn frozenset_method(
    it: &mut Interp,
    recv: &Value,
    s: &Rc<RefCell<Set>>,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    if !FROZENSET_METHODS.contains(&name) {
        return Ok(None);
    }
    if name == "copy" {
        no_args(it, "frozenset.copy", &args, &kwargs)?;
        return Ok(Some(recv.clone()));
    }
    Ok(match set_method(it, s, name, args, kwargs)? {
        Some(Value::Set(r)) => Some(Value::FrozenSet(r)),
        other => other,
    })
}

/// Methods of `set`.
pub(super) fn set_method(
    it: &mut Interp,
    s: &Rc<RefCell<Set>>,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "add" => {
            let x = one(it, "set.add", args, &kwargs)?;
            let k = skey(it, s, x)?;
            {
                let b = s.borrow();
                it.check_insert(b.len(), b.contains(&k))?;
            }
            s.borrow_mut().insert(k);
            Value::None
        }
        "discard" | "remove" => {
            let x = one(it, &format!("set.{name}"), args, &kwargs)?;
            let k = skey(it, s, x.clone())?;
            let removed = s.borrow_mut().shift_remove(&k);
            if !removed && name == "remove" {
                return Err(key_error(it, x));
            }
            Value::None
        }
        "pop" => {
            no_args(it, "set.pop", &args, &kwargs)?;
            let first = s.borrow_mut().shift_remove_index(0);
            match first {
                Some(k) => k.0,
                None => return Err(key_error(it, Value::str("pop from an empty set"))),
            }
        }
        "union" | "intersection" | "difference" | "symmetric_difference" => {
            no_kwargs(it, &format!("set.{name}"), &kwargs)?;
            if name == "symmetric_difference" && args.len() != 1 {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "set.symmetric_difference() takes exactly one argument ({} given)",
                        args.len()
                    ),
                ));
            }
            let mut acc = s.borrow().clone();
            for a in &args {
                let other = set_of(it, a)?;
                check_set_merge(it, &acc, &other, name)?;
                acc = set_combine(acc, &other, name);
            }
            Value::Set(Rc::new(RefCell::new(acc)))
        }
        "update" | "intersection_update" | "difference_update" | "symmetric_difference_update" => {
            no_kwargs(it, &format!("set.{name}"), &kwargs)?;
            let op = name.trim_end_matches("_update");
            let op = if op == "update" { "union" } else { op };
            for a in &args {
                let other = set_of(it, a)?;
                check_set_merge(it, &s.borrow(), &other, op)?;
                let cur = std::mem::take(&mut *s.borrow_mut());
                *s.borrow_mut() = set_combine(cur, &other, op);
            }
            Value::None
        }
        "issubset" | "issuperset" | "isdisjoint" => {
            let o = one(it, &format!("set.{name}"), args, &kwargs)?;
            let other = set_of(it, &o)?;
            let me = s.borrow();
            Value::Bool(match name {
                "issubset" => me.iter().all(|k| other.contains(k)),
                "issuperset" => other.iter().all(|k| me.contains(k)),
                _ => me.iter().all(|k| !other.contains(k)),
            })
        }
        "copy" => {
            no_args(it, "set.copy", &args, &kwargs)?;
            Value::Set(Rc::new(RefCell::new(s.borrow().clone())))
        }
        "clear" => {
            no_args(it, "set.clear", &args, &kwargs)?;
            let old = std::mem::take(&mut *s.borrow_mut());
            drop(old);
            Value::None
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Refuse `set_combine(a, b, op)` when its result would exceed the item limit (only
/// `union` and `symmetric_difference` grow).
pub(super) fn check_set_merge(it: &Interp, a: &Set, b: &Set, op: &str) -> R<()> {
    if !matches!(op, "union" | "symmetric_difference") {
        return Ok(());
    }
    it.check_merge(a.len(), b.len(), || {
        b.iter().filter(|k| !a.contains(*k)).count()
    })
}

/// Set algebra keeping the left operand's order first.
pub(super) fn set_combine(mut a: Set, b: &Set, op: &str) -> Set {
    match op {
        "union" => {
            a.extend(b.iter().cloned());
            a
        }
        "intersection" => {
            a.retain(|k| b.contains(k));
            a
        }
        "difference" => {
            a.retain(|k| !b.contains(k));
            a
        }
        _ => {
            let extra: Vec<HashKey> = b.iter().filter(|k| !a.contains(*k)).cloned().collect();
            a.retain(|k| !b.contains(k));
            a.extend(extra);
            a
        }
    }
}

/// Methods of `tuple`.
pub(super) fn tuple_method(
    it: &mut Interp,
    t: &Rc<Vec<Value>>,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "index" => {
            range_args(it, "index", &args, &kwargs, 1, 3)?;
            let x = args.first().cloned().unwrap_or(Value::None);
            let s = opt_index(it, args.get(1))?;
            let e = opt_index(it, args.get(2))?;
            let (s, e) = clamp_bounds(s, e, t.len());
            for i in s..e {
                if eq(it, &t[i], &x)? {
                    return Ok(Some(int(i)));
                }
            }
            return Err(it.err("ValueError", "tuple.index(x): x not in tuple"));
        }
        "count" => {
            let x = one(it, "tuple.count", args, &kwargs)?;
            int(count_in(it, t, &x)?)
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Methods of `range`.
pub(super) fn range_method(
    it: &mut Interp,
    r: &Value,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let Value::Range(a, b, c) = *r else {
        return Ok(None);
    };
    let pos = |x: &Value| -> Option<i64> {
        let x = match x {
            Value::Int(i) => *i,
            Value::Bool(b) => i64::from(*b),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => *f as i64,
            _ => return None,
        };
        let (x, a2, b2, c2) = (i128::from(x), i128::from(a), i128::from(b), i128::from(c));
        let inside = if c2 > 0 {
            a2 <= x && x < b2
        } else {
            b2 < x && x <= a2
        };
        if inside && (x - a2) % c2 == 0 {
            i64::try_from((x - a2) / c2).ok()
        } else {
            None
        }
    };
    let v = match name {
        "index" => {
            let [x] = bind(it, "index", args, kwargs, ["value"], 1)?;
            let x = x.unwrap_or(Value::None);
            match pos(&x) {
                Some(i) => Value::Int(i),
                None => {
                    let rep = it.repr(&x)?;
                    return Err(it.err("ValueError", format!("{rep} is not in range")));
                }
            }
        }
        "count" => {
            let x = one(it, "range.count", args, &kwargs)?;
            Value::Int(i64::from(pos(&x).is_some()))
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Where `insert(i, x)` puts `x` in a sequence of `len` items: a negative `i` counts from
/// the end, and both ends clamp, as CPython's list and bytearray do.
pub(crate) fn insert_position(i: i64, len: usize) -> usize {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let at = if i < 0 {
        i.saturating_add(n).max(0)
    } else {
        i.min(n)
    };
    usize::try_from(at).unwrap_or(0)
}

/// The item `pop(i)` takes from a sequence of `len` items (a negative `i` counts from the
/// end); `None` is CPython's "pop index out of range".
pub(crate) fn pop_position(i: i64, len: usize) -> Option<usize> {
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let j = if i < 0 { i.saturating_add(n) } else { i };
    usize::try_from(j).ok().filter(|&j| j < len)
}
