//! The IOTLB: a small cache of translations, filled by page-table walks and
//! emptied only by invalidation commands (or replacement), never by `unmap`.

use super::table::Pte;
use std::collections::HashMap;

struct Entry {
    pte: Pte,
    /// When it was last used, on the IOTLB's own use counter.
    used: u64,
}

pub(super) struct Iotlb {
    capacity: usize,
    entries: HashMap<u64, Entry>,
    uses: u64,
}

impl Iotlb {
    pub fn new(capacity: usize) -> Iotlb {
        Iotlb { capacity, entries: HashMap::with_capacity(capacity), uses: 0 }
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
