//! Domains: None/Identity (no hardware calls), strict unmap, offsets, and
//! errors that change nothing.

use super::{config, domain};
use crate::dma::testing::FakeIommu;
use crate::dma::{
    AllocatorKind, Direction, DmaBuffer, DmaDomain, DmaError, DomainConfig, IommuHw, IommuMode, LazyConfig,
};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn buffer_is_page_aligned_zeroed_and_checked() {
    let mut b = DmaBuffer::new(5000).unwrap();
    assert_eq!(b.phys() % 4096, 0);
    assert_eq!((b.len(), b.capacity()), (5000, 8192));
    assert!(b.as_slice().iter().all(|&x| x == 0));
    b.as_mut_slice()[4999] = 7;
    assert_eq!(b.as_slice()[4999], 7);
    let _ = b.is_locked(); // best effort: either is fine
    assert_eq!(DmaBuffer::new(0).unwrap_err(), DmaError::ZeroLength);
    let e = DmaBuffer::new(DmaBuffer::MAX_LEN + 1).unwrap_err();
    assert_eq!(e, DmaError::BufferTooLarge { len: DmaBuffer::MAX_LEN + 1, max: DmaBuffer::MAX_LEN });
    assert!(e.to_string().contains("allowed"), "{e}");
    fn send_sync<T: Send + Sync>() {}
    send_sync::<DmaBuffer>();
    send_sync::<DmaDomain>();
}

#[test]
fn none_and_identity_give_physical_addresses_without_hardware_calls() {
    for mode in [IommuMode::None, IommuMode::Identity] {
        let (d, fake) = domain(DomainConfig::with_mode(mode));
        let calls_at_start = fake.calls();
        assert_eq!(calls_at_start.set_passthrough, u64::from(mode == IommuMode::Identity));
        let mut b = DmaBuffer::new(100).unwrap();
        let phys = b.phys();
        {
            let m = d.map_range(&mut b, 10..60, Direction::FromDevice).unwrap();
            assert_eq!(m.device_addr(), phys + 10);
            assert_eq!(m.len(), 50);
        }
        // SAFETY: the buffer outlives the mapping.
        let raw = unsafe { d.map_raw(phys + 3, 7, Direction::ToDevice) }.unwrap();
        assert_eq!(raw.device_addr(), phys + 3);
        d.unmap_raw(raw).unwrap();
        assert_eq!(fake.calls(), calls_at_start, "{mode:?}: no map/unmap/invalidate");
        let s = d.stats();
        assert_eq!((s.maps, s.unmaps), (2, 2));
    }
    // Without any IOMMU.
    let d = DmaDomain::new(None, DomainConfig::with_mode(IommuMode::Identity)).unwrap();
    let mut b = DmaBuffer::new(1).unwrap();
    let phys = b.phys();
    assert_eq!(d.map(&mut b, Direction::Bidirectional).unwrap().device_addr(), phys);
}

#[test]
fn strict_unmap_clears_the_pte_and_the_iotlb_before_freeing() {
    for alloc in [AllocatorKind::Magazines, AllocatorKind::GlobalLock] {
        let (d, fake) = domain(config(IommuMode::Strict, alloc));
        let mut b = DmaBuffer::new(2 * 4096).unwrap();
        let phys = b.phys();
        let m = d.map_range(&mut b, 100..5100, Direction::Bidirectional).unwrap();
        let dev = m.device_addr();
        assert_eq!(dev % 4096, 100, "offset within the page preserved");
        assert_eq!(fake.mapped_pages(), 2);
        assert_eq!(fake.translate(dev), Some(phys + 100));
        assert_eq!(fake.translate(dev + 4999), Some(phys + 5099));
        assert!(fake.iotlb_contains(dev));
        m.unmap().unwrap();
        assert!(!fake.is_mapped(dev) && !fake.is_mapped(dev + 4096));
        assert!(!fake.iotlb_contains(dev) && !fake.iotlb_contains(dev + 4096));
        assert_eq!(fake.translate(dev), None, "a device access now faults");
        let c = fake.calls();
        assert_eq!((c.map, c.unmap, c.invalidate, c.invalidate_all), (1, 1, 1, 0));
        assert_eq!(d.iova_outstanding(), 0);
        let s = d.stats();
        assert_eq!((s.maps, s.unmaps, s.invalidations), (1, 1, 1));
    }
}

#[test]
fn magazine_hits_are_counted() {
    let (d, _fake) = domain(config(IommuMode::Strict, AllocatorKind::Magazines));
    let mut b = DmaBuffer::new(64).unwrap();
    for _ in 0..10 {
        drop(d.map(&mut b, Direction::ToDevice).unwrap());
    }
    let s = d.stats();
    // The first map took one PTE line's run of fresh IOVAs (counted as that
    // many global allocations); the other nine came from the magazines.
    assert_eq!((s.iova.global_allocs, s.iova.cache_hits), (crate::dma::PTE_LINE_PAGES, 9), "{s:?}");
}

#[test]
fn errors_change_nothing() {
    let small = DomainConfig { iova_base: 4096, iova_limit: 5 * 4096, ..DomainConfig::default() }; // 4 pages
    let (d, fake) = domain(small);
    let mut b = DmaBuffer::new(8 * 4096).unwrap();
    let mut held = DmaBuffer::new(4096).unwrap();
    let phys = b.phys();
    let keep = d.map(&mut held, Direction::ToDevice).unwrap(); // 1 page in use
    let before = (fake.calls().map, fake.mapped_pages(), d.iova_outstanding(), d.stats().maps);
    let check = |d: &DmaDomain| {
        assert_eq!((fake.calls().map, fake.mapped_pages(), d.iova_outstanding(), d.stats().maps), before);
    };
    // SAFETY: (all map_raw calls below) the buffer outlives them; they fail.
    assert_eq!(unsafe { d.map_raw(phys, 0, Direction::ToDevice) }.unwrap_err(), DmaError::ZeroLength);
    // SAFETY: refused before anything is mapped (the range overflows), so no device can reach it.
    let e = unsafe { d.map_raw(u64::MAX - 10, 20, Direction::ToDevice) }.unwrap_err();
    assert!(matches!(e, DmaError::AddressOverflow { .. }), "{e}");
    let e = d.map_range(&mut b, 5..5, Direction::ToDevice).unwrap_err();
    assert_eq!(e, DmaError::RangeOutOfBounds { start: 5, end: 5, len: 8 * 4096 });
    let e = d.map_range(&mut b, 0..8 * 4096 + 1, Direction::ToDevice).unwrap_err();
    assert!(matches!(e, DmaError::RangeOutOfBounds { .. }), "{e}");
    let e = d.map_range(&mut b, 0..5 * 4096, Direction::ToDevice).unwrap_err();
    assert_eq!(e, DmaError::TooLarge { len: 5 * 4096, pages: 5, space_pages: 4 });
    assert!(e.to_string().contains("4 pages"), "{e}");
    let e = d.map_range(&mut b, 0..4 * 4096, Direction::ToDevice).unwrap_err();
    assert_eq!(e, DmaError::IovaExhausted { pages: 4, space_pages: 4 });
    check(&d);
    fake.fail_map_after(0);
    let e = d.map_range(&mut b, 0..4096, Direction::ToDevice).unwrap_err();
    assert!(matches!(e, DmaError::Hardware { .. }), "{e}");
    assert!(e.to_string().contains("injected"), "{e}");
    assert_eq!((fake.mapped_pages(), d.iova_outstanding()), (before.1, before.2));
    fake.fail_map_after(u64::MAX);
    drop(keep);
    d.drain_iova_caches();
    assert_eq!(d.iova_outstanding(), 0);
    assert_eq!(fake.mapped_pages(), 0);
    // Configuration errors.
    assert_eq!(DmaDomain::new(None, DomainConfig::default()).unwrap_err(), DmaError::NoIommu);
    let bad = DomainConfig { iova_base: 0, ..DomainConfig::default() };
    assert!(matches!(DmaDomain::new(None, bad).unwrap_err(), DmaError::InvalidConfig { what: "iova_base", .. }));
    let bad = DomainConfig { lazy: LazyConfig { queue_entries: 0, timeout: Duration::from_millis(1) }, ..bad };
    let e = DmaDomain::new(None, bad).unwrap_err();
    assert!(matches!(e, DmaError::InvalidConfig { what: "lazy.queue_entries", .. }), "{e}");
}

#[test]
fn unmap_raw_of_another_domain_hands_the_mapping_back() {
    let (a, fake) = domain(DomainConfig::default());
    let (b, _) = domain(DomainConfig::default());
    let buf = DmaBuffer::new(64).unwrap();
    // SAFETY: the buffer outlives the mapping.
    let m = unsafe { a.map_raw(buf.phys(), 64, Direction::ToDevice) }.unwrap();
    let err = b.unmap_raw(m).unwrap_err();
    assert!(matches!(err.error, DmaError::WrongDomain { .. }));
    assert_eq!(fake.mapped_pages(), 1, "nothing was done");
    a.unmap_raw(err.mapping.unwrap()).unwrap();
    assert_eq!(fake.mapped_pages(), 0);
}

#[test]
fn a_refused_unmap_quarantines_the_range() {
    let (d, fake) = domain(config(IommuMode::Strict, AllocatorKind::GlobalLock));
    let mut b = DmaBuffer::new(64).unwrap();
    let m = d.map(&mut b, Direction::ToDevice).unwrap();
    let dev = m.device_addr();
    fake.fail_unmap(true);
    assert!(matches!(m.unmap().unwrap_err(), DmaError::Hardware { .. }));
    fake.fail_unmap(false);
    assert_eq!(d.stats().hw_errors, 1);
    assert_eq!(d.iova_outstanding(), 1, "the IOVA is never reused");
    let m2 = d.map(&mut b, Direction::ToDevice).unwrap();
    assert_ne!(m2.device_addr(), dev);
}

#[test]
fn hw_trait_is_object_safe_and_fake_checks_ranges() {
    let f = FakeIommu::new();
    let hw: &dyn IommuHw = &f;
    assert!(hw.unmap_pages(4096, 4096).is_err(), "not mapped");
    // SAFETY: the fake never touches memory.
    assert!(unsafe { hw.map_pages(4095, 0, 4096, crate::dma::Perm::READ) }.is_err());
    let _: Arc<dyn IommuHw> = Arc::new(FakeIommu::new());
}
