//! The one source of random ids: bytes from the host's OS random source
//! ([`Host::random_bytes`]), drawn a block at a time and kept per thread, so an id costs
//! a copy rather than a system call. Anchor ids (`Interp::fresh_anchor_id`), event ids
//! and `uuid.uuid4()` take their bits here.

use crate::host::Host;
use std::cell::RefCell;

/// Bytes drawn per refill: 1,024 anchor ids' worth (a run that makes 200,000 anchors
/// reads the device about 200 times, not 3,000: each read costs a system call).
const BLOCK: usize = 10 * 1024;

struct Pool {
    buf: [u8; BLOCK],
    /// Bytes of `buf` already handed out.
    used: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = const { RefCell::new(Pool { buf: [0; BLOCK], used: BLOCK }) };
}

/// `N` random bytes (`N` at most one block), refilling the pool from `host` when it
/// runs short. Bytes are never handed out twice.
pub fn random<const N: usize>(host: &mut dyn Host) -> [u8; N] {
    const { assert!(N <= BLOCK) };
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if BLOCK - p.used < N {
            host.random_bytes(&mut p.buf);
            p.used = 0;
        }
        let mut out = [0u8; N];
        let at = p.used;
        out.copy_from_slice(&p.buf[at..at + N]);
        p.used += N;
        out
    })
}

/// A random version-4 UUID in its 36-character text form (an event's `id`).
pub fn uuid4(host: &mut dyn Host) -> String {
    let mut bytes: [u8; 16] = random(host);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    // Written straight into one buffer: this runs for every `Event(...)`.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_never_handed_out_twice_across_refills() {
        let mut host = crate::host::MemoryHost::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1_000 {
            let id: [u8; 10] = super::random(&mut host);
            assert!(seen.insert(id), "a repeated id: {id:?}");
        }
        let uuid: [u8; 16] = super::random(&mut host);
        assert_ne!(uuid, [0; 16]);
    }

    #[test]
    fn uuid4_has_the_version_and_variant_bits() {
        let mut host = crate::host::MemoryHost::new();
        let a = super::uuid4(&mut host);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_ne!(a, super::uuid4(&mut host));
    }
}
