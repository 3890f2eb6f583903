//! The backend traits a GPIO chip implements (the lab chip, the Linux GPIO
//! character device), and the plain data they exchange with the core.
//!
//! Values crossing these traits are **logical** (active-low already applied)
//! and addressed by **index** into the request's line list, as in the
//! kernel's uAPI v2: bit `i` of a mask is the request's `i`-th line.
//!
//! The core calls a [`RequestBackend`] only inside a guarded access and
//! drops it once the chip's removal has drained every access, so a backend
//! never sees a call after it was told (by being dropped) that its chip is gone.

use super::config::{LineConfig, LineSettings, RequestConfig};
use super::error::GpioError;
use super::signal::EventSignal;
use std::os::fd::RawFd;
use std::sync::Arc;
use wirespeed_time::Instant;

/// What a chip says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipInfo {
    /// Name (`gpiochip0`).
    pub name: String,
    /// Label (`pinctrl-rp1`).
    pub label: String,
    /// Number of lines.
    pub lines: u32,
}

/// What a chip says about one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// Offset on the chip.
    pub offset: u32,
    /// Line name, may be empty.
    pub name: String,
    /// Whether the line is requested (by anyone) or otherwise unavailable.
    pub used: bool,
    /// Consumer name, empty if none.
    pub consumer: String,
    /// Current settings (as far as the chip reports them).
    pub settings: LineSettings,
}

/// Direction of an edge, in logical terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Inactive to active.
    Rising,
    /// Active to inactive.
    Falling,
}

/// One edge event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeEvent {
    /// The line's offset on the chip.
    pub offset: u32,
    /// Rising or falling (logical).
    pub kind: EdgeKind,
    /// When, on the monotonic clock (the lab's clock in the lab).
    pub timestamp: Instant,
    /// Sequence number among all events of the request (from 1).
    pub seqno: u32,
    /// Sequence number among the events of this line (from 1).
    pub line_seqno: u32,
}

/// A GPIO chip, as the core sees it.
pub trait ChipBackend: Send + Sync {
    /// Name, label, line count.
    fn info(&self) -> Result<ChipInfo, GpioError>;
    /// One line's state. `offset` is below `info().lines` (the core checks).
    fn line_info(&self, offset: u32) -> Result<LineInfo, GpioError>;
    /// Requests lines; the config was validated and its offsets checked.
    fn request(&self, config: &RequestConfig) -> Result<Box<dyn RequestBackend>, GpioError>;
}

/// A set of requested lines. Dropping it releases them.
pub trait RequestBackend: Send + Sync {
    /// Reads the lines in `mask`; returns their logical values as bits.
    fn get_values(&self, mask: u64) -> Result<u64, GpioError>;
    /// Sets the lines in `mask` to the logical values in `bits`.
    fn set_values(&self, mask: u64, bits: u64) -> Result<(), GpioError>;
    /// Replaces the configuration; `config` lists the request's offsets in order.
    fn reconfigure(&self, config: &LineConfig) -> Result<(), GpioError>;
    /// A descriptor that polls readable while edge events are pending.
    fn event_fd(&self) -> RawFd;
    /// Moves pending edge events into `out` without blocking; returns how many.
    fn read_events(&self, out: &mut [EdgeEvent]) -> Result<usize, GpioError>;
    /// A signal the backend notifies after queueing events, if it has one
    /// (an in-process backend); asked once, when the request is made.
    /// Handles then sleep on it instead of polling [`RequestBackend::event_fd`].
    /// The default, `None`: they poll the descriptor.
    fn event_signal(&self) -> Option<Arc<EventSignal>> {
        None
    }
}
