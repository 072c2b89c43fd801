//! The plain-data JSON encoder: `None`, `bool`, `int`, `float`, `str`, `list`, `tuple`
//! and `dict` with `str` keys, nothing else. The values a host service takes as
//! arguments (`kvstore(...)` documents and values, `store()` options) go through it;
//! each caller gives its own refusal messages and depth bound ([`PlainJson`]).
//!
//! It is one dialect of the one encoder (`interp/encode.rs`), beside the wire form,
//! the stored form and `json.dumps`; a container inside itself is the depth refusal.

use super::encode::{Dialect, Key, Out as _, Shape, TreeOut};
use super::value::Value;
use super::{Interp, Interrupt, R};
use serde_json::Value as Json;

/// Why a value cannot be encoded.
pub(super) enum Refusal<'t> {
    /// Nested deeper than [`PlainJson::max_depth`] (where a cycle ends up too).
    TooDeep,
    /// An `int` beyond 64 bits.
    BigInt,
    /// `nan` or an infinity.
    NonFinite(f64),
    /// A dict key of this type (not `str`).
    Key(&'t str),
    /// A value of this type.
    Type(&'t str),
}

/// One caller's rules: how deep, and what each refusal raises. `refuse` answers the
/// exception type and message, or `None` to encode the value as `null` (only asked
/// for [`Refusal::NonFinite`]).
pub(super) struct PlainJson {
    pub max_depth: usize,
    pub refuse: fn(Refusal<'_>) -> Option<(&'static str, String)>,
}

impl Interp<'_> {
    /// `v` as JSON under `rules`.
    pub(super) fn plain_json(&mut self, v: &Value, rules: &PlainJson) -> R<Json> {
        let mut out = TreeOut::default();
        self.encode(&mut Plain { rules }, v, &mut out)?;
        Ok(out.finish())
    }

    fn plain_refusal(&self, rules: &PlainJson, why: Refusal<'_>) -> Interrupt {
        let (ty, msg) = (rules.refuse)(why)
            .unwrap_or(("ValueError", "value cannot be encoded as JSON".to_string()));
        self.err(ty, msg)
    }
}

/// The plain-data form under one caller's rules.
struct Plain<'r> {
    rules: &'r PlainJson,
}

impl Dialect for Plain<'_> {
    type Out = TreeOut;

    fn shape(
        &mut self,
        it: &mut Interp<'_>,
        v: &Value,
        depth: usize,
        out: &mut TreeOut,
    ) -> R<Shape> {
        let rules = self.rules;
        if depth > rules.max_depth {
            return Err(it.plain_refusal(rules, Refusal::TooDeep));
        }
        let leaf = match v {
            Value::None => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::BigInt(_) => return Err(it.plain_refusal(rules, Refusal::BigInt)),
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => Json::Number(n),
                None => match (rules.refuse)(Refusal::NonFinite(*f)) {
                    None => Json::Null,
                    Some((ty, msg)) => return Err(it.err(ty, msg)),
                },
            },
            Value::Str(s) => Json::String(s.to_string()),
            Value::List(l) => return Ok(Shape::list(l)),
            Value::Tuple(t) => return Ok(Shape::tuple(t)),
            Value::Dict(d) => return Ok(Shape::dict(d)),
            other => {
                let t = it.type_name_of(other);
                return Err(it.plain_refusal(rules, Refusal::Type(&t)));
            }
        };
        out.leaf(leaf);
        Ok(Shape::Leaf)
    }

    fn key(&mut self, it: &mut Interp<'_>, key: Key, out: &mut TreeOut) -> R<bool> {
        match key.text() {
            Ok(text) => out.key(text),
            Err(other) => {
                let t = it.type_name_of(other);
                return Err(it.plain_refusal(self.rules, Refusal::Key(&t)));
            }
        }
        Ok(true)
    }

    /// A container inside itself would nest without end: the depth refusal.
    fn cycle(&mut self, it: &mut Interp<'_>) -> Interrupt {
        it.plain_refusal(self.rules, Refusal::TooDeep)
    }
}
