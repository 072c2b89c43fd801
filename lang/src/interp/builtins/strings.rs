//! Methods of `str` values (`split`, `join`, `find`, `format`, ...) with CPython's
//! semantics: indices count code points, whitespace and character classes are Unicode.

use super::args::{Kwargs, bind, index_of, is_exc, no_kwargs, one, opt_index, range_args, tname};
use crate::interp::value::{PyStr, Value};
use crate::interp::{Interp, Interrupt};
use crate::pyfmt;
use std::rc::Rc;

pub(super) use pyfmt::{ascii_escape, char_len};

type R<T> = Result<T, Interrupt>;

/// Refuse padding `s` to `width` characters with `fill` when the result would exceed
/// `Limits::max_string_bytes` (checked before building it).
fn check_pad(it: &Interp, s: &str, width: i64, fill: char) -> R<()> {
    let width = usize::try_from(width.max(0)).unwrap_or(usize::MAX);
    let pad = width
        .saturating_sub(char_len(s))
        .saturating_mul(fill.len_utf8());
    it.check_str_len(s.len().saturating_add(pad))
}

/// An upper bound of the number of parts `split`/`rsplit` (or `splitlines`, with `sep`
/// `None` and `lines`) make of `s`, counted only when `s` is long enough to exceed the
/// item limit, and refused beyond it before any part is built.
fn check_parts(it: &Interp, s: &str, sep: Option<&str>, maxsplit: i64, lines: bool) -> R<()> {
    if s.len() < it.max_collection_items() {
        return Ok(());
    }
    let parts = if lines {
        s.chars()
            .filter(|c| crate::pyfmt::unicode::is_linebreak(*c))
            .count()
            .saturating_add(1)
    } else {
        let n = match sep {
            Some(sep) => s.matches(sep).count().saturating_add(1),
            None => s.split(is_ws).filter(|w| !w.is_empty()).count(),
        };
        match usize::try_from(maxsplit) {
            Ok(m) => n.min(m.saturating_add(1)),
            Err(_) => n,
        }
    };
    it.check_items(parts)
}

pub(super) const METHODS: &[&str] = &[
    "split",
    "rsplit",
    "splitlines",
    "join",
    "strip",
    "lstrip",
    "rstrip",
    "lower",
    "upper",
    "casefold",
    "replace",
    "startswith",
    "endswith",
    "find",
    "rfind",
    "index",
    "rindex",
    "count",
    "format",
    "format_map",
    "isdigit",
    "isalpha",
    "isalnum",
    "isspace",
    "isupper",
    "islower",
    "isdecimal",
    "isnumeric",
    "istitle",
    "isidentifier",
    "isprintable",
    "isascii",
    "title",
    "capitalize",
    "swapcase",
    "center",
    "ljust",
    "rjust",
    "zfill",
    "partition",
    "rpartition",
    "encode",
    "expandtabs",
    "removeprefix",
    "removesuffix",
    "maketrans",
    "translate",
];

/// `format(v, spec)`: `str(v)` for an empty spec, else the format mini-language.
pub fn format_value(it: &mut Interp, v: &Value, spec: &str) -> R<String> {
    if spec.is_empty() {
        return it.to_str(v);
    }
    it.format_value(v, spec)
}

fn new_str(s: String) -> Value {
    Value::Str(PyStr::from(s))
}

fn int(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A `str` argument, or CPython's "must be str, not X".
fn str_arg<'a>(it: &Interp, v: &'a Value, what: &str) -> R<&'a PyStr> {
    match v {
        Value::Str(s) => Ok(s),
        other => {
            let t = tname(it, other);
            Err(it.err("TypeError", format!("{what}must be str, not {t}")))
        }
    }
}

/// `(sub, start, end)` arguments of `find`/`index`/`count`/...
fn sub_args(
    it: &mut Interp,
    fname: &str,
    args: Vec<Value>,
    kwargs: &Kwargs,
) -> R<(Rc<str>, Option<i64>, Option<i64>)> {
    range_args(it, fname, &args, kwargs, 1, 3)?;
    let sub = str_arg(it, &args[0], "")?.to_rc();
    let s = opt_index(it, args.get(1))?;
    let e = opt_index(it, args.get(2))?;
    Ok((sub, s, e))
}

fn is_ws(c: char) -> bool {
    pyfmt::unicode::is_space(c)
}

/// `str.split(sep=None, maxsplit=-1)`: `pyfmt::py_split` making the `str` values directly
/// from slices (one allocation per part: `split` is a hot path).
pub(super) fn split(s: &str, sep: Option<&str>, maxsplit: i64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut left = if maxsplit < 0 {
        usize::MAX
    } else {
        usize::try_from(maxsplit).unwrap_or(usize::MAX)
    };
    match sep {
        Some(sep) => {
            let mut rest = s;
            while left > 0 {
                match rest.find(sep) {
                    Some(i) => {
                        out.push(Value::str(&rest[..i]));
                        rest = &rest[i + sep.len()..];
                        left -= 1;
                    }
                    None => break,
                }
            }
            out.push(Value::str(rest));
        }
        None => {
            let mut rest = s.trim_start_matches(is_ws);
            while !rest.is_empty() {
                if left == 0 {
                    out.push(Value::str(rest));
                    break;
                }
                match rest.find(is_ws) {
                    Some(i) => {
                        out.push(Value::str(&rest[..i]));
                        rest = rest[i..].trim_start_matches(is_ws);
                        left -= 1;
                    }
                    None => {
                        out.push(Value::str(rest));
                        break;
                    }
                }
            }
        }
    }
    out
}

/// `str.rsplit(sep=None, maxsplit=-1)`, like [`split`].
fn rsplit(s: &str, sep: Option<&str>, maxsplit: i64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut left = if maxsplit < 0 {
        usize::MAX
    } else {
        usize::try_from(maxsplit).unwrap_or(usize::MAX)
    };
    match sep {
        Some(sep) => {
            let mut rest = s;
            while left > 0 {
                match rest.rfind(sep) {
                    Some(i) => {
                        out.push(Value::str(&rest[i + sep.len()..]));
                        rest = &rest[..i];
                        left -= 1;
                    }
                    None => break,
                }
            }
            out.push(Value::str(rest));
        }
        None => {
            let mut rest = s.trim_end_matches(is_ws);
            while !rest.is_empty() {
                if left == 0 {
                    out.push(Value::str(rest));
                    break;
                }
                match rest.rfind(is_ws) {
                    Some(i) => {
                        let c = rest[i..].chars().next().map_or(1, char::len_utf8);
                        out.push(Value::str(&rest[i + c..]));
                        rest = rest[..i].trim_end_matches(is_ws);
                        left -= 1;
                    }
                    None => {
                        out.push(Value::str(rest));
                        break;
                    }
                }
            }
        }
    }
    out.reverse();
    out
}

/// `sep.join(items)`.
fn join(it: &mut Interp, sep: &str, src: &Value) -> R<Value> {
    fn push_all(it: &mut Interp, sep: &str, items: &[Value]) -> R<String> {
        it.check_deadline()?;
        let mut total = sep.len().saturating_mul(items.len().saturating_sub(1));
        for (i, v) in items.iter().enumerate() {
            match v {
                Value::Str(s) => total = total.saturating_add(s.len()),
                other => {
                    let t = tname(it, other);
                    return Err(it.err(
                        "TypeError",
                        format!("sequence item {i}: expected str instance, {t} found"),
                    ));
                }
            }
        }
        it.check_str_len(total)?;
        let mut out = String::with_capacity(total);
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            if let Value::Str(s) = v {
                out.push_str(s);
            }
        }
        Ok(out)
    }
    let out = match src {
        Value::List(l) => {
            let b = l.borrow();
            if b.len() == 1
                && let Value::Str(s) = &b[0]
            {
                return Ok(Value::Str(s.clone()));
            }
            push_all(it, sep, &b)?
        }
        Value::Tuple(t) => push_all(it, sep, t)?,
        other => {
            let items = it.iterate(other)?;
            push_all(it, sep, &items)?
        }
    };
    Ok(new_str(out))
}

/// `(width, fillchar)` of `center`/`ljust`/`rjust`.
fn pad_args(it: &mut Interp, fname: &str, args: Vec<Value>, kwargs: &Kwargs) -> R<(i64, char)> {
    range_args(it, fname, &args, kwargs, 1, 2)?;
    let w = index_of(it, &args[0])?;
    let fill = match args.get(1) {
        None => ' ',
        Some(Value::Str(f)) => {
            let mut cs = f.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => c,
                _ => {
                    return Err(it.err(
                        "TypeError",
                        "The fill character must be exactly one character long",
                    ));
                }
            }
        }
        Some(other) => {
            let t = tname(it, other);
            return Err(it.err(
                "TypeError",
                format!("{fname}() argument 2 must be a unicode character, not {t}"),
            ));
        }
    };
    Ok((w, fill))
}

/// `str.casefold()` (full case folding of the common special cases over `lower`).
fn casefold(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            'ß' | 'ẞ' => out.push_str("ss"),
            'ς' => out.push('σ'),
            _ => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// `str.isidentifier()`.
fn is_identifier(s: &str) -> bool {
    let mut cs = s.chars();
    match cs.next() {
        Some(c) if c == '_' || c.is_alphabetic() => {}
        _ => return false,
    }
    cs.all(|c| c == '_' || c.is_alphanumeric() || pyfmt::unicode::is_decimal(c))
}

/// The same string when an operation changed nothing, else a new one.
fn same_or_new(s: &PyStr, t: &str) -> Value {
    if t.len() == s.len() {
        Value::Str(s.clone())
    } else {
        Value::str(t)
    }
}

fn prefix_match(
    it: &mut Interp,
    s: &str,
    args: Vec<Value>,
    kwargs: &Kwargs,
    fname: &str,
    at_end: bool,
) -> R<Value> {
    range_args(it, fname, &args, kwargs, 1, 3)?;
    let st = opt_index(it, args.get(1))?;
    let en = opt_index(it, args.get(2))?;
    let test = |p: &str| {
        if at_end {
            pyfmt::py_endswith(s, p, st, en)
        } else {
            pyfmt::py_startswith(s, p, st, en)
        }
    };
    match &args[0] {
        Value::Str(p) => Ok(Value::Bool(test(p))),
        Value::Tuple(ps) => {
            for p in ps.iter() {
                match p {
                    Value::Str(p) => {
                        if test(p) {
                            return Ok(Value::Bool(true));
                        }
                    }
                    other => {
                        let t = tname(it, other);
                        return Err(it.err(
                            "TypeError",
                            format!("tuple for {fname} must only contain str, not {t}"),
                        ));
                    }
                }
            }
            Ok(Value::Bool(false))
        }
        other => {
            let t = tname(it, other);
            Err(it.err(
                "TypeError",
                format!("{fname} first arg must be str or a tuple of str, not {t}"),
            ))
        }
    }
}

/// Methods of `str`.
pub(super) fn call_method(
    it: &mut Interp,
    s: &PyStr,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let v = match name {
        "split" | "rsplit" => {
            let [sep, max] = bind(it, name, args, kwargs, ["sep", "maxsplit"], 0)?;
            let sep = match &sep {
                None | Some(Value::None) => None,
                Some(Value::Str(p)) if p.is_empty() => {
                    return Err(it.err("ValueError", "empty separator"));
                }
                Some(Value::Str(p)) => Some(p.clone()),
                Some(other) => {
                    let t = tname(it, other);
                    return Err(it.err("TypeError", format!("must be str or None, not {t}")));
                }
            };
            let max = match &max {
                None => -1,
                Some(m) => index_of(it, m)?,
            };
            check_parts(it, s, sep.as_deref(), max, false)?;
            let parts = if name == "split" {
                split(s, sep.as_deref(), max)
            } else {
                rsplit(s, sep.as_deref(), max)
            };
            Value::list(parts)
        }
        "splitlines" => {
            let [keep] = bind(it, "splitlines", args, kwargs, ["keepends"], 0)?;
            let keep = match &keep {
                None => false,
                Some(k) => it.truthy(k)?,
            };
            check_parts(it, s, None, -1, true)?;
            Value::list(
                pyfmt::py_splitlines(s, keep)
                    .into_iter()
                    .map(new_str)
                    .collect(),
            )
        }
        "join" => {
            no_kwargs(it, "str.join", &kwargs)?;
            if args.len() != 1 {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "str.join() takes exactly one argument ({} given)",
                        args.len()
                    ),
                ));
            }
            join(it, s, &args[0])?
        }
        "strip" | "lstrip" | "rstrip" => {
            range_args(it, name, &args, &kwargs, 0, 1)?;
            let chars = match args.first() {
                None | Some(Value::None) => None,
                Some(Value::Str(c)) => Some(c.clone()),
                Some(other) => {
                    let t = tname(it, other);
                    return Err(it.err(
                        "TypeError",
                        format!("{name} arg must be None or str, not {t}"),
                    ));
                }
            };
            let t = match name {
                "strip" => pyfmt::py_strip(s, chars.as_deref()),
                "lstrip" => pyfmt::py_lstrip(s, chars.as_deref()),
                _ => pyfmt::py_rstrip(s, chars.as_deref()),
            };
            same_or_new(s, t)
        }
        "lower" | "upper" | "casefold" | "title" | "capitalize" | "swapcase" => {
            no_args(it, name, &args, &kwargs)?;
            let out = match name {
                "lower" => pyfmt::py_lower(s),
                "upper" => pyfmt::py_upper(s),
                "casefold" => casefold(s),
                "title" => pyfmt::py_title(s),
                "capitalize" => pyfmt::py_capitalize(s),
                _ => pyfmt::py_swapcase(s),
            };
            if *out == **s {
                Value::Str(s.clone())
            } else {
                new_str(out)
            }
        }
        "replace" => {
            let [old, new, count] = bind(it, "replace", args, kwargs, ["old", "new", "count"], 2)?;
            let old = old.unwrap_or(Value::None);
            let new = new.unwrap_or(Value::None);
            let old = str_arg(it, &old, "replace() argument 1 ")?;
            let new = str_arg(it, &new, "replace() argument 2 ")?;
            let count = match &count {
                None => -1,
                Some(c) => index_of(it, c)?,
            };
            if count == 0 || (!old.is_empty() && !s.contains(&**old)) {
                Value::Str(s.clone())
            } else {
                if new.len() > old.len() {
                    // Each replacement adds `new - old` bytes; an empty `old` matches
                    // between every two characters and at both ends.
                    let mut n = if old.is_empty() {
                        char_len(s).saturating_add(1)
                    } else {
                        s.matches(&**old).count()
                    };
                    if let Ok(c) = usize::try_from(count) {
                        n = n.min(c);
                    }
                    let grow = n.saturating_mul(new.len() - old.len());
                    it.check_str_len(s.len().saturating_add(grow))?;
                }
                new_str(pyfmt::py_replace(s, old, new, count))
            }
        }
        "startswith" | "endswith" => prefix_match(it, s, args, &kwargs, name, name == "endswith")?,
        "find" | "rfind" | "index" | "rindex" => {
            let (sub, st, en) = sub_args(it, name, args, &kwargs)?;
            let r = if name.starts_with('r') {
                pyfmt::py_rfind(s, &sub, st, en)
            } else {
                pyfmt::py_find(s, &sub, st, en)
            };
            if r < 0 && name.ends_with("index") {
                return Err(it.err("ValueError", "substring not found"));
            }
            Value::Int(r)
        }
        "count" => {
            let (sub, st, en) = sub_args(it, "count", args, &kwargs)?;
            int(pyfmt::py_count_range(s, &sub, st, en))
        }
        "format" => new_str(str_format(it, s, &args, &kwargs)?),
        "format_map" => {
            range_args(it, "format_map", &args, &kwargs, 1, 1)?;
            let mut kw = Vec::new();
            if let Value::Dict(d) = &args[0] {
                for (k, v) in d.borrow().iter() {
                    if let Value::Str(k) = &k.0 {
                        kw.push((k.to_rc(), v.clone()));
                    }
                }
            }
            new_str(str_format(it, s, &[], &kw)?)
        }
        "isdigit" | "isalpha" | "isalnum" | "isspace" | "isupper" | "islower" | "isdecimal"
        | "isnumeric" | "istitle" | "isidentifier" | "isprintable" | "isascii" => {
            no_args(it, name, &args, &kwargs)?;
            Value::Bool(match name {
                "isdigit" => pyfmt::py_isdigit(s),
                "isalpha" => pyfmt::py_isalpha(s),
                "isalnum" => pyfmt::py_isalnum(s),
                "isspace" => pyfmt::py_isspace(s),
                "isdecimal" => pyfmt::py_isdecimal(s),
                "isnumeric" => pyfmt::py_isnumeric(s),
                "isupper" => pyfmt::py_isupper(s),
                "islower" => pyfmt::py_islower(s),
                "istitle" => pyfmt::py_istitle(s),
                "isidentifier" => is_identifier(s),
                "isprintable" => pyfmt::py_isprintable(s),
                _ => pyfmt::py_isascii(s),
            })
        }
        "center" | "ljust" | "rjust" => {
            let (width, fill) = pad_args(it, name, args, &kwargs)?;
            check_pad(it, s, width, fill)?;
            let out = match name {
                "center" => pyfmt::py_center(s, width, fill),
                "ljust" => pyfmt::py_ljust(s, width, fill),
                _ => pyfmt::py_rjust(s, width, fill),
            };
            same_or_new(s, &out)
        }
        "zfill" => {
            range_args(it, "zfill", &args, &kwargs, 1, 1)?;
            let w = index_of(it, &args[0])?;
            check_pad(it, s, w, '0')?;
            same_or_new(s, &pyfmt::py_zfill(s, w))
        }
        "partition" | "rpartition" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let sep = str_arg(it, &args[0], "")?.clone();
            if sep.is_empty() {
                return Err(it.err("ValueError", "empty separator"));
            }
            let parts = if name == "partition" {
                pyfmt::py_partition(s, &sep)
            } else {
                pyfmt::py_rpartition(s, &sep)
            };
            let (a, m, b) = parts.unwrap_or(("", "", ""));
            Value::tuple(vec![same_or_new(s, a), Value::str(m), same_or_new(s, b)])
        }
        "encode" => {
            let (enc, errors) = super::bytes::codec_args(it, "encode", args, kwargs)?;
            super::bytes::encode(it, s, &enc, &errors)?
        }
        // A static method: the receiver plays no part.
        "maketrans" => maketrans(it, args, kwargs)?,
        "translate" => {
            let table = one(it, "str.translate", args, &kwargs)?;
            translate(it, s, &table)?
        }
        "expandtabs" => {
            let [ts] = bind(it, "expandtabs", args, kwargs, ["tabsize"], 0)?;
            let ts = match &ts {
                None => 8,
                Some(t) => index_of(it, t)?,
            };
            let tabs = s.matches('\t').count();
            if tabs == 0 {
                Value::Str(s.clone())
            } else {
                let per_tab = usize::try_from(ts.max(0)).unwrap_or(usize::MAX);
                it.check_str_len(tabs.saturating_mul(per_tab).saturating_add(s.len()))?;
                new_str(pyfmt::py_expandtabs(s, ts))
            }
        }
        "removeprefix" | "removesuffix" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let a = str_arg(it, &args[0], &format!("{name}() argument "))?;
            let t = if name == "removeprefix" {
                pyfmt::py_removeprefix(s, a)
            } else {
                pyfmt::py_removesuffix(s, a)
            };
            same_or_new(s, t)
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

fn no_args(it: &Interp, name: &str, args: &[Value], kwargs: &Kwargs) -> R<()> {
    no_kwargs(it, &format!("str.{name}"), kwargs)?;
    if args.is_empty() {
        Ok(())
    } else {
        Err(it.err(
            "TypeError",
            format!("str.{name}() takes no arguments ({} given)", args.len()),
        ))
    }
}

// ---------------------------------------------------------------------------------------
// str.format
// ---------------------------------------------------------------------------------------

/// Automatic (`{}`) versus manual (`{0}`) field numbering state.
struct FieldNumbering {
    next_auto: usize,
    used_auto: bool,
    used_manual: bool,
}

/// `template.format(*args, **kwargs)`.
pub(super) fn str_format(
    it: &mut Interp,
    template: &str,
    args: &[Value],
    kwargs: &Kwargs,
) -> R<String> {
    let mut num = FieldNumbering {
        next_auto: 0,
        used_auto: false,
        used_manual: false,
    };
    format_with(it, template, args, kwargs, &mut num, 0)
}

fn format_with(
    it: &mut Interp,
    template: &str,
    args: &[Value],
    kwargs: &Kwargs,
    num: &mut FieldNumbering,
    depth: usize,
) -> R<String> {
    if depth > 2 {
        return Err(it.err("ValueError", "Max string recursion exceeded"));
    }
    let mut out = String::with_capacity(template.len() + 16);
    let bytes = template.as_bytes();
    let mut i = 0;
    let mut lit_start = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                out.push_str(&template[lit_start..i]);
                if bytes.get(i + 1) == Some(&b'{') {
                    out.push('{');
                    i += 2;
                    lit_start = i;
                    continue;
                }
                // Find the matching '}' (nested braces allowed in the spec).
                let start = i + 1;
                let mut j = start;
                let mut level = 1;
                let mut in_bracket = false;
                // Past the field name: a `!` (its conversion character is taken
                // whatever it is, as CPython's scanner does) or the spec's `:`.
                let mut past_name = false;
                while j < bytes.len() {
                    match bytes[j] {
                        b'[' if level == 1 && !past_name => in_bracket = true,
                        b']' if level == 1 => in_bracket = false,
                        b'!' if level == 1 && !in_bracket && !past_name => {
                            past_name = true;
                            if j + 1 >= bytes.len() {
                                return Err(it.err(
                                    "ValueError",
                                    "end of string while looking for conversion specifier",
                                ));
                            }
                            j += 1;
                        }
                        b':' if level == 1 && !in_bracket => past_name = true,
                        b'{' if !in_bracket => level += 1,
                        b'}' if !in_bracket => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                if j >= bytes.len() {
                    let msg = if start >= bytes.len() {
                        "Single '{' encountered in format string"
                    } else if past_name || level > 1 {
                        "unmatched '{' in format spec"
                    } else {
                        "expected '}' before end of string"
                    };
                    return Err(it.err("ValueError", msg));
                }
                let field = &template[start..j];
                let text = format_field(it, field, args, kwargs, num, depth)?;
                it.check_str_len(out.len().saturating_add(text.len()))?;
                out.push_str(&text);
                i = j + 1;
                lit_start = i;
            }
            b'}' => {
                out.push_str(&template[lit_start..i]);
                if bytes.get(i + 1) == Some(&b'}') {
                    out.push('}');
                    i += 2;
                    lit_start = i;
                    continue;
                }
                return Err(it.err("ValueError", "Single '}' encountered in format string"));
            }
            _ => i += 1,
        }
    }
    out.push_str(&template[lit_start..]);
    Ok(out)
}

/// One replacement field `name[.attr][[key]]![conv]:spec` (without the braces).
fn format_field(
    it: &mut Interp,
    field: &str,
    args: &[Value],
    kwargs: &Kwargs,
    num: &mut FieldNumbering,
    depth: usize,
) -> R<String> {
    // Split off the field name: up to the first '!' or ':' outside brackets.
    let bytes = field.as_bytes();
    let mut k = 0;
    let mut in_bracket = false;
    while k < bytes.len() {
        match bytes[k] {
            b'[' => in_bracket = true,
            b']' => in_bracket = false,
            b'!' | b':' if !in_bracket => break,
            _ => {}
        }
        k += 1;
    }
    let name = &field[..k];
    let mut rest = &field[k..];
    let mut conv = None;
    if let Some(r) = rest.strip_prefix('!') {
        let mut cs = r.chars();
        let c = cs.next();
        let after = cs.as_str();
        if !(after.is_empty() || after.starts_with(':')) {
            return Err(it.err("ValueError", "expected ':' after conversion specifier"));
        }
        match c {
            Some(c @ ('r' | 's' | 'a')) => conv = Some(c),
            Some(c) => {
                return Err(it.err("ValueError", format!("Unknown conversion specifier {c}")));
            }
            None => {
                return Err(it.err(
                    "ValueError",
                    "end of string while looking for conversion specifier",
                ));
            }
        }
        rest = after;
    }
    let spec_raw = rest.strip_prefix(':').unwrap_or("");
    // Resolve the value.
    let (first, mut accessors) = split_field_name(name);
    let mut v = if first.is_empty() {
        if num.used_manual {
            return Err(it.err(
                "ValueError",
                "cannot switch from manual field specification to automatic field numbering",
            ));
        }
        num.used_auto = true;
        let idx = num.next_auto;
        num.next_auto += 1;
        positional(it, args, idx)?
    } else if let Ok(idx) = first.parse::<usize>() {
        if num.used_auto {
            return Err(it.err(
                "ValueError",
                "cannot switch from automatic field numbering to manual field specification",
            ));
        }
        num.used_manual = true;
        positional(it, args, idx)?
    } else {
        match kwargs.iter().find(|(k, _)| &**k == first) {
            Some((_, v)) => v.clone(),
            None => return Err(super::collections::key_error(it, Value::str(first))),
        }
    };
    while !accessors.is_empty() {
        if let Some(r) = accessors.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let attr = &r[..end];
            if attr.is_empty() {
                return Err(it.err("ValueError", "Empty attribute in format string"));
            }
            v = it.get_attr(&v, attr)?;
            accessors = &r[end..];
        } else if let Some(r) = accessors.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Err(it.err("ValueError", "Missing ']' in format string"));
            };
            let key = &r[..end];
            if key.is_empty() {
                return Err(it.err("ValueError", "Empty attribute in format string"));
            }
            let kv = match key.parse::<i64>() {
                Ok(n) if !key.starts_with(['+', '-']) => Value::Int(n),
                _ => Value::str(key),
            };
            v = it.get_item(&v, &kv)?;
            accessors = &r[end + 1..];
        } else {
            return Err(it.err(
                "ValueError",
                "Only '.' or '[' may follow ']' in format field specifier",
            ));
        }
    }
    let v = match conv {
        Some('r') => Value::Str(PyStr::from(it.repr(&v)?)),
        Some('a') => {
            let r = it.repr(&v)?;
            Value::Str(PyStr::from(ascii_escape(&r)))
        }
        Some(_) => Value::Str(PyStr::from(it.to_str(&v)?)),
        None => v,
    };
    let spec = if spec_raw.contains('{') {
        std::borrow::Cow::Owned(format_with(it, spec_raw, args, kwargs, num, depth + 1)?)
    } else {
        std::borrow::Cow::Borrowed(spec_raw)
    };
    format_value(it, &v, &spec)
}

/// `"0.name[1]"` → `("0", ".name[1]")`.
fn split_field_name(name: &str) -> (&str, &str) {
    let end = name.find(['.', '[']).unwrap_or(name.len());
    (&name[..end], &name[end..])
}

fn positional(it: &Interp, args: &[Value], idx: usize) -> R<Value> {
    match args.get(idx) {
        Some(v) => Ok(v.clone()),
        None => Err(it.err(
            "IndexError",
            format!("Replacement index {idx} out of range for positional args tuple"),
        )),
    }
}

/// `str.maketrans(x[, y[, z]])`: the translation table `translate` reads, keyed by
/// code point: from a dict (single-character or integer keys), or mapping each
/// character of `x` to the one at the same place in `y`, and those of `z` to None.
pub(super) fn maketrans(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    range_args(it, "maketrans", &args, &kwargs, 1, 3)?;
    let mut table = Vec::new();
    if args.len() == 1 {
        let Value::Dict(d) = &args[0] else {
            return Err(it.err(
                "TypeError",
                "if you give only one argument to maketrans it must be a dict",
            ));
        };
        let entries: Vec<(Value, Value)> = d
            .borrow()
            .iter()
            .map(|(k, v)| (k.0.clone(), v.clone()))
            .collect();
        for (k, v) in entries {
            let key = match &k {
                Value::Str(c) => {
                    let mut chars = c.chars();
                    match (chars.next(), chars.next()) {
                        (Some(ch), None) => Value::Int(i64::from(u32::from(ch))),
                        _ => {
                            return Err(it.err(
                                "ValueError",
                                "string keys in translate table must be of length 1",
                            ));
                        }
                    }
                }
                Value::Int(_) | Value::BigInt(_) => k.clone(),
                Value::Bool(b) => Value::Int(i64::from(*b)),
                _ => {
                    return Err(it.err(
                        "TypeError",
                        "keys in translate table must be strings or integers",
                    ));
                }
            };
            table.push((key, v));
        }
    } else {
        let Value::Str(x) = &args[0] else {
            return Err(it.err(
                "TypeError",
                "first maketrans argument must be a string if there is a second argument",
            ));
        };
        let y = str_arg(it, &args[1], "maketrans() argument 2 ")?;
        if char_len(x) != char_len(y) {
            return Err(it.err(
                "ValueError",
                "the first two maketrans arguments must have equal length",
            ));
        }
        let code = |c: char| Value::Int(i64::from(u32::from(c)));
        for (a, b) in x.chars().zip(y.chars()) {
            table.push((code(a), code(b)));
        }
        if let Some(zv) = args.get(2) {
            let z = str_arg(it, zv, "maketrans() argument 3 ")?;
            for c in z.chars() {
                table.push((code(c), Value::None));
            }
        }
    }
    it.check_items(table.len())?;
    let out = Value::dict(Default::default());
    for (k, v) in table {
        it.set_item(&out, k, v)?;
    }
    Ok(out)
}

/// `s.translate(table)`: each character's code point looked up with `table[...]`
/// (any subscriptable value; a `LookupError` keeps the character); None deletes it, an
/// int is a code point, a str replaces it.
fn translate(it: &mut Interp, s: &PyStr, table: &Value) -> R<Value> {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let key = Value::Int(i64::from(u32::from(c)));
        let mapped = match it.get_item(table, &key) {
            Ok(v) => v,
            Err(e) if is_exc(it, &e, "LookupError") => {
                out.push(c);
                continue;
            }
            Err(e) => return Err(e),
        };
        match &mapped {
            Value::None => {}
            Value::Str(r) => {
                it.check_str_len(out.len().saturating_add(r.len()))?;
                out.push_str(r);
            }
            Value::Int(_) | Value::BigInt(_) | Value::Bool(_) => {
                let ch = match &mapped {
                    Value::Int(n) => u32::try_from(*n).ok().and_then(char::from_u32),
                    Value::Bool(b) => Some(char::from(u8::from(*b))),
                    _ => None,
                };
                let Some(ch) = ch else {
                    return Err(
                        it.err("ValueError", "character mapping must be in range(0x110000)")
                    );
                };
                out.push(ch);
            }
            _ => {
                return Err(it.err(
                    "TypeError",
                    "character mapping must return integer, None or str",
                ));
            }
        }
    }
    it.check_str_len(out.len())?;
    Ok(new_str(out))
}
