//! The SPI core: one API whose software cost between transfers is close to nothing.
//!
//! - A [`Bus`] owns a [`Controller`] (a controller driver), a queue, a pump
//!   thread and statistics; it runs with a [`Policy`] (`fast` by default).
//! - A [`SpiDevice`] is one chip select on a bus with its mode, clock and CS
//!   timing ([`DeviceConfig`]).
//! - A message is a slice of [`Transfer`]s, validated before anything is sent
//!   ([`InvalidMessage`] says what was wrong and what is allowed), or a
//!   [`PreparedMessage`] validated once and run many times.
//! - [`SpiDevice::sync`] runs in the caller's thread when the bus is idle;
//!   [`SpiDevice::submit`] queues to the pump thread and returns a [`Pending`].
//!
//! # Quick start
//! On the lab (the default backend), with a loopback device on CS 0:
//!
//! ```
//! use std::sync::mpsc;
//! use wirespeed::backend::lab::LabSpi;
//! use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy, Transfer};
//! use wirespeed_lab::{devices::Loopback, Lab, LabConfig};
//!
//! let lab = Lab::new(LabConfig::default());
//! let block = lab.spi_controller(Default::default());
//! block.attach(0, Loopback::new());
//! let bus = Bus::new(LabSpi::new(block), Policy::fast());
//! // 20 MHz, mode 0, 50 ns CS setup/hold/inactive (waited by deadline, not slept).
//! let dev = bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(50, 50, 50))?;
//!
//! // Sync: runs in this thread when the bus is idle; CS held across the list.
//! let mut status = [0u8; 9];
//! dev.sync(&mut [Transfer::write(&[0x30]), Transfer::duplex(&[0xA5; 9], &mut status)])?;
//! assert_eq!(status, [0xA5; 9]); // the loopback echoes
//!
//! // Prepared: validated once, then run with no validation and no allocation.
//! let mut read = dev.prepare(vec![OwnedTransfer::duplex(vec![0x30, 0, 0, 0])])?;
//! for i in 0..3u8 {
//!     read.tx_mut(0).unwrap()[3] = i;
//!     dev.run(&mut read)?;
//! }
//!
//! // Async: the pump thread runs it; a callback may resubmit to keep the bus busy.
//! let (tx, rx) = mpsc::channel();
//! dev.submit_with(read, move |msg, result| tx.send((msg, result)).unwrap());
//! let (read, result) = rx.recv().unwrap();
//! result?;
//! assert_eq!(read.rx(0).unwrap(), &[0x30, 0, 0, 2]);
//!
//! // Statistics, summed over every thread with no lock on the way.
//! let stats = bus.stats();
//! assert_eq!((stats.messages, stats.sync_immediate, stats.queued), (5, 4, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # For driver authors
//! Write against [`SpiDevice`] (or the `embedded-hal` traits it implements).
//! Never choose polling or interrupts, never size delays for a system: state
//! the device's needs ([`DeviceConfig`] CS times, per-transfer delays) and
//! the core does the cheapest thing that meets them.
//!
//! # For controller-driver authors
//! Implement [`Controller`]; see its documentation for the call order.
//! A backend that takes whole messages and drives chip select itself (such
//! as Linux spidev) implements [`MessageBackend`] instead and is put under
//! a bus with [`Bus::with_message_backend`]; nothing above sees the difference.

mod bounce;
mod bus;
mod callback;
mod controller;
mod device;
mod dma_map;
mod eh;
mod error;
mod exec;
mod lock_owner;
#[cfg(all(test, loom))]
mod loom_model;
mod message;
mod mode_flags;
mod plan;
mod poll_budget;
#[cfg(feature = "lab")]
pub(crate) use plan::word_bytes;
mod policy;
mod prepared;
mod prepared_buffer;
mod pump;
pub mod stats;
mod transfer;
mod waits;
mod wakeup;

pub use bounce::BOUNCE_MAX;
pub use bus::{Bus, ASYNC_IN_CALLER_MAX_NS};
pub use controller::{
    ClockModel, Completion, Controller, ControllerCaps, ControllerFault, DmaAddrs, DmaSupport, InFlight, TransferTiming,
};
pub use device::{ChipSelect, CsPin, DeviceConfig};
pub use eh::WordDevice;
pub use error::{BackendError, BusStartError, InvalidMessage, SpiError};
pub use message::{EffectiveTiming, MessageBackend, MessagePlanner, MessageView, TransferSpec};
pub use mode_flags::ModeFlags;
pub use policy::Policy;
pub use prepared::{Finished, OwnedTransfer, Pending, PreparedMessage};
pub use stats::StatsSnapshot;
pub use transfer::{Data, Mode, Transfer};
pub use wakeup::{thread_wakeup, Wakeup};

use crate::sync::MutexGuard;
use callback::Callback;
use exec::DeviceState;
use std::sync::Arc;
use wirespeed_time::now;

/// One device on a bus. Cheap to clone; clones share the device.
#[derive(Clone, Debug)]
pub struct SpiDevice {
    bus: Bus,
    state: Arc<DeviceState>,
}

impl SpiDevice {
    pub(crate) fn new(bus: Bus, state: DeviceState) -> SpiDevice {
        SpiDevice { bus, state: Arc::new(state) }
    }

    /// The device's configuration.
    pub fn config(&self) -> &DeviceConfig {
        &self.state.cfg
    }

    /// The bus the device is on.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// Runs a message and waits for it. Nothing is sent if it is invalid.
    pub fn sync(&self, transfers: &mut [Transfer<'_>]) -> Result<(), SpiError> {
        use plan::INLINE_STEPS;
        let (cfg, caps) = (&self.state.cfg, &self.bus.inner.caps);
        match transfers.len() {
            1 => {
                let step = plan::plan_step(0, &transfers[0], cfg, caps)?;
                self.bus.inner.sync(&self.state, &mut exec::Planned { transfers, steps: std::slice::from_ref(&step) })
            }
            2..=INLINE_STEPS => {
                let mut steps = [plan::Step::EMPTY; INLINE_STEPS];
                for (i, t) in transfers.iter().enumerate() {
                    steps[i] = plan::plan_step(i, t, cfg, caps)?;
                }
                let n = transfers.len();
                self.bus.inner.sync(&self.state, &mut exec::Planned { transfers, steps: &steps[..n] })
            }
            _ => {
                plan::validate(transfers, cfg, caps)?;
                self.bus.inner.sync(&self.state, transfers)
            }
        }
    }

    /// Sends `tx`.
    pub fn write(&self, tx: &[u8]) -> Result<(), SpiError> {
        self.sync(&mut [Transfer::write(tx)])
    }

    /// Receives into `rx`.
    pub fn read(&self, rx: &mut [u8]) -> Result<(), SpiError> {
        self.sync(&mut [Transfer::read(rx)])
    }

    /// Sends `tx`, then receives into `rx`, with CS held across both.
    pub fn write_then_read(&self, tx: &[u8], rx: &mut [u8]) -> Result<(), SpiError> {
        self.sync(&mut [Transfer::write(tx), Transfer::read(rx)])
    }

    /// Validates a message once for this device.
    pub fn prepare(&self, transfers: Vec<OwnedTransfer>) -> Result<PreparedMessage, InvalidMessage> {
        let inner = &self.bus.inner;
        let mut msg =
            PreparedMessage::new(self.state.id, transfers, &self.state.cfg, &inner.caps, inner.planner.as_deref())?;
        if let Some(dma) = inner.dma.as_ref().filter(|_| inner.policy.premapped_dma) {
            msg.premap(dma);
        }
        Ok(msg)
    }

    /// The timing the device really gets: its [`DeviceConfig`] CS times and
    /// clock as the backend can do them, rounded up, never down (exact on a
    /// controller the core drives; microseconds on Linux spidev).
    pub fn effective_timing(&self) -> EffectiveTiming {
        let inner = &self.bus.inner;
        match &inner.planner {
            Some(p) => p.effective_timing(&self.state.cfg),
            None => EffectiveTiming::exact(&self.state.cfg, &inner.caps),
        }
    }

    fn check_owner(&self, msg: &PreparedMessage) -> Result<(), SpiError> {
        if msg.device_id() == self.state.id {
            Ok(())
        } else {
            Err(SpiError::Invalid(InvalidMessage::WrongDevice))
        }
    }

    /// Runs a prepared message and waits for it: no validation, no allocation.
    pub fn run(&self, msg: &mut PreparedMessage) -> Result<(), SpiError> {
        self.check_prepared(msg)?;
        self.bus.inner.sync(&self.state, msg)
    }

    /// Checks a prepared message belongs here, and validates it again where
    /// the policy models a kernel without `spi_optimize_message`.
    fn check_prepared(&self, msg: &mut PreparedMessage) -> Result<(), SpiError> {
        self.check_owner(msg)?;
        let inner = &self.bus.inner;
        if !inner.policy.optimize_message {
            msg.revalidate(&self.state.cfg, &inner.caps)?;
        }
        Ok(())
    }

    /// Queues a prepared message for the pump thread and returns at once.
    /// Messages to one device complete in submission order.
    ///
    /// With [`Policy::async_in_caller`] (on in [`Policy::fast`]), a message
    /// of at most [`ASYNC_IN_CALLER_MAX_NS`] of wire time submitted to an
    /// idle bus runs in this thread instead, and is complete when `submit`
    /// returns (the handle's [`ran_in_caller`](Pending::ran_in_caller) is true): handing
    /// a short message to another thread costs more than its wire time.
    pub fn submit(&self, msg: PreparedMessage) -> Pending {
        let slot = prepared::slot_of(&msg, self.bus.inner.id());
        match self.submit_job(msg, None) {
            Some(finished) => Pending::ran(finished),
            None => Pending::queued(slot),
        }
    }

    /// Queues a prepared message; `done` runs on the pump thread when it completes.
    ///
    /// `done` runs with the bus held, while the next queued message shifts:
    /// keep it short. It may submit more messages (the usual way to keep a
    /// stream going); a sync call or [`lock_bus`](SpiDevice::lock_bus) on the
    /// same bus from it returns [`SpiError::CalledFromCallback`]. A panic in `done` is
    /// caught (the panic hook reports it) and the bus carries on.
    ///
    /// Nothing is allocated for a `done` of up to 48 bytes of captures (on
    /// 64-bit targets: six words, such as a device handle, a channel sender
    /// and a count), so a stream that submits its message again from `done`
    /// allocates nothing per message; larger captures are boxed.
    pub fn submit_with(
        &self,
        msg: PreparedMessage,
        done: impl FnOnce(PreparedMessage, Result<(), SpiError>) + Send + 'static,
    ) {
        self.submit_job(msg, Some(Callback::new(done)));
    }

    /// Returns the message and its result if it ran in this thread.
    fn submit_job(&self, msg: PreparedMessage, callback: Option<Callback>) -> Option<Finished> {
        let mut job = prepared::AsyncJob { dev: self.state.clone(), msg, submitted: now(), callback };
        if let Err(e) = self.check_prepared(&mut job.msg) {
            job.complete(Err(e));
            return None;
        }
        self.bus.inner.submit(job)
    }

    /// Takes the bus for an exclusive sequence: other devices' sync calls wait
    /// and async submits queue until the returned guard is dropped.
    ///
    /// Async messages queued before the call (from any thread) run first;
    /// those submitted while the lock is held queue and run after it.
    ///
    /// From a [`submit_with`](SpiDevice::submit_with) callback of the same
    /// bus it returns [`SpiError::CalledFromCallback`]: the callback runs
    /// with the bus held, so the lock could never be granted. A thread that
    /// already holds the bus's lock gets [`SpiError::LockedByCaller`] (here
    /// and from the device's sync calls): run the message through the lock.
    ///
    /// ```
    /// # use wirespeed::spi::{Bus, DeviceConfig, Policy, Transfer};
    /// # use wirespeed::backend::lab::LabSpi;
    /// # use wirespeed_lab::{Lab, LabConfig, devices::Loopback};
    /// # let lab = Lab::new(LabConfig::default());
    /// # let block = lab.spi_controller(Default::default());
    /// # block.attach(0, Loopback::new());
    /// # let dev = Bus::new(LabSpi::new(block), Policy::fast()).device(DeviceConfig::new(0, 20_000_000))?;
    /// let mut lock = dev.lock_bus()?;
    /// // e.g. a flash's write enable and the page program it guards, with no other device in between
    /// lock.sync(&mut [Transfer::write(&[0x06])])?;
    /// lock.sync(&mut [Transfer::write(&[0x02, 0x00, 0x10, 0x00, 0xAB])])?;
    /// drop(lock);
    /// # Ok::<(), wirespeed::spi::SpiError>(())
    /// ```
    pub fn lock_bus(&self) -> Result<BusLock<'_>, SpiError> {
        let inner = &self.bus.inner;
        inner.check_may_wait()?;
        // Messages queued before the lock (this thread's async submits among
        // them) run before the exclusive sequence, never after it.
        pump::wait_for_queued(inner);
        let hw = inner.lock_hw();
        lock_owner::enter(inner);
        Ok(BusLock { dev: self, hw })
    }
}

/// Exclusive use of a bus by one device (see [`SpiDevice::lock_bus`]).
pub struct BusLock<'d> {
    dev: &'d SpiDevice,
    hw: MutexGuard<'d, exec::BusHw>,
}

impl Drop for BusLock<'_> {
    fn drop(&mut self) {
        lock_owner::leave(&self.dev.bus.inner);
    }
}

impl std::fmt::Debug for BusLock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusLock").finish_non_exhaustive()
    }
}

impl BusLock<'_> {
    /// Runs a message while holding the bus.
    pub fn sync(&mut self, transfers: &mut [Transfer<'_>]) -> Result<(), SpiError> {
        let inner = &self.dev.bus.inner;
        plan::validate(transfers, &self.dev.state.cfg, &inner.caps)?;
        let t0 = now();
        let (r, end) = inner.run_locked(&mut self.hw, &self.dev.state, transfers, &mut InFlight::none());
        inner.finish(t0, end, bus::RanIn::CallerSync, &r);
        r
    }

    /// Runs a prepared message while holding the bus.
    pub fn run(&mut self, msg: &mut PreparedMessage) -> Result<(), SpiError> {
        self.dev.check_prepared(msg)?;
        let inner = &self.dev.bus.inner;
        let t0 = now();
        let (r, end) = inner.run_locked(&mut self.hw, &self.dev.state, msg, &mut InFlight::none());
        inner.finish(t0, end, bus::RanIn::CallerSync, &r);
        r
    }
}
