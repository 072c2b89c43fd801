//! Authentication seam (spec "Authentication" item 1): the `Authorized` extractor decides
//! who a generated-endpoint request runs as before its handler runs.
//!
//! Today: a `:pub` endpoint without a token runs as the guest (the shared root); a
//! non-public endpoint without `Authorization: Bearer ...` is 401 "authentication
//! required"; any bearer token is 401 "invalid token", since nothing can issue one yet.
//! The identity issue replaces [`verify_bearer`] with JWT verification that yields the
//! user's `Caller`.

use super::errors::{ApiError, ErrorCode};
use super::routes::Matched;
use actix_web::dev::Payload;
use actix_web::http::header::{AUTHORIZATION, HeaderMap};
use actix_web::{FromRequest, HttpRequest};
use actors::runtime::Caller;
use std::future::{Ready, ready};

/// The caller a request runs as, once authorized for its endpoint.
#[derive(Clone, Debug)]
pub struct Authorized(pub Caller);

impl FromRequest for Authorized {
    type Error = ApiError;
    type Future = Ready<Result<Authorized, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Matched::of(req).and_then(|m| authorize(req.headers(), m.endpoint.public)))
    }
}

/// Who may call an endpoint that is (or is not) `:pub`.
pub fn authorize(headers: &HeaderMap, public: bool) -> Result<Authorized, ApiError> {
    match bearer_token(headers)? {
        Some(token) => verify_bearer(token).map(Authorized),
        None if public => Ok(Authorized(Caller::default())),
        None => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "authentication required",
        )),
    }
}

/// The token of `Authorization: Bearer <token>`, if the header is there.
fn bearer_token(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    let invalid = || ApiError::new(ErrorCode::Unauthorized, "invalid token");
    let text = value.to_str().map_err(|_| invalid())?.trim();
    let (scheme, token) = text.split_once(' ').ok_or_else(invalid)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(invalid());
    }
    Ok(Some(token.trim()))
}

/// Verify a session token. No tokens can be issued before the identity issue lands, so
/// every token is invalid.
fn verify_bearer(_token: &str) -> Result<Caller, ApiError> {
    Err(ApiError::new(ErrorCode::Unauthorized, "invalid token"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    #[test]
    fn guests_only_on_public_endpoints() {
        let none = HeaderMap::new();
        assert!(authorize(&none, true).is_ok_and(|a| a.0.root.is_none()));
        let e = authorize(&none, false).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("authentication required"));
        let mut bearer = HeaderMap::new();
        bearer.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        for public in [true, false] {
            let e = authorize(&bearer, public).err().map(|e| e.message);
            assert_eq!(e.as_deref(), Some("invalid token"));
        }
    }
}
