//! The execution loop: one native loop runs a compiled function and every compiled
//! function it calls, each call a heap frame (`Frame`) over shared stacks (`Stacks`):
//! slots, operands and loop iterators, each frame owning the part above its bases.

mod stacks;
#[cfg(test)]
mod tests;

use super::{Code, MethodHit, Op, plain_shape};
use crate::ast::{BinOp, CmpOp};
use crate::interp::generator::{GenStep, Generator};
use crate::interp::value::*;
use crate::interp::{Ctx, Interp, Interrupt, R};
use stacks::{FrameStack, OpStack, SlotStack};
use std::cell::Cell;
use std::rc::Rc;

/// The iterator of a running `for` loop.
enum VmIter {
    /// A range, walked lazily as the tree-walker does (`done` once the next value
    /// would overflow).
    Range {
        next: i64,
        stop: i64,
        step: i64,
        done: bool,
    },
    /// A list, read live, or anything else `iterate` materialises when the loop starts.
    Items(IterItems),
    /// The items of a dict, dict view or set, whose size is checked before each step
    /// (stepped by `vm_for_next`, which can raise).
    Watched(IterItems, crate::interp::dictview::SizeWatch),
    /// A generator, resumed once per item.
    Gen(Rc<Generator>),
    /// An iterator value (`iter(xs)`, `map(...)`), stepped in place so what a `break`
    /// leaves stays in it, as on the tree-walker.
    Shared(Rc<std::cell::RefCell<IterItems>>),
    /// A lazy `map`/`filter`/`zip`/`enumerate`, stepped once per item (like `Gen`).
    Lazy(Rc<crate::interp::lazy::Lazy>),
    /// The items of `enumerate(x)` with the index of the next (`ForIterPair` binds the
    /// pair as the builtin's tuples would be unpacked, without making them).
    Enumerate { next: i64, items: IterItems },
}

impl VmIter {
    /// The next item of a range or materialised iterator (`None` at the end or for a
    /// generator, which `ForIter` resumes itself); an enumerate pair as a tuple.
    #[inline(always)]
    fn next_ready(&mut self) -> Option<Value> {
        match self {
            VmIter::Range { .. } => self.next_int().map(Value::Int),
            VmIter::Items(items) => items.next(),
            VmIter::Shared(items) => items.borrow_mut().next(),
            VmIter::Enumerate { next, items } => {
                let v = items.next()?;
                let i = *next;
                *next = i.saturating_add(1);
                Some(Value::tuple(vec![Value::Int(i), v]))
            }
            VmIter::Gen(_) | VmIter::Lazy(_) | VmIter::Watched(..) => None,
        }
    }

    /// The next int of a range (`None` at its end, or for any other iterator).
    #[inline(always)]
    fn next_int(&mut self) -> Option<i64> {
        let VmIter::Range {
            next,
            stop,
            step,
            done,
        } = self
        else {
            return None;
        };
        let (i, stop, step) = (*next, *stop, *step);
        if !*done && ((step > 0 && i < stop) || (step < 0 && i > stop)) {
            match i.checked_add(step) {
                Some(n) => *next = n,
                None => *done = true,
            }
            Some(i)
        } else {
            None
        }
    }
}

/// One activation of a compiled function. Where names outside the slots resolve (the
/// function's closure) and its file come from its function (`frame_func`); module code
/// (an entry block, `func` `None`) is only ever the entry frame, and its scope and file
/// are on `Stacks`.
struct Frame {
    code: Rc<Code>,
    /// The function of an entry frame (`None` for module code) or of a method call.
    /// `None` in a frame above the entry frame: a `Call` left the function on the
    /// operand stack at `stack_base`, under the frame's operands (`vm_enter`).
    func: Option<Rc<Function>>,
    /// While a callee runs: the index of the call instruction.
    pc: u32,
    slot_base: u32,
    /// Where the frame's result goes: the entry of its callee (a `Call`, which keeps
    /// it there while the frame runs, so its operands start one above) or of its
    /// receiver (a method call, whose `self` moved into `this`).
    stack_base: u32,
    iter_base: u32,
    this: Option<Value>,
}

// A call pushes and a return pops one of these.
const _: () = assert!(std::mem::size_of::<Frame>() <= 64);

/// The function frame `i` of `st` runs: its own (`Frame::func`), else, above the entry
/// frame, the callee its `Call` left on the operand stack under it.
#[inline]
fn frame_func(st: &Stacks, i: usize) -> Option<&Rc<Function>> {
    let f = st.frames.get(i)?;
    match &f.func {
        Some(func) => Some(func),
        None if i > 0 => match st.stack.get(f.stack_base as usize) {
            Some(Value::Func(func)) => Some(func),
            _ => None,
        },
        None => None,
    }
}

/// The VM's stacks; one set per native entry into the VM, reused through a small pool
/// on the interpreter (`Interp::vm_stacks`).
#[derive(Default)]
pub struct Stacks {
    frames: FrameStack,
    stack: OpStack,
    slots: SlotStack,
    iters: Vec<VmIter>,
    /// Scopes of the comprehensions entered, outermost first (module code).
    scopes: Vec<ScopeRef>,
    /// The buffers of the f-strings being built, innermost last.
    fstrs: Vec<String>,
    /// The items `EnumerateFast` took, until the `GetIterEnumerate` after it.
    enumerated: Option<IterItems>,
    /// The staged pairs of the dict comprehensions running, innermost last (`None`
    /// once one has fallen back to inserting into its dict): `Op::DictStage`.
    dict_stages: Vec<Option<Vec<(HashKey, Value)>>>,
    /// `here` and `visitor` of the entry frame (a frame pushed for a call never has
    /// them: a walker's ability is entered from the tree-walker), kept out of `Frame`
    /// so a call moves less.
    here: Option<Value>,
    visitor: Option<Value>,
    /// Module code's file, and the scope it was in when it made the call that is
    /// running (a comprehension's scope, or the module scope).
    module_file: u32,
    module_scope: Option<ScopeRef>,
}

/// Stack sets kept for reuse (one per level of tree-walker → VM nesting).
const STACKS_POOL: usize = 16;

/// Entries (frames, operands, slots) a stack set may hold allocated to be kept for the
/// next run of its program (`Interp::keep_scratch`): one deep recursion does not pin
/// its stacks' memory to the thread for good.
const KEEP_ENTRIES: usize = 4096;

impl Stacks {
    /// Small enough to be kept past its run (`KEEP_ENTRIES`); always cleared by then
    /// (`vm_finish`).
    pub(in crate::interp) fn worth_keeping(&self) -> bool {
        self.frames.capacity() + self.stack.capacity() + self.slots.capacity() <= KEEP_ENTRIES
    }
}

/// Reserve room for `n` more items in the comprehension result right under the
/// iterable (`GetIter`'s size hint).
fn reserve_result(st: &Stacks, n: usize) {
    match st.stack.last() {
        Some(Value::List(l)) => l.borrow_mut().reserve(n),
        Some(Value::Dict(d)) => d.borrow_mut().reserve(n),
        Some(Value::Set(s)) => s.borrow_mut().reserve(n),
        _ => {}
    }
}

impl Interp<'_> {
    /// The next item of the innermost loop's iterator for `ForIter`/`ForIterLocal`
    /// (with the op-budget check), or `None` when it is exhausted: a generator is
    /// resumed, anything else steps in place.
    #[inline(always)]
    fn vm_for_next(&mut self, iters: &mut [VmIter]) -> R<Option<Value>> {
        match iters.last_mut() {
            Some(VmIter::Gen(g)) => {
                let g = g.clone();
                self.poll()?;
                Ok(match self.gen_resume(&g, Value::None)? {
                    GenStep::Yielded(v) => Some(v),
                    GenStep::Returned(_) => None,
                })
            }
            Some(VmIter::Lazy(l)) => {
                let l = l.clone();
                self.lazy_next(&l)
            }
            Some(VmIter::Watched(items, watch)) => {
                watch.check(self)?;
                let v = items.next();
                if v.is_some() {
                    self.poll()?;
                }
                Ok(v)
            }
            Some(it) => match it.next_ready() {
                Some(v) => {
                    self.poll()?;
                    Ok(Some(v))
                }
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// The iterator `GetIter` pushes for `v`: ranges step lazily, a generator is resumed
    /// (except in a comprehension, which reads it whole), anything else is read into
    /// items, reserving room in the comprehension's result when `reserve`.
    fn vm_iter(&mut self, st: &Stacks, v: Value, comprehension: bool, reserve: bool) -> R<VmIter> {
        Ok(match v {
            Value::Range(start, stop, step) => VmIter::Range {
                next: start,
                stop,
                step,
                done: false,
            },
            Value::Generator(g) if !comprehension => VmIter::Gen(g),
            Value::Iter(i, _) if !comprehension => VmIter::Shared(i),
            Value::Lazy(l) => VmIter::Lazy(l),
            other => {
                let items = self.iter_items(&other)?;
                if reserve {
                    reserve_result(st, items.remaining());
                }
                match crate::interp::dictview::SizeWatch::of(&other) {
                    Some(watch) => VmIter::Watched(items, watch),
                    None => VmIter::Items(items),
                }
            }
        })
    }
}

/// The field slot attribute site `site` of `code` finds name `name` in for instance
/// `inst` (the value `o`): from the site's cache when the class is the one seen last,
/// else looked up by name and remembered. `None` when the name is no declared field
/// (or the class is a stdlib type, whose attributes are read-only): the general path.
#[inline(always)]
fn cached_field(code: &Code, name: u32, site: u32, o: &Value, inst: &Instance) -> Option<usize> {
    let cache = &code.attr_cache[site as usize];
    if let Some((class, slot)) = &*cache.borrow()
        && Rc::ptr_eq(class, &inst.class)
    {
        return Some(*slot);
    }
    cached_field_miss(code, name, site, o, inst)
}

/// `cached_field` when the site has not seen this class last.
#[inline(never)]
fn cached_field_miss(
    code: &Code,
    name: u32,
    site: u32,
    o: &Value,
    inst: &Instance,
) -> Option<usize> {
    let cache = &code.attr_cache[site as usize];
    if Interp::stdlib_key(o).is_some() {
        return None;
    }
    let name = &code.names[name as usize];
    let slot = inst.class.field_slot(name)?;
    *cache.borrow_mut() = Some((inst.class.clone(), slot));
    Some(slot)
}

/// The tree-walker's context for the running frame of `st` (current scope `scope`):
/// what an instruction that hands part of its work to the tree-walker (edge
/// references, connects) evaluates in. Module code runs in its own context `mctx`
/// (inside a comprehension, with that comprehension's scope).
fn vm_ctx(st: &Stacks, scope: &ScopeRef, mctx: Option<&Ctx>) -> Ctx {
    let entry = st.frames.len() == 1;
    let frame = st.frames.last();
    let func = st
        .frames
        .len()
        .checked_sub(1)
        .and_then(|i| frame_func(st, i));
    match (frame, func, mctx) {
        (Some(f), Some(func), _) => Ctx {
            scope: scope.clone(),
            this: f.this.clone(),
            here: if entry { st.here.clone() } else { None },
            visitor: if entry { st.visitor.clone() } else { None },
            class: func
                .owner
                .borrow()
                .as_ref()
                .and_then(std::rc::Weak::upgrade),
            file: func.file,
        },
        (_, _, Some(m)) => Ctx {
            scope: scope.clone(),
            ..m.clone()
        },
        _ => Ctx::module(scope.clone(), st.module_file),
    }
}

/// The interrupt of raising exception `v` (its origin set where it is raised).
fn raised(v: Value) -> Interrupt {
    Interrupt::Exc(Box::new(crate::interp::PyErr {
        value: v,
        trace: Vec::new(),
        origin: None,
    }))
}

/// A copy of `v`: scalars without the call to `Value::clone`.
#[inline(always)]
fn dup(v: &Value) -> Value {
    match v {
        Value::None => Value::None,
        Value::Bool(b) => Value::Bool(*b),
        Value::Int(i) => Value::Int(*i),
        Value::Float(f) => Value::Float(*f),
        other => other.clone(),
    }
}

/// `x op y` on two small ints when it is one of the operations computed in the loop
/// (`+ - * % //`, Python's floored `%` and `//`) and neither overflows nor divides by
/// zero; `None` sends it the general way (`binary_op`), which raises or promotes.
#[inline(always)]
fn int_binary(o: BinOp, x: i64, y: i64) -> Option<i64> {
    match o {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Mod if y != 0 => x.checked_rem(y).map(|r| {
            if r != 0 && (r < 0) != (y < 0) {
                r + y
            } else {
                r
            }
        }),
        BinOp::FloorDiv if y != 0 => x.checked_div(y).map(|q| {
            if (x % y != 0) && ((x < 0) != (y < 0)) {
                q - 1
            } else {
                q
            }
        }),
        _ => None,
    }
}

/// `a op b` on two small ints for the six ordering and equality operators; `None`
/// for anything else (`compare`).
#[inline(always)]
fn int_compare(o: CmpOp, a: &Value, b: &Value) -> Option<bool> {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return None;
    };
    Some(match o {
        CmpOp::Lt => x < y,
        CmpOp::LtE => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::GtE => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::NotEq => x != y,
        _ => return None,
    })
}

/// Push the value of `name` read through the closure chain (`scope_get`'s lookup)
/// onto `stack`, cloned straight from its binding into its entry; `false` when no
/// scope binds it. The nearest scope is searched from the name's position `hint`
/// (`Vars::position_hinted`).
#[inline]
fn push_global(scope: &ScopeRef, name: &Rc<str>, hint: &Cell<u32>, stack: &mut OpStack) -> bool {
    let s = scope.borrow();
    if let Some(v) = s.vars.get_hinted(hint, name) {
        stack.push_clone(v);
        return true;
    }
    let mut cur = s.parent.clone();
    drop(s);
    while let Some(sc) = cur {
        let b = sc.borrow();
        if let Some(v) = b.vars.get(name) {
            stack.push_clone(v);
            return true;
        }
        cur = b.parent.clone();
    }
    false
}

/// Insert a dict comprehension's staged pairs in order, the table grown once: the
/// same dict as inserting each when it was made, since nothing could see the dict
/// in between (the staged keys are distinct ints, `Op::DictStage`).
fn insert_staged(d: &mut Dict, pairs: Vec<(HashKey, Value)>) {
    d.reserve(pairs.len());
    for (k, v) in pairs {
        d.insert(k, v);
    }
}

/// `StoreName`: `scope_set` of `name` on module code's current scope, its first step
/// (rebinding the nearest scope's own binding) from the name's position `hint`.
#[inline]
fn store_name(scope: &ScopeRef, name: &Rc<str>, hint: &Cell<u32>, v: Value) {
    let v = {
        let mut s = scope.borrow_mut();
        match s.vars.position_hinted(hint, name) {
            Some(i) => match s.vars.at_mut(i) {
                Some(slot) => {
                    stacks::assign(slot, v);
                    return;
                }
                None => v,
            },
            None => v,
        }
    };
    scope_set(scope, name, v);
}

impl Stacks {
    fn pop(&mut self) -> Value {
        match self.stack.pop() {
            Some(v) => v,
            None => Value::None,
        }
    }

    /// `StoreLocal`: the slot if bound, else an enclosing binding of the name, else
    /// the slot (the tree-walker's `scope_set` over a frame whose bindings are slots).
    fn store(&mut self, idx: usize, name: &str, closure: &ScopeRef, v: Value) {
        if self.slots[idx].is_some() {
            stacks::assign_slot(&mut self.slots[idx], v);
            return;
        }
        if let Err(v) = scope_rebind_enclosing(closure, name, v) {
            self.slots[idx] = Some(v);
        }
    }
}

impl Interp<'_> {
    /// Run compiled `code` of `func` in the frame the tree-walker prepared (`ctx`, the
    /// parameters bound by name in `ctx.scope`). An exception comes back with its origin
    /// set and the frames of the compiled callees it unwound in its trace; the entry
    /// frame's own trace entry is added by the caller (`run_frame`), as for any body.
    pub(in crate::interp) fn vm_run(
        &mut self,
        func: &Rc<Function>,
        code: Rc<Code>,
        ctx: &Ctx,
    ) -> R<Value> {
        let mut st = self.vm_stacks.pop().unwrap_or_default();
        {
            let mut scope = ctx.scope.borrow_mut();
            for p in &func.params {
                let v = scope
                    .vars
                    .get_mut(&p.name)
                    .map(|v| std::mem::replace(v, Value::None));
                st.slots.push(v);
            }
        }
        self.vm_enter_entry(st, code, Some(func.clone()), ctx)
    }

    /// Run compiled module code (an entry block) in the module's context `ctx`.
    pub(in crate::interp) fn vm_run_module(&mut self, code: Rc<Code>, ctx: &Ctx) -> R<Value> {
        let mut st = self.vm_stacks.pop().unwrap_or_default();
        // Its slots are those of its comprehensions' targets.
        st.module_file = ctx.file;
        st.module_scope = Some(ctx.scope.clone());
        self.vm_enter_entry(st, code, None, ctx)
    }

    /// Push the entry frame of `code` on `st` (its slots after those already pushed,
    /// `here`/`visitor` from `ctx`) and run it; module code (`func` `None`) runs in
    /// `ctx` itself.
    fn vm_enter_entry(
        &mut self,
        mut st: Box<Stacks>,
        code: Rc<Code>,
        func: Option<Rc<Function>>,
        ctx: &Ctx,
    ) -> R<Value> {
        st.slots.resize(code.local_names.len());
        let module = func.is_none();
        let f = st.frames.push(code, 0, 0, 0);
        f.func = func;
        f.this = ctx.this.clone();
        st.here = ctx.here.clone();
        st.visitor = ctx.visitor.clone();
        self.vm_finish(st, module.then_some(ctx))
    }

    /// Run the frame pushed on `st`, then return the stacks to the pool.
    fn vm_finish(&mut self, mut st: Box<Stacks>, ctx: Option<&Ctx>) -> R<Value> {
        let r = self.vm_loop(&mut st, ctx);
        st.frames.truncate(0);
        st.stack.truncate(0);
        st.slots.truncate(0);
        st.iters.clear();
        st.scopes.clear();
        st.fstrs.clear();
        st.enumerated = None;
        st.dict_stages.clear();
        st.here = None;
        st.visitor = None;
        st.module_scope = None;
        if self.vm_stacks.len() < STACKS_POOL {
            self.vm_stacks.push(st);
        }
        r
    }

    /// Unwind every frame for an error raised at instruction `at` of the innermost one:
    /// the origin is set where it was raised, each compiled callee adds its trace frame
    /// (as `run_frame` does) and the caller's call instruction becomes the next origin.
    fn vm_unwind(&mut self, st: &mut Stacks, mut e: Interrupt, at: usize) -> Interrupt {
        let n = st.frames.len();
        for i in (0..n).rev() {
            let f = &st.frames[i];
            let func = frame_func(st, i);
            let idx = if i + 1 == n { at } else { f.pc as usize };
            if let Interrupt::Exc(err) = &mut e {
                if err.origin.is_none() {
                    let file = func.map_or(st.module_file, |func| func.file);
                    err.origin = Some((file, f.code.spans[idx]));
                }
                if i > 0
                    && let Some(func) = func
                {
                    err.leave_frame(func.name.clone(), Some((func.file, func.span)));
                }
            }
            if i > 0 {
                self.depth -= 1;
            }
        }
        e
    }

    /// The `n` values a comprehension's tuple target binds from `v` when it is not a
    /// tuple of that size (the tree-walker's `assign_local`).
    fn vm_unpack(&mut self, v: &Value, n: usize) -> R<Vec<Value>> {
        let vals = self.iterate(v)?;
        if vals.len() != n {
            return Err(self.err(
                "ValueError",
                format!(
                    "not enough values to unpack (expected {n}, got {})",
                    vals.len()
                ),
            ));
        }
        Ok(vals)
    }

    /// The `n` values a statement's tuple target takes from `v` when it is not a tuple
    /// of that size, with `assign`'s messages for a count that does not match.
    fn vm_unpack_exact(&mut self, v: &Value, n: usize) -> R<Vec<Value>> {
        let vals = self.iterate(v)?;
        if vals.len() > n {
            return Err(self.err(
                "ValueError",
                format!("too many values to unpack (expected {n})"),
            ));
        }
        if vals.len() < n {
            return Err(self.err(
                "ValueError",
                format!(
                    "not enough values to unpack (expected {n}, got {})",
                    vals.len()
                ),
            ));
        }
        Ok(vals)
    }

    /// Write one `{expr}` piece of an f-string into `out`, exactly as `eval_fstring`
    /// does: `v` the value; with a spec, `conv` the conversion made before the spec was
    /// evaluated (`None` when there is none) and `spec` its text.
    fn vm_fstr_piece(
        &mut self,
        out: &mut String,
        part: &super::FPart,
        v: Value,
        conv: Value,
        spec: Option<Value>,
    ) -> R<()> {
        if part.conversion.is_none()
            && !part.spec
            && part.debug_text.is_none()
            && self.fstr_plain(out, &v)?
        {
            return Ok(());
        }
        if let Some(t) = &part.debug_text {
            out.push_str(t);
        }
        let spec_text = match &spec {
            Some(Value::Str(s)) => s.to_string(),
            _ => String::new(),
        };
        let conv = match (part.spec, conv) {
            (true, Value::Str(c)) => Some(c.to_string()),
            (true, _) => None,
            (false, _) => match part.conversion {
                Some('s') => Some(self.to_str(&v)?),
                Some('r' | 'a') => Some(self.repr(&v)?),
                _ if part.debug_text.is_some() => Some(self.repr(&v)?),
                _ => None,
            },
        };
        self.fstr_formatted(out, &v, conv, &spec_text)
    }

    /// The value of local slot `s` of the frame whose slots start at `sb`: the slot
    /// when bound, else the name through the closure chain (`LoadLocal`).
    fn vm_load_local(
        &self,
        st: &Stacks,
        code: &Code,
        scope: &ScopeRef,
        sb: usize,
        s: u32,
    ) -> R<Value> {
        match st.slots.at(sb + s as usize) {
            Some(v) => Ok(dup(v)),
            None => {
                let name = &code.local_names[s as usize];
                scope_get(scope, name).ok_or_else(|| self.vm_name_error(name))
            }
        }
    }

    fn vm_name_error(&self, name: &str) -> Interrupt {
        self.err("NameError", format!("name '{name}' is not defined"))
    }

    /// A read of a name the def assigns, before it is bound here or in a binding the
    /// assignment would rebind (`scope_get_enclosing`).
    fn vm_unbound_local(&self, name: &str) -> Interrupt {
        self.err(
            "UnboundLocalError",
            format!(
                "cannot access local variable '{name}' where it is not associated with a value"
            ),
        )
    }

    /// One unit of the operation budget (`Interp::tick`), its common case inline: the
    /// count moves and nothing else is due (no budget reached, not a 1,024th tick, no
    /// dropped generator waiting to be closed).
    #[inline(always)]
    fn vm_tick(&mut self) -> R<()> {
        let next = self.ops + 1;
        if next & 1023 != 0
            && self.limits.max_ops.is_none_or(|max| next <= max)
            && !super::super::generator::has_abandoned()
        {
            self.ops = next;
            return Ok(());
        }
        self.tick()
    }

    /// Two units of the operation budget at once when neither is due for anything
    /// (`vm_tick`'s common case twice: no budget reached, neither count a multiple of
    /// 1,024, no dropped generator waiting): a call's own tick and its callee's first
    /// statement's. `false` (nothing charged) otherwise: the caller charges them one by
    /// one, each where it belongs.
    #[inline(always)]
    fn vm_tick2(&mut self) -> bool {
        let next = self.ops + 2;
        if next & 1023 >= 2
            && self.limits.max_ops.is_none_or(|max| next <= max)
            && !super::super::generator::has_abandoned()
        {
            self.ops = next;
            return true;
        }
        false
    }

    /// Call compiled `code` from the instruction at `at` of the running frame (whose
    /// current scope is `scope`): `n` arguments on top of the operand stack, the callee
    /// under them. `method` is the resolved method when the value under the arguments
    /// is its receiver (which moves into the frame as `self`); without it, that value
    /// is the function itself and stays where it is, under the frame's operands, until
    /// the return overwrites it with the result (nothing moves it or its reference
    /// count; `frame_func` finds it there). The depth check and
    /// the tick come first, where `call_plain` has them; on success the callee's frame
    /// is on top, the arguments moved into its first slots (nothing cloned, no
    /// allocation once the stacks have grown). `true` when the callee's first
    /// statement's tick was charged with the call's (`vm_tick2`), so entering the frame
    /// skips that `Tick`. With `arg` (`CallLocalBinaryConst`, `n` 0: the callee on top)
    /// that int is bound to the callee's one parameter slot instead.
    ///
    /// Inline into `Call` (a function, `method` `None`), out of line for methods
    /// (`vm_enter_method`).
    #[inline(always)]
    fn vm_enter(
        &mut self,
        st: &mut Stacks,
        method: Option<Rc<Function>>,
        code: Rc<Code>,
        n: usize,
        arg: Option<i64>,
        at: usize,
        scope: &ScopeRef,
    ) -> R<bool> {
        if self.depth >= self.limits.max_depth {
            return Err(self.vm_depth_error());
        }
        let first_ticked = matches!(code.ops.first(), Some(Op::Tick)) && self.vm_tick2();
        if !first_ticked {
            self.vm_tick()?;
        }
        let entry = st.frames.len() == 1;
        if let Some(fr) = st.frames.last_mut() {
            fr.pc = at as u32;
            // Module code may be inside a comprehension's scope: resumed there.
            if entry && fr.func.is_none() {
                st.module_scope = Some(scope.clone());
            }
        }
        let Stacks {
            frames,
            stack,
            slots,
            iters,
            ..
        } = st;
        let base = stack.len() - n;
        let slot_base = match arg {
            Some(v) => {
                let slot_base = slots.open_frame(1, code.local_names.len());
                slots.set_int(slot_base, v);
                slot_base
            }
            None => {
                let slot_base = slots.open_frame(n, code.local_names.len());
                for (i, v) in stack.above_mut(base).iter_mut().enumerate() {
                    slots.bind_arg(slot_base + i, v);
                }
                stack.set_len_moved(base);
                slot_base
            }
        };
        // The frame's fields are written into its entry (`FrameStack`), then a
        // method and its `self` are moved in; a function stays on the stack.
        let f = frames.push(
            code,
            slot_base as u32,
            (base - 1) as u32,
            iters.len() as u32,
        );
        if let Some(m) = method {
            f.func = Some(m);
            f.this = stack.pop();
        }
        self.depth += 1;
        Ok(first_ticked)
    }

    /// `vm_enter` for a method call (`method` its resolved method).
    #[inline(never)]
    fn vm_enter_method(
        &mut self,
        st: &mut Stacks,
        method: Rc<Function>,
        code: Rc<Code>,
        n: usize,
        at: usize,
        scope: &ScopeRef,
    ) -> R<bool> {
        self.vm_enter(st, Some(method), code, n, None, at, scope)
    }

    #[cold]
    #[inline(never)]
    fn vm_depth_error(&self) -> Interrupt {
        self.err("RecursionError", "maximum recursion depth exceeded")
    }

    /// The execution loop; `mctx` is the module context when the entry frame is module
    /// code (what `EvalAst`/`ExecAst` run in).
    fn vm_loop(&mut self, st: &mut Stacks, mctx: Option<&Ctx>) -> R<Value> {
        let Some(top) = st.frames.last() else {
            return Ok(Value::None);
        };
        let mut code = top.code.clone();
        let mut scope = match &top.func {
            Some(f) => f.closure.clone(),
            None => match &st.module_scope {
                Some(s) => s.clone(),
                None => return Ok(Value::None),
            },
        };
        let mut pc = 0usize;
        let mut sb = 0usize;
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Err(self.vm_unwind(st, e, pc - 1)),
                }
            };
        }
        // Enter a frame just pushed (`ticked`: its first statement's tick already
        // charged by `vm_enter`) / resume the caller after a return.
        macro_rules! enter_top {
            ($resume:expr, $ticked:expr) => {{
                let Some(f) = st.frames.top() else {
                    return Ok(Value::None);
                };
                // A recursive call or its return keeps the same code, and so the same
                // scope: a code object is lowered for one function (`vm_code`) and
                // module code is only ever the entry frame, never a callee. No
                // reference counts move, nothing is looked up.
                if !Rc::ptr_eq(&code, &f.code) {
                    code = f.code.clone();
                    match frame_func(st, st.frames.len() - 1) {
                        Some(func) => {
                            if !Rc::ptr_eq(&scope, &func.closure) {
                                scope = func.closure.clone();
                            }
                        }
                        None => match &st.module_scope {
                            Some(s) => {
                                if !Rc::ptr_eq(&scope, s) {
                                    scope = s.clone();
                                }
                            }
                            None => return Ok(Value::None),
                        },
                    }
                }
                sb = f.slot_base as usize;
                if $resume {
                    pc = f.pc as usize + 1;
                } else if $ticked {
                    pc = 1;
                } else {
                    // The callee's first statement charges its tick right here, with
                    // its span and frame if it fails (what dispatching it would do).
                    pc = 0;
                    if let Op::Tick = code.ops[0] {
                        pc = 1;
                        tri!(self.vm_tick());
                    }
                }
            }};
        }
        // A jump to a statement's start charges that statement's tick in the same
        // dispatch; a failing tick is reported at the `Tick` itself (`pc - 1`).
        macro_rules! jump {
            ($target:expr) => {{
                pc = $target as usize;
                if let Op::Tick = code.ops[pc] {
                    pc += 1;
                    tri!(self.vm_tick());
                }
            }};
        }
        // Leave the running frame with the value on top of its operands (`ret`), or
        // `None`: the caller resumes after its call instruction.
        macro_rules! return_frame {
            ($ret:expr) => {{
                let ret: bool = $ret;
                let depth = st.frames.len();
                let bases = match st.frames.top() {
                    Some(f) if depth > 1 => (
                        f.slot_base as usize,
                        f.stack_base as usize,
                        f.iter_base as usize,
                        f.func.is_none(),
                    ),
                    _ => return Ok(if ret { st.pop() } else { Value::None }),
                };
                let (slot_base, stack_base, iter_base, callee_below) = bases;
                // Dropped in this order: the frame (a method and `self`), its
                // slots, the callee and its operands, its iterators.
                st.frames.pop_top();
                st.slots.truncate(slot_base);
                // The value returned is usually the frame's only operand: already
                // where the caller's call instruction leaves its result (a method
                // call), or right above it, over the callee (`Call`).
                let first = stack_base + usize::from(callee_below);
                if ret && st.stack.len() == first + 1 {
                    if callee_below {
                        st.stack.settle_top(stack_base);
                    }
                } else {
                    let v = if ret { st.pop() } else { Value::None };
                    st.stack.truncate(stack_base);
                    st.stack.push(v);
                }
                st.iters.truncate(iter_base);
                self.depth -= 1;
                enter_top!(true, false);
            }};
        }
        loop {
            let op = code.ops[pc];
            pc += 1;
            match op {
                Op::Tick => tri!(self.vm_tick()),
                Op::Poll => tri!(self.poll()),
                Op::Const(i) => st.stack.push_clone(&code.consts[i as usize]),
                Op::LoadLocal(s) => {
                    let v = match st.slots.at(sb + s as usize) {
                        Some(v) => {
                            st.stack.push_clone(v);
                            continue;
                        }
                        None => {
                            let name = &code.local_names[s as usize];
                            match scope_get_enclosing(&scope, name) {
                                Some(v) => v,
                                None => tri!(Err(self.vm_unbound_local(name))),
                            }
                        }
                    };
                    st.stack.push(v);
                }
                Op::StoreLocal(s) => {
                    let v = st.pop();
                    st.store(sb + s as usize, &code.local_names[s as usize], &scope, v);
                }
                Op::DefineLocal(s) => {
                    let v = st.pop();
                    stacks::assign_slot(&mut st.slots[sb + s as usize], v);
                }
                Op::LoadGlobal(i) => {
                    let name = &code.names[i as usize];
                    let hint = &code.name_hints[i as usize];
                    if !push_global(&scope, name, hint, &mut st.stack) {
                        let top = st.frames.len().saturating_sub(1);
                        let owner = frame_func(st, top)
                            .and_then(|f| f.owner.borrow().as_ref().and_then(|w| w.upgrade()));
                        let this = st.frames.last().and_then(|f| f.this.as_ref());
                        match self.self_type(name, this, owner.as_ref()) {
                            Some(v) => st.stack.push(v),
                            None => tri!(Err(self.vm_name_error(name))),
                        }
                    }
                }
                Op::SelfAttr(i, site) => {
                    if let Some(Some(o @ Value::Instance(inst))) = st.frames.last().map(|f| &f.this)
                        && let Some(slot) = cached_field(&code, i, site, o, inst)
                        && let Some(v) = inst.fields.borrow().get(slot)
                    {
                        st.stack.push_clone(v);
                        pc += 1;
                        continue;
                    }
                    match st.frames.last().and_then(|f| f.this.as_ref()) {
                        Some(v) => st.stack.push_clone(v),
                        None => tri!(Err(self.vm_name_error("self"))),
                    }
                }
                Op::SelfSetAttr(i, site) => {
                    if let Some(Some(o @ Value::Instance(inst))) = st.frames.last().map(|f| &f.this)
                        && let Some(slot) = cached_field(&code, i, site, o, inst)
                        && let Some(f) = inst.fields.borrow_mut().get_mut(slot)
                    {
                        let v = match st.stack.pop() {
                            Some(v) => v,
                            None => Value::None,
                        };
                        stacks::assign(f, v);
                        pc += 1;
                        continue;
                    }
                    match st.frames.last().and_then(|f| f.this.as_ref()) {
                        Some(v) => st.stack.push_clone(v),
                        None => tri!(Err(self.vm_name_error("self"))),
                    }
                }
                Op::LoadSelf if let Some(Some(v)) = st.frames.last().map(|f| &f.this) => {
                    st.stack.push_clone(v);
                }
                Op::LoadSelf | Op::LoadHere | Op::LoadVisitor => {
                    let entry = st.frames.len() == 1;
                    let (v, name) = match op {
                        Op::LoadSelf => (st.frames.last().and_then(|f| f.this.clone()), "self"),
                        Op::LoadHere if entry => (st.here.clone(), "here"),
                        Op::LoadHere => (None, "here"),
                        _ if entry => (st.visitor.clone(), "visitor"),
                        _ => (None, "visitor"),
                    };
                    match v {
                        Some(v) => st.stack.push(v),
                        None => tri!(Err(self.vm_name_error(name))),
                    }
                }
                Op::Pop => {
                    st.stack.pop();
                }
                Op::Dup => {
                    let v = st.stack.last().cloned().unwrap_or(Value::None);
                    st.stack.push(v);
                }
                Op::Dup2 => {
                    let n = st.stack.len();
                    let (a, b) = (st.stack[n - 2].clone(), st.stack[n - 1].clone());
                    st.stack.push(a);
                    st.stack.push(b);
                }
                Op::Unary(o) => {
                    let v = st.pop();
                    let r = tri!(self.unary_op(o, &v));
                    st.stack.push(r);
                }
                Op::Binary(o) => {
                    // Small ints in the loop (what `binary_op` does first, without the
                    // call), the result written over the left operand; an overflow or
                    // a zero divisor goes the general way.
                    if let Some((x, y)) = st.stack.int_pair()
                        && let Some(r) = int_binary(o, *x, y)
                    {
                        *x = r;
                        st.stack.pop_scalar();
                        continue;
                    }
                    let b = st.pop();
                    let a = st.pop();
                    let r = tri!(self.binary_op(o, &a, &b));
                    st.stack.push(r);
                }
                Op::BinaryConst(o, k) => {
                    let b = &code.consts[k as usize];
                    if let (Some(Value::Int(x)), Value::Int(y)) = (st.stack.last_mut(), b)
                        && let Some(r) = int_binary(o, *x, *y)
                    {
                        *x = r;
                        continue;
                    }
                    let a = st.pop();
                    let r = tri!(self.binary_op(o, &a, b));
                    st.stack.push(r);
                }
                Op::Compare(o) => {
                    let b = st.pop();
                    let a = st.pop();
                    let r = match int_compare(o, &a, &b) {
                        Some(r) => r,
                        None => tri!(self.compare(o, &a, &b)),
                    };
                    st.stack.push(Value::Bool(r));
                }
                Op::LocalBinaryConst(s, o, k) => {
                    let b = &code.consts[k as usize];
                    if let Some(Value::Int(x)) = st.slots.at(sb + s as usize)
                        && let Value::Int(y) = b
                        && let Some(r) = int_binary(o, *x, *y)
                    {
                        st.stack.push_int(r);
                        continue;
                    }
                    let a = tri!(self.vm_load_local(st, &code, &scope, sb, s));
                    let r = tri!(self.binary_op(o, &a, b));
                    st.stack.push(r);
                }
                Op::CallLocalBinaryConst(s, o, k) => {
                    let b = &code.consts[k as usize];
                    if let Some(Value::Int(x)) = st.slots.at(sb + s as usize)
                        && let Value::Int(y) = b
                        && let Some(r) = int_binary(o, *x, *y)
                    {
                        // The callee is on top; `Call(1)` is the next instruction.
                        let compiled = match st.stack.last() {
                            Some(Value::Func(f)) if f.params.len() == 1 => self.vm_code_of(f),
                            _ => None,
                        };
                        match compiled {
                            // The result goes straight into the callee's parameter
                            // slot (nothing on the operand stack to move).
                            Some(c) => {
                                pc += 1;
                                let ticked =
                                    tri!(self.vm_enter(st, None, c, 0, Some(r), pc - 1, &scope));
                                enter_top!(false, ticked);
                            }
                            None => st.stack.push_int(r),
                        }
                        continue;
                    }
                    let a = tri!(self.vm_load_local(st, &code, &scope, sb, s));
                    let r = tri!(self.binary_op(o, &a, b));
                    st.stack.push(r);
                }
                Op::LocalCompareConstJump(s, o, k, target) => {
                    let b = &code.consts[k as usize];
                    let r = match st.slots.at(sb + s as usize) {
                        Some(a) if let Some(r) = int_compare(o, a, b) => r,
                        _ => {
                            let a = tri!(self.vm_load_local(st, &code, &scope, sb, s));
                            tri!(self.compare(o, &a, b))
                        }
                    };
                    if !r {
                        jump!(target);
                    }
                }
                Op::CompareJump(o, target) => {
                    // The operands are dropped before the jump's tick (a generator
                    // dropped here is closed by the tick, as before).
                    let r = {
                        let b = st.pop();
                        let a = st.pop();
                        match int_compare(o, &a, &b) {
                            Some(r) => r,
                            None => tri!(self.compare(o, &a, &b)),
                        }
                    };
                    if !r {
                        jump!(target);
                    }
                }
                Op::CompareConstJump(o, k, target) => {
                    let r = {
                        let a = st.pop();
                        let b = &code.consts[k as usize];
                        match int_compare(o, &a, b) {
                            Some(r) => r,
                            None => tri!(self.compare(o, &a, b)),
                        }
                    };
                    if !r {
                        jump!(target);
                    }
                }
                Op::CompareChain(o, target) => {
                    let b = st.pop();
                    let a = st.pop();
                    if tri!(self.compare(o, &a, &b)) {
                        st.stack.push(b);
                    } else {
                        st.stack.push(Value::Bool(false));
                        pc = target as usize;
                    }
                }
                Op::JumpIfFalse(target) => {
                    let t = {
                        let v = st.pop();
                        match v {
                            Value::Bool(b) => b,
                            _ => tri!(self.truthy(&v)),
                        }
                    };
                    if !t {
                        jump!(target);
                    }
                }
                Op::JumpIfFalseOrPop(target) | Op::JumpIfTrueOrPop(target) => {
                    let v = st.stack.last().cloned().unwrap_or(Value::None);
                    let t = tri!(self.truthy(&v));
                    if t == matches!(op, Op::JumpIfTrueOrPop(_)) {
                        pc = target as usize;
                    } else {
                        st.stack.pop();
                    }
                }
                Op::Jump(target) => jump!(target),
                Op::GetAttr(i, site) => {
                    let o = st.pop();
                    if let Value::Instance(inst) = &o
                        && let Some(slot) = cached_field(&code, i, site, &o, inst)
                        && let Some(v) = inst.fields.borrow().get(slot)
                    {
                        st.stack.push_clone(v);
                        continue;
                    }
                    let v = tri!(self.get_attr(&o, &code.names[i as usize]));
                    st.stack.push(v);
                }
                Op::SetAttr(i, site) | Op::SetAttrTop(i, site) => {
                    let (o, v) = if matches!(op, Op::SetAttr(..)) {
                        let o = st.pop();
                        (o, st.pop())
                    } else {
                        let v = st.pop();
                        (st.pop(), v)
                    };
                    if let Value::Instance(inst) = &o
                        && let Some(slot) = cached_field(&code, i, site, &o, inst)
                        && let Some(f) = inst.fields.borrow_mut().get_mut(slot)
                    {
                        *f = v;
                        continue;
                    }
                    tri!(self.set_attr(&o, &code.names[i as usize], v));
                }
                Op::GetItem => {
                    let i = st.pop();
                    let o = st.pop();
                    let v = tri!(self.get_item(&o, &i));
                    st.stack.push(v);
                }
                Op::SetItem => {
                    let i = st.pop();
                    let o = st.pop();
                    let v = st.pop();
                    tri!(self.set_item(&o, i, v));
                }
                Op::SetItemTop => {
                    let v = st.pop();
                    let i = st.pop();
                    let o = st.pop();
                    tri!(self.set_item(&o, i, v));
                }
                Op::AugBinary(o, extend) => {
                    // Two small ints: `Binary`'s fast path (no in-place case applies
                    // to ints), the result written over `cur`.
                    if let Some((x, y)) = st.stack.int_pair()
                        && let Some(r) = int_binary(o, *x, y)
                    {
                        *x = r;
                        st.stack.pop_scalar();
                        continue;
                    }
                    let rhs = st.pop();
                    let cur = st.pop();
                    if tri!(self.bytearray_inplace(o, &cur, &rhs)) {
                        st.stack.push(cur);
                        continue;
                    }
                    if extend
                        && o == BinOp::Add
                        && let Value::List(l) = &cur
                    {
                        let items = tri!(self.iterate(&rhs));
                        tri!(self.check_growth(l.borrow().len(), items.len()));
                        l.borrow_mut().extend(items);
                        st.stack.push(cur);
                        continue;
                    }
                    let v = tri!(self.binary_op(o, &cur, &rhs));
                    st.stack.push(v);
                }
                Op::AugLocal(s, o) => {
                    let idx = sb + s as usize;
                    // Two small ints: no in-place case applies; stored as below.
                    if let [.., Value::Int(x), Value::Int(y)] = &st.stack[..]
                        && let Some(r) = int_binary(o, *x, *y)
                    {
                        st.stack.pop_scalar();
                        st.stack.pop_scalar();
                        if let Some(Value::Int(x)) = &mut st.slots[idx] {
                            *x = r;
                        } else {
                            st.store(idx, &code.local_names[s as usize], &scope, Value::Int(r));
                        }
                        continue;
                    }
                    let rhs = st.pop();
                    let mut cur = st.pop();
                    let add = o == BinOp::Add;
                    if tri!(self.bytearray_inplace(o, &cur, &rhs)) {
                        continue;
                    }
                    if add && let Value::List(l) = &cur {
                        let items = tri!(self.iterate(&rhs));
                        tri!(self.check_growth(l.borrow().len(), items.len()));
                        l.borrow_mut().extend(items);
                        continue;
                    }
                    // `s += t` grows the bound string in place (the tree-walker's
                    // `scope_append_str` over the slot, then the enclosing chain).
                    if add && let (Value::Str(c), Value::Str(t)) = (&cur, &rhs) {
                        tri!(self.check_str_len(c.len().saturating_add(t.len())));
                        match &st.slots[idx] {
                            Some(Value::Str(b)) if PyStr::ptr_eq(b, c) => {
                                drop(cur);
                                if let Some(Value::Str(b)) = &mut st.slots[idx] {
                                    b.push_str(t);
                                }
                                continue;
                            }
                            Some(_) => {}
                            None => {
                                let name = &code.local_names[s as usize];
                                match scope_append_str(&scope, name, cur, t) {
                                    Ok(()) => continue,
                                    Err(c) => cur = c,
                                }
                            }
                        }
                    }
                    let v = tri!(self.binary_op(o, &cur, &rhs));
                    st.store(idx, &code.local_names[s as usize], &scope, v);
                }
                Op::BuildList(n) => {
                    let base = st.stack.len() - n as usize;
                    let items: Vec<Value> = st.stack.drain_from(base);
                    st.stack.push(Value::list(items));
                }
                Op::BuildTuple(n) => {
                    let base = st.stack.len() - n as usize;
                    let items: Vec<Value> = st.stack.drain_from(base);
                    st.stack.push(Value::tuple(items));
                }
                Op::NewDict => st.stack.push(Value::dict(Dict::default())),
                Op::DictInsert => {
                    let v = st.pop();
                    let k = st.pop();
                    // Keyed as every dict is (`Interp::dict_key`): an object of a class
                    // with `__hash__`/`__eq__` by value.
                    let d = match st.stack.last() {
                        Some(Value::Dict(d)) => d.clone(),
                        _ => continue,
                    };
                    let k = tri!(self.dict_key(&d, &k));
                    d.borrow_mut().insert(k, v);
                }
                Op::Call(n) => {
                    let n = n as usize;
                    let base = st.stack.len() - n;
                    // Compiled code exists only for a plain signature (`vm_code`), so
                    // with the count checked this is `plain_shape`.
                    let compiled = match st.stack.at(base - 1) {
                        Value::Func(f) if f.params.len() == n => self.vm_code_of(f),
                        _ => None,
                    };
                    if let Some(c) = compiled {
                        let ticked = tri!(self.vm_enter(st, None, c, n, None, pc - 1, &scope));
                        enter_top!(false, ticked);
                        continue;
                    }
                    let args: Vec<Value> = st.stack.drain_from(base);
                    let f = st.pop();
                    let v = tri!(self.call_value(&f, args, Vec::new()));
                    st.stack.push(v);
                }
                Op::CallKw(npos, k) => {
                    let kwn = &code.kwnames[k as usize];
                    let base = st.stack.len() - npos as usize - kwn.len();
                    let mut args: Vec<Value> = st.stack.drain_from(base);
                    let kwv = args.split_off(npos as usize);
                    let kw: Vec<(Rc<str>, Value)> = kwn.iter().cloned().zip(kwv).collect();
                    let f = st.pop();
                    let v = tri!(self.call_value(&f, args, kw));
                    st.stack.push(v);
                }
                Op::CallMethod(i, n, site) => {
                    let n = n as usize;
                    let name = &code.names[i as usize];
                    let base = st.stack.len() - n;
                    let cache = &code.method_cache[site as usize];
                    // The cached method when the receiver's class is the one cached and
                    // no method was declared or replaced since (a cached class is never
                    // a stdlib type: those are not cached).
                    let hit = match (&*cache.borrow(), &st.stack[base - 1]) {
                        (Some(h), Value::Instance(inst))
                            if Rc::ptr_eq(&h.class, &inst.class) && h.epoch == methods_epoch() =>
                        {
                            Some(h.func.clone())
                        }
                        (Some(h), Value::Anchor(a))
                            if Rc::ptr_eq(&h.class, &self.graph.slot(*a).class)
                                && h.epoch == methods_epoch() =>
                        {
                            Some(h.func.clone())
                        }
                        _ => None,
                    };
                    let method = match hit {
                        Some(f) => Some(f),
                        None => {
                            let recv = &st.stack[base - 1];
                            let class = match recv {
                                Value::Instance(inst) if Self::stdlib_key(recv).is_none() => {
                                    Some(inst.class.clone())
                                }
                                Value::Anchor(h) => Some(self.graph.slot(*h).class.clone()),
                                _ => None,
                            };
                            class.and_then(|class| {
                                let f = class.find_method(name)?;
                                if !f.is_static && plain_shape(&f, n) {
                                    *cache.borrow_mut() = Some(MethodHit {
                                        class,
                                        epoch: methods_epoch(),
                                        func: f.clone(),
                                    });
                                }
                                Some(f)
                            })
                        }
                    };
                    match method {
                        // Compiled code exists only for a plain signature (`vm_code`):
                        // with the count checked, this is the `plain_shape` case.
                        Some(f)
                            if !f.is_static
                                && f.params.len() == n
                                && let Some(c) = self.vm_code_of(&f) =>
                        {
                            let ticked = tri!(self.vm_enter_method(st, f, c, n, pc - 1, &scope));
                            enter_top!(false, ticked);
                            continue;
                        }
                        Some(f) if !f.is_static && plain_shape(&f, n) => {
                            let args: Vec<Value> = st.stack.drain_from(base);
                            let recv = st.pop();
                            let v =
                                tri!(self.call_function(&f, Some(recv), args, Vec::new(), None));
                            st.stack.push(v);
                        }
                        _ => {
                            let name = name.clone();
                            let args: Vec<Value> = st.stack.drain_from(base);
                            let recv = st.pop();
                            let v = tri!(self.call_method_value(&recv, &name, args, Vec::new()));
                            st.stack.push(v);
                        }
                    }
                }
                Op::CallMethodKw(i, npos, k) => {
                    let kwn = &code.kwnames[k as usize];
                    let base = st.stack.len() - npos as usize - kwn.len();
                    let mut args: Vec<Value> = st.stack.drain_from(base);
                    let kwv = args.split_off(npos as usize);
                    let kw: Vec<(Rc<str>, Value)> = kwn.iter().cloned().zip(kwv).collect();
                    let recv = st.pop();
                    let name = code.names[i as usize].clone();
                    let v = tri!(self.call_method_value(&recv, &name, args, kw));
                    st.stack.push(v);
                }
                Op::Return => return_frame!(true),
                Op::ReturnNone => return_frame!(false),
                Op::TickReturnLocal(s) => {
                    tri!(self.vm_tick());
                    if let Some(v) = st.slots.at(sb + s as usize) {
                        st.stack.push_clone(v);
                        return_frame!(true);
                    }
                    // Unbound: the `LoadLocal` right after reads the closure chain.
                }
                Op::ReturnBinary(o) => {
                    if let Some((x, y)) = st.stack.int_pair()
                        && let Some(r) = int_binary(o, *x, y)
                    {
                        *x = r;
                        st.stack.pop_scalar();
                        return_frame!(true);
                        continue;
                    }
                    // Exactly `Binary`; the `Return` right after runs next.
                    let b = st.pop();
                    let a = st.pop();
                    let r = tri!(self.binary_op(o, &a, &b));
                    st.stack.push(r);
                }
                Op::GetIter(comprehension, reserve) => {
                    let v = st.pop();
                    let it = tri!(self.vm_iter(st, v, comprehension, reserve));
                    st.iters.push(it);
                }
                Op::EnumerateFast(target) => {
                    let n = st.stack.len();
                    // Not over an iterator: `enumerate(gen())` must stay lazy.
                    if matches!(&st.stack[n - 2], Value::Builtin(f) if &**f == "enumerate")
                        && !matches!(
                            &st.stack[n - 1],
                            Value::Generator(_) | Value::Iter(..) | Value::Lazy(_)
                        )
                    {
                        // The builtin's own work (`enumerate`): the source's items (a
                        // list's read live, as its iterator would be).
                        let items = tri!(self.iter_items(&st.stack[n - 1]));
                        st.stack.truncate(n - 2);
                        st.enumerated = Some(items);
                        pc = target as usize;
                    }
                }
                Op::GetIterEnumerate(reserve) => {
                    let it = match st.enumerated.take() {
                        Some(items) => {
                            if reserve {
                                reserve_result(st, items.remaining());
                            }
                            VmIter::Enumerate { next: 0, items }
                        }
                        // `enumerate` was not the builtin: what its call returned.
                        None => {
                            let v = st.pop();
                            tri!(self.vm_iter(st, v, true, reserve))
                        }
                    };
                    st.iters.push(it);
                }
                Op::ForIterPair(exit, k) => {
                    let slots = &code.slot_lists[k as usize];
                    let (s0, s1) = (sb + slots[0] as usize, sb + slots[1] as usize);
                    let item = match st.iters.last_mut() {
                        Some(VmIter::Enumerate { next, items }) => match items.next() {
                            Some(v) => {
                                let i = *next;
                                *next = i.saturating_add(1);
                                tri!(self.poll());
                                st.slots.set_int(s0, i);
                                stacks::assign_slot(&mut st.slots[s1], v);
                                continue;
                            }
                            None => None,
                        },
                        Some(VmIter::Lazy(_) | VmIter::Gen(_) | VmIter::Watched(..)) => {
                            tri!(self.vm_for_next(&mut st.iters))
                        }
                        Some(it) => it.next_ready(),
                        None => None,
                    };
                    let Some(v) = item else {
                        st.iters.pop();
                        pc = exit as usize;
                        continue;
                    };
                    tri!(self.poll());
                    // `UnpackLocals` of the item.
                    if let Value::Tuple(t) = &v
                        && t.len() == 2
                    {
                        st.slots[s0] = Some(t[0].clone());
                        st.slots[s1] = Some(t[1].clone());
                        continue;
                    }
                    let vals = tri!(self.vm_unpack(&v, 2));
                    for (s, x) in [s0, s1].into_iter().zip(vals) {
                        st.slots[s] = Some(x);
                    }
                }
                // A range's ints are written where they go (`OpStack`, `SlotStack`),
                // not returned through `vm_for_next`'s result.
                Op::ForIter(exit) if matches!(st.iters.last(), Some(VmIter::Range { .. })) => {
                    match st.iters.last_mut().and_then(VmIter::next_int) {
                        Some(i) => {
                            tri!(self.poll());
                            st.stack.push_int(i);
                        }
                        None => {
                            st.iters.pop();
                            pc = exit as usize;
                        }
                    }
                }
                Op::ForIterLocal(exit, s)
                    if matches!(st.iters.last(), Some(VmIter::Range { .. })) =>
                {
                    match st.iters.last_mut().and_then(VmIter::next_int) {
                        Some(i) => {
                            tri!(self.poll());
                            st.slots.set_int(sb + s as usize, i);
                        }
                        None => {
                            st.iters.pop();
                            pc = exit as usize;
                        }
                    }
                }
                Op::ForIter(exit) => match tri!(self.vm_for_next(&mut st.iters)) {
                    Some(v) => st.stack.push(v),
                    None => {
                        st.iters.pop();
                        pc = exit as usize;
                    }
                },
                Op::ForIterLocal(exit, s) => match tri!(self.vm_for_next(&mut st.iters)) {
                    Some(v) => stacks::assign_slot(&mut st.slots[sb + s as usize], v),
                    None => {
                        st.iters.pop();
                        pc = exit as usize;
                    }
                },
                Op::PopIter => {
                    st.iters.pop();
                }
                Op::StoreName(i) => {
                    let v = st.pop();
                    let name = &code.names[i as usize];
                    store_name(&scope, name, &code.name_hints[i as usize], v);
                }
                Op::DefineName(i) => {
                    let v = st.pop();
                    scope_define(&scope, code.names[i as usize].clone(), v);
                }
                Op::AugName(i, o) => {
                    let name = &code.names[i as usize];
                    // Two small ints: no in-place case applies; stored as below.
                    if let [.., Value::Int(x), Value::Int(y)] = &st.stack[..]
                        && let Some(r) = int_binary(o, *x, *y)
                    {
                        st.stack.pop_scalar();
                        st.stack.pop_scalar();
                        store_name(&scope, name, &code.name_hints[i as usize], Value::Int(r));
                        continue;
                    }
                    let rhs = st.pop();
                    let cur = st.pop();
                    let add = o == BinOp::Add;
                    if tri!(self.bytearray_inplace(o, &cur, &rhs)) {
                        continue;
                    }
                    if add && let Value::List(l) = &cur {
                        let items = tri!(self.iterate(&rhs));
                        tri!(self.check_growth(l.borrow().len(), items.len()));
                        l.borrow_mut().extend(items);
                        continue;
                    }
                    let cur = match (&cur, &rhs) {
                        (Value::Str(c), Value::Str(t)) if add => {
                            tri!(self.check_str_len(c.len().saturating_add(t.len())));
                            match scope_append_str(&scope, name, cur, t) {
                                Ok(()) => continue,
                                Err(cur) => cur,
                            }
                        }
                        _ => cur,
                    };
                    let v = tri!(self.binary_op(o, &cur, &rhs));
                    store_name(&scope, name, &code.name_hints[i as usize], v);
                }
                Op::EvalAst(i) => {
                    let Some(mctx) = mctx else {
                        return Ok(Value::None);
                    };
                    // Inside a comprehension: its scope.
                    let inner;
                    let ctx = if Rc::ptr_eq(&scope, &mctx.scope) {
                        mctx
                    } else {
                        inner = Ctx {
                            scope: scope.clone(),
                            ..mctx.clone()
                        };
                        &inner
                    };
                    let v = tri!(self.eval(&code.exprs[i as usize], ctx));
                    st.stack.push(v);
                }
                Op::EnterScope => {
                    let inner = Scope::new_comprehension(scope.clone());
                    st.scopes.push(std::mem::replace(&mut scope, inner));
                }
                Op::ExitScope => {
                    if let Some(outer) = st.scopes.pop() {
                        scope = outer;
                    }
                }
                Op::UnpackDefine(k) => {
                    let v = st.pop();
                    let names = &code.kwnames[k as usize];
                    if let Value::Tuple(t) = &v
                        && t.len() == names.len()
                    {
                        for (n, x) in names.iter().zip(t.iter()) {
                            scope_define(&scope, n.clone(), x.clone());
                        }
                        continue;
                    }
                    let vals = tri!(self.vm_unpack(&v, names.len()));
                    for (n, x) in names.iter().zip(vals) {
                        scope_define(&scope, n.clone(), x);
                    }
                }
                Op::UnpackLocals(k) => {
                    let v = st.pop();
                    let slots = &code.slot_lists[k as usize];
                    if let Value::Tuple(t) = &v
                        && t.len() == slots.len()
                    {
                        for (s, x) in slots.iter().zip(t.iter()) {
                            st.slots[sb + *s as usize] = Some(x.clone());
                        }
                        continue;
                    }
                    let vals = tri!(self.vm_unpack(&v, slots.len()));
                    for (s, x) in slots.iter().zip(vals) {
                        st.slots[sb + *s as usize] = Some(x);
                    }
                }
                Op::UnpackStore(k) => {
                    let v = st.pop();
                    let slots = &code.slot_lists[k as usize];
                    if let Value::Tuple(t) = &v
                        && t.len() == slots.len()
                    {
                        for (s, x) in slots.iter().zip(t.iter()) {
                            let name = &code.local_names[*s as usize];
                            st.store(sb + *s as usize, name, &scope, x.clone());
                        }
                        continue;
                    }
                    let vals = tri!(self.vm_unpack_exact(&v, slots.len()));
                    for (s, x) in slots.iter().zip(vals) {
                        let name = &code.local_names[*s as usize];
                        st.store(sb + *s as usize, name, &scope, x);
                    }
                }
                Op::UnpackNames(k) => {
                    let v = st.pop();
                    let names = &code.kwnames[k as usize];
                    if let Value::Tuple(t) = &v
                        && t.len() == names.len()
                    {
                        for (n, x) in names.iter().zip(t.iter()) {
                            scope_set(&scope, n, x.clone());
                        }
                        continue;
                    }
                    let vals = tri!(self.vm_unpack_exact(&v, names.len()));
                    for (n, x) in names.iter().zip(vals) {
                        scope_set(&scope, n, x);
                    }
                }
                Op::ListAppend => {
                    let v = st.pop();
                    if let Some(Value::List(l)) = st.stack.last() {
                        let len = l.borrow().len();
                        tri!(self.check_growth(len, 1));
                        if let Some(Value::List(l)) = st.stack.last() {
                            l.borrow_mut().push(v);
                        }
                    }
                }
                Op::NewSet => st
                    .stack
                    .push(Value::Set(Rc::new(std::cell::RefCell::new(Set::default())))),
                Op::SetAdd => {
                    let v = st.pop();
                    if let Some(Value::Set(out)) = st.stack.last() {
                        let out = out.clone();
                        let k = tri!(self.set_key(&out, &v));
                        let len = out.borrow().len();
                        if len >= self.max_collection_items() && !out.borrow().contains(&k) {
                            tri!(self.check_growth(len, 1));
                        }
                        out.borrow_mut().insert(k);
                    }
                }
                Op::DictPut => {
                    let v = st.pop();
                    let k = st.pop();
                    if let Some(stage) = st.dict_stages.last_mut() {
                        if let Some(pairs) = stage
                            && let Value::Int(x) = k
                            && pairs.last().is_none_or(
                                |(HashKey(l), _)| matches!(l, Value::Int(last) if x > *last),
                            )
                            && pairs.len() < self.max_collection_items()
                        {
                            pairs.push((HashKey(k), v));
                            continue;
                        }
                        // Off from here on: what was staged goes in first, in order.
                        if let Some(pairs) = stage.take()
                            && let Some(Value::Dict(out)) = st.stack.last()
                        {
                            insert_staged(&mut out.borrow_mut(), pairs);
                        }
                    }
                    if let Some(Value::Dict(out)) = st.stack.last() {
                        let out = out.clone();
                        let k = tri!(self.dict_key(&out, &k));
                        let len = out.borrow().len();
                        if len >= self.max_collection_items() && !out.borrow().contains_key(&k) {
                            tri!(self.check_growth(len, 1));
                        }
                        out.borrow_mut().insert(k, v);
                    }
                }
                Op::DictStage => st.dict_stages.push(Some(Vec::new())),
                Op::DictUnstage => {
                    if let Some(Some(pairs)) = st.dict_stages.pop()
                        && let Some(Value::Dict(out)) = st.stack.last()
                    {
                        insert_staged(&mut out.borrow_mut(), pairs);
                    }
                }
                Op::FStrStart => st.fstrs.push(String::new()),
                Op::FStrLit(k) => {
                    if let (Some(out), Value::Str(t)) =
                        (st.fstrs.last_mut(), &code.consts[k as usize])
                    {
                        out.push_str(t);
                    }
                }
                Op::FStrConv(p) => {
                    let v = st.stack.last().cloned().unwrap_or(Value::None);
                    let c = match code.fparts[p as usize].conversion {
                        Some('s') => Value::Str(tri!(self.to_str(&v)).into()),
                        Some('r' | 'a') => Value::Str(tri!(self.repr(&v)).into()),
                        _ => Value::None,
                    };
                    st.stack.push(c);
                }
                Op::FStrPiece(p) => {
                    let part = &code.fparts[p as usize];
                    let (v, conv, spec) = if part.spec {
                        let spec = st.pop();
                        let conv = st.pop();
                        (st.pop(), conv, Some(spec))
                    } else {
                        (st.pop(), Value::None, None)
                    };
                    let mut out = st.fstrs.pop().unwrap_or_default();
                    let r = self.vm_fstr_piece(&mut out, part, v, conv, spec);
                    st.fstrs.push(out);
                    tri!(r);
                }
                Op::FStrEnd => {
                    let out = st.fstrs.pop().unwrap_or_default();
                    st.stack.push(Value::Str(out.into()));
                }
                Op::LoadRoot => {
                    let h = tri!(self.root_handle());
                    st.stack.push(Value::Anchor(h));
                }
                Op::DefaultAnchor => {
                    let this = st.frames.last().and_then(|f| f.this.as_ref());
                    let here = if st.frames.len() == 1 {
                        st.here.as_ref()
                    } else {
                        None
                    };
                    let v = match (this, here) {
                        (Some(v @ Value::Anchor(_)), _) | (_, Some(v)) => v.clone(),
                        _ => tri!(Err(self.vm_name_error("self"))),
                    };
                    st.stack.push(v);
                }
                Op::EdgeRef(i, visit) => {
                    let start = st.pop();
                    let ctx = vm_ctx(st, &scope, mctx);
                    let r = &code.edge_refs[i as usize];
                    let (nodes, pairs) = tri!(self.edge_ref_from(start, r, &ctx));
                    let items: Vec<Value> = if visit {
                        // `[edge ...]` in a visit: each edge, then its far node once.
                        let mut items = Vec::with_capacity(pairs.len() * 2);
                        let mut seen = FxHashMap::default();
                        for (e, n) in pairs {
                            items.push(Value::Anchor(e));
                            if seen.insert(n, ()).is_none() {
                                items.push(Value::Anchor(n));
                            }
                        }
                        items
                    } else if r.edges {
                        pairs.into_iter().map(|(e, _)| Value::Anchor(e)).collect()
                    } else {
                        nodes.into_iter().map(Value::Anchor).collect()
                    };
                    st.stack.push(Value::list(items));
                }
                Op::VisitLocations => {
                    let v = st.pop();
                    let mut items = Vec::new();
                    tri!(self.locations(&v, &mut items));
                    st.stack.push(Value::list(items));
                }
                Op::Visit(index, target) => {
                    let idx = if index { Some(st.pop()) } else { None };
                    let items = match st.pop() {
                        Value::List(l) => Rc::try_unwrap(l)
                            .map_or_else(|l| l.borrow().clone(), |l| l.into_inner()),
                        _ => Vec::new(),
                    };
                    if tri!(self.queue_visit(items, idx)) {
                        pc = target as usize;
                    }
                }
                Op::Report => {
                    let v = st.pop();
                    tri!(self.report(v));
                }
                Op::Disengage => {
                    if let Some(w) = self.walks.last_mut() {
                        w.disengaged = true;
                    }
                }
                Op::Spawn => {
                    let b = st.pop();
                    let a = st.pop();
                    let v = tri!(self.spawn(a, b));
                    st.stack.push(v);
                }
                Op::Connect(i) => {
                    let b = st.pop();
                    let a = st.pop();
                    let ctx = vm_ctx(st, &scope, mctx);
                    let v = tri!(self.connect_values(a, b, &code.connects[i as usize], &ctx));
                    st.stack.push(v);
                }
                Op::ExcFrom => {
                    let v = st.pop();
                    let v = tri!(self.exception_from(v));
                    st.stack.push(v);
                }
                Op::Raise(with_cause) => {
                    let cause = if with_cause { Some(st.pop()) } else { None };
                    let v = st.pop();
                    if let (Some(c), Value::Instance(i)) = (cause, &v) {
                        i.set_extra(Rc::from("__cause__"), c);
                    }
                    tri!(Err(raised(v)));
                }
                Op::RaiseAgain => {
                    let e = match self.handling.last() {
                        Some(v) => raised(v.clone()),
                        None => self.err("RuntimeError", "No active exception to reraise"),
                    };
                    tri!(Err(e));
                }
                Op::AssertJump(target) => {
                    let v = st.pop();
                    if tri!(self.truthy(&v)) {
                        pc = target as usize;
                    }
                }
                Op::AssertFail(with_msg) => {
                    let args = if with_msg { vec![st.pop()] } else { Vec::new() };
                    let Some(class) = self.builtin_class("AssertionError") else {
                        tri!(Err(Interrupt::Limit("AssertionError class missing".into())));
                        continue;
                    };
                    let v = self.make_exception(class, args);
                    tri!(Err(raised(v)));
                }
                Op::ExecAst(i) => {
                    let Some(ctx) = mctx else {
                        return Ok(Value::None);
                    };
                    tri!(self.exec_stmt(&code.stmts[i as usize], ctx));
                }
            }
        }
    }
}
