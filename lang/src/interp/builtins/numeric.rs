//! Numeric builtins (`abs`, `round`, `divmod`, `pow`, `hash`, `bin`/`hex`/`oct`, `ord`,
//! `chr`) and the methods of `int` and `float`.

use super::args::{Kwargs, bind, index_of, no_kwargs, one, tname};
use super::functions::user_dunder;
use crate::ast::BinOp;
use crate::interp::value::{PyStr, Value, identity};
use crate::interp::{Interp, Interrupt};
use crate::pyfmt;
use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{FromPrimitive, One, Signed, ToPrimitive, Zero};

type R<T> = Result<T, Interrupt>;

pub(super) const INT_METHODS: &[&str] = &[
    "bit_length",
    "bit_count",
    "conjugate",
    "is_integer",
    "as_integer_ratio",
    "to_bytes",
    "from_bytes",
];
pub(super) const FLOAT_METHODS: &[&str] = &[
    "is_integer",
    "conjugate",
    "as_integer_ratio",
    "hex",
    "fromhex",
];

/// An integer value as a `BigInt` (ints and bools).
pub(super) fn to_big(v: &Value) -> Option<BigInt> {
    match v {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Bool(b) => Some(BigInt::from(u8::from(*b))),
        Value::BigInt(b) => Some((**b).clone()),
        _ => None,
    }
}

fn is_int(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Bool(_) | Value::BigInt(_))
}

fn is_num(v: &Value) -> bool {
    is_int(v) || matches!(v, Value::Float(_))
}

/// Raise a message from `pyfmt` as the exception class CPython uses for it.
pub(super) fn pyfmt_err(it: &Interp, msg: String) -> Interrupt {
    let kind = match pyfmt::error_kind(&msg) {
        pyfmt::PyErrorKind::ValueError => "ValueError",
        pyfmt::PyErrorKind::TypeError => "TypeError",
        pyfmt::PyErrorKind::OverflowError => "OverflowError",
        pyfmt::PyErrorKind::MemoryError => "MemoryError",
    };
    it.err(kind, msg)
}

/// `int(x)` for a float: truncation, with CPython's errors for NaN and infinities.
pub(super) fn float_to_int(it: &Interp, x: f64) -> R<Value> {
    if let Some(i) = pyfmt::float_to_i64(x) {
        return Ok(Value::Int(i));
    }
    pyfmt::float_to_int_checked(x)
        .map(Value::from_bigint)
        .map_err(|m| pyfmt_err(it, m))
}

/// `abs(v)`.
pub(super) fn abs(it: &mut Interp, v: &Value) -> R<Value> {
    Ok(match v {
        Value::Int(i) => match i.checked_abs() {
            Some(a) => Value::Int(a),
            None => Value::from_bigint(-BigInt::from(*i)),
        },
        Value::Bool(b) => Value::Int(i64::from(*b)),
        Value::BigInt(b) => Value::from_bigint(b.abs()),
        Value::Float(x) => Value::Float(x.abs()),
        Value::Complex(re, im) => it.complex_abs(*re, *im)?,
        _ => {
            if let Some(r) = user_dunder(it, v, "__abs__", Vec::new()) {
                return r;
            }
            if let Some(r) = it.datetime_abs(v) {
                return r;
            }
            let t = tname(it, v);
            return Err(it.err("TypeError", format!("bad operand type for abs(): '{t}'")));
        }
    })
}

/// Round an integer to `10**(-ndigits)` with ties to even (ndigits < 0).
fn round_int(x: &BigInt, ndigits: i64) -> BigInt {
    if ndigits >= 0 {
        return x.clone();
    }
    let exp = ndigits.unsigned_abs();
    if exp > x.bits() / 3 + 2 {
        // 10**exp > 2*|x|: rounds to zero.
        return BigInt::zero();
    }
    let exp = u32::try_from(exp).unwrap_or(u32::MAX);
    let m = num_traits::pow(BigInt::from(10u8), exp as usize);
    let (q, r) = x.div_mod_floor(&m);
    let twice = &r * 2u8;
    let q = if twice > m || (twice == m && q.is_odd()) {
        q + 1u8
    } else {
        q
    };
    q * m
}

/// `round(number, ndigits=None)`.
pub(super) fn round(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let [x, nd] = bind(it, "round", args, kwargs, ["number", "ndigits"], 1)?;
    let x = x.unwrap_or(Value::None);
    let nd = match nd {
        None | Some(Value::None) => None,
        Some(n) => Some(index_of(it, &n)?),
    };
    match (&x, nd) {
        (Value::Float(f), None) => float_to_int(it, f.round_ties_even()),
        (Value::Float(f), Some(n)) => pyfmt::round_float(*f, n)
            .map(Value::Float)
            .map_err(|m| pyfmt_err(it, m)),
        (Value::Int(_) | Value::Bool(_) | Value::BigInt(_), n) => {
            let n = n.unwrap_or(0);
            match (&x, n >= 0) {
                (Value::Bool(b), true) => Ok(Value::Int(i64::from(*b))),
                (_, true) => Ok(x.clone()),
                _ => Ok(Value::from_bigint(round_int(
                    &to_big(&x).unwrap_or_default(),
                    n,
                ))),
            }
        }
        _ => {
            let extra = nd.map(|n| vec![Value::Int(n)]).unwrap_or_default();
            if let Some(r) = user_dunder(it, &x, "__round__", extra) {
                return r;
            }
            let t = tname(it, &x);
            Err(it.err(
                "TypeError",
                format!("type {t} doesn't define __round__ method"),
            ))
        }
    }
}

/// `divmod(a, b)`.
pub(super) fn divmod(it: &mut Interp, a: &Value, b: &Value) -> R<Value> {
    if !(is_num(a) && is_num(b)) {
        if let Some(r) = user_dunder(it, a, "__divmod__", vec![b.clone()]) {
            return r;
        }
        // `divmod(td1, td2)`: `timedelta.__divmod__`, its `//` and `%`.
        if Interp::stdlib_key(a) == Some("datetime.timedelta")
            && Interp::stdlib_key(b) == Some("datetime.timedelta")
        {
            let q = it.binary_op(BinOp::FloorDiv, a, b)?;
            let r = it.binary_op(BinOp::Mod, a, b)?;
            return Ok(Value::tuple(vec![q, r]));
        }
        let (ta, tb) = (tname(it, a), tname(it, b));
        return Err(it.err(
            "TypeError",
            format!("unsupported operand type(s) for divmod(): '{ta}' and '{tb}'"),
        ));
    }
    let zero = match b {
        Value::Int(0) | Value::Bool(false) => true,
        Value::Float(f) => *f == 0.0,
        _ => false,
    };
    if zero {
        let msg = if matches!(a, Value::Float(_)) || matches!(b, Value::Float(_)) {
            "float divmod()"
        } else {
            "integer division or modulo by zero"
        };
        return Err(it.err("ZeroDivisionError", msg));
    }
    let q = it.binary_op(BinOp::FloorDiv, a, b)?;
    let r = it.binary_op(BinOp::Mod, a, b)?;
    Ok(Value::tuple(vec![q, r]))
}

/// Three-argument `pow(base, exp, mod)`.
pub(super) fn pow_mod(it: &mut Interp, b: &Value, e: &Value, m: &Value) -> R<Value> {
    let (Some(b), Some(e), Some(m)) = (to_big(b), to_big(e), to_big(m)) else {
        return Err(it.err(
            "TypeError",
            "pow() 3rd argument not allowed unless all arguments are integers",
        ));
    };
    if m.is_zero() {
        return Err(it.err("ValueError", "pow() 3rd argument cannot be 0"));
    }
    let am = m.abs();
    let base = if e.is_negative() {
        match mod_inverse(&b.mod_floor(&am), &am) {
            Some(inv) => inv,
            None => {
                return Err(it.err("ValueError", "base is not invertible for the given modulus"));
            }
        }
    } else {
        b.mod_floor(&am)
    };
    let mut r = base.modpow(&e.abs(), &am);
    if m.is_negative() && !r.is_zero() {
        r -= &am;
    }
    Ok(Value::from_bigint(r))
}

fn mod_inverse(a: &BigInt, m: &BigInt) -> Option<BigInt> {
    let (mut old_r, mut r) = (a.clone(), m.clone());
    let (mut old_s, mut s) = (BigInt::one(), BigInt::zero());
    while !r.is_zero() {
        let q = &old_r / &r;
        let nr = &old_r - &q * &r;
        old_r = std::mem::replace(&mut r, nr);
        let ns = &old_s - &q * &s;
        old_s = std::mem::replace(&mut s, ns);
    }
    if old_r.is_one() {
        Some(old_s.mod_floor(m))
    } else {
        None
    }
}

/// `bin`, `hex`, `oct`.
pub(super) fn radix_str(it: &mut Interp, v: &Value, which: &str) -> R<Value> {
    if let Value::EnumMember(m) = v
        && crate::interp::decl_later::enum_value_type(&m.class) == Some("int")
    {
        return radix_str(it, &m.value.clone(), which);
    }
    let Some(n) = to_big(v) else {
        if let Some(r) = user_dunder(it, v, "__index__", Vec::new()) {
            let r = r?;
            if to_big(&r).is_none() {
                let t = tname(it, &r);
                return Err(it.err(
                    "TypeError",
                    format!("__index__ returned non-int (type {t})"),
                ));
            }
            return radix_str(it, &r, which);
        }
        let t = tname(it, v);
        return Err(it.err(
            "TypeError",
            format!("'{t}' object cannot be interpreted as an integer"),
        ));
    };
    let (radix, prefix) = match which {
        "bin" => (2u32, "0b"),
        "oct" => (8, "0o"),
        _ => (16, "0x"),
    };
    // One digit per 1, 3 or 4 bits, plus sign and prefix.
    let per_digit = u64::from(radix.trailing_zeros());
    let digits = usize::try_from(n.bits().div_ceil(per_digit)).unwrap_or(usize::MAX);
    it.check_str_len(digits.saturating_add(3))?;
    let digits = n.magnitude().to_str_radix(radix);
    let sign = if n.is_negative() { "-" } else { "" };
    Ok(Value::Str(PyStr::from(format!("{sign}{prefix}{digits}"))))
}

/// `ord(c)`.
pub(super) fn ord(it: &mut Interp, v: &Value) -> R<Value> {
    match v {
        Value::Str(s) => {
            let mut ch = s.chars();
            match (ch.next(), ch.next()) {
                (Some(c), None) => Ok(Value::Int(i64::from(u32::from(c)))),
                _ => {
                    let n = s.chars().count();
                    Err(it.err(
                        "TypeError",
                        format!("ord() expected a character, but string of length {n} found"),
                    ))
                }
            }
        }
        Value::ByteArray(b) => {
            let one = b.borrow().clone();
            ord(it, &Value::Bytes(std::rc::Rc::from(one)))
        }
        Value::Bytes(b) => match **b {
            [c] => Ok(Value::Int(i64::from(c))),
            _ => Err(it.err(
                "TypeError",
                format!(
                    "ord() expected a character, but string of length {} found",
                    b.len()
                ),
            )),
        },
        other => {
            let t = tname(it, other);
            Err(it.err(
                "TypeError",
                format!("ord() expected string of length 1, but {t} found"),
            ))
        }
    }
}

/// `chr(i)`.
pub(super) fn chr(it: &mut Interp, v: &Value) -> R<Value> {
    let i = match v {
        Value::BigInt(_) => {
            return Err(it.err("OverflowError", "Python int too large to convert to C int"));
        }
        _ => index_of(it, v)?,
    };
    if !(0..=0x10FFFF).contains(&i) {
        return Err(it.err("ValueError", "chr() arg not in range(0x110000)"));
    }
    let c = u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}');
    Ok(Value::Str(PyStr::from(c.encode_utf8(&mut [0; 4]) as &str)))
}

const HASH_BITS: u32 = 61;
const HASH_MOD: u64 = (1 << HASH_BITS) - 1;
const HASH_INF: i64 = 314_159;

fn fix_hash(h: i64) -> i64 {
    if h == -1 { -2 } else { h }
}

fn hash_bigint(b: &BigInt) -> i64 {
    let m = BigInt::from(HASH_MOD);
    let r = b.abs().mod_floor(&m).to_i64().unwrap_or(0);
    fix_hash(if b.is_negative() { -r } else { r })
}

fn hash_int(i: i64) -> i64 {
    let m = i128::from(HASH_MOD);
    let a = i128::from(i).abs() % m;
    let r = if i < 0 { -a } else { a };
    fix_hash(i64::try_from(r).unwrap_or(0))
}

/// `frexp`: `x = m * 2**e` with `0.5 <= |m| < 1` (finite, non-zero `x`).
fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale up first.
        let (m, e) = frexp(x * f64::from_bits(0x43f0_0000_0000_0000)); // 2**64
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022)
}

/// CPython's `_Py_HashDouble` (NaN hashes to 0 here: CPython uses its identity).
fn hash_float(v: f64) -> i64 {
    if v.is_nan() {
        return 0;
    }
    if v.is_infinite() {
        return if v > 0.0 { HASH_INF } else { -HASH_INF };
    }
    if v.fract() == 0.0 {
        return match BigInt::from_f64(v) {
            Some(b) => hash_bigint(&b),
            None => 0,
        };
    }
    let (mut m, mut e) = frexp(v);
    let mut sign: i64 = 1;
    if m < 0.0 {
        sign = -1;
        m = -m;
    }
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & HASH_MOD) | (x >> (HASH_BITS - 28));
        m *= 268_435_456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= HASH_MOD {
            x -= HASH_MOD;
        }
    }
    let bits = HASH_BITS as i32;
    let e = if e >= 0 {
        e % bits
    } else {
        bits - 1 - ((-1 - e) % bits)
    };
    let e = e as u32;
    x = ((x << e) & HASH_MOD) | (x >> (HASH_BITS - e));
    fix_hash((x as i64).wrapping_mul(sign))
}

/// CPython's hash of a number (`bool`, `int`, a float other than NaN); `None` for
/// any other value.
pub(crate) fn number_hash(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Int(i) => Some(hash_int(*i)),
        Value::BigInt(b) => Some(hash_bigint(b)),
        Value::Float(f) if !f.is_nan() => Some(hash_float(*f)),
        _ => None,
    }
}

/// Python `hash(v)`: CPython's values for numbers and tuples; strings hash
/// deterministically (CPython randomises them per process).
pub(super) fn py_hash(it: &mut Interp, v: &Value) -> R<i64> {
    Ok(match v {
        Value::None => 0xFCA8_6420,
        Value::Bool(b) => i64::from(*b),
        Value::Int(i) => hash_int(*i),
        Value::BigInt(b) => hash_bigint(b),
        Value::Float(f) => hash_float(*f),
        // CPython's: hash(real) + 1000003 * hash(imag), wrapping, -1 made -2.
        Value::Complex(re, im) => {
            let h = (hash_float(*re) as u64)
                .wrapping_add((hash_float(*im) as u64).wrapping_mul(1_000_003));
            fix_hash(h as i64)
        }
        Value::Str(s) => {
            use std::hash::{Hash, Hasher};
            let mut h = crate::interp::value::FxHasher::default();
            s.hash(&mut h);
            fix_hash((h.finish() >> 1) as i64)
        }
        Value::Bytes(b) => {
            use std::hash::{Hash, Hasher};
            let mut h = crate::interp::value::FxHasher::default();
            b.hash(&mut h);
            fix_hash((h.finish() >> 1) as i64)
        }
        // CPython's `frozenset_hash`: each item's hash shuffled and xored (so order
        // does not matter), then mixed with the size.
        Value::FrozenSet(s) => {
            let items: Vec<Value> = s.borrow().iter().map(|k| k.0.clone()).collect();
            let shuffle = |h: u64| ((h ^ 89_869_747) ^ (h << 16)).wrapping_mul(3_644_798_167);
            let mut acc: u64 = 0;
            for item in &items {
                acc ^= shuffle(py_hash(it, item)? as u64);
            }
            acc ^= (items.len() as u64 + 1).wrapping_mul(1_927_868_237);
            acc ^= (acc >> 11) ^ (acc >> 25);
            acc = acc.wrapping_mul(69_069).wrapping_add(907_133_923);
            if acc == u64::MAX {
                590_923_713
            } else {
                acc as i64
            }
        }
        Value::Tuple(items) => {
            // Nesting bounded (and unhashable members refused) before recursing.
            it.hash_key(v)?;
            const P1: u64 = 11_400_714_785_074_694_791;
            const P2: u64 = 14_029_467_366_897_019_727;
            const P5: u64 = 2_870_177_450_012_600_261;
            let mut acc: u64 = P5;
            for item in items.iter() {
                let lane = py_hash(it, item)? as u64;
                acc = acc.wrapping_add(lane.wrapping_mul(P2));
                acc = acc.rotate_left(31);
                acc = acc.wrapping_mul(P1);
            }
            acc = acc.wrapping_add((items.len() as u64) ^ (P5 ^ 3_527_539));
            if acc == u64::MAX {
                1_546_275_796
            } else {
                acc as i64
            }
        }
        Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::ByteArray(_) => {
            let t = tname(it, v);
            return Err(it.err("TypeError", format!("unhashable type: '{t}'")));
        }
        // A typed enum's member hashes as its value (it is the same dict key).
        Value::EnumMember(m) if crate::interp::decl_later::enum_value_type(&m.class).is_some() => {
            py_hash(it, &m.value.clone())?
        }
        Value::EnumMember(m) => {
            use std::hash::{Hash, Hasher};
            let mut h = crate::interp::value::FxHasher::default();
            m.name.hash(&mut h);
            fix_hash((h.finish() >> 1) as i64)
        }
        // `datetime`, `timedelta`, `UUID` ...: by value, as they are dict keys.
        Value::Instance(i) if crate::interp::stdlib::hashes_by_value(&i.class) => {
            use std::hash::{Hash, Hasher};
            let mut h = crate::interp::value::FxHasher::default();
            it.hash_key(v)?.hash(&mut h);
            fix_hash((h.finish() >> 1) as i64)
        }
        Value::Instance(_) | Value::Anchor(_) => {
            if let Some(r) = user_dunder(it, v, "__hash__", Vec::new()) {
                return match r? {
                    Value::Int(i) => Ok(fix_hash(i)),
                    Value::BigInt(b) => Ok(hash_bigint(&b)),
                    _ => Err(it.err("TypeError", "__hash__ method should return an integer")),
                };
            }
            it.hash_key(v)?;
            if let Value::Anchor(h) = v {
                (*h as i64) >> 1
            } else {
                py_id(v) >> 4
            }
        }
        other => {
            it.hash_key(other)?;
            py_id(other) >> 4
        }
    })
}

/// `id(v)`: the identity of reference values, a stable number for the others.
pub(crate) fn py_id(v: &Value) -> i64 {
    match identity(v) {
        Some(p) => p as i64,
        None => {
            use std::hash::{Hash, Hasher};
            let mut h = crate::interp::value::FxHasher::default();
            crate::interp::value::HashKey(v.clone()).hash(&mut h);
            (h.finish() >> 2) as i64
        }
    }
}

/// Methods of `int` and `float` values.
pub(super) fn call_method(
    it: &mut Interp,
    recv: &Value,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let is_float = matches!(recv, Value::Float(_));
    let known = if is_float { FLOAT_METHODS } else { INT_METHODS };
    if !known.contains(&name) {
        return Ok(None);
    }
    if is_float && name == "fromhex" {
        // A class method: the receiver only names the class.
        return float_fromhex(it, args, kwargs).map(Some);
    }
    match name {
        "to_bytes" => return super::bytes::int_to_bytes(it, recv, args, kwargs).map(Some),
        // A class method: the receiver only names the class.
        "from_bytes" => return super::bytes::int_from_bytes(it, args, kwargs).map(Some),
        _ => {}
    }
    let tn = if is_float { "float" } else { "int" };
    no_kwargs(it, &format!("{tn}.{name}"), &kwargs)?;
    if !args.is_empty() {
        return Err(it.err(
            "TypeError",
            format!("{tn}.{name}() takes no arguments ({} given)", args.len()),
        ));
    }
    let v = match (recv, name) {
        (Value::Float(f), "is_integer") => Value::Bool(f.is_finite() && f.fract() == 0.0),
        (Value::Float(f), "conjugate") => Value::Float(*f),
        (Value::Float(f), "as_integer_ratio") => float_ratio(it, *f)?,
        (Value::Float(f), "hex") => Value::Str(PyStr::from(float_hex(*f))),
        (_, "is_integer") => Value::Bool(true),
        (Value::Bool(b), "conjugate") => Value::Int(i64::from(*b)),
        (_, "conjugate") => recv.clone(),
        (_, "bit_length") => {
            let n = to_big(recv).unwrap_or_default();
            Value::Int(i64::try_from(n.bits()).unwrap_or(i64::MAX))
        }
        (_, "bit_count") => {
            let n = to_big(recv).unwrap_or_default();
            let ones: u64 = n
                .magnitude()
                .iter_u64_digits()
                .map(|d| u64::from(d.count_ones()))
                .sum();
            Value::Int(i64::try_from(ones).unwrap_or(i64::MAX))
        }
        (_, "as_integer_ratio") => {
            let n = match recv {
                Value::Bool(b) => Value::Int(i64::from(*b)),
                other => other.clone(),
            };
            Value::tuple(vec![n, Value::Int(1)])
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `float.as_integer_ratio()`: the exact value as the smallest `(numerator,
/// denominator)` with a positive denominator.
fn float_ratio(it: &Interp, f: f64) -> R<Value> {
    if f.is_nan() {
        return Err(it.err("ValueError", "cannot convert NaN to integer ratio"));
    }
    if f.is_infinite() {
        return Err(it.err("OverflowError", "cannot convert Infinity to integer ratio"));
    }
    let (mant, exp) = float_parts(f);
    if mant == 0 {
        return Ok(Value::tuple(vec![Value::Int(0), Value::Int(1)]));
    }
    let tz = mant.trailing_zeros();
    let (mant, exp) = (mant >> tz, exp + i64::from(tz));
    let mut num = BigInt::from(mant);
    if f < 0.0 {
        num = -num;
    }
    // A finite double's exponent is within [-1074, 971]: both shifts are small.
    let shift = usize::try_from(exp.unsigned_abs()).unwrap_or(0);
    let (num, den) = if exp >= 0 {
        (num << shift, BigInt::one())
    } else {
        (num, BigInt::one() << shift)
    };
    Ok(Value::tuple(vec![
        Value::from_bigint(num),
        Value::from_bigint(den),
    ]))
}

/// A finite double's magnitude as `mantissa * 2**exponent` (the hidden bit included
/// for normal numbers; subnormals keep exponent -1074).
fn float_parts(f: f64) -> (u64, i64) {
    let bits = f.to_bits();
    let biased = i64::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let frac = bits & ((1u64 << 52) - 1);
    if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    }
}

/// `float.hex()`: `[-]0x1.<13 hex digits>p<+|-><exponent>` (a leading `0.` and
/// exponent -1022 for subnormals), `0x0.0p+0` for zero, `inf`/`nan` as `repr` gives.
fn float_hex(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0x0.0p+0");
    }
    let bits = f.to_bits();
    let biased = (bits >> 52) & 0x7ff;
    let frac = bits & ((1u64 << 52) - 1);
    let (lead, exp) = if biased == 0 {
        (0, -1022)
    } else {
        (1, i64::try_from(biased).unwrap_or(0) - 1023)
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}0x{lead}.{frac:013x}p{esign}{}", exp.unsigned_abs())
}

/// `float.fromhex(s)` with CPython's grammar (surrounding whitespace, a sign, `inf`,
/// `infinity` or `nan`, or hex digits with an optional `0x`, point and `p` exponent)
/// and its correctly rounded result (halfway cases to even, subnormals included).
pub(super) fn float_fromhex(it: &Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    let v = one(it, "float.fromhex", args, &kwargs)?;
    let Value::Str(s) = &v else {
        return Err(it.err("TypeError", "bad argument type for built-in operation"));
    };
    match parse_hex_float(s.trim_matches(|c: char| c.is_ascii_whitespace())) {
        Ok(f) => Ok(Value::Float(f)),
        Err(HexFloatError::Invalid) => {
            Err(it.err("ValueError", "invalid hexadecimal floating-point string"))
        }
        Err(HexFloatError::Overflow) => Err(it.err(
            "OverflowError",
            "hexadecimal value too large to represent as a float",
        )),
    }
}

#[derive(Debug, PartialEq)]
enum HexFloatError {
    Invalid,
    Overflow,
}

fn parse_hex_float(s: &str) -> Result<f64, HexFloatError> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let signed = |f: f64| if neg { -f } else { f };
    let lower = rest.to_ascii_lowercase();
    match lower.as_str() {
        "inf" | "infinity" => return Ok(signed(f64::INFINITY)),
        "nan" => return Ok(f64::NAN),
        _ => {}
    }
    let body = lower.strip_prefix("0x").unwrap_or(&lower);
    let (mant, exp_part) = match body.split_once('p') {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let (int_digits, frac_digits) = match mant.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mant, ""),
    };
    let all_hex = |d: &str| d.bytes().all(|b| b.is_ascii_hexdigit());
    if int_digits.len() + frac_digits.len() == 0 || !all_hex(int_digits) || !all_hex(frac_digits) {
        return Err(HexFloatError::Invalid);
    }
    // The exponent saturates: beyond any double's range either way it only decides
    // between overflow and zero.
    let mut exp: i64 = 0;
    if let Some(e) = exp_part {
        let (eneg, digits) = match e.as_bytes().first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HexFloatError::Invalid);
        }
        for b in digits.bytes() {
            exp = exp.saturating_mul(10).saturating_add(i64::from(b - b'0'));
        }
        if eneg {
            exp = -exp;
        }
    }
    let digits = format!("{int_digits}{frac_digits}");
    let n = BigInt::parse_bytes(digits.as_bytes(), 16).unwrap_or_default();
    if n.is_zero() {
        return Ok(signed(0.0));
    }
    let frac_bits = i64::try_from(frac_digits.len())
        .unwrap_or(i64::MAX)
        .saturating_mul(4);
    // value = n * 2**e2; n has `bits` significant bits.
    let e2 = exp.saturating_sub(frac_bits);
    let bits = i64::try_from(n.bits()).unwrap_or(i64::MAX);
    let top = e2.saturating_add(bits); // value < 2**top
    if top > 1024 {
        return Err(HexFloatError::Overflow);
    }
    // The unit of the last place of the result: 53 significant bits, never below the
    // smallest subnormal's 2**-1074.
    let lsb = top.saturating_sub(53).max(-1074);
    let mant = if lsb <= e2 {
        // Exact: fewer than 53 bits, shifted into place (at most 53 + 1074 bits).
        n << usize::try_from(e2 - lsb).unwrap_or(0)
    } else {
        let shift = lsb.saturating_sub(e2);
        if shift > bits + 1 {
            BigInt::zero()
        } else {
            let shift = usize::try_from(shift).unwrap_or(0);
            let q = &n >> shift;
            let rem = &n - (&q << shift);
            let half = BigInt::one() << (shift - 1);
            if rem > half || (rem == half && q.is_odd()) {
                q + 1
            } else {
                q
            }
        }
    };
    let m = mant.to_u64().unwrap_or(u64::MAX);
    // Rounding up may carry into a 54th bit; that is still exact as a double.
    if i64::from(64 - m.leading_zeros()) + lsb > 1024 {
        return Err(HexFloatError::Overflow);
    }
    let lsb = i32::try_from(lsb).unwrap_or(0);
    Ok(signed(libm::scalbn(m as f64, lsb)))
}
