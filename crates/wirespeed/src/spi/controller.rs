//! The [`Controller`] trait: what the SPI core needs from a controller driver.
//!
//! # For controller-driver authors
//! A driver owns one controller block. The core calls it with the bus lock
//! held, one message at a time, in this order per transfer: [`configure`]
//! (only when mode, clock or word size change, unless the policy says
//! otherwise), optionally [`preload`] (fill the TX FIFO before CS asserts),
//! [`set_cs`], [`transfer`]; if a GPIO chip select fails after a preload,
//! [`discard_preload`] instead of [`transfer`]. The driver offers both completion modes; the
//! core decides which to use (see [`Completion`]). A driver never sleeps
//! except when told to wait on its interrupt. Once the shifter runs, the
//! driver calls [`InFlight::run`] before it waits: the core uses the wire
//! time for work that does not touch the controller.
//!
//! # For users
//! You do not call a controller yourself: hand it to [`Bus::new`](super::Bus::new).
//!
//! [`configure`]: Controller::configure
//! [`preload`]: Controller::preload
//! [`set_cs`]: Controller::set_cs
//! [`transfer`]: Controller::transfer
//! [`discard_preload`]: Controller::discard_preload

use super::mode_flags::ModeFlags;
use super::transfer::{Data, Mode};
use crate::dma::DmaDomain;
use std::fmt;
use std::sync::Arc;
use wirespeed_time::Instant;

/// How the controller derives SCLK from a requested speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockModel {
    /// SCLK = `base_hz` / d for an integer d in `min_div..=max_div`.
    Divider {
        /// Input clock.
        base_hz: u64,
        /// Smallest divider.
        min_div: u32,
        /// Largest divider.
        max_div: u32,
    },
    /// Any speed up to the maximum is produced exactly.
    Exact,
}

/// What a controller can do.
#[derive(Clone, Debug)]
pub struct ControllerCaps {
    /// Name, for errors and reports.
    pub name: &'static str,
    /// Fastest SCLK.
    pub max_speed_hz: u32,
    /// Slowest SCLK.
    pub min_speed_hz: u32,
    /// How SCLK is derived.
    pub clock: ClockModel,
    /// TX/RX FIFO depth in bytes.
    pub fifo_bytes: u32,
    /// Supported bits per word: bit n−1 set means n bits.
    pub bits_per_word_mask: u32,
    /// Native chip-select lines.
    pub num_cs: u8,
    /// Whether completion by polling is offered.
    pub can_poll: bool,
    /// Whether completion by interrupt is offered.
    pub has_irq: bool,
    /// Mode bits beyond CPOL/CPHA the controller supports (a device asking
    /// for others is refused when it is created).
    pub mode_flags: ModeFlags,
}

impl ControllerCaps {
    /// The SCLK the controller really produces for `requested_hz` (never faster).
    pub fn actual_speed_hz(&self, requested_hz: u32) -> u32 {
        match self.clock {
            ClockModel::Exact => requested_hz.min(self.max_speed_hz),
            ClockModel::Divider { base_hz, min_div, max_div } => {
                let div =
                    base_hz.div_ceil(u64::from(requested_hz.max(1))).clamp(u64::from(min_div), u64::from(max_div));
                (base_hz / div) as u32
            }
        }
    }
    /// The divider for `requested_hz` (1 for [`ClockModel::Exact`]).
    pub fn divider(&self, requested_hz: u32) -> u32 {
        match self.clock {
            ClockModel::Exact => 1,
            ClockModel::Divider { base_hz, min_div, max_div } => {
                base_hz.div_ceil(u64::from(requested_hz.max(1))).clamp(u64::from(min_div), u64::from(max_div)) as u32
            }
        }
    }
    /// Whether `bits` per word is supported.
    pub fn supports_bits(&self, bits: u8) -> bool {
        (1..=32).contains(&bits) && self.bits_per_word_mask & (1 << (bits - 1)) != 0
    }
}

/// How the core waits for a transfer to finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Busy-poll the status register: no wake-up, the CPU spins for the wire time.
    Poll,
    /// Sleep on the controller's interrupt: the CPU is free, a wake-up is paid.
    Irq,
    /// Sleep until just before the transfer's predicted end (its wire time
    /// from the clock the driver set, less the thread's wake-up margin),
    /// then poll the rest: the CPU is free for most of a long transfer and
    /// no wake-up lands after its end. An error interrupt still ends the
    /// sleep early. A driver that cannot predict the end treats it as [`Irq`](Completion::Irq),
    /// and so may one whose wake-ups take (nearly) as long as the transfer
    /// (the lab driver does, for a transfer that fits its FIFO, when waking
    /// ahead would spare less polling than a sleep costs): the core chose to
    /// sleep, and polling the whole transfer would spend the CPU it chose to save.
    Timed,
}

/// A controller's DMA engine as the core sees it.
#[derive(Clone, Debug)]
pub struct DmaSupport {
    /// The domain the engine's addresses are translated in: the core maps
    /// transfer buffers in it.
    pub domain: Arc<DmaDomain>,
    /// Transfers of at least this many bytes go by DMA, shorter ones by PIO
    /// (the kernel's `can_dma`; drivers use their FIFO size, since a
    /// transfer that fits the FIFO needs no refill and no mapping).
    pub min_len: usize,
}

/// Device addresses of a transfer's buffers, mapped in the controller's
/// [`DmaSupport::domain`]: `tx` is read by the engine, `rx` written (the
/// same address for an in-place transfer). `None`: zeros are sent, or what
/// is received is dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaAddrs {
    /// Where the engine reads the words to send.
    pub tx: Option<u64>,
    /// Where the engine writes the words received.
    pub rx: Option<u64>,
}

/// When a transfer ran, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferTiming {
    /// When the driver started the shifter (read only for interrupt
    /// completions, where the core learns the wake-up cost from it).
    pub started: Option<Instant>,
    /// When the driver saw the transfer complete (drivers may leave it out
    /// for polled transfers; the core then reads the clock only if a
    /// deadline needs it).
    pub completed: Option<Instant>,
}

/// Work the core does while a transfer is on the wire: the pump thread
/// completes the previous message and takes the next one from its queue.
///
/// A driver calls [`run`](InFlight::run) once the shifter has started and
/// before it waits for completion. Whatever the driver leaves undone, the
/// core runs after [`Controller::transfer`] returns, so a driver that never
/// calls it is correct, only slower. The work never touches the controller;
/// while it runs, the hardware keeps shifting (a master stalls SCLK when its
/// TX FIFO runs empty or its RX FIFO is full, so nothing is lost).
pub struct InFlight<'a> {
    work: Option<&'a mut dyn FnMut()>,
}

impl<'a> InFlight<'a> {
    /// Nothing to do while the wire shifts.
    pub fn none() -> InFlight<'a> {
        InFlight { work: None }
    }

    /// `work`, to run once while the wire shifts.
    pub fn new(work: &'a mut dyn FnMut()) -> InFlight<'a> {
        InFlight { work: Some(work) }
    }

    /// Runs the work if it has not run yet; later calls do nothing.
    #[inline]
    pub fn run(&mut self) {
        if let Some(work) = self.work.take() {
            work();
        }
    }
}

impl fmt::Debug for InFlight<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlight").field("pending", &self.work.is_some()).finish()
    }
}

/// A controller fault during a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerFault {
    /// The transfer did not complete in time.
    Timeout,
    /// The controller flagged an error.
    Fault(&'static str),
    /// The DMA engine met an address its IOMMU does not map (or maps
    /// without the access it needed): the transfer stopped there.
    DmaFault {
        /// The device address of the access.
        device_addr: u64,
    },
}

impl fmt::Display for ControllerFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControllerFault::Timeout => write!(f, "timeout"),
            ControllerFault::Fault(r) => write!(f, "{r}"),
            ControllerFault::DmaFault { device_addr } => {
                write!(f, "DMA fault at device address {device_addr:#x} (not mapped for that access)")
            }
        }
    }
}

/// A controller driver (the backend side of the SPI core).
pub trait Controller: Send + 'static {
    /// What the controller can do.
    fn caps(&self) -> &ControllerCaps;
    /// Sets mode, clock and word size for the next transfers. `speed_hz` is
    /// the clock asked for (validated against the caps); the driver runs the
    /// SCLK [`ControllerCaps::actual_speed_hz`] gives for it.
    fn configure(&mut self, mode: Mode, speed_hz: u32, bits: u8);
    /// Drives native chip select `cs`.
    fn set_cs(&mut self, cs: u8, active: bool);
    /// Loads the first words of `data` into the TX FIFO without starting the
    /// shifter; returns how many words were loaded (0 if not supported).
    fn preload(&mut self, data: &Data<'_>, bits: u8) -> usize;
    /// Throws away the words [`preload`](Controller::preload) loaded, when the
    /// transfer will not start after all (its chip select could not be
    /// driven): they must not be shifted with a later transfer. Drivers
    /// whose `preload` loads anything must implement it; the default does nothing.
    fn discard_preload(&mut self) {}
    /// Stops any transfer in progress and empties the FIFOs, leaving the
    /// controller ready for the next message. The core calls it only after
    /// the driver panicked during a message (its state is then unknown);
    /// the default does nothing.
    fn abort(&mut self) {}
    /// Shifts `data` (of which `preloaded` words are already in the FIFO) and
    /// waits for completion in the given mode, at most `timeout_ns`. Calls
    /// [`in_flight.run()`](InFlight::run) once the shifter has started.
    fn transfer(
        &mut self,
        data: &mut Data<'_>,
        bits: u8,
        preloaded: usize,
        completion: Completion,
        timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault>;
    /// Powers the block up (waiting until it is ready) or down (idle teardown).
    fn set_power(&mut self, on: bool);
    /// The controller's DMA engine, if it has one. Asked once, when the bus
    /// is made; the default has none (PIO only).
    fn dma(&self) -> Option<DmaSupport> {
        None
    }
    /// Shifts a transfer of `len` bytes by DMA from and to `addrs`, waiting
    /// for completion as [`transfer`](Controller::transfer) does. Called
    /// only for transfers of at least [`DmaSupport::min_len`] bytes, with
    /// no preload. The default refuses (a driver without DMA is never asked).
    ///
    /// # Safety
    /// `addrs` are mapped in the domain of [`dma`](Controller::dma) for
    /// `len` bytes with the access each needs, and stay mapped until this
    /// returns. The driver returns only once the engine has stopped (done,
    /// faulted, or reset).
    unsafe fn transfer_dma(
        &mut self,
        len: usize,
        bits: u8,
        addrs: DmaAddrs,
        completion: Completion,
        timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let _ = (len, bits, addrs, completion, timeout_ns, in_flight);
        Err(ControllerFault::Fault("this controller has no DMA engine"))
    }
}

/// Capabilities of a plain controller for unit tests: up to 100 MHz from a
/// 200 MHz divider, 8/16/24/32-bit words, 4 chip selects.
#[cfg(test)]
pub(crate) fn test_caps() -> ControllerCaps {
    ControllerCaps {
        name: "t",
        max_speed_hz: 100_000_000,
        min_speed_hz: 1,
        clock: ClockModel::Divider { base_hz: 200_000_000, min_div: 2, max_div: 1 << 20 },
        fifo_bytes: 64,
        bits_per_word_mask: 0x8080_8080,
        num_cs: 4,
        can_poll: true,
        has_irq: true,
        mode_flags: ModeFlags::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divider_never_exceeds_requested_speed() {
        let caps = test_caps();
        assert_eq!(caps.actual_speed_hz(20_000_000), 20_000_000);
        assert_eq!(caps.actual_speed_hz(30_000_000), 28_571_428);
        assert_eq!(caps.actual_speed_hz(500_000_000), 100_000_000);
        assert!(caps.supports_bits(8) && caps.supports_bits(32) && !caps.supports_bits(12) && !caps.supports_bits(0));
    }
}
