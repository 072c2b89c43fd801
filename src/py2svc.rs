//! `py_to_svc`: Python source to svc, through the `rustpython-parser` crate.
//!
//! Classes become `obj` archetypes (class-level annotations and the `self.x = ...`
//! assignments of `__init__` become `has` fields; an `__init__` that does more than
//! store its parameters is kept as `def init`), functions become `def` with their
//! annotations, module-level assignments become `glob`, other module-level statements
//! go into `with entry` blocks (`if __name__ == "__main__":` into `with entry:__main__`),
//! control flow and expressions keep their meaning. Constructs without an svc form
//! (`with`, `global`, `yield`, `match`, class keywords) give warnings. The result
//! is re-parsed by svc's parser and laid out by its formatter; if it does not parse, the
//! call fails with the reasons.
//!
//! Bounds: the input is parsed and converted on a thread with a large stack (the Python
//! syntax tree is recursive, so dropping a deeply nested one recurses), and the
//! conversion refuses expressions nested more than [`MAX_DEPTH`] levels.

use rustpython_parser::ast::{self, Constant, Expr, Ranged as _, Stmt};
use rustpython_parser::text_size::TextRange;
use rustpython_parser::{Parse as _, ast::ConversionFlag};
use std::fmt::Write as _;

/// Deepest statement or expression nesting converted.
const MAX_DEPTH: usize = 500;
/// Stack of the conversion thread (reserved, not committed).
const STACK_BYTES: usize = 256 << 20;
/// Largest input accepted.
const MAX_INPUT_BYTES: usize = 1 << 20;

/// Translate Python to svc: `Ok((code, warnings))`, or `Err(reasons)`.
pub fn py_to_svc(python: &str) -> Result<(String, Vec<String>), Vec<String>> {
    if python.len() > MAX_INPUT_BYTES {
        return Err(vec![format!(
            "the input is larger than {MAX_INPUT_BYTES} bytes"
        )]);
    }
    let src = python.to_string();
    let worker = std::thread::Builder::new()
        .name("py2svc".into())
        .stack_size(STACK_BYTES)
        .spawn(move || convert(&src));
    match worker {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err(vec!["internal error: the translation panicked".into()])),
        Err(e) => Err(vec![format!("cannot start the translation thread: {e}")]),
    }
}

fn convert(src: &str) -> Result<(String, Vec<String>), Vec<String>> {
    let suite = ast::Suite::parse(src, "<input>").map_err(|e| {
        let (line, col) = line_col(src, u32::from(e.offset) as usize);
        vec![format!("{line}:{col}: Python syntax error: {}", e.error)]
    })?;
    let mut t = Tr {
        src,
        out: String::new(),
        warnings: Vec::new(),
        depth: 0,
        too_deep: false,
        in_fstring: false,
    };
    t.module(&suite);
    if t.too_deep {
        return Err(vec![format!(
            "the Python code is nested more than {MAX_DEPTH} levels deep"
        )]);
    }
    let parsed = lang::parser::parse(&t.out);
    if let Some(d) = parsed.diagnostics.iter().find(|d| d.is_error()) {
        let mut reasons = t.warnings;
        reasons.push(format!(
            "the translation is not valid svc ({}: {}); simplify the Python code",
            d.code.as_str(),
            d.message
        ));
        return Err(reasons);
    }
    let code = lang::tools::format_source(&t.out).unwrap_or(t.out);
    Ok((code, t.warnings))
}

fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = src.get(..offset.min(src.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// svc keywords that Python code may use as names: they are escaped with a backtick.
fn is_svc_keyword(name: &str) -> bool {
    lang::lexer::keyword(name).is_some()
}

fn name(n: &str) -> String {
    match n {
        "True" | "False" | "None" | "self" | "super" => n.to_string(),
        n if is_svc_keyword(n) => format!("`{n}"),
        n => n.to_string(),
    }
}

/// An svc string literal (double-quoted, escaped).
fn svc_str(s: &str, quote: char) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

struct Tr<'a> {
    src: &'a str,
    out: String,
    warnings: Vec<String>,
    depth: usize,
    too_deep: bool,
    in_fstring: bool,
}

impl Tr<'_> {
    fn warn(&mut self, at: TextRange, msg: impl Into<String>) {
        if self.warnings.len() >= 200 {
            return;
        }
        let (l, c) = line_col(self.src, u32::from(at.start()) as usize);
        self.warnings.push(format!("{l}:{c}: {}", msg.into()));
    }

    fn line(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn module(&mut self, suite: &[Stmt]) {
        let mut body = suite;
        if let Some(doc) = docstring(body) {
            let d = svc_str(doc, '"');
            self.line(&d);
            body = &body[1..];
        }
        let mut pending: Vec<&Stmt> = Vec::new();
        for s in body {
            match s {
                Stmt::FunctionDef(_)
                | Stmt::AsyncFunctionDef(_)
                | Stmt::ClassDef(_)
                | Stmt::Import(_)
                | Stmt::ImportFrom(_) => {
                    self.flush_entry(&mut pending);
                    self.stmt(s);
                }
                Stmt::Assign(a)
                    if a.targets.len() == 1 && matches!(a.targets[0], Expr::Name(_)) =>
                {
                    self.flush_entry(&mut pending);
                    let t = self.expr(&a.targets[0]);
                    let v = self.expr(&a.value);
                    self.line(&format!("glob {t} = {v};"));
                }
                Stmt::AnnAssign(a) if matches!(*a.target, Expr::Name(_)) && a.value.is_some() => {
                    self.flush_entry(&mut pending);
                    let t = self.expr(&a.target);
                    let ty = self.expr(&a.annotation);
                    let v = a.value.as_ref().map(|v| self.expr(v)).unwrap_or_default();
                    self.line(&format!("glob {t}: {ty} = {v};"));
                }
                Stmt::If(i) if is_main_guard(&i.test) && i.orelse.is_empty() => {
                    self.flush_entry(&mut pending);
                    self.line("with entry:__main__ {");
                    self.stmts(&i.body);
                    self.line("}");
                }
                Stmt::Expr(e) if matches!(&*e.value, Expr::Constant(c) if matches!(c.value, Constant::Str(_))) =>
                {
                    // A bare string at module level: kept as a comment-free docstring-like line.
                    self.flush_entry(&mut pending);
                }
                other => pending.push(other),
            }
        }
        self.flush_entry(&mut pending);
    }

    fn flush_entry(&mut self, pending: &mut Vec<&Stmt>) {
        if pending.is_empty() {
            return;
        }
        self.line("with entry {");
        for s in pending.drain(..) {
            self.stmt(s);
        }
        self.line("}");
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn block(&mut self, body: &[Stmt]) {
        self.out.push_str("{\n");
        self.stmts(body);
        self.out.push('}');
    }

    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.too_deep = true;
        }
        !self.too_deep
    }

    fn stmt(&mut self, s: &Stmt) {
        if self.enter() {
            self.stmt_inner(s);
        }
        self.depth -= 1;
    }

    fn params(&mut self, args: &ast::Arguments, skip_self: bool) -> Vec<String> {
        let mut out = Vec::new();
        let one = |t: &mut Self, a: &ast::ArgWithDefault| {
            let mut p = name(a.def.arg.as_str());
            if let Some(ann) = &a.def.annotation {
                p.push_str(": ");
                p.push_str(&t.expr(ann));
            }
            if let Some(d) = &a.default {
                p.push_str(" = ");
                p.push_str(&t.expr(d));
            }
            p
        };
        let mut all = args.posonlyargs.iter().chain(args.args.iter()).peekable();
        if skip_self
            && let Some(first) = all.peek()
            && matches!(first.def.arg.as_str(), "self" | "cls")
        {
            all.next();
        }
        for a in all {
            out.push(one(self, a));
        }
        if let Some(first) = args.posonlyargs.first() {
            self.warn(first.def.range, "positional-only markers are dropped");
        }
        if let Some(v) = &args.vararg {
            let mut p = format!("*{}", name(v.arg.as_str()));
            if let Some(ann) = &v.annotation {
                p.push_str(&format!(": {}", self.expr(ann)));
            }
            out.push(p);
        } else if !args.kwonlyargs.is_empty() {
            out.push("*".into());
        }
        for a in &args.kwonlyargs {
            out.push(one(self, a));
        }
        if let Some(k) = &args.kwarg {
            let mut p = format!("**{}", name(k.arg.as_str()));
            if let Some(ann) = &k.annotation {
                p.push_str(&format!(": {}", self.expr(ann)));
            }
            out.push(p);
        }
        out
    }

    fn decorators(&mut self, decs: &[Expr]) -> (bool, Vec<String>) {
        let mut is_static = false;
        let mut out = Vec::new();
        for d in decs {
            match d {
                Expr::Name(n) if n.id.as_str() == "staticmethod" => is_static = true,
                Expr::Name(n) if matches!(n.id.as_str(), "classmethod" | "property") => {
                    self.warn(
                        d.range(),
                        format!("`@{}` has no svc form and is dropped", n.id),
                    );
                }
                _ => {
                    let e = self.expr(d);
                    out.push(format!("@{e}"));
                }
            }
        }
        (is_static, out)
    }

    fn function(
        &mut self,
        fname: &str,
        args: &ast::Arguments,
        body: &[Stmt],
        decs: &[Expr],
        returns: Option<&Expr>,
        is_async: bool,
        in_class: bool,
    ) {
        let (is_static, decorators) = self.decorators(decs);
        let mut body = body;
        if let Some(doc) = docstring(body) {
            let d = svc_str(doc, '"');
            self.line(&d);
            body = &body[1..];
        }
        for d in decorators {
            self.line(&d);
        }
        let n = match (fname, in_class) {
            ("__init__", true) => "init".to_string(),
            ("__post_init__", true) => "postinit".to_string(),
            (other, _) => name(other),
        };
        let params = self.params(args, in_class && !is_static);
        let mut head = String::new();
        if is_static {
            head.push_str("static ");
        }
        if is_async {
            head.push_str("async ");
        }
        let _ = write!(head, "def {n}({})", params.join(", "));
        if let Some(r) = returns {
            let _ = write!(head, " -> {}", self.expr(r));
        }
        head.push(' ');
        self.out.push_str(&head);
        self.block(body);
        self.out.push('\n');
    }

    fn class(&mut self, c: &ast::StmtClassDef) {
        if !c.keywords.is_empty() {
            self.warn(c.range(), "class keywords (metaclass=...) are dropped");
        }
        let (_, decorators) = self.decorators(&c.decorator_list);
        let mut body: &[Stmt] = &c.body;
        if let Some(doc) = docstring(body) {
            let d = svc_str(doc, '"');
            self.line(&d);
            body = &body[1..];
        }
        for d in decorators {
            self.line(&d);
        }
        let bases: Vec<String> = c
            .bases
            .iter()
            .filter(|b| !matches!(b, Expr::Name(n) if n.id.as_str() == "object"))
            .map(|b| self.expr(b))
            .collect();
        let head = if bases.is_empty() {
            format!("obj {} {{", name(c.name.as_str()))
        } else {
            format!("obj {}({}) {{", name(c.name.as_str()), bases.join(", "))
        };
        self.line(&head);
        // Fields: class-level annotations and plain assignments.
        let mut fields: Vec<String> = Vec::new();
        let mut known: Vec<String> = Vec::new();
        for s in body {
            match s {
                Stmt::AnnAssign(a) => {
                    if let Expr::Name(n) = &*a.target {
                        let ty = self.expr(&a.annotation);
                        let v = a
                            .value
                            .as_ref()
                            .map(|v| format!(" = {}", self.expr(v)))
                            .unwrap_or_default();
                        known.push(n.id.to_string());
                        fields.push(format!("has {}: {ty}{v};", name(n.id.as_str())));
                    }
                }
                Stmt::Assign(a) if a.targets.len() == 1 => {
                    if let Expr::Name(n) = &a.targets[0] {
                        let ty = infer_type(&a.value);
                        let v = self.expr(&a.value);
                        known.push(n.id.to_string());
                        fields.push(format!("static has {}: {ty} = {v};", name(n.id.as_str())));
                    }
                }
                _ => {}
            }
        }
        // `__init__`: its `self.x = ...` stores become fields; a pure field-storing init is
        // replaced by the archetype's own constructor.
        let init = body.iter().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(f),
            _ => None,
        });
        let mut keep_init = false;
        if let Some(f) = init {
            let params: Vec<&ast::ArgWithDefault> = f.args.args.iter().skip(1).collect();
            let mut pure =
                f.args.vararg.is_none() && f.args.kwarg.is_none() && f.args.kwonlyargs.is_empty();
            let mut stored: Vec<String> = Vec::new();
            for s in &f.body {
                let Some((field, value, ann)) = self_store(s) else {
                    if docstring(std::slice::from_ref(s)).is_none() && !matches!(s, Stmt::Pass(_)) {
                        pure = false;
                    }
                    continue;
                };
                let param = params.iter().find(
                    |p| matches!(value, Expr::Name(n) if n.id.as_str() == p.def.arg.as_str()),
                );
                if param.is_none() {
                    pure = false;
                }
                stored.push(field.to_string());
                if known.iter().any(|k| k == field) {
                    continue;
                }
                known.push(field.to_string());
                let ty = match (ann, param.and_then(|p| p.def.annotation.as_deref())) {
                    (Some(a), _) | (None, Some(a)) => self.expr(a),
                    (None, None) => infer_type(value).to_string(),
                };
                let default = param
                    .and_then(|p| p.default.as_deref())
                    .map(|d| format!(" = {}", self.expr(d)));
                let default = match default {
                    Some(d) => d,
                    None if param.is_some() => String::new(),
                    None => format!(" = {}", self.expr(value)),
                };
                fields.push(format!("has {}: {ty}{default};", name(field)));
            }
            // The generated constructor takes the fields in order: only equivalent when the
            // parameters are exactly the stored fields in the same order.
            let order_same = params.len() == stored.len()
                && params
                    .iter()
                    .zip(&stored)
                    .all(|(p, s)| p.def.arg.as_str() == s);
            keep_init = !(pure && order_same);
            if keep_init {
                self.warn(
                    f.range(),
                    format!(
                        "`{}.__init__` is kept as `def init`; its fields need defaults in svc",
                        c.name
                    ),
                );
                for fld in fields.iter_mut() {
                    if !fld.contains(" = ") && fld.starts_with("has ") {
                        *fld = with_zero_default(fld);
                    }
                }
            }
        }
        for f in fields {
            self.line(&f);
        }
        for s in body {
            match s {
                Stmt::FunctionDef(f) if f.name.as_str() == "__init__" && !keep_init => {}
                Stmt::FunctionDef(f) => self.function(
                    f.name.as_str(),
                    &f.args,
                    &f.body,
                    &f.decorator_list,
                    f.returns.as_deref(),
                    false,
                    true,
                ),
                Stmt::AsyncFunctionDef(f) => self.function(
                    f.name.as_str(),
                    &f.args,
                    &f.body,
                    &f.decorator_list,
                    f.returns.as_deref(),
                    true,
                    true,
                ),
                Stmt::AnnAssign(_) | Stmt::Assign(_) | Stmt::Pass(_) => {}
                Stmt::ClassDef(inner) => self.class(inner),
                Stmt::Expr(e) if matches!(&*e.value, Expr::Constant(_)) => {}
                other => self.warn(
                    other.range(),
                    "a statement in a class body is not translated",
                ),
            }
        }
        self.line("}");
    }

    fn stmt_inner(&mut self, s: &Stmt) {
        match s {
            Stmt::FunctionDef(f) => self.function(
                f.name.as_str(),
                &f.args,
                &f.body,
                &f.decorator_list,
                f.returns.as_deref(),
                false,
                false,
            ),
            Stmt::AsyncFunctionDef(f) => self.function(
                f.name.as_str(),
                &f.args,
                &f.body,
                &f.decorator_list,
                f.returns.as_deref(),
                true,
                false,
            ),
            Stmt::ClassDef(c) => self.class(c),
            Stmt::Return(r) => {
                let text = match &r.value {
                    Some(v) => format!("return {};", self.expr(v)),
                    None => "return;".into(),
                };
                self.line(&text);
            }
            Stmt::Delete(d) => {
                let t: Vec<String> = d.targets.iter().map(|t| self.expr(t)).collect();
                self.line(&format!("del {};", t.join(", ")));
            }
            Stmt::Assign(a) => {
                let t: Vec<String> = a.targets.iter().map(|t| self.target(t)).collect();
                let v = self.expr(&a.value);
                self.line(&format!("{} = {v};", t.join(" = ")));
            }
            Stmt::AugAssign(a) => {
                let t = self.target(&a.target);
                let v = self.expr(&a.value);
                self.line(&format!("{t} {}= {v};", operator(a.op)));
            }
            Stmt::AnnAssign(a) => {
                let t = self.target(&a.target);
                let ty = self.expr(&a.annotation);
                let text = match &a.value {
                    Some(v) => format!("{t}: {ty} = {};", self.expr(v)),
                    None => format!("{t}: {ty};"),
                };
                self.line(&text);
            }
            Stmt::For(f) => {
                let head = format!("for {} in {} ", self.target(&f.target), self.expr(&f.iter));
                self.out.push_str(&head);
                self.block(&f.body);
                self.orelse(&f.orelse);
            }
            Stmt::AsyncFor(f) => {
                let head = format!(
                    "async for {} in {} ",
                    self.target(&f.target),
                    self.expr(&f.iter)
                );
                self.out.push_str(&head);
                self.block(&f.body);
                self.orelse(&f.orelse);
            }
            Stmt::While(w) => {
                let head = format!("while {} ", self.expr(&w.test));
                self.out.push_str(&head);
                self.block(&w.body);
                self.orelse(&w.orelse);
            }
            Stmt::If(i) => {
                let head = format!("if {} ", self.expr(&i.test));
                self.out.push_str(&head);
                self.block(&i.body);
                let mut orelse: &[Stmt] = &i.orelse;
                // `elif` chains arrive as a lone `if` in the else branch.
                while let [Stmt::If(inner)] = orelse {
                    let head = format!(" elif {} ", self.expr(&inner.test));
                    self.out.push_str(&head);
                    self.block(&inner.body);
                    orelse = &inner.orelse;
                }
                self.orelse(orelse);
            }
            Stmt::With(w) => {
                self.warn(
                    w.range(),
                    "`with` (context managers) has no svc form: the body runs without it",
                );
                self.stmts(&w.body);
            }
            Stmt::AsyncWith(w) => {
                self.warn(
                    w.range(),
                    "`async with` has no svc form: the body runs without it",
                );
                self.stmts(&w.body);
            }
            Stmt::Match(m) => {
                self.warn(m.range(), "`match` is not translated");
            }
            Stmt::Raise(r) => {
                let text = match (&r.exc, &r.cause) {
                    (Some(e), Some(c)) => format!("raise {} from {};", self.expr(e), self.expr(c)),
                    (Some(e), None) => format!("raise {};", self.expr(e)),
                    _ => "raise;".into(),
                };
                self.line(&text);
            }
            Stmt::Try(t) => self.try_stmt(&t.body, &t.handlers, &t.orelse, &t.finalbody),
            Stmt::TryStar(t) => {
                self.warn(t.range(), "`except*` becomes `except`");
                self.try_stmt(&t.body, &t.handlers, &t.orelse, &t.finalbody);
            }
            Stmt::Assert(a) => {
                let text = match &a.msg {
                    Some(m) => format!("assert {}, {};", self.expr(&a.test), self.expr(m)),
                    None => format!("assert {};", self.expr(&a.test)),
                };
                self.line(&text);
            }
            Stmt::Import(i) => {
                for a in &i.names {
                    self.warn(
                        a.range(),
                        format!(
                            "`import {}`: svc resolves `.svc` modules beside the file",
                            a.name
                        ),
                    );
                    let text = match &a.asname {
                        Some(n) => format!("import {} as {};", a.name, name(n.as_str())),
                        None => format!("import {};", a.name),
                    };
                    self.line(&text);
                }
            }
            Stmt::ImportFrom(i) => {
                let dots = ".".repeat(i.level.as_ref().map_or(0, |l| l.to_u32().min(16)) as usize);
                let module = i.module.as_ref().map_or(String::new(), |m| m.to_string());
                let names: Vec<String> = i
                    .names
                    .iter()
                    .map(|a| match &a.asname {
                        Some(n) => format!("{} as {}", name(a.name.as_str()), name(n.as_str())),
                        None => name(a.name.as_str()),
                    })
                    .collect();
                if names.iter().any(|n| n == "*") {
                    self.line(&format!("include {dots}{module};"));
                } else {
                    self.line(&format!(
                        "import from {dots}{module} {{ {} }};",
                        names.join(", ")
                    ));
                }
            }
            Stmt::Global(g) => self.warn(
                g.range(),
                "`global` is dropped: assignment in svc rebinds the nearest enclosing name",
            ),
            Stmt::Nonlocal(g) => self.warn(
                g.range(),
                "`nonlocal` is dropped: assignment in svc rebinds the nearest enclosing name",
            ),
            Stmt::Expr(e) => {
                if matches!(&*e.value, Expr::Yield(_) | Expr::YieldFrom(_)) {
                    self.warn(e.range(), "generators (`yield`) are not supported in svc");
                    return;
                }
                let v = self.expr(&e.value);
                self.line(&format!("{v};"));
            }
            Stmt::Pass(_) => {}
            Stmt::Break(_) => self.line("break;"),
            Stmt::Continue(_) => self.line("continue;"),
            Stmt::TypeAlias(t) => self.warn(t.range(), "type aliases are not translated"),
        }
    }

    fn orelse(&mut self, orelse: &[Stmt]) {
        if orelse.is_empty() {
            self.out.push('\n');
        } else {
            self.out.push_str(" else ");
            self.block(orelse);
            self.out.push('\n');
        }
    }

    fn try_stmt(
        &mut self,
        body: &[Stmt],
        handlers: &[ast::ExceptHandler],
        orelse: &[Stmt],
        finalbody: &[Stmt],
    ) {
        self.out.push_str("try ");
        self.block(body);
        for h in handlers {
            let ast::ExceptHandler::ExceptHandler(h) = h;
            let head = match (&h.type_, &h.name) {
                (Some(t), Some(n)) => format!(" except {} as {} ", self.expr(t), name(n.as_str())),
                (Some(t), None) => format!(" except {} ", self.expr(t)),
                (None, _) => " except ".to_string(),
            };
            self.out.push_str(&head);
            self.block(&h.body);
        }
        if !orelse.is_empty() {
            self.out.push_str(" else ");
            self.block(orelse);
        }
        if !finalbody.is_empty() {
            self.out.push_str(" finally ");
            self.block(finalbody);
        }
        self.out.push('\n');
    }

    /// An assignment target: a tuple target is written without parentheses issues.
    fn target(&mut self, t: &Expr) -> String {
        self.expr(t)
    }

    fn expr(&mut self, e: &Expr) -> String {
        if !self.enter() {
            self.depth -= 1;
            return "None".into();
        }
        let s = self.expr_inner(e);
        self.depth -= 1;
        s
    }

    fn paren(&mut self, e: &Expr) -> String {
        let s = self.expr(e);
        match e {
            Expr::Name(_)
            | Expr::Constant(_)
            | Expr::Attribute(_)
            | Expr::Subscript(_)
            | Expr::Call(_)
            | Expr::List(_)
            | Expr::Tuple(_)
            | Expr::Dict(_)
            | Expr::Set(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::JoinedStr(_) => s,
            _ => format!("({s})"),
        }
    }

    fn comps(&mut self, gens: &[ast::Comprehension]) -> String {
        let mut s = String::new();
        for g in gens {
            let kw = if g.is_async { " async for" } else { " for" };
            let _ = write!(
                s,
                "{kw} {} in {}",
                self.expr(&g.target),
                self.paren(&g.iter)
            );
            for c in &g.ifs {
                let _ = write!(s, " if {}", self.paren(c));
            }
        }
        s
    }

    fn fstring_parts(&mut self, values: &[Expr], out: &mut String) {
        for v in values {
            match v {
                Expr::Constant(c) => {
                    if let Constant::Str(s) = &c.value {
                        for ch in s.chars() {
                            match ch {
                                '{' => out.push_str("{{"),
                                '}' => out.push_str("}}"),
                                '\\' => out.push_str("\\\\"),
                                '"' => out.push_str("\\\""),
                                '\n' => out.push_str("\\n"),
                                ch => out.push(ch),
                            }
                        }
                    }
                }
                Expr::FormattedValue(f) => {
                    let was = std::mem::replace(&mut self.in_fstring, true);
                    let inner = self.expr(&f.value);
                    self.in_fstring = was;
                    out.push('{');
                    out.push_str(&inner);
                    match f.conversion {
                        ConversionFlag::Repr => out.push_str("!r"),
                        ConversionFlag::Str => out.push_str("!s"),
                        ConversionFlag::Ascii => out.push_str("!a"),
                        ConversionFlag::None => {}
                    }
                    if let Some(spec) = &f.format_spec {
                        out.push(':');
                        if let Expr::JoinedStr(j) = &**spec {
                            self.fstring_parts(&j.values, out);
                        }
                    }
                    out.push('}');
                }
                other => {
                    let inner = self.expr(other);
                    out.push('{');
                    out.push_str(&inner);
                    out.push('}');
                }
            }
        }
    }

    fn expr_inner(&mut self, e: &Expr) -> String {
        match e {
            Expr::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => " and ",
                    ast::BoolOp::Or => " or ",
                };
                let parts: Vec<String> = b.values.iter().map(|v| self.paren(v)).collect();
                parts.join(op)
            }
            Expr::NamedExpr(n) => format!("({} := {})", self.expr(&n.target), self.expr(&n.value)),
            Expr::BinOp(b) => format!(
                "{} {} {}",
                self.paren(&b.left),
                operator(b.op),
                self.paren(&b.right)
            ),
            Expr::UnaryOp(u) => {
                let o = self.paren(&u.operand);
                match u.op {
                    ast::UnaryOp::Not => format!("not {o}"),
                    ast::UnaryOp::USub => format!("-{o}"),
                    ast::UnaryOp::UAdd => format!("+{o}"),
                    ast::UnaryOp::Invert => format!("~{o}"),
                }
            }
            Expr::Lambda(l) => {
                let params = self.params(&l.args, false);
                let body = self.expr(&l.body);
                format!("lambda ({}) {{ return {body}; }}", params.join(", "))
            }
            Expr::IfExp(i) => format!(
                "{} if {} else {}",
                self.paren(&i.body),
                self.paren(&i.test),
                self.paren(&i.orelse)
            ),
            Expr::Dict(d) => {
                let items: Vec<String> = d
                    .keys
                    .iter()
                    .zip(&d.values)
                    .map(|(k, v)| match k {
                        Some(k) => format!("{}: {}", self.expr(k), self.expr(v)),
                        None => format!("**{}", self.paren(v)),
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            Expr::Set(s) => {
                let items: Vec<String> = s.elts.iter().map(|x| self.expr(x)).collect();
                format!("{{{}}}", items.join(", "))
            }
            Expr::ListComp(c) => format!("[{}{}]", self.expr(&c.elt), self.comps(&c.generators)),
            Expr::SetComp(c) => format!("{{{}{}}}", self.expr(&c.elt), self.comps(&c.generators)),
            Expr::GeneratorExp(c) => {
                format!("({}{})", self.expr(&c.elt), self.comps(&c.generators))
            }
            Expr::DictComp(c) => format!(
                "{{{}: {}{}}}",
                self.expr(&c.key),
                self.expr(&c.value),
                self.comps(&c.generators)
            ),
            Expr::Await(a) => format!("await {}", self.paren(&a.value)),
            Expr::Yield(_) | Expr::YieldFrom(_) => {
                self.warn(e.range(), "generators (`yield`) are not supported in svc");
                "None".into()
            }
            Expr::Compare(c) => {
                let mut s = self.paren(&c.left);
                for (op, r) in c.ops.iter().zip(&c.comparators) {
                    let o = match op {
                        ast::CmpOp::Eq => "==",
                        ast::CmpOp::NotEq => "!=",
                        ast::CmpOp::Lt => "<",
                        ast::CmpOp::LtE => "<=",
                        ast::CmpOp::Gt => ">",
                        ast::CmpOp::GtE => ">=",
                        ast::CmpOp::Is => "is",
                        ast::CmpOp::IsNot => "is not",
                        ast::CmpOp::In => "in",
                        ast::CmpOp::NotIn => "not in",
                    };
                    let _ = write!(s, " {o} {}", self.paren(r));
                }
                s
            }
            Expr::Call(c) => {
                let f = self.paren(&c.func);
                let mut args: Vec<String> = c.args.iter().map(|a| self.expr(a)).collect();
                for k in &c.keywords {
                    let v = self.expr(&k.value);
                    match &k.arg {
                        Some(n) => args.push(format!("{}={v}", n.as_str())),
                        None => args.push(format!("**{v}")),
                    }
                }
                format!("{f}({})", args.join(", "))
            }
            Expr::FormattedValue(_) | Expr::JoinedStr(_) => {
                let values = match e {
                    Expr::JoinedStr(j) => j.values.clone(),
                    other => vec![other.clone()],
                };
                if self.in_fstring {
                    self.warn(e.range(), "a nested f-string becomes `str(...)`");
                }
                let mut body = String::new();
                self.fstring_parts(&values, &mut body);
                format!("f\"{body}\"")
            }
            Expr::Constant(c) => self.constant(&c.value, e),
            Expr::Attribute(a) => format!("{}.{}", self.paren(&a.value), a.attr.as_str()),
            Expr::Subscript(s) => {
                let v = self.paren(&s.value);
                let i = match &*s.slice {
                    Expr::Tuple(t) if !t.elts.is_empty() => {
                        let items: Vec<String> = t.elts.iter().map(|x| self.expr(x)).collect();
                        items.join(", ")
                    }
                    other => self.expr(other),
                };
                format!("{v}[{i}]")
            }
            Expr::Starred(s) => format!("*{}", self.paren(&s.value)),
            Expr::Name(n) => name(n.id.as_str()),
            Expr::List(l) => {
                let items: Vec<String> = l.elts.iter().map(|x| self.expr(x)).collect();
                format!("[{}]", items.join(", "))
            }
            Expr::Tuple(t) => {
                let items: Vec<String> = t.elts.iter().map(|x| self.expr(x)).collect();
                if items.len() == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            Expr::Slice(s) => {
                let l = s.lower.as_ref().map(|x| self.expr(x)).unwrap_or_default();
                let u = s.upper.as_ref().map(|x| self.expr(x)).unwrap_or_default();
                match &s.step {
                    Some(st) => format!("{l}:{u}:{}", self.expr(st)),
                    None => format!("{l}:{u}"),
                }
            }
        }
    }

    fn constant(&mut self, c: &Constant, at: &Expr) -> String {
        match c {
            Constant::None => "None".into(),
            Constant::Bool(b) => if *b { "True" } else { "False" }.into(),
            Constant::Str(s) => svc_str(s, if self.in_fstring { '\'' } else { '"' }),
            Constant::Bytes(b) => lang::pyfmt::bytes_repr(b),
            Constant::Int(i) => i.to_string(),
            Constant::Float(f) => {
                if f.is_finite() {
                    lang::pyfmt::float_repr(*f)
                } else {
                    self.warn(
                        at.range(),
                        "a non-finite float constant becomes `float(\"inf\")`",
                    );
                    "float(\"inf\")".into()
                }
            }
            Constant::Complex { .. } => {
                self.warn(at.range(), "complex numbers are not supported in svc");
                "None".into()
            }
            Constant::Ellipsis => "...".into(),
            Constant::Tuple(items) => {
                let v: Vec<String> = items.iter().map(|x| self.constant(x, at)).collect();
                format!("({}{})", v.join(", "), if v.len() == 1 { "," } else { "" })
            }
        }
    }
}

fn operator(op: ast::Operator) -> &'static str {
    match op {
        ast::Operator::Add => "+",
        ast::Operator::Sub => "-",
        ast::Operator::Mult => "*",
        ast::Operator::MatMult => "@",
        ast::Operator::Div => "/",
        ast::Operator::Mod => "%",
        ast::Operator::Pow => "**",
        ast::Operator::LShift => "<<",
        ast::Operator::RShift => ">>",
        ast::Operator::BitOr => "|",
        ast::Operator::BitXor => "^",
        ast::Operator::BitAnd => "&",
        ast::Operator::FloorDiv => "//",
    }
}

/// The docstring of a body (its first statement, a string constant).
fn docstring(body: &[Stmt]) -> Option<&str> {
    match body.first()? {
        Stmt::Expr(e) => match &*e.value {
            Expr::Constant(c) => match &c.value {
                Constant::Str(s) => Some(s),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// `if __name__ == "__main__":`
fn is_main_guard(test: &Expr) -> bool {
    let Expr::Compare(c) = test else { return false };
    matches!(&*c.left, Expr::Name(n) if n.id.as_str() == "__name__")
        && matches!(c.ops.as_slice(), [ast::CmpOp::Eq])
        && matches!(c.comparators.as_slice(), [Expr::Constant(k)] if matches!(&k.value, Constant::Str(s) if s == "__main__"))
}

/// `self.x = value` or `self.x: T = value` in an `__init__`.
fn self_store(s: &Stmt) -> Option<(&str, &Expr, Option<&Expr>)> {
    let (target, value, ann) = match s {
        Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], &*a.value, None),
        Stmt::AnnAssign(a) => (&*a.target, a.value.as_deref()?, Some(&*a.annotation)),
        _ => return None,
    };
    let Expr::Attribute(attr) = target else {
        return None;
    };
    if !matches!(&*attr.value, Expr::Name(n) if n.id.as_str() == "self") {
        return None;
    }
    Some((attr.attr.as_str(), value, ann))
}

/// `has x: T;` with a default the type accepts (`T | None = None` for other types).
fn with_zero_default(field: &str) -> String {
    let decl = field.trim_end_matches(';');
    let ty = decl.rsplit(": ").next().unwrap_or("");
    let zero = match ty {
        "int" => "0",
        "float" => "0.0",
        "str" => "\"\"",
        "bool" => "False",
        "list" => "[]",
        "dict" => "{}",
        "set" => "set()",
        "tuple" => "()",
        _ => return format!("{decl} | None = None;"),
    };
    format!("{decl} = {zero};")
}

/// A field type from a value, when the code gives none.
fn infer_type(v: &Expr) -> &'static str {
    match v {
        Expr::Constant(c) => match c.value {
            Constant::Bool(_) => "bool",
            Constant::Int(_) => "int",
            Constant::Float(_) => "float",
            Constant::Str(_) => "str",
            _ => "object",
        },
        Expr::List(_) | Expr::ListComp(_) => "list",
        Expr::Dict(_) | Expr::DictComp(_) => "dict",
        Expr::Set(_) | Expr::SetComp(_) => "set",
        Expr::Tuple(_) => "tuple",
        Expr::JoinedStr(_) => "str",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::py_to_svc;

    /// The svc checker's errors for `code` (what `svc check` reports).
    fn check_errors(code: &str) -> Vec<String> {
        let parsed = lang::parser::parse(code);
        let mut host = lang::host::MemoryHost::new();
        let mut diags = parsed.diagnostics;
        diags.extend(lang::checker::check_module(
            &parsed.module,
            std::path::Path::new("main.svc"),
            &mut host,
        ));
        diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code.as_str(), d.message))
            .collect()
    }

    const PROGRAM: &str = r#""""Inventory helpers."""

class Item:
    """One stock item."""
    def __init__(self, name: str, qty: int = 0):
        self.name = name
        self.qty = qty

    def restock(self, n: int) -> int:
        self.qty += n
        return self.qty


class Shelf:
    capacity: int = 10

    def __init__(self, label: str):
        self.label = label
        self.items = []

    def add(self, item: Item) -> bool:
        if len(self.items) >= self.capacity:
            return False
        self.items.append(item)
        return True


def total(items: list) -> int:
    s = 0
    for it in items:
        if it.qty > 0:
            s += it.qty
        elif it.qty == 0:
            continue
        else:
            raise ValueError(f"negative qty for {it.name!r}")
    return s


def describe(x: int) -> str:
    kind = "many" if x > 3 else "few"
    return f"{x} items ({kind})"


if __name__ == "__main__":
    shelf = Shelf("A")
    for n in ["bolt", "nut"]:
        shelf.add(Item(n, 2))
    print(total(shelf.items), describe(total(shelf.items)))
    print([i.name for i in shelf.items if i.qty > 1], {k: v for k, v in {"a": 1}.items()})
"#;

    #[test]
    fn class_and_functions_program_passes_svc_check() {
        let (code, warnings) = py_to_svc(PROGRAM).expect("translates");
        assert!(code.contains("obj Item {"), "{code}");
        assert!(code.contains("def total(items: list) -> int {"), "{code}");
        assert!(code.contains("with entry:__main__ {"), "{code}");
        let errors = check_errors(&code);
        assert!(
            errors.is_empty(),
            "{errors:?}\n{code}\nwarnings: {warnings:?}"
        );
    }

    #[test]
    fn untranslatable_python_gives_warnings_and_syntax_errors_fail() {
        let (code, warnings) =
            py_to_svc("def g():\n    global x\n    with open('f') as fh:\n        x = 1\n")
                .expect("translates");
        assert!(
            warnings.iter().any(|w| w.contains("global")),
            "{warnings:?}"
        );
        assert!(warnings.iter().any(|w| w.contains("with")), "{warnings:?}");
        assert!(code.contains("def g()"), "{code}");
        let err = py_to_svc("def (:\n").expect_err("syntax error");
        assert!(err[0].contains("syntax error"), "{err:?}");
    }

    #[test]
    fn deep_python_nesting_is_refused_not_a_crash() {
        let deep = format!("x = {}1{}\n", "[".repeat(5000), "]".repeat(5000));
        let r = py_to_svc(&deep);
        assert!(r.is_err(), "{r:?}");
        let chain = format!("x = 1{}\n", " + 1".repeat(20000));
        assert!(py_to_svc(&chain).is_err());
    }
}
