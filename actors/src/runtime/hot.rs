//! Conflict escalation scoped to the contended anchors: a call that keeps losing races on
//! some anchors claims them, and other calls' commits that touch a claimed anchor wait
//! for it to be released. Calls that touch anything else never wait.

use lang::host::{AnchorId, CommitSet};
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Longest a commit waits for another call's claim (then it commits anyway and may lose
/// a race and replay): two escalated calls that each wait for the other's anchors cannot
/// deadlock.
const CLAIM_WAIT: Duration = Duration::from_secs(1);

/// Anchors claimed by escalated calls: anchor → the claiming call's token.
#[derive(Default)]
pub(crate) struct HotAnchors {
    claims: Mutex<HashMap<AnchorId, u64>>,
    released: Condvar,
}

impl HotAnchors {
    /// Claim `anchors` for call `me`, waiting (up to `CLAIM_WAIT`) while another call
    /// holds any of them; all are taken at once, so two claimers never hold parts of
    /// each other's sets.
    pub(crate) fn claim(&self, me: u64, anchors: &[AnchorId]) -> Claim<'_> {
        let deadline = Instant::now() + CLAIM_WAIT;
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let busy = anchors
                .iter()
                .any(|a| claims.get(a).is_some_and(|owner| *owner != me));
            let now = Instant::now();
            if !busy || now >= deadline {
                break;
            }
            claims = self
                .released
                .wait_timeout(claims, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let mut taken = Vec::new();
        for &a in anchors {
            if let std::collections::hash_map::Entry::Vacant(v) = claims.entry(a) {
                v.insert(me);
                taken.push(a);
            }
        }
        Claim {
            hot: self,
            anchors: taken,
        }
    }

    /// Wait (up to `CLAIM_WAIT`) until no anchor `changes` writes, deletes or re-links
    /// is claimed by a call other than `me`.
    pub(crate) fn wait_clear(&self, me: u64, changes: &CommitSet) {
        let claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        if claims.is_empty() {
            return;
        }
        let touched: Vec<AnchorId> = changes
            .upserts
            .iter()
            .map(|a| a.id)
            .chain(changes.deletes.iter().copied())
            .chain(changes.edge_adds.iter().map(|(n, _)| *n))
            .chain(changes.edge_removes.iter().map(|(n, _)| *n))
            .collect();
        let deadline = Instant::now() + CLAIM_WAIT;
        let mut claims = claims;
        loop {
            let busy = touched
                .iter()
                .any(|a| claims.get(a).is_some_and(|owner| *owner != me));
            let now = Instant::now();
            if !busy || now >= deadline {
                return;
            }
            claims = self
                .released
                .wait_timeout(claims, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn release(&self, anchors: &[AnchorId]) {
        if anchors.is_empty() {
            return;
        }
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        for a in anchors {
            claims.remove(a);
        }
        drop(claims);
        self.released.notify_all();
    }
}

/// Anchors held by one escalated call attempt; released on drop.
pub(crate) struct Claim<'a> {
    hot: &'a HotAnchors,
    anchors: Vec<AnchorId>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.hot.release(&self.anchors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_blocks_only_commits_touching_it() {
        let hot = HotAnchors::default();
        let claim = hot.claim(1, &[7]);
        let started = Instant::now();
        // Another call touching a different anchor does not wait.
        let other = CommitSet {
            edge_adds: vec![(8, 9)],
            ..CommitSet::default()
        };
        hot.wait_clear(2, &other);
        assert!(started.elapsed() < Duration::from_millis(500));
        // The claimer itself does not wait for its own claim.
        let mine = CommitSet {
            edge_adds: vec![(7, 9)],
            ..CommitSet::default()
        };
        hot.wait_clear(1, &mine);
        assert!(started.elapsed() < Duration::from_millis(500));
        drop(claim);
        hot.wait_clear(2, &mine);
        assert!(started.elapsed() < Duration::from_millis(500));
    }
}
