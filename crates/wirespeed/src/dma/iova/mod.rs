//! IOVA allocators: which device-address ranges are free.
//!
//! One small trait, [`IovaAllocator`], and two allocators over an IOVA space
//! `[base, limit)` of 4096-byte pages. Every range is aligned naturally to the
//! power of two at or above its size, as Linux's `alloc_iova(..., size_aligned)`.
//!
//! - [`GlobalLockAllocator`] (`global.rs`): one mutex around an ordered map of
//!   free ranges — Linux's rbtree under one spinlock, the classic baseline.
//! - [`MagazineAllocator`] (`rcache.rs`): Linux's iova rcache (Bonwick & Adams
//!   magazines, Peleg et al. ATC'15): per-thread magazines (`magazine.rs`)
//!   in front of a bounded depot (`depot.rs`) in front of the global
//!   allocator, placed so that threads do not share PTE cache lines (`rcache.rs`).

mod depot;
mod global;
mod magazine;
mod rcache;

pub use global::GlobalLockAllocator;
pub use rcache::MagazineAllocator;

pub(crate) use depot::Depot;
pub(crate) use magazine::ClassCache;

use crate::sync::{Mutex, MutexGuard};
use std::sync::PoisonError;

/// Hands out and takes back IOVA ranges of whole pages.
pub trait IovaAllocator: Send + Sync {
    /// The IOVA (a byte address) of a free range of `pages` pages, naturally
    /// aligned; `None` if there is none (or `pages` is 0).
    fn alloc(&self, pages: u64) -> Option<u64>;
    /// Gives back a range from [`alloc`](IovaAllocator::alloc) with the same `pages`.
    fn free(&self, iova: u64, pages: u64);
}

/// Counters of an IOVA allocator (a snapshot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IovaStats {
    /// Allocations served from a thread's magazines (no shared lock).
    pub cache_hits: u64,
    /// Frees taken by a thread's magazines.
    pub cache_frees: u64,
    /// Allocations served by the global allocator (its lock).
    pub global_allocs: u64,
    /// Frees given to the global allocator.
    pub global_frees: u64,
    /// Full magazines taken from the depot.
    pub depot_gets: u64,
    /// Full magazines given to the depot.
    pub depot_puts: u64,
    /// Full magazines emptied into the global allocator because the depot was full.
    pub depot_spills: u64,
    /// Times every cache was drained into the global allocator (explicitly,
    /// or by an allocation that found the space exhausted).
    pub cache_drains: u64,
    /// Frees that were refused (outside the space, misaligned, or overlapping
    /// a free range: a double free). Nothing was changed by them.
    pub bad_frees: u64,
    /// Ranges the global allocator has handed out and not got back (cached
    /// ranges included).
    pub global_outstanding: u64,
    /// Ranges held in magazines and the depot.
    pub cached: u64,
}

impl IovaStats {
    /// Ranges held by users: handed out and not freed.
    pub fn outstanding(&self) -> u64 {
        self.global_outstanding.saturating_sub(self.cached)
    }
}

/// Bytes in an IOVA page.
pub(crate) const PAGE: u64 = 4096;
/// Sizes up to this many pages (128 KiB) are cached in magazines.
pub const MAX_CACHED_PAGES: u64 = 32;
/// Size classes: 1, 2, 4, 8, 16, 32 pages.
pub(crate) const NUM_CLASSES: usize = 6;
/// Entries per magazine (Linux `IOVA_MAG_SIZE`).
pub const MAGAZINE_SIZE: usize = 127;
/// Full magazines the depot holds per size class before it spills to the
/// global allocator.
pub const DEPOT_MAX_MAGAZINES: usize = 32;
/// Pages whose leaf PTEs share one 64-byte cache line (8-byte PTEs, as in
/// VT-d's, the SMMU's and the lab's tables). A thread's caches take fresh
/// IOVAs of the smaller classes from the global allocator in aligned runs
/// of this many pages, so that two threads do not write PTEs in one line.
pub const PTE_LINE_PAGES: u64 = 8;

/// Pages of the range the magazine allocator hands out for `pages`: its
/// class's size, or `pages` itself above the cached sizes.
pub(crate) fn handed_out_pages(pages: u64) -> u64 {
    class_of(pages).map_or(pages, |class| 1u64 << class)
}

/// The size class of `pages` (rounded up to a power of two), if cached.
pub(crate) fn class_of(pages: u64) -> Option<usize> {
    if pages == 0 || pages > MAX_CACHED_PAGES {
        return None;
    }
    Some(pages.next_power_of_two().trailing_zeros() as usize)
}

/// Locks, ignoring poison (nothing in this module panics while holding a lock).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
