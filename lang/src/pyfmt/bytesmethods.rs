//! `bytes` methods with CPython's semantics: white space, letters and digits are ASCII
//! only, indexes count bytes. The position-only methods (`find`, `replace`, `center`, ...)
//! run the `str` implementations over the Latin-1 reading of the bytes (one character per
//! byte, so positions and widths agree) and read the result back.

use std::fmt::Write as _;

/// Appends CPython's `repr()` of a bytes value: `b'abc'`, `b"it's"`, `b'\x00\xff'`.
pub fn push_bytes_repr(out: &mut String, b: &[u8]) {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    out.reserve(b.len() + 3);
    out.push('b');
    out.push(quote as char);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c as char);
            }
            b' '..=b'~' => out.push(c as char),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(quote as char);
}

/// CPython's `repr()` of a bytearray: `bytearray(b'...')` with the quote `bytes` would
/// choose, but a `'` is escaped whichever quote it is (CPython's `bytearray_repr`).
pub fn push_bytearray_repr(out: &mut String, b: &[u8]) {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    out.reserve(b.len() + 14);
    out.push_str("bytearray(b");
    out.push(quote);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b' '..=b'~' => out.push(c as char),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(quote);
    out.push(')');
}

/// CPython's `repr()` of a bytes value.
pub fn bytes_repr(b: &[u8]) -> String {
    let mut out = String::new();
    push_bytes_repr(&mut out, b);
    out
}

/// The bytes read as Latin-1: one character per byte, U+0000 to U+00FF.
pub fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// The inverse of [`latin1`]: every character of `s` is at most U+00FF (a character past
/// it, which [`latin1`] never makes, keeps its low byte).
pub fn from_latin1(s: &str) -> Vec<u8> {
    s.chars().map(|c| (u32::from(c) & 0xff) as u8).collect()
}

/// ASCII white space as `bytes.split()` and `strip()` know it.
pub fn is_bytes_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn max_count(maxsplit: i64) -> usize {
    usize::try_from(maxsplit).unwrap_or(usize::MAX)
}

/// `b.split(None, maxsplit)`: runs of ASCII white space separate the parts.
pub fn bytes_split_ws(b: &[u8], maxsplit: i64) -> Vec<Vec<u8>> {
    let mut left = max_count(maxsplit);
    let mut parts = Vec::new();
    let mut i = 0;
    let n = b.len();
    loop {
        while i < n && is_bytes_space(b[i]) {
            i += 1;
        }
        if i >= n {
            break;
        }
        if left == 0 {
            // The rest keeps its trailing white space, as CPython's does.
            parts.push(b[i..].to_vec());
            break;
        }
        let start = i;
        while i < n && !is_bytes_space(b[i]) {
            i += 1;
        }
        parts.push(b[start..i].to_vec());
        left -= 1;
    }
    parts
}

/// `b.rsplit(None, maxsplit)`: as [`bytes_split_ws`], counting splits from the right.
pub fn bytes_rsplit_ws(b: &[u8], maxsplit: i64) -> Vec<Vec<u8>> {
    let mut left = max_count(maxsplit);
    let mut parts = Vec::new();
    let mut end = b.len();
    loop {
        while end > 0 && is_bytes_space(b[end - 1]) {
            end -= 1;
        }
        if end == 0 {
            break;
        }
        if left == 0 {
            parts.push(b[..end].to_vec());
            break;
        }
        let stop = end;
        while end > 0 && !is_bytes_space(b[end - 1]) {
            end -= 1;
        }
        parts.push(b[end..stop].to_vec());
        left -= 1;
    }
    parts.reverse();
    parts
}

/// `b.splitlines(keepends)`: lines end at `\n`, `\r` or `\r\n` only.
pub fn bytes_splitlines(b: &[u8], keepends: bool) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut i = 0;
    let n = b.len();
    while i < n {
        let start = i;
        while i < n && b[i] != b'\n' && b[i] != b'\r' {
            i += 1;
        }
        let mut eol = i;
        if i < n {
            if b[i] == b'\r' && i + 1 < n && b[i + 1] == b'\n' {
                i += 2;
            } else {
                i += 1;
            }
            if keepends {
                eol = i;
            }
        }
        parts.push(b[start..eol].to_vec());
    }
    parts
}

/// `b.strip(chars)` (`lstrip` with `right == false`, `rstrip` with `left == false`);
/// `None` strips ASCII white space.
pub fn bytes_strip<'a>(b: &'a [u8], chars: Option<&[u8]>, left: bool, right: bool) -> &'a [u8] {
    let strip = |c: u8| match chars {
        Some(set) => set.contains(&c),
        None => is_bytes_space(c),
    };
    let mut start = 0;
    let mut end = b.len();
    if left {
        while start < end && strip(b[start]) {
            start += 1;
        }
    }
    if right {
        while end > start && strip(b[end - 1]) {
            end -= 1;
        }
    }
    &b[start..end]
}

/// `b.swapcase()`.
pub fn bytes_swapcase(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| {
            if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// `b.capitalize()`: the first byte upper case, the rest lower case.
pub fn bytes_capitalize(b: &[u8]) -> Vec<u8> {
    b.iter()
        .enumerate()
        .map(|(i, &c)| {
            if i == 0 {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// `b.title()`: a letter after a non-letter upper case, any other letter lower case.
pub fn bytes_title(b: &[u8]) -> Vec<u8> {
    let mut prev_cased = false;
    b.iter()
        .map(|&c| {
            let out = if prev_cased {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            };
            prev_cased = c.is_ascii_alphabetic();
            out
        })
        .collect()
}

/// `b.islower()` / `b.isupper()`: some cased byte, and none of the other case.
pub fn bytes_is_case(b: &[u8], upper: bool) -> bool {
    let mut cased = false;
    for &c in b {
        if c.is_ascii_alphabetic() {
            if c.is_ascii_uppercase() != upper {
                return false;
            }
            cased = true;
        }
    }
    cased
}

/// `b.istitle()`.
pub fn bytes_istitle(b: &[u8]) -> bool {
    let mut cased = false;
    let mut prev_cased = false;
    for &c in b {
        if c.is_ascii_uppercase() {
            if prev_cased {
                return false;
            }
            prev_cased = true;
            cased = true;
        } else if c.is_ascii_lowercase() {
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

/// `b.hex(sep, bytes_per_sep)`: two lower-case digits per byte; with a separator, one
/// between every `|bytes_per_sep|` bytes, counted from the right when it is positive.
pub fn bytes_hex(b: &[u8], sep: Option<char>, per: i64) -> String {
    let mut out = String::with_capacity(b.len() * 3);
    let group = usize::try_from(per.unsigned_abs()).unwrap_or(usize::MAX);
    let sep = sep.filter(|_| group > 0 && group < b.len());
    let n = b.len();
    for (i, c) in b.iter().enumerate() {
        if let Some(s) = sep
            && i > 0
        {
            let at = if per > 0 {
                (n - i).is_multiple_of(group)
            } else {
                i.is_multiple_of(group)
            };
            if at {
                out.push(s);
            }
        }
        let _ = write!(out, "{c:02x}");
    }
    out
}

/// `bytes.fromhex(s)`: pairs of hex digits, ASCII white space allowed between pairs.
/// `Err` carries CPython's message.
pub fn bytes_fromhex(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    let mut i = 0;
    let digit = |c: u8| char::from(c).to_digit(16);
    // Positions count characters, as CPython's do.
    let pos = |byte: usize| s.get(..byte).map_or(byte, |h| h.chars().count());
    while i < b.len() {
        if is_bytes_space(b[i]) {
            i += 1;
            continue;
        }
        let Some(hi) = digit(b[i]) else {
            return Err(format!(
                "non-hexadecimal number found in fromhex() arg at position {}",
                pos(i)
            ));
        };
        let Some(lo) = b.get(i + 1).and_then(|&c| digit(c)) else {
            return Err(format!(
                "non-hexadecimal number found in fromhex() arg at position {}",
                pos(i + 1)
            ));
        };
        out.push((hi * 16 + lo) as u8);
        i += 2;
    }
    Ok(out)
}
