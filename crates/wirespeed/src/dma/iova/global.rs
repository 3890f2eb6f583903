//! [`GlobalLockAllocator`]: free IOVA ranges in an ordered map under one
//! mutex — the classic baseline (Linux's iova rbtree under one spinlock),
//! and the backing store of the magazine allocator.
//!
//! Allocation is top-down (highest fitting range first, as Linux does) and
//! naturally aligned; frees coalesce with their neighbours. A free that is
//! outside the space, misaligned, or overlaps a free range (a double free) is
//! refused and counted, and changes nothing.

use super::{lock, IovaAllocator, IovaStats, PAGE};
use crate::dma::error::DmaError;
use crate::sync::Mutex;
use std::collections::BTreeMap;

/// One mutex around an ordered map of free ranges.
#[derive(Debug)]
pub struct GlobalLockAllocator {
    base: u64,
    limit: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Free ranges: start -> end (exclusive), disjoint, never adjacent.
    free: BTreeMap<u64, u64>,
    allocs: u64,
    frees: u64,
    bad_frees: u64,
    outstanding: u64,
    outstanding_pages: u64,
}

impl GlobalLockAllocator {
    /// An allocator over `[base, limit)`: both page-aligned, `base > 0` (IOVA
    /// 0 is never handed out), `base < limit`.
    pub fn new(base: u64, limit: u64) -> Result<GlobalLockAllocator, DmaError> {
        if base == 0 || !base.is_multiple_of(PAGE) {
            return Err(DmaError::InvalidConfig {
                what: "iova_base",
                value: base,
                allowed: "a non-zero multiple of 4096",
            });
        }
        if !limit.is_multiple_of(PAGE) || limit <= base {
            return Err(DmaError::InvalidConfig {
                what: "iova_limit",
                value: limit,
                allowed: "a multiple of 4096 above iova_base",
            });
        }
        let mut free = BTreeMap::new();
        free.insert(base, limit);
        let inner = Inner { free, allocs: 0, frees: 0, bad_frees: 0, outstanding: 0, outstanding_pages: 0 };
        Ok(GlobalLockAllocator { base, limit, inner: Mutex::new(inner) })
    }

    /// Pages of the whole space.
    pub fn space_pages(&self) -> u64 {
        (self.limit - self.base) / PAGE
    }

    /// `[base, limit)` of the space.
    pub fn range(&self) -> (u64, u64) {
        (self.base, self.limit)
    }

    /// Ranges handed out and not freed.
    pub fn outstanding(&self) -> u64 {
        lock(&self.inner).outstanding
    }

    /// Pages handed out and not freed.
    pub fn outstanding_pages(&self) -> u64 {
        lock(&self.inner).outstanding_pages
    }

    /// Free ranges in the map (1 when everything is free).
    pub fn free_ranges(&self) -> usize {
        lock(&self.inner).free.len()
    }

    /// Counters (`cache_*`, `depot_*` and `cached` are 0).
    pub fn stats(&self) -> IovaStats {
        let g = lock(&self.inner);
        IovaStats {
            global_allocs: g.allocs,
            global_frees: g.frees,
            bad_frees: g.bad_frees,
            global_outstanding: g.outstanding,
            ..IovaStats::default()
        }
    }

    /// Frees many ranges under one lock acquisition.
    pub(crate) fn free_batch(&self, ranges: impl IntoIterator<Item = (u64, u64)>) {
        self.free_with(|free| ranges.into_iter().for_each(|(iova, pages)| free(iova, pages)));
    }

    fn free_locked(&self, g: &mut Inner, iova: u64, pages: u64) {
        let Some(size) = pages.checked_mul(PAGE) else {
            g.bad_frees += 1;
            return;
        };
        let end = iova.wrapping_add(size);
        if pages == 0 || !iova.is_multiple_of(PAGE) || iova < self.base || end > self.limit || end < iova {
            g.bad_frees += 1;
            return;
        }
        let prev = g.free.range(..iova).next_back().map(|(&s, &e)| (s, e));
        let next = g.free.range(iova..).next().map(|(&s, &e)| (s, e));
        if prev.is_some_and(|(_, e)| e > iova) || next.is_some_and(|(s, _)| s < end) {
            g.bad_frees += 1;
            return;
        }
        let mut start = iova;
        let mut stop = end;
        if let Some((s, e)) = prev {
            if e == iova {
                g.free.remove(&s);
                start = s;
            }
        }
        if let Some((s, e)) = next {
            if s == end {
                g.free.remove(&s);
                stop = e;
            }
        }
        g.free.insert(start, stop);
        g.frees += 1;
        g.outstanding = g.outstanding.saturating_sub(1);
        g.outstanding_pages = g.outstanding_pages.saturating_sub(pages);
    }
}

impl GlobalLockAllocator {
    /// `count` consecutive ranges of `pages` pages each, allocated as one
    /// naturally aligned block and counted as `count` allocations: each is
    /// freed on its own. (`pages * count` must be a power of two.)
    pub(crate) fn alloc_run(&self, pages: u64, count: u64) -> Option<u64> {
        self.alloc_block(pages.checked_mul(count)?, count)
    }

    /// Frees what `f` hands to the function it is given, under one lock
    /// acquisition (for frees produced one by one, as a flush queue's).
    pub(crate) fn free_with(&self, f: impl FnOnce(&mut dyn FnMut(u64, u64))) {
        let mut g = lock(&self.inner);
        f(&mut |iova, pages| self.free_locked(&mut g, iova, pages));
    }

    /// A block of `pages` pages, counted as `count` ranges handed out.
    fn alloc_block(&self, pages: u64, count: u64) -> Option<u64> {
        if pages == 0 || pages > self.space_pages() {
            return None;
        }
        let size = pages * PAGE;
        let align = pages.next_power_of_two() * PAGE;
        let mut g = lock(&self.inner);
        let (s, e, start) = g.free.iter().rev().find_map(|(&s, &e)| {
            if e - s < size {
                return None;
            }
            let start = (e - size) & !(align - 1);
            (start >= s).then_some((s, e, start))
        })?;
        g.free.remove(&s);
        if start > s {
            g.free.insert(s, start);
        }
        if start + size < e {
            g.free.insert(start + size, e);
        }
        g.allocs += count;
        g.outstanding += count;
        g.outstanding_pages += pages;
        Some(start)
    }
}

impl IovaAllocator for GlobalLockAllocator {
    fn alloc(&self, pages: u64) -> Option<u64> {
        self.alloc_block(pages, 1)
    }

    fn free(&self, iova: u64, pages: u64) {
        let mut g = lock(&self.inner);
        self.free_locked(&mut g, iova, pages);
    }
}
