//! Backends: glue between the stack's traits and what serves them.
//! The lab glue (feature `lab`, the default) is here; the Linux backends are in `linux`.

#[cfg(feature = "lab")]
pub mod lab;
