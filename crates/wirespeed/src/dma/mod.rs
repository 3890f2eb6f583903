//! DMA: buffers a device can reach, mapping them into its address space
//! through an IOMMU (or not), IOVA allocation, and IOTLB invalidation.
//!
//! Seed 003 measured that DMA-mapping cost is almost all software: the IOVA
//! allocator's lock (one rbtree) and the invalidations. This module removes
//! both where it can and says what each choice costs:
//!
//! - [`DmaBuffer`] (`buffer.rs`): page-aligned, zeroed, mlocked (best
//!   effort) memory; [`DmaBuffer::phys`] is the address mappings start from.
//! - [`IommuHw`] (`hw.rs`): the IOMMU driver face the domain needs (PTE
//!   writes, IOTLB invalidation); [`Perm`], [`Direction`]. The stack does not
//!   depend on the lab: glue implements [`IommuHw`] for the lab's IOMMU.
//! - IOVA allocators (`iova/`): [`IovaAllocator`], the classic
//!   [`GlobalLockAllocator`] and the [`MagazineAllocator`] (Linux's rcache:
//!   per-thread magazines, a depot, the global tree behind them).
//! - [`DmaDomain`] (`domain.rs`, configured by `config.rs`): the four
//!   [`IommuMode`]s — `None`, `Identity` (device address = physical),
//!   `Strict` (invalidate on every unmap), `Lazy` (per-thread flush queues,
//!   `flush_queue.rs`, and a flush timer thread, `flusher.rs`; see
//!   [`IommuMode::Lazy`] for the exact window a stale translation can live).
//! - Mappings (`mapping.rs`): [`Mapping`] of a buffer (unmapped on drop),
//!   [`RawMapping`] of any memory ([`DmaDomain::map_raw`], unsafe), and
//!   scatter-gather (`sg.rs`): [`SgList`] → [`SgMapping`], one contiguous
//!   IOVA range when translating.
//! - [`DmaStats`] (`stats.rs`): per-thread counters summed on read; errors
//!   in [`DmaError`] (`error.rs`) — on error nothing is left mapped or allocated.
//! - Per-thread slots (`per_thread.rs`) stand in for the kernel's per-CPU data.
//! - [`testing::FakeIommu`]: a software IOMMU (table, IOTLB, call counts) for tests.
//!
//! ```
//! use wirespeed::dma::{Direction, DmaBuffer, DmaDomain, DomainConfig, IommuMode};
//!
//! // No IOMMU: the device address is the physical address.
//! let domain = DmaDomain::new(None, DomainConfig::with_mode(IommuMode::None)).unwrap();
//! let mut buf = DmaBuffer::new(256).unwrap();
//! buf.as_mut_slice()[0] = 0xa5;
//! let phys = buf.phys();
//! {
//!     let map = domain.map(&mut buf, Direction::ToDevice).unwrap();
//!     map.sync_for_device(); // before the device reads (a release fence: the lab is coherent)
//!     assert_eq!(map.device_addr(), phys);
//!     assert_eq!(map.len(), 256);
//! } // unmapped here
//! assert_eq!(buf.as_slice()[0], 0xa5);
//! assert_eq!(domain.stats().maps, 1);
//! assert_eq!(domain.stats().unmaps, 1);
//! ```

mod buffer;
mod config;
mod domain;
mod error;
mod flush_queue;
mod flusher;
mod hw;
mod iova;
mod mapping;
mod per_thread;
mod sg;
mod slot_lock;
mod stats;
pub mod testing;

#[cfg(all(test, loom))]
mod loom_model;
#[cfg(all(test, not(loom)))]
mod tests;

pub use buffer::DmaBuffer;
pub use config::{AllocatorKind, DomainConfig, IommuMode, LazyConfig};
pub use domain::DmaDomain;
pub use error::{DmaError, IommuHwError, IommuHwErrorKind, UnmapError};
pub use hw::{Direction, IommuHw, Perm};
pub use iova::{
    GlobalLockAllocator, IovaAllocator, IovaStats, MagazineAllocator, DEPOT_MAX_MAGAZINES, MAGAZINE_SIZE,
    MAX_CACHED_PAGES, PTE_LINE_PAGES,
};
pub use mapping::{Mapping, RawMapping};
pub use sg::{SgList, SgMapping};
pub use stats::DmaStats;

/// Bytes in a page (buffers, mappings and IOVAs are page-granular).
pub const PAGE_SIZE: usize = 4096;
