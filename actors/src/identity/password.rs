//! Passwords (spec "Authentication" 14): bcrypt with a random salt per password, at the
//! configured cost, computed on the blocking pool so neither an HTTP worker nor the
//! identity actor's thread ever spends bcrypt time. A login for an unknown identity verifies against a dummy hash of the
//! same cost, so it costs what a wrong password costs. A legacy unsalted SHA-256 hex hash
//! (records migrated from the original's flat user documents) still verifies, with the
//! same bcrypt cost spent, and the login replaces it by bcrypt.
//!
//! Work is bounded: one computation per core at a time, and at most
//! `[scale.auth] bcrypt_queue_capacity` more waiting for a slot; a request beyond that is
//! answered at once with 503 `SERVICE_UNAVAILABLE` and `Retry-After`, before any hashing.

use super::IdentityError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::SemaphorePermit;

/// `Retry-After` of a 503 for a full bcrypt queue, in seconds.
const QUEUE_FULL_RETRY_SECS: u64 = 1;

/// bcrypt reads at most this many bytes; longer passwords are refused rather than
/// silently truncated.
pub const MAX_PASSWORD_BYTES: usize = 72;

/// Hashing and verification at one cost.
pub struct Passwords {
    cost: u32,
    /// At most one bcrypt computation per core at a time: the blocking pool would start
    /// every pending one at once, so under load each login would wait for all of them
    /// (same throughput, far worse latency). Waiters are served in arrival order.
    slots: tokio::sync::Semaphore,
    /// Requests waiting for a slot now.
    waiting: AtomicUsize,
    /// Most requests allowed to wait (`bcrypt_queue_capacity`).
    queue_capacity: usize,
    /// A hash of a random password: verifying anything against it fails, in full time.
    /// Computed on a background thread soon after start (cost 12 takes a while); a login
    /// needing it before then computes it (once).
    dummy: Arc<OnceLock<String>>,
}

/// How long after start the dummy hash is computed in the background.
const DUMMY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Passwords {
    /// Starts computing the dummy hash in the background (after `DUMMY_AFTER`). At most `queue_capacity`
    /// requests wait for a bcrypt slot.
    pub fn new(cost: u32, queue_capacity: usize) -> Passwords {
        let dummy = Arc::new(OnceLock::new());
        let slot = Arc::clone(&dummy);
        let spawned = std::thread::Builder::new()
            .name("svc-bcrypt-dummy".into())
            .spawn(move || {
                // Not during start-up, which it would slow down by a core's worth of
                // bcrypt; a login that needs it before then computes it itself.
                std::thread::sleep(DUMMY_AFTER);
                dummy_hash(&slot, cost);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot precompute the dummy password hash");
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Passwords {
            cost,
            dummy,
            slots: tokio::sync::Semaphore::new(cores),
            waiting: AtomicUsize::new(0),
            queue_capacity,
        }
    }

    /// A bcrypt slot: at once when one is free, else after waiting in line, unless the
    /// line is full (503 with `Retry-After`).
    async fn slot(&self) -> Result<SemaphorePermit<'_>, IdentityError> {
        if let Ok(permit) = self.slots.try_acquire() {
            return Ok(permit);
        }
        let admitted = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.queue_capacity).then_some(n + 1)
            })
            .is_ok();
        if !admitted {
            tracing::warn!(
                capacity = self.queue_capacity,
                "bcrypt queue full; answering 503"
            );
            return Err(IdentityError::unavailable(
                "the server is busy hashing passwords; try again shortly",
                QUEUE_FULL_RETRY_SECS,
            ));
        }
        // Leaves the line however the wait ends (a slot, or the request dropped).
        struct InLine<'a>(&'a AtomicUsize);
        impl Drop for InLine<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _in_line = InLine(&self.waiting);
        self.slots.acquire().await.map_err(|_| internal())
    }

    /// A bcrypt hash of `password` (on the blocking pool).
    pub async fn hash(&self, password: String) -> Result<String, IdentityError> {
        let cost = self.cost;
        let _slot = self.slot().await?;
        tokio::task::spawn_blocking(move || bcrypt::non_truncating_hash(password, cost))
            .await
            .map_err(|_| internal())?
            .map_err(|e| {
                tracing::error!(error = %e, "bcrypt failed");
                internal()
            })
    }

    /// Whether `password` matches `hash` (see [`Check`]); with no hash (unknown identity,
    /// no password credential) the dummy is verified instead and the answer is a
    /// mismatch. Every path spends one bcrypt verify.
    pub async fn check(
        &self,
        password: String,
        hash: Option<String>,
    ) -> Result<Check, IdentityError> {
        let dummy = Arc::clone(&self.dummy);
        let cost = self.cost;
        let _slot = self.slot().await?;
        tokio::task::spawn_blocking(move || match hash {
            Some(h) if is_legacy_sha256(&h) => {
                let _ = bcrypt::non_truncating_verify(&password, dummy_hash(&dummy, cost));
                let given = super::token_hash(&password);
                let same = aws_lc_rs::constant_time::verify_slices_are_equal(
                    given.as_bytes(),
                    h.to_ascii_lowercase().as_bytes(),
                );
                if same.is_ok() {
                    Check::MatchLegacy
                } else {
                    Check::Mismatch
                }
            }
            Some(h) => match bcrypt::non_truncating_verify(password, &h) {
                Ok(true) => Check::Match,
                _ => Check::Mismatch,
            },
            None => {
                let _ = bcrypt::non_truncating_verify(password, dummy_hash(&dummy, cost));
                Check::Mismatch
            }
        })
        .await
        .map_err(|_| internal())
    }

    /// [`Passwords::check`] as a yes/no.
    pub async fn verify(
        &self,
        password: String,
        hash: Option<String>,
    ) -> Result<bool, IdentityError> {
        Ok(self.check(password, hash).await? != Check::Mismatch)
    }
}

/// The outcome of a password check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Mismatch,
    Match,
    /// Matched a legacy unsalted SHA-256 hex hash (spec transitions: such a hash is
    /// replaced by bcrypt on the next successful login).
    MatchLegacy,
}

/// A legacy password hash: 64 hex digits (SHA-256 of the password).
pub fn is_legacy_sha256(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The dummy hash, computing it if nobody has (concurrent callers wait for one result).
fn dummy_hash(slot: &OnceLock<String>, cost: u32) -> &str {
    slot.get_or_init(|| {
        // A random secret: no password can match it.
        bcrypt::hash(super::new_one_time_token(), cost).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot compute the dummy password hash");
            String::new()
        })
    })
}

fn internal() -> IdentityError {
    IdentityError::internal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::ErrorKind;

    #[tokio::test]
    async fn hash_verify_and_dummy() {
        let p = Passwords::new(4, 64);
        let h = p.hash("pw".into()).await.expect("hashed");
        assert!(h.starts_with("$2b$04$"));
        assert_ne!(p.hash("pw".into()).await.expect("hashed"), h, "salted");
        assert!(p.verify("pw".into(), Some(h.clone())).await.expect("ran"));
        assert!(!p.verify("nope".into(), Some(h)).await.expect("ran"));
        assert!(!p.verify("pw".into(), None).await.expect("ran"));
        assert!(p.hash("x".repeat(73)).await.is_err());
        let legacy = super::super::token_hash("old-pw");
        assert!(is_legacy_sha256(&legacy));
        let check = |pw: &str| p.check(pw.into(), Some(legacy.to_uppercase()));
        assert_eq!(check("old-pw").await.expect("ran"), Check::MatchLegacy);
        assert_eq!(check("other").await.expect("ran"), Check::Mismatch);
    }

    #[tokio::test]
    async fn a_full_queue_answers_503() {
        let p = Passwords::new(4, 0);
        let held: Vec<_> = (0..p.slots.available_permits())
            .map(|_| p.slots.try_acquire().expect("free slot"))
            .collect();
        let e = p.hash("pw".into()).await.expect_err("no room to wait");
        assert_eq!((e.kind, e.retry_after), (ErrorKind::Unavailable, Some(1)));
        drop(held);
        assert!(p.hash("pw".into()).await.is_ok());
        assert_eq!(p.waiting.load(Ordering::Acquire), 0);
    }
}
