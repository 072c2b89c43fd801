//! Generators: functions whose body holds `yield` / `yield from`.
//!
//! The interpreter is a tree walker, so a generator body cannot simply pause in the middle
//! of `exec_block`. Instead, when a function is declared its body is scanned once; a body
//! with a `yield` is compiled into a flat list of [`Op`]s (a small statement machine).
//! Statements without a `yield` stay whole (`Op::Stmt`, run by the ordinary `exec_stmt`);
//! only the `if`/`elif`/`else`, `while`, `for`, iter-`for` and `forever` statements that
//! contain a `yield` are lowered to jumps, so a suspended generator is just a program
//! counter, its frame scope and one iterator slot per lowered `for` / `yield from`.
//! Resuming runs ops in a loop: no native recursion in proportion to the data; nesting of
//! `yield from` chains counts against the call-depth limit like calls do.
//!
//! Limits (reported when the generator function is called): `yield` only as a statement
//! (`yield v;`, `yield from it;`) or as the right side of an assignment
//! (`x = yield v;`); a `yield` inside `switch` or a typed context block (or in a `match`
//! subject or guard) is not
//! lowered. A `try` holding `yield` is lowered with its handlers and `finally`; leaving
//! it by `return`/`break`/`continue` runs the `finally` blocks on the way out through an
//! exit [`Plan`].

use super::*;
use crate::span::Span;

/// The compiled body of a generator function.
#[derive(Debug)]
pub struct GenCode {
    /// The ops, or why the body could not be compiled (raised when it is called).
    ops: Result<Vec<Op>, (Span, String)>,
    /// Iterator slots (one per lowered `for` and `yield from`).
    slots: usize,
    /// How each `return`/`break`/`continue` that leaves a `try` with `finally` gets out.
    plans: Vec<Plan>,
    /// The lowered `try` statements with a `finally`, by id.
    fins: Vec<FinInfo>,
    /// The names the body assigns (`ast::binds::collect_assigned`): a generator function's
    /// frame reads them as the tree-walker's frames do (`Scope::assigned`).
    pub(super) assigned: Rc<[Rc<str>]>,
}

/// Where a `break`/`continue` of a whole statement goes.
#[derive(Debug, Clone, Copy)]
enum Exit {
    /// Jump there (a loop target, or the `Unwind` before it).
    Pc(usize),
    /// Leave through `finally` blocks: run the plan.
    Plan(usize),
}

/// What a whole statement (or a handler run whole) does when it ends in `break`,
/// `continue` or `return`; `None` is the default (next op, or end the generator).
#[derive(Debug, Default, Clone, Copy)]
struct Exits {
    brk: Option<Exit>,
    cont: Option<Exit>,
    /// The plan a `return` follows (it leaves a `try` with `finally`).
    ret: Option<usize>,
}

/// Leaving one or more `try` statements with `finally`: run each `finally`'s leave copy,
/// innermost first, then do `then` (CPython runs the `finally` of every `try` it leaves).
#[derive(Debug)]
struct Plan {
    /// Ids into `GenCode::fins`, innermost first.
    chain: Vec<usize>,
    then: Then,
}

#[derive(Debug, Clone, Copy)]
enum Then {
    /// End the generator with the value the `return` carried.
    Return,
    /// Jump to a loop's target with the loop's `try` regions, lowered handlers and
    /// pending exits.
    Jump {
        to: usize,
        regions: usize,
        handled: usize,
        pending: usize,
    },
}

/// A lowered `try` with `finally`: where the copy of its `finally` that ends in
/// `EndFinally` starts, and the regions and handlers open outside it.
#[derive(Debug, Clone, Copy)]
struct FinInfo {
    entry: usize,
    regions: usize,
    handled: usize,
}

#[derive(Debug)]
enum Op {
    /// A statement without `yield`; `Flow::Break`/`Continue` from it jump to the enclosing
    /// lowered loop's end/continue point.
    Stmt {
        stmt: ast::Stmt,
        exits: Exits,
    },
    /// Suspend with the value (None for a bare `yield`).
    Yield(Option<ast::Expr>),
    /// Bind the value passed to `send()` (None for `next()`) to the targets.
    Receive(Vec<ast::Expr>),
    YieldFromStart {
        iter: ast::Expr,
        slot: usize,
    },
    /// Pass one item of the delegate through; stays on this op until it is exhausted,
    /// then binds its return value to the targets.
    YieldFromNext {
        slot: usize,
        targets: Vec<ast::Expr>,
    },
    JumpIfNot(ast::Expr, usize),
    Jump(usize),
    /// A statement whose expressions hold `yield`s (`print("a", (yield 1))`): run
    /// with `Interp::replay` on, so each nested `yield` suspends the generator from
    /// inside the evaluation, and each resume runs the statement again with the values
    /// of the expressions already evaluated replayed, not recomputed (see [`Replay`]).
    ReplayStmt {
        stmt: ast::Stmt,
        exits: Exits,
    },
    /// Evaluate a `match` subject once into a slot.
    MatchStart {
        subject: ast::Expr,
        slot: usize,
    },
    /// One `case` of a lowered `match`: when the subject fits the pattern (binding its
    /// captures) and the guard holds, go on into the case's ops, else jump to `miss`
    /// (the next case, or past the `match`).
    MatchCase {
        slot: usize,
        pattern: ast::Expr,
        guard: Option<ast::Expr>,
        miss: usize,
    },
    ForStart {
        iter: ast::Expr,
        slot: usize,
    },
    ForNext {
        slot: usize,
        target: ast::Expr,
        done: usize,
    },
    /// Enter a protected region: an exception raised until the matching `TryExit` jumps
    /// to the given op (the `except` dispatch or the `finally` of the error path).
    TryEnter(usize),
    TryExit,
    /// Match the caught exception against the handlers and run the first that fits
    /// (handler bodies hold no `yield`); no match re-raises.
    Except {
        handlers: Vec<ast::ExceptHandler>,
        exits: Exits,
    },
    /// One handler of a `try` whose handlers hold `yield` (lowered like a loop body):
    /// when the caught exception matches `ty`, bind it to `name` and go on into the
    /// handler's ops as the exception being handled, else jump to `miss` (the next
    /// handler, or the `Reraise` after the last).
    ExceptTest {
        ty: Option<ast::Expr>,
        name: Option<ast::Name>,
        miss: usize,
    },
    /// The end of a lowered handler: its exception is no longer being handled.
    ExceptEnd,
    /// Leave the `try` regions and lowered handlers opened since a loop began (a
    /// `break`/`continue` out of a `try` without `finally` goes through this first).
    Unwind {
        regions: usize,
        handled: usize,
        pending: usize,
    },
    /// Raise the exception a `finally` of the error path was entered with.
    Reraise,
    /// A `break`/`continue` that leaves a `try` with `finally`: run the plan.
    Leave(usize),
    /// The end of a `finally`'s leave copy: go on with the exit that entered it.
    EndFinally,
}

/// A running or suspended generator object.
pub struct Generator {
    pub name: Rc<str>,
    code: Rc<GenCode>,
    state: RefCell<GenRun>,
}

thread_local! {
    /// Generators whose last reference went while they were suspended inside a `try`,
    /// waiting to be closed at the next statement ([`Interp::close_abandoned`]).
    static ABANDONED: RefCell<Vec<Generator>> = const { RefCell::new(Vec::new()) };
    /// `ABANDONED` is not empty (the check every statement makes).
    static HAS_ABANDONED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// `close_abandoned` is running (a `finally` it runs does not start another).
    static CLOSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A generator dropped while suspended inside a `try` waits to be closed.
#[inline]
pub(super) fn has_abandoned() -> bool {
    HAS_ABANDONED.with(std::cell::Cell::get)
}

/// CPython closes a generator when its last reference goes (`for x in gen() { break; }`,
/// a `return` from the loop, an exception, `g = None`): `GeneratorExit` at its `yield`,
/// so its `finally` blocks run. Dropping runs no code here; a generator suspended inside
/// a `try` moves its frame to a new object queued for [`Interp::close_abandoned`], which
/// every statement (and `print`) calls first. Others have nothing to run.
impl Drop for Generator {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if st.status != Status::Suspended || st.frame.handlers.is_empty() {
            return;
        }
        let run = std::mem::replace(
            st,
            GenRun {
                ctx: None,
                frame: Frame::default(),
                status: Status::Done,
            },
        );
        let mut g = Some(Generator {
            name: self.name.clone(),
            code: self.code.clone(),
            state: RefCell::new(run),
        });
        let _ = ABANDONED.try_with(|q| {
            if let Ok(mut q) = q.try_borrow_mut()
                && let Some(g) = g.take()
            {
                q.push(g);
                HAS_ABANDONED.with(|h| h.set(true));
            }
        });
        // Not queued (the thread is ending): drop it without running anything.
        if let Some(g) = g {
            g.state.borrow_mut().status = Status::Done;
        }
    }
}

/// Forget the generators a previous run on this thread left to close (a run that
/// ended at a limit): their code belongs to that run.
pub(super) fn discard_abandoned() {
    let left = ABANDONED.with(|q| std::mem::take(&mut *q.borrow_mut()));
    HAS_ABANDONED.with(|h| h.set(false));
    for g in &left {
        g.state.borrow_mut().status = Status::Done;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Fresh,
    Suspended,
    Running,
    Done,
}

struct GenRun {
    /// The frame; dropped when the generator finishes.
    ctx: Option<Ctx>,
    frame: Frame,
    status: Status,
}

/// Where a suspended generator stands.
#[derive(Default)]
struct Frame {
    pc: usize,
    slots: Vec<Option<GenIter>>,
    /// Open `try` regions, innermost last.
    handlers: Vec<Region>,
    /// Exits on their way through `finally` leave copies, innermost last.
    pending: Vec<PendingExit>,
    /// The exceptions lowered `except` bodies are handling, innermost last (what a bare
    /// `raise` re-raises); put back on the interpreter's stack at each resume.
    handled: Vec<Value>,
    /// The exception being dispatched to `except` or carried through `finally`.
    exc: Option<Box<PyErr>>,
    /// The values of the statement suspended at a nested `yield` (`Op::ReplayStmt`).
    replay: Option<Box<Replay>>,
}

/// What one expression of a replayed statement came to, and the count of expressions
/// started once it was done (where the next one in evaluation order is numbered).
enum Entry {
    Done(Value, usize),
    /// The `yield` the generator is suspended at: it takes the value sent.
    Pending(usize),
    /// A `yield from` passing its delegate's items through.
    Delegating(GenIter, usize),
}

/// The record of a statement with nested `yield`s (`Op::ReplayStmt`). Each expression
/// the statement evaluates, at the statement's own call depth, is numbered in the order
/// it starts; its value is kept when it is done. When a `yield` suspends the generator,
/// the statement is left half-evaluated; the resume evaluates it again from the start,
/// and an expression done before gives its kept value without running (so a call that
/// preceded the `yield` is not repeated), the suspended `yield` gives the value sent,
/// and evaluation goes on from there. Control flow inside the statement depends only on
/// those values, so the numbering repeats.
pub(crate) struct Replay {
    log: Vec<Option<Entry>>,
    next: usize,
    /// The call depth of the statement: expressions of functions it calls are theirs.
    depth: usize,
    /// What the resume sent, for the suspended `yield`.
    sent: Option<Value>,
}

impl Interp<'_> {
    /// `eval` while a statement with nested `yield`s runs (`Interp::replay` is set).
    pub(crate) fn eval_replay(&mut self, e: &ast::Expr, ctx: &Ctx) -> R<Value> {
        let Some(r) = self.replay.as_mut() else {
            return self.eval_inner(e, ctx);
        };
        if r.depth != self.depth {
            return self.eval_inner(e, ctx);
        }
        let i = r.next;
        r.next += 1;
        if r.log.len() <= i {
            r.log.resize_with(i + 1, || None);
        }
        match r.log[i].take() {
            Some(Entry::Done(v, end)) => {
                r.next = end;
                r.log[i] = Some(Entry::Done(v.clone(), end));
                return Ok(v);
            }
            Some(Entry::Pending(end)) => {
                r.next = end;
                let v = r.sent.take().unwrap_or(Value::None);
                r.log[i] = Some(Entry::Done(v.clone(), end));
                return Ok(v);
            }
            Some(Entry::Delegating(it, end)) => {
                r.next = end;
                let sent = r.sent.take().unwrap_or(Value::None);
                return self.replay_delegate(i, it, sent, end);
            }
            None => {}
        }
        // An `await` inside a coroutine's body (only those are compiled with one):
        // suspend with the awaitable; the event loop sends back its result.
        if let ast::ExprKind::Await(x) = &e.kind {
            let v = self.eval(x, ctx)?;
            if let Some(r) = self.replay.as_mut() {
                let end = r.next;
                r.log[i] = Some(Entry::Pending(end));
            }
            return Err(Interrupt::Suspend(v));
        }
        if let ast::ExprKind::Yield { value, from } = &e.kind {
            let v = match value {
                Some(x) => self.eval(x, ctx)?,
                None => Value::None,
            };
            let end = self.replay.as_ref().map_or(0, |r| r.next);
            if *from {
                let it = self.gen_iter(v)?;
                return self.replay_delegate(i, it, Value::None, end);
            }
            if let Some(r) = self.replay.as_mut() {
                r.log[i] = Some(Entry::Pending(end));
            }
            return Err(Interrupt::Suspend(v));
        }
        let v = self.eval_inner(e, ctx)?;
        if let Some(r) = self.replay.as_mut() {
            let end = r.next;
            r.log[i] = Some(Entry::Done(v.clone(), end));
        }
        Ok(v)
    }

    /// One step of the delegate of a nested `yield from` (entry `i`): suspend with its
    /// item, or, once it returns, that value is the expression's.
    fn replay_delegate(&mut self, i: usize, mut it: GenIter, sent: Value, end: usize) -> R<Value> {
        let step = self.gen_iter_next(&mut it, sent)?;
        let entry = match &step {
            GenStep::Yielded(_) => Entry::Delegating(it, end),
            GenStep::Returned(v) => Entry::Done(v.clone(), end),
        };
        if let Some(r) = self.replay.as_mut() {
            r.log[i] = Some(entry);
        }
        match step {
            GenStep::Yielded(v) => Err(Interrupt::Suspend(v)),
            GenStep::Returned(v) => Ok(v),
        }
    }
}

/// An open `try` region: the op an exception jumps to, and how many lowered handlers
/// were running and exits pending when it opened.
#[derive(Clone, Copy)]
struct Region {
    to: usize,
    handled: usize,
    pending: usize,
}

/// An exit running the `finally` of its plan's `chain[next - 1]`; `value` is what a
/// `return` returns.
struct PendingExit {
    plan: usize,
    next: usize,
    value: Value,
}

/// What a lowered `for` or `yield from` iterates.
enum GenIter {
    Range(i64, i64, i64),
    Items(IterItems),
    Shared(Rc<RefCell<IterItems>>),
    Gen(Rc<Generator>),
    /// A lazy `map`/`filter`/`zip`/`enumerate`, stepped once per item.
    Lazy(Value),
    /// The subject of a lowered `match` (read by its cases, never iterated).
    Subject(Value),
}

/// One step of a generator.
pub enum GenStep {
    Yielded(Value),
    /// Finished, with the `return` value (StopIteration.value).
    Returned(Value),
}

use std::cell::RefCell;

/// The body of a declared function: a generator's compiled ops when it holds a `yield`,
/// or, for an `async def` (`coroutine`), when it holds an `await` (see
/// [`compile_coroutine`]).
pub(super) fn func_body(body: Rc<[ast::Stmt]>, coroutine: bool) -> FuncBody {
    let code = if coroutine {
        compile_coroutine(&body)
    } else {
        compile_if_generator(&body)
    };
    match code {
        Some(code) => FuncBody::Generator(code),
        None => FuncBody::Block(body),
    }
}

thread_local! {
    /// Set while an `async def` body is compiled: its `await`s are the points where it
    /// suspends, as a generator's `yield`s are.
    static AWAIT_SUSPENDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// An `async def` body holding `await` compiled as a generator whose `await e` yields
/// the awaitable to the event loop (`coroutine.rs::async_run`), which resumes it with
/// the result: so coroutines under `asyncio.gather` interleave at their awaits. `None`
/// when the body has no `await`, or has one where the generator machine cannot suspend
/// (a condition or loop header): such a coroutine runs to its end when awaited.
pub(super) fn compile_coroutine(body: &[ast::Stmt]) -> Option<Rc<GenCode>> {
    AWAIT_SUSPENDS.with(|a| a.set(true));
    let code = compile_if_generator(body);
    AWAIT_SUSPENDS.with(|a| a.set(false));
    code.filter(|c| c.ops.is_ok())
}

/// Compile `body` when it contains a `yield` (outside nested functions and lambdas).
pub(super) fn compile_if_generator(body: &[ast::Stmt]) -> Option<Rc<GenCode>> {
    if !body.iter().any(stmt_has_yield) {
        return None;
    }
    let mut c = Compiler {
        ops: Vec::new(),
        slots: 0,
        loops: Vec::new(),
        regions: 0,
        handled: 0,
        pending: 0,
        finallies: Vec::new(),
        plans: Vec::new(),
        fins: Vec::new(),
    };
    let done = c.block(body);
    let mut assigned = Vec::new();
    crate::ast::binds::collect_assigned(body, &mut assigned);
    Some(Rc::new(GenCode {
        ops: done.map(|()| c.ops),
        slots: c.slots,
        plans: c.plans,
        fins: c.fins,
        assigned: assigned.into(),
    }))
}

fn expr_has_yield(e: &ast::Expr) -> bool {
    if matches!(e.kind, ast::ExprKind::Yield { .. })
        || matches!(e.kind, ast::ExprKind::Await(_)) && AWAIT_SUSPENDS.with(|a| a.get())
    {
        return true;
    }
    let mut found = false;
    crate::ast::visit::children(e, &mut |c| {
        if !found && expr_has_yield(c) {
            found = true;
        }
    });
    found
}

fn block_has_yield(b: &[ast::Stmt]) -> bool {
    b.iter().any(stmt_has_yield)
}

fn opt_block_has_yield(b: &Option<Vec<ast::Stmt>>) -> bool {
    b.as_deref().is_some_and(block_has_yield)
}

/// Does the statement hold a `yield` of the function it is in (nested declarations have
/// their own bodies and do not count)?
pub(super) fn stmt_has_yield(s: &ast::Stmt) -> bool {
    match &s.kind {
        StmtKind::Expr(e) | StmtKind::Report(e) | StmtKind::Delete(e) => expr_has_yield(e),
        StmtKind::Assign { targets, value, .. } => {
            expr_has_yield(value) || targets.iter().any(expr_has_yield)
        }
        StmtKind::AugAssign { target, value, .. } => {
            expr_has_yield(target) || expr_has_yield(value)
        }
        StmtKind::If {
            cond,
            body,
            elifs,
            orelse,
        } => {
            expr_has_yield(cond)
                || block_has_yield(body)
                || elifs
                    .iter()
                    .any(|(c, b)| expr_has_yield(c) || block_has_yield(b))
                || opt_block_has_yield(orelse)
        }
        StmtKind::While { cond, body, orelse } => {
            expr_has_yield(cond) || block_has_yield(body) || opt_block_has_yield(orelse)
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => {
            expr_has_yield(target)
                || expr_has_yield(iter)
                || block_has_yield(body)
                || opt_block_has_yield(orelse)
        }
        StmtKind::IterFor {
            init,
            cond,
            step,
            body,
            orelse,
        } => {
            stmt_has_yield(init)
                || expr_has_yield(cond)
                || stmt_has_yield(step)
                || block_has_yield(body)
                || opt_block_has_yield(orelse)
        }
        StmtKind::Forever { body } | StmtKind::TypedContext { body, .. } => block_has_yield(body),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        } => {
            block_has_yield(body)
                || handlers.iter().any(|h| block_has_yield(&h.body))
                || opt_block_has_yield(orelse)
                || opt_block_has_yield(finally)
        }
        StmtKind::Match { subject, cases } => {
            expr_has_yield(subject)
                || cases.iter().any(|c| {
                    block_has_yield(&c.body) || c.guard.as_ref().is_some_and(expr_has_yield)
                })
        }
        StmtKind::Switch { subject, cases } => {
            expr_has_yield(subject) || cases.iter().any(|c| block_has_yield(&c.body))
        }
        StmtKind::Return(Some(e)) => expr_has_yield(e),
        StmtKind::Raise { exc, cause } => {
            exc.as_ref().is_some_and(expr_has_yield) || cause.as_ref().is_some_and(expr_has_yield)
        }
        StmtKind::Assert { cond, msg } => {
            expr_has_yield(cond) || msg.as_ref().is_some_and(expr_has_yield)
        }
        StmtKind::Visit { target, orelse, .. } => {
            expr_has_yield(target) || opt_block_has_yield(orelse)
        }
        StmtKind::With { items, body, .. } => {
            items.iter().any(|i| expr_has_yield(&i.manager)) || block_has_yield(body)
        }
        _ => false,
    }
}

/// Does control leave `stmts` by `return` (anywhere) or by `break`/`continue` that is not
/// inside a loop (or `switch`) of its own?
fn leaves_block(stmts: &[ast::Stmt], in_loop: bool) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::Break | StmtKind::Continue => !in_loop,
        // A `visit`'s `else` block is not scanned.
        StmtKind::Visit { .. } => false,
        _ => {
            let mut leaves = false;
            crate::ast::visit::blocks(s, &mut |b, breakable| {
                leaves = leaves || leaves_block(b, in_loop || breakable);
            });
            leaves
        }
    })
}

const UNSUPPORTED: &str = "svc runs `yield` as a statement or as the right side of an \
                           assignment, inside `if`/`while`/`for`/`forever` blocks";

struct LoopPatch {
    breaks: Vec<usize>,
    conts: Vec<usize>,
    /// Plans of exits that leave the loop through `finally` blocks.
    plan_breaks: Vec<usize>,
    plan_conts: Vec<usize>,
    /// `try` regions, lowered handlers and pending exits open where the loop begins.
    depth: (usize, usize, usize),
    /// A `break`/`continue` stands deeper than `depth`: its jump unwinds first.
    unwind: bool,
}

struct Compiler {
    ops: Vec<Op>,
    slots: usize,
    loops: Vec<LoopPatch>,
    /// `try` regions open at the op being compiled (as the frame's handler stack
    /// will hold them when it runs).
    regions: usize,
    /// Lowered `except` bodies open at the op being compiled.
    handled: usize,
    /// `finally` leave copies open at the op being compiled (the frame's pending exits).
    pending: usize,
    /// The `try` statements with `finally` whose protected part is being compiled,
    /// innermost last: the fin id and how many loops were open at the `try`.
    finallies: Vec<(usize, usize)>,
    plans: Vec<Plan>,
    fins: Vec<FinInfo>,
}

type CResult = Result<(), (Span, String)>;

impl Compiler {
    fn push(&mut self, op: Op) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    fn slot(&mut self) -> usize {
        self.slots += 1;
        self.slots - 1
    }

    fn block(&mut self, stmts: &[ast::Stmt]) -> CResult {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    fn set_target(&mut self, at: usize, to: usize, is_break: bool) {
        match &mut self.ops[at] {
            Op::Jump(t) | Op::JumpIfNot(_, t) | Op::TryEnter(t) => *t = to,
            Op::ExceptTest { miss, .. } | Op::MatchCase { miss, .. } => *miss = to,
            Op::ForNext { done, .. } => *done = to,
            Op::Stmt { exits, .. } | Op::ReplayStmt { exits, .. } | Op::Except { exits, .. } => {
                if is_break {
                    exits.brk = Some(Exit::Pc(to));
                } else {
                    exits.cont = Some(Exit::Pc(to));
                }
            }
            _ => {}
        }
    }

    fn close_loop(&mut self, cont_to: usize, break_to: usize) {
        if let Some(l) = self.loops.pop() {
            self.patch_loop(l, cont_to, break_to);
        }
    }

    /// A loop patch for the current loop.
    fn new_loop(&self) -> LoopPatch {
        LoopPatch {
            breaks: Vec::new(),
            conts: Vec::new(),
            plan_breaks: Vec::new(),
            plan_conts: Vec::new(),
            depth: (self.regions, self.handled, self.pending),
            unwind: false,
        }
    }

    /// Point the loop's `break`s at `break_to` (the next op) and its `continue`s at
    /// `cont_to`; when one stands inside a `try` opened in the loop, through an `Unwind`
    /// placed after the loop (normal flow jumps over it).
    fn patch_loop(&mut self, l: LoopPatch, cont_to: usize, break_to: usize) {
        // A plan unwinds to the loop's depth itself.
        for (plans, to) in [(&l.plan_breaks, break_to), (&l.plan_conts, cont_to)] {
            for &p in plans {
                if let Some(Then::Jump { to: t, .. }) = self.plans.get_mut(p).map(|p| &mut p.then) {
                    *t = to;
                }
            }
        }
        let (break_to, cont_to) = if l.unwind {
            let (regions, handled, pending) = l.depth;
            let over = self.push(Op::Jump(usize::MAX));
            let brk = self.push(Op::Unwind {
                regions,
                handled,
                pending,
            });
            self.push(Op::Jump(break_to));
            let cont = self.push(Op::Unwind {
                regions,
                handled,
                pending,
            });
            self.push(Op::Jump(cont_to));
            let after = self.ops.len();
            self.set_target(over, after, true);
            self.set_target(brk + 1, after, true);
            (brk, cont)
        } else {
            (break_to, cont_to)
        };
        for b in l.breaks {
            self.set_target(b, break_to, true);
        }
        for c in l.conts {
            self.set_target(c, cont_to, false);
        }
    }

    /// Record a `break`/`continue` (or a statement that may end in one) of the loop.
    fn loop_exit(&mut self, at: usize, brk: bool, cont: bool) {
        let depth = (self.regions, self.handled, self.pending);
        if let Some(l) = self.loops.last_mut() {
            l.unwind |= l.depth != depth;
            if brk {
                l.breaks.push(at);
            }
            if cont {
                l.conts.push(at);
            }
        }
    }

    /// The `try` statements with `finally` a `return` (every one open) or a
    /// `break`/`continue` (those opened inside the innermost loop) leaves, innermost first.
    fn crossed(&self, by_return: bool) -> Vec<usize> {
        let loops = self.loops.len();
        self.finallies
            .iter()
            .rev()
            .take_while(|(_, at)| by_return || *at >= loops)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The plan of a `break` (or `continue`) of the innermost loop that leaves a `try`
    /// with `finally`, registered with the loop; `None` when it leaves none.
    fn loop_plan(&mut self, brk: bool) -> Option<usize> {
        let chain = self.crossed(false);
        if chain.is_empty() {
            return None;
        }
        let (regions, handled, pending) = self.loops.last()?.depth;
        let p = self.plans.len();
        self.plans.push(Plan {
            chain,
            then: Then::Jump {
                to: usize::MAX,
                regions,
                handled,
                pending,
            },
        });
        let l = self.loops.last_mut()?;
        if brk {
            l.plan_breaks.push(p);
        } else {
            l.plan_conts.push(p);
        }
        Some(p)
    }

    /// How a whole statement (or handler) at this point leaves: through plans when it
    /// leaves a `try` with `finally`, else by the loop's patched targets.
    fn exits_here(&mut self, at: usize, leaves: bool) -> Exits {
        let mut exits = Exits::default();
        let chain = self.crossed(true);
        if leaves && !chain.is_empty() {
            exits.ret = Some(self.plans.len());
            self.plans.push(Plan {
                chain,
                then: Then::Return,
            });
        }
        if self.loops.is_empty() {
            return exits;
        }
        if !leaves {
            if let Some(l) = self.loops.last_mut() {
                l.breaks.push(at);
                l.conts.push(at);
            }
            return exits;
        }
        match (self.loop_plan(true), self.loop_plan(false)) {
            (Some(b), Some(c)) => {
                exits.brk = Some(Exit::Plan(b));
                exits.cont = Some(Exit::Plan(c));
            }
            _ => self.loop_exit(at, true, true),
        }
        exits
    }

    /// `yield v` / `yield from it`, binding what comes back to `targets`.
    fn yield_op(&mut self, value: Option<&ast::Expr>, from: bool, targets: &[ast::Expr]) {
        if from {
            let slot = self.slot();
            let iter = value
                .cloned()
                .unwrap_or_else(|| ast::Expr::error(Span::DUMMY));
            self.push(Op::YieldFromStart { iter, slot });
            self.push(Op::YieldFromNext {
                slot,
                targets: targets.to_vec(),
            });
        } else {
            self.push(Op::Yield(value.cloned()));
            if !targets.is_empty() {
                self.push(Op::Receive(targets.to_vec()));
            }
        }
    }

    /// A statement with `yield`s nested in its expressions (`Op::ReplayStmt`): what
    /// precedes each `yield` in evaluation order runs before it suspends, as in CPython.
    fn fed_stmt(&mut self, s: &ast::Stmt) -> CResult {
        let i = self.push(Op::ReplayStmt {
            stmt: s.clone(),
            exits: Exits::default(),
        });
        let leaves = leaves_block(std::slice::from_ref(s), false);
        let exits = self.exits_here(i, leaves);
        if let Some(Op::ReplayStmt { exits: e, .. }) = self.ops.get_mut(i) {
            *e = exits;
        }
        Ok(())
    }

    /// An expression holding a suspension point, used as a condition or a `for`
    /// iterable: evaluated by a replayed assignment to a fresh local no program can
    /// name, which the condition or loop then reads (a coroutine's `while (await
    /// poll()) < n`). Plain generators never get here: `svc check` refuses a `yield`
    /// there (E2031).
    fn fed_value(&mut self, e: &ast::Expr) -> Result<ast::Expr, (Span, String)> {
        let tmp = ast::Expr::new(
            ast::ExprKind::Name(Rc::from(format!("<await {}>", self.ops.len()))),
            e.span,
        );
        let assign = ast::Stmt {
            kind: StmtKind::Assign {
                targets: vec![tmp.clone()],
                ty: None,
                value: e.clone(),
            },
            span: e.span,
        };
        self.fed_stmt(&assign)?;
        Ok(tmp)
    }

    /// The condition a `JumpIfNot` tests: `c` itself, or the local a replayed
    /// assignment of it wrote when it holds a suspension point.
    fn cond(&mut self, c: &ast::Expr) -> Result<ast::Expr, (Span, String)> {
        if expr_has_yield(c) {
            self.fed_value(c)
        } else {
            Ok(c.clone())
        }
    }

    fn stmt(&mut self, s: &ast::Stmt) -> CResult {
        if !stmt_has_yield(s) {
            let in_loop = !self.loops.is_empty();
            match s.kind {
                StmtKind::Break | StmtKind::Continue if in_loop => {
                    let brk = matches!(s.kind, StmtKind::Break);
                    if let Some(p) = self.loop_plan(brk) {
                        self.push(Op::Leave(p));
                    } else {
                        let i = self.push(Op::Jump(usize::MAX));
                        self.loop_exit(i, brk, !brk);
                    }
                }
                _ => {
                    let i = self.push(Op::Stmt {
                        stmt: s.clone(),
                        exits: Exits::default(),
                    });
                    let leaves = leaves_block(std::slice::from_ref(s), false);
                    let exits = self.exits_here(i, leaves);
                    if let Some(Op::Stmt { exits: e, .. }) = self.ops.get_mut(i) {
                        *e = exits;
                    }
                }
            }
            return Ok(());
        }
        let unsupported = |what: &str| Err((s.span, format!("`yield` {what}: {UNSUPPORTED}")));
        match &s.kind {
            StmtKind::Expr(e) => match &e.kind {
                ast::ExprKind::Yield { value, from }
                    if !value.as_deref().is_some_and(expr_has_yield) =>
                {
                    self.yield_op(value.as_deref(), *from, &[]);
                    Ok(())
                }
                _ => self.fed_stmt(s),
            },
            StmtKind::Assign { targets, value, .. } => match &value.kind {
                ast::ExprKind::Yield { value, from }
                    if !value.as_deref().is_some_and(expr_has_yield)
                        && !targets.iter().any(expr_has_yield) =>
                {
                    self.yield_op(value.as_deref(), *from, targets);
                    Ok(())
                }
                _ if !targets.iter().any(expr_has_yield) => self.fed_stmt(s),
                _ => unsupported("inside an expression"),
            },
            StmtKind::AugAssign { target, .. } if !expr_has_yield(target) => self.fed_stmt(s),
            StmtKind::Return(Some(_)) => self.fed_stmt(s),
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let mut ends = Vec::new();
                let mut branches: Vec<(&ast::Expr, &Vec<ast::Stmt>)> = vec![(cond, body)];
                branches.extend(elifs.iter().map(|(c, b)| (c, b)));
                for (c, b) in branches {
                    let c = self.cond(c)?;
                    let j = self.push(Op::JumpIfNot(c, usize::MAX));
                    self.block(b)?;
                    ends.push(self.push(Op::Jump(usize::MAX)));
                    let here = self.ops.len();
                    self.set_target(j, here, true);
                }
                if let Some(b) = orelse {
                    self.block(b)?;
                }
                let end = self.ops.len();
                for e in ends {
                    self.set_target(e, end, true);
                }
                Ok(())
            }
            StmtKind::While { cond, body, orelse } => {
                let top = self.ops.len();
                let c = self.cond(cond)?;
                let j = self.push(Op::JumpIfNot(c, usize::MAX));
                self.loop_body(body, top)?;
                let else_at = self.ops.len();
                self.set_target(j, else_at, true);
                self.finish_loop(orelse, top)
            }
            StmtKind::Forever { body } => {
                let top = self.ops.len();
                self.loop_body(body, top)?;
                self.finish_loop(&None, top)
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                if expr_has_yield(target) {
                    return unsupported("in a `for` header");
                }
                let iter = self.cond(iter)?;
                let slot = self.slot();
                self.push(Op::ForStart { iter, slot });
                let top = self.ops.len();
                let n = self.push(Op::ForNext {
                    slot,
                    target: target.clone(),
                    done: usize::MAX,
                });
                self.loop_body(body, top)?;
                let else_at = self.ops.len();
                self.set_target(n, else_at, true);
                self.finish_loop(orelse, top)
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                if stmt_has_yield(init) || expr_has_yield(cond) || stmt_has_yield(step) {
                    return unsupported("in a `for` header");
                }
                self.stmt(init)?;
                let top = self.ops.len();
                let j = self.push(Op::JumpIfNot(cond.clone(), usize::MAX));
                let l = self.new_loop();
                self.loops.push(l);
                self.block(body)?;
                let step_at = self.ops.len();
                // The step belongs to the loop header, not its body.
                let l = self.loops.pop();
                self.stmt(step)?;
                if let Some(l) = l {
                    self.loops.push(l);
                }
                self.push(Op::Jump(top));
                let else_at = self.ops.len();
                self.set_target(j, else_at, true);
                let l = self.loops.pop();
                if let Some(b) = orelse {
                    self.block(b)?;
                }
                let end = self.ops.len();
                if let Some(l) = l {
                    self.patch_loop(l, step_at, end);
                }
                Ok(())
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                // Leaving the `try` early (`return`, `break`, `continue` in its body,
                // handlers or `else`) runs the `finally` through its leave copy.
                let fin = finally.as_ref().map(|_| {
                    let id = self.fins.len();
                    self.fins.push(FinInfo {
                        entry: usize::MAX,
                        regions: self.regions,
                        handled: self.handled,
                    });
                    self.finallies.push((id, self.loops.len()));
                    id
                });
                let outer = finally
                    .as_ref()
                    .map(|_| self.push(Op::TryEnter(usize::MAX)));
                self.regions += usize::from(outer.is_some());
                let inner = (!handlers.is_empty()).then(|| self.push(Op::TryEnter(usize::MAX)));
                self.regions += usize::from(inner.is_some());
                self.block(body)?;
                if inner.is_some() {
                    self.push(Op::TryExit);
                    self.regions -= 1;
                }
                if let Some(b) = orelse {
                    self.block(b)?;
                }
                if let Some(i) = inner {
                    let skip = self.push(Op::Jump(usize::MAX));
                    let at = self.ops.len();
                    self.set_target(i, at, true);
                    if handlers.iter().any(|h| block_has_yield(&h.body)) {
                        self.lowered_handlers(handlers)?;
                    } else {
                        let i = self.push(Op::Except {
                            handlers: handlers.clone(),
                            exits: Exits::default(),
                        });
                        let leaves = handlers.iter().any(|h| leaves_block(&h.body, false));
                        let exits = self.exits_here(i, leaves);
                        if let Some(Op::Except { exits: e, .. }) = self.ops.get_mut(i) {
                            *e = exits;
                        }
                    }
                    let after = self.ops.len();
                    self.set_target(skip, after, true);
                }
                if fin.is_some() {
                    self.finallies.pop();
                }
                if let (Some(o), Some(f)) = (outer, finally) {
                    self.push(Op::TryExit);
                    self.regions -= 1;
                    self.block(f)?;
                    let skip = self.push(Op::Jump(usize::MAX));
                    let at = self.ops.len();
                    self.set_target(o, at, true);
                    self.block(f)?;
                    self.push(Op::Reraise);
                    if let Some(id) = fin {
                        let entry = self.ops.len();
                        if let Some(info) = self.fins.get_mut(id) {
                            info.entry = entry;
                        }
                        self.pending += 1;
                        self.block(f)?;
                        self.pending -= 1;
                        self.push(Op::EndFinally);
                    }
                    let after = self.ops.len();
                    self.set_target(skip, after, true);
                }
                Ok(())
            }
            StmtKind::Match { subject, cases } => {
                if expr_has_yield(subject)
                    || cases
                        .iter()
                        .any(|c| c.guard.as_ref().is_some_and(expr_has_yield))
                {
                    return unsupported("in a `match` subject or guard");
                }
                let slot = self.slot();
                self.push(Op::MatchStart {
                    subject: subject.clone(),
                    slot,
                });
                let mut ends = Vec::new();
                for c in cases {
                    let test = self.push(Op::MatchCase {
                        slot,
                        pattern: c.pattern.clone(),
                        guard: c.guard.clone(),
                        miss: usize::MAX,
                    });
                    self.block(&c.body)?;
                    ends.push(self.push(Op::Jump(usize::MAX)));
                    let next = self.ops.len();
                    self.set_target(test, next, true);
                }
                let end = self.ops.len();
                for e in ends {
                    self.set_target(e, end, true);
                }
                Ok(())
            }
            StmtKind::Switch { .. } => unsupported("inside `switch`"),
            _ => unsupported("in this statement"),
        }
    }

    /// `except` handlers that hold `yield`: each tests the caught exception, runs its
    /// lowered body and jumps past the rest; no match re-raises.
    fn lowered_handlers(&mut self, handlers: &[ast::ExceptHandler]) -> CResult {
        let mut ends = Vec::new();
        for h in handlers {
            let test = self.push(Op::ExceptTest {
                ty: h.ty.clone(),
                name: h.name.clone(),
                miss: usize::MAX,
            });
            self.handled += 1;
            self.block(&h.body)?;
            self.push(Op::ExceptEnd);
            self.handled -= 1;
            ends.push(self.push(Op::Jump(usize::MAX)));
            let next = self.ops.len();
            self.set_target(test, next, true);
        }
        self.push(Op::Reraise);
        let after = self.ops.len();
        for j in ends {
            self.set_target(j, after, true);
        }
        Ok(())
    }

    /// A loop body followed by the jump back to `top`; the loop's patches stay open.
    fn loop_body(&mut self, body: &[ast::Stmt], top: usize) -> CResult {
        let l = self.new_loop();
        self.loops.push(l);
        self.block(body)?;
        self.push(Op::Jump(top));
        Ok(())
    }

    /// The `else` block (not part of the loop), then patch `break` to after it.
    fn finish_loop(&mut self, orelse: &Option<Vec<ast::Stmt>>, top: usize) -> CResult {
        let l = self.loops.pop();
        if let Some(b) = orelse {
            self.block(b)?;
        }
        let end = self.ops.len();
        if let Some(l) = l {
            self.loops.push(l);
            self.close_loop(top, end);
        }
        Ok(())
    }
}

/// The name a generator expression's first iterable is bound to in its own scope (not
/// a valid identifier, so no program can see it).
const FIRST_ITER: &str = ".0";

/// `(elt for t in it if c ...)` as the body `for t in .0 { if c { yield elt; } }`.
fn genexp_body(elt: &ast::Expr, gens: &[ast::Comprehension], span: Span) -> Vec<ast::Stmt> {
    let st = |kind| ast::Stmt { kind, span };
    let mut inner = vec![st(StmtKind::Expr(ast::Expr::new(
        ast::ExprKind::Yield {
            value: Some(Box::new(elt.clone())),
            from: false,
        },
        span,
    )))];
    for (i, g) in gens.iter().enumerate().rev() {
        for c in g.conds.iter().rev() {
            inner = vec![st(StmtKind::If {
                cond: c.clone(),
                body: inner,
                elifs: Vec::new(),
                orelse: None,
            })];
        }
        let iter = if i == 0 {
            ast::Expr::new(ast::ExprKind::Name(Rc::from(FIRST_ITER)), g.iter.span)
        } else {
            g.iter.clone()
        };
        inner = vec![st(StmtKind::For {
            target: g.target.clone(),
            iter,
            body: inner,
            orelse: None,
        })];
    }
    inner
}

impl Interp<'_> {
    /// A generator expression: lazy, like Python's (the first iterable is evaluated now,
    /// the rest as items are pulled). Its compiled body is cached per source position.
    pub(super) fn gen_expression(
        &mut self,
        e: &ast::Expr,
        elt: &ast::Expr,
        gens: &[ast::Comprehension],
        ctx: &Ctx,
    ) -> R<Value> {
        let Some(first) = gens.first() else {
            return Ok(Value::list(Vec::new()));
        };
        let key = (ctx.file, e.span.start);
        let cached = self.fn_cache.borrow().get(&key).cloned();
        let code = match cached.and_then(|t| t.generator.clone()) {
            Some(code) => code,
            None => {
                let body: Rc<[ast::Stmt]> = Rc::from(genexp_body(elt, gens, e.span));
                let Some(code) = compile_if_generator(&body) else {
                    return Err(self.err("SyntaxError", "malformed generator expression"));
                };
                self.fn_cache.borrow_mut().insert(
                    key,
                    Rc::new(FnTemplate {
                        name: Rc::from("<genexpr>"),
                        params: Vec::new(),
                        body,
                        generator: Some(code.clone()),
                        is_async: false,
                        ret: None,
                        span: e.span,
                    }),
                );
                code
            }
        };
        let it = self.eval(&first.iter, ctx)?;
        let scope = Scope::new_comprehension(ctx.scope.clone());
        scope_define(&scope, Rc::from(FIRST_ITER), it);
        let gctx = Ctx {
            scope,
            ..ctx.clone()
        };
        Ok(self.make_generator(Rc::from("<genexpr>"), code, gctx))
    }

    /// Calling a generator function: bind the frame, run nothing yet.
    pub(super) fn make_generator(&self, name: Rc<str>, code: Rc<GenCode>, ctx: Ctx) -> Value {
        let slots = (0..code.slots).map(|_| None).collect();
        Value::Generator(Rc::new(Generator {
            name,
            code,
            state: RefCell::new(GenRun {
                ctx: Some(ctx),
                frame: Frame {
                    slots,
                    ..Frame::default()
                },
                status: Status::Fresh,
            }),
        }))
    }

    /// Run the generator to its next `yield` (or its end), passing `sent` in.
    pub(crate) fn gen_resume(&mut self, g: &Rc<Generator>, sent: Value) -> R<GenStep> {
        self.gen_resume_with(g, sent, None)
    }

    /// [`Self::gen_resume`], or with `throw` raise that exception at the suspended
    /// `yield` (`g.throw(e)`, `g.close()`): an enclosing `try` of the body handles it,
    /// otherwise it ends the generator and propagates.
    pub(super) fn gen_resume_with(
        &mut self,
        g: &Rc<Generator>,
        sent: Value,
        throw: Option<Box<PyErr>>,
    ) -> R<GenStep> {
        if throw.is_some() {
            let mut st = g.state.borrow_mut();
            if matches!(st.status, Status::Fresh | Status::Done) {
                // Nothing is suspended in a try: the exception ends it at once.
                st.status = Status::Done;
                st.ctx = None;
                st.frame = Frame::default();
                drop(st);
                if let Some(e) = throw {
                    return Err(Interrupt::Exc(e));
                }
            }
        }
        let (ctx, mut frame) = {
            let mut st = g.state.borrow_mut();
            match st.status {
                Status::Running => {
                    return Err(self.err("ValueError", "generator already executing"));
                }
                Status::Done => return Ok(GenStep::Returned(Value::None)),
                Status::Fresh if !sent.is_none() => {
                    return Err(self.err(
                        "TypeError",
                        "can't send non-None value to a just-started generator",
                    ));
                }
                _ => {}
            }
            let Some(ctx) = st.ctx.clone() else {
                return Ok(GenStep::Returned(Value::None));
            };
            st.status = Status::Running;
            (ctx, std::mem::take(&mut st.frame))
        };
        let r = if self.depth >= self.limits.max_depth {
            Err(self.err("RecursionError", "maximum recursion depth exceeded"))
        } else {
            match throw {
                Some(e) if frame.handlers.is_empty() => Err(Interrupt::Exc(e)),
                Some(e) => {
                    if let Some(r) = frame.handlers.pop() {
                        frame.pc = r.to;
                        frame.handled.truncate(r.handled);
                        frame.pending.truncate(r.pending);
                    }
                    frame.exc = Some(e);
                    // The statement suspended at a nested `yield` is left for good.
                    frame.replay = None;
                    self.depth += 1;
                    let r = self.gen_run(&g.code, &ctx, &mut frame, Value::None);
                    self.depth -= 1;
                    r
                }
                None => {
                    self.depth += 1;
                    let r = self.gen_run(&g.code, &ctx, &mut frame, sent);
                    self.depth -= 1;
                    r
                }
            }
        };
        // An exception leaving the body unwinds through the generator's frame, as a
        // call's does (`call_function`): `at gen() file:3`, then the frame that resumed it.
        let r = match r {
            Err(Interrupt::Exc(mut e)) => {
                e.leave_frame(g.name.clone(), None);
                Err(Interrupt::Exc(e))
            }
            r => r,
        };
        let mut st = g.state.borrow_mut();
        match &r {
            Ok(GenStep::Yielded(_)) => {
                st.status = Status::Suspended;
                st.frame = frame;
            }
            _ => {
                st.status = Status::Done;
                st.ctx = None;
            }
        }
        r
    }

    fn gen_run(&mut self, code: &GenCode, ctx: &Ctx, frame: &mut Frame, sent: Value) -> R<GenStep> {
        let ops = match &code.ops {
            Ok(ops) => ops,
            Err((_, msg)) => return Err(self.err("SyntaxError", msg.clone())),
        };
        // The exceptions suspended `except` bodies handle are handled again while it runs.
        let base = self.handling.len();
        self.handling.extend(frame.handled.iter().cloned());
        let r = self.gen_loop(code, ops, ctx, frame, sent);
        self.handling.truncate(base);
        r
    }

    fn gen_loop(
        &mut self,
        code: &GenCode,
        ops: &[Op],
        ctx: &Ctx,
        frame: &mut Frame,
        sent: Value,
    ) -> R<GenStep> {
        let mut sent = Some(sent);
        loop {
            self.tick()?;
            let Some(op) = ops.get(frame.pc) else {
                return Ok(GenStep::Returned(Value::None));
            };
            match self.gen_op(code, op, ctx, frame, &mut sent) {
                Ok(None) => {}
                Ok(Some(step)) => return Ok(step),
                Err(Interrupt::Exc(e)) => match frame.handlers.pop() {
                    Some(r) => {
                        // Leaving lowered `except` bodies opened inside the region, and
                        // exits whose `finally` raised.
                        self.gen_unwind(frame, frame.handlers.len(), r.handled);
                        frame.pending.truncate(r.pending);
                        frame.exc = Some(e);
                        frame.pc = r.to;
                    }
                    None => return Err(Interrupt::Exc(e)),
                },
                Err(other) => return Err(other),
            }
        }
    }

    /// Close the `try` regions and lowered handlers opened past the given counts.
    fn gen_unwind(&mut self, frame: &mut Frame, regions: usize, handled: usize) {
        frame.handlers.truncate(regions);
        let left = frame.handled.len().saturating_sub(handled);
        frame.handled.truncate(handled);
        let keep = self.handling.len().saturating_sub(left);
        self.handling.truncate(keep);
    }

    /// A `break`/`continue` of a whole statement: the default is the next op.
    fn gen_exit(
        &mut self,
        code: &GenCode,
        frame: &mut Frame,
        exit: Option<Exit>,
    ) -> Option<GenStep> {
        match exit {
            None => frame.pc += 1,
            Some(Exit::Pc(to)) => frame.pc = to,
            Some(Exit::Plan(p)) => return self.gen_leave(code, frame, p, Value::None),
        }
        None
    }

    /// Start leaving by plan `p`: an exception a `finally` was carrying and exits
    /// pending inside the target are dropped (the new exit replaces them, as in CPython).
    fn gen_leave(
        &mut self,
        code: &GenCode,
        frame: &mut Frame,
        p: usize,
        value: Value,
    ) -> Option<GenStep> {
        match code.plans.get(p).map(|p| p.then) {
            Some(Then::Jump { pending, .. }) => frame.pending.truncate(pending),
            _ => frame.pending.clear(),
        }
        frame.exc = None;
        self.gen_plan_step(code, frame, p, 0, value)
    }

    /// Enter the `finally` of `chain[next]`, or, past the chain, do the plan's end.
    fn gen_plan_step(
        &mut self,
        code: &GenCode,
        frame: &mut Frame,
        p: usize,
        next: usize,
        value: Value,
    ) -> Option<GenStep> {
        let plan = code.plans.get(p)?;
        if let Some(fin) = plan.chain.get(next).and_then(|id| code.fins.get(*id)) {
            self.gen_unwind(frame, fin.regions, fin.handled);
            frame.pending.push(PendingExit {
                plan: p,
                next: next + 1,
                value,
            });
            frame.pc = fin.entry;
            return None;
        }
        match plan.then {
            Then::Return => Some(GenStep::Returned(value)),
            Then::Jump {
                to,
                regions,
                handled,
                pending,
            } => {
                self.gen_unwind(frame, regions, handled);
                frame.pending.truncate(pending);
                frame.pc = to;
                None
            }
        }
    }

    /// Run one op; `Some(step)` suspends or finishes the generator.
    fn gen_op(
        &mut self,
        code: &GenCode,
        op: &Op,
        ctx: &Ctx,
        frame: &mut Frame,
        sent: &mut Option<Value>,
    ) -> R<Option<GenStep>> {
        let pc = &mut frame.pc;
        let slots = &mut frame.slots;
        {
            match op {
                Op::Stmt { stmt, exits } => {
                    let flow = self.exec_stmt(stmt, ctx)?;
                    return Ok(self.gen_flow(code, frame, flow, exits));
                }
                Op::Yield(e) => {
                    let v = match e {
                        Some(e) => self.eval(e, ctx)?,
                        None => Value::None,
                    };
                    *pc += 1;
                    return Ok(Some(GenStep::Yielded(v)));
                }
                Op::Receive(targets) => {
                    let v = sent.take().unwrap_or(Value::None);
                    for t in targets {
                        self.assign(t, v.clone(), ctx)?;
                    }
                    *pc += 1;
                }
                Op::YieldFromStart { iter, slot } | Op::ForStart { iter, slot } => {
                    let v = self.eval(iter, ctx)?;
                    slots[*slot] = Some(self.gen_iter(v)?);
                    *sent = Some(Value::None);
                    *pc += 1;
                }
                Op::YieldFromNext { slot, targets } => {
                    let s = sent.take().unwrap_or(Value::None);
                    let step = match &mut slots[*slot] {
                        Some(it) => self.gen_iter_next(it, s)?,
                        None => GenStep::Returned(Value::None),
                    };
                    match step {
                        GenStep::Yielded(v) => return Ok(Some(GenStep::Yielded(v))),
                        GenStep::Returned(r) => {
                            slots[*slot] = None;
                            for t in targets {
                                self.assign(t, r.clone(), ctx)?;
                            }
                            *pc += 1;
                        }
                    }
                }
                Op::JumpIfNot(cond, to) => {
                    let c = self.eval(cond, ctx)?;
                    if self.truthy(&c)? {
                        *pc += 1;
                    } else {
                        *pc = *to;
                    }
                }
                Op::Jump(to) => {
                    self.poll()?;
                    *pc = *to;
                }
                Op::ReplayStmt { stmt, exits } => {
                    let replay = frame.replay.take().unwrap_or_else(|| {
                        Box::new(Replay {
                            log: Vec::new(),
                            next: 0,
                            depth: 0,
                            sent: None,
                        })
                    });
                    let mut replay = replay;
                    replay.next = 0;
                    replay.depth = self.depth;
                    replay.sent = sent.take();
                    let outer = self.replay.replace(replay);
                    let flow = self.exec_stmt(stmt, ctx);
                    let mine = std::mem::replace(&mut self.replay, outer);
                    return match flow {
                        Err(Interrupt::Suspend(v)) => {
                            frame.replay = mine;
                            Ok(Some(GenStep::Yielded(v)))
                        }
                        Ok(flow) => Ok(self.gen_flow(code, frame, flow, exits)),
                        Err(e) => Err(e),
                    };
                }
                Op::MatchStart { subject, slot } => {
                    let v = self.eval(subject, ctx)?;
                    slots[*slot] = Some(GenIter::Subject(v));
                    *pc += 1;
                }
                Op::MatchCase {
                    slot,
                    pattern,
                    guard,
                    miss,
                } => {
                    let v = match &slots[*slot] {
                        Some(GenIter::Subject(v)) => v.clone(),
                        _ => Value::None,
                    };
                    let mut fits = self.match_pattern(pattern, &v, ctx)?;
                    if fits && let Some(g) = guard {
                        let gv = self.eval(g, ctx)?;
                        fits = self.truthy(&gv)?;
                    }
                    if fits {
                        slots[*slot] = None;
                        *pc += 1;
                    } else {
                        *pc = *miss;
                    }
                }
                Op::ForNext { slot, target, done } => {
                    let step = match &mut slots[*slot] {
                        Some(it) => self.gen_iter_next(it, Value::None)?,
                        None => GenStep::Returned(Value::None),
                    };
                    match step {
                        GenStep::Yielded(v) => {
                            self.assign(target, v, ctx)?;
                            *pc += 1;
                        }
                        GenStep::Returned(_) => {
                            slots[*slot] = None;
                            *pc = *done;
                        }
                    }
                }
                Op::TryEnter(to) => {
                    frame.handlers.push(Region {
                        to: *to,
                        handled: frame.handled.len(),
                        pending: frame.pending.len(),
                    });
                    frame.pc += 1;
                }
                Op::TryExit => {
                    frame.handlers.pop();
                    frame.pc += 1;
                }
                Op::Except { handlers, exits } => {
                    let Some(err) = frame.exc.take() else {
                        frame.pc += 1;
                        return Ok(None);
                    };
                    for h in handlers {
                        let matches = match &h.ty {
                            None => true,
                            Some(t) => {
                                let tv = self.eval(t, ctx)?;
                                self.exc_matches(&err.value, &tv)?
                            }
                        };
                        if matches {
                            self.set_traceback(&err);
                            if let Some(n) = &h.name {
                                scope_set(&ctx.scope, &n.name, err.value.clone());
                            }
                            self.handling.push(err.value.clone());
                            let r = self.exec_block(&h.body, ctx);
                            self.handling.pop();
                            if let Some(n) = &h.name {
                                super::stmt::unbind_handler_name(ctx, &n.name);
                            }
                            return Ok(self.gen_flow(code, frame, r?, exits));
                        }
                    }
                    return Err(Interrupt::Exc(err));
                }
                Op::ExceptTest { ty, name, miss } => {
                    let Some(err) = frame.exc.take() else {
                        frame.pc = *miss;
                        return Ok(None);
                    };
                    let matches = match ty {
                        None => Ok(true),
                        Some(t) => match self.eval(t, ctx) {
                            Ok(tv) => self.exc_matches(&err.value, &tv),
                            Err(e) => Err(e),
                        },
                    };
                    match matches {
                        Ok(true) => {
                            self.set_traceback(&err);
                            if let Some(n) = name {
                                scope_set(&ctx.scope, &n.name, err.value.clone());
                            }
                            frame.handled.push(err.value.clone());
                            self.handling.push(err.value.clone());
                            frame.pc += 1;
                        }
                        Ok(false) => {
                            frame.exc = Some(err);
                            frame.pc = *miss;
                        }
                        Err(e) => return Err(e),
                    }
                }
                Op::Unwind {
                    regions,
                    handled,
                    pending,
                } => {
                    self.gen_unwind(frame, *regions, *handled);
                    frame.pending.truncate(*pending);
                    frame.pc += 1;
                }
                Op::Leave(p) => return Ok(self.gen_leave(code, frame, *p, Value::None)),
                Op::EndFinally => {
                    let Some(e) = frame.pending.pop() else {
                        frame.pc += 1;
                        return Ok(None);
                    };
                    return Ok(self.gen_plan_step(code, frame, e.plan, e.next, e.value));
                }
                Op::ExceptEnd => {
                    frame.handled.pop();
                    self.handling.pop();
                    frame.pc += 1;
                }
                Op::Reraise => {
                    return match frame.exc.take() {
                        Some(e) => Err(Interrupt::Exc(e)),
                        None => {
                            frame.pc += 1;
                            Ok(None)
                        }
                    };
                }
            }
        }
        Ok(None)
    }

    /// Where a whole statement or handler goes after ending with `flow`.
    fn gen_flow(
        &mut self,
        code: &GenCode,
        frame: &mut Frame,
        flow: Flow,
        exits: &Exits,
    ) -> Option<GenStep> {
        match flow {
            Flow::Break => self.gen_exit(code, frame, exits.brk),
            Flow::Continue => self.gen_exit(code, frame, exits.cont),
            Flow::Return(v) => match exits.ret {
                Some(p) => self.gen_leave(code, frame, p, v),
                None => Some(GenStep::Returned(v)),
            },
            Flow::Normal | Flow::Skip | Flow::Disengage => {
                frame.pc += 1;
                None
            }
        }
    }

    fn gen_iter(&mut self, v: Value) -> R<GenIter> {
        Ok(match v {
            Value::Range(a, b, s) => GenIter::Range(a, b, s),
            Value::Generator(g) => GenIter::Gen(g),
            Value::Iter(i, _) => GenIter::Shared(i),
            v @ Value::Lazy(_) => GenIter::Lazy(v),
            other => GenIter::Items(self.iter_items(&other)?),
        })
    }

    fn gen_iter_next(&mut self, it: &mut GenIter, sent: Value) -> R<GenStep> {
        Ok(match it {
            GenIter::Range(i, stop, step) => {
                if (*step > 0 && *i < *stop) || (*step < 0 && *i > *stop) {
                    let v = *i;
                    match i.checked_add(*step) {
                        Some(n) => *i = n,
                        None => *stop = *i,
                    }
                    GenStep::Yielded(Value::Int(v))
                } else {
                    GenStep::Returned(Value::None)
                }
            }
            GenIter::Items(items) => match items.next() {
                Some(v) => GenStep::Yielded(v),
                None => GenStep::Returned(Value::None),
            },
            GenIter::Shared(items) => match items.borrow_mut().next() {
                Some(v) => GenStep::Yielded(v),
                None => GenStep::Returned(Value::None),
            },
            GenIter::Gen(g) => {
                let g = g.clone();
                self.gen_resume(&g, sent)?
            }
            GenIter::Lazy(l) => match self.iter_step(&l.clone())? {
                Some(v) => GenStep::Yielded(v),
                None => GenStep::Returned(Value::None),
            },
            GenIter::Subject(_) => GenStep::Returned(Value::None),
        })
    }

    /// Drain a generator into a list (`list(g)`, `sum(g)`, ...), bounded by the
    /// collection limit.
    pub(crate) fn gen_collect(&mut self, g: &Rc<Generator>) -> R<Vec<Value>> {
        let mut out = Vec::new();
        loop {
            match self.gen_resume(g, Value::None)? {
                GenStep::Yielded(v) => {
                    out.push(v);
                    self.check_items(out.len())?;
                }
                GenStep::Returned(_) => return Ok(out),
            }
        }
    }

    /// Resume `g` until `pred` holds for a yielded value (true) or it finishes (false),
    /// as `any`, `all` and `in` consume a generator: the rest stays unrun, the
    /// generator suspended where it yielded the match.
    pub(crate) fn gen_find(
        &mut self,
        g: &Rc<Generator>,
        pred: &mut dyn FnMut(&mut Self, &Value) -> R<bool>,
    ) -> R<bool> {
        loop {
            match self.gen_resume(g, Value::None)? {
                GenStep::Yielded(v) => {
                    self.poll()?;
                    if pred(self, &v)? {
                        return Ok(true);
                    }
                }
                GenStep::Returned(_) => return Ok(false),
            }
        }
    }

    /// `StopIteration(value)` for a finished generator.
    pub(crate) fn stop_iteration(&self, value: Value) -> Interrupt {
        let Some(c) = self.builtin_class("StopIteration") else {
            return self.err("StopIteration", "");
        };
        let args = if value.is_none() {
            Vec::new()
        } else {
            vec![value.clone()]
        };
        let exc = self.make_exception(c, args);
        if let Value::Instance(i) = &exc {
            i.set_extra(Rc::from("value"), value);
        }
        Interrupt::Exc(Box::new(PyErr {
            value: exc,
            trace: Vec::new(),
            origin: None,
        }))
    }

    /// A new exception of builtin class `name` as a raisable error.
    fn new_exception(&self, name: &str, args: Vec<Value>) -> Box<PyErr> {
        let value = match self.builtin_class(name) {
            Some(c) => self.make_exception(c, args),
            None => Value::None,
        };
        Box::new(PyErr {
            value,
            trace: Vec::new(),
            origin: None,
        })
    }

    /// The exception value is an instance of builtin exception class `name`.
    pub(super) fn exc_is(&self, v: &Value, name: &str) -> bool {
        match v {
            Value::Instance(i) => i.class.is_sub_named(name),
            _ => false,
        }
    }

    /// `next(g[, default])`.
    pub(crate) fn gen_next(&mut self, g: &Rc<Generator>, default: Option<Value>) -> R<Value> {
        match self.gen_resume(g, Value::None)? {
            GenStep::Yielded(v) => Ok(v),
            GenStep::Returned(r) => match default {
                Some(d) => Ok(d),
                None => Err(self.stop_iteration(r)),
            },
        }
    }

    /// Close the generators dropped while suspended inside a `try` (see the `Drop` of
    /// [`Generator`]), oldest first. An exception one raises is ignored, as CPython
    /// ignores (and reports on stderr) one raised by a finalizer; a limit stops the run.
    pub(super) fn close_abandoned(&mut self) -> R<()> {
        if CLOSING.with(std::cell::Cell::get) {
            return Ok(());
        }
        CLOSING.with(|c| c.set(true));
        let r = self.close_abandoned_queue();
        CLOSING.with(|c| c.set(false));
        r
    }

    fn close_abandoned_queue(&mut self) -> R<()> {
        while has_abandoned() {
            let batch = ABANDONED.with(|q| std::mem::take(&mut *q.borrow_mut()));
            HAS_ABANDONED.with(|h| h.set(false));
            let mut batch = batch.into_iter();
            while let Some(g) = batch.next() {
                match self.gen_method(&Rc::new(g), "close", Vec::new()) {
                    Ok(_) | Err(Interrupt::Exc(_)) => {}
                    Err(e) => {
                        for g in batch {
                            g.state.borrow_mut().status = Status::Done;
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Methods of a generator object: `send`, `close`, `__next__`.
    /// The methods of a generator object, read as values (`f = g.send`,
    /// `hasattr(g, "__next__")`); calls go to [`Interp::gen_method`].
    pub(crate) const GEN_METHODS: &'static [&'static str] =
        &["send", "__next__", "__iter__", "close", "throw"];

    pub(crate) fn gen_method(
        &mut self,
        g: &Rc<Generator>,
        name: &str,
        args: Vec<Value>,
    ) -> R<Value> {
        match name {
            "send" => {
                let [v] = <[Value; 1]>::try_from(args).map_err(|a| {
                    self.err(
                        "TypeError",
                        format!(
                            "generator.send() takes exactly one argument ({} given)",
                            a.len()
                        ),
                    )
                })?;
                match self.gen_resume(g, v)? {
                    GenStep::Yielded(v) => Ok(v),
                    GenStep::Returned(r) => Err(self.stop_iteration(r)),
                }
            }
            "__next__" => self.gen_next(g, None),
            "__iter__" => Ok(Value::Generator(g.clone())),
            "close" => {
                if !args.is_empty() {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "generator.close() takes no arguments ({} given)",
                            args.len()
                        ),
                    ));
                }
                let status = g.state.borrow().status;
                match status {
                    Status::Running => Err(self.err("ValueError", "generator already executing")),
                    Status::Suspended => {
                        // GeneratorExit at the `yield`: `finally` blocks run; the body may
                        // not yield again.
                        let exit = self.new_exception("GeneratorExit", Vec::new());
                        match self.gen_resume_with(g, Value::None, Some(exit)) {
                            Ok(GenStep::Yielded(_)) => {
                                let mut st = g.state.borrow_mut();
                                st.status = Status::Done;
                                st.ctx = None;
                                st.frame = Frame::default();
                                drop(st);
                                Err(self.err("RuntimeError", "generator ignored GeneratorExit"))
                            }
                            Ok(GenStep::Returned(_)) => Ok(Value::None),
                            Err(Interrupt::Exc(e))
                                if self.exc_is(&e.value, "GeneratorExit")
                                    || self.exc_is(&e.value, "StopIteration") =>
                            {
                                Ok(Value::None)
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => {
                        let mut st = g.state.borrow_mut();
                        st.status = Status::Done;
                        st.ctx = None;
                        st.frame = Frame::default();
                        Ok(Value::None)
                    }
                }
            }
            "throw" => {
                let Some(e) = args.into_iter().next() else {
                    return Err(self.err("TypeError", "throw expected at least 1 argument, got 0"));
                };
                let exc = match &e {
                    Value::Class(c) if c.is_exception() => {
                        self.make_exception(c.clone(), Vec::new())
                    }
                    Value::Instance(i) if i.class.is_exception() => e.clone(),
                    _ => {
                        return Err(self.err(
                            "TypeError",
                            "exceptions must be classes or instances deriving from BaseException, not "
                                .to_string()
                                + &self.type_name_of(&e),
                        ));
                    }
                };
                let err = Box::new(PyErr {
                    value: exc,
                    trace: Vec::new(),
                    origin: None,
                });
                match self.gen_resume_with(g, Value::None, Some(err))? {
                    GenStep::Yielded(v) => Ok(v),
                    GenStep::Returned(r) => Err(self.stop_iteration(r)),
                }
            }
            _ => Err(self.err(
                "AttributeError",
                format!("'generator' object has no attribute '{name}'"),
            )),
        }
    }

    /// `for x in g { }` over a generator: pulls one item per iteration (an endless
    /// generator with a `break` in the body is fine). `Some(flow)` ends the statement.
    pub(super) fn exec_for_generator(
        &mut self,
        g: &Rc<Generator>,
        target: &ast::Expr,
        body: &[ast::Stmt],
        ctx: &Ctx,
    ) -> R<Option<Flow>> {
        loop {
            self.poll()?;
            let v = match self.gen_resume(g, Value::None)? {
                GenStep::Yielded(v) => v,
                GenStep::Returned(_) => return Ok(None),
            };
            self.assign(target, v, ctx)?;
            match self.exec_block(body, ctx)? {
                Flow::Break => return Ok(Some(Flow::Normal)),
                Flow::Continue | Flow::Normal => {}
                other => return Ok(Some(other)),
            }
        }
    }
}
