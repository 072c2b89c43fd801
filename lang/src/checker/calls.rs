//! Calls of module-level functions and archetype constructors: E2002 (arity, unknown or
//! repeated keywords) and E2003 (constructor keyword naming no field). Calls with `*x` or
//! `**x` spreads, decorated functions and archetypes whose fields are not all known
//! (non-local bases, custom `init`, `class`) are skipped.

use super::{Cx, Decl, Found, names};
use crate::ast::{
    Ability, AbilityKind, ArchKind, Archetype, Arg, ConnectOp, Expr, ExprKind, Member, Name,
    ParamKind,
};
use crate::diag::Code;
use crate::span::Span;
use std::rc::Rc;

/// How deep base-class chains are followed (guards against cycles).
const MAX_BASE_DEPTH: u32 = 32;

/// One `has` field as the constructor sees it.
pub(super) struct Field<'a> {
    name: &'a str,
    ty: &'a Expr,
    has_default: bool,
    postinit: bool,
}

/// The constructor fields of an archetype (inherited first), or `None` when unknown.
pub(super) struct Fields<'a> {
    fields: Vec<Field<'a>>,
    statics: Vec<&'a str>,
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

/// Decorators known not to change a constructor.
pub(super) fn harmless_decorator(d: &Expr) -> bool {
    let f = match &d.kind {
        ExprKind::Call { func, .. } => func,
        _ => d,
    };
    matches!(&f.kind, ExprKind::Name(n) if matches!(&**n, "restspec" | "schedule"))
}

impl<'a> Cx<'a, '_> {
    fn fields_into(&self, a: &'a Archetype, depth: u32, out: &mut Fields<'a>) -> bool {
        // A bodiless archetype (`obj Vehicle;`) may take its body from an annex file's
        // `impl Vehicle { has ... }`, which the checker does not read.
        if depth > MAX_BASE_DEPTH || a.kind == ArchKind::Class || !a.has_body {
            return false;
        }
        if !a.decorators.iter().all(harmless_decorator) {
            return false;
        }
        let custom_init = a.members.iter().any(|m| {
            matches!(m, Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == "init"))
        });
        if custom_init {
            return false;
        }
        for b in &a.bases {
            let ExprKind::Name(n) = &b.kind else {
                return false;
            };
            let Some(Decl::Arch(base)) = self.global_decl(n) else {
                return false;
            };
            let mut inherited = Fields {
                fields: Vec::new(),
                statics: Vec::new(),
            };
            if !self.fields_into(base, depth + 1, &mut inherited) {
                return false;
            }
            for f in inherited.fields {
                out.fields.retain(|x| x.name != f.name);
                out.fields.push(f);
            }
            out.statics.extend(inherited.statics);
        }
        for m in &a.members {
            let Member::Has(h) = m else { continue };
            for v in &h.vars {
                let name: &'a str = &v.name.name;
                // A property (`has v: T { getter .. }`) is not a constructor field.
                if v.accessors.is_some() {
                    continue;
                }
                if h.is_static {
                    out.statics.push(name);
                    continue;
                }
                let f = Field {
                    name,
                    ty: &v.ty,
                    has_default: v.default.is_some(),
                    postinit: v.postinit,
                };
                match out.fields.iter_mut().find(|x| x.name == name) {
                    Some(slot) => *slot = f,
                    None => out.fields.push(f),
                }
            }
        }
        true
    }

    /// The constructor view of `a`, computed once per archetype.
    fn fields_of(&mut self, a: &'a Archetype) -> Option<Rc<Fields<'a>>> {
        let key = std::ptr::from_ref(a) as usize;
        if let Some(cached) = self.ctor_cache.get(&key) {
            return cached.clone();
        }
        let mut out = Fields {
            fields: Vec::new(),
            statics: Vec::new(),
        };
        let result = self.fields_into(a, 0, &mut out).then(|| Rc::new(out));
        self.ctor_cache.insert(key, result.clone());
        result
    }

    /// Arity and keyword checks for `func(args)`.
    pub(super) fn check_call(&mut self, func: &'a Expr, args: &'a [Arg], span: Span) {
        let ExprKind::Name(n) = &func.kind else {
            return;
        };
        if args
            .iter()
            .any(|a| matches!(a, Arg::Star(_) | Arg::DoubleStar(_)))
        {
            return;
        }
        match self.lookup(n) {
            Found::Global(Some(Decl::Def(ab))) => self.check_def_call(n, ab, args, span),
            Found::Global(Some(Decl::Arch(a))) => self.check_ctor_call(a, args, span),
            _ => {}
        }
    }

    fn excess_span(args: &[Arg], from: usize) -> Option<Span> {
        let pos: Vec<&Expr> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Positional(x) => Some(x),
                _ => None,
            })
            .collect();
        let first = pos.get(from)?;
        let last = pos.last()?;
        Some(first.span.to(last.span))
    }

    fn check_ctor_call(&mut self, a: &'a Archetype, args: &'a [Arg], span: Span) {
        let Some(info) = self.fields_of(a) else {
            return;
        };
        let name = &a.name.name;
        let params: Vec<&Field<'a>> = info.fields.iter().filter(|f| !f.postinit).collect();
        let npos = args
            .iter()
            .filter(|x| matches!(x, Arg::Positional(_)))
            .count();
        let mut bound = vec![false; params.len()];
        if npos > params.len() {
            let at = Self::excess_span(args, params.len()).unwrap_or(span);
            self.error(
                Code::E2002,
                format!(
                    "`{name}` takes {} (its `has` fields) but {npos} {} given",
                    plural(params.len(), "positional argument"),
                    if npos == 1 { "was" } else { "were" }
                ),
                at,
            );
        }
        for b in bound.iter_mut().take(npos) {
            *b = true;
        }
        let positional = args.iter().filter_map(|x| match x {
            Arg::Positional(v) => Some(v),
            _ => None,
        });
        for (f, v) in params.iter().zip(positional) {
            self.type_check_arg(f.ty, v, f.name, name);
        }
        // After an unknown keyword (likely a typo) a "missing" report would be noise.
        let mut unknown = false;
        for arg in args {
            let Arg::Keyword(k, v) = arg else { continue };
            let key: &str = &k.name;
            if let Some(i) = params.iter().position(|f| f.name == key) {
                self.type_check_arg(params[i].ty, v, key, name);
                if bound[i] {
                    self.error(
                        Code::E2002,
                        format!("`{name}` got multiple values for field `{key}`"),
                        k.span,
                    );
                }
                bound[i] = true;
            } else if info.fields.iter().any(|f| f.postinit && f.name == key) {
                self.error(
                    Code::E2002,
                    format!("field `{key}` of `{name}` is set in `postinit`; it is not a constructor argument"),
                    k.span,
                );
            } else if info.statics.contains(&key) {
                self.error(
                    Code::E2003,
                    format!("`{key}` is a static field of `{name}`, not a constructor argument"),
                    k.span,
                );
            } else {
                unknown = true;
                let mut msg = format!("{name} has no field '{key}'");
                let cands = params.iter().map(|f| (f.name, 0));
                if let Some(s) = names::best_match(key, cands) {
                    msg.push_str(&format!("; did you mean '{s}'?"));
                }
                self.error(Code::E2003, msg, k.span);
            }
        }
        if npos <= params.len() && !unknown {
            let missing: Vec<&str> = params
                .iter()
                .zip(&bound)
                .filter(|(f, b)| !**b && !f.has_default)
                .map(|(f, _)| f.name)
                .collect();
            if !missing.is_empty() {
                let s = if missing.len() == 1 { "" } else { "s" };
                self.error(
                    Code::E2002,
                    format!(
                        "missing required field{s} {} in call to `{name}`",
                        list(&missing)
                    ),
                    span,
                );
            }
        }
    }

    pub(super) fn check_def_call(
        &mut self,
        name: &str,
        ab: &'a Ability,
        args: &'a [Arg],
        span: Span,
    ) {
        if !ab.decorators.is_empty() || ab.kind != AbilityKind::Def || ab.event.is_some() {
            return;
        }
        let params = ab.signature.as_ref().map_or(&[][..], |s| &s.params[..]);
        // Positional-only params are those before a `/`.
        let slash = params
            .iter()
            .position(|p| p.kind == ParamKind::PosOnlyMarker);
        let mut positional: Vec<usize> = Vec::new();
        let mut keyword_ok: Vec<bool> = vec![false; params.len()];
        let mut varargs = false;
        let mut kwargs = false;
        let mut kw_only = false;
        for (i, p) in params.iter().enumerate() {
            match p.kind {
                ParamKind::Normal => {
                    if !kw_only {
                        positional.push(i);
                    }
                    keyword_ok[i] = slash.is_none_or(|s| i > s);
                }
                ParamKind::VarArgs => {
                    varargs = true;
                    kw_only = true;
                }
                ParamKind::KwOnlyMarker => kw_only = true,
                ParamKind::KwArgs => kwargs = true,
                ParamKind::PosOnlyMarker => {}
            }
        }
        let npos = args
            .iter()
            .filter(|x| matches!(x, Arg::Positional(_)))
            .count();
        let mut bound = vec![false; params.len()];
        if npos > positional.len() && !varargs {
            let at = Self::excess_span(args, positional.len()).unwrap_or(span);
            self.error(
                Code::E2002,
                format!(
                    "function `{name}` takes {} but {npos} {} given",
                    plural(positional.len(), "positional argument"),
                    if npos == 1 { "was" } else { "were" }
                ),
                at,
            );
        }
        for &i in positional.iter().take(npos) {
            bound[i] = true;
        }
        let given = args.iter().filter_map(|x| match x {
            Arg::Positional(v) => Some(v),
            _ => None,
        });
        for (&i, v) in positional.iter().zip(given) {
            if let Some(t) = &params[i].ty {
                self.type_check_arg(t, v, &params[i].name.name, name);
            }
        }
        let mut unknown = false;
        for arg in args {
            let Arg::Keyword(k, v) = arg else { continue };
            let key: &str = &k.name;
            let hit = params
                .iter()
                .position(|p| p.kind == ParamKind::Normal && &*p.name.name == key);
            match hit {
                Some(i) if keyword_ok[i] => {
                    if let Some(t) = &params[i].ty {
                        self.type_check_arg(t, v, key, name);
                    }
                    if bound[i] {
                        self.error(
                            Code::E2002,
                            format!("function `{name}` got multiple values for argument `{key}`"),
                            k.span,
                        );
                    }
                    bound[i] = true;
                }
                _ if kwargs => {}
                Some(_) => {
                    unknown = true;
                    self.error(
                        Code::E2002,
                        format!("`{key}` is a positional-only parameter of `{name}`"),
                        k.span,
                    );
                }
                None => {
                    unknown = true;
                    let mut msg = format!("function `{name}` has no parameter named `{key}`");
                    let cands = params
                        .iter()
                        .filter(|p| p.kind == ParamKind::Normal)
                        .map(|p| (&*p.name.name, 0));
                    if let Some(s) = names::best_match(key, cands) {
                        msg.push_str(&format!("; did you mean `{s}`?"));
                    }
                    self.error(Code::E2002, msg, k.span);
                }
            }
        }
        if (npos <= positional.len() || varargs) && !unknown {
            let missing: Vec<&str> = params
                .iter()
                .enumerate()
                .filter(|(i, p)| p.kind == ParamKind::Normal && p.default.is_none() && !bound[*i])
                .map(|(_, p)| &*p.name.name)
                .collect();
            if !missing.is_empty() {
                let s = if missing.len() == 1 { "" } else { "s" };
                self.error(
                    Code::E2002,
                    format!(
                        "missing required argument{s} {} in call to `{name}`",
                        list(&missing)
                    ),
                    span,
                );
            }
        }
    }

    /// `a +>: E : f=v :+> b`: each assigned name must be a field of `E` (E2003).
    pub(super) fn check_connect_assigns(&mut self, op: &'a ConnectOp) {
        if op.assigns.is_empty() {
            return;
        }
        let Some(edge) = &op.edge else { return };
        let ExprKind::Name(n) = &edge.kind else {
            return;
        };
        let Some(a) = self.arch_named(n) else { return };
        let Some(info) = self.fields_of(a) else {
            return;
        };
        for (k, _) in &op.assigns {
            let k: &Name = k;
            if info.fields.iter().any(|f| f.name == &*k.name) {
                continue;
            }
            let mut msg = format!("{n} has no field '{}'", k.name);
            let cands = info.fields.iter().map(|f| (f.name, 0));
            if let Some(s) = names::best_match(&k.name, cands) {
                msg.push_str(&format!("; did you mean '{s}'?"));
            }
            self.error(Code::E2003, msg, k.span);
        }
    }
}
