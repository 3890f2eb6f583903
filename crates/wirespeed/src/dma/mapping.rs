//! Mappings: [`RawMapping`] (any memory, unmapped explicitly with
//! [`DmaDomain::unmap_raw`]) and [`Mapping`] (a [`DmaBuffer`](super::DmaBuffer)
//! or a range of it, unmapped on drop).
//!
//! `sync_for_cpu` / `sync_for_device` follow the Linux DMA API contract and
//! must be called: before the CPU reads what the device wrote, and before the
//! device reads what the CPU wrote. The lab is cache-coherent and its
//! engines see memory through register accesses that synchronize with the
//! CPU (a lock), so they are a release fence (for the device) and an acquire
//! fence (for the CPU), as Linux's coherent DMA needs only `dma_wmb`/`dma_rmb`
//! around the doorbell; on a non-coherent system they would clean/invalidate caches.

use super::buffer::Region;
use super::domain::DmaDomain;
use super::error::DmaError;
use super::flush_queue::Keep;
use super::hw::Direction;
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

/// A mapping made with [`DmaDomain::map_raw`]. Not unmapped on drop:
/// hand it to [`DmaDomain::unmap_raw`] (dropping it leaves the memory mapped).
#[derive(Debug)]
#[must_use = "a RawMapping stays mapped until DmaDomain::unmap_raw"]
pub struct RawMapping {
    device_addr: u64,
    len: usize,
    iova: u64,
    pages: u64,
    dir: Direction,
    domain: u64,
}

impl RawMapping {
    pub(crate) fn new(device_addr: u64, len: usize, iova: u64, pages: u64, dir: Direction, domain: u64) -> RawMapping {
        RawMapping { device_addr, len, iova, pages, dir, domain }
    }

    /// The address the device uses for the first byte.
    pub fn device_addr(&self) -> u64 {
        self.device_addr
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false` (a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The direction it was mapped with.
    pub fn direction(&self) -> Direction {
        self.dir
    }

    /// Before the CPU reads what the device wrote: on the coherent lab an
    /// acquire fence (the device's writes are published by the register
    /// access that showed it done, which synchronizes with the engine).
    pub fn sync_for_cpu(&self) {
        fence(Ordering::Acquire);
    }

    /// Before the device reads what the CPU wrote: on the coherent lab a
    /// release fence (the register write that starts the device
    /// synchronizes with the engine, as a doorbell after `dma_wmb`).
    pub fn sync_for_device(&self) {
        fence(Ordering::Release);
    }

    pub(crate) fn iova(&self) -> u64 {
        self.iova
    }

    /// IOVA pages (0: not translated, `None`/`Identity`).
    pub(crate) fn pages(&self) -> u64 {
        self.pages
    }

    pub(crate) fn domain(&self) -> u64 {
        self.domain
    }
}

/// A mapping of a [`DmaBuffer`](super::DmaBuffer) (or a range of it): the
/// device owns the memory while it lives (the buffer is borrowed mutably);
/// dropping it unmaps (errors are counted in
/// [`DmaStats::hw_errors`](super::DmaStats::hw_errors); use
/// [`unmap`](Mapping::unmap) to see them). If it is leaked, the buffer's
/// memory is never freed, so the device cannot reach freed memory.
#[derive(Debug)]
pub struct Mapping<'a> {
    domain: &'a DmaDomain,
    raw: RawMapping,
    /// The buffer's memory; `None` once unmapped.
    region: Option<Arc<Region>>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> Mapping<'a> {
    pub(crate) fn new(domain: &'a DmaDomain, raw: RawMapping, region: Arc<Region>) -> Mapping<'a> {
        Mapping { domain, raw, region: Some(region), _buf: PhantomData }
    }

    /// The address the device uses for the first byte.
    pub fn device_addr(&self) -> u64 {
        self.raw.device_addr()
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Always `false`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The direction it was mapped with.
    pub fn direction(&self) -> Direction {
        self.raw.direction()
    }

    /// Before the CPU reads what the device wrote (see [`RawMapping::sync_for_cpu`]).
    pub fn sync_for_cpu(&self) {
        self.raw.sync_for_cpu();
    }

    /// Before the device reads what the CPU wrote (see [`RawMapping::sync_for_device`]).
    pub fn sync_for_device(&self) {
        self.raw.sync_for_device();
    }

    /// Unmaps now, reporting an IOMMU error (the range is then quarantined).
    pub fn unmap(mut self) -> Result<(), DmaError> {
        self.release()
    }

    fn release(&mut self) -> Result<(), DmaError> {
        let Some(region) = self.region.take() else { return Ok(()) };
        self.domain.release(&self.raw, Keep::One(region))
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}
