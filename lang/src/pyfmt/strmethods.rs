//! `str` methods with Python semantics. Indexes and widths count characters (code points),
//! never bytes; every slice is taken at a character boundary.

use std::fmt::Write as _;

use super::unicode;

/// Appends CPython's `repr()` of a str.
pub fn push_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.reserve(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unicode::is_printable(c) => out.push(c),
            c => push_escape(out, c),
        }
    }
    out.push(quote);
}

fn push_escape(out: &mut String, c: char) {
    let cp = c as u32;
    let _ = if cp <= 0xff {
        write!(out, "\\x{cp:02x}")
    } else if cp <= 0xffff {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

/// CPython's `repr()` of a str: `'abc'`, `"it's"`, `'\n'`, `'\x00'`, `'\u200b'`, `'é'`.
pub fn str_repr(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_str_repr(&mut out, s);
    out
}

/// `ascii()` given the `repr()` of an object: every non-ASCII character is escaped as
/// `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
pub fn ascii_escape(repr: &str) -> String {
    if repr.is_ascii() {
        return repr.to_string();
    }
    let mut out = String::with_capacity(repr.len() + 8);
    for c in repr.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            push_escape(&mut out, c);
        }
    }
    out
}

/// Number of characters of `s`.
pub fn char_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Byte offset of character index `idx` (clamped to the end).
fn byte_at(s: &str, idx: usize) -> usize {
    if s.is_ascii() {
        return idx.min(s.len());
    }
    s.char_indices().nth(idx).map_or(s.len(), |(b, _)| b)
}

/// Python's `ADJUST_INDICES`: slice-style `start`/`end` over `len` characters.
fn adjust_indices(len: i64, start: Option<i64>, end: Option<i64>) -> (i64, i64) {
    let mut end = end.unwrap_or(len);
    if end > len {
        end = len;
    } else if end < 0 {
        end = end.saturating_add(len).max(0);
    }
    let mut start = start.unwrap_or(0);
    if start < 0 {
        start = start.saturating_add(len).max(0);
    }
    (start, end)
}

/// The part of `s` between character indexes `start..end` (already adjusted, `start <= end`).
fn char_slice(s: &str, start: i64, end: i64) -> (&str, usize) {
    let b0 = byte_at(s, start.max(0) as usize);
    let b1 = byte_at(s, end.max(0) as usize).max(b0);
    (s.get(b0..b1).unwrap_or(""), b0)
}

fn char_index_of_byte(s: &str, byte: usize) -> i64 {
    let head = s.get(..byte).unwrap_or(s);
    char_len(head) as i64
}

/// `s.find(sub, start, end)`: the lowest character index of `sub`, or -1.
pub fn py_find(s: &str, sub: &str, start: Option<i64>, end: Option<i64>) -> i64 {
    find_impl(s, sub, start, end, false)
}

/// `s.rfind(sub, start, end)`: the highest character index of `sub`, or -1.
pub fn py_rfind(s: &str, sub: &str, start: Option<i64>, end: Option<i64>) -> i64 {
    find_impl(s, sub, start, end, true)
}

fn find_impl(s: &str, sub: &str, start: Option<i64>, end: Option<i64>, rev: bool) -> i64 {
    let len = char_len(s) as i64;
    let (start, end) = adjust_indices(len, start, end);
    let sub_len = char_len(sub) as i64;
    if end - start < sub_len {
        return -1;
    }
    if sub.is_empty() {
        return if rev { end } else { start };
    }
    let (hay, base) = char_slice(s, start, end);
    let found = if rev { hay.rfind(sub) } else { hay.find(sub) };
    match found {
        Some(b) => char_index_of_byte(s, base + b),
        None => -1,
    }
}

/// `s.count(sub)`: non-overlapping occurrences; `len(s) + 1` for an empty `sub`.
pub fn py_count(s: &str, sub: &str) -> usize {
    if sub.is_empty() {
        return char_len(s) + 1;
    }
    s.matches(sub).count()
}

/// `s.count(sub, start, end)`.
pub fn py_count_range(s: &str, sub: &str, start: Option<i64>, end: Option<i64>) -> usize {
    let len = char_len(s) as i64;
    let (start, end) = adjust_indices(len, start, end);
    let sub_len = char_len(sub) as i64;
    if end - start < sub_len {
        return 0;
    }
    if sub.is_empty() {
        return (end - start + 1) as usize;
    }
    let (hay, _) = char_slice(s, start, end);
    hay.matches(sub).count()
}

/// `s.startswith(prefix, start, end)` for one prefix.
pub fn py_startswith(s: &str, prefix: &str, start: Option<i64>, end: Option<i64>) -> bool {
    tail_match(s, prefix, start, end, false)
}

/// `s.endswith(suffix, start, end)` for one suffix.
pub fn py_endswith(s: &str, suffix: &str, start: Option<i64>, end: Option<i64>) -> bool {
    tail_match(s, suffix, start, end, true)
}

fn tail_match(s: &str, sub: &str, start: Option<i64>, end: Option<i64>, at_end: bool) -> bool {
    let len = char_len(s) as i64;
    let (start, end) = adjust_indices(len, start, end);
    let sub_len = char_len(sub) as i64;
    if start > len || end - start < sub_len {
        return false;
    }
    let (hay, _) = char_slice(s, start, end);
    if at_end {
        hay.ends_with(sub)
    } else {
        hay.starts_with(sub)
    }
}

/// `s.replace(old, new, count)`; a negative `count` replaces all. An empty `old` inserts
/// `new` before every character and at the end (at most `count` times).
pub fn py_replace(s: &str, old: &str, new: &str, count: i64) -> String {
    let limit = if count < 0 {
        usize::MAX
    } else {
        count as usize
    };
    if limit == 0 {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    if old.is_empty() {
        let mut n = 0;
        for c in s.chars() {
            if n < limit {
                out.push_str(new);
                n += 1;
            }
            out.push(c);
        }
        if n < limit {
            out.push_str(new);
        }
        return out;
    }
    let mut last = 0;
    for (n, (b, _)) in s.match_indices(old).enumerate() {
        if n >= limit {
            break;
        }
        out.push_str(s.get(last..b).unwrap_or(""));
        out.push_str(new);
        last = b + old.len();
    }
    out.push_str(s.get(last..).unwrap_or(""));
    out
}

fn max_count(maxsplit: i64) -> usize {
    if maxsplit < 0 {
        usize::MAX
    } else {
        maxsplit as usize
    }
}

/// `s.split(sep, maxsplit)`: `None` splits on runs of white space (dropping empty parts);
/// a negative `maxsplit` means no limit. An empty separator is `"empty separator"`.
pub fn py_split(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<String>, String> {
    let mut maxcount = max_count(maxsplit);
    let mut parts = Vec::new();
    match sep {
        None => {
            let mut rest = s;
            while maxcount > 0 {
                rest = rest.trim_start_matches(unicode::is_space);
                if rest.is_empty() {
                    break;
                }
                let end = rest.find(unicode::is_space).unwrap_or(rest.len());
                parts.push(rest.get(..end).unwrap_or("").to_string());
                rest = rest.get(end..).unwrap_or("");
                maxcount -= 1;
            }
            let rest = rest.trim_start_matches(unicode::is_space);
            if !rest.is_empty() {
                parts.push(rest.to_string());
            }
        }
        Some("") => return Err("empty separator".to_string()),
        Some(sep) => {
            let mut rest = s;
            while maxcount > 0 {
                match rest.find(sep) {
                    Some(b) => {
                        parts.push(rest.get(..b).unwrap_or("").to_string());
                        rest = rest.get(b + sep.len()..).unwrap_or("");
                        maxcount -= 1;
                    }
                    None => break,
                }
            }
            parts.push(rest.to_string());
        }
    }
    Ok(parts)
}

/// `s.rsplit(sep, maxsplit)`: like [`py_split`] but splitting from the right.
pub fn py_rsplit(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<String>, String> {
    let mut maxcount = max_count(maxsplit);
    let mut parts = Vec::new();
    match sep {
        None => {
            let mut rest = s;
            while maxcount > 0 {
                rest = rest.trim_end_matches(unicode::is_space);
                if rest.is_empty() {
                    break;
                }
                let start = rest.rfind(unicode::is_space).map_or(0, |b| {
                    b + rest
                        .get(b..)
                        .and_then(|t| t.chars().next())
                        .map_or(1, char::len_utf8)
                });
                parts.push(rest.get(start..).unwrap_or("").to_string());
                rest = rest.get(..start).unwrap_or("");
                maxcount -= 1;
            }
            let rest = rest.trim_end_matches(unicode::is_space);
            if !rest.is_empty() {
                parts.push(rest.to_string());
            }
        }
        Some("") => return Err("empty separator".to_string()),
        Some(sep) => {
            let mut rest = s;
            while maxcount > 0 {
                match rest.rfind(sep) {
                    Some(b) => {
                        parts.push(rest.get(b + sep.len()..).unwrap_or("").to_string());
                        rest = rest.get(..b).unwrap_or("");
                        maxcount -= 1;
                    }
                    None => break,
                }
            }
            parts.push(rest.to_string());
        }
    }
    parts.reverse();
    Ok(parts)
}

/// `s.partition(sep)`; `None` when `sep` is empty ("empty separator").
pub fn py_partition<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str, &'a str)> {
    if sep.is_empty() {
        return None;
    }
    Some(match s.find(sep) {
        Some(b) => (
            s.get(..b).unwrap_or(""),
            s.get(b..b + sep.len()).unwrap_or(""),
            s.get(b + sep.len()..).unwrap_or(""),
        ),
        None => (s, "", ""),
    })
}

/// `s.rpartition(sep)`; `None` when `sep` is empty ("empty separator").
pub fn py_rpartition<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str, &'a str)> {
    if sep.is_empty() {
        return None;
    }
    Some(match s.rfind(sep) {
        Some(b) => (
            s.get(..b).unwrap_or(""),
            s.get(b..b + sep.len()).unwrap_or(""),
            s.get(b + sep.len()..).unwrap_or(""),
        ),
        None => ("", "", s),
    })
}

/// `s.splitlines(keepends)` with Python's line boundaries (`\n`, `\r`, `\r\n`, `\v`, `\f`,
/// `\x1c`-`\x1e`, `\x85`, `\u2028`, `\u2029`).
pub fn py_splitlines(s: &str, keepends: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let Some(b) = rest.find(unicode::is_linebreak) else {
            lines.push(rest.to_string());
            break;
        };
        let brk = if rest.get(b..).is_some_and(|t| t.starts_with("\r\n")) {
            2
        } else {
            rest.get(b..)
                .and_then(|t| t.chars().next())
                .map_or(1, char::len_utf8)
        };
        let end = if keepends { b + brk } else { b };
        lines.push(rest.get(..end).unwrap_or("").to_string());
        rest = rest.get(b + brk..).unwrap_or("");
    }
    lines
}

/// `s.strip(chars)`: `None` strips Python white space.
pub fn py_strip<'a>(s: &'a str, chars: Option<&str>) -> &'a str {
    match chars {
        None => s.trim_matches(unicode::is_space),
        Some(set) => s.trim_matches(|c: char| set.contains(c)),
    }
}

/// `s.lstrip(chars)`.
pub fn py_lstrip<'a>(s: &'a str, chars: Option<&str>) -> &'a str {
    match chars {
        None => s.trim_start_matches(unicode::is_space),
        Some(set) => s.trim_start_matches(|c: char| set.contains(c)),
    }
}

/// `s.rstrip(chars)`.
pub fn py_rstrip<'a>(s: &'a str, chars: Option<&str>) -> &'a str {
    match chars {
        None => s.trim_end_matches(unicode::is_space),
        Some(set) => s.trim_end_matches(|c: char| set.contains(c)),
    }
}

/// `s.removeprefix(prefix)`.
pub fn py_removeprefix<'a>(s: &'a str, prefix: &str) -> &'a str {
    s.strip_prefix(prefix).unwrap_or(s)
}

/// `s.removesuffix(suffix)`.
pub fn py_removesuffix<'a>(s: &'a str, suffix: &str) -> &'a str {
    if suffix.is_empty() {
        return s;
    }
    s.strip_suffix(suffix).unwrap_or(s)
}

/// `s.lower()` (full case mapping with the final-sigma rule).
pub fn py_lower(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        s.to_lowercase()
    }
}

/// `s.upper()` (full case mapping: `'ß'.upper() == 'SS'`).
pub fn py_upper(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_uppercase()
    } else {
        s.to_uppercase()
    }
}

/// `s.title()`: title-case after an uncased character, lower-case after a cased one.
pub fn py_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for (i, c) in s.char_indices() {
        if prev_cased {
            unicode::push_lower_in(&mut out, s, i, c);
        } else {
            unicode::push_title(&mut out, c);
        }
        prev_cased = unicode::is_cased(c);
    }
    out
}

/// `s.capitalize()`: the first character title-cased, the rest lower-cased.
pub fn py_capitalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        if i == 0 {
            unicode::push_title(&mut out, c);
        } else {
            unicode::push_lower_in(&mut out, s, i, c);
        }
    }
    out
}

/// `s.swapcase()`.
pub fn py_swapcase(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        if unicode::is_upper(c) {
            unicode::push_lower_in(&mut out, s, i, c);
        } else if unicode::is_lower(c) {
            unicode::push_upper(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Largest padding these helpers produce; wider requests are clamped so that an absurd width
/// cannot abort the process (CPython would raise MemoryError). Callers should enforce their own
/// memory limits well below this.
pub const MAX_PAD: i64 = 1 << 28;

fn push_fill(out: &mut String, fill: char, n: i64) {
    for _ in 0..n.clamp(0, MAX_PAD) {
        out.push(fill);
    }
}

/// `s.center(width, fill)` (CPython puts the odd extra fill on the left when `width` is odd).
pub fn py_center(s: &str, width: i64, fill: char) -> String {
    let len = char_len(s) as i64;
    if width <= len {
        return s.to_string();
    }
    let marg = width.min(MAX_PAD) - len;
    let left = marg / 2 + (marg & width & 1);
    let mut out = String::with_capacity(s.len() + marg.max(0) as usize * fill.len_utf8());
    push_fill(&mut out, fill, left);
    out.push_str(s);
    push_fill(&mut out, fill, marg - left);
    out
}

/// `s.ljust(width, fill)`.
pub fn py_ljust(s: &str, width: i64, fill: char) -> String {
    let len = char_len(s) as i64;
    if width <= len {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + (width.min(MAX_PAD) - len).max(0) as usize);
    out.push_str(s);
    push_fill(&mut out, fill, width.min(MAX_PAD) - len);
    out
}

/// `s.rjust(width, fill)`.
pub fn py_rjust(s: &str, width: i64, fill: char) -> String {
    let len = char_len(s) as i64;
    if width <= len {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + (width.min(MAX_PAD) - len).max(0) as usize);
    push_fill(&mut out, fill, width.min(MAX_PAD) - len);
    out.push_str(s);
    out
}

/// `s.zfill(width)`: zeros on the left, after a leading sign.
pub fn py_zfill(s: &str, width: i64) -> String {
    let len = char_len(s) as i64;
    if width <= len {
        return s.to_string();
    }
    let mut out = String::with_capacity(width.min(MAX_PAD) as usize);
    let (sign, rest) = match s.as_bytes().first() {
        Some(b'+') => ("+", s.get(1..).unwrap_or("")),
        Some(b'-') => ("-", s.get(1..).unwrap_or("")),
        _ => ("", s),
    };
    out.push_str(sign);
    push_fill(&mut out, '0', width.min(MAX_PAD) - len);
    out.push_str(rest);
    out
}

/// `s.expandtabs(tabsize)`: the column restarts after `\n` and `\r`; `tabsize <= 0` drops tabs.
/// The added padding is clamped to [`MAX_PAD`] characters in total.
pub fn py_expandtabs(s: &str, tabsize: i64) -> String {
    if !s.contains('\t') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut col: i64 = 0;
    for c in s.chars() {
        if c == '\t' {
            if tabsize > 0 {
                let incr = tabsize - col % tabsize;
                // Total padding is bounded by MAX_PAD (CPython would raise MemoryError).
                let budget = (s.len() as i64 + MAX_PAD) - out.len() as i64;
                push_fill(&mut out, ' ', incr.min(budget));
                col = col.saturating_add(incr);
            }
        } else {
            out.push(c);
            col = col.saturating_add(1);
            if c == '\n' || c == '\r' {
                col = 0;
            }
        }
    }
    out
}

fn all_nonempty(s: &str, pred: impl Fn(char) -> bool) -> bool {
    !s.is_empty() && s.chars().all(pred)
}

/// `s.isdigit()`.
pub fn py_isdigit(s: &str) -> bool {
    all_nonempty(s, unicode::is_digit)
}

/// `s.isdecimal()`.
pub fn py_isdecimal(s: &str) -> bool {
    all_nonempty(s, unicode::is_decimal)
}

/// `s.isnumeric()`.
pub fn py_isnumeric(s: &str) -> bool {
    all_nonempty(s, unicode::is_numeric)
}

/// `s.isalpha()`.
pub fn py_isalpha(s: &str) -> bool {
    all_nonempty(s, unicode::is_alpha)
}

/// `s.isalnum()`.
pub fn py_isalnum(s: &str) -> bool {
    all_nonempty(s, unicode::is_alnum)
}

/// `s.isspace()`.
pub fn py_isspace(s: &str) -> bool {
    all_nonempty(s, unicode::is_space)
}

/// `s.isprintable()` (true for the empty string).
pub fn py_isprintable(s: &str) -> bool {
    s.chars().all(unicode::is_printable)
}

/// `s.isascii()`.
pub fn py_isascii(s: &str) -> bool {
    s.is_ascii()
}

/// `s.isupper()`: no lower-case or title-case characters and at least one upper-case one.
pub fn py_isupper(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if unicode::is_lower(c) || unicode::is_titlecase(c) {
            return false;
        }
        if unicode::is_upper(c) {
            cased = true;
        }
    }
    cased
}

/// `s.islower()`: no upper-case or title-case characters and at least one lower-case one.
pub fn py_islower(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if unicode::is_upper(c) || unicode::is_titlecase(c) {
            return false;
        }
        if unicode::is_lower(c) {
            cased = true;
        }
    }
    cased
}

/// `s.istitle()`.
pub fn py_istitle(s: &str) -> bool {
    let mut cased = false;
    let mut prev_cased = false;
    for c in s.chars() {
        if unicode::is_upper(c) || unicode::is_titlecase(c) {
            if prev_cased {
                return false;
            }
            prev_cased = true;
            cased = true;
        } else if unicode::is_lower(c) {
            if !prev_cased {
                return false;
            }
            prev_cased = true;
            cased = true;
        } else {
            prev_cased = false;
        }
    }
    cased
}

/// `sep.join(parts)`.
pub fn py_join<S: AsRef<str>>(sep: &str, parts: &[S]) -> String {
    let total: usize =
        parts.iter().map(|p| p.as_ref().len()).sum::<usize>() + sep.len() * parts.len();
    let mut out = String::with_capacity(total);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(p.as_ref());
    }
    out
}
