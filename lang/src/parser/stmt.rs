//! Statements and blocks: assignments, control flow, walker statements, nested declarations.

use super::Parser;
use super::expr::aug_op;
use crate::ast::{ExceptHandler, Expr, ExprKind, MatchCase, Stmt, StmtKind};
use crate::diag::Code;
use crate::lexer::TokenKind as T;

impl<'a> Parser<'a> {
    /// `{ stmts }`. A missing `{` is reported and the rest of the statement skipped.
    pub(super) fn block(&mut self) -> Vec<Stmt> {
        if self.peek() != T::LBrace {
            self.err_expected("`{`");
            if !matches!(self.peek(), T::Semi | T::RBrace) {
                self.sync_stmt();
            }
            return Vec::new();
        }
        let open = self.bump().span;
        let body = self.stmts_until_rbrace();
        self.close_brace(open);
        body
    }

    fn stmts_until_rbrace(&mut self) -> Vec<Stmt> {
        let mut out = Vec::new();
        loop {
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            let before = self.pos;
            out.push(self.stmt());
            if self.pos == before {
                self.bump();
            }
        }
        out
    }

    fn at_stmt_end(&self) -> bool {
        matches!(self.peek(), T::Semi | T::RBrace | T::Eof)
    }

    /// The `;` ending a simple statement. With `trailing_ok`, a missing `;` right before
    /// `}` is accepted (a trailing expression).
    pub(super) fn end_stmt(&mut self, trailing_ok: bool) {
        if self.eat(T::Semi) || (trailing_ok && self.peek() == T::RBrace) {
            return;
        }
        self.err_expected("`;`");
        // A forgotten `;` at the end of a line: the next line starts a fresh statement,
        // so keep it rather than skipping it.
        if !(self.on_new_line() && Self::starts_stmt_keyword(self.peek())) {
            self.sync_stmt();
        }
    }

    fn starts_stmt_keyword(k: T) -> bool {
        matches!(
            k,
            T::At
                | T::KwHas
                | T::KwDef
                | T::KwCan
                | T::KwStatic
                | T::KwOverride
                | T::KwObj
                | T::KwNode
                | T::KwEdge
                | T::KwWalker
                | T::KwClass
                | T::KwEnum
                | T::KwImpl
                | T::KwGlob
                | T::KwImport
                | T::KwInclude
                | T::KwWith
                | T::KwIf
                | T::KwFor
                | T::KwWhile
                | T::KwTry
                | T::KwMatch
                | T::KwReturn
                | T::KwRaise
                | T::KwAssert
                | T::KwDel
                | T::KwBreak
                | T::KwContinue
                | T::KwSkip
                | T::KwDisengage
                | T::KwVisit
                | T::KwReport
        )
    }

    pub(super) fn stmt(&mut self) -> Stmt {
        if !self.enter() {
            self.leave();
            let s = self.span();
            return Stmt {
                kind: StmtKind::Error,
                span: s,
            };
        }
        let s = self.stmt_inner();
        self.leave();
        s
    }

    fn stmt_inner(&mut self) -> Stmt {
        let start = self.start();
        let kind = match self.peek() {
            T::Semi => {
                self.bump();
                StmtKind::Empty
            }
            T::KwIf => self.if_stmt(),
            T::KwWhile => self.while_stmt(),
            T::KwFor => self.for_stmt(),
            T::KwAsync if self.peek_at(1) == T::KwFor => {
                self.bump();
                self.for_stmt()
            }
            T::KwAsync if self.peek_at(1) == T::KwWith => {
                self.bump();
                self.with_stmt(true)
            }
            T::KwTry => self.try_stmt(),
            T::KwWith if !matches!(self.peek_at(1), T::KwEntry | T::KwExit) => {
                self.with_stmt(false)
            }
            T::KwMatch => self.match_stmt(),
            T::KwForever => {
                self.bump();
                StmtKind::Forever { body: self.block() }
            }
            T::KwReturn => {
                self.bump();
                let value = if self.at_stmt_end() {
                    None
                } else {
                    Some(self.expr())
                };
                self.end_stmt(false);
                StmtKind::Return(value)
            }
            T::KwRaise => {
                self.bump();
                let (exc, cause) = if self.at_stmt_end() {
                    (None, None)
                } else {
                    let exc = self.expr();
                    let cause = if self.eat(T::KwFrom) {
                        Some(self.expr())
                    } else {
                        None
                    };
                    (Some(exc), cause)
                };
                self.end_stmt(false);
                StmtKind::Raise { exc, cause }
            }
            T::KwAssert => {
                self.bump();
                let cond = self.expr();
                let msg = if self.eat(T::Comma) {
                    Some(self.expr())
                } else {
                    None
                };
                self.end_stmt(false);
                StmtKind::Assert { cond, msg }
            }
            T::KwDel => self.del_stmt(),
            T::KwBreak | T::KwContinue | T::KwSkip | T::KwDisengage => {
                let kind = match self.bump().kind {
                    T::KwBreak => StmtKind::Break,
                    T::KwContinue => StmtKind::Continue,
                    T::KwSkip => StmtKind::Skip,
                    _ => StmtKind::Disengage,
                };
                self.end_stmt(false);
                kind
            }
            T::KwVisit => self.visit_stmt(),
            T::KwReport => {
                self.bump();
                let e = self.expr();
                self.end_stmt(false);
                StmtKind::Report(e)
            }
            T::Arrow => {
                self.bump();
                let ty = self.type_expr();
                let body = self.block();
                StmtKind::TypedContext { ty, body }
            }
            T::KwHas => {
                let s = self.span();
                self.error(
                    Code::E0001,
                    "`has` declarations belong directly in an archetype body",
                    s,
                );
                self.sync_stmt();
                StmtKind::Error
            }
            T::KwElif | T::KwElse | T::KwExcept | T::KwFinally => {
                let s = self.span();
                let word = self.cur_text();
                self.error(
                    Code::E0001,
                    format!("`{word}` without a matching statement before it"),
                    s,
                );
                self.bump();
                self.sync_stmt();
                StmtKind::Error
            }
            T::Name if self.at_soft("switch") && self.switch_follows() => self.switch_stmt(),
            T::Name
                if (self.at_soft("global") || self.at_soft("nonlocal"))
                    && self.peek_at(1) == T::Name =>
            {
                let s = self.span();
                self.error(
                    Code::E0001,
                    "`global`/`nonlocal` were removed: plain assignment rebinds the enclosing \
                     variable or `glob`",
                    s,
                );
                self.sync_stmt();
                StmtKind::Error
            }
            T::Str(_) if self.plain_str_at(self.pos) && self.item_start_at(self.after_strs()) => {
                let doc = self.docstring();
                self.item_stmt(doc)
            }
            k if self.item_start_kind(k) => self.item_stmt(None),
            _ => return self.expr_stmt(start),
        };
        Stmt {
            kind,
            span: self.sp(start),
        }
    }

    /// True if a declaration allowed inside a block starts at token `i`.
    fn item_start_at(&self, i: usize) -> bool {
        let k = self.tok_at(i).kind;
        self.item_start_kind_at(k, i)
    }

    fn item_start_kind(&self, k: T) -> bool {
        self.item_start_kind_at(k, self.pos)
    }

    fn item_start_kind_at(&self, k: T, i: usize) -> bool {
        match k {
            T::At
            | T::KwObj
            | T::KwNode
            | T::KwEdge
            | T::KwWalker
            | T::KwClass
            | T::KwEnum
            | T::KwDef
            | T::KwCan
            | T::KwOverride
            | T::KwImpl
            | T::KwGlob
            | T::KwImport
            | T::KwInclude => true,
            T::KwStatic => matches!(self.tok_at(i + 1).kind, T::KwDef | T::KwCan | T::KwAsync),
            T::KwAsync => matches!(
                self.tok_at(i + 1).kind,
                T::KwDef | T::KwCan | T::KwObj | T::KwNode | T::KwEdge | T::KwWalker | T::KwClass
            ),
            _ => false,
        }
    }

    fn item_stmt(&mut self, doc: Option<String>) -> StmtKind {
        match self.item(doc) {
            Some(item) => StmtKind::Item(Box::new(item)),
            None => StmtKind::Error,
        }
    }

    /// Expression statement, assignment (plain, chained, typed) or augmented assignment.
    fn expr_stmt(&mut self, start: u32) -> Stmt {
        let e = self.expr();
        let kind = match self.peek() {
            T::Colon => {
                self.bump();
                let ty = self.type_expr();
                if self.eat(T::Assign) {
                    let value = self.expr();
                    StmtKind::Assign {
                        targets: vec![e],
                        ty: Some(ty),
                        value,
                    }
                } else {
                    StmtKind::Declare { target: e, ty }
                }
            }
            T::Assign => {
                self.bump();
                let mut targets = vec![e];
                let mut value = self.expr();
                while self.eat(T::Assign) {
                    targets.push(value);
                    value = self.expr();
                }
                StmtKind::Assign {
                    targets,
                    ty: None,
                    value,
                }
            }
            k => match aug_op(k) {
                Some(op) => {
                    self.bump();
                    let value = self.expr();
                    StmtKind::AugAssign {
                        target: e,
                        op,
                        value,
                    }
                }
                None => {
                    self.end_stmt(true);
                    return Stmt {
                        kind: StmtKind::Expr(e),
                        span: self.sp(start),
                    };
                }
            },
        };
        self.end_stmt(false);
        Stmt {
            kind,
            span: self.sp(start),
        }
    }

    fn else_block(&mut self) -> Option<Vec<Stmt>> {
        if self.eat(T::KwElse) {
            Some(self.block())
        } else {
            None
        }
    }

    fn if_stmt(&mut self) -> StmtKind {
        self.bump(); // if
        let cond = self.expr();
        let body = self.block();
        let mut elifs = Vec::new();
        let mut orelse = None;
        loop {
            if self.eat(T::KwElif) || (self.peek() == T::KwElse && self.peek_at(1) == T::KwIf) {
                if self.peek() == T::KwIf {
                    self.bump();
                }
                let c = self.expr();
                let b = self.block();
                elifs.push((c, b));
            } else if self.eat(T::KwElse) {
                orelse = Some(self.block());
                break;
            } else {
                break;
            }
        }
        StmtKind::If {
            cond,
            body,
            elifs,
            orelse,
        }
    }

    fn while_stmt(&mut self) -> StmtKind {
        self.bump(); // while
        let cond = self.expr();
        let body = self.block();
        let orelse = self.else_block();
        StmtKind::While { cond, body, orelse }
    }

    /// `for t in e { }`, and the iter-for forms `for i = 0 while c with i += 1 { }` and
    /// `for i = 0 to c by i += 1 { }` (`to`/`by` are contextual here).
    /// `with e1 as t1, e2 { ... }` (`async with` when `is_async`).
    fn with_stmt(&mut self, is_async: bool) -> StmtKind {
        self.bump(); // with
        let mut items = Vec::new();
        loop {
            let at = self.with_target_as();
            let outer = std::mem::replace(&mut self.with_as, at);
            let manager = self.expr();
            self.with_as = outer;
            let target = if self.eat(T::KwAs) {
                Some(self.expr())
            } else {
                None
            };
            items.push(crate::ast::WithItem { manager, target });
            if !self.eat(T::Comma) {
                break;
            }
        }
        let body = self.block();
        StmtKind::With {
            items,
            body,
            is_async,
        }
    }

    /// The token index of the `as` that names the target of the `with` item starting at
    /// the cursor: the last `as` outside brackets before the item's `,` or the body's
    /// `{` (a `{` that starts the item is a display). Any other `as` in the manager is a
    /// cast (`with f(x as int) as y`, `with x as int as y`).
    fn with_target_as(&self) -> Option<usize> {
        let mut depth = 0usize;
        let mut found = None;
        let mut i = self.pos;
        loop {
            match self.tok_at(i).kind {
                T::Eof => return found,
                T::LBrace if depth == 0 && i != self.pos => return found,
                T::LParen | T::LBracket | T::LBracketQ | T::LBrace => depth += 1,
                T::RParen | T::RBracket | T::RBrace => {
                    if depth == 0 {
                        return found;
                    }
                    depth -= 1;
                }
                T::Comma | T::Semi if depth == 0 => return found,
                T::KwAs if depth == 0 => found = Some(i),
                _ => {}
            }
            i += 1;
        }
    }

    fn for_stmt(&mut self) -> StmtKind {
        self.bump(); // for
        let tstart = self.start();
        let target = self.for_target();
        if self.eat(T::KwIn) {
            let iter = self.expr();
            let body = self.block();
            let orelse = self.else_block();
            return StmtKind::For {
                target,
                iter,
                body,
                orelse,
            };
        }
        if !self.eat(T::Assign) {
            self.err_expected("`in` or `=` after the loop variable");
            self.sync_stmt();
            return StmtKind::Error;
        }
        let value = self.expr();
        let init = Stmt {
            kind: StmtKind::Assign {
                targets: vec![target],
                ty: None,
                value,
            },
            span: self.sp(tstart),
        };
        let old_form = if self.eat(T::KwWhile) {
            false
        } else if self.at_soft("to") {
            self.bump();
            true
        } else {
            self.err_expected("`while` (iter-for: `for i = 0 while i < n with i += 1 { }`)");
            self.sync_stmt();
            return StmtKind::Error;
        };
        let cond = self.expr();
        if old_form {
            if self.at_soft("by") {
                self.bump();
            } else {
                self.err_expected("`by`");
            }
        } else {
            self.expect(T::KwWith);
        }
        let sstart = self.start();
        let step = self.step_stmt(sstart);
        let body = self.block();
        let orelse = self.else_block();
        StmtKind::IterFor {
            init: Box::new(init),
            cond,
            step: Box::new(step),
            body,
            orelse,
        }
    }

    /// The step of an iter-for: `i += 1`, `i = i + 1`, or an expression.
    fn step_stmt(&mut self, start: u32) -> Stmt {
        let e = self.expr();
        let kind = if let Some(op) = aug_op(self.peek()) {
            self.bump();
            StmtKind::AugAssign {
                target: e,
                op,
                value: self.expr(),
            }
        } else if self.eat(T::Assign) {
            StmtKind::Assign {
                targets: vec![e],
                ty: None,
                value: self.expr(),
            }
        } else {
            StmtKind::Expr(e)
        };
        Stmt {
            kind,
            span: self.sp(start),
        }
    }

    fn try_stmt(&mut self) -> StmtKind {
        self.bump(); // try
        let body = self.block();
        let mut handlers = Vec::new();
        while self.peek() == T::KwExcept {
            let hstart = self.start();
            self.bump();
            let (ty, name) = if self.peek() == T::LBrace {
                (None, None)
            } else {
                let ty = self.type_expr();
                let name = if self.eat(T::KwAs) {
                    Some(self.expect_name("a name after `as`"))
                } else {
                    None
                };
                (Some(ty), name)
            };
            let hbody = self.block();
            handlers.push(ExceptHandler {
                ty,
                name,
                body: hbody,
                span: self.sp(hstart),
            });
        }
        let orelse = self.else_block();
        let finally = if self.eat(T::KwFinally) {
            Some(self.block())
        } else {
            None
        };
        if handlers.is_empty() && finally.is_none() {
            self.err_expected("`except` or `finally` after the `try` block");
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finally,
        }
    }

    fn del_stmt(&mut self) -> StmtKind {
        let start = self.start();
        self.bump(); // del
        let first = self.expr();
        if self.peek().is_edge_op_start() {
            let s = self.span();
            self.error(
                Code::E0026,
                "prefix `del a --> b` is not supported: write the infix disconnect `a del --> b;`",
                crate::span::Span { start, end: s.end },
            );
            self.sync_stmt();
            return StmtKind::Error;
        }
        let target = if self.peek() == T::Comma {
            let mut items = vec![first];
            while self.eat(T::Comma) {
                if self.at_stmt_end() {
                    break;
                }
                items.push(self.expr());
            }
            self.expr_at(ExprKind::Tuple(items), start)
        } else {
            first
        };
        self.end_stmt(false);
        StmtKind::Delete(target)
    }

    fn visit_stmt(&mut self) -> StmtKind {
        self.bump(); // visit
        let index = if self.eat(T::Colon) {
            let e = self.expr();
            self.expect(T::Colon);
            Some(e)
        } else {
            None
        };
        let target = self.expr();
        let orelse = if self.eat(T::KwElse) {
            Some(self.block())
        } else {
            self.end_stmt(false);
            None
        };
        StmtKind::Visit {
            index,
            target,
            orelse,
        }
    }

    fn match_stmt(&mut self) -> StmtKind {
        self.bump(); // match
        let subject = self.expr();
        let mut cases = Vec::new();
        if self.peek() != T::LBrace {
            self.err_expected("`{`");
            self.sync_stmt();
            return StmtKind::Match { subject, cases };
        }
        let open = self.bump().span;
        loop {
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            if !self.at_soft("case") {
                let before = self.pos;
                self.err_expected("`case`");
                self.sync_stmt();
                if self.pos == before {
                    self.bump();
                }
                continue;
            }
            let cstart = self.start();
            self.bump(); // case
            let pattern: Expr = self.binary(0);
            let guard = if self.eat(T::KwIf) {
                Some(self.expr())
            } else {
                None
            };
            self.expect(T::Colon);
            let mut body = Vec::new();
            loop {
                if matches!(self.peek(), T::RBrace | T::Eof) || self.at_soft("case") {
                    break;
                }
                let before = self.pos;
                body.push(self.stmt());
                if self.pos == before {
                    self.bump();
                }
            }
            cases.push(MatchCase {
                pattern,
                guard,
                body,
                span: self.sp(cstart),
            });
        }
        self.close_brace(open);
        StmtKind::Match { subject, cases }
    }
}
