//! The IOTLB: a small cache of translations, filled by page-table walks and
//! emptied only by invalidation commands (or replacement), never by `unmap`.

use super::table::Pte;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes an I/O page number with one multiplication (Fibonacci hashing):
/// the keys are the lab's own page numbers, not input an attacker chooses,
/// and std's SipHash cost more than the rest of a lookup (callgrind: about
/// 150 instructions a translation).
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, vpn: u64) {
        self.0 = (self.0 ^ vpn).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct Entry {
    pte: Pte,
    /// When it was last used, on the IOTLB's own use counter.
    used: u64,
}

pub(super) struct Iotlb {
    capacity: usize,
    entries: HashMap<u64, Entry, BuildHasherDefault<PageHasher>>,
    uses: u64,
}

impl Iotlb {
    pub fn new(capacity: usize) -> Iotlb {
        Iotlb { capacity, entries: HashMap::with_capacity_and_hasher(capacity, Default::default()), uses: 0 }
    }

    /// The cached translation of I/O page `vpn`, marked as just used.
    pub fn lookup(&mut self, vpn: u64) -> Option<Pte> {
        self.uses += 1;
        let e = self.entries.get_mut(&vpn)?;
        e.used = self.uses;
        Some(e.pte)
    }

    /// Caches `pte` for `vpn`, replacing the least recently used entry when full.
    pub fn fill(&mut self, vpn: u64, pte: Pte) {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&vpn) {
            let lru = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(&v, _)| v);
            if let Some(v) = lru {
                self.entries.remove(&v);
            }
        }
        self.uses += 1;
        self.entries.insert(vpn, Entry { pte, used: self.uses });
    }

    /// Drops the entry of `vpn` (a cached permission that no longer serves).
    pub fn drop_page(&mut self, vpn: u64) {
        self.entries.remove(&vpn);
    }

    /// Drops the entries of pages `first..=last`.
    pub fn invalidate(&mut self, first: u64, last: u64) {
        self.entries.retain(|&vpn, _| !(first..=last).contains(&vpn));
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn contains(&self, vpn: u64) -> bool {
        self.entries.contains_key(&vpn)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
