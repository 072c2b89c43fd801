//! The plain-data JSON encoder: `None`, `bool`, `int`, `float`, `str`, `list`, `tuple`
//! and `dict` with `str` keys, nothing else. The values a host service takes as
//! arguments (`kvstore(...)` documents and values, `store()` options) go through it;
//! each caller gives its own refusal messages and depth bound ([`PlainJson`]).
//!
//! The wire encoder (`serve_support::to_wire`, anchors, objects, the response budget)
//! and the store encoder (`persist`, references by id) are separate because what they
//! do with anchors and objects is their whole purpose; all three share the same rule
//! for plain data and bound nesting, so a cycle ends as a `ValueError`.

use super::value::{HashKey, Value};
use super::{Interp, R};
use serde_json::{Map, Value as Json};

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
        self.plain_json_at(v, rules, 0)
    }

    fn plain_refusal(&self, rules: &PlainJson, why: Refusal<'_>) -> super::Interrupt {
        let (ty, msg) = (rules.refuse)(why)
            .unwrap_or(("ValueError", "value cannot be encoded as JSON".to_string()));
        self.err(ty, msg)
    }

    fn plain_json_at(&mut self, v: &Value, rules: &PlainJson, depth: usize) -> R<Json> {
        if depth > rules.max_depth {
            return Err(self.plain_refusal(rules, Refusal::TooDeep));
        }
        Ok(match v {
            Value::None => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::BigInt(_) => return Err(self.plain_refusal(rules, Refusal::BigInt)),
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => Json::Number(n),
                None => match (rules.refuse)(Refusal::NonFinite(*f)) {
                    None => Json::Null,
                    Some((ty, msg)) => return Err(self.err(ty, msg)),
                },
            },
            Value::Str(s) => Json::String(s.to_string()),
            Value::List(items) => {
                let items: Vec<Value> = items.borrow().clone();
                self.plain_json_seq(&items, rules, depth)?
            }
            Value::Tuple(items) => self.plain_json_seq(items, rules, depth)?,
            Value::Dict(d) => {
                let pairs: Vec<(Value, Value)> = d
                    .borrow()
                    .iter()
                    .map(|(HashKey(k), x)| (k.clone(), x.clone()))
                    .collect();
                let mut out = Map::new();
                for (k, x) in &pairs {
                    let Value::Str(k) = k else {
                        let t = self.type_name_of(k);
                        return Err(self.plain_refusal(rules, Refusal::Key(&t)));
                    };
                    out.insert(k.to_string(), self.plain_json_at(x, rules, depth + 1)?);
                }
                Json::Object(out)
            }
            other => {
                let t = self.type_name_of(other);
                return Err(self.plain_refusal(rules, Refusal::Type(&t)));
            }
        })
    }

    fn plain_json_seq(&mut self, items: &[Value], rules: &PlainJson, depth: usize) -> R<Json> {
        let mut out = Vec::with_capacity(items.len());
        for x in items {
            out.push(self.plain_json_at(x, rules, depth + 1)?);
        }
        Ok(Json::Array(out))
    }
}
