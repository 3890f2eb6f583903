//! Glue to the emulated lab (`wirespeed-lab`): the only place the stack
//! touches lab types.
//!
//! - [`LabSpi`]: the controller driver for the lab's WSPI block, as the
//!   kernel's spi-imx is for the i.MX ECSPI.
//! - [`gpio`]: the lab GPIO chip as a GPIO backend.
//! - [`LabSpidevIo`] (with feature `linux`): a lab device behind an emulated
//!   spidev node, for the spidev backend to run on with no kernel SPI.

pub mod gpio;
mod iommu;
mod spi;
#[cfg(feature = "linux")]
mod spidev;

pub use iommu::LabIommu;
pub use spi::LabSpi;
#[cfg(feature = "linux")]
pub use spidev::LabSpidevIo;
