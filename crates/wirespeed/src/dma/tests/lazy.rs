//! Lazy invalidation: the stale-translation window is bounded by the queue
//! size and by the timeout (even when idle), IOVAs are not reused before
//! the invalidation, and buffer memory outlives the window.

use super::domain;
use crate::dma::{AllocatorKind, Direction, DmaBuffer, DomainConfig, IommuMode, LazyConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn lazy(queue_entries: usize, timeout: Duration, allocator: AllocatorKind) -> DomainConfig {
    DomainConfig { mode: IommuMode::Lazy, allocator, lazy: LazyConfig { queue_entries, timeout }, ..Default::default() }
}

#[test]
fn stale_translation_lives_at_most_queue_entries_more_unmaps() {
    let (d, fake) = domain(lazy(256, Duration::from_secs(60), AllocatorKind::Magazines));
    let mut b = DmaBuffer::new(64).unwrap();
    let phys = b.phys();
    let m = d.map(&mut b, Direction::FromDevice).unwrap();
    let a = m.device_addr();
    assert_eq!(fake.translate(a), Some(phys)); // the device used it: the IOTLB has it
    drop(m);
    assert!(!fake.is_mapped(a), "the PTE is cleared at unmap");
    assert!(fake.iotlb_contains(a), "the lazy window is open");
    assert_eq!(fake.translate(a), Some(phys), "a stale translation still works");
    for i in 0..255 {
        let m = d.map(&mut b, Direction::FromDevice).unwrap();
        assert_ne!(m.device_addr(), a, "unmap {i}: the IOVA is not reused before the flush");
        fake.translate(m.device_addr());
    }
    assert!(fake.iotlb_contains(a), "255 later unmaps: not flushed yet");
    assert_eq!(fake.calls().invalidate_all, 0);
    assert_eq!(d.stats().lazy_pending, 256);
    drop(d.map(&mut b, Direction::FromDevice).unwrap()); // the 256th later unmap
    assert!(!fake.iotlb_contains(a), "flushed at the queue limit");
    assert_eq!(fake.translate(a), None);
    assert_eq!(fake.calls().invalidate_all, 1);
    assert_eq!(fake.calls().invalidate, 0, "lazy mode never invalidates ranges");
    assert_eq!(fake.stale_reuses(), 0);
    let s = d.stats();
    assert_eq!((s.flushes, s.invalidate_alls, s.lazy_pending), (1, 1, 1), "{s:?}");
}

#[test]
fn stale_translation_lives_at_most_the_timeout_even_when_idle() {
    let timeout = Duration::from_millis(10);
    let (d, fake) = domain(lazy(256, timeout, AllocatorKind::Magazines));
    let mut b = DmaBuffer::new(64).unwrap();
    let m = d.map(&mut b, Direction::ToDevice).unwrap();
    let a = m.device_addr();
    fake.translate(a);
    // Read before the unmap: the queue stamps its entry during the unmap,
    // and the timer counts from that stamp.
    let unmapped = Instant::now();
    drop(m);
    assert!(fake.iotlb_contains(a));
    while fake.iotlb_contains(a) {
        assert!(unmapped.elapsed() < Duration::from_secs(1), "not flushed within 1 s");
        std::thread::sleep(Duration::from_micros(500));
    }
    let took = unmapped.elapsed();
    assert!(took >= timeout, "flushed after {took:?}, before the {timeout:?} timeout");
    // The IOVA is freed right after the flush, by the timer thread.
    let deadline = Instant::now() + Duration::from_secs(1);
    while d.stats().lazy_pending != 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = d.stats();
    assert_eq!((s.timer_flushes, s.invalidate_alls), (1, 1), "{s:?}");
    // Idle: the timer thread does not wake while nothing is queued.
    std::thread::sleep(Duration::from_millis(50));
    let s = d.stats();
    assert_eq!((s.timer_flushes, s.flushes), (1, 1), "{s:?}");
    assert_eq!(fake.calls().invalidate_all, 1);
    d.drain_iova_caches();
    assert_eq!(d.iova_outstanding(), 0);
}

#[test]
fn iova_is_not_reused_before_its_invalidation() {
    // A space of 4 pages: the fifth map finds it full of queued IOVAs,
    // flushes, and only then reuses one.
    for allocator in [AllocatorKind::GlobalLock, AllocatorKind::Magazines] {
        let config =
            DomainConfig { iova_base: 4096, iova_limit: 5 * 4096, ..lazy(256, Duration::from_secs(60), allocator) };
        let (d, fake) = domain(config);
        let mut b = DmaBuffer::new(64).unwrap();
        let mut seen = Vec::new();
        for _ in 0..4 {
            let m = d.map(&mut b, Direction::ToDevice).unwrap();
            fake.translate(m.device_addr());
            seen.push(m.device_addr());
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 4, "{allocator:?}: four distinct IOVAs");
        assert_eq!(fake.calls().invalidate_all, 0);
        let m = d.map(&mut b, Direction::ToDevice).unwrap();
        assert_eq!(fake.calls().invalidate_all, 1, "{allocator:?}: reuse only after a flush");
        assert!(seen.contains(&m.device_addr()));
        assert_eq!(fake.stale_reuses(), 0);
    }
}

#[test]
fn many_lazy_cycles_never_map_over_a_stale_entry() {
    let (d, fake) = domain(lazy(16, Duration::from_millis(1), AllocatorKind::Magazines));
    let mut bufs: Vec<DmaBuffer> = (0..3).map(|_| DmaBuffer::new(3 * 4096).unwrap()).collect();
    for i in 0..3000 {
        let b = &mut bufs[i % 3];
        let m = d.map_range(b, 0..1 + (i * 977) % (3 * 4096), Direction::Bidirectional).unwrap();
        fake.translate(m.device_addr());
    }
    assert_eq!(fake.stale_reuses(), 0);
    d.flush();
    assert_eq!(fake.iotlb_len(), 0);
    d.drain_iova_caches();
    assert_eq!(d.iova_outstanding(), 0);
    assert_eq!(fake.mapped_pages(), 0);
}

#[test]
fn buffer_memory_outlives_the_lazy_window() {
    let (d, fake) = domain(lazy(256, Duration::from_secs(60), AllocatorKind::Magazines));
    let mut b = DmaBuffer::new(64).unwrap();
    let region = Arc::downgrade(b.region());
    drop(d.map(&mut b, Direction::FromDevice).unwrap());
    drop(b);
    assert!(region.upgrade().is_some(), "kept until the flush");
    d.flush();
    assert!(region.upgrade().is_none(), "freed by the flush");
    assert_eq!(fake.calls().invalidate_all, 1);
    d.flush();
    assert_eq!(fake.calls().invalidate_all, 1, "nothing queued: no invalidation");
}

/// A flush of every thread's queue (here an explicit one; the timer's is
/// the same) frees another thread's IOVAs into the global allocator, not
/// into the flushing thread's magazines, where they would share PTE lines
/// with their owner's IOVAs from then on.
#[test]
fn a_flush_frees_other_threads_iovas_to_the_global_allocator() {
    let (d, _fake) = domain(lazy(256, Duration::from_secs(60), AllocatorKind::Magazines));
    let d = Arc::new(d);
    let queued = std::sync::Barrier::new(2);
    let flushed = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut b = DmaBuffer::new(64).unwrap();
            for _ in 0..5 {
                drop(d.map(&mut b, Direction::ToDevice).unwrap());
            }
            queued.wait();
            flushed.wait(); // alive until the check: its exit would flush too
        });
        queued.wait();
        let before = d.stats();
        d.flush();
        let after = d.stats();
        flushed.wait(); // before any assertion: a failed one must not leave the thread waiting
        assert_eq!(before.lazy_pending, 5, "{before:?}");
        assert_eq!(after.lazy_pending, 0, "{after:?}");
        assert_eq!(after.iova.global_frees - before.iova.global_frees, 5, "{after:?}");
        assert_eq!(after.iova.cached, before.iova.cached, "the flushing thread cached them: {after:?}");
    });
}
