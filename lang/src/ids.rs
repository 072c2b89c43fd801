//! The one source of random ids: bytes from the host's OS random source
//! ([`Host::random_bytes`]), drawn a block at a time and kept per thread, so an id costs
//! a copy rather than a system call. Anchor ids (`Interp::fresh_anchor_id`) and
//! `uuid.uuid4()` take their bits here.

use crate::host::Host;
use std::cell::RefCell;

/// Bytes drawn per refill: 64 anchor ids' worth.
const BLOCK: usize = 640;

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
}
