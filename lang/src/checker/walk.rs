//! The resolving walk over items, statements and expressions: E2001/W2001 name
//! resolution, the context checks E2006, E2007, E2008/W2008 and W2009, and W2010 (with
//! `unbound.rs`).

use super::{CtxKind, Cx, FnCtx, Mode, ScopeKind, collect, unbound};
use crate::ast::visit::{Visitor, walk_expr, walk_stmt};
use crate::ast::{
    Arg, Comprehension, EntryBlock, Expr, ExprKind, Item, Param, ParamKind, Signature, SpecialRef,
    Stmt, StmtKind,
};
use crate::diag::Code;
use crate::span::Span;
use std::collections::HashSet;

impl<'a> Cx<'a, '_> {
    /// The statement kinds `stmt` walks itself (the rest go to `walk_stmt`).
    fn stmt_kind(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => self.yield_or_expr(e),
            StmtKind::Assign { targets, ty, value } => {
                for t in targets {
                    self.target(t);
                }
                if let Some(t) = ty {
                    self.annotation(t);
                }
                self.yield_or_expr(value);
                if let Some(t) = ty
                    && targets.len() == 1
                {
                    self.type_check(t, value);
                }
            }
            StmtKind::AugAssign { target, value, .. } => {
                match &target.kind {
                    ExprKind::Attr { obj, name, .. } => {
                        self.attr_assigned(name);
                        self.expr(obj);
                    }
                    _ => self.expr(target),
                }
                self.expr(value);
            }
            StmtKind::Return(value) => {
                if matches!(self.ctx.kind, CtxKind::Module | CtxKind::ClassBody) {
                    self.error(
                        Code::E2006,
                        "`return` outside of a function",
                        keyword(s.span, "return"),
                    );
                }
                if let Some(v) = value {
                    self.expr(v);
                    if let Some(t) = self.ctx.ret {
                        self.type_check(t, v);
                    }
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.ctx.loops == 0 {
                    let word = if matches!(s.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.error(
                        Code::E2007,
                        format!("`{word}` outside of a loop"),
                        keyword(s.span, word),
                    );
                }
            }
            StmtKind::Skip => self.walker_stmt("skip", s.span),
            StmtKind::Disengage => self.walker_stmt("disengage", s.span),
            StmtKind::Visit { .. } => {
                self.walker_stmt("visit", s.span);
                walk_stmt(self, s);
            }
            // The type of a typed context block is a value the block runs with.
            StmtKind::TypedContext { ty, body } => {
                self.expr(ty);
                self.block(body, false);
            }
            _ => walk_stmt(self, s),
        }
    }

    /// Second pass over an item (module level or nested in a block).
    pub(super) fn declaration(&mut self, item: &'a Item) {
        match item {
            // Imports were checked when their names were bound.
            Item::Import(_) => {}
            Item::Archetype(a) => self.archetype(a),
            Item::Enum(e) => self.enum_decl(e),
            Item::Ability(ab) => self.ability(ab, None),
            Item::Glob(g) => {
                for v in &g.vars {
                    if let Some(t) = &v.ty {
                        self.annotation(t);
                    }
                    if let Some(x) = &v.value
                        && !g.type_params.is_empty()
                    {
                        // `type Pair[T] = tuple[T, T];`: a type, over its parameters.
                        self.annotation(x);
                    } else if let Some(x) = &v.value {
                        self.expr(x);
                        if let Some(t) = &v.ty {
                            self.type_check(t, x);
                        }
                    }
                }
            }
            Item::Impl(imp) => self.impl_block(imp, None),
            Item::Entry(EntryBlock { body, .. }) => self.block(body, false),
            Item::Test(t) => {
                let ctx = FnCtx {
                    kind: CtxKind::Test,
                    loops: 0,
                    arch: None,
                    ret: None,
                    is_async: false,
                };
                self.function(&[], &t.body, ctx, false);
            }
        }
    }

    /// Parameter annotations, defaults and the return annotation, resolved in the scope
    /// around the function.
    pub(super) fn signature(&mut self, sig: Option<&'a Signature>) {
        let Some(sig) = sig else { return };
        self.params(&sig.params);
        if let Some(r) = &sig.ret {
            self.annotation(r);
        }
    }

    pub(super) fn params(&mut self, params: &'a [Param]) {
        for p in params {
            if let Some(t) = &p.ty {
                self.annotation(t);
            }
            if let Some(d) = &p.default {
                self.expr(d);
                if let Some(t) = &p.ty {
                    self.type_check(t, d);
                }
            }
        }
    }

    /// Walk a function body in a fresh scope holding `params` and everything the body
    /// binds. `lenient`: the scope is not fully known, so unresolved names are not
    /// reported.
    pub(super) fn function(
        &mut self,
        params: &'a [Param],
        body: &'a [Stmt],
        ctx: FnCtx<'a>,
        lenient: bool,
    ) {
        let param_names: HashSet<&'a str> = params
            .iter()
            .filter(|p| !matches!(p.kind, ParamKind::KwOnlyMarker | ParamKind::PosOnlyMarker))
            .map(|p| &*p.name.name)
            .collect();
        let mut names = param_names.clone();
        let mut binds = collect::Binds::default();
        collect::block(body, &mut binds);
        names.extend(binds.names.iter().map(|(n, _)| *n));
        let types = self.local_types(&binds.names, &names, &param_names);
        for imp in binds.imports {
            names.extend(self.import(imp));
        }
        if ctx.kind == CtxKind::Def && !ctx.is_async && !lenient && !self.is_lenient() {
            self.early_reads(params, body);
        }
        self.push_typed_scope(ScopeKind::Function, names, types);
        let saved = std::mem::replace(&mut self.ctx, ctx);
        if lenient {
            self.lenient += 1;
        }
        self.block(body, false);
        if lenient {
            self.lenient -= 1;
        }
        self.ctx = saved;
        self.pop_scope();
    }

    /// W2010 for a def about to be walked (its own scope not pushed yet): its locals
    /// that no parameter, enclosing function's name, `glob` or included name can
    /// satisfy, read before anything assigns them (`unbound.rs`).
    fn early_reads(&mut self, params: &'a [Param], body: &'a [Stmt]) {
        let enclosing = |n: &str| {
            self.scopes
                .iter()
                .any(|s| s.kind == ScopeKind::Function && s.names.contains(n))
        };
        let mut candidates = HashSet::new();
        let mut binds = collect::Binds::default();
        collect::block(body, &mut binds);
        for n in unbound::assigned(body) {
            // The same name borrowed from the body (the collected `Rc<str>` is a copy).
            let Some(name) = binds.names.iter().map(|(b, _)| *b).find(|b| **b == *n) else {
                continue;
            };
            if params.iter().any(|p| *p.name.name == *name)
                || enclosing(name)
                || self.globs.contains(name)
                || self.included.contains(name)
            {
                continue;
            }
            candidates.insert(name);
        }
        if candidates.is_empty() {
            return;
        }
        for (name, span) in unbound::early_reads(body, candidates) {
            self.warning(
                Code::W2010,
                format!(
                    "local variable `{name}` is read before it is assigned: the assignment \
                     later in this function makes `{name}` local to all of it, so this read \
                     is an UnboundLocalError (only an enclosing function's local or a \
                     `glob` is rebound)"
                ),
                span,
            );
        }
    }

    /// E2008/W2008: `visit`, `skip` and `disengage` belong in abilities.
    fn walker_stmt(&mut self, word: &str, span: Span) {
        let span = keyword(span, word);
        match self.ctx.kind {
            CtxKind::Ability => {}
            CtxKind::Def | CtxKind::Lambda | CtxKind::ClassBody => self.warning(
                Code::W2008,
                format!("`{word}` in a plain function only works when a walker's ability calls it"),
                span,
            ),
            CtxKind::Module | CtxKind::Test => self.error(
                Code::E2008,
                format!("`{word}` outside of an ability (it needs a running walker)"),
                span,
            ),
        }
    }

    /// An expression statement or assignment value: the places `yield` may stand.
    fn yield_or_expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Yield { value, .. } => {
                if matches!(
                    self.ctx.kind,
                    CtxKind::Module | CtxKind::ClassBody | CtxKind::Lambda | CtxKind::Test
                ) {
                    self.error(
                        Code::E2029,
                        "`yield` outside of a function",
                        keyword(e.span, "yield"),
                    );
                }
                if self.ctx.is_async {
                    self.error(
                        Code::E2033,
                        "`yield` in an `async` function: async generators are not supported \
                         by svc; drop `async` (a plain generator) or return a list",
                        keyword(e.span, "yield"),
                    );
                }
                if let Some(v) = value {
                    self.expr(v);
                }
            }
            _ => self.expr(e),
        }
    }

    /// W2009: `here` belongs to walker code, `visitor` to node and edge code.
    fn special(&mut self, s: SpecialRef, span: Span) {
        use crate::ast::ArchKind;
        let kind = self.ctx.arch.map(|a| a.kind);
        match s {
            SpecialRef::Here if kind != Some(ArchKind::Walker) => self.warning(
                Code::W2009,
                "`here` is only defined in a walker's abilities (the walker's current location)",
                span,
            ),
            SpecialRef::Visitor if !matches!(kind, Some(ArchKind::Node | ArchKind::Edge)) => {
                self.warning(
                    Code::W2009,
                    "`visitor` is only defined in node and edge abilities (the visiting walker)",
                    span,
                );
            }
            _ => {}
        }
    }

    /// A comprehension: the first iterable runs outside, the rest sees the targets.
    fn comprehension(&mut self, gens: &'a [Comprehension], elts: &[&'a Expr]) {
        let mut binds = collect::Binds::default();
        for g in gens {
            collect::target(&g.target, None, &mut binds);
        }
        if let Some(g) = gens.first() {
            self.expr(&g.iter);
        }
        self.push_scope(
            ScopeKind::Comprehension,
            binds.names.iter().map(|(n, _)| *n).collect(),
        );
        for (i, g) in gens.iter().enumerate() {
            if i > 0 {
                self.expr(&g.iter);
            }
            self.target(&g.target);
            for c in &g.conds {
                self.expr(c);
            }
        }
        for e in elts {
            self.expr(e);
        }
        self.pop_scope();
    }
}

/// The resolving walk: statements, expressions, targets, patterns, annotations.
impl<'a> Visitor<'a> for Cx<'a, '_> {
    /// `break` leaves a loop's body or a `switch` (C-style fall-through otherwise).
    fn block(&mut self, stmts: &'a [Stmt], breakable: bool) {
        self.ctx.loops += u32::from(breakable);
        for s in stmts {
            self.stmt(s);
        }
        self.ctx.loops -= u32::from(breakable);
    }

    fn stmt(&mut self, s: &'a Stmt) {
        let fed = matches!(
            s.kind,
            StmtKind::Expr(_)
                | StmtKind::Assign { .. }
                | StmtKind::AugAssign { .. }
                | StmtKind::Return(_)
        );
        self.nested_yield += u32::from(fed);
        self.stmt_kind(s);
        self.nested_yield -= u32::from(fed);
    }

    fn item(&mut self, item: &'a Item) {
        self.declaration(item);
    }

    /// An assignment target: bound names need no lookup; the rest is evaluated.
    fn target(&mut self, t: &'a Expr) {
        match &t.kind {
            ExprKind::Name(_) => {}
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.target(x);
                }
            }
            ExprKind::Starred(x) => self.target(x),
            ExprKind::Attr { obj, name, .. } => {
                self.attr_assigned(name);
                self.expr(obj);
            }
            _ => self.expr(t),
        }
    }

    /// A `match` pattern: captures are bound; class names and value patterns are uses.
    fn pattern(&mut self, p: &'a Expr) {
        match &p.kind {
            ExprKind::Name(_) | ExprKind::Walrus { .. } => {}
            ExprKind::Call { func, args } => {
                self.expr(func);
                for a in args {
                    match a {
                        Arg::Positional(x)
                        | Arg::Keyword(_, x)
                        | Arg::Star(x)
                        | Arg::DoubleStar(x) => {
                            self.pattern(x);
                        }
                    }
                }
            }
            ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
                for x in xs {
                    self.pattern(x);
                }
            }
            ExprKind::Starred(x) => self.pattern(x),
            ExprKind::Dict(items) => {
                for it in items {
                    match it {
                        crate::ast::DictItem::Pair(k, v) => {
                            self.expr(k);
                            self.pattern(v);
                        }
                        crate::ast::DictItem::Spread(v) => self.pattern(v),
                    }
                }
            }
            ExprKind::Binary { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
                self.pattern(left);
                self.pattern(right);
            }
            ExprKind::Cast { expr, .. } => self.pattern(expr),
            _ => self.expr(p),
        }
    }

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Yield { .. } if self.nested_yield > 0 => self.yield_or_expr(e),
            ExprKind::Yield { .. } => {
                self.error(
                    Code::E2031,
                    "`yield` here (a condition, a loop header or another statement's part): svc \
                     runs `yield` in an expression statement, an assignment or a `return`; \
                     assign it first (`v = yield x;`)",
                    keyword(e.span, "yield"),
                );
                self.yield_or_expr(e);
            }
            ExprKind::Name(n) => {
                self.use_name(n, e.span, Mode::Runtime);
            }
            ExprKind::Await(inner) => {
                if !self.ctx.is_async {
                    self.error(
                        Code::E2032,
                        "`await` outside an async function: only an `async def` or \
                         `async can` may await; from synchronous code use `asyncio.run(...)`",
                        keyword(e.span, "await"),
                    );
                }
                self.expr(inner);
            }
            ExprKind::Special(s) => self.special(*s, e.span),
            ExprKind::ListComp { elt, gens }
            | ExprKind::SetComp { elt, gens }
            | ExprKind::GenExp { elt, gens } => self.comprehension(gens, &[elt]),
            ExprKind::DictComp { key, value, gens } => self.comprehension(gens, &[key, value]),
            ExprKind::Lambda { params, ret, body } => {
                self.params(params);
                if let Some(r) = ret {
                    self.annotation(r);
                }
                let ctx = FnCtx {
                    kind: CtxKind::Lambda,
                    loops: 0,
                    arch: self.ctx.arch,
                    ret: ret.as_deref(),
                    is_async: false,
                };
                self.function(params, body, ctx, false);
            }
            ExprKind::Cast { expr, ty } => {
                self.expr(expr);
                self.annotation(ty);
            }
            ExprKind::Call { func, args } => {
                crate::ast::visit::children(e, &mut |c| self.expr(c));
                if let Some((name, at)) = repeated_keyword(args) {
                    self.error(
                        Code::E2035,
                        format!("keyword argument repeated: `{name}`"),
                        at,
                    );
                    return;
                }
                self.note_setattr(func);
                self.check_call(func, args, e.span);
                self.check_method_call(func, args, e.span);
            }
            ExprKind::Connect { op, .. } => {
                crate::ast::visit::children(e, &mut |c| self.expr(c));
                self.check_connect_assigns(op);
            }
            ExprKind::Attr {
                obj,
                name,
                null_safe,
            } => {
                self.expr(obj);
                // `o?.name` reads a missing attribute as None: nothing to report.
                if !null_safe {
                    self.check_stdlib_member(obj, name);
                    self.check_attr(obj, name);
                }
            }
            _ => walk_expr(self, e),
        }
    }

    /// A type annotation: unresolved names only warn (W2001).
    fn annotation(&mut self, t: &'a Expr) {
        match &t.kind {
            ExprKind::Name(n) => {
                self.use_name(n, t.span, Mode::Annotation);
            }
            ExprKind::Str(_) | ExprKind::FString(_) | ExprKind::Special(_) => {}
            _ => crate::ast::visit::children(t, &mut |c| self.annotation(c)),
        }
    }
}

/// The span of the keyword a statement starts with (the whole statement if it does not).
fn keyword(span: Span, word: &str) -> Span {
    let len = word.len() as u32;
    if span.len() >= word.len() {
        Span {
            start: span.start,
            end: span.start + len,
        }
    } else {
        span
    }
}

/// The first keyword a call's arguments name a second time, with where.
fn repeated_keyword(args: &[Arg]) -> Option<(&str, Span)> {
    let mut seen: Vec<&str> = Vec::new();
    for a in args {
        if let Arg::Keyword(n, x) = a {
            if seen.contains(&&*n.name) {
                return Some((&n.name, n.span.to(x.span)));
            }
            seen.push(&n.name);
        }
    }
    None
}
