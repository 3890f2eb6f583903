//! The lab's SPI controller block ("WSPI") and the bus face of SPI device models.
//!
//! Software reaches the block only through 32-bit register reads and writes
//! ([`SpiController::read`], [`SpiController::write`]; the map is in [`regs`])
//! and its interrupt line ([`SpiController::irq`]). Devices attach per native
//! chip select ([`SpiController::attach`]) or behind a GPIO chip select
//! ([`SpiController::attach_external_cs`]). Its DMA engine reaches memory
//! through the addresses of a descriptor ([`SpiController::load_dma_descriptor`]),
//! translated by an IOMMU if one is attached ([`SpiController::attach_iommu`]).

mod config;
mod dma;
mod dma_memory;
#[cfg(test)]
mod dma_tests;
mod faults;
#[cfg(test)]
mod faults_tests;
mod fifo_run;
#[cfg(test)]
mod fifo_tests;
mod lane;
mod model;
pub mod regs;
#[cfg(test)]
mod tests;

use crate::iommu::{DmaClient, Iommu};
use crate::irq::IrqLine;
use crate::lab::Lab;
use crate::pin::PinSink;
use crate::scheduler::Scheduler;
use crate::spin::{SpinGuard, SpinLock};
use crate::trace::Trace;
pub use config::{NoSuchChipSelect, SpiConfigError, SpiControllerConfig};
pub use dma::DmaDescriptor;
pub use faults::InjectedFaults;
pub use model::Clocked;
use model::Model;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use wirespeed_time::{delay_ns, now, Instant};

/// The bus face of an SPI device model: what a chip sees on its pins.
pub trait SpiDeviceModel: Send {
    /// Chip select went active (`true`) or inactive at `at`.
    fn chip_select(&mut self, asserted: bool, at: Instant);
    /// One word of `bits` bits shifted, starting at `at`: the device receives
    /// `mosi` and returns what it drove on MISO during the same clocks.
    fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32;
    /// Words shifted back to back, as a DMA burst clocks them: `mosi[i]`
    /// starts at `at` + i × `word_ns`; the device's answers go to `miso[i]`
    /// (the shorter slice bounds the burst). The default is
    /// [`exchange`](SpiDeviceModel::exchange) word by word; a device may
    /// override it with a faster loop that answers the same.
    fn exchange_burst(&mut self, mosi: &[u32], miso: &mut [u32], bits: u8, at: Instant, word_ns: u64) {
        let mut start = at;
        for (&m, r) in mosi.iter().zip(miso.iter_mut()) {
            *r = self.exchange(m, bits, start);
            start = start.add_ns(word_ns);
        }
    }
    /// [`exchange_burst`](SpiDeviceModel::exchange_burst) for words of at
    /// most 8 bits, one per byte (the DMA engine's chunks of such words,
    /// which are most): `miso[i]` answers `mosi[i]`, bits above `bits`
    /// included or not (the block masks them). The default widens a piece
    /// at a time and calls `exchange_burst`; a device may override it with
    /// a faster loop that answers the same.
    fn exchange_bytes(&mut self, mosi: &[u8], miso: &mut [u8], bits: u8, at: Instant, word_ns: u64) {
        const PIECE: usize = 64;
        let (mut wide_mosi, mut wide_miso) = ([0u32; PIECE], [0u32; PIECE]);
        let mut start = at;
        for (m, r) in mosi.chunks(PIECE).zip(miso.chunks_mut(PIECE)) {
            let n = m.len().min(r.len());
            wide_mosi.iter_mut().zip(m).for_each(|(w, &b)| *w = u32::from(b));
            self.exchange_burst(&wide_mosi[..n], &mut wide_miso[..n], bits, start, word_ns);
            r.iter_mut().zip(&wide_miso[..n]).for_each(|(b, &w)| *b = w as u8);
            start = start.add_ns((n as u64).saturating_mul(word_ns));
        }
    }
    /// The SCLK frequency the controller will clock the device at from the
    /// next word on. The controller calls it at the start of a burst when it
    /// differs from what it last told this device (0 = never told).
    fn sclk_hz(&mut self, _hz: u64) {}
}

pub(crate) struct Shared {
    model: SpinLock<Model>,
    irq: IrqLine,
    latency_ns: u64,
    config: SpiControllerConfig,
    scheduler: Scheduler,
    /// A DMA burst runs (see [`DmaClient`]).
    dma_active: Arc<AtomicBool>,
}

impl DmaClient for Shared {
    fn settle(self: Arc<Self>) {
        if self.dma_active.load(Ordering::Acquire) {
            update(&self, |m| m.advance(now()));
        }
    }

    fn forget(self: Arc<Self>) {
        if self.dma_active.load(Ordering::Acquire) {
            update(&self, |m| m.dma.forget_translations());
        }
    }
}

/// Runs `f` on the model under its lock and drives the IRQ line from the
/// state it leaves; the system calls that update asks for (waking the line's
/// waiters, arming an interrupt check) run once the lock is released.
fn update<R>(shared: &Arc<Shared>, f: impl FnOnce(&mut Model) -> R) -> R {
    let mut m = shared.model.lock();
    let r = f(&mut m);
    let fx = m.update_irq(&shared.irq);
    drop(m);
    if fx.wake {
        shared.irq.wake();
    }
    if let Some(due) = fx.check_at {
        let block = Arc::downgrade(shared);
        shared.scheduler.schedule(due, move |_| fire_irq_check(&block, due));
    }
    r
}

/// Handle to one SPI controller block. Clones share the block.
#[derive(Clone)]
pub struct SpiController {
    shared: Arc<Shared>,
}

impl fmt::Debug for SpiController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpiController").field("config", &self.shared.config).finish()
    }
}

impl SpiController {
    pub(crate) fn new(lab: &Lab, config: SpiControllerConfig) -> Result<SpiController, SpiConfigError> {
        config.validate()?;
        let model = Model::new(&config, lab);
        let dma_active = model.dma.active_flag();
        let shared = Arc::new(Shared {
            model: SpinLock::new(model),
            irq: IrqLine::new(config.name),
            latency_ns: lab.config().reg_access_latency_ns,
            config: config.clone(),
            scheduler: lab.scheduler().clone(),
            dma_active,
        });
        Ok(SpiController { shared })
    }

    fn lock(&self) -> SpinGuard<'_, Model> {
        self.shared.model.lock()
    }

    /// The block's static configuration.
    pub fn config(&self) -> &SpiControllerConfig {
        &self.shared.config
    }

    /// Reads a register (see [`regs`]).
    #[inline]
    pub fn read(&self, reg: u32) -> u32 {
        delay_ns(self.shared.latency_ns);
        update(&self.shared, |m| m.read(reg))
    }

    /// Writes a register (see [`regs`]).
    #[inline]
    pub fn write(&self, reg: u32, value: u32) {
        delay_ns(self.shared.latency_ns);
        update(&self.shared, |m| m.write(reg, value));
    }

    /// Pushes several words into `TXDATA`: the same as that many writes, each
    /// paying the register-access latency, under one lock of the model.
    pub fn write_fifo(&self, words: &[u32]) {
        self.write_fifo_iter(words.iter().copied());
    }

    /// Pushes words of at most 8 bits, one a byte of `bytes`, into
    /// `TXDATA` (Linux's `iowrite8_rep`): the same as that many writes, each
    /// paying the register-access latency, under one lock of the model.
    pub fn write_fifo_bytes(&self, bytes: &[u8]) {
        self.write_fifo_iter(bytes.iter().map(|&b| u32::from(b)));
    }

    /// [`write_fifo`](SpiController::write_fifo) for words taken as they
    /// come (Linux's `iowrite8_rep` and its kind, from a buffer or a fill
    /// value): no slice of them needs to be built first. `words` runs under
    /// the model's lock.
    pub fn write_fifo_iter(&self, words: impl IntoIterator<Item = u32>) {
        let latency_ns = self.shared.latency_ns;
        update(&self.shared, |m| m.write_tx(words, || delay_ns(latency_ns)));
    }

    /// Pops `out.len()` words of at most 8 bits from `RXDATA` into `out`,
    /// one byte each (Linux's `ioread8_rep`): the same as that many reads,
    /// each paying the register-access latency, under one lock of the model.
    pub fn read_fifo_bytes(&self, out: &mut [u8]) {
        self.pop_rx(out, |b, w| *b = w as u8);
    }

    /// Pops `n` words from `RXDATA` and drops them (a write's answers): the
    /// same as that many reads, under one lock of the model.
    pub fn drop_fifo(&self, n: usize) {
        self.pop_rx(0..n, |_, _| {});
    }

    /// One `RXDATA` read per item of `into`, handed to `each` with its word.
    #[inline]
    fn pop_rx<T>(&self, into: impl IntoIterator<Item = T>, each: impl FnMut(T, u32)) {
        let latency_ns = self.shared.latency_ns;
        update(&self.shared, |m| m.read_rx(into, || delay_ns(latency_ns), each));
    }

    /// Loads a DMA descriptor: writes `DMATX_*` and `DMARX_*` and sets
    /// `DMACTRL.TXEN`/`RXEN` for the directions it has (clearing the others;
    /// a descriptor with neither turns DMA off). The next `START` runs a DMA
    /// burst with it (see [`regs`], "DMA"). Costs one register access per
    /// register written.
    ///
    /// # Safety
    /// If no IOMMU translates the block's addresses when the burst starts
    /// (none attached, or the attached one in passthrough), they are host
    /// addresses: `[tx, tx + XFERLEN × word bytes)` must stay readable and
    /// `[rx, …)` writable, with no Rust reference to the RX memory and no
    /// `&mut` to the TX memory, from now until software has seen the burst
    /// end (a `STATUS` or `IRQSTAT` read showing `BUSY` clear, or the
    /// interrupt), or has written `RESET`, or cleared `DMACTRL` before
    /// `START`. If one translates, the contract of [`Iommu::map`] covers the
    /// memory.
    pub unsafe fn load_dma_descriptor(&self, d: DmaDescriptor) {
        let addrs = u64::from(d.tx.is_some()) + u64::from(d.rx.is_some());
        delay_ns(self.shared.latency_ns.saturating_mul(1 + 2 * addrs));
        update(&self.shared, |m| m.dma.load(d));
    }

    /// Makes the block's DMA engine translate its addresses through `iommu`
    /// (from the next DMA burst on), replacing any IOMMU attached before.
    pub fn attach_iommu(&self, iommu: &Iommu) {
        self.lock().dma.set_iommu(Some(iommu.clone()));
        let client: Weak<dyn DmaClient> = Arc::downgrade(&self.shared) as Weak<Shared>;
        iommu.add_client(client);
    }

    /// The IOMMU the block's DMA engine translates through, if any.
    pub fn iommu(&self) -> Option<Iommu> {
        self.lock().dma.iommu()
    }

    /// The block's interrupt line.
    pub fn irq(&self) -> &IrqLine {
        &self.shared.irq
    }

    /// Attaches a device model to native chip select `cs`, replacing any.
    ///
    /// # Panics
    /// If `cs` is not below the block's `num_cs` (a wiring error in a test
    /// bench); [`try_attach`](SpiController::try_attach) returns that as an error.
    pub fn attach(&self, cs: u8, device: impl SpiDeviceModel + 'static) {
        self.try_attach(cs, device).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Attaches a device model to native chip select `cs`, replacing any, or
    /// says that the block has no such chip select (and attaches nothing).
    pub fn try_attach(&self, cs: u8, device: impl SpiDeviceModel + 'static) -> Result<(), NoSuchChipSelect> {
        let config = &self.shared.config;
        if cs >= config.num_cs {
            return Err(NoSuchChipSelect { block: config.name, cs, num_cs: config.num_cs });
        }
        self.lock().attach(cs, Box::new(device));
        Ok(())
    }

    /// Attaches a device whose chip select is driven from outside the block
    /// (a GPIO line). Returns the device's CS input: drive it low to select.
    pub fn attach_external_cs(&self, device: impl SpiDeviceModel + 'static) -> Arc<dyn PinSink> {
        let index = self.lock().attach_external(Box::new(device));
        Arc::new(ExternalCs { block: Arc::downgrade(&self.shared), index })
    }

    /// Starts recording a bus trace with room for `capacity` events (clears the old one).
    pub fn trace_start(&self, capacity: usize) {
        // Words are recorded as the model learns they shifted: first settle
        // those that shifted before the trace started, unrecorded.
        update(&self.shared, |m| {
            m.advance(now());
            m.analyser.trace.enable(capacity);
        });
    }

    /// Stops recording the bus trace.
    pub fn trace_stop(&self) {
        update(&self.shared, |m| {
            m.advance(now());
            m.analyser.trace.disable();
        });
    }

    /// Takes what the trace recorded so far.
    pub fn trace_take(&self) -> Trace {
        update(&self.shared, |m| {
            m.advance(now());
            m.analyser.trace.take()
        })
    }

    /// Backdoor: whether the block is powered and ready now.
    pub fn is_ready(&self) -> bool {
        self.lock().read(regs::STATUS) & regs::STATUS_READY != 0
    }

    /// Backdoor: the words clocked since creation and their wire time
    /// (up to now: words still shifting are not counted yet).
    pub fn clocked(&self) -> Clocked {
        update(&self.shared, |m| {
            m.advance(now());
            m.analyser.clocked
        })
    }

    /// Backdoor: number of power-ups since creation (idle teardown undone).
    pub fn power_ups(&self) -> u64 {
        self.lock().power_ups
    }

    /// Backdoor: refuse the next `START` (`STATUS.ERR`, nothing shifts), once.
    /// Arming it again before it fired arms it once, not twice.
    pub fn refuse_next_start(&self) {
        self.lock().faults.refuse_next_start = true;
    }

    /// Backdoor: the next FIFO burst starts but never shifts a word until
    /// software writes `RESET`, once (see [`InjectedFaults`]).
    pub fn stall_next_burst(&self) {
        self.lock().faults.stall_next_burst = true;
    }

    /// Backdoor: disarms faults that have not fired yet; returns what was
    /// armed and how many of each fired so far.
    pub fn disarm_faults(&self) -> InjectedFaults {
        let mut m = self.lock();
        let before = m.faults;
        m.faults.refuse_next_start = false;
        m.faults.stall_next_burst = false;
        before
    }

    /// Backdoor: the faults armed now and how many of each fired so far.
    pub fn injected_faults(&self) -> InjectedFaults {
        self.lock().faults
    }
}

/// A GPIO-driven chip-select input of an externally selected device.
struct ExternalCs {
    block: Weak<Shared>,
    index: usize,
}

impl PinSink for ExternalCs {
    fn drive(&self, high: bool, at: Instant) {
        if let Some(shared) = self.block.upgrade() {
            update(&shared, |m| m.external_cs(self.index, !high, at));
        }
    }
}

/// The interrupt thread's check armed for `due`.
fn fire_irq_check(block: &Weak<Shared>, due: Instant) {
    if let Some(shared) = block.upgrade() {
        update(&shared, |m| m.check_fired(due));
    }
}
