//! The one walk over the tree that the checker passes (and the interpreter's scans of a
//! body) share, in the style of `syn::visit`: a [`Visitor`] overrides the nodes it cares
//! about and calls the matching `walk_*` function for the rest.
//!
//! The walk follows evaluation order, so a pass that tracks "bound so far" sees reads
//! and bindings in the order they run: an assignment's value before its targets, a
//! `for`'s iterable before its target, a loop's condition before its body. It never
//! enters a nested declaration ([`Visitor::item`] decides) or a lambda's body (an
//! expression pass that wants it overrides [`Visitor::expr`] for `Lambda`).
//!
//! Recursion here follows the source's nesting, which the parser bounds
//! (`parser::MAX_DEPTH`), never the size of data.

use super::{
    Arg, DictItem, EdgeOp, ExceptHandler, Expr, ExprKind, FStringPart, Filter, Item, Name, Stmt,
    StmtKind,
};

/// A pass over statements and expressions. Every method has a default that walks on;
/// override one and call its `walk_*` function to keep walking below it.
pub trait Visitor<'a> {
    fn stmt(&mut self, s: &'a Stmt) {
        walk_stmt(self, s);
    }

    fn expr(&mut self, e: &'a Expr) {
        walk_expr(self, e);
    }

    /// A nested block. `breakable` when `break` leaves it: a loop's body or a
    /// `switch`'s cases.
    fn block(&mut self, stmts: &'a [Stmt], breakable: bool) {
        let _ = breakable;
        for s in stmts {
            self.stmt(s);
        }
    }

    /// What an assignment, declaration or `for` binds (`x`, `(a, *b)`, `o.f`, `d[k]`).
    fn target(&mut self, t: &'a Expr) {
        self.expr(t);
    }

    /// A `match` case's pattern or a `switch` case's value.
    fn pattern(&mut self, p: &'a Expr) {
        self.expr(p);
    }

    /// A type annotation (`x: T = ...`, `x: T;`, the type of a typed context block).
    fn annotation(&mut self, t: &'a Expr) {
        self.expr(t);
    }

    /// The name an `except ... as name` clause binds.
    fn bind_handler(&mut self, name: &'a Name) {
        let _ = name;
    }

    /// A declaration nested in a block (def, archetype, import, glob, impl). Not
    /// entered by default: it runs when it is called, not where it stands.
    fn item(&mut self, item: &'a Item) {
        let _ = item;
    }
}

/// Walk the parts of `s` in evaluation order.
pub fn walk_stmt<'a, V: Visitor<'a> + ?Sized>(v: &mut V, s: &'a Stmt) {
    match &s.kind {
        StmtKind::Empty
        | StmtKind::Error
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Skip
        | StmtKind::Disengage => {}
        StmtKind::Expr(e) | StmtKind::Report(e) | StmtKind::Delete(e) => v.expr(e),
        StmtKind::Assign { targets, ty, value } => {
            if let Some(t) = ty {
                v.annotation(t);
            }
            v.expr(value);
            for t in targets {
                v.target(t);
            }
        }
        StmtKind::Declare { target, ty } => {
            v.annotation(ty);
            v.target(target);
        }
        StmtKind::AugAssign { target, value, .. } => {
            v.expr(target);
            v.expr(value);
        }
        StmtKind::If {
            cond,
            body,
            elifs,
            orelse,
        } => {
            v.expr(cond);
            v.block(body, false);
            for (c, b) in elifs {
                v.expr(c);
                v.block(b, false);
            }
            if let Some(b) = orelse {
                v.block(b, false);
            }
        }
        StmtKind::While { cond, body, orelse } => {
            v.expr(cond);
            v.block(body, true);
            if let Some(b) = orelse {
                v.block(b, false);
            }
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => {
            v.expr(iter);
            v.target(target);
            v.block(body, true);
            if let Some(b) = orelse {
                v.block(b, false);
            }
        }
        StmtKind::IterFor {
            init,
            cond,
            step,
            body,
            orelse,
        } => {
            v.stmt(init);
            v.expr(cond);
            v.block(body, true);
            v.stmt(step);
            if let Some(b) = orelse {
                v.block(b, false);
            }
        }
        StmtKind::Forever { body } => v.block(body, true),
        StmtKind::With { items, body, .. } => {
            for item in items {
                v.expr(&item.manager);
                if let Some(t) = &item.target {
                    v.target(t);
                }
            }
            v.block(body, false);
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        } => {
            v.block(body, false);
            for h in handlers {
                walk_handler(v, h);
            }
            for b in [orelse, finally].into_iter().flatten() {
                v.block(b, false);
            }
        }
        StmtKind::Match { subject, cases } => {
            v.expr(subject);
            for c in cases {
                v.pattern(&c.pattern);
                if let Some(g) = &c.guard {
                    v.expr(g);
                }
                v.block(&c.body, false);
            }
        }
        StmtKind::Switch { subject, cases } => {
            v.expr(subject);
            for c in cases {
                if let Some(p) = &c.value {
                    v.pattern(p);
                }
                v.block(&c.body, true);
            }
        }
        StmtKind::Return(value) => {
            if let Some(e) = value {
                v.expr(e);
            }
        }
        StmtKind::Raise { exc, cause } => {
            for e in [exc, cause].into_iter().flatten() {
                v.expr(e);
            }
        }
        StmtKind::Assert { cond, msg } => {
            v.expr(cond);
            if let Some(m) = msg {
                v.expr(m);
            }
        }
        StmtKind::Visit {
            index,
            target,
            orelse,
        } => {
            if let Some(i) = index {
                v.expr(i);
            }
            v.expr(target);
            if let Some(b) = orelse {
                v.block(b, false);
            }
        }
        StmtKind::TypedContext { ty, body } => {
            v.annotation(ty);
            v.block(body, false);
        }
        StmtKind::Item(item) => v.item(item),
    }
}

/// An `except` clause: its type, the name it binds, its body.
pub fn walk_handler<'a, V: Visitor<'a> + ?Sized>(v: &mut V, h: &'a ExceptHandler) {
    if let Some(t) = &h.ty {
        v.expr(t);
    }
    if let Some(n) = &h.name {
        v.bind_handler(n);
    }
    v.block(&h.body, false);
}

/// Visit each direct sub-expression of `e` with [`Visitor::expr`].
pub fn walk_expr<'a, V: Visitor<'a> + ?Sized>(v: &mut V, e: &'a Expr) {
    children(e, &mut |c| v.expr(c));
}

/// Call `f` on each nested block of `s` (bodies, `else`s, handlers, cases; not the
/// bodies of nested declarations), with whether `break` leaves the block. For the
/// scans that only look at statements (which names a body assigns, whether it can
/// leave a loop).
pub fn blocks<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a [Stmt], bool)) {
    struct Blocks<'f, 'a>(&'f mut dyn FnMut(&'a [Stmt], bool));
    impl<'a> Visitor<'a> for Blocks<'_, 'a> {
        fn stmt(&mut self, _: &'a Stmt) {}
        fn expr(&mut self, _: &'a Expr) {}
        fn block(&mut self, stmts: &'a [Stmt], breakable: bool) {
            (self.0)(stmts, breakable);
        }
    }
    walk_stmt(&mut Blocks(f), s);
}

/// Call `f` on each direct sub-expression of `e`. Comprehension targets are included;
/// lambda parameters' defaults are, the lambda's body is not; type expressions of casts,
/// filters and edge hops are included.
pub fn children<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    match &e.kind {
        ExprKind::None
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::BigInt(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Ellipsis
        | ExprKind::Name(_)
        | ExprKind::Special(_)
        | ExprKind::Error => {}
        ExprKind::FString(parts) => fstring(parts, f),
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => xs.iter().for_each(f),
        ExprKind::Dict(items) => {
            for it in items {
                match it {
                    DictItem::Pair(k, v) => {
                        f(k);
                        f(v);
                    }
                    DictItem::Spread(v) => f(v),
                }
            }
        }
        ExprKind::ListComp { elt, gens }
        | ExprKind::SetComp { elt, gens }
        | ExprKind::GenExp { elt, gens } => {
            for g in gens {
                f(&g.target);
                f(&g.iter);
                g.conds.iter().for_each(&mut *f);
            }
            f(elt);
        }
        ExprKind::DictComp { key, value, gens } => {
            for g in gens {
                f(&g.target);
                f(&g.iter);
                g.conds.iter().for_each(&mut *f);
            }
            f(key);
            f(value);
        }
        ExprKind::Starred(x) | ExprKind::Await(x) | ExprKind::Ref(x) => f(x),
        ExprKind::Yield { value, .. } => {
            if let Some(x) = value {
                f(x);
            }
        }
        ExprKind::Attr { obj, .. } => f(obj),
        ExprKind::Index { obj, index, .. } => {
            f(obj);
            f(index);
        }
        ExprKind::Slice { lower, upper, step } => {
            for x in [lower, upper, step].into_iter().flatten() {
                f(x);
            }
        }
        ExprKind::Call { func, args } => {
            f(func);
            args_each(args, f);
        }
        ExprKind::Unary { operand, .. } => f(operand),
        ExprKind::Binary { left, right, .. }
        | ExprKind::BoolOp { left, right, .. }
        | ExprKind::Pipe { left, right, .. }
        | ExprKind::Spawn { left, right } => {
            f(left);
            f(right);
        }
        ExprKind::Compare { left, ops } => {
            f(left);
            for (_, x) in ops {
                f(x);
            }
        }
        ExprKind::Ternary { cond, then, orelse } => {
            f(then);
            f(cond);
            f(orelse);
        }
        ExprKind::Walrus { value, .. } => f(value),
        ExprKind::Lambda { params, .. } => {
            for p in params {
                if let Some(d) = &p.default {
                    f(d);
                }
            }
        }
        ExprKind::Cast { expr, ty } => {
            f(expr);
            f(ty);
        }
        ExprKind::Connect { left, right, op } => {
            f(left);
            if let Some(x) = &op.edge {
                f(x);
            }
            for (_, v) in &op.assigns {
                f(v);
            }
            f(right);
        }
        ExprKind::Disconnect { left, right, op } => {
            f(left);
            edge_op(op, f);
            f(right);
        }
        ExprKind::EdgeRef(r) => {
            if let Some(a) = &r.anchor {
                f(a);
            }
            for h in &r.hops {
                edge_op(&h.op, f);
                if let Some(flt) = &h.filter {
                    filter(flt, f);
                }
                if let Some(p) = &h.pin {
                    f(p);
                }
            }
        }
        ExprKind::Filter { obj, filter: flt } => {
            f(obj);
            filter(flt, f);
        }
        ExprKind::AssignComp { obj, assigns } => {
            f(obj);
            for (_, v) in assigns {
                f(v);
            }
        }
    }
}

/// Call `f` on the expression of each argument (positional, keyword, `*`, `**`).
pub fn args_each<'a>(args: &'a [Arg], f: &mut dyn FnMut(&'a Expr)) {
    for a in args {
        match a {
            Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => f(x),
        }
    }
}

fn fstring<'a>(parts: &'a [FStringPart], f: &mut dyn FnMut(&'a Expr)) {
    for p in parts {
        if let FStringPart::Expr { expr, spec, .. } = p {
            f(expr);
            if let Some(s) = spec {
                fstring(s, f);
            }
        }
    }
}

fn edge_op<'a>(op: &'a EdgeOp, f: &mut dyn FnMut(&'a Expr)) {
    if let Some(t) = &op.edge_type {
        f(t);
    }
    for c in &op.conds {
        f(&c.value);
    }
}

fn filter<'a>(flt: &'a Filter, f: &mut dyn FnMut(&'a Expr)) {
    if let Some(t) = &flt.ty {
        f(t);
    }
    for c in &flt.conds {
        f(&c.value);
    }
}
