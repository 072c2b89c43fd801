//! Parameter classification and extraction (spec "`@restspec` options"): each walker
//! field or function parameter comes from the path (`{name}` segment), a file upload
//! (`UploadFile`), the query string (GET) or the JSON body (other methods), in that
//! order. Path and query values are strings; the language coerces them to the declared
//! type and reports what does not fit (`CallError::Validation`).

use super::AppState;
use super::errors::{ApiError, ErrorCode};
use super::routes::Matched;
use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::{FromRequest, HttpRequest};
use futures_util::StreamExt as _;
use futures_util::future::LocalBoxFuture;
use lang::serve::{EndpointInfo, ParamInfo, TypeInfo};
use serde_json::{Map, Value as Json};

/// Where a parameter's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Path,
    File,
    Query,
    Body,
}

/// Classify one parameter of an endpoint served with `method` at a path whose
/// `{param}` names are `path_params`.
pub fn classify(param: &ParamInfo, method: &str, path_params: &[&str]) -> Source {
    if path_params.contains(&param.name.as_str()) {
        Source::Path
    } else if is_upload(&param.ty) {
        Source::File
    } else if method.eq_ignore_ascii_case("GET") {
        Source::Query
    } else {
        Source::Body
    }
}

fn is_upload(ty: &TypeInfo) -> bool {
    match ty {
        TypeInfo::UploadFile => true,
        TypeInfo::Optional(inner) | TypeInfo::List(inner) => is_upload(inner),
        _ => false,
    }
}

fn is_list(ty: &TypeInfo) -> bool {
    match ty {
        TypeInfo::List(_) | TypeInfo::Tuple(_) => true,
        TypeInfo::Optional(inner) => is_list(inner),
        _ => false,
    }
}

/// The call's arguments as one JSON object, extracted per the classification.
pub struct CallArgs(pub Map<String, Json>);

impl FromRequest for CallArgs {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<CallArgs, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let matched = Matched::of(&req)?;
            let e = &matched.endpoint;
            let mut args = Map::new();
            if req.method() == Method::GET {
                query_args(e, req.query_string(), &mut args);
            } else {
                let limit = AppState::of(&req)?.settings.max_body_bytes;
                let body = read_body(&req, payload, limit).await?;
                body_args(e, content_type(&req).as_deref(), &body, &mut args)?;
            }
            // Path parameters win over anything else of the same name.
            for (name, value) in &matched.path_params {
                if e.params.iter().any(|p| &p.name == name) {
                    args.insert(name.clone(), Json::String(value.clone()));
                }
            }
            Ok(CallArgs(args))
        })
    }
}

/// The media type of the request (lower case, parameters dropped), if any.
fn content_type(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or("").trim();
    (!essence.is_empty()).then(|| essence.to_ascii_lowercase())
}

/// Read the whole body, refusing more than `limit` bytes with 413.
async fn read_body(
    req: &HttpRequest,
    mut payload: Payload,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request body larger than {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut body = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::BadRequest,
                format!("cannot read the request body: {e}"),
            )
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Non-GET: the body is a JSON object of parameters (empty body = `{}`).
fn body_args(
    e: &EndpointInfo,
    content_type: Option<&str>,
    body: &[u8],
    args: &mut Map<String, Json>,
) -> Result<(), ApiError> {
    if content_type.is_some_and(|t| t.starts_with("multipart/")) {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "multipart/form-data (file uploads) is not supported yet; send application/json",
        ));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    if let Some(t) = content_type
        && t != "application/json"
        && !t.ends_with("+json")
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!(
                "unsupported content type '{t}'; send a JSON object with Content-Type: application/json"
            ),
        ));
    }
    let value: Json = serde_json::from_slice(body)
        .map_err(|err| ApiError::validation("body", format!("invalid JSON: {err}")))?;
    let Json::Object(map) = value else {
        return Err(ApiError::validation(
            "body",
            format!("expected a JSON object, got {}", json_kind(&value)),
        ));
    };
    for (k, v) in map {
        if e.params.iter().any(|p| p.name == k && is_upload(&p.ty)) {
            return Err(ApiError::validation(
                &k,
                "file parameters need multipart/form-data, which is not supported yet",
            ));
        }
        args.insert(k, v);
    }
    Ok(())
}

/// GET: parameters come from the query string, as strings (repeated keys and list
/// parameters become arrays of strings).
fn query_args(e: &EndpointInfo, query: &str, args: &mut Map<String, Json>) {
    for (k, v) in parse_query(query) {
        let list = e.params.iter().any(|p| p.name == k && is_list(&p.ty));
        match args.get_mut(&k) {
            Some(Json::Array(items)) => items.push(Json::String(v)),
            Some(prev) if !list => {
                let first = std::mem::take(prev);
                *prev = Json::Array(vec![first, Json::String(v)]);
            }
            Some(_) => {}
            None if list => {
                args.insert(k, Json::Array(vec![Json::String(v)]));
            }
            None => {
                args.insert(k, Json::String(v));
            }
        }
    }
}

/// `a=1&b=x+y` as decoded pairs (`+` is a space; a key without `=` has an empty value).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Decode `%XX` escapes (and `+` as a space in query strings); invalid escapes stay as
/// they are, invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let hex = |c: u8| (c as char).to_digit(16);
        match b {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b),
            },
            b'+' if plus_is_space => out.push(b' '),
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::serve::{EndpointKind, RestSpec};
    use serde_json::json;

    fn endpoint(params: Vec<(&str, TypeInfo)>) -> EndpointInfo {
        EndpointInfo {
            kind: EndpointKind::Function,
            name: "f".into(),
            public: true,
            params: params
                .into_iter()
                .map(|(n, ty)| ParamInfo {
                    name: n.into(),
                    ty,
                    required: true,
                    default: None,
                })
                .collect(),
            returns: None,
            spec: RestSpec::default(),
            doc: None,
            is_async: false,
        }
    }

    #[test]
    fn classification_order() {
        let p = |name: &str, ty| ParamInfo {
            name: name.into(),
            ty,
            required: true,
            default: None,
        };
        assert_eq!(
            classify(&p("id", TypeInfo::Int), "GET", &["id"]),
            Source::Path
        );
        assert_eq!(
            classify(&p("f", TypeInfo::UploadFile), "POST", &[]),
            Source::File
        );
        assert_eq!(classify(&p("q", TypeInfo::Str), "GET", &[]), Source::Query);
        assert_eq!(classify(&p("q", TypeInfo::Str), "PUT", &[]), Source::Body);
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b+c", true), "a b c");
        assert_eq!(percent_decode("a%20b+c", false), "a b+c");
        assert_eq!(percent_decode("100%", false), "100%");
        assert_eq!(percent_decode("%e2%82%ac", false), "€");
        assert_eq!(
            parse_query("x=1&flag&y=a%26b"),
            vec![
                ("x".into(), "1".into()),
                ("flag".into(), String::new()),
                ("y".into(), "a&b".into())
            ]
        );
    }

    #[test]
    fn query_lists() {
        let e = endpoint(vec![
            ("tags", TypeInfo::List(Box::new(TypeInfo::Str))),
            ("n", TypeInfo::Int),
        ]);
        let mut args = Map::new();
        query_args(&e, "tags=a&n=3", &mut args);
        assert_eq!(Json::Object(args), json!({"tags": ["a"], "n": "3"}));
    }

    #[test]
    fn bodies() {
        let e = endpoint(vec![("n", TypeInfo::Int)]);
        let mut args = Map::new();
        body_args(&e, Some("application/json"), br#"{"n": 2}"#, &mut args).expect("valid");
        assert_eq!(args.get("n"), Some(&json!(2)));
        let err = |ct: Option<&str>, body: &[u8]| {
            body_args(&e, ct, body, &mut Map::new())
                .err()
                .map(|e| e.status.as_u16())
        };
        assert_eq!(err(None, b"{nope"), Some(422));
        assert_eq!(err(None, b"[1]"), Some(422));
        assert_eq!(err(Some("text/plain"), b"{}"), Some(415));
        assert_eq!(err(Some("multipart/form-data"), b"--x"), Some(415));
        assert_eq!(err(Some("text/plain"), b""), None);
    }
}
