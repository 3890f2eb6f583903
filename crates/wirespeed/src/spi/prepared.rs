//! Prepared messages: validated once, then run any number of times with no
//! validation and no allocation; and the async path built on them.
//!
//! A [`PreparedMessage`] owns its buffers. Between runs only TX contents may
//! change ([`PreparedMessage::tx_mut`]); lengths, speeds and CS behaviour are
//! fixed, which is what lets the core skip validation.
//!
//! ```
//! use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy};
//! use wirespeed::backend::lab::LabSpi;
//! use wirespeed_lab::{Lab, LabConfig, devices::Loopback};
//!
//! let lab = Lab::new(LabConfig::default());
//! let block = lab.spi_controller(Default::default());
//! block.attach(0, Loopback::new());
//! let dev = Bus::new(LabSpi::new(block), Policy::fast()).device(DeviceConfig::new(0, 20_000_000)).unwrap();
//! let mut status = dev.prepare(vec![OwnedTransfer::duplex(vec![0x30, 0x00, 0, 0])]).unwrap();
//! for i in 0..3u8 {
//!     status.tx_mut(0).unwrap()[3] = i;
//!     dev.run(&mut status).unwrap();
//!     assert_eq!(status.rx(0).unwrap()[3], i);
//! }
//! // Async: the message comes back with its result (on this idle bus the
//! // fast policy ran it before `submit` returned; otherwise the pump runs it).
//! let pending = dev.submit(status);
//! let (status, result) = pending.wait();
//! result.unwrap();
//! assert_eq!(status.rx(0).unwrap()[0], 0x30);
//! ```

use super::callback::Callback;
use super::controller::{ControllerCaps, DmaAddrs, DmaSupport};
use super::device::DeviceConfig;
use super::dma_map::TransferMapping;
use super::error::{InvalidMessage, SpiError};
use super::exec::{DeviceState, MessageSource};
use super::message::MessagePlanner;
use super::plan::{plan_step, Step};
use super::prepared_buffer::PreparedBuffer;
use super::transfer::{Data, Transfer};
use crate::dma::DmaDomain;
use crate::sync::{Arc, AtomicUsize, Condvar, Mutex, Ordering};
use std::fmt;
use std::time::Duration;
use wirespeed_time::{Deadline, Instant};

#[derive(Debug)]
enum Buffers {
    Write(PreparedBuffer),
    Read(PreparedBuffer),
    Duplex(PreparedBuffer, PreparedBuffer),
    /// An RX buffer of this many bytes, allocated when the message is
    /// prepared (where a length that cannot be allocated is an error, not
    /// a panic).
    ReadOf(usize),
}

impl Buffers {
    fn data(&mut self) -> Data<'_> {
        match self {
            Buffers::Write(t) => Data::Write(t),
            Buffers::Read(r) => Data::Read(r),
            Buffers::Duplex(t, r) => Data::Duplex(t, r),
            // Only before `OwnedTransfer::allocate`, which preparing runs first.
            Buffers::ReadOf(_) => Data::Read(&mut []),
        }
    }

    /// Moves the buffers to DMA memory (best effort, see [`PreparedBuffer::move_to_dma`]).
    fn move_to_dma(&mut self) {
        match self {
            Buffers::Write(b) | Buffers::Read(b) => b.move_to_dma(),
            Buffers::Duplex(t, r) => {
                t.move_to_dma();
                r.move_to_dma();
            }
            Buffers::ReadOf(_) => {}
        }
    }
}

/// One transfer of a prepared message, owning its buffers.
#[derive(Debug)]
pub struct OwnedTransfer {
    buffers: Buffers,
    /// See [`Transfer::speed_hz`].
    pub speed_hz: u32,
    /// See [`Transfer::bits_per_word`].
    pub bits_per_word: u8,
    /// See [`Transfer::delay_after_ns`].
    pub delay_after_ns: u32,
    /// See [`Transfer::cs_change`].
    pub cs_change: bool,
    /// See [`Transfer::cs_change_delay_ns`].
    pub cs_change_delay_ns: Option<u32>,
    /// See [`Transfer::word_delay_ns`].
    pub word_delay_ns: u32,
    /// See [`Transfer::tx_nbits`].
    pub tx_nbits: u8,
    /// See [`Transfer::rx_nbits`].
    pub rx_nbits: u8,
}

impl OwnedTransfer {
    fn new(buffers: Buffers) -> OwnedTransfer {
        OwnedTransfer {
            buffers,
            speed_hz: 0,
            bits_per_word: 0,
            delay_after_ns: 0,
            cs_change: false,
            cs_change_delay_ns: None,
            word_delay_ns: 0,
            tx_nbits: 0,
            rx_nbits: 0,
        }
    }
    /// Sends `tx`.
    pub fn write(tx: Vec<u8>) -> OwnedTransfer {
        OwnedTransfer::new(Buffers::Write(PreparedBuffer::Heap(tx)))
    }
    /// Receives `len` bytes. The buffer is allocated by
    /// [`SpiDevice::prepare`](super::SpiDevice::prepare), which fails with
    /// [`InvalidMessage::BufferTooLarge`] if it cannot be.
    pub fn read(len: usize) -> OwnedTransfer {
        OwnedTransfer::new(Buffers::ReadOf(len))
    }
    /// Sends `tx` and receives as many bytes.
    pub fn duplex(tx: Vec<u8>) -> OwnedTransfer {
        let n = tx.len();
        OwnedTransfer::new(Buffers::Duplex(PreparedBuffer::Heap(tx), PreparedBuffer::Heap(vec![0; n])))
    }
    super::transfer::transfer_options_builder!();

    /// Allocates an RX buffer given only by its length.
    fn allocate(&mut self, index: usize) -> Result<(), InvalidMessage> {
        if let Buffers::ReadOf(len) = self.buffers {
            let mut rx = Vec::new();
            rx.try_reserve_exact(len).map_err(|_| InvalidMessage::BufferTooLarge { index, len })?;
            rx.resize(len, 0);
            self.buffers = Buffers::Read(PreparedBuffer::Heap(rx));
        }
        Ok(())
    }

    fn view(&mut self) -> Transfer<'_> {
        let data = self.buffers.data();
        Transfer {
            data,
            speed_hz: self.speed_hz,
            bits_per_word: self.bits_per_word,
            delay_after_ns: self.delay_after_ns,
            cs_change: self.cs_change,
            cs_change_delay_ns: self.cs_change_delay_ns,
            word_delay_ns: self.word_delay_ns,
            tx_nbits: self.tx_nbits,
            rx_nbits: self.rx_nbits,
        }
    }
}

/// What a finished async message hands back.
pub type Finished = (PreparedMessage, Result<(), SpiError>);

#[derive(Default)]
struct SlotState {
    done: Option<Finished>,
    abandoned: bool,
    /// A thread sleeps on the slot: only then is a wake-up worth a system call.
    waiting: bool,
}

pub(crate) struct Slot {
    state: Mutex<SlotState>,
    cv: Condvar,
    /// The bus the message was last submitted to (its `BusInner::id`): a
    /// completion callback of that bus, or the holder of its bus lock, must
    /// not sleep on the slot, since the message can only complete after the
    /// callback returns or the lock is dropped.
    bus: AtomicUsize,
}

/// A message validated once for one device.
pub struct PreparedMessage {
    device_id: u64,
    transfers: Vec<OwnedTransfer>,
    steps: Vec<Step>,
    /// A message-level backend's translation, made once when prepared.
    backend_plan: Option<Box<dyn std::any::Any + Send>>,
    /// DMA mappings of the transfers that go by DMA, kept for the message's lifetime.
    premapped: Option<PreMapped>,
    slot: Arc<Slot>,
}

/// A prepared message's DMA mappings (policy `premapped_dma`): unmapped
/// when the message is dropped.
struct PreMapped {
    domain: std::sync::Arc<DmaDomain>,
    transfers: Vec<Option<TransferMapping>>,
}

impl Drop for PreparedMessage {
    fn drop(&mut self) {
        if let Some(p) = self.premapped.take() {
            for m in p.transfers.into_iter().flatten() {
                // An unmap the IOMMU refuses leaves its IOVAs quarantined by
                // the DMA layer (counted there); nothing else can be done here.
                let _ = m.unmap(&p.domain);
            }
        }
    }
}

impl fmt::Debug for PreparedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedMessage").field("device", &self.device_id).field("transfers", &self.transfers).finish()
    }
}

impl PreparedMessage {
    pub(crate) fn new(
        device_id: u64,
        mut transfers: Vec<OwnedTransfer>,
        dev: &DeviceConfig,
        caps: &ControllerCaps,
        planner: Option<&dyn MessagePlanner>,
    ) -> Result<PreparedMessage, InvalidMessage> {
        if transfers.is_empty() {
            return Err(InvalidMessage::Empty);
        }
        let steps = transfers
            .iter_mut()
            .enumerate()
            .map(|(i, t)| t.allocate(i).and_then(|()| plan_step(i, &t.view(), dev, caps)))
            .collect::<Result<Vec<_>, _>>()?;
        let backend_plan = planner.map(|p| p.plan(dev, &steps)).transpose()?;
        let slot =
            Arc::new(Slot { state: Mutex::new(SlotState::default()), cv: Condvar::new(), bus: AtomicUsize::new(0) });
        Ok(PreparedMessage { device_id, transfers, steps, backend_plan, premapped: None, slot })
    }

    /// Maps the buffers of the transfers that go by DMA (at least
    /// `dma.min_len` bytes, no word delay) for the message's lifetime,
    /// after moving them to page-aligned DMA memory ([`PreparedBuffer`]).
    /// Best effort: a transfer that cannot be mapped now is mapped at each
    /// run, and one whose DMA memory cannot be had is mapped where it is.
    pub(crate) fn premap(&mut self, dma: &DmaSupport) {
        let mut any = false;
        let transfers = self
            .transfers
            .iter_mut()
            .zip(&self.steps)
            .map(|(t, st)| {
                if st.len < dma.min_len || st.word_delay_ns > 0 {
                    return None;
                }
                t.buffers.move_to_dma();
                // SAFETY: the buffers are the message's own memory (heap or
                // DMA), which never moves or is reallocated from here on
                // (only their contents change, between runs), and are
                // unmapped in `drop` before they are freed. The CPU touches
                // RX only between runs.
                let m = unsafe { TransferMapping::map(&dma.domain, &t.buffers.data()) }.ok();
                any |= m.is_some();
                m
            })
            .collect();
        if any {
            self.premapped = Some(PreMapped { domain: dma.domain.clone(), transfers });
        }
    }

    pub(crate) fn device_id(&self) -> u64 {
        self.device_id
    }

    /// Number of transfers.
    pub fn len(&self) -> usize {
        self.transfers.len()
    }

    /// Whether the message has no transfers (never true: preparing rejects that).
    pub fn is_empty(&self) -> bool {
        self.transfers.is_empty()
    }

    /// The TX bytes of transfer `i`, to change before the next run.
    pub fn tx_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        match &mut self.transfers.get_mut(i)?.buffers {
            Buffers::Write(t) | Buffers::Duplex(t, _) => Some(t.as_mut()),
            Buffers::Read(_) | Buffers::ReadOf(_) => None,
        }
    }

    /// The RX bytes of transfer `i` from the last run.
    pub fn rx(&self, i: usize) -> Option<&[u8]> {
        if let Some(m) = self.premapped.as_ref().and_then(|p| p.transfers.get(i)?.as_ref()) {
            m.sync_for_cpu();
        }
        match &self.transfers.get(i)?.buffers {
            Buffers::Read(r) | Buffers::Duplex(_, r) => Some(r.as_ref()),
            Buffers::Write(_) | Buffers::ReadOf(_) => None,
        }
    }

    /// Validates the message again, as a kernel without
    /// `spi_optimize_message` does at every run (policy `optimize_message` off).
    pub(crate) fn revalidate(&mut self, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<(), InvalidMessage> {
        for (i, t) in self.transfers.iter_mut().enumerate() {
            plan_step(i, &t.view(), dev, caps)?;
        }
        Ok(())
    }

    /// Expected wire time of one run, in ns.
    pub fn wire_ns(&self) -> u64 {
        self.steps.iter().fold(0u64, |sum, s| sum.saturating_add(s.wire_ns))
    }
}

impl MessageSource for PreparedMessage {
    fn count(&self) -> usize {
        self.steps.len()
    }
    #[inline]
    fn step(&self, i: usize, _dev: &DeviceConfig, _caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        Ok(self.steps[i])
    }
    #[inline]
    fn data(&mut self, i: usize) -> Data<'_> {
        self.transfers[i].buffers.data()
    }
    #[inline]
    fn transfer<'a>(
        &'a mut self,
        i: usize,
        _dev: &DeviceConfig,
        _caps: &ControllerCaps,
        _scratch: &'a mut Option<Step>,
    ) -> Result<(&'a Step, Data<'a>), InvalidMessage> {
        Ok((&self.steps[i], self.transfers[i].buffers.data()))
    }
    fn backend_plan(&mut self) -> Option<&mut (dyn std::any::Any + Send)> {
        self.backend_plan.as_deref_mut()
    }
    #[inline]
    fn dma_addrs(&self, i: usize) -> Option<DmaAddrs> {
        let m = self.premapped.as_ref()?.transfers[i].as_ref()?;
        m.sync_for_device();
        Some(m.addrs())
    }
}

/// An async message in flight.
pub(crate) struct AsyncJob {
    pub dev: std::sync::Arc<DeviceState>,
    pub msg: PreparedMessage,
    pub submitted: Instant,
    pub callback: Option<Callback>,
}

impl AsyncJob {
    pub(crate) fn complete(self, r: Result<(), SpiError>) {
        if let Some(cb) = self.callback {
            // A panicking callback must not take the pump thread, and every
            // message queued after it, down with it; the panic hook has
            // reported it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb.call(self.msg, r)));
            return;
        }
        let slot = self.msg.slot.clone();
        let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.abandoned {
            st.abandoned = false;
            return; // the handle was dropped: the message goes with it
        }
        st.done = Some((self.msg, r));
        if st.waiting {
            slot.cv.notify_all();
        }
    }
}

/// The handle of an async message: wait for it (with or without a time
/// limit), or poll it.
pub struct Pending {
    held: Option<Held>,
}

/// What a [`Pending`] holds: the slot its message comes back through, or,
/// for a message run before `submit` returned, the message and its result.
enum Held {
    Slot(Arc<Slot>),
    Ran(Finished),
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending").field("done", &self.is_done()).finish()
    }
}

// A handle that holds a message run in its submitter's thread is as large
// as the message and its result, `Finished`: the `Ok` side of these
// results, so a `Pending` on the `Err` side makes none of them larger, and
// boxing it would cost an allocation per `submit`.
#[allow(clippy::result_large_err)]
impl Pending {
    /// A message queued for the pump: it comes back through `slot`.
    pub(crate) fn queued(slot: Arc<Slot>) -> Pending {
        Pending { held: Some(Held::Slot(slot)) }
    }

    /// A message that ran in the submitting thread: here it is.
    pub(crate) fn ran(finished: Finished) -> Pending {
        Pending { held: Some(Held::Ran(finished)) }
    }

    /// Whether the message ran in the submitting thread, before `submit`
    /// returned ([`Policy::async_in_caller`](super::Policy::async_in_caller)):
    /// it is done, and nothing was handed to the pump thread. False when
    /// it was queued, even if the pump has run it since.
    pub fn ran_in_caller(&self) -> bool {
        matches!(self.held, Some(Held::Ran(_)))
    }

    /// Whether the message has completed.
    pub fn is_done(&self) -> bool {
        match &self.held {
            Some(Held::Ran(_)) => true,
            Some(Held::Slot(s)) => s.state.lock().unwrap_or_else(|e| e.into_inner()).done.is_some(),
            None => false,
        }
    }

    /// Blocks until the message completes; returns it with its result.
    ///
    /// # Panics
    /// In a [`submit_with`](super::SpiDevice::submit_with) callback of the
    /// bus the message went to, or while holding that bus's
    /// [`BusLock`](super::BusLock), if it has not completed yet: it could
    /// only complete after the callback returns or the lock is dropped, so
    /// the wait would never end (the pump catches a callback's panic and
    /// carries on; the message still runs). Use [`try_take`](Pending::try_take)
    /// there, or a callback of its own.
    pub fn wait(self) -> Finished {
        match self.wait_until(None) {
            Ok(f) => f,
            Err(_) => panic!(
                "Pending::wait in a completion callback of the bus that runs the message, or under that bus's \
                 lock: it could never complete; use try_take, or submit_with for a callback of its own"
            ),
        }
    }

    /// Waits at most `timeout` for the message; returns it with its result,
    /// or the handle back if it has not completed by then (at once, in a
    /// completion callback of the bus that runs it or under its bus lock).
    pub fn wait_timeout(self, timeout: Duration) -> Result<Finished, Pending> {
        // The deadline saturates: a limit beyond the clock's range is no limit.
        self.wait_until(Some(Deadline::after_ns(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX))))
    }

    /// Returns the message if it has completed, else the handle back.
    pub fn try_take(self) -> Result<Finished, Pending> {
        // A deadline long past: never sleeps.
        self.wait_until(Some(Deadline::at(Instant::ZERO)))
    }

    /// Sleeps on the slot until the message is done or `deadline` passes.
    fn wait_until(mut self, deadline: Option<Deadline>) -> Result<Finished, Pending> {
        let slot = match self.held.take().expect("a live Pending holds its message or its slot") {
            Held::Ran(f) => return Ok(f),
            Held::Slot(slot) => slot,
        };
        let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(f) = st.done.take() {
                st.waiting = false;
                return Ok(f);
            }
            let left = deadline.map(|d| Duration::from_nanos(d.remaining_ns()));
            let bus = slot.bus.load(Ordering::Relaxed);
            let never = super::pump::is_pump_id(bus) || super::lock_owner::holds_id(bus);
            if left.is_some_and(|l| l.is_zero()) || never {
                st.waiting = false;
                drop(st);
                return Err(Pending::queued(slot));
            }
            st.waiting = true;
            st = match left {
                None => slot.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(left) => slot.cv.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0,
            };
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(Held::Slot(slot)) = self.held.take() {
            let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
            if st.done.take().is_none() {
                st.abandoned = true;
            }
        }
    }
}

/// The completion slot of `m`, marked as belonging to the bus with id `bus`.
pub(crate) fn slot_of(m: &PreparedMessage, bus: usize) -> Arc<Slot> {
    m.slot.bus.store(bus, Ordering::Relaxed);
    m.slot.clone()
}
