//! Graceful shutdown on SIGTERM/SIGINT: flip `/healthz/ready` to 503, close WebSocket
//! sessions with 1001 (a run in flight on one is cancelled), stop accepting,
//! let in-flight requests finish (actix `shutdown_timeout`), then wait for the runtime's
//! in-flight calls (a call whose client went away still commits) before exiting 0. A
//! second signal exits at once (130). A service-to-service provider started by a
//! consumer does the same when that consumer exits (`parent_gone`).

use super::AppState;
use actix_web::dev::ServerHandle;
use actix_web::web;
use actors::runtime::Runtime;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Seconds actix waits for open connections to finish after a stop signal.
pub const SHUTDOWN_TIMEOUT_SECS: u64 = 10;

/// Watch for SIGTERM and SIGINT; on the first, drain and stop the server.
pub fn spawn(handle: ServerHandle, state: web::Data<AppState>) {
    actix_web::rt::spawn(async move {
        let signal = tokio::select! {
            signal = wait_for_signal() => signal,
            () = parent_gone() => "the consumer that started this provider exited",
        };
        tracing::info!(signal, "shutting down: draining in-flight requests");
        state.draining.store(true, Ordering::Release);
        // A second signal means "now": skip the drain.
        actix_web::rt::spawn(async {
            let signal = wait_for_signal().await;
            tracing::warn!(signal, "second signal: exiting without draining");
            super::logging::flush();
            std::process::exit(130);
        });
        // WebSocket sessions never end by themselves: close them (1001) so the
        // graceful stop does not wait its whole timeout for them.
        state
            .ws
            .close_all(super::ws::session::CLOSE_GOING_AWAY, "server shutting down");
        handle.stop(true).await;
    });
}

/// Set by a consumer on the service-to-service providers it starts (`src/sv.rs`): their
/// stdin is a pipe the consumer holds, so its end (even by SIGKILL) is end-of-file here
/// and the provider shuts down instead of outliving it.
pub const WATCH_PARENT_ENV: &str = "SVC_SV_WATCH_PARENT";

/// Resolves when this process was started by a consumer that has since exited; never
/// otherwise.
async fn parent_gone() {
    if std::env::var_os(WATCH_PARENT_ENV).is_none() {
        return std::future::pending().await;
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("svc-parent-watch".into())
        .spawn(move || {
            use std::io::Read as _;
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            // Anything written is ignored; end-of-file or an error means the consumer is
            // gone.
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            let _ = tx.send(());
            // The drain gets its usual time; then the process ends whatever still waits
            // (with the consumer gone, its stdout and stderr pipes have no reader).
            std::thread::sleep(Duration::from_secs(SHUTDOWN_TIMEOUT_SECS + 5));
            super::logging::flush();
            std::process::exit(0);
        });
    if spawned.is_err() {
        return std::future::pending().await;
    }
    let _ = rx.await;
}

#[cfg(unix)]
async fn wait_for_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        },
        _ => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}

/// After the server stopped: wait (bounded) for calls still running in the pool.
pub async fn drain(runtime: &Runtime) {
    let deadline = Instant::now() + Duration::from_secs(SHUTDOWN_TIMEOUT_SECS);
    while runtime.in_flight() > 0 && Instant::now() < deadline {
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    let left = runtime.in_flight();
    if left > 0 {
        tracing::warn!(calls = left, "exiting with calls still running");
    }
}
