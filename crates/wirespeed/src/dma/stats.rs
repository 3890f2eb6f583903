//! Counters of a [`DmaDomain`](super::DmaDomain): per-thread relaxed atomics
//! that only their thread writes (no shared cache line on the hot path),
//! summed on read; an exiting thread's counts are folded into the domain's.

use super::iova::IovaStats;
use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a domain's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaStats {
    /// Mappings made (`map`, `map_range`, `map_raw`, `map_sg`: one each).
    pub maps: u64,
    /// Mappings ended.
    pub unmaps: u64,
    /// Range invalidations (strict unmaps, error clean-up).
    pub invalidations: u64,
    /// Global invalidations (lazy flushes).
    pub invalidate_alls: u64,
    /// Lazy flushes (queue full, timer, explicit `flush`, thread exit).
    pub flushes: u64,
    /// Lazy flushes run by the timer thread.
    pub timer_flushes: u64,
    /// Requests the IOMMU refused (at unmap: the range is quarantined).
    pub hw_errors: u64,
    /// Unmapped ranges waiting in flush queues.
    pub lazy_pending: u64,
    /// The IOVA allocator's counters (`cache_hits` vs `global_allocs`).
    pub iova: IovaStats,
}

/// One thread's (or the retired threads') counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) maps: AtomicU64,
    pub(crate) unmaps: AtomicU64,
    pub(crate) invalidations: AtomicU64,
    pub(crate) invalidate_alls: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) timer_flushes: AtomicU64,
    pub(crate) hw_errors: AtomicU64,
}

/// Adds 1 (relaxed: a counter, ordering nothing).
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Adds 1 to a counter of the calling thread's own slot: a load and a store,
/// not a read-modify-write (a locked instruction on x86), since no other
/// thread writes it (readers only sum; the owner itself moves it out at exit).
pub(crate) fn bump_own(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

impl Counters {
    /// Adds these counts to `s`.
    pub(crate) fn add_to(&self, s: &mut DmaStats) {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        s.maps += l(&self.maps);
        s.unmaps += l(&self.unmaps);
        s.invalidations += l(&self.invalidations);
        s.invalidate_alls += l(&self.invalidate_alls);
        s.flushes += l(&self.flushes);
        s.timer_flushes += l(&self.timer_flushes);
        s.hw_errors += l(&self.hw_errors);
    }

    /// Moves these counts into `to` (thread exit).
    pub(crate) fn retire_into(&self, to: &Counters) {
        let pairs = [
            (&self.maps, &to.maps),
            (&self.unmaps, &to.unmaps),
            (&self.invalidations, &to.invalidations),
            (&self.invalidate_alls, &to.invalidate_alls),
            (&self.flushes, &to.flushes),
            (&self.timer_flushes, &to.timer_flushes),
            (&self.hw_errors, &to.hw_errors),
        ];
        for (from, to) in pairs {
            to.fetch_add(from.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}
