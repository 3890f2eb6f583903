//! Linux spidev backend (`/dev/spidevB.C`): the SPI core's message-level
//! face over the kernel's SPI stack.
//!
//! ```no_run
//! use wirespeed::linux::spidev::Spidev;
//! use wirespeed::spi::{Bus, DeviceConfig, Policy, Transfer};
//!
//! let bus = Bus::with_message_backend(Spidev::open("/dev/spidev0.0")?, Policy::fast());
//! let dev = bus.device(DeviceConfig::new(0, 1_000_000))?; // CS 0: the node's own chip select
//! let mut id = [0u8; 3];
//! dev.sync(&mut [Transfer::write(&[0x9f]), Transfer::read(&mut id)])?; // one ioctl, one CS window
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - One message is **one** `SPI_IOC_MESSAGE(n)`, one `spi_ioc_transfer` per
//!   transfer pointing at the caller's buffers (nothing copied), unless it
//!   must be cut (see [`plan`]'s rules: above `bufsiz`, a long `cs_change`
//!   gap, a GPIO chip select), and only where CS may drop. A window that
//!   cannot be cut and does not fit is refused, nothing sent.
//! - The mode (CPOL/CPHA and [`ModeFlags`]) is
//!   written with `SPI_IOC_WR_MODE32` only when it changes, read back and
//!   compared: bits that did not stick fail the message with
//!   [`BackendError::ModeRefused`].
//! - Timing is rounded **up** to microseconds; spidev has no CS setup or
//!   hold, so they ride on zero-length transfers and the last transfer's
//!   delay; [`SpiDevice::effective_timing`](crate::spi::SpiDevice::effective_timing)
//!   says what a device gets.
//! - Prepared messages carry their `spi_ioc_transfer` array, built once by
//!   `prepare`; `run` fills in the buffer addresses and makes the ioctl,
//!   allocating nothing. Unprepared messages are translated into a scratch
//!   array the backend keeps.
//! - A device with a GPIO chip select ([`DeviceConfig::gpio_cs`](crate::spi::DeviceConfig::gpio_cs))
//!   runs with `SPI_NO_CS`, its line driven around each ioctl, so one node
//!   can serve more devices than the controller has chip selects.
//! - The mode is the node's, shared with every other process that opens
//!   it: the backend assumes it alone changes it.

mod errors;
pub mod io;
pub mod plan;
#[cfg(test)]
mod tests;
pub mod uapi;

pub use errors::SpidevError;
pub use io::{Errno, SpidevFd, SpidevIo};
pub use plan::{Limits, SpidevPlan, SpidevPlanner};

use crate::spi::{
    BackendError, ChipSelect, ClockModel, ControllerCaps, Data, DeviceConfig, MessageBackend, MessagePlanner,
    MessageView, ModeFlags, SpiError,
};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use uapi::{SPI_CPHA, SPI_CPOL};
use wirespeed_time::{now, Deadline, Instant};

/// Where spidev publishes its `bufsiz` module parameter, below `/sys`.
pub const BUFSIZ_SYSFS: &str = "module/spidev/parameters/bufsiz";

/// What the backend did, counted as it went: read it while the bus runs.
#[derive(Debug, Default)]
pub struct SpidevCounters {
    ioctls: AtomicU64,
    messages: AtomicU64,
    mode_writes: AtomicU64,
}

impl SpidevCounters {
    /// `SPI_IOC_MESSAGE` ioctls made.
    pub fn ioctls(&self) -> u64 {
        self.ioctls.load(Ordering::Relaxed)
    }
    /// Messages sent (each one or more ioctls).
    pub fn messages(&self) -> u64 {
        self.messages.load(Ordering::Relaxed)
    }
    /// `SPI_IOC_WR_MODE32` ioctls made.
    pub fn mode_writes(&self) -> u64 {
        self.mode_writes.load(Ordering::Relaxed)
    }
}

/// A spidev node as a [`MessageBackend`]: hand it to
/// [`Bus::with_message_backend`](crate::spi::Bus::with_message_backend).
pub struct Spidev {
    io: Box<dyn SpidevIo>,
    name: String,
    caps: ControllerCaps,
    planner: Arc<SpidevPlanner>,
    /// The node's mode as last read back (None: not known yet).
    mode: Option<u32>,
    default_speed_hz: u32,
    scratch: SpidevPlan,
    /// Each transfer's (tx, rx) user addresses for the message being sent.
    addrs: Vec<(u64, u64)>,
    counters: Arc<SpidevCounters>,
    /// When CS was last released (None while a final `cs_change` holds it).
    cs_off: Option<Instant>,
}

impl std::fmt::Debug for Spidev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spidev").field("name", &self.name).field("limits", &self.planner.limits).finish()
    }
}

impl Spidev {
    /// Opens `/dev/spidevB.C` (or any spidev node), reads its mode, default
    /// clock and spidev's `bufsiz`.
    pub fn open(path: impl AsRef<Path>) -> Result<Spidev, SpidevError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let fd = SpidevFd::open(path).map_err(|e| SpidevError::from_open(e, &name))?;
        let bufsiz = std::fs::read_to_string(Path::new("/sys").join(BUFSIZ_SYSFS))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(Limits::DEFAULT_BUFSIZ);
        Spidev::with_io(fd, name, Limits::with_bufsiz(bufsiz))
    }

    /// A backend over any [`SpidevIo`] (a test double, or a descriptor
    /// opened elsewhere), named `name` in errors.
    pub fn with_io(io: impl SpidevIo, name: impl Into<String>, limits: Limits) -> Result<Spidev, SpidevError> {
        let mut io: Box<dyn SpidevIo> = Box::new(io);
        let name = name.into();
        let mode = io.mode32().map_err(|e| SpidevError::from_call("SPI_IOC_RD_MODE32", e, &name))?;
        let default_speed_hz =
            io.max_speed_hz().map_err(|e| SpidevError::from_call("SPI_IOC_RD_MAX_SPEED_HZ", e, &name))?;
        let caps = ControllerCaps {
            name: "spidev",
            // The controller driver clamps and divides; the device's own
            // maximum (DeviceConfig::max_speed_hz) is checked by the core.
            max_speed_hz: u32::MAX,
            min_speed_hz: 1,
            clock: ClockModel::Exact,
            fifo_bytes: 0,
            bits_per_word_mask: u32::MAX,
            num_cs: 1,
            can_poll: false,
            has_irq: false,
            mode_flags: ModeFlags::ALL,
        };
        Ok(Spidev {
            io,
            name,
            caps,
            planner: Arc::new(SpidevPlanner { limits }),
            mode: Some(mode),
            default_speed_hz,
            scratch: SpidevPlan::default(),
            addrs: Vec::new(),
            counters: Arc::new(SpidevCounters::default()),
            cs_off: None,
        })
    }

    /// The counters of this backend, to read while the bus runs.
    pub fn counters(&self) -> Arc<SpidevCounters> {
        self.counters.clone()
    }

    /// The node's mode as read when opened or last written (kernel bits).
    pub fn mode32(&self) -> Option<u32> {
        self.mode
    }

    /// The node's default clock (`SPI_IOC_RD_MAX_SPEED_HZ`, from the device tree).
    pub fn default_speed_hz(&self) -> u32 {
        self.default_speed_hz
    }

    /// The limits the backend cuts messages by.
    pub fn limits(&self) -> Limits {
        self.planner.limits
    }

    /// The node's name (its path).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn backend_error(&self, op: &'static str, errno: Errno) -> BackendError {
        let device = self.name.clone();
        match errno {
            libc::ENODEV | libc::ENXIO | libc::ESHUTDOWN => BackendError::Gone { device },
            _ => BackendError::Os { device, op, errno },
        }
    }

    /// Writes `want` unless the node has it; reads it back and compares.
    fn ensure_mode(&mut self, want: u32) -> Result<(), SpiError> {
        if self.mode == Some(want) {
            return Ok(());
        }
        self.counters.mode_writes.fetch_add(1, Ordering::Relaxed);
        let written = self.io.set_mode32(want);
        // Whatever happened, the node's mode is what it says now.
        self.mode = self.io.mode32().ok();
        if let Err(e) = written {
            return Err(SpiError::Backend(match e {
                // The write changed nothing: the bits it would have changed are the refused ones.
                libc::EINVAL => BackendError::ModeRefused {
                    device: self.name.clone(),
                    asked: ModeFlags::from_bits_truncate(want),
                    refused: ModeFlags::from_bits_truncate(want ^ self.mode.unwrap_or(0)),
                },
                e => self.backend_error("SPI_IOC_WR_MODE32", e),
            }));
        }
        match self.mode {
            Some(got) if got == want => Ok(()),
            Some(got) => Err(SpiError::Backend(BackendError::ModeRefused {
                device: self.name.clone(),
                asked: ModeFlags::from_bits_truncate(want),
                refused: ModeFlags::from_bits_truncate(want ^ got),
            })),
            None => Err(SpiError::Backend(self.backend_error("SPI_IOC_RD_MODE32", libc::EIO))),
        }
    }

    fn message_error(&self, errno: Errno, plan: &SpidevPlan, chunk: usize) -> SpiError {
        let c = plan.chunks[chunk];
        let xfers = &plan.xfers[c.start..c.end];
        SpiError::Backend(match errno {
            libc::EINVAL => {
                let speeds: Vec<String> = xfers.iter().filter(|x| x.len > 0).map(|x| x.speed_hz.to_string()).collect();
                let bits: Vec<String> =
                    xfers.iter().filter(|x| x.len > 0).map(|x| x.bits_per_word.to_string()).collect();
                BackendError::Refused {
                    device: self.name.clone(),
                    detail: format!(
                        "transfers from {} at {} Hz, {} bits per word, mode {:#x}",
                        c.first_transfer,
                        speeds.join("/"),
                        bits.join("/"),
                        self.mode.unwrap_or(0)
                    ),
                }
            }
            libc::EMSGSIZE => {
                BackendError::TooLarge { device: self.name.clone(), bytes: c.bytes, limit: self.planner.limits.bufsiz }
            }
            e => self.backend_error("SPI_IOC_MESSAGE", e),
        })
    }
}

/// The kernel's mode bits for `dev`.
fn mode_of(dev: &DeviceConfig) -> u32 {
    let (cpol, cpha) = dev.mode.bits();
    let mut mode = dev.flags.bits() | if cpol { SPI_CPOL } else { 0 } | if cpha { SPI_CPHA } else { 0 };
    if !matches!(dev.cs, ChipSelect::Native(_)) {
        mode |= ModeFlags::NO_CS.bits();
    }
    mode
}

/// The user addresses of a transfer's buffers (0 where there is none).
fn addresses(data: &mut Data<'_>) -> (u64, u64) {
    if data.is_empty() {
        return (0, 0);
    }
    match data {
        Data::Write(t) => (t.as_ptr() as u64, 0),
        Data::Read(r) => (0, r.as_mut_ptr() as u64),
        Data::Duplex(t, r) => (t.as_ptr() as u64, r.as_mut_ptr() as u64),
        Data::InPlace(b) => {
            let p = b.as_mut_ptr() as u64;
            (p, p)
        }
    }
}

impl MessageBackend for Spidev {
    fn caps(&self) -> &ControllerCaps {
        &self.caps
    }

    fn planner(&self) -> Arc<dyn MessagePlanner> {
        self.planner.clone()
    }

    fn run(&mut self, dev: &DeviceConfig, msg: &mut MessageView<'_>) -> Result<(), SpiError> {
        let n = msg.len();
        self.addrs.clear();
        for i in 0..n {
            let mut data = msg.data(i);
            let a = addresses(&mut data);
            self.addrs.push(a);
        }
        // The prepared message's translation, or one made now in the scratch plan.
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = match msg.plan().and_then(|p| p.downcast_mut::<SpidevPlan>()) {
            Some(plan) => self.send(dev, plan),
            None => match plan::build(dev, |i| msg.spec(i), n, self.planner.limits, &mut scratch) {
                Ok(()) => self.send(dev, &mut scratch),
                Err(e) => Err(e.into()),
            },
        };
        // Kept, refused message or not: its capacity serves the next one.
        self.scratch = scratch;
        result
    }
}

impl Spidev {
    /// Makes the ioctls of `plan` (its buffer addresses taken from `self.addrs`).
    fn send(&mut self, dev: &DeviceConfig, plan: &mut SpidevPlan) -> Result<(), SpiError> {
        for (i, &(tx, rx)) in self.addrs.iter().enumerate() {
            let x = &mut plan.xfers[plan.entry_of[i]];
            x.tx_buf = tx;
            x.rx_buf = rx;
        }
        self.ensure_mode(mode_of(dev))?;
        self.counters.messages.fetch_add(1, Ordering::Relaxed);
        let pin = match &dev.cs {
            ChipSelect::Gpio(pin) => Some(pin),
            _ => None,
        };
        for c in 0..plan.chunks.len() {
            let chunk = plan.chunks[c];
            if let Some(off) = self.cs_off {
                if dev.cs_inactive_ns > 0 {
                    wirespeed_time::delay_until(Deadline::after_ns_from(off, u64::from(dev.cs_inactive_ns)));
                }
            }
            if let Some(pin) = &pin {
                pin.set_active(true).map_err(SpiError::ChipSelect)?;
            }
            self.counters.ioctls.fetch_add(1, Ordering::Relaxed);
            let r = self.io.message(&mut plan.xfers[chunk.start..chunk.end]);
            let last = c + 1 == plan.chunks.len();
            let keep = last && plan.keeps_cs;
            if let Some(pin) = &pin {
                if r.is_err() || !keep {
                    pin.set_active(false).map_err(SpiError::ChipSelect)?;
                }
            }
            let end = now();
            self.cs_off = if keep && r.is_ok() { None } else { Some(end) };
            if let Err(e) = r {
                return Err(self.message_error(e, plan, c));
            }
            if chunk.gap_after_ns > 0 {
                wirespeed_time::delay_until(Deadline::after_ns_from(end, chunk.gap_after_ns));
            }
        }
        Ok(())
    }
}
