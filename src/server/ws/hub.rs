//! The hub actor: one per broadcasting WebSocket walker, on the registry's home arbiter.
//! It knows the walker's sessions (`Join`/`Leave`) and fans every reply out to them
//! (`Publish` from a local session, `RemoteBroadcast` from the Redis bridge). Delivery is
//! a `try_send` of the one encoded frame (a shared `ByteString`, never re-encoded per
//! session) straight into each session's bounded outbox, so a slow client never holds
//! the hub up: a full outbox gets the session `CloseSession` 1013 and the member is
//! dropped (the frame does not pass through the session actor's mailbox: one wake-up per
//! delivery, the writer's, instead of two).

use super::bridge;
use super::messages::{CloseSession, Deliver, Join, Leave, Publish, RemoteBroadcast};
use super::session::{CLOSE_TRY_AGAIN, Outbox, Refused, SLOW_CLIENT_REASON};
use actix::{Actor, Context, Handler, Recipient};
use bytestring::ByteString;
use std::collections::HashMap;

struct Member {
    /// The session's mailbox: alive while the session actor runs (broadcast frames go
    /// through `outbox`, not through `Deliver`).
    to: Recipient<Deliver>,
    close: Recipient<CloseSession>,
    outbox: Outbox,
    authenticated: bool,
}

pub struct Hub {
    walker: String,
    members: HashMap<u64, Member>,
    bridge: Option<bridge::Handle>,
}

impl Hub {
    pub fn new(walker: String, bridge: Option<bridge::Handle>) -> Hub {
        Hub {
            walker,
            members: HashMap::new(),
            bridge,
        }
    }

    /// Every member gets the frame once; a private walker's anonymous members none. A
    /// member whose session has stopped is dropped here (its `Leave` can overtake the
    /// `Join` sent by the upgrade handler), and so is one whose outbox is full: it is
    /// told to close with 1013 and receives nothing more.
    fn deliver(&mut self, frame: &ByteString, private: bool) {
        let mut sent = 0;
        let walker = &self.walker;
        self.members.retain(|id, m| {
            if !m.to.connected() {
                return false;
            }
            if private && !m.authenticated {
                return !m.outbox.is_closed();
            }
            match m.outbox.offer(frame.clone()) {
                Ok(()) => {
                    sent += 1;
                    true
                }
                Err(Refused::Closed) => false,
                Err(Refused::Full) => {
                    tracing::info!(
                        target: "svc::ws",
                        session = *id,
                        walker = %walker,
                        "closing a session whose client does not read: its outbox is full"
                    );
                    m.close.do_send(CloseSession {
                        code: CLOSE_TRY_AGAIN,
                        reason: SLOW_CLIENT_REASON.to_string(),
                    });
                    false
                }
            }
        });
        crate::metrics::global().ws_messages(&self.walker, "out", sent);
    }
}

impl Actor for Hub {
    type Context = Context<Self>;
}

impl Handler<Join> for Hub {
    type Result = ();

    fn handle(&mut self, msg: Join, _: &mut Context<Self>) {
        self.members.insert(
            msg.session,
            Member {
                to: msg.to,
                close: msg.close,
                outbox: msg.outbox,
                authenticated: msg.authenticated,
            },
        );
        tracing::debug!(
            target: "svc::ws",
            walker = %self.walker,
            members = self.members.len(),
            "session joined the hub"
        );
    }
}

impl Handler<Leave> for Hub {
    type Result = ();

    fn handle(&mut self, msg: Leave, _: &mut Context<Self>) {
        if self.members.remove(&msg.session).is_some() {
            tracing::debug!(
                target: "svc::ws",
                walker = %self.walker,
                members = self.members.len(),
                "session left the hub"
            );
        }
    }
}

impl Handler<Publish> for Hub {
    type Result = ();

    fn handle(&mut self, msg: Publish, _: &mut Context<Self>) {
        self.deliver(&msg.frame, msg.private);
        if let Some(bridge) = &self.bridge {
            bridge.publish(&self.walker, msg.private, &msg.frame);
        }
    }
}

impl Handler<RemoteBroadcast> for Hub {
    type Result = ();

    fn handle(&mut self, msg: RemoteBroadcast, _: &mut Context<Self>) {
        self.deliver(&msg.frame, msg.private);
    }
}
