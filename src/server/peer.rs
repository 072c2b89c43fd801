//! Noticing that an HTTP/1 client went away while its call runs.
//!
//! actix-web does not read from a connection while its handler is pending, so a client
//! that disconnects mid-call is only noticed when the response is written (actix-web
//! issue #3462): the handler's future is never dropped early and its run is never told.
//! So `on_connect` records each plain TCP connection's socket descriptor and peer address
//! (`PeerSocket`; no descriptor is duplicated, so a connection costs one descriptor), and
//! a pending call peeks at the socket every `POLL_EVERY`: a peer that closed (end of
//! stream, or reset) ends the wait, the handler returns, and dropping the run's future
//! sends the run actor `Cancel` (a queued run is skipped, a running one stops at its next
//! check unless it already committed). A pipelined next request is data, not an end of
//! stream, so it never cancels.
//!
//! The descriptor stays open while the handler is pending (actix holds the connection
//! until the response is written); the peer address is checked before each peek, so a
//! descriptor number reused by another connection is never mistaken for this one. Costs
//! one timer per call that runs longer than `POLL_EVERY`, and one non-blocking
//! `recv(MSG_PEEK)` per tick.

use actix_web::HttpRequest;
use actix_web::dev::Extensions;
use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, SockaddrStorage, getpeername, recv};
use std::any::Any;
use std::os::fd::{AsRawFd as _, RawFd};
use std::time::Duration;

/// How often a pending call checks its client's socket.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// A connection's socket descriptor and peer, kept in the connection's data.
pub struct PeerSocket {
    fd: RawFd,
    peer: SockaddrStorage,
}

impl PeerSocket {
    /// Whether the client closed its side (or reset the connection).
    fn gone(&self) -> bool {
        match getpeername::<SockaddrStorage>(self.fd) {
            Ok(peer) if peer == self.peer => {}
            // Not our connection any more (or no peer at all): it has ended.
            _ => return true,
        }
        let mut byte = [0u8; 1];
        match recv(
            self.fd,
            &mut byte,
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(0) => true,
            Ok(_) => false,
            Err(Errno::EAGAIN | Errno::EINTR) => false,
            Err(_) => true,
        }
    }
}

/// `HttpServer::on_connect`: remember a plain TCP connection's socket and peer.
pub fn on_connect(conn: &dyn Any, data: &mut Extensions) {
    if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
        let fd = tcp.as_raw_fd();
        if let Ok(peer) = getpeername::<SockaddrStorage>(fd) {
            data.insert(PeerSocket { fd, peer });
        }
    }
}

/// Resolves when the client of `req` has gone away; never, for a connection without a
/// `PeerSocket`.
pub async fn gone(req: &HttpRequest) {
    let Some(peer) = req.conn_data::<PeerSocket>() else {
        return std::future::pending().await;
    };
    loop {
        actix_web::rt::time::sleep(POLL_EVERY).await;
        if peer.gone() {
            return;
        }
    }
}
