//! `POST /api-key/create`, `GET /api-key/list`, `DELETE /api-key/{api_key_id}`
//! (decisions.md "Webhooks"): bearer-authenticated; the key is shown once, at creation,
//! and never listed back.

use crate::identity::api_error;
use crate::identity::handlers::Body;
use crate::server::auth::SignedIn;
use crate::server::envelope;
use crate::server::errors::ApiError;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::identity::messages::{ApiKeyInfo, CreateApiKey, ListApiKeys, RevokeApiKey};
use serde_json::{Map, Value as Json, json};

/// Longest key name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Most walker names in one key's `allowed_walkers` (or `walkers`).
pub const MAX_WALKERS: usize = 100;
/// Longest walker name accepted in a list.
const MAX_WALKER_CHARS: usize = 200;

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/api-key/create").route(web::post().to(create)))
        .service(web::resource("/api-key/list").route(web::get().to(list)))
        .service(web::resource("/api-key/{api_key_id}").route(web::delete().to(revoke)));
}

/// `POST /api-key/create` → 201 `{api_key, api_key_id, name, created_at, expires_at}`.
async fn create(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let msg = parse_create(&body.0, user.0)?;
    let created = id.ask(msg).await.map_err(api_error)?;
    let info = created.info;
    Ok(envelope::success(
        StatusCode::CREATED,
        json!({
            "api_key": created.api_key,
            "api_key_id": info.api_key_id,
            "name": info.name,
            "created_at": info.created_at,
            "expires_at": info.expires_at,
        }),
    ))
}

/// `GET /api-key/list` → `{api_keys: [{api_key_id, name, created_at, expires_at, active}]}`.
async fn list(id: Identity, user: SignedIn) -> Result<HttpResponse> {
    let keys = id
        .ask(ListApiKeys { user_id: user.0 })
        .await
        .map_err(api_error)?;
    let keys: Vec<Json> = keys.iter().map(listed).collect();
    Ok(envelope::success(StatusCode::OK, json!({"api_keys": keys})))
}

fn listed(k: &ApiKeyInfo) -> Json {
    json!({
        "api_key_id": k.api_key_id,
        "name": k.name,
        "created_at": k.created_at,
        "expires_at": k.expires_at,
        "active": k.active,
    })
}

/// `DELETE /api-key/{api_key_id}` → `{message}`; another user's or an unknown key 404.
async fn revoke(id: Identity, user: SignedIn, path: web::Path<String>) -> Result<HttpResponse> {
    id.ask(RevokeApiKey {
        user_id: user.0,
        api_key_id: path.into_inner(),
    })
    .await
    .map_err(api_error)?;
    Ok(envelope::success(
        StatusCode::OK,
        json!({"message": "API key revoked"}),
    ))
}

/// `{name, expiry_days?, allowed_walkers?}`: shape failures are 422.
fn parse_create(body: &Map<String, Json>, user_id: String) -> Result<CreateApiKey> {
    let name = key_name(body)?;
    let expiry_days = match body.get("expiry_days") {
        None | Some(Json::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n <= u64::from(crate::config::MAX_KEY_DAYS) => u32::try_from(n).ok(),
            _ => {
                return Err(ApiError::validation(
                    "expiry_days",
                    format!(
                        "expected a whole number of days from 0 (permanent) to {}",
                        crate::config::MAX_KEY_DAYS
                    ),
                ));
            }
        },
    };
    let allowed_walkers = match body.get("allowed_walkers") {
        None | Some(Json::Null) => None,
        Some(v) => Some(walker_list(v, "allowed_walkers")?).filter(|l| !l.is_empty()),
    };
    Ok(CreateApiKey {
        user_id,
        name,
        expiry_days,
        allowed_walkers,
    })
}

/// The required `name`: a non-empty string of at most [`MAX_NAME_CHARS`] characters
/// (surrounding spaces dropped).
pub fn key_name(body: &Map<String, Json>) -> Result<String> {
    match body.get("name") {
        Some(Json::String(s)) if !s.trim().is_empty() => {
            let name = s.trim();
            if name.chars().count() > MAX_NAME_CHARS {
                return Err(ApiError::validation(
                    "name",
                    format!("at most {MAX_NAME_CHARS} characters"),
                ));
            }
            Ok(name.to_string())
        }
        None | Some(Json::Null) => Err(ApiError::validation("name", "field required")),
        Some(_) => Err(ApiError::validation("name", "expected a non-empty string")),
    }
}

/// A bounded list of non-empty strings (walker names or node ids).
pub fn walker_list(value: &Json, field: &str) -> Result<Vec<String>> {
    let Json::Array(items) = value else {
        return Err(ApiError::validation(field, "expected a list of names"));
    };
    if items.len() > MAX_WALKERS {
        return Err(ApiError::validation(
            field,
            format!("at most {MAX_WALKERS} entries"),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.as_str().map(str::trim) {
            Some(s) if !s.is_empty() && s.chars().count() <= MAX_WALKER_CHARS => {
                if !out.iter().any(|o| o == s) {
                    out.push(s.to_string());
                }
            }
            _ => {
                return Err(ApiError::validation(
                    &format!("{field}[{i}]"),
                    format!("expected a non-empty string of at most {MAX_WALKER_CHARS} characters"),
                ));
            }
        }
    }
    Ok(out)
}
