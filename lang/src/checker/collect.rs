//! Binding collection: the names a block binds (Python-style, order does not matter).
//!
//! A function's locals are its parameters plus every name assigned anywhere in its body:
//! assignment and declaration targets, `for` targets, `except ... as` names, walrus
//! targets, comprehension targets, `match` captures and nested declarations. Augmented
//! assignment does not bind (in svc it rebinds the nearest enclosing binding), nested
//! functions and lambdas are not entered, and `glob`s bind at module level.

use crate::ast::visit::{Visitor, walk_expr, walk_stmt};
use crate::ast::{Arg, DictItem, Expr, ExprKind, Import, Item, Name, Stmt, StmtKind};

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
        out.stmt(s);
    }
}

impl<'a> Visitor<'a> for Binds<'a> {
    fn stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            // A plain `name = value` remembers its value (for the checks that follow a
            // name to the constructor it holds).
            StmtKind::Assign { targets, value, .. } if targets.len() == 1 => {
                self.expr(value);
                target(&targets[0], Some(value), self);
            }
            _ => walk_stmt(self, s),
        }
    }

    fn target(&mut self, t: &'a Expr) {
        target(t, None, self);
    }

    fn pattern(&mut self, p: &'a Expr) {
        pattern(p, self);
    }

    fn bind_handler(&mut self, name: &'a Name) {
        self.bind(&name.name, None);
    }

    fn item(&mut self, item: &'a Item) {
        match item {
            Item::Ability(a) => {
                if let Some(n) = &a.name {
                    self.bind(&n.name, None);
                }
            }
            Item::Archetype(a) => self.bind(&a.name.name, None),
            Item::Enum(e) => self.bind(&e.name.name, None),
            Item::Import(i) => self.imports.push(i),
            Item::Entry(e) => block(&e.body, self),
            Item::Glob(_) | Item::Impl(_) | Item::Test(_) => {}
        }
    }

    /// Walrus and comprehension targets inside an expression (lambdas are not entered).
    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Walrus { name, value } => {
                self.bind(&name.name, None);
                self.expr(value);
            }
            ExprKind::ListComp { gens, .. }
            | ExprKind::SetComp { gens, .. }
            | ExprKind::GenExp { gens, .. }
            | ExprKind::DictComp { gens, .. } => {
                for g in gens {
                    target(&g.target, None, self);
                }
                walk_expr(self, e);
            }
            ExprKind::Lambda { .. } => {}
            _ => walk_expr(self, e),
        }
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
        _ => out.expr(t),
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
