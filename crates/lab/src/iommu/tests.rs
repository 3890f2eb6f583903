use super::*;
use crate::test_pages::Pages;
use crate::{Lab, LabConfig};
use wirespeed_time::now;

const IOVA: u64 = 0x10_0000;

fn iommu_with(config: IommuConfig) -> Iommu {
    Lab::new(LabConfig::default()).iommu(config).expect("a valid configuration")
}

fn iommu() -> Iommu {
    iommu_with(IommuConfig::default())
}

#[test]
fn a_mapped_page_translates_with_a_walk_then_from_the_iotlb() {
    let mem = Pages::new(2);
    let mmu = iommu();
    // SAFETY: `mem` outlives every device access (none here touch memory).
    unsafe { mmu.map(IOVA, mem.addr(), 8192, Perm::READ_WRITE) }.unwrap();
    assert_eq!((mmu.mapped_pages(), mmu.is_mapped(IOVA + 8191), mmu.is_mapped(IOVA + 8192)), (2, true, false));
    let t = mmu.translate(IOVA + 4100, false).unwrap();
    assert_eq!(t, Translation { phys: mem.addr() + 4100, walk_ns: 400, stale: false });
    let t = mmu.translate(IOVA + 4104, true).unwrap();
    assert_eq!(t, Translation { phys: mem.addr() + 4104, walk_ns: 0, stale: false }, "an IOTLB hit");
    let s = mmu.stats();
    assert_eq!((s.iotlb_hits, s.iotlb_misses, s.walks, s.faults, s.mapped_pages), (1, 1, 1, 0, 2));
    mmu.unmap(IOVA, 8192).unwrap();
    mmu.invalidate(IOVA, 8192);
    assert_eq!(mmu.mapped_pages(), 0);
    let f = mmu.translate(IOVA + 4100, false).unwrap_err();
    assert_eq!(f, DmaFault { iova: IOVA + 4100, write: false, reason: FaultReason::NotMapped });
    assert!(f.to_string().contains("read from 0x101004, which is not mapped"), "{f}");
}

#[test]
fn unmap_without_invalidate_leaves_a_stale_hit_and_invalidate_turns_it_into_a_fault() {
    let mmu = iommu();
    // SAFETY: no device access touches memory in this test.
    unsafe { mmu.map(IOVA, 0x7000_0000, 4096, Perm::WRITE) }.unwrap();
    mmu.translate(IOVA, true).unwrap();
    mmu.unmap(IOVA, 4096).unwrap();
    assert!(mmu.is_cached(IOVA), "unmap leaves the IOTLB alone");
    let t = mmu.translate(IOVA + 8, true).unwrap();
    assert_eq!(t, Translation { phys: 0x7000_0008, walk_ns: 0, stale: true });
    // Remapped elsewhere, the cached entry is stale too.
    // SAFETY: as above.
    unsafe { mmu.map(IOVA, 0x7100_0000, 4096, Perm::WRITE) }.unwrap();
    assert!(mmu.translate(IOVA, true).unwrap().stale);
    mmu.unmap(IOVA, 4096).unwrap();
    assert_eq!(mmu.stats().stale_hits, 2);
    mmu.invalidate(IOVA, 1);
    assert_eq!(mmu.translate(IOVA + 8, true).unwrap_err().reason, FaultReason::NotMapped);
    let s = mmu.stats();
    assert_eq!((s.stale_hits, s.faults, s.invalidations), (2, 1, 1));
    assert_eq!(mmu.faults().len(), 1);
    assert_eq!(mmu.take_faults()[0].iova, IOVA + 8);
    assert!(mmu.faults().is_empty(), "taken");
    assert_eq!(mmu.stats().faults, 1, "the count stays");
}

#[test]
fn an_access_the_pte_does_not_allow_faults_with_the_reason() {
    let mmu = iommu();
    // SAFETY: no device access touches memory in this test.
    unsafe { mmu.map(IOVA, 0x7000_0000, 4096, Perm::READ) }.unwrap();
    // SAFETY: as above: only translations are asked for, no memory is accessed.
    unsafe { mmu.map(IOVA + 4096, 0x7000_1000, 4096, Perm::WRITE) }.unwrap();
    assert!(mmu.translate(IOVA, false).is_ok());
    let f = mmu.translate(IOVA, true).unwrap_err();
    assert_eq!(f, DmaFault { iova: IOVA, write: true, reason: FaultReason::Permission });
    assert!(f.to_string().contains("without write permission"), "{f}");
    assert!(mmu.translate(IOVA + 4096, true).is_ok());
    assert_eq!(mmu.translate(IOVA + 4096, false).unwrap_err().reason, FaultReason::Permission);
    assert_eq!(mmu.stats().faults, 2);
}

#[test]
fn bad_ranges_are_refused_with_what_is_allowed_and_change_nothing() {
    let mmu = iommu();
    // SAFETY: no device access touches memory in this test.
    unsafe { mmu.map(IOVA, 0x7000_0000, 2 * 4096, Perm::READ) }.unwrap();
    // SAFETY: as above; every call below is refused and maps nothing.
    let map = |iova, phys, len, perm| unsafe { mmu.map(iova, phys, len, perm) };
    let refused = [
        (
            map(IOVA + 0x10_0001, 0x7100_0000, 4096, Perm::READ),
            IommuError::Misaligned { what: "iova", addr: IOVA + 0x10_0001 },
        ),
        (map(0x30_0000, 0x7100_0800, 4096, Perm::READ), IommuError::Misaligned { what: "phys", addr: 0x7100_0800 }),
        (map(0x30_0000, 0x7100_0000, 0, Perm::READ), IommuError::BadLength { len: 0 }),
        (map(0x30_0000, 0x7100_0000, 100, Perm::READ), IommuError::BadLength { len: 100 }),
        (map(0x30_0000, 0x7100_0000, 4096, Perm::default()), IommuError::NoPermission),
        (
            map(1 << 48, 0x7100_0000, 4096, Perm::READ),
            IommuError::OutOfRange { what: "iova", addr: 1 << 48, len: 4096 },
        ),
        (
            map(0x30_0000, u64::MAX - 4095, 8192, Perm::READ),
            IommuError::OutOfRange { what: "phys", addr: u64::MAX - 4095, len: 8192 },
        ),
        // Overlaps the second page of the existing mapping.
        (map(IOVA - 4096, 0x7100_0000, 3 * 4096, Perm::READ), IommuError::AlreadyMapped { iova: IOVA }),
        (mmu.unmap(IOVA, 3 * 4096), IommuError::NotMapped { iova: IOVA + 2 * 4096 }),
        // A single page takes the table's own check: mapped, not mapped, no table yet.
        (map(IOVA + 4096, 0x7100_0000, 4096, Perm::READ), IommuError::AlreadyMapped { iova: IOVA + 4096 }),
        (mmu.unmap(IOVA + 2 * 4096, 4096), IommuError::NotMapped { iova: IOVA + 2 * 4096 }),
        (mmu.unmap(0x4000_0000, 4096), IommuError::NotMapped { iova: 0x4000_0000 }),
        (mmu.unmap(IOVA + 1, 4096), IommuError::Misaligned { what: "iova", addr: IOVA + 1 }),
        (mmu.unmap(IOVA, 4095), IommuError::BadLength { len: 4095 }),
    ];
    for (got, want) in refused {
        assert_eq!(got, Err(want));
    }
    assert_eq!(mmu.mapped_pages(), 2, "nothing changed");
    assert!(!mmu.is_mapped(IOVA - 4096) && !mmu.is_mapped(0x30_0000));
    assert_eq!(mmu.translate(IOVA + 4096, false).unwrap().phys, 0x7000_1000);
    let e = IommuError::BadLength { len: 100 }.to_string();
    assert!(e.contains("100 bytes") && e.contains("non-zero multiple of 4096"), "{e}");
    let e = IommuError::AlreadyMapped { iova: IOVA }.to_string();
    assert!(e.contains("0x100000 is already mapped"), "{e}");
}

#[test]
fn the_iotlb_holds_its_capacity_and_replaces_the_least_recently_used() {
    let mmu = iommu_with(IommuConfig { iotlb_entries: 2, ..IommuConfig::default() });
    // SAFETY: no device access touches memory in this test.
    unsafe { mmu.map(IOVA, 0x7000_0000, 3 * 4096, Perm::READ) }.unwrap();
    let page = |i: u64| IOVA + i * 4096;
    mmu.translate(page(0), false).unwrap();
    mmu.translate(page(1), false).unwrap();
    mmu.translate(page(0), false).unwrap(); // page 1 is now the least recently used
    assert_eq!(mmu.translate(page(2), false).unwrap().walk_ns, 400);
    assert_eq!(mmu.iotlb_len(), 2);
    assert!(mmu.is_cached(page(0)) && mmu.is_cached(page(2)) && !mmu.is_cached(page(1)));
    assert_eq!(mmu.translate(page(1), false).unwrap().walk_ns, 400, "replaced: walked again");
    let s = mmu.stats();
    assert_eq!((s.iotlb_hits, s.iotlb_misses, s.walks), (1, 4, 4));
    mmu.invalidate_all();
    assert_eq!((mmu.iotlb_len(), mmu.stats().invalidate_alls), (0, 1));
}

#[test]
fn passthrough_translates_nothing_and_refuses_nothing() {
    let mmu = iommu();
    mmu.set_passthrough(true);
    assert!(mmu.passthrough());
    assert_eq!(mmu.translate(0xdead_b000, true), Ok(Translation { phys: 0xdead_b000, walk_ns: 0, stale: false }));
    assert_eq!(mmu.stats(), IommuStats::default());
    mmu.set_passthrough(false);
    assert!(mmu.translate(0xdead_b000, true).is_err());
}

#[test]
fn invalidations_cost_the_cpu_their_wait() {
    let mmu = iommu_with(IommuConfig { invalidate_ns: 200_000, invalidate_all_ns: 300_000, ..IommuConfig::default() });
    let t0 = now();
    mmu.invalidate(IOVA, 4096);
    let t1 = now();
    mmu.invalidate_all();
    let t2 = now();
    assert!(t1.ns_since(t0) >= 200_000, "invalidate took {} ns", t1.ns_since(t0));
    assert!(t2.ns_since(t1) >= 300_000, "invalidate_all took {} ns", t2.ns_since(t1));
}

#[test]
fn a_configuration_no_iommu_could_have_is_refused_with_what_is_allowed() {
    let lab = Lab::new(LabConfig::default());
    let d = IommuConfig::default;
    assert_eq!(
        lab.iommu(IommuConfig { iotlb_entries: 0, ..d() }).unwrap_err(),
        IommuConfigError::IotlbEntries { iotlb_entries: 0 }
    );
    let e = lab.iommu(IommuConfig { walk_ns: u64::MAX, ..d() }).unwrap_err();
    assert_eq!(e, IommuConfigError::Cost { field: "walk_ns", ns: u64::MAX });
    assert!(e.to_string().contains("allowed: 0..=10000000 ns"), "{e}");
    assert!(IommuConfigError::IotlbEntries { iotlb_entries: 0 }.to_string().contains("allowed: 1..=4096"));
    let max = IommuConfig { iotlb_entries: IommuConfig::MAX_IOTLB_ENTRIES, walk_ns: IommuConfig::MAX_COST_NS, ..d() };
    assert!(lab.iommu(max).is_ok());
    assert_eq!(lab.default_iommu().config(), &d());
}

#[test]
fn an_iommu_handle_is_shared_between_threads_and_stays_exact_under_contention() {
    fn shareable<T: Send + Sync + Clone + std::fmt::Debug>() {}
    shareable::<Iommu>();
    // Four threads map, translate and unmap their own pages through one IOMMU
    // (and one IOTLB too small for them all): a lost update breaks the counts.
    let mmu = iommu_with(IommuConfig { iotlb_entries: 3, ..IommuConfig::default() });
    let rounds = 2_000u64;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let mmu = mmu.clone();
            s.spawn(move || {
                let iova = IOVA + t * 4096;
                for _ in 0..rounds {
                    // SAFETY: no device access touches memory in this test.
                    unsafe { mmu.map(iova, 0x7000_0000 + t * 4096, 4096, Perm::READ) }.unwrap();
                    let got = mmu.translate(iova + 8, false).unwrap();
                    assert!(got.phys == 0x7000_0008 + t * 4096 && !got.stale, "{got:?}");
                    mmu.unmap(iova, 4096).unwrap();
                    mmu.invalidate(iova, 4096);
                }
            });
        }
    });
    let s = mmu.stats();
    assert_eq!(
        (s.iotlb_hits + s.iotlb_misses, s.invalidations, s.stale_hits, s.faults),
        (4 * rounds, 4 * rounds, 0, 0)
    );
    assert_eq!((s.walks, s.mapped_pages, mmu.iotlb_len()), (s.iotlb_misses, 0, 0));
}

#[test]
fn threads_map_and_unmap_concurrently_and_racing_ranges_are_all_or_nothing() {
    let mmu = iommu();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let mmu = &mmu;
            s.spawn(move || {
                for i in 0..2000u64 {
                    let iova = IOVA + ((t * 2000 + i) % 600) * 4096 * 4 + t * 4096;
                    // SAFETY: no device access touches memory in this test.
                    unsafe { mmu.map(iova, 0x7000_0000, 4096, Perm::READ) }.unwrap();
                    mmu.unmap(iova, 4096).unwrap();
                }
            });
        }
        // Two threads race for overlapping 3-page ranges: each attempt maps all
        // three pages or none.
        for t in 0..2u64 {
            let mmu = &mmu;
            s.spawn(move || {
                for _ in 0..2000 {
                    let base = 0x4000_0000 + t * 4096;
                    // SAFETY: as above.
                    if unsafe { mmu.map(base, 0x7000_0000, 3 * 4096, Perm::WRITE) }.is_ok() {
                        assert!((0..3).all(|p| mmu.is_mapped(base + p * 4096)));
                        mmu.unmap(base, 3 * 4096).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(mmu.mapped_pages(), 0);
    assert_eq!(mmu.stats().mapped_pages, 0);
}
