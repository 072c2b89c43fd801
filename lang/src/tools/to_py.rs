//! `svc_to_python`: Python 3 source for the translatable subset of svc.
//!
//! Objects and classes become dataclasses (a plain class when they define `init`),
//! `def` becomes a function or method (with `self`), enums become `enum.Enum`, `glob`
//! and `with entry` code go to module level (`with entry:__main__` under
//! `if __name__ == "__main__":`), `impl` bodies are put into the methods they implement.
//! Expressions keep Python's meaning; pipes become calls, `x as T` becomes
//! `typing.cast(T, x)`, list filters `xs[?:T, a > 1]` become comprehensions and f-strings
//! become `format(...)` concatenations (valid on every Python 3).
//!
//! Object-spatial code has no Python counterpart: nodes, edges and walkers become plain
//! dataclasses, `can` abilities become methods taking `here`, and `visit`, `report`,
//! `spawn`, `disengage`, `skip`, edge references and connect operators are replaced by
//! `None`/`pass` with a warning each. Syntax errors (or a tree nested too deep) give
//! `Err(messages)`.

use super::tree::{binop, cmpop, module_tree};
use super::{line_col, parse_clean};
use crate::ast::*;
use std::collections::HashMap;

/// Most warnings one translation lists (the rest are counted).
const MAX_WARNINGS: usize = 200;

/// Translate svc source to Python; `Err` holds the reasons when no valid Python results.
pub fn svc_to_python(src: &str) -> Result<String, Vec<String>> {
    super::on_big_stack(|| svc_to_python_on_stack(src))
}

fn svc_to_python_on_stack(src: &str) -> Result<String, Vec<String>> {
    let module = parse_clean(src).map_err(|e| vec![e.to_string()])?;
    module_tree(&module).map_err(|e| vec![e.locate(src).to_string()])?;
    let mut t = Py {
        src,
        out: String::new(),
        warnings: Vec::new(),
        dropped: 0,
        impls: HashMap::new(),
        used_impls: Default::default(),
        tmp: 0,
    };
    t.module(&module);
    let mut warnings = t.warnings;
    if t.dropped > 0 {
        warnings.push(format!("… and {} more warnings", t.dropped));
    }
    let mut out = String::from(
        "# Translated from svc by `svc_to_py`; object-spatial code is not translated.\n\
         from __future__ import annotations\n\nimport enum\nimport typing\n\
         from dataclasses import dataclass, field\n\n",
    );
    out.push_str(&t.out);
    if !warnings.is_empty() {
        // Keep the warnings with the code too, as comments.
        out.push_str("\n# Translation warnings:\n");
        for w in &warnings {
            out.push_str("#   ");
            out.push_str(&w.replace('\n', " "));
            out.push('\n');
        }
    }
    let _ = &mut warnings;
    Ok(out)
}

/// Translate and also return the warnings (what the MCP tool reports).
pub fn svc_to_python_with_warnings(src: &str) -> Result<(String, Vec<String>), Vec<String>> {
    let code = svc_to_python(src)?;
    let warnings = code
        .split("\n# Translation warnings:\n")
        .nth(1)
        .map(|w| {
            w.lines()
                .filter_map(|l| l.strip_prefix("#   "))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok((code, warnings))
}

const PY_ONLY_KEYWORDS: &[&str] = &["pass", "global", "nonlocal", "print_"];

struct Py<'a> {
    src: &'a str,
    out: String,
    warnings: Vec<String>,
    dropped: usize,
    impls: HashMap<String, &'a ImplBlock>,
    used_impls: std::collections::HashSet<String>,
    tmp: usize,
}

fn ind(level: usize) -> String {
    "    ".repeat(level)
}

/// A Python string literal for `s`.
pub(crate) fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn name(n: &str) -> String {
    if PY_ONLY_KEYWORDS.contains(&n) {
        format!("{n}_")
    } else {
        n.trim_start_matches('`').to_string()
    }
}

impl<'a> Py<'a> {
    fn warn(&mut self, span: crate::span::Span, msg: impl Into<String>) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.dropped += 1;
            return;
        }
        let (l, c) = line_col(self.src, span.start);
        self.warnings.push(format!("{l}:{c}: {}", msg.into()));
    }

    fn line(&mut self, level: usize, text: &str) {
        self.out.push_str(&ind(level));
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn module(&mut self, m: &'a Module) {
        if let Some(d) = &m.doc {
            let d = py_str(d);
            self.line(0, &d);
            self.out.push('\n');
        }
        for it in &m.items {
            if let Item::Impl(i) = it {
                let key: Vec<&str> = i.target.iter().map(|n| &*n.name).collect();
                self.impls.insert(key.join("."), i);
            }
        }
        for it in &m.items {
            self.item(it, 0, None);
        }
        let mut unused: Vec<(&String, &&ImplBlock)> = self
            .impls
            .iter()
            .filter(|(k, _)| !self.used_impls.contains(*k))
            .collect();
        unused.sort_by_key(|(_, i)| i.span.start);
        let spans: Vec<(String, crate::span::Span)> =
            unused.iter().map(|(k, i)| ((*k).clone(), i.span)).collect();
        for (k, span) in spans {
            self.warn(
                span,
                format!("`impl {k}` matches no declaration here and is not translated"),
            );
        }
    }

    fn item(&mut self, it: &'a Item, level: usize, owner: Option<&str>) {
        match it {
            Item::Import(i) => self.import(i, level),
            Item::Archetype(a) => self.archetype(a, level),
            Item::Enum(e) => self.enum_decl(e, level),
            Item::Ability(a) => self.ability(a, level, owner),
            Item::Glob(g) => {
                for v in &g.vars {
                    let value = v
                        .value
                        .as_ref()
                        .map_or("None".to_string(), |e| self.expr(e));
                    let text = match &v.ty {
                        Some(t) => format!("{}: {} = {value}", name(&v.name.name), self.expr(t)),
                        None => format!("{} = {value}", name(&v.name.name)),
                    };
                    self.line(level, &text);
                }
            }
            // Bodies are placed into their declarations (see `ability`).
            Item::Impl(_) => {}
            Item::Entry(e) => {
                let main = e.name.as_ref().is_some_and(|n| &*n.name == "__main__");
                if main {
                    self.line(level, "if __name__ == \"__main__\":");
                    self.block(&e.body, level + 1);
                } else {
                    self.stmts(&e.body, level);
                }
                self.out.push('\n');
            }
            Item::Test(t) => {
                self.tmp += 1;
                let n = t
                    .name
                    .as_ref()
                    .map(|s| {
                        s.chars()
                            .map(|c| if c.is_alphanumeric() { c } else { '_' })
                            .collect::<String>()
                    })
                    .unwrap_or_else(|| self.tmp.to_string());
                self.line(level, &format!("def test_{n}():"));
                self.block(&t.body, level + 1);
                self.out.push('\n');
            }
        }
    }

    fn import(&mut self, i: &Import, level: usize) {
        if i.remote {
            self.warn(
                i.span,
                "`sv import` (service-to-service stubs) becomes a plain import",
            );
        }
        let path = |p: &ModPath| {
            let parts: Vec<&str> = p.parts.iter().map(|n| &*n.name).collect();
            format!("{}{}", ".".repeat(p.dots.min(16) as usize), parts.join("."))
        };
        if let Some(from) = &i.from {
            let names: Vec<String> = i
                .items
                .iter()
                .map(|it| match &it.alias {
                    Some(a) => format!("{} as {}", it.name.name, a.name),
                    None => it.name.name.to_string(),
                })
                .collect();
            let text = format!("from {} import {}", path(from), names.join(", "));
            self.line(level, &text);
        } else {
            for (p, alias) in &i.modules {
                let text = match (i.kind, alias) {
                    (ImportKind::Include, _) => format!("from {} import *", path(p)),
                    (_, Some(a)) => format!("import {} as {}", path(p), a.name),
                    (_, None) => format!("import {}", path(p)),
                };
                self.line(level, &text);
            }
        }
    }

    fn docstring(&mut self, doc: &Option<String>, level: usize) -> bool {
        if let Some(d) = doc {
            let d = py_str(d);
            self.line(level, &d);
            true
        } else {
            false
        }
    }

    fn archetype(&mut self, a: &'a Archetype, level: usize) {
        if a.kind != ArchKind::Obj && a.kind != ArchKind::Class {
            self.warn(
                a.span,
                format!(
                    "{} `{}` becomes a plain dataclass: graph semantics (edges, traversal) are not translated",
                    a.kind.keyword(),
                    a.name.name
                ),
            );
        }
        for d in &a.decorators {
            let d = self.expr(d);
            self.line(level, &format!("@{d}"));
        }
        let has_init = a.members.iter().any(|m| {
            matches!(m, Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == "init"))
        });
        // Dataclass fields: a field without default after one with a default needs kw_only.
        let mut seen_default = false;
        let mut kw_only = false;
        for m in &a.members {
            if let Member::Has(h) = m
                && !h.is_static
            {
                for v in &h.vars {
                    if v.default.is_some() {
                        seen_default = true;
                    } else if seen_default && !v.postinit {
                        kw_only = true;
                    }
                }
            }
        }
        if !has_init {
            self.line(
                level,
                if kw_only {
                    "@dataclass(kw_only=True)"
                } else {
                    "@dataclass"
                },
            );
        }
        let bases: Vec<String> = a.bases.iter().map(|b| self.expr(b)).collect();
        let head = if bases.is_empty() {
            format!("class {}:", name(&a.name.name))
        } else {
            format!("class {}({}):", name(&a.name.name), bases.join(", "))
        };
        self.line(level, &head);
        let before = self.out.len();
        self.docstring(&a.doc, level + 1);
        let owner = a.name.name.to_string();
        for m in &a.members {
            match m {
                Member::Has(h) => {
                    for v in &h.vars {
                        let ty = self.expr(&v.ty);
                        let text = if h.is_static {
                            let value = v.default.as_ref().map_or("None".into(), |e| self.expr(e));
                            format!("{}: typing.ClassVar[{ty}] = {value}", name(&v.name.name))
                        } else if v.postinit {
                            format!(
                                "{}: {ty} = field(init=False, default=None)",
                                name(&v.name.name)
                            )
                        } else {
                            match &v.default {
                                None => format!("{}: {ty}", name(&v.name.name)),
                                Some(e) if is_mutable_literal(e) => format!(
                                    "{}: {ty} = field(default_factory=lambda: {})",
                                    name(&v.name.name),
                                    self.expr(e)
                                ),
                                Some(e) => {
                                    format!("{}: {ty} = {}", name(&v.name.name), self.expr(e))
                                }
                            }
                        };
                        self.line(level + 1, &text);
                    }
                }
                Member::Ability(ab) => self.ability(ab, level + 1, Some(&owner)),
                Member::Archetype(inner) => self.archetype(inner, level + 1),
                Member::Enum(e) => self.enum_decl(e, level + 1),
                Member::Impl(_) => {}
                Member::Entry(e) => {
                    self.warn(
                        e.span,
                        "a `with entry` block inside an archetype is not translated",
                    );
                }
                Member::Stmt(_) => {}
            }
        }
        if self.out.len() == before {
            self.line(level + 1, "pass");
        }
        self.out.push('\n');
    }

    fn enum_decl(&mut self, e: &EnumDecl, level: usize) {
        self.line(level, &format!("class {}(enum.Enum):", name(&e.name.name)));
        if e.members.is_empty() {
            self.line(level + 1, "pass");
        }
        for m in &e.members {
            let v = m
                .value
                .as_ref()
                .map_or("enum.auto()".into(), |v| self.expr(v));
            self.line(level + 1, &format!("{} = {v}", name(&m.name.name)));
        }
        if !e.extra.is_empty() {
            self.warn(
                e.span,
                format!(
                    "members other than values in enum `{}` are not translated",
                    e.name.name
                ),
            );
        }
        self.out.push('\n');
    }

    fn params(&mut self, params: &[Param]) -> Vec<String> {
        params
            .iter()
            .map(|p| {
                let prefix = match p.kind {
                    ParamKind::VarArgs => "*",
                    ParamKind::KwArgs => "**",
                    ParamKind::KwOnlyMarker => return "*".to_string(),
                    ParamKind::PosOnlyMarker => return "/".to_string(),
                    ParamKind::Normal => "",
                };
                let mut s = format!("{prefix}{}", name(&p.name.name));
                if let Some(t) = &p.ty {
                    s.push_str(": ");
                    s.push_str(&self.expr(t));
                }
                if let Some(d) = &p.default {
                    s.push_str(if p.ty.is_some() { " = " } else { "=" });
                    s.push_str(&self.expr(d));
                }
                s
            })
            .collect()
    }

    fn ability(&mut self, a: &'a Ability, level: usize, owner: Option<&str>) {
        let Some(n) = &a.name else {
            self.warn(a.span, "an anonymous `can` ability is not translated");
            return;
        };
        let fname = match (&*n.name, owner) {
            ("init", Some(_)) => "__init__".to_string(),
            ("postinit", Some(_)) => "__post_init__".to_string(),
            (other, _) => name(other),
        };
        let key = match owner {
            Some(o) => format!("{o}.{}", n.name),
            None => n.name.to_string(),
        };
        let imp = self.impls.get(&key).copied();
        if imp.is_some() {
            self.used_impls.insert(key.clone());
        }
        let mut params: Vec<String> = Vec::new();
        let mut ret = None;
        let sig = match (&a.signature, imp.map(|i| &i.kind)) {
            (_, Some(ImplKind::Signature(Some(s)))) => Some(s),
            (s, _) => s.as_ref(),
        };
        if owner.is_some() && !a.is_static {
            params.push("self".into());
        }
        if let Some(sig) = sig {
            params.extend(self.params(&sig.params));
            ret = sig.ret.as_ref().map(|r| self.expr(r));
        }
        if a.kind == AbilityKind::Can {
            self.warn(
                a.span,
                format!("event ability `{}` becomes a method taking `here`; walker traversal is not translated", n.name),
            );
            params.push("here=None".into());
        }
        for d in &a.decorators {
            let d = self.expr(d);
            self.line(level, &format!("@{d}"));
        }
        if a.is_static && owner.is_some() {
            self.line(level, "@staticmethod");
        }
        let kw = if a.is_async { "async def" } else { "def" };
        let head = match ret {
            Some(r) => format!("{kw} {fname}({}) -> {r}:", params.join(", ")),
            None => format!("{kw} {fname}({}):", params.join(", ")),
        };
        self.line(level, &head);
        let doc = self.docstring(&a.doc, level + 1);
        match (&a.body, imp) {
            (Some(body), _) => self.block_or_pass(body, level + 1, doc),
            (None, Some(i)) => self.block_or_pass(&i.body, level + 1, doc),
            (None, None) => {
                if a.is_abstract {
                    self.line(level + 1, "raise NotImplementedError");
                } else if !doc {
                    self.line(level + 1, "...");
                }
            }
        }
        if level == 0 {
            self.out.push('\n');
        }
    }

    fn block_or_pass(&mut self, body: &'a [Stmt], level: usize, has_doc: bool) {
        let before = self.out.len();
        self.stmts(body, level);
        if self.out.len() == before && !has_doc {
            self.line(level, "pass");
        }
    }

    fn block(&mut self, body: &'a [Stmt], level: usize) {
        self.block_or_pass(body, level, false);
    }

    fn stmts(&mut self, body: &'a [Stmt], level: usize) {
        for s in body {
            self.stmt(s, level);
        }
    }

    fn stmt(&mut self, s: &'a Stmt, level: usize) {
        match &s.kind {
            StmtKind::Empty => {}
            StmtKind::Expr(e) => {
                let e = self.expr(e);
                self.line(level, &e);
            }
            StmtKind::Assign { targets, ty, value } => {
                let v = self.expr(value);
                let ts: Vec<String> = targets.iter().map(|t| self.expr(t)).collect();
                let text = match ty {
                    Some(t) if ts.len() == 1 => format!("{}: {} = {v}", ts[0], self.expr(t)),
                    _ => format!("{} = {v}", ts.join(" = ")),
                };
                self.line(level, &text);
            }
            StmtKind::Declare { target, ty } => {
                let text = format!("{}: {}", self.expr(target), self.expr(ty));
                self.line(level, &text);
            }
            StmtKind::AugAssign { target, op, value } => {
                let text = format!("{} {}= {}", self.expr(target), binop(*op), self.expr(value));
                self.line(level, &text);
            }
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let c = self.expr(cond);
                self.line(level, &format!("if {c}:"));
                self.block(body, level + 1);
                for (c, b) in elifs {
                    let c = self.expr(c);
                    self.line(level, &format!("elif {c}:"));
                    self.block(b, level + 1);
                }
                self.orelse(orelse, level);
            }
            StmtKind::While { cond, body, orelse } => {
                let c = self.expr(cond);
                self.line(level, &format!("while {c}:"));
                self.block(body, level + 1);
                self.orelse(orelse, level);
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let text = format!("for {} in {}:", self.expr(target), self.expr(iter));
                self.line(level, &text);
                self.block(body, level + 1);
                self.orelse(orelse, level);
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                if contains_continue(body) {
                    self.warn(
                        s.span,
                        "`continue` in this loop would skip its step in the translated `while`",
                    );
                }
                self.stmt(init, level);
                let c = self.expr(cond);
                self.line(level, &format!("while {c}:"));
                self.stmts(body, level + 1);
                self.stmt(step, level + 1);
                self.orelse(orelse, level);
            }
            StmtKind::Forever { body } => {
                self.line(level, "while True:");
                self.block(body, level + 1);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                self.line(level, "try:");
                self.block(body, level + 1);
                for h in handlers {
                    let head = match (&h.ty, &h.name) {
                        (Some(t), Some(n)) => {
                            format!("except {} as {}:", self.expr(t), name(&n.name))
                        }
                        (Some(t), None) => format!("except {}:", self.expr(t)),
                        (None, _) => "except Exception:".to_string(),
                    };
                    self.line(level, &head);
                    self.block(&h.body, level + 1);
                }
                if handlers.is_empty() && finally.is_none() {
                    self.line(level, "finally:");
                    self.line(level + 1, "pass");
                }
                self.orelse(orelse, level);
                if let Some(f) = finally {
                    self.line(level, "finally:");
                    self.block(f, level + 1);
                }
            }
            StmtKind::Match { subject, cases } => {
                let sub = self.expr(subject);
                self.line(level, &format!("match {sub}:"));
                if cases.is_empty() {
                    self.line(level + 1, "case _:");
                    self.line(level + 2, "pass");
                }
                for c in cases {
                    let p = self.expr(&c.pattern);
                    let head = match &c.guard {
                        Some(g) => format!("case {p} if {}:", self.expr(g)),
                        None => format!("case {p}:"),
                    };
                    self.line(level + 1, &head);
                    self.block(&c.body, level + 2);
                }
            }
            StmtKind::Switch { subject, cases } => {
                // Python has no `switch`; an if/elif chain keeps the first matching case
                // but not svc's fall-through into the later ones.
                self.warn(
                    s.span,
                    "`switch` becomes an if/elif chain without fall-through",
                );
                let sub = self.expr(subject);
                let mut first = true;
                for c in cases {
                    let head = match &c.value {
                        Some(v) if first => format!("if {sub} == {}:", self.expr(v)),
                        Some(v) => format!("elif {sub} == {}:", self.expr(v)),
                        None if first => "if True:".to_string(),
                        None => "else:".to_string(),
                    };
                    first = false;
                    self.line(level, &head);
                    self.block(&c.body, level + 1);
                }
            }
            StmtKind::Return(e) => {
                let text = match e {
                    Some(e) => format!("return {}", self.expr(e)),
                    None => "return".into(),
                };
                self.line(level, &text);
            }
            StmtKind::Raise { exc, cause } => {
                let text = match (exc, cause) {
                    (Some(e), Some(c)) => format!("raise {} from {}", self.expr(e), self.expr(c)),
                    (Some(e), None) => format!("raise {}", self.expr(e)),
                    _ => "raise".into(),
                };
                self.line(level, &text);
            }
            StmtKind::Assert { cond, msg } => {
                let text = match msg {
                    Some(m) => format!("assert {}, {}", self.expr(cond), self.expr(m)),
                    None => format!("assert {}", self.expr(cond)),
                };
                self.line(level, &text);
            }
            StmtKind::Delete(e) => {
                let text = match &e.kind {
                    ExprKind::List(items) | ExprKind::Tuple(items) => {
                        let v: Vec<String> = items.iter().map(|i| self.expr(i)).collect();
                        format!("del {}", v.join(", "))
                    }
                    _ => format!("del {}", self.expr(e)),
                };
                self.line(level, &text);
            }
            StmtKind::Break => self.line(level, "break"),
            StmtKind::Continue => self.line(level, "continue"),
            StmtKind::Skip | StmtKind::Disengage => {
                self.warn(
                    s.span,
                    "`skip`/`disengage` (walker control) becomes `return`",
                );
                self.line(level, "return");
            }
            StmtKind::Visit { .. } => {
                self.warn(s.span, "`visit` (walker traversal) is not translated");
                self.line(level, "pass  # visit: not translated");
            }
            StmtKind::Report(e) => {
                self.warn(s.span, "`report` (walker reports) becomes `print`");
                let e = self.expr(e);
                self.line(level, &format!("print({e})"));
            }
            StmtKind::With {
                items,
                body,
                is_async,
            } => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| match &i.target {
                        Some(t) => format!("{} as {}", self.expr(&i.manager), self.expr(t)),
                        None => self.expr(&i.manager),
                    })
                    .collect();
                let kw = if *is_async { "async with" } else { "with" };
                self.line(level, &format!("{kw} {}:", parts.join(", ")));
                self.block(body, level + 1);
            }
            StmtKind::TypedContext { body, .. } => {
                self.warn(
                    s.span,
                    "a typed context block `->T { }` runs its body unconditionally",
                );
                self.stmts(body, level);
            }
            StmtKind::Item(it) => self.item(it, level, None),
            StmtKind::Error => self.line(level, "pass"),
        }
    }

    fn orelse(&mut self, orelse: &'a Option<Vec<Stmt>>, level: usize) {
        if let Some(e) = orelse {
            self.line(level, "else:");
            self.block(e, level + 1);
        }
    }

    fn atom_or_paren(&mut self, e: &Expr) -> String {
        let s = self.expr(e);
        if is_atomic(e) { s } else { format!("({s})") }
    }

    fn args(&mut self, args: &[Arg]) -> String {
        let v: Vec<String> = args
            .iter()
            .map(|a| match a {
                Arg::Positional(e) => self.expr(e),
                Arg::Keyword(k, e) => format!("{}={}", name(&k.name), self.expr(e)),
                Arg::Star(e) => format!("*{}", self.atom_or_paren(e)),
                Arg::DoubleStar(e) => format!("**{}", self.atom_or_paren(e)),
            })
            .collect();
        v.join(", ")
    }

    fn comps(&mut self, gens: &[Comprehension]) -> String {
        let mut s = String::new();
        for g in gens {
            s.push_str(&format!(
                " for {} in {}",
                self.expr(&g.target),
                self.atom_or_paren(&g.iter)
            ));
            for c in &g.conds {
                s.push_str(&format!(" if {}", self.atom_or_paren(c)));
            }
        }
        s
    }

    fn fstring(&mut self, parts: &[FStringPart]) -> String {
        let mut pieces: Vec<String> = Vec::new();
        for p in parts {
            match p {
                FStringPart::Literal(s) => pieces.push(py_str(s)),
                FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    if let Some(d) = debug_text {
                        pieces.push(py_str(d));
                    }
                    let mut v = self.expr(expr);
                    match conversion {
                        Some('r') => v = format!("repr({v})"),
                        Some('a') => v = format!("ascii({v})"),
                        Some(_) => v = format!("str({v})"),
                        None if debug_text.is_some() && spec.is_none() => v = format!("repr({v})"),
                        None => {}
                    }
                    let spec = match spec {
                        Some(sp) => self.fstring(sp),
                        None => "\"\"".into(),
                    };
                    pieces.push(format!("format({v}, {spec})"));
                }
            }
        }
        if pieces.is_empty() {
            return "\"\"".into();
        }
        if pieces.len() == 1 {
            return pieces.remove(0);
        }
        format!("({})", pieces.join(" + "))
    }

    fn list_filter(&mut self, obj: &Expr, f: &Filter) -> String {
        self.tmp += 1;
        let v = format!("_item{}", self.tmp);
        let mut conds = Vec::new();
        if let Some(t) = &f.ty {
            let types = union_parts(t)
                .iter()
                .map(|t| self.expr(t))
                .collect::<Vec<_>>();
            conds.push(format!("isinstance({v}, ({},))", types.join(", ")));
        }
        for c in &f.conds {
            conds.push(format!(
                "{v}.{} {} {}",
                name(&c.field.name),
                cmpop(c.op),
                self.atom_or_paren(&c.value)
            ));
        }
        let src = self.atom_or_paren(obj);
        if conds.is_empty() {
            format!("[{v} for {v} in {src}]")
        } else {
            format!("[{v} for {v} in {src} if {}]", conds.join(" and "))
        }
    }

    fn expr(&mut self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::None => "None".into(),
            ExprKind::Bool(b) => if *b { "True" } else { "False" }.into(),
            ExprKind::Int(i) => i.to_string(),
            ExprKind::BigInt(s) => s.clone(),
            ExprKind::Float(f) => {
                if f.is_finite() {
                    crate::pyfmt::float_repr(*f)
                } else if f.is_nan() {
                    "float(\"nan\")".into()
                } else if *f > 0.0 {
                    "float(\"inf\")".into()
                } else {
                    "float(\"-inf\")".into()
                }
            }
            ExprKind::Str(s) => py_str(s),
            ExprKind::Bytes(b) => crate::pyfmt::bytes_repr(b),
            ExprKind::FString(parts) => self.fstring(parts),
            ExprKind::Ellipsis => "...".into(),
            ExprKind::Name(n) => name(n),
            ExprKind::Special(r) => match r {
                SpecialRef::SelfRef => "self".into(),
                SpecialRef::Super => "super()".into(),
                SpecialRef::Init => "__init__".into(),
                SpecialRef::PostInit => "__post_init__".into(),
                other => {
                    let n = super::tree::special(*other);
                    self.warn(
                        e.span,
                        format!("`{n}` (object-spatial reference) has no Python counterpart"),
                    );
                    n.to_string()
                }
            },
            ExprKind::List(v) => {
                let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                format!("[{}]", items.join(", "))
            }
            ExprKind::Tuple(v) => {
                let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                if items.len() == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            ExprKind::Set(v) => {
                if v.is_empty() {
                    return "set()".into();
                }
                let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                format!("{{{}}}", items.join(", "))
            }
            ExprKind::Dict(items) => {
                let v: Vec<String> = items
                    .iter()
                    .map(|it| match it {
                        DictItem::Pair(k, v) => format!("{}: {}", self.expr(k), self.expr(v)),
                        DictItem::Spread(v) => format!("**{}", self.atom_or_paren(v)),
                    })
                    .collect();
                format!("{{{}}}", v.join(", "))
            }
            ExprKind::ListComp { elt, gens } => format!("[{}{}]", self.expr(elt), self.comps(gens)),
            ExprKind::SetComp { elt, gens } => {
                format!("{{{}{}}}", self.expr(elt), self.comps(gens))
            }
            ExprKind::GenExp { elt, gens } => format!("({}{})", self.expr(elt), self.comps(gens)),
            ExprKind::DictComp { key, value, gens } => {
                format!(
                    "{{{}: {}{}}}",
                    self.expr(key),
                    self.expr(value),
                    self.comps(gens)
                )
            }
            ExprKind::Starred(v) => format!("*{}", self.atom_or_paren(v)),
            ExprKind::Attr {
                obj,
                name: n,
                null_safe,
            } => {
                let mut o = self.atom_or_paren(obj);
                if matches!(obj.kind, ExprKind::Int(_) | ExprKind::BigInt(_)) {
                    // `1.real` would read as a float literal: `(1).real`.
                    o = format!("({o})");
                }
                if *null_safe {
                    format!("(None if {o} is None else {o}.{})", name(&n.name))
                } else {
                    format!("{o}.{}", name(&n.name))
                }
            }
            ExprKind::Index {
                obj,
                index,
                null_safe,
            } => {
                let o = self.atom_or_paren(obj);
                let i = match &index.kind {
                    ExprKind::Tuple(v) if !v.is_empty() => {
                        let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                        items.join(", ")
                    }
                    _ => self.expr(index),
                };
                if *null_safe {
                    format!("(None if {o} is None else {o}[{i}])")
                } else {
                    format!("{o}[{i}]")
                }
            }
            ExprKind::Slice { lower, upper, step } => {
                let l = lower.as_ref().map_or(String::new(), |x| self.expr(x));
                let u = upper.as_ref().map_or(String::new(), |x| self.expr(x));
                match step {
                    Some(s) => format!("{l}:{u}:{}", self.expr(s)),
                    None => format!("{l}:{u}"),
                }
            }
            ExprKind::Call { func, args } => {
                let f = self.atom_or_paren(func);
                format!("{f}({})", self.args(args))
            }
            ExprKind::Unary { op, operand } => {
                let o = self.atom_or_paren(operand);
                match op {
                    UnaryOp::Neg => format!("-{o}"),
                    UnaryOp::Pos => format!("+{o}"),
                    UnaryOp::Not => format!("not {o}"),
                    UnaryOp::Invert => format!("~{o}"),
                }
            }
            ExprKind::Binary { op, left, right } => {
                format!(
                    "{} {} {}",
                    self.atom_or_paren(left),
                    binop(*op),
                    self.atom_or_paren(right)
                )
            }
            ExprKind::BoolOp { op, left, right } => {
                let o = match op {
                    BoolOp::And => "and",
                    BoolOp::Or => "or",
                };
                format!(
                    "{} {o} {}",
                    self.atom_or_paren(left),
                    self.atom_or_paren(right)
                )
            }
            ExprKind::Compare { left, ops } => {
                let mut s = self.atom_or_paren(left);
                for (op, r) in ops {
                    s.push_str(&format!(" {} {}", cmpop(*op), self.atom_or_paren(r)));
                }
                s
            }
            ExprKind::Ternary { cond, then, orelse } => format!(
                "{} if {} else {}",
                self.atom_or_paren(then),
                self.atom_or_paren(cond),
                self.atom_or_paren(orelse)
            ),
            ExprKind::Walrus { name: n, value } => {
                format!("({} := {})", name(&n.name), self.expr(value))
            }
            ExprKind::Lambda { params, body, .. } => {
                let ps: Vec<String> = params
                    .iter()
                    .map(|p| match p.kind {
                        ParamKind::VarArgs => format!("*{}", name(&p.name.name)),
                        ParamKind::KwArgs => format!("**{}", name(&p.name.name)),
                        ParamKind::KwOnlyMarker => "*".into(),
                        ParamKind::PosOnlyMarker => "/".into(),
                        ParamKind::Normal => match &p.default {
                            Some(d) => format!("{}={}", name(&p.name.name), self.expr(d)),
                            None => name(&p.name.name),
                        },
                    })
                    .collect();
                let value = match body.as_slice() {
                    [
                        Stmt {
                            kind: StmtKind::Return(Some(v)) | StmtKind::Expr(v),
                            ..
                        },
                    ] => self.expr(v),
                    [
                        Stmt {
                            kind: StmtKind::Return(None),
                            ..
                        },
                    ]
                    | [] => "None".into(),
                    _ => {
                        self.warn(e.span, "a lambda with several statements becomes `None`-returning; move it into a `def`");
                        "None".into()
                    }
                };
                if ps.is_empty() {
                    format!("(lambda: {value})")
                } else {
                    format!("(lambda {}: {value})", ps.join(", "))
                }
            }
            ExprKind::Cast { expr, ty } => {
                format!("typing.cast({}, {})", self.expr(ty), self.expr(expr))
            }
            ExprKind::Pipe { op, left, right } => {
                let (arg, func) = match op {
                    PipeOp::Forward | PipeOp::AtomicForward => (left, right),
                    PipeOp::Backward | PipeOp::AtomicBackward => (right, left),
                };
                let f = self.atom_or_paren(func);
                format!("{f}({})", self.expr(arg))
            }
            ExprKind::Await(v) => format!("await {}", self.atom_or_paren(v)),
            ExprKind::Yield { value, from } => match (value, from) {
                (Some(v), true) => format!("(yield from {})", self.expr(v)),
                (Some(v), false) => format!("(yield {})", self.expr(v)),
                (None, _) => "(yield)".to_string(),
            },
            ExprKind::Ref(v) => {
                self.warn(e.span, "a `&` reference is translated as the value itself");
                self.atom_or_paren(v)
            }
            ExprKind::Filter { obj, filter } if !matches!(obj.kind, ExprKind::EdgeRef(_)) => {
                self.list_filter(obj, filter)
            }
            ExprKind::Spawn { .. }
            | ExprKind::Connect { .. }
            | ExprKind::Disconnect { .. }
            | ExprKind::EdgeRef(_)
            | ExprKind::Filter { .. }
            | ExprKind::AssignComp { .. } => {
                let what = match &e.kind {
                    ExprKind::Spawn { .. } => "`spawn`",
                    ExprKind::Connect { .. } => "a connect operator",
                    ExprKind::Disconnect { .. } => "a disconnect operator",
                    ExprKind::AssignComp { .. } => "an assign comprehension",
                    _ => "an edge reference",
                };
                self.warn(
                    e.span,
                    format!("{what} (object-spatial) is not translated; it becomes `None`"),
                );
                "None".into()
            }
            ExprKind::Error => "None".into(),
        }
    }
}

fn is_atomic(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::None
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::BigInt(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::FString(_)
            | ExprKind::Ellipsis
            | ExprKind::Name(_)
            | ExprKind::Special(_)
            | ExprKind::List(_)
            | ExprKind::Tuple(_)
            | ExprKind::Set(_)
            | ExprKind::Dict(_)
            | ExprKind::ListComp { .. }
            | ExprKind::SetComp { .. }
            | ExprKind::DictComp { .. }
            | ExprKind::GenExp { .. }
            | ExprKind::Attr {
                null_safe: false,
                ..
            }
            | ExprKind::Index {
                null_safe: false,
                ..
            }
            | ExprKind::Call { .. }
            | ExprKind::Walrus { .. }
            | ExprKind::Lambda { .. }
    ) || matches!(e.kind, ExprKind::Float(f) if f.is_finite() && f >= 0.0)
        || matches!(e.kind, ExprKind::Int(i) if i >= 0)
}

fn is_mutable_literal(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::List(_)
            | ExprKind::Dict(_)
            | ExprKind::Set(_)
            | ExprKind::ListComp { .. }
            | ExprKind::DictComp { .. }
            | ExprKind::SetComp { .. }
    ) || matches!(&e.kind, ExprKind::Call { args, .. } if args.is_empty())
}

/// The alternatives of a `A | B` type.
pub(crate) fn union_parts(t: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut stack = vec![t];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::BitOr,
                left,
                right,
            } => {
                stack.push(right);
                stack.push(left);
            }
            _ => out.push(e),
        }
    }
    out
}

fn contains_continue(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Continue => true,
        StmtKind::If {
            body,
            elifs,
            orelse,
            ..
        } => {
            contains_continue(body)
                || elifs.iter().any(|(_, b)| contains_continue(b))
                || orelse.as_ref().is_some_and(|o| contains_continue(o))
        }
        StmtKind::Try { body, handlers, .. } => {
            contains_continue(body) || handlers.iter().any(|h| contains_continue(&h.body))
        }
        _ => false,
    })
}
