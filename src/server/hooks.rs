//! The app's middleware walkers (spec "Middleware walkers"): `_authenticate` (a
//! `headers` dict field) and `_before_request` (a `request` dict field) run before every
//! generated-endpoint request, as the request's caller; a report `{error, status}`
//! rejects the request with that status. Their names start with `_`, so they are not in
//! the endpoint table: [`probe`] asks the runtime whether the app declares them.

use super::AppState;
use super::errors::{ApiError, ErrorCode};
use super::middleware::TraceId;
use super::params::parse_query;
use actix_web::HttpRequest;
use actors::runtime::{CallError, CallRequest, Caller, EndpointKind, Runtime, Start};
use serde_json::{Map, Value as Json, json};

pub const AUTHENTICATE: &str = "_authenticate";
pub const BEFORE_REQUEST: &str = "_before_request";

/// Which middleware walkers the loaded app declares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    pub authenticate: bool,
    pub before_request: bool,
}

/// Find out which middleware walkers exist without running them: a call with a field no
/// walker can have fails validation before anything runs when the walker exists, and
/// with `NotFound` when it does not.
pub async fn probe(runtime: &Runtime) -> Hooks {
    Hooks {
        authenticate: declared(runtime, AUTHENTICATE).await,
        before_request: declared(runtime, BEFORE_REQUEST).await,
    }
}

async fn declared(runtime: &Runtime, name: &str) -> bool {
    let mut args = Map::new();
    args.insert(" svc probe ".into(), Json::Null);
    let probe = CallRequest {
        kind: EndpointKind::Walker,
        name: name.into(),
        args,
        start: Start::Root,
        caller: Caller::default(),
        trace_id: "startup".into(),
    };
    !matches!(runtime.call(probe).await, Err(CallError::NotFound(_)))
}

/// Run the declared middleware walkers (`hooks`, of the route table that resolved `req`)
/// for `req`; `Err` rejects the request.
pub async fn run(
    state: &AppState,
    hooks: Hooks,
    req: &HttpRequest,
    caller: &Caller,
    trace: &TraceId,
) -> Result<(), ApiError> {
    if !(hooks.authenticate || hooks.before_request) {
        return Ok(());
    }
    let headers: Map<String, Json> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                Json::String(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            )
        })
        .collect();
    if hooks.authenticate {
        let mut args = Map::new();
        args.insert("headers".into(), Json::Object(headers.clone()));
        call(state, AUTHENTICATE, args, caller, trace).await?;
    }
    if hooks.before_request {
        let query: Map<String, Json> = parse_query(req.query_string())
            .into_iter()
            .map(|(k, v)| (k, Json::String(v)))
            .collect();
        let request = json!({
            "method": req.method().as_str(),
            "path": req.path(),
            "headers": headers,
            "query": query,
        });
        let mut args = Map::new();
        args.insert("request".into(), request);
        call(state, BEFORE_REQUEST, args, caller, trace).await?;
    }
    Ok(())
}

async fn call(
    state: &AppState,
    name: &str,
    args: Map<String, Json>,
    caller: &Caller,
    trace: &TraceId,
) -> Result<(), ApiError> {
    let outcome = state
        .runtime
        .call(CallRequest {
            kind: EndpointKind::Walker,
            name: name.into(),
            args,
            start: Start::Root,
            caller: caller.clone(),
            trace_id: trace.0.clone(),
        })
        .await
        .map_err(|e| match e {
            // The request is fine; the app's middleware walker is not.
            CallError::Validation(problems) => ApiError::new(
                ErrorCode::InternalError,
                format!(
                    "middleware walker '{name}' cannot take the request: {}",
                    problems
                        .iter()
                        .map(|(f, m)| format!("{f}: {m}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ),
            other => ApiError::from(other),
        })?;
    match outcome.reports.iter().find_map(rejection) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A report `{error, status}` (status an int or a numeric string).
fn rejection(report: &Json) -> Option<ApiError> {
    let obj = report.as_object()?;
    let error = obj.get("error")?;
    let status = match obj.get("status")? {
        Json::Number(n) => n.as_u64()?,
        Json::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let message = match error {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(ApiError::with_status(
        u16::try_from(status).unwrap_or(400),
        message,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections() {
        let e = rejection(&json!({"error": "no", "status": 403})).expect("rejects");
        assert_eq!((e.status.as_u16(), e.message.as_str()), (403, "no"));
        let e = rejection(&json!({"error": "slow down", "status": "429"})).expect("rejects");
        assert_eq!(e.code.as_str(), "RATE_LIMITED");
        assert!(rejection(&json!({"error": "no"})).is_none());
        assert!(rejection(&json!("error")).is_none());
    }
}
