//! `impl Name { has ...; def ...; }`: the body of an archetype given apart from its
//! declaration (`obj Vehicle;` ... `impl Vehicle { has wheels: int = 4; }`). The parser
//! keeps such a body as [`ImplBlock::members`]; [`merge_arch_impls`] moves it into the
//! archetype, wherever the two stand: at module level, inside another archetype, in a
//! function body or entry block (an `impl` finds the archetype declared beside it or in
//! an enclosing body, as in jaclang). A body of methods only (`impl Person { def greet
//! { ... } }`) is an archetype body when some archetype of the module has that name, and
//! otherwise the statement body of a function (`impl helper { def inner { } }`).

use super::{Archetype, ImplBlock, Item, Member, Stmt, StmtKind};
use std::collections::HashSet;

/// Merge each archetype body given by an `impl` into its archetype. What finds no
/// archetype is returned, taken out of `items` (an annex file's `impl` of an archetype
/// of its main module, or an error the checker and the interpreter report).
pub fn merge_arch_impls(items: &mut Vec<Item>) -> Vec<ImplBlock> {
    if !items.iter().any(item_has_impl) {
        return Vec::new();
    }
    let mut names = HashSet::new();
    for it in items.iter() {
        arch_names_item(it, &mut names);
    }
    for it in items.iter_mut() {
        decide_item(it, &names);
    }
    let pending = merge_items(items);
    merge_into(items, pending)
}

/// Merge `pending` (returned by [`merge_arch_impls`] for another file) into the
/// archetypes of `items`; what still finds none is returned.
pub fn merge_into(items: &mut [Item], pending: Vec<ImplBlock>) -> Vec<ImplBlock> {
    let archs = items
        .iter_mut()
        .filter_map(|it| match it {
            Item::Archetype(a) => Some(a),
            _ => None,
        })
        .collect();
    resolve(pending, archs)
}

/// Whether anything in the item may be an `impl` with an archetype body (cheap scan of
/// the module level and archetype bodies; bodies of functions are looked at anyway).
fn item_has_impl(it: &Item) -> bool {
    match it {
        Item::Impl(imp) => imp.members.is_some(),
        Item::Archetype(_) | Item::Ability(_) | Item::Entry(_) | Item::Test(_) => true,
        _ => false,
    }
}

fn arch_names_item(it: &Item, out: &mut HashSet<std::rc::Rc<str>>) {
    match it {
        Item::Archetype(a) => arch_names_arch(a, out),
        Item::Ability(ab) => arch_names_stmts(ab.body.as_deref().unwrap_or(&[]), out),
        Item::Entry(e) => arch_names_stmts(&e.body, out),
        Item::Test(t) => arch_names_stmts(&t.body, out),
        _ => {}
    }
}

fn arch_names_arch(a: &Archetype, out: &mut HashSet<std::rc::Rc<str>>) {
    out.insert(a.name.name.clone());
    for m in &a.members {
        match m {
            Member::Archetype(inner) => arch_names_arch(inner, out),
            Member::Ability(ab) => arch_names_stmts(ab.body.as_deref().unwrap_or(&[]), out),
            _ => {}
        }
    }
}

fn arch_names_stmts(stmts: &[Stmt], out: &mut HashSet<std::rc::Rc<str>>) {
    for s in stmts {
        if let StmtKind::Item(it) = &s.kind {
            arch_names_item(it, out);
        }
    }
}

/// A body of methods only whose target names no archetype is a function body: drop its
/// member reading.
fn decide(imp: &mut ImplBlock, names: &HashSet<std::rc::Rc<str>>) {
    if imp.members.is_some()
        && !imp.body.is_empty()
        && !(imp.target.len() == 1 && names.contains(&imp.target[0].name))
    {
        imp.members = None;
    }
}

fn decide_item(it: &mut Item, names: &HashSet<std::rc::Rc<str>>) {
    match it {
        Item::Impl(imp) => decide(imp, names),
        Item::Archetype(a) => decide_arch(a, names),
        Item::Ability(ab) => {
            if let Some(b) = &mut ab.body {
                decide_stmts(b, names);
            }
        }
        Item::Entry(e) => decide_stmts(&mut e.body, names),
        Item::Test(t) => decide_stmts(&mut t.body, names),
        _ => {}
    }
}

fn decide_arch(a: &mut Archetype, names: &HashSet<std::rc::Rc<str>>) {
    for m in &mut a.members {
        match m {
            Member::Impl(imp) => decide(imp, names),
            Member::Archetype(inner) => decide_arch(inner, names),
            Member::Ability(ab) => {
                if let Some(b) = &mut ab.body {
                    decide_stmts(b, names);
                }
            }
            _ => {}
        }
    }
}

fn decide_stmts(stmts: &mut [Stmt], names: &HashSet<std::rc::Rc<str>>) {
    for s in stmts {
        if let StmtKind::Item(it) = &mut s.kind {
            decide_item(it, names);
        }
    }
}

/// Take the archetype-body `impl`s out of `items` and merge them, innermost bodies
/// first; what finds no archetype inside is returned for the enclosing level.
fn merge_items(items: &mut Vec<Item>) -> Vec<ImplBlock> {
    let mut pending = Vec::new();
    let mut i = 0;
    while i < items.len() {
        match &mut items[i] {
            Item::Impl(imp) if imp.members.is_some() => {
                if let Item::Impl(imp) = items.remove(i) {
                    pending.push(imp);
                }
                continue;
            }
            Item::Archetype(a) => pending.extend(merge_arch(a)),
            Item::Ability(ab) => {
                if let Some(b) = &mut ab.body {
                    pending.extend(merge_stmts(b));
                }
            }
            Item::Entry(e) => pending.extend(merge_stmts(&mut e.body)),
            Item::Test(t) => pending.extend(merge_stmts(&mut t.body)),
            _ => {}
        }
        i += 1;
    }
    pending
}

/// [`merge_items`] over an archetype's body: its nested archetypes take the `impl`s
/// written beside them.
fn merge_arch(a: &mut Archetype) -> Vec<ImplBlock> {
    let mut pending = Vec::new();
    let mut i = 0;
    while i < a.members.len() {
        match &mut a.members[i] {
            Member::Impl(imp) if imp.members.is_some() => {
                if let Member::Impl(imp) = a.members.remove(i) {
                    pending.push(imp);
                }
                continue;
            }
            Member::Archetype(inner) => pending.extend(merge_arch(inner)),
            Member::Ability(ab) => {
                if let Some(b) = &mut ab.body {
                    pending.extend(merge_stmts(b));
                }
            }
            _ => {}
        }
        i += 1;
    }
    let archs = a
        .members
        .iter_mut()
        .filter_map(|m| match m {
            Member::Archetype(x) => Some(x),
            _ => None,
        })
        .collect();
    resolve(pending, archs)
}

/// [`merge_items`] over a body of statements (a function, an entry block).
fn merge_stmts(stmts: &mut Vec<Stmt>) -> Vec<ImplBlock> {
    let mut pending = Vec::new();
    let mut i = 0;
    while i < stmts.len() {
        if let StmtKind::Item(it) = &mut stmts[i].kind {
            match &mut **it {
                Item::Impl(imp) if imp.members.is_some() => {
                    if let StmtKind::Item(it) = stmts.remove(i).kind
                        && let Item::Impl(imp) = *it
                    {
                        pending.push(imp);
                    }
                    continue;
                }
                Item::Archetype(a) => pending.extend(merge_arch(a)),
                Item::Ability(ab) => {
                    if let Some(b) = &mut ab.body {
                        pending.extend(merge_stmts(b));
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    let archs = stmts
        .iter_mut()
        .filter_map(|s| match &mut s.kind {
            StmtKind::Item(it) => match &mut **it {
                Item::Archetype(a) => Some(a),
                _ => None,
            },
            _ => None,
        })
        .collect();
    resolve(pending, archs)
}

/// Merge each of `pending` into the first of `archs` with its name; return the others.
fn resolve(pending: Vec<ImplBlock>, mut archs: Vec<&mut Archetype>) -> Vec<ImplBlock> {
    let mut left = Vec::new();
    for imp in pending {
        let target = match imp.target.as_slice() {
            [one] => archs.iter_mut().find(|a| a.name.name == one.name),
            _ => None,
        };
        match target {
            Some(a) => {
                a.members.extend(imp.members.unwrap_or_default());
                a.has_body = true;
                if let super::ImplKind::Bases(b) = imp.kind {
                    a.bases.extend(b);
                }
            }
            None => left.push(imp),
        }
    }
    left
}
