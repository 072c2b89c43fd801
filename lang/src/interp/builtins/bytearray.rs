//! The mutable `bytearray` type: construction, its mutating methods (`append`,
//! `extend`, `insert`, `pop`, `remove`, `clear`, `reverse`, `copy`), and every `bytes`
//! method, run by `bytes.rs` over a snapshot of the contents with the `bytes` results
//! made `bytearray` again, as CPython's shared implementation does. Indexing, slice
//! assignment, operators and `repr` live with the other values' (`ops.rs`,
//! `display.rs`). Sizes are bounded by `Limits::max_string_bytes`, as `bytes` are.

use super::args::{Kwargs, index_of, one, range_args, tname};
use super::bytes::{self, byte_of, freeze};
use crate::interp::value::Value;
use crate::interp::{Interp, Interrupt};
use std::cell::RefCell;
use std::rc::Rc;

type R<T> = Result<T, Interrupt>;

/// The shared contents of a `bytearray`.
pub(crate) type ByteArrayRef = Rc<RefCell<Vec<u8>>>;

/// The methods only `bytearray` has; the others are `bytes::METHODS`.
const MUTATORS: &[&str] = &[
    "append", "clear", "copy", "extend", "insert", "pop", "remove", "reverse",
];

/// Method names of a `bytearray`, sorted.
pub(super) fn methods() -> &'static [&'static str] {
    static ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v: Vec<&'static str> = bytes::METHODS.iter().chain(MUTATORS).copied().collect();
        v.sort_unstable();
        v
    })
    .as_slice()
}

/// A new `bytearray` holding `b`.
pub(crate) fn new(b: Vec<u8>) -> Value {
    Value::ByteArray(Rc::new(RefCell::new(b)))
}

/// `bytearray(...)`: the forms and messages of `bytes(...)`, named `bytearray`.
pub(super) fn construct(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    match bytes::construct_as(it, "bytearray", args, kwargs)? {
        Value::Bytes(b) => Ok(new(b.to_vec())),
        other => Ok(other),
    }
}

/// A `bytes` result of a shared method made `bytearray`, inside the list or tuple
/// `split`/`partition` return too.
fn thaw(v: Value) -> Value {
    match v {
        Value::Bytes(b) => new(b.to_vec()),
        Value::List(l) => {
            let items: Vec<Value> = l.borrow_mut().drain(..).map(thaw).collect();
            *l.borrow_mut() = items;
            Value::List(l)
        }
        Value::Tuple(t) => Value::tuple(t.iter().cloned().map(thaw).collect()),
        other => other,
    }
}

/// Methods of `bytearray`.
pub(super) fn call_method(
    it: &mut Interp,
    b: &ByteArrayRef,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "append" => {
            let x = one(it, "bytearray.append", args, &kwargs)?;
            let c = byte_of(it, &x)?;
            it.check_str_len(b.borrow().len().saturating_add(1))?;
            b.borrow_mut().push(c);
            Value::None
        }
        "extend" => {
            let x = one(it, "bytearray.extend", args, &kwargs)?;
            let add = extend_items(it, x)?;
            it.check_str_len(b.borrow().len().saturating_add(add.len()))?;
            b.borrow_mut().extend(add);
            Value::None
        }
        "insert" => {
            range_args(it, "insert", &args, &kwargs, 2, 2)?;
            let i = index_of(it, &args[0])?;
            let c = byte_of(it, &args[1])?;
            it.check_str_len(b.borrow().len().saturating_add(1))?;
            let mut v = b.borrow_mut();
            let at = super::collections::insert_position(i, v.len());
            v.insert(at, c);
            Value::None
        }
        "pop" => {
            range_args(it, "pop", &args, &kwargs, 0, 1)?;
            let i = match args.first() {
                Some(v) => index_of(it, v)?,
                None => -1,
            };
            let mut v = b.borrow_mut();
            if v.is_empty() {
                drop(v);
                return Err(it.err("IndexError", "pop from empty bytearray"));
            }
            let Some(j) = super::collections::pop_position(i, v.len()) else {
                drop(v);
                return Err(it.err("IndexError", "pop index out of range"));
            };
            Value::Int(i64::from(v.remove(j)))
        }
        "remove" => {
            let x = one(it, "bytearray.remove", args, &kwargs)?;
            let c = byte_of(it, &x)?;
            let mut v = b.borrow_mut();
            match v.iter().position(|&y| y == c) {
                Some(i) => {
                    v.remove(i);
                }
                None => {
                    drop(v);
                    return Err(it.err("ValueError", "value not found in bytearray"));
                }
            }
            Value::None
        }
        "clear" | "reverse" | "copy" => {
            super::args::no_kwargs(it, &format!("bytearray.{name}"), &kwargs)?;
            if !args.is_empty() {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "bytearray.{name}() takes no arguments ({} given)",
                        args.len()
                    ),
                ));
            }
            match name {
                "clear" => {
                    b.borrow_mut().clear();
                    Value::None
                }
                "reverse" => {
                    b.borrow_mut().reverse();
                    Value::None
                }
                _ => new(b.borrow().clone()),
            }
        }
        // Static: a table of 256 bytes, `bytes` in CPython too.
        "maketrans" => return bytes::maketrans(it, args, kwargs).map(Some),
        "fromhex" => return fromhex(it, args, kwargs).map(Some),
        _ => {
            let snapshot: Rc<[u8]> = Rc::from(b.borrow().as_slice());
            return Ok(bytes::call_method(it, &snapshot, name, args, kwargs)?.map(thaw));
        }
    };
    Ok(Some(v))
}

/// `bytearray.fromhex(s)`.
pub(super) fn fromhex(it: &Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    Ok(thaw(bytes::fromhex(it, args, kwargs)?))
}

/// The bytes `extend` (and `+=`, slice assignment) adds: a bytes-like value's bytes or
/// the ints of an iterable; a str is CPython's TypeError.
pub(crate) fn extend_items(it: &mut Interp, x: Value) -> R<Vec<u8>> {
    match freeze(x) {
        Value::Bytes(b) => Ok(b.to_vec()),
        other => {
            let items = match it.iterate(&other) {
                Ok(items) => items,
                Err(e) if super::args::is_exc(it, &e, "TypeError") => {
                    let t = tname(it, &other);
                    return Err(it.err("TypeError", format!("can't extend bytearray with {t}")));
                }
                Err(e) => return Err(e),
            };
            let mut out = Vec::with_capacity(items.len());
            for v in &items {
                out.push(byte_of(it, v)?);
            }
            Ok(out)
        }
    }
}
