//! JSON ↔ BSON, one converter for every document-database path (kvstore collections,
//! user profiles, anchor fields, quarantined documents).
//!
//! Both directions count their nesting and stop at the caller's bound with [`TooDeep`],
//! so a document written by another client or corrupted on disk cannot drive native
//! recursion in proportion to its depth. Integers are stored as `Int32` when they fit
//! and `Int64` otherwise (as pymongo stores them); reading turns object ids into their
//! hex text and dates into RFC 3339 text.

use mongodb::bson::{Bson, Document};
use serde_json::{Map, Value as Json};

/// Deepest nesting the document database itself accepts (MongoDB's limit).
pub const MAX_DEPTH: usize = 100;

/// A value nested deeper than the caller's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep;

/// A JSON value as BSON, at most `max_depth` containers deep.
pub fn to_bson(j: &Json, max_depth: usize) -> Result<Bson, TooDeep> {
    bson_at(j, 0, max_depth)
}

/// A JSON object as a BSON document, at most `max_depth` containers deep.
pub fn to_doc(m: &Map<String, Json>, max_depth: usize) -> Result<Document, TooDeep> {
    doc_at(m, 0, max_depth)
}

/// A BSON value as JSON, at most `max_depth` containers deep.
pub fn to_json(b: &Bson, max_depth: usize) -> Result<Json, TooDeep> {
    json_at(b, 0, max_depth)
}

/// A BSON document as a JSON object, at most `max_depth` containers deep.
pub fn doc_json(d: &Document, max_depth: usize) -> Result<Map<String, Json>, TooDeep> {
    map_at(d, 0, max_depth)
}

fn bson_at(j: &Json, depth: usize, max: usize) -> Result<Bson, TooDeep> {
    Ok(match j {
        Json::Null => Bson::Null,
        Json::Bool(b) => Bson::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i32::try_from(i).map_or(Bson::Int64(i), Bson::Int32),
            None => Bson::Double(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Bson::String(s.clone()),
        Json::Array(items) => {
            deeper(depth, max)?;
            Bson::Array(
                items
                    .iter()
                    .map(|v| bson_at(v, depth + 1, max))
                    .collect::<Result<_, _>>()?,
            )
        }
        Json::Object(m) => {
            deeper(depth, max)?;
            Bson::Document(doc_at(m, depth + 1, max)?)
        }
    })
}

fn doc_at(m: &Map<String, Json>, depth: usize, max: usize) -> Result<Document, TooDeep> {
    let mut d = Document::new();
    for (k, v) in m {
        d.insert(k.clone(), bson_at(v, depth, max)?);
    }
    Ok(d)
}

fn json_at(b: &Bson, depth: usize, max: usize) -> Result<Json, TooDeep> {
    Ok(match b {
        Bson::Null | Bson::Undefined => Json::Null,
        Bson::Boolean(v) => Json::Bool(*v),
        Bson::Int32(i) => Json::from(*i),
        Bson::Int64(i) => Json::from(*i),
        Bson::Double(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Bson::String(s) => Json::String(s.clone()),
        Bson::Array(items) => {
            deeper(depth, max)?;
            Json::Array(
                items
                    .iter()
                    .map(|v| json_at(v, depth + 1, max))
                    .collect::<Result<_, _>>()?,
            )
        }
        Bson::Document(d) => {
            deeper(depth, max)?;
            Json::Object(map_at(d, depth + 1, max)?)
        }
        Bson::ObjectId(oid) => Json::String(oid.to_hex()),
        Bson::DateTime(dt) => Json::String(
            dt.try_to_rfc3339_string()
                .unwrap_or_else(|_| dt.timestamp_millis().to_string()),
        ),
        other => Json::String(other.to_string()),
    })
}

fn map_at(d: &Document, depth: usize, max: usize) -> Result<Map<String, Json>, TooDeep> {
    d.iter()
        .map(|(k, v)| Ok((k.clone(), json_at(v, depth, max)?)))
        .collect()
}

fn deeper(depth: usize, max: usize) -> Result<(), TooDeep> {
    if depth >= max { Err(TooDeep) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> Json {
        let mut j = Json::from(1);
        for _ in 0..levels {
            j = Json::Array(vec![j]);
        }
        j
    }

    #[test]
    fn round_trips_scalars_and_containers() {
        let j =
            serde_json::json!({"a": 1, "b": [1.5, "x", null, true], "c": {"d": 5_000_000_000i64}});
        let Json::Object(m) = &j else { unreachable!() };
        let d = to_doc(m, MAX_DEPTH).unwrap();
        assert_eq!(d.get("a"), Some(&Bson::Int32(1)));
        assert_eq!(Json::Object(doc_json(&d, MAX_DEPTH).unwrap()), j);
    }

    #[test]
    fn nesting_is_bounded_both_ways() {
        assert!(to_bson(&nested(3), 3).is_ok());
        assert_eq!(to_bson(&nested(4), 3), Err(TooDeep));
        let mut b = Bson::Int32(1);
        for _ in 0..MAX_DEPTH {
            b = Bson::Array(vec![b]);
        }
        assert!(to_json(&b, MAX_DEPTH).is_ok());
        // One level more than the database accepts is refused before it is walked.
        for _ in 0..400 {
            b = Bson::Array(vec![b]);
        }
        assert_eq!(to_json(&b, MAX_DEPTH), Err(TooDeep));
    }
}
