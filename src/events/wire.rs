//! The wire form of an event: CloudEvents 1.0 structured JSON (`specversion`, `type`,
//! `source`, `id`, `time`, `datacontenttype`, `data`, with `trace_id` and `headers` as
//! extensions). Only the stream broker serializes; the in-memory broker keeps records.
//! The broker-managed `delivery_*` fields never travel.

use serde_json::{Map, Value as Json};

pub const SPEC_VERSION: &str = "1.0";

/// An event record as the interpreter hands it over (`lang::serve::events::EVENT_FIELDS`).
pub type Record = Map<String, Json>;

fn text<'a>(record: &'a Record, key: &str) -> &'a str {
    record.get(key).and_then(Json::as_str).unwrap_or("")
}

/// The CloudEvents JSON text of `record` published to `topic` (`type` = the record's
/// `event_type`, or the topic when empty).
pub fn encode(topic: &str, record: &Record) -> String {
    let event_type = match text(record, "event_type") {
        "" => topic,
        t => t,
    };
    let mut out = Map::new();
    out.insert("specversion".into(), Json::from(SPEC_VERSION));
    out.insert("type".into(), Json::from(event_type));
    out.insert("source".into(), Json::from(text(record, "source")));
    out.insert("id".into(), Json::from(text(record, "id")));
    out.insert("time".into(), Json::from(text(record, "time")));
    out.insert("datacontenttype".into(), Json::from("application/json"));
    out.insert(
        "data".into(),
        record.get("data").cloned().unwrap_or(Json::Null),
    );
    out.insert("trace_id".into(), Json::from(text(record, "trace_id")));
    let headers = match record.get("headers") {
        Some(h @ Json::Object(_)) => h.clone(),
        _ => Json::Object(Map::new()),
    };
    out.insert("headers".into(), headers);
    Json::Object(out).to_string()
}

/// The record of a CloudEvents JSON text; `Err` says why it is not a valid event
/// (not JSON, not an object, wrong `specversion`, missing `id`, `source` or `type`).
pub fn decode(text: &str) -> Result<Record, String> {
    let json: Json = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Json::Object(mut m) = json else {
        return Err("not a JSON object".into());
    };
    if m.get("specversion").and_then(Json::as_str) != Some(SPEC_VERSION) {
        return Err("specversion is not \"1.0\"".into());
    }
    for key in ["id", "source", "type"] {
        if m.get(key).and_then(Json::as_str).is_none_or(str::is_empty) {
            return Err(format!("attribute `{key}` missing"));
        }
    }
    let data = m.remove("data").unwrap_or(Json::Null);
    let mut take_text = |key: &str| match m.remove(key) {
        Some(Json::String(s)) => Json::String(s),
        Some(Json::Null) | None => Json::String(String::new()),
        Some(other) => Json::String(other.to_string()),
    };
    let mut record = Record::new();
    record.insert("data".into(), data);
    record.insert("trace_id".into(), take_text("trace_id"));
    record.insert("event_type".into(), take_text("type"));
    record.insert("id".into(), take_text("id"));
    record.insert("source".into(), take_text("source"));
    record.insert("time".into(), take_text("time"));
    let headers = match m.remove("headers") {
        Some(h @ Json::Object(_)) => h,
        _ => Json::Object(Map::new()),
    };
    record.insert("headers".into(), headers);
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Record {
        json!({
            "data": {"n": 1}, "trace_id": "t1", "event_type": "", "id": "abc",
            "source": "svc-scale", "time": "2026-01-01T00:00:00.000000Z",
            "headers": {"k": "v"}, "delivery_id": "7", "delivery_topic": "orders",
            "delivery_group": "g"
        })
        .as_object()
        .cloned()
        .expect("object")
    }

    #[test]
    fn encodes_cloudevents_with_extensions_and_no_delivery_fields() {
        let text = encode("orders", &record());
        let j: Json = serde_json::from_str(&text).expect("json");
        assert_eq!(j["specversion"], "1.0");
        assert_eq!(j["type"], "orders", "event_type defaults to the topic");
        assert_eq!(j["source"], "svc-scale");
        assert_eq!(j["id"], "abc");
        assert_eq!(j["data"], json!({"n": 1}));
        assert_eq!(j["trace_id"], "t1");
        assert_eq!(j["headers"], json!({"k": "v"}));
        assert!(j.get("delivery_id").is_none());
    }

    #[test]
    fn decodes_what_it_encodes() {
        let back = decode(&encode("orders", &record())).expect("valid");
        assert_eq!(back["event_type"], "orders");
        assert_eq!(back["data"], json!({"n": 1}));
        assert_eq!(back["headers"], json!({"k": "v"}));
    }

    #[test]
    fn refuses_hostile_input() {
        for bad in [
            "",
            "[]",
            "{\"specversion\":\"0.3\"}",
            "{\"specversion\":\"1.0\"}",
            "\u{0}",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
