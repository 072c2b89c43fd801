//! The `/sso/<platform>/*` routes (spec "SSO endpoints"): `login` and `register` redirect
//! to the provider (302, `Location` = its authorization URL with `state`, `nonce` and the
//! PKCE S256 challenge); `callback` (GET, or POST for providers that post it, form or
//! JSON body) sends the service the code and state and answers:
//!
//! - with `[scale.sso] client_auth_callback_url`: 302 to `<url>?token=<jwt>`, or to
//!   `<url>?error=<CODE>&message=<text>` on any failure;
//! - without: the envelope, `data = {message, user_id, token, root_id, role, platform,
//!   operation, email, created, linked}` (200), or the error envelope.
//!
//! The callback URL the provider is given is `<[scale.sso] host>/sso/<platform>/callback`
//! (a `host` ending in `/sso` is taken as the SSO base itself), or, without `host`, the
//! scheme and host of the request.

use super::api_error;
use crate::server::AppState;
use crate::server::body;
use crate::server::envelope;
use crate::server::errors::ApiError;
use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use actix_web::{HttpRequest, HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::identity::messages::{SsoBegin, SsoCallback, SsoSignedIn};
use actors::identity::sso::form;
use serde_json::{Value as Json, json};
use std::collections::HashMap;

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

/// Mount the routes (resources, so a wrong method is 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/sso/{platform}/login").route(web::get().to(login)))
        .service(web::resource("/sso/{platform}/register").route(web::get().to(register)))
        .service(
            web::resource("/sso/{platform}/callback")
                .route(web::get().to(callback_get))
                .route(web::post().to(callback_post)),
        );
}

/// This server's callback URL for `platform`.
fn redirect_uri(req: &HttpRequest, platform: &str) -> Result<String> {
    let state = AppState::of(req)?;
    let host = state.settings.identity.sso.host.trim_end_matches('/');
    Ok(if host.is_empty() {
        let info = req.connection_info();
        format!(
            "{}://{}/sso/{platform}/callback",
            info.scheme(),
            info.host()
        )
    } else if host.ends_with("/sso") {
        format!("{host}/{platform}/callback")
    } else {
        format!("{host}/sso/{platform}/callback")
    })
}

async fn begin(
    id: Identity,
    req: HttpRequest,
    platform: String,
    operation: &'static str,
) -> Result<HttpResponse> {
    let redirect_uri = redirect_uri(&req, &platform)?;
    let url = id
        .ask(SsoBegin {
            platform,
            operation,
            redirect_uri,
        })
        .await
        .map_err(api_error)?;
    Ok(HttpResponse::Found()
        .insert_header((LOCATION, url))
        .insert_header((CACHE_CONTROL, "no-store"))
        .finish())
}

/// `GET /sso/<platform>/login`.
async fn login(id: Identity, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    begin(id, req, path.into_inner(), "login").await
}

/// `GET /sso/<platform>/register` (the same flow: the provider's sign-in creates the
/// account when there is none).
async fn register(id: Identity, req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse> {
    begin(id, req, path.into_inner(), "register").await
}

/// `GET /sso/<platform>/callback?code=&state=` (or `?error=&error_description=&state=`).
async fn callback_get(id: Identity, req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    let params = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|_| ApiError::validation("query", "malformed query string"));
    finish(&id, &req, path.into_inner(), params).await
}

/// `POST /sso/<platform>/callback` with the same fields as a form or a JSON object.
async fn callback_post(
    id: Identity,
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
) -> HttpResponse {
    let params = read_fields(&req, payload).await;
    finish(&id, &req, path.into_inner(), params).await
}

async fn read_fields(req: &HttpRequest, payload: web::Payload) -> Result<HashMap<String, String>> {
    let is_json = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    if is_json {
        let map = body::json_object(req, payload).await?;
        return Ok(map
            .into_iter()
            .filter_map(|(k, v)| match v {
                Json::String(s) => Some((k, s)),
                _ => None,
            })
            .collect());
    }
    let bytes = body::read(req, payload).await?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ApiError::validation("body", "the form is not UTF-8"))?;
    web::Query::<HashMap<String, String>>::from_query(text)
        .map(web::Query::into_inner)
        .map_err(|_| ApiError::validation("body", "malformed form body"))
}

async fn finish(
    id: &IdentityHandle,
    req: &HttpRequest,
    platform: String,
    params: Result<HashMap<String, String>>,
) -> HttpResponse {
    let target = AppState::of(req)
        .map(|s| s.settings.identity.sso.client_auth_callback_url.clone())
        .unwrap_or_default();
    let outcome = match params {
        Ok(mut p) => id
            .ask(SsoCallback {
                platform,
                state: p.remove("state"),
                code: p.remove("code"),
                error: p.remove("error"),
                error_description: p.remove("error_description"),
            })
            .await
            .map_err(api_error),
        Err(e) => Err(e),
    };
    if target.is_empty() {
        return match outcome {
            Ok(done) => envelope::success(StatusCode::OK, signed_in_json(&done)),
            Err(e) => envelope::failure(&e),
        };
    }
    let query = match &outcome {
        Ok(done) => form(&[("token", &done.token)]),
        Err(e) => form(&[("error", e.code.as_str()), ("message", &e.message)]),
    };
    let sep = if target.contains('?') { '&' } else { '?' };
    HttpResponse::Found()
        .insert_header((LOCATION, format!("{target}{sep}{query}")))
        .insert_header((CACHE_CONTROL, "no-store"))
        .finish()
}

/// The JSON answer of a successful callback (README "Single sign-on").
fn signed_in_json(d: &SsoSignedIn) -> Json {
    json!({
        "message": "Login successful",
        "user_id": d.user_id,
        "token": d.token,
        "root_id": d.root_id,
        "role": d.role.as_str(),
        "platform": d.platform,
        "operation": d.operation,
        "email": d.email,
        "created": d.created,
        "linked": d.linked,
    })
}
