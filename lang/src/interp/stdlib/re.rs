//! `re`: Python's pattern syntax in the common subset on `fancy-regex` (backreferences,
//! lookahead, fixed-width lookbehind, atomic groups), match objects, `sub` with string
//! templates and functions, `split`, `findall`, `finditer`, `escape` and the flags
//! `IGNORECASE MULTILINE DOTALL VERBOSE`.
//!
//! Bounds: a pattern is at most [`MAX_PATTERN_CHARS`] characters; one match attempt
//! backtracks at most [`BACKTRACK_LIMIT`] steps (a catastrophic pattern is a clear
//! `re.error`, never a hang); compiled patterns are cached per thread, at most
//! [`CACHE_SIZE`] of them. Spans are in characters, as CPython's.

use super::super::value::*;
use super::super::{Interp, R};
use fancy_regex::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

pub const PATTERN_METHODS: &[&str] = &[
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "split",
];
pub const MATCH_METHODS: &[&str] = &[
    "group",
    "groups",
    "groupdict",
    "span",
    "start",
    "end",
    "expand",
];

pub const MAX_PATTERN_CHARS: usize = 10_000;
pub const BACKTRACK_LIMIT: usize = 1_000_000;
pub const CACHE_SIZE: usize = 256;

const I: i64 = 2;
const M: i64 = 8;
const S: i64 = 16;
const U: i64 = 32;
const X: i64 = 64;
const A: i64 = 256;

/// The value of flag constant `name` (`re.I`, `re.IGNORECASE`, ...).
pub fn flag_value(name: &str) -> Option<i64> {
    Some(match name {
        "I" | "IGNORECASE" => I,
        "M" | "MULTILINE" => M,
        "S" | "DOTALL" => S,
        "X" | "VERBOSE" => X,
        "A" | "ASCII" => A,
        "U" | "UNICODE" => U,
        "NOFLAG" => 0,
        _ => return None,
    })
}

/// The members of `re.RegexFlag` in CPython's declaration order (which `str()` of a
/// combination follows), with `LOCALE`, `TEMPLATE` and `DEBUG`, which only show up in
/// the text of a complement (`~re.I`).
const FLAG_MEMBERS: &[(&str, i64)] = &[
    ("NOFLAG", 0),
    ("ASCII", A),
    ("IGNORECASE", I),
    ("LOCALE", 4),
    ("UNICODE", U),
    ("MULTILINE", M),
    ("DOTALL", S),
    ("VERBOSE", X),
    ("TEMPLATE", 1),
    ("DEBUG", 128),
];

/// Every bit a member of `RegexFlag` has (what `~flag` keeps).
const FLAG_MASK: i64 = 511;

/// The key of `re.RegexFlag` among the stdlib classes.
pub const FLAG_CLASS: &str = "re.RegexFlag";

/// `c` is `re.RegexFlag`: its members are ints that print as `re.IGNORECASE`.
pub fn is_flag_class(c: &Class) -> bool {
    super::is_stdlib_class(c) && &*c.stored.name == FLAG_CLASS
}

/// CPython's `str()`/`repr()` of a `RegexFlag` value: `re.NOFLAG`, `re.IGNORECASE`,
/// `re.IGNORECASE|re.MULTILINE`, unknown bits last in hex (`re.IGNORECASE|0x400`).
pub fn flag_text(v: i64) -> String {
    if v == 0 {
        return "re.NOFLAG".to_string();
    }
    let mut parts: Vec<String> = FLAG_MEMBERS
        .iter()
        .filter(|(_, bit)| *bit != 0 && v & bit == *bit)
        .map(|(n, _)| format!("re.{n}"))
        .collect();
    let rest = v & !FLAG_MASK;
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

/// The `name` of a combination (`IGNORECASE|MULTILINE`).
fn flag_name(v: i64) -> String {
    flag_text(v).replace("re.", "")
}

/// A compiled pattern: the search form, the anchored form (`match`) and the whole-text
/// form (`fullmatch`).
struct Compiled {
    search: Regex,
    anchored: Regex,
    full: Regex,
    /// Name of each group (index 0 = the whole match).
    names: Vec<Option<String>>,
}

thread_local! {
    static CACHE: RefCell<HashMap<(String, i64), Rc<Compiled>>> = RefCell::new(HashMap::new());
}

/// Byte spans of one match, per group.
type Spans = Vec<Option<(usize, usize)>>;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Search,
    Match,
    Full,
}

/// Python pattern text in fancy-regex syntax (`None`: an unsupported construct, with
/// the reason).
fn translate(p: &str, flags: i64) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let multiline = flags & M != 0 || inline_flag(p, 'm');
    let ascii = flags & A != 0 || inline_flag(p, 'a');
    let mut out = String::new();
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let Some(&n) = chars.get(i + 1) else {
                return Err(format!("bad escape (end of pattern) at position {i}"));
            };
            // Python's `\s` is `str.isspace`, which also takes \x1c-\x1f; under ASCII
            // (`re.A`, `(?a)`) the classes shrink to ASCII.
            match n {
                'Z' if !in_class => out.push_str("\\z"),
                'w' | 'd' | 's' if ascii => {
                    let set = match n {
                        'w' => "0-9A-Za-z_",
                        'd' => "0-9",
                        _ => " \\t\\n\\r\\x0b\\x0c",
                    };
                    if in_class {
                        out.push_str(set);
                    } else {
                        out.push_str(&format!("[{set}]"));
                    }
                }
                'W' | 'D' | 'S' if ascii && !in_class => {
                    let set = match n {
                        'W' => "0-9A-Za-z_",
                        'D' => "0-9",
                        _ => " \\t\\n\\r\\x0b\\x0c",
                    };
                    out.push_str(&format!("[^{set}]"));
                }
                's' if in_class => out.push_str("\\s\\x1c-\\x1f"),
                's' => out.push_str("[\\s\\x1c-\\x1f]"),
                'S' if !in_class => out.push_str("[^\\s\\x1c-\\x1f]"),
                _ => {
                    out.push('\\');
                    out.push(n);
                }
            }
            i += 2;
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            if c == '[' {
                out.push_str("\\[");
            } else {
                out.push(c);
            }
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                // A `]` or `^]` right after the opening is literal.
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '(' if chars.get(i + 1) == Some(&'?')
                && chars.get(i + 2) == Some(&'P')
                && chars.get(i + 3) == Some(&'=') =>
            {
                let rest: String = chars[i + 4..].iter().collect();
                let Some(end) = rest.find(')') else {
                    return Err(format!(
                        "missing ), unterminated name at position {}",
                        i + 4
                    ));
                };
                out.push_str(&format!("\\k<{}>", &rest[..end]));
                i += 4 + rest[..end].chars().count() + 1;
            }
            '(' if chars.get(i + 1) == Some(&'?') && chars.get(i + 2) == Some(&'#') => {
                // A comment group.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
            }
            '$' if !multiline => {
                out.push_str("(?=\\n?\\z)");
                i += 1;
            }
            '{' => {
                // A repeat `{m}`, `{m,}`, `{,n}`, `{m,n}`; anything else is literal.
                let rest: String = chars[i + 1..].iter().take(40).collect();
                let body = rest.split_once('}').map(|(b, _)| b);
                let valid = body.is_some_and(|b| {
                    let (lo, hi) = b.split_once(',').unwrap_or((b, ""));
                    let digits = |t: &str| t.chars().all(|d| d.is_ascii_digit());
                    digits(lo) && digits(hi) && (!lo.is_empty() || !hi.is_empty())
                });
                match body {
                    Some(b) if valid => {
                        if b.starts_with(',') {
                            out.push_str(&format!("{{0{b}}}"));
                        } else {
                            out.push_str(&format!("{{{b}}}"));
                        }
                        i += b.chars().count() + 2;
                    }
                    _ => {
                        out.push_str("\\{");
                        i += 1;
                    }
                }
            }
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    if in_class {
        return Err(format!(
            "unterminated character set at position {}",
            p.rfind('[').map_or(0, |b| p[..b].chars().count())
        ));
    }
    Ok(out)
}

/// CPython adds `(line L, column C)` to a parse error's position in a multi-line pattern.
fn with_line_col(pattern: &str, msg: String) -> String {
    if !pattern.contains('\n') {
        return msg;
    }
    let Some(pos) = msg
        .rsplit_once("at position ")
        .and_then(|(_, n)| n.parse::<usize>().ok())
    else {
        return msg;
    };
    let before: String = pattern.chars().take(pos).collect();
    let line = before.matches('\n').count() + 1;
    let col = pos
        - before
            .rfind('\n')
            .map_or(0, |b| before[..=b].chars().count())
        + 1;
    format!("{msg} (line {line}, column {col})")
}

/// CPython's parse errors for the pattern's structure, checked on the original text
/// (fancy-regex words them differently): unbalanced parentheses, a repeat with nothing
/// to repeat or of a repeat, a group name defined twice. Positions are in characters.
fn check_structure(pattern: &str, verbose: bool) -> Result<(), String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Prev {
        /// Start of the pattern, after `(` or `|`: nothing to repeat.
        Empty,
        Atom,
        /// Just after a repeat (`*`, `+`, `?`, `{m,n}`).
        Repeat,
        /// After a lazy `?` or possessive `+` following a repeat.
        Modified,
    }
    let c: Vec<char> = pattern.chars().collect();
    let mut open: Vec<usize> = Vec::new();
    let mut names: Vec<(String, usize)> = Vec::new();
    let mut groups = 0usize;
    let mut prev = Prev::Empty;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        match ch {
            '\\' => {
                let n = c.get(i + 1).copied().unwrap_or(' ');
                check_escape(n, i, false)?;
                if let Some(d) = n.to_digit(10).filter(|d| *d > 0) {
                    // `\N` (and `\NN`) refers back to a group already opened.
                    let mut num = d as usize;
                    if let Some(d2) = c.get(i + 2).and_then(|x| x.to_digit(10)) {
                        num = num * 10 + d2 as usize;
                    }
                    if num > groups {
                        return Err(format!(
                            "invalid group reference {num} at position {}",
                            i + 1
                        ));
                    }
                }
                i += 2;
                prev = Prev::Atom;
                continue;
            }
            '[' => {
                // Skip the class: `]` first (or after `^`) is literal.
                let mut j = i + 1;
                if c.get(j) == Some(&'^') {
                    j += 1;
                }
                if c.get(j) == Some(&']') {
                    j += 1;
                }
                while j < c.len() && c[j] != ']' {
                    if c[j] == '\\' {
                        check_escape(c.get(j + 1).copied().unwrap_or(' '), j, true)?;
                        j += 2;
                        continue;
                    }
                    // A range of two literal characters must go upwards.
                    if c.get(j + 1) == Some(&'-')
                        && let Some(&hi) = c.get(j + 2)
                        && hi != ']'
                        && hi != '\\'
                        && hi < c[j]
                    {
                        return Err(format!("bad character range {}-{hi} at position {j}", c[j]));
                    }
                    j += 1;
                }
                i = j + 1;
                prev = Prev::Atom;
                continue;
            }
            ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}' if verbose => {
                i += 1;
                continue;
            }
            '#' if verbose => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '(' => {
                open.push(i);
                prev = Prev::Empty;
                if c.get(i + 1) == Some(&'?') {
                    // The extensions Python knows; `(?<name>` is not one of them.
                    let ext = c.get(i + 2).copied();
                    let bad = match ext {
                        Some('P') => !matches!(c.get(i + 3), Some('<' | '=' | '>')),
                        Some('<') => !matches!(c.get(i + 3), Some('=' | '!')),
                        Some(e) => !matches!(
                            e,
                            ':' | '='
                                | '!'
                                | '>'
                                | '#'
                                | '('
                                | '-'
                                | 'a'
                                | 'i'
                                | 'L'
                                | 'm'
                                | 's'
                                | 'u'
                                | 'x'
                        ),
                        None => false,
                    };
                    if bad {
                        let shown: String = c[i + 1..(i + 4).min(c.len())].iter().collect();
                        let shown = if matches!(ext, Some('P' | '<')) {
                            shown
                        } else {
                            shown.chars().take(2).collect()
                        };
                        return Err(format!("unknown extension {shown} at position {}", i + 1));
                    }
                    if ext == Some('P') && c.get(i + 3) == Some(&'=') {
                        let start = i + 4;
                        let end = (start..c.len()).find(|k| c[*k] == ')').unwrap_or(c.len());
                        let name: String = c[start..end].iter().collect();
                        if is_group_name(&name) && !names.iter().any(|(n, _)| *n == name) {
                            return Err(format!("unknown group name '{name}' at position {start}"));
                        }
                    }
                    let named = match (c.get(i + 2), c.get(i + 3)) {
                        (Some('P'), Some('<')) => Some(i + 4),
                        _ => None,
                    };
                    if let Some(start) = named {
                        groups += 1;
                        let end = (start..c.len()).find(|k| c[*k] == '>').unwrap_or(c.len());
                        let name: String = c[start..end].iter().collect();
                        if name.is_empty() {
                            return Err(format!("missing group name at position {start}"));
                        }
                        if !is_group_name(&name) {
                            return Err(format!(
                                "bad character in group name '{name}' at position {start}"
                            ));
                        }
                        if let Some((_, was)) = names.iter().find(|(n, _)| *n == name) {
                            return Err(format!(
                                "redefinition of group name '{name}' as group {groups}; was group {was} at position {start}"
                            ));
                        }
                        names.push((name, groups));
                        i = end + 1;
                        continue;
                    }
                    if c.get(i + 2) == Some(&'#') {
                        // A comment group: skip to its `)`.
                        open.pop();
                        while i < c.len() && c[i] != ')' {
                            i += 1;
                        }
                        i += 1;
                        prev = Prev::Atom;
                        continue;
                    }
                    // Flags `(?i)`, non-capturing `(?:`, look-arounds: skip the prefix.
                    let mut j = i + 2;
                    while j < c.len() && !matches!(c[j], ':' | ')' | '=' | '!' | '>') {
                        j += 1;
                    }
                    if c.get(j) == Some(&')') {
                        // Inline flags: a whole group, nothing captured.
                        open.pop();
                        i = j + 1;
                        continue;
                    }
                    i = j + 1;
                    continue;
                }
                groups += 1;
            }
            ')' => {
                if open.pop().is_none() {
                    return Err(format!("unbalanced parenthesis at position {i}"));
                }
                prev = Prev::Atom;
            }
            '|' => prev = Prev::Empty,
            '*' | '+' | '?' | '{' => {
                let repeat_len = if ch == '{' {
                    // Only a well-formed `{m}`, `{m,}`, `{,n}`, `{m,n}` repeats.
                    let end = (i + 1..c.len().min(i + 42)).find(|k| c[*k] == '}');
                    match end {
                        Some(e) => {
                            let body: String = c[i + 1..e].iter().collect();
                            let (lo, hi) = body.split_once(',').unwrap_or((&body, ""));
                            let digits = |t: &str| t.chars().all(|d| d.is_ascii_digit());
                            if digits(lo) && digits(hi) && !(lo.is_empty() && hi.is_empty()) {
                                if let (Ok(a), Ok(b)) = (lo.parse::<u64>(), hi.parse::<u64>())
                                    && a > b
                                {
                                    return Err(format!(
                                        "min repeat greater than max repeat at position {}",
                                        i + 1
                                    ));
                                }
                                Some(e - i + 1)
                            } else {
                                None
                            }
                        }
                        None => None,
                    }
                } else {
                    Some(1)
                };
                let Some(len) = repeat_len else {
                    prev = Prev::Atom;
                    i += 1;
                    continue;
                };
                match prev {
                    Prev::Empty => return Err(format!("nothing to repeat at position {i}")),
                    Prev::Repeat if ch == '?' || ch == '+' => prev = Prev::Modified,
                    Prev::Repeat | Prev::Modified => {
                        return Err(format!("multiple repeat at position {i}"));
                    }
                    Prev::Atom => prev = Prev::Repeat,
                }
                i += len;
                continue;
            }
            _ => prev = Prev::Atom,
        }
        i += 1;
    }
    if let Some(p) = open.last() {
        return Err(format!(
            "missing ), unterminated subpattern at position {p}"
        ));
    }
    Ok(())
}

/// A group name Python accepts: an identifier.
fn is_group_name(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next().is_some_and(|f| f == '_' || f.is_alphabetic())
        && cs.all(|c| c == '_' || c.is_alphanumeric())
}

/// `\n` at `pos` is an escape Python's `re` knows (in a class when `in_class`). Any other
/// ASCII letter is `bad escape`; the engine's own extras (`\z`, `\p{..}`, `\h`, `\G` ...)
/// never slip through as a different meaning.
fn check_escape(n: char, pos: usize, in_class: bool) -> Result<(), String> {
    if n == 'N' {
        return Err(format!(
            "named character escapes (\\N{{...}}) are not supported by svc's re at position {pos}"
        ));
    }
    let known = if in_class {
        "abdDfnrsStvwWxuU"
    } else {
        "abBdDfnrsStvwWZAxuU"
    };
    if n.is_ascii_alphabetic() && !known.contains(n) {
        return Err(format!("bad escape \\{n} at position {pos}"));
    }
    Ok(())
}

/// The pattern sets inline flag `f` (`(?m)`, `(?im)` ...).
fn inline_flag(p: &str, f: char) -> bool {
    let mut rest = p;
    while let Some(i) = rest.find("(?") {
        let after = &rest[i + 2..];
        let letters: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        let next = after[letters.len()..].chars().next();
        if matches!(next, Some(')') | Some(':')) && letters.contains(f) {
            return true;
        }
        rest = after;
    }
    false
}

fn build(src: &str) -> Result<Regex, String> {
    RegexBuilder::new(src)
        .backtrack_limit(BACKTRACK_LIMIT)
        .delegate_size_limit(1 << 22)
        .delegate_dfa_size_limit(1 << 22)
        .build()
        .map_err(|e| e.to_string())
}

fn compile(pattern: &str, flags: i64) -> Result<Rc<Compiled>, String> {
    if let Some(c) = CACHE.with(|c| c.borrow().get(&(pattern.to_string(), flags)).cloned()) {
        return Ok(c);
    }
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!(
            "pattern longer than {MAX_PATTERN_CHARS} characters (svc's limit)"
        ));
    }
    let body = translate(pattern, flags)
        .and_then(|b| {
            check_structure(pattern, flags & X != 0 || inline_flag(pattern, 'x'))?;
            Ok(b)
        })
        .map_err(|m| with_line_col(pattern, m))?;
    let mut prefix = String::new();
    for (bit, letter) in [(I, 'i'), (M, 'm'), (S, 's'), (X, 'x')] {
        if flags & bit != 0 {
            prefix.push(letter);
        }
    }
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        format!("(?{prefix})")
    };
    // A newline ends a trailing `#` comment in verbose mode before the closing paren.
    let nl = if flags & X != 0 || inline_flag(pattern, 'x') {
        "\n"
    } else {
        ""
    };
    let search = build(&format!("{prefix}{body}")).map_err(|e| {
        if e.contains("Look-behind assertion without constant size") {
            "look-behind requires fixed-width pattern".to_string()
        } else {
            e
        }
    })?;
    let anchored = build(&format!("{prefix}\\A(?:{body}{nl})"))?;
    let full = build(&format!("{prefix}\\A(?:{body}{nl})\\z"))?;
    let names: Vec<Option<String>> = search
        .capture_names()
        .map(|n| n.map(str::to_string))
        .collect();
    let c = Rc::new(Compiled {
        search,
        anchored,
        full,
        names,
    });
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHE_SIZE {
            cache.clear();
        }
        cache.insert((pattern.to_string(), flags), c.clone());
    });
    Ok(c)
}

/// Character index of each byte offset (`None`: the text is ASCII, offsets agree).
struct CharMap(Option<Vec<usize>>);

impl CharMap {
    fn new(s: &str) -> CharMap {
        if s.is_ascii() {
            return CharMap(None);
        }
        let mut map = vec![0; s.len() + 1];
        let mut n = 0;
        for (b, ch) in s.char_indices() {
            for k in 0..ch.len_utf8() {
                map[b + k] = n;
            }
            n += 1;
        }
        map[s.len()] = n;
        CharMap(Some(map))
    }
    fn char_of(&self, b: usize) -> usize {
        match &self.0 {
            None => b,
            Some(m) => m[b],
        }
    }
}

/// Byte offset of character index `c` in `s` (clamped to the end).
fn byte_of(s: &str, c: usize) -> usize {
    if s.is_ascii() {
        return c.min(s.len());
    }
    s.char_indices().nth(c).map_or(s.len(), |(b, _)| b)
}

/// One piece of a `sub` template.
enum Piece {
    Text(String),
    Group(usize),
}

impl Interp<'_> {
    fn re_error(&mut self, msg: String) -> super::super::Interrupt {
        self.ensure_stdlib_classes();
        self.err("re.error", msg)
    }

    fn re_compiled(&mut self, pattern: &str, flags: i64) -> R<Rc<Compiled>> {
        compile(pattern, flags).map_err(|m| self.re_error(m))
    }

    /// The pattern argument: a string or a compiled Pattern (then `flags` must be 0).
    fn re_pattern_arg(&mut self, p: &Value, flags: Option<&Value>) -> R<(Rc<str>, i64)> {
        let flags = match flags {
            Some(v) => self.int_arg(v)?,
            None => 0,
        };
        match p {
            Value::Str(s) => Ok((s.to_rc(), flags)),
            v if Self::stdlib_key(v) == Some("re.Pattern") => {
                if flags != 0 {
                    return Err(self.err(
                        "ValueError",
                        "cannot process flags argument with a compiled pattern",
                    ));
                }
                let Value::Str(s) = self.field(v, "pattern") else {
                    return Err(self.err("TypeError", "not a pattern"));
                };
                let f = match self.field(v, "flags") {
                    Value::Int(f) => f & !U,
                    _ => 0,
                };
                Ok((s.to_rc(), f))
            }
            _ => Err(self.err(
                "TypeError",
                "first argument must be string or compiled pattern",
            )),
        }
    }

    fn re_text(&self, v: Option<&Value>) -> R<Rc<str>> {
        match v {
            Some(Value::Str(s)) => Ok(s.to_rc()),
            Some(other) => Err(self.err(
                "TypeError",
                format!(
                    "expected string or bytes-like object, got '{}'",
                    self.type_name_of(other)
                ),
            )),
            None => Err(self.err("TypeError", "missing the string argument")),
        }
    }

    /// The Pattern object for a pattern text and flags.
    fn re_pattern_value(&mut self, pattern: &Rc<str>, flags: i64) -> R<Value> {
        let c = self.re_compiled(pattern, flags)?;
        let mut index = Dict::default();
        for (i, n) in c.names.iter().enumerate() {
            if let Some(n) = n {
                index.insert(HashKey(Value::str(n)), Value::Int(i as i64));
            }
        }
        Ok(self.stdlib_instance(
            "re.Pattern",
            vec![
                Value::Str(pattern.clone().into()),
                Value::Int(flags | U),
                Value::Int(c.names.len() as i64 - 1),
                Value::dict(index),
            ],
        ))
    }

    /// One match attempt from byte `pos`.
    fn re_exec(&mut self, c: &Compiled, text: &str, pos: usize, mode: Mode) -> R<Option<Spans>> {
        let re = match mode {
            Mode::Search => &c.search,
            Mode::Match if pos == 0 => &c.anchored,
            Mode::Full if pos == 0 => &c.full,
            _ => &c.search,
        };
        let caps = match re.captures_from_pos(text, pos) {
            Ok(c) => c,
            Err(fancy_regex::Error::RuntimeError(_)) => {
                return Err(self.re_error(format!(
                    "catastrophic backtracking: the match exceeded svc's limit of {BACKTRACK_LIMIT} backtracking steps"
                )));
            }
            Err(e) => return Err(self.re_error(e.to_string())),
        };
        let Some(caps) = caps else {
            return Ok(None);
        };
        let spans: Spans = (0..c.names.len())
            .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
            .collect();
        // Matching from `pos > 0` with the search form: keep only a match there.
        if pos > 0 && mode != Mode::Search {
            let (s, e) = spans[0].unwrap_or((0, 0));
            if s != pos || (mode == Mode::Full && e != text.len()) {
                return Ok(None);
            }
        }
        Ok(Some(spans))
    }

    /// Every match as CPython iterates them (an empty match may follow a non-empty one;
    /// two never share a start).
    fn re_all(&mut self, c: &Compiled, text: &str, pos: usize, limit: usize) -> R<Vec<Spans>> {
        let mut out = Vec::new();
        let mut at = pos;
        let mut last_empty_at: Option<usize> = None;
        while at <= text.len() && (limit == 0 || out.len() < limit) {
            self.poll()?;
            let Some(mut spans) = self.re_exec(c, text, at, Mode::Search)? else {
                break;
            };
            let (mut s, mut e) = spans[0].unwrap_or((at, at));
            if s == e && last_empty_at == Some(s) {
                // An empty match where the last one ended: try one character on.
                let Some(ch) = text[s..].chars().next() else {
                    break;
                };
                let Some(next) = self.re_exec(c, text, s + ch.len_utf8(), Mode::Search)? else {
                    break;
                };
                spans = next;
                (s, e) = spans[0].unwrap_or((at, at));
            }
            if out.len() >= self.limits.max_collection_items {
                return Err(self.err(
                    "MemoryError",
                    format!(
                        "more than {} matches (svc's collection limit)",
                        self.limits.max_collection_items
                    ),
                ));
            }
            out.push(spans);
            last_empty_at = (s == e).then_some(e);
            at = e;
        }
        Ok(out)
    }

    /// A Match object.
    fn re_match_value(
        &mut self,
        pattern: Value,
        c: &Compiled,
        text: &Rc<str>,
        map: &CharMap,
        spans: &Spans,
        pos: usize,
    ) -> Value {
        let tuple: Vec<Value> = spans
            .iter()
            .map(|s| match s {
                Some((a, b)) => Value::tuple(vec![
                    Value::Int(map.char_of(*a) as i64),
                    Value::Int(map.char_of(*b) as i64),
                ]),
                None => Value::None,
            })
            .collect();
        // lastindex: the last group that closed, approximated by the matched group
        // that ends last (and, on ties, opened first).
        let mut lastindex: Option<usize> = None;
        for (i, s) in spans.iter().enumerate().skip(1) {
            if let Some((_, e)) = s {
                match lastindex.and_then(|l| spans[l]) {
                    Some((_, le)) if le >= *e => {}
                    _ => lastindex = Some(i),
                }
            }
        }
        let lastgroup = lastindex
            .and_then(|i| c.names[i].as_deref())
            .map_or(Value::None, Value::str);
        let n = map.char_of(text.len()) as i64;
        self.stdlib_instance(
            "re.Match",
            vec![
                Value::Str(text.clone().into()),
                pattern,
                Value::Int(pos as i64),
                Value::Int(n),
                lastindex.map_or(Value::None, |i| Value::Int(i as i64)),
                lastgroup,
                Value::tuple(tuple),
            ],
        )
    }

    /// `search`/`match`/`fullmatch` of `pattern` (a Pattern value) on `text`.
    fn re_find(
        &mut self,
        pattern: Value,
        text: &Rc<str>,
        pos: Option<&Value>,
        mode: Mode,
    ) -> R<Value> {
        let (p, flags) = self.re_pattern_arg(&pattern, None)?;
        let c = self.re_compiled(&p, flags)?;
        let pos = match pos {
            Some(v) => self.int_arg(v)?.max(0) as usize,
            None => 0,
        };
        let bpos = byte_of(text, pos);
        match self.re_exec(&c, text, bpos, mode)? {
            None => Ok(Value::None),
            Some(spans) => {
                let map = CharMap::new(text);
                Ok(self.re_match_value(pattern, &c, text, &map, &spans, pos))
            }
        }
    }

    /// The text of group `g` of a match (`None` when it did not take part).
    fn group_text(text: &str, spans: &Spans, g: usize) -> Value {
        match spans.get(g).copied().flatten() {
            Some((a, b)) => Value::str(&text[a..b]),
            None => Value::None,
        }
    }

    fn re_findall(&mut self, pattern: Value, text: &Rc<str>, pos: Option<&Value>) -> R<Value> {
        let (p, flags) = self.re_pattern_arg(&pattern, None)?;
        let c = self.re_compiled(&p, flags)?;
        let pos = match pos {
            Some(v) => self.int_arg(v)?.max(0) as usize,
            None => 0,
        };
        let all = self.re_all(&c, text, byte_of(text, pos), 0)?;
        let groups = c.names.len() - 1;
        let empty = || Value::str("");
        let items = all
            .iter()
            .map(|spans| match groups {
                0 => Self::group_text(text, spans, 0),
                1 => match Self::group_text(text, spans, 1) {
                    Value::None => empty(),
                    v => v,
                },
                _ => Value::tuple(
                    (1..=groups)
                        .map(|g| match Self::group_text(text, spans, g) {
                            Value::None => empty(),
                            v => v,
                        })
                        .collect(),
                ),
            })
            .collect();
        Ok(Value::list(items))
    }

    fn re_finditer(&mut self, pattern: Value, text: &Rc<str>, pos: Option<&Value>) -> R<Value> {
        let (p, flags) = self.re_pattern_arg(&pattern, None)?;
        let c = self.re_compiled(&p, flags)?;
        let pos = match pos {
            Some(v) => self.int_arg(v)?.max(0) as usize,
            None => 0,
        };
        let all = self.re_all(&c, text, byte_of(text, pos), 0)?;
        let map = CharMap::new(text);
        let items: Vec<Value> = all
            .iter()
            .map(|spans| self.re_match_value(pattern.clone(), &c, text, &map, spans, pos))
            .collect();
        Ok(Value::Iter(
            Rc::new(RefCell::new(IterItems::snapshot(items))),
            IterKind::Callable,
        ))
    }

    fn re_split(&mut self, pattern: Value, text: &Rc<str>, maxsplit: i64) -> R<Value> {
        let (p, flags) = self.re_pattern_arg(&pattern, None)?;
        let c = self.re_compiled(&p, flags)?;
        if maxsplit < 0 {
            return Ok(Value::list(vec![Value::Str(text.clone().into())]));
        }
        let all = self.re_all(&c, text, 0, maxsplit as usize)?;
        let mut out = Vec::new();
        let mut last = 0;
        for spans in &all {
            let (s, e) = spans[0].unwrap_or((last, last));
            out.push(Value::str(&text[last..s]));
            for g in 1..c.names.len() {
                out.push(Self::group_text(text, spans, g));
            }
            last = e;
        }
        out.push(Value::str(&text[last..]));
        Ok(Value::list(out))
    }

    /// Parse a `sub` template (`\1`, `\g<name>`, `\g<2>`, escapes).
    fn re_template(&mut self, c: &Compiled, t: &str) -> R<Vec<Piece>> {
        let chars: Vec<char> = t.chars().collect();
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut i = 0;
        let groups = c.names.len();
        while i < chars.len() {
            let ch = chars[i];
            if ch != '\\' {
                lit.push(ch);
                i += 1;
                continue;
            }
            let Some(&n) = chars.get(i + 1) else {
                return Err(self.re_error(format!("bad escape (end of pattern) at position {i}")));
            };
            let group: Option<usize> = match n {
                'g' => {
                    if chars.get(i + 2) != Some(&'<') {
                        return Err(self.re_error(format!("missing < at position {}", i + 2)));
                    }
                    let rest: String = chars[i + 3..].iter().collect();
                    let Some(end) = rest.find('>') else {
                        return Err(self.re_error(format!(
                            "missing >, unterminated name at position {}",
                            i + 3
                        )));
                    };
                    let name = &rest[..end];
                    let g = if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
                        let g: usize = name.parse().unwrap_or(usize::MAX);
                        if g >= groups {
                            return Err(self.re_error(format!(
                                "invalid group reference {name} at position {}",
                                i + 3
                            )));
                        }
                        g
                    } else {
                        match c.names.iter().position(|x| x.as_deref() == Some(name)) {
                            Some(g) => g,
                            None if name.is_empty() => {
                                return Err(self.re_error(format!(
                                    "missing group name at position {}",
                                    i + 3
                                )));
                            }
                            None => {
                                return Err(
                                    self.err("IndexError", format!("unknown group name '{name}'"))
                                );
                            }
                        }
                    };
                    i += 3 + name.chars().count() + 1;
                    Some(g)
                }
                '1'..='9' => {
                    let mut digits = n.to_string();
                    if let Some(&d) = chars.get(i + 2)
                        && d.is_ascii_digit()
                    {
                        digits.push(d);
                    }
                    let g: usize = digits.parse().unwrap_or(0);
                    if g >= groups {
                        return Err(self.re_error(format!(
                            "invalid group reference {g} at position {}",
                            i + 1
                        )));
                    }
                    i += 1 + digits.len();
                    Some(g)
                }
                '0' => {
                    // An octal escape of up to three digits.
                    let mut j = i + 1;
                    let mut v = 0u32;
                    while j < chars.len() && j < i + 4 && ('0'..='7').contains(&chars[j]) {
                        v = v * 8 + chars[j].to_digit(8).unwrap_or(0);
                        j += 1;
                    }
                    lit.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    i = j;
                    None
                }
                _ => {
                    let esc = match n {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'f' => Some('\u{c}'),
                        'v' => Some('\u{b}'),
                        'a' => Some('\u{7}'),
                        'b' => Some('\u{8}'),
                        '\\' => Some('\\'),
                        _ => None,
                    };
                    match esc {
                        Some(e) => lit.push(e),
                        None if n.is_ascii_alphabetic() => {
                            return Err(self.re_error(format!("bad escape \\{n} at position {i}")));
                        }
                        None => {
                            lit.push('\\');
                            lit.push(n);
                        }
                    }
                    i += 2;
                    None
                }
            };
            if let Some(g) = group {
                if !lit.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut lit)));
                }
                pieces.push(Piece::Group(g));
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        Ok(pieces)
    }

    fn re_sub(
        &mut self,
        pattern: Value,
        repl: &Value,
        text: &Rc<str>,
        count: i64,
        with_count: bool,
    ) -> R<Value> {
        let (p, flags) = self.re_pattern_arg(&pattern, None)?;
        let c = self.re_compiled(&p, flags)?;
        let template = match repl {
            Value::Str(t) => Some(self.re_template(&c, t)?),
            // Not callable and not text: CPython's template parser decodes it first.
            Value::Int(_)
            | Value::BigInt(_)
            | Value::Float(_)
            | Value::Bool(_)
            | Value::None
            | Value::List(_)
            | Value::Tuple(_)
            | Value::Dict(_)
            | Value::Set(_) => {
                let t = self.type_name_of(repl);
                return Err(self.err(
                    "TypeError",
                    format!("decoding to str: need a bytes-like object, {t} found"),
                ));
            }
            _ => None,
        };
        let all = if count < 0 {
            Vec::new()
        } else {
            self.re_all(&c, text, 0, count as usize)?
        };
        let map = CharMap::new(text);
        let mut out = String::new();
        let mut last = 0;
        for spans in &all {
            let (s, e) = spans[0].unwrap_or((last, last));
            out.push_str(&text[last..s]);
            match &template {
                Some(pieces) => {
                    for piece in pieces {
                        match piece {
                            Piece::Text(t) => out.push_str(t),
                            Piece::Group(g) => {
                                if let Some((a, b)) = spans.get(*g).copied().flatten() {
                                    out.push_str(&text[a..b]);
                                }
                            }
                        }
                    }
                }
                None => {
                    let m = self.re_match_value(pattern.clone(), &c, text, &map, spans, 0);
                    match self.call_value(repl, vec![m], Vec::new())? {
                        Value::Str(r) => out.push_str(&r),
                        other => {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "expected str instance, {} found",
                                    self.type_name_of(&other)
                                ),
                            ));
                        }
                    }
                }
            }
            if out.len() > self.max_text_bytes() {
                return Err(self.err(
                    "MemoryError",
                    crate::pyfmt::too_large(out.len(), self.max_text_bytes()),
                ));
            }
            last = e;
        }
        out.push_str(&text[last..]);
        let s = Value::str(&out);
        Ok(if with_count {
            Value::tuple(vec![s, Value::Int(all.len() as i64)])
        } else {
            s
        })
    }

    pub(super) fn call_re(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match func {
            "compile" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Python("compile"),
                    &["pattern", "flags"],
                    1,
                    2,
                    args,
                    kwargs,
                )?;
                let p = a.get(0).cloned().unwrap_or(Value::None);
                if Self::stdlib_key(&p) == Some("re.Pattern") && a.opt(1).is_none() {
                    return Ok(p);
                }
                let (p, flags) = self.re_pattern_arg(&p, a.get(1))?;
                self.re_pattern_value(&p, flags)
            }
            "search" | "match" | "fullmatch" | "findall" | "finditer" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Python(func),
                    &["pattern", "string", "flags"],
                    2,
                    3,
                    args,
                    kwargs,
                )?;
                let (p, flags) = self.re_pattern_arg(a.get(0).unwrap_or(&Value::None), a.get(2))?;
                let pattern = self.re_pattern_value(&p, flags)?;
                let text = self.re_text(a.get(1))?;
                self.re_apply(func, pattern, &text, None)
            }
            "sub" | "subn" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Python(func),
                    &["pattern", "repl", "string", "count", "flags"],
                    3,
                    5,
                    args,
                    kwargs,
                )?;
                let (p, flags) = self.re_pattern_arg(a.get(0).unwrap_or(&Value::None), a.get(4))?;
                let pattern = self.re_pattern_value(&p, flags)?;
                let text = self.re_text(a.get(2))?;
                let count = match a.get(3) {
                    Some(v) => self.int_arg(v)?,
                    None => 0,
                };
                let repl = a.get(1).cloned().unwrap_or(Value::None);
                self.re_sub(pattern, &repl, &text, count, func == "subn")
            }
            "split" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Python("split"),
                    &["pattern", "string", "maxsplit", "flags"],
                    2,
                    4,
                    args,
                    kwargs,
                )?;
                let (p, flags) = self.re_pattern_arg(a.get(0).unwrap_or(&Value::None), a.get(3))?;
                let pattern = self.re_pattern_value(&p, flags)?;
                let text = self.re_text(a.get(1))?;
                let maxsplit = match a.get(2) {
                    Some(v) => self.int_arg(v)?,
                    None => 0,
                };
                self.re_split(pattern, &text, maxsplit)
            }
            "escape" => {
                let a = self.stdlib_args_as(
                    super::ArgStyle::Python("escape"),
                    &["pattern"],
                    1,
                    1,
                    args,
                    kwargs,
                )?;
                // `escape` decodes a non-str argument as bytes first.
                let s = match a.get(0) {
                    Some(Value::Str(s)) => s.to_rc(),
                    other => {
                        let t = other.map(|v| self.type_name_of(v)).unwrap_or_default();
                        return Err(self.err(
                            "TypeError",
                            format!("decoding to str: need a bytes-like object, {t} found"),
                        ));
                    }
                };
                let mut out = String::with_capacity(s.len());
                for ch in s.chars() {
                    if "()[]{}?*+-|^$\\.&~# \t\n\r\u{b}\u{c}".contains(ch) {
                        out.push('\\');
                    }
                    out.push(ch);
                }
                Ok(Value::str(&out))
            }
            "purge" => {
                CACHE.with(|c| c.borrow_mut().clear());
                Ok(Value::None)
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 're' has no attribute '{func}'"),
            )),
        }
    }

    fn re_apply(
        &mut self,
        func: &str,
        pattern: Value,
        text: &Rc<str>,
        pos: Option<&Value>,
    ) -> R<Value> {
        match func {
            "search" => self.re_find(pattern, text, pos, Mode::Search),
            "match" => self.re_find(pattern, text, pos, Mode::Match),
            "fullmatch" => self.re_find(pattern, text, pos, Mode::Full),
            "findall" => self.re_findall(pattern, text, pos),
            _ => self.re_finditer(pattern, text, pos),
        }
    }

    pub(super) fn re_method(
        &mut self,
        key: &str,
        recv: &Value,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if key == "re.Pattern" {
            return match name {
                "search" | "match" | "fullmatch" | "findall" | "finditer" => {
                    let a =
                        self.stdlib_args(name, &["string", "pos", "endpos"], 1, 3, args, kwargs)?;
                    let mut text = self.re_text(a.get(0))?;
                    if let Some(end) = a.opt(2) {
                        let end = self.int_arg(end)?.max(0) as usize;
                        let b = byte_of(&text, end);
                        text = Rc::from(&text[..b]);
                    }
                    self.re_apply(name, recv.clone(), &text, a.get(1))
                }
                "sub" | "subn" => {
                    let a =
                        self.stdlib_args(name, &["repl", "string", "count"], 2, 3, args, kwargs)?;
                    let text = self.re_text(a.get(1))?;
                    let count = match a.get(2) {
                        Some(v) => self.int_arg(v)?,
                        None => 0,
                    };
                    let repl = a.get(0).cloned().unwrap_or(Value::None);
                    self.re_sub(recv.clone(), &repl, &text, count, name == "subn")
                }
                "split" => {
                    let a = self.stdlib_args(name, &["string", "maxsplit"], 1, 2, args, kwargs)?;
                    let text = self.re_text(a.get(0))?;
                    let maxsplit = match a.get(1) {
                        Some(v) => self.int_arg(v)?,
                        None => 0,
                    };
                    self.re_split(recv.clone(), &text, maxsplit)
                }
                _ => Err(self.err(
                    "AttributeError",
                    format!("'re.Pattern' object has no attribute '{name}'"),
                )),
            };
        }
        // A match object.
        let spans = self.field(recv, "_spans");
        let Value::Tuple(spans) = spans else {
            return Err(self.err("TypeError", "not a match object"));
        };
        let Value::Str(text) = self.field(recv, "string") else {
            return Err(self.err("TypeError", "not a match object"));
        };
        let pattern = self.field(recv, "re");
        let index = self.field(&pattern, "groupindex");
        let group_of = |it: &mut Self, g: Option<&Value>| -> R<usize> {
            let g = match g {
                None => return Ok(0),
                Some(g) => g,
            };
            let i = match g {
                Value::Int(i) => *i,
                Value::Bool(b) => i64::from(*b),
                Value::Str(_) => {
                    let key = it.hash_key(g)?;
                    match &index {
                        Value::Dict(d) => match d.borrow().get(&key) {
                            Some(Value::Int(i)) => *i,
                            _ => -1,
                        },
                        _ => -1,
                    }
                }
                _ => -1,
            };
            if i < 0 || i as usize >= spans.len() {
                return Err(it.err("IndexError", "no such group"));
            }
            Ok(i as usize)
        };
        let char_span = |g: usize| -> Option<(usize, usize)> {
            match &spans[g] {
                Value::Tuple(t) => match (&t[0], &t[1]) {
                    (Value::Int(a), Value::Int(b)) => Some((*a as usize, *b as usize)),
                    _ => None,
                },
                _ => None,
            }
        };
        let text_of = |g: usize, default: &Value| -> Value {
            match char_span(g) {
                Some((a, b)) => {
                    let s: String = text.chars().skip(a).take(b - a).collect();
                    Value::str(&s)
                }
                None => default.clone(),
            }
        };
        match name {
            "group" => {
                if !kwargs.is_empty() {
                    return Err(self.err("TypeError", "group() takes no keyword arguments"));
                }
                if args.len() <= 1 {
                    let g = group_of(self, args.first())?;
                    return Ok(text_of(g, &Value::None));
                }
                let mut out = Vec::new();
                for a in &args {
                    let g = group_of(self, Some(a))?;
                    out.push(text_of(g, &Value::None));
                }
                Ok(Value::tuple(out))
            }
            "groups" => {
                let a = self.stdlib_args(name, &["default"], 0, 1, args, kwargs)?;
                let d = a.get(0).cloned().unwrap_or(Value::None);
                Ok(Value::tuple(
                    (1..spans.len()).map(|g| text_of(g, &d)).collect(),
                ))
            }
            "groupdict" => {
                let a = self.stdlib_args(name, &["default"], 0, 1, args, kwargs)?;
                let d = a.get(0).cloned().unwrap_or(Value::None);
                let mut out = Dict::default();
                if let Value::Dict(ix) = &index {
                    for (k, v) in ix.borrow().iter() {
                        if let Value::Int(g) = v {
                            out.insert(k.clone(), text_of(*g as usize, &d));
                        }
                    }
                }
                Ok(Value::dict(out))
            }
            "span" | "start" | "end" => {
                if !kwargs.is_empty() || args.len() > 1 {
                    return Err(self.err(
                        "TypeError",
                        format!("{name}() takes at most 1 argument ({} given)", args.len()),
                    ));
                }
                let g = group_of(self, args.first())?;
                let (a, b) = char_span(g).map_or((-1, -1), |(a, b)| (a as i64, b as i64));
                Ok(match name {
                    "span" => Value::tuple(vec![Value::Int(a), Value::Int(b)]),
                    "start" => Value::Int(a),
                    _ => Value::Int(b),
                })
            }
            "expand" => {
                let a = self.stdlib_args(name, &["template"], 1, 1, args, kwargs)?;
                let template = match a.get(0) {
                    Some(Value::Str(t)) => t.clone(),
                    other => {
                        let t = self.type_name_of(other.unwrap_or(&Value::None));
                        return Err(self.err(
                            "TypeError",
                            format!("decoding to str: need a bytes-like object, {t} found"),
                        ));
                    }
                };
                let (p, flags) = self.re_pattern_arg(&pattern, None)?;
                let c = self.re_compiled(&p, flags)?;
                let mut out = String::new();
                for piece in self.re_template(&c, &template)? {
                    match piece {
                        Piece::Text(t) => out.push_str(&t),
                        Piece::Group(g) => {
                            if let Value::Str(s) = text_of(g, &Value::None) {
                                out.push_str(&s);
                            }
                        }
                    }
                }
                Ok(Value::str(&out))
            }
            _ => Err(self.err(
                "AttributeError",
                format!("'re.Match' object has no attribute '{name}'"),
            )),
        }
    }

    pub(super) fn re_repr(&mut self, v: &Value) -> R<String> {
        match Self::stdlib_key(v) {
            Some("re.Pattern") => {
                let p = self.field(v, "pattern");
                let mut out = format!("re.compile({}", self.repr(&p)?);
                if let Value::Int(f) = self.field(v, "flags") {
                    let mut names = Vec::new();
                    for (bit, n) in [
                        (I, "re.IGNORECASE"),
                        (M, "re.MULTILINE"),
                        (S, "re.DOTALL"),
                        (X, "re.VERBOSE"),
                        (A, "re.ASCII"),
                    ] {
                        if f & bit != 0 {
                            names.push(n);
                        }
                    }
                    if !names.is_empty() {
                        out.push_str(", ");
                        out.push_str(&names.join("|"));
                    }
                }
                out.push(')');
                Ok(out)
            }
            Some("re.Match") => {
                let span = self.call_stdlib_method(v, "span", Vec::new(), Vec::new())?;
                let g = self.call_stdlib_method(v, "group", Vec::new(), Vec::new())?;
                Ok(format!(
                    "<re.Match object; span={}, match={}>",
                    self.repr(&span)?,
                    self.repr(&g)?
                ))
            }
            _ => Ok(String::new()),
        }
    }
}

impl Interp<'_> {
    /// `re.RegexFlag`, an `int` enum holding the canonical flags (installed with the
    /// other stdlib classes).
    pub(super) fn install_regex_flag(&mut self) {
        let bases: Vec<Rc<Class>> = self
            .builtin_classes
            .get("int")
            .cloned()
            .into_iter()
            .collect();
        let mut mro = bases.clone();
        for b in &bases {
            mro.extend(b.mro.iter().cloned());
        }
        let mut c = Class::bare_builtin("RegexFlag", ClassKind::Enum, bases, mro);
        c.module = Rc::from("re");
        c.stored = StoredNames::new(super::MARK, FLAG_CLASS, "");
        let class = Rc::new(c);
        for (name, v) in FLAG_MEMBERS {
            let m = Rc::new(EnumMember {
                class: class.clone(),
                name: Rc::from(*name),
                value: Value::Int(*v),
            });
            class
                .statics
                .borrow_mut()
                .insert(Rc::from(*name), Value::EnumMember(m.clone()));
            class.members.borrow_mut().push(m);
        }
        Rc::make_mut(&mut self.builtin_classes).insert(FLAG_CLASS, class);
    }

    /// The `RegexFlag` of value `v`: its canonical member (so `re.I | re.I is re.I`),
    /// else a combination (`re.IGNORECASE|re.MULTILINE`).
    pub(super) fn re_flag(&mut self, v: i64) -> Value {
        let class = self.stdlib_class(FLAG_CLASS);
        let known = class
            .members
            .borrow()
            .iter()
            .find(|m| matches!(m.value, Value::Int(x) if x == v))
            .cloned();
        Value::EnumMember(known.unwrap_or_else(|| {
            Rc::new(EnumMember {
                class: class.clone(),
                name: Rc::from(flag_name(v)),
                value: Value::Int(v),
            })
        }))
    }

    /// `a | b`, `a & b`, `a ^ b` where one side is a `re` flag and the other a flag or
    /// an int: a flag, as CPython's `RegexFlag` gives (`None`: not such operands).
    pub(crate) fn re_flag_binop(
        &mut self,
        op: crate::ast::BinOp,
        a: &Value,
        b: &Value,
    ) -> Option<Value> {
        use crate::ast::BinOp;
        let flag = |v: &Value| match v {
            Value::EnumMember(m) if is_flag_class(&m.class) => match m.value {
                Value::Int(i) => Some(i),
                _ => None,
            },
            _ => None,
        };
        let (x, y) = match (flag(a), flag(b), a, b) {
            (Some(x), Some(y), _, _) => (x, y),
            (Some(x), None, _, Value::Int(y)) | (None, Some(x), Value::Int(y), _) => (x, *y),
            _ => return None,
        };
        let r = match op {
            BinOp::BitOr => x | y,
            BinOp::BitAnd => x & y,
            BinOp::BitXor => x ^ y,
            _ => return None,
        };
        Some(self.re_flag(r))
    }

    /// `~flag`: the flags it does not hold, within `RegexFlag`'s members.
    pub(crate) fn re_flag_invert(&mut self, v: &Value) -> Option<Value> {
        match v {
            Value::EnumMember(m) if is_flag_class(&m.class) => match m.value {
                Value::Int(i) => Some(self.re_flag(!i & FLAG_MASK)),
                _ => None,
            },
            _ => None,
        }
    }
}
