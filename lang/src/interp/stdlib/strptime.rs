//! `datetime.strptime(date_string, format)`: CPython's common directives (`%Y %y %m %d
//! %H %I %M %S %f %p %b %B %a %A %j %z %Z %%`), case-insensitive names, whitespace in the
//! format matching any run of whitespace, and CPython's `ValueError` messages ("time data
//! ... does not match format ...", "unconverted data remains: ...", "... is a bad
//! directive in format ..."). Numeric fields take the longest run of digits (up to the
//! field's width) whose value is in range, as CPython's regular expressions do. One pass
//! over the format and the text: linear, no recursion.

use super::super::value::*;
use super::super::{Interp, R};
use std::rc::Rc;

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// What the parse found.
#[derive(Default)]
struct Parsed {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    hour: i64,
    hour12: Option<i64>,
    pm: Option<bool>,
    minute: i64,
    second: i64,
    micro: i64,
    yday: Option<i64>,
    /// UTC offset in microseconds (`%z`).
    offset: Option<i128>,
}

/// The longest prefix of at most `width` ASCII digits of `s` whose value is in
/// `lo..=hi` (at least `min` digits), with its length.
fn take_num(s: &[u8], min: usize, width: usize, lo: i64, hi: i64) -> Option<(i64, usize)> {
    let avail = s
        .iter()
        .take(width)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (min..=avail).rev().find_map(|n| {
        let v: i64 = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
        (lo..=hi).contains(&v).then_some((v, n))
    })
}

/// The longest name of `names` (full, or its 3-letter abbreviation) `s` starts with.
fn take_name(s: &[u8], names: &[&str], abbrev: bool) -> Option<(i64, usize)> {
    let lower: Vec<u8> = s.iter().take(16).map(u8::to_ascii_lowercase).collect();
    names.iter().enumerate().find_map(|(i, n)| {
        let n = if abbrev { &n[..3] } else { n };
        lower
            .starts_with(n.as_bytes())
            .then_some((i as i64, n.len()))
    })
}

impl Interp<'_> {
    pub(super) fn strptime(&mut self, text: &str, format: &str) -> R<Value> {
        let fb = format.as_bytes();
        // The format is checked for bad directives first, as CPython compiles it first.
        let mut i = 0;
        while i < fb.len() {
            if fb[i] == b'%' {
                match fb.get(i + 1) {
                    Some(c) if b"YymdHIMSfpbBaAjzZ%".contains(c) => i += 2,
                    Some(_) => {
                        let c = format[i + 1..].chars().next().unwrap_or('%');
                        return Err(self.err(
                            "ValueError",
                            format!(
                                "'{c}' is a bad directive in format {}",
                                crate::pyfmt::str_repr(format)
                            ),
                        ));
                    }
                    None => {
                        return Err(self.err(
                            "ValueError",
                            format!("stray % in format {}", crate::pyfmt::str_repr(format)),
                        ));
                    }
                }
            } else {
                i += format[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
        let mismatch = |it: &Self| {
            it.err(
                "ValueError",
                format!(
                    "time data {} does not match format {}",
                    crate::pyfmt::str_repr(text),
                    crate::pyfmt::str_repr(format)
                ),
            )
        };
        let s = text.as_bytes();
        let mut p = Parsed::default();
        let (mut fi, mut si) = (0usize, 0usize);
        while fi < fb.len() {
            let c = fb[fi];
            if c.is_ascii_whitespace() {
                while fi < fb.len() && fb[fi].is_ascii_whitespace() {
                    fi += 1;
                }
                let n = s[si..]
                    .iter()
                    .take_while(|b| b.is_ascii_whitespace())
                    .count();
                if n == 0 {
                    return Err(mismatch(self));
                }
                si += n;
                continue;
            }
            if c != b'%' {
                let ch = format[fi..].chars().next().unwrap_or('\0');
                let len = ch.len_utf8();
                let got = text[si..].chars().next();
                if got.is_none_or(|g| g.to_lowercase().ne(ch.to_lowercase())) {
                    return Err(mismatch(self));
                }
                fi += len;
                si += got.map_or(0, char::len_utf8);
                continue;
            }
            let d = fb[fi + 1];
            fi += 2;
            let rest = &s[si..];
            let got = match d {
                b'Y' => take_num(rest, 4, 4, 0, 9999).map(|(v, n)| {
                    p.year = Some(v);
                    n
                }),
                b'y' => take_num(rest, 2, 2, 0, 99).map(|(v, n)| {
                    p.year = Some(if v < 69 { 2000 + v } else { 1900 + v });
                    n
                }),
                b'm' => take_num(rest, 1, 2, 1, 12).map(|(v, n)| {
                    p.month = Some(v);
                    n
                }),
                b'd' => take_num(rest, 1, 2, 1, 31).map(|(v, n)| {
                    p.day = Some(v);
                    n
                }),
                b'H' => take_num(rest, 1, 2, 0, 23).map(|(v, n)| {
                    p.hour = v;
                    n
                }),
                b'I' => take_num(rest, 1, 2, 1, 12).map(|(v, n)| {
                    p.hour12 = Some(v);
                    n
                }),
                b'M' => take_num(rest, 1, 2, 0, 59).map(|(v, n)| {
                    p.minute = v;
                    n
                }),
                b'S' => take_num(rest, 1, 2, 0, 61).map(|(v, n)| {
                    p.second = v;
                    n
                }),
                b'j' => take_num(rest, 1, 3, 1, 366).map(|(v, n)| {
                    p.yday = Some(v);
                    n
                }),
                b'f' => take_num(rest, 1, 6, 0, 999_999).map(|(v, n)| {
                    p.micro = v * 10i64.pow(6 - n as u32);
                    n
                }),
                b'p' => {
                    let l: Vec<u8> = rest.iter().take(2).map(u8::to_ascii_lowercase).collect();
                    match l.as_slice() {
                        b"am" => {
                            p.pm = Some(false);
                            Some(2)
                        }
                        b"pm" => {
                            p.pm = Some(true);
                            Some(2)
                        }
                        _ => None,
                    }
                }
                b'B' | b'b' => take_name(rest, &MONTHS, d == b'b').map(|(v, n)| {
                    p.month = Some(v + 1);
                    n
                }),
                b'A' | b'a' => take_name(rest, &DAYS, d == b'a').map(|(_, n)| n),
                b'z' => self.take_offset(rest).map(|(us, n)| {
                    p.offset = Some(us);
                    n
                }),
                b'Z' => {
                    let l: Vec<u8> = rest.iter().take(3).map(u8::to_ascii_lowercase).collect();
                    // CPython matches the name but keeps the result naive.
                    if l == b"utc" || l == b"gmt" {
                        Some(3)
                    } else {
                        None
                    }
                }
                _ => (rest.first() == Some(&b'%')).then_some(1),
            };
            match got {
                Some(n) => si += n,
                None => return Err(mismatch(self)),
            }
        }
        if si < s.len() {
            return Err(self.err(
                "ValueError",
                format!("unconverted data remains: {}", &text[si..]),
            ));
        }
        let year = p.year.unwrap_or(1900);
        let (month, day) = match (p.yday, p.month, p.day) {
            (Some(j), None, None) => {
                let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
                let mut left = j;
                let mut m = 1;
                loop {
                    let dim = [
                        31,
                        if leap { 29 } else { 28 },
                        31,
                        30,
                        31,
                        30,
                        31,
                        31,
                        30,
                        31,
                        30,
                        31,
                    ][(m - 1) as usize];
                    if left <= dim || m == 12 {
                        break (m, left);
                    }
                    left -= dim;
                    m += 1;
                }
            }
            (_, m, d) => (m.unwrap_or(1), d.unwrap_or(1)),
        };
        let hour = match (p.hour12, p.pm) {
            (Some(h), Some(true)) => h % 12 + 12,
            (Some(h), _) => h % 12,
            (None, _) => p.hour,
        };
        let second = if p.second == 61 { 59 } else { p.second.min(59) };
        let tz = match p.offset {
            None => Value::None,
            Some(0) => self.stdlib_call_utc(),
            Some(us) => self.stdlib_fixed_offset(us),
        };
        let fields: Vec<Value> = vec![
            Value::Int(year),
            Value::Int(month),
            Value::Int(day),
            Value::Int(hour),
            Value::Int(p.minute),
            Value::Int(second),
            Value::Int(p.micro),
            tz,
        ];
        self.checked_datetime(fields)
    }

    /// `%z`: `Z`, `+HH`, `+HHMM`, `+HH:MM`, with optional seconds.
    fn take_offset(&self, s: &[u8]) -> Option<(i128, usize)> {
        if matches!(s.first(), Some(b'Z' | b'z')) {
            return Some((0, 1));
        }
        let sign: i128 = match s.first()? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let two = |at: usize| -> Option<i128> {
            let d = s.get(at..at + 2)?;
            d.iter()
                .all(u8::is_ascii_digit)
                .then(|| i128::from((d[0] - b'0') * 10 + (d[1] - b'0')))
        };
        let h = two(1)?;
        let mut n = 3;
        let colon = s.get(3) == Some(&b':');
        if colon {
            n += 1;
        }
        let m = two(n)?;
        n += 2;
        let mut sec = 0;
        if (colon && s.get(n) == Some(&b':')) || (!colon && two(n).is_some()) {
            if colon {
                n += 1;
            }
            sec = two(n)?;
            n += 2;
        }
        if h > 23 || m > 59 || sec > 59 {
            return None;
        }
        Some((sign * ((h * 3600 + m * 60 + sec) * 1_000_000), n))
    }

    /// `datetime.strptime(date_string, format)`: argument checks, then [`Self::strptime`].
    pub(super) fn strptime_args(
        &mut self,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let a = self.stdlib_args("strptime", &["date_string", "format"], 2, 2, args, kwargs)?;
        let mut strs: Vec<Rc<str>> = Vec::with_capacity(2);
        for i in 0..2 {
            match a.get(i) {
                Some(Value::Str(s)) => strs.push(s.to_rc()),
                other => {
                    let t = other.map_or_else(|| "NoneType".to_string(), |v| self.type_name_of(v));
                    return Err(self.err(
                        "TypeError",
                        format!("strptime() argument {} must be str, not {t}", i + 1),
                    ));
                }
            }
        }
        self.strptime(&strs[0], &strs[1])
    }
}
