//! Lowering a def body to bytecode. `None` (the body stays on the tree-walker) as soon
//! as any construct outside the subset appears; nothing is half-compiled.
//!
//! Names: the parameters and every name the body assigns (plain, typed and augmented
//! assignment, loop targets) get slots; every other name is read through the closure
//! chain by name (`LoadGlobal`). That is exact because nothing else in the subset can
//! bind a name in the frame (no nested defs, lambdas, `del`, `except ... as`, walrus,
//! `glob`, comprehensions), and `StoreLocal` of an unbound slot rebinds an enclosing
//! function's local or a `glob` (`value::scope_rebind_enclosing`, the tree-walker's rule
//! too); a `LoadLocal` of one reads only those, else it is an `UnboundLocalError`.

use super::{Code, FPart, Op};
use crate::ast::binds::{collect_locals, flat_target};
use crate::ast::{self, Arg, ExprKind as E, StmtKind as S};
use crate::interp::value::{Function, Value};
use crate::span::Span;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

#[cfg(test)]
mod tests;

/// The body uses something outside the subset.
struct Unsupported;

type L<T> = Result<T, Unsupported>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum LoopKind {
    /// A `for` loop: its iterator is on the iterator stack.
    For,
    /// `while`, `for ... while ... with ...`, the forever loop: nothing to pop.
    Plain,
}

struct LoopCtx {
    kind: LoopKind,
    /// Jumps to patch to the loop's end.
    breaks: Vec<usize>,
    /// Jumps to patch to the loop's continue point.
    continues: Vec<usize>,
}

struct Lower {
    ops: Vec<Op>,
    spans: Vec<Span>,
    consts: Vec<Value>,
    names: Vec<Rc<str>>,
    kwnames: Vec<Vec<Rc<str>>>,
    locals: Vec<Rc<str>>,
    loops: Vec<LoopCtx>,
    /// Module code (an entry block): names by name, and what is outside the subset
    /// runs on the tree-walker in place (`EvalAst`/`ExecAst`).
    module: bool,
    exprs: Vec<ast::Expr>,
    stmts: Vec<ast::Stmt>,
    /// How many of `locals` are the def's parameters (none in module code).
    params: usize,
    /// How many of `locals` are the function's own (parameters and assigned names);
    /// the slots after them belong to comprehensions.
    func_locals: usize,
    /// The comprehensions being lowered, innermost last: each target name with its
    /// slot, `None` until its generator binds it.
    comps: Vec<Vec<(Rc<str>, Option<u32>)>>,
    /// Slot lists of tuple targets (`UnpackLocals`).
    slot_lists: Vec<Vec<u32>>,
    fparts: Vec<FPart>,
    edge_refs: Vec<ast::EdgeRef>,
    connects: Vec<ast::ConnectOp>,
    /// How many `GetAttr`/`SetAttr`/`SetAttrTop` and `CallMethod` sites (each has
    /// its own cache entry).
    attr_sites: u32,
    method_sites: u32,
    /// The next comprehension generator lowered is a comprehension's first.
    comp_first: bool,
    /// Inside a comprehension lowered to slots in module code: nothing may fall back
    /// to the tree-walker, which would not see the slots.
    strict: bool,
}

/// Lengths of the tables before an attempt, to undo it.
struct Mark {
    ops: usize,
    consts: usize,
    names: usize,
    kwnames: usize,
    exprs: usize,
    stmts: usize,
    loops: usize,
    breaks: usize,
    continues: usize,
    locals: usize,
    slot_lists: usize,
    fparts: usize,
    edge_refs: usize,
    connects: usize,
}

/// Lower `func`'s `body`, or `None` when it is outside the subset.
pub(super) fn lower(func: &Function, body: &[ast::Stmt]) -> Option<Code> {
    // A def that is not a method but names its first parameter `self` (a decorator's
    // wrapper) reads `self` from that argument, which `LoadSelf` (the receiver) would
    // not: it stays on the tree-walker (`call_function` binds it).
    if func.owner.borrow().is_none() && func.params.first().is_some_and(|p| &*p.name == "self") {
        return None;
    }
    lower_def(func.params.iter().map(|p| p.name.clone()).collect(), body)
}

/// Lower a def body whose parameters are `params` (plain, in order).
fn lower_def(params: Vec<Rc<str>>, body: &[ast::Stmt]) -> Option<Code> {
    let mut l = Lower::new(false, params);
    collect_locals(body, &mut l.locals);
    l.func_locals = l.locals.len();
    l.body(body).ok()?;
    Some(l.finish())
}

/// Lower an entry block (module code): every name by name in the module scope, the
/// statements and expressions outside the subset run by the tree-walker in place.
/// `None` when a statement's control flow would leave the block or a compiled loop
/// (`return`, `skip`, a `break` outside any loop of the statement, ...).
pub(super) fn lower_module(body: &[ast::Stmt]) -> Option<Code> {
    let mut l = Lower::new(true, Vec::new());
    l.block(body).ok()?;
    l.emit(Op::ReturnNone, Span::DUMMY);
    Some(l.finish())
}

/// The peephole pass over finished code: `Tick, LoadLocal(s), Return` starts with
/// `TickReturnLocal(s)`, `Binary(o), Return` with `ReturnBinary(o)` and
/// `LocalBinaryConst(s, o, k), Call(1)` with `CallLocalBinaryConst(s, o, k)`. Only the first
/// instruction of each run is replaced: the rest stays where it was, so a jump into it,
/// a span looked up by index and the fused instruction's own fallback (an unbound
/// slot, operands that are not two small ints) find the plain instructions.
fn fuse_returns(ops: &mut [Op]) {
    for i in 0..ops.len() {
        match ops[i..] {
            [Op::Tick, Op::LoadLocal(s), Op::Return, ..] => ops[i] = Op::TickReturnLocal(s),
            [Op::Binary(o), Op::Return, ..] => ops[i] = Op::ReturnBinary(o),
            [Op::LocalBinaryConst(s, o, k), Op::Call(1), ..] => {
                ops[i] = Op::CallLocalBinaryConst(s, o, k);
            }
            _ => {}
        }
    }
}

/// Whether running `s` on its own could end in a flow other than normal completion
/// (a `return`, `skip`, `disengage`, or a `break`/`continue` not inside one of its
/// own loops; a `break` inside a `switch` case ends the switch).
fn escapes(s: &ast::Stmt, in_loop: bool, in_switch: bool) -> bool {
    let block = |b: &[ast::Stmt], l: bool, sw: bool| b.iter().any(|s| escapes(s, l, sw));
    let opt = |b: &Option<Vec<ast::Stmt>>, l: bool, sw: bool| {
        b.as_deref().is_some_and(|b| block(b, l, sw))
    };
    match &s.kind {
        S::Return(_) | S::Skip | S::Disengage => true,
        S::Break => !in_loop && !in_switch,
        S::Continue => !in_loop,
        S::If {
            body,
            elifs,
            orelse,
            ..
        } => {
            block(body, in_loop, in_switch)
                || elifs.iter().any(|(_, b)| block(b, in_loop, in_switch))
                || opt(orelse, in_loop, in_switch)
        }
        S::While { body, orelse, .. }
        | S::For { body, orelse, .. }
        | S::IterFor { body, orelse, .. } => {
            block(body, true, false) || opt(orelse, in_loop, in_switch)
        }
        S::Forever { body } => block(body, true, false),
        S::Try {
            body,
            handlers,
            orelse,
            finally,
        } => {
            block(body, in_loop, in_switch)
                || handlers.iter().any(|h| block(&h.body, in_loop, in_switch))
                || opt(orelse, in_loop, in_switch)
                || opt(finally, in_loop, in_switch)
        }
        S::Match { cases, .. } => cases.iter().any(|c| block(&c.body, in_loop, in_switch)),
        S::Switch { cases, .. } => cases.iter().any(|c| block(&c.body, in_loop, true)),
        S::TypedContext { body, .. } => block(body, in_loop, in_switch),
        S::Visit { orelse, .. } => opt(orelse, in_loop, in_switch),
        _ => false,
    }
}

impl Lower {
    fn new(module: bool, locals: Vec<Rc<str>>) -> Lower {
        Lower {
            ops: Vec::new(),
            spans: Vec::new(),
            consts: Vec::new(),
            names: Vec::new(),
            kwnames: Vec::new(),
            func_locals: locals.len(),
            params: if module { 0 } else { locals.len() },
            locals,
            loops: Vec::new(),
            module,
            exprs: Vec::new(),
            stmts: Vec::new(),
            comps: Vec::new(),
            slot_lists: Vec::new(),
            fparts: Vec::new(),
            edge_refs: Vec::new(),
            connects: Vec::new(),
            attr_sites: 0,
            method_sites: 0,
            comp_first: false,
            strict: false,
        }
    }

    fn finish(mut self) -> Code {
        fuse_returns(&mut self.ops);
        Code {
            ops: self.ops,
            spans: self.spans,
            consts: self.consts,
            name_hints: self.names.iter().map(|_| Cell::new(0)).collect(),
            names: self.names,
            kwnames: self.kwnames,
            local_names: self.locals,
            slot_lists: self.slot_lists,
            fparts: self.fparts,
            edge_refs: self.edge_refs,
            connects: self.connects,
            attr_cache: (0..self.attr_sites).map(|_| RefCell::new(None)).collect(),
            method_cache: (0..self.method_sites).map(|_| RefCell::new(None)).collect(),
            exprs: self.exprs,
            stmts: self.stmts,
        }
    }

    fn mark(&self) -> Mark {
        let top = self.loops.last();
        Mark {
            ops: self.ops.len(),
            consts: self.consts.len(),
            names: self.names.len(),
            kwnames: self.kwnames.len(),
            exprs: self.exprs.len(),
            stmts: self.stmts.len(),
            loops: self.loops.len(),
            breaks: top.map_or(0, |l| l.breaks.len()),
            continues: top.map_or(0, |l| l.continues.len()),
            locals: self.locals.len(),
            slot_lists: self.slot_lists.len(),
            fparts: self.fparts.len(),
            edge_refs: self.edge_refs.len(),
            connects: self.connects.len(),
        }
    }

    fn undo(&mut self, m: &Mark) {
        self.ops.truncate(m.ops);
        self.spans.truncate(m.ops);
        self.consts.truncate(m.consts);
        self.names.truncate(m.names);
        self.kwnames.truncate(m.kwnames);
        self.exprs.truncate(m.exprs);
        self.stmts.truncate(m.stmts);
        self.loops.truncate(m.loops);
        if let Some(top) = self.loops.last_mut() {
            top.breaks.truncate(m.breaks);
            top.continues.truncate(m.continues);
        }
        self.locals.truncate(m.locals);
        self.slot_lists.truncate(m.slot_lists);
        self.fparts.truncate(m.fparts);
        self.edge_refs.truncate(m.edge_refs);
        self.connects.truncate(m.connects);
    }

    /// Run `f`; when it meets something outside the subset, undo everything it
    /// emitted and give `None` (module code then hands the construct to the
    /// tree-walker).
    fn attempt(&mut self, f: impl FnOnce(&mut Lower) -> L<()>) -> Option<()> {
        let m = self.mark();
        let comps = self.comps.len();
        match f(self) {
            Ok(()) => Some(()),
            Err(Unsupported) => {
                self.undo(&m);
                self.comps.truncate(comps);
                None
            }
        }
    }

    fn emit(&mut self, op: Op, span: Span) -> usize {
        self.ops.push(op);
        self.spans.push(span);
        self.ops.len() - 1
    }

    /// A new attribute access site.
    fn attr_site(&mut self) -> u32 {
        self.attr_sites += 1;
        self.attr_sites - 1
    }

    fn here(&self) -> u32 {
        self.ops.len() as u32
    }

    /// Point the jump at `at` to `target`.
    fn patch(&mut self, at: usize, target: u32) {
        self.ops[at] = match self.ops[at] {
            Op::Jump(_) => Op::Jump(target),
            Op::JumpIfFalse(_) => Op::JumpIfFalse(target),
            Op::JumpIfFalseOrPop(_) => Op::JumpIfFalseOrPop(target),
            Op::JumpIfTrueOrPop(_) => Op::JumpIfTrueOrPop(target),
            Op::CompareChain(op, _) => Op::CompareChain(op, target),
            Op::CompareJump(op, _) => Op::CompareJump(op, target),
            Op::CompareConstJump(op, k, _) => Op::CompareConstJump(op, k, target),
            Op::LocalCompareConstJump(s, op, k, _) => Op::LocalCompareConstJump(s, op, k, target),
            Op::ForIter(_) => Op::ForIter(target),
            Op::ForIterLocal(_, s) => Op::ForIterLocal(target, s),
            Op::ForIterPair(_, k) => Op::ForIterPair(target, k),
            Op::EnumerateFast(_) => Op::EnumerateFast(target),
            Op::Visit(index, _) => Op::Visit(index, target),
            Op::AssertJump(_) => Op::AssertJump(target),
            other => other,
        };
    }

    fn konst(&mut self, v: Value, span: Span) {
        let i = self.const_index(v);
        self.emit(Op::Const(i), span);
    }

    fn const_index(&mut self, v: Value) -> u32 {
        self.consts.push(v);
        (self.consts.len() - 1) as u32
    }

    /// The slot of `e` when it is a name of one of the def's parameters or a target
    /// of an enclosing comprehension: always bound (a call binds every parameter,
    /// `resolve` gives a target's slot only where its generator has bound it, and
    /// nothing in the subset unbinds a slot), so reading it cannot fail and can be
    /// fused into the instruction that uses it.
    fn bound_slot(&self, e: &ast::Expr) -> Option<u32> {
        let E::Name(n) = &e.kind else {
            return None;
        };
        match self.resolve(n) {
            Ok(Some(s)) if (s as usize) < self.params || (s as usize) >= self.func_locals => {
                Some(s)
            }
            _ => None,
        }
    }

    /// Evaluate condition `cond` and jump (to a target patched later) when it is false:
    /// the index of the jump. A single comparison (not a chain) compares and jumps in
    /// one instruction with the comparison's span, as `Compare` would raise; an int
    /// literal on its right is read from the constants.
    fn cond_jump(&mut self, cond: &ast::Expr, sp: Span) -> L<usize> {
        if let E::Compare { left, ops } = &cond.kind
            && let [(op, right)] = ops.as_slice()
        {
            if let E::Int(i) = right.kind {
                let k = self.const_index(Value::Int(i));
                if let Some(s) = self.bound_slot(left) {
                    return Ok(self.emit(Op::LocalCompareConstJump(s, *op, k, 0), cond.span));
                }
                self.expr(left)?;
                return Ok(self.emit(Op::CompareConstJump(*op, k, 0), cond.span));
            }
            self.expr(left)?;
            self.expr(right)?;
            return Ok(self.emit(Op::CompareJump(*op, 0), cond.span));
        }
        self.expr(cond)?;
        Ok(self.emit(Op::JumpIfFalse(0), sp))
    }

    fn name(&mut self, n: &Rc<str>) -> u32 {
        match self.names.iter().position(|x| x == n) {
            Some(i) => i as u32,
            None => {
                self.names.push(n.clone());
                (self.names.len() - 1) as u32
            }
        }
    }

    /// The slot of one of the function's own locals (what statements assign).
    fn local(&self, n: &str) -> Option<u32> {
        self.locals[..self.func_locals]
            .iter()
            .position(|x| &**x == n)
            .map(|i| i as u32)
    }

    /// The slot a name read resolves to: a target of an enclosing comprehension
    /// (innermost first), else a local of the function. A target its comprehension
    /// has not bound yet at this point of the code (`[y for x in y for y in ...]`)
    /// could read an outer binding on one item and a stale target on the next, as the
    /// tree-walker's comprehension scope does; such code is left to the tree-walker.
    fn resolve(&self, n: &str) -> L<Option<u32>> {
        for scope in self.comps.iter().rev() {
            if let Some((_, slot)) = scope.iter().find(|(x, _)| &**x == n) {
                return slot.map(Some).ok_or(Unsupported);
            }
        }
        Ok(self.local(n))
    }

    /// The function body: statements, with a trailing expression without `;` as the
    /// value (`run_frame`'s rule: evaluated without a statement tick).
    fn body(&mut self, body: &[ast::Stmt]) -> L<()> {
        if let Some((last, init)) = body.split_last()
            && let S::Expr(e) = &last.kind
            && last.span.end == e.span.end
        {
            self.block(init)?;
            self.expr(e)?;
            self.emit(Op::Return, last.span);
            return Ok(());
        }
        self.block(body)?;
        self.emit(Op::ReturnNone, Span::DUMMY);
        Ok(())
    }

    fn block(&mut self, stmts: &[ast::Stmt]) -> L<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &ast::Stmt) -> L<()> {
        if !self.module {
            return self.stmt_inner(s);
        }
        if self.attempt(|l| l.stmt_inner(s)).is_some() {
            return Ok(());
        }
        if escapes(s, false, false) {
            return Err(Unsupported);
        }
        // `exec_stmt` ticks and records the statement span itself.
        self.stmts.push(s.clone());
        self.emit(Op::ExecAst((self.stmts.len() - 1) as u32), s.span);
        Ok(())
    }

    fn stmt_inner(&mut self, s: &ast::Stmt) -> L<()> {
        let sp = s.span;
        self.emit(Op::Tick, sp);
        match &s.kind {
            S::Empty | S::Declare { .. } => {}
            S::Expr(e) => {
                self.expr(e)?;
                self.emit(Op::Pop, sp);
            }
            S::Assign { targets, ty, value } => {
                self.expr(value)?;
                if ty.is_some()
                    && targets.len() == 1
                    && let E::Name(n) = &targets[0].kind
                {
                    if self.module {
                        let i = self.name(n);
                        self.emit(Op::DefineName(i), sp);
                        return Ok(());
                    }
                    let slot = self.local(n).ok_or(Unsupported)?;
                    self.emit(Op::DefineLocal(slot), sp);
                    return Ok(());
                }
                for (i, t) in targets.iter().enumerate() {
                    if i + 1 < targets.len() {
                        self.emit(Op::Dup, sp);
                    }
                    self.store(t, sp)?;
                }
            }
            S::AugAssign { target, op, value } => match &target.kind {
                E::Name(n) if self.module => {
                    let i = self.name(n);
                    self.emit(Op::LoadGlobal(i), sp);
                    self.expr(value)?;
                    self.emit(Op::AugName(i, *op), sp);
                }
                E::Name(n) => {
                    let slot = self.local(n).ok_or(Unsupported)?;
                    self.emit(Op::LoadLocal(slot), sp);
                    self.expr(value)?;
                    self.emit(Op::AugLocal(slot, *op), sp);
                }
                E::Attr { obj, name, .. }
                    if matches!(obj.kind, E::Special(ast::SpecialRef::SelfRef)) =>
                {
                    // `self.name op= value`: `self` is read again for the store
                    // instead of kept under the value (a frame's `self` never
                    // changes), so both ends are fused reads and writes of the field.
                    let n = self.name(&name.name);
                    let site = self.attr_site();
                    self.emit(Op::SelfAttr(n, site), obj.span);
                    self.emit(Op::GetAttr(n, site), sp);
                    self.expr(value)?;
                    self.emit(Op::AugBinary(*op, true), sp);
                    let site = self.attr_site();
                    self.emit(Op::SelfSetAttr(n, site), obj.span);
                    self.emit(Op::SetAttr(n, site), sp);
                }
                E::Attr { obj, name, .. } => {
                    let n = self.name(&name.name);
                    self.expr(obj)?;
                    self.emit(Op::Dup, sp);
                    {
                        let site = self.attr_site();
                        self.emit(Op::GetAttr(n, site), sp);
                    }
                    self.expr(value)?;
                    self.emit(Op::AugBinary(*op, true), sp);
                    {
                        let site = self.attr_site();
                        self.emit(Op::SetAttrTop(n, site), sp);
                    }
                }
                E::Index { obj, index, .. } if !matches!(index.kind, E::Slice { .. }) => {
                    self.expr(obj)?;
                    self.expr(index)?;
                    self.emit(Op::Dup2, sp);
                    self.emit(Op::GetItem, sp);
                    self.expr(value)?;
                    self.emit(Op::AugBinary(*op, false), sp);
                    self.emit(Op::SetItemTop, sp);
                }
                _ => return Err(Unsupported),
            },
            S::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let mut ends = Vec::new();
                let mut skip = self.cond_jump(cond, sp)?;
                self.block(body)?;
                ends.push(self.emit(Op::Jump(0), sp));
                for (c, b) in elifs {
                    let at = self.here();
                    self.patch(skip, at);
                    skip = self.cond_jump(c, sp)?;
                    self.block(b)?;
                    ends.push(self.emit(Op::Jump(0), sp));
                }
                let at = self.here();
                self.patch(skip, at);
                if let Some(b) = orelse {
                    self.block(b)?;
                }
                let end = self.here();
                for j in ends {
                    self.patch(j, end);
                }
            }
            S::While { cond, body, orelse } => {
                let head = self.here();
                self.emit(Op::Poll, sp);
                let exit = self.cond_jump(cond, sp)?;
                self.loop_body(
                    LoopKind::Plain,
                    body,
                    None,
                    head,
                    sp,
                    exit,
                    orelse.as_deref(),
                )?;
            }
            S::Forever { body } => {
                let head = self.here();
                self.emit(Op::Poll, sp);
                self.loops.push(LoopCtx {
                    kind: LoopKind::Plain,
                    breaks: Vec::new(),
                    continues: Vec::new(),
                });
                self.block(body)?;
                self.emit(Op::Jump(head), sp);
                let ctx = self.loops.pop().ok_or(Unsupported)?;
                self.close_loop(ctx, head);
            }
            S::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let store = match &target.kind {
                    E::Name(n) if self.module => Op::StoreName(self.name(n)),
                    E::Name(n) => Op::StoreLocal(self.local(n).ok_or(Unsupported)?),
                    _ => self.unpack_op(target)?,
                };
                self.expr(iter)?;
                self.emit(Op::GetIter(false, false), sp);
                let head = self.here();
                let exit = self.emit(Op::ForIter(0), sp);
                self.emit(store, sp);
                self.loop_body(LoopKind::For, body, None, head, sp, exit, orelse.as_deref())?;
            }
            S::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                self.stmt(init)?;
                let head = self.here();
                self.emit(Op::Poll, sp);
                let exit = self.cond_jump(cond, sp)?;
                self.loop_body(
                    LoopKind::Plain,
                    body,
                    Some(step),
                    head,
                    sp,
                    exit,
                    orelse.as_deref(),
                )?;
            }
            S::Return(v) => match v {
                Some(e) => {
                    self.expr(e)?;
                    self.emit(Op::Return, sp);
                }
                None => {
                    self.emit(Op::ReturnNone, sp);
                }
            },
            S::Visit {
                index,
                target,
                orelse,
            } => {
                match &target.kind {
                    E::EdgeRef(r) if r.edges => self.edge_ref(r, true, sp)?,
                    _ => {
                        self.expr(target)?;
                        self.emit(Op::VisitLocations, sp);
                    }
                }
                if let Some(i) = index {
                    self.expr(i)?;
                }
                let j = self.emit(Op::Visit(index.is_some(), 0), sp);
                if let Some(b) = orelse {
                    self.block(b)?;
                }
                let end = self.here();
                self.patch(j, end);
            }
            S::Raise { exc: None, .. } => {
                self.emit(Op::RaiseAgain, sp);
            }
            S::Raise {
                exc: Some(e),
                cause,
            } => {
                self.expr(e)?;
                self.emit(Op::ExcFrom, sp);
                if let Some(c) = cause {
                    self.expr(c)?;
                }
                self.emit(Op::Raise(cause.is_some()), sp);
            }
            S::Assert { cond, msg } => {
                self.expr(cond)?;
                let j = self.emit(Op::AssertJump(0), sp);
                if let Some(m) = msg {
                    self.expr(m)?;
                }
                self.emit(Op::AssertFail(msg.is_some()), sp);
                let end = self.here();
                self.patch(j, end);
            }
            S::Report(e) => {
                self.expr(e)?;
                self.emit(Op::Report, sp);
            }
            // Both end the function (`run_frame` turns their flows into `None`); in
            // module code they would end the entry block, which is left to the
            // tree-walker.
            S::Disengage if !self.module => {
                self.emit(Op::Disengage, sp);
                self.emit(Op::ReturnNone, sp);
            }
            S::Skip if !self.module => {
                self.emit(Op::ReturnNone, sp);
            }
            S::Break => {
                let kind = self.loops.last().ok_or(Unsupported)?.kind;
                if kind == LoopKind::For {
                    self.emit(Op::PopIter, sp);
                }
                let j = self.emit(Op::Jump(0), sp);
                if let Some(l) = self.loops.last_mut() {
                    l.breaks.push(j);
                }
            }
            S::Continue => {
                self.loops.last().ok_or(Unsupported)?;
                let j = self.emit(Op::Jump(0), sp);
                if let Some(l) = self.loops.last_mut() {
                    l.continues.push(j);
                }
            }
            _ => return Err(Unsupported),
        }
        Ok(())
    }

    /// The body of a `while`/`for` whose head is at `head` and whose exit jump (taken
    /// when the condition fails or the iterator is done) is `exit`; then the `else`
    /// block, which `break` skips. A `step` (`for init to cond by step`) runs after the
    /// body and is where `continue` goes.
    #[allow(clippy::too_many_arguments)]
    fn loop_body(
        &mut self,
        kind: LoopKind,
        body: &[ast::Stmt],
        step: Option<&ast::Stmt>,
        head: u32,
        sp: Span,
        exit: usize,
        orelse: Option<&[ast::Stmt]>,
    ) -> L<()> {
        self.loops.push(LoopCtx {
            kind,
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.block(body)?;
        let cont = self.here();
        if let Some(step) = step {
            self.stmt(step)?;
        }
        self.emit(Op::Jump(head), sp);
        let ctx = self.loops.pop().ok_or(Unsupported)?;
        let at = self.here();
        self.patch(exit, at);
        if let Some(b) = orelse {
            self.block(b)?;
        }
        self.close_loop(ctx, if step.is_some() { cont } else { head });
        Ok(())
    }

    /// Patch a finished loop's `break`s to here and its `continue`s to `cont`.
    fn close_loop(&mut self, ctx: LoopCtx, cont: u32) {
        let end = self.here();
        for j in ctx.breaks {
            self.patch(j, end);
        }
        for j in ctx.continues {
            self.patch(j, cont);
        }
    }

    /// Assign the value on top of the stack to `target` (statement span `sp`).
    fn store(&mut self, target: &ast::Expr, sp: Span) -> L<()> {
        match &target.kind {
            E::Name(n) if self.module => {
                let i = self.name(n);
                self.emit(Op::StoreName(i), sp);
            }
            E::Name(n) => {
                let slot = self.local(n).ok_or(Unsupported)?;
                self.emit(Op::StoreLocal(slot), sp);
            }
            E::Attr { obj, name, .. } => {
                let n = self.name(&name.name);
                let site = self.attr_site();
                if matches!(obj.kind, E::Special(ast::SpecialRef::SelfRef)) {
                    self.emit(Op::SelfSetAttr(n, site), obj.span);
                } else {
                    self.expr(obj)?;
                }
                self.emit(Op::SetAttr(n, site), sp);
            }
            E::Index { obj, index, .. } if !matches!(index.kind, E::Slice { .. }) => {
                self.expr(obj)?;
                self.expr(index)?;
                self.emit(Op::SetItem, sp);
            }
            E::Tuple(_) | E::List(_) => {
                let op = self.unpack_op(target)?;
                self.emit(op, sp);
            }
            _ => return Err(Unsupported),
        }
        Ok(())
    }

    /// The instruction assigning a statement's flat tuple target (`a, b = ...`,
    /// `for (k, v) in ...`): by slot in a def, by name in module code.
    fn unpack_op(&mut self, target: &ast::Expr) -> L<Op> {
        let names = flat_target(target).ok_or(Unsupported)?;
        if self.module {
            self.kwnames.push(names);
            return Ok(Op::UnpackNames((self.kwnames.len() - 1) as u32));
        }
        let slots = names
            .iter()
            .map(|n| self.local(n).ok_or(Unsupported))
            .collect::<L<Vec<u32>>>()?;
        self.slot_lists.push(slots);
        Ok(Op::UnpackStore((self.slot_lists.len() - 1) as u32))
    }

    fn expr(&mut self, e: &ast::Expr) -> L<()> {
        if !self.module || self.strict {
            return self.expr_inner(e);
        }
        if self.attempt(|l| l.expr_inner(e)).is_none() {
            self.exprs.push(e.clone());
            self.emit(Op::EvalAst((self.exprs.len() - 1) as u32), e.span);
        }
        Ok(())
    }

    fn expr_inner(&mut self, e: &ast::Expr) -> L<()> {
        let sp = e.span;
        match &e.kind {
            E::None | E::Ellipsis => self.konst(Value::None, sp),
            E::Bool(b) => self.konst(Value::Bool(*b), sp),
            E::Int(i) => self.konst(Value::Int(*i), sp),
            E::Float(f) => self.konst(Value::Float(*f), sp),
            E::Str(s) => self.konst(Value::Str(s.clone().into()), sp),
            E::Bytes(b) => self.konst(Value::Bytes(b.clone()), sp),
            E::Name(n) => {
                if let Some(slot) = self.resolve(n)? {
                    self.emit(Op::LoadLocal(slot), sp);
                } else {
                    let i = self.name(n);
                    self.emit(Op::LoadGlobal(i), sp);
                }
            }
            E::Special(ast::SpecialRef::SelfRef) => {
                self.emit(Op::LoadSelf, sp);
            }
            E::Special(ast::SpecialRef::Here) => {
                self.emit(Op::LoadHere, sp);
            }
            E::Special(ast::SpecialRef::Visitor) => {
                self.emit(Op::LoadVisitor, sp);
            }
            E::Special(ast::SpecialRef::Root) => {
                self.emit(Op::LoadRoot, sp);
            }
            E::EdgeRef(r) => self.edge_ref(r, false, sp)?,
            E::Spawn { left, right } => {
                self.expr(left)?;
                self.expr(right)?;
                self.emit(Op::Spawn, sp);
            }
            E::Connect { left, right, op } => {
                let plain = op.edge.as_deref().is_none_or(|e| self.slot_free(e))
                    && op.assigns.iter().all(|(_, v)| self.slot_free(v));
                if !plain {
                    return Err(Unsupported);
                }
                self.expr(left)?;
                self.expr(right)?;
                self.connects.push(op.clone());
                let i = (self.connects.len() - 1) as u32;
                self.emit(Op::Connect(i), sp);
            }
            E::List(items) | E::Tuple(items) => {
                for it in items {
                    if matches!(it.kind, E::Starred(_)) {
                        return Err(Unsupported);
                    }
                    self.expr(it)?;
                }
                let n = items.len() as u32;
                let op = if matches!(e.kind, E::List(_)) {
                    Op::BuildList(n)
                } else {
                    Op::BuildTuple(n)
                };
                self.emit(op, sp);
            }
            E::Dict(items) => {
                self.emit(Op::NewDict, sp);
                for it in items {
                    let ast::DictItem::Pair(k, v) = it else {
                        return Err(Unsupported);
                    };
                    self.expr(k)?;
                    self.expr(v)?;
                    self.emit(Op::DictInsert, sp);
                }
            }
            E::Attr {
                obj,
                name,
                null_safe: false,
            } => {
                let n = self.name(&name.name);
                let site = self.attr_site();
                if matches!(obj.kind, E::Special(ast::SpecialRef::SelfRef)) {
                    // `self.name`: a `LoadSelf` (with `self`'s span) that reads a cached
                    // field itself and skips the `GetAttr` after it.
                    self.emit(Op::SelfAttr(n, site), obj.span);
                } else {
                    self.expr(obj)?;
                }
                self.emit(Op::GetAttr(n, site), sp);
            }
            E::Index {
                obj,
                index,
                null_safe: false,
            } if !matches!(index.kind, E::Slice { .. }) => {
                self.expr(obj)?;
                self.expr(index)?;
                self.emit(Op::GetItem, sp);
            }
            E::Call { func, args } => self.call(func, args, sp)?,
            E::Unary { op, operand } => match (op, &operand.kind) {
                // Folded: the literal's negation cannot fail.
                (ast::UnaryOp::Neg, E::Int(i)) => self.konst(Value::Int(-*i), sp),
                (ast::UnaryOp::Neg, E::Float(f)) => self.konst(Value::Float(-*f), sp),
                _ => {
                    self.expr(operand)?;
                    self.emit(Op::Unary(*op), sp);
                }
            },
            E::Binary { op, left, right } => {
                if let E::Int(i) = right.kind {
                    let k = self.const_index(Value::Int(i));
                    if let Some(s) = self.bound_slot(left) {
                        self.emit(Op::LocalBinaryConst(s, *op, k), sp);
                    } else {
                        self.expr(left)?;
                        self.emit(Op::BinaryConst(*op, k), sp);
                    }
                } else {
                    self.expr(left)?;
                    self.expr(right)?;
                    self.emit(Op::Binary(*op), sp);
                }
            }
            E::BoolOp { op, left, right } => {
                self.expr(left)?;
                let j = match op {
                    ast::BoolOp::And => self.emit(Op::JumpIfFalseOrPop(0), sp),
                    ast::BoolOp::Or => self.emit(Op::JumpIfTrueOrPop(0), sp),
                };
                self.expr(right)?;
                let end = self.here();
                self.patch(j, end);
            }
            E::Compare { left, ops } => {
                self.expr(left)?;
                let mut links = Vec::new();
                for (i, (op, re)) in ops.iter().enumerate() {
                    self.expr(re)?;
                    if i + 1 < ops.len() {
                        links.push(self.emit(Op::CompareChain(*op, 0), sp));
                    } else {
                        self.emit(Op::Compare(*op), sp);
                    }
                }
                let end = self.here();
                for j in links {
                    self.patch(j, end);
                }
            }
            E::Ternary { cond, then, orelse } => {
                self.expr(cond)?;
                let skip = self.emit(Op::JumpIfFalse(0), sp);
                self.expr(then)?;
                let end = self.emit(Op::Jump(0), sp);
                let at = self.here();
                self.patch(skip, at);
                self.expr(orelse)?;
                let at = self.here();
                self.patch(end, at);
            }
            E::Cast { expr, .. } => self.expr(expr)?,
            E::FString(parts) => {
                self.emit(Op::FStrStart, sp);
                self.fstring(parts, sp)?;
                self.emit(Op::FStrEnd, sp);
            }
            E::ListComp { .. } | E::SetComp { .. } | E::DictComp { .. } => self.comp(e)?,
            _ => return Err(Unsupported),
        }
        Ok(())
    }

    /// Edge reference `r` (span `sp`): its start anchor in the VM, its hops by the
    /// tree-walker (`edge_ref_from`), which is exact only when their expressions read
    /// no slot; `visit` asks for the locations it queues.
    fn edge_ref(&mut self, r: &ast::EdgeRef, visit: bool, sp: Span) -> L<()> {
        let plain = r.hops.iter().all(|h| {
            let op = h.op.edge_type.as_deref().is_none_or(|e| self.slot_free(e))
                && h.op.conds.iter().all(|c| self.slot_free(&c.value));
            let filter = h.filter.as_ref().is_none_or(|f| {
                f.ty.as_deref().is_none_or(|e| self.slot_free(e))
                    && f.conds.iter().all(|c| self.slot_free(&c.value))
            });
            op && filter && h.pin.as_deref().is_none_or(|e| self.slot_free(e))
        });
        if !plain {
            return Err(Unsupported);
        }
        match &r.anchor {
            Some(a) => self.expr(a)?,
            None => {
                self.emit(Op::DefaultAnchor, sp);
            }
        }
        let mut r = r.clone();
        r.anchor = None;
        self.edge_refs.push(r);
        let i = (self.edge_refs.len() - 1) as u32;
        self.emit(Op::EdgeRef(i, visit), sp);
        Ok(())
    }

    /// Whether the tree-walker can evaluate `e` in the frame's context (the closure
    /// scope, `self`, `here`, `visitor`) exactly: it reads no slot and binds nothing.
    /// Literals, names that are no slot, `self`/`here`/`root`..., attribute reads,
    /// operators and calls of those (a typed edge's constructor).
    fn slot_free(&self, e: &ast::Expr) -> bool {
        match &e.kind {
            E::None | E::Bool(_) | E::Int(_) | E::Float(_) | E::Str(_) | E::Special(_) => true,
            E::Name(n) => matches!(self.resolve(n), Ok(None)),
            E::Attr { obj, .. } => self.slot_free(obj),
            E::Unary { operand, .. } => self.slot_free(operand),
            E::Binary { left, right, .. } | E::BoolOp { left, right, .. } => {
                self.slot_free(left) && self.slot_free(right)
            }
            E::Compare { left, ops } => {
                self.slot_free(left) && ops.iter().all(|(_, r)| self.slot_free(r))
            }
            E::Call { func, args } => {
                self.slot_free(func)
                    && args.iter().all(|a| match a {
                        Arg::Positional(e) | Arg::Keyword(_, e) => self.slot_free(e),
                        _ => false,
                    })
            }
            _ => false,
        }
    }

    /// The pieces of an f-string (or of a piece's format spec) into the innermost
    /// buffer, in `eval_fstring`'s order: each piece's value, its conversion, its spec,
    /// then its text. Formatting failures record the whole f-string's span `sp`.
    fn fstring(&mut self, parts: &[ast::FStringPart], sp: Span) -> L<()> {
        for part in parts {
            match part {
                ast::FStringPart::Literal(text) => {
                    let k = self.const_index(Value::Str(Rc::<str>::from(text.as_str()).into()));
                    self.emit(Op::FStrLit(k), sp);
                }
                ast::FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    self.expr(expr)?;
                    self.fparts.push(FPart {
                        conversion: *conversion,
                        debug_text: debug_text.as_deref().map(Rc::from),
                        spec: spec.is_some(),
                    });
                    let p = (self.fparts.len() - 1) as u32;
                    if let Some(spec) = spec {
                        self.emit(Op::FStrConv(p), sp);
                        self.emit(Op::FStrStart, sp);
                        self.fstring(spec, sp)?;
                        self.emit(Op::FStrEnd, sp);
                    }
                    self.emit(Op::FStrPiece(p), sp);
                }
            }
        }
        Ok(())
    }

    /// A list, set or dict comprehension. Its targets get slots of their own (the
    /// tree-walker's comprehension scope, whose only bindings they are), so nothing in
    /// it is looked up by name but what the enclosing code would look up by name. In
    /// module code a comprehension that needs the tree-walker for any part (which
    /// would not see the slots) runs instead in a scope of its own, by name.
    fn comp(&mut self, e: &ast::Expr) -> L<()> {
        if !self.module || self.strict {
            return self.comp_in(e, true);
        }
        self.strict = true;
        let slots = self.attempt(|l| l.comp_in(e, true));
        self.strict = false;
        match slots {
            Some(()) => Ok(()),
            None => self.comp_in(e, false),
        }
    }

    /// `comp` with its targets in slots, or (module code) bound by name in a scope
    /// entered for it.
    fn comp_in(&mut self, e: &ast::Expr, slots: bool) -> L<()> {
        let sp = e.span;
        let (gens, init, put) = match &e.kind {
            E::ListComp { gens, .. } => (gens, Op::BuildList(0), Op::ListAppend),
            E::SetComp { gens, .. } => (gens, Op::NewSet, Op::SetAdd),
            E::DictComp { gens, .. } => (gens, Op::NewDict, Op::DictPut),
            _ => return Err(Unsupported),
        };
        if slots {
            let mut targets: Vec<(Rc<str>, Option<u32>)> = Vec::new();
            for g in gens {
                for n in target_names(&g.target)? {
                    if !targets.iter().any(|(x, _)| *x == n) {
                        targets.push((n, None));
                    }
                }
            }
            self.comps.push(targets);
        } else {
            self.emit(Op::EnterScope, sp);
        }
        self.emit(init, sp);
        if matches!(put, Op::DictPut) {
            self.emit(Op::DictStage, sp);
        }
        // One generator without conditions: the source's length is the result's (a
        // list's exactly, a dict's or set's at most), a size hint that never
        // over-reserves much.
        self.comp_first = gens.len() == 1 && gens[0].conds.is_empty();
        self.comprehension(gens, sp, slots, &mut |l| {
            match &e.kind {
                E::DictComp { key, value, .. } => {
                    l.expr(key)?;
                    l.expr(value)?;
                }
                E::ListComp { elt, .. } | E::SetComp { elt, .. } => l.expr(elt)?,
                _ => return Err(Unsupported),
            }
            l.emit(put, sp);
            Ok(())
        })?;
        if matches!(put, Op::DictPut) {
            self.emit(Op::DictUnstage, sp);
        }
        if slots {
            self.comps.pop();
        } else {
            self.emit(Op::ExitScope, sp);
        }
        Ok(())
    }

    /// The loops of a comprehension: each generator's iterable, its targets bound
    /// (in slots, or by name in the comprehension's scope), its conditions, then
    /// `body` innermost.
    fn comprehension(
        &mut self,
        gens: &[ast::Comprehension],
        sp: Span,
        slots: bool,
        body: &mut dyn FnMut(&mut Lower) -> L<()>,
    ) -> L<()> {
        let Some((first, rest)) = gens.split_first() else {
            return body(self);
        };
        // Only the outermost generator has the result right under its iterable.
        let outermost = std::mem::take(&mut self.comp_first);
        let names = target_names(&first.target)?;
        if slots
            && names.len() == 2
            && let E::Call { func, args } = &first.iter.kind
            && let (E::Name(f), [Arg::Positional(src)]) = (&func.kind, args.as_slice())
            && &**f == "enumerate"
        {
            // `for (i, x) in enumerate(xs)`: pairs without tuples when `enumerate` is
            // the builtin (checked when it runs), the plain call otherwise.
            self.expr(func)?;
            self.expr(src)?;
            let fast = self.emit(Op::EnumerateFast(0), first.iter.span);
            self.emit(Op::Call(1), first.iter.span);
            let at = self.here();
            self.patch(fast, at);
            self.emit(Op::GetIterEnumerate(outermost), sp);
            let mut bound = Vec::new();
            for n in &names {
                bound.push(self.comp_slot(n)?);
            }
            self.slot_lists.push(bound);
            let k = (self.slot_lists.len() - 1) as u32;
            let head = self.here();
            let exit = self.emit(Op::ForIterPair(0, k), sp);
            return self.comprehension_rest(first, rest, (head, exit), sp, slots, body);
        }
        self.expr(&first.iter)?;
        self.emit(Op::GetIter(true, outermost), sp);
        let head = self.here();
        if slots {
            let mut bound = Vec::new();
            for n in &names {
                bound.push(self.comp_slot(n)?);
            }
            match (&first.target.kind, bound.as_slice()) {
                (E::Name(_), [slot]) => {
                    let exit = self.emit(Op::ForIterLocal(0, *slot), sp);
                    return self.comprehension_rest(first, rest, (head, exit), sp, slots, body);
                }
                _ => {
                    let exit = self.emit(Op::ForIter(0), sp);
                    self.slot_lists.push(bound);
                    let k = (self.slot_lists.len() - 1) as u32;
                    self.emit(Op::UnpackLocals(k), sp);
                    return self.comprehension_rest(first, rest, (head, exit), sp, slots, body);
                }
            }
        }
        // Module code without slots: targets by name in the comprehension's scope.
        let exit = self.emit(Op::ForIter(0), sp);
        match (&first.target.kind, names.as_slice()) {
            (E::Name(_), [n]) => {
                let i = self.name(n);
                self.emit(Op::DefineName(i), sp);
            }
            _ => {
                self.kwnames.push(names);
                let k = (self.kwnames.len() - 1) as u32;
                self.emit(Op::UnpackDefine(k), sp);
            }
        }
        self.comprehension_rest(first, rest, (head, exit), sp, slots, body)
    }

    /// A comprehension generator after its targets are bound: its conditions (back to
    /// `head` when false), the inner generators and `body`, the jump back, and the loop's
    /// `exit` patched to what follows.
    fn comprehension_rest(
        &mut self,
        first: &ast::Comprehension,
        rest: &[ast::Comprehension],
        (head, exit): (u32, usize),
        sp: Span,
        slots: bool,
        body: &mut dyn FnMut(&mut Lower) -> L<()>,
    ) -> L<()> {
        for c in &first.conds {
            let j = self.cond_jump(c, sp)?;
            self.patch(j, head);
        }
        self.comprehension(rest, sp, slots, body)?;
        self.emit(Op::Jump(head), sp);
        let at = self.here();
        self.patch(exit, at);
        Ok(())
    }

    /// The slot of target `n` of the innermost comprehension, made (and the name
    /// visible from here on) when its generator first binds it.
    fn comp_slot(&mut self, n: &Rc<str>) -> L<u32> {
        let next = self.locals.len() as u32;
        let scope = self.comps.last_mut().ok_or(Unsupported)?;
        let entry = scope.iter_mut().find(|(x, _)| x == n).ok_or(Unsupported)?;
        if let Some(slot) = entry.1 {
            return Ok(slot);
        }
        entry.1 = Some(next);
        self.locals.push(n.clone());
        Ok(next)
    }

    /// Positional arguments then keyword arguments (in source order; any other
    /// arrangement or a `*`/`**` argument is outside the subset): (positional count,
    /// keyword names).
    fn args(&mut self, args: &[Arg]) -> L<(u32, Vec<Rc<str>>)> {
        let mut npos = 0u32;
        let mut kw = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) if kw.is_empty() => {
                    self.expr(e)?;
                    npos += 1;
                }
                Arg::Keyword(n, e) => {
                    self.expr(e)?;
                    kw.push(n.name.clone());
                }
                _ => return Err(Unsupported),
            }
        }
        Ok((npos, kw))
    }

    fn call(&mut self, func: &ast::Expr, args: &[Arg], sp: Span) -> L<()> {
        match &func.kind {
            E::Attr {
                obj,
                name,
                null_safe: false,
            } => {
                self.expr(obj)?;
                let n = self.name(&name.name);
                let (npos, kw) = self.args(args)?;
                if kw.is_empty() {
                    let site = self.method_sites;
                    self.method_sites += 1;
                    self.emit(Op::CallMethod(n, npos, site), sp);
                } else {
                    self.kwnames.push(kw);
                    let k = (self.kwnames.len() - 1) as u32;
                    self.emit(Op::CallMethodKw(n, npos, k), sp);
                }
            }
            E::Attr { .. } => return Err(Unsupported),
            E::Name(n) if &**n == "super" => return Err(Unsupported),
            _ => {
                self.expr(func)?;
                let (npos, kw) = self.args(args)?;
                if kw.is_empty() {
                    self.emit(Op::Call(npos), sp);
                } else {
                    self.kwnames.push(kw);
                    let k = (self.kwnames.len() - 1) as u32;
                    self.emit(Op::CallKw(npos, k), sp);
                }
            }
        }
        Ok(())
    }
}

/// The names a comprehension target binds: a name, or a flat tuple or list of names
/// (anything else is outside the subset).
fn target_names(target: &ast::Expr) -> L<Vec<Rc<str>>> {
    match &target.kind {
        E::Name(n) => Ok(vec![n.clone()]),
        E::Tuple(items) | E::List(items) => items
            .iter()
            .map(|t| match &t.kind {
                E::Name(n) => Ok(n.clone()),
                _ => Err(Unsupported),
            })
            .collect(),
        _ => Err(Unsupported),
    }
}
