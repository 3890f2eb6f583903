//! `wirespeed._wirespeed`: the native part of the `wirespeed` Python
//! package (`crates/python/python/wirespeed` re-exports it):
//!
//! - `SpiDev` ([`spidev`]): py-spidev's class over wirespeed's spidev
//!   backend, on `/dev/spidevB.C` or on a lab board's node;
//! - `Transfer`, `PreparedMessage`, `Pending` ([`message`]): messages;
//! - `lab` ([`lab`]): the emulated bench; `gpio` ([`gpio`]): GPIO chips.

mod ad7606;
mod buffer;
mod data;
mod errors;
pub mod gpio;
pub mod lab;
pub mod message;
mod node;
pub mod spidev;

use pyo3::prelude::*;

/// The native module; `wirespeed/__init__.py` re-exports it.
#[pymodule]
fn _wirespeed(py: Python<'_>, m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<spidev::PySpiDev>()?;
    m.add_class::<message::PyTransfer>()?;
    m.add_class::<message::PyPreparedMessage>()?;
    m.add_class::<message::PyPending>()?;
    lab::register(py, m)?;
    gpio::register(py, m)?;
    ad7606::register(py, m)?;
    Ok(())
}
