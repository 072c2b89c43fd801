//! The webhook walker routes. `POST /webhook/<walker>` (current flavor): `X-API-Key`
//! plus the HMAC-SHA256 signature of the raw body; `POST /webhook/walker/<walker>
//! [/<node id>]<declared path>` (alternate flavor): the key where the walker declares
//! it. Both run the walker as the key's owner (current flavor: on the owner's root;
//! alternate flavor: on the key's root, or on a node the key allows), with the JSON body
//! as its `has` fields, through the one body reader (`max_body_bytes` → 413).
//!
//! Order of checks: unknown or non-webhook walker 404, no key 401, body 413/408, the
//! identity service's verdict (401 `UNAUTHORIZED` / 401 `INVALID_SIGNATURE` / 403
//! `FORBIDDEN`), then the body's shape (415/422), so an unauthenticated caller learns
//! nothing about what the walker accepts. The app's middleware walkers belong to the
//! bearer-token request path and do not run here.

use crate::identity::api_error;
use crate::server::errors::{ApiError, ErrorCode};
use crate::server::middleware::TraceId;
use crate::server::params::{content_type, essence, parse_query};
use crate::server::{AppState, body, envelope, peer};
use actix_web::{HttpRequest, HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::identity::messages::{AuthenticateWalkerKey, AuthenticateWebhook};
use actors::runtime::{CallError, CallRequest, Caller, EndpointInfo, EndpointKind, Start};
use lang::serve::KeyPlacement;
use serde_json::{Map, Value as Json};

/// Header of the current flavor's API key.
pub const API_KEY_HEADER: &str = "X-API-Key";
/// Header of the replay guard's timestamp.
pub const TIMESTAMP_HEADER: &str = "X-Webhook-Timestamp";
/// Longest header value read (keys, signatures, timestamps).
const MAX_HEADER_CHARS: usize = 512;

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/webhook/walker/{tail:.*}").route(web::post().to(alternate)))
        .service(web::resource("/webhook/{walker}").route(web::post().to(current)));
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)?
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= MAX_HEADER_CHARS)
        .map(str::to_string)
}

fn not_found(name: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no webhook walker '{name}'"))
}

/// The `WWW-Authenticate` challenge of a webhook 401: the caller authenticates with an
/// API key (where the walker declares it), not a bearer token.
const API_KEY_CHALLENGE: &str = "ApiKey realm=\"svc-webhook\"";

fn api_key_challenge(e: ApiError) -> ApiError {
    e.with_challenge(API_KEY_CHALLENGE)
}

fn missing_key(what: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, format!("missing {what}"))
}

/// `POST /webhook/<walker>`.
async fn current(
    state: web::Data<AppState>,
    id: Identity,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    trace: TraceId,
) -> Result<HttpResponse> {
    run_current(state, id, req, path.into_inner(), payload, trace)
        .await
        .map_err(api_key_challenge)
}

/// `POST /webhook/delete`: the current-flavor walker named `delete`.
pub async fn current_named_delete(
    state: web::Data<AppState>,
    id: Identity,
    req: HttpRequest,
    payload: web::Payload,
    trace: TraceId,
) -> Result<HttpResponse> {
    run_current(state, id, req, "delete".into(), payload, trace)
        .await
        .map_err(api_key_challenge)
}

async fn run_current(
    state: web::Data<AppState>,
    id: Identity,
    req: HttpRequest,
    name: String,
    payload: web::Payload,
    trace: TraceId,
) -> Result<HttpResponse> {
    let endpoint = state
        .table()
        .webhook(&name)
        .ok_or_else(|| not_found(&name))?;
    let api_key = header(&req, API_KEY_HEADER).ok_or_else(|| missing_key("X-API-Key header"))?;
    let raw = body::read(&req, payload).await?;
    let args = json_args(&req, &raw);
    let webhook = &state.settings.identity.webhook;
    let caller = id
        .ask(AuthenticateWebhook {
            api_key,
            signature: header(&req, &webhook.signature_header),
            timestamp: header(&req, TIMESTAMP_HEADER),
            body: raw,
            walker: name,
        })
        .await
        .map_err(api_error)?;
    run(&state, &req, &endpoint, args?, Start::Root, caller, trace).await
}

/// `POST /webhook/walker/<walker>[/<node id>]<declared path>`.
async fn alternate(
    state: web::Data<AppState>,
    id: Identity,
    req: HttpRequest,
    payload: web::Payload,
    trace: TraceId,
) -> Result<HttpResponse> {
    run_alternate(state, id, req, payload, trace)
        .await
        .map_err(api_key_challenge)
}

async fn run_alternate(
    state: web::Data<AppState>,
    id: Identity,
    req: HttpRequest,
    payload: web::Payload,
    trace: TraceId,
) -> Result<HttpResponse> {
    let tail = req.match_info().get("tail").unwrap_or("");
    let segments = crate::server::routes::split_path(tail);
    let Some((name, rest)) = segments.split_first() else {
        return Err(not_found(""));
    };
    let (endpoint, pattern) = state
        .table()
        .walker_hook(name)
        .ok_or_else(|| not_found(name))?;
    let (node, captures) = match pattern.captures(rest) {
        Some(c) => (None, c),
        None => {
            let node = rest
                .first()
                .and_then(|n| lang::host::parse_id(n))
                .ok_or_else(|| not_found(name))?;
            let c = pattern
                .captures(&rest[1..])
                .ok_or_else(|| not_found(name))?;
            (Some(node), c)
        }
    };
    let Some(spec) = endpoint.spec.webhook.clone() else {
        return Err(not_found(name));
    };
    let from_path = captures
        .iter()
        .find(|(k, _)| *k == spec.name)
        .map(|(_, v)| v.clone());
    let from_query = || {
        parse_query(req.query_string())
            .into_iter()
            .find(|(k, _)| *k == spec.name)
            .map(|(_, v)| v)
    };
    let key = match spec.placement {
        KeyPlacement::Header => header(&req, &spec.name),
        KeyPlacement::Query => from_query(),
        KeyPlacement::Path => from_path,
        KeyPlacement::Body => None,
    };
    if key.is_none() && spec.placement != KeyPlacement::Body {
        return Err(missing_key(&format!(
            "webhook key ({} '{}')",
            spec.placement.as_str(),
            spec.name
        )));
    }
    let raw = body::read(&req, payload).await?;
    let mut args = json_args(&req, &raw);
    let key = match (key, &mut args) {
        (Some(k), _) => k,
        (None, Ok(a)) => match a.remove(&spec.name) {
            Some(Json::String(k)) if !k.is_empty() => k,
            _ => {
                return Err(missing_key(&format!(
                    "webhook key (body field '{}')",
                    spec.name
                )));
            }
        },
        (None, Err(_)) => {
            return Err(missing_key(&format!(
                "webhook key (body field '{}')",
                spec.name
            )));
        }
    };
    let caller = id
        .ask(AuthenticateWalkerKey {
            key,
            walker: name.to_string(),
            node: node.map(lang::host::format_id),
        })
        .await
        .map_err(api_error)?;
    let mut args = args?;
    // Path parameters (other than the key) fill fields of the same name.
    for (k, v) in captures {
        if k != spec.name && endpoint.params.iter().any(|p| p.name == k) {
            args.insert(k, Json::String(v));
        }
    }
    let start = node.map_or(Start::Root, Start::Node);
    run(&state, &req, &endpoint, args, start, caller, trace).await
}

/// The body as the walker's fields: empty = `{}`, else a JSON object (415 for another
/// declared content type, 422 for anything but an object).
fn json_args(req: &HttpRequest, raw: &[u8]) -> Result<Map<String, Json>> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    if let Some(t) = content_type(req).and_then(essence)
        && !crate::server::params::is_json_media(&t)
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("unsupported content type '{t}'; a webhook body is a JSON object"),
        ));
    }
    match serde_json::from_slice::<Json>(raw) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::validation("body", "expected a JSON object")),
        Err(e) => Err(ApiError::validation("body", format!("invalid JSON: {e}"))),
    }
}

/// Run the walker as `caller` and answer the envelope (`data.reports`).
async fn run(
    state: &AppState,
    req: &HttpRequest,
    endpoint: &EndpointInfo,
    args: Map<String, Json>,
    start: Start,
    caller: Caller,
    trace: TraceId,
) -> Result<HttpResponse> {
    let call = state.runtime.call(CallRequest {
        kind: EndpointKind::Walker,
        name: endpoint.name.clone(),
        args,
        start,
        caller,
        trace_id: trace.0,
    });
    let outcome = tokio::select! {
        biased;
        outcome = call => outcome?,
        () = peer::gone(req) => return Err(CallError::Cancelled.into()),
    };
    Ok(envelope::call_success(&outcome))
}
