//! `json`: `dumps` and `loads` with CPython's output text and `JSONDecodeError` messages.
//!
//! The encoder recurses natively, at most [`MAX_DEPTH`] levels (deeper, or a circular
//! container, is CPython's error); the decoder is iterative with the same bound.

use super::super::Interrupt;
use super::super::encode::{Dialect, Instead, Key, Out as _, Shape, TextOut, identity};
use super::super::value::*;
use super::super::{Interp, R};
use super::ArgStyle;
use crate::pyfmt;
use std::fmt::Write as _;
use std::rc::Rc;

/// Deepest nesting `dumps` writes and `loads` reads (CPython's recursion limit is 1000).
pub const MAX_DEPTH: usize = 1000;

/// `json.dumps`'s form: CPython's text, written through the one encoder
/// (`interp/encode.rs`) into a `TextOut` that holds the separators, indentation and
/// `ensure_ascii`.
struct Dumps {
    sort_keys: bool,
    skipkeys: bool,
    allow_nan: bool,
    default: Option<Value>,
}

impl Interp<'_> {
    /// `dumps`/`loads` are Python functions that pass unknown keywords on to the
    /// encoder/decoder class, whose `__init__` refuses them.
    fn json_args(
        &self,
        func: &str,
        class: &str,
        params: &[&str],
        required: usize,
        positional: usize,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<super::Args> {
        if let Some((k, _)) = kwargs.iter().find(|(k, _)| !params.contains(&&**k)) {
            return Err(self.err(
                "TypeError",
                format!("{class}.__init__() got an unexpected keyword argument '{k}'"),
            ));
        }
        self.stdlib_args_as(
            ArgStyle::Python(func),
            params,
            required,
            positional,
            args,
            kwargs,
        )
    }

    pub(super) fn call_json(
        &mut self,
        func: &str,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        match func {
            "dumps" => {
                let a = self.json_args(
                    "dumps",
                    "JSONEncoder",
                    &[
                        "obj",
                        "skipkeys",
                        "ensure_ascii",
                        "check_circular",
                        "allow_nan",
                        "cls",
                        "indent",
                        "separators",
                        "default",
                        "sort_keys",
                    ],
                    1,
                    1,
                    args,
                    kwargs,
                )?;
                let flag = |it: &mut Self, i: usize, d: bool| -> R<bool> {
                    match a.get(i) {
                        Some(v) => it.truthy(v),
                        None => Ok(d),
                    }
                };
                let skipkeys = flag(self, 1, false)?;
                let ensure_ascii = flag(self, 2, true)?;
                let allow_nan = flag(self, 4, true)?;
                let sort_keys = flag(self, 9, false)?;
                let indent = match a.opt(6) {
                    None => None,
                    Some(Value::Str(s)) => Some(s.to_string()),
                    Some(v @ (Value::Int(_) | Value::Bool(_))) => {
                        let n = self.int_arg(v)?;
                        Some(" ".repeat(n.clamp(0, 64) as usize))
                    }
                    // CPython multiplies the indent as it starts encoding, after its fast
                    // path for a plain string: a bad indent fails for any other value.
                    Some(other) => {
                        let obj = a.get(0).unwrap_or(&Value::None);
                        if !matches!(obj, Value::Str(_)) {
                            return Err(self.err(
                                "TypeError",
                                format!(
                                    "can't multiply sequence by non-int of type '{}'",
                                    self.type_name_of(other)
                                ),
                            ));
                        }
                        None
                    }
                };
                let (item_sep, key_sep) = match a.opt(7) {
                    Some(v) => {
                        let parts = self.iterate(v)?;
                        match parts.as_slice() {
                            [Value::Str(i), Value::Str(k)] => (i.to_string(), k.to_string()),
                            // `item_separator, key_separator = separators`.
                            [] | [_] => {
                                return Err(self.err(
                                    "ValueError",
                                    format!(
                                        "not enough values to unpack (expected 2, got {})",
                                        parts.len()
                                    ),
                                ));
                            }
                            [_, _, _, ..] => {
                                return Err(self
                                    .err("ValueError", "too many values to unpack (expected 2)"));
                            }
                            _ => {
                                return Err(self.err(
                                    "ValueError",
                                    "separators must be a (item_separator, key_separator) pair of strings",
                                ));
                            }
                        }
                    }
                    None if indent.is_some() => (",".to_string(), ": ".to_string()),
                    None => (", ".to_string(), ": ".to_string()),
                };
                let mut dumps = Dumps {
                    sort_keys,
                    skipkeys,
                    allow_nan,
                    default: a.opt(8).cloned(),
                };
                let obj = a.get(0).cloned().unwrap_or(Value::None);
                let mut out = TextOut::new(
                    String::new(),
                    &item_sep,
                    &key_sep,
                    indent.as_deref(),
                    ensure_ascii,
                );
                self.encode(&mut dumps, &obj, &mut out)?;
                Ok(Value::str(&out.text))
            }
            "loads" => {
                let a = self.json_args(
                    "loads",
                    "JSONDecoder",
                    &[
                        "s",
                        "cls",
                        "object_hook",
                        "parse_float",
                        "parse_int",
                        "parse_constant",
                        "object_pairs_hook",
                    ],
                    1,
                    1,
                    args,
                    kwargs,
                )?;
                let first = a
                    .get(0)
                    .cloned()
                    .map(crate::interp::builtins::bytes::freeze);
                let s = match first.as_ref() {
                    Some(Value::Str(s)) => s.to_rc(),
                    // Bytes are decoded first; svc reads UTF-8 (a UTF-8 BOM dropped),
                    // where CPython also detects UTF-16 and UTF-32.
                    Some(Value::Bytes(b)) => {
                        let b = b.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(b);
                        match crate::interp::builtins::bytes::decode(self, b, "utf-8", "strict")? {
                            Value::Str(s) => s.to_rc(),
                            _ => Rc::from(""),
                        }
                    }
                    Some(other) => {
                        return Err(self.err(
                            "TypeError",
                            format!(
                                "the JSON object must be str, bytes or bytearray, not {}",
                                self.type_name_of(other)
                            ),
                        ));
                    }
                    None => Rc::from(""),
                };
                if s.starts_with('\u{feff}') {
                    let doc: Vec<char> = s.chars().collect();
                    return Err(self.json_error(
                        "Unexpected UTF-8 BOM (decode using utf-8-sig)",
                        &doc,
                        0,
                    ));
                }
                self.json_decode(&s)
            }
            _ => Err(self.err(
                "AttributeError",
                format!("module 'json' has no attribute '{func}'"),
            )),
        }
    }

    /// Items sorted by key as `sorted(d.items())` does (a `TypeError` for keys that do
    /// not order).
    fn json_sorted(&mut self, items: Vec<(Value, Value)>) -> R<Vec<(Value, Value)>> {
        // Insertion into a sorted vector by binary search: O(n log n) comparisons.
        let mut sorted: Vec<(Value, Value)> = Vec::with_capacity(items.len());
        for item in items {
            let (mut lo, mut hi) = (0, sorted.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.py_lt(&item.0, &sorted[mid].0)? {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            sorted.insert(lo, item);
        }
        Ok(sorted)
    }

    /// A `json.JSONDecodeError` at char position `pos` of `doc`.
    fn json_error(&mut self, msg: &str, doc: &[char], pos: usize) -> super::super::Interrupt {
        let lineno = doc[..pos].iter().filter(|c| **c == '\n').count() + 1;
        let colno = match doc[..pos].iter().rposition(|c| *c == '\n') {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        let text = format!("{msg}: line {lineno} column {colno} (char {pos})");
        self.ensure_stdlib_classes();
        let e = self.err("json.JSONDecodeError", text);
        if let super::super::Interrupt::Exc(exc) = &e
            && let Value::Instance(inst) = &exc.value
        {
            let doc: String = doc.iter().collect();
            inst.set_extra(Rc::from("msg"), Value::str(msg));
            inst.set_extra(Rc::from("doc"), Value::str(&doc));
            inst.set_extra(Rc::from("pos"), Value::Int(pos as i64));
            inst.set_extra(Rc::from("lineno"), Value::Int(lineno as i64));
            inst.set_extra(Rc::from("colno"), Value::Int(colno as i64));
        }
        e
    }

    /// `json.loads(s)`: an iterative parser over the characters of `s`.
    fn json_decode(&mut self, s: &str) -> R<Value> {
        enum Frame {
            List(Vec<Value>),
            /// An object and the key whose value is being parsed.
            Obj(Dict, Option<Value>),
        }
        let c: Vec<char> = s.chars().collect();
        let n = c.len();
        let ws = |i: &mut usize| {
            while *i < n && matches!(c[*i], ' ' | '\t' | '\n' | '\r') {
                *i += 1;
            }
        };
        let mut i = 0;
        let mut stack: Vec<Frame> = Vec::new();
        ws(&mut i);
        // Parse a value at `i`; containers push a frame and continue the loop.
        let result = 'outer: loop {
            // Expecting a value at i.
            self.poll()?;
            let mut value: Value;
            if i >= n {
                return Err(self.json_error("Expecting value", &c, i));
            }
            match c[i] {
                '{' | '[' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.err(
                            "RecursionError",
                            "maximum recursion depth exceeded while decoding a JSON document",
                        ));
                    }
                    let open = c[i];
                    i += 1;
                    ws(&mut i);
                    if open == '[' {
                        if i < n && c[i] == ']' {
                            i += 1;
                            value = Value::list(Vec::new());
                        } else {
                            stack.push(Frame::List(Vec::new()));
                            continue 'outer;
                        }
                    } else if i < n && c[i] == '}' {
                        i += 1;
                        value = Value::dict(Dict::default());
                    } else {
                        let key = self.json_key(&c, &mut i)?;
                        stack.push(Frame::Obj(Dict::default(), Some(key)));
                        continue 'outer;
                    }
                }
                '"' => {
                    let s = self.json_string(&c, &mut i)?;
                    value = Value::str(&s);
                }
                'n' if c[i..].starts_with(&['n', 'u', 'l', 'l']) => {
                    i += 4;
                    value = Value::None;
                }
                't' if c[i..].starts_with(&['t', 'r', 'u', 'e']) => {
                    i += 4;
                    value = Value::Bool(true);
                }
                'f' if c[i..].starts_with(&['f', 'a', 'l', 's', 'e']) => {
                    i += 5;
                    value = Value::Bool(false);
                }
                'N' if c[i..].starts_with(&['N', 'a', 'N']) => {
                    i += 3;
                    value = Value::Float(f64::NAN);
                }
                'I' if c[i..].starts_with(&['I', 'n', 'f', 'i', 'n', 'i', 't', 'y']) => {
                    i += 8;
                    value = Value::Float(f64::INFINITY);
                }
                '-' if c[i..].starts_with(&['-', 'I', 'n', 'f', 'i', 'n', 'i', 't', 'y']) => {
                    i += 9;
                    value = Value::Float(f64::NEG_INFINITY);
                }
                '-' | '0'..='9' => match self.json_number(&c, &mut i)? {
                    Some(v) => value = v,
                    None => return Err(self.json_error("Expecting value", &c, i)),
                },
                _ => return Err(self.json_error("Expecting value", &c, i)),
            }
            // A complete value: hand it to the enclosing containers.
            loop {
                match stack.last_mut() {
                    None => break 'outer value,
                    Some(Frame::List(items)) => {
                        items.push(value);
                        ws(&mut i);
                        if i < n && c[i] == ',' {
                            i += 1;
                            ws(&mut i);
                            continue 'outer;
                        }
                        if i < n && c[i] == ']' {
                            i += 1;
                            let Some(Frame::List(items)) = stack.pop() else {
                                unreachable!("the top frame is a list")
                            };
                            value = Value::list(items);
                            continue;
                        }
                        return Err(self.json_error("Expecting ',' delimiter", &c, i));
                    }
                    Some(Frame::Obj(d, key)) => {
                        let k = key.take().unwrap_or(Value::None);
                        d.insert(HashKey(k), value);
                        ws(&mut i);
                        if i < n && c[i] == ',' {
                            i += 1;
                            ws(&mut i);
                            let k = self.json_key(&c, &mut i)?;
                            if let Some(Frame::Obj(_, key)) = stack.last_mut() {
                                *key = Some(k);
                            }
                            continue 'outer;
                        }
                        if i < n && c[i] == '}' {
                            i += 1;
                            let Some(Frame::Obj(d, _)) = stack.pop() else {
                                unreachable!("the top frame is an object")
                            };
                            value = Value::dict(d);
                            continue;
                        }
                        return Err(self.json_error("Expecting ',' delimiter", &c, i));
                    }
                }
            }
        };
        ws(&mut i);
        if i < n {
            return Err(self.json_error("Extra data", &c, i));
        }
        Ok(result)
    }

    /// An object key and its `:` (whitespace before the value skipped).
    fn json_key(&mut self, c: &[char], i: &mut usize) -> R<Value> {
        if *i >= c.len() || c[*i] != '"' {
            return Err(self.json_error(
                "Expecting property name enclosed in double quotes",
                c,
                *i,
            ));
        }
        let k = self.json_string(c, i)?;
        while *i < c.len() && matches!(c[*i], ' ' | '\t' | '\n' | '\r') {
            *i += 1;
        }
        if *i >= c.len() || c[*i] != ':' {
            return Err(self.json_error("Expecting ':' delimiter", c, *i));
        }
        *i += 1;
        while *i < c.len() && matches!(c[*i], ' ' | '\t' | '\n' | '\r') {
            *i += 1;
        }
        Ok(Value::str(&k))
    }

    /// A string literal starting at the `"` at `i`.
    fn json_string(&mut self, c: &[char], i: &mut usize) -> R<String> {
        let start = *i;
        *i += 1;
        let mut out = String::new();
        loop {
            if *i >= c.len() {
                return Err(self.json_error("Unterminated string starting at", c, start));
            }
            let ch = c[*i];
            match ch {
                '"' => {
                    *i += 1;
                    return Ok(out);
                }
                '\\' => {
                    if *i + 1 >= c.len() {
                        return Err(self.json_error("Unterminated string starting at", c, start));
                    }
                    let e = c[*i + 1];
                    let simple = match e {
                        '"' => Some('"'),
                        '\\' => Some('\\'),
                        '/' => Some('/'),
                        'b' => Some('\u{8}'),
                        'f' => Some('\u{c}'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        _ => None,
                    };
                    if let Some(s) = simple {
                        out.push(s);
                        *i += 2;
                        continue;
                    }
                    if e != 'u' {
                        return Err(self.json_error("Invalid \\escape", c, *i));
                    }
                    let hex = |at: usize| -> Option<u32> {
                        let digits: String = c.get(at..at + 4)?.iter().collect();
                        if digits.chars().all(|d| d.is_ascii_hexdigit()) {
                            u32::from_str_radix(&digits, 16).ok()
                        } else {
                            None
                        }
                    };
                    let Some(u) = hex(*i + 2) else {
                        return Err(self.json_error("Invalid \\uXXXX escape", c, *i + 1));
                    };
                    *i += 6;
                    let mut code = u;
                    if (0xd800..0xdc00).contains(&u)
                        && c.get(*i) == Some(&'\\')
                        && c.get(*i + 1) == Some(&'u')
                        && let Some(lo) = hex(*i + 2)
                        && (0xdc00..0xe000).contains(&lo)
                    {
                        code = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                        *i += 6;
                    }
                    // A lone surrogate cannot live in a Rust string: U+FFFD stands in.
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                c0 if (c0 as u32) < 0x20 => {
                    return Err(self.json_error("Invalid control character at", c, *i));
                }
                _ => {
                    out.push(ch);
                    *i += 1;
                }
            }
        }
    }

    /// A number at `i` (`None`: not a number there).
    fn json_number(&mut self, c: &[char], i: &mut usize) -> R<Option<Value>> {
        let start = *i;
        let mut j = *i;
        if c[j] == '-' {
            j += 1;
        }
        let digits_start = j;
        if j < c.len() && c[j] == '0' {
            j += 1;
        } else {
            while j < c.len() && c[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j == digits_start {
            return Ok(None);
        }
        let mut is_float = false;
        if j + 1 < c.len() && c[j] == '.' && c[j + 1].is_ascii_digit() {
            is_float = true;
            j += 1;
            while j < c.len() && c[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < c.len() && (c[j] == 'e' || c[j] == 'E') {
            let mut k = j + 1;
            if k < c.len() && (c[k] == '+' || c[k] == '-') {
                k += 1;
            }
            if k < c.len() && c[k].is_ascii_digit() {
                while k < c.len() && c[k].is_ascii_digit() {
                    k += 1;
                }
                is_float = true;
                j = k;
            }
        }
        let text: String = c[start..j].iter().collect();
        *i = j;
        if is_float {
            return Ok(Some(Value::Float(text.parse::<f64>().unwrap_or(f64::NAN))));
        }
        let digits = text.trim_start_matches('-').len();
        if digits > pyfmt::INT_MAX_STR_DIGITS {
            return Err(self.err(
                "ValueError",
                format!(
                    "Exceeds the limit ({}) for integer string conversion: value has {digits} digits; use sys.set_int_max_str_digits() to increase the limit",
                    pyfmt::INT_MAX_STR_DIGITS
                ),
            ));
        }
        Ok(Some(match text.parse::<i64>() {
            Ok(v) => Value::Int(v),
            Err(_) => Value::from_bigint(text.parse::<num_bigint::BigInt>().unwrap_or_default()),
        }))
    }
}

/// A float as `json.dumps` writes it: its repr, or `NaN`/`Infinity`/`-Infinity` when
/// `allow_nan`, else CPython's `ValueError`.
fn dumps_float(it: &mut Interp<'_>, allow_nan: bool, f: f64, out: &mut String) -> R<()> {
    if f.is_finite() {
        pyfmt::push_float_repr(out, f);
        return Ok(());
    }
    if !allow_nan {
        return Err(it.err(
            "ValueError",
            format!(
                "Out of range float values are not JSON compliant: {}",
                pyfmt::float_repr(f)
            ),
        ));
    }
    out.push_str(if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    });
    Ok(())
}

impl Dialect for Dumps {
    type Out = TextOut;

    fn shape(
        &mut self,
        it: &mut Interp<'_>,
        v: &Value,
        depth: usize,
        out: &mut TextOut,
    ) -> R<Shape> {
        if depth > MAX_DEPTH {
            return Err(it.err(
                "RecursionError",
                "maximum recursion depth exceeded while encoding a JSON object",
            ));
        }
        if out.text.len() > it.max_text_bytes() {
            return Err(it.err(
                "MemoryError",
                pyfmt::too_large(out.text.len(), it.max_text_bytes()),
            ));
        }
        match v {
            // A typed enum's member (`enum R: str`) is its value, as Python's mixin enums.
            Value::EnumMember(m)
                if super::super::decl_later::enum_value_type(&m.class).is_some() =>
            {
                return Ok(Shape::instead(m.value.clone(), false));
            }
            _ if out.scalar(v) => {}
            Value::BigInt(b) => {
                let _ = write!(out.text, "{b}");
            }
            Value::Float(f) => dumps_float(it, self.allow_nan, *f, &mut out.text)?,
            Value::List(l) => return Ok(Shape::list(l)),
            Value::Tuple(t) => return Ok(Shape::tuple(t)),
            // A named tuple (`date.isocalendar()`) is an array, as CPython writes it.
            Value::Instance(_) if let Some(t) = it.stdlib_tuple(v) => {
                return Ok(Shape::instead(t, false));
            }
            Value::Dict(d) if self.sort_keys => {
                let items: Vec<(Value, Value)> = d
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.0.clone(), v.clone()))
                    .collect();
                let items = it.json_sorted(items)?;
                return Ok(Shape::Pairs {
                    id: Some(identity(d)),
                    pairs: items,
                });
            }
            Value::Dict(d) => return Ok(Shape::dict(d)),
            other => {
                let Some(f) = self.default.clone() else {
                    return Err(it.err(
                        "TypeError",
                        format!(
                            "Object of type {} is not JSON serializable",
                            it.class_of(other).name
                        ),
                    ));
                };
                let id = match other {
                    Value::Instance(i) => Some(identity(i)),
                    _ => None,
                };
                return Ok(Shape::Instead(Box::new(Instead {
                    id,
                    value: other.clone(),
                    deeper: true,
                    through: Some(f),
                })));
            }
        }
        Ok(Shape::Leaf)
    }

    fn key(&mut self, it: &mut Interp<'_>, key: Key, out: &mut TextOut) -> R<bool> {
        let k = match key.text() {
            Ok(text) => {
                out.key(text);
                return Ok(true);
            }
            Err(k) => k,
        };
        let text = match k {
            Value::Bool(true) => "true".into(),
            Value::Bool(false) => "false".into(),
            Value::None => "null".into(),
            Value::Int(i) => i.to_string(),
            Value::BigInt(b) => b.to_string(),
            Value::Float(f) => {
                let mut s = String::new();
                dumps_float(it, self.allow_nan, *f, &mut s)?;
                s
            }
            _ if self.skipkeys => return Ok(false),
            other => {
                return Err(it.err(
                    "TypeError",
                    format!(
                        "keys must be str, int, float, bool or None, not {}",
                        it.type_name_of(other)
                    ),
                ));
            }
        };
        out.key(&text);
        Ok(true)
    }

    fn cycle(&mut self, it: &mut Interp<'_>) -> Interrupt {
        it.err("ValueError", "Circular reference detected")
    }
}
