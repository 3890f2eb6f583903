//! [`MagazineAllocator`]: Linux's iova rcache — per-thread magazines, a
//! bounded depot per size class, the global allocator behind them.
//!
//! Per-thread state lives in a slot (see `per_thread.rs`) holding one
//! [`ClassCache`] per size class under a **per-thread lock** (a spin lock,
//! `slot_lock.rs`). The lock is uncontended on the fast path: only the owning thread takes it, except
//! when [`drain_caches`](MagazineAllocator::drain_caches) (or an allocation
//! that found the space exhausted, as Linux's `free_cpu_cached_iovas`) reaches
//! into other threads' caches, and that is why it is a lock and not a
//! `RefCell` — the same choice as Linux, whose per-CPU rcache has a spinlock
//! that only its CPU takes in the common case. The owning thread's side of
//! the lock is two plain stores and a load on a cache line the thread owns
//! (no locked instruction: see `slot_lock.rs`); the rare side pays a membarrier.
//!
//! Where it departs from Linux, so that a thread's IOVAs keep to PTE cache
//! lines no other thread writes (false sharing of those lines cost half the
//! two-CPU throughput at times, measured; see `PTE_LINE_PAGES`):
//! - fresh IOVAs of the classes below a line come from the global allocator
//!   as one aligned run of a line's pages (one to the caller, the rest
//!   cached), not one range at a time;
//! - a thread has a third magazine, its `spare` (`magazine.rs`), so that a
//!   lazy flush queue's worth stays in the thread instead of going through
//!   the depot on every flush;
//! - a flush of every thread's queue (the domain's timer, `flush`) frees
//!   into the global allocator ([`free_to_global`](MagazineAllocator::free_to_global)),
//!   not into the flushing thread's magazines.
//!
//! A thread's slot is returned when the thread exits (full magazines to the
//! depot, the rest to the global allocator). When the allocator is dropped,
//! the whole IOVA space goes with it; threads' stale slots are inert and are
//! purged on their next use of the table or at their exit.

use super::{
    class_of, handed_out_pages, ClassCache, Depot, GlobalLockAllocator, IovaAllocator, IovaStats, DEPOT_MAX_MAGAZINES,
    MAGAZINE_SIZE, NUM_CLASSES, PTE_LINE_PAGES,
};
use crate::dma::error::DmaError;
use crate::dma::per_thread::{self, ThreadSlot};
use crate::dma::slot_lock::SlotLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Per-thread magazines in front of a depot in front of a [`GlobalLockAllocator`].
#[derive(Debug)]
pub struct MagazineAllocator {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    id: u64,
    global: GlobalLockAllocator,
    depots: [Depot; NUM_CLASSES],
    /// Every live thread's slot (for draining and statistics).
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Counters of exited threads.
    retired: Retired,
    drains: AtomicU64,
}

#[derive(Debug, Default)]
struct Retired {
    hits: AtomicU64,
    frees: AtomicU64,
    depot_gets: AtomicU64,
    depot_puts: AtomicU64,
    depot_spills: AtomicU64,
}

#[derive(Debug)]
struct Slot {
    classes: SlotLock<[ClassCache; NUM_CLASSES]>,
    owner: Weak<Shared>,
}

impl ThreadSlot for Slot {
    fn thread_exit(&self) {
        let Some(shared) = self.owner.upgrade() else { return };
        {
            // Lock order everywhere: registry, then a thread's classes.
            let mut slots = lock_std(&shared.slots);
            let mut classes = self.classes.lock();
            for (c, depot) in classes.iter_mut().zip(&shared.depots) {
                c.retire(depot, &shared.global);
                let r = &shared.retired;
                r.hits.fetch_add(c.counts.hits, Ordering::Relaxed);
                r.frees.fetch_add(c.counts.frees, Ordering::Relaxed);
                r.depot_gets.fetch_add(c.counts.depot_gets, Ordering::Relaxed);
                r.depot_puts.fetch_add(c.counts.depot_puts, Ordering::Relaxed);
                r.depot_spills.fetch_add(c.counts.depot_spills, Ordering::Relaxed);
                c.counts = Default::default();
            }
            slots.retain(|s| !std::ptr::eq(Arc::as_ptr(s), self));
        }
    }

    fn owner_alive(&self) -> bool {
        self.owner.strong_count() > 0
    }
}

impl MagazineAllocator {
    /// An allocator over `[base, limit)` (the rules of [`GlobalLockAllocator::new`]).
    pub fn new(base: u64, limit: u64) -> Result<MagazineAllocator, DmaError> {
        let global = GlobalLockAllocator::new(base, limit)?;
        let shared = Shared {
            id: per_thread::new_owner_id(),
            global,
            depots: std::array::from_fn(|_| Depot::new(DEPOT_MAX_MAGAZINES)),
            slots: Mutex::new(Vec::new()),
            retired: Retired::default(),
            drains: AtomicU64::new(0),
        };
        Ok(MagazineAllocator { shared: Arc::new(shared) })
    }

    /// The global allocator behind the caches.
    pub fn global(&self) -> &GlobalLockAllocator {
        &self.shared.global
    }

    /// Pages of the whole space.
    pub fn space_pages(&self) -> u64 {
        self.shared.global.space_pages()
    }

    /// Runs `f` on this thread's caches (`None`: the thread is exiting).
    fn with_caches<R>(&self, f: impl FnOnce(&mut [ClassCache; NUM_CLASSES]) -> R) -> Option<R> {
        let shared = &self.shared;
        per_thread::with(
            shared.id,
            || {
                let slot = Arc::new(Slot {
                    classes: SlotLock::new(std::array::from_fn(|i| ClassCache::new(1 << i, MAGAZINE_SIZE))),
                    owner: Arc::downgrade(shared),
                });
                lock_std(&shared.slots).push(slot.clone());
                slot
            },
            // SAFETY: `per_thread::with` hands this thread its own slot, and
            // nothing under this lock takes it again.
            |slot: &Slot| f(&mut *unsafe { slot.classes.lock_own() }),
        )
    }

    /// Returns every cached IOVA (all threads' magazines and the depot) to
    /// the global allocator. Afterwards [`GlobalLockAllocator::outstanding`]
    /// counts exactly the ranges users hold.
    pub fn drain_caches(&self) {
        let shared = &self.shared;
        shared.drains.fetch_add(1, Ordering::Relaxed);
        let slots: Vec<Arc<Slot>> = lock_std(&shared.slots).clone();
        for slot in slots {
            let mut classes = slot.classes.lock();
            for c in classes.iter_mut() {
                c.flush(&shared.global);
            }
        }
        for (i, depot) in shared.depots.iter().enumerate() {
            let mut mags = depot.take_full();
            let pages = 1u64 << i;
            shared.global.free_batch(mags.iter_mut().flat_map(|m| m.take_all().map(move |iova| (iova, pages))));
            depot.put_empty(mags);
        }
    }

    /// IOVAs held in magazines and depots (a snapshot; exact when no other
    /// thread is allocating).
    pub fn cached(&self) -> u64 {
        let shared = &self.shared;
        let mut n: u64 = shared.depots.iter().map(|d| d.cached() as u64).sum();
        for slot in lock_std(&shared.slots).iter() {
            n += slot.classes.lock().iter().map(|c| c.len() as u64).sum::<u64>();
        }
        n
    }

    /// Ranges users hold: handed out and not freed (a snapshot).
    pub fn outstanding(&self) -> u64 {
        self.stats().outstanding()
    }

    /// Full magazines in the depots.
    pub fn depot_magazines(&self) -> usize {
        self.shared.depots.iter().map(Depot::full_magazines).sum()
    }

    /// Counters, summed over the threads (a snapshot).
    pub fn stats(&self) -> IovaStats {
        let shared = &self.shared;
        let r = &shared.retired;
        let mut s = shared.global.stats();
        s.cache_hits = r.hits.load(Ordering::Relaxed);
        s.cache_frees = r.frees.load(Ordering::Relaxed);
        s.depot_gets = r.depot_gets.load(Ordering::Relaxed);
        s.depot_puts = r.depot_puts.load(Ordering::Relaxed);
        s.depot_spills = r.depot_spills.load(Ordering::Relaxed);
        s.cache_drains = shared.drains.load(Ordering::Relaxed);
        for slot in lock_std(&shared.slots).iter() {
            for c in slot.classes.lock().iter() {
                s.cache_hits += c.counts.hits;
                s.cache_frees += c.counts.frees;
                s.depot_gets += c.counts.depot_gets;
                s.depot_puts += c.counts.depot_puts;
                s.depot_spills += c.counts.depot_spills;
                s.cached += c.len() as u64;
            }
        }
        s.cached += shared.depots.iter().map(|d| d.cached() as u64).sum::<u64>();
        s
    }
}

impl IovaAllocator for MagazineAllocator {
    fn alloc(&self, pages: u64) -> Option<u64> {
        let shared = &self.shared;
        if let Some(class) = class_of(pages) {
            let depot = &shared.depots[class];
            let cached = self.with_caches(|c| c[class].alloc(depot).or_else(|| shared.refill(&mut c[class], class)));
            if let Some(Some(iova)) = cached {
                return Some(iova);
            }
        }
        let size = handed_out_pages(pages);
        shared.global.alloc(size).or_else(|| {
            // Exhausted: take back what the caches hold and try once more
            // (Linux: free_cpu_cached_iovas + free_global_cached_iovas).
            self.drain_caches();
            shared.global.alloc(size)
        })
    }

    fn free(&self, iova: u64, pages: u64) {
        let shared = &self.shared;
        let Some((class, size)) = shared.cacheable(iova, pages) else {
            return shared.free_uncached(iova, pages);
        };
        let depot = &shared.depots[class];
        if self.with_caches(|c| c[class].free(iova, depot, &shared.global)).is_none() {
            shared.global.free(iova, size);
        }
    }
}

impl Shared {
    /// A thread's caches of `class` are empty, and so is the depot: one
    /// IOVA for the caller, and the rest of an aligned run of
    /// [`PTE_LINE_PAGES`] pages into the caches, so that the leaf PTEs of
    /// this run's pages (one cache line) are written by this thread alone.
    /// `None` for classes of a line or more (the caller takes one range
    /// from the global allocator as before) or when no run is free.
    fn refill(&self, cache: &mut ClassCache, class: usize) -> Option<u64> {
        let size = 1u64 << class;
        let count = PTE_LINE_PAGES / size;
        if count < 2 {
            return None;
        }
        let run = self.global.alloc_run(size, count)?;
        for i in 1..count {
            let iova = run + i * size * super::PAGE;
            if !cache.refill(iova) {
                // Unreachable (the caches were empty), but never lose an IOVA.
                self.global.free(iova, size);
            }
        }
        Some(run)
    }

    /// The class of a freed range and the size the caches hand out for it, or
    /// `None` for a range the caches do not take (too large, or misaligned
    /// or foreign: not one we handed out for its class).
    fn cacheable(&self, iova: u64, pages: u64) -> Option<(usize, u64)> {
        let class = class_of(pages)?;
        let size = 1u64 << class;
        let (base, limit) = self.global.range();
        (iova.is_multiple_of(size * super::PAGE) && iova >= base && iova < limit).then_some((class, size))
    }

    /// A free the caches do not take, to the global allocator (refused and
    /// counted there if it is not a range it handed out).
    fn free_uncached(&self, iova: u64, pages: u64) {
        self.global.free(iova, handed_out_pages(pages));
    }
}

impl MagazineAllocator {
    /// Frees what `f` hands to the function it is given straight into the
    /// global allocator (one lock), not into this thread's caches: for a
    /// flush of other threads' queues, whose IOVAs would otherwise land in
    /// the flushing thread's magazines and share PTE lines with their
    /// owners' IOVAs from then on.
    pub(crate) fn free_to_global(&self, f: impl FnOnce(&mut dyn FnMut(u64, u64))) {
        self.shared.global.free_with(|free| f(&mut |iova, pages| free(iova, handed_out_pages(pages))));
    }

    /// Frees many ranges with one look-up (and one lock) of this thread's
    /// caches: `f` is handed the function that frees one `(iova, pages)`.
    /// For a lazy flush queue's entries after their flush.
    pub(crate) fn free_many(&self, f: impl FnOnce(&mut dyn FnMut(u64, u64))) {
        let shared = &self.shared;
        let mut f = Some(f);
        let done = self.with_caches(|c| {
            if let Some(f) = f.take() {
                f(&mut |iova, pages| match shared.cacheable(iova, pages) {
                    Some((class, _)) => c[class].free(iova, &shared.depots[class], &shared.global),
                    None => shared.free_uncached(iova, pages),
                });
            }
        });
        if done.is_none() {
            if let Some(f) = f {
                f(&mut |iova, pages| self.free(iova, pages));
            }
        }
    }
}

fn lock_std<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
