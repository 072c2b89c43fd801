//! Parameter classification and extraction (spec "`@restspec` options"): each walker
//! field or function parameter comes from the path (`{name}` segment), a file upload
//! (`UploadFile`), the query string (GET) or the body (other methods), in that order.
//!
//! Bodies: a JSON object (`application/json`, `+json` or no Content-Type),
//! `multipart/form-data` (files and fields, `multipart`) or
//! `application/x-www-form-urlencoded`. Path, query and form values are strings; the
//! language coerces them to the declared type and reports what does not fit
//! (`CallError::Validation`). An `UploadFile` parameter receives the JSON object of
//! `multipart::upload_json` (a JSON body may send that object itself).

use super::errors::{ApiError, ErrorCode, FieldError};
use super::multipart;
use super::routes::Matched;
use actix_web::HttpRequest;
use actix_web::error::PayloadError;
use actix_web::http::Method;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::web::Bytes;
use futures_util::Stream;
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

/// The call's arguments as one JSON object, extracted per the classification: the
/// query string (GET, HEAD) or the body, then the path parameters over them.
pub async fn call_args<S>(
    req: &HttpRequest,
    matched: &Matched,
    payload: S,
) -> Result<Map<String, Json>, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    let e = &matched.endpoint;
    let mut args = Map::new();
    if req.method() == Method::GET || req.method() == Method::HEAD {
        query_args(e, req.query_string(), &mut args)?;
    } else {
        let body = super::body::read(req, payload).await?;
        body_args(e, content_type(req), &body, &mut args)?;
    }
    // Path parameters win over anything else of the same name.
    for (name, value) in &matched.path_params {
        if e.params.iter().any(|p| &p.name == name) {
            args.insert(name.clone(), Json::String(value.clone()));
        }
    }
    Ok(args)
}

/// The request's Content-Type header value, if any (and readable).
pub(crate) fn content_type(req: &HttpRequest) -> Option<&str> {
    req.headers().get(CONTENT_TYPE)?.to_str().ok()
}

/// The media type of a Content-Type value (lower case, parameters dropped), if any.
pub(crate) fn essence(content_type: &str) -> Option<String> {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    (!essence.is_empty()).then(|| essence.to_ascii_lowercase())
}

/// Non-GET: the body is a JSON object of parameters (empty body = `{}`), a multipart
/// form or a URL-encoded form; `content_type` is the whole header value.
fn body_args(
    e: &EndpointInfo,
    content_type: Option<&str>,
    body: &[u8],
    args: &mut Map<String, Json>,
) -> Result<(), ApiError> {
    let media = content_type.and_then(essence);
    match media.as_deref() {
        Some("multipart/form-data") => {
            let header = content_type.unwrap_or_default();
            let parts = multipart::boundary(header)
                .and_then(|b| multipart::parse(body, &b))
                .map_err(|m| {
                    ApiError::validation("body", format!("malformed multipart: {}", m.0))
                })?;
            let fields = parts.into_iter().filter_map(|p| {
                let value = match p.filename {
                    // A browser's empty file input: no file.
                    Some(name) if name.is_empty() && p.data.is_empty() => return None,
                    Some(name) => FormValue::File(multipart::upload_json(
                        &name,
                        p.content_type.as_deref(),
                        p.data,
                    )),
                    None => FormValue::Text(String::from_utf8_lossy(p.data).into_owned()),
                };
                Some((p.name, value))
            });
            return form_args(e, fields, args);
        }
        Some(t) if t.starts_with("multipart/") => {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                format!("unsupported content type '{t}'; send multipart/form-data"),
            ));
        }
        Some("application/x-www-form-urlencoded") => {
            let text = String::from_utf8_lossy(body);
            let fields = parse_query(text.trim())
                .into_iter()
                .map(|(k, v)| (k, FormValue::Text(v)));
            return form_args(e, fields, args);
        }
        _ => {}
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    if let Some(t) = media
        && !is_json_media(&t)
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!(
                "unsupported content type '{t}'; send a JSON object with Content-Type: \
                 application/json, or a form (multipart/form-data, \
                 application/x-www-form-urlencoded)"
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
    // Nothing to rewrite (no upload parameter) and nothing to merge with: the parsed
    // object is the arguments, as the loop below would have built them.
    if args.is_empty() && !e.params.iter().any(|p| is_upload(&p.ty)) {
        *args = map;
        return Ok(());
    }
    for (k, v) in map {
        let v = match param(e, &k) {
            Some(p) if is_upload(&p.ty) => json_upload(&k, v, is_list(&p.ty))?,
            _ => v,
        };
        args.insert(k, v);
    }
    Ok(())
}

fn param<'e>(e: &'e EndpointInfo, name: &str) -> Option<&'e ParamInfo> {
    e.params.iter().find(|p| p.name == name)
}

/// An upload sent in a JSON body: the upload object, `null`, or (for a list parameter)
/// a list of them.
fn json_upload(name: &str, value: Json, list: bool) -> Result<Json, ApiError> {
    match value {
        Json::Null => Ok(Json::Null),
        Json::Array(items) if list => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                multipart::upload_from_json(item)
                    .map_err(|m| ApiError::validation(name, format!("item {i}: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array),
        Json::Array(_) => Err(ApiError::validation(name, "expected one file, got a list")),
        other => multipart::upload_from_json(&other).map_err(|m| ApiError::validation(name, m)),
    }
}

/// One field of a form body.
enum FormValue {
    Text(String),
    /// A file part, already the upload object.
    File(Json),
}

/// Form fields as arguments: files are upload objects, other fields strings (a `dict`
/// or object parameter also takes a JSON object text); repeated names and list
/// parameters become arrays. A text field for an `UploadFile` parameter is refused.
fn form_args(
    e: &EndpointInfo,
    fields: impl IntoIterator<Item = (String, FormValue)>,
    args: &mut Map<String, Json>,
) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    for (name, value) in fields {
        let p = param(e, &name);
        let value = match value {
            FormValue::File(file) => file,
            FormValue::Text(_) if p.is_some_and(|p| is_upload(&p.ty)) => {
                if !problems.iter().any(|f: &FieldError| f.field == name) {
                    problems.push(FieldError {
                        message: "expected a file: a multipart/form-data part with a filename"
                            .into(),
                        field: name,
                    });
                }
                continue;
            }
            FormValue::Text(text) => match p.map(|p| &p.ty) {
                Some(ty) if is_mapping(ty) => match serde_json::from_str::<Json>(&text) {
                    Ok(obj @ Json::Object(_)) => obj,
                    _ => Json::String(text),
                },
                _ => Json::String(text),
            },
        };
        push_arg(e, args, name, value);
    }
    // The language takes any JSON for a file: hold single-file parameters to one.
    for p in &e.params {
        if is_upload(&p.ty) && !is_list(&p.ty) && matches!(args.get(&p.name), Some(Json::Array(_)))
        {
            problems.push(FieldError {
                field: p.name.clone(),
                message: "expected one file, got several".into(),
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation_all(problems))
    }
}

fn is_mapping(ty: &TypeInfo) -> bool {
    match ty {
        TypeInfo::Dict(..) | TypeInfo::Object(_) => true,
        TypeInfo::Optional(inner) => is_mapping(inner),
        _ => false,
    }
}

/// Add one value: list parameters collect arrays, a repeated scalar becomes an array
/// (which the language then refuses with a clear message).
fn push_arg(e: &EndpointInfo, args: &mut Map<String, Json>, k: String, v: Json) {
    let list = param(e, &k).is_some_and(|p| is_list(&p.ty));
    match args.get_mut(&k) {
        Some(Json::Array(items)) => items.push(v),
        Some(prev) if !list => {
            let first = std::mem::take(prev);
            *prev = Json::Array(vec![first, v]);
        }
        Some(_) => {}
        None if list => {
            args.insert(k, Json::Array(vec![v]));
        }
        None => {
            args.insert(k, v);
        }
    }
}

/// GET: parameters come from the query string, as strings (repeated keys and list
/// parameters become arrays of strings). Files cannot come from a query string.
fn query_args(e: &EndpointInfo, query: &str, args: &mut Map<String, Json>) -> Result<(), ApiError> {
    for (k, v) in parse_query(query) {
        if param(e, &k).is_some_and(|p| is_upload(&p.ty)) {
            return Err(ApiError::validation(
                &k,
                "a file cannot come from the query string; serve this endpoint with POST \
                 and send multipart/form-data",
            ));
        }
        push_arg(e, args, k, Json::String(v));
    }
    Ok(())
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

/// A media type (its essence) that bodies are read as JSON for: `application/json` or
/// any `*+json`.
pub(crate) fn is_json_media(essence: &str) -> bool {
    essence == "application/json" || essence.ends_with("+json")
}

pub(crate) fn json_kind(v: &Json) -> &'static str {
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

    /// A JSON body's object is the arguments as sent: every key (declared or not, for
    /// the language to refuse), in the body's order, the last of a repeated key winning;
    /// with an upload parameter too (whose value is checked on the way).
    #[test]
    fn json_bodies_become_the_arguments_whole() {
        let body = br#"{"b": 1, "a": [2], "zz": null, "b": 3}"#;
        for e in [
            endpoint(vec![("a", TypeInfo::Int), ("b", TypeInfo::Int)]),
            endpoint(vec![("a", TypeInfo::Int), ("up", TypeInfo::UploadFile)]),
        ] {
            let mut args = Map::new();
            body_args(&e, Some("application/json"), body, &mut args).expect("an object");
            let got: Vec<(&str, &Json)> = args.iter().map(|(k, v)| (k.as_str(), v)).collect();
            assert_eq!(
                got,
                [("b", &json!(3)), ("a", &json!([2])), ("zz", &Json::Null)]
            );
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
        query_args(&e, "tags=a&n=3", &mut args).expect("valid");
        assert_eq!(Json::Object(args), json!({"tags": ["a"], "n": "3"}));
        let e = endpoint(vec![("f", TypeInfo::UploadFile)]);
        assert!(query_args(&e, "f=x", &mut Map::new()).is_err());
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
        assert_eq!(err(Some("multipart/form-data"), b"--x"), Some(422));
        assert_eq!(
            err(Some("multipart/form-data; boundary=x"), b"--x\r\n"),
            Some(422)
        );
        assert_eq!(
            err(Some("multipart/mixed; boundary=x"), b"--x--"),
            Some(415)
        );
        assert_eq!(err(Some("text/plain"), b""), None);
    }

    #[test]
    fn forms() {
        let e = endpoint(vec![
            ("f", TypeInfo::UploadFile),
            ("g", TypeInfo::Optional(Box::new(TypeInfo::UploadFile))),
            ("tags", TypeInfo::List(Box::new(TypeInfo::Str))),
            (
                "meta",
                TypeInfo::Dict(Box::new(TypeInfo::Str), Box::new(TypeInfo::Any)),
            ),
            ("n", TypeInfo::Int),
        ]);
        let body = "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\
                    Content-Type: text/plain\r\n\r\nhi\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"g\"; filename=\"\"\r\n\r\n\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nx\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"meta\"\r\n\r\n{\"k\": 1}\r\n\
                    --b\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n7\r\n--b--\r\n";
        let mut args = Map::new();
        body_args(
            &e,
            Some("multipart/form-data; boundary=b"),
            body.as_bytes(),
            &mut args,
        )
        .expect("valid");
        assert_eq!(
            Json::Object(args),
            json!({
                "f": {"filename": "a.txt", "content_type": "text/plain", "size": 2, "content": "hi"},
                "tags": ["x"],
                "meta": {"k": 1},
                "n": "7",
            })
        );
        // A text field where a file belongs.
        let body = "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nhi\r\n--b--";
        let err = body_args(
            &e,
            Some("multipart/form-data; boundary=b"),
            body.as_bytes(),
            &mut Map::new(),
        )
        .err()
        .map(|e| (e.status.as_u16(), e.details[0].field.clone()));
        assert_eq!(err, Some((422, "f".to_string())));
        // URL-encoded.
        let mut args = Map::new();
        body_args(
            &e,
            Some("application/x-www-form-urlencoded"),
            b"n=1&tags=a+b&tags=c%21",
            &mut args,
        )
        .expect("valid");
        assert_eq!(Json::Object(args), json!({"n": "1", "tags": ["a b", "c!"]}));
        // A JSON body may carry the upload object itself.
        let mut args = Map::new();
        body_args(
            &e,
            Some("application/json"),
            br#"{"f": {"filename": "x", "content": "yz"}, "g": null}"#,
            &mut args,
        )
        .expect("valid");
        assert_eq!(args["f"]["size"], json!(2));
        assert_eq!(args["g"], Json::Null);
        assert!(body_args(&e, None, br#"{"f": "text"}"#, &mut Map::new()).is_err());
        let two = br#"{"f": [{"filename": "a", "content": ""}, {"filename": "b", "content": ""}]}"#;
        assert!(body_args(&e, None, two, &mut Map::new()).is_err());
        let part = "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\nx\r\n";
        let body = format!("{part}{part}--b--");
        let err = body_args(
            &e,
            Some("multipart/form-data; boundary=b"),
            body.as_bytes(),
            &mut Map::new(),
        )
        .err()
        .map(|e| e.details[0].message.clone());
        assert_eq!(err.as_deref(), Some("expected one file, got several"));
    }
}
