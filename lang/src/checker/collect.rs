//! Binding collection: the names a block binds (Python-style, order does not matter), and
//! a generic walk over the direct sub-expressions of an expression.
//!
//! A function's locals are its parameters plus every name assigned anywhere in its body:
//! assignment and declaration targets, `for` targets, `except ... as` names, walrus
//! targets, comprehension targets, `match` captures and nested declarations. Augmented
//! assignment does not bind (in svc it rebinds the nearest enclosing binding), nested
//! functions and lambdas are not entered, and `glob`s bind at module level.

use crate::ast::{Arg, DictItem, Expr, ExprKind, FStringPart, Import, Item, Stmt, StmtKind};

/// What one block binds.
#[derive(Default)]
pub(super) struct Binds<'a> {
    /// Each bound name with the value of a plain `name = value` (else `None`).
    pub names: Vec<(&'a str, Option<&'a Expr>)>,
    /// Imports nested in the block (their names are bound by the caller).
    pub imports: Vec<&'a Import>,
}

impl<'a> Binds<'a> {
    fn bind(&mut self, name: &'a str, value: Option<&'a Expr>) {
        self.names.push((name, value));
    }
}

pub(super) fn block<'a>(stmts: &'a [Stmt], out: &mut Binds<'a>) {
    for s in stmts {
        stmt(s, out);
    }
}

fn opt_block<'a>(stmts: &'a Option<Vec<Stmt>>, out: &mut Binds<'a>) {
    if let Some(b) = stmts {
        block(b, out);
    }
}

pub(super) fn stmt<'a>(s: &'a Stmt, out: &mut Binds<'a>) {
    match &s.kind {
        StmtKind::Expr(e) | StmtKind::Report(e) | StmtKind::Delete(e) => expr(e, out),
        StmtKind::Assign { targets, value, .. } => {
            let single = if targets.len() == 1 {
                Some(value)
            } else {
                None
            };
            for t in targets {
                target(t, single, out);
            }
            expr(value, out);
        }
        StmtKind::Declare { target: t, .. } => target(t, None, out),
        StmtKind::AugAssign {
            target: t, value, ..
        } => {
            expr(t, out);
            expr(value, out);
        }
        StmtKind::If {
            cond,
            body,
            elifs,
            orelse,
        } => {
            expr(cond, out);
            block(body, out);
            for (c, b) in elifs {
                expr(c, out);
                block(b, out);
            }
            opt_block(orelse, out);
        }
        StmtKind::While { cond, body, orelse } => {
            expr(cond, out);
            block(body, out);
            opt_block(orelse, out);
        }
        StmtKind::For {
            target: t,
            iter,
            body,
            orelse,
        } => {
            target(t, None, out);
            expr(iter, out);
            block(body, out);
            opt_block(orelse, out);
        }
        StmtKind::IterFor {
            init,
            cond,
            step,
            body,
            orelse,
        } => {
            stmt(init, out);
            expr(cond, out);
            stmt(step, out);
            block(body, out);
            opt_block(orelse, out);
        }
        StmtKind::Forever { body } | StmtKind::TypedContext { body, .. } => block(body, out),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        } => {
            block(body, out);
            for h in handlers {
                if let Some(t) = &h.ty {
                    expr(t, out);
                }
                if let Some(n) = &h.name {
                    out.bind(&n.name, None);
                }
                block(&h.body, out);
            }
            opt_block(orelse, out);
            opt_block(finally, out);
        }
        StmtKind::Switch { subject, cases } => {
            expr(subject, out);
            for c in cases {
                if let Some(p) = &c.value {
                    pattern(p, out);
                }
                block(&c.body, out);
            }
        }
        StmtKind::Match { subject, cases } => {
            expr(subject, out);
            for c in cases {
                pattern(&c.pattern, out);
                if let Some(g) = &c.guard {
                    expr(g, out);
                }
                block(&c.body, out);
            }
        }
        StmtKind::Return(e) => {
            if let Some(e) = e {
                expr(e, out);
            }
        }
        StmtKind::Raise { exc, cause } => {
            for e in [exc, cause].into_iter().flatten() {
                expr(e, out);
            }
        }
        StmtKind::Assert { cond, msg } => {
            expr(cond, out);
            if let Some(m) = msg {
                expr(m, out);
            }
        }
        StmtKind::Visit {
            index,
            target: t,
            orelse,
        } => {
            if let Some(i) = index {
                expr(i, out);
            }
            expr(t, out);
            opt_block(orelse, out);
        }
        StmtKind::Item(item) => match &**item {
            Item::Ability(a) => {
                if let Some(n) = &a.name {
                    out.bind(&n.name, None);
                }
            }
            Item::Archetype(a) => out.bind(&a.name.name, None),
            Item::Enum(e) => out.bind(&e.name.name, None),
            Item::Import(i) => out.imports.push(i),
            Item::Entry(e) => block(&e.body, out),
            Item::Glob(_) | Item::Impl(_) | Item::Test(_) => {}
        },
        StmtKind::Empty
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Skip
        | StmtKind::Disengage
        | StmtKind::Error => {}
    }
}

/// Bind the names of an assignment target (`x`, `(a, *b)`, `[p, q]`).
pub(super) fn target<'a>(t: &'a Expr, value: Option<&'a Expr>, out: &mut Binds<'a>) {
    match &t.kind {
        ExprKind::Name(n) => out.bind(n, value),
        ExprKind::Tuple(xs) | ExprKind::List(xs) => {
            for x in xs {
                target(x, None, out);
            }
        }
        ExprKind::Starred(x) => target(x, None, out),
        _ => expr(t, out),
    }
}

/// Bind the captures of a `match` pattern: bare names (and `as` names); class names,
/// dotted value patterns and mapping keys are not captures.
fn pattern<'a>(p: &'a Expr, out: &mut Binds<'a>) {
    match &p.kind {
        ExprKind::Name(n) => out.bind(n, None),
        ExprKind::Call { args, .. } => {
            for a in args {
                match a {
                    Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => {
                        pattern(x, out);
                    }
                }
            }
        }
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
            for x in xs {
                pattern(x, out);
            }
        }
        ExprKind::Starred(x) => pattern(x, out),
        ExprKind::Dict(items) => {
            for it in items {
                match it {
                    DictItem::Pair(_, v) => pattern(v, out),
                    DictItem::Spread(v) => pattern(v, out),
                }
            }
        }
        ExprKind::Binary { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
            pattern(left, out);
            pattern(right, out);
        }
        ExprKind::Cast { expr: inner, ty } => {
            pattern(inner, out);
            pattern(ty, out);
        }
        ExprKind::Walrus { name, value } => {
            out.bind(&name.name, None);
            pattern(value, out);
        }
        _ => {}
    }
}

/// Walrus and comprehension targets inside an expression (lambdas are not entered).
pub(super) fn expr<'a>(e: &'a Expr, out: &mut Binds<'a>) {
    match &e.kind {
        ExprKind::Walrus { name, value } => {
            out.bind(&name.name, None);
            expr(value, out);
        }
        ExprKind::ListComp { gens, .. }
        | ExprKind::SetComp { gens, .. }
        | ExprKind::GenExp { gens, .. }
        | ExprKind::DictComp { gens, .. } => {
            for g in gens {
                target(&g.target, None, out);
            }
            children(e, &mut |c| expr(c, out));
        }
        ExprKind::Lambda { .. } => {}
        _ => children(e, &mut |c| expr(c, out)),
    }
}

/// Call `f` on each direct sub-expression of `e`. Comprehension targets are included;
/// lambda parameters' defaults are, the lambda's body is not; type expressions of casts,
/// filters and edge hops are included.
pub(crate) fn children<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    match &e.kind {
        ExprKind::None
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::BigInt(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
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

fn args_each<'a>(args: &'a [Arg], f: &mut dyn FnMut(&'a Expr)) {
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

fn edge_op<'a>(op: &'a crate::ast::EdgeOp, f: &mut dyn FnMut(&'a Expr)) {
    if let Some(t) = &op.edge_type {
        f(t);
    }
    for c in &op.conds {
        f(&c.value);
    }
}

fn filter<'a>(flt: &'a crate::ast::Filter, f: &mut dyn FnMut(&'a Expr)) {
    if let Some(t) = &flt.ty {
        f(t);
    }
    for c in &flt.conds {
        f(&c.value);
    }
}
