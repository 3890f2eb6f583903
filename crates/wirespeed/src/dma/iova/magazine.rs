//! Magazines and a thread's three of them per size class ([`ClassCache`]):
//! the lock-free part of the magazine allocator (Bonwick & Adams; Linux
//! `iova_rcache`'s per-CPU `loaded`/`prev`, and a `spare`).
//!
//! [`ClassCache`] holds no lock of its own: its owner (a per-thread slot)
//! serializes the calls. It touches the depot's lock once per magazine's
//! worth of operations past what its three magazines hold, and the global
//! allocator's lock only when the thread's magazines and the depot are
//! empty (alloc) or full (free).

use super::{Depot, GlobalLockAllocator, IovaAllocator, MAGAZINE_SIZE};

/// A stack of up to `MAGAZINE_SIZE` IOVAs of one size class.
#[derive(Debug)]
pub(crate) struct Magazine {
    len: usize,
    iovas: [u64; MAGAZINE_SIZE],
}

impl Magazine {
    pub(crate) fn new_boxed() -> Box<Magazine> {
        Box::new(Magazine { len: 0, iovas: [0; MAGAZINE_SIZE] })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn pop(&mut self) -> Option<u64> {
        self.len = self.len.checked_sub(1)?;
        Some(self.iovas[self.len])
    }

    /// Pushes if there is room below `cap`.
    fn push(&mut self, iova: u64, cap: usize) -> bool {
        if self.len >= cap {
            return false;
        }
        self.iovas[self.len] = iova;
        self.len += 1;
        true
    }

    /// The IOVAs held; the magazine is left empty.
    pub(crate) fn take_all(&mut self) -> impl Iterator<Item = u64> + '_ {
        let n = std::mem::take(&mut self.len);
        self.iovas[..n].iter().copied()
    }
}

/// Counters of one [`ClassCache`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheCounts {
    pub(crate) hits: u64,
    pub(crate) frees: u64,
    pub(crate) depot_gets: u64,
    pub(crate) depot_puts: u64,
    pub(crate) depot_spills: u64,
}

/// A thread's `loaded` and `prev` magazines of one size class, and its
/// `spare`: a third magazine, empty or full, tried before the depot.
///
/// Linux's per-CPU rcache has `loaded` and `prev` only: 254 IOVAs, fewer
/// than a lazy flush queue's 256, so a thread that maps steadily trades a
/// magazine with the depot on every flush and its IOVAs end up on PTE cache
/// lines other threads write too (measured: every line a thread used was
/// shared, at 2 and 8 threads). With the spare, a flush queue's worth stays
/// in the thread.
#[derive(Debug)]
pub(crate) struct ClassCache {
    loaded: Box<Magazine>,
    prev: Box<Magazine>,
    spare: Box<Magazine>,
    /// Magazine capacity (`MAGAZINE_SIZE`; smaller in the loom model).
    cap: usize,
    /// Pages of an entry of this class (what the global allocator handed out).
    pages: u64,
    pub(crate) counts: CacheCounts,
}

impl ClassCache {
    pub(crate) fn new(pages: u64, cap: usize) -> ClassCache {
        ClassCache {
            loaded: Magazine::new_boxed(),
            prev: Magazine::new_boxed(),
            spare: Magazine::new_boxed(),
            cap: cap.clamp(1, MAGAZINE_SIZE),
            pages,
            counts: CacheCounts::default(),
        }
    }

    /// IOVAs cached here.
    pub(crate) fn len(&self) -> usize {
        self.loaded.len() + self.prev.len() + self.spare.len()
    }

    /// An IOVA from the magazines, swapping with `prev` or the `spare` or
    /// exchanging the empty `loaded` for a full magazine of the depot when needed; `None`
    /// when all are empty (the caller falls back to the global allocator).
    pub(crate) fn alloc(&mut self, depot: &Depot) -> Option<u64> {
        if let Some(iova) = self.loaded.pop() {
            self.counts.hits += 1;
            return Some(iova);
        }
        if !self.prev.is_empty() {
            std::mem::swap(&mut self.loaded, &mut self.prev);
        } else if !self.spare.is_empty() {
            std::mem::swap(&mut self.loaded, &mut self.spare);
        } else {
            if !depot.exchange_for_full(&mut self.loaded) {
                return None;
            }
            self.counts.depot_gets += 1;
        }
        let iova = self.loaded.pop()?;
        self.counts.hits += 1;
        Some(iova)
    }

    /// Caches an IOVA fresh from the global allocator (not a free: not
    /// counted as one); `false` if all three magazines are full.
    pub(crate) fn refill(&mut self, iova: u64) -> bool {
        self.loaded.push(iova, self.cap) || self.prev.push(iova, self.cap) || self.spare.push(iova, self.cap)
    }

    /// Caches a freed IOVA: into `loaded`, else after swapping with a `prev`
    /// that has room or an empty `spare`, else after handing the full `loaded` to the depot (or,
    /// when the depot is full, emptying it into the global allocator).
    pub(crate) fn free(&mut self, iova: u64, depot: &Depot, global: &GlobalLockAllocator) {
        self.counts.frees += 1;
        if self.loaded.push(iova, self.cap) {
            return;
        }
        if self.prev.len() < self.cap {
            std::mem::swap(&mut self.loaded, &mut self.prev);
        } else if self.spare.is_empty() {
            std::mem::swap(&mut self.loaded, &mut self.spare);
        } else {
            if depot.exchange_for_empty(&mut self.loaded) {
                self.counts.depot_puts += 1;
            } else {
                let pages = self.pages;
                global.free_batch(self.loaded.take_all().map(|i| (i, pages)));
                self.counts.depot_spills += 1;
            }
        }
        if !self.loaded.push(iova, self.cap) {
            // Unreachable (`loaded` is empty or was `prev` with room), but
            // never lose an IOVA.
            global.free(iova, self.pages);
        }
    }

    /// Every cached IOVA back to the global allocator.
    pub(crate) fn flush(&mut self, global: &GlobalLockAllocator) {
        let pages = self.pages;
        let all = self.loaded.take_all().chain(self.prev.take_all()).chain(self.spare.take_all());
        global.free_batch(all.map(|i| (i, pages)));
    }

    /// Thread exit: full magazines to the depot (while it has room), the rest
    /// to the global allocator.
    pub(crate) fn retire(&mut self, depot: &Depot, global: &GlobalLockAllocator) {
        for mag in [&mut self.loaded, &mut self.prev, &mut self.spare] {
            if mag.len() >= self.cap {
                depot.exchange_for_empty(mag);
            }
        }
        self.flush(global);
    }
}
