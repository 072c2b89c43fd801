//! The HTTP middleware wrapped around every route ([`HttpLayer`], one layer): trace id
//! (`X-Trace-Id`, echoed or generated), CORS by the `[scale.server] cors_origins`
//! allow-list (preflights answered here), response compression for clients that accept
//! it, metrics, the access log, and the last guard of "every failure is the envelope"
//! (an error actix produced itself, such as a 405 from a fixed route, is rewritten as the
//! envelope).
//!
//! CORS ([`Cors`]): `["*"]` (the default) answers every origin with
//! `Access-Control-Allow-Origin: *` and never allows credentials; a list of origins echoes
//! a listed request `Origin` with `Access-Control-Allow-Credentials: true` and
//! `Vary: Origin`, and gives other origins no CORS headers at all; `[]` turns CORS off.
//! `OPTIONS` is always answered here with 204; the preflight headers
//! (`Access-Control-Allow-Methods`/`-Headers`/`Max-Age`) only for an allowed origin.

use super::AppState;
use super::errors::ApiError;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Compress;
use actix_web::web::Bytes;
use actix_web::{Error, FromRequest, HttpMessage as _, HttpRequest, HttpResponse};
use futures_util::FutureExt as _;
use futures_util::future::LocalBoxFuture;
use std::future::{Ready, ready};
use std::rc::Rc;
use std::time::Instant;

pub const TRACE_HEADER: &str = "x-trace-id";

/// [`TRACE_HEADER`] as a header name, made at compile time: read and written on every
/// request, where parsing the text each time cost more than the lookup.
static TRACE_NAME: HeaderName = HeaderName::from_static(TRACE_HEADER);

/// Paths whose access-log lines `suppress_health_check_logs` leaves out (with the
/// documentation pages, `docs::DOC_PATHS`).
const QUIET_PATHS: &[&str] = &[
    "/",
    "/health",
    "/healthz",
    "/healthz/ready",
    "/healthz/live",
];

/// The request's trace id (set by [`HttpLayer`] before any handler runs).
#[derive(Clone, Debug)]
pub struct TraceId(pub String);

impl TraceId {
    /// The trace id of `req` (a new one if the middleware did not run).
    pub fn of(req: &HttpRequest) -> TraceId {
        let id = req.extensions().get::<TraceId>().cloned();
        id.unwrap_or_else(|| TraceId(new_trace_id()))
    }
}

impl FromRequest for TraceId {
    type Error = Error;
    type Future = Ready<Result<TraceId, Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(TraceId::of(req)))
    }
}

/// A random UUID (version 4) in its usual text form. Written two hex digits per byte
/// into a 36-byte array, then copied into its string once: it is made for every call and
/// every WebSocket message (two `format!` passes were ~2% of a WebSocket echo's server
/// time, and pushing 32 digits one `char` at a time, each cut from the 128 bits by a
/// shift, still ~2% of the function endpoint's instructions).
pub fn new_trace_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = trace_random();
    id = (id & !(0xF << 76)) | (0x4 << 76);
    id = (id & !(0x3 << 62)) | (0x2 << 62);
    let mut out = [b'-'; 36];
    let mut at = 0;
    for (i, byte) in id.to_be_bytes().into_iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        out[at] = HEX[usize::from(byte >> 4)];
        out[at + 1] = HEX[usize::from(byte & 0xF)];
        at += 2;
    }
    // Hex digits and dashes: always ASCII.
    std::str::from_utf8(&out)
        .map(str::to_owned)
        .unwrap_or_default()
}

/// 128 random bits for a trace id: a per-thread SplitMix64 stream seeded once from the
/// OS source (`actors::random_id`). Trace ids only need to be unique, not secret, and
/// the OS source costs a system call per id on the hot path.
fn trace_random() -> u128 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(actors::random_id() as u64);
    }
    fn next(state: &Cell<u64>) -> u64 {
        let s = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    STATE.with(|state| (u128::from(next(state)) << 64) | u128::from(next(state)))
}

/// An incoming trace id worth echoing: 1-128 visible ASCII characters.
fn incoming_trace_id(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(&TRACE_NAME)?.to_str().ok()?.trim();
    let ok = !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.to_string())
}

/// The one middleware wrapped around every route: trace id, CORS, `HEAD` as `GET`,
/// `OPTIONS`, response compression, the envelope fallback, metrics and the access log,
/// in one service with one boxed future per request.
///
/// It replaces a stack of two (actix's `Compress` and a `from_fn` layer), each of which
/// cost a future, a response map and header work on every request. Compression is still
/// actix's `Compress`, asked only when the request carries `Accept-Encoding`: without
/// that header `Compress` answers with the identity encoding, which is the response as
/// it is, so skipping it changes no byte.
pub struct HttpLayer;

impl<S, B> Transform<S, ServiceRequest> for HttpLayer
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = HttpLayerService<S>;
    type InitError = ();
    type Future = Ready<Result<HttpLayerService<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        let service = Rc::new(service);
        // `Compress` builds its service synchronously (a ready future).
        let compress = Compress::default()
            .new_transform(Rc::clone(&service))
            .now_or_never();
        ready(match compress {
            Some(Ok(compress)) => Ok(HttpLayerService { service, compress }),
            _ => Err(()),
        })
    }
}

/// The service of [`HttpLayer`].
pub struct HttpLayerService<S>
where
    Compress: Transform<Rc<S>, ServiceRequest>,
{
    service: Rc<S>,
    /// The same inner service behind actix's compression, for requests that accept an
    /// encoding.
    compress: <Compress as Transform<Rc<S>, ServiceRequest>>::Transform,
}

impl<S, B> Service<ServiceRequest> for HttpLayerService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<ServiceResponse<BoxBody>, Error>>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        let before = Before::of(&mut req);
        if before.method == Method::OPTIONS {
            let preflight = preflight(req.headers(), before.grant.is_some());
            let res = req.into_response(preflight);
            return Box::pin(std::future::ready(Ok(before.finish(res))));
        }
        // Handlers and extractors answer their errors as responses; an `Err` here would
        // come from actix itself and is answered by actix.
        if req.headers().contains_key(header::ACCEPT_ENCODING) {
            let fut = self.compress.call(req);
            Box::pin(async move {
                let res = fut.await?.map_into_boxed_body();
                Ok(before.finish(res))
            })
        } else {
            let fut = self.service.call(req);
            Box::pin(async move {
                let res = fut.await?.map_into_boxed_body();
                Ok(before.finish(res))
            })
        }
    }
}

/// What [`HttpLayer`] learns of a request before passing it on.
struct Before {
    started: Instant,
    trace: String,
    /// As received (a `HEAD` is routed as `GET`).
    method: Method,
    grant: Option<Grant>,
    vary: bool,
    /// No access line (`suppress_health_check_logs` and a health or docs path).
    quiet: bool,
}

impl Before {
    /// Read `req` and set it up for the handlers: its [`TraceId`], `HEAD` as `GET`.
    fn of(req: &mut ServiceRequest) -> Before {
        let started = Instant::now();
        let trace = incoming_trace_id(req.headers()).unwrap_or_else(new_trace_id);
        req.extensions_mut().insert(TraceId(trace.clone()));
        let method = req.method().clone();
        let state = req.app_data::<actix_web::web::Data<AppState>>();
        let cors = state.map(|s| &s.settings.cors);
        let grant = cors.and_then(|c| c.grant(req.headers().get(header::ORIGIN)));
        let vary = cors.is_some_and(Cors::varies_by_origin);
        let quiet = state.is_some_and(|s| s.settings.suppress_health_check_logs) && {
            let path = req.path();
            QUIET_PATHS.contains(&path) || crate::docs::DOC_PATHS.contains(&path)
        };
        // HEAD is GET without the body (RFC 9110 9.3.2): route it as GET. The HTTP codec
        // decoded a HEAD request, so it still sends the headers only.
        if method == Method::HEAD {
            req.head_mut().method = Method::GET;
        }
        Before {
            started,
            trace,
            method,
            grant,
            vary,
            quiet,
        }
    }

    /// The response as it leaves: the envelope on an error actix made, the trace and CORS
    /// headers, then the request's metrics and access line.
    fn finish(self, mut res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
        if needs_envelope(&res) {
            let status = res.status();
            let message = match res.response().error() {
                Some(e) => e.to_string(),
                None => status.canonical_reason().unwrap_or("error").to_string(),
            };
            // actix's 405 names the methods the route serves: keep its `Allow`.
            let allow = res
                .headers()
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let error = ApiError {
                allow,
                ..ApiError::with_status(status.as_u16(), message)
            };
            let replacement = actix_web::ResponseError::error_response(&error);
            res = res.into_response(replacement);
        }
        let status = res.status();
        let took = self.started.elapsed();
        {
            let req = res.request();
            let extensions = req.extensions();
            let pattern;
            let route = match extensions.get::<super::routes::Matched>() {
                Some(m) => &*m.route,
                None => {
                    pattern = fixed_route_label(req);
                    pattern.as_deref().unwrap_or("unmatched")
                }
            };
            crate::metrics::global().http_request(self.method.as_str(), route, status, took);
            if !self.quiet {
                let ms = took.as_secs_f64() * 1000.0;
                super::logging::access(
                    self.method.as_str(),
                    req.path(),
                    status.as_u16(),
                    (ms * 10.0).round() / 10.0,
                    &self.trace,
                );
            }
        }
        let headers = res.headers_mut();
        // The id's bytes move into the header (it was checked or made as visible ASCII).
        if let Ok(v) = HeaderValue::from_maybe_shared(Bytes::from(self.trace.into_bytes())) {
            headers.insert(TRACE_NAME.clone(), v);
        }
        cors_headers(headers, self.grant, self.vary);
        res
    }
}

/// The `route` label of a request no generated endpoint answered (decisions.md
/// "Metrics"): a fixed route's pattern, else `None` (`unmatched`); never a raw path
/// holding ids. A generated endpoint's label is its declared path (`routes::Matched`).
fn fixed_route_label(req: &HttpRequest) -> Option<String> {
    req.match_pattern()
        // A generated endpoint's prefix scope (`super::GENERATED_PREFIXES`) without a
        // resolved endpoint: an unknown path.
        .filter(|p| !super::GENERATED_PREFIXES.contains(&p.as_str()))
}

/// An error response that is not JSON came from actix itself (or a route that forgot the
/// envelope): rewrite it.
fn needs_envelope(res: &ServiceResponse<BoxBody>) -> bool {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return false;
    }
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    !is_json
}

/// The CORS policy of `[scale.server] cors_origins`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cors {
    /// `[]`: no CORS headers.
    Disabled,
    /// `["*"]`: `Access-Control-Allow-Origin: *`, never credentials.
    AnyOrigin,
    /// Explicit origins (lower case, no trailing `/`): echoed, with credentials.
    Origins(Vec<String>),
}

/// What CORS grants one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// `Access-Control-Allow-Origin: *`.
    Any,
    /// The request's origin, echoed with credentials allowed.
    Origin(HeaderValue),
}

impl Cors {
    /// The policy of a validated `cors_origins` list (see `config`).
    pub fn new(origins: &[String]) -> Cors {
        if origins.is_empty() {
            Cors::Disabled
        } else if origins.iter().any(|o| o == "*") {
            Cors::AnyOrigin
        } else {
            Cors::Origins(origins.to_vec())
        }
    }

    /// What a request from `origin` is granted (`None`: no CORS headers).
    pub fn grant(&self, origin: Option<&HeaderValue>) -> Option<Grant> {
        match self {
            Cors::Disabled => None,
            Cors::AnyOrigin => Some(Grant::Any),
            Cors::Origins(list) => {
                let value = origin?;
                let text = value.to_str().ok()?;
                list.iter()
                    .any(|o| o.eq_ignore_ascii_case(text))
                    .then(|| Grant::Origin(value.clone()))
            }
        }
    }

    /// Answers differ by `Origin` (so caches must key on it).
    pub fn varies_by_origin(&self) -> bool {
        matches!(self, Cors::Origins(_))
    }
}

/// The answer to any `OPTIONS` request: 204, with the preflight grants when CORS allows
/// the origin (the requested method and headers are allowed).
fn preflight(headers: &HeaderMap, allowed: bool) -> HttpResponse {
    if !allowed {
        return HttpResponse::build(StatusCode::NO_CONTENT).finish();
    }
    let methods = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .cloned()
        .unwrap_or(HeaderValue::from_static(
            "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
        ));
    let allow_headers = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned()
        .unwrap_or(HeaderValue::from_static("*"));
    HttpResponse::build(StatusCode::NO_CONTENT)
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, methods))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers))
        .insert_header((
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        ))
        .finish()
}

/// The CORS headers of a response: what `grant` allows, and `Vary: Origin` when the
/// policy depends on the origin.
fn cors_headers(headers: &mut HeaderMap, grant: Option<Grant>, vary: bool) {
    if vary {
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    let Some(grant) = grant else {
        return;
    };
    match grant {
        Grant::Origin(origin) => {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        Grant::Any => {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
    }
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("X-Trace-Id"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test as actix_test;
    use actix_web::{App, web};

    /// What `HttpLayer` must keep of the stack it replaced: compression exactly when the
    /// client accepts an encoding, the envelope on the 406 of one it cannot have, and the
    /// trace header on every answer.
    #[actix_web::test]
    async fn responses_are_compressed_only_for_clients_that_accept_it() {
        let app = actix_test::init_service(App::new().wrap(HttpLayer).route(
            "/big",
            web::get().to(|| async {
                HttpResponse::Ok()
                    .content_type("application/json")
                    .body(format!("[{}0]", "1,".repeat(2048)))
            }),
        ))
        .await;
        let plain = actix_test::call_service(
            &app,
            actix_test::TestRequest::get().uri("/big").to_request(),
        )
        .await;
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert!(plain.headers().contains_key(TRACE_HEADER));
        assert_eq!(actix_test::read_body(plain).await.len(), 4099);

        let gzip = actix_test::TestRequest::get()
            .uri("/big")
            .insert_header((header::ACCEPT_ENCODING, "gzip"))
            .to_request();
        let gzip = actix_test::call_service(&app, gzip).await;
        assert_eq!(
            gzip.headers()
                .get(header::CONTENT_ENCODING)
                .map(HeaderValue::as_bytes),
            Some(&b"gzip"[..])
        );
        assert!(gzip.headers().contains_key(TRACE_HEADER));
        let bytes = actix_test::read_body(gzip).await;
        assert!(
            bytes.len() < 200 && bytes.starts_with(&[0x1f, 0x8b]),
            "{bytes:?}"
        );

        let refused = actix_test::TestRequest::get()
            .uri("/big")
            .insert_header((header::ACCEPT_ENCODING, "identity;q=0"))
            .to_request();
        let refused = actix_test::call_service(&app, refused).await;
        assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE);
        let body = actix_test::read_body(refused).await;
        assert!(
            body.starts_with(br#"{"ok":false,"type":"error""#),
            "{body:?}"
        );
    }

    #[test]
    fn trace_ids_look_like_uuids() {
        let a = new_trace_id();
        let b = new_trace_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        for (i, c) in a.char_indices() {
            if matches!(i, 8 | 13 | 18 | 23) {
                assert_eq!(c, '-', "{a}");
            } else {
                assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase(), "{a}");
            }
        }
    }

    #[test]
    fn cors_policies() {
        let o = |s: &'static str| HeaderValue::from_static(s);
        let any = Cors::new(&["*".into()]);
        assert_eq!(any.grant(Some(&o("https://x.io"))), Some(Grant::Any));
        assert_eq!(any.grant(None), Some(Grant::Any));
        assert!(!any.varies_by_origin());
        let list = Cors::new(&["https://app.io".into()]);
        assert_eq!(
            list.grant(Some(&o("https://APP.io"))),
            Some(Grant::Origin(o("https://APP.io")))
        );
        assert_eq!(list.grant(Some(&o("https://evil.io"))), None);
        assert_eq!(list.grant(None), None);
        assert!(list.varies_by_origin());
        assert_eq!(Cors::new(&[]).grant(Some(&o("https://app.io"))), None);
    }

    #[test]
    fn only_sane_trace_ids_are_echoed() {
        let mut h = HeaderMap::new();
        h.insert(
            HeaderName::from_static(TRACE_HEADER),
            HeaderValue::from_static("abc-123"),
        );
        assert_eq!(incoming_trace_id(&h).as_deref(), Some("abc-123"));
        h.insert(
            HeaderName::from_static(TRACE_HEADER),
            HeaderValue::from_static("has space"),
        );
        assert_eq!(incoming_trace_id(&h), None);
    }
}
