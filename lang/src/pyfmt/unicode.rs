//! Per-character Unicode predicates and case mappings with CPython's definitions.
//!
//! Character classes (`isalpha`, `isdecimal`, `isprintable`, ...) come from generated tables
//! (see `tables.rs`); upper/lower predicates and mappings use Rust's `char` methods.

use std::cmp::Ordering;

use super::tables;

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                Ordering::Less
            } else if lo > c {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// `Py_UNICODE_ISPRINTABLE`: what `repr` leaves unescaped.
pub fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    in_table(tables::PRINTABLE, c)
}

/// `str.isspace` for one character (includes `\x1c`..`\x1f`, `\x85`, `\xa0`, ...).
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        return matches!(
            c,
            ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1f'
        );
    }
    in_table(tables::SPACE, c)
}

/// `str.isalpha` for one character (general categories Lu, Ll, Lt, Lm, Lo).
pub fn is_alpha(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    in_table(tables::ALPHA, c)
}

/// The value of a Unicode decimal digit (`str.isdecimal`), as `int()` and `float()` read it.
pub fn decimal_value(c: char) -> Option<u32> {
    if c.is_ascii() {
        return c.to_digit(10);
    }
    let cp = c as u32;
    let table = tables::DECIMAL;
    let idx = table.partition_point(|&(lo, _)| lo <= cp);
    let &(lo, hi) = table.get(idx.checked_sub(1)?)?;
    if cp <= hi { Some((cp - lo) % 10) } else { None }
}

/// `str.isdecimal` for one character.
pub fn is_decimal(c: char) -> bool {
    decimal_value(c).is_some()
}

/// `str.isdigit` for one character.
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_table(tables::DIGIT, c)
}

/// `str.isnumeric` for one character.
pub fn is_numeric(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_table(tables::NUMERIC, c)
}

/// `str.isalnum` for one character.
pub fn is_alnum(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    is_alpha(c) || is_decimal(c) || is_digit(c) || is_numeric(c)
}

/// Title-case letters (general category Lt).
pub fn is_titlecase(c: char) -> bool {
    !c.is_ascii() && in_table(tables::TITLECASE, c)
}

/// The Unicode `Cased` property.
pub fn is_cased(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    in_table(tables::CASED, c)
}

/// The Unicode `Case_Ignorable` property.
pub fn is_case_ignorable(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\'' | '.' | ':' | '^' | '`');
    }
    in_table(tables::CASE_IGNORABLE, c)
}

pub fn is_upper(c: char) -> bool {
    c.is_uppercase()
}

pub fn is_lower(c: char) -> bool {
    c.is_lowercase()
}

/// Appends the full title-case mapping of `c`.
pub fn push_title(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_uppercase());
        return;
    }
    match tables::TITLE_MAP.binary_search_by(|&(k, _)| k.cmp(&c)) {
        Ok(i) => {
            if let Some((_, t)) = tables::TITLE_MAP.get(i) {
                out.push_str(t);
            }
        }
        Err(_) => out.extend(c.to_uppercase()),
    }
}

/// Appends the full upper-case mapping of `c`.
pub fn push_upper(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_uppercase());
    } else {
        out.extend(c.to_uppercase());
    }
}

/// Appends the lower-case mapping of the character `c` found at byte offset `at` of `s`,
/// applying the Final_Sigma rule to U+03A3 as CPython's `lower_ucs4` does.
pub fn push_lower_in(out: &mut String, s: &str, at: usize, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else if c == '\u{3a3}' {
        out.push(capital_sigma_lower(s, at));
    } else {
        out.extend(c.to_lowercase());
    }
}

fn capital_sigma_lower(s: &str, at: usize) -> char {
    let before = s.get(..at).unwrap_or("");
    let prev = before.chars().rev().find(|&c| !is_case_ignorable(c));
    let mut final_sigma = prev.is_some_and(is_cased);
    if final_sigma {
        let after = s.get(at + '\u{3a3}'.len_utf8()..).unwrap_or("");
        let next = after.chars().find(|&c| !is_case_ignorable(c));
        final_sigma = next.is_none_or(|c| !is_cased(c));
    }
    if final_sigma { '\u{3c2}' } else { '\u{3c3}' }
}

/// Python line boundaries for `str.splitlines`.
pub fn is_linebreak(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}
