//! `GET /metrics` (decisions.md "Metrics"): the process registry (`crate::metrics`) in
//! the Prometheus text format, mounted when `[scale.server] metrics_enabled` (default);
//! with `metrics_token` set, only for `Authorization: Bearer <token>` (else 401).

use super::AppState;
use super::auth::bearer_token;
use super::errors::{ApiError, ErrorCode};
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};

pub fn configure(cfg: &mut web::ServiceConfig) {
    // A resource: another method is 405 `METHOD_NOT_ALLOWED`, not 404.
    cfg.service(web::resource("/metrics").route(web::get().to(metrics)));
}

async fn metrics(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    if let Some(expected) = &state.settings.metrics_token {
        let given = bearer_token(req.headers()).ok().flatten();
        if !given.is_some_and(|t| crate::metrics::token_matches(t, expected)) {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                "a valid metrics token is required (Authorization: Bearer <metrics_token>)",
            ));
        }
    }
    let backend = if state.settings.docdb_uri.is_some() {
        crate::metrics::BACKEND_DOCDB
    } else {
        crate::metrics::BACKEND_SQLITE
    };
    let text = crate::metrics::global().render(Some(&state.runtime), backend);
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, crate::metrics::CONTENT_TYPE))
        .body(text))
}
