//! `random`: MT19937 seeded and drawn exactly as CPython does (`init_by_array` over an int
//! seed's 32-bit words, `str` seeds through SHA-512, 53-bit `random()`, `_randbelow` by
//! rejection of `getrandbits`), so a seeded program draws CPython's numbers. One generator
//! per interpreter thread, seeded from the host's OS random source until `seed(x)`.

use super::super::value::*;
use super::super::{Interp, R};
use super::ArgStyle;
use num_bigint::BigInt;
use num_traits::Signed;
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    static STATE: RefCell<Option<Box<Mt>>> = const { RefCell::new(None) };
}

/// Words of MT19937's state.
const N: usize = 624;
/// The twist's middle offset.
const M: usize = 397;

/// MT19937, the generator CPython's `random` module runs, seeded the way CPython seeds it
/// (`init_by_array` over the seed's 32-bit words), so a seeded svc program draws the
/// numbers the same program draws under CPython.
struct Mt {
    state: [u32; N],
    index: usize,
}

impl Mt {
    /// The reference `init_genrand`: a linear recurrence from one 32-bit value.
    fn from_u32(s: u32) -> Mt {
        let mut state = [0u32; N];
        state[0] = s;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt { state, index: N }
    }

    /// The reference `init_by_array`: the key's words mixed into the state (CPython
    /// passes the absolute value of an int seed, least significant word first).
    fn from_key(key: &[u32]) -> Mt {
        let mut mt = Mt::from_u32(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = s[i - 1];
            s[i] = (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = s[i - 1];
            s[i] =
                (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    /// Seeded from the absolute value of an integer (CPython's `random_seed` for ints).
    fn from_int(n: &BigInt) -> Mt {
        let mut key = n.magnitude().to_u32_digits();
        if key.is_empty() {
            key.push(0);
        }
        Mt::from_key(&key)
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        let s = &mut self.state;
        for k in 0..N {
            let y = (s[k] & UPPER) | (s[(k + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            s[k] = s[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// The integer a `str` seed stands for under `version=2` (CPython's default): the text's
/// UTF-8 bytes followed by their SHA-512 digest, read as one big-endian number.
fn str_seed_v2(s: &str) -> BigInt {
    use sha2::Digest;
    let mut bytes = s.as_bytes().to_vec();
    bytes.extend_from_slice(&sha2::Sha512::digest(s.as_bytes()));
    BigInt::from(num_bigint::BigUint::from_bytes_be(&bytes))
}

/// The integer a `str` seed stands for under `version=1` (CPython's old string hash).
fn str_seed_v1(s: &str) -> BigInt {
    let codes: Vec<u64> = s.chars().map(|c| u64::from(u32::from(c))).collect();
    let mut x: u64 = codes.first().map_or(0, |c| c << 7);
    for c in &codes {
        x = 1_000_003u64.wrapping_mul(x) ^ c;
    }
    x ^= codes.len() as u64;
    BigInt::from(x)
}

/// An int-like value (`int`, `bool`, an int enum member) as a big integer.
fn as_bigint(v: &Value) -> Option<BigInt> {
    match v {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Bool(b) => Some(BigInt::from(u8::from(*b))),
        Value::BigInt(b) => Some((**b).clone()),
        Value::EnumMember(m)
            if super::super::decl_later::enum_value_type(&m.class) == Some("int") =>
        {
            as_bigint(&m.value)
        }
        _ => None,
    }
}

impl Interp<'_> {
    /// The next 32 bits of the generator, seeding it from the OS on first use.
    fn rand_u32(&mut self) -> u32 {
        let have = STATE.with(|st| st.borrow().is_some());
        if !have {
            self.seed_from_os();
        }
        STATE.with(|st| st.borrow_mut().as_mut().map_or(0, |mt| mt.next_u32()))
    }

    /// An unseeded generator: 624 words of OS randomness as the key (CPython's way).
    fn seed_from_os(&mut self) {
        let mut buf = vec![0u8; N * 4];
        self.host.random_bytes(&mut buf);
        let key: Vec<u32> = buf
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        STATE.with(|st| *st.borrow_mut() = Some(Box::new(Mt::from_key(&key))));
    }

    /// `random()`: 53 random bits from two words (27 and 26 bits), as CPython.
    fn rand_float(&mut self) -> f64 {
        let a = f64::from(self.rand_u32() >> 5);
        let b = f64::from(self.rand_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `k <= 64`: words least significant first, the last one cut
    /// to the bits still wanted.
    fn rand_bits_u64(&mut self, k: u64) -> u64 {
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.rand_u32() >> (32 - k));
        }
        let lo = u64::from(self.rand_u32());
        let hi = u64::from(self.rand_u32() >> (64 - k));
        lo | (hi << 32)
    }

    /// `getrandbits(k)` for any `k`, as a big integer.
    fn rand_bits_big(&mut self, k: u64) -> BigInt {
        if k <= 64 {
            return BigInt::from(self.rand_bits_u64(k));
        }
        let words = k.div_ceil(32);
        let mut digits = Vec::with_capacity(words as usize);
        let mut left = k;
        for _ in 0..words {
            let w = self.rand_u32();
            digits.push(if left < 32 { w >> (32 - left) } else { w });
            left = left.saturating_sub(32);
        }
        BigInt::from(num_bigint::BigUint::from_slice(&digits))
    }

    /// A uniform integer in `0..n` (`n > 0`): CPython's `_randbelow`, drawing
    /// `n.bit_length()` bits until the value falls below `n`.
    fn rand_below(&mut self, n: u64) -> u64 {
        let k = u64::from(64 - n.leading_zeros());
        loop {
            let r = self.rand_bits_u64(k);
            if r < n {
                return r;
            }
        }
    }

    /// `_randbelow` for a big bound.
    fn rand_below_big(&mut self, n: &BigInt) -> BigInt {
        use num_traits::ToPrimitive;
        if let Some(small) = n.to_u64() {
            return BigInt::from(self.rand_below(small));
        }
        let k = n.bits();
        loop {
            let r = self.rand_bits_big(k);
            if &r < n {
                return r;
            }
        }
    }

    /// CPython's `_index` of a `randrange` argument.
    fn rand_index(&self, v: &Value) -> R<BigInt> {
        as_bigint(v).ok_or_else(|| {
            self.err(
                "TypeError",
                format!(
                    "'{}' object cannot be interpreted as an integer",
                    self.type_name_of(v)
                ),
            )
        })
    }

    /// `randrange(start, stop=None, step=1)` exactly as CPython 3.12 words and draws it.
    fn rand_range(
        &mut self,
        start: &Value,
        stop: Option<&Value>,
        step: Option<&Value>,
    ) -> R<Value> {
        let show = |it: &mut Self, vs: &[&Value]| -> R<String> {
            let mut parts = Vec::new();
            for v in vs {
                parts.push(it.repr(v)?);
            }
            Ok(parts.join(", "))
        };
        let istart = self.rand_index(start)?;
        let Some(stop_v) = stop.filter(|v| !v.is_none()) else {
            // `step is not _ONE`: any step but the int 1 itself.
            if step.is_some_and(|s| !matches!(s, Value::Int(1))) {
                return Err(self.err("TypeError", "Missing a non-None stop argument"));
            }
            if istart.is_positive() {
                return Ok(Value::from_bigint(self.rand_below_big(&istart)));
            }
            return Err(self.err("ValueError", "empty range for randrange()"));
        };
        let istop = self.rand_index(stop_v)?;
        let width = &istop - &istart;
        let istep = match step {
            Some(v) => self.rand_index(v)?,
            None => BigInt::from(1),
        };
        use num_integer::Integer;
        let one = BigInt::from(1);
        if istep == one {
            if width.is_positive() {
                return Ok(Value::from_bigint(istart + self.rand_below_big(&width)));
            }
            let s = show(self, &[start, stop_v])?;
            return Err(self.err("ValueError", format!("empty range in randrange({s})")));
        }
        let n = if istep.is_positive() {
            (&width + &istep - &one).div_floor(&istep)
        } else if istep.is_negative() {
            (&width + &istep + &one).div_floor(&istep)
        } else {
            return Err(self.err("ValueError", "zero step for randrange()"));
        };
        if !n.is_positive() {
            let one_v = Value::Int(1);
            let step_v = step.unwrap_or(&one_v);
            let s = show(self, &[start, stop_v, step_v])?;
            return Err(self.err("ValueError", format!("empty range in randrange({s})")));
        }
        let k = self.rand_below_big(&n);
        Ok(Value::from_bigint(istart + istep * k))
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
                let version = match a.get(1) {
                    Some(v) => self.int_arg(v)?,
                    None => 2,
                };
                // CPython's `Random.seed`: None reseeds from the OS, an int seeds by its
                // absolute value, a str by its bytes and their SHA-512 (version 2) or the
                // old string hash (version 1), a float by its hash as an unsigned word.
                let key = match a.get(0).unwrap_or(&Value::None) {
                    Value::None => {
                        self.seed_from_os();
                        return Ok(Value::None);
                    }
                    Value::Str(s) if version == 1 => str_seed_v1(s),
                    Value::Str(s) => str_seed_v2(s),
                    v @ Value::Float(_) => {
                        let v = v.clone();
                        // The hash read as an unsigned machine word, not its absolute value.
                        BigInt::from(super::super::builtins::py_hash(self, &v)? as u64)
                    }
                    v => match as_bigint(v) {
                        Some(n) => n,
                        None => {
                            return Err(self.err(
                                "TypeError",
                                "The only supported seed types are: None,\nint, float, str, bytes, and bytearray.",
                            ));
                        }
                    },
                };
                let state = Box::new(Mt::from_int(&key));
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
                let bits = self.rand_bits_big(k as u64);
                Ok(Value::from_bigint(bits))
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
                self.rand_range(&lo, Some(&hi1), None)
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
                let start = a.get(0).cloned().unwrap_or(Value::None);
                self.rand_range(&start, a.get(1), a.get(2))
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
                let n = self.seq_len(&seq);
                if n == 0 {
                    return Err(self.err("IndexError", "Cannot choose from an empty sequence"));
                }
                let i = self.rand_below(n as u64) as i64;
                self.get_item(&seq, &Value::Int(i))
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
                    (Some(Value::Int(k)), None) => {
                        return Err(self.err(
                            "TypeError",
                            format!("The number of choices must be a keyword argument: k={k}"),
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
                    let x = a.get(0).cloned().unwrap_or(Value::None);
                    self.rand_population(&x)?;
                    // CPython only fails at the first swap: nothing to swap, no error.
                    if self.seq_len(&x) < 2 {
                        return Ok(Value::None);
                    }
                    let t = self.type_name_of(&x);
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
                let k_v = a.get(1).cloned().unwrap_or(Value::None);
                match a.opt(2) {
                    Some(counts) => {
                        let counts = counts.clone();
                        self.rand_sample_counts(&pop, &k_v, &counts)
                    }
                    None => self.rand_sample(&pop, &k_v).map(Value::list),
                }
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'random' has no attribute '{func}'"),
            )),
        }
    }

    /// The length of a sequence `rand_population` accepted.
    fn seq_len(&self, v: &Value) -> usize {
        match v {
            Value::List(l) => l.borrow().len(),
            Value::Tuple(t) => t.len(),
            Value::Str(s) => s.chars().count(),
            Value::Range(a, b, c) => super::super::builtins::range_len(*a, *b, *c),
            Value::Dict(d) => d.borrow().len(),
            _ => 0,
        }
    }

    /// `sample(population, k)` with CPython's two strategies, so a seeded draw picks
    /// the same items: a pool it swaps out of when the population is small next to `k`,
    /// otherwise indexes drawn until unseen.
    fn rand_sample(&mut self, pop: &Value, k_v: &Value) -> R<Vec<Value>> {
        let n = self.seq_len(pop);
        let k = match k_v {
            Value::Float(f) if *f >= 0.0 && *f <= n as f64 => {
                // `[None] * k` is where CPython fails.
                return Err(self.err(
                    "TypeError",
                    "can't multiply sequence by non-int of type 'float'",
                ));
            }
            Value::Float(_) => -1,
            v => {
                use num_traits::ToPrimitive;
                match as_bigint(v) {
                    Some(b) => b.to_i64().unwrap_or(-1),
                    None => {
                        let t = self.type_name_of(v);
                        return Err(self.err(
                            "TypeError",
                            format!("'<=' not supported between instances of 'int' and '{t}'"),
                        ));
                    }
                }
            }
        };
        if k < 0 || k as u64 > n as u64 {
            return Err(self.err("ValueError", "Sample larger than population or is negative"));
        }
        let k = k as usize;
        if k > self.limits.max_collection_items {
            return Err(self.err(
                "MemoryError",
                format!(
                    "sample(k={k}) exceeds the collection limit ({})",
                    self.limits.max_collection_items
                ),
            ));
        }
        let mut setsize: f64 = 21.0;
        if k > 5 {
            let exp = ((k as f64 * 3.0).ln() / 4f64.ln()).ceil();
            setsize += 4f64.powf(exp);
        }
        let mut out = Vec::with_capacity(k);
        if n as f64 <= setsize {
            let mut pool = self.iterate(pop)?;
            for i in 0..k {
                let j = self.rand_below((n - i) as u64) as usize;
                out.push(pool[j].clone());
                pool[j] = pool[n - i - 1].clone();
            }
        } else {
            let mut selected = std::collections::HashSet::with_capacity(k);
            for _ in 0..k {
                let mut j = self.rand_below(n as u64);
                while selected.contains(&j) {
                    j = self.rand_below(n as u64);
                }
                selected.insert(j);
                out.push(self.get_item(pop, &Value::Int(j as i64))?);
            }
        }
        Ok(out)
    }

    /// `sample(population, k, counts=...)`: a sample of the indexes into the repeated
    /// population, mapped back through the running totals (CPython's way).
    fn rand_sample_counts(&mut self, pop: &Value, k_v: &Value, counts: &Value) -> R<Value> {
        let n = self.seq_len(pop);
        let mut cum: Vec<i64> = Vec::new();
        let mut acc: i64 = 0;
        for c in self.iterate(counts)? {
            let Some(c) = as_bigint(&c) else {
                return Err(self.err("TypeError", "Counts must be integers"));
            };
            use num_traits::ToPrimitive;
            acc = acc
                .checked_add(c.to_i64().unwrap_or(i64::MAX))
                .ok_or_else(|| {
                    self.err(
                        "OverflowError",
                        "Python int too large to convert to C ssize_t",
                    )
                })?;
            cum.push(acc);
        }
        if cum.len() != n {
            return Err(self.err(
                "ValueError",
                "The number of counts does not match the population",
            ));
        }
        let total = cum.pop().unwrap_or(0);
        if total <= 0 {
            return Err(self.err("ValueError", "Total of counts must be greater than zero"));
        }
        let picks = self.rand_sample(&Value::Range(0, total, 1), k_v)?;
        let mut out = Vec::with_capacity(picks.len());
        for s in picks {
            let Value::Int(s) = s else { continue };
            let i = cum.partition_point(|c| *c <= s);
            out.push(self.get_item(pop, &Value::Int(i as i64))?);
        }
        Ok(Value::list(out))
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
