//! The formatter: canonical indentation and spacing over the token stream, every comment
//! and docstring kept.
//!
//! It works token by token (no recursion), so it covers every construct the parser
//! accepts. Rules, in short: four spaces per block level; a block `{` ends its line and
//! its `}` stands on its own line (`} else {`, `} except ... {`, `} finally {` and
//! `} elif` stay on one line); `;` at block level ends the line; other line breaks of the
//! input are kept (continuation lines indented one level more, inside brackets one level
//! past the line that opened them), at most one blank line in a row, none after `{` or
//! before `}`; one space around binary operators, `=` and `->`, none inside brackets, after
//! unary operators, around `.` and in `f(key=value)`; `walker:pub` and `entry:__main__`
//! stay tight. Comments keep their text; a comment on its own line is re-indented, a
//! trailing one follows its code after two spaces.
//!
//! Input with a syntax error is refused (formatting guesses would move code). The output
//! is checked before it is returned: it must lex to the same token sequence as the input.

use super::{ToolError, parse_clean, tree};
use crate::ast::Module;
use crate::lexer::{self, Lexed, TokenKind as T};
use std::collections::HashSet;

const INDENT: &str = "    ";

/// Format svc source: idempotent, keeps every comment, output parses to the same tree.
pub fn format_source(src: &str) -> Result<String, ToolError> {
    super::on_big_stack(|| format_source_on_stack(src))
}

fn format_source_on_stack(src: &str) -> Result<String, ToolError> {
    let module = parse_clean(src)?;
    let lexed = lexer::lex(src);
    let inline = inline_braces(&module).map_err(|e| e.locate(src))?;
    let out = Formatter::new(src, &lexed, &inline).run();
    verify_same_tokens(src, &lexed, &out)?;
    Ok(out)
}

/// Byte offsets of the `{` tokens that open a dict, a set or an import list (not a block).
fn inline_braces(module: &Module) -> Result<HashSet<u32>, ToolError> {
    let t = tree::module_tree(module)?;
    let mut set = HashSet::new();
    let mut import_spans = Vec::new();
    t.each(|n| match n.kind {
        "Dict" | "Set" | "DictComp" | "SetComp" => {
            set.insert(n.span.start);
        }
        "Import" => import_spans.push(n.span),
        _ => {}
    });
    Ok(set.into_iter().chain(import_marks(&import_spans)).collect())
}

/// Imports are marked by their span start with the high bit set (see `Formatter::is_inline`).
fn import_marks(spans: &[crate::span::Span]) -> Vec<u32> {
    spans.iter().map(|s| s.start | IMPORT_BIT).collect()
}

const IMPORT_BIT: u32 = 1 << 31;

fn verify_same_tokens(src: &str, before: &Lexed, out: &str) -> Result<(), ToolError> {
    let after = lexer::lex(out);
    let same =
        before.tokens.len() == after.tokens.len()
            && before.tokens.iter().zip(&after.tokens).all(|(a, b)| {
                a.kind == b.kind || matches!((a.kind, b.kind), (T::Str(_), T::Str(_)))
            })
            && before.tokens.iter().zip(&after.tokens).all(|(a, b)| {
                src.get(a.span.start as usize..a.span.end as usize)
                    == out.get(b.span.start as usize..b.span.end as usize)
            });
    if same {
        Ok(())
    } else {
        Err(ToolError::new(
            "internal formatter error: the formatted code would not keep the same tokens; the input was left as it is",
        ))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FrameKind {
    Block,
    Paren,
    Bracket,
    /// `[?` filter.
    Filter,
    /// A dict/set/import `{`.
    Inline,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    kind: FrameKind,
    /// Indent of the lines inside the frame.
    inner: usize,
    /// Indent of the closing token's line.
    outer: usize,
    /// Offset of the opening token (so a block can tell `{}` from `{ ... }`).
    open_tok: usize,
    /// The block of a `match`: `case` lines at `inner`, their statements one deeper.
    is_match: bool,
}

/// One piece of the text between two tokens.
enum Trivia<'a> {
    Newlines(usize),
    Comment { text: &'a str, block: bool },
}

fn scan_gap(gap: &str) -> Vec<Trivia<'_>> {
    let b = gap.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut nl = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                nl += 1;
                i += 1;
            }
            b'#' => {
                if nl > 0 {
                    out.push(Trivia::Newlines(nl));
                    nl = 0;
                }
                let start = i;
                if b.get(i + 1) == Some(&b'*') {
                    i += 2;
                    while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'#')) {
                        i += 1;
                    }
                    i = (i + 2).min(b.len());
                    out.push(Trivia::Comment {
                        text: &gap[start..i],
                        block: true,
                    });
                } else {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    out.push(Trivia::Comment {
                        text: gap[start..i].trim_end(),
                        block: false,
                    });
                }
            }
            _ => i += 1,
        }
    }
    if nl > 0 {
        out.push(Trivia::Newlines(nl));
    }
    out
}

/// How two neighbouring tokens are separated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sep {
    /// Always a line break.
    Newline,
    /// Always on one line, with a space.
    Space,
    /// Always on one line, no space.
    Tight,
    /// A space, or the input's line break.
    SoftSpace,
    /// Nothing, or the input's line break.
    SoftTight,
}

struct Formatter<'a> {
    src: &'a str,
    toks: &'a [lexer::Token],
    inline: &'a HashSet<u32>,
    import_spans_open: Vec<u32>,
    out: String,
    frames: Vec<Frame>,
    /// Indent of the line being written.
    line_indent: usize,
    at_line_start: bool,
    /// The last written line was blank (or nothing is written yet).
    blank_ok: bool,
}

impl<'a> Formatter<'a> {
    fn new(src: &'a str, lexed: &'a Lexed, inline: &'a HashSet<u32>) -> Formatter<'a> {
        let mut import_spans_open: Vec<u32> = inline
            .iter()
            .filter(|o| *o & IMPORT_BIT != 0)
            .map(|o| o & !IMPORT_BIT)
            .collect();
        import_spans_open.sort_unstable();
        Formatter {
            src,
            toks: &lexed.tokens,
            inline,
            import_spans_open,
            out: String::with_capacity(src.len() + src.len() / 8),
            frames: Vec::new(),
            line_indent: 0,
            at_line_start: true,
            blank_ok: false,
        }
    }

    fn text(&self, i: usize) -> &'a str {
        let t = self.toks[i];
        self.src
            .get(t.span.start as usize..t.span.end as usize)
            .unwrap_or("")
    }

    fn kind(&self, i: usize) -> T {
        self.toks[i].kind
    }

    /// Whether the `{` at token `i` opens a dict, set or import list.
    fn is_inline(&self, i: usize) -> bool {
        let off = self.toks[i].span.start;
        if self.inline.contains(&off) {
            return true;
        }
        // An import's braces: the nearest `import`/`include` start before this `{` with
        // no `;` between.
        let k = self.import_spans_open.partition_point(|&s| s <= off);
        if k == 0 {
            return false;
        }
        let start = self.import_spans_open[k - 1];
        let mut j = i;
        while j > 0 {
            j -= 1;
            if self.toks[j].span.start < start {
                break;
            }
            if matches!(self.kind(j), T::Semi | T::LBrace | T::RBrace) {
                return false;
            }
        }
        true
    }

    fn top(&self) -> Option<FrameKind> {
        self.frames.last().map(|f| f.kind)
    }

    fn at_block_level(&self) -> bool {
        matches!(self.top(), None | Some(FrameKind::Block))
    }

    /// Indent of statements in the innermost block (or module).
    fn stmt_indent(&self) -> usize {
        self.frames.last().map_or(0, |f| f.inner)
    }

    fn newline(&mut self, blank: bool) {
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if self.out.is_empty() {
            self.at_line_start = true;
            return;
        }
        if !self.at_line_start {
            self.out.push('\n');
        }
        if blank && !self.blank_ok {
            self.out.push('\n');
            self.blank_ok = true;
        }
        self.at_line_start = true;
    }

    fn write(&mut self, s: &str, indent: usize) {
        if self.at_line_start {
            for _ in 0..indent {
                self.out.push_str(INDENT);
            }
            self.line_indent = indent;
            self.at_line_start = false;
            self.blank_ok = false;
        }
        self.out.push_str(s);
    }

    /// Whether a line starting at token `i` continues the statement before it.
    fn continues(&self, i: usize) -> bool {
        if !self.at_block_level() {
            return false;
        }
        let Some(p) = i.checked_sub(1) else {
            return false;
        };
        let pk = self.kind(p);
        if matches!(pk, T::Semi | T::Comma) || pk == T::LBrace || pk == T::RBrace {
            return false;
        }
        // A docstring stands alone: nothing continues it.
        if matches!(pk, T::Str(_))
            && (p == 0 || matches!(self.kind(p - 1), T::Semi | T::LBrace | T::RBrace))
        {
            return false;
        }
        if i >= self.toks.len() {
            return false;
        }
        !matches!(
            self.kind(i),
            T::At
                | T::KwDef
                | T::KwCan
                | T::KwObj
                | T::KwNode
                | T::KwEdge
                | T::KwWalker
                | T::KwClass
                | T::KwEnum
                | T::KwImpl
                | T::KwAsync
                | T::KwStatic
                | T::KwOverride
                | T::KwGlob
                | T::KwHas
                | T::RBrace
                | T::Eof
        )
    }

    /// Whether the block `{` at token `i` belongs to a `match` statement.
    fn opens_match(&self, i: usize) -> bool {
        let mut depth = 0i32;
        let mut j = i;
        while j > 0 && i - j < 256 {
            j -= 1;
            match self.kind(j) {
                T::RParen | T::RBracket | T::RBrace => depth += 1,
                T::LParen | T::LBracket | T::LBracketQ | T::LBrace if depth > 0 => depth -= 1,
                T::Semi | T::LBrace | T::Colon if depth == 0 => return false,
                T::KwMatch if depth == 0 => return true,
                _ => {}
            }
        }
        false
    }

    fn is_case(&self, i: usize) -> bool {
        self.kind(i) == T::Name && self.text(i) == "case"
    }

    fn indent_for(&self, i: usize) -> usize {
        let mut base = self.stmt_indent();
        if let Some(f) = self.frames.last()
            && f.is_match
            && !self.is_case(i)
            && self.kind(i) != T::RBrace
        {
            base += 1;
            if i > 0 && self.kind(i - 1) == T::Colon {
                return base;
            }
        }
        if self.continues(i) { base + 1 } else { base }
    }

    fn run(mut self) -> String {
        let mut prev_end = 0usize;
        for i in 0..self.toks.len() {
            let tok = self.toks[i];
            let gap = self
                .src
                .get(prev_end..tok.span.start as usize)
                .unwrap_or("");
            prev_end = tok.span.end as usize;
            let kind = tok.kind;
            // A closer leaves its frame before its line's indent is chosen.
            let closer_frame = if matches!(kind, T::RParen | T::RBracket | T::RBrace) {
                self.frames.pop()
            } else {
                None
            };
            let sep = if i == 0 {
                Sep::SoftTight
            } else {
                self.sep(i - 1, i, closer_frame)
            };
            self.trivia_and_sep(gap, sep, i, closer_frame);
            if kind == T::Eof {
                break;
            }
            let indent = match closer_frame {
                Some(f) => f.outer,
                None if self.at_line_start => self.indent_for(i),
                None => 0,
            };
            let text = self.text(i);
            self.write(text, indent);
            match kind {
                T::LParen | T::LBracket | T::LBracketQ => {
                    let k = match kind {
                        T::LParen => FrameKind::Paren,
                        T::LBracket => FrameKind::Bracket,
                        _ => FrameKind::Filter,
                    };
                    self.frames.push(Frame {
                        kind: k,
                        inner: self.line_indent + 1,
                        outer: self.line_indent,
                        open_tok: i,
                        is_match: false,
                    });
                }
                T::LBrace => {
                    let frame = if self.is_inline(i) {
                        Frame {
                            kind: FrameKind::Inline,
                            inner: self.line_indent + 1,
                            outer: self.line_indent,
                            open_tok: i,
                            is_match: false,
                        }
                    } else {
                        let base = if self.at_block_level() {
                            self.stmt_indent()
                        } else {
                            self.line_indent
                        };
                        Frame {
                            kind: FrameKind::Block,
                            inner: base + 1,
                            outer: base,
                            open_tok: i,
                            is_match: self.opens_match(i),
                        }
                    };
                    self.frames.push(frame);
                }
                _ => {}
            }
        }
        while self.out.ends_with([' ', '\n']) {
            self.out.pop();
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }

    /// Write the comments of a gap and the separator before token `i`.
    fn trivia_and_sep(&mut self, gap: &str, sep: Sep, i: usize, closer: Option<Frame>) {
        let trivia = scan_gap(gap);
        let first = self.out.is_empty();
        // Blank lines are dropped right after a block opens and right before it closes.
        let after_open = i > 0
            && self.kind(i - 1) == T::LBrace
            && self.top() == Some(FrameKind::Block)
            && self.frames.last().is_some_and(|f| f.open_tok == i - 1);
        let before_close = closer.is_some_and(|f| f.kind == FrameKind::Block);
        let mut nl_before = 0usize;
        let mut wrote_comment = false;
        let mut need_newline = false;
        for t in &trivia {
            match t {
                Trivia::Newlines(n) => nl_before += n,
                Trivia::Comment { text, block } => {
                    let own_line = first && !wrote_comment || nl_before > 0 || need_newline;
                    if own_line {
                        let blank = nl_before >= 2 && (wrote_comment || !after_open);
                        self.newline(blank && !first);
                        let indent = match closer {
                            Some(f) => f.inner,
                            None => self.indent_for(i),
                        };
                        self.write(text, indent);
                    } else {
                        self.out.push_str(if *block { " " } else { "  " });
                        self.out.push_str(text);
                    }
                    need_newline = !block;
                    wrote_comment = true;
                    nl_before = 0;
                }
            }
        }
        if self.kind(i) == T::Eof {
            return;
        }
        let blank_allowed = !after_open && !before_close && !first;
        let line_break = match sep {
            Sep::Newline => true,
            Sep::Space | Sep::Tight => need_newline,
            Sep::SoftSpace | Sep::SoftTight => need_newline || nl_before > 0,
        };
        if line_break {
            self.newline(nl_before >= 2 && blank_allowed);
        } else if (matches!(sep, Sep::Space | Sep::SoftSpace) || wrote_comment)
            && !self.at_line_start
        {
            self.out.push(' ');
        }
    }

    /// The separator between tokens `p` and `i`; `closer` is the frame token `i` closes.
    fn sep(&self, p: usize, i: usize, closer: Option<Frame>) -> Sep {
        let pk = self.kind(p);
        let k = self.kind(i);
        // Block structure first.
        if let Some(f) = closer
            && f.kind == FrameKind::Block
        {
            return if f.open_tok == p {
                Sep::Tight
            } else {
                Sep::Newline
            };
        }
        if pk == T::LBrace
            && let Some(f) = self.frames.last()
            && f.open_tok == p
            && f.kind == FrameKind::Block
        {
            return Sep::Newline;
        }
        if pk == T::RBrace && self.closed_block(p) {
            return match k {
                T::KwElse | T::KwElif | T::KwExcept | T::KwFinally => Sep::Space,
                T::Semi | T::Comma | T::RParen | T::RBracket | T::Dot | T::QDot => Sep::Tight,
                T::Eof => Sep::SoftTight,
                _ => {
                    if self.at_block_level() {
                        Sep::Newline
                    } else {
                        Sep::SoftSpace
                    }
                }
            };
        }
        if pk == T::Semi && self.at_block_level() {
            return Sep::Newline;
        }
        if k == T::Eof {
            return Sep::SoftTight;
        }
        if self.space_between(p, i) {
            Sep::SoftSpace
        } else {
            Sep::SoftTight
        }
    }

    /// Whether the `}` at token `p` closed a block (not a dict, set or import list).
    fn closed_block(&self, p: usize) -> bool {
        // Find the matching opener by scanning back with a depth count.
        let mut depth = 0i32;
        let mut j = p;
        loop {
            match self.kind(j) {
                T::RBrace => depth += 1,
                T::LBrace => {
                    depth -= 1;
                    if depth == 0 {
                        return !self.is_inline(j);
                    }
                }
                _ => {}
            }
            if j == 0 {
                return false;
            }
            j -= 1;
        }
    }

    fn is_unary_context(&self, p: usize) -> bool {
        let pk = self.kind(p);
        if is_value_end(pk) {
            return false;
        }
        // Keywords that end a value (`self`, `True`) were handled above; any other keyword
        // or operator leaves an operand expected.
        true
    }

    fn space_between(&self, p: usize, i: usize) -> bool {
        let pk = self.kind(p);
        let k = self.kind(i);
        let prev_text = self.text(p);
        let text = self.text(i);
        // Openers and closers.
        if matches!(pk, T::LParen | T::LBracket | T::LBracketQ) {
            return false;
        }
        if matches!(k, T::RParen | T::RBracket) {
            return false;
        }
        if pk == T::LBrace && self.top() == Some(FrameKind::Inline) {
            return false;
        }
        if k == T::RBrace {
            return false;
        }
        if matches!(k, T::Comma | T::Semi) {
            return false;
        }
        if matches!(pk, T::Comma | T::Semi) {
            return true;
        }
        if matches!(k, T::Dot | T::QDot) {
            return matches!(pk, T::KwFrom | T::KwImport | T::KwInclude);
        }
        if matches!(pk, T::Dot | T::QDot) {
            return false;
        }
        // Access tags and entry names: `walker:pub W`, `with entry:__main__`.
        if k == T::Colon
            && self.toks.get(i + 1).is_some_and(|n| {
                n.kind == T::Name
                    && matches!(
                        self.src.get(n.span.start as usize..n.span.end as usize),
                        Some("pub" | "priv" | "protect")
                    )
            })
            && pk.is_keyword()
        {
            return false;
        }
        if pk == T::Colon
            && k == T::Name
            && matches!(text, "pub" | "priv" | "protect")
            && p > 0
            && self.kind(p - 1).is_keyword()
        {
            return false;
        }
        // The index of `visit :i: target`.
        if k == T::Colon && pk == T::KwVisit {
            return true;
        }
        if pk == T::Colon && p > 0 && self.kind(p - 1) == T::KwVisit {
            return false;
        }
        if k == T::Colon && self.closes_visit_index(i) {
            return false;
        }
        if k == T::Colon && matches!(pk, T::KwEntry | T::KwExit) {
            return false;
        }
        if pk == T::Colon && p > 0 && matches!(self.kind(p - 1), T::KwEntry | T::KwExit) {
            return false;
        }
        // Slices and filters keep colons tight.
        if k == T::Colon || pk == T::Colon {
            if matches!(self.top(), Some(FrameKind::Bracket | FrameKind::Filter)) {
                return false;
            }
            return pk == T::Colon;
        }
        // Edge operators with a type: `->:E:->`, `+>:E:+>`.
        if matches!(pk, T::ArrowRP1 | T::ArrowLP1 | T::CArrowRP1 | T::CArrowLP1) {
            return false;
        }
        if matches!(k, T::ArrowRP2 | T::ArrowLP2 | T::CArrowRP2 | T::CArrowLP2) {
            return false;
        }
        // Null-safe index `x?[i]`.
        if k == T::Question && self.toks.get(i + 1).is_some_and(|t| t.kind == T::LBracket) {
            return false;
        }
        if pk == T::Question && k == T::LBracket {
            return false;
        }
        // Filters attach to what they filter.
        if k == T::LBracketQ {
            return false;
        }
        // Calls and indexing.
        if matches!(k, T::LParen | T::LBracket) {
            if is_value_end(pk) {
                return false;
            }
            return !self.is_unary_op_at(p);
        }
        if k == T::LBrace {
            if self.is_inline(i) {
                return !self.is_unary_op_at(p);
            }
            return true;
        }
        // Decorators: `@name`.
        if pk == T::At && self.is_decorator_at(p) {
            return false;
        }
        // Unary operators stick to their operand.
        if self.is_unary_op_at(p) {
            return false;
        }
        // Keyword arguments and parameter defaults without annotation: `f(x=1)`.
        if (k == T::Assign || pk == T::Assign) && self.top() == Some(FrameKind::Paren) {
            let eq = if k == T::Assign { i } else { p };
            if eq >= 2
                && (self.kind(eq - 1) == T::Name || self.kind(eq - 1).is_keyword())
                && matches!(self.kind(eq - 2), T::LParen | T::Comma)
            {
                return false;
            }
        }
        let _ = prev_text;
        true
    }

    /// Whether the `:` at token `i` closes the index of `visit :i: target`.
    fn closes_visit_index(&self, i: usize) -> bool {
        let mut j = i;
        while j > 0 && i - j < 64 {
            j -= 1;
            match self.kind(j) {
                T::Colon => return j > 0 && self.kind(j - 1) == T::KwVisit,
                T::Semi | T::LBrace | T::RBrace => return false,
                _ => {}
            }
        }
        false
    }

    /// Whether token `j` is a prefix operator (`-x`, `*args`, `**kw`, `~x`).
    fn is_unary_op_at(&self, j: usize) -> bool {
        matches!(
            self.kind(j),
            T::Minus | T::Plus | T::Tilde | T::Star | T::DoubleStar
        ) && (j == 0 || self.is_unary_context(j - 1))
            && !(self.kind(j) == T::Star
                && self.toks.get(j + 1).is_some_and(|t| t.kind == T::Comma))
    }

    fn is_decorator_at(&self, j: usize) -> bool {
        j == 0 || !is_value_end(self.kind(j - 1)) || self.starts_line(j)
    }

    fn starts_line(&self, j: usize) -> bool {
        let start = self.toks[j].span.start as usize;
        let prev_end = if j == 0 {
            0
        } else {
            self.toks[j - 1].span.end as usize
        };
        self.src
            .get(prev_end..start)
            .is_some_and(|g| g.contains('\n'))
    }
}

/// Tokens after which an operator is binary (they end an operand).
fn is_value_end(k: T) -> bool {
    matches!(
        k,
        T::Name
            | T::Int
            | T::Float
            | T::Str(_)
            | T::RParen
            | T::RBracket
            | T::RBrace
            | T::Ellipsis
            | T::KwTrue
            | T::KwFalse
            | T::KwNone
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

/// The comments of `src` in order (text trimmed), for tests.
#[cfg(test)]
pub(crate) fn comments(src: &str) -> Vec<String> {
    let lexed = lexer::lex(src);
    let mut out = Vec::new();
    let mut prev_end = 0usize;
    for t in &lexed.tokens {
        let gap = src.get(prev_end..t.span.start as usize).unwrap_or("");
        prev_end = t.span.end as usize;
        for tr in scan_gap(gap) {
            if let Trivia::Comment { text, .. } = tr {
                out.push(text.trim_end().to_string());
            }
        }
    }
    out
}
