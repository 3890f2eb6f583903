//! Map+unmap pairs per second: the IOVA allocator under threads (seed 003).
//!
//! Each thread maps one page-sized buffer and unmaps it again, as a driver
//! does per message, for a fixed window; the figure is all threads' pairs
//! over the window. Both allocators run on the same lab IOMMU in the same
//! mode, interleaved round by round (magazines, global lock, magazines, …),
//! so that what differs is the allocator alone.
//!
//! [`bound`] works out, from measurements of the same run, the most the
//! 8-thread ratio can be on this machine (`dma.magazine_vs_lock_8t_bound`)
//! and where a magazine pair's time goes (lab IOMMU, allocator, the rest of
//! the domain); see [`Bound`] for how.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use wirespeed::dma::{
    AllocatorKind, Direction, DmaBuffer, DmaDomain, DomainConfig, GlobalLockAllocator, IommuHw, IommuHwError,
    IommuMode, IovaAllocator, MagazineAllocator, Perm,
};
use wirespeed_time::now;

use crate::stats::median;

/// One measured window: how many pairs all threads completed, and in how long.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub pairs: u64,
    pub elapsed_ns: u64,
}

impl Window {
    pub fn pairs_per_s(&self) -> f64 {
        self.pairs as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
}

/// Runs `threads` threads mapping and unmapping for `window` on a fresh
/// domain with `allocator` over `hw` in `mode`; fails on the first mapping error.
pub fn window(
    hw: &Arc<dyn IommuHw>,
    mode: IommuMode,
    allocator: AllocatorKind,
    threads: usize,
    window: Duration,
) -> Result<Window, String> {
    let domain = Arc::new(
        DmaDomain::new(Some(hw.clone()), DomainConfig { mode, allocator, ..DomainConfig::default() })
            .map_err(|e| e.to_string())?,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (domain, stop, total, start) = (domain.clone(), stop.clone(), total.clone(), start.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let buf = DmaBuffer::new(4096).map_err(|e| e.to_string())?;
                let phys = buf.phys();
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        // SAFETY: `buf` outlives the mapping, which is unmapped at once.
                        let m = unsafe { domain.map_raw(phys, 4096, Direction::Bidirectional) }
                            .map_err(|e| e.to_string())?;
                        domain.unmap_raw(m).map_err(|e| e.to_string())?;
                    }
                    n += 64;
                }
                total.fetch_add(n, Ordering::Relaxed);
                drop(buf);
                Ok(())
            })
        })
        .collect();
    start.wait();
    let t0 = now();
    std::thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    let mut first_error = None;
    for w in workers {
        match w.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => first_error = first_error.or(Some(e)),
            Err(_) => first_error = first_error.or(Some("a mapping thread panicked".to_owned())),
        }
    }
    let elapsed_ns = now().ns_since(t0);
    domain.flush();
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(Window { pairs: total.load(Ordering::Relaxed), elapsed_ns })
}

/// Pairs per second of both allocators at one thread count: medians of
/// `rounds` interleaved windows each.
#[derive(Clone, Debug)]
pub struct ThreadPoint {
    pub threads: usize,
    pub magazines_per_s: f64,
    pub global_lock_per_s: f64,
}

impl ThreadPoint {
    pub fn ratio(&self) -> f64 {
        self.magazines_per_s / self.global_lock_per_s.max(f64::MIN_POSITIVE)
    }
}

/// Measures every thread count in `threads`, both allocators interleaved.
pub fn run(
    hw: &Arc<dyn IommuHw>,
    mode: IommuMode,
    threads: &[usize],
    rounds: u32,
    win: Duration,
) -> Result<Vec<ThreadPoint>, String> {
    let mut points = Vec::new();
    for &t in threads {
        let (mut mag, mut lock) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            mag.push(window(hw, mode, AllocatorKind::Magazines, t, win)?.pairs_per_s());
            lock.push(window(hw, mode, AllocatorKind::GlobalLock, t, win)?.pairs_per_s());
        }
        points.push(ThreadPoint { threads: t, magazines_per_s: median(&mag), global_lock_per_s: median(&lock) });
    }
    Ok(points)
}

/// An IOMMU that does nothing (every request succeeds at once): the domain's
/// software alone, for [`bound`].
#[derive(Debug, Default)]
pub struct NoopIommu;

impl IommuHw for NoopIommu {
    unsafe fn map_pages(&self, _iova: u64, _phys: u64, _len: u64, _perm: Perm) -> Result<(), IommuHwError> {
        Ok(())
    }
    fn unmap_pages(&self, _iova: u64, _len: u64) -> Result<(), IommuHwError> {
        Ok(())
    }
    fn invalidate(&self, _iova: u64, _len: u64) {}
    fn invalidate_all(&self) {}
    fn set_passthrough(&self, _on: bool) {}
}

/// One thread allocating and freeing a one-page IOVA for `win` with `a`
/// alone (no domain, no IOMMU): alloc+free pairs per second.
fn allocator_alone(a: &dyn IovaAllocator, win: Duration) -> Result<f64, String> {
    let t0 = now();
    let mut n = 0u64;
    loop {
        for _ in 0..64 {
            let iova = a.alloc(1).ok_or("IOVA space exhausted")?;
            a.free(iova, 1);
        }
        n += 64;
        let ns = now().ns_since(t0);
        if ns >= win.as_nanos() as u64 {
            return Ok(n as f64 * 1e9 / ns.max(1) as f64);
        }
    }
}

/// What bounds `dma.magazine_vs_lock_8t` on this machine, from measurements
/// of the same run.
///
/// The magazine path takes no contended lock, so at best its threads scale
/// perfectly over the CPUs they can use: with `T` threads on `C` CPUs at
/// most `min(T, C)` × its one-thread rate. Hence
///
/// `bound = min(T, C) × magazines_1t_per_s / global_lock_per_s(T)`
///
/// (`bound` below; the measured ratio cannot exceed it). The rest says why
/// it is what it is: per one-thread map+unmap pair on magazines, `lab_ns`
/// is what the lab IOMMU costs (PTE writes, settle/forget, the amortized
/// `invalidate_all` of the lazy flushes: the pair on the lab minus the pair
/// on [`NoopIommu`]), `allocator_ns` the magazine allocator alone (one
/// thread's alloc+free with no domain), `domain_ns` the rest (the lazy flush
/// queue, per-thread slot and counters, sync); and `zero_allocator_bound`
/// the bound if the magazine allocator cost nothing at all:
/// `min(T, C) × 1e9 / (pair_ns − allocator_ns) / global_lock_per_s(T)`.
#[derive(Clone, Debug)]
pub struct Bound {
    /// Thread count `T` the bound is for.
    pub threads: usize,
    /// CPUs the process may use, `C`.
    pub cpus: usize,
    /// Magazines, 1 thread, on the lab IOMMU (pairs/s, median).
    pub magazines_1t_per_s: f64,
    /// Global lock, `T` threads, on the lab IOMMU (pairs/s, median).
    pub global_lock_per_s: f64,
    /// One magazine pair on the lab, ns (`1e9 / magazines_1t_per_s`).
    pub pair_ns: f64,
    /// Of which the lab IOMMU.
    pub lab_ns: f64,
    /// Of which the magazine allocator's alloc+free.
    pub allocator_ns: f64,
    /// Of which the rest of the domain (flush queue, slots, counters).
    pub domain_ns: f64,
    /// The global-lock allocator's alloc+free alone, 1 thread, ns.
    pub global_lock_allocator_ns: f64,
    /// Global lock, 1 thread, on [`NoopIommu`] (pairs/s): the allocator
    /// comparison without the lab.
    pub global_lock_noop_1t_per_s: f64,
    /// Magazines, 1 thread, on [`NoopIommu`] (pairs/s).
    pub magazines_noop_1t_per_s: f64,
    /// The bound on the ratio at `T` threads.
    pub bound: f64,
    /// The bound with a magazine allocator that costs nothing.
    pub zero_allocator_bound: f64,
}

/// Measures [`Bound`] at `threads` threads; `points` are the mapping run's
/// (its 1-thread point and the `threads` point are used if there, measured
/// here otherwise), medians of `rounds` windows of `win`.
pub fn bound(
    hw: &Arc<dyn IommuHw>,
    mode: IommuMode,
    points: &[ThreadPoint],
    threads: usize,
    rounds: u32,
    win: Duration,
) -> Result<Bound, String> {
    let at = |t: usize| -> Result<ThreadPoint, String> {
        match points.iter().find(|p| p.threads == t) {
            Some(p) => Ok(p.clone()),
            None => Ok(run(hw, mode, &[t], rounds, win)?.remove(0)),
        }
    };
    let (one, many) = (at(1)?, at(threads)?);
    let noop: Arc<dyn IommuHw> = Arc::new(NoopIommu);
    let (mut mag_noop, mut lock_noop, mut mag_alone, mut lock_alone) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        mag_noop.push(window(&noop, mode, AllocatorKind::Magazines, 1, win)?.pairs_per_s());
        lock_noop.push(window(&noop, mode, AllocatorKind::GlobalLock, 1, win)?.pairs_per_s());
        let config = DomainConfig::default();
        let m = MagazineAllocator::new(config.iova_base, config.iova_limit).map_err(|e| e.to_string())?;
        mag_alone.push(allocator_alone(&m, win)?);
        let g = GlobalLockAllocator::new(config.iova_base, config.iova_limit).map_err(|e| e.to_string())?;
        lock_alone.push(allocator_alone(&g, win)?);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let scale = threads.min(cpus) as f64;
    let ns = |per_s: f64| 1e9 / per_s.max(f64::MIN_POSITIVE);
    let pair_ns = ns(one.magazines_per_s);
    let noop_pair_ns = ns(median(&mag_noop));
    let allocator_ns = ns(median(&mag_alone));
    let lock_rate = many.global_lock_per_s.max(f64::MIN_POSITIVE);
    Ok(Bound {
        threads,
        cpus,
        magazines_1t_per_s: one.magazines_per_s,
        global_lock_per_s: many.global_lock_per_s,
        pair_ns,
        lab_ns: (pair_ns - noop_pair_ns).max(0.0),
        allocator_ns,
        domain_ns: (noop_pair_ns - allocator_ns).max(0.0),
        global_lock_allocator_ns: ns(median(&lock_alone)),
        global_lock_noop_1t_per_s: median(&lock_noop),
        magazines_noop_1t_per_s: median(&mag_noop),
        bound: scale * one.magazines_per_s / lock_rate,
        zero_allocator_bound: scale * 1e9 / (pair_ns - allocator_ns).max(1.0) / lock_rate,
    })
}
