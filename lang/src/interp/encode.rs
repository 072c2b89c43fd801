//! The one value-to-JSON encoder. Every way a value leaves the interpreter as JSON goes
//! through [`Interp::encode`]: the wire form of results and reports
//! (`serve_support`, `Wire`), the stored form of anchor fields (`persist`, `Store`),
//! `json.dumps` (`stdlib/json`, `Dumps`) and the plain-data arguments of host services
//! (`kvstore(...)`, `store()`: `plain_json`, `Plain`).
//!
//! The walk is iterative (an explicit stack of open containers, so nesting costs heap,
//! never native stack) and owns what every use shares: the order of the output, the
//! path of open containers and objects (a value inside itself is a cycle, answered by
//! the dialect's own error), the nesting depth handed to the dialect, and where keys and
//! items go. A [`Dialect`] decides the rest: what each value is in its form (a leaf it
//! writes, an array, an object, or another value in its place), its depth bound and
//! budget, and how keys are spelled. Output goes to a [`TreeOut`] (a `serde_json` value:
//! the wire and plain data) or a [`TextOut`] (JSON text: the store and `json.dumps`).

use super::value::{Dict, Value};
use super::{Interp, Interrupt, R};
use serde_json::{Map, Value as Json};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

/// An object member's key, spelled by the dialect when it is reached ([`Dialect::key`]).
pub(super) enum Key {
    /// A field or other name of the value itself.
    Name(Rc<str>),
    /// A key the encoder adds (`_svc_type`, `__tuple__`): not a name of the value.
    Fixed(&'static str),
    /// A dict key, any value.
    Value(Value),
}

impl Key {
    /// The key's text when it is text already (a name, a fixed key or a `str` dict
    /// key), else the dict key the dialect must spell or refuse.
    pub fn text(&self) -> Result<&str, &Value> {
        match self {
            Key::Name(n) => Ok(n),
            Key::Fixed(k) => Ok(k),
            Key::Value(Value::Str(s)) => Ok(s),
            Key::Value(other) => Err(other),
        }
    }
}

/// One member of an array or object still to write.
pub(super) enum Part {
    /// A value, shaped by the dialect when reached, one level deeper than its container.
    Value(Value),
    /// Finished JSON.
    Lit(Json),
    /// A container the dialect builds around values (`{"__tuple__": [...]}`): with
    /// `deeper` false its members count at the same depth as the container's own
    /// members (a wrapper adds no level); with `deeper` true, one level more.
    Shape { shape: Box<Shape>, deeper: bool },
}

/// What a value is in a dialect's form.
pub(super) enum Shape {
    /// The dialect wrote it already.
    Leaf,
    /// A JSON array. `id` is the identity of the container it comes from (a repeat
    /// inside itself is a cycle); `None` for a value that cannot contain itself.
    Array { id: Option<usize>, items: Vec<Part> },
    /// An array of values (the common case of `Array`, without wrapping each item).
    Values {
        id: Option<usize>,
        items: Vec<Value>,
    },
    /// A list's items, read one at a time from the live list as CPython's `json`
    /// reads it (a `default` that appends to it has what it appended written), with
    /// no copy of the items made.
    List(Rc<RefCell<Vec<Value>>>),
    /// A tuple's items.
    Tuple(Rc<Vec<Value>>),
    /// A dict's pairs, read one at a time from the live dict (as `List`).
    Dict(Rc<RefCell<Dict>>),
    /// An object of a dict's key/value pairs (keys spelled by `Dialect::key`).
    Pairs {
        id: Option<usize>,
        pairs: Vec<(Value, Value)>,
    },
    /// A JSON object.
    Object {
        id: Option<usize>,
        entries: Vec<(Key, Part)>,
    },
    /// Another value in place of the one shaped (boxed: rare, and it keeps `Shape`
    /// small).
    Instead(Box<Instead>),
}

/// Encode `value` in place of the value shaped (an enum member's value), at the same
/// depth or one deeper; with `through`, the value `through(value)` answers
/// (`json.dumps`'s `default`), called once `id` is on the path. `id` stays on the path
/// while the replacement is written.
pub(super) struct Instead {
    pub id: Option<usize>,
    pub value: Value,
    pub deeper: bool,
    pub through: Option<Value>,
}

impl Shape {
    /// A list's items, the list's identity on the path.
    pub fn list(l: &Rc<RefCell<Vec<Value>>>) -> Shape {
        Shape::List(l.clone())
    }

    /// A tuple's items, its identity on the path.
    pub fn tuple(t: &Rc<Vec<Value>>) -> Shape {
        Shape::Tuple(t.clone())
    }

    /// A dict's pairs (keys as they are), its identity on the path.
    pub fn dict(d: &Rc<RefCell<Dict>>) -> Shape {
        Shape::Dict(d.clone())
    }

    /// `value` in place of the value shaped, one level deeper when `deeper`.
    pub fn instead(value: Value, deeper: bool) -> Shape {
        Shape::Instead(Box::new(Instead {
            id: None,
            value,
            deeper,
            through: None,
        }))
    }
}

/// The identity of a shared value, for cycle detection.
pub(super) fn identity<T: ?Sized>(rc: &Rc<T>) -> usize {
    Rc::as_ptr(rc) as *const () as usize
}

/// Where the walk writes.
pub(super) trait Out {
    /// A container opens (`obj`: an object) with at least one member to come.
    fn begin(&mut self, obj: bool);
    /// Before an array's item.
    fn item(&mut self);
    /// Before an object member's value.
    fn key(&mut self, key: &str);
    /// The innermost open container closes.
    fn end(&mut self, obj: bool);
    /// A container with no members.
    fn empty(&mut self, obj: bool);
    /// Finished JSON.
    fn lit(&mut self, j: &Json);
}

/// One form of JSON (see the module's documentation).
pub(super) trait Dialect {
    type Out: Out;
    /// What `v`, at nesting `depth` (0 = the top value), is in this form. A leaf is
    /// written to `out` here. The depth bound is the dialect's to enforce.
    fn shape(
        &mut self,
        it: &mut Interp<'_>,
        v: &Value,
        depth: usize,
        out: &mut Self::Out,
    ) -> R<Shape>;
    /// Write an object member's key to `out` (`out.key(text)`); `false` leaves the
    /// member out.
    fn key(&mut self, it: &mut Interp<'_>, key: Key, out: &mut Self::Out) -> R<bool>;
    /// The error for a container or object met again inside itself.
    fn cycle(&mut self, it: &mut Interp<'_>) -> Interrupt;
}

/// The members of an open container still to write.
enum Members {
    /// The next index of a live list, tuple or dict.
    List(Rc<RefCell<Vec<Value>>>, usize),
    Tuple(Rc<Vec<Value>>, usize),
    Dict(Rc<RefCell<Dict>>, usize),
    Values(std::vec::IntoIter<Value>),
    Pairs(std::vec::IntoIter<(Value, Value)>),
    Items(std::vec::IntoIter<Part>),
    Entries(std::vec::IntoIter<(Key, Part)>),
}

/// An open container on the walk's stack.
struct Frame {
    obj: bool,
    /// Written as a container (false: an `Instead` holding its id on the path).
    container: bool,
    members: Members,
    /// On the path while open.
    id: Option<usize>,
    /// Depth of the members.
    depth: usize,
}

impl Interp<'_> {
    /// `v` in dialect `d`, written to `out`.
    pub(super) fn encode<D: Dialect>(&mut self, d: &mut D, v: &Value, out: &mut D::Out) -> R<()> {
        let shape = d.shape(self, v, 0, out)?;
        self.encode_shape(d, shape, 0, out)
    }

    /// A shape the caller built, as if a value at `depth` had that shape.
    pub(super) fn encode_shape<D: Dialect>(
        &mut self,
        d: &mut D,
        shape: Shape,
        depth: usize,
        out: &mut D::Out,
    ) -> R<()> {
        let mut stack: Vec<Frame> = Vec::new();
        self.encode_open(d, shape, depth, out, &mut stack)?;
        while let Some(top) = stack.last_mut() {
            let depth = top.depth;
            let next = match &mut top.members {
                Members::List(l, i) => {
                    let item = l.borrow().get(*i).cloned();
                    *i += 1;
                    item.map(|v| (None, Part::Value(v)))
                }
                Members::Tuple(t, i) => {
                    let item = t.get(*i).cloned();
                    *i += 1;
                    item.map(|v| (None, Part::Value(v)))
                }
                Members::Dict(d, i) => {
                    let pair = d
                        .borrow()
                        .get_index(*i)
                        .map(|(k, v)| (k.0.clone(), v.clone()));
                    *i += 1;
                    pair.map(|(k, v)| (Some(Key::Value(k)), Part::Value(v)))
                }
                Members::Values(items) => items.next().map(|v| (None, Part::Value(v))),
                Members::Pairs(pairs) => pairs
                    .next()
                    .map(|(k, v)| (Some(Key::Value(k)), Part::Value(v))),
                Members::Items(items) => items.next().map(|item| (None, item)),
                Members::Entries(entries) => entries.next().map(|(k, item)| (Some(k), item)),
            };
            let Some((key, item)) = next else {
                if let Some(done) = stack.pop()
                    && done.container
                {
                    out.end(done.obj);
                }
                continue;
            };
            let written = match key {
                Some(key) => d.key(self, key, out)?,
                None if top.container => {
                    out.item();
                    true
                }
                None => true,
            };
            if !written {
                continue;
            }
            match item {
                Part::Lit(j) => out.lit(&j),
                Part::Value(v) => {
                    let shape = d.shape(self, &v, depth, out)?;
                    self.encode_open(d, shape, depth, out, &mut stack)?;
                }
                Part::Shape { shape, deeper } => {
                    let at = if deeper {
                        depth
                    } else {
                        depth.saturating_sub(1)
                    };
                    self.encode_open(d, *shape, at, out, &mut stack)?;
                }
            }
        }
        Ok(())
    }

    /// Start writing `shape` of a value at `depth`: open its frame, if it has members.
    fn encode_open<D: Dialect>(
        &mut self,
        d: &mut D,
        shape: Shape,
        depth: usize,
        out: &mut D::Out,
        stack: &mut Vec<Frame>,
    ) -> R<()> {
        let (obj, container, id, members, members_at) = match shape {
            Shape::Leaf => return Ok(()),
            Shape::List(l) if l.borrow().is_empty() => {
                out.empty(false);
                return Ok(());
            }
            Shape::Tuple(t) if t.is_empty() => {
                out.empty(false);
                return Ok(());
            }
            Shape::Dict(d) if d.borrow().is_empty() => {
                out.empty(true);
                return Ok(());
            }
            Shape::Array { items, .. } if items.is_empty() => {
                out.empty(false);
                return Ok(());
            }
            Shape::Values { items, .. } if items.is_empty() => {
                out.empty(false);
                return Ok(());
            }
            Shape::Object { entries, .. } if entries.is_empty() => {
                out.empty(true);
                return Ok(());
            }
            Shape::Pairs { pairs, .. } if pairs.is_empty() => {
                out.empty(true);
                return Ok(());
            }
            Shape::List(l) => {
                let id = Some(identity(&l));
                (false, true, id, Members::List(l, 0), depth + 1)
            }
            Shape::Tuple(t) => {
                let id = Some(identity(&t));
                (false, true, id, Members::Tuple(t, 0), depth + 1)
            }
            Shape::Dict(d) => {
                let id = Some(identity(&d));
                (true, true, id, Members::Dict(d, 0), depth + 1)
            }
            Shape::Values { id, items } => (
                false,
                true,
                id,
                Members::Values(items.into_iter()),
                depth + 1,
            ),
            Shape::Pairs { id, pairs } => {
                (true, true, id, Members::Pairs(pairs.into_iter()), depth + 1)
            }
            Shape::Array { id, items } => (
                false,
                true,
                id,
                Members::Items(items.into_iter()),
                depth + 1,
            ),
            Shape::Object { id, entries } => (
                true,
                true,
                id,
                Members::Entries(entries.into_iter()),
                depth + 1,
            ),
            Shape::Instead(instead) => {
                let Instead {
                    id,
                    value,
                    deeper,
                    through,
                } = *instead;
                if let Some(id) = id
                    && stack.iter().any(|f| f.id == Some(id))
                {
                    return Err(d.cycle(self));
                }
                let value = match through {
                    Some(f) => self.call_value(&f, vec![value], Vec::new())?,
                    None => value,
                };
                stack.push(Frame {
                    obj: false,
                    container: false,
                    members: Members::Items(vec![Part::Value(value)].into_iter()),
                    id,
                    depth: if deeper { depth + 1 } else { depth },
                });
                return Ok(());
            }
        };
        if let Some(id) = id
            && stack.iter().any(|f| f.id == Some(id))
        {
            return Err(d.cycle(self));
        }
        out.begin(obj);
        stack.push(Frame {
            obj,
            container,
            members,
            id,
            depth: members_at,
        });
        Ok(())
    }
}

/// Output as a `serde_json` value.
#[derive(Default)]
pub(super) struct TreeOut {
    open: Vec<Open>,
    done: Option<Json>,
}

/// A container `TreeOut` is filling.
enum Open {
    Array(Vec<Json>),
    /// The members so far and the key of the member being written.
    Object(Map<String, Json>, String),
}

impl TreeOut {
    /// A finished value (a leaf, or a closed container).
    pub fn leaf(&mut self, j: Json) {
        match self.open.last_mut() {
            None => self.done = Some(j),
            Some(Open::Array(items)) => items.push(j),
            Some(Open::Object(m, key)) => {
                m.insert(std::mem::take(key), j);
            }
        }
    }

    /// The value written (`null` if nothing was).
    pub fn finish(self) -> Json {
        self.done.unwrap_or(Json::Null)
    }
}

impl Out for TreeOut {
    fn begin(&mut self, obj: bool) {
        self.open.push(if obj {
            Open::Object(Map::new(), String::new())
        } else {
            Open::Array(Vec::new())
        });
    }
    fn item(&mut self) {}
    fn key(&mut self, key: &str) {
        if let Some(Open::Object(_, k)) = self.open.last_mut() {
            key.clone_into(k);
        }
    }
    fn end(&mut self, _obj: bool) {
        match self.open.pop() {
            Some(Open::Array(items)) => self.leaf(Json::Array(items)),
            Some(Open::Object(m, _)) => self.leaf(Json::Object(m)),
            None => {}
        }
    }
    fn empty(&mut self, obj: bool) {
        self.leaf(if obj {
            Json::Object(Map::new())
        } else {
            Json::Array(Vec::new())
        });
    }
    fn lit(&mut self, j: &Json) {
        self.leaf(j.clone());
    }
}

/// Output as JSON text, with `json.dumps`'s separators, indentation and `ensure_ascii`.
pub(super) struct TextOut {
    pub text: String,
    item_sep: String,
    key_sep: String,
    indent: Option<String>,
    ensure_ascii: bool,
    /// Per open container: no member written yet.
    first: Vec<bool>,
}

impl TextOut {
    /// Compact text (`,` and `:`, no indentation, non-ASCII kept): the stored form.
    pub fn compact(capacity: usize) -> TextOut {
        TextOut::new(String::with_capacity(capacity), ",", ":", None, false)
    }

    pub fn new(
        text: String,
        item_sep: &str,
        key_sep: &str,
        indent: Option<&str>,
        ensure_ascii: bool,
    ) -> TextOut {
        TextOut {
            text,
            item_sep: item_sep.to_string(),
            key_sep: key_sep.to_string(),
            indent: indent.map(str::to_string),
            ensure_ascii,
            first: Vec::new(),
        }
    }

    /// Text written as is (a number, `null`, a fragment the dialect built).
    pub fn raw(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// `None`, a `bool`, an `int` or a `str` as every text form writes it; `false` for
    /// any other value.
    pub fn scalar(&mut self, v: &Value) -> bool {
        match v {
            Value::None => self.raw("null"),
            Value::Bool(true) => self.raw("true"),
            Value::Bool(false) => self.raw("false"),
            Value::Int(i) => {
                let _ = write!(self.text, "{i}");
            }
            Value::Str(s) => self.string(s),
            _ => return false,
        }
        true
    }

    /// `s` as a JSON string literal.
    pub fn string(&mut self, s: &str) {
        write_json_str(s, self.ensure_ascii, &mut self.text);
    }

    fn newline(&mut self) {
        if let Some(ind) = &self.indent {
            self.text.push('\n');
            for _ in 0..self.first.len() {
                self.text.push_str(ind);
            }
        }
    }

    /// Before a member: the separator and a new line after the first (the first
    /// member's new line came with the opening bracket, as CPython writes it even when
    /// `skipkeys` then leaves every member out).
    fn member(&mut self) {
        if let Some(first) = self.first.last_mut()
            && !std::mem::replace(first, false)
        {
            self.text.push_str(&self.item_sep);
            self.newline();
        }
    }
}

impl Out for TextOut {
    fn begin(&mut self, obj: bool) {
        self.text.push(if obj { '{' } else { '[' });
        self.first.push(true);
        self.newline();
    }
    fn item(&mut self) {
        self.member();
    }
    fn key(&mut self, key: &str) {
        self.member();
        self.string(key);
        self.text.push_str(&self.key_sep);
    }
    fn end(&mut self, obj: bool) {
        self.first.pop();
        self.newline();
        self.text.push(if obj { '}' } else { ']' });
    }
    fn empty(&mut self, obj: bool) {
        self.text.push_str(if obj { "{}" } else { "[]" });
    }
    fn lit(&mut self, j: &Json) {
        let _ = write!(self.text, "{j}");
    }
}

/// Append `s` as a JSON string literal as CPython's `json` writes it: `\"`, `\\`, the
/// short escapes `\n \r \t \b \f`, other control characters as `\u00XX`, and with
/// `ensure_ascii` everything outside printable ASCII as UTF-16 `\uXXXX` units.
pub(super) fn write_json_str(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let short = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if short.is_empty() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push_str(short);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}
