//! What can go wrong in the DMA layer: [`DmaError`] (every fallible call;
//! on error nothing is left mapped or allocated), [`IommuHwError`] (what
//! the IOMMU driver refused) and [`UnmapError`].

use super::mapping::RawMapping;
use std::fmt;

/// What kind of request an [`IommuHw`](super::IommuHw) refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IommuHwErrorKind {
    /// An address or length the IOMMU cannot take (alignment, address width).
    InvalidRange,
    /// `map_pages` over a page that is already mapped.
    AlreadyMapped,
    /// `unmap_pages` of a page that is not mapped.
    NotMapped,
    /// A permission the IOMMU cannot give (e.g. neither read nor write).
    Permission,
    /// Anything else (see the reason).
    Other,
}

/// A request the IOMMU driver refused; the page table was left unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IommuHwError {
    /// What kind of refusal.
    pub kind: IommuHwErrorKind,
    /// The driver's explanation (e.g. the lab's `IommuError` as text).
    pub reason: String,
}

impl IommuHwError {
    /// An error of `kind` with a reason.
    pub fn new(kind: IommuHwErrorKind, reason: impl Into<String>) -> IommuHwError {
        IommuHwError { kind, reason: reason.into() }
    }
}

impl fmt::Display for IommuHwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IOMMU refused ({:?}): {}", self.kind, self.reason)
    }
}

impl std::error::Error for IommuHwError {}

/// An error of the DMA layer. Every call that returns one left nothing
/// changed: nothing mapped, no IOVA allocated, no buffer allocated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmaError {
    /// A buffer or mapping of 0 bytes; allowed: at least 1 byte.
    ZeroLength,
    /// A [`DmaBuffer`](super::DmaBuffer) larger than [`DmaBuffer::MAX_LEN`](super::DmaBuffer::MAX_LEN).
    BufferTooLarge {
        /// The length asked for.
        len: usize,
        /// The largest allowed.
        max: usize,
    },
    /// The kernel refused the buffer's memory (`mmap`).
    OutOfMemory {
        /// The length asked for (rounded up to pages).
        len: usize,
        /// The `errno` of `mmap`.
        errno: i32,
    },
    /// A range past the end of the buffer it was taken from.
    RangeOutOfBounds {
        /// Start of the range.
        start: usize,
        /// End of the range (exclusive).
        end: usize,
        /// Length of the buffer.
        len: usize,
    },
    /// `phys + len` passes the end of the 64-bit address space.
    AddressOverflow {
        /// The start address.
        phys: u64,
        /// The length.
        len: usize,
    },
    /// A mapping needs more pages than the whole IOVA space has.
    TooLarge {
        /// The mapping's length in bytes.
        len: usize,
        /// The pages it spans.
        pages: u64,
        /// The pages of the whole IOVA space.
        space_pages: u64,
    },
    /// No free IOVA range of the size needed (after draining the caches).
    IovaExhausted {
        /// The pages asked for.
        pages: u64,
        /// The pages of the whole IOVA space.
        space_pages: u64,
    },
    /// The IOMMU refused a page-table write.
    Hardware {
        /// The IOVA of the request.
        iova: u64,
        /// Its length in bytes.
        len: u64,
        /// What the driver said.
        error: IommuHwError,
    },
    /// A configuration value out of range.
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// The value given.
        value: u64,
        /// What is allowed.
        allowed: &'static str,
    },
    /// A mode that translates ([`IommuMode::Strict`](super::IommuMode::Strict),
    /// [`IommuMode::Lazy`](super::IommuMode::Lazy)) without an [`IommuHw`](super::IommuHw).
    NoIommu,
    /// A scatter-gather list with no entry; allowed: at least one.
    EmptySgList,
    /// A mapping handed to a domain that did not make it.
    WrongDomain {
        /// The id of the domain that made the mapping.
        mapping_domain: u64,
        /// The id of the domain it was handed to.
        domain: u64,
    },
}

impl fmt::Display for DmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmaError::ZeroLength => write!(f, "DMA length 0; allowed: at least 1 byte"),
            DmaError::BufferTooLarge { len, max } => {
                write!(f, "DMA buffer of {len} bytes; allowed: 1..={max} bytes")
            }
            DmaError::OutOfMemory { len, errno } => {
                write!(f, "mmap of a {len}-byte DMA buffer failed (errno {errno})")
            }
            DmaError::RangeOutOfBounds { start, end, len } => {
                write!(f, "range {start}..{end} of a {len}-byte buffer; allowed: start < end <= {len}")
            }
            DmaError::AddressOverflow { phys, len } => {
                write!(f, "range {phys:#x} + {len} bytes passes the end of the 64-bit address space")
            }
            DmaError::TooLarge { len, pages, space_pages } => {
                write!(f, "mapping of {len} bytes spans {pages} pages; the IOVA space has {space_pages} pages")
            }
            DmaError::IovaExhausted { pages, space_pages } => {
                write!(f, "no free IOVA range of {pages} pages (space of {space_pages} pages; unmap or flush first)")
            }
            DmaError::Hardware { iova, len, error } => {
                write!(f, "IOMMU request at IOVA {iova:#x} + {len:#x}: {error}")
            }
            DmaError::InvalidConfig { what, value, allowed } => {
                write!(f, "DMA config {what} = {value:#x}; allowed: {allowed}")
            }
            DmaError::NoIommu => {
                write!(f, "IOMMU mode Strict or Lazy needs an IommuHw; allowed without one: None, Identity")
            }
            DmaError::EmptySgList => write!(f, "scatter-gather list with no entry; allowed: at least one"),
            DmaError::WrongDomain { mapping_domain, domain } => {
                write!(f, "mapping of DMA domain {mapping_domain} handed to domain {domain}")
            }
        }
    }
}

impl std::error::Error for DmaError {}

/// A failed [`DmaDomain::unmap_raw`](super::DmaDomain::unmap_raw).
#[derive(Debug)]
pub struct UnmapError {
    /// What went wrong.
    pub error: DmaError,
    /// The mapping, handed back when nothing was done ([`DmaError::WrongDomain`]:
    /// unmap it on its own domain); `None` when it was consumed (the IOMMU
    /// refused to clear the entries: the IOVA range is quarantined, never
    /// reused, and counted in [`DmaStats::hw_errors`](super::DmaStats::hw_errors)).
    pub mapping: Option<RawMapping>,
}

impl fmt::Display for UnmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for UnmapError {}
