//! GPIO: chips, line requests, values, edge events — safe against chip
//! removal at the cost of one uncontended load per access.
//!
//! - [`Chip`]: an opened chip (the lab's: `backend::lab::gpio::open`; Linux's
//!   GPIO character device: `linux::gpio_cdev::open`, feature `linux`).
//!   [`Chip::info`], [`Chip::line_info`], [`Chip::request_lines`], [`Chip::remove`].
//! - [`RequestConfig`] / [`LineSettings`]: direction, initial value, bias,
//!   drive, active-low, edge detection, debounce, consumer name; validated
//!   before any backend sees them.
//! - [`LineRequest`]: get/set one or many values, reconfigure, edge events
//!   (non-blocking, sleeping with a timeout, or through a pollable fd), and
//!   interrupt waits that poll or sleep by themselves ([`LineRequest::wait_edge`],
//!   [`LineRequest::wait_level`]; see [`WaitMode`]).
//! - [`GpioCs`]: any output line as the chip select of an SPI device
//!   (active-low on the wire unless the line is requested active-low; see
//!   [`CsPolarity`]).
//! - Removal: after it begins every access fails with [`GpioError::ChipGone`];
//!   [`Chip::remove`] returns only once the accesses in flight have ended;
//!   nothing touches the freed backend state. The per-access cost is a
//!   store to the handle's own cache line and one load from it (the handle's
//!   copy of the chip's state, which only the remover writes)
//!   ([`Revocable`]); [`Interlock`] is the 6.9 kernel's scheme, kept for comparison.
//!
//! ```
//! # #[cfg(feature = "lab")] {
//! use wirespeed::gpio::{LineSettings, RequestConfig};
//! use wirespeed_lab::{Lab, LabConfig, gpio::GpioChipConfig};
//! let lab = Lab::new(LabConfig::default());
//! let hw = lab.gpio_chip(GpioChipConfig::default());
//! let chip = wirespeed::backend::lab::gpio::open(&hw).unwrap();
//! let led = chip.request_lines(&RequestConfig::new("led").line(7, LineSettings::output(false))).unwrap();
//! led.set_value(7, true).unwrap();
//! assert!(hw.value(7).unwrap());
//! chip.remove();
//! assert!(matches!(led.set_value(7, false), Err(wirespeed::gpio::GpioError::ChipGone { .. })));
//! # }
//! ```

mod backend;
mod chip;
mod config;
mod cs;
mod error;
pub(crate) mod fd;
mod guard;
mod irq;
#[cfg(all(test, loom))]
mod loom_model;
mod request;
mod signal;
mod sync;
#[cfg(all(test, not(loom), feature = "lab"))]
mod tests;

pub use backend::{ChipBackend, ChipInfo, EdgeEvent, EdgeKind, LineInfo, RequestBackend};
pub use chip::{Chip, RemovalHandle};
pub use config::{
    Bias, Direction, Drive, Edge, LineConfig, LineSettings, RequestConfig, MAX_CONSUMER, MAX_EVENT_BUFFER, MAX_LINES,
};
pub use cs::{CsPolarity, GpioCs};
pub use error::GpioError;
pub use guard::{asymmetric_fence_available, AccessGuard, Interlock, Revocable, SoundGuard, Unguarded};
pub use irq::{WaitMode, WaitStats, DEFAULT_WAKE_COST_NS};
pub use request::LineRequest;
pub use signal::EventSignal;
