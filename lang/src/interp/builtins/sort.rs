//! Stable sorting with Python's `<` (a fallible comparator: errors from `key` or from
//! comparing unorderable values propagate), as used by `sorted()` and `list.sort()`.

use super::args::{lt, scalar_eq};
use crate::interp::value::Value;
use crate::interp::{Interp, Interrupt};
use std::cmp::Ordering;

/// Which native comparison fits every key, if any.
enum Homogeneous {
    Ints,
    Floats,
    Strs,
    Mixed,
}

fn classify(keys: &[Value]) -> Homogeneous {
    let Some(first) = keys.first() else {
        return Homogeneous::Mixed;
    };
    match first {
        Value::Int(_) if keys.iter().all(|k| matches!(k, Value::Int(_))) => Homogeneous::Ints,
        Value::Str(_) if keys.iter().all(|k| matches!(k, Value::Str(_))) => Homogeneous::Strs,
        Value::Float(_)
            if keys
                .iter()
                .all(|k| matches!(k, Value::Float(f) if !f.is_nan())) =>
        {
            Homogeneous::Floats
        }
        _ => Homogeneous::Mixed,
    }
}

fn num_pair(a: &Value, b: &Value) -> Option<(f64, f64)> {
    const EXACT: i64 = 1 << 53;
    let f = |v: &Value| match v {
        Value::Int(i) if (-EXACT..=EXACT).contains(i) => Some(*i as f64),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Float(x) => Some(*x),
        _ => None,
    };
    Some((f(a)?, f(b)?))
}

/// `==` for values that need no user code (scalars and tuples of them).
fn fast_eq(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !fast_eq(p, q)? {
                    return Some(false);
                }
            }
            Some(true)
        }
        _ => scalar_eq(a, b),
    }
}

/// `<` for values that need no user code; `None` means "ask the interpreter" (which
/// also raises the TypeError for unorderable pairs).
fn fast_lt(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x < y),
        (Value::Str(x), Value::Str(y)) => Some(x < y),
        (Value::Float(x), Value::Float(y)) => Some(x < y),
        (Value::Tuple(x), Value::Tuple(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                if !fast_eq(p, q)? {
                    return fast_lt(p, q);
                }
            }
            Some(x.len() < y.len())
        }
        _ => num_pair(a, b).map(|(x, y)| x < y),
    }
}

fn general_lt(it: &mut Interp, a: &Value, b: &Value) -> Result<bool, Interrupt> {
    match fast_lt(a, b) {
        Some(r) => Ok(r),
        None => lt(it, a, b),
    }
}

/// Stable merge sort of the index slice with a fallible "less than".
fn merge_sort(
    idx: &mut [usize],
    buf: &mut Vec<usize>,
    less: &mut dyn FnMut(usize, usize) -> Result<bool, Interrupt>,
) -> Result<(), Interrupt> {
    let n = idx.len();
    if n <= 12 {
        for i in 1..n {
            let x = idx[i];
            let mut j = i;
            while j > 0 && less(x, idx[j - 1])? {
                idx[j] = idx[j - 1];
                j -= 1;
            }
            idx[j] = x;
        }
        return Ok(());
    }
    let mid = n / 2;
    merge_sort(&mut idx[..mid], buf, less)?;
    merge_sort(&mut idx[mid..], buf, less)?;
    if !less(idx[mid], idx[mid - 1])? {
        return Ok(());
    }
    buf.clear();
    buf.extend_from_slice(&idx[..mid]);
    let (mut i, mut j, mut k) = (0, mid, 0);
    while i < buf.len() && j < n {
        if less(idx[j], buf[i])? {
            idx[k] = idx[j];
            j += 1;
        } else {
            idx[k] = buf[i];
            i += 1;
        }
        k += 1;
    }
    while i < buf.len() {
        idx[k] = buf[i];
        i += 1;
        k += 1;
    }
    Ok(())
}

/// Sort `items` stably by Python's `<` on `key(item)` (or the items themselves), like
/// CPython's `list.sort`: `reverse` keeps equal elements in their original order. On an
/// error (from `key` or an unorderable pair) the items come back in their original order
/// with the error.
pub(super) fn sort_values(
    it: &mut Interp,
    mut items: Vec<Value>,
    key: Option<&Value>,
    reverse: bool,
) -> (Vec<Value>, Option<Interrupt>) {
    let n = items.len();
    if n < 2 {
        return (items, None);
    }
    // A stable sort with the reversed comparison keeps equal items in order, which is
    // what `reverse=True` means.
    let ord = |o: Ordering| if reverse { o.reverse() } else { o };
    let key = key.filter(|k| !k.is_none());
    if let Err(e) = it.check_deadline() {
        return (items, Some(e));
    }
    let Some(f) = key else {
        match classify(&items) {
            Homogeneous::Ints => {
                items.sort_by(|a, b| match (a, b) {
                    (Value::Int(x), Value::Int(y)) => ord(x.cmp(y)),
                    _ => Ordering::Equal,
                });
                return (items, None);
            }
            Homogeneous::Strs => {
                items.sort_by(|a, b| match (a, b) {
                    (Value::Str(x), Value::Str(y)) => ord(x.cmp(y)),
                    _ => Ordering::Equal,
                });
                return (items, None);
            }
            Homogeneous::Floats => {
                items.sort_by(|a, b| match (a, b) {
                    (Value::Float(x), Value::Float(y)) => {
                        ord(x.partial_cmp(y).unwrap_or(Ordering::Equal))
                    }
                    _ => Ordering::Equal,
                });
                return (items, None);
            }
            Homogeneous::Mixed => {}
        }
        return match merge_perm(it, &items, reverse) {
            Ok(perm) => (apply_perm(items, &perm), None),
            Err(e) => (items, Some(e)),
        };
    };
    let mut keys = Vec::with_capacity(n);
    for v in &items {
        if let Err(e) = it.poll() {
            return (items, Some(e));
        }
        match it.call_value(f, vec![v.clone()], Vec::new()) {
            Ok(k) => keys.push(k),
            Err(e) => return (items, Some(e)),
        }
    }
    let perm: Vec<usize> = match classify(&keys) {
        Homogeneous::Ints => {
            let mut idx: Vec<usize> = (0..n).collect();
            idx.sort_by(|&a, &b| match (&keys[a], &keys[b]) {
                (Value::Int(x), Value::Int(y)) => ord(x.cmp(y)),
                _ => Ordering::Equal,
            });
            idx
        }
        Homogeneous::Strs => {
            let mut idx: Vec<usize> = (0..n).collect();
            idx.sort_by(|&a, &b| match (&keys[a], &keys[b]) {
                (Value::Str(x), Value::Str(y)) => ord(x.cmp(y)),
                _ => Ordering::Equal,
            });
            idx
        }
        Homogeneous::Floats => {
            let mut idx: Vec<usize> = (0..n).collect();
            idx.sort_by(|&a, &b| match (&keys[a], &keys[b]) {
                (Value::Float(x), Value::Float(y)) => {
                    ord(x.partial_cmp(y).unwrap_or(Ordering::Equal))
                }
                _ => Ordering::Equal,
            });
            idx
        }
        Homogeneous::Mixed => match merge_perm(it, &keys, reverse) {
            Ok(p) => p,
            Err(e) => return (items, Some(e)),
        },
    };
    drop(keys);
    if let Err(e) = it.check_deadline() {
        return (items, Some(e));
    }
    (apply_perm(items, &perm), None)
}

/// The stable sorting permutation of `keys` under Python's `<` (merge sort; CPython's
/// reverse trick: reverse, sort stably, reverse back).
fn merge_perm(it: &mut Interp, keys: &[Value], reverse: bool) -> Result<Vec<usize>, Interrupt> {
    let n = keys.len();
    let mut idx: Vec<usize> = if reverse {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut buf = Vec::with_capacity(n / 2 + 1);
    let mut less = |a: usize, b: usize| {
        it.poll()?;
        general_lt(it, &keys[a], &keys[b])
    };
    merge_sort(&mut idx, &mut buf, &mut less)?;
    if reverse {
        idx.reverse();
    }
    Ok(idx)
}

/// Reorder `items` by a permutation (`perm[i]` = index of the item that goes to `i`).
fn apply_perm(items: Vec<Value>, perm: &[usize]) -> Vec<Value> {
    let mut slots: Vec<Option<Value>> = items.into_iter().map(Some).collect();
    perm.iter()
        .map(|&i| {
            slots
                .get_mut(i)
                .and_then(Option::take)
                .unwrap_or(Value::None)
        })
        .collect()
}
