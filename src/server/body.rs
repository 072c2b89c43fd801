//! The one request-body reader of every route (generated endpoints and `/user/*`): at
//! most `[scale.server] max_body_bytes` (413 `PAYLOAD_TOO_LARGE`, refused from the
//! `Content-Length` alone when it declares more), and the whole body within
//! `[scale.server] body_read_timeout_seconds` of the first read (408 `REQUEST_TIMEOUT`),
//! so a client that trickles a body in, or stalls half-way, holds a connection for a
//! bounded time.

use super::AppState;
use super::errors::{ApiError, ErrorCode};
use actix_web::HttpRequest;
use actix_web::error::PayloadError;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::Bytes;
use futures_util::{Stream, StreamExt as _};
use serde_json::{Map, Value as Json};
use std::task::Poll;
use std::time::Duration;

/// The bounds a body is read under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyLimits {
    /// Largest body, in bytes.
    pub max_bytes: usize,
    /// Longest time the whole body may take to arrive.
    pub timeout: Duration,
}

impl BodyLimits {
    /// The server's configured bounds.
    pub fn of(req: &HttpRequest) -> Result<BodyLimits, ApiError> {
        let settings = &AppState::of(req)?.settings;
        Ok(BodyLimits {
            max_bytes: settings.max_body_bytes,
            timeout: settings.body_read_timeout,
        })
    }
}

/// Read the whole body of `req` under the server's [`BodyLimits`].
pub async fn read<S>(req: &HttpRequest, payload: S) -> Result<Vec<u8>, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    read_with(req, payload, BodyLimits::of(req)?).await
}

/// Read the whole body of `req` under `limits`.
pub async fn read_with<S>(
    req: &HttpRequest,
    mut payload: S,
    limits: BodyLimits,
) -> Result<Vec<u8>, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    let max = limits.max_bytes;
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request body larger than {max} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let collect = async {
        let mut body = Vec::with_capacity(declared.unwrap_or(0));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::new(
                    ErrorCode::BadRequest,
                    format!("cannot read the request body: {e}"),
                )
            })?;
            if body.len() + chunk.len() > max {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    let started = tokio::time::Instant::now();
    let mut collect = std::pin::pin!(collect);
    // A body that arrives with the request (a small request's usually does) needs no
    // timer. actix polls the handler once right after it decodes the request head and
    // feeds the body that came in the same read only after that poll, so the first poll
    // finds nothing: the read then waits one turn of the connection's task (it wakes
    // itself, so it is polled again whatever the client does) before it arms the timer.
    // Only a body still on its way after that is read under the timeout, counted from
    // the first poll. A timer per request was about 2% of the function endpoint's
    // instructions (a boxed `Sleep`, registered in and removed from the timer wheel).
    let mut waited = false;
    let early = std::future::poll_fn(|cx| match collect.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(Some(result)),
        Poll::Pending if !waited => {
            waited = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
        Poll::Pending => Poll::Ready(None),
    })
    .await;
    if let Some(result) = early {
        return result;
    }
    match tokio::time::timeout_at(started + limits.timeout, collect).await {
        Ok(result) => result,
        Err(_) => {
            tracing::info!(
                path = %req.path(),
                timeout_s = limits.timeout.as_secs_f64(),
                "request body read timed out"
            );
            Err(ApiError::new(
                ErrorCode::RequestTimeout,
                format!(
                    "the request body did not arrive within {} s",
                    limits.timeout.as_secs_f64()
                ),
            ))
        }
    }
}

/// The body of `req` as a JSON object (the `/user/*`, `/admin/*` and `/api-key/*`
/// endpoints): a declared Content-Type other than `application/json` or `*+json` is 415
/// `UNSUPPORTED_MEDIA_TYPE` (as on generated endpoints and webhooks; no Content-Type at
/// all is read as JSON); an empty body, a non-object or malformed JSON is 422
/// `VALIDATION_ERROR` on field `body`.
pub async fn json_object<S>(req: &HttpRequest, payload: S) -> Result<Map<String, Json>, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    let bytes = read(req, payload).await?;
    if let Some(t) = super::params::content_type(req).and_then(super::params::essence)
        && !super::params::is_json_media(&t)
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!(
                "unsupported content type '{t}'; send a JSON object with Content-Type: \
                 application/json"
            ),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation("body", "a JSON object is required"));
    }
    match serde_json::from_slice::<Json>(&bytes) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::validation("body", "expected a JSON object")),
        Err(e) => Err(ApiError::validation("body", format!("malformed JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn chunks(parts: &[&'static [u8]]) -> impl Stream<Item = Result<Bytes, PayloadError>> + Unpin {
        futures_util::stream::iter(
            parts
                .iter()
                .map(|p| Ok(Bytes::from_static(p)))
                .collect::<Vec<_>>(),
        )
    }

    const LIMITS: BodyLimits = BodyLimits {
        max_bytes: 8,
        timeout: Duration::from_secs(5),
    };

    #[actix_web::test]
    async fn reads_within_the_size_limit() {
        let req = TestRequest::default().to_http_request();
        let body = read_with(&req, chunks(&[b"abc", b"defgh"]), LIMITS)
            .await
            .expect("8 bytes fit");
        assert_eq!(body, b"abcdefgh");
        let e = read_with(&req, chunks(&[b"abcde", b"fghi"]), LIMITS)
            .await
            .expect_err("9 bytes do not");
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
        let req = TestRequest::default()
            .insert_header((CONTENT_LENGTH, "100"))
            .to_http_request();
        let e = read_with(&req, chunks(&[]), LIMITS)
            .await
            .expect_err("declared too large");
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
    }

    #[actix_web::test]
    async fn a_body_still_on_its_way_is_read_whole() {
        let req = TestRequest::default().to_http_request();
        let later = futures_util::stream::once(async {
            actix_web::rt::task::yield_now().await;
            Ok::<_, PayloadError>(Bytes::from_static(b"late"))
        });
        let body = read_with(&req, chunks(&[b"ab"]).chain(Box::pin(later)), LIMITS)
            .await
            .expect("arrives in time");
        assert_eq!(body, b"ablate");
    }

    #[actix_web::test]
    async fn a_stalled_body_times_out() {
        let req = TestRequest::default().to_http_request();
        let stalled = chunks(&[b"ab"]).chain(futures_util::stream::pending());
        let limits = BodyLimits {
            timeout: Duration::from_millis(50),
            ..LIMITS
        };
        let e = read_with(&req, Box::pin(stalled), limits)
            .await
            .expect_err("never completes");
        assert_eq!(
            (e.code, e.status.as_u16()),
            (ErrorCode::RequestTimeout, 408)
        );
    }
}
