//! Drivers for the lab's emulated blocks.
//!
//! - [`LabSpi`]: the controller driver for the lab's WSPI block, as the
//!   kernel's spi-imx is for the i.MX ECSPI.

mod spi;

pub use spi::LabSpi;
