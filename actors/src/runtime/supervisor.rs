//! `StoreSupervisor`: the actor that owns the embedded store tier for the server. It
//! holds the connection opened at start (schema and shared root created then), probes
//! it on a timer and on demand, and restarts (re-opens the file) when a probe fails.
//! It runs on its own arbiter, so a slow probe never blocks an HTTP worker.
//!
//! It also owns the connections the run workers use, through `StoreLeases`: a worker's
//! connection is a lease of the current generation; a restart revokes every lease, so
//! each worker re-opens before its next call, and a call still running on a revoked
//! connection does not commit (it fails with the retryable `Unavailable`, 503 +
//! `Retry-After`). A connection is used on its worker's thread (SQLite connections are
//! not shared between threads), so the supervisor holds the right to use it, not the
//! handle itself.

use super::messages::{CheckStore, ReportStoreFailure, RestartStore, StoreHealth};
use crate::store::SqliteStore;
use actix::{Actor, ActorContext as _, AsyncContext as _, Context, Handler, Supervised};
use lang::host::{AnchorId, format_id};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The run workers' store connections, as leases the supervisor can revoke.
#[derive(Debug)]
pub(crate) struct StoreLeases {
    path: PathBuf,
    generation: AtomicU64,
}

impl StoreLeases {
    pub(crate) fn new(path: PathBuf) -> StoreLeases {
        StoreLeases {
            path,
            generation: AtomicU64::new(0),
        }
    }

    /// Open a connection under the current lease; returns it with its generation.
    pub(crate) fn open(&self) -> Result<(SqliteStore, u64), String> {
        let generation = self.current();
        let store = SqliteStore::open(&self.path)
            .map_err(|e| format!("cannot open store {}: {e}", self.path.display()))?;
        Ok((store, generation))
    }

    /// The generation a connection must have to be used (one atomic load).
    pub(crate) fn current(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Revoke every lease (the supervisor restarted).
    fn revoke_all(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// How often the supervisor probes the store unprompted.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// Owns the store file; see the module docs.
pub struct StoreSupervisor {
    path: PathBuf,
    root: AnchorId,
    store: Option<SqliteStore>,
    restarts: u32,
    leases: Arc<StoreLeases>,
}

impl StoreSupervisor {
    /// A supervisor over an already opened store (its root is the shared root), owning
    /// the workers' `leases`.
    pub(crate) fn new(store: SqliteStore, leases: Arc<StoreLeases>) -> StoreSupervisor {
        StoreSupervisor {
            path: store.path().to_path_buf(),
            root: store.root_id(),
            store: Some(store),
            restarts: 0,
            leases,
        }
    }

    /// Probe the connection, re-opening it first if it is gone.
    fn probe(&mut self) -> Result<StoreHealth, String> {
        let store = match self.store.take() {
            Some(store) => store,
            None => SqliteStore::open(&self.path)
                .map_err(|e| format!("cannot open store {}: {e}", self.path.display()))?,
        };
        store.check_health().map_err(|e| e.to_string())?;
        if store.root_id() != self.root {
            return Err(format!(
                "store {} now has root {}, not {}",
                self.path.display(),
                format_id(store.root_id()),
                format_id(self.root)
            ));
        }
        self.store = Some(store);
        Ok(StoreHealth {
            shared_root: self.root,
            restarts: self.restarts,
        })
    }

    /// Probe; on failure log and stop, which makes the `Supervisor` restart the actor.
    fn probe_or_restart(&mut self, ctx: &mut Context<Self>) -> Result<StoreHealth, String> {
        let health = self.probe();
        if let Err(e) = &health {
            tracing::warn!(store = %self.path.display(), "store probe failed, restarting: {e}");
            ctx.stop();
        }
        health
    }
}

impl Actor for StoreSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(PROBE_EVERY, |act, ctx| {
            let _ = act.probe_or_restart(ctx);
        });
    }
}

impl Supervised for StoreSupervisor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.restarts += 1;
        self.store = None;
        self.leases.revoke_all();
        match SqliteStore::open(&self.path) {
            Ok(store) => self.store = Some(store),
            Err(e) => {
                tracing::error!(store = %self.path.display(), "cannot re-open store: {e}");
            }
        }
    }
}

impl Handler<CheckStore> for StoreSupervisor {
    type Result = Result<StoreHealth, String>;

    fn handle(&mut self, _msg: CheckStore, ctx: &mut Context<Self>) -> Self::Result {
        self.probe_or_restart(ctx)
    }
}

impl Handler<RestartStore> for StoreSupervisor {
    type Result = ();

    fn handle(&mut self, msg: RestartStore, ctx: &mut Context<Self>) {
        tracing::warn!(store = %self.path.display(), reason = %msg.reason, "restarting the store tier");
        ctx.stop();
    }
}

impl Handler<ReportStoreFailure> for StoreSupervisor {
    type Result = ();

    fn handle(&mut self, msg: ReportStoreFailure, ctx: &mut Context<Self>) {
        tracing::warn!(store = %self.path.display(), "a run worker hit a store error: {}", msg.error);
        let _ = self.probe_or_restart(ctx);
    }
}
