//! The IOMMU as the DMA layer sees it: the [`IommuHw`] driver face (write and
//! clear page-table entries, invalidate the IOTLB), page permissions
//! ([`Perm`]) and the direction of a transfer ([`Direction`]).
//!
//! The stack does not know the lab: a glue module implements [`IommuHw`] for
//! the lab's IOMMU (or, later, for a real one).

use super::error::IommuHwError;

/// What a device may do with a mapped page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Perm {
    /// The device may read the page (DMA from memory: TX).
    pub read: bool,
    /// The device may write the page (DMA to memory: RX).
    pub write: bool,
}

impl Perm {
    /// Read only.
    pub const READ: Perm = Perm { read: true, write: false };
    /// Write only.
    pub const WRITE: Perm = Perm { read: false, write: true };
    /// Read and write.
    pub const READ_WRITE: Perm = Perm { read: true, write: true };
}

/// Which way the data of a mapping moves (Linux `enum dma_data_direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Memory to device (TX): the device only reads.
    ToDevice,
    /// Device to memory (RX): the device only writes.
    FromDevice,
    /// Both ways: the device reads and writes.
    Bidirectional,
}

impl Direction {
    /// The page permission the device gets for this direction.
    pub const fn perm(self) -> Perm {
        match self {
            Direction::ToDevice => Perm::READ,
            Direction::FromDevice => Perm::WRITE,
            Direction::Bidirectional => Perm::READ_WRITE,
        }
    }
}

impl From<Direction> for Perm {
    fn from(d: Direction) -> Perm {
        d.perm()
    }
}

/// The driver face of an IOMMU that a [`DmaDomain`](super::DmaDomain) needs.
///
/// Addresses and lengths are in bytes, page-aligned ([`PAGE_SIZE`](super::PAGE_SIZE)),
/// lengths non-zero multiples of the page. `map_pages`/`unmap_pages` only
/// write/clear page-table entries: the IOTLB may keep translations of cleared
/// entries until `invalidate`/`invalidate_all` returns (the caller waits for
/// the invalidation's completion inside those calls).
pub trait IommuHw: Send + Sync {
    /// Maps `[iova, iova + len)` to `[phys, phys + len)` with `perm`.
    /// On error nothing is mapped.
    ///
    /// # Safety
    /// The memory `[phys, phys + len)` must stay valid for the device's
    /// accesses that `perm` allows until an `unmap_pages` of the range and the
    /// invalidation that follows it have returned.
    unsafe fn map_pages(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuHwError>;

    /// Clears the entries of `[iova, iova + len)` (the IOTLB may keep stale
    /// translations). On error nothing is unmapped.
    fn unmap_pages(&self, iova: u64, len: u64) -> Result<(), IommuHwError>;

    /// Drops the IOTLB entries of `[iova, iova + len)` and waits for completion.
    fn invalidate(&self, iova: u64, len: u64);

    /// Drops every IOTLB entry and waits for completion.
    fn invalidate_all(&self);

    /// Passthrough on/off (device addresses are physical addresses). Called by
    /// [`DmaDomain::new`](super::DmaDomain::new) with `true` for
    /// [`IommuMode::Identity`](super::IommuMode::Identity). The default does nothing.
    fn set_passthrough(&self, on: bool) {
        let _ = on;
    }
}
