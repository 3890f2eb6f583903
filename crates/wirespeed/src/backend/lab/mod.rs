//! Glue to the emulated lab (`wirespeed-lab`): the only place the stack
//! touches lab types.
//!
//! - [`LabSpi`]: the controller driver for the lab's WSPI block, as the
//!   kernel's spi-imx is for the i.MX ECSPI.
//! - [`gpio`]: the lab GPIO chip as a GPIO backend.

pub mod gpio;
mod spi;

pub use spi::LabSpi;
