//! `--dev`: poll the app directory's `.svc` files every 500 ms; when one changes, reload
//! the app in the runtime and swap the route table. A failed reload is logged and the
//! old app keeps serving.

use super::AppState;
use super::hooks;
use super::routes::RouteTable;
use actix_web::web;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const POLL: Duration = Duration::from_millis(500);
/// How deep below the app directory `.svc` files are watched.
const MAX_DEPTH: usize = 4;

/// Start watching `dir`.
pub fn spawn(dir: PathBuf, state: web::Data<AppState>) {
    actix_web::rt::spawn(async move {
        let mut seen = fingerprint(&dir);
        loop {
            actix_web::rt::time::sleep(POLL).await;
            let now = fingerprint(&dir);
            if now == seen {
                continue;
            }
            seen = now;
            reload(&state).await;
        }
    });
}

async fn reload(state: &AppState) {
    match state.runtime.reload().await {
        Ok(loaded) => {
            let hooks = hooks::probe(&state.runtime).await;
            let (table, warnings) = RouteTable::build(&loaded.endpoints, hooks);
            for w in &warnings {
                tracing::warn!("{w}");
            }
            let routes = table.routes().count();
            state.swap_table(table);
            rewire_subscriptions(state, &loaded.subscriptions).await;
            if !loaded.load_output.is_empty() {
                super::say(&loaded.load_output);
            }
            tracing::info!(routes, "reloaded the app");
        }
        Err(text) => {
            tracing::error!(
                "reload failed; still serving the previous version:\n{}",
                text.trim_end()
            );
        }
    }
}

/// Restart the consumer-group actors when the reload changed the `@subscribe` set (a
/// changed handler body needs nothing: deliveries run the current program by name).
async fn rewire_subscriptions(state: &AppState, now: &[lang::serve::SubscriptionInfo]) {
    let old = {
        let Ok(mut current) = state.consumers.lock() else {
            return;
        };
        if current.subscriptions == now {
            return;
        }
        current.subscriptions = now.to_vec();
        current.consumers.take()
    };
    if let Some(old) = old {
        // Joining blocks: off the HTTP worker.
        let _ = actix_web::rt::task::spawn_blocking(move || {
            old.stop_and_join(Duration::from_secs(super::shutdown::SHUTDOWN_TIMEOUT_SECS));
        })
        .await;
    }
    let started = super::start_consumers(state.events.as_ref(), &state.runtime, now);
    if let Ok(mut current) = state.consumers.lock() {
        current.consumers = started;
    }
    tracing::info!(
        subscriptions = now.len(),
        "reload rewired the @subscribe handlers"
    );
}

/// Names, sizes and modification times of the `.svc` files under `dir`, sorted.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut out = Vec::new();
    collect(dir, 0, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, u64, Option<SystemTime>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_dir() {
            if !hidden && depth < MAX_DEPTH {
                collect(&path, depth + 1, out);
            }
        } else if path.extension().is_some_and(|e| e == "svc") {
            out.push((path, meta.len(), meta.modified().ok()));
        }
    }
}
