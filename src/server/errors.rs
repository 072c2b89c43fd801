//! The one HTTP error-code table: every failure the server answers maps to a stable
//! `code` and its HTTP status here, and leaves as the JSON envelope.

use super::envelope;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use actors::runtime::CallError;
use serde::Serialize;

/// Stable error codes (`error.code` in the envelope).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    /// The request body did not arrive within `body_read_timeout_seconds`.
    RequestTimeout,
    Conflict,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationError,
    RateLimited,
    ExecutionError,
    InternalError,
    ServiceUnavailable,
    /// An app middleware walker rejected the request with a status the table has no
    /// code for; the status is the one the walker reported.
    RequestRejected,
    /// Identity: the identity value belongs to an account already.
    IdentityTaken,
    /// Identity: a verification or reset token that is unknown, expired or used.
    InvalidToken,
    /// Identity: no emailer is configured.
    EmailDisabled,
    /// Identity: the mail server did not accept the message.
    EmailSendFailed,
    /// A call's result exceeded `[scale.limits] max_response_bytes`.
    ResponseTooLarge,
    /// Webhook: the signature header is missing or does not match the body.
    InvalidSignature,
    /// SSO: the provider is not configured (501).
    NotImplemented,
    /// Admin: the admin must change its password before any admin action.
    PasswordResetRequired,
    /// SSO: the callback's `state` is unknown, expired, used or forged.
    InvalidState,
    /// SSO: the provider refused the sign-in or the code.
    SsoFailed,
    /// SSO: the provider could not be reached or answered nonsense.
    SsoProviderError,
}

/// Codes that name one specific failure: never chosen for a bare status by
/// [`ErrorCode::for_status`].
const SPECIFIC: &[ErrorCode] = &[
    ErrorCode::RequestRejected,
    ErrorCode::IdentityTaken,
    ErrorCode::InvalidToken,
    ErrorCode::EmailDisabled,
    ErrorCode::EmailSendFailed,
    ErrorCode::ResponseTooLarge,
    ErrorCode::InvalidSignature,
    ErrorCode::PasswordResetRequired,
    ErrorCode::InvalidState,
    ErrorCode::SsoFailed,
    ErrorCode::SsoProviderError,
];

/// `(code, wire name, HTTP status)`: the whole table.
const TABLE: &[(ErrorCode, &str, u16)] = &[
    (ErrorCode::BadRequest, "BAD_REQUEST", 400),
    (ErrorCode::Unauthorized, "UNAUTHORIZED", 401),
    (ErrorCode::Forbidden, "FORBIDDEN", 403),
    (ErrorCode::NotFound, "NOT_FOUND", 404),
    (ErrorCode::MethodNotAllowed, "METHOD_NOT_ALLOWED", 405),
    (ErrorCode::RequestTimeout, "REQUEST_TIMEOUT", 408),
    (ErrorCode::Conflict, "CONFLICT", 409),
    (ErrorCode::PayloadTooLarge, "PAYLOAD_TOO_LARGE", 413),
    (
        ErrorCode::UnsupportedMediaType,
        "UNSUPPORTED_MEDIA_TYPE",
        415,
    ),
    (ErrorCode::ValidationError, "VALIDATION_ERROR", 422),
    (ErrorCode::RateLimited, "RATE_LIMITED", 429),
    (ErrorCode::InternalError, "INTERNAL_ERROR", 500),
    (ErrorCode::ExecutionError, "EXECUTION_ERROR", 500),
    (ErrorCode::ServiceUnavailable, "SERVICE_UNAVAILABLE", 503),
    (ErrorCode::RequestRejected, "REQUEST_REJECTED", 400),
    (ErrorCode::IdentityTaken, "IDENTITY_TAKEN", 409),
    (ErrorCode::InvalidToken, "INVALID_TOKEN", 400),
    (ErrorCode::EmailDisabled, "EMAIL_DISABLED", 503),
    (ErrorCode::EmailSendFailed, "EMAIL_SEND_FAILED", 502),
    (ErrorCode::ResponseTooLarge, "RESPONSE_TOO_LARGE", 500),
    (ErrorCode::InvalidSignature, "INVALID_SIGNATURE", 401),
    (ErrorCode::NotImplemented, "NOT_IMPLEMENTED", 501),
    (
        ErrorCode::PasswordResetRequired,
        "PASSWORD_RESET_REQUIRED",
        403,
    ),
    (ErrorCode::InvalidState, "INVALID_STATE", 400),
    (ErrorCode::SsoFailed, "SSO_FAILED", 400),
    (ErrorCode::SsoProviderError, "SSO_PROVIDER_ERROR", 502),
];

impl ErrorCode {
    fn row(self) -> (&'static str, u16) {
        TABLE
            .iter()
            .find(|(c, _, _)| *c == self)
            .map_or(("INTERNAL_ERROR", 500), |&(_, name, status)| (name, status))
    }

    /// The wire name, e.g. `VALIDATION_ERROR`.
    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    /// The HTTP status this code answers with.
    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.row().1).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The first code of the table answering with `status` (used for statuses chosen by
    /// someone else: an app middleware walker, a response actix produced).
    pub fn for_status(status: u16) -> Option<ErrorCode> {
        TABLE
            .iter()
            .find(|&&(c, _, s)| s == status && !SPECIFIC.contains(&c))
            .map(|&(c, _, _)| c)
    }
}

/// One entry of `error.details`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// A failure on its way to the client.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub status: StatusCode,
    pub message: String,
    pub details: Vec<FieldError>,
    /// Seconds for a `Retry-After` header (429 and 503 answers).
    pub retry_after: Option<u64>,
    /// The `WWW-Authenticate` challenge of a 401 answer (RFC 9110 11.6.1: every 401
    /// carries one); `None` means [`BEARER_CHALLENGE`].
    pub challenge: Option<&'static str>,
    /// The `Allow` header of a 405 answer: the methods the path does serve.
    pub allow: Option<String>,
}

/// The challenge of a 401 on bearer-token routes (RFC 6750).
pub const BEARER_CHALLENGE: &str = "Bearer realm=\"svc\"";

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            status: code.status(),
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
            challenge: None,
            allow: None,
        }
    }

    /// 405 `METHOD_NOT_ALLOWED` with `Allow: <allowed>` (RFC 9110 15.5.6).
    pub fn method_not_allowed(message: impl Into<String>, allowed: &[&str]) -> ApiError {
        ApiError {
            allow: Some(allowed.join(", ")),
            ..ApiError::new(ErrorCode::MethodNotAllowed, message)
        }
    }

    /// This error with its own `WWW-Authenticate` challenge when it is a 401 (routes
    /// that authenticate by something other than a bearer token: webhooks).
    pub fn with_challenge(self, challenge: &'static str) -> ApiError {
        ApiError {
            challenge: Some(challenge),
            ..self
        }
    }

    /// A code answered with a status other than its row's (the spec's 400
    /// `VALIDATION_ERROR` rows, for instance).
    pub fn with_code_status(code: ErrorCode, status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(status).unwrap_or_else(|_| code.status()),
            ..ApiError::new(code, message)
        }
    }

    /// This error with a `Retry-After: secs` header.
    pub fn with_retry_after(self, secs: u64) -> ApiError {
        ApiError {
            retry_after: Some(secs.max(1)),
            ..self
        }
    }

    /// 429 `RATE_LIMITED` with `Retry-After: secs`.
    pub fn rate_limited(message: impl Into<String>, secs: u64) -> ApiError {
        ApiError {
            retry_after: Some(secs.max(1)),
            ..ApiError::new(ErrorCode::RateLimited, message)
        }
    }

    /// 503 `SERVICE_UNAVAILABLE` with `Retry-After: secs` (a full queue).
    pub fn unavailable(message: impl Into<String>, secs: u64) -> ApiError {
        ApiError {
            retry_after: Some(secs.max(1)),
            ..ApiError::new(ErrorCode::ServiceUnavailable, message)
        }
    }

    /// 422 `VALIDATION_ERROR` with one `{field, message}` detail.
    pub fn validation(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::validation_all(vec![FieldError {
            field: field.to_string(),
            message: message.into(),
        }])
    }

    /// 422 `VALIDATION_ERROR` with these details.
    pub fn validation_all(details: Vec<FieldError>) -> ApiError {
        let message = match details.as_slice() {
            [one] => format!("invalid request: {}: {}", one.field, one.message),
            _ => format!("invalid request: {} problems", details.len()),
        };
        ApiError {
            details,
            ..ApiError::new(ErrorCode::ValidationError, message)
        }
    }

    /// A rejection with a status someone else chose (an app middleware walker or actix
    /// itself); the code comes from the table when it has one for the status.
    pub fn with_status(status: u16, message: impl Into<String>) -> ApiError {
        let status = StatusCode::from_u16(status)
            .ok()
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(StatusCode::BAD_REQUEST);
        let code = ErrorCode::for_status(status.as_u16()).unwrap_or(ErrorCode::RequestRejected);
        ApiError {
            status,
            ..ApiError::new(code, message)
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut resp = envelope::failure(self);
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                actix_web::http::header::WWW_AUTHENTICATE,
                actix_web::http::header::HeaderValue::from_static(
                    self.challenge.unwrap_or(BEARER_CHALLENGE),
                ),
            );
        }
        if let Some(allow) = self
            .allow
            .as_deref()
            .and_then(|a| actix_web::http::header::HeaderValue::from_str(a).ok())
        {
            resp.headers_mut()
                .insert(actix_web::http::header::ALLOW, allow);
        }
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from(secs),
            );
        }
        resp
    }
}

impl From<CallError> for ApiError {
    fn from(e: CallError) -> ApiError {
        match e {
            CallError::NotFound(m) => ApiError::new(ErrorCode::NotFound, m),
            CallError::Validation(problems) => ApiError::validation_all(
                problems
                    .into_iter()
                    .map(|(field, message)| FieldError { field, message })
                    .collect(),
            ),
            CallError::Runtime { message, .. } => ApiError::new(ErrorCode::ExecutionError, message),
            CallError::Limit(m) => ApiError::new(ErrorCode::ExecutionError, m),
            CallError::Conflict(m) => ApiError::new(
                ErrorCode::Conflict,
                format!("write conflict: the request lost a concurrent update ({m})"),
            ),
            CallError::ConflictAfterCommit(m) => ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "write conflict after an explicit commit(): the call is not replayed, \
                     its earlier commit stands ({m})"
                ),
            ),
            CallError::ResponseTooLarge(m) => ApiError::new(ErrorCode::ResponseTooLarge, m),
            CallError::Overloaded(m) => {
                ApiError::new(ErrorCode::ServiceUnavailable, m).with_retry_after(1)
            }
            CallError::Unavailable(m) => {
                // The store's own words (addresses, driver details) stay in the log.
                tracing::warn!(error = %m, "store unavailable during a call");
                ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "the store is unavailable or restarting; nothing was saved, retry the call",
                )
                .with_retry_after(1)
            }
            // Nobody reads this answer (the client is gone); logged as such.
            CallError::Cancelled => ApiError::new(
                ErrorCode::ServiceUnavailable,
                "the call was cancelled: the client went away",
            ),
            CallError::Host(m) => {
                // Storage internals stay in the server log.
                tracing::error!(error = %m, "storage failure during a call");
                ApiError::new(
                    ErrorCode::InternalError,
                    "storage failure; see the server log",
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_row() {
        let codes = [
            ErrorCode::BadRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::RequestTimeout,
            ErrorCode::Conflict,
            ErrorCode::PayloadTooLarge,
            ErrorCode::UnsupportedMediaType,
            ErrorCode::ValidationError,
            ErrorCode::RateLimited,
            ErrorCode::ExecutionError,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
            ErrorCode::RequestRejected,
            ErrorCode::IdentityTaken,
            ErrorCode::InvalidToken,
            ErrorCode::EmailDisabled,
            ErrorCode::EmailSendFailed,
            ErrorCode::ResponseTooLarge,
            ErrorCode::InvalidSignature,
            ErrorCode::NotImplemented,
            ErrorCode::PasswordResetRequired,
            ErrorCode::InvalidState,
            ErrorCode::SsoFailed,
            ErrorCode::SsoProviderError,
        ];
        for c in codes {
            assert_eq!(TABLE.iter().filter(|r| r.0 == c).count(), 1, "{c:?}");
        }
        assert_eq!(TABLE.len(), codes.len());
    }

    #[test]
    fn statuses_follow_the_decisions() {
        assert_eq!(ErrorCode::ValidationError.status().as_u16(), 422);
        assert_eq!(ErrorCode::PayloadTooLarge.as_str(), "PAYLOAD_TOO_LARGE");
        assert_eq!(ErrorCode::for_status(401), Some(ErrorCode::Unauthorized));
        assert_eq!(ErrorCode::InvalidSignature.status().as_u16(), 401);
        assert_eq!(ErrorCode::for_status(500), Some(ErrorCode::InternalError));
        assert_eq!(ErrorCode::for_status(409), Some(ErrorCode::Conflict));
        assert_eq!(
            ErrorCode::for_status(503),
            Some(ErrorCode::ServiceUnavailable)
        );
        assert_eq!(ErrorCode::for_status(502), None);
        assert_eq!(ErrorCode::for_status(408), Some(ErrorCode::RequestTimeout));
        assert_eq!(ErrorCode::RequestTimeout.as_str(), "REQUEST_TIMEOUT");
        assert_eq!(ErrorCode::EmailDisabled.status().as_u16(), 503);
        let e = ApiError::with_code_status(ErrorCode::ValidationError, 400, "x");
        assert_eq!(
            (e.status.as_u16(), e.code.as_str()),
            (400, "VALIDATION_ERROR")
        );
        let resp = ApiError::rate_limited("slow down", 30).error_response();
        assert_eq!(resp.status().as_u16(), 429);
        assert_eq!(
            resp.headers()
                .get(actix_web::http::header::RETRY_AFTER)
                .map(|v| v.as_bytes()),
            Some(&b"30"[..])
        );
        let resp = ApiError::new(ErrorCode::Unauthorized, "who?").error_response();
        assert_eq!(
            resp.headers()
                .get(actix_web::http::header::WWW_AUTHENTICATE)
                .map(|v| v.as_bytes()),
            Some(BEARER_CHALLENGE.as_bytes())
        );
        let resp = ApiError::new(ErrorCode::Forbidden, "no").error_response();
        assert!(
            resp.headers()
                .get(actix_web::http::header::WWW_AUTHENTICATE)
                .is_none()
        );
        let teapot = ApiError::with_status(418, "short and stout");
        assert_eq!(teapot.status.as_u16(), 418);
        assert_eq!(teapot.code, ErrorCode::RequestRejected);
        assert_eq!(ApiError::with_status(200, "x").status.as_u16(), 400);
    }

    #[test]
    fn call_errors_map_to_codes() {
        let e = ApiError::from(CallError::Validation(vec![("n".into(), "bad".into())]));
        assert_eq!(e.status.as_u16(), 422);
        assert_eq!(e.details.len(), 1);
        let e = ApiError::from(CallError::Conflict("x".into()));
        assert_eq!(e.code, ErrorCode::Conflict);
        let e = ApiError::from(CallError::Limit("too deep".into()));
        assert_eq!(e.code, ErrorCode::ExecutionError);
    }
}
