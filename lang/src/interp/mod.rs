//! The tree-walking interpreter: module loading, declarations, statements and calls.
//!
//! Expressions live in `expr.rs`, the graph arena and walker traversal in `graph.rs` and
//! `walk.rs`, printing in `display.rs`, Python builtins in `builtins.rs`. Errors, control
//! flow and resource limits are separate types: `Interrupt` (exceptions and limits, the
//! `Err` side) and `Flow` (break/continue/return/skip/disengage, the `Ok` side).

mod bounds;
pub mod builtins;
mod display;
pub mod events;
mod expr;
pub mod graph;
mod graph_view;
pub mod kvstore;
mod ops;
mod persist;
pub(crate) mod serve_support;
mod storage;
mod sv;
pub mod value;
mod walk;

use crate::ast::{self, ArchKind, Item, Member, StmtKind};
use crate::driver::Limits;
use crate::host::{Host, HostError};
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

/// Why evaluation stopped early: the `Err` side of every evaluation function.
#[derive(Debug)]
pub enum Interrupt {
    /// A catchable svc exception.
    Exc(Box<PyErr>),
    /// A resource limit was hit (operation budget, time budget): not catchable.
    Limit(String),
    /// The host failed (storage error, write conflict): not catchable.
    Host(HostError),
}

pub type R<T> = Result<T, Interrupt>;

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
    pub func: Rc<str>,
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
    fn_cache: FnCache,
    main_module: Option<Rc<ModuleObj>>,
    /// Anchors the load run left in module globals: `(handle, id)`, re-resolved by id
    /// (with the usual access checks) at the start of every later run.
    pinned: Rc<Vec<(Handle, crate::host::AnchorId)>>,
    /// First handle of the next run (each run gets its own range).
    next_base: Rc<std::cell::Cell<u64>>,
}

/// Handles one run may mint (its range in the handle space).
const RUN_HANDLES: u64 = 1 << 32;

/// How many values of the module globals the pinning scan looks at, at most.
const PIN_SCAN_LIMIT: usize = 100_000;

/// Functions made from nested defs and lambdas, by (file, span start); shared by every
/// run of a program on one thread.
type FnCache = Rc<std::cell::RefCell<HashMap<(u32, u32), Rc<FnTemplate>>>>;

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
            fn_cache: self.fn_cache.clone(),
            main_module: self.main_module.clone(),
            pinned,
            next_base: self.next_base.clone(),
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
                    out.insert(*h, self.graph.slot(*h).id);
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
            if let Some(&h) = self.graph.by_id.get(id)
                && let Some(index) = h.checked_sub(self.graph.base)
            {
                self.graph.pinned.insert(*pin, index as usize);
                self.graph.by_id.insert(*id, *pin);
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
        let p = program.clone();
        let mut graph = Graph::default();
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
            repr_seen: FxHashMap::default(),
            wire_spent: 0,
            compare_depth: 0,
            serving: false,
            durable_commits: 0,
            pinned: p.pinned,
            next_base: p.next_base,
        };
        it.resolve_pinned();
        it
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
            fn_cache: Rc::default(),
            main_module: None,
            pinned: Rc::default(),
            next_base: Rc::default(),
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
        });
        inst.set_extra(Rc::from("args"), Value::tuple(vec![Value::str(&msg)]));
        Interrupt::Exc(Box::new(PyErr {
            value: Value::Instance(inst),
            trace: Vec::new(),
            origin: None,
        }))
    }

    /// Make an exception instance of `class` with `args`.
    pub fn make_exception(&self, class: Rc<Class>, args: Vec<Value>) -> Value {
        let fields = class.fields.iter().map(|_| Value::None).collect::<Vec<_>>();
        let inst = Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(fields),
            extra: Default::default(),
            id: next_id(),
        });
        inst.set_extra(Rc::from("args"), Value::tuple(args));
        Value::Instance(inst)
    }

    fn tick(&mut self) -> R<()> {
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

    // -----------------------------------------------------------------------------------
    // Modules
    // -----------------------------------------------------------------------------------

    /// Register a source file and return its id.
    pub fn add_file(&mut self, file: Arc<SourceFile>) -> u32 {
        Rc::make_mut(&mut self.files).push(file);
        (self.files.len() - 1) as u32
    }

    /// Load and run a parsed module as the main module (`with entry:__main__` runs).
    pub fn run_main(&mut self, path: &Path, module: &ast::Module, file: u32) -> R<()> {
        self.run_entry_module(path, module, file, true)
    }

    /// Load and run the entry module; `as_main` decides whether its
    /// `with entry:__main__` blocks run (`svc run`: yes; `svc start`: only with `--main`).
    pub fn run_entry_module(
        &mut self,
        path: &Path,
        module: &ast::Module,
        file: u32,
        as_main: bool,
    ) -> R<()> {
        let m = self.exec_module(path, module, file, as_main)?;
        self.main_module = Some(m);
        Ok(())
    }

    fn module_name(path: &Path) -> Rc<str> {
        Rc::from(path.file_stem().and_then(|s| s.to_str()).unwrap_or("main"))
    }

    /// Declare everything in `module`, then run its globs and entry blocks in order.
    fn exec_module(
        &mut self,
        path: &Path,
        module: &ast::Module,
        file: u32,
        is_main: bool,
    ) -> R<Rc<ModuleObj>> {
        let scope = Scope::new_ref(Some(self.builtins.clone()));
        let name = Self::module_name(path);
        let m = Rc::new(ModuleObj {
            name: name.clone(),
            scope: scope.clone(),
        });
        if let Ok(canon) = path.canonicalize() {
            Rc::make_mut(&mut self.modules).insert(canon, m.clone());
        }
        let ctx = Ctx {
            scope: scope.clone(),
            this: None,
            here: None,
            visitor: None,
            class: None,
            file,
            func: Rc::from("<module>"),
        };
        // Pass 1: imports and declarations (classes, functions, impls).
        self.declare_items(&module.items, &ctx, path, &name)?;
        // Pass 2: globs and entry blocks in file order.
        for item in &module.items {
            match item {
                Item::Glob(g) => self.exec_glob(g, &ctx)?,
                Item::Entry(e) if !e.is_exit => {
                    let runs = match &e.name {
                        None => true,
                        Some(n) => is_main && &*n.name == "__main__",
                    };
                    if runs {
                        match self.exec_block(&e.body, &ctx)? {
                            Flow::Normal | Flow::Return(_) => {}
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for item in &module.items {
            if let Item::Entry(e) = item
                && e.is_exit
            {
                self.exec_block(&e.body, &ctx)?;
            }
        }
        Ok(m)
    }

    fn declare_items(&mut self, items: &[Item], ctx: &Ctx, path: &Path, module: &Rc<str>) -> R<()> {
        // Archetypes first (in dependency order), then enums, functions, impls.
        let mut arch_decls: Vec<&ast::Archetype> = Vec::new();
        for item in items {
            match item {
                Item::Import(imp) => self.exec_import(imp, ctx, path)?,
                Item::Archetype(a) => arch_decls.push(a),
                _ => {}
            }
        }
        for item in items {
            if let Item::Enum(e) = item {
                self.declare_enum(e, ctx, module)?;
            }
        }
        let mut defined: HashMap<&str, bool> = HashMap::new();
        for a in &arch_decls {
            self.declare_arch_ordered(a, &arch_decls, &mut defined, ctx, module)?;
        }
        for item in items {
            if let Item::Ability(ab) = item {
                let f = self.make_function_from_ability(ab, ctx, None);
                if let Some(n) = &ab.name {
                    scope_define(&ctx.scope, n.name.clone(), Value::Func(f));
                }
            }
        }
        for item in items {
            if let Item::Impl(imp) = item {
                self.apply_impl(imp, ctx)?;
            }
        }
        Ok(())
    }

    fn declare_arch_ordered<'a>(
        &mut self,
        a: &'a ast::Archetype,
        all: &[&'a ast::Archetype],
        defined: &mut HashMap<&'a str, bool>,
        ctx: &Ctx,
        module: &Rc<str>,
    ) -> R<()> {
        let name: &str = &a.name.name;
        if defined.contains_key(name) {
            return Ok(());
        }
        defined.insert(name, true);
        for b in &a.bases {
            if let ast::ExprKind::Name(bn) = &b.kind
                && let Some(dep) = all.iter().find(|d| *d.name.name == **bn)
            {
                self.declare_arch_ordered(dep, all, defined, ctx, module)?;
            }
        }
        let class = self.declare_archetype(a, ctx, module)?;
        scope_define(&ctx.scope, a.name.name.clone(), Value::Class(class));
        Ok(())
    }

    fn exec_import(&mut self, imp: &ast::Import, ctx: &Ctx, path: &Path) -> R<()> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let resolve = |mp: &ast::ModPath| -> PathBuf {
            let mut p = dir.clone();
            for _ in 1..mp.dots {
                p.push("..");
            }
            for (i, part) in mp.parts.iter().enumerate() {
                if i + 1 == mp.parts.len() {
                    p.push(format!("{}.svc", part.name));
                } else {
                    p.push(&*part.name);
                }
            }
            p
        };
        if let Some(from) = &imp.from
            && imp.remote
        {
            return self.exec_sv_import(imp, from, &resolve(from), &ctx.scope);
        }
        if let Some(from) = &imp.from {
            let first = from.parts.first().map(|n| &*n.name).unwrap_or("");
            let dotted: Vec<&str> = from.parts.iter().map(|p| &*p.name).collect();
            let dotted = dotted.join(".");
            // The event built-ins under the original's module paths; a local
            // `events.svc` still wins over the short `events`.
            if from.dots == 0
                && events::EVENT_MODULES.contains(&dotted.as_str())
                && (dotted != "events" || self.host.read_module(&resolve(from)).is_none())
            {
                for item in &imp.items {
                    let v = self.event_module_member(&dotted, &item.name.name)?;
                    let bind = item.alias.as_ref().unwrap_or(&item.name);
                    scope_define(&ctx.scope, bind.name.clone(), v);
                }
                return Ok(());
            }
            if from.dots == 0 && from.parts.len() == 1 && builtin_module(first) {
                for item in &imp.items {
                    let v = self.builtin_module_member(first, &item.name.name)?;
                    let bind = item.alias.as_ref().unwrap_or(&item.name);
                    scope_define(&ctx.scope, bind.name.clone(), v);
                }
                return Ok(());
            }
            let m = self.load_module(&resolve(from), from)?;
            for item in &imp.items {
                let v = scope_get(&m.scope, &item.name.name).ok_or_else(|| {
                    self.err(
                        "ImportError",
                        format!("cannot import name '{}' from '{}'", item.name.name, m.name),
                    )
                })?;
                let bind = item.alias.as_ref().unwrap_or(&item.name);
                scope_define(&ctx.scope, bind.name.clone(), v);
            }
        } else {
            for (mp, alias) in &imp.modules {
                let first = mp.parts.first().map(|n| &*n.name).unwrap_or("");
                let m = if mp.parts.len() == 1 && builtin_module(first) {
                    self.builtin_module(first)
                } else {
                    self.load_module(&resolve(mp), mp)?
                };
                if imp.kind == ast::ImportKind::Include {
                    let vars: Vec<(Rc<str>, Value)> = m
                        .scope
                        .borrow()
                        .vars
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    for (k, v) in vars {
                        scope_define(&ctx.scope, k, v);
                    }
                    continue;
                }
                let bind = alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| {
                    mp.parts
                        .first()
                        .map(|n| n.name.clone())
                        .unwrap_or_else(|| Rc::from("_"))
                });
                scope_define(&ctx.scope, bind, Value::Module(m));
            }
        }
        Ok(())
    }

    fn load_module(&mut self, file_path: &Path, mp: &ast::ModPath) -> R<Rc<ModuleObj>> {
        if let Ok(canon) = file_path.canonicalize()
            && let Some(m) = self.modules.get(&canon)
        {
            return Ok(m.clone());
        }
        let dotted: Vec<&str> = mp.parts.iter().map(|p| &*p.name).collect();
        let Some(text) = self.host.read_module(file_path) else {
            return Err(self.err(
                "ModuleNotFoundError",
                format!("No module named '{}'", dotted.join(".")),
            ));
        };
        let parsed = crate::parser::parse(&text);
        let sf = SourceFile::new(file_path.display().to_string(), text);
        if let Some(d) = parsed.diagnostics.iter().find(|d| d.is_error()) {
            let rendered = d.render(&sf);
            return Err(self.err("SyntaxError", rendered.trim_end().to_string()));
        }
        let file = self.add_file(sf);
        self.exec_module(file_path, &parsed.module, file, false)
    }

    // -----------------------------------------------------------------------------------
    // Declarations
    // -----------------------------------------------------------------------------------

    fn eval_bases(&mut self, bases: &[ast::Expr], ctx: &Ctx) -> R<Vec<Rc<Class>>> {
        let mut out = Vec::new();
        for b in bases {
            match self.eval(b, ctx)? {
                Value::Class(c) => out.push(c),
                other => {
                    let t = self.type_name_of(&other);
                    return Err(self.err(
                        "TypeError",
                        format!("base must be an archetype or class, not '{t}'"),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn declare_archetype(
        &mut self,
        a: &ast::Archetype,
        ctx: &Ctx,
        module: &Rc<str>,
    ) -> R<Rc<Class>> {
        let mut bases = self.eval_bases(&a.bases, ctx)?;
        let is_exc = bases.iter().any(|b| b.is_exception());
        let kind = if is_exc && matches!(a.kind, ArchKind::Class | ArchKind::Obj) {
            ClassKind::Arch(ArchKind::Obj)
        } else {
            ClassKind::Arch(a.kind)
        };
        // Fields: inherited first.
        let mut fields: Vec<FieldDef> = Vec::new();
        for b in &bases {
            for f in &b.fields {
                if let Some(pos) = fields.iter().position(|x| x.name == f.name) {
                    fields.remove(pos);
                }
                fields.push(FieldDef {
                    name: f.name.clone(),
                    ty: f.ty.clone(),
                    default: f.default.clone(),
                    postinit: f.postinit,
                    is_static: f.is_static,
                    access: f.access,
                });
            }
        }
        let mut statics: Vec<(Rc<str>, Option<Rc<ast::Expr>>)> = Vec::new();
        for m in &a.members {
            if let Member::Has(h) = m {
                for v in &h.vars {
                    if h.is_static {
                        statics.push((v.name.name.clone(), v.default.clone().map(Rc::new)));
                        continue;
                    }
                    let def = FieldDef {
                        name: v.name.name.clone(),
                        ty: Some(Rc::new(v.ty.clone())),
                        default: v.default.clone().map(Rc::new),
                        postinit: v.postinit,
                        is_static: false,
                        access: h.access,
                    };
                    if let Some(pos) = fields.iter().position(|x| x.name == def.name) {
                        fields[pos] = def;
                    } else {
                        fields.push(def);
                    }
                }
            }
        }
        let mut field_index = FxHashMap::default();
        for (i, f) in fields.iter().enumerate() {
            field_index.insert(f.name.clone(), i);
        }
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = FxHasher::default();
            for f in &fields {
                f.name.hash(&mut h);
            }
            format!("{:016x}", h.finish())
        };
        let mro = ancestors(&bases);
        let class = Rc::new(Class {
            name: a.name.name.clone(),
            kind,
            module: module.clone(),
            bases: std::mem::take(&mut bases),
            mro,
            fields,
            field_index,
            methods: Default::default(),
            abilities: Default::default(),
            statics: Default::default(),
            members: Default::default(),
            access: a.access,
            decorators: a.decorators.iter().map(|d| Rc::new(d.clone())).collect(),
            endpoints: a
                .endpoints
                .as_ref()
                .map(|(s, t)| (Rc::new(s.clone()), Rc::new(t.clone()))),
            id: next_id(),
            scope: std::cell::RefCell::new(Some(ctx.scope.clone())),
            stored: StoredNames::new(module, &a.name.name, &fingerprint),
            span: a.name.span,
            file: ctx.file,
        });
        // Inherited abilities first, in slot order.
        let mut abilities: Vec<Rc<AbilityDef>> = Vec::new();
        for b in &class.bases {
            for ab in b.abilities.borrow().iter() {
                if let Some(n) = &ab.name
                    && let Some(pos) = abilities.iter().position(|x| x.name.as_ref() == Some(n))
                {
                    abilities[pos] = ab.clone();
                    continue;
                }
                abilities.push(ab.clone());
            }
        }
        for m in &a.members {
            match m {
                Member::Ability(ab) => {
                    let f = self.make_function_from_ability(ab, ctx, Some(&class));
                    if ab.kind == ast::AbilityKind::Can || ab.event.is_some() {
                        let ev = ab.event.as_ref();
                        let def = Rc::new(AbilityDef {
                            name: ab.name.as_ref().map(|n| n.name.clone()),
                            trigger: ev.and_then(|e| e.trigger.clone()).map(Rc::new),
                            resolved: Default::default(),
                            is_exit: ev.is_some_and(|e| e.is_exit),
                            func: f.clone(),
                        });
                        if let Some(n) = &def.name
                            && let Some(pos) =
                                abilities.iter().position(|x| x.name.as_ref() == Some(n))
                        {
                            abilities[pos] = def;
                        } else {
                            abilities.push(def);
                        }
                        if let Some(n) = &ab.name {
                            class.methods.borrow_mut().insert(n.name.clone(), f);
                        }
                    } else if let Some(n) = &ab.name {
                        class.methods.borrow_mut().insert(n.name.clone(), f);
                    }
                }
                Member::Archetype(inner) => {
                    let c = self.declare_archetype(inner, ctx, module)?;
                    class
                        .statics
                        .borrow_mut()
                        .insert(inner.name.name.clone(), Value::Class(c));
                }
                Member::Enum(e) => {
                    let c = self.declare_enum(e, ctx, module)?;
                    class
                        .statics
                        .borrow_mut()
                        .insert(e.name.name.clone(), Value::Class(c));
                }
                Member::Impl(imp) => self.apply_impl(imp, ctx)?,
                _ => {}
            }
        }
        *class.abilities.borrow_mut() = abilities;
        for (name, default) in statics {
            let v = match default {
                Some(e) => self.eval(&e, ctx)?,
                None => Value::None,
            };
            class.statics.borrow_mut().insert(name, v);
        }
        if class.arch_kind().is_some() {
            Rc::make_mut(&mut self.classes).insert(class.name.clone(), class.clone());
        }
        Ok(class)
    }

    fn declare_enum(&mut self, e: &ast::EnumDecl, ctx: &Ctx, module: &Rc<str>) -> R<Rc<Class>> {
        let class = Rc::new(Class {
            name: e.name.name.clone(),
            kind: ClassKind::Enum,
            module: module.clone(),
            bases: Vec::new(),
            mro: Vec::new(),
            fields: Vec::new(),
            field_index: Default::default(),
            methods: Default::default(),
            abilities: Default::default(),
            statics: Default::default(),
            members: Default::default(),
            access: e.access,
            decorators: Vec::new(),
            endpoints: None,
            id: next_id(),
            scope: std::cell::RefCell::new(Some(ctx.scope.clone())),
            stored: StoredNames::new(module, &e.name.name, ""),
            span: e.name.span,
            file: ctx.file,
        });
        let mut auto = 1i64;
        for m in &e.members {
            let v = match &m.value {
                Some(x) => self.eval(x, ctx)?,
                None => Value::Int(auto),
            };
            if let Value::Int(i) = v {
                auto = i + 1;
            }
            let member = Rc::new(EnumMember {
                class: class.clone(),
                name: m.name.name.clone(),
                value: v,
            });
            class.members.borrow_mut().push(member.clone());
            class
                .statics
                .borrow_mut()
                .insert(m.name.name.clone(), Value::EnumMember(member));
        }
        for x in &e.extra {
            if let Member::Ability(ab) = x {
                let f = self.make_function_from_ability(ab, ctx, Some(&class));
                if let Some(n) = &ab.name {
                    class.methods.borrow_mut().insert(n.name.clone(), f);
                }
            }
        }
        scope_define(&ctx.scope, e.name.name.clone(), Value::Class(class.clone()));
        Rc::make_mut(&mut self.classes).insert(class.name.clone(), class.clone());
        Ok(class)
    }

    fn make_function_from_ability(
        &mut self,
        ab: &ast::Ability,
        ctx: &Ctx,
        owner: Option<&Rc<Class>>,
    ) -> Rc<Function> {
        let params = ab
            .signature
            .as_ref()
            .map(|s| {
                s.params
                    .iter()
                    .map(|p| ParamDef {
                        name: p.name.name.clone(),
                        kind: p.kind,
                        default: p.default.clone().map(Rc::new),
                        ty: p.ty.clone().map(Rc::new),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let name: Rc<str> = ab.name.as_ref().map(|n| n.name.clone()).unwrap_or_else(|| {
            Rc::from(if ab.event.as_ref().is_some_and(|e| e.is_exit) {
                "<exit>"
            } else {
                "<entry>"
            })
        });
        let body = match &ab.body {
            Some(b) => FuncBody::Block(Rc::from(b.as_slice())),
            None => FuncBody::Missing,
        };
        Rc::new(Function {
            name,
            params,
            body: std::cell::RefCell::new(body),
            closure: ctx.scope.clone(),
            owner: std::cell::RefCell::new(owner.map(Rc::downgrade)),
            is_static: ab.is_static,
            is_lambda: false,
            captured: None,
            defaults: Default::default(),
            decorators: ab.decorators.iter().map(|d| Rc::new(d.clone())).collect(),
            access: ab.access,
            ret: ab
                .signature
                .as_ref()
                .and_then(|s| s.ret.clone())
                .map(Rc::new),
            file: ctx.file,
            span: ab.span,
        })
    }

    /// `impl Target.member { body }`: fill in a declared member's body.
    fn apply_impl(&mut self, imp: &ast::ImplBlock, ctx: &Ctx) -> R<()> {
        let body = FuncBody::Block(Rc::from(imp.body.as_slice()));
        let names: Vec<&str> = imp.target.iter().map(|n| &*n.name).collect();
        let Some((first, rest)) = names.split_first() else {
            return Ok(());
        };
        let target = scope_get(&ctx.scope, first);
        if rest.is_empty() {
            // impl f(x: int) -> int { } : body of a top-level function.
            if let Some(Value::Func(f)) = target {
                *f.body.borrow_mut() = body;
                return Ok(());
            }
            let span = imp.target.first().map(|n| n.span).unwrap_or(imp.span);
            let _ = span;
            return Err(self.err(
                "NameError",
                format!("impl target '{first}' is not declared"),
            ));
        }
        let mut class = match target {
            Some(Value::Class(c)) => c,
            _ => {
                return Err(self.err(
                    "NameError",
                    format!("impl target '{first}' is not declared"),
                ));
            }
        };
        for (i, n) in rest.iter().enumerate() {
            if i + 1 < rest.len() {
                match class.find_static(n) {
                    Some(Value::Class(c)) => class = c,
                    _ => {
                        return Err(self.err(
                            "NameError",
                            format!("impl target '{}' is not declared", names.join(".")),
                        ));
                    }
                }
                continue;
            }
            let f = class.methods.borrow().get(*n).cloned();
            match f {
                Some(f) => *f.body.borrow_mut() = FuncBody::Block(Rc::from(imp.body.as_slice())),
                None => {
                    // Anonymous or undeclared: declare it as a method now.
                    let ability = ast::Ability {
                        kind: match &imp.kind {
                            ast::ImplKind::Event(_) => ast::AbilityKind::Can,
                            _ => ast::AbilityKind::Def,
                        },
                        decorators: Vec::new(),
                        is_override: false,
                        is_static: false,
                        is_async: false,
                        access: None,
                        name: Some(ast::Name {
                            name: Rc::from(*n),
                            span: imp.span,
                        }),
                        signature: match &imp.kind {
                            ast::ImplKind::Signature(s) => s.clone(),
                            _ => None,
                        },
                        event: match &imp.kind {
                            ast::ImplKind::Event(e) => Some(e.clone()),
                            _ => None,
                        },
                        body: Some(imp.body.clone()),
                        is_abstract: false,
                        doc: None,
                        span: imp.span,
                    };
                    let f = self.make_function_from_ability(&ability, ctx, Some(&class));
                    if let Some(ev) = &ability.event {
                        class.abilities.borrow_mut().push(Rc::new(AbilityDef {
                            name: Some(Rc::from(*n)),
                            trigger: ev.trigger.clone().map(Rc::new),
                            resolved: Default::default(),
                            is_exit: ev.is_exit,
                            func: f.clone(),
                        }));
                    }
                    class.methods.borrow_mut().insert(Rc::from(*n), f);
                }
            }
        }
        Ok(())
    }

    fn exec_glob(&mut self, g: &ast::Glob, ctx: &Ctx) -> R<()> {
        for v in &g.vars {
            let val = match &v.value {
                Some(e) => self.eval(e, ctx)?,
                None => Value::None,
            };
            scope_define(&ctx.scope, v.name.name.clone(), val);
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Statements
    // -----------------------------------------------------------------------------------

    pub fn exec_block(&mut self, stmts: &[ast::Stmt], ctx: &Ctx) -> R<Flow> {
        for s in stmts {
            match self.exec_stmt(s, ctx)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn exec_stmt(&mut self, s: &ast::Stmt, ctx: &Ctx) -> R<Flow> {
        self.tick()?;
        let r = self.exec_stmt_inner(s, ctx);
        match r {
            Err(Interrupt::Exc(mut e)) => {
                if e.origin.is_none() {
                    e.origin = Some((ctx.file, s.span));
                }
                Err(Interrupt::Exc(e))
            }
            other => other,
        }
    }

    fn exec_stmt_inner(&mut self, s: &ast::Stmt, ctx: &Ctx) -> R<Flow> {
        match &s.kind {
            StmtKind::Empty | StmtKind::Error => Ok(Flow::Normal),
            StmtKind::Expr(e) => {
                self.eval(e, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::Assign { targets, ty, value } => {
                let v = self.eval(value, ctx)?;
                if ty.is_some()
                    && targets.len() == 1
                    && let ast::ExprKind::Name(n) = &targets[0].kind
                {
                    scope_define(&ctx.scope, n.clone(), v);
                    return Ok(Flow::Normal);
                }
                for t in targets {
                    self.assign(t, v.clone(), ctx)?;
                }
                Ok(Flow::Normal)
            }
            StmtKind::Declare { target, .. } => {
                if let ast::ExprKind::Name(n) = &target.kind {
                    let _ = n;
                }
                Ok(Flow::Normal)
            }
            StmtKind::AugAssign { target, op, value } => {
                self.aug_assign(target, *op, value, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let c = self.eval(cond, ctx)?;
                if self.truthy(&c)? {
                    return self.exec_block(body, ctx);
                }
                for (c, b) in elifs {
                    let v = self.eval(c, ctx)?;
                    if self.truthy(&v)? {
                        return self.exec_block(b, ctx);
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::While { cond, body, orelse } => {
                loop {
                    self.poll()?;
                    let c = self.eval(cond, ctx)?;
                    if !self.truthy(&c)? {
                        break;
                    }
                    match self.exec_block(body, ctx)? {
                        Flow::Break => return Ok(Flow::Normal),
                        Flow::Continue | Flow::Normal => {}
                        other => return Ok(other),
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Forever { body } => loop {
                self.poll()?;
                match self.exec_block(body, ctx)? {
                    Flow::Break => return Ok(Flow::Normal),
                    Flow::Continue | Flow::Normal => {}
                    other => return Ok(other),
                }
            },
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let it = self.eval(iter, ctx)?;
                // Fast path for ranges: no materialisation.
                if let Value::Range(start, stop, step) = it {
                    let mut i = start;
                    while (step > 0 && i < stop) || (step < 0 && i > stop) {
                        self.poll()?;
                        self.assign(target, Value::Int(i), ctx)?;
                        match self.exec_block(body, ctx)? {
                            Flow::Break => return Ok(Flow::Normal),
                            Flow::Continue | Flow::Normal => {}
                            other => return Ok(other),
                        }
                        match i.checked_add(step) {
                            Some(n) => i = n,
                            None => break,
                        }
                    }
                } else {
                    let items = self.iterate(&it)?;
                    for item in items {
                        self.poll()?;
                        self.assign(target, item, ctx)?;
                        match self.exec_block(body, ctx)? {
                            Flow::Break => return Ok(Flow::Normal),
                            Flow::Continue | Flow::Normal => {}
                            other => return Ok(other),
                        }
                    }
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                self.exec_stmt(init, ctx)?;
                loop {
                    self.poll()?;
                    let c = self.eval(cond, ctx)?;
                    if !self.truthy(&c)? {
                        break;
                    }
                    match self.exec_block(body, ctx)? {
                        Flow::Break => return Ok(Flow::Normal),
                        Flow::Continue | Flow::Normal => {}
                        other => return Ok(other),
                    }
                    self.exec_stmt(step, ctx)?;
                }
                if let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => self.exec_try(body, handlers, orelse.as_deref(), finally.as_deref(), ctx),
            StmtKind::Match { subject, cases } => self.exec_match(subject, cases, ctx),
            StmtKind::Return(v) => {
                let v = match v {
                    Some(e) => self.eval(e, ctx)?,
                    None => Value::None,
                };
                Ok(Flow::Return(v))
            }
            StmtKind::Raise { exc, cause } => {
                let Some(e) = exc else {
                    return match self.handling.last() {
                        Some(v) => Err(Interrupt::Exc(Box::new(PyErr {
                            value: v.clone(),
                            trace: Vec::new(),
                            origin: None,
                        }))),
                        None => Err(self.err("RuntimeError", "No active exception to reraise")),
                    };
                };
                let v = self.eval(e, ctx)?;
                let v = self.exception_from(v)?;
                if let Some(c) = cause {
                    let cv = self.eval(c, ctx)?;
                    if let Value::Instance(i) = &v {
                        i.set_extra(Rc::from("__cause__"), cv);
                    }
                }
                Err(Interrupt::Exc(Box::new(PyErr {
                    value: v,
                    trace: Vec::new(),
                    origin: None,
                })))
            }
            StmtKind::Assert { cond, msg } => {
                let c = self.eval(cond, ctx)?;
                if self.truthy(&c)? {
                    return Ok(Flow::Normal);
                }
                let args = match msg {
                    Some(m) => vec![self.eval(m, ctx)?],
                    None => vec![],
                };
                let class = self
                    .builtin_class("AssertionError")
                    .ok_or_else(|| Interrupt::Limit("AssertionError class missing".into()))?;
                let v = self.make_exception(class, args);
                Err(Interrupt::Exc(Box::new(PyErr {
                    value: v,
                    trace: Vec::new(),
                    origin: None,
                })))
            }
            StmtKind::Delete(target) => {
                self.delete(target, ctx)?;
                Ok(Flow::Normal)
            }
            StmtKind::Break => Ok(Flow::Break),
            StmtKind::Continue => Ok(Flow::Continue),
            StmtKind::Skip => Ok(Flow::Skip),
            StmtKind::Disengage => {
                if let Some(w) = self.walks.last_mut() {
                    w.disengaged = true;
                }
                Ok(Flow::Disengage)
            }
            StmtKind::Visit {
                index,
                target,
                orelse,
            } => {
                let queued = self.exec_visit(index.as_ref(), target, ctx)?;
                if !queued && let Some(b) = orelse {
                    return self.exec_block(b, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Report(e) => {
                let v = self.eval(e, ctx)?;
                self.report(v)?;
                Ok(Flow::Normal)
            }
            StmtKind::TypedContext { ty, body } => {
                let t = self.eval(ty, ctx)?;
                let subject = if matches!(ctx.this, Some(Value::Instance(ref i)) if i.class.is_walker())
                {
                    ctx.here.clone()
                } else {
                    ctx.visitor.clone().or_else(|| ctx.here.clone())
                };
                let Some(subject) = subject else {
                    return Ok(Flow::Normal);
                };
                if self.isinstance(&subject, &t)? {
                    return self.exec_block(body, ctx);
                }
                Ok(Flow::Normal)
            }
            StmtKind::Item(item) => {
                self.exec_nested_item(item, ctx)?;
                Ok(Flow::Normal)
            }
        }
    }

    fn exec_nested_item(&mut self, item: &Item, ctx: &Ctx) -> R<()> {
        match item {
            Item::Ability(ab) => {
                let key = (ctx.file, ab.span.start);
                let f = self.closure_from_ability(key, ab, ctx);
                if let Some(n) = &ab.name {
                    scope_define(&ctx.scope, n.name.clone(), Value::Func(f));
                }
            }
            Item::Glob(g) => {
                for v in &g.vars {
                    let val = match &v.value {
                        Some(e) => self.eval(e, ctx)?,
                        None => Value::None,
                    };
                    // A glob inside a block binds at module level.
                    let mut s = ctx.scope.clone();
                    loop {
                        let p = s.borrow().parent.clone();
                        match p {
                            Some(p) if !Rc::ptr_eq(&p, &self.builtins) => s = p,
                            _ => break,
                        }
                    }
                    scope_define(&s, v.name.name.clone(), val);
                }
            }
            Item::Archetype(a) => {
                let module = Rc::from("__main__");
                let c = self.declare_archetype(a, ctx, &module)?;
                scope_define(&ctx.scope, a.name.name.clone(), Value::Class(c));
            }
            Item::Enum(e) => {
                let module = Rc::from("__main__");
                self.declare_enum(e, ctx, &module)?;
            }
            Item::Import(imp) => {
                let path = self
                    .files
                    .get(ctx.file as usize)
                    .map(|f| PathBuf::from(&f.name))
                    .unwrap_or_default();
                self.exec_import(imp, ctx, &path)?;
            }
            Item::Impl(imp) => self.apply_impl(imp, ctx)?,
            Item::Entry(e) => {
                self.exec_block(&e.body, ctx)?;
            }
            Item::Test(_) => {}
        }
        Ok(())
    }

    fn closure_from_ability(
        &mut self,
        key: (u32, u32),
        ab: &ast::Ability,
        ctx: &Ctx,
    ) -> Rc<Function> {
        let cached = self.fn_cache.borrow().get(&key).cloned();
        let t = match cached {
            Some(t) => t.clone(),
            None => {
                let t = Rc::new(FnTemplate {
                    name: ab
                        .name
                        .as_ref()
                        .map(|n| n.name.clone())
                        .unwrap_or_else(|| Rc::from("<fn>")),
                    params: ab
                        .signature
                        .as_ref()
                        .map(|s| {
                            s.params
                                .iter()
                                .map(|p| {
                                    (
                                        p.name.name.clone(),
                                        p.kind,
                                        p.default.clone().map(Rc::new),
                                        p.ty.clone().map(Rc::new),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    body: Rc::from(ab.body.clone().unwrap_or_default().as_slice()),
                    ret: ab
                        .signature
                        .as_ref()
                        .and_then(|s| s.ret.clone())
                        .map(Rc::new),
                    span: ab.span,
                });
                self.fn_cache.borrow_mut().insert(key, t.clone());
                t
            }
        };
        self.function_from_template(&t, ctx, false)
    }

    fn function_from_template(&self, t: &FnTemplate, ctx: &Ctx, is_lambda: bool) -> Rc<Function> {
        Rc::new(Function {
            name: t.name.clone(),
            params: t
                .params
                .iter()
                .map(|(n, k, d, ty)| ParamDef {
                    name: n.clone(),
                    kind: *k,
                    default: d.clone(),
                    ty: ty.clone(),
                })
                .collect(),
            body: std::cell::RefCell::new(FuncBody::Block(t.body.clone())),
            closure: ctx.scope.clone(),
            owner: std::cell::RefCell::new(ctx.class.as_ref().map(Rc::downgrade)),
            is_static: false,
            is_lambda,
            captured: Some((ctx.this.clone(), ctx.here.clone(), ctx.visitor.clone())),
            defaults: Default::default(),
            decorators: Vec::new(),
            access: None,
            ret: t.ret.clone(),
            file: ctx.file,
            span: t.span,
        })
    }

    /// The function value of a lambda expression.
    pub(crate) fn make_lambda(
        &mut self,
        e: &ast::Expr,
        params: &[ast::Param],
        ret: Option<&ast::Expr>,
        body: &[ast::Stmt],
        ctx: &Ctx,
    ) -> Value {
        let key = (ctx.file, e.span.start);
        let cached = self.fn_cache.borrow().get(&key).cloned();
        let t = match cached {
            Some(t) => t.clone(),
            None => {
                let t = Rc::new(FnTemplate {
                    name: Rc::from("<lambda>"),
                    params: params
                        .iter()
                        .map(|p| {
                            (
                                p.name.name.clone(),
                                p.kind,
                                p.default.clone().map(Rc::new),
                                p.ty.clone().map(Rc::new),
                            )
                        })
                        .collect(),
                    body: Rc::from(body),
                    ret: ret.cloned().map(Rc::new),
                    span: e.span,
                });
                self.fn_cache.borrow_mut().insert(key, t.clone());
                t
            }
        };
        // Lambdas see `self`/`here` of their defining frame through a closure scope.
        Value::Func(self.function_from_template(&t, ctx, true))
    }

    fn exec_try(
        &mut self,
        body: &[ast::Stmt],
        handlers: &[ast::ExceptHandler],
        orelse: Option<&[ast::Stmt]>,
        finally: Option<&[ast::Stmt]>,
        ctx: &Ctx,
    ) -> R<Flow> {
        let result = self.exec_block(body, ctx);
        let result = match result {
            Err(Interrupt::Exc(err)) => {
                let mut handled = None;
                for h in handlers {
                    let matches = match &h.ty {
                        None => true,
                        Some(t) => {
                            let tv = self.eval(t, ctx)?;
                            self.exc_matches(&err.value, &tv)?
                        }
                    };
                    if matches {
                        if let Some(n) = &h.name {
                            scope_set(&ctx.scope, &n.name, err.value.clone());
                        }
                        self.handling.push(err.value.clone());
                        let r = self.exec_block(&h.body, ctx);
                        self.handling.pop();
                        handled = Some(r);
                        break;
                    }
                }
                match handled {
                    Some(r) => r,
                    None => Err(Interrupt::Exc(err)),
                }
            }
            Ok(Flow::Normal) => match orelse {
                Some(b) => self.exec_block(b, ctx),
                None => Ok(Flow::Normal),
            },
            other => other,
        };
        if let Some(f) = finally {
            match self.exec_block(f, ctx)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        result
    }

    fn exc_matches(&mut self, exc: &Value, ty: &Value) -> R<bool> {
        match ty {
            Value::Tuple(items) => {
                for t in items.iter() {
                    if self.exc_matches(exc, t)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::Class(c) => Ok(self.class_of(exc).is_sub(c)),
            _ => Err(self.err(
                "TypeError",
                "catching classes that do not inherit from BaseException is not allowed",
            )),
        }
    }

    /// `raise X` accepts a class (instantiated with no args) or an instance.
    fn exception_from(&mut self, v: Value) -> R<Value> {
        match &v {
            Value::Class(c) if c.is_exception() => self.call_value(&v, vec![], vec![]),
            Value::Instance(i) if i.class.is_exception() => Ok(v),
            _ => Err(self.err("TypeError", "exceptions must derive from BaseException")),
        }
    }

    fn exec_match(&mut self, subject: &ast::Expr, cases: &[ast::MatchCase], ctx: &Ctx) -> R<Flow> {
        let v = self.eval(subject, ctx)?;
        for c in cases {
            if self.match_pattern(&c.pattern, &v, ctx)? {
                if let Some(g) = &c.guard {
                    let gv = self.eval(g, ctx)?;
                    if !self.truthy(&gv)? {
                        continue;
                    }
                }
                return self.exec_block(&c.body, ctx);
            }
        }
        Ok(Flow::Normal)
    }

    fn match_pattern(&mut self, p: &ast::Expr, v: &Value, ctx: &Ctx) -> R<bool> {
        use ast::ExprKind as E;
        match &p.kind {
            E::Name(n) if &**n == "_" => Ok(true),
            E::Name(n) => {
                scope_set(&ctx.scope, n, v.clone());
                Ok(true)
            }
            E::BoolOp { .. }
            | E::Binary {
                op: ast::BinOp::BitOr,
                ..
            } => {
                if let E::Binary { left, right, .. } = &p.kind {
                    return Ok(
                        self.match_pattern(left, v, ctx)? || self.match_pattern(right, v, ctx)?
                    );
                }
                let pv = self.eval(p, ctx)?;
                self.py_eq(&pv, v)
            }
            E::List(items) | E::Tuple(items) => {
                let Ok(vals) = self.iterate(v) else {
                    return Ok(false);
                };
                if matches!(v, Value::Str(_)) {
                    return Ok(false);
                }
                if vals.len() != items.len() {
                    return Ok(false);
                }
                for (pi, vi) in items.iter().zip(vals.iter()) {
                    if !self.match_pattern(pi, vi, ctx)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            E::Call { func, args } => {
                let cls = self.eval(func, ctx)?;
                if !self.isinstance(v, &cls)? {
                    return Ok(false);
                }
                for a in args {
                    if let ast::Arg::Keyword(n, pe) = a {
                        let fv = self.get_attr(v, &n.name)?;
                        if !self.match_pattern(pe, &fv, ctx)? {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            }
            _ => {
                let pv = self.eval(p, ctx)?;
                self.py_eq(&pv, v)
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Assignment and deletion
    // -----------------------------------------------------------------------------------

    pub(crate) fn assign(&mut self, target: &ast::Expr, v: Value, ctx: &Ctx) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                scope_set(&ctx.scope, n, v);
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                self.set_attr(&o, &name.name, v)
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                if let E::Slice { lower, upper, step } = &index.kind {
                    let lo = self.opt_int(lower.as_deref(), ctx)?;
                    let hi = self.opt_int(upper.as_deref(), ctx)?;
                    let st = self.opt_int(step.as_deref(), ctx)?;
                    return self.set_slice(&o, lo, hi, st, v);
                }
                let i = self.eval(index, ctx)?;
                self.set_item(&o, i, v)
            }
            E::Tuple(items) | E::List(items) => {
                let vals = self.iterate(&v)?;
                let star = items.iter().position(|t| matches!(t.kind, E::Starred(_)));
                match star {
                    None => {
                        if vals.len() != items.len() {
                            return Err(if vals.len() > items.len() {
                                self.err(
                                    "ValueError",
                                    format!("too many values to unpack (expected {})", items.len()),
                                )
                            } else {
                                self.err(
                                    "ValueError",
                                    format!(
                                        "not enough values to unpack (expected {}, got {})",
                                        items.len(),
                                        vals.len()
                                    ),
                                )
                            });
                        }
                        for (t, x) in items.iter().zip(vals) {
                            self.assign(t, x, ctx)?;
                        }
                    }
                    Some(si) => {
                        let after = items.len() - si - 1;
                        if vals.len() < items.len() - 1 {
                            return Err(self.err(
                                "ValueError",
                                format!(
                                    "not enough values to unpack (expected at least {}, got {})",
                                    items.len() - 1,
                                    vals.len()
                                ),
                            ));
                        }
                        let mut vals = vals;
                        let tail = vals.split_off(vals.len() - after);
                        let mid = vals.split_off(si);
                        for (t, x) in items[..si].iter().zip(vals) {
                            self.assign(t, x, ctx)?;
                        }
                        if let E::Starred(inner) = &items[si].kind {
                            self.assign(inner, Value::list(mid), ctx)?;
                        }
                        for (t, x) in items[si + 1..].iter().zip(tail) {
                            self.assign(t, x, ctx)?;
                        }
                    }
                }
                Ok(())
            }
            E::Starred(inner) => self.assign(inner, v, ctx),
            E::Special(
                sp @ (ast::SpecialRef::Init | ast::SpecialRef::PostInit | ast::SpecialRef::Props),
            ) => {
                scope_set(&ctx.scope, &Rc::from(expr::special_name(*sp)), v);
                Ok(())
            }
            _ => Err(self.err("SyntaxError", "cannot assign to expression")),
        }
    }

    fn opt_int(&mut self, e: Option<&ast::Expr>, ctx: &Ctx) -> R<Option<i64>> {
        match e {
            None => Ok(None),
            Some(e) => match self.eval(e, ctx)? {
                Value::None => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                Value::Bool(b) => Ok(Some(i64::from(b))),
                other => {
                    let t = self.type_name_of(&other);
                    Err(self.err(
                        "TypeError",
                        format!("slice indices must be integers or None or have an __index__ method, not '{t}'"),
                    ))
                }
            },
        }
    }

    fn aug_assign(
        &mut self,
        target: &ast::Expr,
        op: ast::BinOp,
        value: &ast::Expr,
        ctx: &Ctx,
    ) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                let cur = self.lookup(n, ctx)?;
                let rhs = self.eval(value, ctx)?;
                // In-place list extension keeps identity (xs += [1]).
                if op == ast::BinOp::Add
                    && let Value::List(l) = &cur
                {
                    let items = self.iterate(&rhs)?;
                    self.check_growth(l.borrow().len(), items.len())?;
                    l.borrow_mut().extend(items);
                    return Ok(());
                }
                let nv = self.binary_op(op, &cur, &rhs)?;
                scope_set(&ctx.scope, n, nv);
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                let cur = self.get_attr(&o, &name.name)?;
                let rhs = self.eval(value, ctx)?;
                if op == ast::BinOp::Add
                    && let Value::List(l) = &cur
                {
                    let items = self.iterate(&rhs)?;
                    self.check_growth(l.borrow().len(), items.len())?;
                    l.borrow_mut().extend(items);
                    return self.set_attr(&o, &name.name, cur.clone());
                }
                let nv = self.binary_op(op, &cur, &rhs)?;
                self.set_attr(&o, &name.name, nv)
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                let i = self.eval(index, ctx)?;
                let cur = self.get_item(&o, &i)?;
                let rhs = self.eval(value, ctx)?;
                let nv = self.binary_op(op, &cur, &rhs)?;
                self.set_item(&o, i, nv)
            }
            _ => Err(self.err("SyntaxError", "illegal expression for augmented assignment")),
        }
    }

    fn delete(&mut self, target: &ast::Expr, ctx: &Ctx) -> R<()> {
        use ast::ExprKind as E;
        match &target.kind {
            E::Name(n) => {
                // `del node_var` deletes the node when it holds one.
                if let Some(v @ Value::Anchor(_)) = scope_get(&ctx.scope, n) {
                    return self.destroy(&v);
                }
                if !scope_remove(&ctx.scope, n) {
                    return Err(self.err("NameError", format!("name '{n}' is not defined")));
                }
                Ok(())
            }
            E::Index { obj, index, .. } => {
                let o = self.eval(obj, ctx)?;
                if let E::Slice { lower, upper, step } = &index.kind {
                    let lo = self.opt_int(lower.as_deref(), ctx)?;
                    let hi = self.opt_int(upper.as_deref(), ctx)?;
                    let st = self.opt_int(step.as_deref(), ctx)?;
                    return self.del_slice(&o, lo, hi, st);
                }
                let i = self.eval(index, ctx)?;
                self.del_item(&o, &i)
            }
            E::List(items) | E::Tuple(items) => {
                for t in items {
                    self.delete(t, ctx)?;
                }
                Ok(())
            }
            E::Attr { obj, name, .. } => {
                let o = self.eval(obj, ctx)?;
                if let Value::Instance(i) = &o
                    && let Some(m) = i.extra.borrow_mut().as_mut()
                    && m.remove(&*name.name).is_some()
                {
                    return Ok(());
                }
                Err(self.err(
                    "AttributeError",
                    format!("cannot delete attribute '{}'", name.name),
                ))
            }
            _ => {
                let v = self.eval(target, ctx)?;
                self.destroy(&v)
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Calls
    // -----------------------------------------------------------------------------------

    /// Call any callable value.
    pub fn call_value(
        &mut self,
        f: &Value,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match f {
            Value::Func(func) => {
                let this = None;
                self.call_function(func, this, args, kwargs, None)
            }
            Value::Bound(b) => {
                let (recv, func) = (&b.0, &b.1);
                self.call_function(func, Some(recv.clone()), args, kwargs, None)
            }
            Value::Builtin(name) => self.call_builtin_fn(name, args, kwargs),
            Value::BuiltinMethod(b) => {
                let (recv, name) = (&b.0, &b.1);
                self.call_method_value(recv, name, args, kwargs)
            }
            Value::Class(c) => self.construct(c, args, kwargs),
            other => {
                let t = self.type_name_of(other);
                Err(self.err("TypeError", format!("'{t}' object is not callable")))
            }
        }
    }

    /// Call a user function with an optional receiver (`self`) and walk context.
    pub fn call_function(
        &mut self,
        func: &Rc<Function>,
        this: Option<Value>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
        walk_ctx: Option<(Option<Value>, Option<Value>)>,
    ) -> R<Value> {
        if self.depth >= self.limits.max_depth {
            return Err(self.err("RecursionError", "maximum recursion depth exceeded"));
        }
        self.tick()?;
        let scope = Scope::new_ref(Some(func.closure.clone()));
        let owner = func
            .owner
            .borrow()
            .as_ref()
            .and_then(std::rc::Weak::upgrade);
        self.bind_params(func, &scope, args, kwargs)?;
        let (here, visitor) = walk_ctx.unwrap_or((None, None));
        // Lambdas and nested functions see `self`/`here`/`visitor` of where they were made.
        let (this, here, visitor) = match &func.captured {
            Some(c) if this.is_none() => (
                c.0.clone(),
                here.or_else(|| c.1.clone()),
                visitor.or_else(|| c.2.clone()),
            ),
            _ => (this, here, visitor),
        };
        let ctx = Ctx {
            scope,
            this,
            here,
            visitor,
            class: owner,
            file: func.file,
            func: func.name.clone(),
        };
        let body = match &*func.body.borrow() {
            FuncBody::Block(b) => b.clone(),
            FuncBody::Missing => {
                return Err(self.err(
                    "NotImplementedError",
                    format!("'{}' has no body (missing impl)", func.name),
                ));
            }
        };
        self.depth += 1;
        let r = if func.is_lambda && body.len() == 1 {
            match &body[0].kind {
                StmtKind::Expr(e) => self.eval(e, &ctx).map(Flow::Return),
                _ => self.exec_block(&body, &ctx),
            }
        } else {
            self.exec_block(&body, &ctx)
        };
        self.depth -= 1;
        match r {
            Ok(Flow::Return(v)) => Ok(v),
            Ok(_) => Ok(Value::None),
            Err(Interrupt::Exc(mut e)) => {
                let span = e.origin.map_or(func.span, |o| o.1);
                let file = e.origin.map_or(func.file, |o| o.0);
                e.trace.push(TraceFrame {
                    func: func.name.clone(),
                    file,
                    span,
                });
                e.origin = None;
                Err(Interrupt::Exc(e))
            }
            Err(other) => Err(other),
        }
    }

    fn bind_params(
        &mut self,
        func: &Rc<Function>,
        scope: &ScopeRef,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<()> {
        use ast::ParamKind as K;
        let mut s = scope.borrow_mut();
        let mut args = args.into_iter();
        let mut kw_only = false;
        let mut bound: Vec<bool> = Vec::with_capacity(func.params.len());
        let mut varkw: Option<Rc<str>> = None;
        for p in &func.params {
            match p.kind {
                K::Normal => {
                    if !kw_only && let Some(a) = args.next() {
                        s.vars.insert(p.name.clone(), a);
                        bound.push(true);
                    } else {
                        bound.push(false);
                    }
                }
                K::VarArgs => {
                    let rest: Vec<Value> = args.by_ref().collect();
                    s.vars.insert(p.name.clone(), Value::tuple(rest));
                    kw_only = true;
                    bound.push(true);
                }
                K::KwOnlyMarker => {
                    kw_only = true;
                    bound.push(true);
                }
                K::PosOnlyMarker => bound.push(true),
                K::KwArgs => {
                    varkw = Some(p.name.clone());
                    bound.push(true);
                }
            }
        }
        let extra: Vec<Value> = args.collect();
        if !extra.is_empty() {
            let n = func.params.iter().filter(|p| p.kind == K::Normal).count();
            drop(s);
            return Err(self.err(
                "TypeError",
                format!(
                    "{}() takes {} positional argument{} but {} were given",
                    func.name,
                    n,
                    if n == 1 { "" } else { "s" },
                    n + extra.len()
                ),
            ));
        }
        let mut kwdict = Dict::default();
        for (k, v) in kwargs {
            match func
                .params
                .iter()
                .position(|p| p.name == k && p.kind == K::Normal)
            {
                Some(i) => {
                    if bound[i] {
                        drop(s);
                        return Err(self.err(
                            "TypeError",
                            format!("{}() got multiple values for argument '{}'", func.name, k),
                        ));
                    }
                    s.vars.insert(k, v);
                    bound[i] = true;
                }
                None => {
                    if varkw.is_some() {
                        kwdict.insert(HashKey(Value::Str(k)), v);
                    } else {
                        drop(s);
                        return Err(self.err(
                            "TypeError",
                            format!("{}() got an unexpected keyword argument '{}'", func.name, k),
                        ));
                    }
                }
            }
        }
        if let Some(n) = varkw {
            s.vars.insert(n, Value::dict(kwdict));
        }
        drop(s);
        // Defaults, evaluated in the function's closure scope.
        for (i, p) in func.params.iter().enumerate() {
            if bound[i] || p.kind != K::Normal {
                continue;
            }
            match &p.default {
                Some(d) => {
                    let ctx = Ctx {
                        scope: func.closure.clone(),
                        this: None,
                        here: None,
                        visitor: None,
                        class: None,
                        file: func.file,
                        func: func.name.clone(),
                    };
                    let v = self.eval(d, &ctx)?;
                    scope.borrow_mut().vars.insert(p.name.clone(), v);
                }
                None => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{}() missing 1 required positional argument: '{}'",
                            func.name, p.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Instantiate a class: archetypes, builtin types and exceptions.
    pub fn construct(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if self.is_event_class(c) {
            return self.construct_event(c, args, kwargs);
        }
        match c.kind {
            ClassKind::Builtin => builtins::construct_builtin(self, c, args, kwargs),
            ClassKind::Exception => Ok(self.make_exception(c.clone(), args)),
            ClassKind::Enum => {
                let v = args.into_iter().next().unwrap_or(Value::None);
                for m in c.members.borrow().iter() {
                    if self.py_eq(&m.value, &v)? {
                        return Ok(Value::EnumMember(m.clone()));
                    }
                }
                let r = self.repr(&v)?;
                Err(self.err("ValueError", format!("{r} is not a valid {}", c.name)))
            }
            ClassKind::Root => Err(self.err("TypeError", "cannot create another Root")),
            _ => self.construct_archetype(c, args, kwargs),
        }
    }

    fn construct_archetype(
        &mut self,
        c: &Rc<Class>,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let n = c.fields.len();
        let mut values: Vec<Option<Value>> = vec![None; n];
        let init_fields: Vec<usize> = (0..n)
            .filter(|&i| !c.fields[i].postinit && !c.fields[i].is_static)
            .collect();
        if args.len() > init_fields.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{}() takes {} positional argument{} but {} were given",
                    c.name,
                    init_fields.len(),
                    if init_fields.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        for (slot, a) in init_fields.iter().zip(args) {
            values[*slot] = Some(a);
        }
        for (k, v) in kwargs {
            match c.field_index.get(&k) {
                Some(&i) if !c.fields[i].postinit => {
                    if values[i].is_some() {
                        return Err(self.err(
                            "TypeError",
                            format!("{}() got multiple values for argument '{}'", c.name, k),
                        ));
                    }
                    values[i] = Some(v);
                }
                _ => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "{}.__init__() got an unexpected keyword argument '{}'",
                            c.name, k
                        ),
                    ));
                }
            }
        }
        let scope = c
            .scope
            .borrow()
            .clone()
            .unwrap_or_else(|| self.builtins.clone());
        let dctx = Ctx {
            scope,
            this: None,
            here: None,
            visitor: None,
            class: Some(c.clone()),
            file: c.file,
            func: c.name.clone(),
        };
        let mut fields = Vec::with_capacity(n);
        for (i, v) in values.into_iter().enumerate() {
            let f = &c.fields[i];
            let v = match v {
                Some(v) => v,
                None if f.postinit => Value::None,
                None => match &f.default {
                    Some(d) => self.eval(d, &dctx)?,
                    None => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "{}.__init__() missing 1 required positional argument: '{}'",
                                c.name, f.name
                            ),
                        ));
                    }
                },
            };
            fields.push(v);
        }
        let v = match c.arch_kind() {
            Some(ArchKind::Node) | Some(ArchKind::Edge) => {
                let h = self
                    .graph
                    .new_anchor(c.clone(), fields, self.host.user_root());
                Value::Anchor(h)
            }
            _ => Value::Instance(Rc::new(Instance {
                class: c.clone(),
                fields: std::cell::RefCell::new(fields),
                extra: Default::default(),
                id: next_id(),
            })),
        };
        if let Some(init) = c.find_method("postinit") {
            self.call_function(&init, Some(v.clone()), vec![], vec![], None)?;
        }
        Ok(v)
    }

    // -----------------------------------------------------------------------------------
    // Builtins setup
    // -----------------------------------------------------------------------------------

    fn new_builtin_class(
        &mut self,
        name: &'static str,
        kind: ClassKind,
        base: Option<&str>,
    ) -> Rc<Class> {
        let bases: Vec<Rc<Class>> = base
            .and_then(|b| self.builtin_classes.get(b).cloned())
            .into_iter()
            .collect();
        let mro = ancestors(&bases);
        let c = Rc::new(Class::bare_builtin(name, kind, bases, mro));
        Rc::make_mut(&mut self.builtin_classes).insert(name, c.clone());
        scope_define(&self.builtins, Rc::from(name), Value::Class(c.clone()));
        c
    }

    fn install_builtins(&mut self) {
        for t in [
            "object",
            "int",
            "float",
            "str",
            "list",
            "dict",
            "set",
            "tuple",
            "range",
            "type",
            "NoneType",
            "function",
            "frozenset",
            "bytes",
        ] {
            self.new_builtin_class(
                t,
                ClassKind::Builtin,
                if t == "object" { None } else { Some("object") },
            );
        }
        self.new_builtin_class("bool", ClassKind::Builtin, Some("int"));
        self.new_builtin_class("any", ClassKind::Builtin, Some("object"));
        let excs: &[(&'static str, &str)] = &[
            ("BaseException", "object"),
            ("Exception", "BaseException"),
            ("ArithmeticError", "Exception"),
            ("ZeroDivisionError", "ArithmeticError"),
            ("OverflowError", "ArithmeticError"),
            ("LookupError", "Exception"),
            ("KeyError", "LookupError"),
            ("IndexError", "LookupError"),
            ("ValueError", "Exception"),
            ("TypeError", "Exception"),
            ("AttributeError", "Exception"),
            ("NameError", "Exception"),
            ("RuntimeError", "Exception"),
            ("RecursionError", "RuntimeError"),
            ("NotImplementedError", "RuntimeError"),
            ("AssertionError", "Exception"),
            ("StopIteration", "Exception"),
            ("ImportError", "Exception"),
            ("ModuleNotFoundError", "ImportError"),
            ("SyntaxError", "Exception"),
            ("PermissionError", "Exception"),
            ("OSError", "Exception"),
            ("FileNotFoundError", "OSError"),
            ("TimeoutError", "OSError"),
            ("UnicodeError", "ValueError"),
            ("MemoryError", "Exception"),
            // kvstore's connection failures (CPython: subclasses of OSError).
            ("ConnectionError", "Exception"),
            ("TimeoutError", "Exception"),
        ];
        for (n, b) in excs {
            self.new_builtin_class(n, ClassKind::Exception, Some(b));
        }
        // Object-spatial builtins.
        let root = self.new_builtin_class("Root", ClassKind::Root, None);
        Rc::make_mut(&mut self.classes).insert(root.name.clone(), root);
        let ge = self.new_builtin_class("GenericEdge", ClassKind::GenericEdge, None);
        Rc::make_mut(&mut self.classes).insert(ge.name.clone(), ge);
        self.install_enum(
            "AccessLevel",
            &[
                ("NO_ACCESS", Value::Int(-1)),
                ("READ", Value::Int(0)),
                ("CONNECT", Value::Int(1)),
                ("WRITE", Value::Int(2)),
            ],
        );
        self.install_enum(
            "APIProtocol",
            &[
                ("HTTP", Value::str("http")),
                ("WEBHOOK", Value::str("webhook")),
                ("WEBSOCKET", Value::str("websocket")),
            ],
        );
        self.install_enum(
            "ScheduleTrigger",
            &[
                ("CRON", Value::str("cron")),
                ("INTERVAL", Value::str("interval")),
                ("DATE", Value::str("date")),
            ],
        );
        for (n, v) in [
            ("NoPerm", -1),
            ("ReadPerm", 0),
            ("ConnectPerm", 1),
            ("WritePerm", 2),
        ] {
            scope_define(&self.builtins, Rc::from(n), Value::Int(v));
        }
        self.install_storage_class();
        let factory = self.storage_factory();
        scope_define(&self.builtins, Rc::from("StorageFactory"), factory);
        scope_define(
            &self.builtins,
            Rc::from(storage::STORE),
            Value::Builtin(Rc::from(storage::STORE)),
        );
        for name in builtins::BUILTIN_FUNCTIONS
            .iter()
            .chain(OSP_BUILTINS.iter())
        {
            scope_define(
                &self.builtins,
                Rc::from(*name),
                Value::Builtin(Rc::from(*name)),
            );
        }
        self.install_event_builtins();
    }

    fn install_enum(&mut self, name: &'static str, members: &[(&str, Value)]) -> Rc<Class> {
        let c = self.new_builtin_class(name, ClassKind::Enum, None);
        for (n, v) in members {
            let m = Rc::new(EnumMember {
                class: c.clone(),
                name: Rc::from(*n),
                value: v.clone(),
            });
            c.members.borrow_mut().push(m.clone());
            c.statics
                .borrow_mut()
                .insert(Rc::from(*n), Value::EnumMember(m));
        }
        c
    }

    fn builtin_module(&mut self, name: &str) -> Rc<ModuleObj> {
        let scope = Scope::new_ref(None);
        if name == "http" {
            let c = self.builtin_class("HTTPMethod").unwrap_or_else(|| {
                self.install_enum(
                    "HTTPMethod",
                    &[
                        ("GET", Value::str("GET")),
                        ("POST", Value::str("POST")),
                        ("PUT", Value::str("PUT")),
                        ("PATCH", Value::str("PATCH")),
                        ("DELETE", Value::str("DELETE")),
                        ("HEAD", Value::str("HEAD")),
                        ("OPTIONS", Value::str("OPTIONS")),
                    ],
                )
            });
            scope_define(&scope, Rc::from("HTTPMethod"), Value::Class(c));
        }
        Rc::new(ModuleObj {
            name: Rc::from(name),
            scope,
        })
    }

    fn builtin_module_member(&mut self, module: &str, name: &str) -> R<Value> {
        let m = self.builtin_module(module);
        scope_get(&m.scope, name).ok_or_else(|| {
            self.err(
                "ImportError",
                format!("cannot import name '{name}' from '{module}'"),
            )
        })
    }
}

/// Modules built into svc (there is no Python underneath).
fn builtin_module(name: &str) -> bool {
    matches!(name, "http")
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

/// Object-spatial builtins handled by the interpreter itself.
pub const OSP_BUILTINS: &[&str] = &[
    "jid",
    "jobj",
    "grant",
    "revoke",
    "allroots",
    "save",
    "commit",
    "on_commit",
    "printgraph",
    "perm_grant",
    "perm_revoke",
    "allow_root",
    "disallow_root",
    "restspec",
    "schedule",
    "destroy",
    "kvstore",
];

/// Ancestors of a class with these bases, nearest first, without duplicates.
fn ancestors(bases: &[Rc<Class>]) -> Vec<Rc<Class>> {
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
        let glyph = if std::env::var_os("NO_EMOJI").is_some() {
            ""
        } else {
            "✖ "
        };
        match e {
            Interrupt::Limit(m) => format!("{glyph}Error: {m}\n"),
            Interrupt::Host(h) => format!("{glyph}Error: {h}\n"),
            Interrupt::Exc(err) => {
                let mut err = *err;
                if let Some((file, span)) = err.origin.take() {
                    err.trace.push(TraceFrame {
                        func: Rc::from("<module>"),
                        file,
                        span,
                    });
                }
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
                    let call = if &*f.func == "<module>" {
                        String::from("<module>")
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
