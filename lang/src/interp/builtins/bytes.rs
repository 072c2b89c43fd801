//! The `bytes` type: construction (`bytes(...)`, `bytes.fromhex`, `bytes.maketrans`),
//! its methods, and the codecs behind `str.encode` / `bytes.decode` (UTF-8, ASCII and
//! Latin-1, with the `strict`, `ignore`, `replace`, `backslashreplace` and
//! `xmlcharrefreplace` error handlers), with CPython's results and messages. Every
//! result is bounded by `Limits::max_string_bytes`, the bound strings have.

use super::args::{Kwargs, bind, index_of, no_kwargs, opt_index, range_args, tname};
use crate::interp::value::Value;
use crate::interp::{Interp, Interrupt};
use crate::pyfmt;
use std::rc::Rc;

type R<T> = Result<T, Interrupt>;

pub(super) const METHODS: &[&str] = &[
    "capitalize",
    "center",
    "count",
    "decode",
    "endswith",
    "expandtabs",
    "find",
    "fromhex",
    "hex",
    "index",
    "isalnum",
    "isalpha",
    "isascii",
    "isdigit",
    "islower",
    "isspace",
    "istitle",
    "isupper",
    "join",
    "ljust",
    "lower",
    "lstrip",
    "maketrans",
    "partition",
    "removeprefix",
    "removesuffix",
    "replace",
    "rfind",
    "rindex",
    "rjust",
    "rpartition",
    "rsplit",
    "rstrip",
    "split",
    "splitlines",
    "startswith",
    "strip",
    "swapcase",
    "title",
    "translate",
    "upper",
    "zfill",
];

/// A new `bytes` value, refused beyond the string limit.
pub(crate) fn new_bytes(it: &Interp, b: Vec<u8>) -> R<Value> {
    it.check_str_len(b.len())?;
    Ok(Value::Bytes(Rc::from(b)))
}

/// A `bytearray` argument as a `bytes` snapshot of its current contents, so the
/// `bytes` methods and codecs below take either; any other value as it is.
pub(crate) fn freeze(v: Value) -> Value {
    match v {
        Value::ByteArray(b) => Value::Bytes(Rc::from(b.borrow().as_slice())),
        other => other,
    }
}

/// A method argument [`freeze`]d, inside a tuple too (`startswith((b"a", ba))`).
fn freeze_arg(v: Value) -> Value {
    match v {
        Value::Tuple(t) if t.iter().any(|x| matches!(x, Value::ByteArray(_))) => {
            Value::tuple(t.iter().cloned().map(freeze).collect())
        }
        other => freeze(other),
    }
}

/// The bytes of a bytes-like value (a `bytearray` is [`freeze`]d first).
pub(crate) fn bytes_like(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Bytes(b) => Some(b),
        _ => None,
    }
}

/// A bytes-like argument, or CPython's "a bytes-like object is required".
fn bytes_arg<'a>(it: &Interp, v: &'a Value) -> R<&'a [u8]> {
    bytes_like(v).ok_or_else(|| {
        let t = tname(it, v);
        it.err(
            "TypeError",
            format!("a bytes-like object is required, not '{t}'"),
        )
    })
}

/// A byte given as an int (`b.find(108)`, `108 in b`).
pub(crate) fn byte_of(it: &Interp, v: &Value) -> R<u8> {
    let n = index_of(it, v)?;
    u8::try_from(n).map_err(|_| it.err("ValueError", "byte must be in range(0, 256)"))
}

/// An item of an iterable made into bytes (`bytes([..])`), worded as CPython's.
fn item_byte(it: &Interp, v: &Value) -> R<u8> {
    let n = index_of(it, v)?;
    u8::try_from(n).map_err(|_| it.err("ValueError", "bytes must be in range(0, 256)"))
}

/// The needle of `find`/`count`/`index`/`in`: bytes, or one byte given as an int.
fn needle(it: &Interp, v: &Value) -> R<Vec<u8>> {
    match v {
        Value::Int(_) | Value::Bool(_) | Value::BigInt(_) => Ok(vec![byte_of(it, v)?]),
        other => match bytes_like(other) {
            Some(b) => Ok(b.to_vec()),
            None => {
                let t = tname(it, other);
                Err(it.err(
                    "TypeError",
                    format!("argument should be integer or bytes-like object, not '{t}'"),
                ))
            }
        },
    }
}

/// `sub in b`.
pub(crate) fn contains(it: &Interp, hay: &[u8], item: &Value) -> R<bool> {
    let item = &freeze(item.clone());
    let sub = match item {
        Value::Int(_) | Value::Bool(_) | Value::BigInt(_) => vec![byte_of(it, item)?],
        other => match bytes_like(other) {
            Some(b) => b.to_vec(),
            None => {
                let t = tname(it, other);
                return Err(it.err(
                    "TypeError",
                    format!("a bytes-like object is required, not '{t}'"),
                ));
            }
        },
    };
    Ok(find(hay, &sub).is_some())
}

fn find(hay: &[u8], sub: &[u8]) -> Option<usize> {
    if sub.is_empty() {
        return Some(0);
    }
    hay.windows(sub.len()).position(|w| w == sub)
}

/// `bytes(...)`: empty, `n` zero bytes, the ints of an iterable, a string's encoding, or
/// a copy of a bytes-like value.
pub(super) fn construct(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    construct_as(it, "bytes", args, kwargs)
}

/// `bytes(...)` or, with `tname` `bytearray`, the contents of `bytearray(...)` (as
/// `bytes`; the caller makes the mutable value) with that type's messages.
pub(super) fn construct_as(
    it: &mut Interp,
    tname_: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Value> {
    let [src, encoding, errors] = bind(
        it,
        tname_,
        args,
        kwargs,
        ["source", "encoding", "errors"],
        0,
    )?;
    let src = src.map(freeze);
    let Some(src) = src else {
        if encoding.is_some() || errors.is_some() {
            let what = if encoding.is_some() {
                "encoding"
            } else {
                "errors"
            };
            return Err(it.err("TypeError", format!("{what} without a string argument")));
        }
        return Ok(Value::Bytes(Rc::from(Vec::new())));
    };
    if let Value::Str(s) = &src {
        let Some(enc) = encoding else {
            return Err(it.err("TypeError", "string argument without an encoding"));
        };
        let enc = text_arg(it, tname_, "encoding", 2, &enc)?;
        let errors = match errors {
            Some(e) => text_arg(it, tname_, "errors", 3, &e)?,
            None => Rc::from("strict"),
        };
        return encode(it, s, &enc, &errors);
    }
    if encoding.is_some() || errors.is_some() {
        let what = if encoding.is_some() {
            "encoding"
        } else {
            "errors"
        };
        return Err(it.err("TypeError", format!("{what} without a string argument")));
    }
    match &src {
        Value::Bytes(_) => Ok(src.clone()),
        Value::Int(_) | Value::BigInt(_) | Value::Bool(_) => {
            let n = index_of(it, &src)?;
            if n < 0 {
                return Err(it.err("ValueError", "negative count"));
            }
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            it.check_str_len(n)?;
            Ok(Value::Bytes(Rc::from(vec![0u8; n])))
        }
        Value::Float(_) | Value::None => {
            let t = tname(it, &src);
            Err(it.err(
                "TypeError",
                format!("cannot convert '{t}' object to {tname_}"),
            ))
        }
        other => {
            let items = match it.iterate(other) {
                Ok(items) => items,
                Err(e) if super::args::is_exc(it, &e, "TypeError") => {
                    let t = tname(it, other);
                    return Err(it.err(
                        "TypeError",
                        format!("cannot convert '{t}' object to {tname_}"),
                    ));
                }
                Err(e) => return Err(e),
            };
            let mut out = Vec::with_capacity(items.len());
            for v in &items {
                out.push(if tname_ == "bytes" {
                    item_byte(it, v)?
                } else {
                    byte_of(it, v)?
                });
            }
            new_bytes(it, out)
        }
    }
}

/// A text argument of a codec call (`encoding`, `errors`).
fn text_arg(it: &Interp, fname: &str, what: &str, pos: usize, v: &Value) -> R<Rc<str>> {
    match v {
        Value::Str(s) => Ok(s.to_rc()),
        other => {
            let t = tname(it, other);
            let _ = pos;
            Err(it.err(
                "TypeError",
                format!("{fname}() argument '{what}' must be str, not {t}"),
            ))
        }
    }
}

/// The codecs svc has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    Utf8,
    Ascii,
    Latin1,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Utf8 => "utf-8",
            Codec::Ascii => "ascii",
            Codec::Latin1 => "latin-1",
        }
    }
}

/// CPython's codec lookup: lower case, every run of other characters than letters,
/// digits and `.` one `_`, then the aliases of the three codecs svc has.
fn codec(it: &Interp, name: &str) -> R<Codec> {
    let mut norm = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            if gap && !norm.is_empty() {
                norm.push('_');
            }
            gap = false;
            norm.push(c.to_ascii_lowercase());
        } else {
            gap = true;
        }
    }
    match norm.as_str() {
        "utf_8" | "utf8" | "u8" | "utf" | "cp65001" | "utf8_ucs2" | "utf8_ucs4" => Ok(Codec::Utf8),
        "ascii" | "us_ascii" | "646" | "us" | "ansi_x3.4_1968" | "ansi_x3_4_1968"
        | "ansi_x3.4_1986" | "cp367" | "csascii" | "ibm367" | "iso646_us" | "iso_646.irv_1991"
        | "iso_ir_6" => Ok(Codec::Ascii),
        "latin_1" | "latin1" | "latin" | "l1" | "iso_8859_1" | "iso8859_1" | "8859" | "cp819"
        | "csisolatin1" | "ibm819" | "iso_8859_1_1987" | "iso_ir_100" => Ok(Codec::Latin1),
        _ => Err(it.err("LookupError", format!("unknown encoding: {name}"))),
    }
}

fn unknown_handler(it: &Interp, errors: &str) -> Interrupt {
    it.err(
        "LookupError",
        format!("unknown error handler name '{errors}'"),
    )
}

/// `str.encode(encoding, errors)`.
pub(crate) fn encode(it: &Interp, s: &str, encoding: &str, errors: &str) -> R<Value> {
    let codec = codec(it, encoding)?;
    let limit = match codec {
        Codec::Utf8 => return new_bytes(it, s.as_bytes().to_vec()),
        Codec::Ascii => 0x80,
        Codec::Latin1 => 0x100,
    };
    if s.chars().all(|c| u32::from(c) < limit) {
        return new_bytes(it, s.chars().map(|c| u32::from(c) as u8).collect());
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if u32::from(c) < limit {
            out.push(u32::from(c) as u8);
            i += 1;
            continue;
        }
        // The run of characters the codec cannot encode, as CPython reports it.
        let mut end = i;
        while end < chars.len() && u32::from(chars[end]) >= limit {
            end += 1;
        }
        match errors {
            "strict" => {
                return Err(codec_error(
                    it,
                    "UnicodeEncodeError",
                    codec,
                    Value::str(s),
                    (i, end),
                    &format!("ordinal not in range({limit})"),
                ));
            }
            "ignore" => {}
            "replace" => out.extend(std::iter::repeat_n(b'?', end - i)),
            "backslashreplace" => {
                for &c in &chars[i..end] {
                    out.extend(escape_char(c).bytes());
                }
            }
            "xmlcharrefreplace" => {
                for &c in &chars[i..end] {
                    out.extend(format!("&#{};", u32::from(c)).bytes());
                }
            }
            other => return Err(unknown_handler(it, other)),
        }
        it.check_str_len(out.len())?;
        i = end;
    }
    new_bytes(it, out)
}

/// A `UnicodeEncodeError` / `UnicodeDecodeError` as CPython makes it: `args` is
/// `(encoding, object, start, end, reason)`, each also an attribute, and `str()` is
/// composed from them ([`codec_error_text`]).
fn codec_error(
    it: &Interp,
    class: &str,
    codec: Codec,
    object: Value,
    (start, end): (usize, usize),
    reason: &str,
) -> Interrupt {
    let Some(class) = it.builtin_class(class) else {
        return it.err("ValueError", reason);
    };
    let at = |n: usize| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let fields = [
        ("encoding", Value::str(codec.name())),
        ("object", object),
        ("start", at(start)),
        ("end", at(end)),
        ("reason", Value::str(reason)),
    ];
    let args = fields.iter().map(|(_, v)| v.clone()).collect();
    let exc = it.make_exception(class, args);
    if let Value::Instance(inst) = &exc {
        for (name, v) in fields {
            inst.set_extra(Rc::from(name), v);
        }
    }
    Interrupt::Exc(Box::new(crate::interp::PyErr {
        value: exc,
        trace: Vec::new(),
        origin: None,
    }))
}

/// `str()` of a codec error made by [`codec_error`] (read from its attributes, as
/// CPython's `__str__` does); `None` for other exceptions.
pub(crate) fn codec_error_text(inst: &crate::interp::value::Instance) -> Option<String> {
    let encode = inst.class.is_sub_named("UnicodeEncodeError");
    if !encode && !inst.class.is_sub_named("UnicodeDecodeError") {
        return None;
    }
    let (Some(Value::Str(enc)), Some(object), Some(Value::Int(start)), Some(Value::Int(end))) = (
        inst.get_extra("encoding"),
        inst.get_extra("object"),
        inst.get_extra("start"),
        inst.get_extra("end"),
    ) else {
        return None;
    };
    let reason = match inst.get_extra("reason") {
        Some(Value::Str(r)) => r.to_string(),
        _ => String::new(),
    };
    let start_at = usize::try_from(start).ok()?;
    let one = end == start + 1;
    Some(match (&object, encode) {
        (Value::Str(s), true) if one => {
            let c = s.chars().nth(start_at)?;
            format!(
                "'{enc}' codec can't encode character '{}' in position {start}: {reason}",
                escape_char(c)
            )
        }
        (_, true) => format!(
            "'{enc}' codec can't encode characters in position {start}-{}: {reason}",
            end - 1
        ),
        (Value::Bytes(b), false) if one => format!(
            "'{enc}' codec can't decode byte 0x{:02x} in position {start}: {reason}",
            b.get(start_at)?
        ),
        (_, false) => format!(
            "'{enc}' codec can't decode bytes in position {start}-{}: {reason}",
            end - 1
        ),
    })
}

/// `\xe9`, `\u20ac`, `\U0001f600`: how CPython's codec errors show a character.
fn escape_char(c: char) -> String {
    let cp = u32::from(c);
    if cp <= 0xff {
        format!("\\x{cp:02x}")
    } else if cp <= 0xffff {
        format!("\\u{cp:04x}")
    } else {
        format!("\\U{cp:08x}")
    }
}

/// `bytes.decode(encoding, errors)`.
pub(crate) fn decode(it: &Interp, b: &[u8], encoding: &str, errors: &str) -> R<Value> {
    let codec = codec(it, encoding)?;
    let text = match codec {
        Codec::Latin1 => pyfmt::latin1(b),
        Codec::Ascii if b.is_ascii() => String::from_utf8_lossy(b).into_owned(),
        Codec::Ascii => {
            let mut out = String::with_capacity(b.len());
            for (i, &c) in b.iter().enumerate() {
                if c.is_ascii() {
                    out.push(char::from(c));
                    continue;
                }
                match errors {
                    "strict" => {
                        return Err(codec_error(
                            it,
                            "UnicodeDecodeError",
                            codec,
                            Value::Bytes(Rc::from(b)),
                            (i, i + 1),
                            "ordinal not in range(128)",
                        ));
                    }
                    "ignore" => {}
                    "replace" => out.push('\u{fffd}'),
                    "backslashreplace" => out.push_str(&format!("\\x{c:02x}")),
                    other => return Err(unknown_handler(it, other)),
                }
            }
            out
        }
        Codec::Utf8 => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => decode_utf8_errors(it, b, errors)?,
        },
    };
    it.check_str_len(text.len())?;
    Ok(Value::str(&text))
}

/// UTF-8 with invalid sequences: each maximal invalid part (Unicode's "maximal subpart",
/// which CPython also follows) is reported or handled as one error.
fn decode_utf8_errors(it: &Interp, b: &[u8], errors: &str) -> R<String> {
    let mut out = String::with_capacity(b.len());
    let mut pos = 0;
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        pos += chunk.valid().len();
        let bad = chunk.invalid();
        if bad.is_empty() {
            continue;
        }
        match errors {
            "strict" => {
                let first = bad[0];
                let (reason, len) = if pos + bad.len() == b.len()
                    && is_start_byte(first)
                    && bad.len() < utf8_len(first)
                {
                    ("unexpected end of data", bad.len())
                } else if is_start_byte(first) {
                    ("invalid continuation byte", 1)
                } else {
                    ("invalid start byte", 1)
                };
                return Err(codec_error(
                    it,
                    "UnicodeDecodeError",
                    Codec::Utf8,
                    Value::Bytes(Rc::from(b)),
                    (pos, pos + len),
                    reason,
                ));
            }
            "ignore" => {}
            "replace" => out.push('\u{fffd}'),
            "backslashreplace" => {
                for c in bad {
                    out.push_str(&format!("\\x{c:02x}"));
                }
            }
            other => return Err(unknown_handler(it, other)),
        }
        pos += bad.len();
    }
    Ok(out)
}

fn is_start_byte(c: u8) -> bool {
    matches!(c, 0xc2..=0xf4)
}

fn utf8_len(c: u8) -> usize {
    match c {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// The `(encoding, errors)` arguments of `str.encode` / `bytes.decode`.
pub(crate) fn codec_args(
    it: &Interp,
    fname: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<(Rc<str>, Rc<str>)> {
    if args.len() > 2 {
        return Err(it.err(
            "TypeError",
            format!(
                "{fname}() takes at most 2 arguments ({} given)",
                args.len() + kwargs.len()
            ),
        ));
    }
    let [enc, errors] = bind(it, fname, args, kwargs, ["encoding", "errors"], 0)?;
    let enc = match enc {
        Some(v) => text_arg(it, fname, "encoding", 1, &v)?,
        None => Rc::from("utf-8"),
    };
    let errors = match errors {
        Some(v) => text_arg(it, fname, "errors", 2, &v)?,
        None => Rc::from("strict"),
    };
    Ok((enc, errors))
}

/// `bytes.fromhex(s)`.
pub(super) fn fromhex(it: &Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    range_args(it, "fromhex", &args, &kwargs, 1, 1)?;
    match &args[0] {
        Value::Str(s) => match pyfmt::bytes_fromhex(s) {
            Ok(b) => new_bytes(it, b),
            Err(msg) => Err(it.err("ValueError", msg)),
        },
        other => {
            let t = tname(it, other);
            Err(it.err(
                "TypeError",
                format!("fromhex() argument must be str, not {t}"),
            ))
        }
    }
}

/// `bytes.maketrans(frm, to)`: the 256-byte table mapping each byte of `frm` to `to`'s.
pub(super) fn maketrans(it: &Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    range_args(it, "maketrans", &args, &kwargs, 2, 2)?;
    let args: Vec<Value> = args.into_iter().map(freeze).collect();
    let frm = bytes_arg(it, &args[0])?;
    let to = bytes_arg(it, &args[1])?;
    if frm.len() != to.len() {
        return Err(it.err("ValueError", "maketrans arguments must have same length"));
    }
    let mut table: Vec<u8> = (0..=255).collect();
    for (&f, &t) in frm.iter().zip(to) {
        table[usize::from(f)] = t;
    }
    new_bytes(it, table)
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

fn plain_args(it: &Interp, name: &str, args: &[Value], kwargs: &Kwargs) -> R<()> {
    no_kwargs(it, &format!("bytes.{name}"), kwargs)?;
    if args.is_empty() {
        Ok(())
    } else {
        Err(it.err(
            "TypeError",
            format!("bytes.{name}() takes no arguments ({} given)", args.len()),
        ))
    }
}

/// `(sub, start, end)` of `find`/`count`/`index`/...
fn sub_args(
    it: &Interp,
    name: &str,
    args: &[Value],
    kwargs: &Kwargs,
) -> R<(Vec<u8>, Option<i64>, Option<i64>)> {
    range_args(it, name, args, kwargs, 1, 3)?;
    let sub = needle(it, &args[0])?;
    Ok((
        sub,
        opt_index(it, args.get(1))?,
        opt_index(it, args.get(2))?,
    ))
}

/// `(width, fill)` of `center`/`ljust`/`rjust`.
fn pad_args(it: &Interp, name: &str, args: &[Value], kwargs: &Kwargs) -> R<(i64, u8)> {
    range_args(it, name, args, kwargs, 1, 2)?;
    let w = index_of(it, &args[0])?;
    let fill = match args.get(1) {
        None => b' ',
        Some(v) => match bytes_like(v) {
            Some([c]) => *c,
            _ => {
                let t = tname(it, v);
                return Err(it.err(
                    "TypeError",
                    format!("{name}() argument 2 must be a byte string of length 1, not {t}"),
                ));
            }
        },
    };
    Ok((w, fill))
}

fn bytes_list(it: &Interp, parts: Vec<Vec<u8>>) -> R<Value> {
    it.check_items(parts.len())?;
    Ok(Value::list(
        parts
            .into_iter()
            .map(|p| Value::Bytes(Rc::from(p)))
            .collect(),
    ))
}

/// The same value when an operation changed nothing, else a new one.
fn same_or_new(b: &Rc<[u8]>, out: Vec<u8>) -> Value {
    if *out == **b {
        Value::Bytes(b.clone())
    } else {
        Value::Bytes(Rc::from(out))
    }
}

/// Methods of `bytes`.
pub(super) fn call_method(
    it: &mut Interp,
    b: &Rc<[u8]>,
    name: &str,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Option<Value>> {
    let args: Vec<Value> = args.into_iter().map(freeze_arg).collect();
    let kwargs: Kwargs = kwargs
        .into_iter()
        .map(|(k, v)| (k, freeze_arg(v)))
        .collect();
    let v = match name {
        "decode" => {
            let (enc, errors) = codec_args(it, "decode", args, kwargs)?;
            decode(it, b, &enc, &errors)?
        }
        "hex" => {
            let [sep, per] = bind(it, "hex", args, kwargs, ["sep", "bytes_per_sep"], 0)?;
            let sep = match &sep {
                None => None,
                Some(Value::Str(s)) if s.chars().count() == 1 && s.is_ascii() => s.chars().next(),
                Some(v) if matches!(bytes_like(v), Some([c]) if c.is_ascii()) => bytes_like(v)
                    .and_then(|b| b.first())
                    .map(|&c| char::from(c)),
                Some(Value::Str(s)) if s.chars().count() == 1 => {
                    return Err(it.err("ValueError", "sep must be ASCII."));
                }
                Some(Value::Str(_)) | Some(Value::Bytes(_)) => {
                    return Err(it.err("ValueError", "sep must be length 1."));
                }
                Some(other) => {
                    let t = tname(it, other);
                    return Err(it.err("TypeError", format!("sep must be str or bytes, not {t}")));
                }
            };
            let per = match &per {
                None => 1,
                Some(p) => index_of(it, p)?,
            };
            it.check_str_len(b.len().saturating_mul(3))?;
            Value::str(&pyfmt::bytes_hex(b, sep, per))
        }
        "fromhex" => fromhex(it, args, kwargs)?,
        "maketrans" => maketrans(it, args, kwargs)?,
        "count" => {
            let (sub, st, en) = sub_args(it, name, &args, &kwargs)?;
            let n = pyfmt::py_count_range(&pyfmt::latin1(b), &pyfmt::latin1(&sub), st, en);
            int(i64::try_from(n).unwrap_or(i64::MAX))
        }
        "find" | "rfind" | "index" | "rindex" => {
            let (sub, st, en) = sub_args(it, name, &args, &kwargs)?;
            let (hay, sub) = (pyfmt::latin1(b), pyfmt::latin1(&sub));
            let r = if name.starts_with('r') {
                pyfmt::py_rfind(&hay, &sub, st, en)
            } else {
                pyfmt::py_find(&hay, &sub, st, en)
            };
            if r < 0 && name.ends_with("index") {
                return Err(it.err("ValueError", "subsection not found"));
            }
            int(r)
        }
        "startswith" | "endswith" => {
            range_args(it, name, &args, &kwargs, 1, 3)?;
            let st = opt_index(it, args.get(1))?;
            let en = opt_index(it, args.get(2))?;
            let hay = pyfmt::latin1(b);
            let test = |p: &[u8]| {
                let p = pyfmt::latin1(p);
                if name == "endswith" {
                    pyfmt::py_endswith(&hay, &p, st, en)
                } else {
                    pyfmt::py_startswith(&hay, &p, st, en)
                }
            };
            match &args[0] {
                Value::Tuple(ps) => {
                    let mut hit = false;
                    for p in ps.iter() {
                        let Some(p) = bytes_like(p) else {
                            let t = tname(it, p);
                            return Err(it.err(
                                "TypeError",
                                format!("a bytes-like object is required, not '{t}'"),
                            ));
                        };
                        if test(p) {
                            hit = true;
                            break;
                        }
                    }
                    Value::Bool(hit)
                }
                v => match bytes_like(v) {
                    Some(p) => Value::Bool(test(p)),
                    None => {
                        let t = tname(it, v);
                        return Err(it.err(
                            "TypeError",
                            format!("{name} first arg must be bytes or a tuple of bytes, not {t}"),
                        ));
                    }
                },
            }
        }
        "replace" => {
            range_args(it, name, &args, &kwargs, 2, 3)?;
            let old = bytes_arg(it, &args[0])?;
            let new = bytes_arg(it, &args[1])?;
            let count = match args.get(2) {
                None => -1,
                Some(c) => index_of(it, c)?,
            };
            if new.len() > old.len() {
                let hits = if old.is_empty() {
                    b.len().saturating_add(1)
                } else {
                    pyfmt::py_count(&pyfmt::latin1(b), &pyfmt::latin1(old))
                };
                let hits = usize::try_from(count).map_or(hits, |c| hits.min(c));
                it.check_str_len(
                    b.len()
                        .saturating_add(hits.saturating_mul(new.len() - old.len())),
                )?;
            }
            let out = pyfmt::py_replace(
                &pyfmt::latin1(b),
                &pyfmt::latin1(old),
                &pyfmt::latin1(new),
                count,
            );
            same_or_new(b, pyfmt::from_latin1(&out))
        }
        "strip" | "lstrip" | "rstrip" => {
            range_args(it, name, &args, &kwargs, 0, 1)?;
            let chars = match args.first() {
                None | Some(Value::None) => None,
                Some(v) => Some(bytes_arg(it, v)?),
            };
            let out = pyfmt::bytes_strip(b, chars, name != "rstrip", name != "lstrip");
            same_or_new(b, out.to_vec())
        }
        "removeprefix" | "removesuffix" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let a = bytes_arg(it, &args[0])?;
            let out = if name == "removeprefix" {
                b.strip_prefix(a).unwrap_or(b)
            } else {
                b.strip_suffix(a).unwrap_or(b)
            };
            same_or_new(b, out.to_vec())
        }
        "split" | "rsplit" => {
            let [sep, max] = bind(it, name, args, kwargs, ["sep", "maxsplit"], 0)?;
            let max = match &max {
                None => -1,
                Some(m) => index_of(it, m)?,
            };
            let parts = match &sep {
                None | Some(Value::None) => {
                    if name == "split" {
                        pyfmt::bytes_split_ws(b, max)
                    } else {
                        pyfmt::bytes_rsplit_ws(b, max)
                    }
                }
                Some(s) => {
                    let sep = bytes_arg(it, s)?;
                    if sep.is_empty() {
                        return Err(it.err("ValueError", "empty separator"));
                    }
                    let (hay, sep) = (pyfmt::latin1(b), pyfmt::latin1(sep));
                    if b.len() >= it.max_collection_items() {
                        let n = hay.matches(sep.as_str()).count().saturating_add(1);
                        it.check_items(n)?;
                    }
                    let parts = if name == "split" {
                        pyfmt::py_split(&hay, Some(&sep), max)
                    } else {
                        pyfmt::py_rsplit(&hay, Some(&sep), max)
                    };
                    parts
                        .map_err(|m| it.err("ValueError", m))?
                        .iter()
                        .map(|p| pyfmt::from_latin1(p))
                        .collect()
                }
            };
            bytes_list(it, parts)?
        }
        "splitlines" => {
            let [keep] = bind(it, "splitlines", args, kwargs, ["keepends"], 0)?;
            let keep = match &keep {
                None => false,
                Some(k) => it.truthy(k)?,
            };
            bytes_list(it, pyfmt::bytes_splitlines(b, keep))?
        }
        "partition" | "rpartition" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let sep = bytes_arg(it, &args[0])?;
            if sep.is_empty() {
                return Err(it.err("ValueError", "empty separator"));
            }
            let (hay, sp) = (pyfmt::latin1(b), pyfmt::latin1(sep));
            let found = if name == "partition" {
                pyfmt::py_partition(&hay, &sp)
            } else {
                pyfmt::py_rpartition(&hay, &sp)
            };
            let part = |s: &str| Value::Bytes(Rc::from(pyfmt::from_latin1(s)));
            let empty = || Value::Bytes(Rc::from(Vec::new()));
            match found {
                Some((a, s, c)) => Value::tuple(vec![part(a), part(s), part(c)]),
                None if name == "partition" => {
                    Value::tuple(vec![Value::Bytes(b.clone()), empty(), empty()])
                }
                None => Value::tuple(vec![empty(), empty(), Value::Bytes(b.clone())]),
            }
        }
        "join" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let items: Vec<Value> = it.iterate(&args[0])?.into_iter().map(freeze).collect();
            let mut total = b.len().saturating_mul(items.len().saturating_sub(1));
            for (i, v) in items.iter().enumerate() {
                match bytes_like(v) {
                    Some(p) => total = total.saturating_add(p.len()),
                    None => {
                        let t = tname(it, v);
                        return Err(it.err(
                            "TypeError",
                            format!("sequence item {i}: expected a bytes-like object, {t} found"),
                        ));
                    }
                }
            }
            it.check_str_len(total)?;
            let mut out = Vec::with_capacity(total);
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b);
                }
                out.extend_from_slice(bytes_like(v).unwrap_or(&[]));
            }
            Value::Bytes(Rc::from(out))
        }
        "lower" | "upper" | "swapcase" | "capitalize" | "title" => {
            plain_args(it, name, &args, &kwargs)?;
            let out = match name {
                "lower" => b.to_ascii_lowercase(),
                "upper" => b.to_ascii_uppercase(),
                "swapcase" => pyfmt::bytes_swapcase(b),
                "capitalize" => pyfmt::bytes_capitalize(b),
                _ => pyfmt::bytes_title(b),
            };
            Value::Bytes(Rc::from(out))
        }
        "isalnum" | "isalpha" | "isdigit" | "isspace" | "islower" | "isupper" | "istitle"
        | "isascii" => {
            plain_args(it, name, &args, &kwargs)?;
            let all = |f: fn(&u8) -> bool| !b.is_empty() && b.iter().all(f);
            Value::Bool(match name {
                "isalnum" => all(u8::is_ascii_alphanumeric),
                "isalpha" => all(u8::is_ascii_alphabetic),
                "isdigit" => all(u8::is_ascii_digit),
                "isspace" => all(|c| pyfmt::is_bytes_space(*c)),
                "islower" => pyfmt::bytes_is_case(b, false),
                "isupper" => pyfmt::bytes_is_case(b, true),
                "istitle" => pyfmt::bytes_istitle(b),
                _ => b.is_ascii(),
            })
        }
        "center" | "ljust" | "rjust" => {
            let (w, fill) = pad_args(it, name, &args, &kwargs)?;
            let width = usize::try_from(w.max(0)).unwrap_or(usize::MAX);
            it.check_str_len(width.max(b.len()))?;
            let (s, f) = (pyfmt::latin1(b), char::from(fill));
            let out = match name {
                "center" => pyfmt::py_center(&s, w, f),
                "ljust" => pyfmt::py_ljust(&s, w, f),
                _ => pyfmt::py_rjust(&s, w, f),
            };
            same_or_new(b, pyfmt::from_latin1(&out))
        }
        "zfill" => {
            range_args(it, name, &args, &kwargs, 1, 1)?;
            let w = index_of(it, &args[0])?;
            it.check_str_len(usize::try_from(w.max(0)).unwrap_or(usize::MAX).max(b.len()))?;
            same_or_new(
                b,
                pyfmt::from_latin1(&pyfmt::py_zfill(&pyfmt::latin1(b), w)),
            )
        }
        "expandtabs" => {
            let [ts] = bind(it, "expandtabs", args, kwargs, ["tabsize"], 0)?;
            let ts = match &ts {
                None => 8,
                Some(t) => index_of(it, t)?,
            };
            let tabs = b.iter().filter(|&&c| c == b'\t').count();
            let per_tab = usize::try_from(ts.max(0)).unwrap_or(usize::MAX);
            it.check_str_len(tabs.saturating_mul(per_tab).saturating_add(b.len()))?;
            same_or_new(
                b,
                pyfmt::from_latin1(&pyfmt::py_expandtabs(&pyfmt::latin1(b), ts)),
            )
        }
        "translate" => {
            let [table, delete] = bind(it, "translate", args, kwargs, ["table", "delete"], 1)?;
            let table = match table {
                None | Some(Value::None) => None,
                Some(t) => {
                    let t = bytes_arg(it, &t)?.to_vec();
                    if t.len() != 256 {
                        return Err(it.err(
                            "ValueError",
                            "translation table must be 256 characters long",
                        ));
                    }
                    Some(t)
                }
            };
            let delete = match &delete {
                None => Vec::new(),
                Some(d) => bytes_arg(it, d)?.to_vec(),
            };
            let out: Vec<u8> = b
                .iter()
                .filter(|c| !delete.contains(c))
                .map(|&c| table.as_ref().map_or(c, |t| t[usize::from(c)]))
                .collect();
            same_or_new(b, out)
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `byteorder` of `int.to_bytes` / `int.from_bytes`: true for big-endian.
fn byteorder(it: &Interp, v: Option<&Value>) -> R<bool> {
    match v {
        None => Ok(true),
        Some(Value::Str(s)) if &**s == "big" => Ok(true),
        Some(Value::Str(s)) if &**s == "little" => Ok(false),
        Some(Value::Str(_)) => {
            Err(it.err("ValueError", "byteorder must be either 'little' or 'big'"))
        }
        Some(other) => {
            let t = tname(it, other);
            Err(it.err(
                "TypeError",
                format!("to_bytes() argument 'byteorder' must be str, not {t}"),
            ))
        }
    }
}

/// `n.to_bytes(length=1, byteorder='big', *, signed=False)`.
pub(super) fn int_to_bytes(
    it: &mut Interp,
    n: &Value,
    args: Vec<Value>,
    kwargs: Kwargs,
) -> R<Value> {
    use num_traits::{Signed, Zero};
    if args.len() > 2 {
        return Err(it.err(
            "TypeError",
            format!(
                "to_bytes() takes at most 2 positional arguments ({} given)",
                args.len()
            ),
        ));
    }
    let [length, order, signed] = bind(
        it,
        "to_bytes",
        args,
        kwargs,
        ["length", "byteorder", "signed"],
        0,
    )?;
    let length = match &length {
        None => 1,
        Some(l) => index_of(it, l)?,
    };
    let Ok(length) = usize::try_from(length) else {
        return Err(it.err("ValueError", "length argument must be non-negative"));
    };
    let big_endian = byteorder(it, order.as_ref())?;
    let signed = match &signed {
        None => false,
        Some(s) => it.truthy(s)?,
    };
    let n = super::numeric::to_big(n).unwrap_or_default();
    if n.is_negative() && !signed {
        return Err(it.err("OverflowError", "can't convert negative int to unsigned"));
    }
    let mut be = if n.is_zero() {
        Vec::new()
    } else if signed {
        n.to_signed_bytes_be()
    } else {
        n.to_bytes_be().1
    };
    if be.len() > length {
        return Err(it.err("OverflowError", "int too big to convert"));
    }
    it.check_str_len(length)?;
    let fill = if n.is_negative() { 0xff } else { 0 };
    let mut out = vec![fill; length - be.len()];
    out.append(&mut be);
    if !big_endian {
        out.reverse();
    }
    new_bytes(it, out)
}

/// `int.from_bytes(bytes, byteorder='big', *, signed=False)`; `bytes` may be any
/// iterable of ints in `range(256)`.
pub(super) fn int_from_bytes(it: &mut Interp, args: Vec<Value>, kwargs: Kwargs) -> R<Value> {
    use num_bigint::BigInt;
    if args.len() > 2 {
        return Err(it.err(
            "TypeError",
            format!(
                "from_bytes() takes at most 2 positional arguments ({} given)",
                args.len()
            ),
        ));
    }
    let [src, order, signed] = bind(
        it,
        "from_bytes",
        args,
        kwargs,
        ["bytes", "byteorder", "signed"],
        1,
    )?;
    let src = freeze(src.unwrap_or(Value::None));
    let data: Vec<u8> = match bytes_like(&src) {
        Some(b) => b.to_vec(),
        None => match &src {
            Value::Str(_) | Value::Int(_) | Value::BigInt(_) | Value::Float(_) | Value::None => {
                let t = tname(it, &src);
                return Err(it.err("TypeError", format!("cannot convert '{t}' object to bytes")));
            }
            other => {
                let items = it.iterate(other)?;
                let mut out = Vec::with_capacity(items.len());
                for v in &items {
                    out.push(item_byte(it, v)?);
                }
                out
            }
        },
    };
    let big_endian = byteorder(it, order.as_ref())?;
    let signed = match &signed {
        None => false,
        Some(s) => it.truthy(s)?,
    };
    let n = match (big_endian, signed) {
        (true, true) => BigInt::from_signed_bytes_be(&data),
        (false, true) => BigInt::from_signed_bytes_le(&data),
        (true, false) => BigInt::from_bytes_be(num_bigint::Sign::Plus, &data),
        (false, false) => BigInt::from_bytes_le(num_bigint::Sign::Plus, &data),
    };
    Ok(Value::from_bigint(n))
}

/// The interrupt is an `IndexError` (to reword the shared index check's message).
pub(crate) fn is_index_error(it: &Interp, e: &Interrupt) -> bool {
    super::args::is_exc(it, e, "IndexError")
}
