//! The graph's id index: anchor id → index in the arena (`Graph::slots`), an
//! open-addressing table of 8-byte entries (the slot index and 24 bits of the id's
//! hash), the id itself compared in its slot.
//!
//! Why not a `HashMap<AnchorId, Handle>`: its entries are 32 bytes (a `u128` key is
//! 16-aligned), so a run that makes 200,000 anchors writes a table of 8 MiB at random
//! places, and each doubling re-reads all of it; in the walker benchmark the inserts
//! and rehashes were a tenth of the samples, most of it waiting for cache misses.
//! Here an entry is 8 bytes at a load between a quarter and a half (16 to 32 bytes
//! an anchor, against 37 to 75 for the map at its load of 7/16 to 7/8), and a probe
//! reads the slot only when the 24 hash bits agree, so a miss almost never touches a
//! slot.

use crate::host::AnchorId;
use std::cell::RefCell;

/// Entries of a fresh table (a power of two).
const MIN_CAPACITY: usize = 16;
/// Bits of the slot index in an entry; the rest hold the top of the id's hash.
const INDEX_BITS: u32 = 40;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

#[derive(Default)]
pub struct IdIndex {
    table: RefCell<Table>,
}

#[derive(Default)]
struct Table {
    /// 0 = empty; else `index + 1` in the low bits, the hash's top bits above.
    entries: Vec<u64>,
    /// The ids held.
    len: usize,
    /// Slots `0..indexed` are in the table; the rest are added at the next lookup.
    indexed: usize,
}

/// A 64-bit mix of both halves of an id (ids made here are random in their low 80
/// bits, but roots and stored ids need not be).
#[inline]
fn hash(id: AnchorId) -> u64 {
    let mut x = (id as u64) ^ ((id >> 64) as u64).rotate_left(29);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The tag of a hash as it sits in an entry.
#[inline]
fn tag(h: u64) -> u64 {
    h & !INDEX_MASK
}

/// The slot index an entry holds.
#[inline]
fn slot_of(e: u64) -> usize {
    ((e & INDEX_MASK) - 1) as usize
}

/// The first position a hash probes in a table of `cap` entries (its top bits, so it
/// can be recomputed from an entry's tag while `cap` is at most 2^24).
#[inline]
fn home(h: u64, cap: usize) -> usize {
    (h >> (64 - cap.trailing_zeros())) as usize
}

impl IdIndex {
    /// The index of the slot of `id` among the `n` slots of the arena (`id_at(i)` is
    /// the id of slot `i`): the last of them with that id. Slots made since the last
    /// lookup are indexed first, in order.
    ///
    /// Indexing lazily is what makes a run that makes many anchors cheap: each entry
    /// lands at a random place of the table, a cache miss; one after another between
    /// the program's own work the misses come one at a time, while a batch of them in
    /// one loop overlaps them (about a tenth of the walker benchmark's samples went to
    /// the inserts made one per anchor).
    #[inline]
    pub fn get(&self, id: AnchorId, n: usize, id_at: impl Fn(usize) -> AnchorId) -> Option<usize> {
        if self.table.borrow().indexed < n {
            self.table.borrow_mut().catch_up(n, &id_at);
        }
        self.table.borrow().find(id, &id_at)
    }

    /// The indexes of the slots `get` finds among the first `n`, one per id, in no
    /// particular order.
    pub fn indexes(&self, n: usize, id_at: impl Fn(usize) -> AnchorId) -> Vec<usize> {
        if self.table.borrow().indexed < n {
            self.table.borrow_mut().catch_up(n, &id_at);
        }
        let t = self.table.borrow();
        t.entries
            .iter()
            .filter(|&&e| e != 0)
            .map(|&e| slot_of(e))
            .collect()
    }

    /// The number of ids held (after indexing the first `n` slots).
    #[cfg(test)]
    pub fn len(&self, n: usize, id_at: impl Fn(usize) -> AnchorId) -> usize {
        let _ = self.get(0, n, id_at);
        self.table.borrow().len
    }
}

impl Table {
    #[inline]
    fn find(&self, id: AnchorId, id_at: &impl Fn(usize) -> AnchorId) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        let h = hash(id);
        let mask = self.entries.len() - 1;
        let mut pos = home(h, self.entries.len());
        loop {
            let e = self.entries[pos];
            if e == 0 {
                return None;
            }
            if tag(e) == tag(h) && id_at(slot_of(e)) == id {
                return Some(slot_of(e));
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Index slots `indexed..n` in order (a later slot with an id already held
    /// replaces the earlier one, as a map's insert would). A slot index fits an
    /// entry's 40 bits: 2^40 slots are far beyond any arena memory allows (a slot is
    /// over 100 bytes).
    #[cold]
    #[inline(never)]
    fn catch_up(&mut self, n: usize, id_at: &impl Fn(usize) -> AnchorId) {
        let want = self.len + (n - self.indexed);
        if want * 2 > self.entries.len() {
            let cap = (want * 2).next_power_of_two().max(MIN_CAPACITY);
            self.grow(cap, id_at);
        }
        let mask = self.entries.len() - 1;
        for index in self.indexed..n {
            let id = id_at(index);
            let h = hash(id);
            let entry = tag(h) | (index as u64 + 1);
            let mut pos = home(h, self.entries.len());
            loop {
                let e = self.entries[pos];
                if e == 0 {
                    self.entries[pos] = entry;
                    self.len += 1;
                    break;
                }
                if tag(e) == tag(h) && id_at(slot_of(e)) == id {
                    self.entries[pos] = entry;
                    break;
                }
                pos = (pos + 1) & mask;
            }
        }
        self.indexed = n;
    }

    /// Move to a table of `cap` entries, placing each entry again: from its tag while
    /// the table is small enough, else from its slot's id.
    fn grow(&mut self, cap: usize, id_at: &impl Fn(usize) -> AnchorId) {
        self.place_all(cap, cap.trailing_zeros() <= 64 - INDEX_BITS, id_at);
    }

    /// `grow`, hashing from the tags or from the ids.
    fn place_all(&mut self, cap: usize, from_tag: bool, id_at: &impl Fn(usize) -> AnchorId) {
        let old = std::mem::replace(&mut self.entries, vec![0; cap]);
        let mask = cap - 1;
        for e in old.into_iter().filter(|&e| e != 0) {
            let h = if from_tag {
                tag(e)
            } else {
                hash(id_at(slot_of(e)))
            };
            let mut pos = home(h, cap);
            while self.entries[pos] != 0 {
                pos = (pos + 1) & mask;
            }
            self.entries[pos] = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{IdIndex, hash};
    use crate::host::AnchorId;

    /// Ids of slots, as the arena would hold them.
    fn ids(n: usize) -> Vec<AnchorId> {
        (1..=n as u128)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)) ^ (i << 100))
            .collect()
    }

    #[test]
    fn finds_every_id_across_growth_and_misses_others() {
        let slots = ids(5000);
        let ix = IdIndex::default();
        let at = |j: usize| slots[j];
        // Slots made one at a time with a lookup after each, then in batches.
        for n in 1..=1000 {
            assert_eq!(ix.get(slots[n - 1], n, at), Some(n - 1));
            assert_eq!(ix.get(slots[n], n, at), None, "not made yet");
        }
        for n in [1001, 1500, 4096, 5000] {
            assert_eq!(ix.get(slots[n - 1], n, at), Some(n - 1));
        }
        assert_eq!(ix.len(5000, at), 5000);
        for (k, &id) in slots.iter().enumerate() {
            assert_eq!(ix.get(id, 5000, at), Some(k));
        }
        for id in [0u128, 1, u128::MAX, slots[0] ^ 1] {
            assert_eq!(ix.get(id, 5000, at), None);
        }
        let mut seen = ix.indexes(5000, at);
        seen.sort_unstable();
        assert!(seen.into_iter().eq(0..5000));
    }

    #[test]
    fn an_id_made_again_maps_to_its_last_slot() {
        let slots: Vec<AnchorId> = vec![7, 9, 7, 9, 5];
        let at = |j: usize| slots[j];
        let ix = IdIndex::default();
        assert_eq!(ix.get(7, 2, at), Some(0));
        assert_eq!(ix.get(7, 3, at), Some(2));
        assert_eq!(ix.get(9, 5, at), Some(3));
        assert_eq!(ix.len(5, at), 3);
    }

    #[test]
    fn growing_from_the_ids_places_entries_as_from_the_tags() {
        let slots = ids(300);
        let at = |j: usize| slots[j];
        let ix = IdIndex::default();
        assert_eq!(ix.get(slots[0], 300, at), Some(0));
        // Tables beyond 2^24 entries rehash from the ids: the same places.
        let (from_tag, from_ids) = {
            let mut t = ix.table.borrow_mut();
            let cap = t.entries.len() * 2;
            t.place_all(cap, true, &at);
            let a = t.entries.clone();
            t.place_all(cap, false, &at);
            (a, t.entries.clone())
        };
        assert_eq!(from_tag, from_ids);
        for (k, &id) in slots.iter().enumerate() {
            assert_eq!(ix.get(id, 300, at), Some(k));
        }
    }

    #[test]
    fn small_ids_are_told_apart() {
        // Roots and test hosts use small ids: distinct hashes, several sharing a home
        // position in a small table.
        let slots: Vec<AnchorId> = (0..7).chain([1 << 64, 1 << 100]).collect();
        let at = |j: usize| slots[j];
        let ix = IdIndex::default();
        for (i, &id) in slots.iter().enumerate() {
            assert_eq!(ix.get(id, slots.len(), at), Some(i));
        }
        assert_ne!(hash(1), hash(1 << 64));
    }
}
