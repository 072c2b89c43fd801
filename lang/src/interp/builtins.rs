//! Python-style builtin functions, builtin type constructors and the methods of builtin
//! values (`str`, `list`, `dict`, `set`, `tuple`, `int`, `float`), with CPython's error
//! texts.
//!
//! Entry points: [`call_builtin`], [`call_method`], [`has_method`], [`construct_builtin`]
//! and [`format_value`] (the `format()` builtin, `str.format` and f-string fields).

mod args;
pub(crate) mod bytearray;
pub(crate) mod bytes;
pub(crate) mod collections;
pub(crate) use collections::range_len;
mod construct;
mod dir;
mod functions;
mod numeric;
pub(crate) use numeric::{number_hash, py_id};
mod sort;
mod strings;

#[cfg(test)]
pub(crate) mod tests;

use super::value::{Class, ClassKind, Value};
use super::{Interp, Interrupt};
pub use crate::names::BUILTIN_FUNCTIONS;
use std::rc::Rc;

pub use construct::construct_builtin;

/// Python builtin functions. Returns `Ok(None)` when `name` is not one of ours (the
/// interpreter then tries its own object-spatial builtins).
pub fn call_builtin(
    it: &mut Interp,
    name: &str,
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Option<Value>, Interrupt> {
    functions::call(it, name, args, kwargs)
}

/// Methods of builtin values. `Ok(None)` when the receiver has no such method.
pub fn call_method(
    it: &mut Interp,
    recv: &Value,
    name: &str,
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Option<Value>, Interrupt> {
    match recv {
        Value::Str(s) => strings::call_method(it, s, name, args, kwargs),
        Value::Bytes(b) => bytes::call_method(it, b, name, args, kwargs),
        Value::ByteArray(b) => bytearray::call_method(it, b, name, args, kwargs),
        Value::Instance(i) if name == "with_traceback" && i.class.is_exception() => {
            let tb = args::one(it, "BaseException.with_traceback", args, &kwargs)?;
            let ok = match &tb {
                Value::None => true,
                Value::Instance(t) => super::display::is_traceback(t),
                _ => false,
            };
            if !ok {
                return Err(it.err("TypeError", "__traceback__ must be a traceback or None"));
            }
            i.set_extra(Rc::from("__traceback__"), tb);
            Ok(Some(recv.clone()))
        }
        Value::Slice(s) if name == "indices" => {
            let n = args::one(it, "slice.indices", args, &kwargs)?;
            let len = args::index_of(it, &n)?;
            if len < 0 {
                return Err(it.err("ValueError", "length should not be negative"));
            }
            let s = s.clone();
            let mut b = [None; 3];
            for (slot, v) in b.iter_mut().zip(s.iter()) {
                *slot = match v {
                    Value::None => None,
                    other => Some(args::index_of(it, other).map_err(|_| {
                        it.err(
                            "TypeError",
                            "slice indices must be integers or None or have an __index__ method",
                        )
                    })?),
                };
            }
            let step = b[2].unwrap_or(1);
            if step == 0 {
                return Err(it.err("ValueError", "slice step cannot be zero"));
            }
            let (start, stop, step, _) = crate::pyfmt::slice_range(len, b[0], b[1], step);
            Ok(Some(Value::tuple(vec![
                Value::Int(start),
                Value::Int(stop),
                Value::Int(step),
            ])))
        }
        Value::Complex(re, im) if name == "conjugate" => {
            args::no_kwargs(it, "complex.conjugate", &kwargs)?;
            if !args.is_empty() {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "complex.conjugate() takes no arguments ({} given)",
                        args.len()
                    ),
                ));
            }
            Ok(Some(Value::Complex(*re, -im)))
        }
        Value::List(l) => collections::list_method(it, l, name, args, kwargs),
        Value::Dict(d) => collections::dict_method(it, d, name, args, kwargs),
        Value::View(v) => crate::interp::dictview::view_method(it, v, name, args),
        Value::Set(s) => collections::set_method(it, s, name, args, kwargs),
        Value::FrozenSet(s) => collections::frozenset_method(it, recv, s, name, args, kwargs),
        Value::Tuple(t) => collections::tuple_method(it, t, name, args, kwargs),
        Value::Range(..) => collections::range_method(it, recv, name, args, kwargs),
        Value::Int(_) | Value::BigInt(_) | Value::Bool(_) | Value::Float(_) => {
            numeric::call_method(it, recv, name, args, kwargs)
        }
        Value::Class(c) if c.kind == ClassKind::Builtin => class_method(it, c, name, args, kwargs),
        _ => Ok(None),
    }
}

/// Method names of instances of the builtin type `type_name`.
fn methods_of_type(type_name: &str) -> &'static [&'static str] {
    match type_name {
        "str" => strings::METHODS,
        "bytes" => bytes::METHODS,
        "bytearray" => bytearray::methods(),
        "complex" => &["conjugate"],
        "slice" => &["indices"],
        "list" => collections::LIST_METHODS,
        "dict" => collections::DICT_METHODS,
        "set" => collections::SET_METHODS,
        "frozenset" => collections::FROZENSET_METHODS,
        "tuple" => collections::TUPLE_METHODS,
        "range" => collections::RANGE_METHODS,
        "int" | "bool" => numeric::INT_METHODS,
        "float" => numeric::FLOAT_METHODS,
        _ => &[],
    }
}

/// A method looked up on a builtin type: `dict.fromkeys(...)`, or an unbound method
/// such as `str.lower` called with its receiver first (`sorted(xs, key=str.lower)`).
fn class_method(
    it: &mut Interp,
    class: &Rc<Class>,
    name: &str,
    args: Vec<Value>,
    kwargs: Vec<(Rc<str>, Value)>,
) -> Result<Option<Value>, Interrupt> {
    if !methods_of_type(&class.name).contains(&name) {
        return Ok(None);
    }
    match (&*class.name, name) {
        ("dict", "fromkeys") => return collections::dict_fromkeys(it, args, kwargs).map(Some),
        ("str", "maketrans") => return strings::maketrans(it, args, kwargs).map(Some),
        ("float", "fromhex") => return numeric::float_fromhex(it, args, kwargs).map(Some),
        ("bytes", "fromhex") => return bytes::fromhex(it, args, kwargs).map(Some),
        ("bytes", "maketrans") | ("bytearray", "maketrans") => {
            return bytes::maketrans(it, args, kwargs).map(Some);
        }
        ("bytearray", "fromhex") => return bytearray::fromhex(it, args, kwargs).map(Some),
        ("int", "from_bytes") => return bytes::int_from_bytes(it, args, kwargs).map(Some),
        _ => {}
    }
    let mut a = args.into_iter();
    let Some(recv) = a.next() else {
        return Err(it.err(
            "TypeError",
            format!("unbound method {}.{name}() needs an argument", class.name),
        ));
    };
    if !it.class_of(&recv).is_sub(class) {
        let t = it.type_name_of(&recv);
        return Err(it.err(
            "TypeError",
            format!(
                "descriptor '{name}' for '{}' objects doesn't apply to a '{t}' object",
                class.name
            ),
        ));
    }
    call_method(it, &recv, name, a.collect(), kwargs)
}

/// True when `recv` (a builtin value) has method `name`.
pub fn has_method(recv: &Value, name: &str) -> bool {
    let names: &[&str] = match recv {
        Value::Str(_) => strings::METHODS,
        Value::Bytes(_) => bytes::METHODS,
        Value::ByteArray(_) => bytearray::methods(),
        Value::Complex(..) => &["conjugate"],
        Value::Slice(_) => &["indices"],
        Value::List(_) => collections::LIST_METHODS,
        Value::Dict(_) => collections::DICT_METHODS,
        Value::View(v) if v.set_like() => &["isdisjoint"],
        Value::Set(_) => collections::SET_METHODS,
        Value::FrozenSet(_) => collections::FROZENSET_METHODS,
        Value::Tuple(_) => collections::TUPLE_METHODS,
        Value::Range(..) => collections::RANGE_METHODS,
        Value::Int(_) | Value::BigInt(_) | Value::Bool(_) => numeric::INT_METHODS,
        Value::Float(_) => numeric::FLOAT_METHODS,
        Value::Class(c) if c.kind == ClassKind::Builtin => methods_of_type(&c.name),
        _ => return false,
    };
    names.contains(&name)
}

/// Python's `hash(v)`, a class's `__hash__` included (dict keys of user objects).
pub(crate) fn py_hash(it: &mut Interp, v: &Value) -> super::R<i64> {
    numeric::py_hash(it, v)
}
