//! One HTTP/1.1 exchange on a provider connection, the wire side of the client actor
//! (`client.rs`): the request head, and the answer read exactly to its framing
//! (`Content-Length`, chunked, or to the end of the connection), so a connection goes
//! back to the pool only when its answer was read whole and the provider keeps it open.
//! Every read is bounded: a line by [`MAX_LINE`], a head by [`MAX_HEAD`] and
//! [`MAX_HEADERS`], a body by the caller's `max_body`; the caller bounds the time.

use nix::errno::Errno;
use nix::sys::socket::{MsgFlags, recv};
use std::os::fd::AsRawFd as _;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

/// Longest status, header or chunk-size line of an answer.
pub const MAX_LINE: usize = 8 * 1024;
/// Longest head of an answer (status line and headers, interim answers included).
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines of one answer (a chunked body's trailers included).
pub const MAX_HEADERS: usize = 128;

/// An open connection to a provider.
pub struct Conn {
    io: BufReader<TcpStream>,
}

/// What one call sends.
pub struct Request<'a> {
    /// `host:port`, for the `Host` header.
    pub authority: &'a str,
    /// The provider's base path and the endpoint (`/api` + `/function/add`).
    pub path: &'a str,
    pub trace_id: &'a str,
    pub authorization: Option<&'a str>,
    pub body: &'a [u8],
}

/// A provider's answer: its status and body bytes (the caller parses the JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why an exchange failed. The connection is gone in every case.
#[derive(Debug, PartialEq)]
pub enum WireError {
    /// Nothing of an answer arrived: the request could not be written, or the connection
    /// ended before the first byte of a status line. On a reused connection this is the
    /// provider closing it while idle (its keep-alive timeout), so the request never ran.
    NoAnswer(String),
    /// The answer began and broke off, or is not HTTP.
    Broken(String),
    /// The answer's body is larger than the bound.
    TooLarge,
}

impl Conn {
    /// Connect to `authority` (`host:port`): the first address it resolves to.
    pub async fn connect(authority: &str) -> Result<Conn, String> {
        let addr = tokio::net::lookup_host(authority)
            .await
            .map_err(|e| format!("cannot resolve {authority}: {e}"))?
            .next()
            .ok_or_else(|| format!("cannot resolve {authority}"))?;
        let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        // The request goes out in one write and the answer is awaited: no Nagle delay.
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            io: BufReader::with_capacity(16 * 1024, stream),
        })
    }

    /// Whether an idle connection can carry another request: nothing unread is buffered
    /// and the provider has neither closed it nor sent anything unasked (one
    /// non-blocking `recv(MSG_PEEK)`).
    pub fn is_reusable(&self) -> bool {
        if !self.io.buffer().is_empty() {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(
            recv(
                self.io.get_ref().as_raw_fd(),
                &mut byte,
                MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
            ),
            Err(Errno::EAGAIN)
        )
    }

    /// Send `request` as `POST`, read the answer. `Ok` gives the connection back when
    /// it can carry another request (answer read whole, provider keeps it open).
    pub async fn exchange(
        mut self,
        request: &Request<'_>,
        max_body: usize,
    ) -> Result<(Answer, Option<Conn>), WireError> {
        let head = head(request);
        let mut bytes = Vec::with_capacity(head.len() + request.body.len());
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(request.body);
        self.io
            .get_mut()
            .write_all(&bytes)
            .await
            .map_err(|e| WireError::NoAnswer(e.to_string()))?;
        let (answer, keep) = read_answer(&mut self.io, max_body).await?;
        Ok((answer, keep.then_some(self)))
    }
}

/// The request head: HTTP/1.1, so the connection stays open unless the provider closes
/// it. Header values cannot carry a line break (actix refuses them on the way in, and
/// this check keeps a native caller honest too).
fn head(request: &Request<'_>) -> String {
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        request.path,
        request.authority,
        request.body.len()
    );
    if !request.trace_id.is_empty() && !request.trace_id.contains(['\r', '\n']) {
        head.push_str("X-Trace-Id: ");
        head.push_str(request.trace_id);
        head.push_str("\r\n");
    }
    if let Some(auth) = request.authorization.filter(|a| !a.contains(['\r', '\n'])) {
        head.push_str("Authorization: ");
        head.push_str(auth);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// How the answer's body is delimited.
enum Framing {
    Length(u64),
    Chunked,
    /// Until the provider closes the connection (not reusable).
    Close,
    None,
}

/// Read one answer; `true` = the connection may carry another request.
async fn read_answer<R>(io: &mut R, max_body: usize) -> Result<(Answer, bool), WireError>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let broken = |m: &str| WireError::Broken(m.to_string());
    let mut head_bytes = 0usize;
    let mut line = Vec::new();
    let mut first = true;
    // Interim (1xx) answers come before the final one.
    let (status, version_11) = loop {
        let n = read_line(io, &mut line, MAX_LINE)
            .await
            .map_err(|e| match (first, e) {
                (true, LineError::Io(m) | LineError::Eof(m)) => WireError::NoAnswer(m),
                (_, LineError::Io(m) | LineError::Eof(m) | LineError::TooLong(m)) => {
                    WireError::Broken(m)
                }
            })?;
        first = false;
        head_bytes += n;
        let text = std::str::from_utf8(&line).map_err(|_| broken("not an HTTP answer"))?;
        let mut parts = text.trim_end().splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        let status: u16 = parts
            .next()
            .filter(|s| s.len() == 3)
            .and_then(|s| s.parse().ok())
            .filter(|s| (100..600).contains(s))
            .ok_or_else(|| broken("not an HTTP answer"))?;
        if !version.starts_with("HTTP/1.") {
            return Err(broken("not an HTTP/1 answer"));
        }
        if (100..200).contains(&status) {
            if status == 101 {
                return Err(broken("the provider switched protocols"));
            }
            skip_headers(io, &mut line, &mut head_bytes).await?;
            continue;
        }
        break (status, version == "HTTP/1.1");
    };
    let mut keep = version_11;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut encoded = false;
    let mut headers = 0usize;
    loop {
        head_bytes += read_line(io, &mut line, MAX_LINE)
            .await
            .map_err(LineError::into_broken)?;
        headers += 1;
        if head_bytes > MAX_HEAD || headers > MAX_HEADERS {
            return Err(broken("the answer's head is too large"));
        }
        let text = std::str::from_utf8(&line).map_err(|_| broken("a header is not text"))?;
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(broken("a malformed header line"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .ok()
                .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| broken("a malformed Content-Length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(broken("conflicting Content-Length headers"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            encoded = true;
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                if token.trim().eq_ignore_ascii_case("close") {
                    keep = false;
                }
            }
        }
    }
    let framing = if status == 204 || status == 304 {
        Framing::None
    } else if encoded {
        // A length beside a transfer coding is ignored (RFC 9112 6.3); such an answer
        // does not leave the connection in a state worth trusting.
        if length.is_some() {
            keep = false;
        }
        if chunked {
            Framing::Chunked
        } else {
            Framing::Close
        }
    } else {
        match length {
            Some(n) => Framing::Length(n),
            None => Framing::Close,
        }
    };
    let body = match framing {
        Framing::None => Vec::new(),
        Framing::Length(n) => {
            if n > max_body as u64 {
                return Err(WireError::TooLarge);
            }
            let mut body = vec![0u8; n as usize];
            io.read_exact(&mut body)
                .await
                .map_err(|e| WireError::Broken(format!("the answer broke off: {e}")))?;
            body
        }
        Framing::Chunked => read_chunked(io, &mut line, max_body).await?,
        Framing::Close => {
            keep = false;
            let mut body = Vec::new();
            (&mut *io)
                .take(max_body as u64 + 1)
                .read_to_end(&mut body)
                .await
                .map_err(|e| WireError::Broken(format!("the answer broke off: {e}")))?;
            if body.len() > max_body {
                return Err(WireError::TooLarge);
            }
            body
        }
    };
    Ok((Answer { status, body }, keep))
}

/// A chunked body, bounded by `max_body`; trailers are read and dropped.
async fn read_chunked<R>(
    io: &mut R,
    line: &mut Vec<u8>,
    max_body: usize,
) -> Result<Vec<u8>, WireError>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let broken = |m: &str| WireError::Broken(m.to_string());
    let mut body = Vec::new();
    loop {
        read_line(io, line, MAX_LINE)
            .await
            .map_err(LineError::into_broken)?;
        let text = std::str::from_utf8(line).map_err(|_| broken("a malformed chunk size"))?;
        let digits = text.split(';').next().unwrap_or_default().trim();
        if digits.is_empty() || digits.len() > 16 {
            return Err(broken("a malformed chunk size"));
        }
        let size = u64::from_str_radix(digits, 16).map_err(|_| broken("a malformed chunk size"))?;
        if size == 0 {
            let mut head_bytes = 0;
            skip_headers(io, line, &mut head_bytes).await?;
            return Ok(body);
        }
        if body.len() as u64 + size > max_body as u64 {
            return Err(WireError::TooLarge);
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        io.read_exact(&mut body[start..])
            .await
            .map_err(|e| WireError::Broken(format!("the answer broke off: {e}")))?;
        let mut crlf = [0u8; 2];
        io.read_exact(&mut crlf)
            .await
            .map_err(|e| WireError::Broken(format!("the answer broke off: {e}")))?;
        if &crlf != b"\r\n" {
            return Err(broken("a malformed chunk"));
        }
    }
}

/// Header lines up to the empty one (an interim answer's, or trailers), dropped.
async fn skip_headers<R>(
    io: &mut R,
    line: &mut Vec<u8>,
    head_bytes: &mut usize,
) -> Result<(), WireError>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    for _ in 0..=MAX_HEADERS {
        *head_bytes += read_line(io, line, MAX_LINE)
            .await
            .map_err(LineError::into_broken)?;
        if *head_bytes > MAX_HEAD {
            break;
        }
        if line == b"\r\n" || line == b"\n" {
            return Ok(());
        }
    }
    Err(WireError::Broken("the answer's head is too large".into()))
}

enum LineError {
    Io(String),
    /// The connection ended before the line did.
    Eof(String),
    TooLong(String),
}

impl LineError {
    fn into_broken(self) -> WireError {
        match self {
            LineError::Io(m) | LineError::Eof(m) | LineError::TooLong(m) => WireError::Broken(m),
        }
    }
}

/// One line, `\n` included, into `line`: its length. Never more than `max` bytes.
async fn read_line<R>(io: &mut R, line: &mut Vec<u8>, max: usize) -> Result<usize, LineError>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    line.clear();
    loop {
        let available = io
            .fill_buf()
            .await
            .map_err(|e| LineError::Io(e.to_string()))?;
        if available.is_empty() {
            return Err(LineError::Eof(if line.is_empty() {
                "the provider closed the connection".into()
            } else {
                "the answer broke off".into()
            }));
        }
        let (n, found) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if line.len() + n > max {
            return Err(LineError::TooLong(format!(
                "a line of the answer exceeds {max} bytes"
            )));
        }
        line.extend_from_slice(&available[..n]);
        io.consume(n);
        if found {
            return Ok(line.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8], max: usize) -> Result<(Answer, bool), WireError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(read_answer(&mut &raw[..], max))
    }

    #[test]
    fn framing_decides_reuse() {
        let (a, keep) =
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 100).expect("answer");
        assert_eq!((a.status, a.body.as_slice(), keep), (200, &b"{}"[..], true));
        let (_, keep) = parse(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
            100,
        )
        .expect("answer");
        assert!(!keep, "Connection: close");
        let (a, keep) = parse(b"HTTP/1.1 200 OK\r\n\r\n{\"a\":1}", 100).expect("answer");
        assert_eq!((a.body.as_slice(), keep), (&b"{\"a\":1}"[..], false));
        let (_, keep) =
            parse(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 100).expect("answer");
        assert!(!keep, "HTTP/1.0");
        let (a, keep) = parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: \
              chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: 1\r\n\r\n",
            100,
        )
        .expect("answer");
        assert_eq!(
            (a.status, a.body.as_slice(), keep),
            (404, &b"abcde"[..], true)
        );
    }

    #[test]
    fn hostile_answers_are_errors() {
        assert!(matches!(parse(b"", 10), Err(WireError::NoAnswer(_))));
        assert!(matches!(
            parse(b"SSH-2.0\r\n", 10),
            Err(WireError::Broken(_))
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 10),
            Err(WireError::Broken(_))
        ));
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 10).err(),
            Some(WireError::TooLarge)
        );
        assert_eq!(
            parse(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n",
                10
            )
            .err(),
            Some(WireError::TooLarge)
        );
        assert!(matches!(
            parse(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
                10
            ),
            Err(WireError::Broken(_))
        ));
        let long = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(MAX_LINE));
        assert!(matches!(
            parse(long.as_bytes(), 10),
            Err(WireError::Broken(_))
        ));
        let many = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "X: 1\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(matches!(
            parse(many.as_bytes(), 10),
            Err(WireError::Broken(_))
        ));
        assert!(matches!(
            parse(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                10
            ),
            Err(WireError::Broken(_))
        ));
    }

    #[test]
    fn the_head_carries_the_policy_headers() {
        let request = Request {
            authority: "127.0.0.1:18001",
            path: "/api/function/add",
            trace_id: "t-1",
            authorization: Some("Bearer x"),
            body: b"{}",
        };
        let head = head(&request);
        assert!(head.starts_with("POST /api/function/add HTTP/1.1\r\nHost: 127.0.0.1:18001\r\n"));
        assert!(head.contains("\r\nX-Trace-Id: t-1\r\nAuthorization: Bearer x\r\n\r\n"));
        assert!(
            !head.contains("Connection"),
            "keep-alive is HTTP/1.1's default"
        );
        let head = super::head(&Request {
            authorization: Some("a\r\nX-Evil: 1"),
            trace_id: "",
            ..request
        });
        assert!(!head.contains("Evil") && !head.contains("X-Trace-Id"));
    }
}
