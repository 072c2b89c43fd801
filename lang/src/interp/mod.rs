//! The tree-walking interpreter: its state (`Interp`, `Program`), errors, control flow
//! and limits.
//!
//! Module loading lives in `modules.rs`, declarations in `decl.rs`, statements and
//! assignment in `stmt.rs`, calls and construction in `call.rs`, the builtins scope in
//! `setup.rs`, expressions in `expr.rs`, the graph arena and walker traversal in
//! `graph.rs` and `walk.rs`, printing in `display.rs`, Python builtins in
//! `builtins.rs`. Errors, control
//! flow and resource limits are separate types: `Interrupt` (exceptions and limits, the
//! `Err` side) and `Flow` (break/continue/return/skip/disengage, the `Ok` side).

pub mod annex;
mod base64;
mod bounds;
pub mod builtins;
mod call;
mod complex;
mod coroutine;
mod decl;
mod decl_later;
mod dictview;
mod display;
mod dunder;
mod encode;
pub mod events;
mod expr;
mod generator;
pub mod graph;
mod graph_view;
pub mod kvstore;
mod lazy;
mod modules;
mod ops;
mod params;
mod pattern;
mod persist;
mod plain_json;
mod printgraph;
mod pystr;
pub(crate) mod serve_support;
mod setup;
pub mod stdlib;
mod stmt;
mod storage;
mod sv;
pub mod value;
mod vm;
mod walk;

use crate::ast::{self, ArchKind, Item, Member, StmtKind};
use crate::host::{Host, HostError};
use crate::limits::Limits;
pub use crate::names::OSP_BUILTINS;
use crate::span::{SourceFile, Span};
use graph::Graph;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use value::*;

/// One frame of an svc traceback.
#[derive(Clone, Debug)]
pub struct TraceFrame {
    pub func: Rc<str>,
    pub file: u32,
    pub span: Span,
}

/// A raised svc exception with the frames it unwound through (innermost first).
#[derive(Debug)]
pub struct PyErr {
    pub value: Value,
    pub trace: Vec<TraceFrame>,
    /// Span where it was raised (file, span), if known.
    pub origin: Option<(u32, Span)>,
}

impl PyErr {
    /// The exception leaves frame `func`: its origin (where it was raised in that
    /// frame), else `fallback`, becomes the frame's traceback entry; nothing is added
    /// when neither is known.
    pub fn leave_frame(&mut self, func: Rc<str>, fallback: Option<(u32, Span)>) {
        if let Some((file, span)) = self.origin.take().or(fallback) {
            self.trace.push(TraceFrame { func, file, span });
        }
    }
}

/// Why evaluation stopped early: the `Err` side of every evaluation function.
#[derive(Debug)]
pub enum Interrupt {
    /// A catchable svc exception.
    Exc(Box<PyErr>),
    /// A resource limit was hit (operation budget, time budget): not catchable.
    Limit(String),
    /// The host failed (storage error, write conflict): not catchable.
    Host(HostError),
    /// A `yield` nested in the statement a generator is running suspends it with this
    /// value (`generator.rs`, `Op::ReplayStmt`); never leaves the generator.
    Suspend(Value),
}

pub type R<T> = Result<T, Interrupt>;

/// `r` with an exception that has no origin yet placed at `span` of `file` (where the
/// expression or statement that raised it stands).
#[inline(always)]
pub(crate) fn at_origin<T>(r: R<T>, file: u32, span: Span) -> R<T> {
    match r {
        Err(Interrupt::Exc(mut err)) => {
            if err.origin.is_none() {
                err.origin = Some((file, span));
            }
            Err(Interrupt::Exc(err))
        }
        other => other,
    }
}

/// Non-error control flow of statements.
#[derive(Debug)]
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return(Value),
    Skip,
    Disengage,
}

/// The evaluation context of one running frame.
#[derive(Clone)]
pub struct Ctx {
    pub scope: ScopeRef,
    /// `self`: the instance (walker/obj) or anchor owning the running method/ability.
    pub this: Option<Value>,
    pub here: Option<Value>,
    pub visitor: Option<Value>,
    /// Class whose method is running (for `super`).
    pub class: Option<Rc<Class>>,
    pub file: u32,
}

impl Ctx {
    /// The context of a module's top level: `scope` is its module scope.
    pub fn module(scope: ScopeRef, file: u32) -> Ctx {
        Ctx {
            scope,
            this: None,
            here: None,
            visitor: None,
            class: None,
            file,
        }
    }
}

/// The limit message of a run stopped because its caller went away.
pub const CANCELLED: &str = "cancelled: the caller went away";

/// A program being run: the interpreter state for one `svc run` or one request.
pub struct Interp<'h> {
    pub host: &'h mut dyn Host,
    pub graph: Graph,
    /// Loaded source files (shared with the `Program`; copied only when a run adds one).
    pub files: Rc<Vec<Arc<SourceFile>>>,
    pub builtins: ScopeRef,
    /// Loaded modules by canonical path.
    modules: Rc<HashMap<PathBuf, Rc<ModuleObj>>>,
    /// Every archetype class by name (for persistence lookups).
    pub classes: Rc<FxHashMap<Rc<str>, Rc<Class>>>,
    builtin_classes: Rc<FxHashMap<&'static str, Rc<Class>>>,
    /// The module name each source file's classes show (`__main__`, `helper`,
    /// `pkg.inner`; `modules::shown_module`), by file id.
    module_names: Rc<FxHashMap<u32, Rc<str>>>,
    pub walks: Vec<walk::Walk>,
    /// Reports made outside any walk (a server request's report list).
    pub top_reports: Vec<Value>,
    depth: usize,
    ops: u64,
    /// Calls of `poll` (long native loops check the clock every 4096 of them).
    polls: u32,
    limits: Limits,
    deadline: Option<Instant>,
    fn_cache: FnCache,
    /// Frames of the exception currently being handled (for bare `raise`).
    handling: Vec<Value>,
    pub main_module: Option<Rc<ModuleObj>>,
    /// Callbacks registered with `on_commit`.
    pub on_commit: Vec<Value>,
    /// Objects and anchors being printed (cycle detection in `repr`).
    repr_path: Vec<usize>,
    /// The statement with nested `yield`s a generator is running (`generator.rs`,
    /// `Op::ReplayStmt`): `eval` records and replays its expressions' values.
    pub(crate) replay: Option<Box<generator::Replay>>,
    /// Anchors one `repr` has printed (each is expanded once).
    repr_seen: FxHashMap<usize, ()>,
    /// Bytes of wire output produced so far (`Limits::max_response_bytes`).
    wire_spent: usize,
    /// Nesting of the container comparison in progress (`ops::py_eq`).
    compare_depth: usize,
    /// A served call: a spawn does not commit by itself; the call commits once at its
    /// end (and wherever the code calls `commit()`).
    pub serving: bool,
    /// Commits of this run that stored something. A conflict after one of them cannot
    /// be replayed (the first commit's effects would happen twice).
    pub durable_commits: u32,
    /// The program's pinned anchors (see `Program`).
    pinned: Rc<Vec<(Handle, crate::host::AnchorId)>>,
    next_base: Rc<std::cell::Cell<u64>>,
    /// Frame scopes of finished calls, ready for reuse.
    frame_pool: Vec<ScopeRef>,
    /// Set by `await` just before it calls an `async` function: run the body now.
    run_async: bool,
    /// The compiled core's stacks, kept for the next entry (`vm/exec.rs`); boxed, so
    /// taking a set from the pool and handing it back moves a pointer, not the set.
    #[allow(clippy::vec_box)] // a set is moved in and out of the pool at every entry
    vm_stacks: Vec<Box<vm::Stacks>>,
    /// The program's scratch, where `keep_scratch` leaves `frame_pool` and `vm_stacks`.
    scratch: Rc<std::cell::RefCell<RunScratch>>,
}

/// The parts of a function taken from the AST once and shared by every closure made
/// from it.
struct FnTemplate {
    name: Rc<str>,
    params: Vec<(
        Rc<str>,
        ast::ParamKind,
        Option<Rc<ast::Expr>>,
        Option<Rc<ast::Expr>>,
    )>,
    body: Rc<[ast::Stmt]>,
    /// The compiled body when it holds `yield` (a generator function).
    generator: Option<Rc<generator::GenCode>>,
    is_async: bool,
    ret: Option<Rc<ast::Expr>>,
    span: Span,
}

/// A loaded program: its files, module scopes and classes. A server loads it once per
/// worker thread and starts every request's run from it with `Interp::with_program`, so
/// declarations and module-level `with entry` code run once, not per request. Cloning
/// is cheap (reference counts).
#[derive(Clone)]
pub struct Program {
    files: Rc<Vec<Arc<SourceFile>>>,
    builtins: ScopeRef,
    modules: Rc<HashMap<PathBuf, Rc<ModuleObj>>>,
    classes: Rc<FxHashMap<Rc<str>, Rc<Class>>>,
    builtin_classes: Rc<FxHashMap<&'static str, Rc<Class>>>,
    module_names: Rc<FxHashMap<u32, Rc<str>>>,
    fn_cache: FnCache,
    main_module: Option<Rc<ModuleObj>>,
    /// Anchors the load run left in module globals: `(handle, id)`, re-resolved by id
    /// (with the usual access checks) at the start of every later run.
    pinned: Rc<Vec<(Handle, crate::host::AnchorId)>>,
    /// First handle of the next run (each run gets its own range).
    next_base: Rc<std::cell::Cell<u64>>,
    /// What the last finished run left for the next one (`Interp::keep_scratch`).
    scratch: Rc<std::cell::RefCell<RunScratch>>,
}

/// Frame scopes and VM stacks a finished run hands to the next run of its program on
/// the same thread (a server's worker runs call after call), so a call does not make
/// and drop them afresh. Both are cleared when their run is done with them
/// (`recycle_frame`, `vm_finish`); nothing of one run's values reaches the next.
#[derive(Default)]
struct RunScratch {
    frames: Vec<ScopeRef>,
    #[allow(clippy::vec_box)] // as `Interp::vm_stacks`, which it is handed to
    stacks: Vec<Box<vm::Stacks>>,
}

/// Finished frames kept for reuse by the next calls (`Interp::frame_scope`).
const FRAME_POOL: usize = 64;

/// Handles one run may mint (its range in the handle space).
const RUN_HANDLES: u64 = 1 << 32;

/// How many values of the module globals the pinning scan looks at, at most.
const PIN_SCAN_LIMIT: usize = 100_000;

/// Functions made from nested defs and lambdas, by (file, span start); shared by every
/// run of a program on one thread.
type FnCache = Rc<std::cell::RefCell<HashMap<(u32, u32), Rc<FnTemplate>>>>;

impl Program {
    /// Names of the archetypes the program declares (what a stored anchor's `arch_type`
    /// must name to be read back).
    pub fn archetype_names(&self) -> Vec<String> {
        self.classes.keys().map(|k| k.to_string()).collect()
    }
}

impl<'h> Interp<'h> {
    /// The program state of this interpreter (after `run_main`), for later runs. The
    /// load run's anchors held by module globals are pinned: later runs resolve them by
    /// id; any other handle kept past its run is stale (a clear `ReferenceError` on use).
    pub fn program(&self) -> Program {
        let pinned = if self.graph.base == 0 {
            Rc::new(self.pinned_globals())
        } else {
            self.pinned.clone()
        };
        Program {
            files: self.files.clone(),
            builtins: self.builtins.clone(),
            modules: self.modules.clone(),
            classes: self.classes.clone(),
            builtin_classes: self.builtin_classes.clone(),
            module_names: self.module_names.clone(),
            fn_cache: self.fn_cache.clone(),
            main_module: self.main_module.clone(),
            pinned,
            next_base: self.next_base.clone(),
            scratch: self.scratch.clone(),
        }
    }

    /// `(handle, id)` of every anchor of this run reachable from module globals (through
    /// containers and objects, iteratively, up to `PIN_SCAN_LIMIT` values).
    fn pinned_globals(&self) -> Vec<(Handle, crate::host::AnchorId)> {
        let mut work: Vec<Value> = Vec::new();
        let mut seen_modules = FxHashMap::default();
        for m in self.modules.values().chain(self.main_module.iter()) {
            if seen_modules.insert(Rc::as_ptr(m) as usize, ()).is_none() {
                work.extend(m.scope.borrow().vars.values().cloned());
            }
        }
        let mut seen: FxHashMap<usize, ()> = FxHashMap::default();
        let mut out: FxHashMap<Handle, crate::host::AnchorId> = FxHashMap::default();
        let mut budget = PIN_SCAN_LIMIT;
        while let Some(v) = work.pop() {
            if budget == 0 {
                break;
            }
            budget -= 1;
            match &v {
                Value::Anchor(h) if !self.graph.is_stale(*h) => {
                    out.insert(*h, self.graph.id_of(*h));
                }
                Value::List(l) if seen.insert(Rc::as_ptr(l) as usize, ()).is_none() => {
                    work.extend(l.borrow().iter().cloned());
                }
                Value::Tuple(t) => work.extend(t.iter().cloned()),
                Value::Dict(d) if seen.insert(Rc::as_ptr(d) as usize, ()).is_none() => {
                    work.extend(
                        d.borrow()
                            .iter()
                            .flat_map(|(k, v)| [k.0.clone(), v.clone()]),
                    );
                }
                Value::Instance(i) if seen.insert(Rc::as_ptr(i) as usize, ()).is_none() => {
                    work.extend(i.fields.borrow().iter().cloned());
                }
                _ => {}
            }
        }
        out.into_iter().collect()
    }

    /// Resolve the program's pinned anchors in this run's graph (one batched load).
    fn resolve_pinned(&mut self) {
        if self.pinned.is_empty() {
            return;
        }
        let pinned = self.pinned.clone();
        let ids: Vec<crate::host::AnchorId> = pinned.iter().map(|(_, id)| *id).collect();
        // A failed load leaves them unresolved: using one is then a clear error.
        let Ok(loaded) = self.host.load_many(&ids) else {
            return;
        };
        for stored in loaded {
            let _ = self.materialise(stored);
        }
        for (pin, id) in pinned.iter() {
            if let Some(h) = self.graph.handle_by_id(*id)
                && let Some(index) = h.checked_sub(self.graph.base)
            {
                self.graph.pin(*pin, index as usize);
            }
        }
    }

    /// A fresh run (empty graph, no walks) over an already loaded program.
    pub fn with_program(
        host: &'h mut dyn Host,
        mut limits: Limits,
        program: &Program,
    ) -> Interp<'h> {
        limits.max_depth = limits.max_depth.min(MAX_DEPTH_CAP);
        let deadline = limits.timeout.map(|d| Instant::now() + d);
        generator::discard_abandoned();
        let p = program.clone();
        // A run nested in another of the same program finds the scratch taken (or
        // borrowed): it starts empty.
        let scratch = p
            .scratch
            .try_borrow_mut()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let mut graph = Graph::default();
        graph.log_edge_adds = host.keeps_commits();
        graph.base = p.next_base.get();
        p.next_base.set(graph.base.saturating_add(RUN_HANDLES));
        let mut it = Interp {
            host,
            graph,
            files: p.files,
            builtins: p.builtins,
            modules: p.modules,
            classes: p.classes,
            builtin_classes: p.builtin_classes,
            module_names: p.module_names,
            walks: Vec::new(),
            top_reports: Vec::new(),
            depth: 0,
            ops: 0,
            polls: 0,
            limits,
            deadline,
            fn_cache: p.fn_cache,
            handling: Vec::new(),
            main_module: p.main_module,
            on_commit: Vec::new(),
            repr_path: Vec::new(),
            replay: None,
            repr_seen: FxHashMap::default(),
            wire_spent: 0,
            compare_depth: 0,
            serving: false,
            durable_commits: 0,
            pinned: p.pinned,
            next_base: p.next_base,
            frame_pool: scratch.frames,
            run_async: false,
            vm_stacks: scratch.stacks,
            scratch: p.scratch,
        };
        it.resolve_pinned();
        it
    }

    /// Leave this run's frame scopes and VM stacks (cleared, and not too large) for the
    /// next run of the program on this thread; a served call ends with it.
    pub fn keep_scratch(&mut self) {
        let Ok(mut scratch) = self.scratch.try_borrow_mut() else {
            return;
        };
        self.vm_stacks.retain(|s| s.worth_keeping());
        scratch.stacks = std::mem::take(&mut self.vm_stacks);
        scratch.frames = std::mem::take(&mut self.frame_pool);
    }

    /// A module-level name of the main module (a walker class, a function, a glob).
    pub fn main_global(&self, name: &str) -> Option<Value> {
        self.main_module
            .as_ref()
            .and_then(|m| m.scope.borrow().vars.get(name).cloned())
    }

    pub fn new(host: &'h mut dyn Host, limits: Limits) -> Interp<'h> {
        let empty = Program {
            files: Rc::default(),
            builtins: Scope::new_ref(None),
            modules: Rc::default(),
            classes: Rc::default(),
            builtin_classes: Rc::default(),
            module_names: Rc::default(),
            fn_cache: Rc::default(),
            main_module: None,
            pinned: Rc::default(),
            next_base: Rc::default(),
            scratch: Rc::default(),
        };
        let mut it = Interp::with_program(host, limits, &empty);
        it.install_builtins();
        it
    }

    // -----------------------------------------------------------------------------------
    // Errors
    // -----------------------------------------------------------------------------------

    /// Raise a builtin exception type with a message.
    pub fn err(&self, exc_type: &str, msg: impl Into<String>) -> Interrupt {
        let class = self
            .builtin_classes
            .get(exc_type)
            .or_else(|| self.builtin_classes.get("Exception"))
            .cloned();
        let msg: String = msg.into();
        let Some(class) = class else {
            return Interrupt::Limit(msg);
        };
        let inst = Rc::new(Instance {
            class,
            fields: Default::default(),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        });
        inst.set_extra(Rc::from("args"), Value::tuple(vec![Value::str(&msg)]));
        self.chain_context(&inst);
        Interrupt::Exc(Box::new(PyErr {
            value: Value::Instance(inst),
            trace: Vec::new(),
            origin: None,
        }))
    }

    /// Like [`Self::err`], with the exception's `args` given (CPython's
    /// `OverflowError(34, 'Numerical result out of range')` has two).
    pub fn err_args(&self, exc_type: &str, args: Vec<Value>) -> Interrupt {
        let e = self.err(exc_type, "");
        if let Interrupt::Exc(p) = &e
            && let Value::Instance(i) = &p.value
        {
            i.set_extra(Rc::from("args"), Value::tuple(args));
        }
        e
    }

    /// Make an exception instance of `class` with `args`.
    pub fn make_exception(&self, class: Rc<Class>, args: Vec<Value>) -> Value {
        let fields = class.fields.iter().map(|_| Value::None).collect::<Vec<_>>();
        let inst = Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(fields),
            extra: Default::default(),
            id: next_id(),
            user_hash: Default::default(),
        });
        inst.set_extra(Rc::from("args"), Value::tuple(args));
        Value::Instance(inst)
    }

    #[inline]
    fn tick(&mut self) -> R<()> {
        if generator::has_abandoned() {
            self.close_abandoned()?;
        }
        self.ops += 1;
        if let Some(max) = self.limits.max_ops
            && self.ops > max
        {
            return Err(Interrupt::Limit(format!(
                "operation budget exceeded ({max} operations)"
            )));
        }
        if self.ops & 1023 == 0 {
            self.check_deadline()?;
            // A run that already stored something finishes: stopping it half-way would
            // leave its first commit without the rest.
            if self.durable_commits == 0
                && let Some(c) = &self.limits.cancel
                && c.load(std::sync::atomic::Ordering::Relaxed)
            {
                return Err(Interrupt::Limit(CANCELLED.into()));
            }
            if let Some(stale) = self.host.take_stale() {
                self.refresh_stale(stale)?;
            }
        }
        Ok(())
    }

    pub fn builtin_class(&self, name: &str) -> Option<Rc<Class>> {
        self.builtin_classes.get(name).cloned()
    }

    pub fn write_stdout(&mut self, text: &str) {
        self.host.write_stdout(text);
    }
}

/// Modules built into svc (there is no Python underneath).
fn builtin_module(name: &str) -> bool {
    matches!(name, "http" | "sv_client")
}

/// The 128-bit id shown for an object or walker instance (`jid`, `_svc_id`): its
/// process-unique counter spread over 128 bits by a bijective mixer, so ids look like
/// anchor ids and never collide within a process.
pub fn instance_id(counter: u64) -> crate::host::AnchorId {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let hi = mix(counter.wrapping_add(0x9e37_79b9_7f4a_7c15));
    let lo = mix(hi ^ counter);
    (u128::from(hi) << 64) | u128::from(lo)
}

/// The deepest svc call stack any host may ask for: deeper would risk the native stack
/// (`driver::INTERPRETER_STACK_BYTES`) even in a debug build.
pub const MAX_DEPTH_CAP: usize = 10_000;

/// Ancestors of a class with these bases in method resolution order (the class itself
/// excluded): CPython's C3 linearization, so with `D(B, C)` over a shared `A` the order is
/// `B, C, A` and `super` in `B` reaches `C`. Bases with no consistent order (CPython's
/// `Cannot create a consistent method resolution order`) fall back to the depth-first
/// order without duplicates.
fn ancestors(bases: &[Rc<Class>]) -> Vec<Rc<Class>> {
    let mut seqs: Vec<Vec<Rc<Class>>> = bases
        .iter()
        .map(|b| {
            std::iter::once(b.clone())
                .chain(b.mro.iter().cloned())
                .collect()
        })
        .collect();
    seqs.push(bases.to_vec());
    let mut out: Vec<Rc<Class>> = Vec::new();
    loop {
        seqs.retain(|s| !s.is_empty());
        if seqs.is_empty() {
            return out;
        }
        let head = seqs
            .iter()
            .map(|s| &s[0])
            .find(|h| !seqs.iter().any(|s| s[1..].iter().any(|c| c.id == h.id)));
        let Some(head) = head.cloned() else {
            return depth_first_ancestors(bases);
        };
        for s in seqs.iter_mut() {
            if s[0].id == head.id {
                s.remove(0);
            }
        }
        out.push(head);
    }
}

fn depth_first_ancestors(bases: &[Rc<Class>]) -> Vec<Rc<Class>> {
    let mut out: Vec<Rc<Class>> = Vec::new();
    for b in bases {
        for c in std::iter::once(b).chain(b.mro.iter()) {
            if !out.iter().any(|x| x.id == c.id) {
                out.push(c.clone());
            }
        }
    }
    out
}

impl Interp<'_> {
    /// The stderr text of an uncaught error: the message, the source excerpt where it
    /// was raised and the svc frames it unwound through (innermost last).
    pub fn render_error(&mut self, e: Interrupt) -> String {
        self.render_error_from(e, "<module>")
    }

    /// `render_error`, naming the outermost frame `outer` (`test "adds"` for an error
    /// raised in a test block's own body).
    pub(crate) fn render_error_from(&mut self, e: Interrupt, outer: &str) -> String {
        let glyph = if self.host.plain_glyphs() { "" } else { "✖ " };
        match e {
            Interrupt::Limit(m) => format!("{glyph}Error: {m}\n"),
            Interrupt::Host(h) => format!("{glyph}Error: {h}\n"),
            Interrupt::Suspend(_) => format!("{glyph}Error: `yield` outside its generator\n"),
            Interrupt::Exc(err) => {
                let mut err = *err;
                err.leave_frame(Rc::from(outer), None);
                let class = self.class_of(&err.value);
                let msg = self.to_str(&err.value).unwrap_or_default();
                let msg = if msg.is_empty() {
                    class.name.to_string()
                } else {
                    msg
                };
                let mut out = format!("{glyph}Error: {msg}\n");
                // Excerpt at the innermost frame: two lines of context each side.
                if let Some(f) = err.trace.first()
                    && let Some(file) = self.files.get(f.file as usize)
                {
                    let (line, col) = file.line_col(f.span.start);
                    let (end_line, end_col) = file.line_col(f.span.end);
                    let width = if end_line == line && end_col > col {
                        end_col - col
                    } else {
                        1
                    };
                    for l in line.saturating_sub(2).max(1)..=line + 2 {
                        if l > line && file.line_text(l).is_empty() && l > file.text.lines().count()
                        {
                            break;
                        }
                        out.push_str(&format!("{l:>5} | {}\n", file.line_text(l)));
                        if l == line {
                            out.push_str(&format!(
                                "      | {}{}\n",
                                " ".repeat(col - 1),
                                "^".repeat(width)
                            ));
                        }
                    }
                }
                for f in &err.trace {
                    let (name, line) = match self.files.get(f.file as usize) {
                        Some(file) => (file.name.clone(), file.line_col(f.span.start).0),
                        None => ("<unknown>".to_string(), 0),
                    };
                    let call = if &*f.func == outer || &*f.func == "<module>" {
                        f.func.to_string()
                    } else {
                        format!("{}()", f.func)
                    };
                    out.push_str(&format!("  at {call} {name}:{line}\n"));
                }
                out
            }
        }
    }
}
