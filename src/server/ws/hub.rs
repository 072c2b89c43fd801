//! The hub actor: one per broadcasting WebSocket walker, on the registry's home arbiter.
//! It knows the walker's sessions (`Join`/`Leave`) and fans every reply out to them
//! (`Publish` from a local session, `RemoteBroadcast` from the Redis bridge). Delivery is
//! a `Deliver` message into each session's mailbox; the session puts it in its bounded
//! outbox, so a slow client never holds the hub up.

use super::bridge;
use super::messages::{Deliver, Join, Leave, Publish, RemoteBroadcast};
use actix::{Actor, Context, Handler, Recipient};
use bytestring::ByteString;
use std::collections::HashMap;

struct Member {
    to: Recipient<Deliver>,
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
    /// `Join` sent by the upgrade handler).
    fn deliver(&mut self, frame: &ByteString, private: bool) {
        self.members.retain(|_, m| m.to.connected());
        let mut sent = 0;
        for m in self.members.values() {
            if private && !m.authenticated {
                continue;
            }
            m.to.do_send(Deliver(frame.clone()));
            sent += 1;
        }
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
