//! Authentication seam (spec "Authentication" item 1). One bearer-token extractor,
//! [`Bearer`], serves every route: it reads `Authorization: Bearer <jwt>` and verifies the
//! session token (`actors::identity::IdentityHandle::verify`). The `/user/*` handlers take
//! it (or [`SignedIn`], the same with the token required); [`authorize`] builds on it
//! to decide who a generated-endpoint request runs as.
//!
//! - No `Authorization` header: a `:pub` endpoint runs as the guest (the shared root); any
//!   other endpoint is 401 "authentication required".
//! - `Authorization: Bearer <jwt>`: the token must be a valid session token of an active
//!   account (`IdentityHandle::caller`), on public endpoints too; the call then runs
//!   on that user's root. An invalid or expired token is 401 on every endpoint.
//!
//! [`resolve`] is that decision for a token from anywhere; the WebSocket endpoint uses
//! it too (`super::ws`), so both transports authenticate alike.

use super::errors::{ApiError, ErrorCode};
use crate::identity::api_error;
use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, HeaderMap};
use actix_web::{FromRequest, HttpRequest, web};
use actors::identity::IdentityHandle;
use actors::runtime::Caller;
use futures_util::future::{Ready, ready};

/// The bearer of a request: `None` without an `Authorization` header, else the user id
/// of its valid session token. A header of another scheme, without a token, or with an
/// invalid, expired or not-yet-valid token is 401.
#[derive(Clone, Debug)]
pub struct Bearer(pub Option<String>);

impl Bearer {
    fn of(req: &HttpRequest) -> Result<Bearer, ApiError> {
        let Some(token) = bearer_token(req.headers())? else {
            return Ok(Bearer(None));
        };
        let identity = req
            .app_data::<web::Data<IdentityHandle>>()
            .ok_or_else(invalid)?;
        let user_id = identity.verify(token).map_err(api_error)?;
        Ok(Bearer(Some(user_id)))
    }
}

impl FromRequest for Bearer {
    type Error = ApiError;
    type Future = Ready<Result<Bearer, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Bearer::of(req))
    }
}

/// A [`Bearer`] that must be there: the user id of the request's valid session token,
/// else 401 "authentication required".
#[derive(Clone, Debug)]
pub struct SignedIn(pub String);

impl FromRequest for SignedIn {
    type Error = ApiError;
    type Future = Ready<Result<SignedIn, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Bearer::of(req).and_then(|b| match b.0 {
            Some(user_id) => Ok(SignedIn(user_id)),
            None => Err(required()),
        }))
    }
}

/// The caller a request runs as, once authorized for its endpoint.
#[derive(Clone, Debug)]
pub struct Authorized(pub Caller);

/// Who a generated-endpoint request runs as: the guest without an `Authorization`
/// header on a `public` endpoint, else the user of its valid session token (401 for a
/// missing token on a private endpoint and for any invalid one).
pub async fn authorize(req: &HttpRequest, public: bool) -> Result<Caller, ApiError> {
    match Bearer::of(req)?.0 {
        None => anonymous(public).map(|a| a.0),
        Some(user_id) => {
            let identity = req
                .app_data::<web::Data<IdentityHandle>>()
                .ok_or_else(invalid)?;
            identity.caller(user_id).await.map_err(api_error)
        }
    }
}

/// Who a call runs as, given the endpoint's visibility and the token the client sent (an
/// `Authorization` header, or a WebSocket's `token` query parameter or first-message
/// field): the guest without a token on a public endpoint, the token's user otherwise;
/// 401 for a missing token on a private endpoint and for any invalid token.
pub async fn resolve(
    identity: Option<&IdentityHandle>,
    public: bool,
    token: Option<&str>,
) -> Result<Caller, ApiError> {
    match (token, identity) {
        (None, _) => anonymous(public).map(|a| a.0),
        (Some(token), Some(identity)) => {
            let user_id = identity.verify(token).map_err(api_error)?;
            identity.caller(user_id).await.map_err(api_error)
        }
        (Some(_), None) => Err(invalid()),
    }
}

/// A request without a token: the guest on public endpoints, else 401.
pub fn anonymous(public: bool) -> Result<Authorized, ApiError> {
    if public {
        Ok(Authorized(Caller::default()))
    } else {
        Err(required())
    }
}

fn required() -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, "authentication required")
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
