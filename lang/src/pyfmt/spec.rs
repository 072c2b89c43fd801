//! The format-spec mini-language (`format(v, spec)`, f-string `{v:spec}`) for int, float and
//! str, ported from CPython's Python/formatter_unicode.c.

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use super::float::{int_to_float, push_double, push_float_repr};
use super::int::u64_digits;
use super::strmethods::char_len;
use super::unicode;

/// Largest padding (width times the fill's bytes) or number precision the `format_*`
/// functions build: beyond it they fail with a MemoryError-kind message
/// ([`super::too_large`]) before allocating, so a hostile spec cannot exhaust memory. The
/// interpreter refuses lower, configured bounds first. Numbers above `sys.maxsize` are
/// CPython's "Too many decimal digits in format string" when parsed.
pub const MAX_SPEC_NUMBER: usize = 1 << 28;

/// The backstop of [`MAX_SPEC_NUMBER`]: `precision` counts only where it makes digits.
fn check_spec_size(spec: &FormatSpec, precision_counts: bool) -> Result<(), String> {
    let fill = spec.fill.map_or(1, char::len_utf8);
    let width = spec.width.unwrap_or(0).saturating_mul(fill);
    let precision = if precision_counts {
        spec.precision.unwrap_or(0)
    } else {
        0
    };
    let need = width.max(precision);
    if need > MAX_SPEC_NUMBER {
        return Err(super::too_large(need, MAX_SPEC_NUMBER));
    }
    Ok(())
}

/// A parsed format spec: `[[fill]align][sign]["z"]["#"]["0"][width][grouping]["." precision][type]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FormatSpec {
    /// Explicit fill character (only together with an explicit `align`).
    pub fill: Option<char>,
    /// `<`, `>`, `^` or `=` when given.
    pub align: Option<char>,
    /// `+`, `-` or ` ` when given.
    pub sign: Option<char>,
    /// `z`: coerce negative zero to zero (floats only).
    pub no_neg_0: bool,
    /// `#`: alternate form.
    pub alt: bool,
    /// The `0` flag (only recognised without an explicit fill).
    pub zero: bool,
    pub width: Option<usize>,
    /// `,` or `_`.
    pub grouping: Option<char>,
    pub precision: Option<usize>,
    /// The presentation type character, when given.
    pub ty: Option<char>,
    /// The whole spec text when characters remain after the type. CPython's "Invalid format
    /// specifier '...' for object of type 'T'" names the value's type, so the `format_*`
    /// functions raise it (see [`FormatSpec::invalid_error`]).
    pub invalid: Option<Box<str>>,
}

impl FormatSpec {
    /// Whether the spec is empty (`format(v, '')` is `str(v)`).
    pub fn is_empty(&self) -> bool {
        *self == FormatSpec::default()
    }

    /// The "Invalid format specifier" error this spec carries, if any, for a value of
    /// type `type_name`.
    pub fn invalid_error(&self, type_name: &str) -> Option<String> {
        self.invalid.as_ref().map(|spec| {
            format!("Invalid format specifier '{spec}' for object of type '{type_name}'")
        })
    }
}

fn is_align(c: char) -> bool {
    matches!(c, '<' | '>' | '=' | '^')
}

/// Parses a run of (Unicode) decimal digits; `Ok(None)` when there is none.
fn parse_number(rest: &mut &str) -> Result<Option<usize>, String> {
    let mut value: usize = 0;
    let mut any = false;
    let mut consumed = 0;
    for c in rest.chars() {
        let Some(d) = unicode::decimal_value(c) else {
            break;
        };
        any = true;
        consumed += c.len_utf8();
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as usize))
            .filter(|&v| isize::try_from(v).is_ok())
            .ok_or_else(|| "Too many decimal digits in format string".to_string())?;
    }
    *rest = rest.get(consumed..).unwrap_or("");
    Ok(if any { Some(value) } else { None })
}

fn strip_char(rest: &mut &str, c: char) -> bool {
    match rest.strip_prefix(c) {
        Some(r) => {
            *rest = r;
            true
        }
        None => false,
    }
}

/// Parses a format spec without knowing the value's type. Trailing garbage is not an error
/// here: the `format_*` functions report it ("Invalid format specifier 'x' for object of type
/// 'int'"); use [`parse_format_spec_for`] to get that error at parse time.
pub fn parse_format_spec(spec: &str) -> Result<FormatSpec, String> {
    let mut f = FormatSpec::default();
    let mut rest = spec;
    let mut it = rest.chars();
    let c0 = it.next();
    let c1 = it.next();
    match (c0, c1) {
        (Some(fill), Some(align)) if is_align(align) => {
            f.fill = Some(fill);
            f.align = Some(align);
            rest = rest.get(fill.len_utf8() + 1..).unwrap_or("");
        }
        (Some(align), _) if is_align(align) => {
            f.align = Some(align);
            rest = rest.get(1..).unwrap_or("");
        }
        _ => {}
    }
    if let Some(c @ ('+' | '-' | ' ')) = rest.chars().next() {
        f.sign = Some(c);
        rest = rest.get(1..).unwrap_or("");
    }
    f.no_neg_0 = strip_char(&mut rest, 'z');
    f.alt = strip_char(&mut rest, '#');
    if f.fill.is_none() {
        f.zero = strip_char(&mut rest, '0');
    }
    f.width = parse_number(&mut rest)?;
    if strip_char(&mut rest, ',') {
        f.grouping = Some(',');
    }
    if strip_char(&mut rest, '_') {
        if f.grouping.is_some() {
            return Err("Cannot specify both ',' and '_'.".to_string());
        }
        f.grouping = Some('_');
    }
    if f.grouping == Some('_') && rest.starts_with(',') {
        return Err("Cannot specify both ',' and '_'.".to_string());
    }
    if strip_char(&mut rest, '.') {
        f.precision = parse_number(&mut rest)?;
        if f.precision.is_none() {
            return Err("Format specifier missing precision".to_string());
        }
    }
    let mut it = rest.chars();
    match (it.next(), it.next()) {
        (Some(_), Some(_)) => f.invalid = Some(spec.into()),
        (Some(t), None) => f.ty = Some(t),
        _ => {}
    }
    Ok(f)
}

/// [`parse_format_spec`] that also reports trailing garbage, naming `type_name` as CPython.
pub fn parse_format_spec_for(spec: &str, type_name: &str) -> Result<FormatSpec, String> {
    let f = parse_format_spec(spec)?;
    match f.invalid_error(type_name) {
        Some(e) => Err(e),
        None => Ok(f),
    }
}

fn char_for_message(c: char) -> String {
    let cp = c as u32;
    if cp > 32 && cp < 128 {
        c.to_string()
    } else {
        format!("\\x{cp:x}")
    }
}

/// CPython's thousands-separator check (done at parse time there, with the type's default
/// presentation type). Returns the grouping `(separator, group size)`.
fn check_grouping(spec: &FormatSpec, ty: char) -> Result<Option<(char, usize)>, String> {
    let Some(sep) = spec.grouping else {
        return Ok(None);
    };
    match ty {
        'd' | 'e' | 'f' | 'g' | 'E' | 'G' | '%' | 'F' | '\0' => Ok(Some((sep, 3))),
        'b' | 'o' | 'x' | 'X' if sep == '_' => Ok(Some((sep, 4))),
        _ => Err(format!(
            "Cannot specify '{sep}' with '{}'.",
            char_for_message(ty)
        )),
    }
}

fn unknown_code(ty: char, type_name: &str) -> String {
    format!(
        "Unknown format code '{}' for object of type '{type_name}'",
        char_for_message(ty)
    )
}

fn check_invalid(spec: &FormatSpec, type_name: &str) -> Result<(), String> {
    match spec.invalid_error(type_name) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn push_fill(out: &mut String, fill: char, n: i64) {
    for _ in 0..n.max(0) {
        out.push(fill);
    }
}

/// The pieces of a formatted number, laid out by [`push_number`].
struct Number<'a> {
    negative: bool,
    prefix: &'a str,
    digits: &'a [u8],
    has_decimal: bool,
    remainder: &'a str,
}

/// Port of `calc_number_widths` + `fill_number`: padding, sign, prefix, grouping with
/// zero-padding through the separators.
fn push_number(
    out: &mut String,
    spec: &FormatSpec,
    num: &Number<'_>,
    grouping: Option<(char, usize)>,
) {
    let fill = spec.fill.unwrap_or(if spec.zero { '0' } else { ' ' });
    let align = spec.align.unwrap_or(if spec.zero { '=' } else { '>' });
    let width = spec.width.map_or(-1, |w| w as i64);
    let sign = match spec.sign {
        Some('+') => Some(if num.negative { '-' } else { '+' }),
        Some(' ') => Some(if num.negative { '-' } else { ' ' }),
        _ => num.negative.then_some('-'),
    };
    let n_remainder = char_len(num.remainder) as i64;
    let n_non_digit = i64::from(sign.is_some())
        + num.prefix.len() as i64
        + i64::from(num.has_decimal)
        + n_remainder;
    let min_width = if fill == '0' && align == '=' {
        width - n_non_digit
    } else {
        0
    };
    let n_digits = num.digits.len() as i64;
    // Total grouped length (digits, padding zeros and separators), per
    // _PyUnicode_InsertThousandsGrouping.
    let (padded, n_grouped) = if n_digits == 0 {
        (0, 0)
    } else {
        match grouping {
            None => {
                let t = n_digits.max(min_width).max(1);
                (t, t)
            }
            Some((_, g)) => {
                let g = g as i64;
                let mut remaining = n_digits;
                let mut mw = min_width;
                let mut groups = 0i64;
                let mut last;
                loop {
                    last = g.min(remaining.max(mw).max(1));
                    groups += 1;
                    remaining -= remaining.min(last).max(0);
                    mw -= last;
                    if remaining <= 0 && mw <= 0 {
                        break;
                    }
                    mw -= 1;
                }
                let t = (groups - 1) * g + last;
                (t, t + groups - 1)
            }
        }
    };
    let n_padding = width - (n_non_digit + n_grouped);
    let (lpad, spad, rpad) = if n_padding > 0 {
        match align {
            '<' => (0, 0, n_padding),
            '^' => (n_padding / 2, 0, n_padding - n_padding / 2),
            '=' => (0, n_padding, 0),
            _ => (n_padding, 0, 0),
        }
    } else {
        (0, 0, 0)
    };
    push_fill(out, fill, lpad);
    if let Some(s) = sign {
        out.push(s);
    }
    out.push_str(num.prefix);
    push_fill(out, fill, spad);
    if n_digits > 0 {
        let zeros = padded - n_digits;
        for i in 0..padded {
            if let Some((sep, g)) = grouping
                && i > 0
                && (padded - i) % g as i64 == 0
            {
                out.push(sep);
            }
            let c = if i < zeros {
                '0'
            } else {
                num.digits
                    .get((i - zeros) as usize)
                    .map_or('0', |&b| char::from(b))
            };
            out.push(c);
        }
    }
    if num.has_decimal {
        out.push('.');
    }
    out.push_str(num.remainder);
    push_fill(out, fill, rpad);
}

/// `d` (or no type) with nothing else: the output is `str(v)`.
fn is_plain_decimal(spec: &FormatSpec) -> bool {
    matches!(spec.ty, None | Some('d'))
        && spec.width.is_none()
        && spec.sign.is_none()
        && spec.grouping.is_none()
        && spec.precision.is_none()
        && !spec.alt
        && !spec.no_neg_0
        && spec.invalid.is_none()
}

enum Mag<'a> {
    Small(u64),
    Big(&'a BigInt),
}

/// `format(v, spec)` for an int (types `b c d o x X n`, `e E f F g G %` via float, `,`/`_`).
pub fn format_int(v: &BigInt, spec: &FormatSpec) -> Result<String, String> {
    if let Some(i) = v.to_i64() {
        return format_i64(i, spec);
    }
    let mut out = String::new();
    let negative = v.sign() == num_bigint::Sign::Minus;
    format_int_impl(&mut out, negative, Mag::Big(v), spec)?;
    Ok(out)
}

/// [`format_int`] for an `i64` without allocating a `BigInt`.
pub fn format_i64(v: i64, spec: &FormatSpec) -> Result<String, String> {
    if spec.is_empty() || is_plain_decimal(spec) {
        return Ok(v.to_string());
    }
    let mut out = String::new();
    format_int_impl(&mut out, v < 0, Mag::Small(v.unsigned_abs()), spec)?;
    Ok(out)
}

fn format_int_impl(
    out: &mut String,
    negative: bool,
    mag: Mag<'_>,
    spec: &FormatSpec,
) -> Result<(), String> {
    check_invalid(spec, "int")?;
    check_spec_size(spec, false)?;
    let ty = spec.ty.unwrap_or('d');
    let grouping = check_grouping(spec, ty)?;
    match ty {
        'b' | 'c' | 'd' | 'o' | 'x' | 'X' | 'n' => {}
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' => {
            let x = match mag {
                Mag::Small(m) => {
                    let f = m as f64;
                    if negative { -f } else { f }
                }
                Mag::Big(b) => int_to_float(b).ok_or("int too large to convert to float")?,
            };
            return format_float_into(out, x, spec, ty, grouping);
        }
        _ => return Err(unknown_code(ty, "int")),
    }
    if spec.precision.is_some() {
        return Err("Precision not allowed in integer format specifier".to_string());
    }
    if spec.no_neg_0 {
        return Err(
            "Negative zero coercion (z) not allowed in integer format specifier".to_string(),
        );
    }
    if ty == 'c' {
        if spec.sign.is_some() {
            return Err("Sign not allowed with integer format specifier 'c'".to_string());
        }
        if spec.alt {
            return Err(
                "Alternate form (#) not allowed with integer format specifier 'c'".to_string(),
            );
        }
        let cp = match mag {
            Mag::Small(m) if !negative && m <= 0x10ffff => m as u32,
            Mag::Small(_) => return Err("%c arg not in range(0x110000)".to_string()),
            Mag::Big(_) => return Err("Python int too large to convert to C long".to_string()),
        };
        let c = char::from_u32(cp)
            .ok_or("%c arg is a surrogate code point, which a str cannot hold")?;
        let mut buf = [0u8; 4];
        let num = Number {
            negative: false,
            prefix: "",
            digits: &[],
            has_decimal: false,
            remainder: c.encode_utf8(&mut buf),
        };
        push_number(out, spec, &num, None);
        return Ok(());
    }
    let (base, prefix) = match ty {
        'b' => (2, "0b"),
        'o' => (8, "0o"),
        'x' => (16, "0x"),
        'X' => (16, "0X"),
        _ => (10, ""),
    };
    let prefix = if spec.alt { prefix } else { "" };
    let upper = ty == 'X';
    let mut small = [0u8; 64];
    let heap;
    let digits: &[u8] = match mag {
        Mag::Small(m) => u64_digits(&mut small, m, base, upper),
        Mag::Big(b) => {
            let mut s = b.magnitude().to_str_radix(base);
            if upper {
                s.make_ascii_uppercase();
            }
            heap = s;
            heap.as_bytes()
        }
    };
    let grouping = if ty == 'n' { None } else { grouping };
    let num = Number {
        negative,
        prefix,
        digits,
        has_decimal: false,
        remainder: "",
    };
    push_number(out, spec, &num, grouping);
    Ok(())
}

/// `format(x, spec)` for a float (types `''`, `e E f F g G n %`). With no type and no
/// precision it is `repr(x)`; with no type and a precision it is like `g` but keeps at least
/// one digit after the point.
pub fn format_float(x: f64, spec: &FormatSpec) -> Result<String, String> {
    if spec.is_empty() {
        let mut s = String::with_capacity(24);
        push_float_repr(&mut s, x);
        return Ok(s);
    }
    check_invalid(spec, "float")?;
    let ty = spec.ty.unwrap_or('\0');
    let grouping = check_grouping(spec, ty)?;
    match ty {
        '\0' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 'n' | '%' => {}
        _ => return Err(unknown_code(ty, "float")),
    }
    let mut out = String::new();
    format_float_into(&mut out, x, spec, ty, grouping)?;
    Ok(out)
}

fn format_float_into(
    out: &mut String,
    mut x: f64,
    spec: &FormatSpec,
    ty: char,
    grouping: Option<(char, usize)>,
) -> Result<(), String> {
    let precision = spec.precision.map(|p| p as i64);
    if precision.is_some_and(|p| p > i64::from(i32::MAX)) {
        return Err("precision too big".to_string());
    }
    check_spec_size(spec, true)?;
    let (code, precision, add_dot_0) = match ty {
        '\0' => match precision {
            Some(p) => ('g', p, true),
            None => ('r', 0, true),
        },
        'n' => ('g', precision.unwrap_or(6), false),
        '%' => {
            x *= 100.0;
            ('f', precision.unwrap_or(6), false)
        }
        c => (c, precision.unwrap_or(6), false),
    };
    let mut buf = String::new();
    push_double(
        &mut buf,
        x,
        code,
        precision,
        spec.alt,
        add_dot_0,
        spec.no_neg_0,
    );
    if ty == '%' {
        buf.push('%');
    }
    if spec.sign.is_none_or(|s| s == '-') && spec.width.is_none() && ty != 'n' && grouping.is_none()
    {
        if out.is_empty() {
            *out = buf;
        } else {
            out.push_str(&buf);
        }
        return Ok(());
    }
    let (negative, body) = match buf.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, buf.as_str()),
    };
    let n_int = body.bytes().take_while(u8::is_ascii_digit).count();
    let (int_part, tail) = body.split_at(n_int);
    let (has_decimal, remainder) = match tail.strip_prefix('.') {
        Some(r) => (true, r),
        None => (false, tail),
    };
    let grouping = if ty == 'n' { None } else { grouping };
    let num = Number {
        negative,
        prefix: "",
        digits: int_part.as_bytes(),
        has_decimal,
        remainder,
    };
    push_number(out, spec, &num, grouping);
    Ok(())
}

/// `format(s, spec)` for a str: type `s` or none, precision truncates, default alignment left.
pub fn format_str(s: &str, spec: &FormatSpec) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(s.to_string());
    }
    check_invalid(spec, "str")?;
    let ty = spec.ty.unwrap_or('s');
    check_grouping(spec, ty)?;
    if ty != 's' {
        return Err(unknown_code(ty, "str"));
    }
    match spec.sign {
        Some(' ') => return Err("Space not allowed in string format specifier".to_string()),
        Some(_) => return Err("Sign not allowed in string format specifier".to_string()),
        None => {}
    }
    if spec.no_neg_0 {
        return Err(
            "Negative zero coercion (z) not allowed in string format specifier".to_string(),
        );
    }
    if spec.alt {
        return Err("Alternate form (#) not allowed in string format specifier".to_string());
    }
    if spec.align == Some('=') {
        return Err("'=' alignment not allowed in string format specifier".to_string());
    }
    check_spec_size(spec, false)?;
    let mut text = s;
    let mut len = char_len(s);
    if let Some(p) = spec.precision
        && len > p
    {
        let end = s.char_indices().nth(p).map_or(s.len(), |(b, _)| b);
        text = s.get(..end).unwrap_or(s);
        len = p;
    }
    let width = spec.width.unwrap_or(0);
    if width <= len {
        return Ok(text.to_string());
    }
    let fill = spec.fill.unwrap_or(if spec.zero { '0' } else { ' ' });
    let total = (width - len) as i64;
    let left = match spec.align.unwrap_or('<') {
        '>' => total,
        '^' => total / 2,
        _ => 0,
    };
    let mut out = String::with_capacity(text.len() + total as usize * fill.len_utf8());
    push_fill(&mut out, fill, left);
    out.push_str(text);
    push_fill(&mut out, fill, total - left);
    Ok(out)
}

/// `format(v, spec)` for an int given the spec text (parse + [`format_int`]).
pub fn format_int_spec(v: &BigInt, spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(v.to_string());
    }
    format_int(v, &parse_format_spec(spec)?)
}

/// `format(v, spec)` for an `i64` given the spec text.
pub fn format_i64_spec(v: i64, spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(v.to_string());
    }
    format_i64(v, &parse_format_spec(spec)?)
}

/// `format(x, spec)` for a float given the spec text.
pub fn format_float_spec(x: f64, spec: &str) -> Result<String, String> {
    format_float(x, &parse_format_spec(spec)?)
}

/// `format(s, spec)` for a str given the spec text.
pub fn format_str_spec(s: &str, spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(s.to_string());
    }
    format_str(s, &parse_format_spec(spec)?)
}
