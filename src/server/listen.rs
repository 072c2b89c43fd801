//! Binding the listen socket: when the port is taken, fall back to the next free one,
//! skipping 18000-18999 (reserved for automatically started sibling services).

use std::io;
use std::net::TcpListener;

/// Ports tried after the requested one before giving up.
const FALLBACK_TRIES: u32 = 100;

/// The sibling-service range the fallback never picks.
const SIBLING_PORTS: std::ops::RangeInclusive<u16> = 18000..=18999;

/// Bind `host:port`, or the next free port; returns the listener and its port.
pub fn bind(host: &str, port: u16) -> io::Result<(TcpListener, u16)> {
    let mut candidate = port;
    let mut last_error = None;
    for _ in 0..=FALLBACK_TRIES {
        match TcpListener::bind((host, candidate)) {
            Ok(listener) => {
                let actual = listener.local_addr()?.port();
                return Ok((listener, actual));
            }
            // Port 0 asks the OS; any other failure is not about this port.
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && port != 0 => {
                last_error = Some(e);
                candidate = match next_port(candidate) {
                    Some(p) => p,
                    None => break,
                };
            }
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::new(io::ErrorKind::AddrInUse, "no free port")))
}

fn next_port(port: u16) -> Option<u16> {
    let next = port.checked_add(1)?;
    if SIBLING_PORTS.contains(&next) {
        SIBLING_PORTS.end().checked_add(1)
    } else {
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_the_sibling_range() {
        assert_eq!(next_port(8000), Some(8001));
        assert_eq!(next_port(17999), Some(19000));
        assert_eq!(next_port(65535), None);
    }

    #[test]
    fn falls_back_when_taken() {
        let (first, port) = bind("127.0.0.1", 0).expect("bind");
        let (_second, other) = bind("127.0.0.1", port).expect("fallback");
        assert_ne!(port, other);
        drop(first);
    }
}
