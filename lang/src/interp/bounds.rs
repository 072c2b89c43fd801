//! Size and time bounds of single operations: the checks that make an operation whose
//! cost is proportional to an operand's value (`(0,) * 10**15`, `f"{x:>1000000000}"`,
//! `2 ** 10**10`) fail with a catchable `MemoryError` before it allocates, and the
//! periodic wall-clock check inside long native loops.
//!
//! Sizes come from [`crate::limits::Limits`] (`max_string_bytes`,
//! `max_collection_items`); every size is computed with saturating arithmetic before
//! anything is allocated. The time budget stays uncatchable (`Interrupt::Limit`).

use super::value::Value;
use super::{Interp, Interrupt, R};
use crate::pyfmt;
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};
use std::time::Instant;

/// How many [`Interp::poll`] calls pass between two reads of the clock.
const POLL_STRIDE: u32 = 4096;

/// Hard cap on the bit length of an int result, whatever `max_string_bytes` says:
/// multiplying two ints of this size is still a matter of milliseconds, and one native
/// multiplication cannot be interrupted by the time budget.
pub(crate) const MAX_INT_BITS: u64 = 4_000_000;

/// How many times a sequence is repeated by `seq * n`.
pub(crate) enum Repeat {
    /// `n <= 0` gives an empty sequence.
    Times(usize),
    /// `n` does not fit an index (CPython's OverflowError).
    TooBig,
}

impl Interp<'_> {
    /// `Limits::max_string_bytes`.
    pub(crate) fn max_string_bytes(&self) -> usize {
        self.limits.max_string_bytes
    }

    /// `Limits::max_collection_items`.
    pub(crate) fn max_collection_items(&self) -> usize {
        self.limits.max_collection_items
    }

    /// Refuse to build a string of `bytes` bytes when it exceeds the limit.
    pub(crate) fn check_str_len(&self, bytes: usize) -> R<()> {
        let max = self.limits.max_string_bytes;
        if bytes > max {
            return Err(self.err("MemoryError", pyfmt::too_large(bytes, max)));
        }
        Ok(())
    }

    /// Refuse to build a collection of `n` items when it exceeds the limit.
    pub(crate) fn check_items(&self, n: usize) -> R<()> {
        let max = self.limits.max_collection_items;
        if n > max {
            return Err(self.err(
                "MemoryError",
                format!("result would have {n} items (limit {max})"),
            ));
        }
        Ok(())
    }

    /// A collection of `len` items is about to grow by `more`.
    pub(crate) fn check_growth(&self, len: usize, more: usize) -> R<()> {
        if more == 0 {
            return Ok(());
        }
        self.check_items(len.saturating_add(more))
    }

    /// A dict or set of `len` keys is about to insert one key (`present`: already in).
    pub(crate) fn check_insert(&self, len: usize, present: bool) -> R<()> {
        if present || len < self.limits.max_collection_items {
            return Ok(());
        }
        self.check_growth(len, 1)
    }

    /// A dict or set of `len` keys is about to take up to `more` keys of another; only
    /// when that could exceed the limit are the keys it lacks counted (`new_keys`).
    pub(crate) fn check_merge(
        &self,
        len: usize,
        more: usize,
        new_keys: impl FnOnce() -> usize,
    ) -> R<()> {
        if len.saturating_add(more) <= self.limits.max_collection_items {
            return Ok(());
        }
        self.check_growth(len, new_keys())
    }

    /// Largest bit length an int result may have: `max_string_bytes * 8`, at most
    /// [`MAX_INT_BITS`].
    pub(crate) fn max_int_bits(&self) -> u64 {
        let bytes = u64::try_from(self.limits.max_string_bytes).unwrap_or(u64::MAX);
        bytes.saturating_mul(8).min(MAX_INT_BITS)
    }

    /// Refuse an int result whose bit length is estimated at `bits`.
    pub(crate) fn check_int_bits(&self, bits: u64) -> R<()> {
        let max = self.max_int_bits();
        if bits > max {
            return Err(self.err(
                "MemoryError",
                format!("integer would have {bits} bits (limit {max})"),
            ));
        }
        Ok(())
    }

    /// `x ** e` for ints with `e >= 0`: the result, or a `MemoryError` computed from the
    /// operands' sizes before any multiplication. `0`, `1` and `-1` take any exponent.
    pub(crate) fn int_pow(&self, x: BigInt, e: &BigInt) -> R<BigInt> {
        if x.is_zero() {
            return Ok(if e.is_zero() {
                BigInt::from(1)
            } else {
                BigInt::zero()
            });
        }
        if x.magnitude() == &num_bigint::BigUint::from(1u8) {
            let odd = e.bit(0);
            return Ok(if x.is_negative() && odd {
                BigInt::from(-1)
            } else {
                BigInt::from(1)
            });
        }
        // |x| >= 2: the result has about `log2|x| * e` bits.
        let log2 = match x.abs().to_f64() {
            Some(f) if f.is_finite() => f.log2(),
            _ => x.bits() as f64,
        };
        let bits = (log2 * e.to_f64().unwrap_or(f64::INFINITY)).ceil();
        // `as` saturates: an infinite estimate becomes u64::MAX.
        self.check_int_bits(bits as u64)?;
        let Some(e32) = e.to_u32() else {
            return Err(self.err("OverflowError", "exponent too large"));
        };
        Ok(num_traits::pow::Pow::pow(x, e32))
    }

    /// The repeat count of `seq * n` for an int-like `n`.
    pub(crate) fn repeat_count(&self, n: &Value) -> Repeat {
        let count = match n {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            Value::BigInt(b) => {
                if b.is_negative() {
                    Some(0)
                } else {
                    None
                }
            }
            _ => Some(0),
        };
        match count {
            Some(c) => Repeat::Times(usize::try_from(c.max(0)).unwrap_or(usize::MAX)),
            None => Repeat::TooBig,
        }
    }

    /// `len * count` items of a repeated sequence, refused beyond the item limit.
    pub(crate) fn check_repeat_items(&self, len: usize, count: &Repeat) -> R<usize> {
        match count {
            Repeat::Times(k) => {
                let n = len.saturating_mul(*k);
                self.check_items(n)?;
                Ok(*k)
            }
            Repeat::TooBig if len == 0 => Ok(0),
            Repeat::TooBig => Err(self.index_overflow()),
        }
    }

    /// `bytes * count` of a repeated string, refused beyond the string limit.
    pub(crate) fn check_repeat_str(&self, bytes: usize, count: &Repeat) -> R<usize> {
        match count {
            Repeat::Times(k) => {
                self.check_str_len(bytes.saturating_mul(*k))?;
                Ok(*k)
            }
            Repeat::TooBig if bytes == 0 => Ok(0),
            Repeat::TooBig => Err(self.index_overflow()),
        }
    }

    fn index_overflow(&self) -> Interrupt {
        self.err(
            "OverflowError",
            "cannot fit 'int' into an index-sized integer",
        )
    }

    /// Refuse a format spec whose width (times the fill's bytes) or, for numbers, whose
    /// precision alone exceeds the string limit (`f"{x:>1000000000}"`).
    pub(crate) fn check_format_spec(&self, spec: &pyfmt::FormatSpec, numeric: bool) -> R<()> {
        let fill = spec.fill.map_or(1, char::len_utf8);
        let width = spec.width.unwrap_or(0).saturating_mul(fill);
        let precision = if numeric {
            spec.precision.unwrap_or(0)
        } else {
            0
        };
        self.check_str_len(width.max(precision))
    }

    /// Check the wall-clock budget now (the same uncatchable limit as between statements).
    pub(crate) fn check_deadline(&self) -> R<()> {
        if let Some(d) = self.deadline
            && Instant::now() > d
        {
            return Err(Interrupt::Limit("time budget exceeded".into()));
        }
        Ok(())
    }

    /// Called once per item by long native loops and once per loop iteration: checks the
    /// wall-clock budget every [`POLL_STRIDE`] calls.
    pub(crate) fn poll(&mut self) -> R<()> {
        self.polls = self.polls.wrapping_add(1);
        if self.polls.is_multiple_of(POLL_STRIDE) {
            self.check_deadline()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
