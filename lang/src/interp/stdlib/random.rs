//! `random`: a seeded xoshiro256** generator. One generator per interpreter thread (as
//! CPython's is per process), seeded from the host's OS random source on first use;
//! `seed(x)` makes the sequence repeatable within svc (CPython's exact values are not
//! reproduced, decision 12).

use super::super::value::*;
use super::super::{Interp, R};
use super::ArgStyle;
use std::cell::RefCell;
use std::rc::Rc;

pub const NAMES: &[&str] = &[
    "seed",
    "random",
    "randint",
    "randrange",
    "uniform",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "getrandbits",
];

thread_local! {
    static STATE: RefCell<Option<[u64; 4]>> = const { RefCell::new(None) };
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator state for a seed made of these bytes.
fn state_from(bytes: &[u8]) -> [u64; 4] {
    // FNV-1a over the bytes, then splitmix to spread it over 256 bits.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut s = h;
    [
        splitmix(&mut s),
        splitmix(&mut s),
        splitmix(&mut s),
        splitmix(&mut s),
    ]
}

fn next(s: &mut [u64; 4]) -> u64 {
    let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
    let t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3].rotate_left(45);
    result
}

impl Interp<'_> {
    fn rand_u64(&mut self) -> u64 {
        let have = STATE.with(|st| st.borrow().is_some());
        if !have {
            let mut buf = [0u8; 32];
            self.host.random_bytes(&mut buf);
            STATE.with(|st| *st.borrow_mut() = Some(state_from(&buf)));
        }
        STATE.with(|st| next(st.borrow_mut().as_mut().expect("seeded above")))
    }

    fn rand_float(&mut self) -> f64 {
        (self.rand_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (`n > 0`), without modulo bias.
    fn rand_below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let r = self.rand_u64();
            if r < zone {
                return r % n;
            }
        }
    }

    fn rand_range(&mut self, args: &[Value]) -> R<Value> {
        let show = |it: &mut Self, vs: &[Value]| -> R<String> {
            let mut parts = Vec::new();
            for v in vs {
                parts.push(it.repr(v)?);
            }
            Ok(parts.join(", "))
        };
        let start = self.int_arg(&args[0])?;
        let Some(stop_v) = args.get(1).filter(|v| !v.is_none()) else {
            if args.len() > 2 {
                return Err(self.err("TypeError", "Missing a non-None stop argument"));
            }
            if start > 0 {
                return Ok(Value::Int(self.rand_below(start as u64) as i64));
            }
            return Err(self.err("ValueError", "empty range for randrange()"));
        };
        let stop = self.int_arg(stop_v)?;
        let step = match args.get(2) {
            Some(v) => self.int_arg(v)?,
            None => 1,
        };
        let width = i128::from(stop) - i128::from(start);
        let n = if step == 1 {
            if width > 0 {
                width
            } else {
                let s = show(self, &args[..2])?;
                return Err(self.err("ValueError", format!("empty range in randrange({s})")));
            }
        } else if step > 0 {
            (width + i128::from(step) - 1).div_euclid(i128::from(step))
        } else if step < 0 {
            (width + i128::from(step) + 1).div_euclid(i128::from(step))
        } else {
            return Err(self.err("ValueError", "zero step for randrange()"));
        };
        if n <= 0 {
            let s = show(self, &args[..3.min(args.len())])?;
            return Err(self.err("ValueError", format!("empty range in randrange({s})")));
        }
        let k = self.rand_below(n as u64);
        Ok(Value::Int(
            (i128::from(start) + i128::from(step) * i128::from(k)) as i64,
        ))
    }

    pub(super) fn call_random(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match func {
            "seed" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.seed"),
                    &["a", "version"],
                    0,
                    2,
                    args,
                    kwargs,
                )?;
                let state = match a.get(0).unwrap_or(&Value::None) {
                    Value::None => {
                        let mut buf = [0u8; 32];
                        self.host.random_bytes(&mut buf);
                        state_from(&buf)
                    }
                    Value::Int(i) => state_from(&[b"i:".as_slice(), &i.to_le_bytes()].concat()),
                    Value::Bool(b) => {
                        state_from(&[b"i:".as_slice(), &i64::from(*b).to_le_bytes()].concat())
                    }
                    Value::BigInt(b) => {
                        state_from(&[b"b:".as_slice(), &b.to_signed_bytes_le()].concat())
                    }
                    Value::Float(f) => {
                        state_from(&[b"f:".as_slice(), &f.to_bits().to_le_bytes()].concat())
                    }
                    Value::Str(s) => state_from(&[b"s:".as_slice(), s.as_bytes()].concat()),
                    _ => {
                        return Err(self.err(
                            "TypeError",
                            "The only supported seed types are: None,\nint, float, str, bytes, and bytearray.",
                        ));
                    }
                };
                STATE.with(|st| *st.borrow_mut() = Some(state));
                Ok(Value::None)
            }
            "random" => {
                if !kwargs.is_empty() {
                    return Err(self.err("TypeError", "Random.random() takes no keyword arguments"));
                }
                if !args.is_empty() {
                    return Err(self.err(
                        "TypeError",
                        format!("Random.random() takes no arguments ({} given)", args.len()),
                    ));
                }
                Ok(Value::Float(self.rand_float()))
            }
            "uniform" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.uniform"),
                    &["a", "b"],
                    2,
                    2,
                    args,
                    kwargs,
                )?;
                // `a + (b - a) * random()`, with CPython's operator errors for bad types.
                use crate::ast::BinOp;
                let x = a.get(0).cloned().unwrap_or(Value::None);
                let y = a.get(1).cloned().unwrap_or(Value::None);
                let span = self.binary_op(BinOp::Sub, &y, &x)?;
                let r = Value::Float(self.rand_float());
                let step = self.binary_op(BinOp::Mul, &span, &r)?;
                self.binary_op(BinOp::Add, &x, &step)
            }
            // A C method in CPython: its own argument messages; `k` is bounded like
            // any int result (`check_int_bits`).
            "getrandbits" => {
                let k = match self.one_positional("Random.getrandbits", &args, &kwargs)? {
                    Value::Int(k) => *k,
                    Value::Bool(b) => i64::from(*b),
                    Value::BigInt(_) => i64::MAX,
                    other => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "'{}' object cannot be interpreted as an integer",
                                self.type_name_of(other)
                            ),
                        ));
                    }
                };
                if k < 0 {
                    return Err(self.err("ValueError", "number of bits must be non-negative"));
                }
                self.check_int_bits(k as u64)?;
                let k = k as u64;
                let words = k.div_ceil(64);
                let mut digits = Vec::with_capacity(words as usize);
                for i in 0..words {
                    let w = self.rand_u64();
                    let left = k - i * 64;
                    digits.push(if left < 64 { w >> (64 - left) } else { w });
                }
                let n = num_bigint::BigUint::from_slice(
                    &digits
                        .iter()
                        .flat_map(|d| [*d as u32, (*d >> 32) as u32])
                        .collect::<Vec<u32>>(),
                );
                Ok(Value::from_bigint(num_bigint::BigInt::from(n)))
            }
            "randint" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.randint"),
                    &["a", "b"],
                    2,
                    2,
                    args,
                    kwargs,
                )?;
                let lo = a.get(0).cloned().unwrap_or(Value::None);
                let hi = a.get(1).cloned().unwrap_or(Value::None);
                let hi1 = self.binary_op(crate::ast::BinOp::Add, &hi, &Value::Int(1))?;
                self.rand_range(&[lo, hi1])
            }
            "randrange" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.randrange"),
                    &["start", "stop", "step"],
                    1,
                    3,
                    args,
                    kwargs,
                )?;
                let vals: Vec<Value> = a.vals.iter().map_while(|v| v.clone()).collect();
                self.rand_range(&vals)
            }
            "choice" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.choice"),
                    &["seq"],
                    1,
                    1,
                    args,
                    kwargs,
                )?;
                let seq = a.get(0).cloned().unwrap_or(Value::None);
                // CPython indexes `seq[randbelow(len(seq))]`: a dict is looked up by the
                // index, a set cannot be indexed.
                match &seq {
                    Value::Dict(d) => {
                        let n = d.borrow().len();
                        if n == 0 {
                            return Err(
                                self.err("IndexError", "Cannot choose from an empty sequence")
                            );
                        }
                        let i = self.rand_below(n as u64) as i64;
                        return self.get_item(&seq, &Value::Int(i));
                    }
                    Value::Set(_) => {
                        return Err(self.err("TypeError", "'set' object is not subscriptable"));
                    }
                    _ => {}
                }
                self.rand_population(&seq)?;
                let items = self.iterate(&seq)?;
                if items.is_empty() {
                    return Err(self.err("IndexError", "Cannot choose from an empty sequence"));
                }
                let i = self.rand_below(items.len() as u64) as usize;
                Ok(items[i].clone())
            }
            "choices" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.choices"),
                    &["population", "weights", "cum_weights", "k"],
                    1,
                    2,
                    args,
                    kwargs,
                )?;
                let items = self.iterate(a.get(0).unwrap_or(&Value::None))?;
                let k = match a.get(3) {
                    Some(v) => self.int_arg(v)?.max(0) as usize,
                    None => 1,
                };
                if k > self.limits.max_collection_items {
                    return Err(self.err(
                        "MemoryError",
                        format!(
                            "choices(k={k}) exceeds the collection limit ({})",
                            self.limits.max_collection_items
                        ),
                    ));
                }
                let n = items.len();
                let cum: Option<Vec<f64>> = match (a.opt(1), a.opt(2)) {
                    (Some(_), Some(_)) => {
                        return Err(self.err(
                            "TypeError",
                            "Cannot specify both weights and cumulative weights",
                        ));
                    }
                    (Some(w), None) => {
                        let mut acc = 0.0;
                        let mut out = Vec::new();
                        for x in self.iterate(w)? {
                            acc += self.num_arg(&x)?;
                            out.push(acc);
                        }
                        Some(out)
                    }
                    (None, Some(c)) => {
                        let mut out = Vec::new();
                        for x in self.iterate(c)? {
                            out.push(self.num_arg(&x)?);
                        }
                        Some(out)
                    }
                    (None, None) => None,
                };
                let mut out = Vec::with_capacity(k);
                match cum {
                    None => {
                        if n == 0 && k > 0 {
                            // CPython indexes the empty population: its own IndexError.
                            let pop = a.get(0).cloned().unwrap_or(Value::None);
                            self.get_item(&pop, &Value::Int(0))?;
                            return Ok(Value::list(Vec::new()));
                        }
                        for _ in 0..k {
                            let i = ((self.rand_float() * n as f64) as usize).min(n - 1);
                            out.push(items[i].clone());
                        }
                    }
                    Some(cum) => {
                        if cum.len() != n {
                            return Err(self.err(
                                "ValueError",
                                "The number of weights does not match the population",
                            ));
                        }
                        let total = cum.last().copied().unwrap_or(0.0);
                        if total <= 0.0 {
                            return Err(self
                                .err("ValueError", "Total of weights must be greater than zero"));
                        }
                        if !total.is_finite() {
                            return Err(self.err("ValueError", "Total of weights must be finite"));
                        }
                        for _ in 0..k {
                            let x = self.rand_float() * total;
                            let i = cum.partition_point(|c| *c <= x).min(n - 1);
                            out.push(items[i].clone());
                        }
                    }
                }
                Ok(Value::list(out))
            }
            "shuffle" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.shuffle"),
                    &["x"],
                    1,
                    1,
                    args,
                    kwargs,
                )?;
                let Some(Value::List(l)) = a.get(0).cloned() else {
                    let t = a.get(0).map(|v| self.type_name_of(v)).unwrap_or_default();
                    return Err(self.err(
                        "TypeError",
                        format!("'{t}' object does not support item assignment"),
                    ));
                };
                let n = l.borrow().len();
                for i in (1..n).rev() {
                    let j = self.rand_below(i as u64 + 1) as usize;
                    l.borrow_mut().swap(i, j);
                }
                Ok(Value::None)
            }
            "sample" => {
                let a = self.stdlib_args_as(
                    ArgStyle::PyMethod("Random.sample"),
                    &["population", "k", "counts"],
                    2,
                    2,
                    args,
                    kwargs,
                )?;
                let pop = a.get(0).cloned().unwrap_or(Value::None);
                if !matches!(
                    pop,
                    Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..)
                ) {
                    // `sample` checks for a sequence first, whatever the type.
                    return Err(self.err(
                        "TypeError",
                        "Population must be a sequence.  For dicts or sets, use sorted(d).",
                    ));
                }
                let mut items = self.iterate(&pop)?;
                let k = self.int_arg(a.get(1).unwrap_or(&Value::None))?;
                if k < 0 || k as usize > items.len() {
                    return Err(
                        self.err("ValueError", "Sample larger than population or is negative")
                    );
                }
                // A partial Fisher-Yates: the first k places.
                let n = items.len();
                for i in 0..k as usize {
                    let j = i + self.rand_below((n - i) as u64) as usize;
                    items.swap(i, j);
                }
                items.truncate(k as usize);
                Ok(Value::list(items))
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'random' has no attribute '{func}'"),
            )),
        }
    }

    /// `sample`/`choice` take sequences only (CPython's `TypeError` for sets and dicts).
    fn rand_population(&self, v: &Value) -> R<()> {
        match v {
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..) => Ok(()),
            Value::Set(_) | Value::Dict(_) => Err(self.err(
                "TypeError",
                "Population must be a sequence.  For dicts or sets, use sorted(d).",
            )),
            other => Err(self.err(
                "TypeError",
                format!("object of type '{}' has no len()", self.type_name_of(other)),
            )),
        }
    }
}
