//! String literal scanning: quotes and prefixes, Python escapes, and f-string pieces.

use super::{Lexer, MAX_STRING_NESTING, is_ident_continue, is_ident_start, string_prefix};
use crate::diag::Code;
use crate::span::Span;

/// A decoded string literal.
#[derive(Clone, Debug, PartialEq)]
pub enum StrLit {
    /// A plain, raw or bytes literal with escapes resolved.
    Plain { value: String, bytes: bool },
    /// An f-string (`f".."`, `rf".."`).
    Format(Vec<FPiece>),
}

/// A piece of an f-string as lexed: literal text, or a replacement field whose expression
/// is a byte range of the source (parsed by the parser).
#[derive(Clone, Debug, PartialEq)]
pub enum FPiece {
    Lit(String),
    Field {
        /// The expression text (between `{` and `=`/`!`/`:`/`}`).
        expr: Span,
        conversion: Option<char>,
        spec: Option<Vec<FPiece>>,
        /// `{x=}`: the text to print before the value (`x=`, spacing kept).
        debug: Option<String>,
        /// The whole field, braces included.
        span: Span,
    },
}

fn flush(lit: &mut String, out: &mut Vec<FPiece>) {
    if !lit.is_empty() {
        out.push(FPiece::Lit(std::mem::take(lit)));
    }
}

impl Lexer<'_> {
    fn is_close(&self, i: usize, q: u8, triple: bool) -> bool {
        self.at_byte(i) == q && (!triple || (self.at_byte(i + 1) == q && self.at_byte(i + 2) == q))
    }

    fn at_byte(&self, i: usize) -> u8 {
        if i < self.end { self.b[i] } else { 0 }
    }

    /// Scan a string literal: prefix at `start`, opening quote at `quote_at`. Returns the
    /// end offset (after the closing quote, or where scanning stopped) and the literal.
    pub(crate) fn scan_string(
        &mut self,
        start: usize,
        quote_at: usize,
        flags: (bool, bool, bool),
        depth: u32,
    ) -> (usize, StrLit) {
        let (raw, fmt, bytes) = flags;
        let q = self.at_byte(quote_at);
        let triple = self.at_byte(quote_at + 1) == q && self.at_byte(quote_at + 2) == q;
        let qlen = if triple { 3 } else { 1 };
        let body = (quote_at + qlen).min(self.end);
        if depth > MAX_STRING_NESTING {
            self.error(
                Code::E0001,
                "strings are nested too deeply inside f-strings",
                start,
                body,
            );
            return (
                self.end,
                StrLit::Plain {
                    value: String::new(),
                    bytes,
                },
            );
        }
        if fmt {
            let mut pieces = Vec::new();
            let end = self.fstr_parts(start, body, q, triple, raw, depth, false, &mut pieces);
            return (end, StrLit::Format(pieces));
        }
        let mut value = String::new();
        let mut i = body;
        loop {
            if i >= self.end {
                self.unterminated(start, body);
                return (self.end, StrLit::Plain { value, bytes });
            }
            if self.is_close(i, q, triple) {
                return (i + qlen, StrLit::Plain { value, bytes });
            }
            let c = self.b[i];
            if c == b'\n' && !triple {
                self.unterminated(start, body);
                return (i, StrLit::Plain { value, bytes });
            }
            if c == b'\\' {
                i = if raw {
                    self.raw_backslash(i, &mut value)
                } else {
                    self.escape(i, &mut value, bytes, false)
                };
                continue;
            }
            if c == b'\r' && self.at_byte(i + 1) == b'\n' {
                i += 1;
                continue;
            }
            let run = i;
            while i < self.end && !matches!(self.b[i], b'\\' | b'\n' | b'\r') && self.b[i] != q {
                i += 1;
            }
            if i == run {
                // A newline inside a triple-quoted string, or a lone quote char that does not close it.
                value.push(self.b[i] as char);
                i += 1;
            } else {
                let text = self.src.get(run..i).unwrap_or("");
                if bytes && !text.is_ascii() {
                    self.error(
                        Code::E0001,
                        "bytes can only contain ASCII literal characters",
                        run,
                        i,
                    );
                }
                value.push_str(text);
            }
        }
    }

    fn unterminated(&mut self, start: usize, body: usize) {
        self.error(Code::E0001, "unterminated string literal", start, body);
    }

    /// A backslash inside a raw string: kept, and it protects the next char from closing.
    fn raw_backslash(&self, i: usize, out: &mut String) -> usize {
        out.push('\\');
        if i + 1 < self.end {
            let (ch, len) = self.char_at(i + 1);
            out.push(ch);
            i + 1 + len
        } else {
            i + 1
        }
    }

    /// Decode the escape sequence starting with the backslash at `i`; returns the offset after it.
    fn escape(&mut self, i: usize, out: &mut String, bytes: bool, fstr: bool) -> usize {
        let c = self.at_byte(i + 1);
        let simple = |ch: char, out: &mut String| {
            out.push(ch);
            i + 2
        };
        match c {
            b'\n' => i + 2,
            b'\r' => {
                if self.at_byte(i + 2) == b'\n' {
                    i + 3
                } else {
                    i + 2
                }
            }
            b'\\' => simple('\\', out),
            b'\'' => simple('\'', out),
            b'"' => simple('"', out),
            b'a' => simple('\x07', out),
            b'b' => simple('\x08', out),
            b'f' => simple('\x0c', out),
            b'n' => simple('\n', out),
            b'r' => simple('\r', out),
            b't' => simple('\t', out),
            b'v' => simple('\x0b', out),
            b'0'..=b'7' => {
                let mut j = i + 1;
                let mut v: u32 = 0;
                while j < i + 4 && matches!(self.at_byte(j), b'0'..=b'7') {
                    v = v * 8 + u32::from(self.at_byte(j) - b'0');
                    j += 1;
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                j
            }
            b'x' => self.hex_escape(i, 2, out),
            b'u' if !bytes => self.hex_escape(i, 4, out),
            b'U' if !bytes => self.hex_escape(i, 8, out),
            b'N' if !bytes && self.at_byte(i + 2) == b'{' => {
                let mut j = i + 3;
                while j < self.end && self.b[j] != b'}' && self.b[j] != b'\n' {
                    j += 1;
                }
                let end = if self.at_byte(j) == b'}' { j + 1 } else { j };
                self.error(Code::E0001, "`\\N{...}` escapes are not supported", i, end);
                end
            }
            0 if i + 1 >= self.end => {
                out.push('\\');
                i + 1
            }
            b'{' | b'}' if fstr => {
                out.push('\\');
                i + 1
            }
            _ => {
                // Unknown escape: kept as written, like Python.
                out.push('\\');
                let (ch, len) = self.char_at(i + 1);
                out.push(ch);
                i + 1 + len
            }
        }
    }

    fn hex_escape(&mut self, i: usize, n: usize, out: &mut String) -> usize {
        let digits = self.src.get(i + 2..(i + 2 + n).min(self.end)).unwrap_or("");
        if digits.len() == n && digits.bytes().all(|d| d.is_ascii_hexdigit()) {
            let v = u32::from_str_radix(digits, 16).unwrap_or(0xfffd);
            match char::from_u32(v) {
                Some(ch) => out.push(ch),
                None => {
                    self.error(
                        Code::E0001,
                        "invalid code point in string escape",
                        i,
                        i + 2 + n,
                    );
                    out.push('\u{fffd}');
                }
            }
            i + 2 + n
        } else {
            let esc = self.at_byte(i + 1) as char;
            self.error(
                Code::E0001,
                format!("invalid `\\{esc}` escape: expected {n} hex digits"),
                i,
                (i + 2).min(self.end),
            );
            i + 2
        }
    }

    /// Scan f-string literal text and fields from `i`. Outside a format spec, stops after the
    /// closing quote; inside a spec (`spec_mode`), stops at the `}` closing the field.
    #[allow(clippy::too_many_arguments)]
    fn fstr_parts(
        &mut self,
        start: usize,
        mut i: usize,
        q: u8,
        triple: bool,
        raw: bool,
        depth: u32,
        spec_mode: bool,
        out: &mut Vec<FPiece>,
    ) -> usize {
        let qlen = if triple { 3 } else { 1 };
        let mut lit = String::new();
        loop {
            if i >= self.end {
                self.error(
                    Code::E0001,
                    "unterminated f-string",
                    start,
                    (start + 2).min(self.end),
                );
                flush(&mut lit, out);
                return self.end;
            }
            if self.is_close(i, q, triple) {
                flush(&mut lit, out);
                if spec_mode {
                    self.error(
                        Code::E0001,
                        "expected `}` before the end of the f-string",
                        i,
                        i + qlen,
                    );
                    return i;
                }
                return i + qlen;
            }
            let c = self.b[i];
            match c {
                b'\n' if !triple => {
                    self.error(
                        Code::E0001,
                        "unterminated f-string",
                        start,
                        (start + 2).min(self.end),
                    );
                    flush(&mut lit, out);
                    return i;
                }
                b'{' if !spec_mode && self.at_byte(i + 1) == b'{' => {
                    lit.push('{');
                    i += 2;
                }
                b'{' => {
                    flush(&mut lit, out);
                    i = self.fstr_field(start, i, q, triple, raw, depth, out);
                }
                b'}' if spec_mode => {
                    flush(&mut lit, out);
                    return i;
                }
                b'}' if self.at_byte(i + 1) == b'}' => {
                    lit.push('}');
                    i += 2;
                }
                b'}' => {
                    self.error(
                        Code::E0001,
                        "single `}` is not allowed in an f-string (write `}}`)",
                        i,
                        i + 1,
                    );
                    i += 1;
                }
                b'\\' => {
                    i = if raw {
                        self.raw_backslash(i, &mut lit)
                    } else {
                        self.escape(i, &mut lit, false, true)
                    };
                }
                b'\r' if self.at_byte(i + 1) == b'\n' => i += 1,
                _ => {
                    let run = i;
                    while i < self.end
                        && !matches!(self.b[i], b'{' | b'}' | b'\\' | b'\n' | b'\r')
                        && self.b[i] != q
                    {
                        i += 1;
                    }
                    if i == run {
                        lit.push(c as char);
                        i += 1;
                    } else {
                        lit.push_str(self.src.get(run..i).unwrap_or(""));
                    }
                }
            }
        }
    }

    /// Scan one replacement field whose `{` is at `open`; returns the offset after its `}`.
    #[allow(clippy::too_many_arguments)]
    fn fstr_field(
        &mut self,
        start: usize,
        open: usize,
        q: u8,
        triple: bool,
        raw: bool,
        depth: u32,
        out: &mut Vec<FPiece>,
    ) -> usize {
        if depth > MAX_STRING_NESTING {
            self.error(
                Code::E0001,
                "f-string fields are nested too deeply",
                open,
                open + 1,
            );
            return self.end;
        }
        let expr_start = open + 1;
        let mut i = expr_start;
        let mut nest: u32 = 0;
        loop {
            // A field's expression may span lines in any f-string (as Python 3.12 and
            // jaclang allow); only the end of the source leaves it open.
            if i >= self.end {
                self.error(
                    Code::E0001,
                    "unterminated f-string field: expected `}`",
                    open,
                    open + 1,
                );
                return i.min(self.end);
            }
            let c = self.b[i];
            if nest == 0 {
                let prev = if i > expr_start { self.b[i - 1] } else { 0 };
                let stop = match c {
                    b'}' | b':' => true,
                    b'!' => self.at_byte(i + 1) != b'=',
                    b'=' => {
                        self.at_byte(i + 1) != b'=' && !matches!(prev, b'=' | b'!' | b'<' | b'>')
                    }
                    _ => false,
                };
                if stop {
                    break;
                }
            }
            match c {
                b'(' | b'[' | b'{' => {
                    nest += 1;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    nest = nest.saturating_sub(1);
                    i += 1;
                }
                b'\'' | b'"' => {
                    let (e, _) = self.scan_string(i, i, (false, false, false), depth + 1);
                    i = e.max(i + 1);
                }
                c if is_ident_start(c) => {
                    let mut j = i;
                    while j < self.end && is_ident_continue(self.b[j]) {
                        j += 1;
                    }
                    if matches!(self.at_byte(j), b'"' | b'\'')
                        && let Some(flags) = string_prefix(&self.b[i..j])
                    {
                        let (e, _) = self.scan_string(i, j, flags, depth + 1);
                        i = e.max(j + 1);
                    } else {
                        i = j;
                    }
                }
                _ => i += 1,
            }
        }
        let expr_end = i;
        if self
            .src
            .get(expr_start..expr_end)
            .is_none_or(|t| t.trim().is_empty())
        {
            self.error(
                Code::E0001,
                "empty expression in f-string field",
                open,
                (i + 1).min(self.end),
            );
        }
        let mut debug = None;
        if self.at_byte(i) == b'=' {
            i += 1;
            while matches!(self.at_byte(i), b' ' | b'\t') {
                i += 1;
            }
            debug = self.src.get(expr_start..i).map(str::to_string);
        }
        let mut conversion = None;
        if self.at_byte(i) == b'!' {
            let c = self.at_byte(i + 1);
            if matches!(c, b'r' | b's' | b'a') {
                conversion = Some(c as char);
                i += 2;
            } else {
                self.error(
                    Code::E0001,
                    "invalid f-string conversion: expected `!r`, `!s` or `!a`",
                    i,
                    i + 1,
                );
                i += 1;
                while i < self.end && is_ident_continue(self.b[i]) {
                    i += 1;
                }
            }
        }
        let mut spec = None;
        if self.at_byte(i) == b':' {
            let mut parts = Vec::new();
            i = self.fstr_parts(start, i + 1, q, triple, raw, depth + 1, true, &mut parts);
            spec = Some(parts);
        }
        if self.at_byte(i) == b'}' {
            i += 1;
        } else if i < self.end && !self.is_close(i, q, triple) {
            self.error(
                Code::E0001,
                "expected `}` to close the f-string field",
                i,
                i + 1,
            );
        }
        if debug.is_some() && conversion.is_none() && spec.is_none() {
            conversion = Some('r');
        }
        out.push(FPiece::Field {
            expr: Span::new(expr_start, expr_end),
            conversion,
            spec,
            debug,
            span: Span::new(open, i),
        });
        i
    }
}
