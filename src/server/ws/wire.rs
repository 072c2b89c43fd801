//! The WebSocket transport under a session actor, on actix-http's WebSocket codec:
//!
//! - [`Frames`]: the client's frames, decoded from the request payload one at a time
//!   (a frame larger than `max_frame_bytes` is `ProtocolError::Overflow`);
//! - [`WsBody`]: the response body. It drains the session's bounded outbox and encodes
//!   every frame waiting there into one chunk, so the HTTP/1 dispatcher writes them with
//!   one system call; a close request (its own one-shot channel) overtakes the outbox,
//!   becomes the close frame and ends the body.
//!
//! Why not actix-ws's `Session`/`StreamingBody` pair (the first version): it put a
//! second bounded channel and a writer task between the outbox and the socket, so every
//! frame cost two task wake-ups and two channel hops, and every socket held that channel,
//! the task and a second one-shot (about 3 KB per idle socket). Here the body *is* the
//! outbox's reader: one channel, no extra task (ARCHITECTURE.md "WebSockets").

use actix_http::ws::{Codec, Frame, Message, ProtocolError};
use actix_web::body::{BodySize, MessageBody};
use actix_web::web::{Bytes, BytesMut};
use actix_web::{HttpRequest, HttpResponse};
use bytestring::ByteString;
use futures_util::Stream;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Decoder as _, Encoder as _};

pub use actix_http::ws::{CloseCode, CloseReason, Item};

/// Control frames carry at most 125 bytes (RFC 6455 §5.5); a close reason 123 after its
/// code.
const MAX_CONTROL_PAYLOAD: usize = 125;
const MAX_CLOSE_REASON: usize = MAX_CONTROL_PAYLOAD - 2;

/// Frames one body chunk gathers at most (the outbox may hold up to `outbox_capacity`).
const MAX_FRAMES_PER_CHUNK: usize = 64;
/// Bytes after which a chunk is handed to the dispatcher even if more frames wait.
const MAX_CHUNK_BYTES: usize = 64 * 1024;

/// What the body writes to the client.
#[derive(Debug)]
pub(crate) enum Outgoing {
    Text(ByteString),
    Ping,
    Pong(Bytes),
}

/// Why `req` is no WebSocket handshake, if it is not.
pub(crate) fn verify(req: &HttpRequest) -> Result<(), String> {
    actix_http::ws::verify_handshake(req.head()).map_err(|e| e.to_string())
}

/// The 101 response to a verified handshake, `body` as its stream.
pub(crate) fn upgrade(req: &HttpRequest, body: WsBody) -> HttpResponse {
    let mut response = actix_http::ws::handshake_response(req.head());
    match response.message_body(body.boxed()) {
        Ok(res) => HttpResponse::from(res),
        // Only a builder that already failed errs; a verified handshake's does not.
        Err(e) => HttpResponse::from_error(e),
    }
}

/// The response body of one WebSocket: the outbox's reader.
pub(crate) struct WsBody {
    outbox: mpsc::Receiver<Outgoing>,
    close: Option<oneshot::Receiver<Option<CloseReason>>>,
    codec: Codec,
    /// Told (by being dropped) that the connection is done with this body.
    _gone: oneshot::Sender<()>,
    done: bool,
}

impl WsBody {
    /// A body reading `outbox`; a value on `close` (or `close` dropped) sends the close
    /// frame and ends it. `gone` is dropped with the body (the reader side learns the
    /// connection has ended).
    pub(crate) fn new(
        outbox: mpsc::Receiver<Outgoing>,
        close: oneshot::Receiver<Option<CloseReason>>,
        gone: oneshot::Sender<()>,
    ) -> WsBody {
        WsBody {
            outbox,
            close: Some(close),
            codec: Codec::new(),
            _gone: gone,
            done: false,
        }
    }

    fn encode(&mut self, msg: Message, buf: &mut BytesMut) {
        // Encoding into a growable buffer does not fail (only a frame over the codec's
        // size limit could, and that limit applies to decoding).
        let _ = self.codec.encode(msg, buf);
    }

    /// The close frame (its reason cut to what a control frame can carry) ends the body.
    fn encode_close(&mut self, reason: Option<CloseReason>, buf: &mut BytesMut) {
        let reason = reason.map(|mut r| {
            if let Some(d) = r.description.as_mut()
                && d.len() > MAX_CLOSE_REASON
            {
                let mut end = MAX_CLOSE_REASON;
                while !d.is_char_boundary(end) {
                    end -= 1;
                }
                d.truncate(end);
            }
            r
        });
        self.encode(Message::Close(reason), buf);
        self.done = true;
        self.outbox.close();
    }
}

impl MessageBody for WsBody {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let mut buf = BytesMut::new();
        // A close request overtakes the frames still waiting in the outbox.
        if let Some(close) = this.close.as_mut()
            && let Poll::Ready(reason) = Pin::new(close).poll(cx)
        {
            this.close = None;
            // Dropped without a value: the session ended without a close code.
            this.encode_close(reason.ok().flatten(), &mut buf);
            return Poll::Ready(Some(Ok(buf.freeze())));
        }
        let mut frames = 0;
        while frames < MAX_FRAMES_PER_CHUNK && buf.len() < MAX_CHUNK_BYTES {
            match this.outbox.poll_recv(cx) {
                Poll::Ready(Some(out)) => {
                    frames += 1;
                    let msg = match out {
                        Outgoing::Text(text) => Message::Text(text),
                        Outgoing::Ping => Message::Ping(Bytes::new()),
                        Outgoing::Pong(mut bytes) => {
                            bytes.truncate(MAX_CONTROL_PAYLOAD);
                            Message::Pong(bytes)
                        }
                    };
                    this.encode(msg, &mut buf);
                }
                // Every sender is gone (the session and its hub): end as a stop would.
                Poll::Ready(None) => {
                    this.encode_close(None, &mut buf);
                    break;
                }
                Poll::Pending => break,
            }
        }
        if frames == MAX_FRAMES_PER_CHUNK || buf.len() >= MAX_CHUNK_BYTES {
            // More may wait: come back after the dispatcher has taken this chunk.
            cx.waker().wake_by_ref();
        }
        if buf.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(Some(Ok(buf.freeze())))
        }
    }
}

/// The client's frames, decoded from the upgraded request's payload.
pub(crate) struct Frames {
    payload: actix_web::dev::Payload,
    buf: BytesMut,
    codec: Codec,
    /// Fires (dropped) when the response body is gone: the connection has ended.
    gone: Option<oneshot::Receiver<()>>,
    closing: bool,
}

impl Frames {
    pub(crate) fn new(
        payload: actix_web::dev::Payload,
        max_frame_bytes: usize,
        gone: oneshot::Receiver<()>,
    ) -> Frames {
        Frames {
            payload,
            buf: BytesMut::new(),
            codec: Codec::new().max_size(max_frame_bytes),
            gone: Some(gone),
            closing: false,
        }
    }
}

impl Stream for Frames {
    type Item = Result<Message, ProtocolError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            // One complete frame from what has arrived; more is read only when none is.
            if let Some(frame) = this.codec.decode(&mut this.buf)? {
                return Poll::Ready(Some(Ok(match frame {
                    Frame::Text(bytes) => {
                        Message::Text(ByteString::try_from(bytes).map_err(|e| {
                            ProtocolError::Io(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                e,
                            ))
                        })?)
                    }
                    Frame::Binary(bytes) => Message::Binary(bytes),
                    Frame::Ping(bytes) => Message::Ping(bytes),
                    Frame::Pong(bytes) => Message::Pong(bytes),
                    Frame::Close(reason) => Message::Close(reason),
                    Frame::Continuation(item) => Message::Continuation(item),
                })));
            }
            if this.closing {
                return Poll::Ready(None);
            }
            if let Some(gone) = this.gone.as_mut()
                && Pin::new(gone).poll(cx).is_ready()
            {
                this.gone = None;
                this.closing = true;
                continue;
            }
            match Pin::new(&mut this.payload).poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    if this.buf.is_empty() {
                        this.buf = BytesMut::from(bytes);
                    } else {
                        this.buf.extend_from_slice(&bytes);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.closing = true;
                    return Poll::Ready(Some(Err(ProtocolError::Io(std::io::Error::other(e)))));
                }
                Poll::Ready(None) => this.closing = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
