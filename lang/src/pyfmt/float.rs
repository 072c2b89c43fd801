//! Floats with CPython semantics: `repr`, the digit layout behind `format`/`%`, `round`,
//! `float(str)`, floor division and modulo, and conversions to and from `int`.
//!
//! Decimal digits come from Rust's float formatting, which is exact (shortest round-trip for
//! `{:e}`, correctly rounded half-to-even for explicit precisions) like CPython's `dtoa.c`; the
//! layout is a port of CPython's `format_float_short` (Python/pystrtod.c).

use std::fmt::{self, Write as _};

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use super::int::u64_digits;
use super::unicode;

/// A fixed-capacity ASCII buffer on the stack, used to avoid allocating in `float_repr`.
pub(crate) struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl StackBuf {
    pub(crate) fn new() -> StackBuf {
        StackBuf {
            buf: [0; 64],
            len: 0,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    pub(crate) fn push(&mut self, b: u8) -> bool {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Splits Rust `{:e}` output (`d[.ddd]e[-]x`, no sign) into mantissa digits and the
/// position of the decimal point (`value = 0.DIGITS * 10**decpt`), like `_Py_dg_dtoa`:
/// trailing zeros are dropped and zero is `"0"` with `decpt == 1`.
fn split_sci(text: &[u8], digits: &mut Vec<u8>) -> i32 {
    let mut exp: i32 = 0;
    let mut exp_neg = false;
    let mut in_exp = false;
    for &b in text {
        match b {
            b'e' | b'E' => in_exp = true,
            b'-' if in_exp => exp_neg = true,
            b'0'..=b'9' if in_exp => {
                exp = exp.saturating_mul(10).saturating_add(i32::from(b - b'0'));
            }
            b'0'..=b'9' => digits.push(b),
            _ => {}
        }
    }
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.iter().all(|&d| d == b'0') {
        digits.clear();
        digits.push(b'0');
        return 1;
    }
    (if exp_neg { -exp } else { exp }) + 1
}

/// Shortest round-trip digits of a finite `x >= 0` (dtoa mode 0) into a stack buffer.
fn shortest_digits(x: f64, digits: &mut StackBuf) -> i32 {
    let mut text = StackBuf::new();
    if write!(text, "{x:e}").is_err() {
        // Cannot happen (the longest output is 23 bytes); fall back to the heap.
        let mut v = Vec::new();
        let decpt = split_sci(format!("{x:e}").as_bytes(), &mut v);
        for b in v {
            digits.push(b);
        }
        return decpt;
    }
    let mut exp: i32 = 0;
    let mut exp_neg = false;
    let mut in_exp = false;
    for &b in text.as_bytes() {
        match b {
            b'e' => in_exp = true,
            b'-' if in_exp => exp_neg = true,
            b'0'..=b'9' if in_exp => exp = exp * 10 + i32::from(b - b'0'),
            b'0'..=b'9' => {
                digits.push(b);
            }
            _ => {}
        }
    }
    if x == 0.0 {
        return 1;
    }
    let decpt = (if exp_neg { -exp } else { exp }) + 1;
    // When `x` lies exactly halfway between two shortest candidates, Rust's shortest
    // formatter rounds the last digit up while dtoa picks the closest with ties to even. A
    // tie needs `x * 10**q` (q = digits after the point) to end in exactly one binary 1/2.
    let n = digits.as_bytes().len();
    let q = n as i32 - decpt;
    let (mant, e2) = decompose(x);
    if mant.trailing_zeros() as i32 + e2 + q == -1 {
        let mut even = StackBuf::new();
        if write!(even, "{:.*e}", n.saturating_sub(1), x).is_ok()
            && std::str::from_utf8(even.as_bytes())
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                == Some(x)
        {
            let mut v = Vec::new();
            let d2 = split_sci(even.as_bytes(), &mut v);
            if v.len() <= n {
                *digits = StackBuf::new();
                for b in v {
                    digits.push(b);
                }
                return d2;
            }
        }
    }
    decpt
}

/// `n >= 1` correctly rounded significant digits of a finite `x >= 0` (dtoa mode 2).
fn significant_digits(x: f64, n: usize, digits: &mut Vec<u8>) -> i32 {
    let text = format!("{:.*e}", n.saturating_sub(1), x);
    split_sci(text.as_bytes(), digits)
}

fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

fn push_zeros(out: &mut String, n: i64) {
    for _ in 0..n.max(0) {
        out.push('0');
    }
}

/// Port of CPython's `format_float_short` layout for the codes `e`, `g` and `r`, given
/// the digit string and decimal point position of `|x|`.
#[allow(clippy::too_many_arguments)]
fn layout(
    out: &mut String,
    digits: &[u8],
    decpt: i32,
    code: u8,
    precision: i64,
    alt: bool,
    add_dot_0: bool,
    upper: bool,
) {
    let digits_len = digits.len() as i64;
    let mut decpt = i64::from(decpt);
    let mut use_exp = false;
    let mut exp = 0i64;
    let mut vdigits_end = digits_len;
    match code {
        b'e' => {
            use_exp = true;
            vdigits_end = precision;
        }
        b'g' => {
            let limit = if add_dot_0 { precision - 1 } else { precision };
            if decpt <= -4 || decpt > limit {
                use_exp = true;
            }
            if alt {
                vdigits_end = precision;
            }
        }
        _ => {
            if decpt <= -4 || decpt > 16 {
                use_exp = true;
            }
        }
    }
    if use_exp {
        exp = decpt - 1;
        decpt = 1;
    }
    let vdigits_start = if decpt <= 0 { decpt - 1 } else { 0 };
    vdigits_end = if !use_exp && add_dot_0 {
        vdigits_end.max(decpt + 1)
    } else {
        vdigits_end.max(decpt)
    };
    let start = out.len();
    if decpt <= 0 {
        push_zeros(out, decpt - vdigits_start);
        out.push('.');
        push_zeros(out, -decpt);
    } else {
        push_zeros(out, -vdigits_start);
    }
    if 0 < decpt && decpt <= digits_len {
        let (head, tail) = digits.split_at(decpt as usize);
        out.push_str(ascii(head));
        out.push('.');
        out.push_str(ascii(tail));
    } else {
        out.push_str(ascii(digits));
    }
    if digits_len < decpt {
        push_zeros(out, decpt - digits_len);
        out.push('.');
        push_zeros(out, vdigits_end - decpt);
    } else {
        push_zeros(out, vdigits_end - digits_len);
    }
    if out.len() > start && out.ends_with('.') && !alt {
        out.pop();
    }
    if use_exp {
        out.push(if upper { 'E' } else { 'e' });
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        let _ = write!(out, "{e}");
    }
}

/// Appends CPython's `repr(x)` (also `str(x)`) of a float.
pub fn push_float_repr(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-inf" } else { "inf" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let ax = x.abs();
    if ax < 1e16 && x.trunc() == x {
        // Integral and below the exponent threshold: exactly the integer plus ".0".
        if x < 0.0 {
            out.push('-');
        }
        let mut buf = [0u8; 64];
        out.push_str(ascii(u64_digits(&mut buf, ax as u64, 10, false)));
        out.push_str(".0");
        return;
    }
    let mut digits = StackBuf::new();
    let decpt = shortest_digits(ax, &mut digits);
    if x < 0.0 {
        out.push('-');
    }
    layout(out, digits.as_bytes(), decpt, b'r', 0, false, true, false);
}

/// CPython's `repr(x)` / `str(x)` of a float: `1.0`, `0.1`, `1e-06`, `1e+16`, `inf`, `nan`.
pub fn float_repr(x: f64) -> String {
    let mut s = String::with_capacity(24);
    push_float_repr(&mut s, x);
    s
}

/// Port of `PyOS_double_to_string(x, code, precision, flags)` for the codes
/// `e E f F g G r` (`r` ignores `precision`). `alt` is `Py_DTSF_ALT`, `add_dot_0` is
/// `Py_DTSF_ADD_DOT_0` and `no_neg_0` is `Py_DTSF_NO_NEG_0`. A negative value gets a
/// leading `-` (also `-0.0`); NaN never does.
pub(crate) fn push_double(
    out: &mut String,
    x: f64,
    code: char,
    precision: i64,
    alt: bool,
    add_dot_0: bool,
    no_neg_0: bool,
) {
    let upper = code.is_ascii_uppercase();
    if x.is_nan() {
        out.push_str(if upper { "NAN" } else { "nan" });
        return;
    }
    let neg = x.is_sign_negative();
    if x.is_infinite() {
        if neg {
            out.push('-');
        }
        out.push_str(if upper { "INF" } else { "inf" });
        return;
    }
    let start = out.len();
    if neg {
        out.push('-');
    }
    let ax = x.abs();
    let precision = precision.max(0);
    match code.to_ascii_lowercase() {
        'f' => {
            let p = usize::try_from(precision).unwrap_or(usize::MAX);
            let _ = write!(out, "{ax:.p$}");
            if alt && p == 0 {
                out.push('.');
            }
        }
        'e' => {
            let mut digits = Vec::new();
            let n = usize::try_from(precision)
                .unwrap_or(usize::MAX)
                .saturating_add(1);
            let decpt = significant_digits(ax, n, &mut digits);
            layout(
                out,
                &digits,
                decpt,
                b'e',
                precision + 1,
                alt,
                add_dot_0,
                upper,
            );
        }
        'g' => {
            let precision = precision.max(1);
            let mut digits = Vec::new();
            let n = usize::try_from(precision).unwrap_or(usize::MAX);
            let decpt = significant_digits(ax, n, &mut digits);
            layout(out, &digits, decpt, b'g', precision, alt, add_dot_0, upper);
        }
        _ => {
            let mut digits = StackBuf::new();
            let decpt = shortest_digits(ax, &mut digits);
            layout(
                out,
                digits.as_bytes(),
                decpt,
                b'r',
                0,
                alt,
                add_dot_0,
                upper,
            );
        }
    }
    if neg && no_neg_0 {
        let body = out.get(start + 1..).unwrap_or("");
        let mantissa = body.split(['e', 'E']).next().unwrap_or("");
        if mantissa.bytes().all(|b| b == b'0' || b == b'.') {
            out.remove(start);
        }
    }
}

const NDIGITS_MAX: i64 = 323;
const NDIGITS_MIN: i64 = -308;

/// Python's `round(x, ndigits)` for a float: correctly rounded (half to even on the exact
/// binary value) via a decimal string, as CPython's `double_round`. Errors with
/// `"rounded value too large to represent"` (OverflowError) when the result overflows.
pub fn round_float(x: f64, ndigits: i64) -> Result<f64, String> {
    if !x.is_finite() || ndigits > NDIGITS_MAX {
        return Ok(x);
    }
    if ndigits < NDIGITS_MIN {
        return Ok(0.0 * x);
    }
    let rounded = if ndigits >= 0 {
        let text = format!("{:.*}", ndigits as usize, x);
        text.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        round_to_power_of_ten(x, ndigits.unsigned_abs() as u32)
    };
    if rounded.is_infinite() {
        return Err("rounded value too large to represent".to_string());
    }
    Ok(rounded)
}

/// Rounds finite `x` to a multiple of `10**m` (half to even on the exact value).
fn round_to_power_of_ten(x: f64, m: u32) -> f64 {
    let (mant, exp) = decompose(x.abs());
    let pow10 = BigInt::from(10u32).pow(m);
    let (num, den) = if exp >= 0 {
        (BigInt::from(mant) << exp as usize, pow10)
    } else {
        (BigInt::from(mant), pow10 << (-exp) as usize)
    };
    let mut q = &num / &den;
    let r2: BigInt = (&num - &q * &den) * 2u32;
    if r2 > den || (r2 == den && (&q % 2u32) == BigInt::from(1u32)) {
        q += 1u32;
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let text = format!("{sign}{q}e{m}");
    text.parse::<f64>().unwrap_or(f64::NAN)
}

/// `round(x, ndigits)` returning a float; an overflowing result becomes `±inf` (CPython raises
/// OverflowError there: use [`round_float`] to see it).
pub fn round_half_even(x: f64, ndigits: i64) -> f64 {
    match round_float(x, ndigits) {
        Ok(v) => v,
        Err(_) => f64::INFINITY.copysign(x),
    }
}

/// Python's one-argument `round(x)`: the nearest integer, ties to even. Errors as CPython:
/// `cannot convert float NaN to integer` (ValueError) and `cannot convert float infinity to
/// integer` (OverflowError).
pub fn round_to_int(x: f64) -> Result<BigInt, String> {
    float_to_int_checked(x.round_ties_even())
}

/// `(mantissa, exponent)` with `x == mantissa * 2**exponent` for finite `x >= 0`.
fn decompose(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    }
}

/// `int(x)` for a float: truncation toward zero; `None` for NaN and infinities.
pub fn float_to_int(x: f64) -> Option<BigInt> {
    if !x.is_finite() {
        return None;
    }
    let t = x.trunc();
    if t.abs() < 9.2e18 {
        return Some(BigInt::from(t as i64));
    }
    let (mant, exp) = decompose(t.abs());
    let mag = if exp >= 0 {
        BigInt::from(mant) << exp as usize
    } else {
        BigInt::from(mant >> (-exp) as u32)
    };
    Some(if t < 0.0 { -mag } else { mag })
}

/// `int(x)` with CPython's error messages for NaN (ValueError) and infinities (OverflowError).
pub fn float_to_int_checked(x: f64) -> Result<BigInt, String> {
    if x.is_nan() {
        return Err("cannot convert float NaN to integer".to_string());
    }
    float_to_int(x).ok_or_else(|| "cannot convert float infinity to integer".to_string())
}

/// `int(x)` when the result fits an `i64` (fast path for the interpreter).
pub fn float_to_i64(x: f64) -> Option<i64> {
    let t = x.trunc();
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if t.is_finite() && (-TWO_63..TWO_63).contains(&t) {
        Some(t as i64)
    } else {
        None
    }
}

/// `float(v)` for an int, correctly rounded (half to even) like CPython; `None` when the
/// value is too large ("int too large to convert to float", OverflowError).
pub fn int_to_float(v: &BigInt) -> Option<f64> {
    if let Some(i) = v.to_i64() {
        return Some(i as f64);
    }
    let mag = v.magnitude();
    let bits = mag.bits();
    if bits > 1024 {
        return None;
    }
    let shift = bits.saturating_sub(64);
    let top = (mag >> shift as usize).to_u64().unwrap_or(u64::MAX);
    // Bits below the top 64 only matter as a "sticky" bit for round-half-even.
    let sticky = mag.trailing_zeros().is_some_and(|tz| tz < shift);
    let top = if sticky { top | 1 } else { top };
    let scale = f64::from_bits((1023 + shift) << 52);
    let f = top as f64 * scale;
    if f.is_infinite() {
        return None;
    }
    Some(if v.sign() == num_bigint::Sign::Minus {
        -f
    } else {
        f
    })
}

/// Python `a / b` for ints (CPython's `long_true_divide`): the exact quotient rounded
/// once to the nearest float, half to even, subnormal results included, so `10**40 / 3`
/// and `(2**64 + 1) / 2` are not the quotient of two already rounded floats. `None` when
/// the result is too large for a float; the caller rejects `b == 0`. Cost: one division
/// of `a` or `b` shifted by at most 1,076 bits (a result outside the float range is known
/// from the bit lengths alone).
pub fn int_true_div(a: &BigInt, b: &BigInt) -> Option<f64> {
    use num_integer::Integer;
    use num_traits::Zero;
    let negative = (a.sign() == num_bigint::Sign::Minus) != (b.sign() == num_bigint::Sign::Minus);
    let sign = |x: f64| if negative { -x } else { x };
    let (n, d) = (a.magnitude(), b.magnitude());
    if n.bits() <= 53 && d.bits() <= 53 {
        // Both are exact floats, and IEEE division rounds their quotient once.
        return Some(sign(n.to_u64()? as f64 / d.to_u64()? as f64));
    }
    if n.is_zero() {
        return Some(sign(0.0));
    }
    // The quotient lies in [2**(e-1), 2**(e+1)).
    let e = i64::try_from(n.bits()).ok()? - i64::try_from(d.bits()).ok()?;
    if e > 1025 {
        return None;
    }
    // q = floor(n * 2**s / d) keeps at least 55 bits, or for a quotient below the normal
    // range every bit down to two places under 2**-1074 (then rounding sees them all).
    let s = (55 - e).min(1076);
    let (num, den) = if s >= 0 {
        (n << s.unsigned_abs(), d.clone())
    } else {
        (n.clone(), d << s.unsigned_abs())
    };
    let (mut q, r) = num.div_rem(&den);
    if !r.is_zero() {
        // A sticky bit below the rounding position: the quotient is not exact.
        q |= num_bigint::BigUint::from(1u8);
    }
    // Round away the bits under the 53 kept (or under 2**-1074): k >= 2 by the choice
    // of s, so the sticky bit is never the half bit.
    let k = (i64::try_from(q.bits()).ok()? - 53).max(s - 1074);
    let k = u64::try_from(k).ok()?;
    let low = &q & ((num_bigint::BigUint::from(1u8) << k) - 1u8);
    let half = num_bigint::BigUint::from(1u8) << (k - 1);
    let mut m = (&q >> k).to_u64()?;
    if low > half || (low == half && m % 2 == 1) {
        m += 1;
    }
    // m <= 2**53 is exact, and so is the scaling: the rounding above already left only
    // bits the result can hold.
    let f = libm::ldexp(m as f64, i32::try_from(i64::try_from(k).ok()? - s).ok()?);
    if f.is_infinite() {
        return None;
    }
    Some(sign(f))
}

/// How an int compares with a float, exactly, as CPython compares them (neither side is
/// rounded: `2**53 + 1 > 2.0**53`, `10**400 < math.inf`); `None` when `f` is NaN.
pub fn int_float_cmp(i: &BigInt, f: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let floor = f.floor();
    // i < floor(f) <= f, or i >= floor(f) + 1 > f, or i == floor(f) <= f.
    match i.cmp(&float_to_int(floor)?) {
        Ordering::Equal if f > floor => Some(Ordering::Less),
        o => Some(o),
    }
}

/// Python `a // b` for floats (`divmod` semantics: the quotient is floored). The caller
/// rejects `b == 0` (ZeroDivisionError).
pub fn float_floordiv(a: f64, b: f64) -> f64 {
    float_divmod(a, b).0
}

/// Python `a % b` for floats: the result has the sign of `b`. The caller rejects `b == 0`.
pub fn float_mod(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) { m + b } else { m }
    } else {
        0.0f64.copysign(b)
    }
}

/// Python `divmod(a, b)` for floats (port of CPython's `float_divmod`).
pub fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0f64.copysign(a / b)
    };
    (floordiv, m)
}

/// Python's `float(s)` for a str; `None` where CPython raises ValueError.
pub fn parse_float(s: &str) -> Option<f64> {
    let mut buf = String::new();
    let text = to_ascii_number(s, &mut buf)?;
    let text = text.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'));
    if text.is_empty() {
        return None;
    }
    let owned;
    let text = if text.contains('_') {
        owned = strip_underscores(text)?;
        owned.as_str()
    } else {
        text
    };
    if !valid_float_syntax(text) {
        return None;
    }
    text.parse::<f64>().ok()
}

/// `float(s)` with CPython's error message: `could not convert string to float: '...'`.
pub fn parse_float_ex(s: &str) -> Result<f64, String> {
    parse_float(s).ok_or_else(|| {
        let mut msg = String::from("could not convert string to float: ");
        super::strmethods::push_str_repr(&mut msg, s);
        msg
    })
}

/// CPython's `_PyUnicode_TransformDecimalAndSpaceToASCII`: non-ASCII white space becomes a
/// space and non-ASCII decimal digits become ASCII digits; anything else non-ASCII fails.
pub(crate) fn to_ascii_number<'a>(s: &'a str, buf: &'a mut String) -> Option<&'a str> {
    if s.is_ascii() {
        return Some(s);
    }
    buf.reserve(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            buf.push(c);
        } else if unicode::is_space(c) {
            buf.push(' ');
        } else {
            let d = unicode::decimal_value(c)?;
            buf.push(char::from(b'0' + d as u8));
        }
    }
    Some(buf.as_str())
}

/// Removes underscores from a numeric literal, requiring each to sit between two digits.
fn strip_underscores(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut prev = '\0';
    for c in s.chars() {
        if c == '_' {
            if !prev.is_ascii_digit() {
                return None;
            }
        } else {
            if prev == '_' && !c.is_ascii_digit() {
                return None;
            }
            out.push(c);
        }
        prev = c;
    }
    if prev == '_' {
        return None;
    }
    Some(out)
}

/// The grammar CPython's `PyOS_string_to_double` accepts: a sign, then `inf`, `infinity`,
/// `nan` (any case) or decimal digits with an optional point and exponent.
fn valid_float_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let rest = b.get(i..).unwrap_or(&[]);
    if rest.eq_ignore_ascii_case(b"inf")
        || rest.eq_ignore_ascii_case(b"infinity")
        || rest.eq_ignore_ascii_case(b"nan")
    {
        return true;
    }
    let mut mantissa_digits = 0;
    let mut j = 0;
    while rest.get(j).is_some_and(u8::is_ascii_digit) {
        j += 1;
        mantissa_digits += 1;
    }
    if rest.get(j) == Some(&b'.') {
        j += 1;
        while rest.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return false;
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(rest.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_start = j;
        while rest.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j == exp_start {
            return false;
        }
    }
    j == rest.len()
}

/// Whether `x` is integral, as `float.is_integer()`.
pub fn float_is_integer(x: f64) -> bool {
    x.is_finite() && x.trunc() == x
}
