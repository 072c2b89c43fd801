//! Expressions: lambda/ternary/walrus, precedence climbing for binary operators, atomic
//! chains (attributes, calls, indexing, filters), atoms, comprehensions and f-strings.

use super::Parser;
use crate::ast::{
    Arg, BinOp, BoolOp, CmpOp, Comprehension, DictItem, Expr, ExprKind, FStringPart, Name, PipeOp,
    SpecialRef, Stmt, StmtKind, UnaryOp,
};
use crate::diag::Code;
use crate::lexer::{self, FPiece, StrLit, TokenKind as T};
use crate::span::Span;

// Binding powers, loosest first (see grammar-notes §Expressions).
const BP_PIPE_FWD: u8 = 1;
const BP_PIPE_BACK: u8 = 2;
const BP_OR: u8 = 3;
const BP_AND: u8 = 4;
const BP_NOT: u8 = 5;
pub(super) const BP_CMP: u8 = 6;
const BP_AS: u8 = 7;
pub(super) const BP_BITOR: u8 = 8;
const BP_XOR: u8 = 9;
const BP_BITAND: u8 = 10;
const BP_SHIFT: u8 = 11;
const BP_ADD: u8 = 12;
const BP_MUL: u8 = 13;
const BP_UNARY: u8 = 14;
const BP_POW: u8 = 15;
pub(super) const BP_CONNECT: u8 = 16;
const BP_APIPE_FWD: u8 = 17;
const BP_APIPE_BACK: u8 = 18;
const BP_SPAWN: u8 = 19;

/// Operators of one left-leaning chain (or links of one postfix chain) that count as one
/// nesting level toward [`super::MAX_DEPTH`]: a chain may have up to
/// `MAX_DEPTH * CHAIN_PER_LEVEL` (5,000) operators, a tree depth every pass handles.
const CHAIN_PER_LEVEL: u32 = 25;

/// The binary operator of an augmented assignment token (`+=` → `Add`).
pub(super) fn aug_op(k: T) -> Option<BinOp> {
    Some(match k {
        T::PlusEq => BinOp::Add,
        T::MinusEq => BinOp::Sub,
        T::StarEq => BinOp::Mul,
        T::SlashEq => BinOp::Div,
        T::DoubleSlashEq => BinOp::FloorDiv,
        T::PercentEq => BinOp::Mod,
        T::DoubleStarEq => BinOp::Pow,
        T::AtEq => BinOp::MatMul,
        T::AmpEq => BinOp::BitAnd,
        T::PipeEq => BinOp::BitOr,
        T::CaretEq => BinOp::BitXor,
        T::LShiftEq => BinOp::LShift,
        T::RShiftEq => BinOp::RShift,
        _ => return None,
    })
}

fn special(k: T) -> Option<SpecialRef> {
    Some(match k {
        T::KwSelf => SpecialRef::SelfRef,
        T::KwSuper => SpecialRef::Super,
        T::KwHere => SpecialRef::Here,
        T::KwRoot => SpecialRef::Root,
        T::KwVisitor => SpecialRef::Visitor,
        T::KwInit => SpecialRef::Init,
        T::KwPostinit => SpecialRef::PostInit,
        T::KwProps => SpecialRef::Props,
        _ => return None,
    })
}

/// An infix operator class with the binding power of its right operand.
#[derive(Clone, Copy)]
enum Infix {
    Bin(BinOp, u8),
    Pipe(PipeOp, u8),
    Bool(BoolOp, u8),
    Cmp,
    Cast,
    Connect,
    Disconnect,
    Spawn,
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl<'a> Parser<'a> {
    /// A full expression (lambda, ternary and everything below).
    pub(super) fn expr(&mut self) -> Expr {
        if !self.enter() {
            self.leave();
            return self.error_expr();
        }
        let e = self.expr_inner();
        self.leave();
        e
    }

    fn expr_inner(&mut self) -> Expr {
        if self.peek() == T::KwLambda {
            return self.lambda();
        }
        if self.peek() == T::KwYield {
            return self.yield_expr();
        }
        let start = self.start();
        let e = self.walrus();
        if self.peek() == T::KwIf {
            self.bump();
            let cond = self.walrus();
            self.expect(T::KwElse);
            let orelse = self.expr();
            return self.expr_at(
                ExprKind::Ternary {
                    cond: bx(cond),
                    then: bx(e),
                    orelse: bx(orelse),
                },
                start,
            );
        }
        e
    }

    /// An expression without a top-level ternary or lambda (comprehension clauses).
    pub(super) fn walrus(&mut self) -> Expr {
        let start = self.start();
        let e = self.binary(0);
        if self.peek() != T::Walrus {
            return e;
        }
        self.bump();
        let value = self.binary(0);
        match e.kind {
            ExprKind::Name(name) => self.expr_at(
                ExprKind::Walrus {
                    name: Name { name, span: e.span },
                    value: bx(value),
                },
                start,
            ),
            _ => {
                self.error(Code::E0001, "the target of `:=` must be a name", e.span);
                self.expr_at(ExprKind::Error, start)
            }
        }
    }

    /// A type expression: `int`, `list[str]`, `A | B`, `mod.T`.
    pub(super) fn type_expr(&mut self) -> Expr {
        self.binary(BP_BITOR)
    }

    /// Precedence climbing over every binary level; `min` is the loosest level accepted.
    pub(super) fn binary(&mut self, min: u8) -> Expr {
        if !self.enter() {
            self.leave();
            return self.error_expr();
        }
        let e = self.binary_inner(min);
        self.leave();
        e
    }

    fn binary_inner(&mut self, min: u8) -> Expr {
        let start = self.start();
        let mut lhs = match self.peek() {
            T::KwNot => {
                self.bump();
                let operand = self.binary(BP_NOT);
                self.expr_at(
                    ExprKind::Unary {
                        op: UnaryOp::Not,
                        operand: bx(operand),
                    },
                    start,
                )
            }
            T::Minus | T::Plus | T::Tilde => {
                let op = match self.bump().kind {
                    T::Minus => UnaryOp::Neg,
                    T::Plus => UnaryOp::Pos,
                    _ => UnaryOp::Invert,
                };
                // Jac binds a unary sign tighter than `**`: `-2 ** 2 == 4`.
                let operand = self.binary(BP_POW + 1);
                self.expr_at(
                    ExprKind::Unary {
                        op,
                        operand: bx(operand),
                    },
                    start,
                )
            }
            T::Amp => {
                self.bump();
                let operand = self.binary(BP_POW + 1);
                self.expr_at(ExprKind::Ref(bx(operand)), start)
            }
            _ => self.unary_postfix(),
        };
        // A left-leaning chain (`1 + 2 + ... + n`) is parsed by this loop, not by
        // recursion, but the tree it builds is as deep as the chain and every later pass
        // walks it recursively: each CHAIN_PER_LEVEL operators count one nesting level.
        let mut wraps = 0u32;
        let mut levels = 0u32;
        while let Some(op) = self.infix(min) {
            wraps += 1;
            if wraps.is_multiple_of(CHAIN_PER_LEVEL) {
                levels += 1;
                if !self.enter() {
                    break;
                }
            }
            lhs = match op {
                Infix::Bin(op, rbp) => self.bin(lhs, op, rbp, start),
                Infix::Pipe(op, rbp) => self.pipe(lhs, op, rbp, start),
                Infix::Bool(op, rbp) => {
                    self.bump();
                    let right = self.binary(rbp);
                    self.expr_at(
                        ExprKind::BoolOp {
                            op,
                            left: bx(lhs),
                            right: bx(right),
                        },
                        start,
                    )
                }
                Infix::Cmp => self.compare_chain(lhs, start),
                Infix::Cast => {
                    self.bump();
                    let ty = self.binary(BP_BITOR);
                    self.expr_at(
                        ExprKind::Cast {
                            expr: bx(lhs),
                            ty: bx(ty),
                        },
                        start,
                    )
                }
                Infix::Connect => self.connect(lhs, start),
                Infix::Disconnect => self.disconnect(lhs, start),
                Infix::Spawn => {
                    self.bump();
                    let right = self.binary(BP_SPAWN + 1);
                    self.expr_at(
                        ExprKind::Spawn {
                            left: bx(lhs),
                            right: bx(right),
                        },
                        start,
                    )
                }
            };
        }
        self.leave_weighted(levels);
        lhs
    }

    /// The infix operator at the cursor if it binds at least as tightly as `min`.
    fn infix(&self, min: u8) -> Option<Infix> {
        let (op, bp) = match self.peek() {
            T::PipeFwd => (Infix::Pipe(PipeOp::Forward, BP_PIPE_FWD + 1), BP_PIPE_FWD),
            T::PipeBack => (
                Infix::Pipe(PipeOp::Backward, BP_PIPE_BACK + 1),
                BP_PIPE_BACK,
            ),
            T::KwOr => (Infix::Bool(BoolOp::Or, BP_OR + 1), BP_OR),
            T::KwAnd => (Infix::Bool(BoolOp::And, BP_AND + 1), BP_AND),
            T::EqEq | T::NotEq | T::Lt | T::Gt | T::LtE | T::GtE | T::KwIn | T::KwIs => {
                (Infix::Cmp, BP_CMP)
            }
            T::KwNot if self.peek_at(1) == T::KwIn => (Infix::Cmp, BP_CMP),
            T::KwAs if self.with_as != Some(self.pos) => (Infix::Cast, BP_AS),
            T::Pipe => (Infix::Bin(BinOp::BitOr, BP_BITOR + 1), BP_BITOR),
            T::Caret => (Infix::Bin(BinOp::BitXor, BP_XOR + 1), BP_XOR),
            T::Amp => (Infix::Bin(BinOp::BitAnd, BP_BITAND + 1), BP_BITAND),
            T::LShift => (Infix::Bin(BinOp::LShift, BP_SHIFT + 1), BP_SHIFT),
            T::RShift => (Infix::Bin(BinOp::RShift, BP_SHIFT + 1), BP_SHIFT),
            T::Plus => (Infix::Bin(BinOp::Add, BP_ADD + 1), BP_ADD),
            T::Minus => (Infix::Bin(BinOp::Sub, BP_ADD + 1), BP_ADD),
            T::Star => (Infix::Bin(BinOp::Mul, BP_MUL + 1), BP_MUL),
            T::Slash => (Infix::Bin(BinOp::Div, BP_MUL + 1), BP_MUL),
            T::DoubleSlash => (Infix::Bin(BinOp::FloorDiv, BP_MUL + 1), BP_MUL),
            T::Percent => (Infix::Bin(BinOp::Mod, BP_MUL + 1), BP_MUL),
            T::At => (Infix::Bin(BinOp::MatMul, BP_MUL + 1), BP_MUL),
            // Right-associative; the exponent may carry its own unary sign (`2 ** -1`).
            T::DoubleStar => (Infix::Bin(BinOp::Pow, BP_UNARY), BP_POW),
            T::CArrowR | T::CArrowL | T::CArrowBi | T::CArrowRP1 | T::CArrowLP1 => {
                (Infix::Connect, BP_CONNECT)
            }
            T::KwDel if self.peek_at(1).is_edge_op_start() => (Infix::Disconnect, BP_CONNECT),
            T::APipeFwd => (
                Infix::Pipe(PipeOp::AtomicForward, BP_APIPE_FWD + 1),
                BP_APIPE_FWD,
            ),
            T::APipeBack => (
                Infix::Pipe(PipeOp::AtomicBackward, BP_APIPE_BACK + 1),
                BP_APIPE_BACK,
            ),
            T::KwSpawn => (Infix::Spawn, BP_SPAWN),
            _ => return None,
        };
        (bp >= min).then_some(op)
    }

    fn bin(&mut self, left: Expr, op: BinOp, rbp: u8, start: u32) -> Expr {
        self.bump();
        let right = self.binary(rbp);
        self.expr_at(
            ExprKind::Binary {
                op,
                left: bx(left),
                right: bx(right),
            },
            start,
        )
    }

    fn pipe(&mut self, left: Expr, op: PipeOp, rbp: u8, start: u32) -> Expr {
        self.bump();
        let right = self.binary(rbp);
        self.expr_at(
            ExprKind::Pipe {
                op,
                left: bx(left),
                right: bx(right),
            },
            start,
        )
    }

    fn compare_chain(&mut self, left: Expr, start: u32) -> Expr {
        let mut ops = Vec::new();
        loop {
            let op = match (self.peek(), self.peek_at(1)) {
                (T::EqEq, _) => CmpOp::Eq,
                (T::NotEq, _) => CmpOp::NotEq,
                (T::Lt, _) => CmpOp::Lt,
                (T::Gt, _) => CmpOp::Gt,
                (T::LtE, _) => CmpOp::LtE,
                (T::GtE, _) => CmpOp::GtE,
                (T::KwIn, _) => CmpOp::In,
                (T::KwNot, T::KwIn) => {
                    self.bump();
                    CmpOp::NotIn
                }
                (T::KwIs, T::KwNot) => {
                    self.bump();
                    CmpOp::IsNot
                }
                (T::KwIs, _) => CmpOp::Is,
                _ => break,
            };
            self.bump();
            let right = self.binary(BP_AS);
            ops.push((op, right));
        }
        self.expr_at(
            ExprKind::Compare {
                left: bx(left),
                ops,
            },
            start,
        )
    }

    /// Prefix `*` unpack, `await`, prefix pipe call (`:> f` = `f()`), then an atomic chain.
    fn unary_postfix(&mut self) -> Expr {
        let start = self.start();
        match self.peek() {
            T::Star => {
                self.bump();
                let e = self.chain();
                self.expr_at(ExprKind::Starred(bx(e)), start)
            }
            T::KwAwait => {
                self.bump();
                let e = self.chain();
                self.expr_at(ExprKind::Await(bx(e)), start)
            }
            T::PipeFwd | T::APipeFwd => {
                self.bump();
                let func = self.chain();
                self.expr_at(
                    ExprKind::Call {
                        func: bx(func),
                        args: Vec::new(),
                    },
                    start,
                )
            }
            _ => self.chain(),
        }
    }

    /// An atom followed by `.name`, `?.name`, calls, indexing, `[?...]` filters, `(=...)`.
    pub(super) fn chain(&mut self) -> Expr {
        let start = self.start();
        let mut e = self.atom();
        // As in `binary_inner`: a long postfix chain (`a.b.c...`, `f()()()...`) deepens the
        // tree without recursing here, so it counts toward the nesting cap.
        let mut links = 0u32;
        let mut levels = 0u32;
        loop {
            links += 1;
            if links.is_multiple_of(CHAIN_PER_LEVEL) {
                levels += 1;
                if !self.enter() {
                    break;
                }
            }
            e = match self.peek() {
                T::Dot | T::QDot => {
                    let null_safe = self.bump().kind == T::QDot;
                    let name = self.attr_name();
                    self.expr_at(
                        ExprKind::Attr {
                            obj: bx(e),
                            name,
                            null_safe,
                        },
                        start,
                    )
                }
                T::Question if self.peek_at(1) == T::LBracket => {
                    self.bump();
                    self.index(e, start, true)
                }
                T::LParen => match self.peek_at(1) {
                    T::Assign => self.assign_comp(e, start),
                    T::Question => {
                        let filter = self.legacy_filter();
                        self.expr_at(ExprKind::Filter { obj: bx(e), filter }, start)
                    }
                    _ => self.call(e, start),
                },
                T::LBracketQ => {
                    let filter = self.filter();
                    self.expr_at(ExprKind::Filter { obj: bx(e), filter }, start)
                }
                T::LBracket => self.index(e, start, false),
                _ => break,
            };
        }
        self.leave_weighted(levels);
        e
    }

    fn attr_name(&mut self) -> Name {
        let k = self.peek();
        if k == T::Name || k.is_keyword() {
            let t = self.bump();
            return self.name_of(t);
        }
        self.err_expected("an attribute name");
        self.error_name()
    }

    /// Expect the closing bracket `kind`; on a mismatch report it and skip to it, without
    /// crossing a `;` or another unbalanced closer.
    pub(super) fn close(&mut self, kind: T) {
        if self.eat(kind) {
            return;
        }
        self.err_expected(&kind.describe());
        let mut depth = 0u32;
        loop {
            let k = self.peek();
            if k == T::Eof {
                return;
            }
            if depth == 0 {
                if k == kind {
                    self.bump();
                    return;
                }
                if matches!(k, T::Semi | T::RParen | T::RBracket | T::RBrace) {
                    return;
                }
            }
            match k {
                T::LParen | T::LBracket | T::LBracketQ | T::LBrace => depth += 1,
                T::RParen | T::RBracket | T::RBrace => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.bump();
        }
    }

    fn index(&mut self, obj: Expr, start: u32, null_safe: bool) -> Expr {
        self.bump(); // [
        let istart = self.start();
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            if matches!(self.peek(), T::RBracket | T::Eof) {
                break;
            }
            items.push(self.slice_item());
            trailing_comma = self.eat(T::Comma);
            if !trailing_comma {
                break;
            }
        }
        let index = if items.is_empty() {
            self.err_expected("an index");
            self.error_expr()
        } else if items.len() == 1 && !trailing_comma {
            items.pop().unwrap_or_else(|| self.error_expr())
        } else {
            self.expr_at(ExprKind::Tuple(items), istart)
        };
        self.close(T::RBracket);
        self.expr_at(
            ExprKind::Index {
                obj: bx(obj),
                index: bx(index),
                null_safe,
            },
            start,
        )
    }

    fn slice_item(&mut self) -> Expr {
        let start = self.start();
        let lower = if self.peek() == T::Colon {
            None
        } else {
            Some(self.expr())
        };
        if self.peek() != T::Colon {
            return lower.unwrap_or_else(|| self.error_expr());
        }
        self.bump();
        let upper = if matches!(self.peek(), T::Colon | T::RBracket | T::Comma) {
            None
        } else {
            Some(bx(self.expr()))
        };
        let step = if self.eat(T::Colon) && !matches!(self.peek(), T::RBracket | T::Comma) {
            Some(bx(self.expr()))
        } else {
            None
        };
        self.expr_at(
            ExprKind::Slice {
                lower: lower.map(bx),
                upper,
                step,
            },
            start,
        )
    }

    fn call(&mut self, func: Expr, start: u32) -> Expr {
        self.bump(); // (
        let mut args = Vec::new();
        loop {
            if matches!(self.peek(), T::RParen | T::Eof) {
                break;
            }
            args.push(self.call_arg());
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.close(T::RParen);
        self.expr_at(
            ExprKind::Call {
                func: bx(func),
                args,
            },
            start,
        )
    }

    fn call_arg(&mut self) -> Arg {
        let k = self.peek();
        if (k == T::Name || k.is_keyword()) && self.peek_at(1) == T::Assign {
            let t = self.bump();
            let name = self.name_of(t);
            self.bump();
            return Arg::Keyword(name, self.expr());
        }
        match k {
            T::Star => {
                self.bump();
                Arg::Star(self.expr())
            }
            T::DoubleStar => {
                self.bump();
                Arg::DoubleStar(self.expr())
            }
            _ => {
                let start = self.start();
                let e = self.expr();
                if self.peek() == T::KwFor {
                    let gens = self.comp_clauses();
                    Arg::Positional(self.expr_at(ExprKind::GenExp { elt: bx(e), gens }, start))
                } else {
                    Arg::Positional(e)
                }
            }
        }
    }

    fn assign_comp(&mut self, obj: Expr, start: u32) -> Expr {
        self.bump(); // (
        self.bump(); // =
        let assigns = self.assign_list(T::RParen);
        self.close(T::RParen);
        self.expr_at(
            ExprKind::AssignComp {
                obj: bx(obj),
                assigns,
            },
            start,
        )
    }

    /// `name = expr {, name = expr}` up to (not including) `end`.
    pub(super) fn assign_list(&mut self, end: T) -> Vec<(Name, Expr)> {
        let mut out = Vec::new();
        loop {
            let k = self.peek();
            if k == end || k == T::Eof {
                break;
            }
            if k != T::Name && !k.is_keyword() {
                self.err_expected("a field name");
                break;
            }
            let t = self.bump();
            let name = self.name_of(t);
            if !self.expect(T::Assign) {
                break;
            }
            let value = self.expr();
            out.push((name, value));
            if !self.eat(T::Comma) {
                break;
            }
        }
        out
    }

    fn atom(&mut self) -> Expr {
        let t = self.tok_at(self.pos);
        let lit = |p: &mut Self, kind: ExprKind| {
            p.bump();
            Expr::new(kind, t.span)
        };
        match t.kind {
            T::Int => {
                self.bump();
                let kind = self.int_lit(t.span);
                Expr::new(kind, t.span)
            }
            T::Float => {
                self.bump();
                let kind = self.float_lit(t.span);
                Expr::new(kind, t.span)
            }
            T::Str(_) => self.strings(),
            T::KwTrue => lit(self, ExprKind::Bool(true)),
            T::KwFalse => lit(self, ExprKind::Bool(false)),
            T::KwNone => lit(self, ExprKind::None),
            T::Ellipsis => lit(self, ExprKind::Ellipsis),
            T::Name => {
                self.bump();
                let n = self.name_of(t);
                Expr::new(ExprKind::Name(n.name), t.span)
            }
            T::KwNode | T::KwEdge | T::KwWalker | T::KwObj | T::KwClass | T::KwEnum => {
                // The archetype keywords name their base types in expressions.
                self.bump();
                let n = self.name_of(t);
                Expr::new(ExprKind::Name(n.name), t.span)
            }
            T::LParen => self.paren(),
            T::LBracket => self.bracket(),
            T::LBrace => self.brace(),
            T::KwLambda => self.lambda(),
            T::LBracketQ => {
                let start = self.start();
                self.error(
                    Code::E0001,
                    "a `[?...]` filter must follow the value it filters, e.g. `[-->][?:T]`",
                    t.span,
                );
                self.filter();
                self.expr_at(ExprKind::Error, start)
            }
            k => match special(k) {
                Some(s) => lit(self, ExprKind::Special(s)),
                None => {
                    self.err_expected("an expression");
                    self.error_expr()
                }
            },
        }
    }

    fn int_lit(&mut self, span: Span) -> ExprKind {
        let text = self.text(span);
        let clean: String = text.chars().filter(|c| *c != '_').collect();
        let lower = clean.to_ascii_lowercase();
        let (radix, digits) = if lower.starts_with("0x") {
            (16, clean.get(2..).unwrap_or(""))
        } else if lower.starts_with("0o") {
            (8, clean.get(2..).unwrap_or(""))
        } else if lower.starts_with("0b") {
            (2, clean.get(2..).unwrap_or(""))
        } else {
            (10, clean.as_str())
        };
        let bad_underscores = text.ends_with('_') || text.contains("__");
        if !digits.is_empty()
            && !bad_underscores
            && digits.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            if let Ok(v) = i64::from_str_radix(digits, radix) {
                return ExprKind::Int(v);
            }
            if let Some(big) = num_bigint::BigUint::parse_bytes(digits.as_bytes(), radix) {
                return ExprKind::BigInt(big.to_string());
            }
        }
        self.error(
            Code::E0001,
            format!("invalid integer literal `{text}`"),
            span,
        );
        ExprKind::Int(0)
    }

    fn float_lit(&mut self, span: Span) -> ExprKind {
        let text = self.text(span);
        let clean: String = text.chars().filter(|c| *c != '_').collect();
        match clean.parse::<f64>() {
            Ok(v) if !text.ends_with('_') && !text.contains("__") => ExprKind::Float(v),
            _ => {
                self.error(Code::E0001, format!("invalid float literal `{text}`"), span);
                ExprKind::Float(0.0)
            }
        }
    }

    /// One or more adjacent string tokens, concatenated; any f-string makes an `FString`,
    /// bytes literals (`b".."`) make `Bytes` and cannot be mixed with the others.
    fn strings(&mut self) -> Expr {
        let start = self.start();
        let mut buf = String::new();
        let mut parts = Vec::new();
        let mut is_f = false;
        // Whether the literals so far are bytes (`None` before the first).
        let mut kind: Option<bool> = None;
        while let T::Str(idx) = self.peek() {
            let t = self.bump();
            let lit = match self.lits.get_mut(idx as usize) {
                Some(l) => std::mem::replace(
                    l,
                    StrLit::Plain {
                        value: String::new(),
                        bytes: false,
                    },
                ),
                None => continue,
            };
            let this = matches!(lit, StrLit::Plain { bytes: true, .. });
            if kind.is_some_and(|k| k != this) {
                self.error(
                    Code::E0001,
                    "cannot mix bytes and nonbytes literals",
                    t.span,
                );
            }
            kind = Some(this);
            match lit {
                StrLit::Plain { value, .. } => buf.push_str(&value),
                StrLit::Format(pieces) => {
                    is_f = true;
                    self.fpieces(pieces, &mut buf, &mut parts);
                }
            }
        }
        if kind == Some(true) && !is_f {
            // Escapes give code points up to 0o777; a byte keeps the low eight bits, as
            // CPython does (non-ASCII source characters were refused by the lexer).
            let bytes: Vec<u8> = buf.chars().map(|c| (u32::from(c) & 0xff) as u8).collect();
            return self.expr_at(ExprKind::Bytes(std::rc::Rc::from(bytes)), start);
        }
        if !is_f {
            return self.expr_at(ExprKind::Str(std::rc::Rc::from(buf)), start);
        }
        if !buf.is_empty() {
            parts.push(FStringPart::Literal(buf));
        }
        self.expr_at(ExprKind::FString(parts), start)
    }

    fn fpieces(&mut self, pieces: Vec<FPiece>, buf: &mut String, parts: &mut Vec<FStringPart>) {
        for piece in pieces {
            match piece {
                FPiece::Lit(s) => buf.push_str(&s),
                FPiece::Field {
                    expr,
                    conversion,
                    spec,
                    debug,
                    ..
                } => {
                    if !buf.is_empty() {
                        parts.push(FStringPart::Literal(std::mem::take(buf)));
                    }
                    let e = self.sub_expr(expr);
                    let spec = spec.map(|sp| {
                        let mut b = String::new();
                        let mut v = Vec::new();
                        self.fpieces(sp, &mut b, &mut v);
                        if !b.is_empty() {
                            v.push(FStringPart::Literal(b));
                        }
                        v
                    });
                    parts.push(FStringPart::Expr {
                        expr: e,
                        conversion,
                        spec,
                        debug_text: debug,
                    });
                }
            }
        }
    }

    /// Parse the expression of an f-string field (a byte range of the file) with a fresh
    /// sub-parser, so its spans are file offsets.
    fn sub_expr(&mut self, span: Span) -> Expr {
        let lexed = lexer::lex_range(
            self.src,
            span.start as usize,
            span.end as usize,
            self.fdepth + 1,
        );
        let mut sub = Parser::new(self.src, lexed, self.fdepth + 1);
        sub.depth = self.depth;
        let e = sub.expr();
        if sub.peek() != T::Eof {
            sub.err_expected("`}` after the f-string expression");
        }
        self.diags.append(&mut sub.diags);
        if sub.too_deep {
            self.too_deep = true;
            self.pos = self.toks.len().saturating_sub(1);
        }
        e
    }

    /// `yield`, `yield v`, `yield from it`.
    fn yield_expr(&mut self) -> Expr {
        let start = self.start();
        self.bump(); // yield
        let from = self.eat(T::KwFrom);
        let value = if !from
            && matches!(
                self.peek(),
                T::Semi | T::RBrace | T::RParen | T::RBracket | T::Comma | T::Eof
            ) {
            None
        } else {
            Some(bx(self.expr()))
        };
        self.expr_at(ExprKind::Yield { value, from }, start)
    }

    fn paren(&mut self) -> Expr {
        let start = self.start();
        self.bump(); // (
        if self.eat(T::RParen) {
            return self.expr_at(ExprKind::Tuple(Vec::new()), start);
        }
        let first = self.expr();
        if self.peek() == T::KwFor {
            let gens = self.comp_clauses();
            self.close(T::RParen);
            return self.expr_at(
                ExprKind::GenExp {
                    elt: bx(first),
                    gens,
                },
                start,
            );
        }
        if self.peek() == T::Comma {
            let mut items = vec![first];
            while self.eat(T::Comma) {
                if matches!(self.peek(), T::RParen | T::Eof) {
                    break;
                }
                items.push(self.expr());
            }
            self.close(T::RParen);
            return self.expr_at(ExprKind::Tuple(items), start);
        }
        self.close(T::RParen);
        let mut e = first;
        e.span = self.sp(start);
        e
    }

    fn bracket(&mut self) -> Expr {
        let start = self.start();
        self.bump(); // [
        if self.eat(T::RBracket) {
            return self.expr_at(ExprKind::List(Vec::new()), start);
        }
        let k = self.peek();
        if k.is_edge_op_start()
            || (matches!(k, T::KwEdge | T::KwNode)
                && !matches!(self.peek_at(1), T::Comma | T::RBracket | T::Dot | T::LParen))
        {
            return self.edge_ref(start, None);
        }
        let first = self.expr();
        if self.peek().is_edge_op_start() {
            return self.edge_ref(start, Some(first));
        }
        if self.peek() == T::KwFor {
            let gens = self.comp_clauses();
            self.close(T::RBracket);
            return self.expr_at(
                ExprKind::ListComp {
                    elt: bx(first),
                    gens,
                },
                start,
            );
        }
        let mut items = vec![first];
        while self.eat(T::Comma) {
            if matches!(self.peek(), T::RBracket | T::Eof) {
                break;
            }
            items.push(self.expr());
        }
        self.close(T::RBracket);
        self.expr_at(ExprKind::List(items), start)
    }

    fn brace(&mut self) -> Expr {
        let start = self.start();
        self.bump(); // {
        if self.eat(T::RBrace) {
            return self.expr_at(ExprKind::Dict(Vec::new()), start);
        }
        if self.peek() == T::DoubleStar {
            return self.dict_rest(start, Vec::new());
        }
        let first = self.expr();
        if self.eat(T::Colon) {
            let value = self.expr();
            if self.peek() == T::KwFor {
                let gens = self.comp_clauses();
                self.close(T::RBrace);
                return self.expr_at(
                    ExprKind::DictComp {
                        key: bx(first),
                        value: bx(value),
                        gens,
                    },
                    start,
                );
            }
            let items = vec![DictItem::Pair(first, value)];
            if !self.eat(T::Comma) {
                self.close(T::RBrace);
                return self.expr_at(ExprKind::Dict(items), start);
            }
            return self.dict_rest(start, items);
        }
        if self.peek() == T::KwFor {
            let gens = self.comp_clauses();
            self.close(T::RBrace);
            return self.expr_at(
                ExprKind::SetComp {
                    elt: bx(first),
                    gens,
                },
                start,
            );
        }
        let mut items = vec![first];
        while self.eat(T::Comma) {
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            items.push(self.expr());
        }
        self.close(T::RBrace);
        self.expr_at(ExprKind::Set(items), start)
    }

    /// The remaining entries of a dict literal (after a `,`), then `}`.
    fn dict_rest(&mut self, start: u32, mut items: Vec<DictItem>) -> Expr {
        loop {
            if matches!(self.peek(), T::RBrace | T::Eof) {
                break;
            }
            if self.eat(T::DoubleStar) {
                items.push(DictItem::Spread(self.binary(BP_BITOR)));
            } else {
                let key = self.expr();
                self.expect(T::Colon);
                let value = self.expr();
                items.push(DictItem::Pair(key, value));
            }
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.close(T::RBrace);
        self.expr_at(ExprKind::Dict(items), start)
    }

    /// `for target in iter {if cond}` clauses of a comprehension.
    pub(super) fn comp_clauses(&mut self) -> Vec<Comprehension> {
        let mut gens = Vec::new();
        while self.peek() == T::KwFor || (self.peek() == T::KwAsync && self.peek_at(1) == T::KwFor)
        {
            let start = self.start();
            self.eat(T::KwAsync);
            self.bump(); // for
            let target = self.for_target();
            self.expect(T::KwIn);
            let iter = self.walrus();
            let mut conds = Vec::new();
            while self.eat(T::KwIf) {
                conds.push(self.walrus());
            }
            gens.push(Comprehension {
                target,
                iter,
                conds,
                span: self.sp(start),
            });
        }
        gens
    }

    /// A loop target, parsed below comparisons so `in` is left alone: `x`, `(i, u)`, `k, v`.
    pub(super) fn for_target(&mut self) -> Expr {
        let start = self.start();
        let first = self.binary(BP_BITOR);
        if self.peek() != T::Comma {
            return first;
        }
        let mut items = vec![first];
        while self.eat(T::Comma) {
            if matches!(self.peek(), T::KwIn | T::Assign | T::Eof) {
                break;
            }
            items.push(self.binary(BP_BITOR));
        }
        self.expr_at(ExprKind::Tuple(items), start)
    }

    /// `lambda (params) -> T { body }`; the colon form is rejected with E0022.
    fn lambda(&mut self) -> Expr {
        let start = self.start();
        self.bump(); // lambda
        let mut params = Vec::new();
        if self.peek() == T::LParen {
            params = self.param_list();
        } else {
            while matches!(self.peek(), T::Name | T::Star | T::DoubleStar) {
                params.push(self.bare_param());
                if !self.eat(T::Comma) {
                    break;
                }
            }
        }
        let ret = if self.eat(T::Arrow) {
            Some(bx(self.type_expr()))
        } else {
            None
        };
        let body = if self.peek() == T::LBrace {
            self.block()
        } else {
            let s = self.span();
            self.error(
                Code::E0022,
                "expected `{` after lambda parameters: lambdas take a braced body, e.g. \
                 `lambda (x: int) -> int { x + 1; }`",
                s,
            );
            if self.eat(T::Colon) {
                let e = self.expr();
                let span = e.span;
                vec![Stmt {
                    kind: StmtKind::Expr(e),
                    span,
                }]
            } else {
                Vec::new()
            }
        };
        self.expr_at(ExprKind::Lambda { params, ret, body }, start)
    }
}
