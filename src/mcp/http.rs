//! The two HTTP transports, on actix-web: SSE (`GET /sse` + `POST /messages/`, ours,
//! behind the JSON-RPC gate) and streamable HTTP (`POST /mcp`, rmcp's through
//! rmcp-actix-web, with the gate's envelope checks in front).

use super::gate::{self, Gate, Verdict};
use super::handler::Handler;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Comment lines keep an idle SSE stream (and proxies) alive.
const SSE_KEEPALIVE: Duration = Duration::from_secs(15);
/// At most this many SSE sessions at once; more get HTTP 503.
const MAX_SSE_SESSIONS: usize = 256;

type Sessions = Arc<Mutex<HashMap<String, Arc<Gate>>>>;

fn lock(s: &Sessions) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Gate>>> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the session when its event stream goes away (the client disconnected).
struct SessionGuard {
    id: String,
    sessions: Sessions,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        lock(&self.sessions).remove(&self.id);
    }
}

async fn sse_open(
    req: HttpRequest,
    handler: web::Data<Handler>,
    sessions: web::Data<Sessions>,
) -> HttpResponse {
    let sessions: Sessions = sessions.get_ref().clone();
    if lock(&sessions).len() >= MAX_SSE_SESSIONS {
        return HttpResponse::ServiceUnavailable()
            .json(json!({"error": "too many open SSE sessions"}));
    }
    let id = actors::identity::new_user_id().replace('-', "");
    let (out_tx, out_rx) = mpsc::unbounded_channel::<String>();
    let gate = Gate::start(handler.get_ref().clone(), out_tx);
    lock(&sessions).insert(id.clone(), gate);
    // The endpoint event names where to POST, relative to this server (the client
    // resolves it against the URL it opened).
    let prefix = req.path().trim_end_matches("/sse").to_string();
    let first = format!("event: endpoint\ndata: {prefix}/messages/?session_id={id}\n\n");
    let guard = SessionGuard { id, sessions };
    let stream = futures_util::stream::unfold(
        (Some(first), out_rx, guard),
        |(first, mut rx, guard)| async move {
            if let Some(f) = first {
                return Some((
                    Ok::<Bytes, actix_web::Error>(Bytes::from(f)),
                    (None, rx, guard),
                ));
            }
            match tokio::time::timeout(SSE_KEEPALIVE, rx.recv()).await {
                Ok(Some(msg)) => {
                    let chunk = format!("event: message\ndata: {msg}\n\n");
                    Some((Ok(Bytes::from(chunk)), (None, rx, guard)))
                }
                Ok(None) => None,
                Err(_) => Some((
                    Ok(Bytes::from_static(b": keepalive\n\n")),
                    (None, rx, guard),
                )),
            }
        },
    );
    HttpResponse::Ok()
        .insert_header(("Content-Type", "text/event-stream"))
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(stream)
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    session_id: Option<String>,
}

async fn sse_message(
    query: web::Query<SessionQuery>,
    body: Bytes,
    sessions: web::Data<Sessions>,
) -> HttpResponse {
    let Some(id) = query.session_id.as_deref().filter(|s| !s.is_empty()) else {
        return HttpResponse::BadRequest()
            .json(json!({"error": "missing session_id query parameter"}));
    };
    let Some(gate) = lock(sessions.get_ref()).get(id).cloned() else {
        return HttpResponse::NotFound().json(json!({"error": "unknown or closed session"}));
    };
    let text = String::from_utf8_lossy(&body);
    if serde_json::from_str::<Json>(&text).is_err() {
        return HttpResponse::BadRequest().json(gate::error(
            Json::Null,
            gate::PARSE_ERROR,
            "Parse error: the body is not JSON",
        ));
    }
    gate.submit(&text);
    HttpResponse::Accepted().body("Accepted")
}

/// The envelope checks of the gate in front of rmcp's streamable HTTP service: a body
/// that is not JSON, a malformed message, a batch (streamable HTTP takes one message
/// per POST) or missing parameters are answered here with the JSON-RPC error.
async fn precheck(
    mut req: ServiceRequest,
    next: Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    if req.method() == actix_web::http::Method::DELETE {
        // rmcp answers a session's DELETE with 202; the session is gone at once, so say
        // 200 as clients of the protocol expect.
        let mut res = next.call(req).await?.map_into_boxed_body();
        if res.status() == actix_web::http::StatusCode::ACCEPTED {
            *res.response_mut().status_mut() = actix_web::http::StatusCode::OK;
        }
        return Ok(res);
    }
    if req.method() != actix_web::http::Method::POST {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let body = req.extract::<Bytes>().await?;
    let reply = |status: actix_web::http::StatusCode, v: Json, req: ServiceRequest| {
        let (r, _) = req.into_parts();
        Ok(ServiceResponse::new(r, HttpResponse::build(status).json(v)))
    };
    let value: Json = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return reply(
                actix_web::http::StatusCode::BAD_REQUEST,
                gate::error(Json::Null, gate::PARSE_ERROR, &format!("Parse error: {e}")),
                req,
            );
        }
    };
    if value.is_array() {
        return reply(
            actix_web::http::StatusCode::BAD_REQUEST,
            gate::error(
                Json::Null,
                gate::INVALID_REQUEST,
                "Invalid Request: batches are not accepted on streamable HTTP; POST one message at a time (the stdio and sse transports take batches)",
            ),
            req,
        );
    }
    match gate::classify(&value) {
        Verdict::Reply(r) => {
            let status = if r.get("id").is_some_and(|i| !i.is_null()) {
                actix_web::http::StatusCode::OK
            } else {
                actix_web::http::StatusCode::BAD_REQUEST
            };
            reply(status, r, req)
        }
        Verdict::Drop => {
            let (r, _) = req.into_parts();
            Ok(ServiceResponse::new(r, HttpResponse::Accepted().finish()))
        }
        Verdict::Forward(_) => {
            req.set_payload(actix_web::dev::Payload::from(body));
            next.call(req)
                .await
                .map(ServiceResponse::map_into_boxed_body)
        }
    }
}

fn wildcard(host: &str) -> bool {
    matches!(host, "0.0.0.0" | "::" | "[::]")
}

/// Serve SSE or streamable HTTP on `host:port` until interrupted.
pub fn serve(handler: Handler, sse: bool, host: &str, port: u16) -> anyhow::Result<()> {
    let bind = (
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    );
    let host = host.to_string();
    let which = if sse {
        "sse (GET /sse, POST /messages/)"
    } else {
        "streamable-http (POST /mcp)"
    };
    let announce = |bind: &(String, u16)| {
        eprintln!("svc mcp: serving {which} on http://{}:{}", bind.0, bind.1)
    };
    actix_web::rt::System::new().block_on(async move {
        if sse {
            let sessions: Sessions = Arc::default();
            let handler = web::Data::new(handler);
            let sessions = web::Data::new(sessions);
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(handler.clone())
                    .app_data(sessions.clone())
                    .app_data(web::PayloadConfig::new(gate::MAX_MESSAGE_BYTES))
                    .route("/sse", web::get().to(sse_open))
                    .route("/messages/", web::post().to(sse_message))
                    .route("/messages", web::post().to(sse_message))
            })
            .workers(2)
            .bind(bind.clone())?;
            announce(&bind);
            server.run().await?;
        } else {
            let allowed: Vec<String> = if wildcard(&host) {
                Vec::new() // any Host header (a wildcard bind is reachable by any name)
            } else {
                let mut v = vec![
                    host.clone(),
                    "localhost".into(),
                    "127.0.0.1".into(),
                    "::1".into(),
                ];
                v.dedup();
                v
            };
            let service = rmcp_actix_web::transport::StreamableHttpService::builder()
                .service_factory(Arc::new(move || Ok(handler.clone())))
                .session_manager(Arc::new(
                    rmcp_actix_web::transport::LocalSessionManager::default(),
                ))
                .stateful_mode(true)
                .allowed_hosts(allowed)
                .max_request_body_bytes(gate::MAX_MESSAGE_BYTES)
                .build();
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(web::PayloadConfig::new(gate::MAX_MESSAGE_BYTES))
                    .service(
                        service
                            .clone()
                            .scope_with_path("/mcp")
                            .wrap(actix_web::middleware::from_fn(precheck)),
                    )
            })
            .workers(2)
            .bind(bind.clone())?;
            announce(&bind);
            server.run().await?;
        }
        Ok(())
    })
}
