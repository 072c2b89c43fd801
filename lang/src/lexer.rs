//! Lexer: source text to a flat token vector (byte spans), string literals decoded into a side table.
//!
//! Tokens carry no owned text: names and numbers are read back from the source through
//! their span. String literals (plain, raw, triple-quoted, f-strings) are decoded here and
//! stored in [`Lexed::lits`]; a [`TokenKind::Str`] token holds the index. An f-string is kept
//! as pieces whose embedded expressions are byte ranges of the source, parsed later by the
//! parser. Lexing never fails: bad input yields diagnostics and the scan continues.

mod strings;
#[cfg(test)]
mod tests;

use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::span::Span;

pub use strings::{FPiece, StrLit};

/// Deepest nesting of strings inside f-string replacement fields.
const MAX_STRING_NESTING: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// An identifier (also builtin type words and soft keywords such as `to`, `by`, `case`).
    Name,
    Int,
    Float,
    /// A string literal; the payload indexes [`Lexed::lits`].
    Str(u32),

    // --- hard keywords ---
    KwObj,
    KwClass,
    KwEnum,
    KwNode,
    KwEdge,
    KwWalker,
    KwHas,
    KwCan,
    KwDef,
    KwStatic,
    KwOverride,
    KwImpl,
    KwAbst,
    KwGlob,
    KwImport,
    KwInclude,
    KwFrom,
    KwAs,
    KwIf,
    KwElif,
    KwElse,
    KwFor,
    KwWhile,
    KwForever,
    KwMatch,
    KwTry,
    KwExcept,
    KwFinally,
    KwWith,
    KwReturn,
    KwYield,
    KwBreak,
    KwContinue,
    KwRaise,
    KwDel,
    KwAssert,
    KwSkip,
    KwReport,
    KwVisit,
    KwSpawn,
    KwEntry,
    KwExit,
    KwDisengage,
    KwAsync,
    KwAwait,
    KwAnd,
    KwOr,
    KwNot,
    KwIn,
    KwIs,
    KwLambda,
    KwTrue,
    KwFalse,
    KwNone,
    // special references
    KwSelf,
    KwSuper,
    KwHere,
    KwRoot,
    KwVisitor,
    KwInit,
    KwPostinit,
    KwProps,

    // --- punctuation ---
    LParen,
    RParen,
    LBracket,
    /// `[?` filter opener.
    LBracketQ,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    Dot,
    Ellipsis,
    Question,
    /// `?.`
    QDot,
    At,
    Assign,
    /// `:=`
    Walrus,
    EqEq,
    NotEq,
    Lt,
    Gt,
    LtE,
    GtE,
    Plus,
    Minus,
    Star,
    Slash,
    DoubleSlash,
    Percent,
    DoubleStar,
    Tilde,
    Amp,
    Pipe,
    Caret,
    LShift,
    RShift,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    DoubleSlashEq,
    PercentEq,
    DoubleStarEq,
    AtEq,
    AmpEq,
    PipeEq,
    CaretEq,
    LShiftEq,
    RShiftEq,
    /// `->`
    Arrow,
    /// `|>`
    PipeFwd,
    /// `<|`
    PipeBack,
    /// `:>`
    APipeFwd,
    /// `<:`
    APipeBack,

    // --- edge and connect operators ---
    /// `-->`
    ArrowR,
    /// `<--`
    ArrowL,
    /// `<-->`
    ArrowBi,
    /// `->:`
    ArrowRP1,
    /// `:->`
    ArrowRP2,
    /// `<-:`
    ArrowLP1,
    /// `:<-`
    ArrowLP2,
    /// `++>`
    CArrowR,
    /// `<++`
    CArrowL,
    /// `<++>`
    CArrowBi,
    /// `+>:`
    CArrowRP1,
    /// `:+>`
    CArrowRP2,
    /// `<+:`
    CArrowLP1,
    /// `:<+`
    CArrowLP2,

    Eof,
}

impl TokenKind {
    /// True for the hard keywords (usable as attribute and keyword-argument names).
    pub fn is_keyword(self) -> bool {
        self.text()
            .is_some_and(|t| t.as_bytes().first().is_some_and(u8::is_ascii_alphabetic))
    }

    /// The keyword or punctuation text, if the kind has a fixed spelling.
    pub fn text(self) -> Option<&'static str> {
        use TokenKind::*;
        Some(match self {
            Name | Int | Float | Str(_) | Eof => return None,
            KwObj => "obj",
            KwClass => "class",
            KwEnum => "enum",
            KwNode => "node",
            KwEdge => "edge",
            KwWalker => "walker",
            KwHas => "has",
            KwCan => "can",
            KwDef => "def",
            KwStatic => "static",
            KwOverride => "override",
            KwImpl => "impl",
            KwAbst => "abst",
            KwGlob => "glob",
            KwImport => "import",
            KwInclude => "include",
            KwFrom => "from",
            KwAs => "as",
            KwIf => "if",
            KwElif => "elif",
            KwElse => "else",
            KwFor => "for",
            KwWhile => "while",
            KwForever => "forever",
            KwMatch => "match",
            KwTry => "try",
            KwExcept => "except",
            KwFinally => "finally",
            KwWith => "with",
            KwReturn => "return",
            KwYield => "yield",
            KwBreak => "break",
            KwContinue => "continue",
            KwRaise => "raise",
            KwDel => "del",
            KwAssert => "assert",
            KwSkip => "skip",
            KwReport => "report",
            KwVisit => "visit",
            KwSpawn => "spawn",
            KwEntry => "entry",
            KwExit => "exit",
            KwDisengage => "disengage",
            KwAsync => "async",
            KwAwait => "await",
            KwAnd => "and",
            KwOr => "or",
            KwNot => "not",
            KwIn => "in",
            KwIs => "is",
            KwLambda => "lambda",
            KwTrue => "True",
            KwFalse => "False",
            KwNone => "None",
            KwSelf => "self",
            KwSuper => "super",
            KwHere => "here",
            KwRoot => "root",
            KwVisitor => "visitor",
            KwInit => "init",
            KwPostinit => "postinit",
            KwProps => "props",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            LBracketQ => "[?",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Semi => ";",
            Colon => ":",
            Dot => ".",
            Ellipsis => "...",
            Question => "?",
            QDot => "?.",
            At => "@",
            Assign => "=",
            Walrus => ":=",
            EqEq => "==",
            NotEq => "!=",
            Lt => "<",
            Gt => ">",
            LtE => "<=",
            GtE => ">=",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            DoubleSlash => "//",
            Percent => "%",
            DoubleStar => "**",
            Tilde => "~",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            LShift => "<<",
            RShift => ">>",
            PlusEq => "+=",
            MinusEq => "-=",
            StarEq => "*=",
            SlashEq => "/=",
            DoubleSlashEq => "//=",
            PercentEq => "%=",
            DoubleStarEq => "**=",
            AtEq => "@=",
            AmpEq => "&=",
            PipeEq => "|=",
            CaretEq => "^=",
            LShiftEq => "<<=",
            RShiftEq => ">>=",
            Arrow => "->",
            PipeFwd => "|>",
            PipeBack => "<|",
            APipeFwd => ":>",
            APipeBack => "<:",
            ArrowR => "-->",
            ArrowL => "<--",
            ArrowBi => "<-->",
            ArrowRP1 => "->:",
            ArrowRP2 => ":->",
            ArrowLP1 => "<-:",
            ArrowLP2 => ":<-",
            CArrowR => "++>",
            CArrowL => "<++",
            CArrowBi => "<++>",
            CArrowRP1 => "+>:",
            CArrowRP2 => ":+>",
            CArrowLP1 => "<+:",
            CArrowLP2 => ":<+",
        })
    }

    /// A short description for "expected X, found Y" messages.
    pub fn describe(self) -> String {
        match self {
            TokenKind::Name => "a name".to_string(),
            TokenKind::Int | TokenKind::Float => "a number".to_string(),
            TokenKind::Str(_) => "a string".to_string(),
            TokenKind::Eof => "end of file".to_string(),
            k => match k.text() {
                Some(t) if k.is_keyword() => format!("keyword `{t}`"),
                Some(t) => format!("`{t}`"),
                None => "a token".to_string(),
            },
        }
    }

    /// One of the edge-reference operators `-->`, `<--`, `<-->`, `->:`, `<-:`.
    pub fn is_edge_op_start(self) -> bool {
        matches!(
            self,
            TokenKind::ArrowR
                | TokenKind::ArrowL
                | TokenKind::ArrowBi
                | TokenKind::ArrowRP1
                | TokenKind::ArrowLP1
        )
    }
}

/// The hard keyword spelled `word`, if any.
pub fn keyword(word: &str) -> Option<TokenKind> {
    use TokenKind::*;
    Some(match word {
        "obj" => KwObj,
        "class" => KwClass,
        "enum" => KwEnum,
        "node" => KwNode,
        "edge" => KwEdge,
        "walker" => KwWalker,
        "has" => KwHas,
        "can" => KwCan,
        "def" => KwDef,
        "static" => KwStatic,
        "override" => KwOverride,
        "impl" => KwImpl,
        "abst" => KwAbst,
        "glob" => KwGlob,
        "import" => KwImport,
        "include" => KwInclude,
        "from" => KwFrom,
        "as" => KwAs,
        "if" => KwIf,
        "elif" => KwElif,
        "else" => KwElse,
        "for" => KwFor,
        "while" => KwWhile,
        "forever" => KwForever,
        "match" => KwMatch,
        "try" => KwTry,
        "except" => KwExcept,
        "finally" => KwFinally,
        "with" => KwWith,
        "return" => KwReturn,
        "yield" => KwYield,
        "break" => KwBreak,
        "continue" => KwContinue,
        "raise" => KwRaise,
        "del" => KwDel,
        "assert" => KwAssert,
        "skip" => KwSkip,
        "report" => KwReport,
        "visit" => KwVisit,
        "spawn" => KwSpawn,
        "entry" => KwEntry,
        "exit" => KwExit,
        "disengage" => KwDisengage,
        "async" => KwAsync,
        "await" => KwAwait,
        "and" => KwAnd,
        "or" => KwOr,
        "not" => KwNot,
        "in" => KwIn,
        "is" => KwIs,
        "lambda" => KwLambda,
        "True" => KwTrue,
        "False" => KwFalse,
        "None" => KwNone,
        "self" => KwSelf,
        "super" => KwSuper,
        "here" => KwHere,
        "root" => KwRoot,
        "visitor" => KwVisitor,
        "init" => KwInit,
        "postinit" => KwPostinit,
        "props" => KwProps,
        _ => return None,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// The result of lexing: tokens (always ending with [`TokenKind::Eof`]), decoded string
/// literals, and lexical diagnostics.
#[derive(Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub lits: Vec<StrLit>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Lex a whole source file.
pub fn lex(src: &str) -> Lexed {
    lex_range(src, 0, src.len(), 0)
}

/// Lex the byte range `start..end` of `src` (used for f-string replacement fields);
/// spans stay file offsets. `depth` counts enclosing f-string levels.
pub fn lex_range(src: &str, start: usize, end: usize, depth: u32) -> Lexed {
    let end = end.min(src.len());
    let start = start.min(end);
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        end,
        pos: start,
        depth,
        out: Lexed {
            tokens: Vec::with_capacity((end - start) / 4 + 1),
            lits: Vec::new(),
            diagnostics: Vec::new(),
        },
    };
    lx.run();
    lx.out
}

pub(crate) struct Lexer<'a> {
    pub(crate) src: &'a str,
    pub(crate) b: &'a [u8],
    pub(crate) end: usize,
    pub(crate) pos: usize,
    pub(crate) depth: u32,
    pub(crate) out: Lexed,
}

pub(crate) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(crate) fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The string-prefix flags `(raw, format, bytes)` of an identifier directly followed by a
/// quote, or `None` if `word` is not a string prefix.
pub(crate) fn string_prefix(word: &[u8]) -> Option<(bool, bool, bool)> {
    if word.len() > 2 {
        return None;
    }
    let (mut raw, mut fmt, mut bytes, mut uni) = (false, false, false, false);
    for &c in word {
        match c.to_ascii_lowercase() {
            b'r' if !raw => raw = true,
            b'f' if !fmt => fmt = true,
            b'b' if !bytes => bytes = true,
            b'u' if !uni => uni = true,
            _ => return None,
        }
    }
    if (fmt && bytes) || (uni && word.len() > 1) {
        return None;
    }
    Some((raw, fmt, bytes))
}

impl<'a> Lexer<'a> {
    fn at(&self, i: usize) -> u8 {
        if i < self.end { self.b[i] } else { 0 }
    }

    pub(crate) fn error(&mut self, code: Code, msg: impl Into<String>, start: usize, end: usize) {
        self.out
            .diagnostics
            .push(Diagnostic::error(code, msg, Span::new(start, end)));
    }

    fn push(&mut self, kind: TokenKind, start: usize, end: usize) {
        self.out.tokens.push(Token {
            kind,
            span: Span::new(start, end),
        });
    }

    /// The char starting at byte `i` (which must be a char boundary) and its length.
    pub(crate) fn char_at(&self, i: usize) -> (char, usize) {
        match self.src.get(i..self.end).and_then(|s| s.chars().next()) {
            Some(c) => (c, c.len_utf8()),
            None => ('\u{fffd}', 1),
        }
    }

    fn run(&mut self) {
        loop {
            self.skip_trivia();
            if self.pos >= self.end {
                break;
            }
            self.next_token();
        }
        self.push(TokenKind::Eof, self.end, self.end);
    }

    fn skip_trivia(&mut self) {
        while self.pos < self.end {
            let c = self.b[self.pos];
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b' => self.pos += 1,
                b'\\' if matches!(self.at(self.pos + 1), b'\n' | b'\r') => self.pos += 2,
                b'#' => {
                    if self.at(self.pos + 1) == b'*' {
                        let start = self.pos;
                        let mut i = self.pos + 2;
                        loop {
                            if i >= self.end {
                                self.error(
                                    Code::E0101,
                                    "unterminated block comment: `#*` has no closing `*#`",
                                    start,
                                    (start + 2).min(self.end),
                                );
                                i = self.end;
                                break;
                            }
                            if self.b[i] == b'*' && self.at(i + 1) == b'#' {
                                i += 2;
                                break;
                            }
                            i += 1;
                        }
                        self.pos = i;
                    } else {
                        while self.pos < self.end && self.b[self.pos] != b'\n' {
                            self.pos += 1;
                        }
                    }
                }
                c if c >= 0x80 => {
                    let (ch, len) = self.char_at(self.pos);
                    if ch.is_whitespace() {
                        self.pos += len;
                    } else {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    fn next_token(&mut self) {
        let start = self.pos;
        let c = self.b[start];
        if is_ident_start(c) || c >= 0x80 {
            self.ident(start);
            return;
        }
        if c.is_ascii_digit() || (c == b'.' && self.at(start + 1).is_ascii_digit()) {
            self.number(start);
            return;
        }
        if c == b'"' || c == b'\'' {
            self.string(start, start, (false, false, false));
            return;
        }
        if c == b'`' {
            // Keyword-escaped name: a backtick followed by an identifier.
            let mut i = start + 1;
            while i < self.end && (is_ident_continue(self.b[i]) || self.b[i] >= 0x80) {
                i += 1;
            }
            if i == start + 1 {
                self.error(
                    Code::E0001,
                    "expected a name after the backtick",
                    start,
                    start + 1,
                );
                self.pos = start + 1;
                return;
            }
            self.pos = i;
            self.push(TokenKind::Name, start, i);
            return;
        }
        match self.punct(start) {
            Some((kind, len)) => {
                self.pos = start + len;
                self.push(kind, start, start + len);
            }
            None => {
                let (ch, len) = self.char_at(start);
                let msg = match ch {
                    '!' => "unexpected `!`: write `not x` for negation and `!=` for inequality"
                        .to_string(),
                    _ => format!("unexpected character `{}`", ch.escape_debug()),
                };
                self.error(Code::E0001, msg, start, start + len);
                self.pos = start + len;
            }
        }
    }

    fn ident(&mut self, start: usize) {
        let mut i = start;
        while i < self.end {
            let c = self.b[i];
            if is_ident_continue(c) {
                i += 1;
            } else if c >= 0x80 {
                let (ch, len) = self.char_at(i);
                if ch.is_alphanumeric() || ch == '_' {
                    i += len;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        if i == start {
            // A non-ASCII char that cannot start a name.
            let (ch, len) = self.char_at(start);
            self.error(
                Code::E0001,
                format!("unexpected character `{}`", ch.escape_debug()),
                start,
                start + len,
            );
            self.pos = start + len;
            return;
        }
        let word = &self.b[start..i];
        if matches!(self.at(i), b'"' | b'\'')
            && let Some(flags) = string_prefix(word)
        {
            self.string(start, i, flags);
            return;
        }
        self.pos = i;
        let kind = self
            .src
            .get(start..i)
            .and_then(keyword)
            .unwrap_or(TokenKind::Name);
        self.push(kind, start, i);
    }

    fn number(&mut self, start: usize) {
        let mut i = start;
        let mut is_float = false;
        if self.b[i] == b'0' && matches!(self.at(i + 1), b'x' | b'X' | b'o' | b'O' | b'b' | b'B') {
            i += 2;
            while i < self.end && (self.b[i].is_ascii_alphanumeric() || self.b[i] == b'_') {
                i += 1;
            }
        } else {
            while i < self.end && (self.b[i].is_ascii_digit() || self.b[i] == b'_') {
                i += 1;
            }
            if self.at(i) == b'.' {
                let n = self.at(i + 1);
                if n.is_ascii_digit() || !(is_ident_start(n) || n == b'.' || n >= 0x80) {
                    is_float = true;
                    i += 1;
                    while i < self.end && (self.b[i].is_ascii_digit() || self.b[i] == b'_') {
                        i += 1;
                    }
                }
            }
            if matches!(self.at(i), b'e' | b'E') {
                let mut j = i + 1;
                if matches!(self.at(j), b'+' | b'-') {
                    j += 1;
                }
                if self.at(j).is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < self.end && (self.b[i].is_ascii_digit() || self.b[i] == b'_') {
                        i += 1;
                    }
                }
            }
            if matches!(self.at(i), b'j' | b'J') {
                self.error(
                    Code::E0001,
                    "complex number literals are not supported",
                    start,
                    i + 1,
                );
                i += 1;
            }
        }
        self.pos = i;
        self.push(
            if is_float {
                TokenKind::Float
            } else {
                TokenKind::Int
            },
            start,
            i,
        );
    }

    /// Lex a string literal whose prefix starts at `start` and whose opening quote is at `quote_at`.
    fn string(&mut self, start: usize, quote_at: usize, flags: (bool, bool, bool)) {
        let (end, lit) = self.scan_string(start, quote_at, flags, self.depth);
        self.pos = end.max(start + 1);
        let idx = self.out.lits.len() as u32;
        self.out.lits.push(lit);
        self.push(TokenKind::Str(idx), start, self.pos);
    }

    fn punct(&self, i: usize) -> Option<(TokenKind, usize)> {
        use TokenKind::*;
        let c1 = self.at(i + 1);
        let c2 = self.at(i + 2);
        let c3 = self.at(i + 3);
        Some(match self.b[i] {
            b'(' => (LParen, 1),
            b')' => (RParen, 1),
            b'[' if c1 == b'?' => (LBracketQ, 2),
            b'[' => (LBracket, 1),
            b']' => (RBracket, 1),
            b'{' => (LBrace, 1),
            b'}' => (RBrace, 1),
            b',' => (Comma, 1),
            b';' => (Semi, 1),
            b'.' if c1 == b'.' && c2 == b'.' => (Ellipsis, 3),
            b'.' => (Dot, 1),
            b'?' if c1 == b'.' => (QDot, 2),
            b'?' => (Question, 1),
            b'@' if c1 == b'=' => (AtEq, 2),
            b'@' => (At, 1),
            b'~' => (Tilde, 1),
            b'=' if c1 == b'=' => (EqEq, 2),
            b'=' => (Assign, 1),
            b'!' if c1 == b'=' => (NotEq, 2),
            b':' => match (c1, c2) {
                (b'-', b'>') => (ArrowRP2, 3),
                (b'<', b'-') => (ArrowLP2, 3),
                (b'+', b'>') => (CArrowRP2, 3),
                (b'<', b'+') => (CArrowLP2, 3),
                (b'=', _) => (Walrus, 2),
                (b'>', _) => (APipeFwd, 2),
                _ => (Colon, 1),
            },
            b'-' => match (c1, c2) {
                (b'-', b'>') => (ArrowR, 3),
                (b'>', b':') => (ArrowRP1, 3),
                (b'>', _) => (Arrow, 2),
                (b'=', _) => (MinusEq, 2),
                _ => (Minus, 1),
            },
            b'<' => match (c1, c2) {
                (b'-', b'-') if c3 == b'>' => (ArrowBi, 4),
                (b'-', b'-') => (ArrowL, 3),
                (b'-', b':') => (ArrowLP1, 3),
                (b'+', b'+') if c3 == b'>' => (CArrowBi, 4),
                (b'+', b'+') => (CArrowL, 3),
                (b'+', b':') => (CArrowLP1, 3),
                (b'<', b'=') => (LShiftEq, 3),
                (b'<', _) => (LShift, 2),
                (b'=', _) => (LtE, 2),
                (b'|', _) => (PipeBack, 2),
                (b':', _) => (APipeBack, 2),
                _ => (Lt, 1),
            },
            b'>' => match (c1, c2) {
                (b'>', b'=') => (RShiftEq, 3),
                (b'>', _) => (RShift, 2),
                (b'=', _) => (GtE, 2),
                _ => (Gt, 1),
            },
            b'+' => match (c1, c2) {
                (b'+', b'>') => (CArrowR, 3),
                (b'>', b':') => (CArrowRP1, 3),
                (b'=', _) => (PlusEq, 2),
                _ => (Plus, 1),
            },
            b'*' => match (c1, c2) {
                (b'*', b'=') => (DoubleStarEq, 3),
                (b'*', _) => (DoubleStar, 2),
                (b'=', _) => (StarEq, 2),
                _ => (Star, 1),
            },
            b'/' => match (c1, c2) {
                (b'/', b'=') => (DoubleSlashEq, 3),
                (b'/', _) => (DoubleSlash, 2),
                (b'=', _) => (SlashEq, 2),
                _ => (Slash, 1),
            },
            b'%' if c1 == b'=' => (PercentEq, 2),
            b'%' => (Percent, 1),
            b'&' if c1 == b'=' => (AmpEq, 2),
            b'&' => (Amp, 1),
            b'|' if c1 == b'=' => (PipeEq, 2),
            b'|' if c1 == b'>' => (PipeFwd, 2),
            b'|' => (Pipe, 1),
            b'^' if c1 == b'=' => (CaretEq, 2),
            b'^' => (Caret, 1),
            _ => return None,
        })
    }
}
