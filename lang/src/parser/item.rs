//! Declarations: the module, imports, archetypes and their members, abilities, enums,
//! globs, impl blocks, entry and test blocks, access tags and docstrings.

use super::Parser;
use crate::ast::{
    Ability, AbilityKind, Access, ArchKind, Archetype, EntryBlock, EnumDecl, EnumMember,
    EventClause, Expr, ExprKind, Glob, GlobVar, HasDecl, HasVar, ImplBlock, ImplKind, Import,
    ImportItem, ImportKind, Item, Member, ModPath, Module, Name, Param, ParamKind, Signature, Stmt,
    StmtKind, TestBlock,
};
use crate::diag::Code;
use crate::lexer::{StrLit, TokenKind as T};
use crate::span::Span;
use std::rc::Rc;

fn is_arch_kw(k: T) -> bool {
    matches!(
        k,
        T::KwObj | T::KwNode | T::KwEdge | T::KwWalker | T::KwClass
    )
}

impl<'a> Parser<'a> {
    pub(super) fn module(&mut self) -> Module {
        // The module docstring is the first string token alone (as in Jac), so a second
        // string right after it documents the first declaration.
        let doc = match self.peek() {
            T::Str(idx) => match self.lits.get(idx as usize) {
                Some(StrLit::Plain { value, .. }) => {
                    let v = value.clone();
                    self.bump();
                    Some(v)
                }
                _ => None,
            },
            _ => None,
        };
        let mut items = Vec::new();
        loop {
            match self.peek() {
                T::Eof => break,
                T::Semi => {
                    self.bump();
                    continue;
                }
                _ => {}
            }
            let before = self.pos;
            let doc = if self.plain_str_at(self.pos) {
                self.docstring()
            } else {
                None
            };
            if self.top_item_start() {
                if let Some(item) = self.item(doc) {
                    items.push(item);
                }
            } else if !matches!(self.peek(), T::Semi | T::Eof) {
                let found = self.found();
                let hint = if self.starts_statement() {
                    ": statements must be inside `with entry { ... }`"
                } else {
                    ""
                };
                let s = self.span();
                self.error(
                    Code::E0001,
                    format!(
                        "expected a declaration (`node`, `walker`, `def`, `glob`, `import`, \
                         `with entry`, ...), found {found}{hint}"
                    ),
                    s,
                );
                self.sync_item();
            }
            if self.pos == before {
                self.bump();
            }
        }
        // What finds no archetype here stays an `impl` (an annex file's, for its main
        // module; otherwise the checker and the interpreter report it).
        let left = crate::ast::impls::merge_arch_impls(&mut items);
        items.extend(left.into_iter().map(Item::Impl));
        crate::ast::locals::mark_local_archetypes(&mut items);
        Module {
            doc,
            items,
            span: Span::new(0, self.src.len()),
            type_params: std::mem::take(&mut self.type_params),
        }
    }

    fn starts_statement(&self) -> bool {
        matches!(
            self.peek(),
            T::Name
                | T::KwIf
                | T::KwFor
                | T::KwWhile
                | T::KwReturn
                | T::KwVisit
                | T::KwReport
                | T::KwDel
                | T::KwTry
                | T::KwSelf
                | T::KwRoot
                | T::KwHere
                | T::LBracket
                | T::LParen
        )
    }

    /// True at a token that begins a module-level declaration.
    fn top_item_start(&self) -> bool {
        match self.peek() {
            T::At
            | T::KwAsync
            | T::KwObj
            | T::KwNode
            | T::KwEdge
            | T::KwWalker
            | T::KwClass
            | T::KwEnum
            | T::KwDef
            | T::KwCan
            | T::KwOverride
            | T::KwStatic
            | T::KwImpl
            | T::KwGlob
            | T::KwImport
            | T::KwInclude
            | T::KwWith => true,
            T::Name => {
                self.at_test_block()
                    || self.at_type_alias()
                    || (self.at_soft("sv") && self.peek_at(1) == T::KwImport)
            }
            _ => false,
        }
    }

    /// `type Alias = T;` / `type Alias[T] = ...;`
    fn at_type_alias(&self) -> bool {
        self.at_soft("type")
            && self.peek_at(1) == T::Name
            && matches!(self.peek_at(2), T::Assign | T::LBracket)
    }

    /// `type Alias = T;`: binds `Alias` to the type expression's value, as a `glob`
    /// would (type parameters are erased).
    fn type_alias(&mut self) -> Glob {
        let start = self.start();
        self.bump(); // type
        let vstart = self.start();
        let name = self.expect_name("an alias name");
        let mut type_params = Vec::new();
        if self.peek() == T::LBracket {
            let from = self.pos;
            self.skip_type_params();
            // The names directly inside the brackets (`T`, `T: int`, `*Ts`): a name
            // right after `[`, `,`, `*` or `**`.
            for i in from + 1..self.pos {
                let t = self.tok_at(i);
                let prev = self.tok_at(i - 1).kind;
                if t.kind == T::Name
                    && matches!(prev, T::LBracket | T::Comma | T::Star | T::DoubleStar)
                    && type_params.len() < 256
                {
                    type_params.push(self.name_of(t));
                }
            }
        }
        self.expect(T::Assign);
        let value = self.type_expr();
        self.end_stmt(false);
        Glob {
            access: None,
            vars: vec![GlobVar {
                name,
                ty: None,
                value: Some(value),
                span: self.sp(vstart),
            }],
            type_params,
            is_alias: true,
            span: self.sp(start),
        }
    }

    fn at_test_block(&self) -> bool {
        self.at_soft("test") && matches!(self.peek_at(1), T::Str(_) | T::Name | T::LBrace)
    }

    /// Skip to the next module-level declaration (or past a `;`), always making progress.
    fn sync_item(&mut self) {
        let first = self.pos;
        let mut depth = 0u32;
        loop {
            let k = self.peek();
            if k == T::Eof {
                return;
            }
            if depth == 0 && self.pos > first && self.top_item_start() {
                return;
            }
            match k {
                T::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                T::LBrace => depth += 1,
                T::RBrace => {
                    if depth <= 1 {
                        self.bump();
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    // -----------------------------------------------------------------------------------
    // Shared pieces
    // -----------------------------------------------------------------------------------

    pub(super) fn plain_str_at(&self, i: usize) -> bool {
        match self.tok_at(i).kind {
            T::Str(idx) => matches!(self.lits.get(idx as usize), Some(StrLit::Plain { .. })),
            _ => false,
        }
    }

    /// Index of the first token after the run of plain strings at the cursor.
    pub(super) fn after_strs(&self) -> usize {
        let mut i = self.pos;
        while self.plain_str_at(i) {
            i += 1;
        }
        i
    }

    /// Consume adjacent plain string tokens as a docstring.
    pub(super) fn docstring(&mut self) -> Option<String> {
        let mut out: Option<String> = None;
        while let T::Str(idx) = self.peek() {
            match self.lits.get(idx as usize) {
                Some(StrLit::Plain { value, .. }) => {
                    out.get_or_insert_with(String::new).push_str(value);
                    self.bump();
                }
                _ => break,
            }
        }
        out
    }

    /// `:pub` / `:priv` / `:protect` right after a keyword; a bare `:` is tolerated.
    pub(super) fn access_tag(&mut self) -> Option<Access> {
        if self.peek() != T::Colon {
            return None;
        }
        if self.peek_at(1) == T::Name {
            let t = self.tok_at(self.pos + 1);
            let access = match self.text(t.span) {
                "pub" => Some(Access::Pub),
                "priv" => Some(Access::Priv),
                "protect" => Some(Access::Protect),
                _ => None,
            };
            if access.is_some() {
                self.bump();
                self.bump();
                return access;
            }
        }
        self.bump();
        None
    }

    /// A name, or one of the keywords usable as a member name (`init`, `postinit`, ...).
    fn name_or_keyword(&mut self, what: &str) -> Name {
        let k = self.peek();
        if k == T::Name || k.is_keyword() {
            let t = self.bump();
            return self.name_of(t);
        }
        self.err_expected(what);
        self.error_name()
    }

    fn is_param_name(k: T) -> bool {
        matches!(
            k,
            T::Name
                | T::KwSelf
                | T::KwSuper
                | T::KwHere
                | T::KwRoot
                | T::KwVisitor
                | T::KwInit
                | T::KwPostinit
                | T::KwProps
        )
    }

    /// `( params )`, at the `(`.
    pub(super) fn param_list(&mut self) -> Vec<Param> {
        self.bump(); // (
        let mut out = Vec::new();
        loop {
            if matches!(self.peek(), T::RParen | T::Eof) {
                break;
            }
            out.push(self.param());
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.close(T::RParen);
        out
    }

    fn param(&mut self) -> Param {
        let start = self.start();
        let kind = match self.peek() {
            T::Star => {
                let t = self.bump();
                if !Self::is_param_name(self.peek()) {
                    let name = self.name_of(t);
                    return Param {
                        kind: ParamKind::KwOnlyMarker,
                        name,
                        ty: None,
                        default: None,
                        span: t.span,
                    };
                }
                ParamKind::VarArgs
            }
            T::DoubleStar => {
                self.bump();
                ParamKind::KwArgs
            }
            T::Slash => {
                let t = self.bump();
                let name = self.name_of(t);
                return Param {
                    kind: ParamKind::PosOnlyMarker,
                    name,
                    ty: None,
                    default: None,
                    span: t.span,
                };
            }
            _ => ParamKind::Normal,
        };
        let name = if Self::is_param_name(self.peek()) {
            let t = self.bump();
            self.name_of(t)
        } else {
            self.err_expected("a parameter name");
            self.error_name()
        };
        let ty = if self.eat(T::Colon) {
            Some(self.type_expr())
        } else {
            None
        };
        let default = if self.eat(T::Assign) {
            Some(self.expr())
        } else {
            None
        };
        Param {
            kind,
            name,
            ty,
            default,
            span: self.sp(start),
        }
    }

    /// A lambda parameter of the (rejected) colon form: a bare name, `*args` or `**kw`.
    pub(super) fn bare_param(&mut self) -> Param {
        let start = self.start();
        let kind = if self.eat(T::Star) {
            ParamKind::VarArgs
        } else if self.eat(T::DoubleStar) {
            ParamKind::KwArgs
        } else {
            ParamKind::Normal
        };
        let name = self.expect_name("a parameter name");
        Param {
            kind,
            name,
            ty: None,
            default: None,
            span: self.sp(start),
        }
    }

    /// `[ (params) ] [-> T]`
    pub(super) fn signature(&mut self) -> Signature {
        let start = self.start();
        let params = if self.peek() == T::LParen {
            self.param_list()
        } else {
            Vec::new()
        };
        let ret = if self.eat(T::Arrow) {
            Some(self.type_expr())
        } else {
            None
        };
        Signature {
            params,
            ret,
            span: self.sp(start),
        }
    }

    /// `with [Trigger] entry|exit`, at `with`.
    pub(super) fn event_clause(&mut self) -> EventClause {
        let start = self.start();
        self.bump(); // with
        let trigger = if matches!(self.peek(), T::KwEntry | T::KwExit) {
            None
        } else {
            Some(self.type_expr())
        };
        let is_exit = match self.peek() {
            T::KwEntry => {
                self.bump();
                false
            }
            T::KwExit => {
                self.bump();
                true
            }
            _ => {
                self.err_expected("`entry` or `exit`");
                false
            }
        };
        EventClause {
            trigger,
            is_exit,
            span: self.sp(start),
        }
    }

    // -----------------------------------------------------------------------------------
    // Items
    // -----------------------------------------------------------------------------------

    /// A declaration (with its decorators), at its first token. `None` after an error
    /// that left nothing usable.
    pub(super) fn item(&mut self, doc: Option<String>) -> Option<Item> {
        if !self.enter_weighted(3) {
            self.leave_weighted(3);
            return None;
        }
        let r = self.item_inner(doc);
        self.leave_weighted(3);
        r
    }

    fn decorators(&mut self) -> Vec<Expr> {
        let mut out = Vec::new();
        while self.eat(T::At) {
            out.push(self.chain());
        }
        out
    }

    fn item_inner(&mut self, doc: Option<String>) -> Option<Item> {
        let start = self.start();
        let decorators = self.decorators();
        let k = self.peek();
        let item = match k {
            T::KwAsync if is_arch_kw(self.peek_at(1)) => {
                Item::Archetype(self.archetype(start, decorators, doc))
            }
            _ if is_arch_kw(k) => Item::Archetype(self.archetype(start, decorators, doc)),
            T::KwEnum => Item::Enum(self.enum_decl(start, decorators)),
            T::KwAsync | T::KwDef | T::KwCan | T::KwOverride | T::KwStatic => {
                Item::Ability(self.ability(start, decorators, doc))
            }
            T::KwImpl => Item::Impl(self.impl_block(start, decorators)),
            T::KwGlob if decorators.is_empty() => Item::Glob(self.glob()),
            T::KwImport | T::KwInclude if decorators.is_empty() => Item::Import(self.import()),
            // `sv import from provider { ... }`: a service-to-service import.
            T::Name
                if decorators.is_empty()
                    && self.at_soft("sv")
                    && self.peek_at(1) == T::KwImport =>
            {
                self.bump();
                let mut imp = self.import();
                imp.remote = true;
                imp.span = self.sp(start);
                Item::Import(imp)
            }
            T::KwWith if decorators.is_empty() => Item::Entry(self.entry_block()),
            T::Name if decorators.is_empty() && self.at_test_block() => {
                Item::Test(self.test_block())
            }
            T::Name if decorators.is_empty() && self.at_type_alias() => {
                Item::Glob(self.type_alias())
            }
            _ => {
                self.err_expected("a declaration");
                self.sync_stmt();
                return None;
            }
        };
        Some(item)
    }

    fn archetype(&mut self, start: u32, decorators: Vec<Expr>, doc: Option<String>) -> Archetype {
        let is_async = self.eat(T::KwAsync);
        let kind = match self.bump().kind {
            T::KwObj => ArchKind::Obj,
            T::KwNode => ArchKind::Node,
            T::KwEdge => ArchKind::Edge,
            T::KwWalker => ArchKind::Walker,
            _ => ArchKind::Class,
        };
        let access = self.access_tag();
        let name = self.expect_name("an archetype name");
        if self.peek() == T::LBracket {
            self.skip_type_params();
        }
        let mut bases = Vec::new();
        if self.eat(T::LParen) {
            loop {
                if matches!(self.peek(), T::RParen | T::Eof) {
                    break;
                }
                bases.push(self.expr());
                if !self.eat(T::Comma) {
                    break;
                }
            }
            self.close(T::RParen);
        }
        let endpoints = if self.eat(T::Colon) {
            let src = self.type_expr();
            self.expect(T::ArrowR);
            let dst = self.type_expr();
            Some((src, dst))
        } else {
            None
        };
        let (members, has_body) = match self.peek() {
            T::Semi => {
                self.bump();
                (Vec::new(), false)
            }
            T::LBrace => {
                // A Python-style `class` body may hold plain statements (class attributes).
                let outer = std::mem::replace(&mut self.in_class, kind == ArchKind::Class);
                let members = self.members();
                self.in_class = outer;
                (members, true)
            }
            _ => {
                self.err_expected("`{` or `;`");
                self.sync_stmt();
                (Vec::new(), false)
            }
        };
        Archetype {
            kind,
            name,
            access,
            decorators,
            is_async,
            bases,
            endpoints,
            members,
            has_body,
            doc,
            locals: None,
            span: self.sp(start),
        }
    }

    /// Generic parameters `[T, U]` (LATER): skipped.
    fn skip_type_params(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.peek() {
                T::LBracket | T::LBracketQ => depth += 1,
                T::RBracket => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                T::LBrace | T::Semi | T::Eof => return,
                T::Name if depth == 1 => {
                    let t = self.bump();
                    let n = self.name_of(t).name;
                    if !self.type_params.contains(&n) && self.type_params.len() < 1024 {
                        self.type_params.push(n);
                    }
                    continue;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// `{ members }`, at the `{`.
    fn members(&mut self) -> Vec<Member> {
        let open = self.bump().span;
        let mut out = Vec::new();
        loop {
            while self.eat(T::Semi) {}
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            let before = self.pos;
            if let Some(m) = self.member() {
                out.push(m);
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.close_brace(open);
        out
    }

    fn member_start_at(&self, i: usize) -> bool {
        let k = self.tok_at(i).kind;
        matches!(
            k,
            T::At
                | T::KwHas
                | T::KwStatic
                | T::KwDef
                | T::KwCan
                | T::KwOverride
                | T::KwAsync
                | T::KwEnum
                | T::KwImpl
                | T::KwWith
        ) || is_arch_kw(k)
    }

    /// One archetype (or enum) member; stray statements are kept as `Member::Stmt`.
    pub(super) fn member(&mut self) -> Option<Member> {
        if !self.enter_weighted(3) {
            self.leave_weighted(3);
            return None;
        }
        let r = self.member_inner();
        self.leave_weighted(3);
        r
    }

    fn member_inner(&mut self) -> Option<Member> {
        let doc = if self.plain_str_at(self.pos) && self.member_start_at(self.after_strs()) {
            self.docstring()
        } else {
            None
        };
        let start = self.start();
        let decorators = self.decorators();
        let k = self.peek();
        let k1 = self.peek_at(1);
        let m = match k {
            T::KwHas | T::KwStatic if k == T::KwHas || k1 == T::KwHas => {
                if !decorators.is_empty() {
                    self.error(
                        Code::E0001,
                        "decorators cannot apply to `has`",
                        self.sp(start),
                    );
                }
                Member::Has(self.has_decl(start))
            }
            T::KwAsync if is_arch_kw(k1) => {
                Member::Archetype(self.archetype(start, decorators, doc))
            }
            T::KwClass if k1 == T::KwDef => Member::Ability(self.ability(start, decorators, doc)),
            _ if is_arch_kw(k) => Member::Archetype(self.archetype(start, decorators, doc)),
            T::KwEnum => Member::Enum(self.enum_decl(start, decorators)),
            T::KwAsync | T::KwDef | T::KwCan | T::KwOverride | T::KwStatic => {
                Member::Ability(self.ability(start, decorators, doc))
            }
            T::KwImpl => Member::Impl(self.impl_block(start, decorators)),
            T::KwWith if matches!(k1, T::KwEntry | T::KwExit) => Member::Entry(self.entry_block()),
            _ => {
                if !decorators.is_empty() {
                    self.err_expected("a declaration after the decorator");
                }
                let stmt = self.stmt();
                let harmless = match &stmt.kind {
                    StmtKind::Empty | StmtKind::Error => true,
                    StmtKind::Expr(e) => matches!(e.kind, ExprKind::Str(_)),
                    _ => false,
                };
                if !harmless && !self.in_class {
                    self.error(
                        Code::E0001,
                        "statements are not allowed directly in an archetype body: put them in a \
                         method (`def f { ... }`) or a `with entry { ... }` block",
                        stmt.span,
                    );
                }
                Member::Stmt(stmt)
            }
        };
        Some(m)
    }

    fn has_decl(&mut self, start: u32) -> HasDecl {
        let is_static = self.eat(T::KwStatic);
        self.bump(); // has
        let access = self.access_tag();
        let mut vars = Vec::new();
        loop {
            let vstart = self.start();
            let name = self.expect_name("a field name");
            if self.text(name.span).starts_with('`') && PY_RESERVED.contains(&&*name.name) {
                self.error(
                    Code::E0067,
                    format!(
                        "`{0}` is a reserved word and cannot name a field, even escaped: \
                         rename it (e.g. `{0}_`)",
                        name.name
                    ),
                    name.span,
                );
            }
            let ty = if self.expect(T::Colon) {
                self.type_expr()
            } else {
                self.error_expr()
            };
            let mut default = None;
            let mut postinit = false;
            let mut accessors = None;
            if self.peek() == T::LBrace {
                accessors = Some(Box::new(self.accessors()));
            } else if self.eat(T::Assign) {
                default = Some(self.expr());
            } else if self.eat(T::KwPostinit) {
                postinit = true;
            } else if self.at_soft("by") && self.peek_at(1) == T::KwPostinit {
                let s = self.span();
                self.error(
                    Code::E0001,
                    "`by postinit` was removed: write `has x: T postinit;`",
                    s,
                );
                self.bump();
                self.bump();
                postinit = true;
            }
            vars.push(HasVar {
                name,
                ty,
                default,
                postinit,
                accessors,
                span: self.sp(vstart),
            });
            if !self.eat(T::Comma) {
                break;
            }
        }
        // A property's `{ getter .. }` block ends the declaration (a `;` is optional).
        if vars.last().is_some_and(|v| v.accessors.is_some()) {
            self.eat(T::Semi);
        } else {
            self.end_stmt(false);
        }
        HasDecl {
            is_static,
            access,
            vars,
            span: self.sp(start),
        }
    }

    /// `{ getter { ... } setter(x: T) { ... } deleter { ... } }` after a field's type,
    /// at the `{`. Each accessor may carry `()`/parameters and `-> T`, and may end in
    /// `;` instead of a body (its body then comes from `impl Arch.field.getter`).
    fn accessors(&mut self) -> crate::ast::Accessors {
        let open = self.bump().span;
        let mut acc = crate::ast::Accessors {
            getter: None,
            setter: None,
            deleter: None,
        };
        loop {
            while self.eat(T::Semi) {}
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            let slot = if self.at_soft("getter") {
                &mut acc.getter
            } else if self.at_soft("setter") {
                &mut acc.setter
            } else if self.at_soft("deleter") {
                &mut acc.deleter
            } else {
                self.err_expected("`getter`, `setter` or `deleter`");
                self.sync_stmt();
                continue;
            };
            let kind = self.cur_text();
            let one = self.accessor();
            if slot.is_some() {
                let msg = format!("this property already has a {kind}");
                self.error(Code::E0001, msg, one.span);
            }
            *slot = Some(one);
        }
        self.close_brace(open);
        acc
    }

    /// One accessor, at its keyword (`getter`, `setter` or `deleter`).
    fn accessor(&mut self) -> crate::ast::Accessor {
        let kw = self.bump();
        let kind = self.text(kw.span);
        let explicit = self.peek() == T::LParen;
        let Signature {
            mut params, ret, ..
        } = self.signature();
        if kind == "setter" {
            if !explicit {
                // jaclang's shorthand: `setter { self._v = value; }`.
                params.push(Param {
                    kind: ParamKind::Normal,
                    name: Name {
                        name: self.intern("value"),
                        span: kw.span,
                    },
                    ty: None,
                    default: None,
                    span: kw.span,
                });
            } else if params.len() != 1 || params[0].kind != ParamKind::Normal {
                self.error(
                    Code::E0001,
                    "a setter takes one parameter: `setter(v: T) { }` (or `setter { }`, which names it `value`)",
                    kw.span,
                );
            }
        } else if !params.is_empty() {
            let msg = format!("a {kind} takes no parameters");
            self.error(Code::E0001, msg, kw.span);
            params.clear();
        }
        let body = if self.peek() == T::LBrace {
            Some(self.block())
        } else {
            self.end_stmt(true);
            None
        };
        crate::ast::Accessor {
            params,
            ret,
            body,
            span: self.sp(kw.span.start),
        }
    }

    fn ability(&mut self, start: u32, decorators: Vec<Expr>, doc: Option<String>) -> Ability {
        let (mut is_override, mut is_static, mut is_async) = (false, false, false);
        let mut is_class_method = false;
        loop {
            match self.peek() {
                T::KwOverride => is_override = true,
                T::KwStatic => is_static = true,
                T::KwClass if self.peek_at(1) == T::KwDef => is_class_method = true,
                T::KwAsync => is_async = true,
                _ => break,
            }
            self.bump();
        }
        let kw = self.tok_at(self.pos);
        let mut kind = match kw.kind {
            T::KwDef => AbilityKind::Def,
            T::KwCan => AbilityKind::Can,
            _ => {
                self.err_expected("`def` or `can`");
                self.sync_stmt();
                return Ability {
                    kind: AbilityKind::Def,
                    decorators,
                    is_override,
                    is_static,
                    is_class_method,
                    is_async,
                    access: None,
                    name: None,
                    signature: None,
                    event: None,
                    body: None,
                    is_abstract: false,
                    doc,
                    span: self.sp(start),
                };
            }
        };
        self.bump();
        let access = self.access_tag();
        let name = if matches!(self.peek(), T::Name | T::KwInit | T::KwPostinit) {
            let t = self.bump();
            Some(self.name_of(t))
        } else {
            None
        };
        // Generic parameters `def first[T](xs: list[T]) -> T`: erased.
        if name.is_some() && self.peek() == T::LBracket {
            self.skip_type_params();
        }
        let mut signature = None;
        let mut event = None;
        match kind {
            AbilityKind::Can => {
                if self.peek() == T::KwWith {
                    event = Some(self.event_clause());
                } else {
                    let span = Span {
                        start: kw.span.start,
                        end: self.prev_end(),
                    };
                    self.error(
                        Code::E0034,
                        "`can` declares an event ability and needs `with [T] entry|exit`; \
                         use `def` for a function: `def name(...) { ... }`",
                        span,
                    );
                    kind = AbilityKind::Def;
                    signature = Some(self.signature());
                }
            }
            AbilityKind::Def => {
                if name.is_none() {
                    self.err_expected("a function name");
                }
                if self.peek() == T::KwWith {
                    let s = self.span();
                    self.error(
                        Code::E0001,
                        "`def` takes a parameter list, not an event clause: use `can` for event abilities",
                        s,
                    );
                    kind = AbilityKind::Can;
                    event = Some(self.event_clause());
                } else {
                    signature = Some(self.signature());
                }
            }
        }
        let mut is_abstract = false;
        let body = match self.peek() {
            T::LBrace => Some(self.block()),
            T::Semi => {
                self.bump();
                None
            }
            T::KwAbst => {
                self.bump();
                is_abstract = true;
                self.end_stmt(false);
                None
            }
            // `abs`: the older spelling of `abst`.
            T::Name if self.at_soft("abs") && self.peek_at(1) == T::Semi => {
                self.bump();
                is_abstract = true;
                self.end_stmt(false);
                None
            }
            _ => {
                self.err_expected("`{` or `;`");
                self.sync_stmt();
                None
            }
        };
        Ability {
            kind,
            decorators,
            is_override,
            is_static,
            is_class_method,
            is_async,
            access,
            name,
            signature,
            event,
            body,
            is_abstract,
            doc,
            span: self.sp(start),
        }
    }

    fn enum_decl(&mut self, start: u32, decorators: Vec<Expr>) -> EnumDecl {
        self.bump(); // enum
        let access = self.access_tag();
        let name = self.expect_name("an enum name");
        let mut bases = Vec::new();
        if self.eat(T::Colon) {
            bases.push(self.type_expr());
        } else if self.eat(T::LParen) {
            loop {
                if matches!(self.peek(), T::RParen | T::Eof) {
                    break;
                }
                bases.push(self.expr());
                if !self.eat(T::Comma) {
                    break;
                }
            }
            self.close(T::RParen);
        }
        let mut members = Vec::new();
        let mut extra = Vec::new();
        let has_body = match self.peek() {
            T::Semi => {
                self.bump();
                false
            }
            T::LBrace => {
                let open = self.bump().span;
                loop {
                    while self.eat(T::Semi) || self.eat(T::Comma) {}
                    if matches!(self.peek(), T::RBrace | T::Eof) {
                        break;
                    }
                    let before = self.pos;
                    if self.peek() == T::Name
                        && matches!(self.peek_at(1), T::Assign | T::Comma | T::RBrace | T::Semi)
                    {
                        members.push(self.enum_member());
                    } else if let Some(m) = self.member() {
                        extra.push(m);
                    }
                    if self.pos == before {
                        self.bump();
                    }
                }
                self.close_brace(open);
                true
            }
            _ => {
                self.err_expected("`{` or `;`");
                self.sync_stmt();
                false
            }
        };
        EnumDecl {
            decorators,
            access,
            name,
            bases,
            members,
            extra,
            has_body,
            span: self.sp(start),
        }
    }

    fn enum_member(&mut self) -> EnumMember {
        let start = self.start();
        let t = self.bump();
        let name = self.name_of(t);
        let value = if self.eat(T::Assign) {
            Some(self.expr())
        } else {
            None
        };
        EnumMember {
            name,
            value,
            span: self.sp(start),
        }
    }

    fn impl_block(&mut self, start: u32, decorators: Vec<Expr>) -> ImplBlock {
        self.bump(); // impl
        let mut target = vec![self.name_or_keyword("the name of what is implemented")];
        while self.peek() == T::Dot {
            self.bump();
            target.push(self.name_or_keyword("a member name"));
        }
        let kind = match self.peek() {
            T::KwWith => ImplKind::Event(self.event_clause()),
            T::LParen if self.paren_is_bases(&target) => {
                self.bump();
                let mut bases = Vec::new();
                loop {
                    if matches!(self.peek(), T::RParen | T::Eof) {
                        break;
                    }
                    bases.push(self.expr());
                    if !self.eat(T::Comma) {
                        break;
                    }
                }
                self.close(T::RParen);
                ImplKind::Bases(bases)
            }
            T::LParen | T::Arrow => ImplKind::Signature(Some(self.signature())),
            _ => ImplKind::Signature(None),
        };
        let mut arch_members = None;
        let body = match self.peek() {
            T::LBrace
                if target.len() == 1
                    && matches!(kind, ImplKind::Signature(None) | ImplKind::Bases(_))
                    && self.looks_like_arch_body() =>
            {
                // `impl Vehicle { has name: str = "Car"; }`: the body of `obj Vehicle;`.
                arch_members = Some(self.members());
                Vec::new()
            }
            T::LBrace
                if target.len() == 1
                    && matches!(kind, ImplKind::Signature(None) | ImplKind::Bases(_))
                    && self.looks_like_method_body() =>
            {
                // `impl Person { def greet { ... } }`: methods only, the body of an
                // archetype or of a function (`impl helper { def inner { } }`), which
                // `merge_arch_impls` decides by the archetypes the module declares. Read
                // as members when every entry parses as one, and as statements.
                let (pos, ndiags, last_err) = (self.pos, self.diags.len(), self.last_err);
                let members = self.members();
                let clean = self.diags.len() == ndiags
                    && !members.iter().any(|m| matches!(m, Member::Stmt(_)));
                self.pos = pos;
                self.diags.truncate(ndiags);
                self.last_err = last_err;
                if clean {
                    arch_members = Some(members);
                }
                self.block()
            }
            T::LBrace => {
                if matches!(kind, ImplKind::Signature(None)) && self.looks_like_enum_body() {
                    self.enum_impl_body()
                } else {
                    self.block()
                }
            }
            T::Semi => {
                self.bump();
                Vec::new()
            }
            _ => {
                self.err_expected("`{`");
                self.sync_stmt();
                Vec::new()
            }
        };
        ImplBlock {
            decorators,
            target,
            kind,
            body,
            members: arch_members,
            span: self.sp(start),
        }
    }

    /// Decide whether `impl X(...)` lists bases (`impl Arch(Base)`) or parameters.
    fn paren_is_bases(&self, target: &[Name]) -> bool {
        let mut i = self.pos + 1;
        let mut depth = 1u32;
        let mut empty = true;
        loop {
            let k = self.tok_at(i).kind;
            match k {
                T::Eof => return false,
                T::LParen | T::LBracket | T::LBracketQ | T::LBrace => depth += 1,
                T::RParen | T::RBracket | T::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                T::Colon | T::Assign | T::Star | T::DoubleStar | T::Slash if depth == 1 => {
                    return false;
                }
                _ => {}
            }
            empty = false;
            i += 1;
        }
        if empty || self.tok_at(i + 1).kind == T::Arrow {
            return false;
        }
        target
            .last()
            .and_then(|n| n.name.chars().next())
            .is_some_and(|c| c.is_uppercase())
    }

    /// At `{`: the body starts with a `has` (or `static has`) declaration, so it lists
    /// archetype members rather than statements.
    fn looks_like_arch_body(&self) -> bool {
        let mut i = self.pos + 1;
        while self.tok_at(i).kind == T::Semi {
            i += 1;
        }
        if self.tok_at(i).kind == T::KwStatic {
            i += 1;
        }
        self.tok_at(i).kind == T::KwHas
    }

    /// At `{`: the body starts with a method (`def`, `can`, `static def`, `override`).
    fn looks_like_method_body(&self) -> bool {
        let mut i = self.pos + 1;
        while self.tok_at(i).kind == T::Semi {
            i += 1;
        }
        matches!(
            self.tok_at(i).kind,
            T::KwDef | T::KwCan | T::KwStatic | T::KwOverride
        )
    }

    /// `impl Color { RED = 1, GREEN = 2 }`: a body of comma-separated enum members.
    fn looks_like_enum_body(&self) -> bool {
        if self.tok_at(self.pos + 1).kind != T::Name {
            return false;
        }
        let mut i = self.pos + 2;
        let mut depth = 0u32;
        loop {
            match self.tok_at(i).kind {
                T::Eof | T::Semi if depth == 0 => return false,
                T::Eof => return false,
                T::Comma if depth == 0 => return true,
                T::RBrace if depth == 0 => return true,
                T::LParen | T::LBracket | T::LBracketQ | T::LBrace => depth += 1,
                T::RParen | T::RBracket | T::RBrace => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
    }

    /// Enum members of an `impl Enum { ... }` body, as assignment / name statements.
    fn enum_impl_body(&mut self) -> Vec<Stmt> {
        let open = self.bump().span;
        let mut out = Vec::new();
        loop {
            while self.eat(T::Comma) || self.eat(T::Semi) {}
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            if self.peek() != T::Name {
                self.err_expected("an enum member name");
                self.sync_stmt();
                continue;
            }
            let m = self.enum_member();
            let target = Expr::new(ExprKind::Name(m.name.name.clone()), m.name.span);
            let kind = match m.value {
                Some(value) => StmtKind::Assign {
                    targets: vec![target],
                    ty: None,
                    value,
                },
                None => StmtKind::Expr(target),
            };
            out.push(Stmt { kind, span: m.span });
        }
        self.close_brace(open);
        out
    }

    fn glob(&mut self) -> Glob {
        let start = self.start();
        self.bump(); // glob
        let access = self.access_tag();
        let mut vars = Vec::new();
        loop {
            let vstart = self.start();
            let name = self.expect_name("a variable name");
            let ty = if self.eat(T::Colon) {
                Some(self.type_expr())
            } else {
                None
            };
            let value = if self.eat(T::Assign) {
                Some(self.expr())
            } else {
                None
            };
            vars.push(GlobVar {
                name,
                ty,
                value,
                span: self.sp(vstart),
            });
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.end_stmt(false);
        Glob {
            access,
            vars,
            type_params: Vec::new(),
            is_alias: false,
            span: self.sp(start),
        }
    }

    fn import(&mut self) -> Import {
        let start = self.start();
        let kind = if self.bump().kind == T::KwInclude {
            ImportKind::Include
        } else {
            ImportKind::Import
        };
        if self.peek() == T::Colon && self.peek_at(1) == T::Name {
            // Legacy language tag (`import:py`): ignored.
            self.bump();
            self.bump();
        }
        if self.eat(T::KwFrom) {
            let from = self.mod_path();
            let mut items = Vec::new();
            if self.peek() == T::LBrace {
                self.bump();
                loop {
                    if matches!(self.peek(), T::RBrace | T::Eof) {
                        break;
                    }
                    let name = self.name_or_keyword("a name to import");
                    let alias = if self.eat(T::KwAs) {
                        Some(self.expect_name("an alias"))
                    } else {
                        None
                    };
                    items.push(ImportItem { name, alias });
                    if !self.eat(T::Comma) {
                        break;
                    }
                }
                self.close(T::RBrace);
                self.eat(T::Semi);
            } else {
                self.err_expected("`{` with the names to import");
                self.sync_stmt();
            }
            return Import {
                kind,
                from: Some(from),
                items,
                modules: Vec::new(),
                remote: false,
                span: self.sp(start),
            };
        }
        let mut modules = Vec::new();
        loop {
            let path = self.mod_path();
            let alias = if self.eat(T::KwAs) {
                Some(self.expect_name("an alias"))
            } else {
                None
            };
            modules.push((path, alias));
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.end_stmt(false);
        Import {
            kind,
            from: None,
            items: Vec::new(),
            modules,
            remote: false,
            span: self.sp(start),
        }
    }

    fn mod_path(&mut self) -> ModPath {
        let start = self.start();
        let mut dots = 0u32;
        loop {
            match self.peek() {
                T::Dot => dots += 1,
                T::Ellipsis => dots += 3,
                _ => break,
            }
            self.bump();
        }
        let mut parts = Vec::new();
        if let T::Str(idx) = self.peek() {
            let t = self.bump();
            let text = match self.lits.get(idx as usize) {
                Some(StrLit::Plain { value, .. }) => value.clone(),
                _ => String::new(),
            };
            parts.push(Name {
                name: Rc::from(text.as_str()),
                span: t.span,
            });
        } else if dots == 0 || self.peek() == T::Name || self.peek().is_keyword() {
            parts.push(self.name_or_keyword("a module name"));
            while self.peek() == T::Dot
                && (self.peek_at(1) == T::Name || self.peek_at(1).is_keyword())
            {
                self.bump();
                parts.push(self.name_or_keyword("a module name"));
            }
        }
        ModPath {
            dots,
            parts,
            span: self.sp(start),
        }
    }

    fn entry_block(&mut self) -> EntryBlock {
        let start = self.start();
        self.bump(); // with
        let is_exit = match self.peek() {
            T::KwEntry => {
                self.bump();
                false
            }
            T::KwExit => {
                self.bump();
                true
            }
            _ => {
                self.err_expected("`entry` or `exit`");
                false
            }
        };
        let name = if self.eat(T::Colon) {
            Some(self.expect_name("an entry name"))
        } else {
            None
        };
        let body = self.block();
        EntryBlock {
            is_exit,
            name,
            body,
            span: self.sp(start),
        }
    }

    fn test_block(&mut self) -> TestBlock {
        let start = self.start();
        self.bump(); // test
        let name = match self.peek() {
            T::Str(_) => {
                let e = self.expr();
                match e.kind {
                    ExprKind::Str(s) => Some(s.to_string()),
                    _ => None,
                }
            }
            T::Name => {
                let t = self.bump();
                Some(self.text(t.span).to_string())
            }
            _ => None,
        };
        let body = self.block();
        TestBlock {
            name,
            body,
            span: self.sp(start),
        }
    }
}

/// Python's reserved words: a field escaped with a backtick still may not use one (the
/// generated object would not be valid), E0067.
const PY_RESERVED: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];
