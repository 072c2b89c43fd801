//! Python sequence indexing: negative indexes and `slice.indices` semantics.

/// `seq[i]` index normalisation: negative `i` counts from the end; `None` when out of range
/// (IndexError).
pub fn normalize_index(len: usize, i: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let j = if i < 0 { i.checked_add(len)? } else { i };
    if (0..len).contains(&j) {
        Some(j as usize)
    } else {
        None
    }
}

/// `slice(start, stop, step).indices(len)` plus the number of selected items, as CPython's
/// `PySlice_Unpack` + `PySlice_AdjustIndices`. `step` must not be 0 (the caller raises
/// `slice step cannot be zero`). Returns `(start, stop, step, count)`.
pub fn slice_range(
    len: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
) -> (i64, i64, i64, usize) {
    let len = len.max(0);
    // CPython clamps the step to -PY_SSIZE_T_MAX so that negating it cannot overflow.
    let step = if step == 0 { 1 } else { step.max(-i64::MAX) };
    let (def_start, def_stop) = if step < 0 {
        (i64::MAX, i64::MIN)
    } else {
        (0, i64::MAX)
    };
    let adjust = |v: i64| -> i64 {
        if v < 0 {
            let v = v.saturating_add(len);
            if v < 0 {
                if step < 0 { -1 } else { 0 }
            } else {
                v
            }
        } else if v >= len {
            if step < 0 { len - 1 } else { len }
        } else {
            v
        }
    };
    let start = adjust(start.unwrap_or(def_start));
    let stop = adjust(stop.unwrap_or(def_stop));
    let count = if step < 0 {
        if stop < start {
            (i128::from(start) - i128::from(stop) - 1) / -i128::from(step) + 1
        } else {
            0
        }
    } else if start < stop {
        (i128::from(stop) - i128::from(start) - 1) / i128::from(step) + 1
    } else {
        0
    };
    (start, stop, step, usize::try_from(count).unwrap_or(0))
}

/// The indexes selected by `seq[start:stop:step]` on a sequence of length `len`, in order
/// (negative steps walk backwards). `step` must not be 0.
pub fn slice_indices(len: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<usize> {
    let (start, _, step, count) = slice_range(len, start, stop, step);
    let mut out = Vec::with_capacity(count);
    let mut i = i128::from(start);
    for _ in 0..count {
        out.push(i as usize);
        i += i128::from(step);
    }
    out
}
