//! Typed messages of the WebSocket actors, named as commands: what a session actor
//! (`session::WsSession`) and a hub actor (`hub::Hub`) accept from each other, from the
//! Redis bridge and from shutdown.

use actix::{Message, Recipient};
use bytestring::ByteString;

/// Session ← hub: write this broadcast frame to the client (through the bounded outbox).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct Deliver(pub ByteString);

/// Session ← shutdown (or anyone): close the socket with this code and reason.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct CloseSession {
    pub code: u16,
    pub reason: String,
}

/// Session ← itself, on a timer: send the protocol ping when due, close an idle session
/// or a private one still waiting for its token.
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "()")]
pub struct Tick;

/// Hub ← session: deliver this walker's broadcasts to the session from now on. Sent
/// again when the session authenticates (`authenticated` changes); the newest entry wins.
/// The hub writes broadcast frames straight into `outbox` (the session's bounded
/// outbox); `to` is the session's `Deliver` mailbox (the same delivery, one hop longer,
/// for senders without the outbox) and `close` is where the hub sends `CloseSession`
/// (1013) when the outbox is full.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct Join {
    pub session: u64,
    pub to: Recipient<Deliver>,
    pub close: Recipient<CloseSession>,
    pub outbox: super::session::Outbox,
    pub authenticated: bool,
}

/// Hub ← session (when it stops): forget it.
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "()")]
pub struct Leave {
    pub session: u64,
}

/// Hub ← session: a reply of this walker, caused here; deliver it to every session of
/// the walker (the sender included, once) and hand it to the Redis bridge, if any.
/// `private`: deliver to authenticated sessions only.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct Publish {
    pub frame: ByteString,
    pub private: bool,
}

/// Hub ← Redis bridge: a reply another replica caused; deliver it here only.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct RemoteBroadcast {
    pub frame: ByteString,
    pub private: bool,
}
