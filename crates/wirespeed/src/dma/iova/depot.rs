//! The depot of one size class: full magazines shared by all threads, plus a
//! pool of spare empty ones, under one mutex taken once per magazine's worth
//! of cache operations (Bonwick & Adams; Linux `iova_rcache.depot`).
//!
//! Magazines circulate instead of being allocated: a thread that takes a full
//! magazine leaves its empty one in the pool, a thread that hands in a full
//! one takes an empty one from the pool. A new magazine is allocated only
//! when the pool is empty (while the number in circulation grows to its
//! working size). The depot holds at most `max_full` full magazines (Linux's
//! is unbounded and trimmed by a timer; a bound needs no timer): a thread
//! whose full magazine does not fit frees its entries to the global allocator.

use super::lock;
use super::magazine::Magazine;
use crate::sync::Mutex;

/// Full magazines and spare empty ones of one size class.
#[derive(Debug)]
pub(crate) struct Depot {
    inner: Mutex<Inner>,
    max_full: usize,
}

// Boxed: a magazine moves between a thread and the depot as a pointer
// swap, never as a copy of its 1 KiB array.
#[allow(clippy::vec_box)]
#[derive(Debug)]
struct Inner {
    full: Vec<Box<Magazine>>,
    empty: Vec<Box<Magazine>>,
}

impl Depot {
    pub(crate) fn new(max_full: usize) -> Depot {
        let inner = Inner { full: Vec::with_capacity(max_full), empty: Vec::with_capacity(max_full) };
        Depot { inner: Mutex::new(inner), max_full }
    }

    /// Swaps the (empty) magazine in `slot` for a full one; `false` (nothing
    /// changed) if the depot has none.
    pub(crate) fn exchange_for_full(&self, slot: &mut Box<Magazine>) -> bool {
        let surplus = {
            let mut d = lock(&self.inner);
            let Some(full) = d.full.pop() else { return false };
            let empty = std::mem::replace(slot, full);
            if d.empty.len() < self.max_full {
                d.empty.push(empty);
                None
            } else {
                Some(empty)
            }
        };
        drop(surplus); // freed outside the lock
        true
    }

    /// Swaps the full magazine in `slot` for an empty one; `false` (nothing
    /// changed) if the depot already holds `max_full` full magazines.
    pub(crate) fn exchange_for_empty(&self, slot: &mut Box<Magazine>) -> bool {
        let mut d = lock(&self.inner);
        if d.full.len() >= self.max_full {
            return false;
        }
        let empty = d.empty.pop().unwrap_or_else(Magazine::new_boxed);
        let full = std::mem::replace(slot, empty);
        d.full.push(full);
        true
    }

    /// Takes every full magazine out (to be emptied into the global allocator).
    #[allow(clippy::vec_box)]
    pub(crate) fn take_full(&self) -> Vec<Box<Magazine>> {
        lock(&self.inner).full.drain(..).collect()
    }

    /// Hands emptied magazines back to the spare pool (the surplus is freed).
    pub(crate) fn put_empty(&self, mags: impl IntoIterator<Item = Box<Magazine>>) {
        let mut d = lock(&self.inner);
        for m in mags {
            if d.empty.len() < self.max_full && m.is_empty() {
                d.empty.push(m);
            }
        }
    }

    /// IOVAs held in full magazines.
    pub(crate) fn cached(&self) -> usize {
        lock(&self.inner).full.iter().map(|m| m.len()).sum()
    }

    /// Full magazines held.
    pub(crate) fn full_magazines(&self) -> usize {
        lock(&self.inner).full.len()
    }
}
