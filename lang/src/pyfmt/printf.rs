//! The `%` operator on str (printf-style formatting), ported from CPython's
//! `PyUnicode_Format` with the error messages of CPython 3.11/3.12.

use std::fmt::Write as _;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive};

use super::float::{float_to_int_checked, int_to_float, push_double, push_float_repr};
use super::int::u64_digits;
use super::strmethods::{ascii_escape, char_len};

/// One value on the right of `%`. Python `int`, `bool` and `float` values are passed as
/// themselves, a Python `str` as [`PrintfArg::Str`] with its `repr()`, and any other value as
/// [`PrintfArg::Obj`] with its type name, `str()` and `repr()` already computed (the type name
/// appears in TypeError messages such as `%d format: a real number is required, not list`).
#[derive(Clone, Debug, PartialEq)]
pub enum PrintfArg {
    Int(BigInt),
    /// An int that fits an `i64` (avoids building a `BigInt`).
    I64(i64),
    /// `%s` gives `True`/`False`, `%d` gives `1`/`0`.
    Bool(bool),
    Float(f64),
    /// A Python str: `str` is the value itself, `repr` its `repr()` (see [`super::str_repr`]).
    Str {
        str: String,
        repr: String,
    },
    /// A `bytes` value: `text` is its bytes read as Latin-1 (one char a byte), `repr` its
    /// `repr()`. Only `bytes % args` inserts the bytes themselves (`%s`, `%b`).
    Bytes {
        text: String,
        repr: String,
    },
    /// Any other value.
    Obj {
        type_name: String,
        str: String,
        repr: String,
    },
}

impl PrintfArg {
    fn type_name(&self) -> &str {
        match self {
            PrintfArg::Int(_) | PrintfArg::I64(_) => "int",
            PrintfArg::Bool(_) => "bool",
            PrintfArg::Float(_) => "float",
            PrintfArg::Str { .. } => "str",
            PrintfArg::Bytes { .. } => "bytes",
            PrintfArg::Obj { type_name, .. } => type_name,
        }
    }

    fn push_str_form(&self, out: &mut String) {
        match self {
            PrintfArg::Int(v) => {
                let _ = write!(out, "{v}");
            }
            PrintfArg::I64(v) => {
                let _ = write!(out, "{v}");
            }
            PrintfArg::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            PrintfArg::Float(x) => push_float_repr(out, *x),
            PrintfArg::Str { str, .. } | PrintfArg::Obj { str, .. } => out.push_str(str),
            PrintfArg::Bytes { repr, .. } => out.push_str(repr),
        }
    }

    fn push_repr_form(&self, out: &mut String) {
        match self {
            PrintfArg::Str { repr, .. }
            | PrintfArg::Bytes { repr, .. }
            | PrintfArg::Obj { repr, .. } => out.push_str(repr),
            other => other.push_str_form(out),
        }
    }

    /// The value as an int, for `%d`-style conversions (`None` = not an int).
    fn as_int(&self) -> Option<IntVal<'_>> {
        match self {
            PrintfArg::Int(v) => Some(match v.to_i64() {
                Some(i) => IntVal::Small(i),
                None => IntVal::Big(v),
            }),
            PrintfArg::I64(v) => Some(IntVal::Small(*v)),
            PrintfArg::Bool(b) => Some(IntVal::Small(i64::from(*b))),
            _ => None,
        }
    }
}

/// An int argument without cloning big values.
enum IntVal<'a> {
    Small(i64),
    Big(&'a BigInt),
}

impl IntVal<'_> {
    fn to_i64(&self) -> Option<i64> {
        match self {
            IntVal::Small(i) => Some(*i),
            IntVal::Big(_) => None,
        }
    }
}

/// A mapping lookup for `%(key)s`: returns the value or an error (the caller's KeyError).
pub type PrintfLookup<'a> = &'a mut dyn FnMut(&str) -> Result<PrintfArg, String>;

/// The right operand of `%`.
pub enum PrintfArgs<'a> {
    /// A tuple: its items are the arguments.
    Tuple(&'a [PrintfArg]),
    /// Any other single value.
    Single(&'a PrintfArg),
    /// A single value that is a mapping (has `__getitem__` and is not a tuple or str): it
    /// serves `%(key)s` through the lookup, and unused arguments are not an error.
    Mapping(&'a PrintfArg, PrintfLookup<'a>),
}

/// `fmt % args` where `args` is a tuple. Errors carry CPython's messages; see
/// [`super::error_kind`] for the exception class of each.
pub fn printf_format(fmt: &str, args: &[PrintfArg]) -> Result<String, String> {
    printf_format_args(fmt, PrintfArgs::Tuple(args))
}

enum Held<'a> {
    Borrowed(&'a PrintfArg),
    Owned(PrintfArg),
}

impl Held<'_> {
    fn get(&self) -> &PrintfArg {
        match self {
            Held::Borrowed(a) => a,
            Held::Owned(a) => a,
        }
    }
}

struct Args<'a> {
    tuple: Option<&'a [PrintfArg]>,
    idx: usize,
    single: Option<Held<'a>>,
    lookup: Option<PrintfLookup<'a>>,
}

impl<'a> Args<'a> {
    fn next(&mut self) -> Result<Held<'a>, String> {
        let err = || "not enough arguments for format string".to_string();
        match self.tuple {
            Some(items) => {
                let item = items.get(self.idx).ok_or_else(err)?;
                self.idx += 1;
                Ok(Held::Borrowed(item))
            }
            None => self.single.take().ok_or_else(err),
        }
    }
}

const F_LJUST: u8 = 1;
const F_SIGN: u8 = 2;
const F_BLANK: u8 = 4;
const F_ALT: u8 = 8;
const F_ZERO: u8 = 16;

/// Largest width or precision accepted (CPython allows up to `sys.maxsize`; this bound keeps
/// a hostile format from exhausting memory).
const MAX_WIDTH: i64 = 1 << 28;

struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    idx: usize,
    /// Largest result in bytes ([`printf_format_bounded`]).
    max: usize,
    /// Formatting `bytes % args` ([`printf_bytes_bounded`]): the text is Latin-1.
    bytes: bool,
}

impl Cursor<'_> {
    /// The error for a width or precision `n` over a bound: the size bound of the
    /// result when `n` exceeds it, else CPython's `"{what} too big"`.
    fn too_big(&self, n: i64, what: &str) -> String {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n > self.max {
            super::too_large(n, self.max)
        } else {
            format!("{what} too big")
        }
    }

    /// Largest width or precision: [`MAX_WIDTH`] or the result bound.
    fn max_width(&self) -> i64 {
        MAX_WIDTH.min(i64::try_from(self.max).unwrap_or(i64::MAX))
    }
}

impl Cursor<'_> {
    fn next(&mut self) -> Option<char> {
        let c = self.s.get(self.pos..)?.chars().next()?;
        self.pos += c.len_utf8();
        self.idx += 1;
        Some(c)
    }
}

/// `fmt % args` for any right operand.
pub fn printf_format_args(fmt: &str, args: PrintfArgs<'_>) -> Result<String, String> {
    printf_format_bounded(fmt, args, usize::MAX)
}

/// [`printf_format_args`] refusing results over `max` bytes: a width or precision above
/// `max`, or output growing past it, is an error of kind MemoryError ([`super::too_large`]),
/// raised before the padding is built.
pub fn printf_format_bounded(
    fmt: &str,
    args: PrintfArgs<'_>,
    max: usize,
) -> Result<String, String> {
    printf_impl(fmt, args, max, false)
}

/// `bytes % args` as CPython's `_PyBytes_FormatEx`: `fmt` and the result are bytes read
/// as Latin-1 (one char a byte, every char below 256). `%s`/`%b` insert a `bytes`
/// argument's bytes (anything else is CPython's TypeError), `%r`/`%a` the ASCII form of
/// the `repr`, `%c` one byte (an int below 256 or a one-byte `bytes`); numbers as in
/// [`printf_format_bounded`], with the same bound.
pub fn printf_bytes_bounded(fmt: &str, args: PrintfArgs<'_>, max: usize) -> Result<String, String> {
    printf_impl(fmt, args, max, true)
}

fn printf_impl(fmt: &str, args: PrintfArgs<'_>, max: usize, bytes: bool) -> Result<String, String> {
    let mut args = match args {
        PrintfArgs::Tuple(items) => Args {
            tuple: Some(items),
            idx: 0,
            single: None,
            lookup: None,
        },
        PrintfArgs::Single(a) => Args {
            tuple: None,
            idx: 0,
            single: Some(Held::Borrowed(a)),
            lookup: None,
        },
        PrintfArgs::Mapping(a, f) => Args {
            tuple: None,
            idx: 0,
            single: Some(Held::Borrowed(a)),
            lookup: Some(f),
        },
    };
    let mut out = String::with_capacity(fmt.len().min(max) + 16);
    let mut cur = Cursor {
        s: fmt,
        pos: 0,
        idx: 0,
        max,
        bytes,
    };
    loop {
        let rest = cur.s.get(cur.pos..).unwrap_or("");
        let Some(p) = rest.find('%') else {
            out.push_str(rest);
            break;
        };
        let lit = rest.get(..p).unwrap_or("");
        out.push_str(lit);
        cur.idx += char_len(lit) + 1;
        cur.pos += p + 1;
        format_one(&mut out, &mut cur, &mut args)?;
        if out.len() > max {
            return Err(super::too_large(out.len(), max));
        }
    }
    if out.len() > max {
        return Err(super::too_large(out.len(), max));
    }
    let unused = match args.tuple {
        Some(items) => args.idx < items.len(),
        None => args.single.is_some(),
    };
    if unused && args.lookup.is_none() {
        return Err("not all arguments converted during string formatting".to_string());
    }
    Ok(out)
}

fn star_value(arg: &PrintfArg) -> Option<IntVal<'_>> {
    arg.as_int()
}

fn format_one(out: &mut String, cur: &mut Cursor<'_>, args: &mut Args<'_>) -> Result<(), String> {
    let incomplete = || "incomplete format".to_string();
    let mut c = cur.next();
    if c == Some('%') {
        out.push('%');
        return Ok(());
    }
    if c == Some('(') {
        let Some(lookup) = args.lookup.as_mut() else {
            return Err("format requires a mapping".to_string());
        };
        let key_start = cur.pos;
        let mut depth = 1;
        let mut key_end = key_start;
        while depth > 0 {
            let pos = cur.pos;
            match cur.next() {
                Some(')') => {
                    depth -= 1;
                    key_end = pos;
                }
                Some('(') => depth += 1,
                Some(_) => {}
                None => return Err("incomplete format key".to_string()),
            }
        }
        let key = cur.s.get(key_start..key_end).unwrap_or("");
        let value = lookup(key)?;
        args.tuple = None;
        args.single = Some(Held::Owned(value));
        c = cur.next();
    }
    let mut flags = 0u8;
    loop {
        let f = match c {
            Some('-') => F_LJUST,
            Some('+') => F_SIGN,
            Some(' ') => F_BLANK,
            Some('#') => F_ALT,
            Some('0') => F_ZERO,
            _ => break,
        };
        flags |= f;
        c = cur.next();
    }
    let mut width: i64 = -1;
    if c == Some('*') {
        let held = args.next()?;
        let v = star_value(held.get()).ok_or("* wants int")?;
        let w = v
            .to_i64()
            .ok_or("Python int too large to convert to C ssize_t")?;
        if w < 0 {
            flags |= F_LJUST;
        }
        width = i64::try_from(w.unsigned_abs()).unwrap_or(i64::MAX);
        if width > cur.max_width() {
            return Err(cur.too_big(width, "width"));
        }
        c = cur.next();
    } else if let Some(d) = c.and_then(|ch| ch.to_digit(10)) {
        width = i64::from(d);
        loop {
            c = cur.next();
            let Some(d) = c.and_then(|ch| ch.to_digit(10)) else {
                break;
            };
            width = width.saturating_mul(10).saturating_add(i64::from(d));
        }
        if width > cur.max_width() {
            return Err(cur.too_big(width, "width"));
        }
    }
    let mut prec: i64 = -1;
    if c == Some('.') {
        prec = 0;
        c = cur.next();
        if c == Some('*') {
            let held = args.next()?;
            let v = star_value(held.get()).ok_or("* wants int")?;
            let p = v
                .to_i64()
                .and_then(|p| i32::try_from(p).ok())
                .ok_or("Python int too large to convert to C int")?;
            prec = i64::from(p.max(0));
            if prec > MAX_WIDTH {
                return Err("precision too big".to_string());
            }
            c = cur.next();
        } else if let Some(d) = c.and_then(|ch| ch.to_digit(10)) {
            prec = i64::from(d);
            loop {
                c = cur.next();
                let Some(d) = c.and_then(|ch| ch.to_digit(10)) else {
                    break;
                };
                prec = prec * 10 + i64::from(d);
                if prec > MAX_WIDTH {
                    return Err("precision too big".to_string());
                }
            }
        }
    }
    if matches!(c, Some('h' | 'l' | 'L')) {
        c = cur.next();
    }
    let conv = c.ok_or_else(incomplete)?;
    // A precision truncates `%s`/`%r`/`%a` but makes numbers that many digits long.
    if !matches!(conv, 's' | 'r' | 'a') && prec > cur.max_width() {
        return Err(cur.too_big(prec, "precision"));
    }
    let conv_index = cur.idx - 1;
    let held = args.next()?;
    let arg = held.get();
    let mut text = String::new();
    let mut sign = false;
    if cur.bytes && matches!(conv, 's' | 'b' | 'r' | 'a' | 'c') {
        let shown = match conv {
            's' | 'b' => match arg {
                PrintfArg::Bytes { text: t, .. } => {
                    text.push_str(t);
                    's'
                }
                other => {
                    return Err(format!(
                        "%b requires a bytes-like object, or an object that implements \
                         __bytes__, not '{}'",
                        other.type_name()
                    ));
                }
            },
            'r' | 'a' => {
                let mut r = String::new();
                arg.push_repr_form(&mut r);
                text = ascii_escape(&r);
                'a'
            }
            _ => {
                let byte = match arg {
                    PrintfArg::Bytes { text: t, .. } if t.chars().count() == 1 => t.chars().next(),
                    PrintfArg::Int(_) | PrintfArg::I64(_) | PrintfArg::Bool(_) => {
                        let v = arg.as_int().and_then(|v| v.to_i64());
                        match v.and_then(|v| u8::try_from(v).ok()) {
                            Some(b) => Some(char::from(b)),
                            None => return Err("%c arg not in range(256)".to_string()),
                        }
                    }
                    _ => None,
                };
                text.push(byte.ok_or("%c requires an integer in range(256) or a single byte")?);
                'c'
            }
        };
        output_arg(out, shown, flags, width, prec, false, &text);
        return Ok(());
    }
    match conv {
        's' => arg.push_str_form(&mut text),
        'r' => arg.push_repr_form(&mut text),
        'a' => {
            let mut r = String::new();
            arg.push_repr_form(&mut r);
            text = ascii_escape(&r);
        }
        'i' | 'd' | 'u' | 'o' | 'x' | 'X' => {
            let from_float;
            let v = match arg {
                PrintfArg::Float(x) if !matches!(conv, 'o' | 'x' | 'X') => {
                    from_float = float_to_int_checked(*x)?;
                    match from_float.to_i64() {
                        Some(i) => IntVal::Small(i),
                        None => IntVal::Big(&from_float),
                    }
                }
                other => other.as_int().ok_or_else(|| {
                    if matches!(conv, 'o' | 'x' | 'X') {
                        format!(
                            "%{conv} format: an integer is required, not {}",
                            other.type_name()
                        )
                    } else {
                        format!(
                            "%{conv} format: a real number is required, not {}",
                            other.type_name()
                        )
                    }
                })?,
            };
            format_long(&mut text, &v, flags & F_ALT != 0, prec, conv);
            sign = true;
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let x = match arg {
                PrintfArg::Float(x) => *x,
                PrintfArg::I64(v) => *v as f64,
                PrintfArg::Bool(b) => f64::from(u8::from(*b)),
                PrintfArg::Int(v) => int_to_float(v).ok_or("int too large to convert to float")?,
                other => return Err(format!("must be real number, not {}", other.type_name())),
            };
            let p = if prec < 0 { 6 } else { prec };
            push_double(&mut text, x, conv, p, flags & F_ALT != 0, false, false);
            sign = true;
        }
        'c' => {
            let ch = match arg {
                PrintfArg::Str { str, .. } if char_len(str) == 1 => str.chars().next(),
                PrintfArg::Int(_) | PrintfArg::I64(_) | PrintfArg::Bool(_) => {
                    let cp = arg
                        .as_int()
                        .and_then(|v| v.to_i64())
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&cp| cp <= 0x10ffff)
                        .ok_or("%c arg not in range(0x110000)")?;
                    Some(
                        char::from_u32(cp)
                            .ok_or("%c arg is a surrogate code point, which a str cannot hold")?,
                    )
                }
                _ => None,
            };
            text.push(ch.ok_or("%c requires int or char")?);
        }
        other => {
            let shown = if (' '..='~').contains(&other) {
                other
            } else {
                '?'
            };
            return Err(format!(
                "unsupported format character '{shown}' (0x{:x}) at index {conv_index}",
                other as u32
            ));
        }
    }
    output_arg(out, conv, flags, width, prec, sign, &text);
    Ok(())
}

/// Port of `_PyUnicode_FormatLong`: sign, `0x`/`0o` prefix when `alt`, at least `prec` digits.
fn format_long(out: &mut String, v: &IntVal<'_>, alt: bool, prec: i64, conv: char) {
    let (base, prefix) = match conv {
        'o' => (8, "0o"),
        'x' => (16, "0x"),
        'X' => (16, "0X"),
        _ => (10, ""),
    };
    let upper = conv == 'X';
    let mut small = [0u8; 64];
    let heap;
    let (negative, digits): (bool, &[u8]) = match v {
        IntVal::Small(i) => (
            *i < 0,
            u64_digits(&mut small, i.unsigned_abs(), base, upper),
        ),
        IntVal::Big(b) => {
            let mut s = b.magnitude().to_str_radix(base);
            if upper {
                s.make_ascii_uppercase();
            }
            heap = s;
            (b.is_negative(), heap.as_bytes())
        }
    };
    if negative {
        out.push('-');
    }
    if alt {
        out.push_str(prefix);
    }
    for _ in 0..(prec - digits.len() as i64).max(0) {
        out.push('0');
    }
    out.push_str(std::str::from_utf8(digits).unwrap_or(""));
}

fn push_n(out: &mut String, c: char, n: i64) {
    for _ in 0..n.max(0) {
        out.push(c);
    }
}

/// Port of `unicode_format_arg_output`: precision truncation for `s r a`, sign, `0x` prefix
/// and padding.
fn output_arg(
    out: &mut String,
    conv: char,
    flags: u8,
    width: i64,
    prec: i64,
    mut sign: bool,
    text: &str,
) {
    let fill = if sign && flags & F_ZERO != 0 {
        '0'
    } else {
        ' '
    };
    let mut len = char_len(text) as i64;
    if (width == -1 || width <= len)
        && (prec == -1 || prec >= len)
        && flags & (F_SIGN | F_BLANK) == 0
    {
        out.push_str(text);
        return;
    }
    let mut body = text;
    if matches!(conv, 's' | 'r' | 'a') && prec >= 0 && len > prec {
        len = prec;
        let end = text
            .char_indices()
            .nth(prec as usize)
            .map_or(text.len(), |(b, _)| b);
        body = text.get(..end).unwrap_or(text);
    }
    let mut signchar = '\0';
    if sign {
        match body.chars().next() {
            Some(ch @ ('-' | '+')) => {
                signchar = ch;
                len -= 1;
                body = body.get(1..).unwrap_or("");
            }
            _ if flags & F_SIGN != 0 => signchar = '+',
            _ if flags & F_BLANK != 0 => signchar = ' ',
            _ => sign = false,
        }
    }
    let mut width = width.max(len);
    if sign {
        if fill != ' ' {
            out.push(signchar);
        }
        if width > len {
            width -= 1;
        }
    }
    let has_prefix = flags & F_ALT != 0 && matches!(conv, 'x' | 'X' | 'o');
    let mut prefix = "";
    if has_prefix {
        prefix = body.get(..2).unwrap_or("");
        body = body.get(2..).unwrap_or("");
        if fill != ' ' {
            out.push_str(prefix);
        }
        width = (width - 2).max(0);
        len -= 2;
    }
    if width > len && flags & F_LJUST == 0 {
        push_n(out, fill, width - len);
        width = len;
    }
    if fill == ' ' {
        if sign {
            out.push(signchar);
        }
        if has_prefix {
            out.push_str(prefix);
        }
    }
    out.push_str(body);
    if width > len {
        push_n(out, ' ', width - len);
    }
}
