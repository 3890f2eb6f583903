//! The wirespeed lab: emulated hardware that behaves like hardware **in time**.
//!
//! Rules every model follows (DESIGN.md §3):
//! - Time is the host's monotonic clock ([`wirespeed_time::now`]). A transfer
//!   of N bits at f Hz occupies the wire N/f seconds from its start; its RX
//!   data and DONE status appear as the bits shift, never earlier.
//! - Hardware costs no CPU: a model's state is computed from timestamps when
//!   software reads a register. Polling is the software's cost.
//! - Events that must wake software (a DONE interrupt, a device's INT pin) are
//!   delivered by the lab's interrupt thread ([`Scheduler`]), which sleeps
//!   until the event's time with 1 ns timer slack, so waiting on an IRQ costs
//!   a real thread wake-up.
//! - [`LabConfig::instant_wire`] makes the wire infinitely fast, so that the
//!   software's own cost can be counted alone (e.g. under callgrind).
//!
//! DMA engines reach host memory (the lab's physical address space is the
//! process's address space) directly or through the lab's [`iommu`].
//!
//! Every device model has two faces: a bus face ([`spi::SpiDeviceModel`]) that
//! software reaches only through a controller, and a backdoor for tests
//! (faults, peeking, timing). The lab knows nothing of wirespeed's drivers.
//!
//! ```
//! use wirespeed_lab::{Lab, LabConfig, devices::Loopback, spi::regs};
//! let lab = Lab::new(LabConfig::default());
//! let spi = lab.spi_controller(Default::default());
//! spi.attach(0, Loopback::new());
//! assert_eq!(spi.read(regs::ID), regs::ID_VALUE);
//! ```

pub mod can;
pub mod devices;
pub mod gpio;
pub mod iommu;
mod irq;
mod lab;
mod pin;
mod scheduler;
pub mod spi;
mod spin;
mod start_error;
#[cfg(test)]
mod test_pages;
pub mod trace;

pub use irq::IrqLine;
pub use lab::{Lab, LabConfig};
pub use pin::{Pin, PinSink};
pub use scheduler::{Scheduler, SchedulerWatch, TimerId, WakeCost};
pub use start_error::LabStartError;
