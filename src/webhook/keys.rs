//! The alternate webhook flavor's key routes (spec "Alternate webhook flavor"):
//! `POST /webhook/generate-key`, `GET /webhook`, `PATCH /webhook/extend/{id}`,
//! `DELETE /webhook/delete`, all bearer-authenticated and scoped to the signed-in user.
//! A key is shown once, at generation; lists show `key` as its first characters only.

use super::api_keys::{key_name, walker_list};
use crate::identity::api_error;
use crate::identity::handlers::Body;
use crate::server::auth::SignedIn;
use crate::server::envelope;
use crate::server::errors::ApiError;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use actors::identity::IdentityHandle;
use actors::identity::messages::{
    DeleteWebhookKeys, ExtendWebhookKey, GenerateWebhookKey, ListWebhookKeys,
};
use serde_json::{Map, Value as Json, json};

/// Lifetime of a generated key whose request names no `expiration`: 60 days.
pub const DEFAULT_LIFETIME_SECS: i64 = 60 * 86_400;
/// Longest lifetime (or extension) accepted: 100 years.
const MAX_LIFETIME_SECS: i64 = 36_500 * 86_400;
/// Most ids in one delete.
const MAX_IDS: usize = 1000;

type Result<T> = std::result::Result<T, ApiError>;
type Identity = web::Data<IdentityHandle>;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/webhook").route(web::get().to(list)))
        .service(web::resource("/webhook/generate-key").route(web::post().to(generate)))
        .service(web::resource("/webhook/extend/{id}").route(web::patch().to(extend)))
        .service(
            web::resource("/webhook/delete")
                .route(web::delete().to(delete))
                // The current-flavor walker named `delete`, if any.
                .route(web::post().to(super::calls::current_named_delete)),
        );
}

/// `POST /webhook/generate-key` → 201 `{id, name, key}`.
async fn generate(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let body = &body.0;
    let name = key_name(body)?;
    let walkers = optional_list(body, "walkers")?;
    let nodes = optional_list(body, "nodes")?
        .iter()
        .enumerate()
        .map(|(i, n)| {
            lang::host::parse_id(n)
                .map(lang::host::format_id)
                .ok_or_else(|| ApiError::validation(&format!("nodes[{i}]"), "expected a node id"))
        })
        .collect::<Result<Vec<_>>>()?;
    let lifetime_secs = match body.get("expiration") {
        None | Some(Json::Null) => DEFAULT_LIFETIME_SECS,
        Some(Json::Object(e)) => lifetime(e, "expiration.")?,
        Some(_) => {
            return Err(ApiError::validation(
                "expiration",
                "expected {count, interval}",
            ));
        }
    };
    let made = id
        .ask(GenerateWebhookKey {
            user_id: user.0,
            name,
            walkers,
            nodes,
            lifetime_secs,
        })
        .await
        .map_err(api_error)?;
    Ok(envelope::success(
        StatusCode::CREATED,
        json!({"id": made.id, "name": made.name, "key": made.key}),
    ))
}

/// `GET /webhook` → `{keys: [{id, name, root_id, walkers, nodes, expiration, key}]}`.
async fn list(id: Identity, user: SignedIn) -> Result<HttpResponse> {
    let keys = id
        .ask(ListWebhookKeys { user_id: user.0 })
        .await
        .map_err(api_error)?;
    let keys: Vec<Json> = keys
        .into_iter()
        .map(|k| {
            json!({
                "id": k.id,
                "name": k.name,
                "root_id": k.root_id,
                "walkers": k.walkers,
                "nodes": k.nodes,
                "expiration": k.expiration,
                "key": k.key,
            })
        })
        .collect();
    Ok(envelope::success(StatusCode::OK, json!({"keys": keys})))
}

/// `PATCH /webhook/extend/{id}` with `{count, interval}` → `{message}`: the key's expiry
/// moves by that much, counted from the later of its expiry and now.
async fn extend(
    id: Identity,
    user: SignedIn,
    path: web::Path<String>,
    body: Body,
) -> Result<HttpResponse> {
    let lifetime_secs = lifetime(&body.0, "")?;
    id.ask(ExtendWebhookKey {
        user_id: user.0,
        id: path.into_inner(),
        lifetime_secs,
    })
    .await
    .map_err(api_error)?;
    Ok(envelope::success(
        StatusCode::OK,
        json!({"message": "Webhook key extended"}),
    ))
}

/// `DELETE /webhook/delete` with `{ids: [..]}` → `{message}`; ids that are not the
/// user's keys are skipped.
async fn delete(id: Identity, user: SignedIn, body: Body) -> Result<HttpResponse> {
    let ids = match body.0.get("ids") {
        Some(Json::Array(items)) if items.len() <= MAX_IDS => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v.as_str() {
                Some(s) if s.len() <= 100 => Ok(s.to_string()),
                _ => Err(ApiError::validation(
                    &format!("ids[{i}]"),
                    "expected a key id",
                )),
            })
            .collect::<Result<Vec<_>>>()?,
        Some(Json::Array(_)) => {
            return Err(ApiError::validation(
                "ids",
                format!("at most {MAX_IDS} ids"),
            ));
        }
        None | Some(Json::Null) => return Err(ApiError::validation("ids", "field required")),
        Some(_) => return Err(ApiError::validation("ids", "expected a list of key ids")),
    };
    let n = id
        .ask(DeleteWebhookKeys {
            user_id: user.0,
            ids,
        })
        .await
        .map_err(api_error)?;
    Ok(envelope::success(
        StatusCode::OK,
        json!({"message": format!("Deleted {n} webhook key(s)")}),
    ))
}

fn optional_list(body: &Map<String, Json>, field: &str) -> Result<Vec<String>> {
    match body.get(field) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(v) => walker_list(v, field),
    }
}

/// `{count, interval}` in seconds: `count` a positive whole number, `interval` one of
/// `seconds`, `minutes`, `hours`, `days`; at most 100 years.
fn lifetime(e: &Map<String, Json>, prefix: &str) -> Result<i64> {
    let count = match e.get("count").and_then(Json::as_i64) {
        Some(n) if n > 0 => n,
        _ => {
            return Err(ApiError::validation(
                &format!("{prefix}count"),
                "expected a positive whole number",
            ));
        }
    };
    let unit = match e.get("interval").and_then(Json::as_str) {
        Some("seconds") => 1,
        Some("minutes") => 60,
        Some("hours") => 3600,
        Some("days") => 86_400,
        _ => {
            return Err(ApiError::validation(
                &format!("{prefix}interval"),
                "expected seconds, minutes, hours or days",
            ));
        }
    };
    match count.checked_mul(unit) {
        Some(secs) if secs <= MAX_LIFETIME_SECS => Ok(secs),
        _ => Err(ApiError::validation(
            &format!("{prefix}count"),
            "at most 100 years",
        )),
    }
}
