//! [`IommuConfig`]: the static properties of the lab's IOMMU, and the ranges
//! an IOMMU can be built with ([`IommuConfigError`] for the others).

use std::fmt;

/// Static properties of an IOMMU. The default cost figures are estimates
/// for VT-d-class hardware, not measurements (see the [module docs](super)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IommuConfig {
    /// Name, for errors and debugging.
    pub name: &'static str,
    /// Translations the IOTLB holds, 1..=[`MAX_IOTLB_ENTRIES`](Self::MAX_IOTLB_ENTRIES)
    /// (least recently used entry replaced). Default 64.
    pub iotlb_entries: usize,
    /// An IOTLB miss: the page-table walk, lab time the device waits before the
    /// access that needed it, in ns. Default 400 (4 levels × 100 ns).
    pub walk_ns: u64,
    /// One page-range invalidation command and its wait descriptor: lab time the
    /// CPU spends waiting in [`Iommu::invalidate`](super::Iommu::invalidate), in ns. Default 2000.
    pub invalidate_ns: u64,
    /// A global invalidation and its wait: the CPU's wait in
    /// [`Iommu::invalidate_all`](super::Iommu::invalidate_all), in ns. Default 4000.
    pub invalidate_all_ns: u64,
}

impl Default for IommuConfig {
    fn default() -> Self {
        IommuConfig { name: "iommu0", iotlb_entries: 64, walk_ns: 400, invalidate_ns: 2_000, invalidate_all_ns: 4_000 }
    }
}

impl IommuConfig {
    /// The largest IOTLB an IOMMU may have (hardware IOTLBs hold tens to a
    /// few thousand entries).
    pub const MAX_IOTLB_ENTRIES: usize = 4096;
    /// The longest any one cost may be, in ns (10 ms: hardware walks and
    /// invalidations take micro-, not milliseconds; a larger figure is a typo
    /// that would make every DMA or unmap spin for it).
    pub const MAX_COST_NS: u64 = 10_000_000;

    /// Whether an IOMMU can be built with these properties.
    pub fn validate(&self) -> Result<(), IommuConfigError> {
        if !(1..=Self::MAX_IOTLB_ENTRIES).contains(&self.iotlb_entries) {
            return Err(IommuConfigError::IotlbEntries { iotlb_entries: self.iotlb_entries });
        }
        for (field, ns) in [
            ("walk_ns", self.walk_ns),
            ("invalidate_ns", self.invalidate_ns),
            ("invalidate_all_ns", self.invalidate_all_ns),
        ] {
            if ns > Self::MAX_COST_NS {
                return Err(IommuConfigError::Cost { field, ns });
            }
        }
        Ok(())
    }
}

/// An IOMMU configuration no IOMMU can be built with
/// ([`Lab::iommu`](crate::Lab::iommu)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IommuConfigError {
    /// `iotlb_entries` outside 1..=[`IommuConfig::MAX_IOTLB_ENTRIES`].
    IotlbEntries {
        /// The size given.
        iotlb_entries: usize,
    },
    /// A cost above [`IommuConfig::MAX_COST_NS`].
    Cost {
        /// Which field (`walk_ns`, `invalidate_ns`, `invalidate_all_ns`).
        field: &'static str,
        /// The figure given.
        ns: u64,
    },
}

impl fmt::Display for IommuConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IommuConfigError::IotlbEntries { iotlb_entries } => write!(
                f,
                "IOMMU with an IOTLB of {iotlb_entries} entries; allowed: 1..={}",
                IommuConfig::MAX_IOTLB_ENTRIES
            ),
            IommuConfigError::Cost { field, ns } => {
                write!(f, "IOMMU {field} of {ns} ns; allowed: 0..={} ns", IommuConfig::MAX_COST_NS)
            }
        }
    }
}

impl std::error::Error for IommuConfigError {}
