//! W2010: a def reads one of its own locals before any assignment of it could have run.
//!
//! The run-time rule (ARCHITECTURE.md "Scoping of assignments"): every name a def
//! assigns (`ast::binds::collect_assigned`) is local to the whole def, unless the assignment
//! rebinds an enclosing function's local or a module `glob`; reading such a local before
//! it is bound is an `UnboundLocalError`. This pass walks a def body in source order and
//! reports a read of a local that no earlier statement assigns. It only reports what is
//! certain to fail when the read runs: a name assigned anywhere inside a loop counts as
//! bound throughout that loop (a later iteration may read it), nested defs, lambdas
//! and generator expressions are not entered (they run later), comprehension targets
//! shadow, a generator def is skipped, and each name is reported once.

use crate::ast::visit::{Visitor, walk_expr, walk_stmt};
use crate::ast::{Expr, ExprKind, Name, Stmt, StmtKind};
use crate::span::Span;
use std::collections::HashSet;
use std::rc::Rc;

/// The first read of each of `candidates` that no assignment before it binds, in
/// source order. `candidates` are the def's locals that no enclosing binding can
/// satisfy (see the module comment).
pub(super) fn early_reads<'a>(
    body: &'a [Stmt],
    candidates: HashSet<&'a str>,
) -> Vec<(&'a str, Span)> {
    let mut w = Walk {
        candidates,
        bound: HashSet::new(),
        shadow: Vec::new(),
        found: Vec::new(),
        generator: false,
    };
    for s in body {
        w.stmt(s);
    }
    if w.generator { Vec::new() } else { w.found }
}

/// The names the run time treats as assigned by `stmts` (what makes them local).
pub(super) fn assigned(stmts: &[Stmt]) -> Vec<Rc<str>> {
    let mut out = Vec::new();
    crate::ast::binds::collect_assigned(stmts, &mut out);
    out
}

struct Walk<'a> {
    candidates: HashSet<&'a str>,
    /// Names some statement before this point assigns.
    bound: HashSet<&'a str>,
    /// Targets of the comprehensions being walked (innermost last).
    shadow: Vec<Vec<Rc<str>>>,
    found: Vec<(&'a str, Span)>,
    /// The def holds `yield`: it runs as a generator, not checked here.
    generator: bool,
}

impl<'a> Walk<'a> {
    fn read(&mut self, name: &'a str, span: Span) {
        if self.candidates.contains(name)
            && !self.bound.contains(name)
            && !self.shadow.iter().flatten().any(|n| &**n == name)
            && !self.found.iter().any(|(n, _)| *n == name)
        {
            self.found.push((name, span));
        }
    }

    fn bind(&mut self, name: &'a str) {
        self.bound.insert(name);
    }

    /// Every name a loop assigns counts as bound inside it (a later iteration reads
    /// what an earlier one bound).
    fn bind_loop(&mut self, stmts: &'a [Stmt]) {
        for n in assigned(stmts) {
            if let Some(c) = self.candidates.get(&*n).copied() {
                self.bound.insert(c);
            }
        }
    }
}

impl<'a> Visitor<'a> for Walk<'a> {
    fn stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
                if let ExprKind::Name(n) = &target.kind {
                    self.bind(n);
                }
            }
            StmtKind::While { cond, body, orelse } => {
                self.expr(cond);
                self.bind_loop(body);
                self.body(body, orelse);
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                self.expr(iter);
                self.target(target);
                self.bind_loop(body);
                self.body(body, orelse);
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                self.stmt(init);
                self.expr(cond);
                self.bind_loop(body);
                self.bind_loop(std::slice::from_ref(&**step));
                self.block(body, true);
                self.stmt(step);
                if let Some(b) = orelse {
                    self.block(b, false);
                }
            }
            StmtKind::Forever { body } => {
                self.bind_loop(body);
                self.block(body, true);
            }
            StmtKind::Match { subject, cases } => {
                self.expr(subject);
                for c in cases {
                    // Value patterns are not walked (no report is better than a wrong
                    // one); captures bind.
                    let mut caps = Vec::new();
                    crate::ast::binds::pattern_captures(&c.pattern, &mut caps);
                    for n in caps {
                        if let Some(c) = self.candidates.get(&*n).copied() {
                            self.bound.insert(c);
                        }
                    }
                    if let Some(g) = &c.guard {
                        self.expr(g);
                    }
                    self.block(&c.body, false);
                }
            }
            // `del` targets, declarations without a value and nested items read
            // nothing checked here; whatever they might bind counts as bound from now on.
            StmtKind::Delete(_) | StmtKind::Declare { .. } | StmtKind::Item(_) => {
                self.bind_loop(std::slice::from_ref(s));
            }
            _ => walk_stmt(self, s),
        }
    }

    fn bind_handler(&mut self, name: &'a Name) {
        self.bind(&name.name);
    }

    /// An annotation is a type, not a read of a local.
    fn annotation(&mut self, _: &'a Expr) {}

    fn target(&mut self, t: &'a Expr) {
        match &t.kind {
            ExprKind::Name(n) => self.bind(n),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.target(x);
                }
            }
            ExprKind::Starred(x) => self.target(x),
            _ => self.expr(t),
        }
    }

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Name(n) => self.read(n, e.span),
            ExprKind::Walrus { name, value } => {
                self.expr(value);
                self.bind(&name.name);
            }
            ExprKind::Yield { value, .. } => {
                self.generator = true;
                if let Some(v) = value {
                    self.expr(v);
                }
            }
            // Run later (or, for a generator expression, all but its first iterable).
            ExprKind::Lambda { .. } => {}
            ExprKind::GenExp { gens, .. } => {
                if let Some(g) = gens.first() {
                    self.expr(&g.iter);
                }
            }
            ExprKind::ListComp { elt, gens } | ExprKind::SetComp { elt, gens } => {
                self.comprehension(gens, &[elt]);
            }
            ExprKind::DictComp { key, value, gens } => self.comprehension(gens, &[key, value]),
            // A type and a filter's field names are not reads of locals.
            ExprKind::Cast { expr, .. } => self.expr(expr),
            ExprKind::Filter { obj, .. } => self.expr(obj),
            ExprKind::EdgeRef(_) => {}
            _ => walk_expr(self, e),
        }
    }
}

impl<'a> Walk<'a> {
    /// A loop's body, then its `else`.
    fn body(&mut self, body: &'a [Stmt], orelse: &'a Option<Vec<Stmt>>) {
        self.block(body, true);
        if let Some(b) = orelse {
            self.block(b, false);
        }
    }

    /// The first iterable is read where the comprehension is; the rest sees its
    /// targets as its own names.
    fn comprehension(&mut self, gens: &'a [crate::ast::Comprehension], elts: &[&'a Expr]) {
        let Some(first) = gens.first() else {
            return;
        };
        self.expr(&first.iter);
        let mut names = Vec::new();
        for g in gens {
            let mut b = super::collect::Binds::default();
            super::collect::target(&g.target, None, &mut b);
            names.extend(b.names.iter().map(|(n, _)| Rc::from(*n)));
        }
        self.shadow.push(names);
        for (i, g) in gens.iter().enumerate() {
            if i > 0 {
                self.expr(&g.iter);
            }
            for c in &g.conds {
                self.expr(c);
            }
        }
        for e in elts {
            self.expr(e);
        }
        self.shadow.pop();
    }
}
