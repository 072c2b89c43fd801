//! Parser: hand-written recursive descent from tokens to the spanned AST, with error recovery.
//!
//! [`parse`] never fails and never panics: on a syntax error it records a diagnostic,
//! skips to a synchronisation point (`;`, the `}` closing the current block, or the next
//! top-level keyword), leaves an `Error` node and carries on, so one run reports several
//! errors. Nesting is capped at [`MAX_DEPTH`] levels so hostile input cannot overflow the
//! stack. Submodules: `expr` (precedence climbing, atoms, f-strings), `edge` (edge
//! references, connect operators, filters), `stmt` (statements and blocks), `item`
//! (declarations and the module).

mod edge;
mod expr;
mod item;
mod stmt;
mod switch;
#[cfg(test)]
mod tests;

use crate::ast::{Expr, ExprKind, Module, Name};
use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::lexer::{self, Lexed, StrLit, Token, TokenKind};
use crate::span::Span;
use std::collections::HashMap;
use std::rc::Rc;

/// Deepest nesting (expressions, statements, blocks) before the parser gives up on the rest
/// of the input with a diagnostic.
pub const MAX_DEPTH: u32 = 200;

/// The outcome of parsing one file: always a module, plus every diagnostic found.
#[derive(Debug)]
pub struct ParseResult {
    pub module: Module,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parse a whole source file. Never fails or panics.
pub fn parse(source: &str) -> ParseResult {
    let mut p = Parser::new(source, lexer::lex(source), 0);
    let module = p.module();
    ParseResult {
        module,
        diagnostics: p.finish(),
    }
}

/// Parse a single expression (for tests and a REPL); trailing tokens are an error.
pub fn parse_expr(source: &str) -> (Expr, Vec<Diagnostic>) {
    let mut p = Parser::new(source, lexer::lex(source), 0);
    let e = p.expr();
    if p.peek() != TokenKind::Eof {
        p.err_expected("end of expression");
    }
    (e, p.finish())
}

pub(crate) struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    lits: Vec<StrLit>,
    pos: usize,
    diags: Vec<Diagnostic>,
    /// Current nesting depth (recursion guard).
    depth: u32,
    /// How many f-string levels enclose this (sub-)parser.
    fdepth: u32,
    too_deep: bool,
    /// Token index of the last reported error, to avoid cascades at one spot.
    last_err: usize,
    names: HashMap<&'a str, Rc<str>>,
    /// Inside the body of a Python-style `class` (statements are class attributes).
    in_class: bool,
    /// Generic parameter names seen (and erased) so far.
    type_params: Vec<Rc<str>>,
    /// While a `with` item's manager is parsed: the token index of the item's `as` that
    /// names the target (the last `as` outside brackets), which is not a cast.
    with_as: Option<usize>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, lexed: Lexed, fdepth: u32) -> Parser<'a> {
        let Lexed {
            mut tokens,
            lits,
            diagnostics,
        } = lexed;
        if tokens.last().is_none_or(|t| t.kind != TokenKind::Eof) {
            let end = src.len();
            tokens.push(Token {
                kind: TokenKind::Eof,
                span: Span::new(end, end),
            });
        }
        Parser {
            src,
            toks: tokens,
            lits,
            pos: 0,
            diags: diagnostics,
            depth: 0,
            fdepth,
            too_deep: false,
            last_err: usize::MAX,
            names: HashMap::new(),
            in_class: false,
            type_params: Vec::new(),
            with_as: None,
        }
    }

    fn finish(mut self) -> Vec<Diagnostic> {
        self.diags.sort_by_key(|d| d.span.start);
        self.diags
    }

    // -----------------------------------------------------------------------------------
    // Token access
    // -----------------------------------------------------------------------------------

    fn tok_at(&self, i: usize) -> Token {
        match self.toks.get(i) {
            Some(t) => *t,
            None => {
                let end = self.src.len();
                Token {
                    kind: TokenKind::Eof,
                    span: Span::new(end, end),
                }
            }
        }
    }

    fn peek(&self) -> TokenKind {
        self.tok_at(self.pos).kind
    }

    fn peek_at(&self, n: usize) -> TokenKind {
        self.tok_at(self.pos + n).kind
    }

    fn span(&self) -> Span {
        self.tok_at(self.pos).span
    }

    fn start(&self) -> u32 {
        self.span().start
    }

    /// End offset of the last consumed token.
    fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            self.span().start
        } else {
            self.tok_at(self.pos - 1).span.end
        }
    }

    /// A span from `start` to the end of the last consumed token.
    fn sp(&self, start: u32) -> Span {
        let end = self.prev_end().max(start);
        Span { start, end }
    }

    fn bump(&mut self) -> Token {
        let t = self.tok_at(self.pos);
        if t.kind != TokenKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, kind: TokenKind) -> bool {
        if self.peek() == kind {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kind: TokenKind) -> bool {
        if self.eat(kind) {
            return true;
        }
        let what = kind.describe();
        self.err_expected(&what);
        false
    }

    fn text(&self, span: Span) -> &'a str {
        self.src
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    /// The source text of the current token.
    fn cur_text(&self) -> &'a str {
        self.text(self.span())
    }

    /// True if the current token is the soft keyword `word` (lexed as a name).
    fn at_soft(&self, word: &str) -> bool {
        self.peek() == TokenKind::Name && self.cur_text() == word
    }

    fn intern(&mut self, text: &'a str) -> Rc<str> {
        if let Some(rc) = self.names.get(text) {
            return rc.clone();
        }
        let rc: Rc<str> = Rc::from(text);
        self.names.insert(text, rc.clone());
        rc
    }

    /// A name from a consumed token (keyword-escaped names drop their backtick).
    fn name_of(&mut self, t: Token) -> Name {
        let text = self.text(t.span);
        let text = text.strip_prefix('`').unwrap_or(text);
        Name {
            name: self.intern(text),
            span: t.span,
        }
    }

    fn error_name(&self) -> Name {
        let s = self.span();
        Name {
            name: Rc::from(""),
            span: Span {
                start: s.start,
                end: s.start,
            },
        }
    }

    /// Consume a plain name, or report `expected {what}` and return an empty name.
    fn expect_name(&mut self, what: &str) -> Name {
        if self.peek() == TokenKind::Name {
            let t = self.bump();
            return self.name_of(t);
        }
        self.err_expected(what);
        self.error_name()
    }

    // -----------------------------------------------------------------------------------
    // Diagnostics and recovery
    // -----------------------------------------------------------------------------------

    fn error(&mut self, code: Code, msg: impl Into<String>, span: Span) {
        if span.start == self.span().start {
            self.last_err = self.pos;
        }
        self.diags.push(Diagnostic::error(code, msg, span));
    }

    /// True if a line break separates the current token from the previous one.
    fn on_new_line(&self) -> bool {
        let (a, b) = (self.prev_end() as usize, self.start() as usize);
        self.src
            .get(a.min(b)..b)
            .is_some_and(|gap| gap.contains('\n'))
    }

    /// Description of the current token for "found Y".
    fn found(&self) -> String {
        match self.peek() {
            TokenKind::Name => format!("`{}`", self.cur_text()),
            TokenKind::Int | TokenKind::Float => format!("number `{}`", self.cur_text()),
            k => k.describe(),
        }
    }

    /// `expected {what}, found {current}` (E0001), once per token position.
    fn err_expected(&mut self, what: &str) {
        if self.last_err == self.pos {
            return;
        }
        let msg = format!("expected {what}, found {}", self.found());
        let span = self.span();
        self.error(Code::E0001, msg, span);
    }

    /// Expect the `}` closing the block opened by the `{` at `open`. At the end of the
    /// file, the unclosed `{` is reported (once, for the innermost block).
    fn close_brace(&mut self, open: Span) {
        if self.eat(TokenKind::RBrace) {
            return;
        }
        if self.peek() != TokenKind::Eof {
            self.err_expected("`}`");
            return;
        }
        if self.last_err != self.pos {
            self.last_err = self.pos;
            self.diags.push(Diagnostic::error(
                Code::E0001,
                "this `{` is never closed: expected `}` before the end of the file",
                open,
            ));
        }
    }

    /// Skip to the end of the current statement: past a `;` at this level, before a `}`
    /// closing the enclosing block, or after a nested `{ ... }` block.
    fn sync_stmt(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.peek() {
                TokenKind::Eof => return,
                TokenKind::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                TokenKind::RBrace if depth == 0 => return,
                TokenKind::LBrace => {
                    depth += 1;
                    self.bump();
                }
                TokenKind::RBrace => {
                    depth -= 1;
                    self.bump();
                    if depth == 0 {
                        return;
                    }
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Enter one nesting level; false (after a diagnostic, with the input abandoned) when
    /// the cap is exceeded. Always pair with [`Parser::leave`].
    fn enter(&mut self) -> bool {
        self.enter_weighted(1)
    }

    /// Like [`Parser::enter`] for constructs with large stack frames (declarations):
    /// they count `w` levels toward the cap. Pair with [`Parser::leave_weighted`].
    fn enter_weighted(&mut self, w: u32) -> bool {
        self.depth += w;
        if self.depth > MAX_DEPTH {
            if !self.too_deep {
                self.too_deep = true;
                let span = self.span();
                self.error(
                    Code::E0001,
                    format!("nesting is too deep (more than {MAX_DEPTH} levels); the rest of the input is ignored"),
                    span,
                );
            }
            self.pos = self.toks.len().saturating_sub(1);
            return false;
        }
        true
    }

    fn leave(&mut self) {
        self.leave_weighted(1);
    }

    fn leave_weighted(&mut self, w: u32) {
        self.depth = self.depth.saturating_sub(w);
    }

    fn error_expr(&self) -> Expr {
        let s = self.span();
        Expr::error(Span {
            start: s.start,
            end: s.start,
        })
    }

    fn expr_at(&self, kind: ExprKind, start: u32) -> Expr {
        Expr::new(kind, self.sp(start))
    }
}
