//! Scatter-gather: one contiguous IOVA range when translating, one segment
//! per entry otherwise, nothing left behind on error.

use super::{config, domain};
use crate::dma::{AllocatorKind, Direction, DmaBuffer, DmaError, IommuMode, SgList};

#[test]
fn translated_list_is_one_contiguous_iova_range() {
    let (d, fake) = domain(config(IommuMode::Strict, AllocatorKind::Magazines));
    let (mut a, mut b, mut c) =
        (DmaBuffer::new(4096).unwrap(), DmaBuffer::new(4096).unwrap(), DmaBuffer::new(300).unwrap());
    let (pa, pb, pc) = (a.phys(), b.phys(), c.phys());
    let mut sg = SgList::new();
    sg.push(&mut a);
    sg.push(&mut b);
    sg.push_range(&mut c, 10..110).unwrap();
    let m = d.map_sg(sg, Direction::Bidirectional).unwrap();
    let segs = m.segments().to_vec();
    // a and b are whole pages: they merge; c starts at offset 10 of its page.
    assert_eq!(segs.len(), 2, "{segs:x?}");
    let base = segs[0].0;
    assert_eq!(segs[0], (base, 8192));
    assert_eq!(segs[1], (base + 8192 + 10, 100));
    assert_eq!(fake.translate(base), Some(pa));
    assert_eq!(fake.translate(base + 4096 + 5), Some(pb + 5));
    assert_eq!(fake.translate(segs[1].0), Some(pc + 10));
    assert_eq!(fake.mapped_pages(), 3);
    assert_eq!(d.stats().maps, 1);
    drop(m);
    assert_eq!(fake.mapped_pages(), 0);
    assert_eq!(fake.iotlb_len(), 0);
    let c = fake.calls();
    assert_eq!((c.map, c.unmap, c.invalidate), (3, 1, 1), "one unmap, one invalidation for the list");
    d.drain_iova_caches();
    assert_eq!(d.iova_outstanding(), 0);
}

#[test]
fn untranslated_list_has_one_segment_per_entry() {
    let (d, fake) = domain(config(IommuMode::None, AllocatorKind::Magazines));
    let (mut a, mut b) = (DmaBuffer::new(4096).unwrap(), DmaBuffer::new(64).unwrap());
    let (pa, pb) = (a.phys(), b.phys());
    let mut sg = SgList::new();
    sg.push(&mut a);
    sg.push_range(&mut b, 4..8).unwrap();
    let m = d.map_sg(sg, Direction::ToDevice).unwrap();
    assert_eq!(m.segments(), &[(pa, 4096), (pb + 4, 4)]);
    m.unmap().unwrap();
    assert_eq!(fake.calls().total(), 0);
}

#[test]
fn sg_errors_leave_nothing_mapped() {
    let (d, fake) = domain(config(IommuMode::Strict, AllocatorKind::GlobalLock));
    assert_eq!(d.map_sg(SgList::new(), Direction::ToDevice).unwrap_err(), DmaError::EmptySgList);
    let (mut a, mut b, mut c) = (DmaBuffer::new(64).unwrap(), DmaBuffer::new(64).unwrap(), DmaBuffer::new(64).unwrap());
    let mut sg = SgList::new();
    assert!(sg.push_range(&mut c, 10..100).is_err());
    assert!(sg.is_empty(), "a refused push changes nothing");
    sg.push(&mut a);
    sg.push(&mut b);
    fake.fail_map_after(1); // the second entry's map fails
    let e = d.map_sg(sg, Direction::ToDevice).unwrap_err();
    assert!(matches!(e, DmaError::Hardware { .. }), "{e}");
    assert_eq!(fake.mapped_pages(), 0);
    assert_eq!(fake.iotlb_len(), 0);
    assert_eq!(d.iova_outstanding(), 0);
    assert_eq!(d.stats().maps, 0);
}
