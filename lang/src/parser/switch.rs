//! The `switch x { case v: ... default: ... }` statement (`switch` is a soft keyword).

use super::Parser;
use crate::ast::{StmtKind, SwitchCase};
use crate::lexer::TokenKind as T;

impl<'a> Parser<'a> {
    /// `switch` starts a statement when a subject follows it (a name or literal); a
    /// variable named `switch` (`switch = 1;`, `switch(x);`) stays an expression.
    pub(super) fn switch_follows(&self) -> bool {
        matches!(self.peek_at(1), T::Name | T::Int | T::Float | T::Str(_))
            && !matches!(self.peek_at(2), T::Assign | T::Semi)
    }

    pub(super) fn switch_stmt(&mut self) -> StmtKind {
        self.bump(); // switch
        let subject = self.expr();
        let mut cases = Vec::new();
        if self.peek() != T::LBrace {
            self.err_expected("`{`");
            self.sync_stmt();
            return StmtKind::Switch { subject, cases };
        }
        let open = self.bump().span;
        loop {
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            let is_default = self.at_soft("default") && self.peek_at(1) == T::Colon;
            if !self.at_soft("case") && !is_default {
                let before = self.pos;
                self.err_expected("`case` or `default`");
                self.sync_stmt();
                if self.pos == before {
                    self.bump();
                }
                continue;
            }
            let cstart = self.start();
            self.bump(); // case / default
            let value = if is_default {
                None
            } else {
                Some(self.binary(0))
            };
            self.expect(T::Colon);
            let mut body = Vec::new();
            loop {
                if matches!(self.peek(), T::RBrace | T::Eof)
                    || self.at_soft("case")
                    || (self.at_soft("default") && self.peek_at(1) == T::Colon)
                {
                    break;
                }
                let before = self.pos;
                body.push(self.stmt());
                if self.pos == before {
                    self.bump();
                }
            }
            cases.push(SwitchCase {
                value,
                body,
                span: self.sp(cstart),
            });
        }
        self.close_brace(open);
        StmtKind::Switch { subject, cases }
    }
}
