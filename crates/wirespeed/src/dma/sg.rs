//! Scatter-gather: [`SgList`] (several buffers or ranges) mapped with
//! [`DmaDomain::map_sg`] into an [`SgMapping`].
//!
//! Translating modes map the whole list into **one contiguous IOVA range**
//! (as Linux's iommu-dma `iommu_dma_map_sg`): each entry's pages follow the
//! previous entry's, its offset within its first page preserved, so entries
//! that end and start on page boundaries come out as one device segment.
//! `None`/`Identity` give one segment per entry at its physical address.
//! One IOVA allocation, one unmap and one invalidation (or queue entry) for
//! the whole list.

use super::buffer::{DmaBuffer, Region};
use super::domain::{span, DmaDomain};
use super::error::DmaError;
use super::flush_queue::Keep;
use super::hw::Direction;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

const PAGE: u64 = super::PAGE_SIZE as u64;

/// Buffers (or ranges of them) to map as one list; each is borrowed until
/// the [`SgMapping`] ends.
#[derive(Debug, Default)]
pub struct SgList<'a> {
    ranges: Vec<(u64, usize)>,
    regions: Vec<Arc<Region>>,
    _bufs: PhantomData<&'a mut [u8]>,
}

impl<'a> SgList<'a> {
    /// An empty list.
    pub fn new() -> SgList<'a> {
        SgList::default()
    }

    /// Adds a whole buffer.
    pub fn push(&mut self, buf: &'a mut DmaBuffer) {
        self.ranges.push((buf.phys(), buf.len()));
        self.regions.push(buf.region().clone());
    }

    /// Adds `range` of a buffer (`start < end <= buf.len()`); on error the
    /// list is unchanged.
    pub fn push_range(&mut self, buf: &'a mut DmaBuffer, range: Range<usize>) -> Result<(), DmaError> {
        let (start, end) = (range.start, range.end);
        if start >= end || end > buf.len() {
            return Err(DmaError::RangeOutOfBounds { start, end, len: buf.len() });
        }
        self.ranges.push((buf.phys() + start as u64, end - start));
        self.regions.push(buf.region().clone());
        Ok(())
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// No entry yet.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// A mapped scatter-gather list; unmapped on drop (errors counted in
/// [`DmaStats::hw_errors`](super::DmaStats::hw_errors); [`unmap`](SgMapping::unmap) reports them).
#[derive(Debug)]
pub struct SgMapping<'a> {
    domain: &'a DmaDomain,
    segments: Vec<(u64, usize)>,
    iova: u64,
    /// IOVA pages (0: not translated).
    pages: u64,
    /// The buffers' memory; `None` once unmapped.
    regions: Option<Vec<Arc<Region>>>,
    _bufs: PhantomData<&'a mut [u8]>,
}

impl DmaDomain {
    /// Maps a scatter-gather list (see the module docs for the layout). On
    /// error nothing is mapped or allocated.
    pub fn map_sg<'a>(&'a self, sg: SgList<'a>, dir: Direction) -> Result<SgMapping<'a>, DmaError> {
        if sg.ranges.is_empty() {
            return Err(DmaError::EmptySgList);
        }
        let mut total_pages: u64 = 0;
        let mut total_len: usize = 0;
        for &(phys, len) in &sg.ranges {
            total_pages = total_pages.saturating_add(span(phys, len)?.1);
            total_len = total_len.saturating_add(len);
        }
        let mut segments: Vec<(u64, usize)> = Vec::with_capacity(sg.ranges.len());
        let (iova, pages) = match self.translating() {
            None => {
                segments.extend_from_slice(&sg.ranges);
                (0, 0)
            }
            Some(hw) => {
                let space_pages = self.space_pages();
                if total_pages > space_pages {
                    return Err(DmaError::TooLarge { len: total_len, pages: total_pages, space_pages });
                }
                let iova = self.alloc_iova(total_pages)?;
                let mut cursor = iova;
                for &(phys, len) in &sg.ranges {
                    let (page_phys, pages) = span(phys, len)?;
                    // SAFETY: the memory is a borrowed buffer's, kept valid
                    // (and allocated) until the SgMapping unmaps.
                    if let Err(error) = unsafe { hw.map_pages(cursor, page_phys, pages * PAGE, dir.perm()) } {
                        self.undo_partial(hw, iova, (cursor - iova) / PAGE, total_pages);
                        self.count_hw_error();
                        return Err(DmaError::Hardware { iova: cursor, len: pages * PAGE, error });
                    }
                    let addr = cursor + phys % PAGE;
                    match segments.last_mut() {
                        Some(last) if last.0 + last.1 as u64 == addr => last.1 += len,
                        _ => segments.push((addr, len)),
                    }
                    cursor += pages * PAGE;
                }
                (iova, total_pages)
            }
        };
        self.count_map();
        Ok(SgMapping { domain: self, segments, iova, pages, regions: Some(sg.regions), _bufs: PhantomData })
    }
}

impl SgMapping<'_> {
    /// The device segments: (device address, length), in list order.
    pub fn segments(&self) -> &[(u64, usize)] {
        &self.segments
    }

    /// Before the CPU reads what the device wrote: a fence (coherent lab).
    pub fn sync_for_cpu(&self) {
        fence(Ordering::SeqCst);
    }

    /// Before the device reads what the CPU wrote: a fence (coherent lab).
    pub fn sync_for_device(&self) {
        fence(Ordering::SeqCst);
    }

    /// Unmaps now, reporting an IOMMU error (the range is then quarantined).
    pub fn unmap(mut self) -> Result<(), DmaError> {
        self.release()
    }

    fn release(&mut self) -> Result<(), DmaError> {
        let Some(regions) = self.regions.take() else { return Ok(()) };
        fence(Ordering::SeqCst);
        if self.pages == 0 {
            self.domain.count_unmap();
            return Ok(());
        }
        self.domain.release_pages(self.iova, self.pages, Keep::Many(regions))
    }
}

impl Drop for SgMapping<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}
