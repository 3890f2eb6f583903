//! A lab SPI block with a loopback, behind the lab IOMMU in a chosen mode,
//! driven by the stack with a chosen policy: the rig of the bulk and fault runs.

use std::sync::Arc;

use wirespeed::backend::lab::{LabIommu, LabSpi};
use wirespeed::dma::{DmaDomain, DomainConfig, IommuHw, IommuMode};
use wirespeed::spi::{Bus, DeviceConfig, Policy, SpiDevice};
use wirespeed_lab::devices::Loopback;
use wirespeed_lab::iommu::{Iommu, IommuConfig};
use wirespeed_lab::{Lab, LabConfig};

/// The IOMMU modes the bulk run compares, by their JSON names.
pub const MODES: [(&str, IommuMode); 4] = [
    ("none", IommuMode::None),
    ("identity", IommuMode::Identity),
    ("strict", IommuMode::Strict),
    ("lazy", IommuMode::Lazy),
];

/// A device on a lab block whose DMA engine sits behind `mode`.
#[derive(Debug)]
pub struct DmaRig {
    pub dev: SpiDevice,
    pub iommu: Option<Iommu>,
    pub domain: Arc<DmaDomain>,
    _lab: Lab,
}

impl DmaRig {
    /// A rig in `mode` at `hz` under `policy`; `wrap` may put a layer
    /// (fault injection) between the domain and the lab IOMMU.
    pub fn new(
        mode: IommuMode,
        hz: u32,
        policy: Policy,
        wrap: impl FnOnce(Arc<dyn IommuHw>) -> Arc<dyn IommuHw>,
    ) -> Result<DmaRig, String> {
        let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
        let block = lab.spi_controller(Default::default());
        block.attach(0, Loopback::new());
        let iommu = match mode {
            IommuMode::None => None,
            _ => {
                let iommu = lab.iommu(IommuConfig::default()).map_err(|e| e.to_string())?;
                iommu.set_passthrough(mode == IommuMode::Identity);
                block.attach_iommu(&iommu);
                Some(iommu)
            }
        };
        let hw = iommu.as_ref().map(|i| wrap(Arc::new(LabIommu::new(i.clone())) as Arc<dyn IommuHw>));
        let domain =
            Arc::new(DmaDomain::new(hw, DomainConfig { mode, ..DomainConfig::default() }).map_err(|e| e.to_string())?);
        let spi = LabSpi::with_dma(block, domain.clone());
        let bus = Bus::try_new(spi, policy).map_err(|e| e.to_string())?;
        let dev = bus.device(DeviceConfig::new(0, hz)).map_err(|e| e.to_string())?;
        Ok(DmaRig { dev, iommu, domain, _lab: lab })
    }
}
