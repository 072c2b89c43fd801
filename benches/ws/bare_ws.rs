//! The baseline for the WebSocket benchmark (`benches/ws/run.sh`): the stock actix-web
//! WebSocket server (`actix-ws`, as its documentation shows it) answering the two routes
//! of `benches/ws/app.svc` with the frames `svc start` sends — no interpreter, store,
//! session actor, outbox bound or logging in the way. `run.sh` measures it first and
//! prints its numbers beside svc's.
//!
//! - `GET /ws/echo`: a text frame `{"text": T}` is answered
//!   `{"ok":true,"data":{"result":null,"reports":[T]}}`; `{"type":"ping"}` is answered
//!   `{"type":"pong"}`.
//! - `GET /ws/shout`: the same reply goes to every open `/ws/shout` session (the
//!   sender's included), each through its own `actix_ws::Session`; the hub's lock is held
//!   for a whole broadcast, so every session sees the broadcasts in one order (as the
//!   client's bookkeeping and svc's hub actor both assume).
//!
//! Run: `cargo run --release --example bare_ws -- --port 8002 [--host 127.0.0.1]
//! [--workers N]` (HTTP workers default to the available cores, as actix's default).

use std::sync::Arc;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Frame {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

#[derive(Serialize)]
struct Data<'a> {
    result: (),
    reports: [&'a str; 1],
}

/// Same shape and field order as `svc start`'s WebSocket reply.
#[derive(Serialize)]
struct Reply<'a> {
    ok: bool,
    data: Data<'a>,
}

const PONG: &str = r#"{"type":"pong"}"#;

/// The reply to one client frame, or None for a frame the app would refuse.
fn reply_to(text: &str) -> Option<String> {
    let frame: Frame = serde_json::from_str(text).ok()?;
    if frame.kind.as_deref() == Some("ping") {
        return Some(PONG.to_string());
    }
    let reply = Reply {
        ok: true,
        data: Data {
            result: (),
            reports: [frame.text.as_deref()?],
        },
    };
    serde_json::to_string(&reply).ok()
}

/// The open `/ws/shout` sessions, by id.
#[derive(Default)]
struct Hub {
    next: u64,
    sessions: Vec<(u64, actix_ws::Session)>,
}

type SharedHub = Arc<tokio::sync::Mutex<Hub>>;

async fn serve(
    req: HttpRequest,
    body: web::Payload,
    hub: Option<SharedHub>,
) -> actix_web::Result<HttpResponse> {
    let (response, mut session, mut stream) = actix_ws::handle(&req, body)?;
    let mut id = None;
    if let Some(hub) = &hub {
        let mut hub = hub.lock().await;
        hub.next += 1;
        id = Some(hub.next);
        let next = hub.next;
        hub.sessions.push((next, session.clone()));
    }
    actix_web::rt::spawn(async move {
        while let Some(Ok(msg)) = stream.next().await {
            match msg {
                actix_ws::Message::Text(text) => {
                    let Some(reply) = reply_to(&text) else {
                        break;
                    };
                    match (&hub, reply.as_str()) {
                        (Some(hub), r) if r != PONG => {
                            let mut hub = hub.lock().await;
                            for (_, target) in &mut hub.sessions {
                                let _ = target.text(reply.clone()).await;
                            }
                        }
                        _ => {
                            if session.text(reply).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                actix_ws::Message::Ping(bytes) if session.pong(&bytes).await.is_err() => break,
                actix_ws::Message::Close(_) => break,
                _ => {}
            }
        }
        if let (Some(hub), Some(id)) = (&hub, id) {
            hub.lock().await.sessions.retain(|(i, _)| *i != id);
        }
        let _ = session.close(None).await;
    });
    Ok(response)
}

async fn echo(req: HttpRequest, body: web::Payload) -> actix_web::Result<HttpResponse> {
    serve(req, body, None).await
}

async fn shout(
    req: HttpRequest,
    body: web::Payload,
    hub: web::Data<SharedHub>,
) -> actix_web::Result<HttpResponse> {
    serve(req, body, Some(hub.get_ref().clone())).await
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().body("ok")
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let mut host = "127.0.0.1".to_string();
    let mut port: u16 = 8002;
    let mut workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--host" => host = value,
            "--port" => port = value.parse().unwrap_or(port),
            "--workers" => workers = value.parse().unwrap_or(workers),
            other => eprintln!("bare_ws: ignoring unknown flag {other}"),
        }
    }
    eprintln!("bare_ws: listening on ws://{host}:{port} with {workers} workers");
    let hub: SharedHub = Arc::default();
    HttpServer::new(move || {
        App::new()
            .app_data(web::Data::new(hub.clone()))
            .route("/healthz", web::get().to(healthz))
            .route("/ws/echo", web::get().to(echo))
            .route("/ws/shout", web::get().to(shout))
    })
    // As `svc start` does: actix-web 4.18 leaves Nagle's algorithm on unless told.
    .tcp_nodelay(true)
    .workers(workers)
    .bind((host.as_str(), port))?
    .run()
    .await
}
