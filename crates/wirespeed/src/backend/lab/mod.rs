//! Glue to the emulated lab (`wirespeed-lab`): the only place the stack
//! touches lab types.
//!
//! - [`LabSpi`]: the controller driver for the lab's WSPI block, as the
//!   kernel's spi-imx is for the i.MX ECSPI (PIO up to the FIFO's size,
//!   DMA above it).
//! - [`LabIommu`]: the lab's IOMMU as the DMA layer's
//!   [`IommuHw`](crate::dma::IommuHw), for a block behind one.
//! - [`gpio`]: the lab GPIO chip as a GPIO backend.
//! - [`LabSpidevIo`] (with feature `linux`): a lab device behind an emulated
//!   spidev node, for the spidev backend to run on with no kernel SPI.
//!
//! A block behind a lab IOMMU, its DMA mappings in a lazy domain:
//!
//! ```
//! use std::sync::Arc;
//! use wirespeed::backend::lab::{LabIommu, LabSpi};
//! use wirespeed::dma::{DmaDomain, DomainConfig, IommuHw, IommuMode};
//! use wirespeed::spi::{Bus, DeviceConfig, Policy, Transfer};
//! use wirespeed_lab::{devices::Loopback, iommu::IommuConfig, Lab, LabConfig};
//!
//! let lab = Lab::new(LabConfig::default());
//! let block = lab.spi_controller(Default::default());
//! block.attach(0, Loopback::new());
//! let iommu = lab.iommu(IommuConfig::default()).unwrap();
//! block.attach_iommu(&iommu);
//! let hw: Arc<dyn IommuHw> = Arc::new(LabIommu::new(iommu.clone()));
//! let lazy = Arc::new(DmaDomain::new(Some(hw), DomainConfig::with_mode(IommuMode::Lazy)).unwrap());
//! let bus = Bus::new(LabSpi::with_dma(block, lazy.clone()), Policy::fast());
//! let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
//! let tx = vec![0xA5; 4096];
//! let mut rx = vec![0; 4096];
//! // 4096 bytes bounce (policy `bounce_dma`): copied through the bus's own buffers, moved by DMA.
//! dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
//! assert_eq!(rx, tx);
//! // 64 KiB do not: mapped, moved by DMA, unmapped (lazily: the PTEs at once, the IOTLB at the flush).
//! let big = vec![0x5A; 65_536];
//! let mut back = vec![0; 65_536];
//! dev.sync(&mut [Transfer::duplex(&big, &mut back)]).unwrap();
//! assert_eq!(back, big);
//! lazy.flush();
//! drop((dev, bus));
//! assert_eq!(iommu.mapped_pages(), 0, "the bounce buffers are unmapped with their bus");
//! ```

pub mod gpio;
mod iommu;
mod spi;
#[cfg(feature = "linux")]
mod spidev;

pub use iommu::LabIommu;
pub use spi::LabSpi;
#[cfg(feature = "linux")]
pub use spidev::LabSpidevIo;
