//! The baseline for the load benchmark (`benches/load/run.sh`): the smallest actix-web
//! server that answers `POST /function/add_numbers` the way `svc start` does — parse
//! `{"a":…,"b":…}`, add, and serialize the same JSON envelope — with no interpreter,
//! store, middleware or logging in the way. "Function endpoint ≥ 60% of bare" compares
//! `svc start` against this.
//!
//! Run: `cargo run --release --example bare_server -- --port 8001 [--host 127.0.0.1]
//! [--workers N]`. HTTP workers default to the available cores (actix's default, set
//! explicitly here); `--workers` is for experiments (e.g. 1, to match an app server that
//! runs fewer HTTP workers).

use actix_web::{App, HttpResponse, HttpServer, web};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Args {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Data {
    result: i64,
    reports: [(); 0],
}

#[derive(Serialize)]
struct Extra {
    http_status: u16,
}

#[derive(Serialize)]
struct Meta {
    extra: Extra,
}

/// Same shape and field order as the `svc start` envelope.
#[derive(Serialize)]
struct Envelope {
    ok: bool,
    #[serde(rename = "type")]
    kind: &'static str,
    data: Data,
    error: Option<()>,
    meta: Meta,
}

async fn add_numbers(body: web::Bytes) -> HttpResponse {
    let args: Args = match serde_json::from_slice(&body) {
        Ok(args) => args,
        Err(e) => return HttpResponse::UnprocessableEntity().body(e.to_string()),
    };
    let envelope = Envelope {
        ok: true,
        kind: "response",
        data: Data {
            result: args.a.wrapping_add(args.b),
            reports: [],
        },
        error: None,
        meta: Meta {
            extra: Extra { http_status: 200 },
        },
    };
    match serde_json::to_vec(&envelope) {
        Ok(json) => HttpResponse::Ok()
            .content_type("application/json")
            .body(json),
        Err(e) => HttpResponse::InternalServerError().body(e.to_string()),
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(r#"{"status":"ok"}"#)
}

fn parse_args() -> Result<(String, u16, usize), String> {
    let mut host = "127.0.0.1".to_owned();
    let mut port = 8001;
    let mut workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" | "-p" => port = value.parse().map_err(|e| format!("--port: {e}"))?,
            "--host" => host = value,
            "--workers" => {
                workers = value.parse().map_err(|e| format!("--workers: {e}"))?;
                workers = workers.max(1);
            }
            other => {
                return Err(format!(
                    "unknown argument {other}; usage: --port P [--host H] [--workers N]"
                ));
            }
        }
    }
    Ok((host, port, workers))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let (host, port, workers) = match parse_args() {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("bare_server: {message}");
            std::process::exit(2);
        }
    };
    eprintln!("bare_server: listening on http://{host}:{port} with {workers} workers");
    HttpServer::new(|| {
        App::new()
            .route("/function/add_numbers", web::post().to(add_numbers))
            .route("/healthz", web::get().to(healthz))
    })
    .workers(workers)
    .bind((host.as_str(), port))?
    .run()
    .await
}
