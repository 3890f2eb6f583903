//! Many map/unmap pairs leave nothing behind: no IOVA outstanding, no PTE.
//!
//! 10⁶ pairs on one thread and 4 × 250k on four threads in release builds;
//! the debug build (plain `cargo test`) runs 10⁵ and 4 × 25k to keep its
//! runtime reasonable (the allocator paths are the same).

use super::{config, domain};
use crate::dma::{AllocatorKind, Direction, DmaBuffer, DmaDomain, IommuMode};
use std::sync::Arc;

fn pairs() -> u64 {
    if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    }
}

fn assert_clean(d: &DmaDomain, fake: &crate::dma::testing::FakeIommu, n: u64) {
    d.flush();
    d.drain_iova_caches();
    assert_eq!(d.iova_outstanding(), 0);
    assert_eq!(fake.mapped_pages(), 0, "no PTE left");
    assert_eq!(fake.iotlb_len(), 0, "no stale IOTLB entry left");
    assert_eq!(fake.stale_reuses(), 0);
    let s = d.stats();
    assert_eq!((s.maps, s.unmaps, s.lazy_pending), (n, n, 0), "{s:?}");
    assert_eq!(s.iova.global_outstanding, 0, "{s:?}");
}

#[test]
fn million_pairs_one_thread_leave_nothing() {
    for mode in [IommuMode::Strict, IommuMode::Lazy] {
        let (d, fake) = domain(config(mode, AllocatorKind::Magazines));
        let mut b = DmaBuffer::new(3 * 4096).unwrap();
        let n = pairs();
        for i in 0..n {
            let len = 1 + (i as usize * 4099) % b.len();
            let m = d.map_range(&mut b, 0..len, Direction::ToDevice).unwrap();
            if i % 1024 == 0 {
                fake.translate(m.device_addr());
            }
        }
        let s = d.stats();
        // Lazy keeps up to a queue's worth of IOVAs out of use, and the timer
        // thread frees into its own magazines (which reach this thread
        // through the depot): a few more global allocations than strict.
        assert!(s.iova.cache_hits >= n * 9 / 10, "{mode:?}: the magazines serve nearly everything: {s:?}");
        assert_clean(&d, &fake, n);
    }
}

#[test]
fn million_pairs_four_threads_leave_nothing() {
    for mode in [IommuMode::Strict, IommuMode::Lazy] {
        let (d, fake) = domain(config(mode, AllocatorKind::Magazines));
        let d = Arc::new(d);
        let per_thread = pairs() / 4;
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let d = d.clone();
                std::thread::spawn(move || {
                    let mut b = DmaBuffer::new(2 * 4096).unwrap();
                    for i in 0..per_thread {
                        let len = 1 + ((i + t) as usize * 613) % b.len();
                        drop(d.map_range(&mut b, 0..len, Direction::FromDevice).unwrap());
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_clean(&d, &fake, 4 * per_thread);
    }
}
