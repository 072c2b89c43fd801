//! E2034: reading an attribute that an instance certainly lacks, and the arity and
//! literal-type checks of `calls.rs` for methods called on such an instance.
//!
//! The instance's archetype is known in two cases only:
//! - a name whose every binding in its scope is a constructor call of one local
//!   archetype (`p = P(..)`, module-level or in a function; parameters, loop targets and
//!   any other binding make it unknown);
//! - `self` in the code of a local archetype that no local archetype extends.
//!
//! The archetype and every base must be local, undecorated (or decorated only by
//! decorators known not to add members) and not a Python-style `class`. Names starting
//! with `_` are never reported (dunders and private helpers), nor `reports` on a walker.
//! Objects accept new attributes at run time (`p.extra = 1`), so the reads are only
//! collected while walking and reported at the end of the module, leaving out every
//! attribute name that the module assigns anywhere (`x.name = ..`, `x.name += ..`, a
//! `for x.name in` target); a module that calls `setattr` or touches `__dict__` reports
//! none. A nested def that rebinds an outer local to another archetype is not seen.

use super::{CtxKind, Cx, Decl, calls, decls, names};
use crate::ast::{ArchKind, Archetype, Arg, Expr, ExprKind, Name, SpecialRef};
use crate::diag::Code;
use crate::span::Span;
use std::collections::{HashMap, HashSet};

/// Attribute reads waiting for the end of the module.
#[derive(Default)]
pub(super) struct Pending<'a> {
    reads: Vec<(&'a str, String, Span)>,
    /// Attribute names assigned anywhere in the module.
    assigned: HashSet<&'a str>,
    /// `setattr` or `__dict__` seen: any attribute may exist.
    dynamic: bool,
}

/// The member names of `a` and its local bases, for suggestions.
fn member_names<'a>(cx: &Cx<'a, '_>, a: &'a Archetype, out: &mut Vec<(&'a str, u8)>, depth: u32) {
    if depth > 32 {
        return;
    }
    for m in &a.members {
        match m {
            crate::ast::Member::Has(h) => out.extend(h.vars.iter().map(|v| (&*v.name.name, 0))),
            crate::ast::Member::Ability(ab) => {
                out.extend(ab.name.as_ref().map(|n| (&*n.name, 0)));
            }
            _ => {}
        }
    }
    for b in &a.bases {
        if let ExprKind::Name(n) = &b.kind
            && let Some(Decl::Arch(base)) = cx.global_decl(n)
        {
            member_names(cx, base, out, depth + 1);
        }
    }
}

impl<'a> Cx<'a, '_> {
    /// The archetypes of a function's locals bound only by constructor calls of one local
    /// archetype. `names` is the new scope (not pushed yet); `params` are never typed.
    pub(super) fn local_types(
        &self,
        binds: &[(&'a str, Option<&'a Expr>)],
        names: &HashSet<&'a str>,
        params: &HashSet<&'a str>,
    ) -> HashMap<&'a str, &'a Archetype> {
        let mut out: HashMap<&'a str, Option<&'a Archetype>> = HashMap::new();
        for (name, value) in binds {
            let ty = value.and_then(|v| self.ctor_of(v, names));
            let slot = out.entry(name).or_insert(ty);
            let same = matches!((*slot, ty), (Some(a), Some(b)) if std::ptr::eq(a, b));
            if !same {
                *slot = None;
            }
        }
        out.into_iter()
            .filter(|(n, _)| !params.contains(n))
            .filter_map(|(n, t)| Some((n, t?)))
            .collect()
    }

    /// The local archetype `v` certainly constructs (`P(..)`), when `P` is not shadowed
    /// by a name of the scope about to be pushed.
    fn ctor_of(&self, v: &'a Expr, shadow: &HashSet<&'a str>) -> Option<&'a Archetype> {
        let ExprKind::Call { func, .. } = &v.kind else {
            return None;
        };
        let ExprKind::Name(n) = &func.kind else {
            return None;
        };
        if shadow.contains(&**n) {
            return None;
        }
        self.arch_named(n)
    }

    /// The archetype `e` is certainly an instance of, if known (see the module doc).
    fn instance_type(&self, e: &'a Expr) -> Option<&'a Archetype> {
        match &e.kind {
            ExprKind::Name(n) => self.name_type(n),
            ExprKind::Special(SpecialRef::SelfRef) => {
                let a = self.ctx.arch?;
                let in_code = matches!(
                    self.ctx.kind,
                    CtxKind::Def | CtxKind::Ability | CtxKind::Lambda
                );
                (in_code && !self.is_extended(a)).then_some(a)
            }
            _ => None,
        }
    }

    /// The archetype of a name bound only by constructor calls, resolved as `lookup`.
    fn name_type(&self, name: &str) -> Option<&'a Archetype> {
        if let Some(s) = self.scope_of(name) {
            return s.types.get(name).copied();
        }
        if self.globs.contains(name) {
            return None;
        }
        match self.global_decl(name)? {
            Decl::Var(Some(v)) => self.ctor_of(v, &HashSet::new()),
            _ => None,
        }
    }

    /// Some local archetype names `a` as a base: `self` may be an instance of it.
    fn is_extended(&self, a: &Archetype) -> bool {
        let is_a = |b: &Expr| match &b.kind {
            ExprKind::Name(n) => {
                matches!(self.global_decl(n), Some(Decl::Arch(y)) if std::ptr::eq(y, a))
            }
            _ => false,
        };
        self.globals
            .values()
            .any(|g| matches!(g.decl, Decl::Arch(x) if x.bases.iter().any(is_a)))
    }

    /// Every member of `a` is known: local bases only, no member-adding decorators,
    /// not a `class`.
    fn members_known(&self, a: &'a Archetype, depth: u32) -> bool {
        // A bodiless archetype may take its body from an annex file (`calls.rs`).
        if depth > 32 || a.kind == ArchKind::Class || !a.has_body {
            return false;
        }
        if !a.decorators.iter().all(calls::harmless_decorator) {
            return false;
        }
        a.bases.iter().all(|b| match &b.kind {
            ExprKind::Name(n) => match self.global_decl(n) {
                Some(Decl::Arch(base)) => self.members_known(base, depth + 1),
                _ => false,
            },
            _ => false,
        })
    }

    /// `obj.name` read: queue E2034 when the instance's archetype lacks `name`.
    pub(super) fn check_attr(&mut self, obj: &'a Expr, name: &'a Name) {
        let attr: &'a str = &name.name;
        if attr == "__dict__" {
            self.attrs.dynamic = true;
        }
        if attr.starts_with('_') {
            return;
        }
        let Some(a) = self.instance_type(obj) else {
            return;
        };
        if (attr == "reports" && a.kind == ArchKind::Walker) || !self.members_known(a, 0) {
            return;
        }
        if !matches!(
            decls::find_member(self, a, attr, 0),
            decls::MemberLookup::Missing
        ) {
            return;
        }
        let mut msg = format!(
            "`{}` has no field or ability `{attr}` ({} `{}` declares none, nor do its bases)",
            a.name.name,
            a.kind.keyword(),
            a.name.name
        );
        let mut cands = Vec::new();
        member_names(self, a, &mut cands, 0);
        if let Some(s) = names::best_match(attr, cands) {
            msg.push_str(&format!("; did you mean `{s}`?"));
        }
        self.attrs.reads.push((attr, msg, name.span));
    }

    /// `x.name = ..` (or `+=`, or a loop target): the attribute may exist from now on.
    pub(super) fn attr_assigned(&mut self, name: &'a Name) {
        self.attrs.assigned.insert(&name.name);
    }

    /// `obj.m(args)` on a known instance: the checks of a module-level def call.
    pub(super) fn check_method_call(&mut self, func: &'a Expr, args: &'a [Arg], span: Span) {
        let ExprKind::Attr { obj, name, .. } = &func.kind else {
            return;
        };
        let Some(a) = self.instance_type(obj) else {
            return;
        };
        if !self.members_known(a, 0)
            || args
                .iter()
                .any(|a| matches!(a, Arg::Star(_) | Arg::DoubleStar(_)))
        {
            return;
        }
        if let decls::MemberLookup::Ability(ab) = decls::find_member(self, a, &name.name, 0) {
            self.check_def_call(&name.name, ab, args, span);
        }
    }

    /// A call of `setattr` makes every attribute possible.
    pub(super) fn note_setattr(&mut self, func: &Expr) {
        if matches!(&func.kind, ExprKind::Name(n) if &**n == "setattr") {
            self.attrs.dynamic = true;
        }
    }

    /// Report the queued attribute reads that nothing in the module assigns.
    pub(super) fn report_attrs(&mut self) {
        let pending = std::mem::take(&mut self.attrs);
        if pending.dynamic {
            return;
        }
        for (attr, msg, span) in pending.reads {
            if !pending.assigned.contains(attr) {
                self.error(Code::E2034, msg, span);
            }
        }
    }
}
