//! Backends: where the stack's controller drivers find their hardware.
//!
//! - [`lab`] (feature `lab`, the default): drivers for the emulated lab's blocks.

#[cfg(feature = "lab")]
pub mod lab;
