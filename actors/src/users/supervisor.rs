//! `UserStoreSupervisor`: the actor that owns the user store's connection (actix
//! `Supervised`, on its own arbiter, so SQLite work never runs on an HTTP worker or on the
//! identity actor's thread). Every read and write of users comes as a [`WithUsers`]
//! message and runs here, one at a time (what the mutex of the HTTP crate used to do).
//!
//! Restart: an operation that fails with a SQLite error makes the actor probe the
//! connection; if the probe fails too, that caller gets [`UserError::Restarting`] (the
//! HTTP face is a retryable 503) and the actor stops, which makes its `Supervisor`
//! re-open the file; messages already queued are served after the restart. A timer and
//! [`CheckUsers`] (`/healthz/ready`) probe too.

use super::{UserError, UserStore, UserTarget};
use actix::{Actor, ActorContext as _, AsyncContext as _, Context, Handler, Message, Supervised};
use std::time::Duration;

/// How often the supervisor probes the store unprompted.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// Run `op` on the user store (on the supervisor's thread) and answer its result.
pub struct WithUsers<T> {
    op: Box<dyn FnOnce(&mut UserStore) -> Result<T, UserError> + Send>,
}

impl<T> WithUsers<T> {
    pub fn new(
        op: impl FnOnce(&mut UserStore) -> Result<T, UserError> + Send + 'static,
    ) -> WithUsers<T> {
        WithUsers { op: Box::new(op) }
    }
}

impl<T: 'static> Message for WithUsers<T> {
    type Result = Result<T, UserError>;
}

/// Probe the connection (re-opening it when gone); `Err` tells why it is unusable.
#[derive(Message)]
#[rtype(result = "Result<(), String>")]
pub struct CheckUsers;

/// Owns the user store; see the module docs.
pub struct UserStoreSupervisor {
    target: UserTarget,
    store: Option<UserStore>,
    restarts: u32,
}

impl UserStoreSupervisor {
    /// A supervisor over an already opened store (system accounts created).
    pub fn new(target: UserTarget, store: UserStore) -> UserStoreSupervisor {
        UserStoreSupervisor {
            target,
            store: Some(store),
            restarts: 0,
        }
    }

    /// The connection, re-opened first if it is gone.
    fn store(&mut self) -> Result<&mut UserStore, UserError> {
        if self.store.is_none() {
            match UserStore::open_target(&self.target) {
                Ok(store) => self.store = Some(store),
                Err(e) => {
                    tracing::error!(store = %self.target.describe(), "cannot re-open the user store: {e}");
                    return Err(UserError::Restarting);
                }
            }
        }
        self.store.as_mut().ok_or(UserError::Restarting)
    }

    fn probe(&mut self) -> Result<(), String> {
        self.store()
            .and_then(|s| s.check_health())
            .map_err(|e| format!("user store {}: {e}", self.target.describe()))
    }

    /// Probe; on failure log and stop, which makes the `Supervisor` restart the actor.
    fn probe_or_restart(&mut self, ctx: &mut Context<Self>) -> Result<(), String> {
        let health = self.probe();
        if let Err(e) = &health {
            tracing::warn!("user store probe failed, restarting: {e}");
            self.store = None;
            ctx.stop();
        }
        health
    }
}

impl Actor for UserStoreSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(PROBE_EVERY, |act, ctx| {
            let _ = act.probe_or_restart(ctx);
        });
    }
}

impl Supervised for UserStoreSupervisor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.restarts += 1;
        tracing::info!(restarts = self.restarts, store = %self.target.describe(), "user store restarting");
        self.store = None;
        // Re-opened now, or by the next message.
        let _ = self.store();
    }
}

impl<T: 'static> Handler<WithUsers<T>> for UserStoreSupervisor {
    type Result = Result<T, UserError>;

    fn handle(&mut self, msg: WithUsers<T>, ctx: &mut Context<Self>) -> Self::Result {
        let result = (msg.op)(self.store()?);
        if let Err(e @ (UserError::Sqlite(_) | UserError::Doc(_))) = &result
            && self.probe_or_restart(ctx).is_err()
        {
            tracing::warn!(error = %e, "a user store operation failed with the connection");
            return Err(UserError::Restarting);
        }
        result
    }
}

/// Tests: lose the connection, as when the file went away.
#[cfg(test)]
#[derive(Message)]
#[rtype(result = "()")]
pub struct DropConnection;

#[cfg(test)]
impl Handler<DropConnection> for UserStoreSupervisor {
    type Result = ();

    fn handle(&mut self, _msg: DropConnection, _ctx: &mut Context<Self>) {
        self.store = None;
    }
}

impl Handler<CheckUsers> for UserStoreSupervisor {
    type Result = Result<(), String>;

    fn handle(&mut self, _msg: CheckUsers, ctx: &mut Context<Self>) -> Self::Result {
        self.probe_or_restart(ctx)
    }
}
