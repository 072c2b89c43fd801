//! The JSON envelope every generated endpoint answers with (decisions.md): keys in the
//! order `ok, type, data, error, meta`, and `meta.extra.http_status` equal to the HTTP
//! status. Raw (`envelope=false`) function bodies and the WebSocket reply and error
//! frames are built here too.

use super::errors::{ApiError, FieldError};
use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actors::runtime::CallOutcome;
use serde::Serialize;
use serde_json::Value as Json;

const JSON_TYPE: &str = "application/json";

/// Bytes first reserved for an envelope: the fixed keys take about 80, so a small
/// result is written without the buffer growing.
const ENVELOPE_CAPACITY: usize = 256;

/// Field order here is the wire order.
#[derive(Serialize)]
struct Envelope<'a, D: Serialize> {
    ok: bool,
    #[serde(rename = "type")]
    kind: &'static str,
    data: Option<D>,
    error: Option<ErrorBody<'a>>,
    meta: Meta,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "<[FieldError]>::is_empty")]
    details: &'a [FieldError],
}

#[derive(Serialize)]
struct Meta {
    extra: Extra,
}

#[derive(Serialize)]
struct Extra {
    http_status: u16,
}

/// `data` of a walker or function call.
#[derive(Serialize)]
struct CallData<'a> {
    result: &'a Json,
    reports: &'a [Json],
}

fn json_response(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((CONTENT_TYPE, HeaderValue::from_static(JSON_TYPE)))
        .body(body)
}

/// A success envelope with `data` (identity and other routes put their own fields here).
pub fn success<D: Serialize>(status: StatusCode, data: D) -> HttpResponse {
    let env = Envelope {
        ok: true,
        kind: "response",
        data: Some(data),
        error: None,
        meta: Meta {
            extra: Extra {
                http_status: status.as_u16(),
            },
        },
    };
    // Written once into a buffer that holds a small envelope whole.
    let mut body = Vec::with_capacity(ENVELOPE_CAPACITY);
    match serde_json::to_writer(&mut body, &env) {
        Ok(()) => json_response(status, body),
        Err(e) => failure(&ApiError::new(
            super::errors::ErrorCode::InternalError,
            format!("cannot encode the response: {e}"),
        )),
    }
}

/// What a call's 200 envelope holds around `result` and `reports`: the bytes `success`
/// writes for `CallData` (a unit test compares the two).
const CALL_HEAD: &[u8] = br#"{"ok":true,"type":"response","data":{"result":"#;
const CALL_REPORTS: &[u8] = br#","reports":"#;
const CALL_TAIL: &[u8] = br#"},"error":null,"meta":{"extra":{"http_status":200}}}"#;

/// The envelope of a successful walker or function call: `data = {result, reports}`.
///
/// Every generated endpoint answers with it, so its fixed keys are written as the bytes
/// they always are, and only the two values go through the encoder: serializing the
/// envelope struct escaped and wrote ten constant strings per call (about 5% of the
/// function endpoint's instructions).
pub fn call_success(outcome: &CallOutcome) -> HttpResponse {
    let mut body = Vec::with_capacity(ENVELOPE_CAPACITY);
    body.extend_from_slice(CALL_HEAD);
    let written = serde_json::to_writer(&mut body, &outcome.result).and_then(|()| {
        body.extend_from_slice(CALL_REPORTS);
        serde_json::to_writer(&mut body, &outcome.reports)
    });
    match written {
        Ok(()) => {
            body.extend_from_slice(CALL_TAIL);
            json_response(StatusCode::OK, body)
        }
        Err(e) => failure(&ApiError::new(
            super::errors::ErrorCode::InternalError,
            format!("cannot encode the response: {e}"),
        )),
    }
}

/// The failure envelope of `error`.
pub fn failure(error: &ApiError) -> HttpResponse {
    let env: Envelope<'_, ()> = Envelope {
        ok: false,
        kind: "error",
        data: None,
        error: Some(ErrorBody {
            code: error.code.as_str(),
            message: &error.message,
            details: &error.details,
        }),
        meta: Meta {
            extra: Extra {
                http_status: error.status.as_u16(),
            },
        },
    };
    // Plain data: encoding cannot fail, but never answer without a body.
    let body = serde_json::to_vec(&env).unwrap_or_else(|_| {
        br#"{"ok":false,"type":"error","data":null,"error":{"code":"INTERNAL_ERROR","message":"encoding failed"},"meta":{"extra":{"http_status":500}}}"#.to_vec()
    });
    json_response(error.status, body)
}

/// A raw (`envelope=false`) function result: a string is the body as-is, anything else
/// is JSON-encoded; the content type is `produces` (or `text/plain`) with a charset.
pub fn raw(produces: Option<&str>, result: &Json) -> HttpResponse {
    let body = match result {
        Json::String(s) => s.clone().into_bytes(),
        other => serde_json::to_vec(other).unwrap_or_default(),
    };
    let content_type = match produces.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) if p.to_ascii_lowercase().contains("charset=") => p.to_string(),
        Some(p) => format!("{p}; charset=utf-8"),
        None => "text/plain; charset=utf-8".to_string(),
    };
    match HeaderValue::from_str(&content_type) {
        Ok(value) => HttpResponse::Ok()
            .insert_header((CONTENT_TYPE, value))
            .body(body),
        Err(_) => HttpResponse::Ok()
            .insert_header((
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ))
            .body(body),
    }
}

/// A WebSocket reply frame of a successful walker run (decisions.md "WebSocket"):
/// `{"ok": true, "data": {"result", "reports"}}`.
pub fn ws_success(outcome: &CallOutcome) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        ok: bool,
        data: CallData<'a>,
    }
    let frame = Frame {
        ok: true,
        data: CallData {
            result: &outcome.result,
            reports: &outcome.reports,
        },
    };
    serde_json::to_string(&frame).unwrap_or_else(|e| {
        ws_failure(&ApiError::new(
            super::errors::ErrorCode::InternalError,
            format!("cannot encode the reply: {e}"),
        ))
    })
}

/// A WebSocket error frame: `{"ok": false, "error": {code, message, details?}}`, with
/// the code and message the HTTP envelope would carry.
pub fn ws_failure(error: &ApiError) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        ok: bool,
        error: ErrorBody<'a>,
    }
    let frame = Frame {
        ok: false,
        error: ErrorBody {
            code: error.code.as_str(),
            message: &error.message,
            details: &error.details,
        },
    };
    // Plain data: encoding cannot fail, but never answer without a frame.
    serde_json::to_string(&frame).unwrap_or_else(|_| {
        r#"{"ok":false,"error":{"code":"INTERNAL_ERROR","message":"encoding failed"}}"#.into()
    })
}

/// A small JSON document that is not enveloped (health bodies, the index).
pub fn plain_json(status: StatusCode, value: &Json) -> HttpResponse {
    json_response(status, serde_json::to_vec(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::errors::ErrorCode;
    use actix_web::body::MessageBody as _;
    use serde_json::json;

    fn body_text(resp: HttpResponse) -> String {
        let bytes = resp
            .into_body()
            .try_into_bytes()
            .expect("a sized body in tests");
        String::from_utf8(bytes.to_vec()).expect("utf-8")
    }

    #[test]
    fn success_keys_are_in_order() {
        let outcome = CallOutcome {
            result: json!(3),
            reports: vec![json!("a")],
        };
        assert_eq!(
            body_text(call_success(&outcome)),
            r#"{"ok":true,"type":"response","data":{"result":3,"reports":["a"]},"error":null,"meta":{"extra":{"http_status":200}}}"#
        );
    }

    #[test]
    fn a_call_envelope_is_the_generic_one() {
        let outcomes = [
            (json!(42), vec![]),
            (json!(null), vec![json!({"n": 1}), json!("x\"y")]),
            (
                json!({"a": [1, 2.5, "\u{e9}\n"], "b": {"c": true}}),
                vec![json!([])],
            ),
            (json!("text"), vec![]),
        ];
        for (result, reports) in outcomes {
            let outcome = CallOutcome { result, reports };
            let generic = success(
                StatusCode::OK,
                CallData {
                    result: &outcome.result,
                    reports: &outcome.reports,
                },
            );
            let fast = call_success(&outcome);
            assert_eq!(fast.status(), generic.status());
            assert_eq!(
                fast.headers().get(CONTENT_TYPE),
                generic.headers().get(CONTENT_TYPE)
            );
            assert_eq!(body_text(fast), body_text(generic));
        }
    }

    #[test]
    fn failure_omits_empty_details() {
        let resp = failure(&ApiError::new(ErrorCode::NotFound, "nope"));
        assert_eq!(resp.status().as_u16(), 404);
        assert_eq!(
            body_text(resp),
            r#"{"ok":false,"type":"error","data":null,"error":{"code":"NOT_FOUND","message":"nope"},"meta":{"extra":{"http_status":404}}}"#
        );
        let resp = failure(&ApiError::validation("n", "expected an integer"));
        assert!(
            body_text(resp)
                .contains(r#""details":[{"field":"n","message":"expected an integer"}]"#)
        );
    }

    #[test]
    fn websocket_frames() {
        let outcome = CallOutcome {
            result: json!(null),
            reports: vec![json!({"n": 1})],
        };
        assert_eq!(
            ws_success(&outcome),
            r#"{"ok":true,"data":{"result":null,"reports":[{"n":1}]}}"#
        );
        assert_eq!(
            ws_failure(&ApiError::validation("n", "expected an integer")),
            r#"{"ok":false,"error":{"code":"VALIDATION_ERROR","message":"invalid request: n: expected an integer","details":[{"field":"n","message":"expected an integer"}]}}"#
        );
    }

    #[test]
    fn raw_bodies() {
        let resp = raw(Some("text/csv"), &json!("a,b\n"));
        assert_eq!(
            resp.headers().get(CONTENT_TYPE).map(|v| v.as_bytes()),
            Some(&b"text/csv; charset=utf-8"[..])
        );
        assert_eq!(body_text(resp), "a,b\n");
        assert_eq!(body_text(raw(None, &json!({"a": 1}))), r#"{"a":1}"#);
    }
}
