//! Map+unmap pairs per second: the IOVA allocator under threads (seed 003).
//!
//! Each thread maps one page-sized buffer and unmaps it again, as a driver
//! does per message, for a fixed window; the figure is all threads' pairs
//! over the window. Both allocators run on the same lab IOMMU in the same
//! mode, interleaved round by round (magazines, global lock, magazines, …),
//! so that what differs is the allocator alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use wirespeed::dma::{AllocatorKind, DmaBuffer, DmaDomain, DomainConfig, Direction, IommuHw, IommuMode};
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
