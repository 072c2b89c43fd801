//! Builtin types called as constructors: `int("7")`, `str(x)`, `list(it)`, `range(...)`.

use super::args::{Kwargs, bind, index_of, no_kwargs, tname};
use super::collections::{dict_update_from, set_of};
use super::functions::user_dunder;
use super::numeric::{float_to_int, pyfmt_err};
use crate::interp::value::{Class, ClassKind, Dict, FxBuild, HashKey, PyStr, Value};
use crate::interp::{Interp, Interrupt};
use crate::pyfmt;
use std::cell::RefCell;
use std::rc::Rc;

type R<T> = Result<T, Interrupt>;

/// Call a builtin type (`int`, `str`, `list`, ...) or a builtin exception type.
pub fn construct_builtin(
    it: &mut Interp,
    class: &Rc<Class>,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Value> {
    if class.kind == ClassKind::Exception {
        no_kwargs(it, &class.name, &kwargs)?;
        return Ok(it.make_exception(class.clone(), args));
    }
    match &*class.name {
        "int" => {
            let [x, base] = bind(it, "int", args, kwargs, ["x", "base"], 0)?;
            make_int(it, x.map(typed_member_value), base)
        }
        "float" => {
            let [x] = bind(it, "float", args, kwargs, ["x"], 0)?;
            make_float(it, x.map(typed_member_value))
        }
        "str" => {
            let [x, encoding, errors] =
                bind(it, "str", args, kwargs, ["object", "encoding", "errors"], 0)?;
            if encoding.is_some() || errors.is_some() {
                return decode_to_str(it, x, encoding, errors);
            }
            Ok(match x {
                None => Value::str(""),
                Some(v @ Value::Str(_)) => v,
                Some(v) => Value::Str(PyStr::from(it.to_str(&v)?)),
            })
        }
        "bytes" => super::bytes::construct(it, args, kwargs),
        "bytearray" => super::bytearray::construct(it, args, kwargs),
        "slice" => {
            no_kwargs(it, "slice", &kwargs)?;
            let n = args.len();
            if n == 0 || n > 3 {
                let which = if n == 0 {
                    "least 1 argument"
                } else {
                    "most 3 arguments"
                };
                return Err(it.err("TypeError", format!("slice expected at {which}, got {n}")));
            }
            let mut a = args.into_iter();
            let parts = if n == 1 {
                [Value::None, a.next().unwrap_or(Value::None), Value::None]
            } else {
                [
                    a.next().unwrap_or(Value::None),
                    a.next().unwrap_or(Value::None),
                    a.next().unwrap_or(Value::None),
                ]
            };
            Ok(Value::Slice(Rc::new(parts)))
        }
        "complex" => {
            let [real, imag] = bind(it, "complex", args, kwargs, ["real", "imag"], 0)?;
            it.construct_complex(real.map(typed_member_value), imag.map(typed_member_value))
        }
        "bool" => {
            let [x] = bind(it, "bool", args, kwargs, ["x"], 0)?;
            Ok(Value::Bool(match x {
                None => false,
                Some(v) => it.truthy(&v)?,
            }))
        }
        "list" => {
            no_kwargs(it, "list", &kwargs)?;
            let [x] = bind(it, "list", args, Vec::new(), ["iterable"], 0)?;
            Ok(Value::list(match x {
                None => Vec::new(),
                Some(Value::List(l)) => l.borrow().clone(),
                Some(v) => it.iterate(&v)?,
            }))
        }
        "tuple" => {
            no_kwargs(it, "tuple", &kwargs)?;
            let [x] = bind(it, "tuple", args, Vec::new(), ["iterable"], 0)?;
            Ok(match x {
                None => Value::tuple(Vec::new()),
                Some(t @ Value::Tuple(_)) => t,
                Some(v) => Value::tuple(it.iterate(&v)?),
            })
        }
        "set" | "frozenset" => {
            no_kwargs(it, &class.name, &kwargs)?;
            if args.len() > 1 {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "{} expected at most 1 argument, got {}",
                        class.name,
                        args.len()
                    ),
                ));
            }
            let [x] = bind(it, &class.name, args, Vec::new(), ["iterable"], 0)?;
            let s = match x {
                None => Default::default(),
                Some(v) => set_of(it, &v)?,
            };
            let s = Rc::new(RefCell::new(s));
            Ok(if &*class.name == "frozenset" {
                Value::FrozenSet(s)
            } else {
                Value::Set(s)
            })
        }
        "dict" => {
            if args.len() > 1 {
                return Err(it.err(
                    "TypeError",
                    format!("dict expected at most 1 argument, got {}", args.len()),
                ));
            }
            let d = RefCell::new(Dict::with_hasher(FxBuild::default()));
            if let Some(src) = args.first() {
                dict_update_from(it, &d, src)?;
            }
            {
                let mut b = d.borrow_mut();
                for (k, v) in kwargs {
                    b.insert(HashKey(Value::Str(k.into())), v);
                }
            }
            Ok(Value::Dict(Rc::new(d)))
        }
        "range" => range(it, args, &kwargs),
        "type" => {
            no_kwargs(it, "type", &kwargs)?;
            if args.len() != 1 {
                return Err(it.err("TypeError", "type() takes 1 or 3 arguments"));
            }
            Ok(Value::Class(it.class_of(&args[0])))
        }
        "object" => {
            if !args.is_empty() || !kwargs.is_empty() {
                return Err(it.err("TypeError", "object() takes no arguments"));
            }
            let inst = crate::interp::value::Instance {
                class: class.clone(),
                fields: RefCell::new(Vec::new()),
                extra: RefCell::new(None),
                id: crate::interp::value::next_id(),
                user_hash: Default::default(),
            };
            Ok(Value::Instance(Rc::new(inst)))
        }
        other => Err(it.err("TypeError", format!("cannot create '{other}' instances"))),
    }
}

/// `range(stop)`, `range(start, stop[, step])`.
pub(super) fn range(it: &mut Interp, args: Vec<Value>, kwargs: &Kwargs) -> R<Value> {
    no_kwargs(it, "range", kwargs)?;
    let n = args.len();
    let mut ints = [0i64; 3];
    for (slot, a) in ints.iter_mut().zip(&args) {
        *slot = index_of(it, a)?;
    }
    match n {
        1 => Ok(Value::Range(0, ints[0], 1)),
        2 => Ok(Value::Range(ints[0], ints[1], 1)),
        3 => {
            if ints[2] == 0 {
                return Err(it.err("ValueError", "range() arg 3 must not be zero"));
            }
            Ok(Value::Range(ints[0], ints[1], ints[2]))
        }
        0 => Err(it.err("TypeError", "range expected at least 1 argument, got 0")),
        _ => Err(it.err(
            "TypeError",
            format!("range expected at most 3 arguments, got {n}"),
        )),
    }
}

fn make_int(it: &mut Interp, x: Option<Value>, base: Option<Value>) -> R<Value> {
    let Some(x) = x else {
        if base.is_some() {
            return Err(it.err("TypeError", "int() missing string argument"));
        }
        return Ok(Value::Int(0));
    };
    if let Some(b) = base {
        let b = index_of(it, &b)?;
        if b != 0 && !(2..=36).contains(&b) {
            return Err(it.err("ValueError", "int() base must be >= 2 and <= 36, or 0"));
        }
        return match &x {
            Value::Str(s) => parse_int(it, s, u32::try_from(b).unwrap_or(10)),
            _ => Err(it.err(
                "TypeError",
                "int() can't convert non-string with explicit base",
            )),
        };
    }
    match &x {
        Value::Int(_) | Value::BigInt(_) => Ok(x),
        Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
        Value::Float(f) => float_to_int(it, *f),
        Value::Str(s) => parse_int(it, s, 10),
        _ => {
            for name in ["__int__", "__index__"] {
                if let Some(r) = user_dunder(it, &x, name, Vec::new()) {
                    return r;
                }
            }
            let t = tname(it, &x);
            Err(it.err(
                "TypeError",
                format!(
                    "int() argument must be a string, a bytes-like object or a real number, not '{t}'"
                ),
            ))
        }
    }
}

fn parse_int(it: &mut Interp, s: &str, base: u32) -> R<Value> {
    if base == 10
        && s.len() <= 18
        && let Ok(i) = s.parse::<i64>()
    {
        return Ok(Value::Int(i));
    }
    pyfmt::parse_int_ex(s, base)
        .map(Value::from_bigint)
        .map_err(|m| pyfmt_err(it, m))
}

fn make_float(it: &mut Interp, x: Option<Value>) -> R<Value> {
    let Some(x) = x else {
        return Ok(Value::Float(0.0));
    };
    match &x {
        Value::Float(_) => Ok(x),
        Value::Int(i) => Ok(Value::Float(*i as f64)),
        Value::Bool(b) => Ok(Value::Float(f64::from(u8::from(*b)))),
        Value::BigInt(b) => match pyfmt::int_to_float(b) {
            Some(f) => Ok(Value::Float(f)),
            None => Err(it.err("OverflowError", "int too large to convert to float")),
        },
        Value::Str(s) => pyfmt::parse_float_ex(s)
            .map(Value::Float)
            .map_err(|m| pyfmt_err(it, m)),
        _ => {
            if let Some(r) = user_dunder(it, &x, "__float__", Vec::new()) {
                return r;
            }
            let t = tname(it, &x);
            Err(it.err(
                "TypeError",
                format!("float() argument must be a string or a real number, not '{t}'"),
            ))
        }
    }
}

/// A typed enum's member (`enum E: int`, `re.I`) converts as its value (`int(E.A)`).
fn typed_member_value(v: Value) -> Value {
    match v {
        Value::EnumMember(m) if crate::interp::decl_later::enum_value_type(&m.class).is_some() => {
            m.value.clone()
        }
        other => other,
    }
}

/// `str(b, encoding, errors)`: the bytes decoded (`bytes.decode`).
fn decode_to_str(
    it: &mut Interp,
    x: Option<Value>,
    encoding: Option<Value>,
    errors: Option<Value>,
) -> R<Value> {
    let mut args = vec![encoding.unwrap_or_else(|| Value::str("utf-8"))];
    args.extend(errors);
    let (enc, errors) = super::bytes::codec_args(it, "str", args, Vec::new())?;
    match x {
        None => Ok(Value::str("")),
        Some(v) => match super::bytes::bytes_like(&v) {
            Some(b) => super::bytes::decode(it, b, &enc, &errors),
            None if matches!(v, Value::Str(_)) => {
                Err(it.err("TypeError", "decoding str is not supported"))
            }
            None => {
                let t = tname(it, &v);
                Err(it.err(
                    "TypeError",
                    format!("decoding to str: need a bytes-like object, {t} found"),
                ))
            }
        },
    }
}
