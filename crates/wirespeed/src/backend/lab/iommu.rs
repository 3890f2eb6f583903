//! [`LabIommu`]: the lab's IOMMU as the DMA layer's [`IommuHw`], as the
//! kernel's intel-iommu or arm-smmu driver is for silicon.

use crate::dma::{IommuHw, IommuHwError, IommuHwErrorKind, Perm};
use wirespeed_lab::iommu::{Iommu, IommuError, Perm as LabPerm};

/// The driver of one lab IOMMU.
#[derive(Clone, Debug)]
pub struct LabIommu {
    iommu: Iommu,
}

impl LabIommu {
    /// Drives `iommu`.
    pub fn new(iommu: Iommu) -> LabIommu {
        LabIommu { iommu }
    }

    /// The lab IOMMU this driver runs (its backdoor: faults, statistics).
    pub fn iommu(&self) -> &Iommu {
        &self.iommu
    }
}

fn hw_error(e: IommuError) -> IommuHwError {
    let kind = match e {
        IommuError::Misaligned { .. } | IommuError::BadLength { .. } | IommuError::OutOfRange { .. } => {
            IommuHwErrorKind::InvalidRange
        }
        IommuError::NoPermission => IommuHwErrorKind::Permission,
        IommuError::AlreadyMapped { .. } => IommuHwErrorKind::AlreadyMapped,
        IommuError::NotMapped { .. } => IommuHwErrorKind::NotMapped,
    };
    IommuHwError::new(kind, e.to_string())
}

impl IommuHw for LabIommu {
    unsafe fn map_pages(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuHwError> {
        let perm = LabPerm { read: perm.read, write: perm.write };
        // SAFETY: the lab's contract is this trait's: the memory stays valid
        // for the device until the range is unmapped (and invalidated).
        unsafe { self.iommu.map(iova, phys, len, perm) }.map_err(hw_error)
    }

    fn unmap_pages(&self, iova: u64, len: u64) -> Result<(), IommuHwError> {
        self.iommu.unmap(iova, len).map_err(hw_error)
    }

    fn invalidate(&self, iova: u64, len: u64) {
        self.iommu.invalidate(iova, len);
    }

    fn invalidate_all(&self) {
        self.iommu.invalidate_all();
    }

    fn set_passthrough(&self, on: bool) {
        self.iommu.set_passthrough(on);
    }
}
