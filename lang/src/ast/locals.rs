//! The `<locals>` part of a local archetype's `__qualname__`: an archetype declared in a
//! function body is `make.<locals>.Local` to Python (its `repr`, `<class '...'>` and
//! `__qualname__` show it), a method's `Shop.build.<locals>.Item`. [`mark_local_archetypes`]
//! records the prefix on each such archetype ([`Archetype::locals`]) once, after parsing;
//! archetypes nested in it take it through their enclosing class
//! (`interp::value::Class::qualname`). As `impls.rs` does, it looks at the statements of
//! a body itself (where archetypes are declared), not inside its `if`s and loops. Entry
//! blocks are module-level code to Python, so their archetypes have no prefix.

use super::{Ability, Archetype, Item, Member, Stmt, StmtKind};
use std::rc::Rc;

/// Record the `<locals>` prefix of every archetype declared in a function body.
pub fn mark_local_archetypes(items: &mut [Item]) {
    for it in items {
        item(it, "");
    }
}

/// `prefix` is the qualified name of the enclosing scope followed by a dot, or empty at
/// module level.
fn item(it: &mut Item, prefix: &str) {
    match it {
        Item::Archetype(a) => arch(a, prefix),
        Item::Ability(ab) => ability(ab, prefix),
        Item::Impl(imp) if imp.members.is_none() && !imp.target.is_empty() => {
            let name: Vec<&str> = imp.target.iter().map(|n| &*n.name).collect();
            body(
                &mut imp.body,
                &format!("{prefix}{}.<locals>.", name.join(".")),
            );
        }
        _ => {}
    }
}

fn arch(a: &mut Archetype, prefix: &str) {
    let inner = format!("{prefix}{}.", a.name.name);
    for m in &mut a.members {
        match m {
            Member::Archetype(x) => arch(x, &inner),
            Member::Ability(ab) => ability(ab, &inner),
            _ => {}
        }
    }
}

/// A named function's or method's body: its archetypes are `<prefix><name>.<locals>.X`.
fn ability(ab: &mut Ability, prefix: &str) {
    if let (Some(n), Some(b)) = (&ab.name, &mut ab.body) {
        body(b, &format!("{prefix}{}.<locals>.", n.name));
    }
}

fn body(stmts: &mut [Stmt], prefix: &str) {
    for s in stmts {
        if let StmtKind::Item(it) = &mut s.kind {
            if let Item::Archetype(a) = &mut **it {
                a.locals = Some(Rc::from(prefix.trim_end_matches('.')));
            }
            item(it, prefix);
        }
    }
}
