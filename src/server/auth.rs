//! Authentication seam (spec "Authentication" item 1): the `Authorized` extractor decides
//! who a generated-endpoint request runs as before its handler runs.
//!
//! - No `Authorization` header: a `:pub` endpoint runs as the guest (the shared root); any
//!   other endpoint is 401 "authentication required".
//! - `Authorization: Bearer <jwt>`: the token must be a valid session token of an active
//!   account (`identity::Identity::caller`), on public endpoints too; the call then runs
//!   on that user's root. An invalid or expired token is 401 on every endpoint.
//!
//! [`resolve`] is that decision for a token from anywhere; the WebSocket endpoint uses
//! it too (`super::ws`), so both transports authenticate alike.

use super::errors::{ApiError, ErrorCode};
use super::routes::Matched;
use crate::identity::Identity;
use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, HeaderMap};
use actix_web::{FromRequest, HttpRequest, web};
use actors::runtime::Caller;
use futures_util::future::LocalBoxFuture;

/// The caller a request runs as, once authorized for its endpoint.
#[derive(Clone, Debug)]
pub struct Authorized(pub Caller);

impl FromRequest for Authorized {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Authorized, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let decided = Matched::of(req).and_then(|m| {
            let token = bearer_token(req.headers())?.map(str::to_string);
            Ok((m.endpoint.public, token))
        });
        let identity = req.app_data::<web::Data<Identity>>().cloned();
        Box::pin(async move {
            let (public, token) = decided?;
            resolve(
                identity.as_ref().map(|d| d.get_ref()),
                public,
                token.as_deref(),
            )
            .await
            .map(Authorized)
        })
    }
}

/// Who a call runs as, given the endpoint's visibility and the token the client sent (an
/// `Authorization` header, or a WebSocket's `token` query parameter or first-message
/// field): the guest without a token on a public endpoint, the token's user otherwise;
/// 401 for a missing token on a private endpoint and for any invalid token.
pub async fn resolve(
    identity: Option<&Identity>,
    public: bool,
    token: Option<&str>,
) -> Result<Caller, ApiError> {
    match (token, identity) {
        (None, _) => anonymous(public).map(|a| a.0),
        (Some(token), Some(identity)) => identity.caller(token).await,
        (Some(_), None) => Err(invalid()),
    }
}

/// A request without a token: the guest on public endpoints, else 401.
pub fn anonymous(public: bool) -> Result<Authorized, ApiError> {
    if public {
        Ok(Authorized(Caller::default()))
    } else {
        Err(ApiError::new(
            ErrorCode::Unauthorized,
            "authentication required",
        ))
    }
}

fn invalid() -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, "invalid token")
}

/// The token of `Authorization: Bearer <token>`, if the header is there; a header of
/// another scheme or without a token is 401.
pub fn bearer_token(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| invalid())?.trim();
    let (scheme, token) = text.split_once(' ').ok_or_else(invalid)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(invalid());
    }
    Ok(Some(token.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    #[test]
    fn guests_only_on_public_endpoints() {
        assert!(anonymous(true).is_ok_and(|a| a.0.root.is_none()));
        let e = anonymous(false).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("authentication required"));
    }

    #[test]
    fn bearer_header_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h).ok(), Some(None));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer  abc "));
        assert_eq!(bearer_token(&h).ok(), Some(Some("abc")));
        h.insert(AUTHORIZATION, HeaderValue::from_static("bearer abc"));
        assert_eq!(bearer_token(&h).ok(), Some(Some("abc")));
        for bad in ["Basic abc", "Bearer", "Bearer   ", "abc"] {
            h.insert(AUTHORIZATION, HeaderValue::from_static(bad));
            let e = bearer_token(&h).err().map(|e| e.message);
            assert_eq!(e.as_deref(), Some("invalid token"), "{bad}");
        }
    }
}
