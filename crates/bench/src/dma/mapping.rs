//! Map+unmap pairs per second: the IOVA allocator under threads (seed 003).
//!
//! Each thread maps one page-sized buffer and unmaps it again, as a driver
//! does per message, for a fixed window; the figure is all threads' pairs
//! over the window. Both allocators run on the same lab IOMMU in the same
//! mode, interleaved round by round (magazines, global lock, magazines, …),
//! so that what differs is the allocator alone.
//!
//! [`bound`] estimates, from measurements of the same run, the most the
//! 8-thread ratio can be on this machine (`dma.magazine_vs_lock_8t_bound`),
//! where a magazine pair's time goes (lab IOMMU, allocator, the rest of the
//! domain) and how fast a pair would have to be for the ratio to reach 10;
//! see [`Bound`] for how.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use wirespeed::dma::{
    AllocatorKind, Direction, DmaBuffer, DmaDomain, DomainConfig, GlobalLockAllocator, IommuHw, IommuHwError,
    IommuMode, IovaAllocator, MagazineAllocator, Perm,
};
use wirespeed_time::now;

use crate::stats::median;

/// One measured window: how many pairs all threads completed, in how long,
/// and how many lazy flushes (`invalidate_all`s) the domain issued meanwhile.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub pairs: u64,
    pub elapsed_ns: u64,
    pub invalidate_alls: u64,
}

impl Window {
    pub fn pairs_per_s(&self) -> f64 {
        self.pairs as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }

    /// CPU time per pair spent in the flushes' invalidation waits, ns, when
    /// one `invalidate_all` makes its caller wait `invalidate_all_ns`. A
    /// flush frees every thread's queued ranges (as Linux's flush counter
    /// does), so the more threads unmap, the fewer flushes per pair.
    pub fn flush_wait_ns_per_pair(&self, invalidate_all_ns: u64) -> f64 {
        self.invalidate_alls as f64 * invalidate_all_ns as f64 / self.pairs.max(1) as f64
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
    // Before the closing flush: the threads' exits flushed what they had queued, within the window.
    let invalidate_alls = domain.stats().invalidate_alls;
    domain.flush();
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(Window { pairs: total.load(Ordering::Relaxed), elapsed_ns, invalidate_alls })
}

/// Pairs per second of both allocators at one thread count: medians of
/// `rounds` interleaved windows each.
#[derive(Clone, Debug)]
pub struct ThreadPoint {
    pub threads: usize,
    pub magazines_per_s: f64,
    pub global_lock_per_s: f64,
    /// The magazine windows' flush wait per pair, ns (median; see
    /// [`Window::flush_wait_ns_per_pair`]).
    pub magazines_flush_wait_ns: f64,
}

impl ThreadPoint {
    pub fn ratio(&self) -> f64 {
        self.magazines_per_s / self.global_lock_per_s.max(f64::MIN_POSITIVE)
    }
}

/// Measures every thread count in `threads`, both allocators interleaved;
/// `invalidate_all_ns` is what one flush makes its caller wait on `hw`.
pub fn run(
    hw: &Arc<dyn IommuHw>,
    mode: IommuMode,
    invalidate_all_ns: u64,
    threads: &[usize],
    rounds: u32,
    win: Duration,
) -> Result<Vec<ThreadPoint>, String> {
    let mut points = Vec::new();
    for &t in threads {
        let (mut mag, mut lock, mut wait) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let m = window(hw, mode, AllocatorKind::Magazines, t, win)?;
            mag.push(m.pairs_per_s());
            wait.push(m.flush_wait_ns_per_pair(invalidate_all_ns));
            lock.push(window(hw, mode, AllocatorKind::GlobalLock, t, win)?.pairs_per_s());
        }
        points.push(ThreadPoint {
            threads: t,
            magazines_per_s: median(&mag),
            global_lock_per_s: median(&lock),
            magazines_flush_wait_ns: median(&wait),
        });
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

/// What bounds `dma.magazine_vs_lock_8t` on this machine, estimated from
/// measurements of the same run.
///
/// The magazine path takes no contended lock, so at best its threads scale
/// perfectly over the CPUs they can use: with `T` threads on `C` CPUs, each
/// CPU completes pairs at the one-thread rate at most — except for the lazy
/// flushes. One `invalidate_all` makes its caller wait (the lab's
/// `invalidate_all_ns`) and frees every thread's queued ranges, so with more
/// threads there are fewer flushes per pair: the one-thread pair, its flush
/// wait (`flush_wait_1t_ns`) replaced by the `T`-thread windows' own
/// (`flush_wait_ns`), is taken as the least a pair can cost a CPU at `T` threads:
///
/// `cpu_pair_ns = pair_ns − flush_wait_1t_ns + flush_wait_ns`
/// `bound = min(T, C) × 1e9 / cpu_pair_ns / global_lock_per_s(T)`
///
/// (`bound` below). It is an estimate of the ceiling, not a proof: the
/// one-thread pair is measured in other windows than the `T`-thread ones,
/// and measured ratios have come out up to 4 % above it (12.08 against
/// 11.60 on 2026-11-27, when eight threads' pairs cost a CPU about 2 ns less
/// than `cpu_pair_ns`). `pair_ns_for_10` is the `cpu_pair_ns` at which the
/// bound would be 10: `min(T, C) × 1e9 / (10 × global_lock_per_s(T))`.
///
/// The rest says why a pair costs what it does: per one-thread map+unmap
/// pair on magazines, `lab_ns` is what the lab IOMMU costs (PTE writes,
/// settle/forget, the flush waits: the pair on the lab minus the pair on
/// [`NoopIommu`]), `allocator_ns` the magazine allocator alone (one thread's
/// alloc+free with no domain), `domain_ns` the rest (the lazy flush queue,
/// per-thread slot and counters, sync); and `zero_allocator_bound` the bound
/// if the magazine allocator cost nothing at all:
/// `min(T, C) × 1e9 / (cpu_pair_ns − allocator_ns) / global_lock_per_s(T)`.
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
    /// The flush wait per pair with 1 thread, ns (part of `lab_ns`).
    pub flush_wait_1t_ns: f64,
    /// The flush wait per pair with `T` threads, ns.
    pub flush_wait_ns: f64,
    /// The least a pair is taken to cost a CPU at `T` threads, ns.
    pub cpu_pair_ns: f64,
    /// The `cpu_pair_ns` at which the bound would reach 10.
    pub pair_ns_for_10: f64,
    /// The global-lock allocator's alloc+free alone, 1 thread, ns.
    pub global_lock_allocator_ns: f64,
    /// Global lock, 1 thread, on [`NoopIommu`] (pairs/s): the allocator
    /// comparison without the lab.
    pub global_lock_noop_1t_per_s: f64,
    /// Magazines, 1 thread, on [`NoopIommu`] (pairs/s).
    pub magazines_noop_1t_per_s: f64,
    /// The estimated ceiling of the ratio at `T` threads.
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
    invalidate_all_ns: u64,
    points: &[ThreadPoint],
    threads: usize,
    rounds: u32,
    win: Duration,
) -> Result<Bound, String> {
    let at = |t: usize| -> Result<ThreadPoint, String> {
        match points.iter().find(|p| p.threads == t) {
            Some(p) => Ok(p.clone()),
            None => Ok(run(hw, mode, invalidate_all_ns, &[t], rounds, win)?.remove(0)),
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
    let apart = Apart {
        magazines_noop_1t_per_s: median(&mag_noop),
        global_lock_noop_1t_per_s: median(&lock_noop),
        magazine_allocator_per_s: median(&mag_alone),
        global_lock_allocator_per_s: median(&lock_alone),
    };
    Ok(Bound::from_parts(threads, cpus, &one, &many, &apart))
}

/// One-thread rates measured without the lab (pairs/s): the domain on
/// [`NoopIommu`], and each allocator alone.
#[derive(Clone, Copy)]
struct Apart {
    magazines_noop_1t_per_s: f64,
    global_lock_noop_1t_per_s: f64,
    magazine_allocator_per_s: f64,
    global_lock_allocator_per_s: f64,
}

impl Bound {
    /// The bound at `threads` threads on `cpus` CPUs from the mapping run's
    /// 1-thread and `threads` points and the rates measured `apart`.
    fn from_parts(threads: usize, cpus: usize, one: &ThreadPoint, many: &ThreadPoint, apart: &Apart) -> Bound {
        let Apart {
            magazines_noop_1t_per_s,
            global_lock_noop_1t_per_s,
            magazine_allocator_per_s,
            global_lock_allocator_per_s,
        } = *apart;
        let scale = threads.min(cpus) as f64;
        let ns = |per_s: f64| 1e9 / per_s.max(f64::MIN_POSITIVE);
        let pair_ns = ns(one.magazines_per_s);
        let noop_pair_ns = ns(magazines_noop_1t_per_s);
        let allocator_ns = ns(magazine_allocator_per_s);
        let lock_rate = many.global_lock_per_s.max(f64::MIN_POSITIVE);
        let cpu_pair_ns = (pair_ns - one.magazines_flush_wait_ns + many.magazines_flush_wait_ns).max(1.0);
        Bound {
            threads,
            cpus,
            magazines_1t_per_s: one.magazines_per_s,
            global_lock_per_s: many.global_lock_per_s,
            pair_ns,
            lab_ns: (pair_ns - noop_pair_ns).max(0.0),
            allocator_ns,
            domain_ns: (noop_pair_ns - allocator_ns).max(0.0),
            flush_wait_1t_ns: one.magazines_flush_wait_ns,
            flush_wait_ns: many.magazines_flush_wait_ns,
            cpu_pair_ns,
            pair_ns_for_10: scale * 1e9 / (10.0 * lock_rate),
            global_lock_allocator_ns: ns(global_lock_allocator_per_s),
            global_lock_noop_1t_per_s,
            magazines_noop_1t_per_s,
            bound: scale * 1e9 / cpu_pair_ns / lock_rate,
            zero_allocator_bound: scale * 1e9 / (cpu_pair_ns - allocator_ns).max(1.0) / lock_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(threads: usize, magazines_per_s: f64, global_lock_per_s: f64, wait: f64) -> ThreadPoint {
        ThreadPoint { threads, magazines_per_s, global_lock_per_s, magazines_flush_wait_ns: wait }
    }

    #[test]
    fn flush_wait_is_the_invalidation_time_spread_over_the_pairs() {
        let w = Window { pairs: 1024, elapsed_ns: 1_000_000, invalidate_alls: 4 };
        assert_eq!(w.flush_wait_ns_per_pair(4000), 15.625);
        assert_eq!(Window { pairs: 0, ..w }.flush_wait_ns_per_pair(4000), 16_000.0, "no division by zero");
    }

    #[test]
    fn the_bound_swaps_the_one_thread_flush_wait_for_the_many_threads_one() {
        // 1 thread: 100 ns a pair, 20 of them flush wait; 8 threads: 5 ns of
        // flush wait a pair, the lock at 2 M/s; 2 CPUs.
        let apart = Apart {
            magazines_noop_1t_per_s: 2e7,
            global_lock_noop_1t_per_s: 1e7,
            magazine_allocator_per_s: 5e7,
            global_lock_allocator_per_s: 2.5e7,
        };
        let (one, many) = (point(1, 1e7, 5e6, 20.0), point(8, 1.6e7, 2e6, 5.0));
        let b = Bound::from_parts(8, 2, &one, &many, &apart);
        assert_eq!((b.pair_ns, b.cpu_pair_ns, b.flush_wait_1t_ns, b.flush_wait_ns), (100.0, 85.0, 20.0, 5.0));
        assert!((b.bound - 2e9 / 85.0 / 2e6).abs() < 1e-9, "{b:?}");
        assert!((b.pair_ns_for_10 - 100.0).abs() < 1e-9, "{b:?}");
        assert!((b.zero_allocator_bound - 2e9 / 65.0 / 2e6).abs() < 1e-9, "{b:?}");
        assert_eq!((b.lab_ns, b.allocator_ns, b.domain_ns), (50.0, 20.0, 30.0));
        // One CPU: threads cannot scale past it.
        let one_cpu = Bound::from_parts(8, 1, &one, &many, &apart);
        assert!((one_cpu.bound * 2.0 - b.bound).abs() < 1e-9);
    }
}
