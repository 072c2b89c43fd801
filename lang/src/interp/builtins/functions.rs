//! The builtin functions (`print`, `len`, `sorted`, `isinstance`, ...).

use super::args::{
    Kwargs, bind, exc_message, index_of, is_exc, lt, make_iter, no_kwargs, one, tname,
};
use super::{collections, construct, numeric, sort, strings};
use crate::ast::BinOp;
use crate::interp::lazy::Lazy;
use crate::interp::value::{Class, ClassKind, IterKind, PyStr, Value};
use crate::interp::{Interp, Interrupt};
use std::rc::Rc;

type R<T> = Result<T, Interrupt>;

/// Dispatch a builtin function by name; `Ok(None)` when the name is not ours.
pub(super) fn call(
    it: &mut Interp,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "print" => print(it, args, kwargs)?,
        "len" => {
            let v = one(it, "len", args, &kwargs)?;
            len(it, &v)?
        }
        "range" => construct::range(it, args, &kwargs)?,
        "repr" => {
            let v = one(it, "repr", args, &kwargs)?;
            Value::Str(PyStr::from(it.repr(&v)?))
        }
        "ascii" => {
            let v = one(it, "ascii", args, &kwargs)?;
            let r = it.repr(&v)?;
            Value::Str(PyStr::from(strings::ascii_escape(&r)))
        }
        "abs" => {
            let v = one(it, "abs", args, &kwargs)?;
            numeric::abs(it, &v)?
        }
        "round" => numeric::round(it, args, kwargs)?,
        "min" => min_max(it, args, kwargs, false)?,
        "max" => min_max(it, args, kwargs, true)?,
        "sum" => sum(it, args, kwargs)?,
        "sorted" => sorted(it, args, kwargs)?,
        "reversed" => {
            let v = one(it, "reversed", args, &kwargs)?;
            reversed(it, &v)?
        }
        "enumerate" => enumerate(it, args, kwargs)?,
        "zip" => zip(it, args, kwargs)?,
        "map" => map(it, args, &kwargs)?,
        "filter" => filter(it, args, &kwargs)?,
        "any" | "all" => {
            let v = one(it, name, args, &kwargs)?;
            any_all(it, &v, name == "all")?
        }
        "isinstance" => {
            let [x, t] = bind(it, "isinstance", args, kwargs, ["obj", "class_or_tuple"], 2)?;
            let (x, t) = (x.unwrap_or(Value::None), t.unwrap_or(Value::None));
            Value::Bool(isinstance(it, &x, &t)?)
        }
        "issubclass" => {
            let [a, t] = bind(it, "issubclass", args, kwargs, ["cls", "class_or_tuple"], 2)?;
            let (a, t) = (a.unwrap_or(Value::None), t.unwrap_or(Value::None));
            Value::Bool(issubclass(it, &a, &t)?)
        }
        "type" => {
            no_kwargs(it, "type", &kwargs)?;
            if args.len() != 1 {
                return Err(it.err("TypeError", "type() takes 1 or 3 arguments"));
            }
            Value::Class(it.class_of(&args[0]))
        }
        "vars" => {
            let [v] = bind(it, "vars", args, kwargs, ["object"], 1)?;
            let v = v.unwrap_or(Value::None);
            match it.attr_dict(&v)? {
                Some(d) => d,
                None => {
                    return Err(it.err("TypeError", "vars() argument must have __dict__ attribute"));
                }
            }
        }
        "hasattr" => {
            let [v, n] = bind(it, "hasattr", args, kwargs, ["obj", "name"], 2)?;
            let (v, n) = (v.unwrap_or(Value::None), n.unwrap_or(Value::None));
            let n = attr_name(it, &n)?;
            match it.get_attr(&v, &n) {
                Ok(_) => Value::Bool(true),
                Err(e) if is_exc(it, &e, "AttributeError") => Value::Bool(false),
                Err(e) => return Err(e),
            }
        }
        "getattr" => {
            no_kwargs(it, "getattr", &kwargs)?;
            let n_args = args.len();
            if !(2..=3).contains(&n_args) {
                return Err(it.err(
                    "TypeError",
                    format!("getattr expected at least 2 arguments, got {n_args}"),
                ));
            }
            let mut a = args.into_iter();
            let v = a.next().unwrap_or(Value::None);
            let n = a.next().unwrap_or(Value::None);
            let default = a.next();
            let n = attr_name(it, &n)?;
            match it.get_attr(&v, &n) {
                Ok(x) => x,
                Err(e) => match default {
                    Some(d) if is_exc(it, &e, "AttributeError") => d,
                    _ => return Err(e),
                },
            }
        }
        "setattr" => {
            let [v, n, x] = bind(it, "setattr", args, kwargs, ["obj", "name", "value"], 3)?;
            let n = attr_name(it, n.as_ref().unwrap_or(&Value::None))?;
            it.set_attr(&v.unwrap_or(Value::None), &n, x.unwrap_or(Value::None))?;
            Value::None
        }
        "delattr" => {
            let [v, n] = bind(it, "delattr", args, kwargs, ["obj", "name"], 2)?;
            let n = attr_name(it, n.as_ref().unwrap_or(&Value::None))?;
            it.del_attr(&v.unwrap_or(Value::None), &n)?;
            Value::None
        }
        "hash" => {
            let v = one(it, "hash", args, &kwargs)?;
            Value::Int(numeric::py_hash(it, &v)?)
        }
        "id" => {
            let v = one(it, "id", args, &kwargs)?;
            Value::Int(numeric::py_id(&v))
        }
        "ord" => {
            let v = one(it, "ord", args, &kwargs)?;
            numeric::ord(it, &v)?
        }
        "chr" => {
            let v = one(it, "chr", args, &kwargs)?;
            numeric::chr(it, &v)?
        }
        "divmod" => {
            let [a, b] = bind(it, "divmod", args, kwargs, ["x", "y"], 2)?;
            numeric::divmod(it, &a.unwrap_or(Value::None), &b.unwrap_or(Value::None))?
        }
        "pow" => {
            let [b, e, m] = bind(it, "pow", args, kwargs, ["base", "exp", "mod"], 2)?;
            let (b, e) = (b.unwrap_or(Value::None), e.unwrap_or(Value::None));
            match m {
                None | Some(Value::None) => it.binary_op(BinOp::Pow, &b, &e)?,
                Some(m) => numeric::pow_mod(it, &b, &e, &m)?,
            }
        }
        "bin" | "hex" | "oct" => {
            let v = one(it, name, args, &kwargs)?;
            numeric::radix_str(it, &v, name)?
        }
        "iter" => {
            let v = one(it, "iter", args, &kwargs)?;
            match v {
                Value::Iter(..) | Value::Generator(_) | Value::Lazy(_) => v,
                other => Value::Iter(
                    Rc::new(std::cell::RefCell::new(it.iter_items(&other)?)),
                    IterKind::of(&other, false),
                ),
            }
        }
        "next" => {
            no_kwargs(it, "next", &kwargs)?;
            let n_args = args.len();
            if !(1..=2).contains(&n_args) {
                return Err(it.err(
                    "TypeError",
                    format!("next expected at least 1 argument, got {n_args}"),
                ));
            }
            let mut a = args.into_iter();
            let v = a.next().unwrap_or(Value::None);
            let default = a.next();
            next(it, &v, default)?
        }
        "input" => {
            let [p] = bind(it, "input", args, kwargs, ["prompt"], 0)?;
            if let Some(p) = p {
                let s = it.to_str(&p)?;
                it.write_stdout(&s);
            }
            Value::str("")
        }
        "dir" => super::dir::dir(it, args, &kwargs)?,
        // The name exists (a program may test `callable(open)` or pass it along), but
        // files belong to the host: a call is refused, naming what to use instead.
        "open" => {
            return Err(it.err(
                "OSError",
                "open() is not available in svc: the file system belongs to the host \
                 (use store() for files)",
            ));
        }
        "callable" => {
            let v = one(it, "callable", args, &kwargs)?;
            Value::Bool(callable(it, &v))
        }
        "format" => {
            let [v, spec] = bind(it, "format", args, kwargs, ["value", "format_spec"], 1)?;
            let v = v.unwrap_or(Value::None);
            let spec = match &spec {
                None => Rc::from(""),
                Some(Value::Str(s)) => s.to_rc(),
                Some(other) => {
                    let t = tname(it, other);
                    return Err(it.err(
                        "TypeError",
                        format!("format() argument 2 must be str, not {t}"),
                    ));
                }
            };
            Value::Str(PyStr::from(strings::format_value(it, &v, &spec)?))
        }
        "int" | "float" | "str" | "bool" | "list" | "tuple" | "dict" | "set" | "frozenset"
        | "object" => match it.builtin_class(name) {
            Some(c) => construct::construct_builtin(it, &c, args, kwargs)?,
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(v))
}

fn attr_name(it: &Interp, v: &Value) -> R<Rc<str>> {
    match v {
        Value::Str(s) => Ok(s.to_rc()),
        other => Err(it.err(
            "TypeError",
            format!("attribute name must be string, not '{}'", tname(it, other)),
        )),
    }
}

fn print(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    // A generator dropped since the statement began (`print(first())` where `first`
    // returned from inside a `for` over one) is closed before the line is written.
    it.close_abandoned()?;
    let mut sep: Option<Rc<str>> = None;
    let mut end: Option<Rc<str>> = None;
    for (k, v) in kwargs {
        let slot = match &*k {
            "sep" => &mut sep,
            "end" => &mut end,
            "file" | "flush" => continue,
            _ => {
                return Err(it.err(
                    "TypeError",
                    format!("'{k}' is an invalid keyword argument for print()"),
                ));
            }
        };
        match v {
            Value::None => {}
            Value::Str(s) => *slot = Some(s.to_rc()),
            other => {
                let t = tname(it, &other);
                return Err(it.err(
                    "TypeError",
                    format!("{k} must be None or a string, not {t}"),
                ));
            }
        }
    }
    let sep = sep.as_deref().unwrap_or(" ");
    let end = end.as_deref().unwrap_or("\n");
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match a {
            Value::Str(s) => out.push_str(s),
            other => out.push_str(&it.to_str(other)?),
        }
    }
    out.push_str(end);
    it.write_stdout(&out);
    Ok(Value::None)
}

/// Call a dunder method a user class defines (`__len__`, `__abs__`, ...), if it does.
pub(super) fn user_dunder(
    it: &mut Interp,
    v: &Value,
    name: &str,
    args: Vec<Value>,
) -> Option<R<Value>> {
    if !matches!(v, Value::Instance(_) | Value::Anchor(_)) {
        return None;
    }
    let cls = it.class_of(v);
    cls.find_method(name)?;
    Some(
        it.get_attr(v, name)
            .and_then(|f| it.call_value(&f, args, Vec::new())),
    )
}

/// `len(v)`.
pub(super) fn len(it: &mut Interp, v: &Value) -> R<Value> {
    let n = match v {
        Value::Str(s) => strings::char_len(s),
        Value::Bytes(b) => b.len(),
        Value::ByteArray(b) => b.borrow().len(),
        Value::List(l) => l.borrow().len(),
        Value::Tuple(t) => t.len(),
        Value::Dict(d) => d.borrow().len(),
        Value::View(v) => v.len(),
        Value::Set(s) | Value::FrozenSet(s) => s.borrow().len(),
        Value::Range(a, b, c) => collections::range_len(*a, *b, *c),
        // `len(Color)`: how many members the enum has.
        Value::Class(c) if c.kind == crate::interp::value::ClassKind::Enum => {
            c.members.borrow().len()
        }
        _ if let Some(Value::Tuple(t)) = it.stdlib_tuple(v) => t.len(),
        _ => {
            if let Some(r) = user_dunder(it, v, "__len__", Vec::new()) {
                let r = r?;
                return match r {
                    Value::Int(i) if i >= 0 => Ok(r),
                    Value::Bool(b) => Ok(Value::Int(i64::from(b))),
                    Value::Int(_) => Err(it.err("ValueError", "__len__() should return >= 0")),
                    other => {
                        let t = tname(it, &other);
                        Err(it.err(
                            "TypeError",
                            format!("'{t}' object cannot be interpreted as an integer"),
                        ))
                    }
                };
            }
            let t = tname(it, v);
            return Err(it.err("TypeError", format!("object of type '{t}' has no len()")));
        }
    };
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

fn min_max(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs, is_max: bool) -> R<Value> {
    let fname = if is_max { "max" } else { "min" };
    let mut key: Option<Value> = None;
    let mut default: Option<Value> = None;
    for (k, v) in kwargs {
        match &*k {
            "key" => key = if v.is_none() { None } else { Some(v) },
            "default" => default = Some(v),
            _ => {
                return Err(it.err(
                    "TypeError",
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                ));
            }
        }
    }
    let items = match args.len() {
        0 => {
            return Err(it.err(
                "TypeError",
                format!("{fname} expected at least 1 argument, got 0"),
            ));
        }
        1 => {
            let src = args.into_iter().next().unwrap_or(Value::None);
            if key.is_none()
                && let Some(best) = native_min_max(&src, is_max)
            {
                return Ok(best);
            }
            if key.is_none()
                && let Value::Range(a, b, s) = src
                && let Some((first, last)) = range_ends(a, b, s)
            {
                // A range is ordered: its least and greatest items are its ends.
                let (lo, hi) = if s > 0 { (first, last) } else { (last, first) };
                return Ok(Value::Int(if is_max { hi } else { lo }));
            }
            it.iterate(&src)?
        }
        _ => {
            if default.is_some() {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "Cannot specify a default for {fname}() with multiple positional arguments"
                    ),
                ));
            }
            args
        }
    };
    let mut iter = items.into_iter();
    let Some(mut best) = iter.next() else {
        return match default {
            Some(d) => Ok(d),
            None => Err(it.err(
                "ValueError",
                format!("{fname}() iterable argument is empty"),
            )),
        };
    };
    let mut best_key = match &key {
        Some(f) => Some(it.call_value(f, vec![best.clone()], Vec::new())?),
        None => None,
    };
    for item in iter {
        it.poll()?;
        let item_key = match &key {
            Some(f) => Some(it.call_value(f, vec![item.clone()], Vec::new())?),
            None => None,
        };
        let bk = best_key.as_ref().unwrap_or(&best);
        let ik = item_key.as_ref().unwrap_or(&item);
        let better = if is_max {
            gt(it, ik, bk)?
        } else {
            lt(it, ik, bk)?
        };
        if better {
            best = item;
            best_key = item_key;
        }
    }
    Ok(best)
}

/// The first and last items of a non-empty `range(a, b, s)`.
fn range_ends(a: i64, b: i64, s: i64) -> Option<(i64, i64)> {
    let n = collections::range_len(a, b, s);
    if n == 0 {
        return None;
    }
    let last = i128::from(a) + i128::from(s) * (i128::try_from(n).ok()? - 1);
    Some((a, i64::try_from(last).ok()?))
}

/// `sum(range(a, b, s), start)` in closed form (no iteration, exact as CPython's ints).
fn range_sum(a: i64, b: i64, s: i64, start: i64) -> Option<Value> {
    let n = i128::try_from(collections::range_len(a, b, s)).ok()?;
    // n * a + s * n * (n - 1) / 2 + start, in BigInt: n * n overflows i128 for no
    // range, but the product with s might.
    let n = num_bigint::BigInt::from(n);
    let total = &n * a + num_bigint::BigInt::from(s) * (&n * (&n - 1u8) / 2u8) + start;
    Some(Value::from_bigint(total))
}

/// `min`/`max` of a non-empty list or tuple of only ints or only strings, scanned in place
/// (no user code can run, so the borrow is safe). `None`: take the general path.
fn native_min_max(src: &Value, is_max: bool) -> Option<Value> {
    fn pick(items: &[Value], is_max: bool) -> Option<Value> {
        let first = items.first()?;
        match first {
            Value::Int(_) => {
                let mut best = 0usize;
                let mut bv = i64::MIN;
                for (i, v) in items.iter().enumerate() {
                    let Value::Int(x) = v else { return None };
                    if i == 0 || (is_max && *x > bv) || (!is_max && *x < bv) {
                        best = i;
                        bv = *x;
                    }
                }
                items.get(best).cloned()
            }
            Value::Str(_) => {
                let mut best: &Value = first;
                for v in items {
                    let (Value::Str(x), Value::Str(b)) = (v, best) else {
                        return None;
                    };
                    if (is_max && x > b) || (!is_max && x < b) {
                        best = v;
                    }
                }
                Some(best.clone())
            }
            _ => None,
        }
    }
    match src {
        Value::List(l) => pick(&l.borrow(), is_max),
        Value::Tuple(t) => pick(t, is_max),
        _ => None,
    }
}

/// Python `a > b` (as `b < a`, with CPython's wording when the pair is unorderable).
fn gt(it: &mut Interp, a: &Value, b: &Value) -> R<bool> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x > y),
        (Value::Float(x), Value::Float(y)) => Ok(x > y),
        (Value::Str(x), Value::Str(y)) => Ok(x > y),
        _ => match lt(it, b, a) {
            Err(e) if exc_message(&e).is_some_and(|m| m.starts_with("'<' not supported")) => {
                let (ta, tb) = (tname(it, a), tname(it, b));
                Err(it.err(
                    "TypeError",
                    format!("'>' not supported between instances of '{ta}' and '{tb}'"),
                ))
            }
            r => r,
        },
    }
}

/// The native part of `sum` (CPython 3.12's int and float fast paths) over `items`
/// starting from `acc`: returns the running result and how many items it consumed. The
/// rest needs the interpreter's `+`.
fn sum_native(items: &[Value], acc: &Value) -> (Option<Value>, usize) {
    let mut pos = 0;
    let mut result: Option<Value> = None;
    if let Value::Int(start) = acc {
        let mut total = *start;
        while let Some(v) = items.get(pos) {
            let add = match v {
                Value::Int(x) => *x,
                Value::Bool(b) => i64::from(*b),
                _ => break,
            };
            match total.checked_add(add) {
                Some(t) => total = t,
                None => break,
            }
            pos += 1;
        }
        // An int then a float continues in the float loop, as CPython does.
        match items.get(pos) {
            Some(Value::Float(x)) => {
                result = Some(Value::Float(total as f64 + *x));
                pos += 1;
            }
            _ => return (Some(Value::Int(total)), pos),
        }
    }
    let f0 = match (&result, acc) {
        (Some(Value::Float(f)), _) | (None, Value::Float(f)) => *f,
        _ => return (result, pos),
    };
    // Neumaier compensated summation, as CPython 3.12.
    let mut f = f0;
    let mut c = 0.0f64;
    while let Some(v) = items.get(pos) {
        match v {
            Value::Float(x) => {
                let x = *x;
                let t = f + x;
                if f.abs() >= x.abs() {
                    c += (f - t) + x;
                } else {
                    c += (x - t) + f;
                }
                f = t;
            }
            Value::Int(i) => f += *i as f64,
            Value::Bool(b) => f += f64::from(u8::from(*b)),
            _ => break,
        }
        pos += 1;
    }
    if c != 0.0 && c.is_finite() {
        f += c;
    }
    (Some(Value::Float(f)), pos)
}

fn sum(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let [src, start] = bind(it, "sum", args, kwargs, ["iterable", "start"], 1)?;
    let src = src.unwrap_or(Value::None);
    let start = start.unwrap_or(Value::Int(0));
    if let Value::Str(_) = &start {
        return Err(it.err(
            "TypeError",
            "sum() can't sum strings [use ''.join(seq) instead]",
        ));
    }
    if let (Value::Range(a, b, s), Value::Int(st)) = (&src, &start)
        && let Some(total) = range_sum(*a, *b, *s, *st)
    {
        return Ok(total);
    }
    // Lists and tuples are scanned in place; the rest (if any) is copied out.
    let (native, rest): (Option<Value>, Vec<Value>) = match &src {
        Value::List(l) => {
            let b = l.borrow();
            let (r, pos) = sum_native(&b, &start);
            (r, b.get(pos..).map(<[Value]>::to_vec).unwrap_or_default())
        }
        Value::Tuple(t) => {
            let (r, pos) = sum_native(t, &start);
            (r, t.get(pos..).map(<[Value]>::to_vec).unwrap_or_default())
        }
        other => {
            let items = it.iterate(other)?;
            let (r, pos) = sum_native(&items, &start);
            let mut items = items;
            (r, items.split_off(pos.min(items.len())))
        }
    };
    let mut result = native.unwrap_or(start);
    let mut rest = rest.into_iter();
    let ended_in_int_loop = matches!(result, Value::Int(_));
    if let Some(item) = rest.next() {
        result = it.binary_op(BinOp::Add, &result, &item)?;
        // CPython leaves its int loop with one generic add, then runs its float loop when
        // that made a float.
        if ended_in_int_loop && let Value::Float(_) = result {
            let tail: Vec<Value> = rest.collect();
            let (r, pos) = sum_native(&tail, &result);
            if let Some(r) = r {
                result = r;
            }
            rest = tail
                .get(pos..)
                .map(<[Value]>::to_vec)
                .unwrap_or_default()
                .into_iter();
        }
    }
    for item in rest {
        it.poll()?;
        result = it.binary_op(BinOp::Add, &result, &item)?;
    }
    Ok(result)
}

fn sorted(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let n = args.len();
    if n != 1 {
        return Err(it.err("TypeError", format!("sorted expected 1 argument, got {n}")));
    }
    let (key, reverse) = sort_kwargs(it, "sorted", kwargs)?;
    let src = args.into_iter().next().unwrap_or(Value::None);
    let items = it.iterate(&src)?;
    match sort::sort_values(it, items, key.as_ref(), reverse) {
        (out, None) => Ok(Value::list(out)),
        (_, Some(e)) => Err(e),
    }
}

/// `key=` and `reverse=` of `sorted` and `list.sort`.
pub(super) fn sort_kwargs(
    it: &mut Interp,
    fname: &str,
    kwargs: Kwargs,
) -> R<(Option<Value>, bool)> {
    let mut key = None;
    let mut reverse = false;
    for (k, v) in kwargs {
        match &*k {
            "key" => key = if v.is_none() { None } else { Some(v) },
            "reverse" => reverse = it.truthy(&v)?,
            _ => {
                return Err(it.err(
                    "TypeError",
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                ));
            }
        }
    }
    Ok((key, reverse))
}

fn reversed(it: &mut Interp, v: &Value) -> R<Value> {
    let items = match v {
        Value::List(l) => l.borrow().iter().rev().cloned().collect(),
        Value::Tuple(t) => t.iter().rev().cloned().collect(),
        Value::Str(s) => s
            .chars()
            .rev()
            .map(|c| Value::Str(PyStr::from(c.encode_utf8(&mut [0; 4]) as &str)))
            .collect(),
        Value::Dict(d) => d.borrow().keys().rev().map(|k| k.0.clone()).collect(),
        Value::View(v) => {
            let mut items = v.items();
            items.reverse();
            items
        }
        Value::Range(..) | Value::Bytes(_) | Value::ByteArray(_) => {
            let mut items = it.iterate(v)?;
            items.reverse();
            items
        }
        _ => {
            if let Some(r) = user_dunder(it, v, "__reversed__", Vec::new()) {
                return r;
            }
            let t = tname(it, v);
            return Err(it.err("TypeError", format!("'{t}' object is not reversible")));
        }
    };
    Ok(make_iter(items, IterKind::of(v, true)))
}

fn enumerate(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let [src, start] = bind(it, "enumerate", args, kwargs, ["iterable", "start"], 1)?;
    let start = match &start {
        None => 0,
        Some(s) => index_of(it, s)?,
    };
    let src = it.iterator_of(&src.unwrap_or(Value::None))?;
    Ok(Lazy::enumerate(src, start))
}

fn zip(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let mut strict = false;
    for (k, v) in kwargs {
        if &*k == "strict" {
            strict = it.truthy(&v)?;
        } else {
            return Err(it.err(
                "TypeError",
                format!("zip() got an unexpected keyword argument '{k}'"),
            ));
        }
    }
    let mut srcs = Vec::with_capacity(args.len());
    for a in &args {
        srcs.push(it.iterator_of(a)?);
    }
    Ok(Lazy::zip(srcs, strict))
}

fn map(it: &mut Interp, args: Vec<Value>, kwargs: &Kwargs) -> R<Value> {
    no_kwargs(it, "map", kwargs)?;
    if args.len() < 2 {
        return Err(it.err("TypeError", "map() must have at least two arguments."));
    }
    let mut a = args.into_iter();
    let f = a.next().unwrap_or(Value::None);
    let mut srcs = Vec::new();
    for src in a {
        srcs.push(it.iterator_of(&src)?);
    }
    Ok(Lazy::map(f, srcs))
}

fn filter(it: &mut Interp, args: Vec<Value>, kwargs: &Kwargs) -> R<Value> {
    no_kwargs(it, "filter", kwargs)?;
    let n = args.len();
    if n != 2 {
        return Err(it.err("TypeError", format!("filter expected 2 arguments, got {n}")));
    }
    let mut a = args.into_iter();
    let f = a.next().unwrap_or(Value::None);
    let src = it.iterator_of(&a.next().unwrap_or(Value::None))?;
    Ok(Lazy::filter(f, src))
}

fn any_all(it: &mut Interp, v: &Value, all: bool) -> R<Value> {
    // An iterator is consumed only up to the deciding value, as in CPython.
    if matches!(v, Value::Generator(_) | Value::Iter(..) | Value::Lazy(_)) {
        let found = it.iter_find(v, &mut |it, x| Ok(it.truthy(x)? != all))?;
        return Ok(Value::Bool(found != all));
    }
    let items = it.iterate(v)?;
    for x in &items {
        it.poll()?;
        if it.truthy(x)? != all {
            return Ok(Value::Bool(!all));
        }
    }
    Ok(Value::Bool(all))
}

/// `cls` is `c` or derives from it (`object` and `any` match everything).
fn class_is(cls: &Class, c: &Class) -> bool {
    if c.kind == ClassKind::Builtin && matches!(&*c.name, "object" | "any") {
        return true;
    }
    cls.is_sub(c)
}

/// `isinstance(x, t)` where `t` is a class or a (nested) tuple of classes.
pub(super) fn isinstance(it: &mut Interp, x: &Value, t: &Value) -> R<bool> {
    match t {
        Value::Class(c) => {
            let cls = it.class_of(x);
            Ok(class_is(&cls, c))
        }
        Value::Tuple(ts) => {
            for t in ts.iter() {
                if isinstance(it, x, t)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::None => {
            // `X | None` unions carry None for NoneType.
            Ok(x.is_none())
        }
        _ => Err(it.err(
            "TypeError",
            "isinstance() arg 2 must be a type, a tuple of types, or a union",
        )),
    }
}

fn issubclass(it: &mut Interp, a: &Value, t: &Value) -> R<bool> {
    let Value::Class(a) = a else {
        return Err(it.err("TypeError", "issubclass() arg 1 must be a class"));
    };
    match t {
        Value::Class(c) => Ok(class_is(a, c)),
        Value::Tuple(ts) => {
            for t in ts.iter() {
                if issubclass(it, &Value::Class(a.clone()), t)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Err(it.err(
            "TypeError",
            "issubclass() arg 2 must be a class, a tuple of classes, or a union",
        )),
    }
}

fn next(it: &mut Interp, v: &Value, default: Option<Value>) -> R<Value> {
    match v {
        Value::Generator(g) => it.gen_next(g, default),
        Value::Lazy(l) => match (it.lazy_next(l)?, default) {
            (Some(x), _) => Ok(x),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(super::args::stop_iteration(it)),
        },
        Value::Iter(i, _) => {
            let n = i.borrow_mut().next();
            match (n, default) {
                (Some(x), _) => Ok(x),
                (None, Some(d)) => Ok(d),
                (None, None) => Err(super::args::stop_iteration(it)),
            }
        }
        _ => {
            if let Some(r) = user_dunder(it, v, "__next__", Vec::new()) {
                return r;
            }
            let t = tname(it, v);
            Err(it.err("TypeError", format!("'{t}' object is not an iterator")))
        }
    }
}

fn callable(it: &Interp, v: &Value) -> bool {
    match v {
        Value::Func(_)
        | Value::Bound(_)
        | Value::Builtin(_)
        | Value::BuiltinMethod(_)
        | Value::Class(_) => true,
        Value::Instance(_) | Value::Anchor(_) => it.class_of(v).find_method("__call__").is_some(),
        _ => false,
    }
}
