//! Argument binding and small value conversions shared by the builtins.

use crate::interp::value::{IterItems, IterKind, Value};
use crate::interp::{Interp, Interrupt};
use std::rc::Rc;

pub(super) type Kwargs = Vec<(Rc<str>, Value)>;

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Bind positional and keyword arguments to `names`; the first `required` are mandatory.
pub(super) fn bind<const N: usize>(
    it: &Interp,
    fname: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
    names: [&str; N],
    required: usize,
) -> Result<[Option<Value>; N], Interrupt> {
    let n = args.len();
    if n > N {
        let msg = if required == N {
            format!(
                "{fname}() takes exactly {N} argument{} ({n} given)",
                plural(N)
            )
        } else {
            format!(
                "{fname}() takes at most {N} argument{} ({n} given)",
                plural(N)
            )
        };
        return Err(it.err("TypeError", msg));
    }
    let mut out: [Option<Value>; N] = std::array::from_fn(|_| None);
    for (slot, a) in out.iter_mut().zip(args) {
        *slot = Some(a);
    }
    for (k, v) in kwargs {
        match names.iter().position(|n| **n == *k) {
            Some(i) => {
                if out[i].is_some() {
                    return Err(it.err(
                        "TypeError",
                        format!(
                            "argument for {fname}() given by name ('{k}') and position ({})",
                            i + 1
                        ),
                    ));
                }
                out[i] = Some(v);
            }
            None => {
                return Err(it.err(
                    "TypeError",
                    format!("{fname}() got an unexpected keyword argument '{k}'"),
                ));
            }
        }
    }
    for (i, slot) in out.iter().enumerate().take(required) {
        if slot.is_none() {
            let given = out.iter().filter(|s| s.is_some()).count();
            let msg = if required == N {
                format!(
                    "{fname}() takes exactly {N} argument{} ({given} given)",
                    plural(N)
                )
            } else {
                format!(
                    "{fname}() missing required argument '{}' (pos {})",
                    names.get(i).copied().unwrap_or("?"),
                    i + 1
                )
            };
            return Err(it.err("TypeError", msg));
        }
    }
    Ok(out)
}

/// Reject keyword arguments for a function that takes none.
pub(super) fn no_kwargs(it: &Interp, fname: &str, kwargs: &Kwargs) -> Result<(), Interrupt> {
    if kwargs.is_empty() {
        Ok(())
    } else {
        Err(it.err("TypeError", format!("{fname}() takes no keyword arguments")))
    }
}

/// Exactly one positional argument, no keywords.
pub(super) fn one(
    it: &Interp,
    fname: &str,
    args: Vec<Value>,
    kwargs: &Kwargs,
) -> Result<Value, Interrupt> {
    no_kwargs(it, fname, kwargs)?;
    let n = args.len();
    let mut a = args.into_iter();
    match (a.next(), n) {
        (Some(v), 1) => Ok(v),
        _ => Err(it.err(
            "TypeError",
            format!("{fname}() takes exactly one argument ({n} given)"),
        )),
    }
}

/// Between `min` and `max` positional arguments, no keywords (`name expected at most 2
/// arguments, got 3` in CPython's wording).
pub(super) fn range_args(
    it: &Interp,
    fname: &str,
    args: &[Value],
    kwargs: &Kwargs,
    min: usize,
    max: usize,
) -> Result<(), Interrupt> {
    no_kwargs(it, fname, kwargs)?;
    let n = args.len();
    if n < min {
        let msg = if min == max {
            format!(
                "{fname}() takes exactly {min} argument{} ({n} given)",
                plural(min)
            )
        } else {
            format!(
                "{fname} expected at least {min} argument{}, got {n}",
                plural(min)
            )
        };
        return Err(it.err("TypeError", msg));
    }
    if n > max {
        let msg = if min == max {
            format!(
                "{fname}() takes exactly {max} argument{} ({n} given)",
                plural(max)
            )
        } else {
            format!(
                "{fname} expected at most {max} argument{}, got {n}",
                plural(max)
            )
        };
        return Err(it.err("TypeError", msg));
    }
    Ok(())
}

/// A Python type name for messages (`'int'`, archetype names for nodes).
pub(super) fn tname(it: &Interp, v: &Value) -> String {
    it.type_name_of(v)
}

/// An integer argument used as an index or count (`__index__`): ints and bools.
pub(super) fn index_of(it: &Interp, v: &Value) -> Result<i64, Interrupt> {
    match v {
        Value::Int(i) => Ok(*i),
        // A member of an `int` enum (`re.I`, `enum E: int`) indexes as its value.
        Value::EnumMember(m)
            if crate::interp::decl_later::enum_value_type(&m.class) == Some("int") =>
        {
            index_of(it, &m.value)
        }
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::BigInt(_) => Err(it.err(
            "OverflowError",
            "Python int too large to convert to C ssize_t",
        )),
        _ => Err(it.err(
            "TypeError",
            format!(
                "'{}' object cannot be interpreted as an integer",
                tname(it, v)
            ),
        )),
    }
}

/// An optional index argument where `None` means "absent" (slice-like bounds).
pub(super) fn opt_index(it: &Interp, v: Option<&Value>) -> Result<Option<i64>, Interrupt> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(*i)),
        Some(Value::Bool(b)) => Ok(Some(i64::from(*b))),
        Some(Value::BigInt(b)) => {
            use num_traits::Signed;
            Ok(Some(if b.is_negative() { i64::MIN } else { i64::MAX }))
        }
        Some(_) => Err(it.err(
            "TypeError",
            "slice indices must be integers or None or have an __index__ method",
        )),
    }
}

/// Build a one-shot iterator value over `items`.
pub(super) fn make_iter(items: Vec<Value>, kind: IterKind) -> Value {
    Value::Iter(
        Rc::new(std::cell::RefCell::new(IterItems::snapshot(items))),
        kind,
    )
}

/// Values whose equality needs no user code: compare them natively.
pub(super) fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::None
            | Value::Bool(_)
            | Value::Int(_)
            | Value::BigInt(_)
            | Value::Float(_)
            | Value::Str(_)
    )
}

/// `==` between two scalars that needs no interpreter (not for big ints, whose equality
/// with floats is exact).
pub(super) fn scalar_eq(a: &Value, b: &Value) -> Option<bool> {
    let small = |v: &Value| is_scalar(v) && !matches!(v, Value::BigInt(_));
    if small(a) && small(b) {
        Some(crate::interp::value::key_eq(a, b))
    } else {
        None
    }
}

/// Python `==`, with a native fast path for scalars.
pub(super) fn eq(it: &mut Interp, a: &Value, b: &Value) -> Result<bool, Interrupt> {
    match scalar_eq(a, b) {
        Some(r) => Ok(r),
        None => it.py_eq(a, b),
    }
}

/// Python `a < b`, with native fast paths for ints, floats and strings.
pub(super) fn lt(it: &mut Interp, a: &Value, b: &Value) -> Result<bool, Interrupt> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ => it.py_lt(a, b),
    }
}

/// The raised exception is an instance of the builtin exception type `name`.
pub(super) fn is_exc(it: &Interp, e: &Interrupt, name: &str) -> bool {
    let Interrupt::Exc(p) = e else { return false };
    let Value::Instance(inst) = &p.value else {
        return false;
    };
    it.builtin_class(name)
        .is_some_and(|c| inst.class.is_sub(&c))
}

/// The message (`args[0]`) of a raised exception, if it is a string.
pub(super) fn exc_message(e: &Interrupt) -> Option<Rc<str>> {
    let Interrupt::Exc(p) = e else { return None };
    let Value::Instance(inst) = &p.value else {
        return None;
    };
    match inst.get_extra("args") {
        Some(Value::Tuple(t)) => match t.first() {
            Some(Value::Str(s)) => Some(s.to_rc()),
            _ => None,
        },
        _ => None,
    }
}

/// A bare `StopIteration` (no arguments).
pub(super) fn stop_iteration(it: &Interp) -> Interrupt {
    match it.builtin_class("StopIteration") {
        Some(c) => {
            let value = it.make_exception(c, Vec::new());
            Interrupt::Exc(Box::new(crate::interp::PyErr {
                value,
                trace: Vec::new(),
                origin: None,
            }))
        }
        None => it.err("StopIteration", ""),
    }
}
