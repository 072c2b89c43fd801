//! Operators and protocols with Python semantics: arithmetic (big ints, floor division,
//! true division), comparison, truthiness, iteration, attributes and items.

use super::decl_later::typed_enum_operands;
use super::dunder;
use super::value::*;
use super::{Interp, R};
use crate::ast::{ArchKind, BinOp, CmpOp, UnaryOp};
use crate::pyfmt;
use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use std::cell::RefCell;
use std::rc::Rc;

fn big(v: &Value) -> Option<BigInt> {
    match v {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Bool(b) => Some(BigInt::from(i64::from(*b))),
        Value::BigInt(b) => Some((**b).clone()),
        _ => None,
    }
}

/// `a` against `b` when one is an int and the other a float, compared exactly as CPython
/// does (an int beyond the float range is still ordered against `inf` and finite floats);
/// `None` for any other pair, `Some(None)` when the float is NaN.
fn int_float_order(a: &Value, b: &Value) -> Option<Option<std::cmp::Ordering>> {
    const EXACT: u64 = 1 << 53;
    match (a, b) {
        // Every int of at most 53 bits is a float: compare natively.
        (Value::Int(i), Value::Float(f)) if i.unsigned_abs() <= EXACT => {
            Some((*i as f64).partial_cmp(f))
        }
        (Value::Float(f), Value::Int(i)) if i.unsigned_abs() <= EXACT => {
            Some(f.partial_cmp(&(*i as f64)))
        }
        (Value::Float(f), other) if is_intlike(other) => {
            Some(pyfmt::int_float_cmp(&big(other)?, *f).map(std::cmp::Ordering::reverse))
        }
        (other, Value::Float(f)) if is_intlike(other) => {
            Some(pyfmt::int_float_cmp(&big(other)?, *f))
        }
        _ => None,
    }
}

fn is_intlike(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Bool(_) | Value::BigInt(_))
}

impl Interp<'_> {
    fn as_float(&self, v: &Value) -> R<Option<f64>> {
        Ok(match v {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::BigInt(b) => {
                Some(pyfmt::int_to_float(b).ok_or_else(|| {
                    self.err("OverflowError", "int too large to convert to float")
                })?)
            }
            _ => None,
        })
    }

    fn unsupported(&self, op: &str, a: &Value, b: &Value) -> super::Interrupt {
        // A sequence repeated by something not an int words it CPython's way.
        let is_seq = |v: &Value| {
            matches!(
                v,
                Value::Str(_)
                    | Value::Bytes(_)
                    | Value::ByteArray(_)
                    | Value::List(_)
                    | Value::Tuple(_)
            )
        };
        if matches!(op, "*" | "*=") && (is_seq(a) || is_seq(b)) {
            let other = if is_seq(a) { b } else { a };
            return self.err(
                "TypeError",
                format!(
                    "can't multiply sequence by non-int of type '{}'",
                    self.type_name_of(other)
                ),
            );
        }
        self.err(
            "TypeError",
            format!(
                "unsupported operand type(s) for {op}: '{}' and '{}'",
                self.type_name_of(a),
                self.type_name_of(b)
            ),
        )
    }

    pub fn binary_op(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        // Fast path: small ints.
        if let (Value::Int(x), Value::Int(y)) = (a, b) {
            let (x, y) = (*x, *y);
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::FloorDiv => {
                    if y == 0 {
                        return Err(
                            self.err("ZeroDivisionError", "integer division or modulo by zero")
                        );
                    }
                    x.checked_div_euclid(y).map(|_| Integer::div_floor(&x, &y))
                }
                BinOp::Mod => {
                    if y == 0 {
                        return Err(self.err("ZeroDivisionError", "integer modulo by zero"));
                    }
                    x.checked_rem(y).map(|_| Integer::mod_floor(&x, &y))
                }
                BinOp::Div => {
                    if y == 0 {
                        return Err(self.err("ZeroDivisionError", "division by zero"));
                    }
                    if x.unsigned_abs() < (1 << 53) && y.unsigned_abs() < (1 << 53) {
                        return Ok(Value::Float(x as f64 / y as f64));
                    }
                    None
                }
                BinOp::BitAnd => Some(x & y),
                BinOp::BitOr => Some(x | y),
                BinOp::BitXor => Some(x ^ y),
                BinOp::Pow if y >= 0 => u32::try_from(y).ok().and_then(|e| x.checked_pow(e)),
                BinOp::LShift if (0..63).contains(&y) => x.checked_mul(1i64 << y).filter(|_| true),
                BinOp::RShift if y >= 0 => Some(if y >= 64 {
                    if x < 0 { -1 } else { 0 }
                } else {
                    x >> y
                }),
                _ => None,
            };
            if let Some(r) = r {
                return Ok(Value::Int(r));
            }
        }
        if matches!(op, BinOp::BitOr | BinOp::BitAnd | BinOp::BitXor)
            && let Some(v) = self.re_flag_binop(op, a, b)
        {
            return Ok(v);
        }
        if let Some((a, b)) = typed_enum_operands(a, b) {
            return self.binary_op(op, &a, &b);
        }
        if (dunder::is_object(a) || dunder::is_object(b))
            && let Some(r) = self.binary_dunder(op, a, b)
        {
            return r;
        }
        if (matches!(a, Value::Complex(..)) || matches!(b, Value::Complex(..)))
            && let Some(r) = self.complex_binop(op, a, b)
        {
            return r;
        }
        if (matches!(a, Value::View(_)) || matches!(b, Value::View(_)))
            && let Some(r) = self.view_binop(op, a, b)
        {
            return r;
        }
        match op {
            BinOp::Add => match (a, b) {
                (Value::Str(x), Value::Str(y)) => {
                    self.check_str_len(x.len().saturating_add(y.len()))?;
                    let mut s = String::with_capacity(x.len() + y.len());
                    s.push_str(x);
                    s.push_str(y);
                    Ok(Value::Str(PyStr::from(s)))
                }
                (Value::Bytes(x), Value::Bytes(y)) => {
                    self.check_str_len(x.len().saturating_add(y.len()))?;
                    let mut v = Vec::with_capacity(x.len() + y.len());
                    v.extend_from_slice(x);
                    v.extend_from_slice(y);
                    Ok(Value::Bytes(Rc::from(v)))
                }
                (Value::Bytes(x), Value::ByteArray(y)) => {
                    let y = y.borrow();
                    self.check_str_len(x.len().saturating_add(y.len()))?;
                    let mut v = Vec::with_capacity(x.len() + y.len());
                    v.extend_from_slice(x);
                    v.extend_from_slice(&y);
                    Ok(Value::Bytes(Rc::from(v)))
                }
                (Value::ByteArray(x), Value::Bytes(_) | Value::ByteArray(_)) => {
                    let y = super::builtins::bytes::freeze(b.clone());
                    let y = super::builtins::bytes::bytes_like(&y).unwrap_or(&[]);
                    let x = x.borrow();
                    self.check_str_len(x.len().saturating_add(y.len()))?;
                    let mut v = Vec::with_capacity(x.len() + y.len());
                    v.extend_from_slice(&x);
                    v.extend_from_slice(y);
                    Ok(super::builtins::bytearray::new(v))
                }
                (Value::Bytes(_) | Value::ByteArray(_), other) => {
                    let o = self.type_name_of(other);
                    let t = a.type_name();
                    Err(self.err("TypeError", format!("can't concat {o} to {t}")))
                }
                (Value::List(x), Value::List(y)) => {
                    self.check_growth(x.borrow().len(), y.borrow().len())?;
                    let mut v = x.borrow().clone();
                    v.extend(y.borrow().iter().cloned());
                    Ok(Value::list(v))
                }
                (Value::Tuple(x), Value::Tuple(y)) => {
                    self.check_growth(x.len(), y.len())?;
                    let mut v = (**x).clone();
                    v.extend(y.iter().cloned());
                    Ok(Value::tuple(v))
                }
                (Value::Str(_), other) | (Value::List(_), other) | (Value::Tuple(_), other)
                    if std::mem::discriminant(a) != std::mem::discriminant(other) =>
                {
                    let (t, o) = (a.type_name().to_string(), self.type_name_of(other));
                    Err(self.err(
                        "TypeError",
                        format!("can only concatenate {t} (not \"{o}\") to {t}"),
                    ))
                }
                _ => self.arith(op, "+", a, b),
            },
            BinOp::Mul => match (a, b) {
                (Value::Str(s), n) | (n, Value::Str(s)) if is_intlike(n) => {
                    let count = self.repeat_count(n);
                    let k = self.check_repeat_str(s.len(), &count)?;
                    Ok(Value::Str(PyStr::from(s.repeat(k))))
                }
                (Value::Bytes(b), n) | (n, Value::Bytes(b)) if is_intlike(n) => {
                    let count = self.repeat_count(n);
                    let k = self.check_repeat_str(b.len(), &count)?;
                    Ok(Value::Bytes(Rc::from(b.repeat(k))))
                }
                (Value::ByteArray(b), n) | (n, Value::ByteArray(b)) if is_intlike(n) => {
                    let count = self.repeat_count(n);
                    let b = b.borrow().clone();
                    let k = self.check_repeat_str(b.len(), &count)?;
                    Ok(super::builtins::bytearray::new(b.repeat(k)))
                }
                (Value::List(l), n) | (n, Value::List(l)) if is_intlike(n) => {
                    let count = self.repeat_count(n);
                    let src = l.borrow();
                    let k = self.check_repeat_items(src.len(), &count)?;
                    let mut v = Vec::with_capacity(src.len().saturating_mul(k));
                    for _ in 0..k {
                        v.extend(src.iter().cloned());
                    }
                    Ok(Value::list(v))
                }
                (Value::Tuple(l), n) | (n, Value::Tuple(l)) if is_intlike(n) => {
                    let count = self.repeat_count(n);
                    let k = self.check_repeat_items(l.len(), &count)?;
                    let mut v = Vec::with_capacity(l.len().saturating_mul(k));
                    for _ in 0..k {
                        v.extend(l.iter().cloned());
                    }
                    Ok(Value::tuple(v))
                }
                _ => self.arith(op, "*", a, b),
            },
            BinOp::Mod => match a {
                Value::Str(fmt) => self.printf(fmt, b),
                Value::Bytes(fmt) => self.bytes_printf(fmt, b),
                Value::ByteArray(fmt) => {
                    let fmt = fmt.borrow().clone();
                    match self.bytes_printf(&fmt, b)? {
                        Value::Bytes(r) => Ok(super::builtins::bytearray::new(r.to_vec())),
                        other => Ok(other),
                    }
                }
                _ => self.arith(op, "%", a, b),
            },
            BinOp::BitOr => match (a, b) {
                // `A | B` of types is a union (used by triggers, isinstance and filters).
                (
                    Value::Class(_) | Value::Tuple(_) | Value::None,
                    Value::Class(_) | Value::None,
                ) if !matches!((a, b), (Value::None, Value::None)) => {
                    let mut items = match a {
                        Value::Tuple(t) => (**t).clone(),
                        other => vec![other.clone()],
                    };
                    items.push(b.clone());
                    Ok(Value::tuple(items))
                }
                (Value::Dict(x), Value::Dict(y)) => {
                    {
                        let (x, y) = (x.borrow(), y.borrow());
                        self.check_merge(x.len(), y.len(), || {
                            y.keys().filter(|k| !x.contains_key(*k)).count()
                        })?;
                    }
                    let mut d = x.borrow().clone();
                    for (k, v) in y.borrow().iter() {
                        d.insert(k.clone(), v.clone());
                    }
                    Ok(Value::dict(d))
                }
                (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                    {
                        let (x, y) = (x.borrow(), y.borrow());
                        self.check_merge(x.len(), y.len(), || {
                            y.iter().filter(|k| !x.contains(*k)).count()
                        })?;
                    }
                    let mut s = x.borrow().clone();
                    s.extend(y.borrow().iter().cloned());
                    Ok(set_like(a, s))
                }
                _ => self.int_bitop(op, "|", a, b),
            },
            BinOp::BitAnd => match (a, b) {
                (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                    let y = y.borrow();
                    let s: Set = x
                        .borrow()
                        .iter()
                        .filter(|k| y.contains(*k))
                        .cloned()
                        .collect();
                    Ok(set_like(a, s))
                }
                _ => self.int_bitop(op, "&", a, b),
            },
            BinOp::Sub => match (a, b) {
                (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                    let y = y.borrow();
                    let s: Set = x
                        .borrow()
                        .iter()
                        .filter(|k| !y.contains(*k))
                        .cloned()
                        .collect();
                    Ok(set_like(a, s))
                }
                _ => self.arith(op, "-", a, b),
            },
            BinOp::BitXor => match (a, b) {
                (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                    let (x, y) = (x.borrow(), y.borrow());
                    self.check_merge(x.len(), y.len(), || {
                        y.iter().filter(|k| !x.contains(*k)).count()
                    })?;
                    let mut s: Set = x.iter().filter(|k| !y.contains(*k)).cloned().collect();
                    s.extend(y.iter().filter(|k| !x.contains(*k)).cloned());
                    Ok(set_like(a, s))
                }
                _ => self.int_bitop(op, "^", a, b),
            },
            BinOp::LShift => self.int_bitop(op, "<<", a, b),
            BinOp::RShift => self.int_bitop(op, ">>", a, b),
            BinOp::Div => self.arith(op, "/", a, b),
            BinOp::FloorDiv => self.arith(op, "//", a, b),
            BinOp::Pow => self.arith(op, "** or pow()", a, b),
            BinOp::MatMul => Err(self.unsupported("@", a, b)),
        }
    }

    fn int_bitop(&mut self, op: BinOp, sym: &str, a: &Value, b: &Value) -> R<Value> {
        let (Some(x), Some(y)) = (big(a), big(b)) else {
            return Err(self.unsupported(sym, a, b));
        };
        let r = match op {
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            BinOp::LShift => {
                if y.is_negative() {
                    return Err(self.err("ValueError", "negative shift count"));
                }
                if x.is_zero() {
                    return Ok(Value::Int(0));
                }
                let Some(n) = y.to_u64() else {
                    return Err(self.err("OverflowError", "too many digits in integer"));
                };
                self.check_int_bits(x.bits().saturating_add(n))?;
                x << n
            }
            BinOp::RShift => {
                let Some(n) = y.to_u64() else {
                    return Err(self.err("ValueError", "negative shift count"));
                };
                if n > u64::from(u32::MAX) {
                    if x.is_negative() {
                        BigInt::from(-1)
                    } else {
                        BigInt::zero()
                    }
                } else {
                    x >> n
                }
            }
            _ => return Err(self.unsupported(sym, a, b)),
        };
        if matches!((a, b), (Value::Bool(_), Value::Bool(_)))
            && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
        {
            return Ok(Value::Bool(!r.is_zero()));
        }
        Ok(Value::from_bigint(r))
    }

    fn arith(&mut self, op: BinOp, sym: &str, a: &Value, b: &Value) -> R<Value> {
        if let (Some(x), Some(y)) = (big(a), big(b)) {
            return self.big_arith(op, x, y);
        }
        let (Some(x), Some(y)) = (self.as_float(a)?, self.as_float(b)?) else {
            if let Some(r) = self.stdlib_binop(op, a, b) {
                return r;
            }
            return Err(self.unsupported(sym, a, b));
        };
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => {
                if y == 0.0 {
                    return Err(self.err("ZeroDivisionError", "float division by zero"));
                }
                x / y
            }
            BinOp::FloorDiv => {
                if y == 0.0 {
                    return Err(self.err("ZeroDivisionError", "float floor division by zero"));
                }
                pyfmt::float_floordiv(x, y)
            }
            BinOp::Mod => {
                if y == 0.0 {
                    return Err(self.err("ZeroDivisionError", "float modulo"));
                }
                pyfmt::float_mod(x, y)
            }
            BinOp::Pow => {
                if x == 0.0 && y < 0.0 {
                    return Err(self.err(
                        "ZeroDivisionError",
                        "0.0 cannot be raised to a negative power",
                    ));
                }
                // A negative number to a fractional power is complex (CPython's
                // `float_pow` hands it to `complex.__pow__`).
                if x < 0.0 && y.is_finite() && y != y.floor() {
                    let (cx, cy) = (Value::Complex(x, 0.0), Value::Complex(y, 0.0));
                    if let Some(r) = self.complex_binop(BinOp::Pow, &cx, &cy) {
                        return r;
                    }
                }
                let r = x.powf(y);
                if r.is_nan() && !x.is_nan() && !y.is_nan() {
                    return Err(self.err("ValueError", "math domain error"));
                }
                if r.is_infinite() && x.is_finite() && y.is_finite() {
                    return Err(self.err_args(
                        "OverflowError",
                        vec![Value::Int(34), Value::str("Numerical result out of range")],
                    ));
                }
                r
            }
            _ => return Err(self.unsupported(sym, a, b)),
        };
        if r.is_infinite()
            && x.is_finite()
            && y.is_finite()
            && matches!(op, BinOp::Mul | BinOp::Add | BinOp::Sub)
        {
            return Ok(Value::Float(r));
        }
        Ok(Value::Float(r))
    }

    fn big_arith(&mut self, op: BinOp, x: BigInt, y: BigInt) -> R<Value> {
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => {
                if !x.is_zero() && !y.is_zero() {
                    self.check_int_bits(x.bits().saturating_add(y.bits()))?;
                }
                x * y
            }
            BinOp::FloorDiv => {
                if y.is_zero() {
                    return Err(self.err("ZeroDivisionError", "integer division or modulo by zero"));
                }
                x.div_floor(&y)
            }
            BinOp::Mod => {
                if y.is_zero() {
                    return Err(self.err("ZeroDivisionError", "integer modulo by zero"));
                }
                x.mod_floor(&y)
            }
            BinOp::Div => {
                if y.is_zero() {
                    return Err(self.err("ZeroDivisionError", "division by zero"));
                }
                let Some(q) = pyfmt::int_true_div(&x, &y) else {
                    return Err(self.err(
                        "OverflowError",
                        "integer division result too large for a float",
                    ));
                };
                return Ok(Value::Float(q));
            }
            BinOp::Pow => {
                if y.is_negative() {
                    let (Some(fx), Some(fy)) = (pyfmt::int_to_float(&x), pyfmt::int_to_float(&y))
                    else {
                        return Err(self.err("OverflowError", "int too large to convert to float"));
                    };
                    if fx == 0.0 {
                        return Err(self.err(
                            "ZeroDivisionError",
                            "0.0 cannot be raised to a negative power",
                        ));
                    }
                    return Ok(Value::Float(fx.powf(fy)));
                }
                self.int_pow(x, &y)?
            }
            _ => return Err(self.err("TypeError", "unsupported operand")),
        };
        Ok(Value::from_bigint(r))
    }

    /// One argument of `str % args` as the printf engine takes it: numbers as
    /// themselves, a str with its `repr`, anything else with its type name (for
    /// CPython's `%d format: a real number is required, not list`).
    fn printf_arg(&mut self, v: &Value) -> R<pyfmt::PrintfArg> {
        Ok(match v {
            Value::Int(i) => pyfmt::PrintfArg::I64(*i),
            Value::BigInt(b) => pyfmt::PrintfArg::Int((**b).clone()),
            Value::Bool(b) => pyfmt::PrintfArg::Bool(*b),
            Value::Float(f) => pyfmt::PrintfArg::Float(*f),
            Value::Str(s) => pyfmt::PrintfArg::Str {
                str: s.to_string(),
                repr: self.repr(v)?,
            },
            other => pyfmt::PrintfArg::Obj {
                type_name: self.type_name_of(other),
                str: self.to_str(other)?,
                repr: self.repr(other)?,
            },
        })
    }

    /// `str % args` as CPython's `PyUnicode_Format`: a tuple's items are the arguments;
    /// any other value that has `__getitem__` (a dict, list, bytes, ... but not a str)
    /// is one argument that also serves `%(key)s` and may be left unused; anything else
    /// is the one argument. Errors take their class from `pyfmt::error_kind`.
    fn printf(&mut self, fmt: &str, args: &Value) -> R<Value> {
        let max = self.max_string_bytes();
        let result = match args {
            Value::Tuple(t) => {
                let mut pargs = Vec::with_capacity(t.len());
                for v in t.iter() {
                    pargs.push(self.printf_arg(v)?);
                }
                pyfmt::printf_format_bounded(fmt, pyfmt::PrintfArgs::Tuple(&pargs), max)
            }
            other if self.printf_mapping(other) => {
                let single = self.printf_arg(other)?;
                // A failed lookup (KeyError, a list indexed by a str, ...) is kept here
                // and raised as it is; the engine only sees that the key failed.
                let mut failed: Option<super::Interrupt> = None;
                let mut lookup = |key: &str| -> Result<pyfmt::PrintfArg, String> {
                    let got = self
                        .get_item(other, &Value::str(key))
                        .and_then(|v| self.printf_arg(&v));
                    got.map_err(|e| {
                        failed = Some(e);
                        String::new()
                    })
                };
                let r = pyfmt::printf_format_bounded(
                    fmt,
                    pyfmt::PrintfArgs::Mapping(&single, &mut lookup),
                    max,
                );
                if let Some(e) = failed {
                    return Err(e);
                }
                r
            }
            other => {
                let single = self.printf_arg(other)?;
                pyfmt::printf_format_bounded(fmt, pyfmt::PrintfArgs::Single(&single), max)
            }
        };
        match result {
            Ok(s) => Ok(Value::Str(PyStr::from(s))),
            Err(m) => {
                let kind = match pyfmt::error_kind(&m) {
                    pyfmt::PyErrorKind::MemoryError => "MemoryError",
                    pyfmt::PyErrorKind::OverflowError => "OverflowError",
                    pyfmt::PyErrorKind::TypeError => "TypeError",
                    _ => "ValueError",
                };
                Err(self.err(kind, m))
            }
        }
    }

    /// Whether `v` on the right of `str %` is CPython's "mapping" (`PyMapping_Check`:
    /// a type with `__getitem__`, not a tuple or str).
    fn printf_mapping(&mut self, v: &Value) -> bool {
        match v {
            Value::Dict(_)
            | Value::List(_)
            | Value::Bytes(_)
            | Value::ByteArray(_)
            | Value::Range(..) => true,
            Value::Instance(i) => i.class.find_method("__getitem__").is_some(),
            _ => false,
        }
    }

    /// `bytes % args` (`pyfmt::printf_bytes_bounded`): the format and the result are
    /// bytes, handled as Latin-1 text; bounded as strings are.
    fn bytes_printf(&mut self, fmt: &[u8], args: &Value) -> R<Value> {
        let latin1 = |b: &[u8]| b.iter().map(|&c| char::from(c)).collect::<String>();
        let vals = match args {
            Value::Tuple(t) => (**t).clone(),
            other => vec![other.clone()],
        };
        let mut pargs = Vec::with_capacity(vals.len());
        for v in &vals {
            pargs.push(match v {
                Value::Int(i) => pyfmt::PrintfArg::I64(*i),
                Value::BigInt(b) => pyfmt::PrintfArg::Int((**b).clone()),
                Value::Bool(b) => pyfmt::PrintfArg::Bool(*b),
                Value::Float(f) => pyfmt::PrintfArg::Float(*f),
                Value::Bytes(b) => pyfmt::PrintfArg::Bytes {
                    text: latin1(b),
                    repr: self.repr(v)?,
                },
                Value::ByteArray(b) => pyfmt::PrintfArg::Bytes {
                    text: latin1(&b.borrow()),
                    repr: self.repr(v)?,
                },
                Value::Str(s) => pyfmt::PrintfArg::Str {
                    str: s.to_string(),
                    repr: self.repr(v)?,
                },
                other => pyfmt::PrintfArg::Obj {
                    type_name: self.type_name_of(other),
                    str: self.to_str(other)?,
                    repr: self.repr(other)?,
                },
            });
        }
        let max = self.max_string_bytes();
        match pyfmt::printf_bytes_bounded(&latin1(fmt), pyfmt::PrintfArgs::Tuple(&pargs), max) {
            // Every char of the result is below 256 (a byte of the format or of a bytes
            // argument, ASCII digits and escapes, or a `%c` byte).
            Ok(s) => Ok(Value::Bytes(
                s.chars()
                    .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                    .collect::<Vec<u8>>()
                    .into(),
            )),
            Err(m) => {
                let kind = match pyfmt::error_kind(&m) {
                    pyfmt::PyErrorKind::MemoryError => "MemoryError",
                    pyfmt::PyErrorKind::OverflowError => "OverflowError",
                    pyfmt::PyErrorKind::TypeError => "TypeError",
                    _ => "ValueError",
                };
                Err(self.err(kind, m))
            }
        }
    }

    pub(crate) fn unary_op(&mut self, op: UnaryOp, v: &Value) -> R<Value> {
        if let Value::EnumMember(m) = v
            && op != UnaryOp::Not
            && super::decl_later::enum_value_type(&m.class).is_some()
        {
            if op == UnaryOp::Invert
                && let Some(f) = self.re_flag_invert(v)
            {
                return Ok(f);
            }
            // A typed enum's member is its value (`-E.A` of an `enum E: int`).
            let value = m.value.clone();
            return self.unary_op(op, &value);
        }
        if let Some(r) = self.unary_dunder(op, v) {
            return r;
        }
        match op {
            UnaryOp::Not => Ok(Value::Bool(!self.truthy(v)?)),
            UnaryOp::Neg => match v {
                Value::Int(i) => Ok(i
                    .checked_neg()
                    .map_or_else(|| Value::from_bigint(-BigInt::from(*i)), Value::Int)),
                Value::Bool(b) => Ok(Value::Int(-i64::from(*b))),
                Value::BigInt(b) => Ok(Value::from_bigint(-(**b).clone())),
                Value::Float(f) => Ok(Value::Float(-f)),
                Value::Complex(re, im) => Ok(Value::Complex(-re, -im)),
                _ => self.datetime_neg(v).unwrap_or_else(|| {
                    Err(self.err(
                        "TypeError",
                        format!("bad operand type for unary -: '{}'", self.type_name_of(v)),
                    ))
                }),
            },
            UnaryOp::Pos => match v {
                Value::Int(_) | Value::BigInt(_) | Value::Float(_) | Value::Complex(..) => {
                    Ok(v.clone())
                }
                Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
                _ => Err(self.err(
                    "TypeError",
                    format!("bad operand type for unary +: '{}'", self.type_name_of(v)),
                )),
            },
            UnaryOp::Invert => match big(v) {
                Some(b) => Ok(Value::from_bigint(-b - 1)),
                None => Err(self.err(
                    "TypeError",
                    format!("bad operand type for unary ~: '{}'", self.type_name_of(v)),
                )),
            },
        }
    }

    pub fn compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        // Fast path: small ints.
        if let (Value::Int(x), Value::Int(y)) = (a, b) {
            match op {
                CmpOp::Eq => return Ok(x == y),
                CmpOp::NotEq => return Ok(x != y),
                CmpOp::Lt => return Ok(x < y),
                CmpOp::Gt => return Ok(x > y),
                CmpOp::LtE => return Ok(x <= y),
                CmpOp::GtE => return Ok(x >= y),
                _ => {}
            }
        }
        if !matches!(op, CmpOp::Is | CmpOp::IsNot | CmpOp::In | CmpOp::NotIn)
            && let Some((a, b)) = typed_enum_operands(a, b)
        {
            return self.compare(op, &a, &b);
        }
        if (dunder::is_object(a) || dunder::is_object(b))
            && let Some(r) = self.compare_dunder(op, a, b)
        {
            return r;
        }
        if (matches!(a, Value::View(_)) || matches!(b, Value::View(_)))
            && let Some(r) = self.view_compare(op, a, b)
        {
            return r;
        }
        match op {
            CmpOp::Eq => self.py_eq(a, b),
            CmpOp::NotEq => Ok(!self.py_eq(a, b)?),
            CmpOp::Lt => self.py_lt(a, b),
            CmpOp::Gt => self.py_lt(b, a).map_err(|_| self.order_error(">", a, b)),
            CmpOp::LtE => {
                Ok(self.py_lt(a, b).map_err(|_| self.order_error("<=", a, b))?
                    || self.py_eq(a, b)?)
            }
            CmpOp::GtE => {
                Ok(self.py_lt(b, a).map_err(|_| self.order_error(">=", a, b))?
                    || self.py_eq(a, b)?)
            }
            CmpOp::In => self.contains(b, a),
            CmpOp::NotIn => Ok(!self.contains(b, a)?),
            CmpOp::Is => Ok(is_same(a, b)),
            CmpOp::IsNot => Ok(!is_same(a, b)),
        }
    }

    fn order_error(&self, sym: &str, a: &Value, b: &Value) -> super::Interrupt {
        if let (Some(x), Some(y)) = (Self::stdlib_type_name(a), Self::stdlib_type_name(b))
            && x != y
            && [x, y]
                .iter()
                .all(|k| matches!(*k, "datetime.date" | "datetime.datetime"))
        {
            return self.err(
                "TypeError",
                "can't compare datetime.datetime to datetime.date",
            );
        }
        self.err(
            "TypeError",
            format!(
                "'{sym}' not supported between instances of '{}' and '{}'",
                self.type_name_of(a),
                self.type_name_of(b)
            ),
        )
    }

    pub fn contains(&mut self, container: &Value, item: &Value) -> R<bool> {
        match container {
            Value::Str(s) => match item {
                Value::Str(sub) => Ok(s.contains(&**sub)),
                other => Err(self.err(
                    "TypeError",
                    format!(
                        "'in <string>' requires string as left operand, not {}",
                        self.type_name_of(other)
                    ),
                )),
            },
            Value::Bytes(b) => super::builtins::bytes::contains(self, b, item),
            Value::ByteArray(b) => {
                let b = b.borrow().clone();
                super::builtins::bytes::contains(self, &b, item)
            }
            Value::Dict(d) => {
                let k = self.dict_key(d, item)?;
                Ok(d.borrow().contains_key(&k))
            }
            Value::View(v) => self.view_contains(v, item),
            Value::Set(s) | Value::FrozenSet(s) => {
                let k = self.set_key(s, item)?;
                Ok(s.borrow().contains(&k))
            }
            Value::Range(start, stop, step) => match item {
                Value::Int(i) => Ok(if *step > 0 {
                    i >= start && i < stop && (i - start) % step == 0
                } else {
                    i <= start && i > stop && (start - i) % (-step) == 0
                }),
                _ => Ok(false),
            },
            Value::List(l) => {
                let items = l.borrow().clone();
                for x in &items {
                    if self.py_eq(x, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::Tuple(t) => {
                for x in t.iter() {
                    if self.py_eq(x, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::Class(c) if c.kind == ClassKind::Enum => {
                Ok(matches!(item, Value::EnumMember(m) if m.class.id == c.id))
            }
            // Stops at the first equal value, leaving the rest unrun.
            Value::Generator(_) | Value::Iter(..) | Value::Lazy(_) => {
                self.iter_find(container, &mut |it, x| it.py_eq(x, item))
            }
            other => {
                if let Some(r) = self.call_dunder(other, "__contains__", vec![item.clone()]) {
                    let r = r?;
                    return self.truthy(&r);
                }
                let items = self.iterate(other)?;
                for x in &items {
                    if self.py_eq(x, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// `==`. Containers compare element-wise, at most `MAX_COMPARE_DEPTH` levels deep
    /// (two lists that contain themselves would otherwise recurse forever):
    /// `RecursionError` beyond, as in CPython.
    pub fn py_eq(&mut self, a: &Value, b: &Value) -> R<bool> {
        let nested = matches!(
            (a, b),
            (Value::List(_), Value::List(_))
                | (Value::Tuple(_), Value::Tuple(_))
                | (Value::Dict(_), Value::Dict(_))
        );
        if !nested {
            return self.py_eq_inner(a, b);
        }
        if self.compare_depth >= MAX_COMPARE_DEPTH {
            return Err(self.err(
                "RecursionError",
                "maximum recursion depth exceeded in comparison",
            ));
        }
        self.compare_depth += 1;
        let r = self.py_eq_inner(a, b);
        self.compare_depth -= 1;
        r
    }

    fn py_eq_inner(&mut self, a: &Value, b: &Value) -> R<bool> {
        if (dunder::is_object(a) || dunder::is_object(b))
            && let Some(r) = self.compare_dunder(CmpOp::Eq, a, b)
        {
            return r;
        }
        Ok(match (a, b) {
            (Value::List(x), Value::List(y)) => {
                if Rc::ptr_eq(x, y) {
                    return Ok(true);
                }
                let (x, y) = (x.borrow().clone(), y.borrow().clone());
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (p, q) in x.iter().zip(y.iter()) {
                    if !self.py_eq(p, q)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Tuple(x), Value::Tuple(y)) => {
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (p, q) in x.iter().zip(y.iter()) {
                    if !self.py_eq(p, q)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Dict(x), Value::Dict(yd)) => {
                let (x, y) = (x.borrow().clone(), yd.borrow().clone());
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (k, v) in x.iter() {
                    let k = self.dict_key(yd, &k.0)?;
                    match y.get(&k) {
                        Some(w) => {
                            if !self.py_eq(v, w)? {
                                return Ok(false);
                            }
                        }
                        None => return Ok(false),
                    }
                }
                true
            }
            (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                let items = x.borrow().iter().map(|k| k.0.clone()).collect::<Vec<_>>();
                if items.len() != y.borrow().len() {
                    return Ok(false);
                }
                for v in &items {
                    let k = self.set_key(y, v)?;
                    if !y.borrow().contains(&k) {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::ByteArray(_), Value::Bytes(_) | Value::ByteArray(_))
            | (Value::Bytes(_), Value::ByteArray(_)) => {
                bytes_pair(a, b).is_some_and(|(x, y)| x == y)
            }
            (Value::Float(x), Value::Float(y)) => x == y,
            (Value::Float(_), other) | (other, Value::Float(_)) if is_intlike(other) => {
                int_float_order(a, b) == Some(Some(std::cmp::Ordering::Equal))
            }
            (Value::View(_), _) | (_, Value::View(_)) => {
                return self.view_compare(CmpOp::Eq, a, b).unwrap_or(Ok(false));
            }
            (Value::Instance(x), Value::Instance(y)) => match self.stdlib_eq(a, b) {
                Some(e) => e,
                None => Rc::ptr_eq(x, y),
            },
            // A stdlib named tuple equals the tuple of its items.
            (Value::Instance(_), Value::Tuple(_)) | (Value::Tuple(_), Value::Instance(_))
                if let Some(e) = self.stdlib_eq(a, b) =>
            {
                e
            }
            (Value::EnumMember(_), _) | (_, Value::EnumMember(_)) => {
                match typed_enum_operands(a, b) {
                    // A typed enum's member equals its value (`Role.USER in ["user"]`).
                    Some((x, y)) => return self.py_eq(&x, &y),
                    None => key_eq(a, b),
                }
            }
            _ => key_eq(a, b),
        })
    }

    pub fn py_lt(&mut self, a: &Value, b: &Value) -> R<bool> {
        let nested = matches!(
            (a, b),
            (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_))
        );
        if !nested {
            return self.py_lt_inner(a, b);
        }
        if self.compare_depth >= MAX_COMPARE_DEPTH {
            return Err(self.err(
                "RecursionError",
                "maximum recursion depth exceeded in comparison",
            ));
        }
        self.compare_depth += 1;
        let r = self.py_lt_inner(a, b);
        self.compare_depth -= 1;
        r
    }

    fn py_lt_inner(&mut self, a: &Value, b: &Value) -> R<bool> {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => Ok(x < y),
            (Value::Str(x), Value::Str(y)) => Ok(x < y),
            (Value::Bytes(x), Value::Bytes(y)) => Ok(x < y),
            (Value::ByteArray(_), Value::Bytes(_) | Value::ByteArray(_))
            | (Value::Bytes(_), Value::ByteArray(_)) => {
                Ok(bytes_pair(a, b).is_some_and(|(x, y)| x < y))
            }
            // Slices order as the tuples of their three parts (CPython 3.12).
            (Value::Slice(x), Value::Slice(y)) => {
                let (x, y) = (Value::tuple(x.to_vec()), Value::tuple(y.to_vec()));
                self.py_lt(&x, &y)
            }
            (Value::Float(x), Value::Float(y)) => Ok(x < y),
            (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_)) => {
                let x = self.iterate(a)?;
                let y = self.iterate(b)?;
                for (p, q) in x.iter().zip(y.iter()) {
                    if !self.py_eq(p, q)? {
                        return self.py_lt(p, q);
                    }
                }
                Ok(x.len() < y.len())
            }
            (Value::Set(x) | Value::FrozenSet(x), Value::Set(y) | Value::FrozenSet(y)) => {
                let (x, y) = (x.borrow(), y.borrow());
                Ok(x.len() < y.len() && x.iter().all(|k| y.contains(k)))
            }
            _ => {
                if let (Some(x), Some(y)) = (big(a), big(b)) {
                    return Ok(x < y);
                }
                if let Some(order) = int_float_order(a, b) {
                    return Ok(order == Some(std::cmp::Ordering::Less));
                }
                if let (Ok(Some(x)), Ok(Some(y))) = (self.as_float(a), self.as_float(b)) {
                    return Ok(x < y);
                }
                if let Some(r) = self.stdlib_lt(a, b) {
                    return r;
                }
                // Typed enum members order by their values (`sorted([Prio.HIGH, Prio.LOW])`).
                if let Some((x, y)) = super::decl_later::typed_enum_operands(a, b) {
                    return self.py_lt(&x, &y);
                }
                if let Some(r) = self.compare_dunder(CmpOp::Lt, a, b) {
                    return r;
                }
                Err(self.err(
                    "TypeError",
                    format!(
                        "'<' not supported between instances of '{}' and '{}'",
                        self.type_name_of(a),
                        self.type_name_of(b)
                    ),
                ))
            }
        }
    }

    pub fn truthy(&mut self, v: &Value) -> R<bool> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::BigInt(b) => !b.is_zero(),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::ByteArray(b) => !b.borrow().is_empty(),
            Value::Complex(re, im) => *re != 0.0 || *im != 0.0,
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::View(v) => v.len() > 0,
            Value::Set(s) | Value::FrozenSet(s) => !s.borrow().is_empty(),
            Value::Range(a, b, s) => range_len(*a, *b, *s) > 0,
            Value::Instance(_) | Value::Anchor(_) => match self.stdlib_truthy(v) {
                Some(t) => t,
                None => match self.truthy_dunder(v) {
                    Some(r) => r?,
                    None => true,
                },
            },
            // A typed enum's member is as true as its value (`re.NOFLAG` is false).
            Value::EnumMember(m) if super::decl_later::enum_value_type(&m.class).is_some() => {
                let value = m.value.clone();
                return self.truthy(&value);
            }
            _ => true,
        })
    }

    pub fn hash_key(&mut self, v: &Value) -> R<HashKey> {
        match v {
            Value::List(_)
            | Value::Dict(_)
            | Value::Set(_)
            | Value::ByteArray(_)
            | Value::View(_) => Err(self.err(
                "TypeError",
                format!("unhashable type: '{}'", self.type_name_of(v)),
            )),
            Value::Tuple(_) => {
                // Iteratively, nesting bounded: hashing and comparing a key recurse
                // natively over its tuples, so a key may nest at most
                // `MAX_COMPARE_DEPTH` tuples.
                let mut work: Vec<(&Value, usize)> = vec![(v, 0)];
                while let Some((x, depth)) = work.pop() {
                    match x {
                        Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::ByteArray(_) => {
                            return Err(self.err(
                                "TypeError",
                                format!("unhashable type: '{}'", self.type_name_of(x)),
                            ));
                        }
                        Value::Tuple(items) => {
                            if depth >= MAX_COMPARE_DEPTH {
                                return Err(self.err(
                                    "RecursionError",
                                    "maximum recursion depth exceeded while hashing",
                                ));
                            }
                            work.extend(items.iter().map(|i| (i, depth + 1)));
                        }
                        _ => {}
                    }
                }
                Ok(HashKey(v.clone()))
            }
            // An object whose class defines `__hash__` is keyed by what it returns (and
            // its `__eq__`, through `dict_key`/`set_key`); one defining `__eq__` without
            // `__hash__` is unhashable, as Python sets `__hash__` to None there.
            Value::Instance(i) if !super::stdlib::hashes_by_value(&i.class) => {
                if i.class.find_method("__hash__").is_some() {
                    let h = super::builtins::py_hash(self, v)?;
                    i.user_hash.set(Some(h));
                } else if i.class.find_method("__eq__").is_some() {
                    return Err(self.err(
                        "TypeError",
                        format!("unhashable type: '{}'", self.type_name_of(v)),
                    ));
                }
                Ok(HashKey(v.clone()))
            }
            _ => Ok(HashKey(v.clone())),
        }
    }

    /// The key `v` is in the dict `d`: `hash_key(v)`, or, for an object keyed by its
    /// class's `__hash__`, the existing key with the same hash that `==` calls equal (a
    /// different object), as a Python dict compares keys.
    pub(crate) fn dict_key(&mut self, d: &RefCell<Dict>, v: &Value) -> R<HashKey> {
        let k = self.hash_key(v)?;
        self.equal_key(k, |p| d.borrow().get_index_of(p).is_some())
    }

    /// [`Self::dict_key`] for a set's members.
    pub(crate) fn set_key(&mut self, s: &RefCell<Set>, v: &Value) -> R<HashKey> {
        let k = self.hash_key(v)?;
        self.equal_key(k, |p| s.borrow().get_index_of(p).is_some())
    }

    /// [`Self::set_key`] for a set being built (no program code can reach it).
    pub(crate) fn new_set_key(&mut self, s: &Set, v: &Value) -> R<HashKey> {
        let k = self.hash_key(v)?;
        self.equal_key(k, |p| s.get_index_of(p).is_some())
    }

    /// [`Self::dict_key`] for a dict being built (no program code can reach it).
    pub(crate) fn new_dict_key(&mut self, d: &Dict, v: &Value) -> R<HashKey> {
        let k = self.hash_key(v)?;
        self.equal_key(k, |p| d.get_index_of(p).is_some())
    }

    /// Probe a container (through `lookup`) for keys with `k`'s user hash, then ask `==`
    /// of each, stored key first as CPython compares (outside the container's borrow,
    /// since `__eq__` may run anything).
    fn equal_key(&mut self, k: HashKey, lookup: impl FnOnce(&KeyProbe) -> bool) -> R<HashKey> {
        if !has_user_hash(&k.0) {
            return Ok(k);
        }
        let probe = KeyProbe {
            key: &k,
            seen: RefCell::new(Vec::new()),
        };
        if lookup(&probe) {
            return Ok(k);
        }
        let seen = probe.seen.into_inner();
        for c in seen {
            if self.py_eq(&c, &k.0)? {
                return Ok(HashKey(c));
            }
        }
        Ok(k)
    }

    /// Materialise any iterable.
    /// The items a loop or an iterator over `v` yields: a list's read live (items
    /// appended while the loop runs are walked, as CPython's list iterator walks them),
    /// anything else's a snapshot taken now.
    pub(crate) fn iter_items(&mut self, v: &Value) -> R<IterItems> {
        Ok(match v {
            Value::List(l) => IterItems::List(l.clone(), 0),
            other => IterItems::snapshot(self.iterate(other)?),
        })
    }

    pub fn iterate(&mut self, v: &Value) -> R<Vec<Value>> {
        Ok(match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => (**t).clone(),
            Value::Str(s) => {
                if s.len() > self.max_collection_items() {
                    self.check_items(s.chars().count())?;
                }
                s.chars()
                    .map(|c| Value::Str(PyStr::from(c.encode_utf8(&mut [0; 4]) as &str)))
                    .collect()
            }
            Value::Bytes(b) => {
                self.check_items(b.len())?;
                b.iter().map(|&c| Value::Int(i64::from(c))).collect()
            }
            Value::ByteArray(b) => {
                let b = b.borrow();
                self.check_items(b.len())?;
                b.iter().map(|&c| Value::Int(i64::from(c))).collect()
            }
            Value::Dict(d) => d.borrow().keys().map(|k| k.0.clone()).collect(),
            Value::Set(s) | Value::FrozenSet(s) => set_items(&s.borrow()),
            Value::Range(a, b, s) => {
                let n = usize::try_from(range_len(*a, *b, *s)).unwrap_or(0);
                self.check_items(n)?;
                self.check_deadline()?;
                let mut out = Vec::with_capacity(n);
                let mut i = *a;
                for _ in 0..n {
                    out.push(Value::Int(i));
                    i = i.wrapping_add(*s);
                }
                out
            }
            Value::Iter(it, _) => it.borrow_mut().by_ref().collect(),
            Value::Generator(g) => self.gen_collect(g)?,
            Value::Lazy(l) => self.lazy_collect(l)?,
            Value::View(v) => v.items(),
            Value::Class(c) if c.kind == ClassKind::Enum => c
                .members
                .borrow()
                .iter()
                .map(|m| Value::EnumMember(m.clone()))
                .collect(),
            other => {
                if let Some(t) = self.stdlib_tuple(other) {
                    return self.iterate(&t);
                }
                if let Some(r) = self.iterate_dunder(other) {
                    return r;
                }
                return Err(self.err(
                    "TypeError",
                    format!("'{}' object is not iterable", self.type_name_of(other)),
                ));
            }
        })
    }

    // -----------------------------------------------------------------------------------
    // Types
    // -----------------------------------------------------------------------------------

    pub fn type_name_of(&self, v: &Value) -> String {
        match v {
            Value::Anchor(h) => self.graph.slot(*h).class.name.to_string(),
            Value::Instance(_) => match Self::stdlib_type_name(v) {
                Some(k) => k.to_string(),
                None => v.type_name().to_string(),
            },
            other => other.type_name().to_string(),
        }
    }

    pub fn class_of(&self, v: &Value) -> Rc<Class> {
        let name = match v {
            Value::Anchor(h) => return self.graph.slot(*h).class.clone(),
            Value::Instance(i) => return i.class.clone(),
            Value::EnumMember(m) => return m.class.clone(),
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
            Value::Class(c) if c.kind == ClassKind::Enum => "EnumType",
            Value::Class(_) => "type",
            Value::Generator(_) => "generator",
            Value::Coroutine(_) => "coroutine",
            Value::Lazy(l) => l.kind.name(),
            Value::View(v) => v.type_name(),
            Value::Iter(_, k) => k.name(),
            Value::Builtin(n) if &**n == NOT_IMPLEMENTED => "NotImplementedType",
            Value::Bound(_) => "method",
            Value::Builtin(_) | Value::BuiltinMethod(_) => "builtin_function_or_method",
            _ => "function",
        };
        self.builtin_classes
            .get(name)
            .or_else(|| self.builtin_classes.get("object"))
            .cloned()
            .expect("builtin classes are installed when the interpreter is made")
    }

    /// The builtin base jaclang gives an archetype of `c`'s kind (`NodeArchetype`,
    /// `Archetype`, `Enum`), which its `__mro__` and `__bases__` show.
    fn kind_base(&self, c: &Class) -> Option<Rc<Class>> {
        let name = match c.kind {
            ClassKind::Enum => "Enum",
            ClassKind::Arch(ArchKind::Class) | ClassKind::Builtin | ClassKind::Exception => {
                return None;
            }
            _ if c.python_class => return None,
            ClassKind::Arch(ArchKind::Node) | ClassKind::Root => "NodeArchetype",
            ClassKind::Arch(ArchKind::Edge) | ClassKind::GenericEdge => "EdgeArchetype",
            ClassKind::Arch(ArchKind::Walker) => "WalkerArchetype",
            ClassKind::Arch(ArchKind::Obj) => "Archetype",
        };
        self.builtin_classes.get(name).cloned()
    }

    /// `C.__mro__`: the class, its ancestors in resolution order, then the archetype
    /// kind's builtin bases and `object`.
    pub(crate) fn class_mro(&self, c: &Rc<Class>) -> Vec<Value> {
        let object = self.builtin_classes.get("object");
        let mut out = vec![Value::Class(c.clone())];
        let user = |a: &&Rc<Class>| object.is_none_or(|o| !Rc::ptr_eq(a, o));
        out.extend(c.mro.iter().filter(user).cloned().map(Value::Class));
        if object.is_some_and(|o| !Rc::ptr_eq(c, o)) {
            if let Some(base) = self.kind_base(c) {
                out.push(Value::Class(base.clone()));
                out.extend(base.mro.iter().filter(user).cloned().map(Value::Class));
            }
            out.extend(object.cloned().map(Value::Class));
        }
        out
    }

    /// `C.__bases__`: the declared bases, then the archetype kind's builtin base
    /// (jaclang adds it to every archetype), or `object` for a class with none.
    pub(crate) fn class_bases(&self, c: &Rc<Class>) -> Vec<Value> {
        let object = self.builtin_classes.get("object");
        let mut out: Vec<Value> = c.bases.iter().cloned().map(Value::Class).collect();
        if let Some(base) = self.kind_base(c) {
            out.push(Value::Class(base));
        } else if out.is_empty() && object.is_some_and(|o| !Rc::ptr_eq(c, o)) {
            out.extend(object.cloned().map(Value::Class));
        }
        out
    }

    /// `isinstance(v, t)` where `t` is a class, a tuple of classes or a union.
    pub fn isinstance(&mut self, v: &Value, t: &Value) -> R<bool> {
        match t {
            Value::Class(c) => {
                if &*c.name == "any" && c.kind == ClassKind::Builtin {
                    return Ok(true);
                }
                Ok(self.class_of(v).is_sub(c))
            }
            Value::Tuple(items) => {
                for i in items.iter() {
                    if self.isinstance(v, i)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::None => Ok(v.is_none()),
            other => Err(self.err(
                "TypeError",
                format!(
                    "isinstance() arg 2 must be a type, a tuple of types, or a union, not {}",
                    self.type_name_of(other)
                ),
            )),
        }
    }

    // -----------------------------------------------------------------------------------
    // Attributes
    // -----------------------------------------------------------------------------------

    /// `obj.__dict__` / `vars(obj)` of an archetype instance, node or edge: its fields
    /// in declaration order, then the attributes set on it later in the order they were
    /// first set (a walker's `reports` always; an exception's `args` never). A new dict,
    /// not a live view: writing to it does not change the object. `None` for values
    /// without one.
    pub(crate) fn attr_dict(&mut self, v: &Value) -> R<Option<Value>> {
        let (class, fields, extra) = match v {
            Value::Instance(i) if Self::stdlib_key(v).is_none() => {
                let extra: Vec<(Rc<str>, Value)> = i
                    .extra
                    .borrow()
                    .as_ref()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                (i.class.clone(), i.fields.borrow().clone(), extra)
            }
            Value::Anchor(h) => {
                self.readable_fields(*h)?;
                let slot = self.graph.slot(*h);
                (slot.class.clone(), slot.fields.to_vec(), Vec::new())
            }
            _ => return Ok(None),
        };
        let mut d = Dict::default();
        for (f, x) in class.fields.iter().zip(fields) {
            if !f.is_static {
                d.insert(HashKey(Value::Str(f.name.clone().into())), x);
            }
        }
        let is_exc = class.is_exception();
        for (k, x) in extra {
            if !(is_exc && matches!(&*k, "args" | "__cause__" | "__context__" | "__traceback__")) {
                d.insert(HashKey(Value::Str(k.into())), x);
            }
        }
        if class.is_walker() {
            d.entry(HashKey(Value::str("reports")))
                .or_insert_with(|| Value::list(Vec::new()));
        }
        Ok(Some(Value::dict(d)))
    }

    pub fn get_attr(&mut self, v: &Value, name: &str) -> R<Value> {
        match v {
            Value::Anchor(h) => {
                let h = *h;
                let class = self.graph.slot(h).class.clone();
                if let Some(i) = class.field_slot(name) {
                    self.readable_fields(h)?;
                    return Ok(self.graph.slot(h).fields[i].clone());
                }
                if let Some(f) = class.find_method(name) {
                    return Ok(Value::Bound(Rc::new((v.clone(), f))));
                }
                if let Some(s) = class.find_static(name) {
                    return Ok(bind_class_attr(v, s));
                }
                if let Some(g) = class.find_method(&super::decl_later::getter_name(name)) {
                    return self.call_function(&g, Some(v.clone()), vec![], vec![], None);
                }
                if name == "shared" && class.kind == ClassKind::Root {
                    return Ok(Value::Anchor(self.shared_root_handle()?));
                }
                if name == "__class__" {
                    return Ok(Value::Class(class));
                }
            }
            Value::Instance(inst) => {
                if let Some(i) = inst.class.field_slot(name) {
                    return Ok(inst.fields.borrow()[i].clone());
                }
                if let Some(m) = self.kvstore_attr(v, name) {
                    return Ok(m);
                }
                if let Some(m) = self.stdlib_attr(v, name) {
                    return Ok(m);
                }
                if let Some(x) = inst.get_extra(name) {
                    return Ok(x);
                }
                if let Some(f) = inst.class.find_method(name) {
                    return Ok(Value::Bound(Rc::new((v.clone(), f))));
                }
                if let Some(s) = inst.class.find_static(name) {
                    return Ok(bind_class_attr(v, s));
                }
                if let Some(g) = inst
                    .class
                    .find_method(&super::decl_later::getter_name(name))
                {
                    return self.call_function(&g, Some(v.clone()), vec![], vec![], None);
                }
                if let Some(m) = self.storage_attr(v, name) {
                    return Ok(m);
                }
                if name == "reports" && inst.class.is_walker() {
                    return Ok(Value::list(vec![]));
                }
                if name == "__class__" {
                    return Ok(Value::Class(inst.class.clone()));
                }
                if inst.class.is_exception() {
                    match name {
                        "args" => return Ok(Value::tuple(vec![])),
                        "__cause__" | "__context__" | "__traceback__" => return Ok(Value::None),
                        "with_traceback" => {
                            return Ok(Value::BuiltinMethod(Rc::new((v.clone(), Rc::from(name)))));
                        }
                        // True once `raise ... from ...` set a cause (None included).
                        "__suppress_context__" => {
                            return Ok(Value::Bool(inst.get_extra("__cause__").is_some()));
                        }
                        _ => {}
                    }
                }
            }
            Value::Class(c) => {
                if name == "__name__" {
                    return Ok(Value::Str(c.name.clone().into()));
                }
                if name == "__qualname__" {
                    return Ok(Value::Str(c.qualname().into()));
                }
                if name == "__module__" {
                    return Ok(Value::Str(c.module.clone().into()));
                }
                if name == "__mro__" {
                    return Ok(Value::tuple(self.class_mro(c)));
                }
                if name == "__bases__" {
                    return Ok(Value::tuple(self.class_bases(c)));
                }
                if let Some(m) = self.stdlib_attr(v, name) {
                    return Ok(m);
                }
                if let Some(s) = c.find_static(name) {
                    return Ok(s);
                }
                if let Some(f) = c.find_method(name) {
                    if f.is_classmethod {
                        return Ok(Value::Bound(Rc::new((v.clone(), f))));
                    }
                    return Ok(Value::Func(f));
                }
                if c.kind == ClassKind::Builtin && builtins::has_method(v, name) {
                    return Ok(Value::BuiltinMethod(Rc::new((
                        Value::Class(c.clone()),
                        Rc::from(name),
                    ))));
                }
            }
            Value::EnumMember(m) => match name {
                "name" => return Ok(Value::Str(m.name.clone().into())),
                "value" => return Ok(m.value.clone()),
                "__class__" => return Ok(Value::Class(m.class.clone())),
                _ => {
                    if let Some(f) = m.class.find_method(name) {
                        return Ok(Value::Bound(Rc::new((v.clone(), f))));
                    }
                    // A typed enum's member (`enum R: str`) is also its value: the
                    // value's methods apply (`R.A.upper()`), as with Python's mixins.
                    if super::decl_later::enum_value_type(&m.class).is_some()
                        && builtins::has_method(&m.value, name)
                    {
                        return Ok(Value::BuiltinMethod(Rc::new((
                            m.value.clone(),
                            Rc::from(name),
                        ))));
                    }
                }
            },
            Value::Module(m) => {
                if let Some(x) = scope_get(&m.scope, name) {
                    return Ok(x);
                }
                return Err(self.err(
                    "AttributeError",
                    format!("module '{}' has no attribute '{name}'", m.name),
                ));
            }
            Value::Func(f) if name == "__name__" => return Ok(Value::Str(f.name.clone().into())),
            Value::Generator(_) if Self::GEN_METHODS.contains(&name) => {
                return Ok(Value::BuiltinMethod(Rc::new((v.clone(), Rc::from(name)))));
            }
            Value::Float(f) if name == "real" => return Ok(Value::Float(*f)),
            // An int is its own real part and numerator (a bool gives the int).
            Value::Int(_) | Value::BigInt(_) | Value::Bool(_)
                if matches!(name, "real" | "imag" | "numerator" | "denominator") =>
            {
                return Ok(match (name, v) {
                    ("imag", _) => Value::Int(0),
                    ("denominator", _) => Value::Int(1),
                    (_, Value::Bool(b)) => Value::Int(i64::from(*b)),
                    _ => v.clone(),
                });
            }
            Value::Float(_) if name == "imag" => return Ok(Value::Float(0.0)),
            Value::Slice(s) if matches!(name, "start" | "stop" | "step") => {
                let i = match name {
                    "start" => 0,
                    "stop" => 1,
                    _ => 2,
                };
                return Ok(s[i].clone());
            }
            Value::Complex(re, _) if name == "real" => return Ok(Value::Float(*re)),
            Value::Complex(_, im) if name == "imag" => return Ok(Value::Float(*im)),
            other => {
                if name == "__class__" {
                    return Ok(Value::Class(self.class_of(other)));
                }
                if builtins::has_method(other, name) {
                    return Ok(Value::BuiltinMethod(Rc::new((
                        other.clone(),
                        Rc::from(name),
                    ))));
                }
            }
        }
        // Last, off the hot path: nothing else matched.
        if dunder::has_value_dunder(v, name) {
            return Ok(Value::BuiltinMethod(Rc::new((v.clone(), Rc::from(name)))));
        }
        if name == "__dict__"
            && let Some(d) = self.attr_dict(v)?
        {
            return Ok(d);
        }
        if let Value::Class(c) = v {
            return Err(self.err(
                "AttributeError",
                format!("type object '{}' has no attribute '{name}'", c.name),
            ));
        }
        Err(self.err(
            "AttributeError",
            format!(
                "'{}' object has no attribute '{name}'",
                self.type_name_of(v)
            ),
        ))
    }

    /// `del v.name` and `delattr(v, name)`: an attribute set on the object goes; a
    /// declared field cannot be deleted; a name the object does not have is CPython's
    /// `AttributeError`.
    pub(crate) fn del_attr(&mut self, v: &Value, name: &str) -> R<()> {
        if let Value::Instance(i) = v
            && let Some(m) = i.extra.borrow_mut().as_mut()
            && m.shift_remove(name).is_some()
        {
            return Ok(());
        }
        let class = match v {
            Value::Instance(i) => Some(i.class.clone()),
            Value::Anchor(h) => Some(self.graph.slot(*h).class.clone()),
            _ => None,
        };
        if let Some(class) = &class {
            // A property: its deleter, or CPython's message when it has none.
            if let Some(d) = class.find_method(&super::decl_later::deleter_name(name)) {
                self.call_function(&d, Some(v.clone()), vec![], vec![], None)?;
                return Ok(());
            }
            if class.field_slot(name).is_none()
                && class
                    .find_method(&super::decl_later::getter_name(name))
                    .is_some()
            {
                return Err(self.err(
                    "AttributeError",
                    format!(
                        "property '{name}' of '{}' object has no deleter",
                        class.name
                    ),
                ));
            }
        }
        // A field whose default is a literal is also a class attribute in jaclang
        // (the dataclass keeps it there): deleting the instance's value shows it again.
        if let Value::Instance(i) = v
            && let Some(slot) = i.class.field_slot(name)
            && let Some(d) = &i.class.fields[slot].default
            && let Some(value) = literal_value(d)
        {
            i.fields.borrow_mut()[slot] = value;
            return Ok(());
        }
        let declared = match v {
            Value::Instance(i) => i.class.fields.iter().any(|f| &*f.name == name),
            _ => true,
        };
        Err(self.err(
            "AttributeError",
            if declared {
                format!("cannot delete attribute '{name}'")
            } else {
                format!(
                    "'{}' object has no attribute '{name}'",
                    self.type_name_of(v)
                )
            },
        ))
    }

    pub fn set_attr(&mut self, v: &Value, name: &str, value: Value) -> R<()> {
        if let Some(key) = Self::stdlib_key(v) {
            // The stdlib's values are immutable, as in CPython.
            return Err(self.err(
                "AttributeError",
                format!("attribute '{name}' of '{key}' objects is not writable"),
            ));
        }
        match v {
            Value::Anchor(h) => {
                let h = *h;
                let idx = self.graph.slot(h).class.field_slot(name);
                if let Some(i) = idx {
                    self.check_write(h)?;
                    self.decode_fields(h)?;
                    self.graph.slot_mut(h).fields[i] = value;
                    self.graph.mark_dirty(h);
                    return Ok(());
                }
                let class = self.graph.slot(h).class.clone();
                if let Some(s) = class.find_method(&super::decl_later::setter_name(name)) {
                    self.call_function(&s, Some(v.clone()), vec![value], vec![], None)?;
                    return Ok(());
                }
                if class
                    .find_method(&super::decl_later::getter_name(name))
                    .is_some()
                {
                    return Err(self.err(
                        "AttributeError",
                        format!("property '{name}' of '{}' object has no setter", class.name),
                    ));
                }
                Err(self.err(
                    "AttributeError",
                    format!(
                        "'{}' object has no attribute '{name}'",
                        self.type_name_of(v)
                    ),
                ))
            }
            Value::Instance(inst) => {
                if let Some(i) = inst.class.field_slot(name) {
                    inst.fields.borrow_mut()[i] = value;
                } else if let Some(s) = inst
                    .class
                    .find_method(&super::decl_later::setter_name(name))
                {
                    self.call_function(&s, Some(v.clone()), vec![value], vec![], None)?;
                } else if inst
                    .class
                    .find_method(&super::decl_later::getter_name(name))
                    .is_some()
                {
                    return Err(self.err(
                        "AttributeError",
                        format!(
                            "property '{name}' of '{}' object has no setter",
                            inst.class.name
                        ),
                    ));
                } else {
                    inst.set_extra(Rc::from(name), value);
                }
                Ok(())
            }
            Value::Class(c) => {
                c.statics.borrow_mut().insert(Rc::from(name), value);
                Ok(())
            }
            _ => Err(self.err(
                "AttributeError",
                format!(
                    "'{}' object has no attribute '{name}'",
                    self.type_name_of(v)
                ),
            )),
        }
    }

    // -----------------------------------------------------------------------------------
    // Items
    // -----------------------------------------------------------------------------------

    fn index_of(&self, len: usize, i: &Value, what: &str) -> R<usize> {
        let i = match i {
            Value::Int(i) => *i,
            Value::Bool(b) => i64::from(*b),
            Value::BigInt(_) => {
                return Err(self.err("IndexError", "cannot fit 'int' into an index-sized integer"));
            }
            other => {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "{what} indices must be integers or slices, not {}",
                        self.type_name_of(other)
                    ),
                ));
            }
        };
        pyfmt::normalize_index(len, i)
            .ok_or_else(|| self.err("IndexError", format!("{what} index out of range")))
    }

    /// The bounds of a slice object used as an index (`xs[slice(1, 3)]`).
    fn slice_bounds(&self, s: &[Value; 3]) -> R<[Option<i64>; 3]> {
        let mut out = [None; 3];
        for (slot, v) in out.iter_mut().zip(s.iter()) {
            *slot = match v {
                Value::None => None,
                Value::Int(i) => Some(*i),
                Value::Bool(b) => Some(i64::from(*b)),
                Value::BigInt(b) => Some(if b.is_negative() { i64::MIN } else { i64::MAX }),
                _ => {
                    return Err(self.err(
                        "TypeError",
                        "slice indices must be integers or None or have an __index__ method",
                    ));
                }
            };
        }
        Ok(out)
    }

    pub fn get_item(&mut self, o: &Value, i: &Value) -> R<Value> {
        if let Value::Slice(s) = i
            && matches!(
                o,
                Value::List(_)
                    | Value::Tuple(_)
                    | Value::Str(_)
                    | Value::Bytes(_)
                    | Value::ByteArray(_)
                    | Value::Range(..)
            )
        {
            let [lo, hi, st] = self.slice_bounds(s)?;
            return self.get_slice(o, lo, hi, st);
        }
        if Self::stdlib_key(o) == Some("re.Match") {
            // `m[g]` is `m.group(g)`.
            return self.call_stdlib_method(o, "group", vec![i.clone()], Vec::new());
        }
        if let Some(t) = self.stdlib_tuple(o) {
            return self.get_item(&t, i);
        }
        match o {
            Value::List(l) => {
                let l = l.borrow();
                let ix = self.index_of(l.len(), i, "list")?;
                Ok(l[ix].clone())
            }
            Value::Tuple(t) => {
                let ix = self.index_of(t.len(), i, "tuple")?;
                Ok(t[ix].clone())
            }
            Value::Str(s) => {
                let n = s.chars().count();
                let ix = self.index_of(n, i, "string")?;
                Ok(Value::Str(PyStr::from(
                    s.chars().nth(ix).map(|c| c.to_string()).unwrap_or_default(),
                )))
            }
            Value::Bytes(b) => {
                let ix = match i {
                    Value::Int(_) | Value::Bool(_) | Value::BigInt(_) => {
                        self.index_of(b.len(), i, "byte").map_err(|e| {
                            if super::builtins::bytes::is_index_error(self, &e) {
                                self.err("IndexError", "index out of range")
                            } else {
                                e
                            }
                        })?
                    }
                    other => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "byte indices must be integers or slices, not {}",
                                self.type_name_of(other)
                            ),
                        ));
                    }
                };
                Ok(Value::Int(i64::from(b[ix])))
            }
            Value::ByteArray(b) => {
                let ix = self.bytearray_index(b.borrow().len(), i)?;
                Ok(Value::Int(i64::from(b.borrow()[ix])))
            }
            Value::Dict(d) => {
                let k = self.dict_key(d, i)?;
                let found = d.borrow().get(&k).cloned();
                match found {
                    Some(v) => Ok(v),
                    None => Err(self.key_error(i)),
                }
            }
            Value::Range(a, b, s) => {
                let n = range_len(*a, *b, *s) as usize;
                let ix = self.index_of(n, i, "range object")?;
                Ok(Value::Int(range_item(*a, *s, ix)))
            }
            Value::Class(c) if c.kind == ClassKind::Enum => {
                if let Value::Str(n) = i
                    && let Some(v) = c.find_static(n)
                {
                    return Ok(v);
                }
                Err(self.key_error(i))
            }
            // Generic aliases such as list[int] in type positions.
            Value::Class(_) => Ok(o.clone()),
            other => match self.call_dunder(other, "__getitem__", vec![i.clone()]) {
                Some(r) => r,
                None => Err(self.err(
                    "TypeError",
                    format!("'{}' object is not subscriptable", self.type_name_of(other)),
                )),
            },
        }
    }

    pub fn set_item(&mut self, o: &Value, i: Value, v: Value) -> R<()> {
        if let (Value::List(_) | Value::ByteArray(_), Value::Slice(s)) = (o, &i) {
            let [lo, hi, st] = self.slice_bounds(s)?;
            return self.set_slice(o, lo, hi, st, v);
        }
        match o {
            Value::ByteArray(b) => {
                let ix = self.bytearray_index(b.borrow().len(), &i)?;
                let c = super::builtins::bytes::byte_of(self, &v)?;
                b.borrow_mut()[ix] = c;
                Ok(())
            }
            Value::List(l) => {
                let len = l.borrow().len();
                let ix = self.index_of(len, &i, "list assignment")?;
                l.borrow_mut()[ix] = v;
                Ok(())
            }
            Value::Dict(d) => {
                let k = self.dict_key(d, &i)?;
                let mut b = d.borrow_mut();
                if b.len() >= self.max_collection_items() && !b.contains_key(&k) {
                    let n = b.len();
                    drop(b);
                    return self.check_growth(n, 1);
                }
                b.insert(k, v);
                Ok(())
            }
            other => match self.call_dunder(other, "__setitem__", vec![i, v]) {
                Some(r) => r.map(|_| ()),
                None => Err(self.err(
                    "TypeError",
                    format!(
                        "'{}' object does not support item assignment",
                        self.type_name_of(other)
                    ),
                )),
            },
        }
    }

    pub fn del_item(&mut self, o: &Value, i: &Value) -> R<()> {
        if let (Value::List(_) | Value::ByteArray(_), Value::Slice(s)) = (o, i) {
            let [lo, hi, st] = self.slice_bounds(s)?;
            return self.del_slice(o, lo, hi, st);
        }
        match o {
            Value::ByteArray(b) => {
                let ix = self.bytearray_index(b.borrow().len(), i)?;
                b.borrow_mut().remove(ix);
                Ok(())
            }
            Value::List(l) => {
                let len = l.borrow().len();
                let ix = self.index_of(len, i, "list assignment")?;
                l.borrow_mut().remove(ix);
                Ok(())
            }
            Value::Dict(d) => {
                let k = self.dict_key(d, i)?;
                if d.borrow_mut().shift_remove(&k).is_none() {
                    return Err(self.key_error(i));
                }
                Ok(())
            }
            other => match self.call_dunder(other, "__delitem__", vec![i.clone()]) {
                Some(r) => r.map(|_| ()),
                None => Err(self.err(
                    "TypeError",
                    format!(
                        "'{}' object doesn't support item deletion",
                        self.type_name_of(other)
                    ),
                )),
            },
        }
    }

    pub fn get_slice(
        &mut self,
        o: &Value,
        lo: Option<i64>,
        hi: Option<i64>,
        step: Option<i64>,
    ) -> R<Value> {
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(self.err("ValueError", "slice step cannot be zero"));
        }
        if let Some(t) = self.stdlib_tuple(o) {
            return self.get_slice(&t, lo, hi, Some(step));
        }
        match o {
            Value::List(l) => {
                let l = l.borrow();
                let idx = pyfmt::slice_indices(l.len() as i64, lo, hi, step);
                Ok(Value::list(idx.into_iter().map(|i| l[i].clone()).collect()))
            }
            Value::Tuple(t) => {
                let idx = pyfmt::slice_indices(t.len() as i64, lo, hi, step);
                Ok(Value::tuple(
                    idx.into_iter().map(|i| t[i].clone()).collect(),
                ))
            }
            Value::Str(s) => {
                let chars: Vec<char> = s.chars().collect();
                let idx = pyfmt::slice_indices(chars.len() as i64, lo, hi, step);
                Ok(Value::Str(PyStr::from(
                    idx.into_iter().map(|i| chars[i]).collect::<String>(),
                )))
            }
            Value::Bytes(b) => {
                let idx = pyfmt::slice_indices(b.len() as i64, lo, hi, step);
                Ok(Value::Bytes(Rc::from(
                    idx.into_iter().map(|i| b[i]).collect::<Vec<u8>>(),
                )))
            }
            Value::ByteArray(b) => {
                let b = b.borrow();
                let idx = pyfmt::slice_indices(b.len() as i64, lo, hi, step);
                Ok(super::builtins::bytearray::new(
                    idx.into_iter().map(|i| b[i]).collect::<Vec<u8>>(),
                ))
            }
            // A range of the selected items, as CPython's `compute_slice`: the slice's
            // indices over the range's length, mapped through the range (no items made).
            Value::Range(a, b, s) => {
                let n = range_len(*a, *b, *s);
                let (start, stop, st, _) = pyfmt::slice_range(n, lo, hi, step);
                let at = |i: i64| i128::from(*a) + i128::from(i) * i128::from(*s);
                let parts = [at(start), at(stop), i128::from(st) * i128::from(*s)];
                let mut out = [0i64; 3];
                for (slot, x) in out.iter_mut().zip(parts) {
                    *slot = i64::try_from(x).map_err(|_| {
                        self.err(
                            "OverflowError",
                            "Python int too large to convert to C ssize_t",
                        )
                    })?;
                }
                Ok(Value::Range(out[0], out[1], out[2]))
            }
            other => Err(self.err(
                "TypeError",
                format!("'{}' object is not subscriptable", self.type_name_of(other)),
            )),
        }
    }

    pub fn del_slice(
        &mut self,
        o: &Value,
        lo: Option<i64>,
        hi: Option<i64>,
        step: Option<i64>,
    ) -> R<()> {
        if let Value::ByteArray(b) = o {
            let step = step.unwrap_or(1);
            if step == 0 {
                return Err(self.err("ValueError", "slice step cannot be zero"));
            }
            let mut b = b.borrow_mut();
            let mut idx = pyfmt::slice_indices(b.len() as i64, lo, hi, step);
            idx.sort_unstable();
            for i in idx.into_iter().rev() {
                b.remove(i);
            }
            return Ok(());
        }
        let Value::List(l) = o else {
            return Err(self.err(
                "TypeError",
                format!(
                    "'{}' object doesn't support item deletion",
                    self.type_name_of(o)
                ),
            ));
        };
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(self.err("ValueError", "slice step cannot be zero"));
        }
        let len = l.borrow().len() as i64;
        let mut idx = pyfmt::slice_indices(len, lo, hi, step);
        idx.sort_unstable();
        let mut lm = l.borrow_mut();
        for i in idx.into_iter().rev() {
            lm.remove(i);
        }
        Ok(())
    }

    /// The position `i` names in a `bytearray` of `len` bytes, with CPython's messages.
    fn bytearray_index(&self, len: usize, i: &Value) -> R<usize> {
        match i {
            Value::Int(_) | Value::Bool(_) | Value::BigInt(_) => {
                self.index_of(len, i, "bytearray").map_err(|e| {
                    if super::builtins::bytes::is_index_error(self, &e) {
                        self.err("IndexError", "bytearray index out of range")
                    } else {
                        e
                    }
                })
            }
            other => Err(self.err(
                "TypeError",
                format!(
                    "bytearray indices must be integers or slices, not {}",
                    self.type_name_of(other)
                ),
            )),
        }
    }

    /// `ba[lo:hi:step] = v`: `v` a bytes-like value or an iterable of ints (an int or
    /// a str is CPython's TypeError); an extended slice takes exactly as many bytes.
    fn bytearray_set_slice(
        &mut self,
        b: &Rc<RefCell<Vec<u8>>>,
        lo: Option<i64>,
        hi: Option<i64>,
        step: Option<i64>,
        v: Value,
    ) -> R<()> {
        if matches!(
            v,
            Value::Int(_) | Value::BigInt(_) | Value::Bool(_) | Value::Str(_) | Value::Float(_)
        ) || matches!(v, Value::None)
        {
            return Err(self.err(
                "TypeError",
                "can assign only bytes, buffers, or iterables of ints in range(0, 256)",
            ));
        }
        let items = super::builtins::bytearray::extend_items(self, v)?;
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(self.err("ValueError", "slice step cannot be zero"));
        }
        // The bytearray loses the slice's bytes and gains `items.len()`.
        self.assign_slice(b, lo, hi, step, items, "bytes", |it, kept, added| {
            it.check_str_len(kept.saturating_add(added))
        })
    }

    /// `ba += x` and `ba *= n` change the `bytearray` itself, as CPython's
    /// `__iadd__`/`__imul__` do (every holder sees it); true when `cur` was one.
    pub(crate) fn bytearray_inplace(&mut self, op: BinOp, cur: &Value, rhs: &Value) -> R<bool> {
        let Value::ByteArray(b) = cur else {
            return Ok(false);
        };
        match op {
            BinOp::Add => {
                let add = match super::builtins::bytes::freeze(rhs.clone()) {
                    Value::Bytes(x) => x,
                    other => {
                        let o = self.type_name_of(&other);
                        return Err(self.err("TypeError", format!("can't concat {o} to bytearray")));
                    }
                };
                self.check_str_len(b.borrow().len().saturating_add(add.len()))?;
                b.borrow_mut().extend_from_slice(&add);
                Ok(true)
            }
            BinOp::Mul if is_intlike(rhs) => {
                let count = self.repeat_count(rhs);
                let k = self.check_repeat_str(b.borrow().len(), &count)?;
                let one = b.borrow().clone();
                *b.borrow_mut() = one.repeat(k);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// `KeyError(key)`: its message is the repr of the key.
    pub fn key_error(&self, key: &Value) -> super::Interrupt {
        match self.builtin_class("KeyError") {
            Some(c) => {
                let v = self.make_exception(c, vec![key.clone()]);
                if let Value::Instance(i) = &v {
                    self.chain_context(i);
                }
                super::Interrupt::Exc(Box::new(super::PyErr {
                    value: v,
                    trace: Vec::new(),
                    origin: None,
                }))
            }
            None => self.err("KeyError", "key not found"),
        }
    }

    pub fn set_slice(
        &mut self,
        o: &Value,
        lo: Option<i64>,
        hi: Option<i64>,
        step: Option<i64>,
        v: Value,
    ) -> R<()> {
        if let Value::ByteArray(b) = o {
            return self.bytearray_set_slice(b, lo, hi, step, v);
        }
        let Value::List(l) = o else {
            return Err(self.err(
                "TypeError",
                format!(
                    "'{}' object does not support slice assignment",
                    self.type_name_of(o)
                ),
            ));
        };
        let items = self.iterate(&v)?;
        let step = step.unwrap_or(1);
        // The list loses the slice's items and gains `items.len()`.
        self.assign_slice(l, lo, hi, step, items, "sequence", |it, kept, added| {
            it.check_growth(kept, added)
        })
    }

    /// `target[lo:hi:step] = items` for a list's values or a bytearray's bytes: a plain
    /// slice (`step` 1) is spliced once `check(kept, added)` allows the new length; an
    /// extended slice takes exactly as many items as it names (`what` the right side in
    /// CPython's message).
    fn assign_slice<T>(
        &self,
        target: &RefCell<Vec<T>>,
        lo: Option<i64>,
        hi: Option<i64>,
        step: i64,
        items: Vec<T>,
        what: &str,
        check: impl FnOnce(&Self, usize, usize) -> R<()>,
    ) -> R<()> {
        let len = target.borrow().len() as i64;
        if step == 1 {
            let norm = |x: Option<i64>, d: i64| -> i64 {
                match x {
                    None => d,
                    Some(i) if i < 0 => (i + len).max(0),
                    Some(i) => i.min(len),
                }
            };
            let a = norm(lo, 0) as usize;
            let b = (norm(hi, len) as usize).max(a);
            check(self, (len as usize).saturating_sub(b - a), items.len())?;
            target.borrow_mut().splice(a..b, items);
            return Ok(());
        }
        let idx = pyfmt::slice_indices(len, lo, hi, step);
        if idx.len() != items.len() {
            return Err(self.err(
                "ValueError",
                format!(
                    "attempt to assign {what} of size {} to extended slice of size {}",
                    items.len(),
                    idx.len()
                ),
            ));
        }
        let mut target = target.borrow_mut();
        for (i, x) in idx.into_iter().zip(items) {
            target[i] = x;
        }
        Ok(())
    }
}

/// The result of a set operator: a `frozenset` when the left operand is one, as in
/// CPython (`frozenset | set` is a frozenset, `set | frozenset` a set).
fn set_like(a: &Value, s: Set) -> Value {
    let s = Rc::new(RefCell::new(s));
    match a {
        Value::FrozenSet(_) => Value::FrozenSet(s),
        _ => Value::Set(s),
    }
}

/// The contents of two bytes-like values (`bytes` or `bytearray`), for comparing them.
fn bytes_pair(a: &Value, b: &Value) -> Option<(Vec<u8>, Vec<u8>)> {
    let get = |v: &Value| match v {
        Value::Bytes(x) => Some(x.to_vec()),
        Value::ByteArray(x) => Some(x.borrow().clone()),
        _ => None,
    };
    Some((get(a)?, get(b)?))
}

/// How deep `==` and `<` descend into nested containers.
const MAX_COMPARE_DEPTH: usize = 1000;

/// Item `i` of a range starting at `a` with step `s` (`i` is in range, so the item fits).
fn range_item(a: i64, s: i64, i: usize) -> i64 {
    let v = i128::from(a) + i128::from(s) * i128::try_from(i).unwrap_or(0);
    i64::try_from(v).unwrap_or(a)
}

/// The number of items of `range(a, b, s)` (saturated at `i64::MAX`).
/// An object keyed by its class's `__hash__` (set by `hash_key`).
fn has_user_hash(v: &Value) -> bool {
    matches!(v, Value::Instance(i) if i.user_hash.get().is_some())
}

/// A lookup key that finds only itself (identity) and collects the other keys holding
/// the same user hash, for `==` to decide (`Interp::equal_key`).
struct KeyProbe<'a> {
    key: &'a HashKey,
    seen: RefCell<Vec<Value>>,
}

impl std::hash::Hash for KeyProbe<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl indexmap::Equivalent<HashKey> for KeyProbe<'_> {
    fn equivalent(&self, other: &HashKey) -> bool {
        if key_eq(&self.key.0, &other.0) {
            return true;
        }
        if let (Value::Instance(a), Value::Instance(b)) = (&self.key.0, &other.0)
            && a.user_hash.get().is_some()
            && a.user_hash.get() == b.user_hash.get()
        {
            self.seen.borrow_mut().push(other.0.clone());
        }
        false
    }
}

pub fn range_len(a: i64, b: i64, s: i64) -> i64 {
    let (a, b, s) = (i128::from(a), i128::from(b), i128::from(s));
    let n = if s > 0 && a < b {
        (b - a - 1) / s + 1
    } else if s < 0 && a > b {
        (a - b - 1) / (-s) + 1
    } else {
        0
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `is`: identity for reference values, value identity for small immutable ones.
pub fn is_same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => PyStr::ptr_eq(x, y) || x == y,
        (Value::Bytes(x), Value::Bytes(y)) => Rc::ptr_eq(x, y) || (x.is_empty() && y.is_empty()),
        (Value::Anchor(x), Value::Anchor(y)) => x == y,
        (Value::Builtin(x), Value::Builtin(y)) => x == y,
        _ => match (identity(a), identity(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

use super::builtins;

/// Items of a set in iteration order. Sets keep insertion order, except that a set of
/// numbers iterates in the order of CPython's hash table, which depends only on the
/// numbers' hashes and the order they went in (`cpython_set_order`); the order is
/// computed once and cached on the set until it changes.
pub fn set_items(s: &Set) -> Vec<Value> {
    if s.len() < 2 {
        return s.iter().map(|k| k.0.clone()).collect();
    }
    let order = s.order_with(|| {
        let hashes: Option<Vec<u64>> = s
            .iter()
            .map(|k| builtins::number_hash(&k.0).map(|h| h as u64))
            .collect();
        hashes.map(|h| Rc::from(cpython_set_order(&h).0))
    });
    match order {
        Some(order) => order
            .iter()
            .filter_map(|&i| s.get_index(i).map(|k| k.0.clone()))
            .collect(),
        None => s.iter().map(|k| k.0.clone()).collect(),
    }
}

/// The iteration order of a set display of constant numbers, whose items `s` holds in
/// the order CPython's `frozenset` constant was filled (`expr.rs::marshal_order`):
/// `BUILD_SET 0` then `SET_UPDATE` of that frozenset, which (from five items on) sizes
/// the new table for twice the items and, when that size is not the frozenset's,
/// reinserts the items in the frozenset's order (`set_merge`). Cached on `s`.
pub fn order_const_display(s: &mut Set) {
    let n = s.len();
    if n < 5 {
        return;
    }
    let Some(hashes) = s
        .iter()
        .map(|k| builtins::number_hash(&k.0).map(|h| h as u64))
        .collect::<Option<Vec<u64>>>()
    else {
        return;
    };
    let (frozen, frozen_size) = cpython_set_order(&hashes);
    let mut size = 8;
    while size <= n * 2 {
        size <<= 1;
    }
    let order = if size == frozen_size {
        frozen
    } else {
        let mut table: Vec<Option<usize>> = vec![None; size];
        for &i in &frozen {
            set_table_insert(&mut table, i, hashes[i]);
        }
        table.into_iter().flatten().collect()
    };
    s.set_order(Rc::from(order));
}

/// Put entry `idx` with this hash into CPython's set table (`set_insert_clean`): probe
/// 10 adjacent slots when they fit, then jump by `i * 5 + 1 + perturb`.
fn set_table_insert(table: &mut [Option<usize>], idx: usize, hash: u64) {
    const LINEAR_PROBES: usize = 9;
    let mask = table.len() - 1;
    let mut perturb = hash;
    let mut i = (hash as usize) & mask;
    loop {
        let probes = if i + LINEAR_PROBES <= mask {
            LINEAR_PROBES
        } else {
            0
        };
        if let Some(free) = table[i..=i + probes].iter_mut().find(|s| s.is_none()) {
            *free = Some(idx);
            return;
        }
        perturb >>= 5;
        i = i
            .wrapping_mul(5)
            .wrapping_add(1)
            .wrapping_add(perturb as usize)
            & mask;
    }
}

/// The slot order of CPython's set table (`Objects/setobject.c`) after adding
/// entries with these hashes in turn to an empty set, growing to 4x the size used once
/// the table is 3/5 full (reinserting in slot order), and the table's final size.
/// Returns indexes into `hashes`. (Deletions are not replayed: a set that lost items
/// iterates as if built from what is left.)
fn cpython_set_order(hashes: &[u64]) -> (Vec<usize>, usize) {
    let mut table: Vec<Option<usize>> = vec![None; 8];
    for (idx, &h) in hashes.iter().enumerate() {
        set_table_insert(&mut table, idx, h);
        let used = idx + 1;
        let mask = table.len() - 1;
        if used * 5 >= mask * 3 {
            let min_used = if used > 50_000 { used * 2 } else { used * 4 };
            let mut size = 8;
            while size <= min_used {
                size <<= 1;
            }
            let old = std::mem::replace(&mut table, vec![None; size]);
            for e in old.into_iter().flatten() {
                set_table_insert(&mut table, e, hashes[e]);
            }
        }
    }
    let size = table.len();
    (table.into_iter().flatten().collect(), size)
}

/// A class attribute read through an instance: a function there (what a method
/// decorator returned, or one assigned in a `class` body) binds the instance as its
/// first argument, as Python binds functions found on the class; anything else is
/// returned as it is.
fn bind_class_attr(recv: &Value, attr: Value) -> Value {
    match attr {
        Value::Func(f) if !f.is_static && !f.is_classmethod => {
            Value::Bound(Rc::new((recv.clone(), f)))
        }
        other => other,
    }
}

/// The value of a literal `None`, bool, int, float, str or bytes expression (a field
/// default jaclang keeps on the class), `None` for any other expression.
fn literal_value(e: &crate::ast::Expr) -> Option<Value> {
    use crate::ast::ExprKind as E;
    Some(match &e.kind {
        E::None => Value::None,
        E::Bool(b) => Value::Bool(*b),
        E::Int(i) => Value::Int(*i),
        E::BigInt(digits) => Value::BigInt(Rc::new(digits.parse().ok()?)),
        E::Float(f) => Value::Float(*f),
        E::Str(s) => Value::Str(PyStr::from(&**s)),
        E::Bytes(b) => Value::Bytes(b.clone()),
        _ => return None,
    })
}
