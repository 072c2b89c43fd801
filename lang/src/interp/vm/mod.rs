//! The compiled execution core (issue 11, first landing): a def whose whole body uses
//! only the supported subset is lowered once to bytecode ([`Code`]) and runs on a
//! stack machine with heap-allocated frames (`exec.rs`); anything else stays on the
//! tree-walker. The decision is made once per function body, at its first call, and
//! cached on the function ([`CodeCell`]): a body is either wholly compiled or not at all.
//!
//! - `lower.rs`: the checked AST of a def → [`Code`] (or `None`: not in the subset);
//! - `exec.rs`: the execution loop. Calls between compiled functions push a frame in the
//!   same loop (no native recursion); every other call goes through the existing call
//!   path (`Interp::call_value`, `call_function`, `call_method_value`).
//!
//! Semantics are the tree-walker's, exactly: the operations are the same functions
//! (`ops.rs`), an instruction that can raise carries the span the tree-walker would
//! record (the innermost expression, or the statement for statement-level failures),
//! `Tick` charges the operation budget where `exec_stmt` does, calls charge it where
//! `call_plain`/`call_function` do, and the depth limit is the same counter.

mod exec;
mod lower;

use super::value::{Class, FuncBody, Function, Value};
use super::{Ctx, Flow, Interp, R};
use crate::ast::{self, BinOp, CmpOp, UnaryOp};
use crate::span::Span;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

pub(super) use exec::Stacks;

/// One instruction. Operands index the code object's tables (`consts`, `names`,
/// `local_names`, `kwnames`) or are jump targets (instruction indexes).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// Start of a statement: one unit of the operation budget (`Interp::tick`).
    Tick,
    /// Once per loop iteration: the time check of long loops (`Interp::poll`).
    Poll,
    Const(u32),
    /// Push a local slot; an unbound slot reads the name through the closure chain
    /// (the tree-walker's scope lookup), `NameError` if unbound there too.
    LoadLocal(u32),
    /// Assign a local: a bound slot is rebound; else an enclosing binding of the name
    /// (module global, builtin) is rebound, as Jac's assignment rule says; else the
    /// slot is bound.
    StoreLocal(u32),
    /// `x: T = v`: binds the slot itself (`scope_define`).
    DefineLocal(u32),
    /// A name the function never assigns: looked up through the closure chain.
    LoadGlobal(u32),
    LoadSelf,
    /// `LoadSelf` right before the `GetAttr(name, site)` of `self.name`: when `self`
    /// is an object instance and the site's cache has the field, the field is pushed
    /// and that `GetAttr` skipped; otherwise exactly `LoadSelf`: (name, site).
    SelfAttr(u32, u32),
    /// `LoadSelf` right before the `SetAttr(name, site)` of `self.name = v` (value
    /// [v] on the stack): when `self` is an object instance and the site's cache has
    /// the field, [v] is stored there and that `SetAttr` skipped; otherwise exactly
    /// `LoadSelf`: (name, site).
    SelfSetAttr(u32, u32),
    LoadHere,
    LoadVisitor,
    Pop,
    Dup,
    Dup2,
    Unary(UnaryOp),
    Binary(BinOp),
    /// [a] → `a op consts[k]` (an int literal on the right).
    BinaryConst(BinOp, u32),
    Compare(CmpOp),
    /// [a, b] → jump unless `a op b` (an `if`/`while` condition that is one
    /// comparison).
    CompareJump(CmpOp, u32),
    /// [a] → jump unless `a op consts[k]` (the same, with an int literal on the right).
    CompareConstJump(CmpOp, u32, u32),
    /// `BinaryConst` on parameter slot `s` (always bound, so the read cannot fail):
    /// (slot, operator, constant).
    LocalBinaryConst(u32, BinOp, u32),
    /// `f(s op k)`: a `LocalBinaryConst(s, op, k)` right before a `Call(1)` (which stays
    /// after it; the lowering's peephole pass only replaces the first instruction).
    /// When the slot and the constant are small ints whose result fits and the callee
    /// `f` under it is a function with compiled code and one parameter, the result is
    /// bound to its parameter slot and the call made in the same dispatch, as that
    /// `Call(1)` (its
    /// index, span and tick); anything else is exactly `LocalBinaryConst`, and the
    /// `Call(1)` runs next: (slot, operator, constant).
    CallLocalBinaryConst(u32, BinOp, u32),
    /// `CompareConstJump` on parameter slot `s`: (slot, operator, constant, target).
    LocalCompareConstJump(u32, CmpOp, u32, u32),
    /// A link of a comparison chain `a < b < c`: [a, b] → [b] if true, else jump
    /// with `False` pushed.
    CompareChain(CmpOp, u32),
    JumpIfFalse(u32),
    /// `and`: jump keeping the left value if it is false, else pop it.
    JumpIfFalseOrPop(u32),
    /// `or`: jump keeping the left value if it is true, else pop it.
    JumpIfTrueOrPop(u32),
    Jump(u32),
    /// `obj.name`: (name, attribute site).
    GetAttr(u32, u32),
    /// [value, obj] → set `obj.name = value`.
    SetAttr(u32, u32),
    /// [obj, value] → set `obj.name = value` (augmented assignment).
    SetAttrTop(u32, u32),
    GetItem,
    /// [value, obj, index] → `obj[index] = value`.
    SetItem,
    /// [obj, index, value] → `obj[index] = value` (augmented assignment).
    SetItemTop,
    /// [cur, rhs] → the new value of `target op= rhs`; with the flag, a list `cur`
    /// under `+=` is extended in place (and stays the value).
    AugBinary(BinOp, bool),
    /// [cur, rhs] → `local op= rhs` with the tree-walker's in-place cases (list
    /// extension, string append), then stored.
    AugLocal(u32, BinOp),
    BuildList(u32),
    BuildTuple(u32),
    NewDict,
    /// [dict, key, value] → [dict] with the pair inserted.
    DictInsert,
    /// [f, args...] → f(args).
    Call(u32),
    /// [f, args..., kwargs...] → f(args, names=kwargs): (positional count, kwnames index).
    CallKw(u32, u32),
    /// [recv, args...] → recv.name(args): (name, count, method site).
    CallMethod(u32, u32, u32),
    /// [recv, args..., kwargs...]: (name, positional count, kwnames index).
    CallMethodKw(u32, u32, u32),
    Return,
    ReturnNone,
    /// `return name;` of a bound slot: the statement's `Tick`, then `LoadLocal(s)`
    /// and `Return`, which stay right after it (the lowering's peephole pass only
    /// replaces the `Tick`). The tick is charged here (its error at the `Tick`'s
    /// span); a bound slot is then returned in the same dispatch, an unbound one goes
    /// on at the `LoadLocal`, which reads the closure chain as always: (slot).
    TickReturnLocal(u32),
    /// `return a op b;`: a `Binary(o)` right before a `Return` (which stays after
    /// it). Two small ints whose result fits are computed and returned in one
    /// dispatch; anything else is exactly `Binary`, and the `Return` runs next.
    ReturnBinary(BinOp),
    /// Pop an iterable, push a loop iterator (ranges lazily, generators step by step,
    /// anything else materialised as `for` does); with the flag, a comprehension's
    /// (generators materialised too, as `comprehend` does).
    /// With the second flag (the only generator of a comprehension without
    /// conditions, its result right under the iterable), a materialised source's
    /// length is reserved in the result: the size it will have (a list) or at most
    /// (a dict or set), no regrowth on the way.
    GetIter(bool, bool),
    /// Push the next item of the innermost loop iterator, or pop it and jump.
    ForIter(u32),
    /// `enumerate(x)` as a comprehension's iterable with a two-name target: [f, x] →
    /// when `f` is the builtin `enumerate`, `x`'s items (materialised as the builtin
    /// does) wait for the `GetIterEnumerate` right after the `Call(1)` this jumps over
    /// (to `target`); anything else is left for that call.
    EnumerateFast(u32),
    /// `GetIter(true, reserve)`, except that the items `EnumerateFast` just took become
    /// an iterator of (index, item) pairs that makes no tuples.
    GetIterEnumerate(bool),
    /// `ForIter` fused with the `DefineLocal` of a comprehension's one-name target:
    /// the item is bound into slot `s` without passing through the operand stack:
    /// (exit, s).
    ForIterLocal(u32, u32),
    /// `ForIter` fused with the `UnpackLocals` of the two-slot list `slot_lists[k]`:
    /// an (index, item) pair is bound without a tuple, any other item unpacked as
    /// `UnpackLocals` does: (exit, k).
    ForIterPair(u32, u32),
    PopIter,
    /// Module code: `name = value` by name (`scope_set` on the module scope).
    StoreName(u32),
    /// Module code: `name: T = value` (`scope_define`).
    DefineName(u32),
    /// Module code: [cur, rhs] → `name op= rhs` by name, with the in-place cases.
    AugName(u32, BinOp),
    /// Module code: an expression outside the subset, evaluated by the tree-walker in
    /// the module context (exact there, since module code keeps its names by name).
    EvalAst(u32),
    /// Module code: a statement outside the subset, run by the tree-walker (only
    /// statements whose control flow cannot leave them).
    ExecAst(u32),
    /// Module code: enter a comprehension's own scope (a child of the current one).
    EnterScope,
    ExitScope,
    /// [.., v] → bind the comprehension targets (a `kwnames` list) from a tuple or
    /// iterable `v` in the current scope, as `assign_local` does.
    UnpackDefine(u32),
    /// [.., v] → bind the comprehension targets in the slots of a `slot_lists` entry
    /// from a tuple or iterable `v`, as `assign_local` does.
    UnpackLocals(u32),
    /// [.., v] → assign a statement's flat tuple target (`a, b = v`, `for (k, v) in`)
    /// to the locals of a `slot_lists` entry, each as `StoreLocal`, as `assign` does.
    UnpackStore(u32),
    /// Module code: the same, by name (a `kwnames` list; `scope_set` each).
    UnpackNames(u32),
    /// [list, v] → [list] with `v` appended (growth bounded).
    ListAppend,
    /// [set, v] → [set] with `v` added.
    SetAdd,
    /// [dict, k, v] → [dict] with `k: v` (comprehension growth bounds); staged while
    /// the innermost `DictStage` is on (below).
    DictPut,
    /// Right after a dict comprehension's `NewDict`: its pairs are staged in a vector
    /// while the keys are ints, each larger than the one before (so all distinct,
    /// keyed by value, no program code to run: `{i: x for (i, x) in enumerate(xs)}`,
    /// `{i: f(i) for i in range(n)}`) and fewer than `max_collection_items`, and
    /// inserted at `DictUnstage` into a table made once at its final size. Any other
    /// key (or the bound) inserts what is staged, in order, and the rest goes into
    /// the dict as before. The vector holds no more pairs than the dict will.
    DictStage,
    /// After a dict comprehension's loops: [dict] → [dict] with the staged pairs
    /// inserted in order.
    DictUnstage,
    /// Push an empty set.
    NewSet,
    /// Start an f-string: a new buffer on the f-string stack.
    FStrStart,
    /// Append `consts[k]` (a literal piece) to the innermost f-string buffer.
    FStrLit(u32),
    /// [v] → [v, c]: the conversion of `{v!r}`/`{v!s}`/`{v!a}`/`{v=}` done before its
    /// format spec is evaluated (`c` is `None` when there is none), as
    /// `eval_fstring` orders it; `fparts[p]` says which.
    FStrConv(u32),
    /// Append the piece `fparts[p]` of value [v] (or [v, c, spec] when it has a spec)
    /// to the innermost buffer, as `eval_fstring` writes it.
    FStrPiece(u32),
    /// Pop the innermost buffer and push it as a string.
    FStrEnd,
    /// `root`.
    LoadRoot,
    /// The start of an edge reference written without one: `self` when it is an
    /// anchor, else `here` (`default_anchor`).
    DefaultAnchor,
    /// [start] → the edge reference `edge_refs[i]` from `start` (its hops' type and
    /// filter expressions read no slot; the tree-walker evaluates them): the list of
    /// its nodes (or edges); with the flag, the locations a `visit` of it queues (each
    /// edge followed by its far node, as `exec_visit` does).
    EdgeRef(u32, bool),
    /// [v] → [the list of locations `visit v` queues] (`locations`).
    VisitLocations,
    /// [items] or [items, index] (with the flag) → queue them on the running walk; jump
    /// when something was queued (past the `else` block).
    Visit(bool, u32),
    /// [v] → `report v`.
    Report,
    /// `disengage`: the running walk stops after this ability (the frame then returns
    /// `None`, as a body ended by `Flow::Disengage` does).
    Disengage,
    /// [left, right] → `left spawn right`.
    Spawn,
    /// [v] → [the exception `raise v` raises] (`exception_from`: a class is called).
    ExcFrom,
    /// [exc] or [exc, cause] (with the flag) → raise it; `raise` alone (`RaiseAgain`)
    /// re-raises the exception being handled.
    Raise(bool),
    RaiseAgain,
    /// `assert`: [cond] → jump when it is true, else go on to the failure.
    AssertJump(u32),
    /// [] or [msg] (with the flag) → raise `AssertionError`.
    AssertFail(bool),
    /// [left, right] → `left ++> right` with the operator `connects[i]` (its edge
    /// expression and assignments read no slot).
    Connect(u32),
}

/// How one `{expr}` piece of an f-string is written (`Op::FStrConv`, `Op::FStrPiece`).
pub(crate) struct FPart {
    /// `!r`, `!s` or `!a`.
    pub conversion: Option<char>,
    /// `{x=}`: the source text written before the value.
    pub debug_text: Option<Rc<str>>,
    /// The piece has a format spec (evaluated onto the stack before `FStrPiece`).
    pub spec: bool,
}

// Instructions stay two words: the loop copies one per step.
const _: () = assert!(std::mem::size_of::<Op>() == 16);

/// A `CallMethod` site's cached lookup.
pub(crate) struct MethodHit {
    pub class: Rc<Class>,
    /// `methods_epoch()` when it was looked up.
    pub epoch: u64,
    pub func: Rc<Function>,
}

/// A compiled def body.
pub(crate) struct Code {
    pub ops: Vec<Op>,
    /// The span each instruction records when it raises (same index as `ops`).
    pub spans: Vec<Span>,
    pub consts: Vec<Value>,
    pub names: Vec<Rc<str>>,
    /// Per entry of `names`: where the name was last found in the nearest scope
    /// (`Vars::position_hinted`), so a module-level name read or assigned in a loop
    /// is found without a search while its binding stays where it is.
    pub name_hints: Vec<Cell<u32>>,
    pub kwnames: Vec<Vec<Rc<str>>>,
    /// The name of each local slot; parameters first, in order, then the targets of
    /// comprehensions.
    pub local_names: Vec<Rc<str>>,
    /// The slots of comprehensions' tuple targets (`UnpackLocals`).
    pub slot_lists: Vec<Vec<u32>>,
    /// Per attribute site: the class of the last object instance seen there and the
    /// field slot the name is in (class fields never change, so the pair stays true).
    pub attr_cache: Vec<RefCell<Option<(Rc<Class>, usize)>>>,
    /// Per `CallMethod` site: the last receiver class and the plain method it
    /// resolved to, valid while no class gained or replaced a method since.
    pub method_cache: Vec<RefCell<Option<MethodHit>>>,
    /// The `{expr}` pieces of f-strings.
    pub fparts: Vec<FPart>,
    /// Edge references (`Op::EdgeRef`) and connect operators (`Op::Connect`).
    pub edge_refs: Vec<ast::EdgeRef>,
    pub connects: Vec<ast::ConnectOp>,
    /// Module code: the expressions and statements the tree-walker runs.
    pub exprs: Vec<ast::Expr>,
    pub stmts: Vec<ast::Stmt>,
}

/// The per-function cache of the lowering decision: the body it was made for (kept
/// alive so a replaced body can never be mistaken for it) and the code, `None` when the
/// body is outside the subset.
pub type CodeCell = RefCell<Option<(Rc<[ast::Stmt]>, Option<Rc<Code>>)>>;

/// Whether a call of `func` with `n` positional arguments and nothing else binds its
/// parameters one to one (the tree-walker's `call_plain` shape).
fn plain_shape(func: &Function, n: usize) -> bool {
    func.params.len() == n
        && !func.is_classmethod
        && !func.is_async
        && func.params.iter().all(|p| p.kind == ast::ParamKind::Normal)
}

impl Interp<'_> {
    /// The compiled code of `func` when the VM is on and its body `body` is in the
    /// subset (lowered at the first call, then cached on the function).
    pub(super) fn vm_code(&self, func: &Function, body: &Rc<[ast::Stmt]>) -> Option<Rc<Code>> {
        if !self.limits.vm
            || func.captured.is_some()
            || func.is_lambda
            || func.is_classmethod
            || func.is_async
            || !func.params.iter().all(|p| p.kind == ast::ParamKind::Normal)
        {
            return None;
        }
        if let Some((b, code)) = &*func.code.borrow()
            && Rc::ptr_eq(b, body)
        {
            return code.clone();
        }
        let code = lower::lower(func, body).map(Rc::new);
        *func.code.borrow_mut() = Some((body.clone(), code.clone()));
        code
    }

    /// Run an entry block (module code, `ctx` the module's context): compiled when the
    /// VM is on and it lowers, else on the tree-walker.
    pub(super) fn exec_entry_block(&mut self, body: &[ast::Stmt], ctx: &Ctx) -> R<Flow> {
        if self.limits.vm
            && let Some(code) = lower::lower_module(body)
        {
            return self.vm_run_module(Rc::new(code), ctx).map(|_| Flow::Normal);
        }
        self.exec_block(body, ctx)
    }

    /// The compiled code of `func` if it has a plain body that lowers. The hot path
    /// of every call from compiled code: once the decision is cached for the current
    /// body, two borrows and a pointer comparison.
    #[inline(always)]
    fn vm_code_of(&self, func: &Function) -> Option<Rc<Code>> {
        {
            let body = func.body.borrow();
            let FuncBody::Block(b) = &*body else {
                return None;
            };
            if self.limits.vm
                && let Some((cached, code)) = &*func.code.borrow()
                && Rc::ptr_eq(cached, b)
            {
                return code.clone();
            }
        }
        self.vm_code_decide(func)
    }

    /// `vm_code_of` when the decision for the current body is not cached yet.
    #[inline(never)]
    fn vm_code_decide(&self, func: &Function) -> Option<Rc<Code>> {
        let body = match &*func.body.borrow() {
            FuncBody::Block(b) => b.clone(),
            _ => return None,
        };
        self.vm_code(func, &body)
    }
}
