//! Which names a body binds: the analyses the checker (W2010, unbound locals) and both
//! cores (the VM's slots, the tree-walker's `UnboundLocalError`) share. Pure functions of
//! the AST, so the checker does not import the interpreter for them.

use super::{Arg, BinOp, DictItem, Expr, ExprKind as E, Stmt, StmtKind as S};
use std::rc::Rc;

/// Every name `stmts` assign, in order of first appearance, appended to `out`.
pub(crate) fn collect_locals(stmts: &[Stmt], out: &mut Vec<Rc<str>>) {
    let add = |n: &Rc<str>, out: &mut Vec<Rc<str>>| {
        if !out.iter().any(|x| x == n) {
            out.push(n.clone());
        }
    };
    for s in stmts {
        match &s.kind {
            S::Assign { targets, .. } => {
                for t in targets {
                    for n in flat_target(t).unwrap_or_default() {
                        add(&n, out);
                    }
                }
            }
            S::AugAssign { target, .. } => {
                if let E::Name(n) = &target.kind {
                    add(n, out);
                }
            }
            S::If {
                body,
                elifs,
                orelse,
                ..
            } => {
                collect_locals(body, out);
                for (_, b) in elifs {
                    collect_locals(b, out);
                }
                if let Some(b) = orelse {
                    collect_locals(b, out);
                }
            }
            S::While { body, orelse, .. } => {
                collect_locals(body, out);
                if let Some(b) = orelse {
                    collect_locals(b, out);
                }
            }
            S::For {
                target,
                body,
                orelse,
                ..
            } => {
                for n in flat_target(target).unwrap_or_default() {
                    add(&n, out);
                }
                collect_locals(body, out);
                if let Some(b) = orelse {
                    collect_locals(b, out);
                }
            }
            S::IterFor {
                init,
                step,
                body,
                orelse,
                ..
            } => {
                collect_locals(std::slice::from_ref(&**init), out);
                collect_locals(std::slice::from_ref(&**step), out);
                collect_locals(body, out);
                if let Some(b) = orelse {
                    collect_locals(b, out);
                }
            }
            S::Forever { body } => collect_locals(body, out),
            _ => {}
        }
    }
}

/// The names of a statement's flat tuple or list target of plain names (no `*`, no
/// nesting); `None` for anything else.
pub(crate) fn flat_target(target: &Expr) -> Option<Vec<Rc<str>>> {
    match &target.kind {
        E::Name(n) => Some(vec![n.clone()]),
        E::Tuple(items) | E::List(items) if !items.is_empty() => items
            .iter()
            .map(|t| match &t.kind {
                E::Name(n) => Some(n.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// Every name `stmts` bind, for the tree-walker's UnboundLocalError: what the compiled
/// core makes slots of (`collect_locals`, which stops at the statements it does not
/// compile) and, at any depth, the names bound by `except ... as`, `match` patterns and
/// assignments inside `try`, `match`, `switch`, `with` and typed-context blocks and the
/// targets of `with ... as` (a def holding
/// one of these runs on the tree-walker, so no slot depends on them).
pub(crate) fn collect_assigned(stmts: &[Stmt], out: &mut Vec<Rc<str>>) {
    fn add(n: &Rc<str>, out: &mut Vec<Rc<str>>) {
        if !out.iter().any(|x| x == n) {
            out.push(n.clone());
        }
    }
    collect_locals(stmts, out);
    for s in stmts {
        match &s.kind {
            S::Try { handlers, .. } => {
                for n in handlers.iter().filter_map(|h| h.name.as_ref()) {
                    add(&n.name, out);
                }
            }
            S::Match { cases, .. } => {
                for c in cases {
                    let mut names = Vec::new();
                    pattern_captures(&c.pattern, &mut names);
                    for n in &names {
                        add(n, out);
                    }
                }
            }
            S::With { items, .. } => {
                for t in items.iter().filter_map(|i| i.target.as_ref()) {
                    for n in flat_target(t).unwrap_or_default() {
                        add(&n, out);
                    }
                }
            }
            // A `visit`'s `else` block is not scanned.
            S::Visit { .. } => continue,
            _ => {}
        }
        super::visit::blocks(s, &mut |b, _| collect_assigned(b, out));
    }
}

/// The names a `match` pattern binds when it matches (its captures, `as` names and
/// `*rest`/`**rest` targets), as `match_pattern` binds them.
pub(crate) fn pattern_captures(p: &Expr, out: &mut Vec<Rc<str>>) {
    match &p.kind {
        E::Name(n) if &**n != "_" => out.push(n.clone()),
        E::Binary {
            op: BinOp::BitOr,
            left,
            right,
        } => {
            pattern_captures(left, out);
            pattern_captures(right, out);
        }
        E::Cast { expr, ty } => {
            pattern_captures(expr, out);
            if let E::Name(n) = &ty.kind
                && &**n != "_"
            {
                out.push(n.clone());
            }
        }
        E::List(items) | E::Tuple(items) => {
            for t in items {
                match &t.kind {
                    E::Starred(inner) => pattern_captures(inner, out),
                    _ => pattern_captures(t, out),
                }
            }
        }
        E::Dict(items) => {
            for item in items {
                match item {
                    DictItem::Pair(_, pat) => pattern_captures(pat, out),
                    DictItem::Spread(r) => pattern_captures(r, out),
                }
            }
        }
        E::Call { args, .. } => {
            for a in args {
                if let Arg::Positional(pe) | Arg::Keyword(_, pe) = a {
                    pattern_captures(pe, out);
                }
            }
        }
        _ => {}
    }
}
