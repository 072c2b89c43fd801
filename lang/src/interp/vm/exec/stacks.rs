//! The VM's operand, slot and frame stacks (issue 11, sixth step): buffers that keep
//! their entries above the top, so a value built at a push site is written straight
//! into its entry.
//!
//! Why: `Vec::push(v)` builds `v` in a temporary with narrow stores (the tag byte, then
//! the payload) and then copies the 32 bytes with 16-byte loads, which the processor
//! cannot forward from its store buffer; the copy waits until the stores reach the
//! cache. In profiles of fib, the comprehensions and the method calls that reload was
//! the hottest instruction of `vm_loop` (a quarter of its samples in fib). An
//! assignment into an existing entry (`*st.stack.slot() = Value::Int(r)`) writes the
//! tag and the payload where they go, and nothing reads them back at once.
//!
//! **Invariant**: an entry at or above `len` holds no reference: `None`, or a scalar
//! (`Bool`, `Int`, `Float`) a pop left behind. So nothing is kept alive by an entry
//! above the top (a value is dropped when it is popped or truncated, as with a `Vec`,
//! in the same order), and overwriting such an entry drops nothing that matters.

use super::{Code, Frame};
use crate::interp::value::Value;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

/// Entries added at a time when a buffer is full.
const GROW_MIN: usize = 32;

/// Whether `v` holds no reference (may stay above the top of a stack).
#[inline(always)]
fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_)
    )
}

/// `*dst = v`, except that an old scalar (`None`, `Bool`, `Int`, `Float`: nothing to
/// release) is forgotten rather than dropped: the assignment would call the out-of-line
/// drop of `Value` for it (which in the method-call loop was a tenth of the work).
#[inline(always)]
pub(super) fn assign(dst: &mut Value, v: Value) {
    assign_drop(std::mem::replace(dst, v));
}

/// `assign` for a slot.
#[inline(always)]
pub(super) fn assign_slot(dst: &mut Option<Value>, v: Value) {
    if let Some(old) = dst.replace(v) {
        assign_drop(old);
    }
}

/// Drop `old`, forgetting it when it is a scalar (see `assign`); a function or an
/// object (what calls release most) drops its reference inline.
#[inline(always)]
pub(super) fn assign_drop(old: Value) {
    match old {
        Value::Func(f) => drop(f),
        Value::Instance(i) => drop(i),
        old if is_scalar(&old) => std::mem::forget(old),
        old => drop(old),
    }
}

/// The operand stack (see the module doc for its invariant).
#[derive(Default)]
pub(super) struct OpStack {
    buf: Vec<Value>,
    len: usize,
}

impl OpStack {
    /// Entries allocated (what a kept stack set holds on to).
    pub(super) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Push an entry and return it for the caller to assign (it holds `None` or a
    /// scalar).
    #[inline(always)]
    pub(super) fn slot(&mut self) -> &mut Value {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.len;
        self.len += 1;
        &mut self.buf[i]
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = (self.buf.len() * 2).max(GROW_MIN);
        self.buf.resize_with(n, || Value::None);
    }

    #[inline(always)]
    pub(super) fn push(&mut self, v: Value) {
        assign(self.slot(), v);
    }

    /// Push an int, written in place.
    #[inline(always)]
    pub(super) fn push_int(&mut self, i: i64) {
        let dst = self.slot();
        if let Value::Int(x) = dst {
            *x = i;
        } else {
            assign(dst, Value::Int(i));
        }
    }

    /// Push a copy of `v`, each common kind built in its entry.
    #[inline(always)]
    pub(super) fn push_clone(&mut self, v: &Value) {
        clone_into(self.slot(), v);
    }

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Value> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(std::mem::replace(&mut self.buf[self.len], Value::None))
    }

    /// Entry `i`, below the top: one bounds check (against the buffer) instead of the
    /// two of indexing through `Deref`.
    #[inline(always)]
    pub(super) fn at(&self, i: usize) -> &Value {
        debug_assert!(i < self.len);
        &self.buf[i]
    }

    /// The two top entries when both are ints: the left one to write the result of
    /// an operation into, and the right one's value (`None` for anything else).
    #[inline(always)]
    pub(super) fn int_pair(&mut self) -> Option<(&mut i64, i64)> {
        match self.buf.get_mut(self.len.wrapping_sub(2)..self.len) {
            Some([Value::Int(x), Value::Int(y)]) => Some((x, *y)),
            _ => None,
        }
    }

    /// Drop the top entry, known to hold a scalar (left where it is).
    #[inline(always)]
    pub(super) fn pop_scalar(&mut self) {
        debug_assert!(self.len > 0 && is_scalar(&self.buf[self.len - 1]));
        self.len -= 1;
    }

    /// Move the top entry down to `to`, which is right under it, dropping what `to`
    /// held: a compiled function's result over its callee (`Op::Return`). An int is
    /// read as an int and written into the entry (a copy of the whole entry would wait
    /// for the narrow stores that just wrote it), and stays above the top as a scalar.
    #[inline(always)]
    pub(super) fn settle_top(&mut self, to: usize) {
        debug_assert_eq!(self.len, to + 2);
        let from = to + 1;
        if let Value::Int(i) = self.buf[from] {
            assign(&mut self.buf[to], Value::Int(i));
        } else {
            let v = std::mem::replace(&mut self.buf[from], Value::None);
            assign(&mut self.buf[to], v);
        }
        self.len = from;
    }

    /// Drop the entries from `n` up, first to last (as `Vec::truncate`).
    pub(super) fn truncate(&mut self, n: usize) {
        for v in self.buf[n.min(self.len)..self.len].iter_mut() {
            if !is_scalar(v) {
                *v = Value::None;
            }
        }
        self.len = self.len.min(n);
    }

    /// The top `len - base` entries, moved out in order.
    pub(super) fn drain_from(&mut self, base: usize) -> Vec<Value> {
        let items = self.buf[base..self.len]
            .iter_mut()
            .map(|v| std::mem::replace(v, Value::None))
            .collect();
        self.len = base;
        items
    }

    /// The entries from `base` up, for moving the arguments of a call out one by
    /// one; `set_len_moved(base)` then drops them from the stack.
    #[inline(always)]
    pub(super) fn above_mut(&mut self, base: usize) -> &mut [Value] {
        &mut self.buf[base..self.len]
    }

    /// Lower the top to `base` after every entry above it was moved out or holds a
    /// scalar (`above_mut`).
    #[inline(always)]
    pub(super) fn set_len_moved(&mut self, base: usize) {
        debug_assert!(self.buf[base..self.len].iter().all(is_scalar));
        self.len = base;
    }
}

impl Deref for OpStack {
    type Target = [Value];
    #[inline(always)]
    fn deref(&self) -> &[Value] {
        &self.buf[..self.len]
    }
}

impl DerefMut for OpStack {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [Value] {
        &mut self.buf[..self.len]
    }
}

/// Write a copy of `v` into `dst`: the kinds calls and loops copy most (ints,
/// functions, objects) built in place, the rest through `Value::clone`.
#[inline(always)]
pub(super) fn clone_into(dst: &mut Value, v: &Value) {
    match v {
        Value::Int(i) => {
            if let Value::Int(x) = dst {
                *x = *i;
            } else {
                *dst = Value::Int(*i);
            }
        }
        Value::Func(f) => assign(dst, Value::Func(f.clone())),
        Value::Instance(i) => assign(dst, Value::Instance(i.clone())),
        other => assign(dst, other.clone()),
    }
}

/// The local slots of every frame (see the module doc for its invariant: an entry at
/// or above `len` is `None` or holds a scalar).
#[derive(Default)]
pub(super) struct SlotStack {
    buf: Vec<Option<Value>>,
    len: usize,
}

impl SlotStack {
    /// Entries allocated (what a kept stack set holds on to).
    pub(super) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    pub(super) fn push(&mut self, v: Option<Value>) {
        let i = self.len;
        self.open(1);
        self.buf[i] = v;
    }

    /// Make `n` more slots; each is unbound, except that an entry left with a scalar
    /// keeps it for the caller to overwrite (`open_params` then unbinds the rest).
    #[inline(always)]
    fn open(&mut self, n: usize) {
        let end = self.len + n;
        if end > self.buf.len() {
            self.grow(end);
        }
        self.len = end;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, end: usize) {
        let n = (self.buf.len() * 2).max(end).max(GROW_MIN);
        self.buf.resize_with(n, || None);
    }

    /// Make the slots of a frame: `locals` of them, the first `params` to be bound by
    /// the caller right away (they may hold stale scalars until then), the rest
    /// unbound. Returns the base of the new slots.
    #[inline(always)]
    pub(super) fn open_frame(&mut self, params: usize, locals: usize) -> usize {
        let base = self.len;
        self.open(locals);
        for s in &mut self.buf[base + params..base + locals] {
            if s.is_some() {
                *s = None;
            }
        }
        base
    }

    /// Make slots up to `n` in all, unbound.
    pub(super) fn resize(&mut self, n: usize) {
        if n <= self.len {
            self.truncate(n);
            return;
        }
        let base = self.len;
        self.open_frame(0, n - base);
    }

    /// Drop the slots from `n` up, first to last (as `Vec::truncate`).
    #[inline(always)]
    pub(super) fn truncate(&mut self, n: usize) {
        for s in self.buf[n.min(self.len)..self.len].iter_mut() {
            if s.as_ref().is_some_and(|v| !is_scalar(v)) {
                *s = None;
            }
        }
        self.len = self.len.min(n);
    }

    /// Slot `i` of the open frames: one bounds check (against the buffer) instead of
    /// the two of indexing through `Deref`.
    #[inline(always)]
    pub(super) fn at(&self, i: usize) -> &Option<Value> {
        debug_assert!(i < self.len);
        &self.buf[i]
    }

    /// Move argument `src` into slot `i` (left `None`, or with a scalar copied).
    #[inline(always)]
    pub(super) fn bind_arg(&mut self, i: usize, src: &mut Value) {
        let dst = &mut self.buf[i];
        match (src, &mut *dst) {
            (Value::Int(v), Some(Value::Int(x))) => *x = *v,
            (src, dst) => assign_slot(dst, std::mem::replace(src, Value::None)),
        }
    }

    /// Bind slot `i` to an int, written in place when it holds one.
    #[inline(always)]
    pub(super) fn set_int(&mut self, i: usize, v: i64) {
        let dst = &mut self.buf[i];
        if let Some(Value::Int(x)) = dst {
            *x = v;
        } else {
            assign_slot(dst, Value::Int(v));
        }
    }
}

impl Deref for SlotStack {
    type Target = [Option<Value>];
    #[inline(always)]
    fn deref(&self) -> &[Option<Value>] {
        &self.buf[..self.len]
    }
}

impl DerefMut for SlotStack {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [Option<Value>] {
        &mut self.buf[..self.len]
    }
}

/// The frames of compiled calls. A frame above the top keeps its code (an `Rc` that
/// owns nothing a program can see, so a recursive call finds its code already there)
/// but never a function or `self`: those are dropped when the frame is popped, as
/// when a `Vec` dropped the whole frame. A push writes the fields into the entry
/// (`Vec::push` of a frame went through a temporary, as values did).
#[derive(Default)]
pub(super) struct FrameStack {
    buf: Vec<Frame>,
    len: usize,
}

impl FrameStack {
    /// Entries allocated (what a kept stack set holds on to).
    pub(super) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Push a frame of `code` with the given bases, its pc 0 and no function or
    /// `self` yet (the caller moves them into the entry returned).
    #[inline(always)]
    pub(super) fn push(
        &mut self,
        code: Rc<Code>,
        slot_base: u32,
        stack_base: u32,
        iter_base: u32,
    ) -> &mut Frame {
        if self.len == self.buf.len() {
            self.grow(&code);
        }
        let f = &mut self.buf[self.len];
        self.len += 1;
        if !Rc::ptr_eq(&f.code, &code) {
            f.code = code;
        }
        f.pc = 0;
        f.slot_base = slot_base;
        f.stack_base = stack_base;
        f.iter_base = iter_base;
        f
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, code: &Rc<Code>) {
        let n = (self.buf.len() * 2).max(GROW_MIN);
        self.buf.resize_with(n, || Frame {
            code: code.clone(),
            func: None,
            pc: 0,
            slot_base: 0,
            stack_base: 0,
            iter_base: 0,
            this: None,
        });
    }

    /// The running frame: one bounds check (against the buffer) instead of the two of
    /// `last` through `Deref`.
    #[inline(always)]
    pub(super) fn top(&self) -> Option<&Frame> {
        self.buf.get(self.len.wrapping_sub(1))
    }

    /// Drop the top frame (its function and `self`): a return.
    #[inline(always)]
    pub(super) fn pop_top(&mut self) {
        debug_assert!(self.len > 0);
        self.len -= 1;
        let f = &mut self.buf[self.len];
        if let Some(func) = f.func.take() {
            drop(func);
        }
        if let Some(this) = f.this.take() {
            assign_drop(this);
        }
    }

    /// Drop the frames from `n` up (their functions and `self`), first to last.
    #[inline(always)]
    pub(super) fn truncate(&mut self, n: usize) {
        for f in self.buf[n.min(self.len)..self.len].iter_mut() {
            f.func = None;
            f.this = None;
        }
        self.len = self.len.min(n);
    }
}

impl Deref for FrameStack {
    type Target = [Frame];
    #[inline(always)]
    fn deref(&self) -> &[Frame] {
        &self.buf[..self.len]
    }
}

impl DerefMut for FrameStack {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [Frame] {
        &mut self.buf[..self.len]
    }
}
