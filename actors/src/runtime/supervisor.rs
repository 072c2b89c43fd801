//! `StoreSupervisor`: the actor that owns the graph tier for the server (the embedded
//! file or the document database). It holds the connection opened at start (schema and
//! shared root created then), probes it on a timer and on demand, and restarts
//! (re-connects) when a probe fails.
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
use crate::docstore::Archetypes;
use crate::tier::{AnchorStore, StoreTarget};
use actix::{Actor, ActorContext as _, AsyncContext as _, Context, Handler, Supervised};
use lang::host::{AnchorId, format_id};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The run workers' store connections, as leases the supervisor can revoke.
#[derive(Debug)]
pub(crate) struct StoreLeases {
    target: StoreTarget,
    /// The app's archetypes (updated when a reload changes them).
    archetypes: std::sync::Mutex<Archetypes>,
    generation: AtomicU64,
    /// The embedded tier's process-wide L1 cache and group commit (`crate::l1`), shared
    /// by every connection leased here; `None` on the document tier.
    shared: Option<Arc<crate::l1::EmbeddedShared>>,
    /// The embedded tier's checkpointer (`crate::checkpoint`), stopped when the leases
    /// are dropped; `None` on the document tier or when its thread could not start.
    _checkpointer: Option<crate::checkpoint::Checkpointer>,
}

impl StoreLeases {
    pub(crate) fn new(
        target: StoreTarget,
        archetypes: Archetypes,
        tuning: crate::l1::EmbeddedTuning,
    ) -> StoreLeases {
        let (shared, checkpointer) = match &target {
            StoreTarget::Embedded(path) => {
                let shared = Arc::new(crate::l1::EmbeddedShared::new(tuning));
                let checkpointer = match crate::checkpoint::Checkpointer::start(
                    path.clone(),
                    &shared,
                ) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::warn!(error = %e, "no checkpointer thread; SQLite checkpoints inside commits");
                        None
                    }
                };
                (Some(shared), checkpointer)
            }
            StoreTarget::Document(_) => (None, None),
        };
        StoreLeases {
            target,
            archetypes: std::sync::Mutex::new(archetypes),
            generation: AtomicU64::new(0),
            shared,
            _checkpointer: checkpointer,
        }
    }

    /// The embedded tier's shared cache and group commit, if this is the embedded tier.
    pub(crate) fn shared(&self) -> Option<&Arc<crate::l1::EmbeddedShared>> {
        self.shared.as_ref()
    }

    /// Open a connection under the current lease; returns it with its generation.
    pub(crate) fn open(&self) -> Result<(AnchorStore, u64), String> {
        let generation = self.current();
        let mut store = open_store(&self.target)?;
        if let (AnchorStore::Embedded(s), Some(shared)) = (&mut store, &self.shared) {
            s.set_shared(Arc::clone(shared))
                .map_err(|e| format!("cannot open the {}: {e}", self.target.describe()))?;
        }
        store.set_archetypes(self.archetypes());
        Ok((store, generation))
    }

    pub(crate) fn archetypes(&self) -> Archetypes {
        self.archetypes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A reloaded app declares `names`: connections opened from now on check those.
    pub(crate) fn set_archetypes(&self, archetypes: Archetypes) {
        // Cached anchors were read under the old declarations.
        if let Some(shared) = &self.shared {
            shared.clear();
        }
        *self
            .archetypes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = archetypes;
    }

    /// The generation a connection must have to be used (one atomic load).
    pub(crate) fn current(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Revoke every lease (the supervisor restarted).
    fn revoke_all(&self) {
        if let Some(shared) = &self.shared {
            shared.clear();
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

fn open_store(target: &StoreTarget) -> Result<AnchorStore, String> {
    AnchorStore::open(target).map_err(|e| format!("cannot open the {}: {e}", target.describe()))
}

/// How often the supervisor probes the store unprompted.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// Owns the store file; see the module docs.
pub struct StoreSupervisor {
    target: StoreTarget,
    root: AnchorId,
    store: Option<AnchorStore>,
    restarts: u32,
    leases: Arc<StoreLeases>,
}

impl StoreSupervisor {
    /// A supervisor over an already opened store (its root is the shared root), owning
    /// the workers' `leases`.
    pub(crate) fn new(store: AnchorStore, leases: Arc<StoreLeases>) -> StoreSupervisor {
        StoreSupervisor {
            target: leases.target.clone(),
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
            None => open_store(&self.target)?,
        };
        store.check_health().map_err(|e| e.to_string())?;
        if store.root_id() != self.root {
            return Err(format!(
                "the {} now has root {}, not {}",
                self.target.describe(),
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
            tracing::warn!(store = %self.target.describe(), "store probe failed, restarting: {e}");
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
        match open_store(&self.target) {
            Ok(store) => self.store = Some(store),
            Err(e) => {
                tracing::error!(store = %self.target.describe(), "cannot re-open store: {e}");
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
        tracing::warn!(store = %self.target.describe(), reason = %msg.reason, "restarting the store tier");
        ctx.stop();
    }
}

impl Handler<ReportStoreFailure> for StoreSupervisor {
    type Result = ();

    fn handle(&mut self, msg: ReportStoreFailure, ctx: &mut Context<Self>) {
        tracing::warn!(store = %self.target.describe(), "a run worker hit a store error: {}", msg.error);
        let _ = self.probe_or_restart(ctx);
    }
}
