//! What can go wrong at the IOMMU: a driver's bad `map`/`unmap`
//! ([`IommuError`]) and a device access the mapping does not allow ([`DmaFault`]).

use super::{IOVA_BITS, PAGE_SIZE};
use std::fmt;

/// A `map` or `unmap` the IOMMU refused; the page table was left unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IommuError {
    /// An address that is not a multiple of the 4096-byte page.
    Misaligned {
        /// Which address (`iova` or `phys`).
        what: &'static str,
        /// The address given.
        addr: u64,
    },
    /// A length that is 0 or not a multiple of the 4096-byte page.
    BadLength {
        /// The length given.
        len: u64,
    },
    /// A range that passes the end of its address space (IOVAs have
    /// [`IOVA_BITS`] bits, physical addresses 64).
    OutOfRange {
        /// Which address (`iova` or `phys`).
        what: &'static str,
        /// The start given.
        addr: u64,
        /// The length given.
        len: u64,
    },
    /// A mapping that lets the device neither read nor write.
    NoPermission,
    /// `map` over a page that is already mapped.
    AlreadyMapped {
        /// The first such page's IOVA.
        iova: u64,
    },
    /// `unmap` of a page that is not mapped.
    NotMapped {
        /// The first such page's IOVA.
        iova: u64,
    },
}

impl fmt::Display for IommuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IommuError::Misaligned { what, addr } => {
                write!(f, "IOMMU {what} {addr:#x} is not page-aligned; allowed: multiples of {PAGE_SIZE:#x}")
            }
            IommuError::BadLength { len } => {
                write!(f, "IOMMU range of {len} bytes; allowed: a non-zero multiple of {PAGE_SIZE}")
            }
            IommuError::OutOfRange { what, addr, len } => write!(
                f,
                "IOMMU {what} range {addr:#x} + {len:#x} passes the end of its address space \
                 (IOVAs have {IOVA_BITS} bits, physical addresses 64)"
            ),
            IommuError::NoPermission => {
                write!(f, "IOMMU mapping with neither read nor write permission; allowed: read, write or both")
            }
            IommuError::AlreadyMapped { iova } => {
                write!(f, "IOMMU page {iova:#x} is already mapped; unmap it first (nothing was mapped)")
            }
            IommuError::NotMapped { iova } => {
                write!(f, "IOMMU page {iova:#x} is not mapped (nothing was unmapped)")
            }
        }
    }
}

impl std::error::Error for IommuError {}

/// Why a device access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultReason {
    /// No PTE for the page.
    NotMapped,
    /// The PTE does not allow the access (a read of a write-only page, or a
    /// write of a read-only one).
    Permission,
}

/// A device access the IOMMU refused: nothing was read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaFault {
    /// The device address of the access.
    pub iova: u64,
    /// Whether the device wanted to write memory (RX) or read it (TX).
    pub write: bool,
    /// Why it was refused.
    pub reason: FaultReason,
}

impl fmt::Display for DmaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.write { "write to" } else { "read from" };
        match self.reason {
            FaultReason::NotMapped => write!(f, "DMA fault: device {dir} {:#x}, which is not mapped", self.iova),
            FaultReason::Permission => {
                let needs = if self.write { "write" } else { "read" };
                write!(f, "DMA fault: device {dir} {:#x}, mapped without {needs} permission", self.iova)
            }
        }
    }
}

impl std::error::Error for DmaFault {}
