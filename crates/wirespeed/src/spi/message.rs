//! The message-level backend face: backends that take whole messages and
//! drive chip select and timing themselves (Linux spidev: one
//! `SPI_IOC_MESSAGE(n)` per message), beside the controller-level
//! [`Controller`](super::Controller) the core drives transfer by transfer.
//!
//! A [`Bus`](super::Bus) made with [`Bus::with_message_backend`](super::Bus::with_message_backend)
//! keeps everything above the backend as it is: devices, validation,
//! `sync`, `prepare` + `run`, `submit`, the bus lock, statistics and the
//! embedded-hal traits. The core validates each message against the
//! backend's [`ControllerCaps`] before the backend sees it, and hands it over
//! whole, as a [`MessageView`].
//!
//! # For backend authors
//! Implement [`MessageBackend`]. [`run`](MessageBackend::run) is called with
//! the bus held, one message at a time, in the order the core decided
//! (per-device order kept). Send nothing unless the whole message can be
//! sent as asked: check limits first and refuse with an
//! [`InvalidMessage`](super::InvalidMessage). Round timing **up** to what the
//! backend can do, never down, and say what a device gets in
//! [`MessagePlanner::effective_timing`]. A backend whose messages can be
//! translated once, ahead of time, returns a [`MessagePlanner`] from
//! [`planner`](MessageBackend::planner): prepared messages then carry the
//! translation, and `run` only refreshes what changes between runs.

use super::controller::ControllerCaps;
use super::device::DeviceConfig;
use super::error::{InvalidMessage, SpiError};
use super::exec::MessageSource;
use super::plan::Step;
use super::transfer::Data;
use std::any::Any;
use std::sync::Arc;

/// One transfer of a message as a backend sees it: validated, with the
/// device's defaults (speed, bits per word) applied.
pub type TransferSpec = Step;

/// A message handed to a [`MessageBackend`]: its transfers' specs and data,
/// and the backend's own translation of it when it was prepared.
pub struct MessageView<'m> {
    src: &'m mut dyn MessageSource,
    dev: &'m DeviceConfig,
    caps: &'m ControllerCaps,
}

impl std::fmt::Debug for MessageView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageView").field("transfers", &self.src.count()).finish_non_exhaustive()
    }
}

impl<'m> MessageView<'m> {
    pub(crate) fn new(
        src: &'m mut dyn MessageSource,
        dev: &'m DeviceConfig,
        caps: &'m ControllerCaps,
    ) -> MessageView<'m> {
        MessageView { src, dev, caps }
    }

    /// Number of transfers.
    pub fn len(&self) -> usize {
        self.src.count()
    }

    /// Whether the message has no transfers (never true: the core refuses those).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Transfer `i`'s spec (`i < len()`). Planned again only for unprepared
    /// messages of more than eight transfers; the message was validated, so
    /// an error here means the spec was asked for a transfer it does not have.
    pub fn spec(&self, i: usize) -> Result<TransferSpec, InvalidMessage> {
        self.src.step(i, self.dev, self.caps)
    }

    /// Transfer `i`'s buffers. The buffers stay where they are for as long
    /// as the view lives, so a backend may keep pointers to each transfer's
    /// buffers while it hands the whole message to the system.
    pub fn data(&mut self, i: usize) -> Data<'_> {
        self.src.data(i)
    }

    /// The backend's translation of the message, made once by its
    /// [`MessagePlanner`] when the message was prepared (None for messages
    /// that were not prepared, or with no planner).
    pub fn plan(&mut self) -> Option<&mut (dyn Any + Send)> {
        self.src.backend_plan()
    }
}

/// What a device really gets from a backend: the requested timing rounded
/// up to what the backend can do (see [`SpiDevice::effective_timing`](super::SpiDevice::effective_timing)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveTiming {
    /// The SCLK of the device's default speed, as far as the stack knows it
    /// (spidev: the speed asked for; the controller driver may divide lower).
    pub speed_hz: u32,
    /// CS active → first clock, at least (ns).
    pub cs_setup_ns: u64,
    /// Last clock → CS inactive, at least (ns).
    pub cs_hold_ns: u64,
    /// CS inactive between two messages, at least (ns).
    pub cs_inactive_ns: u64,
    /// CS inactive for a `cs_change` inside a message with no delay of its
    /// own, at least (ns); the kernel's default is 10 µs.
    pub cs_change_gap_ns: u64,
    /// The step every delay is rounded up to (ns): 1 where delays are
    /// waited by deadline, 1000 for spidev's microseconds.
    pub delay_step_ns: u64,
}

impl EffectiveTiming {
    /// The device's own timing, kept exactly (the core's controller-level path).
    pub(crate) fn exact(dev: &DeviceConfig, caps: &ControllerCaps) -> EffectiveTiming {
        EffectiveTiming {
            speed_hz: caps.actual_speed_hz(dev.speed_hz),
            cs_setup_ns: u64::from(dev.cs_setup_ns),
            cs_hold_ns: u64::from(dev.cs_hold_ns),
            cs_inactive_ns: u64::from(dev.cs_inactive_ns),
            cs_change_gap_ns: u64::from(dev.cs_inactive_ns),
            delay_step_ns: 1,
        }
    }
}

/// Translates messages for a backend ahead of time, without the bus: used
/// by [`SpiDevice::prepare`](super::SpiDevice::prepare) (which may run
/// anywhere, even in a completion callback that holds the bus) and by
/// [`SpiDevice::effective_timing`](super::SpiDevice::effective_timing).
pub trait MessagePlanner: Send + Sync + 'static {
    /// The backend's form of a message of these transfers for `dev`, or why
    /// the backend cannot send it (checked once here, not at each run).
    fn plan(&self, dev: &DeviceConfig, transfers: &[TransferSpec]) -> Result<Box<dyn Any + Send>, InvalidMessage>;
    /// What `dev` gets from the backend.
    fn effective_timing(&self, dev: &DeviceConfig) -> EffectiveTiming;
}

/// A backend that takes whole messages: it drives chip select and timing itself.
pub trait MessageBackend: Send + 'static {
    /// What the backend can do; the core validates messages against it.
    fn caps(&self) -> &ControllerCaps;
    /// The backend's planner for prepared messages and effective timing.
    fn planner(&self) -> Arc<dyn MessagePlanner>;
    /// Sends one validated message for `dev` and waits for it.
    fn run(&mut self, dev: &DeviceConfig, msg: &mut MessageView<'_>) -> Result<(), SpiError>;
}
