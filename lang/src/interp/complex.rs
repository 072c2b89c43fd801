//! The `complex` type: `complex(...)`, arithmetic with ints and floats,
//! `abs`, `==`, hashing and `repr`, computed as CPython 3.12 computes them (Smith's
//! division, the integer-power fast path, the polar form for other powers), so results
//! agree to the last bit where the C library does.

use super::value::Value;
use super::{Interp, R};
use crate::ast::BinOp;
use crate::pyfmt;

/// A number as a complex: ints, bools, floats and complexes (`None` for anything else).
/// An int beyond the float range is `Err`'s `OverflowError`, as CPython converts it.
fn parts(it: &Interp, v: &Value) -> Option<R<(f64, f64)>> {
    match v {
        Value::Complex(re, im) => Some(Ok((*re, *im))),
        Value::Float(f) => Some(Ok((*f, 0.0))),
        Value::Int(i) => Some(Ok((*i as f64, 0.0))),
        Value::Bool(b) => Some(Ok((f64::from(u8::from(*b)), 0.0))),
        Value::BigInt(b) => Some(match pyfmt::int_to_float(b) {
            Some(f) => Ok((f, 0.0)),
            None => Err(it.err("OverflowError", "int too large to convert to float")),
        }),
        _ => None,
    }
}

fn prod(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// `a / b` by Smith's method (the ratio of the smaller to the larger part of `b`);
/// `None` for a zero divisor.
fn quot(a: (f64, f64), b: (f64, f64)) -> Option<(f64, f64)> {
    let (abs_re, abs_im) = (b.0.abs(), b.1.abs());
    if abs_re >= abs_im {
        if abs_re == 0.0 {
            return None;
        }
        let ratio = b.1 / b.0;
        let denom = b.0 + b.1 * ratio;
        Some(((a.0 + a.1 * ratio) / denom, (a.1 - a.0 * ratio) / denom))
    } else if abs_im >= abs_re {
        let ratio = b.0 / b.1;
        let denom = b.0 * ratio + b.1;
        Some(((a.0 * ratio + a.1) / denom, (a.1 * ratio - a.0) / denom))
    } else {
        // A NaN part: neither comparison holds.
        Some((f64::NAN, f64::NAN))
    }
}

/// Why a power failed: `0` to a negative or complex power, or an overflow.
enum PowError {
    Domain,
    Range,
}

/// `a ** n` for a small integer `n` by repeated squaring.
fn powu(x: (f64, f64), n: u32) -> (f64, f64) {
    let mut r = (1.0, 0.0);
    let mut p = x;
    let mut mask = 1u32;
    while mask > 0 && n >= mask {
        if n & mask != 0 {
            r = prod(r, p);
        }
        mask <<= 1;
        p = prod(p, p);
    }
    r
}

fn pow(a: (f64, f64), b: (f64, f64)) -> Result<(f64, f64), PowError> {
    // An integral exponent of at most 100 in size multiplies (exact for `1j ** 2`).
    if b.1 == 0.0 && b.0 == b.0.trunc() && b.0.abs() <= 100.0 {
        let n = b.0 as i32;
        let r = if n >= 0 {
            powu(a, n.unsigned_abs())
        } else {
            quot((1.0, 0.0), powu(a, n.unsigned_abs())).ok_or(PowError::Domain)?
        };
        return check_range(a, b, r);
    }
    let r = if b == (0.0, 0.0) {
        (1.0, 0.0)
    } else if a == (0.0, 0.0) {
        if b.1 != 0.0 || b.0 < 0.0 {
            return Err(PowError::Domain);
        }
        (0.0, 0.0)
    } else {
        let vabs = a.0.hypot(a.1);
        let mut len = vabs.powf(b.0);
        let at = a.1.atan2(a.0);
        let mut phase = at * b.0;
        if b.1 != 0.0 {
            len /= (at * b.1).exp();
            phase += b.1 * vabs.ln();
        }
        (len * phase.cos(), len * phase.sin())
    };
    check_range(a, b, r)
}

/// An infinite result of finite operands is an overflow.
fn check_range(a: (f64, f64), b: (f64, f64), r: (f64, f64)) -> Result<(f64, f64), PowError> {
    let finite = |x: (f64, f64)| x.0.is_finite() && x.1.is_finite();
    if finite(a) && finite(b) && (r.0.is_infinite() || r.1.is_infinite()) {
        return Err(PowError::Range);
    }
    Ok(r)
}

/// A float as `repr` writes it inside a complex: no `.0` on integral values.
fn part(x: f64) -> String {
    let r = pyfmt::float_repr(x);
    match r.strip_suffix(".0") {
        Some(t) => t.to_string(),
        None => r,
    }
}

/// CPython's `repr()` of a complex: `1j`, `(3+4j)`, `(-0-1j)`, `(nan+infj)`.
pub fn complex_repr(re: f64, im: f64) -> String {
    let imag = if im.is_nan() {
        "nan".to_string()
    } else {
        part(im)
    };
    if re == 0.0 && re.is_sign_positive() {
        return format!("{imag}j");
    }
    let sign = if im.is_nan() || !im.is_sign_negative() {
        "+"
    } else {
        ""
    };
    format!("({}{sign}{imag}j)", part(re))
}

impl Interp<'_> {
    /// `a op b` when either side is a complex; `None` when the other side is not a
    /// number (the caller reports the unsupported operands).
    pub(crate) fn complex_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        let sym = match op {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Pow => "** or pow()",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            _ => return None,
        };
        let x = parts(self, a)?;
        let y = parts(self, b)?;
        Some((|| {
            let (x, y) = (x?, y?);
            let r = match op {
                BinOp::Add => (x.0 + y.0, x.1 + y.1),
                BinOp::Sub => (x.0 - y.0, x.1 - y.1),
                BinOp::Mul => prod(x, y),
                BinOp::Div => quot(x, y)
                    .ok_or_else(|| self.err("ZeroDivisionError", "complex division by zero"))?,
                BinOp::Pow => match pow(x, y) {
                    Ok(r) => r,
                    Err(PowError::Domain) => {
                        return Err(
                            self.err("ZeroDivisionError", "0.0 to a negative or complex power")
                        );
                    }
                    Err(PowError::Range) => {
                        return Err(self.err("OverflowError", "complex exponentiation"));
                    }
                },
                _ => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "unsupported operand type(s) for {sym}: '{}' and '{}'",
                            self.type_name_of(a),
                            self.type_name_of(b)
                        ),
                    ));
                }
            };
            Ok(Value::Complex(r.0, r.1))
        })())
    }

    /// `abs(c)`: the modulus, an `OverflowError` when finite parts overflow it.
    pub(crate) fn complex_abs(&self, re: f64, im: f64) -> R<Value> {
        let r = re.hypot(im);
        if r.is_infinite() && re.is_finite() && im.is_finite() {
            return Err(self.err("OverflowError", "absolute value too large"));
        }
        Ok(Value::Float(r))
    }

    /// `complex(real=0, imag=0)`.
    pub(crate) fn construct_complex(
        &mut self,
        real: Option<Value>,
        imag: Option<Value>,
    ) -> R<Value> {
        if let Some(Value::Str(s)) = &real {
            if imag.is_some() {
                return Err(self.err(
                    "TypeError",
                    "complex() can't take second arg if first is a string",
                ));
            }
            return match parse_complex(s) {
                Some((re, im)) => Ok(Value::Complex(re, im)),
                None => Err(self.err("ValueError", "complex() arg is a malformed string")),
            };
        }
        let re = match &real {
            None => (0.0, 0.0),
            Some(v) => match parts(self, v) {
                Some(p) => p?,
                None => {
                    let t = self.type_name_of(v);
                    return Err(self.err(
                        "TypeError",
                        format!("complex() first argument must be a string or a number, not '{t}'"),
                    ));
                }
            },
        };
        let im = match &imag {
            None => return Ok(Value::Complex(re.0, re.1)),
            Some(Value::Str(_)) => {
                return Err(self.err("TypeError", "complex() second arg can't be a string"));
            }
            Some(v) => match parts(self, v) {
                Some(p) => p?,
                None => {
                    let t = self.type_name_of(v);
                    return Err(self.err(
                        "TypeError",
                        format!("complex() second argument must be a number, not '{t}'"),
                    ));
                }
            },
        };
        // `complex(a, b)` is `a + b*1j`; only a complex argument's other part is added
        // (so `complex(0, -0.0)` keeps its negative zero).
        let mut r = re.0;
        let mut i = im.0;
        if let Some(Value::Complex(_, bi)) = &imag {
            r -= bi;
        }
        if let Some(Value::Complex(_, ai)) = &real {
            i += ai;
        }
        Ok(Value::Complex(r, i))
    }
}

/// The text `complex("...")` accepts: optional white space and parentheses around a
/// real part, an imaginary part (`4j`, `-j`) or both (`1+2j`, `1e3-inf j` is not).
fn parse_complex(text: &str) -> Option<(f64, f64)> {
    let mut s = text.trim();
    if let Some(inner) = s.strip_prefix('(') {
        s = inner.strip_suffix(')')?.trim();
    }
    if s.is_empty() || s.contains(char::is_whitespace) || s.contains('_') && !underscores_ok(s) {
        return None;
    }
    let s: String = s.chars().filter(|c| *c != '_').collect();
    let float = |t: &str| -> Option<f64> {
        match t {
            "" | "+" => Some(1.0),
            "-" => Some(-1.0),
            _ => pyfmt::parse_float(t),
        }
    };
    if let Some(body) = s.strip_suffix(['j', 'J']) {
        // The split between the parts: the last sign not right after an exponent mark.
        let b = body.as_bytes();
        let split = (1..b.len())
            .rev()
            .find(|&i| matches!(b[i], b'+' | b'-') && !matches!(b[i - 1], b'e' | b'E'));
        return match split {
            Some(i) => {
                let (re, im) = body.split_at(i);
                let re = pyfmt::parse_float(re)?;
                Some((re, float(im)?))
            }
            None => Some((0.0, float(body)?)),
        };
    }
    Some((pyfmt::parse_float(&s)?, 0.0))
}

/// Underscores only between digits, as in numeric literals.
fn underscores_ok(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().all(|(i, &c)| {
        c != b'_'
            || (i > 0
                && i + 1 < b.len()
                && b[i - 1].is_ascii_hexdigit()
                && b[i + 1].is_ascii_hexdigit())
    })
}

/// `format(c, spec)`: with a presentation type (`e f g E F G`) both parts in it, the
/// imaginary one always signed, no parentheses; without one the `repr` form (parts in
/// `g` when a precision is given); then the width, fill and alignment (right by
/// default) over the whole. `Err` carries CPython's message.
pub fn format_complex(re: f64, im: f64, fs: &pyfmt::FormatSpec) -> Result<String, String> {
    if fs.zero {
        return Err("Zero padding is not allowed in complex format specifier".into());
    }
    if fs.align == Some('=') {
        return Err("'=' alignment flag is not allowed in complex format specifier".into());
    }
    let ty = match fs.ty {
        None => None,
        Some(c @ ('e' | 'E' | 'f' | 'F' | 'g' | 'G')) => Some(c),
        Some(c) => {
            return Err(format!(
                "Unknown format code '{c}' for object of type 'complex'"
            ));
        }
    };
    let repr_form = ty.is_none();
    let skip_re = repr_form && re == 0.0 && re.is_sign_positive();
    let part_spec = |sign: Option<char>| pyfmt::FormatSpec {
        fill: None,
        align: None,
        width: None,
        zero: false,
        sign,
        ty: ty.or(fs.precision.map(|_| 'g')),
        ..fs.clone()
    };
    let show = |x: f64, sign: Option<char>| -> Result<String, String> {
        if repr_form && fs.precision.is_none() {
            let body = if x.is_nan() {
                "nan".to_string()
            } else {
                part(x)
            };
            let signed = match sign {
                Some('+') if !body.starts_with('-') => format!("+{body}"),
                Some(' ') if !body.starts_with('-') => format!(" {body}"),
                _ => body,
            };
            return Ok(signed);
        }
        pyfmt::format_float(x, &part_spec(sign))
    };
    let body = if skip_re {
        format!("{}j", show(im, fs.sign)?)
    } else {
        let r = show(re, fs.sign)?;
        let i = show(im, Some('+'))?;
        if repr_form {
            format!("({r}{i}j)")
        } else {
            format!("{r}{i}j")
        }
    };
    let pad = pyfmt::FormatSpec {
        fill: fs.fill,
        align: Some(fs.align.unwrap_or('>')),
        width: fs.width,
        ..Default::default()
    };
    pyfmt::format_str(&body, &pad)
}
