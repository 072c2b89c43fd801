//! The checker: name resolution and the checks that are certain without running the
//! program. `svc run` refuses a program with any *error* found here, so an error is only
//! reported where the program is certainly wrong; anything less is a warning or nothing.
//!
//! | Code  | Severity | What |
//! |-------|----------|------|
//! | E2001 | error    | undefined name (with "did you mean" from visible names) |
//! | W2001 | warning  | undefined name inside a type annotation (annotations never run) |
//! | E2002 | error    | call of a module-level `def` or archetype constructor with too many positional arguments, missing required ones, an unknown keyword or a keyword given twice |
//! | E2003 | error    | constructor keyword naming no `has` field of the archetype |
//! | E2004 | error    | ability trigger that is not a type (`with root entry`, a def, a variable) |
//! | W2004 | warning  | ability trigger naming an enum or a builtin type (never fires) |
//! | E2005 | error    | literal that certainly does not match its declared builtin type (assignments, defaults, returns, call arguments) |
//! | E2006 | error    | `return` outside a function or ability |
//! | E2007 | error    | `break` / `continue` outside a loop |
//! | E2008 | error    | `visit` / `skip` / `disengage` outside any function (module level, `with entry`, `test`) |
//! | W2008 | warning  | `visit` / `skip` / `disengage` in a plain `def` (not an ability) |
//! | W2009 | warning  | `here` outside a walker's code, `visitor` outside a node's or edge's code |
//! | E2009 | error    | archetype/enum/def declared twice at module level; `has` field declared twice in one archetype |
//! | E2010 | error    | `import from m { A }` where `m.svc` declares no `A` |
//! | E2011 | error    | imported `.svc` module not found beside the importing file |
//! | E2012 | error    | import of a Python module (svc has no Python underneath; `http` is built in) |
//! | E2013 | error    | `impl X.y` where `X` or `y` is not declared |
//! | E2027 | error    | typed endpoint clause `: A --> B` on something other than an edge |
//! | E2028 | error    | edge endpoint that is not a node type |
//! | E2030 | error    | `m.name` or `import from m { name }` where `m` is a built-in stdlib module without `name` |
//! | E2029 | error    | `yield` outside a function (module level, entry block, lambda) |
//! | E2031 | error    | `yield` in a condition, loop header or other statement part (not an expression statement, assignment or `return`) |
//! | E2032 | error    | `await` outside an `async def` / `async can` |
//! | E2033 | error    | `yield` in an `async` function (async generators are not supported) |
//! | E2034 | error    | attribute that an instance of a local archetype certainly lacks |
//!
//! Scoping follows Jac (Python rules without `global`/`nonlocal`): module globals are the
//! declarations plus every name assigned at module level or in a `with entry` block;
//! function locals are parameters plus every name bound anywhere in the body; closures
//! see enclosing functions; archetype members are never bare names inside methods (only
//! code directly in the archetype body, such as `has` defaults, sees them).
//!
//! Submodules: `collect` (what a block binds), `walk` (statements and expressions),
//! `decls` (archetypes, enums, impls, triggers, endpoints), `calls` (arity and fields),
//! `types` (literal type mismatches), `attrs` (attributes of known instances), `imports`,
//! `names` (ambient names, suggestions).

mod attrs;
mod calls;
mod collect;
/// Direct sub-expressions of an expression (shared with the interpreter's generator scan).
mod decls;
mod imports;
mod names;
#[cfg(test)]
mod tests;
mod types;
mod unbound;
mod walk;

use crate::ast::{Ability, Archetype, Expr, Module};
use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::host::Host;
use crate::span::Span;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Check one module; `host.read_module` loads the `.svc` modules it imports.
pub fn check_module(module: &Module, path: &Path, host: &mut dyn Host) -> Vec<Diagnostic> {
    let mut cx = Cx::new(path, host);
    cx.module(module);
    let mut diags = cx.diags;
    diags.sort_by_key(|d| (d.span.start, d.severity));
    diags.dedup();
    diags
}

/// What a module-level name is bound to.
#[derive(Clone, Copy)]
enum Decl<'a> {
    Arch(&'a Archetype),
    Enum,
    Def(&'a Ability),
    /// A `glob` or a module-level assignment, with the value of a plain `x = v`.
    Var(Option<&'a Expr>),
    Import,
}

struct Global<'a> {
    decl: Decl<'a>,
    /// How many times the name is bound; checks that need the binding use it only when 1.
    count: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Function,
    /// An archetype or enum body: seen only by code directly inside it.
    Class,
    Comprehension,
}

struct Scope<'a> {
    kind: ScopeKind,
    names: HashSet<&'a str>,
    /// Locals whose every binding is a constructor call of one local archetype
    /// (`p = P(..)`): their archetype, for attribute checks (`attrs.rs`).
    types: HashMap<&'a str, &'a Archetype>,
}

/// Where statements run, for `return`, `break`, `visit`, `here`, ...
#[derive(Clone, Copy, PartialEq, Eq)]
enum CtxKind {
    /// Module level and `with entry` blocks.
    Module,
    /// Stray code in an archetype body.
    ClassBody,
    Def,
    Ability,
    Lambda,
    Test,
}

#[derive(Clone, Copy)]
struct FnCtx<'a> {
    kind: CtxKind,
    /// Enclosing loops in the current function.
    loops: u32,
    /// The archetype whose code this is (methods, abilities and what they nest).
    arch: Option<&'a Archetype>,
    /// Declared return type of the current function.
    ret: Option<&'a Expr>,
    /// `async def` / `async can` (where `await` is allowed).
    is_async: bool,
}

impl FnCtx<'_> {
    const MODULE: FnCtx<'static> = FnCtx {
        kind: CtxKind::Module,
        loops: 0,
        arch: None,
        ret: None,
        is_async: false,
    };
}

/// The result of looking a name up.
#[derive(Clone, Copy)]
enum Found<'a> {
    /// A function local, comprehension target or archetype-body name.
    Local,
    /// A module global (`None` when bound more than once: no checks rely on it).
    Global(Option<Decl<'a>>),
    /// Merged in by `include`, or otherwise known to exist.
    Other,
    Builtin,
    Missing,
}

/// Names in annotations only warn; at run time they are errors.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Runtime,
    Annotation,
}

/// Names a successfully loaded module declares at its top level.
struct Exports {
    names: HashSet<String>,
    /// False when the module could bind names the checker cannot see (includes, errors).
    complete: bool,
}

struct Cx<'a, 'h> {
    path: PathBuf,
    host: &'h mut dyn Host,
    diags: Vec<Diagnostic>,
    globals: HashMap<&'a str, Global<'a>>,
    /// Names merged into the module by `include`.
    included: HashSet<String>,
    scopes: Vec<Scope<'a>>,
    ctx: FnCtx<'a>,
    /// While positive, unresolved names are not reported (code whose scope is unknown).
    lenient: u32,
    /// Some `include` could not be read: any name may exist.
    module_lenient: bool,
    /// Imported modules by path (`None`: not found).
    modules: HashMap<PathBuf, Option<Rc<Exports>>>,
    /// Constructor fields per archetype (keyed by address; `None`: not fully known).
    ctor_cache: HashMap<usize, Option<Rc<calls::Fields<'a>>>>,
    /// Module-level names bound to a built-in standard-library module (`import json as
    /// j;` binds `j` to `json`), for E2030.
    stdlib_aliases: HashMap<&'a str, &'static str>,
    /// Erased generic parameter names of the module (`obj Box[T]`): known in annotations.
    type_params: HashSet<&'a str>,
    /// Names declared by `glob` anywhere: an assignment in a def rebinds them.
    globs: HashSet<&'a str>,
    /// Attribute reads that no declaration provides, reported at the end of the module
    /// unless something assigns that attribute (`attrs.rs`).
    attrs: attrs::Pending<'a>,
    /// While positive, the statement being walked is one whose nested `yield`s a
    /// generator runs (an expression statement, assignment, augmented assignment or
    /// `return`): no E2031.
    nested_yield: u32,
}

impl<'a, 'h> Cx<'a, 'h> {
    fn new(path: &Path, host: &'h mut dyn Host) -> Cx<'a, 'h> {
        Cx {
            path: path.to_path_buf(),
            host,
            diags: Vec::new(),
            globals: HashMap::new(),
            included: HashSet::new(),
            scopes: Vec::new(),
            ctx: FnCtx::MODULE,
            lenient: 0,
            module_lenient: false,
            modules: HashMap::new(),
            ctor_cache: HashMap::new(),
            stdlib_aliases: HashMap::new(),
            type_params: HashSet::new(),
            globs: HashSet::new(),
            attrs: attrs::Pending::default(),
            nested_yield: 0,
        }
    }

    fn error(&mut self, code: Code, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::error(code, msg, span));
    }

    fn warning(&mut self, code: Code, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::warning(code, msg, span));
    }

    fn is_lenient(&self) -> bool {
        self.lenient > 0 || self.module_lenient
    }

    fn bind_global(&mut self, name: &'a str, decl: Decl<'a>) {
        self.globals
            .entry(name)
            .and_modify(|g| g.count += 1)
            .or_insert(Global { decl, count: 1 });
    }

    /// The declaration of a module-level name bound exactly once.
    fn global_decl(&self, name: &str) -> Option<Decl<'a>> {
        match self.globals.get(name) {
            Some(g) if g.count == 1 => Some(g.decl),
            _ => None,
        }
    }

    /// The module-level archetype a name denotes (bound once, not shadowed locally).
    fn arch_named(&self, name: &str) -> Option<&'a Archetype> {
        match self.lookup(name) {
            Found::Global(Some(Decl::Arch(a))) => Some(a),
            _ => None,
        }
    }

    fn push_scope(&mut self, kind: ScopeKind, names: HashSet<&'a str>) {
        self.push_typed_scope(kind, names, HashMap::new());
    }

    fn push_typed_scope(
        &mut self,
        kind: ScopeKind,
        names: HashSet<&'a str>,
        types: HashMap<&'a str, &'a Archetype>,
    ) {
        self.scopes.push(Scope { kind, names, types });
    }

    fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// The innermost scope binding `name` that code here sees. An archetype body's names
    /// are seen only by code directly in it (through comprehensions too).
    fn scope_of(&self, name: &str) -> Option<&Scope<'a>> {
        let mut class_visible = true;
        for s in self.scopes.iter().rev() {
            let visible = match s.kind {
                ScopeKind::Class => std::mem::replace(&mut class_visible, false),
                ScopeKind::Function => {
                    class_visible = false;
                    true
                }
                ScopeKind::Comprehension => true,
            };
            if visible && s.names.contains(name) {
                return Some(s);
            }
        }
        None
    }

    /// Resolve `name` from the innermost scope outwards.
    fn lookup(&self, name: &str) -> Found<'a> {
        if self.scope_of(name).is_some() {
            return Found::Local;
        }
        if let Some(g) = self.globals.get(name) {
            return Found::Global(if g.count == 1 { Some(g.decl) } else { None });
        }
        if self.included.contains(name) {
            return Found::Other;
        }
        if names::is_builtin(name) {
            return Found::Builtin;
        }
        Found::Missing
    }

    /// Every name visible here, with a rank for suggestions (locals first).
    fn visible_names(&self, mode: Mode) -> Vec<(&str, u8)> {
        let mut out: Vec<(&str, u8)> = Vec::new();
        let mut class_visible = true;
        for s in self.scopes.iter().rev() {
            let seen = match s.kind {
                ScopeKind::Class => std::mem::replace(&mut class_visible, false),
                ScopeKind::Function => {
                    class_visible = false;
                    true
                }
                ScopeKind::Comprehension => true,
            };
            if seen {
                out.extend(s.names.iter().map(|n| (*n, 0)));
            }
        }
        out.extend(self.globals.keys().map(|n| (*n, 1)));
        out.extend(self.included.iter().map(|n| (n.as_str(), 1)));
        out.extend(names::all_builtins().map(|n| (n, 2)));
        if mode == Mode::Annotation {
            out.extend(
                ["Optional", "Union", "Any", "Callable"]
                    .into_iter()
                    .map(|n| (n, 2)),
            );
        }
        out
    }

    /// Resolve a name used at `span`; report it when it is bound nowhere visible.
    fn use_name(&mut self, name: &str, span: Span, mode: Mode) -> Found<'a> {
        let found = self.lookup(name);
        if !matches!(found, Found::Missing) || self.is_lenient() {
            return found;
        }
        if mode == Mode::Annotation
            && (names::is_annotation_name(name) || self.type_params.contains(name))
        {
            return Found::Other;
        }
        let hint = self.member_hint(name).or_else(|| {
            names::best_match(name, self.visible_names(mode)).map(|s| format!("`{s}`"))
        });
        let mut msg = format!("cannot find name `{name}` in this scope");
        if let Some(h) = hint {
            msg.push_str(&format!("; did you mean {h}?"));
        }
        match mode {
            Mode::Runtime => self.error(Code::E2001, msg, span),
            Mode::Annotation => self.warning(Code::W2001, msg, span),
        }
        found
    }

    /// `self.name` when `name` is a member of the archetype whose code this is.
    fn member_hint(&self, name: &str) -> Option<String> {
        let a = self.ctx.arch?;
        if self.ctx.kind == CtxKind::ClassBody {
            return None;
        }
        decls::has_member(self, a, name, 0).then(|| format!("`self.{name}`"))
    }

    fn module(&mut self, m: &'a Module) {
        self.type_params = m.type_params.iter().map(|n| &**n).collect();
        for item in &m.items {
            self.declare_item(item);
        }
        for item in &m.items {
            self.declaration(item);
        }
        self.report_attrs();
    }
}
