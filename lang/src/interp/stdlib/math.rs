//! `math`: CPython's results and errors (`math domain error`, `math range error`).
//! `factorial`, `comb` and `perm` are bounded by [`MAX_BIG_STEPS`] multiplications.

use super::super::value::*;
use super::super::{Interp, R};
use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};
use std::rc::Rc;

/// The most multiplications `factorial`, `comb` or `perm` performs (svc's bound; CPython
/// would compute a number of any size).
pub const MAX_BIG_STEPS: u64 = 20_000;

pub fn constant(name: &str) -> Option<Value> {
    Some(Value::Float(match name {
        "pi" => std::f64::consts::PI,
        "e" => std::f64::consts::E,
        "tau" => std::f64::consts::TAU,
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => return None,
    }))
}

fn to_big(v: &Value) -> Option<BigInt> {
    match v {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Bool(b) => Some(BigInt::from(u8::from(*b))),
        Value::BigInt(b) => Some((**b).clone()),
        _ => None,
    }
}

/// `b > 0` as `m * 2**e` with `m` in `[0.5, 1)` rounded to 53 bits, half to even (what
/// CPython's `_PyLong_Frexp` gives).
fn big_frexp(b: &BigInt) -> (f64, i64) {
    let bits = b.bits();
    let (top, sticky) = if bits <= 64 {
        (b.to_u64().unwrap_or(0) << (64 - bits), false)
    } else {
        let shift = bits - 64;
        let top: BigInt = b >> shift;
        let rest = b - (&top << shift);
        (top.to_u64().unwrap_or(0), !rest.is_zero())
    };
    // The dropped bits only matter as a tie-breaker: fold them into the lowest bit.
    let top = top | u64::from(sticky);
    let mut m = top as f64 / 18_446_744_073_709_551_616.0;
    let mut e = bits as i64;
    if m >= 1.0 {
        m /= 2.0;
        e += 1;
    }
    (m, e)
}

impl Interp<'_> {
    fn domain(&self) -> super::super::Interrupt {
        self.err("ValueError", "math domain error")
    }

    fn range_err(&self) -> super::super::Interrupt {
        self.err("OverflowError", "math range error")
    }

    /// An integer argument as a big integer (`TypeError` for anything else).
    fn big_arg(&self, v: &Value) -> R<BigInt> {
        to_big(v).ok_or_else(|| {
            self.err(
                "TypeError",
                format!(
                    "'{}' object cannot be interpreted as an integer",
                    self.type_name_of(v)
                ),
            )
        })
    }

    /// A one-argument float function with CPython's error rules: a finite argument
    /// giving NaN is a domain error, a finite argument giving infinity a range error.
    fn unary(&self, v: &Value, f: fn(f64) -> f64, inf_is_domain: bool) -> R<Value> {
        let x = self.num_arg(v)?;
        let r = f(x);
        if r.is_nan() && !x.is_nan() {
            return Err(self.domain());
        }
        if r.is_infinite() && x.is_finite() {
            return Err(if inf_is_domain {
                self.domain()
            } else {
                self.range_err()
            });
        }
        Ok(Value::Float(r))
    }

    /// `floor`/`ceil`/`trunc` of a float as an int.
    fn float_to_int_value(&self, x: f64) -> R<Value> {
        if x.is_nan() {
            return Err(self.err("ValueError", "cannot convert float NaN to integer"));
        }
        if x.is_infinite() {
            return Err(self.err("OverflowError", "cannot convert float infinity to integer"));
        }
        Ok(match crate::pyfmt::float_to_i64(x) {
            Some(i) => Value::Int(i),
            None => Value::from_bigint(crate::pyfmt::float_to_int(x).unwrap_or_default()),
        })
    }

    fn log_of(&self, v: &Value) -> R<f64> {
        self.log_with(v, f64::ln)
    }

    /// CPython's `loghelper`: an int is converted to the nearest float, or, when it is
    /// beyond the float range, split as `m * 2**e` and taken as `f(m) + f(2) * e`; a
    /// float follows C's rules with zero, negatives and `-inf` as domain errors.
    fn log_with(&self, v: &Value, f: fn(f64) -> f64) -> R<f64> {
        if let Some(b) = to_big(v) {
            if !b.is_positive() {
                return Err(self.domain());
            }
            let (m, e) = big_frexp(&b);
            let x = libm::ldexp(m, e as i32);
            if x.is_finite() && e <= i64::from(f64::MAX_EXP) {
                return Ok(f(x));
            }
            return Ok(f(m) + f(2.0) * e as f64);
        }
        let x = self.num_arg(v)?;
        if x.is_nan() || x == f64::INFINITY {
            return Ok(x);
        }
        if x <= 0.0 {
            return Err(self.domain());
        }
        Ok(f(x))
    }

    pub(super) fn call_math(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let one = |it: &Self, args: &[Value], kwargs: &[(Rc<str>, Value)]| -> R<Value> {
            it.one_positional(&format!("math.{func}"), args, kwargs)
                .cloned()
        };
        let two = |it: &Self, args: &[Value], kwargs: &[(Rc<str>, Value)]| -> R<(Value, Value)> {
            if !kwargs.is_empty() {
                return Err(it.err(
                    "TypeError",
                    format!("math.{func}() takes no keyword arguments"),
                ));
            }
            if args.len() != 2 {
                return Err(it.err(
                    "TypeError",
                    format!("{func} expected 2 arguments, got {}", args.len()),
                ));
            }
            Ok((args[0].clone(), args[1].clone()))
        };
        match func {
            "sqrt" => {
                let v = one(self, &args, &kwargs)?;
                self.unary(&v, f64::sqrt, true)
            }
            "exp" => {
                let v = one(self, &args, &kwargs)?;
                self.unary(&v, f64::exp, false)
            }
            "sin" | "cos" | "tan" => {
                let v = one(self, &args, &kwargs)?;
                let x = self.num_arg(&v)?;
                if x.is_infinite() {
                    return Err(self.domain());
                }
                Ok(Value::Float(match func {
                    "sin" => x.sin(),
                    "cos" => x.cos(),
                    _ => x.tan(),
                }))
            }
            "asin" => {
                let v = one(self, &args, &kwargs)?;
                self.unary(&v, f64::asin, true)
            }
            "acos" => {
                let v = one(self, &args, &kwargs)?;
                self.unary(&v, f64::acos, true)
            }
            "atan" => {
                let v = one(self, &args, &kwargs)?;
                self.unary(&v, f64::atan, true)
            }
            "sinh" | "cosh" | "expm1" => {
                let v = one(self, &args, &kwargs)?;
                let f = match func {
                    "sinh" => f64::sinh,
                    "cosh" => f64::cosh,
                    _ => f64::exp_m1,
                };
                self.unary(&v, f, false)
            }
            "tanh" | "asinh" | "cbrt" => {
                let v = one(self, &args, &kwargs)?;
                let f = match func {
                    "tanh" => f64::tanh,
                    // C's `asinh`/`acosh` (as CPython calls), not std's formulas, which
                    // overflow near the top of the range and differ in the last digit.
                    "asinh" => libm::asinh,
                    _ => super::cfloat::cbrt,
                };
                self.unary(&v, f, false)
            }
            // `acosh(0.5)` is NaN, `atanh(1)` and `log1p(-1)` infinite: domain errors.
            "acosh" | "atanh" | "log1p" => {
                let v = one(self, &args, &kwargs)?;
                let f = match func {
                    "acosh" => libm::acosh,
                    "atanh" => f64::atanh,
                    _ => f64::ln_1p,
                };
                self.unary(&v, f, true)
            }
            "degrees" | "radians" => {
                let v = one(self, &args, &kwargs)?;
                let x = self.num_arg(&v)?;
                Ok(Value::Float(if func == "degrees" {
                    x * (180.0 / std::f64::consts::PI)
                } else {
                    x * (std::f64::consts::PI / 180.0)
                }))
            }
            "fmod" | "remainder" => {
                let (a, b) = two(self, &args, &kwargs)?;
                let (x, y) = (self.num_arg(&a)?, self.num_arg(&b)?);
                if x.is_nan() || y.is_nan() {
                    return Ok(Value::Float(f64::NAN));
                }
                if x.is_infinite() || y == 0.0 {
                    return Err(self.domain());
                }
                Ok(Value::Float(if func == "fmod" {
                    x % y
                } else {
                    ieee_remainder(x, y)
                }))
            }
            // The error function never fails; a NaN argument gives NaN.
            "erf" | "erfc" => {
                let v = one(self, &args, &kwargs)?;
                let x = self.num_arg(&v)?;
                Ok(Value::Float(if func == "erf" {
                    libm::erf(x)
                } else {
                    libm::erfc(x)
                }))
            }
            // Poles (zero and the negative integers) and `gamma(-inf)` are domain errors;
            // a finite argument whose result overflows is a range error.
            "gamma" | "lgamma" => {
                let v = one(self, &args, &kwargs)?;
                let x = self.num_arg(&v)?;
                let pole = x.is_finite() && x <= 0.0 && x.fract() == 0.0;
                if pole || (func == "gamma" && x == f64::NEG_INFINITY) {
                    return Err(self.domain());
                }
                let r = if func == "gamma" {
                    super::cfloat::gamma(x)
                } else {
                    super::cfloat::lgamma(x)
                };
                if r.is_infinite() && x.is_finite() {
                    return Err(self.range_err());
                }
                Ok(Value::Float(r))
            }
            "fabs" => {
                let v = one(self, &args, &kwargs)?;
                Ok(Value::Float(self.num_arg(&v)?.abs()))
            }
            "isnan" | "isinf" | "isfinite" => {
                let v = one(self, &args, &kwargs)?;
                let x = self.num_arg(&v)?;
                Ok(Value::Bool(match func {
                    "isnan" => x.is_nan(),
                    "isinf" => x.is_infinite(),
                    _ => x.is_finite(),
                }))
            }
            "floor" | "ceil" | "trunc" => {
                let v = one(self, &args, &kwargs)?;
                if let Some(b) = to_big(&v) {
                    return Ok(Value::from_bigint(b));
                }
                let x = match &v {
                    Value::Float(f) => *f,
                    other => {
                        let t = self.type_name_of(other);
                        return Err(self.err(
                            "TypeError",
                            if func == "trunc" {
                                format!("type {t} doesn't define __trunc__ method")
                            } else {
                                format!("must be real number, not {t}")
                            },
                        ));
                    }
                };
                self.float_to_int_value(match func {
                    "floor" => x.floor(),
                    "ceil" => x.ceil(),
                    _ => x.trunc(),
                })
            }
            "log2" | "log10" => {
                let v = one(self, &args, &kwargs)?;
                let f = if func == "log2" {
                    f64::log2
                } else {
                    f64::log10
                };
                self.log_with(&v, f).map(Value::Float)
            }
            "log" => {
                if !kwargs.is_empty() {
                    return Err(self.err("TypeError", "math.log() takes no keyword arguments"));
                }
                if args.is_empty() || args.len() > 2 {
                    let bound = if args.is_empty() {
                        "at least 1 argument"
                    } else {
                        "at most 2 arguments"
                    };
                    return Err(self.err(
                        "TypeError",
                        format!("log expected {bound}, got {}", args.len()),
                    ));
                }
                let num = self.log_of(&args[0])?;
                if args.len() == 1 {
                    return Ok(Value::Float(num));
                }
                let den = self.log_of(&args[1])?;
                if den == 0.0 {
                    return Err(self.err("ZeroDivisionError", "float division by zero"));
                }
                Ok(Value::Float(num / den))
            }
            "pow" => {
                let (a, b) = two(self, &args, &kwargs)?;
                let (x, y) = (self.num_arg(&a)?, self.num_arg(&b)?);
                if x == 0.0 && y < 0.0 && y.is_finite() {
                    return Err(self.domain());
                }
                if x < 0.0 && x.is_finite() && y.is_finite() && y.fract() != 0.0 {
                    return Err(self.domain());
                }
                let r = x.powf(y);
                if r.is_infinite() && x.is_finite() && y.is_finite() {
                    return Err(self.range_err());
                }
                Ok(Value::Float(r))
            }
            "atan2" => {
                let (a, b) = two(self, &args, &kwargs)?;
                Ok(Value::Float(self.num_arg(&a)?.atan2(self.num_arg(&b)?)))
            }
            "copysign" => {
                let (a, b) = two(self, &args, &kwargs)?;
                Ok(Value::Float(self.num_arg(&a)?.copysign(self.num_arg(&b)?)))
            }
            "dist" => {
                let (p, q) = two(self, &args, &kwargs)?;
                let (p, q) = (self.iterate(&p)?, self.iterate(&q)?);
                if p.len() != q.len() {
                    return Err(self.err(
                        "ValueError",
                        "both points must have the same number of dimensions",
                    ));
                }
                let mut xs = Vec::with_capacity(p.len());
                for (a, b) in p.iter().zip(&q) {
                    xs.push((self.num_arg(a)? - self.num_arg(b)?).abs());
                }
                Ok(Value::Float(vector_norm(&xs)))
            }
            "frexp" => {
                let x = self.num_arg(&one(self, &args, &kwargs)?)?;
                let (m, e) = frexp(x);
                Ok(Value::tuple(vec![Value::Float(m), Value::Int(e)]))
            }
            "ldexp" => {
                let (x, i) = two(self, &args, &kwargs)?;
                let x = self.num_arg(&x)?;
                let i = match &i {
                    Value::Int(i) => *i,
                    Value::Bool(b) => i64::from(*b),
                    Value::BigInt(b) if b.is_negative() => i64::MIN,
                    Value::BigInt(_) => i64::MAX,
                    _ => {
                        return Err(
                            self.err("TypeError", "Expected an int as second argument to ldexp.")
                        );
                    }
                };
                let r = ldexp(x, i);
                if r.is_infinite() && x.is_finite() {
                    return Err(self.err("OverflowError", "math range error"));
                }
                Ok(Value::Float(r))
            }
            "modf" => {
                let x = self.num_arg(&one(self, &args, &kwargs)?)?;
                let (f, i) = if x.is_infinite() {
                    (0.0f64.copysign(x), x)
                } else {
                    let i = x.trunc();
                    ((x - i).copysign(x), i)
                };
                Ok(Value::tuple(vec![Value::Float(f), Value::Float(i)]))
            }
            "hypot" => {
                if !kwargs.is_empty() {
                    return Err(self.err("TypeError", "hypot() takes no keyword arguments"));
                }
                let mut xs = Vec::with_capacity(args.len());
                for a in &args {
                    xs.push(self.num_arg(a)?.abs());
                }
                Ok(Value::Float(vector_norm(&xs)))
            }
            "isclose" => {
                let a = self.stdlib_args(
                    "isclose",
                    &["a", "b", "rel_tol", "abs_tol"],
                    2,
                    2,
                    args,
                    kwargs,
                )?;
                let x = self.num_arg(a.get(0).unwrap_or(&Value::None))?;
                let y = self.num_arg(a.get(1).unwrap_or(&Value::None))?;
                let rel = match a.get(2) {
                    Some(v) => self.num_arg(v)?,
                    None => 1e-9,
                };
                let abs = match a.get(3) {
                    Some(v) => self.num_arg(v)?,
                    None => 0.0,
                };
                if rel < 0.0 || abs < 0.0 {
                    return Err(self.err("ValueError", "tolerances must be non-negative"));
                }
                if x == y {
                    return Ok(Value::Bool(true));
                }
                if x.is_infinite() || y.is_infinite() {
                    return Ok(Value::Bool(false));
                }
                let diff = (y - x).abs();
                Ok(Value::Bool(
                    diff <= (rel * y).abs() || diff <= (rel * x).abs() || diff <= abs,
                ))
            }
            "gcd" | "lcm" => {
                if !kwargs.is_empty() {
                    return Err(self.err(
                        "TypeError",
                        format!("math.{func}() takes no keyword arguments"),
                    ));
                }
                let mut acc: Option<BigInt> = None;
                for a in &args {
                    let b = self.big_arg(a)?;
                    acc = Some(match acc {
                        None => b.abs(),
                        Some(x) if func == "gcd" => x.gcd(&b),
                        Some(x) => {
                            if x.is_zero() || b.is_zero() {
                                BigInt::zero()
                            } else {
                                x.lcm(&b)
                            }
                        }
                    });
                }
                Ok(Value::from_bigint(acc.unwrap_or_else(|| {
                    if func == "gcd" {
                        BigInt::zero()
                    } else {
                        BigInt::one()
                    }
                })))
            }
            "isqrt" => {
                let v = one(self, &args, &kwargs)?;
                if let Value::Float(_) = v {
                    return Err(self.err(
                        "TypeError",
                        "'float' object cannot be interpreted as an integer",
                    ));
                }
                let n = self.big_arg(&v)?;
                if n.is_negative() {
                    return Err(self.err("ValueError", "isqrt() argument must be nonnegative"));
                }
                Ok(Value::from_bigint(n.sqrt()))
            }
            "factorial" => {
                let v = one(self, &args, &kwargs)?;
                if let Value::Float(_) = v {
                    return Err(self.err(
                        "TypeError",
                        "'float' object cannot be interpreted as an integer",
                    ));
                }
                let n = self.big_arg(&v)?;
                if n.is_negative() {
                    return Err(
                        self.err("ValueError", "factorial() not defined for negative values")
                    );
                }
                // CPython's own bound comes first, then svc's step bound.
                if n > BigInt::from(i64::MAX) {
                    return Err(self.err(
                        "OverflowError",
                        "factorial() argument should not exceed 9223372036854775807",
                    ));
                }
                let n = self.bounded_steps("factorial", &n)?;
                let mut acc = BigInt::one();
                for k in 2..=n {
                    acc *= k;
                }
                Ok(Value::from_bigint(acc))
            }
            "comb" | "perm" => {
                if !kwargs.is_empty() {
                    return Err(self.err(
                        "TypeError",
                        format!("math.{func}() takes no keyword arguments"),
                    ));
                }
                let want = if func == "comb" { 2 } else { 1 };
                if args.len() < want || args.len() > 2 {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{func} expected {} arguments, got {}",
                            if func == "comb" { "2" } else { "at most 2" },
                            args.len()
                        ),
                    ));
                }
                let n = self.big_arg(&args[0])?;
                let k = match args.get(1) {
                    None => n.clone(),
                    Some(Value::None) if func == "perm" => n.clone(),
                    Some(v) => self.big_arg(v)?,
                };
                if n.is_negative() {
                    return Err(self.err("ValueError", "n must be a non-negative integer"));
                }
                if k.is_negative() {
                    return Err(self.err("ValueError", "k must be a non-negative integer"));
                }
                if k > n {
                    return Ok(Value::Int(0));
                }
                let k = if func == "comb" {
                    let other = &n - &k;
                    if other < k { other } else { k }
                } else {
                    k
                };
                let steps = self.bounded_steps(func, &k)?;
                let mut acc = BigInt::one();
                for i in 0..steps {
                    acc *= &n - BigInt::from(i);
                    if func == "comb" {
                        acc /= BigInt::from(i + 1);
                    }
                }
                Ok(Value::from_bigint(acc))
            }
            "prod" => {
                // `iterable` is positional-only: a call without exactly one positional
                // argument fails on that count before keywords are looked at.
                if args.len() != 1 && args.len() + kwargs.len() <= 2 {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "prod() takes exactly 1 positional argument ({} given)",
                            args.len()
                        ),
                    ));
                }
                let a = self.stdlib_args("prod", &["iterable", "start"], 1, 1, args, kwargs)?;
                let items = self.iterate(a.get(0).unwrap_or(&Value::None))?;
                let mut acc = a.get(1).cloned().unwrap_or(Value::Int(1));
                for x in &items {
                    self.poll()?;
                    acc = self.binary_op(crate::ast::BinOp::Mul, &acc, x)?;
                }
                Ok(acc)
            }
            "fsum" => {
                let v = one(self, &args, &kwargs)?;
                let items = self.iterate(&v)?;
                let mut xs = Vec::with_capacity(items.len());
                for x in &items {
                    xs.push(self.num_arg(x)?);
                }
                fsum(&xs).map(Value::Float).map_err(|m| {
                    if m.contains("overflow") {
                        self.err("OverflowError", m)
                    } else {
                        self.err("ValueError", m)
                    }
                })
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'math' has no attribute '{func}'"),
            )),
        }
    }

    fn bounded_steps(&self, func: &str, n: &BigInt) -> R<u64> {
        match n.to_u64() {
            Some(k) if k <= MAX_BIG_STEPS => Ok(k),
            _ => Err(self.err(
                "OverflowError",
                format!("{func}() argument too large for svc (limit {MAX_BIG_STEPS})"),
            )),
        }
    }
}

/// Correctly rounded sum (Shewchuk's algorithm, as CPython's `math.fsum`).
/// IEEE 754 remainder of finite `x` by non-zero `y` (`x - n*y`, `n` the nearest integer to
/// `x / y`, ties to even), computed exactly as CPython does.
fn ieee_remainder(x: f64, y: f64) -> f64 {
    if y.is_infinite() {
        return x;
    }
    let (ax, ay) = (x.abs(), y.abs());
    let m = ax % ay;
    let c = ay - m;
    let r = if m < c {
        m
    } else if m > c {
        -c
    } else {
        // Half-way: pick the even multiple.
        m - 2.0 * ((0.5 * (ax - m)) % ay)
    };
    1.0f64.copysign(x) * r
}

fn fsum(xs: &[f64]) -> Result<f64, &'static str> {
    let mut partials: Vec<f64> = Vec::new();
    let mut special = 0.0f64;
    let mut inf_sum = 0.0f64;
    for &x0 in xs {
        let mut x = x0;
        if !x.is_finite() {
            if x.is_infinite() {
                inf_sum += x;
            }
            special += x;
            continue;
        }
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        if !x.is_finite() {
            return Err("intermediate overflow in fsum");
        }
        partials.truncate(i);
        partials.push(x);
    }
    if special != 0.0 {
        if inf_sum.is_nan() {
            return Err("-inf + inf in fsum");
        }
        return Ok(special);
    }
    let mut hi = 0.0f64;
    let mut n = partials.len();
    if n > 0 {
        n -= 1;
        hi = partials[n];
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = partials[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
    }
    Ok(hi)
}

/// The Euclidean norm as CPython 3.12 computes `hypot` (correctly rounded in all but rare
/// cases): infinity wins over NaN, then the inputs are scaled by a power of two, their
/// squares summed exactly as a double-double and the root corrected by one Newton step.
fn vector_norm(xs: &[f64]) -> f64 {
    if xs.iter().any(|x| x.is_infinite()) {
        return f64::INFINITY;
    }
    if xs.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let max = xs.iter().copied().fold(0.0f64, f64::max);
    if max == 0.0 || xs.len() <= 1 {
        return max;
    }
    let (_, e) = libm::frexp(max);
    // Scaled so the largest lies in [0.5, 1): no square overflows or underflows.
    let scale = |x: f64| libm::ldexp(x, -e);
    let (mut hi, mut lo) = (0.0f64, 0.0f64);
    for x in xs {
        let x = scale(*x);
        let p = x * x;
        let perr = x.mul_add(x, -p);
        // Two-sum of hi and p, the rounding errors gathered in lo.
        let s = hi + p;
        let bp = s - hi;
        let err = (hi - (s - bp)) + (p - bp);
        hi = s;
        lo += err + perr;
    }
    let total = hi + lo;
    lo -= total - hi;
    hi = total;
    let h = hi.sqrt();
    // One correction step: the residual of h*h against hi+lo, computed exactly by FMA.
    let r = (-h).mul_add(h, hi) + lo;
    libm::ldexp(h + r / (2.0 * h), e)
}

/// C's `frexp`: `x = m * 2**e` with `0.5 <= |m| < 1` (zero, infinities and NaN as
/// they are, exponent 0).
fn frexp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    // Scale a subnormal into the normal range first.
    let (x, extra) = if x.abs() < f64::MIN_POSITIVE {
        (x * 2f64.powi(64), -64)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022 + extra)
}

/// C's `ldexp`: `x * 2**i`, exact, in steps small enough that no intermediate
/// overflows or loses bits before the last one.
fn ldexp(x: f64, i: i64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mut r = x;
    let mut i = i.clamp(-4000, 4000) as i32;
    while i > 1000 {
        r *= 2f64.powi(1000);
        i -= 1000;
    }
    while i < -1000 {
        r *= 2f64.powi(-1000);
        i += 1000;
        if r == 0.0 {
            return r;
        }
    }
    if i >= -1022 {
        return r * 2f64.powi(i);
    }
    // One rounding only, as C's: scale by 2**-1022 first when that is exact.
    let (m, e) = frexp(r);
    let e = e + i64::from(i);
    if e >= -1021 {
        return m * 2f64.powi(i32::try_from(e).unwrap_or(0));
    }
    m * 2f64.powi(i32::try_from(e + 1022).unwrap_or(0)) * 2f64.powi(-1022)
}
