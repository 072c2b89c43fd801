//! Imports: `.svc` modules beside the importing file (E2010, E2011), Python modules
//! (E2012) and the built-in `http` module. Resolution mirrors the interpreter: leading
//! dots climb directories (`.` = this one), dotted parts are directories, the last part
//! names `<part>.svc`.

use super::{Cx, Exports, collect, names};
use crate::ast::visit::blocks;
use crate::ast::{Expr, ExprKind, Name};
use crate::ast::{Import, ImportKind, Item, Member, ModPath, Module, Stmt, StmtKind};
use crate::diag::Code;
use crate::names::stdlib;
use crate::names::{EVENT_MODULES, EVENT_NAMES, SV_CLIENT_MODULES, SV_CLIENT_NAMES};
use crate::span::Span;
use std::collections::HashSet;
use std::path::PathBuf;
use std::rc::Rc;

/// Names the built-in `http` module provides.
const HTTP_NAMES: &[&str] = &["HTTPMethod"];

/// Where an import path leads.
enum Resolved {
    Http,
    /// A standard-library module built into svc (language.md decision 12).
    Stdlib(&'static str),
    /// The event built-ins under one of the original's module paths (decisions.md).
    Events(String),
    /// `sv_client` (or the original's `jaclang.runtimelib`, which holds it).
    SvClient(&'static str),
    Svc(Rc<Exports>),
    Python(String),
    Missing {
        dotted: String,
        rel: String,
    },
    Unknown,
}

fn dotted(mp: &ModPath) -> String {
    let parts: Vec<&str> = mp.parts.iter().map(|p| &*p.name).collect();
    format!("{}{}", ".".repeat(mp.dots as usize), parts.join("."))
}

impl<'a> Cx<'a, '_> {
    /// Check an import and return the names it binds in the importing scope. Names
    /// merged by `include` go to `self.included`.
    pub(super) fn import(&mut self, imp: &'a Import) -> Vec<&'a str> {
        let mut bound = Vec::new();
        if let Some(from) = &imp.from {
            for item in &imp.items {
                bound.push(&*item.alias.as_ref().unwrap_or(&item.name).name);
            }
            match self.resolve(from) {
                Resolved::Http => {
                    for item in &imp.items {
                        if !HTTP_NAMES.contains(&&*item.name.name) {
                            self.error(
                                Code::E2010,
                                format!("cannot import name '{}' from 'http'", item.name.name),
                                item.name.span,
                            );
                        }
                    }
                }
                Resolved::Stdlib(module) => {
                    for item in &imp.items {
                        self.check_stdlib_name(module, &item.name.name, item.name.span);
                    }
                }
                Resolved::SvClient(module) => {
                    let names = sv_client_names(module);
                    for item in &imp.items {
                        if !names.contains(&&*item.name.name) {
                            self.error(
                                Code::E2010,
                                format!("cannot import name '{}' from '{module}'", item.name.name),
                                item.name.span,
                            );
                        }
                    }
                }
                Resolved::Events(module) => {
                    for item in &imp.items {
                        if !EVENT_NAMES.contains(&&*item.name.name) {
                            self.error(
                                Code::E2010,
                                format!("cannot import name '{}' from '{module}'", item.name.name),
                                item.name.span,
                            );
                        }
                    }
                }
                Resolved::Svc(exports) => {
                    if exports.complete {
                        for item in &imp.items {
                            if exports.names.contains(&*item.name.name) {
                                continue;
                            }
                            let mut msg = format!(
                                "cannot import name '{}' from '{}'",
                                item.name.name,
                                dotted(from)
                            );
                            let cands = exports.names.iter().map(|n| (n.as_str(), 0));
                            if let Some(s) = names::best_match(&item.name.name, cands) {
                                msg.push_str(&format!("; did you mean '{s}'?"));
                            }
                            self.error(Code::E2010, msg, item.name.span);
                        }
                    }
                }
                other => self.report_unresolved(other, from),
            }
            if imp.kind == ImportKind::Include {
                self.module_lenient = true;
            }
            return bound;
        }
        for (mp, alias) in &imp.modules {
            let res = self.resolve(mp);
            if imp.kind == ImportKind::Include {
                match &res {
                    Resolved::Svc(ex) => {
                        self.included.extend(ex.names.iter().cloned());
                        if !ex.complete {
                            self.module_lenient = true;
                        }
                    }
                    Resolved::Http => self
                        .included
                        .extend(HTTP_NAMES.iter().map(|s| s.to_string())),
                    Resolved::SvClient(m) => self
                        .included
                        .extend(sv_client_names(m).iter().map(|s| s.to_string())),
                    Resolved::Stdlib(m) => self
                        .included
                        .extend(stdlib::members(m).iter().map(|s| s.to_string())),
                    _ => self.module_lenient = true,
                }
            } else if let Some(a) = alias {
                bound.push(&*a.name);
                if let Resolved::Stdlib(m) = res {
                    self.stdlib_aliases.insert(&a.name, m);
                }
            } else if let Some(first) = mp.parts.first() {
                bound.push(&*first.name);
                if let Resolved::Stdlib(m) = res {
                    self.stdlib_aliases.insert(&first.name, m);
                }
            }
            if !matches!(
                res,
                Resolved::Svc(_)
                    | Resolved::Http
                    | Resolved::Events(_)
                    | Resolved::Stdlib(_)
                    | Resolved::SvClient(_)
            ) {
                self.report_unresolved(res, mp);
            }
        }
        bound
    }

    fn report_unresolved(&mut self, res: Resolved, mp: &ModPath) {
        match res {
            Resolved::Python(name) => self.error(
                Code::E2012,
                format!("'{name}' is a Python module; svc has no Python underneath"),
                mp.span,
            ),
            Resolved::Missing { dotted, rel } => {
                let file = self.path.file_name().map_or_else(
                    || self.path.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                self.error(
                    Code::E2011,
                    format!("module '{dotted}' not found (no {rel} next to {file})"),
                    mp.span,
                );
            }
            Resolved::Http
            | Resolved::Stdlib(_)
            | Resolved::Events(_)
            | Resolved::SvClient(_)
            | Resolved::Svc(_)
            | Resolved::Unknown => {}
        }
    }

    fn resolve(&mut self, mp: &ModPath) -> Resolved {
        let Some(first) = mp.parts.first() else {
            return Resolved::Unknown;
        };
        if mp.dots == 0 && mp.parts.len() == 1 && &*first.name == "http" {
            return Resolved::Http;
        }
        let mut file = self.path.parent().map(PathBuf::from).unwrap_or_default();
        let ext = crate::host::module_ext(&self.path);
        let mut rel: Vec<String> = Vec::new();
        for _ in 1..mp.dots {
            file.push("..");
            rel.push("..".into());
        }
        for (i, part) in mp.parts.iter().enumerate() {
            let piece = if i + 1 == mp.parts.len() {
                format!("{}.{ext}", part.name)
            } else {
                part.name.to_string()
            };
            file.push(&piece);
            rel.push(piece);
        }
        if let Some(cached) = self.modules.get(&file) {
            return match cached {
                Some(ex) => Resolved::Svc(ex.clone()),
                None if mp.dots == 0 && EVENT_MODULES.contains(&dotted(mp).as_str()) => {
                    Resolved::Events(dotted(mp))
                }
                None => self.not_found(mp, rel),
            };
        }
        let loaded = self
            .host
            .read_module(&file)
            .map(|text| Rc::new(exports_of(&text)));
        self.modules.insert(file, loaded.clone());
        match loaded {
            Some(ex) => Resolved::Svc(ex),
            None if mp.dots == 0 && EVENT_MODULES.contains(&dotted(mp).as_str()) => {
                Resolved::Events(dotted(mp))
            }
            None => self.not_found(mp, rel),
        }
    }

    fn not_found(&self, mp: &ModPath, rel: Vec<String>) -> Resolved {
        let first = mp.parts.first().map_or("", |p| &*p.name);
        if mp.dots == 0
            && let Some(m) = SV_CLIENT_MODULES.iter().find(|m| **m == dotted(mp))
        {
            return Resolved::SvClient(m);
        }
        if mp.dots == 0
            && mp.parts.len() == 1
            && let Some(m) = stdlib::MODULES.iter().find(|m| **m == first)
        {
            return Resolved::Stdlib(m);
        }
        if mp.dots == 0 && names::is_python_module(first) {
            Resolved::Python(dotted(mp))
        } else {
            Resolved::Missing {
                dotted: dotted(mp),
                rel: rel.join("/"),
            }
        }
    }
}

/// The names `import from <module>` may take from an sv-client module path.
fn sv_client_names(module: &str) -> &'static [&'static str] {
    if module == "sv_client" {
        SV_CLIENT_NAMES
    } else {
        &["sv_client"]
    }
}

/// The names another module declares at its top level.
fn exports_of(text: &str) -> Exports {
    let parsed = crate::parser::parse(text);
    let mut out = Exports {
        names: HashSet::new(),
        complete: true,
    };
    if parsed.diagnostics.iter().any(|d| d.is_error()) {
        out.complete = false;
    }
    module_names(&parsed.module, &mut out);
    out
}

fn module_names(m: &Module, out: &mut Exports) {
    for item in &m.items {
        match item {
            Item::Import(imp) => {
                if imp.kind == ImportKind::Include {
                    out.complete = false;
                }
                for it in &imp.items {
                    out.names
                        .insert(it.alias.as_ref().unwrap_or(&it.name).name.to_string());
                }
                for (mp, alias) in &imp.modules {
                    if let Some(n) = alias.as_ref().or(mp.parts.first()) {
                        out.names.insert(n.name.to_string());
                    }
                }
            }
            Item::Archetype(a) => {
                out.names.insert(a.name.name.to_string());
                nested_names(&a.members, out);
            }
            Item::Enum(e) => {
                out.names.insert(e.name.name.to_string());
            }
            Item::Ability(ab) => {
                if let Some(n) = &ab.name {
                    out.names.insert(n.name.to_string());
                }
                if let Some(b) = &ab.body {
                    glob_names(b, out);
                }
            }
            Item::Glob(g) => {
                for v in &g.vars {
                    out.names.insert(v.name.name.to_string());
                }
            }
            Item::Entry(e) => {
                let mut b = collect::Binds::default();
                collect::block(&e.body, &mut b);
                out.names.extend(b.names.iter().map(|(n, _)| n.to_string()));
                for imp in b.imports {
                    for it in &imp.items {
                        out.names
                            .insert(it.alias.as_ref().unwrap_or(&it.name).name.to_string());
                    }
                    for (mp, alias) in &imp.modules {
                        if let Some(n) = alias.as_ref().or(mp.parts.first()) {
                            out.names.insert(n.name.to_string());
                        }
                    }
                    if imp.kind == ImportKind::Include {
                        out.complete = false;
                    }
                }
                glob_names(&e.body, out);
            }
            Item::Impl(imp) => glob_names(&imp.body, out),
            Item::Test(t) => glob_names(&t.body, out),
        }
    }
}

/// Enums nested in archetypes are registered module-wide by the interpreter.
fn nested_names(members: &[Member], out: &mut Exports) {
    for m in members {
        match m {
            Member::Enum(e) => {
                out.names.insert(e.name.name.to_string());
            }
            Member::Archetype(a) => nested_names(&a.members, out),
            Member::Ability(ab) => {
                if let Some(b) = &ab.body {
                    glob_names(b, out);
                }
            }
            Member::Impl(imp) => glob_names(&imp.body, out),
            _ => {}
        }
    }
}

/// `glob`s declared inside blocks bind at module level.
fn glob_names(stmts: &[Stmt], out: &mut Exports) {
    for s in stmts {
        match &s.kind {
            StmtKind::Item(item) => match &**item {
                Item::Glob(g) => {
                    for v in &g.vars {
                        out.names.insert(v.name.name.to_string());
                    }
                }
                Item::Ability(ab) => {
                    if let Some(b) = &ab.body {
                        glob_names(b, out);
                    }
                }
                Item::Archetype(a) => nested_names(&a.members, out),
                Item::Entry(e) => glob_names(&e.body, out),
                Item::Impl(imp) => glob_names(&imp.body, out),
                Item::Test(t) => glob_names(&t.body, out),
                Item::Enum(_) | Item::Import(_) => {}
            },
            _ => blocks(s, &mut |b, _| glob_names(b, out)),
        }
    }
}

impl<'a> Cx<'a, '_> {
    /// E2030 when a built-in standard-library module has no member `name`.
    fn check_stdlib_name(&mut self, module: &str, name: &str, span: Span) {
        let members = stdlib::members(module);
        if members.contains(&name) {
            return;
        }
        let mut msg = format!("module '{module}' has no attribute '{name}'");
        if let Some(s) = names::best_match(name, members.iter().map(|m| (*m, 0))) {
            msg.push_str(&format!("; did you mean '{s}'?"));
        }
        self.error(Code::E2030, msg, span);
    }

    /// `m.name` where `m` is a module-level name bound to a built-in stdlib module.
    pub(super) fn check_stdlib_member(&mut self, obj: &'a Expr, name: &'a Name) {
        let ExprKind::Name(n) = &obj.kind else {
            return;
        };
        let Some(module) = self.stdlib_aliases.get(&**n).copied() else {
            return;
        };
        if matches!(
            self.lookup(n),
            super::Found::Global(Some(super::Decl::Import))
        ) {
            self.check_stdlib_name(module, &name.name, name.span);
        }
    }
}
