//! `svc_to_js`: JavaScript (ES2020, CommonJS script) for the translatable subset of svc.
//!
//! Objects and classes become ES6 classes whose constructor takes the fields in order
//! (keyword arguments of a construction are mapped onto that order), `def` becomes a
//! `function` (or a method), enums become frozen objects, `glob` and `with entry` code go
//! to the top level, imports become `require` calls. Nodes, edges and walkers become
//! minimal class stubs: their fields and `def` methods, with every `can` ability an empty
//! method. Variables are declared with one `let` at the top of their function.
//! A small prelude defines the Python builtins the code uses (`print`, `len`, `range`,
//! ...). Object-spatial operations, `@`, slice steps and other untranslatable constructs
//! give a warning each and become `null` or a comment. Syntax errors (or a tree nested
//! too deep) give `Err(messages)`.

use super::to_py::union_parts;
use super::tree::module_tree;
use super::{line_col, parse_clean};
use crate::ast::*;
use std::collections::{BTreeSet, HashMap, HashSet};

const MAX_WARNINGS: usize = 200;

const JS_RESERVED: &[&str] = &[
    "new",
    "var",
    "function",
    "let",
    "const",
    "this",
    "switch",
    "case",
    "default",
    "typeof",
    "instanceof",
    "void",
    "delete",
    "do",
    "catch",
    "throw",
    "extends",
    "export",
    "interface",
    "package",
    "private",
    "protected",
    "public",
    "arguments",
    "eval",
    "yield",
    "enum",
    "null",
    "true",
    "false",
    "undefined",
    "implements",
    "debugger",
    "super",
    "class",
    "import",
];

/// The prelude: helper name and its definition (emitted when the code uses the name).
const PRELUDE: &[(&str, &str)] = &[
    (
        "__str",
        "function __str(v) { if (v === null || v === undefined) return \"None\"; if (v === true) return \"True\"; if (v === false) return \"False\"; if (Array.isArray(v)) return \"[\" + v.map(__repr).join(\", \") + \"]\"; return String(v); }",
    ),
    (
        "__repr",
        "function __repr(v) { return typeof v === \"string\" ? \"'\" + v + \"'\" : __str(v); }",
    ),
    (
        "print",
        "function print(...a) { console.log(a.map(__str).join(\" \")); }",
    ),
    (
        "len",
        "function len(v) { return v instanceof Map || v instanceof Set ? v.size : (typeof v === \"object\" && !Array.isArray(v) ? Object.keys(v).length : v.length); }",
    ),
    (
        "range",
        "function range(a, b, s = 1) { if (b === undefined) { b = a; a = 0; } const r = []; for (let i = a; s > 0 ? i < b : i > b; i += s) r.push(i); return r; }",
    ),
    ("str", "function str(v) { return __str(v); }"),
    ("int", "function int(v) { return Math.trunc(Number(v)); }"),
    ("float", "function float(v) { return Number(v); }"),
    (
        "bool",
        "function bool(v) { return Array.isArray(v) ? v.length > 0 : Boolean(v); }",
    ),
    ("abs", "function abs(v) { return Math.abs(v); }"),
    (
        "min",
        "function min(...a) { return Math.min(...(a.length === 1 ? a[0] : a)); }",
    ),
    (
        "max",
        "function max(...a) { return Math.max(...(a.length === 1 ? a[0] : a)); }",
    ),
    (
        "sum",
        "function sum(v) { let t = 0; for (const x of v) t += x; return t; }",
    ),
    (
        "sorted",
        "function sorted(v) { return Array.from(v).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)); }",
    ),
    (
        "list",
        "function list(v) { return v === undefined ? [] : Array.from(v); }",
    ),
    (
        "enumerate",
        "function enumerate(v, start = 0) { return Array.from(v).map((x, i) => [i + start, x]); }",
    ),
    (
        "zip",
        "function zip(...a) { const n = Math.min(...a.map((x) => x.length)); return range(n).map((i) => a.map((x) => x[i])); }",
    ),
    (
        "isinstance",
        "function isinstance(v, t) { return v instanceof t; }",
    ),
    (
        "__in",
        "function __in(x, c) { if (typeof c === \"string\" || Array.isArray(c)) return c.includes(x); if (c instanceof Map || c instanceof Set) return c.has(x); return Object.prototype.hasOwnProperty.call(c, x); }",
    ),
    (
        "__exc",
        "function __exc(name, ...args) { return Object.assign(new Error(args.map(__str).join(\", \")), { name }); }",
    ),
];

/// Translate svc source to JavaScript; `Err` holds the reasons when no valid JS results.
pub fn svc_to_js(src: &str) -> Result<String, Vec<String>> {
    svc_to_js_with_warnings(src).map(|(code, _)| code)
}

/// Translate and also return the warnings (they are appended to the code as comments too).
pub fn svc_to_js_with_warnings(src: &str) -> Result<(String, Vec<String>), Vec<String>> {
    super::on_big_stack(|| svc_to_js_with_warnings_on_stack(src))
}

fn svc_to_js_with_warnings_on_stack(src: &str) -> Result<(String, Vec<String>), Vec<String>> {
    let module = parse_clean(src).map_err(|e| vec![e.to_string()])?;
    module_tree(&module).map_err(|e| vec![e.locate(src).to_string()])?;
    let mut t = Js {
        src,
        warnings: Vec::new(),
        dropped: 0,
        classes: HashMap::new(),
        functions: HashMap::new(),
        enums: HashSet::new(),
        used: BTreeSet::new(),
        declared: HashSet::new(),
        impls: HashMap::new(),
        tmp: 0,
        loops: 0,
        emitted: HashSet::new(),
        in_function: false,
        in_async: false,
    };
    let body = t.module(&module);
    let mut warnings = t.warnings;
    if t.dropped > 0 {
        warnings.push(format!("… and {} more warnings", t.dropped));
    }
    let mut out = String::from(
        "// Translated from svc by `svc_to_js`; object-spatial code is not translated.\n\"use strict\";\n",
    );
    // Helpers the code uses, and the helpers those use.
    let mut need: BTreeSet<&str> = BTreeSet::new();
    for (n, _) in PRELUDE {
        if t.used.contains(*n) && !t.declared.contains(*n) {
            need.insert(n);
        }
    }
    for (dep, users) in [
        ("__str", &["print", "str", "__repr", "__exc"][..]),
        ("__repr", &["__str"][..]),
        ("range", &["zip"][..]),
    ] {
        if users.iter().any(|u| need.contains(u)) {
            need.insert(dep);
        }
    }
    for (n, def) in PRELUDE {
        if need.contains(n) {
            out.push_str(def);
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(&body);
    if !warnings.is_empty() {
        out.push_str("\n// Translation warnings:\n");
        for w in &warnings {
            out.push_str("//   ");
            out.push_str(&w.replace('\n', " "));
            out.push('\n');
        }
    }
    Ok((out, warnings))
}

struct Js<'a> {
    src: &'a str,
    warnings: Vec<String>,
    dropped: usize,
    /// Archetype name → constructor parameter names (for keyword arguments).
    classes: HashMap<String, Vec<String>>,
    /// Function name → parameter names.
    functions: HashMap<String, Vec<String>>,
    enums: HashSet<String>,
    used: BTreeSet<String>,
    declared: HashSet<String>,
    impls: HashMap<String, &'a ImplBlock>,
    tmp: usize,
    /// Loops around the statement being translated (in the current function).
    loops: usize,
    /// Top-level names already declared in the output.
    emitted: HashSet<String>,
    /// Inside a function body (where `return` is allowed).
    in_function: bool,
    /// Inside an `async` function (where JavaScript allows `await`).
    in_async: bool,
}

fn ind(level: usize) -> String {
    "  ".repeat(level)
}

fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn name(n: &str) -> String {
    let n = n.trim_start_matches('`');
    if JS_RESERVED.contains(&n) {
        format!("{n}_")
    } else {
        n.to_string()
    }
}

impl<'a> Js<'a> {
    fn warn(&mut self, span: crate::span::Span, msg: impl Into<String>) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.dropped += 1;
            return;
        }
        let (l, c) = line_col(self.src, span.start);
        self.warnings.push(format!("{l}:{c}: {}", msg.into()));
    }

    fn module(&mut self, m: &'a Module) -> String {
        // Declarations first, so calls know constructors and parameter orders.
        for it in &m.items {
            match it {
                Item::Archetype(a) => self.collect_class(a),
                Item::Enum(e) => {
                    self.enums.insert(e.name.name.to_string());
                    self.declared.insert(e.name.name.to_string());
                }
                Item::Ability(a) => {
                    if let (Some(n), Some(sig)) = (&a.name, &a.signature) {
                        self.declared.insert(n.name.to_string());
                        self.functions
                            .insert(n.name.to_string(), param_names(&sig.params));
                    }
                }
                Item::Impl(i) => {
                    let key: Vec<&str> = i.target.iter().map(|n| &*n.name).collect();
                    self.impls.insert(key.join("."), i);
                }
                _ => {}
            }
        }
        let mut out = String::new();
        let mut top_vars: BTreeSet<String> = BTreeSet::new();
        for it in &m.items {
            match it {
                Item::Glob(g) => top_vars.extend(g.vars.iter().map(|v| name(&v.name.name))),
                Item::Entry(e) => assigned_names(&e.body, &mut top_vars),
                _ => {}
            }
        }
        top_vars.retain(|v| !self.declared.contains(v));
        self.declared.extend(top_vars.iter().cloned());
        if !top_vars.is_empty() {
            out.push_str(&format!(
                "let {};\n",
                top_vars.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        for it in &m.items {
            self.item(it, 0, &mut out);
        }
        out
    }

    fn collect_class(&mut self, a: &Archetype) {
        let mut fields = Vec::new();
        let mut init = None;
        for m in &a.members {
            match m {
                Member::Has(h) if !h.is_static => {
                    for v in h.vars.iter().filter(|v| !v.postinit) {
                        fields.retain(|f| *f != *v.name.name);
                        fields.push(v.name.name.to_string());
                    }
                }
                Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == "init") => {
                    init = ab.signature.as_ref().map(|s| param_names(&s.params));
                }
                _ => {}
            }
        }
        self.declared.insert(a.name.name.to_string());
        self.classes
            .insert(a.name.name.to_string(), init.unwrap_or(fields));
    }

    fn item(&mut self, it: &Item, level: usize, out: &mut String) {
        let declared = match it {
            Item::Archetype(a) => Some((&a.name, a.span)),
            Item::Enum(e) => Some((&e.name, e.span)),
            Item::Ability(a) => a.name.as_ref().map(|n| (n, a.span)),
            _ => None,
        };
        if let Some((n, span)) = declared
            && level == 0
            && !self.emitted.insert(n.name.to_string())
        {
            self.warn(
                span,
                format!(
                    "`{}` is declared twice; the later declaration is not translated",
                    n.name
                ),
            );
            return;
        }
        match it {
            Item::Import(i) => {
                let path = |p: &ModPath| {
                    let parts: Vec<&str> = p.parts.iter().map(|n| &*n.name).collect();
                    let up = if p.dots > 1 {
                        "../".repeat((p.dots - 1).min(16) as usize)
                    } else {
                        "./".into()
                    };
                    js_str(&format!("{up}{}", parts.join("/")))
                };
                if let Some(from) = &i.from {
                    let names: Vec<String> = i
                        .items
                        .iter()
                        .map(|it| match &it.alias {
                            Some(a) => format!("{}: {}", name(&it.name.name), name(&a.name)),
                            None => name(&it.name.name),
                        })
                        .collect();
                    out.push_str(&format!(
                        "{}const {{ {} }} = require({});\n",
                        ind(level),
                        names.join(", "),
                        path(from)
                    ));
                } else {
                    for (p, alias) in &i.modules {
                        let local = alias.as_ref().map_or_else(
                            || p.parts.last().map_or("module_".into(), |n| name(&n.name)),
                            |a| name(&a.name),
                        );
                        if i.kind == ImportKind::Include {
                            self.warn(i.span, "`include` becomes a module object import");
                        }
                        out.push_str(&format!(
                            "{}const {local} = require({});\n",
                            ind(level),
                            path(p)
                        ));
                    }
                }
            }
            Item::Archetype(a) => self.class(a, level, out),
            Item::Enum(e) => {
                let mut next = 1i64;
                let members: Vec<String> = e
                    .members
                    .iter()
                    .map(|m| {
                        let v = match &m.value {
                            Some(v) => {
                                if let ExprKind::Int(i) = v.kind {
                                    next = i.saturating_add(1);
                                }
                                self.expr(v)
                            }
                            None => {
                                next += 1;
                                (next - 1).to_string()
                            }
                        };
                        format!("{}: {v}", name(&m.name.name))
                    })
                    .collect();
                out.push_str(&format!(
                    "{}const {} = Object.freeze({{ {} }});\n\n",
                    ind(level),
                    name(&e.name.name),
                    members.join(", ")
                ));
            }
            Item::Ability(a) => self.function(a, level, None, out),
            Item::Glob(g) => {
                for v in &g.vars {
                    let value = v.value.as_ref().map_or("null".into(), |e| self.expr(e));
                    out.push_str(&format!(
                        "{}{} = {value};\n",
                        ind(level),
                        name(&v.name.name)
                    ));
                }
            }
            Item::Impl(_) => {}
            Item::Entry(e) => {
                self.stmts(&e.body, level, out);
            }
            Item::Test(t) => {
                self.tmp += 1;
                out.push_str(&format!("{}function test_{}() {{\n", ind(level), self.tmp));
                self.fn_body(&t.body, &[], level + 1, out);
                out.push_str(&format!("{}}}\n", ind(level)));
            }
        }
    }

    fn class(&mut self, a: &Archetype, level: usize, out: &mut String) {
        let stub = !matches!(a.kind, ArchKind::Obj | ArchKind::Class);
        if stub {
            self.warn(
                a.span,
                format!("{} `{}` becomes a minimal class stub (fields and methods; abilities are empty)", a.kind.keyword(), a.name.name),
            );
        }
        let cname = name(&a.name.name);
        let base = a.bases.first().map(|b| self.expr(b));
        if a.bases.len() > 1 {
            self.warn(
                a.span,
                format!(
                    "`{}` has several bases; JavaScript keeps the first",
                    a.name.name
                ),
            );
        }
        match &base {
            Some(b) => out.push_str(&format!("{}class {cname} extends {b} {{\n", ind(level))),
            None => out.push_str(&format!("{}class {cname} {{\n", ind(level))),
        }
        let l1 = level + 1;
        let init = a.members.iter().find_map(|m| match m {
            Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == "init") => Some(ab),
            _ => None,
        });
        // Constructor.
        let mut fields: Vec<(&HasVar, bool)> = Vec::new();
        for m in &a.members {
            if let Member::Has(h) = m {
                for v in &h.vars {
                    // A field declared again replaces the earlier one.
                    fields.retain(|(f, _)| f.name.name != v.name.name);
                    fields.push((v, h.is_static));
                }
            }
        }
        for (v, is_static) in &fields {
            if *is_static {
                let value = v.default.as_ref().map_or("null".into(), |e| self.expr(e));
                out.push_str(&format!(
                    "{}static {} = {value};\n",
                    ind(l1),
                    name(&v.name.name)
                ));
            }
        }
        match init {
            Some(ab) => {
                let key = format!("{}.init", a.name.name);
                let body = ab
                    .body
                    .as_deref()
                    .or_else(|| self.impls.get(&key).map(|i| i.body.as_slice()))
                    .unwrap_or(&[]);
                let params = ab
                    .signature
                    .as_ref()
                    .map(|s| self.params(&s.params))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{}constructor({}) {{\n",
                    ind(l1),
                    params.join(", ")
                ));
                let pn: Vec<String> = ab
                    .signature
                    .as_ref()
                    .map(|s| param_names(&s.params))
                    .unwrap_or_default();
                self.fn_body(body, &pn, l1 + 1, out);
                out.push_str(&format!("{}}}\n", ind(l1)));
            }
            None => {
                let mut params = Vec::new();
                let mut assigns = Vec::new();
                for (v, is_static) in &fields {
                    if *is_static {
                        continue;
                    }
                    let n = name(&v.name.name);
                    if v.postinit {
                        assigns.push(format!("this.{n} = null;"));
                        continue;
                    }
                    match &v.default {
                        Some(d) => {
                            let d = self.expr(d);
                            params.push(format!("{n} = {d}"));
                        }
                        None => params.push(n.clone()),
                    }
                    assigns.push(format!("this.{n} = {n};"));
                }
                out.push_str(&format!(
                    "{}constructor({}) {{\n",
                    ind(l1),
                    params.join(", ")
                ));
                if base.is_some() {
                    out.push_str(&format!("{}super();\n", ind(l1 + 1)));
                }
                for s in assigns {
                    out.push_str(&format!("{}{s}\n", ind(l1 + 1)));
                }
                out.push_str(&format!("{}}}\n", ind(l1)));
            }
        }
        for m in &a.members {
            match m {
                Member::Ability(ab) if ab.name.as_ref().is_some_and(|n| &*n.name == "init") => {}
                Member::Ability(ab) if ab.kind == AbilityKind::Can => {
                    let n = ab
                        .name
                        .as_ref()
                        .map_or_else(|| format!("ability_{}", ab.span.start), |n| name(&n.name));
                    out.push_str(&format!(
                        "{}{n}(here) {{\n{}// event ability: not translated\n{}}}\n",
                        ind(l1),
                        ind(l1 + 1),
                        ind(l1)
                    ));
                }
                Member::Ability(ab) => self.function(ab, l1, Some(&a.name.name), out),
                Member::Archetype(inner) => {
                    self.warn(inner.span, "a nested archetype is not translated");
                }
                Member::Enum(e) => self.warn(e.span, "a nested enum is not translated"),
                Member::Entry(e) => self.warn(
                    e.span,
                    "a `with entry` block inside an archetype is not translated",
                ),
                _ => {}
            }
        }
        out.push_str(&format!("{}}}\n\n", ind(level)));
    }

    fn params(&mut self, params: &[Param]) -> Vec<String> {
        let mut out = Vec::new();
        for p in params {
            match p.kind {
                ParamKind::Normal => match &p.default {
                    Some(d) => {
                        let d = self.expr(d);
                        out.push(format!("{} = {d}", name(&p.name.name)));
                    }
                    None => out.push(name(&p.name.name)),
                },
                ParamKind::VarArgs => out.push(format!("...{}", name(&p.name.name))),
                ParamKind::KwArgs => out.push(format!("{} = {{}}", name(&p.name.name))),
                ParamKind::KwOnlyMarker | ParamKind::PosOnlyMarker => {}
            }
        }
        // A rest parameter must come last.
        if let Some(i) = out.iter().position(|p| p.starts_with("...")) {
            let rest = out.remove(i);
            out.push(rest);
        }
        out
    }

    fn function(&mut self, a: &Ability, level: usize, owner: Option<&str>, out: &mut String) {
        let Some(n) = &a.name else {
            self.warn(a.span, "an anonymous ability is not translated");
            return;
        };
        if a.kind == AbilityKind::Can {
            self.warn(
                a.span,
                format!("event ability `{}` is not translated", n.name),
            );
            return;
        }
        let key = match owner {
            Some(o) => format!("{o}.{}", n.name),
            None => n.name.to_string(),
        };
        let imp = self.impls.get(&key).copied();
        let sig = match imp.map(|i| &i.kind) {
            Some(ImplKind::Signature(Some(s))) => Some(s),
            _ => a.signature.as_ref(),
        };
        let params = sig.map(|s| self.params(&s.params)).unwrap_or_default();
        let pnames = sig.map(|s| param_names(&s.params)).unwrap_or_default();
        let kw = match (owner.is_some(), a.is_static, a.is_async) {
            (true, true, true) => "static async ",
            (true, true, false) => "static ",
            (true, false, true) => "async ",
            (true, false, false) => "",
            (false, _, true) => "async function ",
            (false, _, false) => "function ",
        };
        out.push_str(&format!(
            "{}{kw}{}({}) {{\n",
            ind(level),
            name(&n.name),
            params.join(", ")
        ));
        let body = a.body.as_deref().or(imp.map(|i| i.body.as_slice()));
        let was_async = std::mem::replace(&mut self.in_async, a.is_async);
        match body {
            Some(b) => self.fn_body(b, &pnames, level + 1, out),
            None => out.push_str(&format!(
                "{}throw new Error(\"not implemented\");\n",
                ind(level + 1)
            )),
        }
        self.in_async = was_async;
        out.push_str(&format!("{}}}\n", ind(level)));
        if owner.is_none() {
            out.push('\n');
        }
    }

    /// A function body with its locals declared by one `let`.
    fn fn_body(&mut self, body: &[Stmt], params: &[String], level: usize, out: &mut String) {
        let loops = std::mem::take(&mut self.loops);
        let in_fn = std::mem::replace(&mut self.in_function, true);
        self.fn_body_inner(body, params, level, out);
        self.loops = loops;
        self.in_function = in_fn;
    }

    /// A loop body.
    fn loop_block(&mut self, body: &[Stmt], level: usize, out: &mut String) {
        self.loops += 1;
        self.block(body, level, out);
        self.loops -= 1;
    }

    fn fn_body_inner(&mut self, body: &[Stmt], params: &[String], level: usize, out: &mut String) {
        let mut locals = BTreeSet::new();
        assigned_names(body, &mut locals);
        for p in params {
            locals.remove(p);
        }
        locals.remove("self");
        if !locals.is_empty() {
            out.push_str(&format!(
                "{}let {};\n",
                ind(level),
                locals.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        self.stmts(body, level, out);
    }

    fn stmts(&mut self, body: &[Stmt], level: usize, out: &mut String) {
        for s in body {
            self.stmt(s, level, out);
        }
    }

    fn block(&mut self, body: &[Stmt], level: usize, out: &mut String) {
        out.push_str("{\n");
        self.stmts(body, level + 1, out);
        out.push_str(&ind(level));
        out.push('}');
    }

    fn line(out: &mut String, level: usize, text: &str) {
        out.push_str(&ind(level));
        out.push_str(text);
        out.push('\n');
    }

    fn stmt(&mut self, s: &Stmt, level: usize, out: &mut String) {
        match &s.kind {
            StmtKind::Empty => {}
            StmtKind::Expr(e) => {
                let e = self.expr(e);
                Self::line(out, level, &format!("{e};"));
            }
            StmtKind::Assign { targets, value, .. } => {
                let v = self.expr(value);
                let ts: Vec<String> = targets.iter().map(|t| self.target(t)).collect();
                Self::line(out, level, &format!("{} = {v};", ts.join(" = ")));
            }
            StmtKind::Declare { .. } => {}
            StmtKind::AugAssign { target, op, value } => {
                let t = self.target(target);
                let v = self.expr(value);
                let text = match op {
                    BinOp::FloorDiv => format!("{t} = Math.floor({t} / ({v}));"),
                    BinOp::MatMul => {
                        self.warn(s.span, "`@=` has no JavaScript counterpart");
                        format!("/* {t} @= {v} */")
                    }
                    op => format!("{t} {}= {v};", super::tree::binop(*op)),
                };
                Self::line(out, level, &text);
            }
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                let c = self.expr(cond);
                out.push_str(&format!("{}if ({c}) ", ind(level)));
                self.block(body, level, out);
                for (c, b) in elifs {
                    let c = self.expr(c);
                    out.push_str(&format!(" else if ({c}) "));
                    self.block(b, level, out);
                }
                if let Some(e) = orelse {
                    out.push_str(" else ");
                    self.block(e, level, out);
                }
                out.push('\n');
            }
            StmtKind::While { cond, body, orelse } => {
                let c = self.expr(cond);
                out.push_str(&format!("{}while ({c}) ", ind(level)));
                self.loop_block(body, level, out);
                out.push('\n');
                if orelse.is_some() {
                    self.warn(s.span, "the `else` of a loop is not translated");
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let t = self.target(target);
                let it = self.expr(iter);
                out.push_str(&format!("{}for ({t} of {it}) ", ind(level)));
                self.loop_block(body, level, out);
                out.push('\n');
                if orelse.is_some() {
                    self.warn(s.span, "the `else` of a loop is not translated");
                }
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                ..
            } => {
                let mut i = String::new();
                self.stmt(init, 0, &mut i);
                let mut st = String::new();
                self.stmt(step, 0, &mut st);
                let c = self.expr(cond);
                out.push_str(&format!(
                    "{}for ({} {c}; {}) ",
                    ind(level),
                    i.trim(),
                    st.trim().trim_end_matches(';')
                ));
                self.loop_block(body, level, out);
                out.push('\n');
            }
            StmtKind::Forever { body } => {
                out.push_str(&format!("{}for (;;) ", ind(level)));
                self.loop_block(body, level, out);
                out.push('\n');
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                out.push_str(&format!("{}try ", ind(level)));
                self.block(body, level, out);
                if !handlers.is_empty() {
                    out.push_str(" catch (__e) {\n");
                    let l1 = level + 1;
                    let mut first = true;
                    let mut catch_all = false;
                    for h in handlers {
                        let names: Vec<String> = match &h.ty {
                            None => Vec::new(),
                            Some(t) => {
                                let parts = match &t.kind {
                                    ExprKind::Tuple(v) => v.iter().collect::<Vec<_>>(),
                                    _ => union_parts(t),
                                };
                                parts.iter().map(|p| self.expr(p)).collect()
                            }
                        };
                        let all = names.is_empty()
                            || names
                                .iter()
                                .any(|n| n == "Exception" || n == "BaseException");
                        let cond = names
                            .iter()
                            .map(|n| format!("__e?.name === {} || __e instanceof Object && __e.constructor?.name === {}", js_str(n), js_str(n)))
                            .collect::<Vec<_>>()
                            .join(" || ");
                        let head = match (first, all) {
                            (true, true) => format!("{}{{\n", ind(l1)),
                            (false, true) => " else {\n".to_string(),
                            (true, false) => format!("{}if ({cond}) {{\n", ind(l1)),
                            (false, false) => format!(" else if ({cond}) {{\n"),
                        };
                        out.push_str(&head);
                        if let Some(n) = &h.name {
                            out.push_str(&format!("{}{} = __e;\n", ind(l1 + 1), name(&n.name)));
                        }
                        self.stmts(&h.body, l1 + 1, out);
                        out.push_str(&ind(l1));
                        out.push('}');
                        first = false;
                        if all {
                            catch_all = true;
                            break;
                        }
                    }
                    if !catch_all {
                        out.push_str(" else {\n");
                        out.push_str(&format!("{}throw __e;\n{}}}", ind(l1 + 1), ind(l1)));
                    }
                    out.push('\n');
                    out.push_str(&ind(level));
                    out.push('}');
                }
                if let Some(f) = finally {
                    out.push_str(" finally ");
                    self.block(f, level, out);
                } else if handlers.is_empty() {
                    out.push_str(" finally {}");
                }
                out.push('\n');
                if orelse.is_some() {
                    self.warn(s.span, "the `else` of a `try` is not translated");
                }
            }
            StmtKind::Match { subject, cases } => {
                self.tmp += 1;
                let m = format!("__m{}", self.tmp);
                let sub = self.expr(subject);
                Self::line(out, level, &format!("{{ const {m} = {sub};"));
                let mut first = true;
                for c in cases {
                    let cond = match &c.pattern.kind {
                        ExprKind::Name(n) if &**n == "_" => "true".to_string(),
                        ExprKind::Name(_) => {
                            self.warn(
                                c.span,
                                "a capture pattern is translated as an equality test",
                            );
                            format!("{m} === {}", self.expr(&c.pattern))
                        }
                        _ => format!("{m} === {}", self.expr(&c.pattern)),
                    };
                    let cond = match &c.guard {
                        Some(g) => format!("({cond}) && ({})", self.expr(g)),
                        None => cond,
                    };
                    if first {
                        out.push_str(&format!("{}if ({cond}) ", ind(level)));
                    } else {
                        out.push_str(&format!(" else if ({cond}) "));
                    }
                    first = false;
                    self.block(&c.body, level, out);
                }
                out.push_str(" }\n");
            }
            StmtKind::Switch { subject, cases } => {
                // JavaScript's `switch` falls through like svc's; only the equality test
                // differs (`===` rather than Python equality).
                let sub = self.expr(subject);
                Self::line(out, level, &format!("switch ({sub}) {{"));
                for c in cases {
                    let head = match &c.value {
                        Some(v) => format!("case {}:", self.expr(v)),
                        None => "default:".to_string(),
                    };
                    Self::line(out, level + 1, &head);
                    for st in &c.body {
                        self.stmt(st, level + 2, out);
                    }
                }
                Self::line(out, level, "}");
            }
            StmtKind::Return(_) | StmtKind::Skip | StmtKind::Disengage if !self.in_function => {
                self.warn(s.span, "`return` outside a function is not translated");
                Self::line(out, level, "/* return outside a function */");
            }
            StmtKind::Return(e) => {
                let text = match e {
                    Some(e) => format!("return {};", self.expr(e)),
                    None => "return;".into(),
                };
                Self::line(out, level, &text);
            }
            StmtKind::Raise { exc, .. } => {
                let text = match exc {
                    None => "throw __e;".to_string(),
                    Some(e) => format!("throw {};", self.exception(e)),
                };
                Self::line(out, level, &text);
            }
            StmtKind::Assert { cond, msg } => {
                self.used.insert("__exc".into());
                let c = self.expr(cond);
                let m = msg
                    .as_ref()
                    .map_or(String::new(), |m| format!(", {}", self.expr(m)));
                Self::line(
                    out,
                    level,
                    &format!("if (!({c})) throw __exc(\"AssertionError\"{m});"),
                );
            }
            StmtKind::Delete(e) => match &e.kind {
                ExprKind::Index { .. } | ExprKind::Attr { .. } => {
                    let t = self.expr(e);
                    Self::line(out, level, &format!("delete {t};"));
                }
                _ => {
                    self.warn(s.span, "`del` of a name or node is not translated");
                }
            },
            StmtKind::Break | StmtKind::Continue if self.loops == 0 => {
                self.warn(
                    s.span,
                    "`break`/`continue` outside a loop is not translated",
                );
                Self::line(out, level, "/* break or continue outside a loop */");
            }
            StmtKind::Break => Self::line(out, level, "break;"),
            StmtKind::Continue => Self::line(out, level, "continue;"),
            StmtKind::Skip | StmtKind::Disengage => {
                self.warn(
                    s.span,
                    "`skip`/`disengage` (walker control) becomes `return`",
                );
                Self::line(out, level, "return;");
            }
            StmtKind::Visit { .. } => {
                self.warn(s.span, "`visit` (walker traversal) is not translated");
                Self::line(out, level, "/* visit: not translated */");
            }
            StmtKind::Report(e) => {
                self.warn(s.span, "`report` (walker reports) becomes `console.log`");
                let e = self.expr(e);
                Self::line(out, level, &format!("console.log({e});"));
            }
            StmtKind::TypedContext { body, .. } => {
                self.warn(
                    s.span,
                    "a typed context block `->T { }` runs its body unconditionally",
                );
                self.stmts(body, level, out);
            }
            // Each manager in its own block: `__enter__`, then the rest inside a
            // `try` whose `finally` calls `__exit__`.
            StmtKind::With { items, body, .. } => {
                self.warn(
                    s.span,
                    "`with` calls `__exit__(null, null, null)` on every exit (an exception \
                     is not offered to it)",
                );
                let mut closes = 0;
                for (k, item) in items.iter().enumerate() {
                    let l = level + k;
                    let m = self.expr(&item.manager);
                    out.push_str(&format!("{}{{\n", ind(l)));
                    out.push_str(&format!("{}const __with = {m};\n", ind(l + 1)));
                    let enter = "__with.__enter__()";
                    match &item.target {
                        Some(t) => {
                            let t = self.target(t);
                            out.push_str(&format!("{}{t} = {enter};\n", ind(l + 1)));
                        }
                        None => out.push_str(&format!("{}{enter};\n", ind(l + 1))),
                    }
                    out.push_str(&format!("{}try {{\n", ind(l + 1)));
                    closes += 1;
                }
                self.stmts(body, level + closes + 1, out);
                for k in (0..closes).rev() {
                    let l = level + k;
                    out.push_str(&format!(
                        "{}}} finally {{\n{}__with.__exit__(null, null, null);\n{}}}\n{}}}\n",
                        ind(l + 1),
                        ind(l + 2),
                        ind(l + 1),
                        ind(l)
                    ));
                }
            }
            StmtKind::Item(it) => match &**it {
                Item::Ability(a) => self.function(a, level, None, out),
                Item::Archetype(a) => {
                    self.collect_class(a);
                    self.class(a, level, out);
                }
                other => self.item(other, level, out),
            },
            StmtKind::Error => {}
        }
    }

    /// The thrown value of `raise e`.
    fn exception(&mut self, e: &Expr) -> String {
        if let ExprKind::Call { func, args } = &e.kind
            && let ExprKind::Name(n) = &func.kind
            && !self.classes.contains_key(&**n)
        {
            self.used.insert("__exc".into());
            let mut v = vec![js_str(n)];
            v.extend(args.iter().map(|a| match a {
                Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => {
                    self.expr(x)
                }
            }));
            return format!("__exc({})", v.join(", "));
        }
        if let ExprKind::Name(n) = &e.kind
            && !self.classes.contains_key(&**n)
        {
            self.used.insert("__exc".into());
            return format!("__exc({})", js_str(n));
        }
        self.expr(e)
    }

    /// An assignment or loop target (`[a, b]` destructuring for tuples).
    fn target(&mut self, t: &Expr) -> String {
        match &t.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => {
                let last = v.len().saturating_sub(1);
                let mut items = Vec::new();
                for (i, x) in v.iter().enumerate() {
                    match &x.kind {
                        ExprKind::Starred(inner) if i == last => {
                            items.push(format!("...{}", self.target(inner)))
                        }
                        ExprKind::Starred(inner) => {
                            self.warn(x.span, "a starred target before the last position takes one item in JavaScript");
                            items.push(self.target(inner));
                        }
                        _ => items.push(self.target(x)),
                    }
                }
                format!("[{}]", items.join(", "))
            }
            _ => self.expr(t),
        }
    }

    fn paren(&mut self, e: &Expr) -> String {
        let s = self.expr(e);
        if is_atomic(e) { s } else { format!("({s})") }
    }

    fn call_args(
        &mut self,
        callee: Option<&[String]>,
        args: &[Arg],
        span: crate::span::Span,
    ) -> String {
        let mut pos: Vec<String> = Vec::new();
        let mut kws: Vec<(String, String)> = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) => pos.push(self.expr(e)),
                Arg::Star(e) => pos.push(format!("...{}", self.paren(e))),
                Arg::Keyword(k, e) => kws.push((k.name.to_string(), self.expr(e))),
                Arg::DoubleStar(e) => {
                    self.warn(span, "`**kwargs` in a call is passed as one object");
                    pos.push(self.expr(e));
                }
            }
        }
        if kws.is_empty() {
            return pos.join(", ");
        }
        match callee {
            Some(params) => {
                let mut slots: Vec<Option<String>> = pos.into_iter().map(Some).collect();
                for (k, v) in kws {
                    match params.iter().position(|p| *p == k) {
                        Some(i) => {
                            if slots.len() <= i {
                                slots.resize(i + 1, None);
                            }
                            slots[i] = Some(v);
                        }
                        None => {
                            self.warn(
                                span,
                                format!("keyword argument `{k}` matches no parameter; dropped"),
                            );
                        }
                    }
                }
                let v: Vec<String> = slots
                    .into_iter()
                    .map(|s| s.unwrap_or_else(|| "undefined".into()))
                    .collect();
                v.join(", ")
            }
            None => {
                let obj: Vec<String> = kws
                    .iter()
                    .map(|(k, v)| format!("{}: {v}", js_str(k)))
                    .collect();
                pos.push(format!("{{ {} }}", obj.join(", ")));
                pos.join(", ")
            }
        }
    }

    /// `elt_awaits`: the element (or key/value) holds an `await`.
    fn comprehension(&mut self, elt: &str, elt_awaits: bool, gens: &[Comprehension]) -> String {
        let awaits = elt_awaits
            || gens
                .iter()
                .any(|g| g.conds.iter().chain([&g.iter]).any(has_await));
        if self.in_async && awaits {
            return self.comprehension_awaiting(elt, gens);
        }
        let mut acc: Option<String> = None;
        for (i, g) in gens.iter().enumerate().rev() {
            let t = self.target(&g.target);
            let it = self.expr(&g.iter);
            let mut s = format!("Array.from({it})");
            for c in &g.conds {
                let c = self.expr(c);
                s.push_str(&format!(".filter(({t}) => {c})"));
            }
            match acc.take() {
                None => s.push_str(&format!(".map(({t}) => {elt})")),
                Some(inner) => s.push_str(&format!(".flatMap(({t}) => {inner})")),
            }
            let _ = i;
            acc = Some(s);
        }
        acc.unwrap_or_else(|| "[]".into())
    }

    /// A comprehension whose parts `await` (in an async function): nested `for`-`of`
    /// loops in an async arrow function awaited in place, so the awaits run one after
    /// another as Python's do (an arrow passed to `map` could not await).
    fn comprehension_awaiting(&mut self, elt: &str, gens: &[Comprehension]) -> String {
        let mut s = String::from("(await (async () => { const __items = []; ");
        for g in gens {
            let t = self.target(&g.target);
            let it = self.expr(&g.iter);
            s.push_str(&format!("for (const {t} of Array.from({it})) {{ "));
            for c in &g.conds {
                let c = self.expr(c);
                s.push_str(&format!("if (!({c})) continue; "));
            }
        }
        s.push_str(&format!("__items.push({elt}); "));
        s.push_str(&"} ".repeat(gens.len()));
        s.push_str("return __items; })())");
        s
    }

    fn fstring(&mut self, parts: &[FStringPart], span: crate::span::Span) -> String {
        let mut s = String::from("`");
        for p in parts {
            match p {
                FStringPart::Literal(l) => {
                    for c in l.chars() {
                        match c {
                            '`' => s.push_str("\\`"),
                            '\\' => s.push_str("\\\\"),
                            '$' => s.push_str("\\$"),
                            c => s.push(c),
                        }
                    }
                }
                FStringPart::Expr {
                    expr,
                    spec,
                    debug_text,
                    ..
                } => {
                    if spec.is_some() {
                        self.warn(span, "f-string format specs are not translated");
                    }
                    if let Some(d) = debug_text {
                        s.push_str(&d.replace('`', "\\`").replace('$', "\\$"));
                    }
                    self.used.insert("__str".into());
                    let v = self.expr(expr);
                    s.push_str(&format!("${{__str({v})}}"));
                }
            }
        }
        s.push('`');
        s
    }

    fn expr(&mut self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::None => "null".into(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Int(i) => i.to_string(),
            ExprKind::BigInt(s) => format!("{s}n"),
            ExprKind::Float(f) => {
                if f.is_finite() {
                    crate::pyfmt::float_repr(*f)
                } else if f.is_nan() {
                    "NaN".into()
                } else if *f > 0.0 {
                    "Infinity".into()
                } else {
                    "-Infinity".into()
                }
            }
            ExprKind::Str(s) => js_str(s),
            ExprKind::Bytes(b) => {
                let items: Vec<String> = b.iter().map(u8::to_string).collect();
                format!("new Uint8Array([{}])", items.join(", "))
            }
            ExprKind::FString(parts) => self.fstring(parts, e.span),
            ExprKind::Ellipsis => "undefined".into(),
            ExprKind::Name(n) => {
                self.used.insert(n.to_string());
                name(n)
            }
            ExprKind::Special(r) => match r {
                SpecialRef::SelfRef => "this".into(),
                SpecialRef::Super => "super".into(),
                SpecialRef::Init => "init_".into(),
                SpecialRef::PostInit => "postinit_".into(),
                other => {
                    let n = super::tree::special(*other);
                    self.warn(
                        e.span,
                        format!("`{n}` (object-spatial reference) becomes `null`"),
                    );
                    "null".into()
                }
            },
            ExprKind::List(v) | ExprKind::Tuple(v) => {
                let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                format!("[{}]", items.join(", "))
            }
            ExprKind::Set(v) => {
                let items: Vec<String> = v.iter().map(|x| self.expr(x)).collect();
                format!("new Set([{}])", items.join(", "))
            }
            ExprKind::Dict(items) => {
                let v: Vec<String> = items
                    .iter()
                    .map(|it| match it {
                        DictItem::Pair(k, v) => {
                            let key = match &k.kind {
                                ExprKind::Str(s) => js_str(s),
                                _ => format!("[{}]", self.expr(k)),
                            };
                            format!("{key}: {}", self.expr(v))
                        }
                        DictItem::Spread(v) => format!("...{}", self.paren(v)),
                    })
                    .collect();
                format!("({{ {} }})", v.join(", "))
            }
            ExprKind::ListComp { elt, gens } | ExprKind::GenExp { elt, gens } => {
                let el = self.expr(elt);
                self.comprehension(&el, has_await(elt), gens)
            }
            ExprKind::SetComp { elt, gens } => {
                let el = self.expr(elt);
                format!("new Set({})", self.comprehension(&el, has_await(elt), gens))
            }
            ExprKind::DictComp { key, value, gens } => {
                let el = format!("[{}, {}]", self.expr(key), self.expr(value));
                let awaits = has_await(key) || has_await(value);
                format!(
                    "Object.fromEntries({})",
                    self.comprehension(&el, awaits, gens)
                )
            }
            ExprKind::Starred(v) => format!("...{}", self.paren(v)),
            ExprKind::Attr {
                obj,
                name: n,
                null_safe,
            } => {
                let mut o = self.paren(obj);
                if matches!(obj.kind, ExprKind::Int(_) | ExprKind::BigInt(_)) {
                    // `1.x` would read as a number literal: `(1).x`.
                    o = format!("({o})");
                }
                let dot = if *null_safe { "?." } else { "." };
                let member = match &*n.name {
                    "append" => "push",
                    "upper" => "toUpperCase",
                    "lower" => "toLowerCase",
                    "strip" => "trim",
                    "startswith" => "startsWith",
                    "endswith" => "endsWith",
                    other => other,
                };
                format!("{o}{dot}{member}")
            }
            ExprKind::Index {
                obj,
                index,
                null_safe,
            } => {
                let o = self.paren(obj);
                // A method after `?.` needs no second dot (`o?.slice(..)`).
                let m = if *null_safe { "?." } else { "." };
                match &index.kind {
                    ExprKind::Slice { lower, upper, step } => {
                        if step.is_some() {
                            self.warn(e.span, "a slice step is not translated");
                        }
                        let l = lower.as_ref().map_or("0".into(), |x| self.expr(x));
                        match upper {
                            Some(u) => {
                                let u = self.expr(u);
                                format!("{o}{m}slice({l}, {u})")
                            }
                            None => format!("{o}{m}slice({l})"),
                        }
                    }
                    ExprKind::Unary {
                        op: UnaryOp::Neg, ..
                    } => {
                        let i = self.expr(index);
                        format!("{o}{m}at({i})")
                    }
                    _ => {
                        let i = self.expr(index);
                        let q = if *null_safe { "?." } else { "" };
                        format!("{o}{q}[{i}]")
                    }
                }
            }
            ExprKind::Slice { .. } => {
                self.warn(e.span, "a slice outside an index is not translated");
                "null".into()
            }
            ExprKind::Call { func, args } => self.call(func, args, e.span),
            ExprKind::Unary { op, operand } => {
                let o = self.paren(operand);
                match op {
                    UnaryOp::Neg => format!("-{o}"),
                    UnaryOp::Pos => format!("+{o}"),
                    UnaryOp::Not => format!("!{o}"),
                    UnaryOp::Invert => format!("~{o}"),
                }
            }
            ExprKind::Binary { op, left, right } => {
                let l = self.paren(left);
                let r = self.paren(right);
                match op {
                    BinOp::FloorDiv => format!("Math.floor({l} / {r})"),
                    BinOp::MatMul => {
                        self.warn(
                            e.span,
                            "`@` (matrix multiplication) has no JavaScript counterpart",
                        );
                        "null".into()
                    }
                    op => format!("{l} {} {r}", super::tree::binop(*op)),
                }
            }
            ExprKind::BoolOp { op, left, right } => {
                let o = if *op == BoolOp::And { "&&" } else { "||" };
                format!("{} {o} {}", self.paren(left), self.paren(right))
            }
            ExprKind::Compare { left, ops } => {
                let mut parts = Vec::new();
                let mut l = self.paren(left);
                for (op, r) in ops {
                    let rs = self.paren(r);
                    let p = match op {
                        CmpOp::Eq | CmpOp::Is => format!("{l} === {rs}"),
                        CmpOp::NotEq | CmpOp::IsNot => format!("{l} !== {rs}"),
                        CmpOp::Lt => format!("{l} < {rs}"),
                        CmpOp::Gt => format!("{l} > {rs}"),
                        CmpOp::LtE => format!("{l} <= {rs}"),
                        CmpOp::GtE => format!("{l} >= {rs}"),
                        CmpOp::In => {
                            self.used.insert("__in".into());
                            format!("__in({l}, {rs})")
                        }
                        CmpOp::NotIn => {
                            self.used.insert("__in".into());
                            format!("!__in({l}, {rs})")
                        }
                    };
                    parts.push(p);
                    l = rs;
                }
                parts.join(" && ")
            }
            ExprKind::Ternary { cond, then, orelse } => {
                format!(
                    "{} ? {} : {}",
                    self.paren(cond),
                    self.paren(then),
                    self.paren(orelse)
                )
            }
            ExprKind::Walrus { name: n, value } => {
                format!("({} = {})", name(&n.name), self.expr(value))
            }
            ExprKind::Lambda { params, body, .. } => {
                let ps = self.params(params);
                let pn = param_names(params);
                let mut b = String::new();
                self.fn_body(body, &pn, 1, &mut b);
                if let [
                    Stmt {
                        kind: StmtKind::Expr(v),
                        ..
                    },
                ] = body.as_slice()
                {
                    let v = self.expr(v);
                    return format!("(({}) => {v})", ps.join(", "));
                }
                format!("(({}) => {{\n{b}}})", ps.join(", "))
            }
            ExprKind::Cast { expr, .. } => self.expr(expr),
            ExprKind::Pipe { op, left, right } => {
                let (arg, func) = match op {
                    PipeOp::Forward | PipeOp::AtomicForward => (left, right),
                    PipeOp::Backward | PipeOp::AtomicBackward => (right, left),
                };
                let f = self.paren(func);
                format!("{f}({})", self.expr(arg))
            }
            ExprKind::Await(v) if self.in_async => format!("await {}", self.paren(v)),
            ExprKind::Await(v) => {
                self.warn(
                    e.span,
                    "`await` outside an async function is not translated",
                );
                format!("/* await */ {}", self.paren(v))
            }
            ExprKind::Yield { value, from } => {
                self.warn(
                    e.span,
                    "generators are not translated: `yield` needs a `function*`",
                );
                match (value, from) {
                    (Some(v), true) => format!("/* yield* */ {}", self.paren(v)),
                    (Some(v), false) => format!("/* yield */ {}", self.paren(v)),
                    (None, _) => "undefined".to_string(),
                }
            }
            ExprKind::Ref(v) => {
                self.warn(e.span, "a `&` reference is translated as the value itself");
                self.paren(v)
            }
            ExprKind::Filter { obj, filter } if !matches!(obj.kind, ExprKind::EdgeRef(_)) => {
                let src = self.paren(obj);
                let mut conds = Vec::new();
                if let Some(t) = &filter.ty {
                    for p in union_parts(t) {
                        let tn = self.expr(p);
                        conds.push(format!("_x instanceof {tn}"));
                    }
                    if conds.len() > 1 {
                        conds = vec![format!("({})", conds.join(" || "))];
                    }
                }
                for c in &filter.conds {
                    let v = self.paren(&c.value);
                    let f = name(&c.field.name);
                    let op = match c.op {
                        CmpOp::Eq | CmpOp::Is => "===",
                        CmpOp::NotEq | CmpOp::IsNot => "!==",
                        CmpOp::Lt => "<",
                        CmpOp::Gt => ">",
                        CmpOp::LtE => "<=",
                        CmpOp::GtE => ">=",
                        CmpOp::In | CmpOp::NotIn => {
                            self.used.insert("__in".into());
                            let neg = if c.op == CmpOp::NotIn { "!" } else { "" };
                            conds.push(format!("{neg}__in(_x.{f}, {v})"));
                            continue;
                        }
                    };
                    conds.push(format!("_x.{f} {op} {v}"));
                }
                let cond = if conds.is_empty() {
                    "true".into()
                } else {
                    conds.join(" && ")
                };
                format!("Array.from({src}).filter((_x) => {cond})")
            }
            ExprKind::Spawn { .. }
            | ExprKind::Connect { .. }
            | ExprKind::Disconnect { .. }
            | ExprKind::EdgeRef(_)
            | ExprKind::Filter { .. }
            | ExprKind::AssignComp { .. } => {
                self.warn(
                    e.span,
                    "object-spatial expression (spawn, edges, connect) becomes `null`",
                );
                "null".into()
            }
            ExprKind::Error => "null".into(),
        }
    }

    fn call(&mut self, func: &Expr, args: &[Arg], span: crate::span::Span) -> String {
        // `sep.join(xs)` → `xs.join(sep)`.
        if let ExprKind::Attr {
            obj,
            name: n,
            null_safe: false,
        } = &func.kind
            && &*n.name == "join"
            && let [Arg::Positional(xs)] = args
        {
            let sep = self.expr(obj);
            return format!("Array.from({}).join({sep})", self.expr(xs));
        }
        // `super.init(...)` → `super(...)`.
        if let ExprKind::Attr { obj, name: n, .. } = &func.kind
            && matches!(obj.kind, ExprKind::Special(SpecialRef::Super))
            && &*n.name == "init"
        {
            return format!("super({})", self.call_args(None, args, span));
        }
        if let ExprKind::Name(n) = &func.kind {
            if let Some(params) = self.classes.get(&**n).cloned() {
                return format!(
                    "new {}({})",
                    name(n),
                    self.call_args(Some(&params), args, span)
                );
            }
            if let Some(params) = self.functions.get(&**n).cloned() {
                self.used.insert(n.to_string());
                return format!("{}({})", name(n), self.call_args(Some(&params), args, span));
            }
        }
        let f = self.paren(func);
        format!("{f}({})", self.call_args(None, args, span))
    }
}

fn param_names(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Normal))
        .map(|p| p.name.name.to_string())
        .collect()
}

/// Names a block assigns (for the `let` at the top of its function), not descending
/// into nested functions.
fn assigned_names(body: &[Stmt], out: &mut BTreeSet<String>) {
    let mut stack: Vec<&Stmt> = body.iter().collect();
    while let Some(s) = stack.pop() {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target_names(t, out)),
            StmtKind::For {
                target,
                body,
                orelse,
                ..
            } => {
                target_names(target, out);
                stack.extend(body.iter());
                stack.extend(orelse.iter().flatten());
            }
            StmtKind::IterFor { init, body, .. } => {
                stack.push(init);
                stack.extend(body.iter());
            }
            StmtKind::If {
                body,
                elifs,
                orelse,
                ..
            } => {
                stack.extend(body.iter());
                for (_, b) in elifs {
                    stack.extend(b.iter());
                }
                stack.extend(orelse.iter().flatten());
            }
            StmtKind::While { body, .. }
            | StmtKind::Forever { body }
            | StmtKind::TypedContext { body, .. }
            | StmtKind::With { body, .. } => stack.extend(body.iter()),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                stack.extend(body.iter());
                for h in handlers {
                    if let Some(n) = &h.name {
                        out.insert(name(&n.name));
                    }
                    stack.extend(h.body.iter());
                }
                stack.extend(orelse.iter().flatten());
                stack.extend(finally.iter().flatten());
            }
            StmtKind::Match { cases, .. } => {
                for c in cases {
                    stack.extend(c.body.iter());
                }
            }
            StmtKind::Switch { cases, .. } => {
                for c in cases {
                    stack.extend(c.body.iter());
                }
            }
            StmtKind::Expr(e) => walrus_names(e, out),
            _ => {}
        }
    }
}

fn walrus_names(e: &Expr, out: &mut BTreeSet<String>) {
    if let ExprKind::Walrus { name: n, .. } = &e.kind {
        out.insert(name(&n.name));
    }
}

fn target_names(t: &Expr, out: &mut BTreeSet<String>) {
    let mut stack = vec![t];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Name(n) => {
                out.insert(name(n));
            }
            ExprKind::Special(SpecialRef::Init) => {
                out.insert("init_".into());
            }
            ExprKind::Special(SpecialRef::PostInit) => {
                out.insert("postinit_".into());
            }
            ExprKind::Tuple(v) | ExprKind::List(v) => stack.extend(v.iter()),
            ExprKind::Starred(x) => stack.push(x),
            _ => {}
        }
    }
}

fn is_atomic(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::None
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::FString(_)
            | ExprKind::Name(_)
            | ExprKind::Special(_)
            | ExprKind::List(_)
            | ExprKind::Tuple(_)
            | ExprKind::Dict(_)
            | ExprKind::Attr { .. }
            | ExprKind::Index { .. }
            | ExprKind::Call { .. }
            | ExprKind::Walrus { .. }
    ) || matches!(e.kind, ExprKind::Int(i) if i >= 0)
        || matches!(e.kind, ExprKind::Float(f) if f.is_finite() && f >= 0.0)
}

/// Does `e` hold an `await` (outside nested functions and lambdas)?
fn has_await(e: &Expr) -> bool {
    if matches!(e.kind, ExprKind::Await(_)) {
        return true;
    }
    if matches!(e.kind, ExprKind::Lambda { .. }) {
        return false;
    }
    let mut found = false;
    crate::ast::visit::children(e, &mut |c| found = found || has_await(c));
    found
}
