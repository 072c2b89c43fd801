//! Health endpoints (decisions.md "Health"), not enveloped: `/healthz` and `/health` →
//! `{"status": "ok"}`, `/healthz/live` → `{"status": "alive"}`, `/healthz/ready` →
//! `{"status": "ready"}`, or 503 `{"status": "draining"}` once shutdown has begun.
//! Readiness asks the supervisors of the persistence tiers (the anchor store's and the
//! user store's); while either cannot reach its store the answer is 503
//! `{"status": "unavailable", "reason": ...}` (the probe also makes it re-open the file).

use super::AppState;
use super::envelope::plain_json;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use actors::identity::IdentityHandle;
use serde_json::json;
use std::sync::atomic::Ordering;

/// Mount the health routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // Resources (not bare routes), so another method is 405, not a fall-through.
    cfg.service(web::resource("/healthz").route(web::get().to(ok)))
        .service(web::resource("/health").route(web::get().to(ok)))
        .service(web::resource("/healthz/live").route(web::get().to(live)))
        .service(web::resource("/healthz/ready").route(web::get().to(ready)));
}

async fn ok() -> HttpResponse {
    plain_json(StatusCode::OK, &json!({"status": "ok"}))
}

async fn live() -> HttpResponse {
    plain_json(StatusCode::OK, &json!({"status": "alive"}))
}

async fn ready(
    state: web::Data<AppState>,
    identity: Option<web::Data<IdentityHandle>>,
) -> HttpResponse {
    if state.draining.load(Ordering::Acquire) {
        return plain_json(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "draining"}),
        );
    }
    let users = async {
        match &identity {
            Some(identity) => identity.users_health().await,
            None => Ok(()),
        }
    };
    let (store, users) = futures_util::join!(state.runtime.store_health(), users);
    match store.map(drop).and(users) {
        Ok(()) => plain_json(StatusCode::OK, &json!({"status": "ready"})),
        Err(reason) => {
            tracing::warn!("not ready: {reason}");
            plain_json(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"status": "unavailable", "reason": reason}),
            )
        }
    }
}
