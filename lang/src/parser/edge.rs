//! Object-spatial syntax: edge references `[a ->:E:x > 1:-> b]`, edge operators, `[?:T, a > 1]`
//! filters, and the connect / disconnect operators (`++>`, `+>: E(..) :+>`, `del -->`).

use super::Parser;
use super::expr::{BP_BITOR, BP_CMP, BP_CONNECT};
use crate::ast::{
    CmpOp, ConnectOp, EdgeDir, EdgeOp, EdgeRef, Expr, ExprKind, FieldCond, Filter, Hop, Name,
};
use crate::diag::Code;
use crate::lexer::TokenKind as T;
use std::rc::Rc;

impl<'a> Parser<'a> {
    /// The rest of an edge reference after `[` (and after `first`, the anchor, if already
    /// parsed), up to and including `]`.
    pub(super) fn edge_ref(&mut self, start: u32, first: Option<Expr>) -> Expr {
        let mut edges = false;
        let mut anchor = first;
        if anchor.is_none() {
            match self.peek() {
                T::KwEdge => {
                    self.bump();
                    edges = true;
                }
                T::KwNode => {
                    self.bump();
                }
                _ => {}
            }
            if !self.peek().is_edge_op_start() && !matches!(self.peek(), T::RBracket | T::Eof) {
                anchor = Some(self.expr());
            }
        }
        let mut hops = Vec::new();
        while self.peek().is_edge_op_start() {
            let hstart = self.start();
            let op = self.edge_op();
            let mut filter = None;
            if self.peek() == T::LBracketQ {
                filter = Some(self.filter());
            } else if self.peek() == T::LParen && self.peek_at(1) == T::Question {
                filter = Some(self.legacy_filter());
            }
            let pin = if matches!(
                self.peek(),
                T::Name | T::KwSelf | T::KwRoot | T::KwHere | T::KwSuper | T::KwVisitor | T::LParen
            ) {
                Some(Box::new(self.chain()))
            } else {
                None
            };
            hops.push(Hop {
                op,
                filter,
                pin,
                span: self.sp(hstart),
            });
        }
        if hops.is_empty() {
            self.err_expected("an edge operator (`-->`, `<--`, `<-->`, `->:E:->`, `<-:E:<-`)");
        }
        self.close(T::RBracket);
        self.expr_at(
            ExprKind::EdgeRef(EdgeRef {
                edges,
                anchor: anchor.map(Box::new),
                hops,
            }),
            start,
        )
    }

    /// One edge operator: `-->`, `<--`, `<-->`, or `->:` / `<-:` [Type] [`:` conds] `:->` / `:<-`.
    pub(super) fn edge_op(&mut self) -> EdgeOp {
        let start = self.start();
        let t = self.bump();
        let simple = |dir| EdgeOp {
            dir,
            edge_type: None,
            conds: Vec::new(),
            span: t.span,
        };
        match t.kind {
            T::ArrowR => simple(EdgeDir::Out),
            T::ArrowL => simple(EdgeDir::In),
            T::ArrowBi => simple(EdgeDir::Any),
            T::ArrowRP1 | T::ArrowLP1 => {
                let edge_type = if self.peek() == T::Name {
                    Some(Box::new(self.dotted_name()))
                } else {
                    None
                };
                let mut conds = Vec::new();
                if self.eat(T::Colon) {
                    loop {
                        if matches!(self.peek(), T::ArrowRP2 | T::ArrowLP2 | T::Eof) {
                            break;
                        }
                        conds.push(self.field_cond());
                        if !self.eat(T::Comma) {
                            break;
                        }
                    }
                }
                let dir = match (t.kind, self.peek()) {
                    (T::ArrowRP1, T::ArrowRP2) => EdgeDir::Out,
                    (T::ArrowLP1, T::ArrowLP2) => EdgeDir::In,
                    (_, T::ArrowRP2 | T::ArrowLP2) => EdgeDir::Any,
                    _ => {
                        let dir = if t.kind == T::ArrowRP1 {
                            EdgeDir::Out
                        } else {
                            EdgeDir::In
                        };
                        self.err_expected(if t.kind == T::ArrowRP1 {
                            "`:->`"
                        } else {
                            "`:<-`"
                        });
                        return EdgeOp {
                            dir,
                            edge_type,
                            conds,
                            span: self.sp(start),
                        };
                    }
                };
                self.bump();
                EdgeOp {
                    dir,
                    edge_type,
                    conds,
                    span: self.sp(start),
                }
            }
            _ => {
                self.error(Code::E0001, "expected an edge operator", t.span);
                simple(EdgeDir::Out)
            }
        }
    }

    /// `Name {. Name}` as a name or attribute expression (edge type slots).
    fn dotted_name(&mut self) -> Expr {
        let start = self.start();
        let t = self.bump();
        let n = self.name_of(t);
        let mut e = Expr::new(ExprKind::Name(n.name), t.span);
        while self.peek() == T::Dot && self.peek_at(1) == T::Name {
            self.bump();
            let t = self.bump();
            let name = self.name_of(t);
            e = self.expr_at(
                ExprKind::Attr {
                    obj: Box::new(e),
                    name,
                    null_safe: false,
                },
                start,
            );
        }
        e
    }

    /// One `field op value` condition.
    fn field_cond(&mut self) -> FieldCond {
        let start = self.start();
        let e = self.binary(BP_CMP);
        let span = self.sp(start);
        if let ExprKind::Compare { left, mut ops } = e.kind
            && ops.len() == 1
            && let ExprKind::Name(field) = &left.kind
            && let Some((op, value)) = ops.pop()
        {
            return FieldCond {
                field: Name {
                    name: field.clone(),
                    span: left.span,
                },
                op,
                value,
                span,
            };
        }
        self.error(
            Code::E0001,
            "expected a condition of the form `field op value` (e.g. `age >= 18`)",
            span,
        );
        FieldCond {
            field: Name {
                name: Rc::from(""),
                span,
            },
            op: CmpOp::Eq,
            value: Expr::error(span),
            span,
        }
    }

    /// A `[?:T, a > 1]` filter, at its `[?` token.
    pub(super) fn filter(&mut self) -> Filter {
        let start = self.start();
        self.bump(); // [?
        self.filter_body(T::RBracket, start)
    }

    /// The removed `(?:T)` filter form, at its `(`: parsed for recovery, reported as E0048.
    pub(super) fn legacy_filter(&mut self) -> Filter {
        let start = self.start();
        self.bump(); // (
        self.bump(); // ?
        let f = self.filter_body(T::RParen, start);
        self.error(
            Code::E0048,
            "the `(?...)` filter form was removed: use `[?...]`, e.g. `[-->[?:T]]`",
            f.span,
        );
        f
    }

    fn filter_body(&mut self, close: T, start: u32) -> Filter {
        if !self.enter() {
            self.leave();
            return Filter {
                ty: None,
                conds: Vec::new(),
                span: self.sp(start),
            };
        }
        let f = self.filter_body_inner(close, start);
        self.leave();
        f
    }

    fn filter_body_inner(&mut self, close: T, start: u32) -> Filter {
        let mut ty = None;
        if self.eat(T::Colon) {
            ty = Some(Box::new(self.binary(BP_BITOR)));
            self.eat(T::Comma);
        }
        let mut conds = Vec::new();
        loop {
            if self.peek() == close || self.peek() == T::Eof {
                break;
            }
            conds.push(self.field_cond());
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.close(close);
        Filter {
            ty,
            conds,
            span: self.sp(start),
        }
    }

    /// The right operand of a connect/disconnect operator, or E0026 when it is missing.
    fn connect_rhs(&mut self, op_text: &str) -> Expr {
        if matches!(
            self.peek(),
            T::Semi | T::RBrace | T::RParen | T::RBracket | T::Comma | T::Eof
        ) {
            let s = self.span();
            self.error(
                Code::E0026,
                format!("connect/disconnect operator `{op_text}` requires a right operand"),
                s,
            );
            return self.error_expr();
        }
        self.binary(BP_CONNECT + 1)
    }

    /// `left ++> right` and the other connect forms, at the operator.
    pub(super) fn connect(&mut self, left: Expr, start: u32) -> Expr {
        let t = self.bump();
        let (dir, edge, assigns) = match t.kind {
            T::CArrowR => (EdgeDir::Out, None, Vec::new()),
            T::CArrowL => (EdgeDir::In, None, Vec::new()),
            T::CArrowBi => (EdgeDir::Any, None, Vec::new()),
            _ => {
                let edge = self.expr();
                let assigns = if self.eat(T::Colon) {
                    self.assign_list(T::CArrowRP2)
                } else {
                    Vec::new()
                };
                let dir = match (t.kind, self.peek()) {
                    (T::CArrowRP1, T::CArrowRP2) => Some(EdgeDir::Out),
                    (T::CArrowLP1, T::CArrowLP2) => Some(EdgeDir::In),
                    (T::CArrowLP1, T::CArrowRP2) => Some(EdgeDir::Any),
                    _ => None,
                };
                let dir = match dir {
                    Some(d) => {
                        self.bump();
                        d
                    }
                    None => {
                        self.err_expected(if t.kind == T::CArrowRP1 {
                            "`:+>`"
                        } else {
                            "`:<+` or `:+>`"
                        });
                        if t.kind == T::CArrowRP1 {
                            EdgeDir::Out
                        } else {
                            EdgeDir::In
                        }
                    }
                };
                (dir, Some(Box::new(edge)), assigns)
            }
        };
        let op = ConnectOp {
            dir,
            edge,
            assigns,
            span: self.sp(t.span.start),
        };
        let op_text = t.kind.text().unwrap_or("++>");
        let right = self.connect_rhs(op_text);
        self.expr_at(
            ExprKind::Connect {
                left: Box::new(left),
                right: Box::new(right),
                op,
            },
            start,
        )
    }

    /// `left del --> right` (any edge operator), at `del`.
    pub(super) fn disconnect(&mut self, left: Expr, start: u32) -> Expr {
        self.bump(); // del
        let op = self.edge_op();
        let right = self.connect_rhs("del");
        self.expr_at(
            ExprKind::Disconnect {
                left: Box::new(left),
                right: Box::new(right),
                op,
            },
            start,
        )
    }
}
