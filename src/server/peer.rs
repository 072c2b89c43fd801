//! Noticing that an HTTP/1 client went away while its call runs.
//!
//! actix-web does not read from a connection while its handler is pending, so a client
//! that disconnects mid-call is only noticed when the response is written (actix-web
//! issue #3462): the handler's future is never dropped early and its run is never told.
//! So `on_connect` keeps a duplicate of each connection's socket descriptor
//! (`PeerSocket`), and a pending call peeks at it every `POLL_EVERY`: a peer that closed
//! (end of stream, or reset) ends the wait, the handler returns, and dropping the run's
//! future sends the run actor `Cancel` (a queued run is skipped, a running one stops at
//! its next check unless it already committed). A pipelined next request is data, not an
//! end of stream, so it never cancels. Costs one timer per call that runs longer than
//! `POLL_EVERY`, and one non-blocking `recv(MSG_PEEK)` per tick.

use actix_web::HttpRequest;
use actix_web::dev::Extensions;
use std::any::Any;
use std::io::ErrorKind;
use std::os::fd::AsFd as _;
use std::time::Duration;

/// How often a pending call checks its client's socket.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// A duplicate of a connection's socket, kept in the connection's data.
pub struct PeerSocket(std::net::TcpStream);

impl PeerSocket {
    /// Whether the client closed its side (or reset the connection).
    fn gone(&self) -> bool {
        let mut byte = [0u8; 1];
        match self.0.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
        }
    }
}

/// `HttpServer::on_connect`: remember a duplicate of a plain TCP connection's socket (it
/// is closed with the connection's data).
pub fn on_connect(conn: &dyn Any, data: &mut Extensions) {
    if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>()
        && let Ok(fd) = tcp.as_fd().try_clone_to_owned()
    {
        data.insert(PeerSocket(std::net::TcpStream::from(fd)));
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
