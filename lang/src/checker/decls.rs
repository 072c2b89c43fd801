//! Declarations: the module-level names (and E2009 duplicates), archetype and enum bodies,
//! typed edge endpoints (E2027, E2028), ability triggers (E2004) and `impl` targets (E2013).

use super::{CtxKind, Cx, Decl, FnCtx, Found, Mode, ScopeKind, collect};
use crate::ast::visit::{Visitor, blocks};
use crate::ast::{
    Ability, AbilityKind, ArchKind, Archetype, BinOp, EnumDecl, Expr, ExprKind, ImplBlock,
    ImplKind, Item, Member, SpecialRef, Stmt, StmtKind,
};
use crate::diag::Code;
use crate::span::Span;
use std::collections::{HashMap, HashSet};

/// How deep base-class chains are followed (guards against cycles).
const MAX_BASE_DEPTH: u32 = 32;

/// The outcome of looking a member up in an archetype and its bases.
pub(super) enum MemberLookup<'a> {
    Ability(&'a Ability),
    /// A nested archetype, enum or field of that name.
    Other,
    Missing,
    /// Some base is not a local archetype: the member may exist there.
    Unknown,
}

/// Is `name` a field or ability of `a` (or of its local bases)?
pub(super) fn has_member(cx: &Cx<'_, '_>, a: &Archetype, name: &str, depth: u32) -> bool {
    if depth > MAX_BASE_DEPTH {
        return false;
    }
    let own = a.members.iter().any(|m| match m {
        Member::Has(h) => h.vars.iter().any(|v| &*v.name.name == name),
        Member::Ability(ab) => ab.name.as_ref().is_some_and(|n| &*n.name == name),
        _ => false,
    });
    own || a.bases.iter().any(|b| match &b.kind {
        ExprKind::Name(n) => match cx.global_decl(n) {
            Some(Decl::Arch(base)) => has_member(cx, base, name, depth + 1),
            _ => false,
        },
        _ => false,
    })
}

fn arch_desc(a: &Archetype) -> String {
    format!("{} `{}`", a.kind.keyword(), a.name.name)
}

impl<'a> Cx<'a, '_> {
    /// First pass over a module-level item: bind its names, check imports and duplicates.
    pub(super) fn declare_item(&mut self, item: &'a Item) {
        match item {
            Item::Import(imp) => {
                for n in self.import(imp) {
                    self.bind_global(n, Decl::Import);
                }
            }
            Item::Archetype(a) => {
                if a.has_body {
                    self.declare_unique(&a.name.name, a.name.span);
                }
                self.bind_global(&a.name.name, Decl::Arch(a));
                self.declare_nested(&a.members);
            }
            Item::Enum(e) => {
                self.declare_unique(&e.name.name, e.name.span);
                self.bind_global(&e.name.name, Decl::Enum);
                self.declare_nested(&e.extra);
            }
            Item::Ability(ab) => {
                if let Some(n) = &ab.name {
                    if ab.body.is_some() {
                        self.declare_unique(&n.name, n.span);
                    }
                    self.bind_global(&n.name, Decl::Def(ab));
                }
                if let Some(b) = &ab.body {
                    self.nested_globs(b);
                }
            }
            Item::Glob(g) => {
                for v in &g.vars {
                    self.bind_global(&v.name.name, Decl::Var(v.value.as_ref()));
                    self.globs.insert(&v.name.name);
                }
            }
            Item::Impl(imp) => self.nested_globs(&imp.body),
            Item::Entry(e) => self.declare_block(&e.body),
            Item::Test(t) => self.nested_globs(&t.body),
        }
    }

    /// Names bound by module-level code: they are module globals.
    fn declare_block(&mut self, body: &'a [Stmt]) {
        let mut binds = collect::Binds::default();
        collect::block(body, &mut binds);
        for (n, v) in binds.names {
            self.bind_global(n, Decl::Var(v));
        }
        for imp in binds.imports {
            for n in self.import(imp) {
                self.bind_global(n, Decl::Import);
            }
        }
        self.nested_globs(body);
    }

    /// E2009 for a second module-level archetype, enum or def of one name. Declarations
    /// without a body (`edge E;`, `def f(x: int);`) may be forward declarations: they
    /// never count as duplicates.
    fn declare_unique(&mut self, name: &'a str, span: Span) {
        let dup = match self.globals.get(name).map(|g| g.decl) {
            Some(Decl::Arch(a)) => a.has_body,
            Some(Decl::Def(ab)) => ab.body.is_some(),
            Some(Decl::Enum) => true,
            _ => false,
        };
        if dup {
            self.error(
                Code::E2009,
                format!("the name `{name}` is defined multiple times"),
                span,
            );
        }
    }

    /// Nested archetypes and enums are treated as visible module-wide (the interpreter
    /// registers nested enums there); nested globs bind at module level.
    fn declare_nested(&mut self, members: &'a [Member]) {
        for m in members {
            match m {
                Member::Archetype(inner) => {
                    self.bind_global(&inner.name.name, Decl::Arch(inner));
                    self.declare_nested(&inner.members);
                }
                Member::Enum(e) => {
                    self.bind_global(&e.name.name, Decl::Enum);
                    self.declare_nested(&e.extra);
                }
                Member::Ability(ab) => {
                    if let Some(b) = &ab.body {
                        self.nested_globs(b);
                    }
                }
                Member::Impl(imp) => self.nested_globs(&imp.body),
                Member::Entry(e) => self.nested_globs(&e.body),
                Member::Stmt(s) => self.nested_globs(std::slice::from_ref(s)),
                Member::Has(_) => {}
            }
        }
    }

    /// `glob` declarations inside blocks bind at module level.
    fn nested_globs(&mut self, stmts: &'a [Stmt]) {
        for s in stmts {
            match &s.kind {
                StmtKind::Item(item) => match &**item {
                    Item::Glob(g) => {
                        for v in &g.vars {
                            self.bind_global(&v.name.name, Decl::Var(v.value.as_ref()));
                            self.globs.insert(&v.name.name);
                        }
                    }
                    Item::Ability(ab) => {
                        if let Some(b) = &ab.body {
                            self.nested_globs(b);
                        }
                    }
                    Item::Archetype(a) => self.declare_nested(&a.members),
                    Item::Entry(e) => self.nested_globs(&e.body),
                    Item::Impl(imp) => self.nested_globs(&imp.body),
                    Item::Test(t) => self.nested_globs(&t.body),
                    Item::Enum(_) | Item::Import(_) => {}
                },
                _ => blocks(s, &mut |b, _| self.nested_globs(b)),
            }
        }
    }

    /// Walk an archetype declaration (anywhere).
    pub(super) fn archetype(&mut self, a: &'a Archetype) {
        for d in &a.decorators {
            self.expr(d);
        }
        for b in &a.bases {
            self.expr(b);
        }
        if let Some((src, dst)) = &a.endpoints {
            if a.kind == ArchKind::Edge {
                self.endpoint(src);
                self.endpoint(dst);
            } else {
                self.error(
                    Code::E2027,
                    format!(
                        "typed endpoints are only allowed on edges, not on {} '{}'",
                        a.kind.keyword(),
                        a.name.name
                    ),
                    src.span.to(dst.span),
                );
            }
        }
        let mut names: HashSet<&'a str> = HashSet::new();
        let mut fields: HashMap<&'a str, ()> = HashMap::new();
        for m in &a.members {
            match m {
                Member::Has(h) => {
                    for v in &h.vars {
                        let n: &'a str = &v.name.name;
                        if fields.insert(n, ()).is_some() {
                            self.error(
                                Code::E2009,
                                format!("field `{n}` is declared twice in {}", arch_desc(a)),
                                v.name.span,
                            );
                        }
                        names.insert(n);
                    }
                }
                Member::Ability(ab) => {
                    if let Some(n) = &ab.name {
                        names.insert(&n.name);
                    }
                }
                Member::Archetype(inner) => {
                    names.insert(&inner.name.name);
                }
                Member::Enum(e) => {
                    names.insert(&e.name.name);
                }
                Member::Impl(_) | Member::Entry(_) | Member::Stmt(_) => {}
            }
        }
        self.push_scope(ScopeKind::Class, names);
        self.members(&a.members, Some(a));
        self.pop_scope();
    }

    /// The members of an archetype (or the extra members of an enum).
    fn members(&mut self, members: &'a [Member], owner: Option<&'a Archetype>) {
        for m in members {
            match m {
                Member::Has(h) => {
                    for v in &h.vars {
                        self.annotation(&v.ty);
                        if let Some(d) = &v.default {
                            self.expr(d);
                            self.type_check(&v.ty, d);
                        }
                        if let Some(acc) = &v.accessors {
                            self.accessors(acc, owner);
                        }
                    }
                }
                Member::Ability(ab) => self.ability(ab, owner),
                Member::Archetype(inner) => self.archetype(inner),
                Member::Enum(e) => self.enum_decl(e),
                Member::Impl(imp) => self.impl_block(imp, owner),
                Member::Entry(e) => {
                    let ctx = FnCtx {
                        kind: CtxKind::ClassBody,
                        loops: 0,
                        arch: owner,
                        ret: None,
                        is_async: false,
                    };
                    self.function(&[], &e.body, ctx, true);
                }
                Member::Stmt(s) => {
                    let ctx = FnCtx {
                        kind: CtxKind::ClassBody,
                        loops: 0,
                        arch: owner,
                        ret: None,
                        is_async: false,
                    };
                    self.function(&[], std::slice::from_ref(s), ctx, true);
                }
            }
        }
    }

    pub(super) fn enum_decl(&mut self, e: &'a EnumDecl) {
        for d in &e.decorators {
            self.expr(d);
        }
        for b in &e.bases {
            self.annotation(b);
        }
        let mut names: HashSet<&'a str> = e.members.iter().map(|m| &*m.name.name).collect();
        for x in &e.extra {
            if let Member::Ability(ab) = x
                && let Some(n) = &ab.name
            {
                names.insert(&n.name);
            }
        }
        self.push_scope(ScopeKind::Class, names);
        for m in &e.members {
            if let Some(v) = &m.value {
                self.expr(v);
            }
        }
        self.members(&e.extra, None);
        self.pop_scope();
    }

    /// A `def` or `can`, at module level, in an archetype (`owner`) or nested in a block.
    pub(super) fn ability(&mut self, ab: &'a Ability, owner: Option<&'a Archetype>) {
        for d in &ab.decorators {
            self.expr(d);
        }
        if let Some(t) = ab.event.as_ref().and_then(|e| e.trigger.as_ref()) {
            self.trigger(t);
        }
        let params = ab.signature.as_ref().map_or(&[][..], |s| &s.params[..]);
        self.signature(ab.signature.as_ref());
        if let Some(body) = &ab.body {
            let kind = if ab.kind == AbilityKind::Can || ab.event.is_some() {
                CtxKind::Ability
            } else {
                CtxKind::Def
            };
            let ret = ab.signature.as_ref().and_then(|s| s.ret.as_ref());
            let ctx = FnCtx {
                kind,
                loops: 0,
                arch: owner.or(self.ctx.arch),
                ret,
                is_async: ab.is_async,
            };
            // `class def` binds `cls` (the class it is called on).
            if ab.is_class_method {
                self.push_scope(ScopeKind::Function, ["cls"].into_iter().collect());
            }
            self.function(params, body, ctx, false);
            if ab.is_class_method {
                self.pop_scope();
            }
        }
    }

    /// A property's accessor bodies, checked as methods of `owner`.
    fn accessors(&mut self, acc: &'a crate::ast::Accessors, owner: Option<&'a Archetype>) {
        for one in [&acc.getter, &acc.setter, &acc.deleter]
            .into_iter()
            .flatten()
        {
            self.params(&one.params);
            if let Some(t) = &one.ret {
                self.annotation(t);
            }
            if let Some(body) = &one.body {
                let ctx = FnCtx {
                    kind: CtxKind::Def,
                    loops: 0,
                    arch: owner.or(self.ctx.arch),
                    ret: one.ret.as_ref(),
                    is_async: false,
                };
                self.function(&one.params, body, ctx, false);
            }
        }
    }

    /// E2004: an ability trigger must name a type.
    pub(super) fn trigger(&mut self, t: &'a Expr) {
        const WANT: &str = "an ability trigger must be a node, edge or walker type";
        match &t.kind {
            ExprKind::Binary {
                op: BinOp::BitOr,
                left,
                right,
            } => {
                self.trigger(left);
                self.trigger(right);
            }
            ExprKind::Special(SpecialRef::Root) => self.error(
                Code::E2004,
                "ability trigger must be a type, but `root` is the root node (an instance); \
                 use `Root`",
                t.span,
            ),
            ExprKind::Special(s) => {
                let word = special_word(*s);
                self.error(
                    Code::E2004,
                    format!("ability trigger must be a type, but `{word}` is an instance"),
                    t.span,
                );
            }
            ExprKind::Name(n) => {
                let found = self.use_name(n, t.span, Mode::Runtime);
                match found {
                    Found::Global(Some(Decl::Def(_))) => self.error(
                        Code::E2004,
                        format!("`{n}` is a function, not a type; {WANT}"),
                        t.span,
                    ),
                    Found::Global(Some(Decl::Var(Some(v)))) if is_instance_value(self, v) => self
                        .error(
                            Code::E2004,
                            format!("`{n}` is a variable, not a type; {WANT}"),
                            t.span,
                        ),
                    Found::Global(Some(Decl::Enum)) => self.warning(
                        Code::W2004,
                        format!("`{n}` is an enum, so this ability never triggers; {WANT}"),
                        t.span,
                    ),
                    Found::Builtin if !super::names::is_builtin_type(n) => self.error(
                        Code::E2004,
                        format!("`{n}` is a builtin function, not a type; {WANT}"),
                        t.span,
                    ),
                    Found::Builtin
                        if !matches!(
                            &**n,
                            "Root" | "GenericEdge" | "Node" | "Edge" | "any" | "object"
                        ) =>
                    {
                        self.warning(
                            Code::W2004,
                            format!(
                                "`{n}` is not an archetype, so this ability never triggers; {WANT}"
                            ),
                            t.span,
                        );
                    }
                    _ => {}
                }
            }
            ExprKind::Call { func, .. } => {
                self.expr(t);
                if let ExprKind::Name(n) = &func.kind
                    && self.arch_named(n).is_some()
                {
                    self.error(
                        Code::E2004,
                        format!("ability trigger must be a type, but this call creates an instance of `{n}`; write `{n}`"),
                        t.span,
                    );
                }
            }
            _ => self.expr(t),
        }
    }

    /// E2028: the endpoints of a typed edge must be node types.
    fn endpoint(&mut self, e: &'a Expr) {
        const WANT: &str = "edge endpoints must be node types";
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::BitOr,
                left,
                right,
            } => {
                self.endpoint(left);
                self.endpoint(right);
            }
            ExprKind::Special(SpecialRef::Root) => self.error(
                Code::E2028,
                format!("{WANT}, but `root` is the root node (an instance); use `Root`"),
                e.span,
            ),
            ExprKind::Name(n) => {
                let what = match self.use_name(n, e.span, Mode::Runtime) {
                    Found::Global(Some(Decl::Arch(a))) if a.kind != ArchKind::Node => {
                        Some(format!("{} `{n}` is not a node", a.kind.keyword()))
                    }
                    Found::Global(Some(Decl::Def(_))) => Some(format!("`{n}` is a function")),
                    Found::Global(Some(Decl::Enum)) => Some(format!("`{n}` is an enum")),
                    Found::Global(Some(Decl::Var(Some(v)))) if is_instance_value(self, v) => {
                        Some(format!("`{n}` is a variable"))
                    }
                    Found::Builtin if !matches!(&**n, "Root" | "any" | "object") => {
                        Some(format!("`{n}` is not a node type"))
                    }
                    _ => None,
                };
                if let Some(w) = what {
                    self.error(Code::E2028, format!("{WANT}, but {w}"), e.span);
                }
            }
            _ => self.expr(e),
        }
    }

    /// `impl Target.member ... { body }` (`owner`: the archetype it is nested in).
    pub(super) fn impl_block(&mut self, imp: &'a ImplBlock, owner: Option<&'a Archetype>) {
        for d in &imp.decorators {
            self.expr(d);
        }
        let Some((first, rest)) = imp.target.split_first() else {
            return;
        };
        let quiet = self.is_lenient() || owner.is_some();
        let mut known = true;
        if imp.members.is_some() && rest.is_empty() {
            // `impl Name { has ... }` whose archetype no body of the module declares
            // (the parser merged every other): only an annex file may give it.
            if !quiet {
                self.error(
                    Code::E2013,
                    format!(
                        "`impl {} {{ has ... }}` gives the body of an archetype, but no \
                         archetype `{}` is declared in this module",
                        first.name, first.name
                    ),
                    first.span,
                );
            }
            return;
        }
        let mut decl: Option<&'a Ability> = None;
        let mut arch: Option<&'a Archetype> = None;
        let first_decl = match self.lookup(&first.name) {
            Found::Global(d) => d,
            Found::Missing => {
                if !quiet {
                    let what = if rest.is_empty() {
                        "function or ability"
                    } else {
                        "archetype"
                    };
                    let mut msg = format!("cannot find {what} `{}` to implement", first.name);
                    let cands: Vec<(&str, u8)> = self
                        .globals
                        .iter()
                        .filter(|(_, g)| match g.decl {
                            Decl::Def(_) => rest.is_empty(),
                            Decl::Arch(_) => !rest.is_empty(),
                            _ => false,
                        })
                        .map(|(k, _)| (*k, 0))
                        .collect();
                    if let Some(s) = super::names::best_match(&first.name, cands) {
                        msg.push_str(&format!("; did you mean `{s}`?"));
                    }
                    self.error(Code::E2013, msg, first.span);
                }
                None
            }
            _ => None,
        };
        if rest.is_empty() {
            match first_decl {
                Some(Decl::Def(ab)) => decl = Some(ab),
                Some(Decl::Enum) => {
                    // `impl Color { RED = 1, GREEN }`: only the values are code; a value
                    // may name the members (`B = A * 2`, as in a Python enum body).
                    let names: HashSet<&'a str> = imp
                        .body
                        .iter()
                        .filter_map(|s| match &s.kind {
                            StmtKind::Assign { targets, .. } if targets.len() == 1 => {
                                match &targets[0].kind {
                                    ExprKind::Name(n) => Some(&**n),
                                    _ => None,
                                }
                            }
                            StmtKind::Expr(Expr {
                                kind: ExprKind::Name(n),
                                ..
                            }) => Some(&**n),
                            _ => None,
                        })
                        .collect();
                    self.push_scope(ScopeKind::Class, names);
                    for s in &imp.body {
                        if let StmtKind::Assign { value, .. } = &s.kind {
                            self.expr(value);
                        }
                    }
                    self.pop_scope();
                    return;
                }
                _ => known = false,
            }
        } else {
            match first_decl {
                Some(Decl::Arch(a)) => {
                    let (last, middle) = match rest.split_last() {
                        Some(x) => x,
                        None => return,
                    };
                    // `impl Arch.prop.getter`: a property's accessor.
                    if let [field] = middle
                        && matches!(&*last.name, "getter" | "setter" | "deleter")
                        && let Some(acc) = property_accessors(a, &field.name)
                    {
                        let one = match &*last.name {
                            "getter" => &acc.getter,
                            "setter" => &acc.setter,
                            _ => &acc.deleter,
                        };
                        let params: &'a [crate::ast::Param] =
                            one.as_ref().map_or(&[][..], |o| &o.params[..]);
                        if one.is_none() && !quiet {
                            self.error(
                                Code::E2013,
                                format!(
                                    "property `{}` of {} declares no {}",
                                    field.name,
                                    arch_desc(a),
                                    last.name
                                ),
                                last.span,
                            );
                        }
                        if let ImplKind::Signature(Some(sig)) = &imp.kind {
                            self.signature(Some(sig));
                        }
                        let ctx = FnCtx {
                            kind: CtxKind::Def,
                            loops: 0,
                            arch: Some(a),
                            ret: one.as_ref().and_then(|o| o.ret.as_ref()),
                            is_async: false,
                        };
                        self.function(params, &imp.body, ctx, one.is_none());
                        return;
                    }
                    let mut cur = Some(a);
                    for n in middle {
                        let next = cur.and_then(|c| {
                            c.members.iter().find_map(|m| match m {
                                Member::Archetype(x) if x.name.name == n.name => Some(x),
                                _ => None,
                            })
                        });
                        if next.is_none()
                            && !quiet
                            && let Some(c) = cur
                        {
                            let mut msg =
                                format!("{} has no nested archetype `{}`", arch_desc(c), n.name);
                            let cands = c.members.iter().filter_map(|m| match m {
                                Member::Archetype(x) => Some((&*x.name.name, 0)),
                                _ => None,
                            });
                            if let Some(s) = super::names::best_match(&n.name, cands) {
                                msg.push_str(&format!("; did you mean `{s}`?"));
                            }
                            self.error(Code::E2013, msg, n.span);
                        }
                        cur = next;
                    }
                    match cur {
                        Some(c) => {
                            arch = Some(c);
                            match find_member(self, c, &last.name, 0) {
                                MemberLookup::Ability(ab) => decl = Some(ab),
                                MemberLookup::Missing
                                    if !matches!(&*last.name, "init" | "postinit") =>
                                {
                                    known = false;
                                    if !quiet {
                                        let mut msg = format!(
                                            "{} has no ability or method named `{}`",
                                            arch_desc(c),
                                            last.name
                                        );
                                        let cands = member_names(c);
                                        if let Some(s) = super::names::best_match(&last.name, cands)
                                        {
                                            msg.push_str(&format!("; did you mean `{s}`?"));
                                        }
                                        self.error(Code::E2013, msg, last.span);
                                    }
                                }
                                MemberLookup::Missing => {}
                                MemberLookup::Other | MemberLookup::Unknown => known = false,
                            }
                        }
                        None => known = false,
                    }
                }
                Some(d @ (Decl::Def(_) | Decl::Var(_))) if !quiet => {
                    known = false;
                    let what = if matches!(d, Decl::Def(_)) {
                        "a function"
                    } else {
                        "a variable"
                    };
                    self.error(
                        Code::E2013,
                        format!(
                            "`{}` is {what}, not an archetype; `impl` needs an archetype here",
                            first.name
                        ),
                        first.span,
                    );
                }
                _ => known = false,
            }
        }
        let (params, ret) = match &imp.kind {
            ImplKind::Signature(Some(sig)) => {
                self.signature(Some(sig));
                (&sig.params[..], sig.ret.as_ref())
            }
            ImplKind::Bases(bases) => {
                for b in bases {
                    self.expr(b);
                }
                (&[][..], None)
            }
            ImplKind::Event(ev) => {
                if let Some(t) = &ev.trigger {
                    self.trigger(t);
                }
                (&[][..], None)
            }
            ImplKind::Signature(None) => match decl.and_then(|d| d.signature.as_ref()) {
                Some(sig) => (&sig.params[..], sig.ret.as_ref()),
                None => (&[][..], None),
            },
        };
        let kind = match (&imp.kind, decl) {
            (ImplKind::Event(_), _) => CtxKind::Ability,
            (_, Some(d)) if d.kind == AbilityKind::Def && d.event.is_none() => CtxKind::Def,
            (ImplKind::Signature(Some(_)), None) => CtxKind::Def,
            _ => CtxKind::Ability,
        };
        let ctx = FnCtx {
            kind,
            loops: 0,
            arch: arch.or(owner).or(self.ctx.arch),
            ret,
            // An impl of an undeclared target is reported elsewhere; allow `await` in it.
            is_async: decl.is_none_or(|d| d.is_async),
        };
        self.function(params, &imp.body, ctx, !known);
    }
}

/// The accessors of property `field` declared in `a` itself.
fn property_accessors<'a>(a: &'a Archetype, field: &str) -> Option<&'a crate::ast::Accessors> {
    a.members.iter().find_map(|m| match m {
        Member::Has(h) => h
            .vars
            .iter()
            .find(|v| &*v.name.name == field)
            .and_then(|v| v.accessors.as_deref()),
        _ => None,
    })
}

/// Look a member up in `a` and its bases.
pub(super) fn find_member<'a>(
    cx: &Cx<'a, '_>,
    a: &'a Archetype,
    name: &str,
    depth: u32,
) -> MemberLookup<'a> {
    if depth > MAX_BASE_DEPTH {
        return MemberLookup::Unknown;
    }
    for m in &a.members {
        match m {
            Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == name) => {
                return MemberLookup::Ability(ab);
            }
            Member::Archetype(x) if &*x.name.name == name => return MemberLookup::Other,
            Member::Enum(x) if &*x.name.name == name => return MemberLookup::Other,
            Member::Has(h) if h.vars.iter().any(|v| &*v.name.name == name) => {
                return MemberLookup::Other;
            }
            _ => {}
        }
    }
    let mut unknown = false;
    for b in &a.bases {
        let base = match &b.kind {
            ExprKind::Name(n) => match cx.global_decl(n) {
                Some(Decl::Arch(base)) => Some(base),
                _ => None,
            },
            _ => None,
        };
        match base {
            Some(base) => match find_member(cx, base, name, depth + 1) {
                MemberLookup::Missing => {}
                MemberLookup::Unknown => unknown = true,
                found => return found,
            },
            None => unknown = true,
        }
    }
    if unknown {
        MemberLookup::Unknown
    } else {
        MemberLookup::Missing
    }
}

fn member_names(a: &Archetype) -> Vec<(&str, u8)> {
    a.members
        .iter()
        .filter_map(|m| match m {
            Member::Ability(ab) => ab.name.as_ref().map(|n| (&*n.name, 0)),
            _ => None,
        })
        .collect()
}

fn special_word(s: SpecialRef) -> &'static str {
    match s {
        SpecialRef::SelfRef => "self",
        SpecialRef::Super => "super",
        SpecialRef::Here => "here",
        SpecialRef::Root => "root",
        SpecialRef::Visitor => "visitor",
        SpecialRef::Init => "init",
        SpecialRef::PostInit => "postinit",
        SpecialRef::Props => "props",
    }
}

/// A value that is certainly an instance, never a type: literals, containers, graph
/// operations and archetype constructor calls.
fn is_instance_value(cx: &Cx<'_, '_>, v: &Expr) -> bool {
    match &v.kind {
        ExprKind::None
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::BigInt(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::FString(_)
        | ExprKind::List(_)
        | ExprKind::Tuple(_)
        | ExprKind::Set(_)
        | ExprKind::Dict(_)
        | ExprKind::ListComp { .. }
        | ExprKind::SetComp { .. }
        | ExprKind::DictComp { .. }
        | ExprKind::Connect { .. }
        | ExprKind::EdgeRef(_)
        | ExprKind::Spawn { .. }
        | ExprKind::Special(_) => true,
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Name(n) => matches!(cx.global_decl(n), Some(Decl::Arch(_))),
            _ => false,
        },
        _ => false,
    }
}
