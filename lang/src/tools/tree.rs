//! A generic view of the syntax tree (`TNode`: kind, label, span, children) built from
//! [`crate::ast`], used by `ast_tree`, `ast_json`, the formatter and the linter.
//!
//! The conversion is the only recursion over the tree in the tools; it carries a depth
//! count and stops at [`MAX_TREE_DEPTH`] with a [`ToolError`], because the parser bounds
//! nesting (`parser::MAX_DEPTH`) but not left-leaning operator chains (`1+1+...+1`).

use super::ToolError;
use crate::ast::*;
use crate::span::Span;

/// Deepest tree the tools convert; deeper input is refused with a clear error.
pub const MAX_TREE_DEPTH: usize = 400;

/// One node of the generic tree.
#[derive(Clone, Debug)]
pub struct TNode {
    /// The AST variant, e.g. `Archetype`, `If`, `Call`, `Name`.
    pub kind: &'static str,
    /// A short detail: a name, a literal, an operator, an archetype kind.
    pub label: Option<String>,
    /// The role of this node in its parent (`body`, `cond`, `target` ...), if any.
    pub role: Option<&'static str>,
    pub span: Span,
    pub children: Vec<TNode>,
}

impl TNode {
    fn new(kind: &'static str, span: Span) -> TNode {
        TNode {
            kind,
            label: None,
            role: None,
            span,
            children: Vec::new(),
        }
    }

    fn label(mut self, l: impl Into<String>) -> TNode {
        self.label = Some(l.into());
        self
    }

    /// Visit every node, parents before children, without native recursion.
    pub fn each(&self, mut f: impl FnMut(&TNode)) {
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            f(n);
            stack.extend(n.children.iter().rev());
        }
    }
}

/// Convert a module into the generic tree.
pub fn module_tree(m: &Module) -> Result<TNode, ToolError> {
    let mut b = Builder { depth: 0 };
    let mut root = TNode::new("Module", m.span);
    if let Some(d) = &m.doc {
        root.children
            .push(TNode::new("Docstring", m.span).label(short(d)));
    }
    for it in &m.items {
        root.children.push(b.item(it)?);
    }
    Ok(root)
}

fn short(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    format!("{t:?}")
}

struct Builder {
    depth: usize,
}

fn with_role(mut n: TNode, role: &'static str) -> TNode {
    n.role = Some(role);
    n
}

fn access(a: Option<Access>) -> &'static str {
    match a {
        Some(Access::Pub) => ":pub ",
        Some(Access::Priv) => ":priv ",
        Some(Access::Protect) => ":protect ",
        None => "",
    }
}

impl Builder {
    fn enter(&mut self, span: Span) -> Result<(), ToolError> {
        self.depth += 1;
        if self.depth > MAX_TREE_DEPTH {
            return Err(ToolError {
                message: format!(
                    "the syntax tree is nested more than {MAX_TREE_DEPTH} levels deep; split the expression"
                ),
                line: None,
                col: None,
            }
            .at_offset(span.start));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn name(&self, n: &Name, role: &'static str) -> TNode {
        with_role(TNode::new("Name", n.span).label(&*n.name), role)
    }

    fn block(&mut self, role: &'static str, body: &[Stmt], span: Span) -> Result<TNode, ToolError> {
        let mut n = with_role(TNode::new("Block", span), role);
        for s in body {
            n.children.push(self.stmt(s)?);
        }
        if let (Some(a), Some(b)) = (n.children.first(), n.children.last()) {
            n.span = a.span.to(b.span);
        }
        Ok(n)
    }

    fn exprs(&mut self, n: &mut TNode, es: &[Expr], role: &'static str) -> Result<(), ToolError> {
        for e in es {
            n.children.push(with_role(self.expr(e)?, role));
        }
        Ok(())
    }

    fn opt_expr(
        &mut self,
        n: &mut TNode,
        e: &Option<Expr>,
        role: &'static str,
    ) -> Result<(), ToolError> {
        if let Some(e) = e {
            n.children.push(with_role(self.expr(e)?, role));
        }
        Ok(())
    }

    fn item(&mut self, it: &Item) -> Result<TNode, ToolError> {
        match it {
            Item::Import(i) => {
                let kw = match (i.kind, i.remote) {
                    (_, true) => "sv import",
                    (ImportKind::Import, _) => "import",
                    (ImportKind::Include, _) => "include",
                };
                let mut n = TNode::new("Import", i.span).label(kw);
                if let Some(f) = &i.from {
                    n.children.push(modpath(f, "from"));
                }
                for it in &i.items {
                    n.children.push(self.name(&it.name, "item"));
                    if let Some(a) = &it.alias {
                        n.children.push(self.name(a, "alias"));
                    }
                }
                for (p, a) in &i.modules {
                    n.children.push(modpath(p, "module"));
                    if let Some(a) = a {
                        n.children.push(self.name(a, "alias"));
                    }
                }
                Ok(n)
            }
            Item::Archetype(a) => self.archetype(a),
            Item::Enum(e) => self.enum_decl(e),
            Item::Ability(a) => self.ability(a),
            Item::Glob(g) => {
                let mut n = TNode::new("Glob", g.span).label(access(g.access).trim());
                for v in &g.vars {
                    let mut vn = TNode::new("GlobVar", v.span).label(&*v.name.name);
                    self.opt_expr(&mut vn, &v.ty, "type")?;
                    self.opt_expr(&mut vn, &v.value, "value")?;
                    n.children.push(vn);
                }
                Ok(n)
            }
            Item::Impl(i) => self.impl_block(i),
            Item::Entry(e) => {
                let mut label = if e.is_exit { "exit" } else { "entry" }.to_string();
                if let Some(nm) = &e.name {
                    label = format!("{label}:{}", nm.name);
                }
                let mut n = TNode::new("EntryBlock", e.span).label(label);
                n.children.push(self.block("body", &e.body, e.span)?);
                Ok(n)
            }
            Item::Test(t) => {
                let mut n = TNode::new("TestBlock", t.span);
                if let Some(nm) = &t.name {
                    n.label = Some(nm.clone());
                }
                n.children.push(self.block("body", &t.body, t.span)?);
                Ok(n)
            }
        }
    }

    fn archetype(&mut self, a: &Archetype) -> Result<TNode, ToolError> {
        self.enter(a.span)?;
        let mut n = TNode::new("Archetype", a.span).label(format!(
            "{}{} {}",
            a.kind.keyword(),
            access(a.access).trim_end(),
            a.name.name
        ));
        self.exprs(&mut n, &a.decorators, "decorator")?;
        self.exprs(&mut n, &a.bases, "base")?;
        if let Some((s, d)) = &a.endpoints {
            n.children.push(with_role(self.expr(s)?, "source"));
            n.children.push(with_role(self.expr(d)?, "target"));
        }
        for m in &a.members {
            n.children.push(self.member(m)?);
        }
        self.leave();
        Ok(n)
    }

    fn member(&mut self, m: &Member) -> Result<TNode, ToolError> {
        match m {
            Member::Has(h) => {
                let mut label = String::from(if h.is_static { "static has" } else { "has" });
                label.push_str(access(h.access).trim_end());
                let mut n = TNode::new("HasDecl", h.span).label(label);
                for v in &h.vars {
                    let mut vn = TNode::new("HasVar", v.span).label(&*v.name.name);
                    vn.children.push(with_role(self.expr(&v.ty)?, "type"));
                    self.opt_expr(&mut vn, &v.default, "default")?;
                    n.children.push(vn);
                }
                Ok(n)
            }
            Member::Ability(a) => self.ability(a),
            Member::Archetype(a) => self.archetype(a),
            Member::Enum(e) => self.enum_decl(e),
            Member::Impl(i) => self.impl_block(i),
            Member::Entry(e) => self.item(&Item::Entry(e.clone())),
            Member::Stmt(s) => self.stmt(s),
        }
    }

    fn enum_decl(&mut self, e: &EnumDecl) -> Result<TNode, ToolError> {
        self.enter(e.span)?;
        let mut n =
            TNode::new("Enum", e.span).label(format!("{}{}", access(e.access), e.name.name));
        self.exprs(&mut n, &e.decorators, "decorator")?;
        self.exprs(&mut n, &e.bases, "base")?;
        for m in &e.members {
            let mut mn = TNode::new("EnumMember", m.span).label(&*m.name.name);
            self.opt_expr(&mut mn, &m.value, "value")?;
            n.children.push(mn);
        }
        for m in &e.extra {
            n.children.push(self.member(m)?);
        }
        self.leave();
        Ok(n)
    }

    fn params(&mut self, n: &mut TNode, params: &[Param]) -> Result<(), ToolError> {
        for p in params {
            let prefix = match p.kind {
                ParamKind::VarArgs => "*",
                ParamKind::KwArgs => "**",
                _ => "",
            };
            let mut pn = with_role(
                TNode::new("Param", p.span).label(format!("{prefix}{}", p.name.name)),
                "param",
            );
            self.opt_expr(&mut pn, &p.ty, "type")?;
            self.opt_expr(&mut pn, &p.default, "default")?;
            n.children.push(pn);
        }
        Ok(())
    }

    fn event(&mut self, n: &mut TNode, ev: &EventClause) -> Result<(), ToolError> {
        let mut en = with_role(
            TNode::new("EventClause", ev.span).label(if ev.is_exit { "exit" } else { "entry" }),
            "event",
        );
        self.opt_expr(&mut en, &ev.trigger, "trigger")?;
        n.children.push(en);
        Ok(())
    }

    fn ability(&mut self, a: &Ability) -> Result<TNode, ToolError> {
        self.enter(a.span)?;
        let mut label = String::new();
        for (on, w) in [
            (a.is_override, "override "),
            (a.is_static, "static "),
            (a.is_async, "async "),
        ] {
            if on {
                label.push_str(w);
            }
        }
        label.push_str(match a.kind {
            AbilityKind::Def => "def",
            AbilityKind::Can => "can",
        });
        label.push_str(access(a.access).trim_end());
        if let Some(nm) = &a.name {
            label.push(' ');
            label.push_str(&nm.name);
        }
        if a.is_abstract {
            label.push_str(" abst");
        }
        let mut n = TNode::new("Ability", a.span).label(label);
        self.exprs(&mut n, &a.decorators, "decorator")?;
        if let Some(sig) = &a.signature {
            self.params(&mut n, &sig.params)?;
            self.opt_expr(&mut n, &sig.ret, "returns")?;
        }
        if let Some(ev) = &a.event {
            self.event(&mut n, ev)?;
        }
        if let Some(body) = &a.body {
            n.children.push(self.block("body", body, a.span)?);
        }
        self.leave();
        Ok(n)
    }

    fn impl_block(&mut self, i: &ImplBlock) -> Result<TNode, ToolError> {
        self.enter(i.span)?;
        let target: Vec<&str> = i.target.iter().map(|n| &*n.name).collect();
        let mut n = TNode::new("Impl", i.span).label(target.join("."));
        self.exprs(&mut n, &i.decorators, "decorator")?;
        match &i.kind {
            ImplKind::Signature(Some(sig)) => {
                self.params(&mut n, &sig.params)?;
                self.opt_expr(&mut n, &sig.ret, "returns")?;
            }
            ImplKind::Signature(None) => {}
            ImplKind::Event(ev) => self.event(&mut n, ev)?,
            ImplKind::Bases(b) => self.exprs(&mut n, b, "base")?,
        }
        n.children.push(self.block("body", &i.body, i.span)?);
        self.leave();
        Ok(n)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<TNode, ToolError> {
        self.enter(s.span)?;
        let r = self.stmt_inner(s);
        self.leave();
        r
    }

    fn stmt_inner(&mut self, s: &Stmt) -> Result<TNode, ToolError> {
        let sp = s.span;
        let mut n;
        match &s.kind {
            StmtKind::Empty => n = TNode::new("Empty", sp),
            StmtKind::Expr(e) => {
                n = TNode::new("ExprStmt", sp);
                n.children.push(self.expr(e)?);
            }
            StmtKind::Assign { targets, ty, value } => {
                n = TNode::new("Assign", sp);
                self.exprs(&mut n, targets, "target")?;
                self.opt_expr(&mut n, ty, "type")?;
                n.children.push(with_role(self.expr(value)?, "value"));
            }
            StmtKind::Declare { target, ty } => {
                n = TNode::new("Declare", sp);
                n.children.push(with_role(self.expr(target)?, "target"));
                n.children.push(with_role(self.expr(ty)?, "type"));
            }
            StmtKind::AugAssign { target, op, value } => {
                n = TNode::new("AugAssign", sp).label(format!("{}=", binop(*op)));
                n.children.push(with_role(self.expr(target)?, "target"));
                n.children.push(with_role(self.expr(value)?, "value"));
            }
            StmtKind::If {
                cond,
                body,
                elifs,
                orelse,
            } => {
                n = TNode::new("If", sp);
                n.children.push(with_role(self.expr(cond)?, "cond"));
                n.children.push(self.block("body", body, sp)?);
                for (c, b) in elifs {
                    n.children.push(with_role(self.expr(c)?, "elif_cond"));
                    n.children.push(self.block("elif_body", b, sp)?);
                }
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
            }
            StmtKind::While { cond, body, orelse } => {
                n = TNode::new("While", sp);
                n.children.push(with_role(self.expr(cond)?, "cond"));
                n.children.push(self.block("body", body, sp)?);
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                n = TNode::new("For", sp);
                n.children.push(with_role(self.expr(target)?, "target"));
                n.children.push(with_role(self.expr(iter)?, "iter"));
                n.children.push(self.block("body", body, sp)?);
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
            }
            StmtKind::IterFor {
                init,
                cond,
                step,
                body,
                orelse,
            } => {
                n = TNode::new("IterFor", sp);
                n.children.push(with_role(self.stmt(init)?, "init"));
                n.children.push(with_role(self.expr(cond)?, "cond"));
                n.children.push(with_role(self.stmt(step)?, "step"));
                n.children.push(self.block("body", body, sp)?);
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
            }
            StmtKind::Forever { body } => {
                n = TNode::new("Forever", sp);
                n.children.push(self.block("body", body, sp)?);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finally,
            } => {
                n = TNode::new("Try", sp);
                n.children.push(self.block("body", body, sp)?);
                for h in handlers {
                    let mut hn = with_role(TNode::new("Except", h.span), "handler");
                    if let Some(nm) = &h.name {
                        hn.label = Some(nm.name.to_string());
                    }
                    self.opt_expr(&mut hn, &h.ty, "type")?;
                    hn.children.push(self.block("body", &h.body, h.span)?);
                    n.children.push(hn);
                }
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
                if let Some(e) = finally {
                    n.children.push(self.block("finally", e, sp)?);
                }
            }
            StmtKind::With { items, body, .. } => {
                n = TNode::new("With", sp);
                for item in items {
                    n.children
                        .push(with_role(self.expr(&item.manager)?, "manager"));
                    if let Some(t) = &item.target {
                        n.children.push(with_role(self.expr(t)?, "target"));
                    }
                }
                n.children.push(self.block("body", body, sp)?);
            }
            StmtKind::Match { subject, cases } => {
                n = TNode::new("Match", sp);
                n.children.push(with_role(self.expr(subject)?, "subject"));
                for c in cases {
                    let mut cn = with_role(TNode::new("Case", c.span), "case");
                    cn.children
                        .push(with_role(self.expr(&c.pattern)?, "pattern"));
                    self.opt_expr(&mut cn, &c.guard, "guard")?;
                    cn.children.push(self.block("body", &c.body, c.span)?);
                    n.children.push(cn);
                }
            }
            StmtKind::Switch { subject, cases } => {
                n = TNode::new("Switch", sp);
                n.children.push(with_role(self.expr(subject)?, "subject"));
                for c in cases {
                    let mut cn = with_role(TNode::new("SwitchCase", c.span), "case");
                    self.opt_expr(&mut cn, &c.value, "value")?;
                    cn.children.push(self.block("body", &c.body, c.span)?);
                    n.children.push(cn);
                }
            }
            StmtKind::Return(e) => {
                n = TNode::new("Return", sp);
                self.opt_expr(&mut n, e, "value")?;
            }
            StmtKind::Raise { exc, cause } => {
                n = TNode::new("Raise", sp);
                self.opt_expr(&mut n, exc, "exc")?;
                self.opt_expr(&mut n, cause, "cause")?;
            }
            StmtKind::Assert { cond, msg } => {
                n = TNode::new("Assert", sp);
                n.children.push(with_role(self.expr(cond)?, "cond"));
                self.opt_expr(&mut n, msg, "msg")?;
            }
            StmtKind::Delete(e) => {
                n = TNode::new("Delete", sp);
                n.children.push(with_role(self.expr(e)?, "target"));
            }
            StmtKind::Break => n = TNode::new("Break", sp),
            StmtKind::Continue => n = TNode::new("Continue", sp),
            StmtKind::Skip => n = TNode::new("Skip", sp),
            StmtKind::Disengage => n = TNode::new("Disengage", sp),
            StmtKind::Visit {
                index,
                target,
                orelse,
            } => {
                n = TNode::new("Visit", sp);
                self.opt_expr(&mut n, index, "index")?;
                n.children.push(with_role(self.expr(target)?, "target"));
                if let Some(e) = orelse {
                    n.children.push(self.block("else", e, sp)?);
                }
            }
            StmtKind::Report(e) => {
                n = TNode::new("Report", sp);
                n.children.push(with_role(self.expr(e)?, "value"));
            }
            StmtKind::TypedContext { ty, body } => {
                n = TNode::new("TypedContext", sp);
                n.children.push(with_role(self.expr(ty)?, "type"));
                n.children.push(self.block("body", body, sp)?);
            }
            StmtKind::Item(it) => n = self.item(it)?,
            StmtKind::Error => n = TNode::new("Error", sp),
        }
        Ok(n)
    }

    fn expr(&mut self, e: &Expr) -> Result<TNode, ToolError> {
        self.enter(e.span)?;
        let r = self.expr_inner(e);
        self.leave();
        r
    }

    fn comps(&mut self, n: &mut TNode, gens: &[Comprehension]) -> Result<(), ToolError> {
        for g in gens {
            let mut gn = with_role(TNode::new("Comprehension", g.span), "generator");
            gn.children.push(with_role(self.expr(&g.target)?, "target"));
            gn.children.push(with_role(self.expr(&g.iter)?, "iter"));
            self.exprs(&mut gn, &g.conds, "cond")?;
            n.children.push(gn);
        }
        Ok(())
    }

    fn conds(&mut self, n: &mut TNode, conds: &[FieldCond]) -> Result<(), ToolError> {
        for c in conds {
            let mut cn = with_role(
                TNode::new("FieldCond", c.span).label(format!("{} {}", c.field.name, cmpop(c.op))),
                "cond",
            );
            cn.children.push(with_role(self.expr(&c.value)?, "value"));
            n.children.push(cn);
        }
        Ok(())
    }

    fn filter(&mut self, f: &Filter) -> Result<TNode, ToolError> {
        let mut n = with_role(TNode::new("FilterSpec", f.span), "filter");
        if let Some(t) = &f.ty {
            n.children.push(with_role(self.expr(t)?, "type"));
        }
        self.conds(&mut n, &f.conds)?;
        Ok(n)
    }

    fn edge_op(&mut self, op: &EdgeOp) -> Result<TNode, ToolError> {
        let mut n = with_role(TNode::new("EdgeOp", op.span).label(edge_dir(op.dir)), "op");
        if let Some(t) = &op.edge_type {
            n.children.push(with_role(self.expr(t)?, "edge_type"));
        }
        self.conds(&mut n, &op.conds)?;
        Ok(n)
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<TNode, ToolError> {
        let sp = e.span;
        let mut n;
        match &e.kind {
            ExprKind::None => n = TNode::new("Constant", sp).label("None"),
            ExprKind::Bool(b) => {
                n = TNode::new("Constant", sp).label(if *b { "True" } else { "False" })
            }
            ExprKind::Int(i) => n = TNode::new("Int", sp).label(i.to_string()),
            ExprKind::BigInt(s) => n = TNode::new("Int", sp).label(s.clone()),
            ExprKind::Float(f) => n = TNode::new("Float", sp).label(crate::pyfmt::float_repr(*f)),
            ExprKind::Str(s) => n = TNode::new("Str", sp).label(short(s)),
            ExprKind::Bytes(b) => {
                n = TNode::new("Bytes", sp).label(short(&crate::pyfmt::bytes_repr(b)))
            }
            ExprKind::FString(parts) => {
                n = TNode::new("FString", sp);
                for p in parts {
                    match p {
                        FStringPart::Literal(s) => n
                            .children
                            .push(with_role(TNode::new("Str", sp).label(short(s)), "literal")),
                        FStringPart::Expr { expr, .. } => {
                            n.children.push(with_role(self.expr(expr)?, "value"))
                        }
                    }
                }
            }
            ExprKind::Ellipsis => n = TNode::new("Constant", sp).label("..."),
            ExprKind::Name(s) => n = TNode::new("Name", sp).label(&**s),
            ExprKind::Special(r) => n = TNode::new("SpecialRef", sp).label(special(*r)),
            ExprKind::List(v) => {
                n = TNode::new("List", sp);
                self.exprs(&mut n, v, "item")?;
            }
            ExprKind::Tuple(v) => {
                n = TNode::new("Tuple", sp);
                self.exprs(&mut n, v, "item")?;
            }
            ExprKind::Set(v) => {
                n = TNode::new("Set", sp);
                self.exprs(&mut n, v, "item")?;
            }
            ExprKind::Dict(items) => {
                n = TNode::new("Dict", sp);
                for it in items {
                    match it {
                        DictItem::Pair(k, v) => {
                            n.children.push(with_role(self.expr(k)?, "key"));
                            n.children.push(with_role(self.expr(v)?, "value"));
                        }
                        DictItem::Spread(v) => n.children.push(with_role(self.expr(v)?, "spread")),
                    }
                }
            }
            ExprKind::ListComp { elt, gens }
            | ExprKind::SetComp { elt, gens }
            | ExprKind::GenExp { elt, gens } => {
                let kind = match &e.kind {
                    ExprKind::ListComp { .. } => "ListComp",
                    ExprKind::SetComp { .. } => "SetComp",
                    _ => "GenExp",
                };
                n = TNode::new(kind, sp);
                n.children.push(with_role(self.expr(elt)?, "elt"));
                self.comps(&mut n, gens)?;
            }
            ExprKind::DictComp { key, value, gens } => {
                n = TNode::new("DictComp", sp);
                n.children.push(with_role(self.expr(key)?, "key"));
                n.children.push(with_role(self.expr(value)?, "value"));
                self.comps(&mut n, gens)?;
            }
            ExprKind::Starred(v) => {
                n = TNode::new("Starred", sp);
                n.children.push(self.expr(v)?);
            }
            ExprKind::Attr {
                obj,
                name,
                null_safe,
            } => {
                n = TNode::new("Attr", sp).label(format!(
                    "{}{}",
                    if *null_safe { "?." } else { "." },
                    name.name
                ));
                n.children.push(with_role(self.expr(obj)?, "obj"));
            }
            ExprKind::Index {
                obj,
                index,
                null_safe,
            } => {
                n = TNode::new("Index", sp);
                if *null_safe {
                    n.label = Some("?".into());
                }
                n.children.push(with_role(self.expr(obj)?, "obj"));
                n.children.push(with_role(self.expr(index)?, "index"));
            }
            ExprKind::Slice { lower, upper, step } => {
                n = TNode::new("Slice", sp);
                for (part, role) in [(lower, "lower"), (upper, "upper"), (step, "step")] {
                    if let Some(p) = part {
                        n.children.push(with_role(self.expr(p)?, role));
                    }
                }
            }
            ExprKind::Call { func, args } => {
                n = TNode::new("Call", sp);
                n.children.push(with_role(self.expr(func)?, "func"));
                for a in args {
                    match a {
                        Arg::Positional(v) => n.children.push(with_role(self.expr(v)?, "arg")),
                        Arg::Keyword(k, v) => {
                            let mut kn = with_role(
                                TNode::new("Keyword", k.span.to(v.span)).label(&*k.name),
                                "arg",
                            );
                            kn.children.push(self.expr(v)?);
                            n.children.push(kn);
                        }
                        Arg::Star(v) => n.children.push(with_role(self.expr(v)?, "star_arg")),
                        Arg::DoubleStar(v) => n.children.push(with_role(self.expr(v)?, "kwargs")),
                    }
                }
            }
            ExprKind::Unary { op, operand } => {
                n = TNode::new("Unary", sp).label(match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Pos => "+",
                    UnaryOp::Not => "not",
                    UnaryOp::Invert => "~",
                });
                n.children.push(self.expr(operand)?);
            }
            ExprKind::Binary { op, left, right } => {
                n = TNode::new("Binary", sp).label(binop(*op));
                n.children.push(with_role(self.expr(left)?, "left"));
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::BoolOp { op, left, right } => {
                n = TNode::new("BoolOp", sp).label(match op {
                    BoolOp::And => "and",
                    BoolOp::Or => "or",
                });
                n.children.push(with_role(self.expr(left)?, "left"));
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::Compare { left, ops } => {
                let labels: Vec<&str> = ops.iter().map(|(o, _)| cmpop(*o)).collect();
                n = TNode::new("Compare", sp).label(labels.join(" "));
                n.children.push(with_role(self.expr(left)?, "left"));
                for (_, r) in ops {
                    n.children.push(with_role(self.expr(r)?, "right"));
                }
            }
            ExprKind::Ternary { cond, then, orelse } => {
                n = TNode::new("Ternary", sp);
                n.children.push(with_role(self.expr(then)?, "then"));
                n.children.push(with_role(self.expr(cond)?, "cond"));
                n.children.push(with_role(self.expr(orelse)?, "else"));
            }
            ExprKind::Walrus { name, value } => {
                n = TNode::new("Walrus", sp).label(&*name.name);
                n.children.push(with_role(self.expr(value)?, "value"));
            }
            ExprKind::Lambda { params, ret, body } => {
                n = TNode::new("Lambda", sp);
                self.params(&mut n, params)?;
                if let Some(r) = ret {
                    n.children.push(with_role(self.expr(r)?, "returns"));
                }
                n.children.push(self.block("body", body, sp)?);
            }
            ExprKind::Cast { expr, ty } => {
                n = TNode::new("Cast", sp);
                n.children.push(with_role(self.expr(expr)?, "value"));
                n.children.push(with_role(self.expr(ty)?, "type"));
            }
            ExprKind::Pipe { op, left, right } => {
                n = TNode::new("Pipe", sp).label(match op {
                    PipeOp::Forward => "|>",
                    PipeOp::Backward => "<|",
                    PipeOp::AtomicForward => ":>",
                    PipeOp::AtomicBackward => "<:",
                });
                n.children.push(with_role(self.expr(left)?, "left"));
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::Await(v) => {
                n = TNode::new("Await", sp);
                n.children.push(self.expr(v)?);
            }
            ExprKind::Yield { value, from } => {
                n = TNode::new(if *from { "YieldFrom" } else { "Yield" }, sp);
                if let Some(v) = value {
                    n.children.push(with_role(self.expr(v)?, "value"));
                }
            }
            ExprKind::Ref(v) => {
                n = TNode::new("Ref", sp);
                n.children.push(self.expr(v)?);
            }
            ExprKind::Spawn { left, right } => {
                n = TNode::new("Spawn", sp);
                n.children.push(with_role(self.expr(left)?, "left"));
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::Connect { left, right, op } => {
                n = TNode::new("Connect", sp).label(edge_dir(op.dir));
                n.children.push(with_role(self.expr(left)?, "left"));
                if let Some(ed) = &op.edge {
                    n.children.push(with_role(self.expr(ed)?, "edge"));
                }
                for (k, v) in &op.assigns {
                    let mut kn = with_role(
                        TNode::new("Keyword", k.span.to(v.span)).label(&*k.name),
                        "assign",
                    );
                    kn.children.push(self.expr(v)?);
                    n.children.push(kn);
                }
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::Disconnect { left, right, op } => {
                n = TNode::new("Disconnect", sp);
                n.children.push(with_role(self.expr(left)?, "left"));
                n.children.push(self.edge_op(op)?);
                n.children.push(with_role(self.expr(right)?, "right"));
            }
            ExprKind::EdgeRef(r) => {
                n = TNode::new("EdgeRef", sp);
                if r.edges {
                    n.label = Some("edge".into());
                }
                if let Some(a) = &r.anchor {
                    n.children.push(with_role(self.expr(a)?, "anchor"));
                }
                for h in &r.hops {
                    let mut hn = with_role(TNode::new("Hop", h.span), "hop");
                    hn.children.push(self.edge_op(&h.op)?);
                    if let Some(f) = &h.filter {
                        hn.children.push(self.filter(f)?);
                    }
                    if let Some(p) = &h.pin {
                        hn.children.push(with_role(self.expr(p)?, "pin"));
                    }
                    n.children.push(hn);
                }
            }
            ExprKind::Filter { obj, filter } => {
                n = TNode::new("Filter", sp);
                n.children.push(with_role(self.expr(obj)?, "obj"));
                n.children.push(self.filter(filter)?);
            }
            ExprKind::AssignComp { obj, assigns } => {
                n = TNode::new("AssignComp", sp);
                n.children.push(with_role(self.expr(obj)?, "obj"));
                for (k, v) in assigns {
                    let mut kn = with_role(
                        TNode::new("Keyword", k.span.to(v.span)).label(&*k.name),
                        "assign",
                    );
                    kn.children.push(self.expr(v)?);
                    n.children.push(kn);
                }
            }
            ExprKind::Error => n = TNode::new("Error", sp),
        }
        Ok(n)
    }
}

fn modpath(p: &ModPath, role: &'static str) -> TNode {
    let parts: Vec<&str> = p.parts.iter().map(|n| &*n.name).collect();
    let dots = ".".repeat(p.dots.min(64) as usize);
    with_role(
        TNode::new("ModPath", p.span).label(format!("{dots}{}", parts.join("."))),
        role,
    )
}

/// The source spelling of a binary operator.
pub fn binop(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Pow => "**",
        BinOp::MatMul => "@",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::LShift => "<<",
        BinOp::RShift => ">>",
    }
}

/// The source spelling of a comparison operator.
pub fn cmpop(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::NotEq => "!=",
        CmpOp::Lt => "<",
        CmpOp::Gt => ">",
        CmpOp::LtE => "<=",
        CmpOp::GtE => ">=",
        CmpOp::In => "in",
        CmpOp::NotIn => "not in",
        CmpOp::Is => "is",
        CmpOp::IsNot => "is not",
    }
}

/// The source keyword of a special reference.
pub fn special(r: SpecialRef) -> &'static str {
    match r {
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

fn edge_dir(d: EdgeDir) -> &'static str {
    match d {
        EdgeDir::Out => "out",
        EdgeDir::In => "in",
        EdgeDir::Any => "any",
    }
}
