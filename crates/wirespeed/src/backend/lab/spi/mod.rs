//! [`LabSpi`]: the controller driver for the lab's WSPI SPI block.
//!
//! PIO register by register, as a kernel driver would: fill the TX FIFO,
//! start the burst, drain RX as words arrive and refill TX as room appears.
//! Transfers longer than the FIFO go by DMA ([`dma`]): the core maps their
//! buffers in the driver's [`DmaDomain`] (behind the block's IOMMU, if the
//! lab board has one) and the block's engine moves them at wire speed.
//! Completion by polling `STATUS`, by sleeping on the block's interrupt
//! (RX-threshold or DONE, re-armed as the transfer proceeds), or timed
//! ([`timed`]): asleep until just before the end, then polled — on the
//! RX-threshold interrupt set that many words before the end when the
//! transfer fits the FIFO, on a timer for a DMA transfer.

mod dma;
mod timed;

use super::LabIommu;
use crate::dma::{DmaDomain, DomainConfig, IommuMode};
use crate::spi::{
    word_bytes, ClockModel, Completion, Controller, ControllerCaps, ControllerFault, Data, DmaAddrs, DmaSupport,
    InFlight, Mode, TransferTiming,
};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use wirespeed_lab::spi::{regs, SpiController};
use wirespeed_time::{now, Deadline};

/// The driver for one lab WSPI block.
#[derive(Debug)]
pub struct LabSpi {
    block: SpiController,
    caps: ControllerCaps,
    fifo_bytes: usize,
    /// Words already pushed for the next burst by `preload`.
    preloaded: usize,
    /// One word's wire time at the clock and word size last configured.
    word_ns: u64,
    /// The domain the block's DMA engine works in (`None`: PIO only).
    dma: Option<Arc<DmaDomain>>,
    /// How late timed waits wake up.
    lateness: timed::WakeLateness,
    /// How late interrupt waits wake up: how many words before a burst's
    /// end its RX-threshold interrupt is set, when a timed wait fits the FIFO.
    irq_lead: timed::WakeLateness,
    /// The CPU one sleep costs the thread that sleeps, ns (the core's
    /// wake-up probe): a wake-up ahead of a burst's end must spare more
    /// polling than that.
    sleep_cpu_ns: u64,
}

/// The most words one burst can shift (`XFERLEN` is 24 bits wide); longer
/// transfers run as several bursts with CS held.
pub(super) const MAX_BURST_WORDS: usize = 0xFF_FFFF;

/// The word sizes the block shifts (8, 16 and 32 bits) whose word fits its
/// FIFO: a wider word can never be pushed, so a transfer of such words would
/// only wait for its timeout.
fn bits_per_word_mask(fifo_bytes: usize) -> u32 {
    [8u8, 16, 32].into_iter().filter(|&b| word_bytes(b) <= fifo_bytes).fold(0, |mask, b| mask | 1 << (b - 1))
}

/// Reads word `i` of a TX buffer (native endianness, as Linux spidev buffers).
#[inline]
fn tx_word(buf: &[u8], i: usize, wb: usize) -> u32 {
    match wb {
        1 => u32::from(buf[i]),
        2 => u32::from(u16::from_ne_bytes([buf[2 * i], buf[2 * i + 1]])),
        _ => u32::from_ne_bytes([buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]]),
    }
}

#[inline]
fn rx_store(buf: &mut [u8], i: usize, wb: usize, w: u32) {
    match wb {
        1 => buf[i] = w as u8,
        2 => buf[2 * i..2 * i + 2].copy_from_slice(&(w as u16).to_ne_bytes()),
        _ => buf[4 * i..4 * i + 4].copy_from_slice(&w.to_ne_bytes()),
    }
}

/// A transfer's time limit. The clock is read only when the driver first
/// has to wait: a burst that is done at its first status read (a short
/// transfer on a fast wire) costs no clock read for its timeout.
pub(super) struct Timeout {
    ns: u64,
    deadline: Option<Deadline>,
}

impl Timeout {
    fn new(ns: u64) -> Timeout {
        Timeout { ns, deadline: None }
    }

    pub(super) fn deadline(&mut self) -> Deadline {
        *self.deadline.get_or_insert_with(|| Deadline::after_ns(self.ns))
    }
}

/// One word's wire time: `bits` SCLK periods at `base_hz` / `div`, rounded up.
fn word_ns(bits: u8, div: u32, base_hz: u64) -> u64 {
    (u64::from(bits) * u64::from(div.max(2)) * 1_000_000_000).div_ceil(base_hz.max(1))
}

/// The domain for a block's DMA engine: behind its IOMMU in strict mode
/// (identity if the IOMMU is in passthrough), or with no IOMMU.
fn default_domain(block: &SpiController) -> Option<Arc<DmaDomain>> {
    let (hw, mode) = match block.iommu() {
        Some(iommu) => {
            let mode = if iommu.passthrough() { IommuMode::Identity } else { IommuMode::Strict };
            (Some(Arc::new(LabIommu::new(iommu)) as Arc<dyn crate::dma::IommuHw>), mode)
        }
        None => (None, IommuMode::None),
    };
    DmaDomain::new(hw, DomainConfig::with_mode(mode)).ok().map(Arc::new)
}

impl LabSpi {
    /// Takes over a lab WSPI block: enables it and reads its capabilities.
    /// Transfers longer than its FIFO go by DMA, through the block's IOMMU
    /// in strict mode if the board gave it one (identity if that IOMMU is in
    /// passthrough), with no IOMMU otherwise.
    pub fn new(block: SpiController) -> LabSpi {
        let dma = default_domain(&block);
        LabSpi::build(block, dma)
    }

    /// [`new`](LabSpi::new) with the DMA engine working in `domain` (whose
    /// IOMMU, if any, must be the one attached to the block), e.g. a lazy one.
    pub fn with_dma(block: SpiController, domain: Arc<DmaDomain>) -> LabSpi {
        LabSpi::build(block, Some(domain))
    }

    /// [`new`](LabSpi::new) without DMA: every transfer by PIO.
    pub fn pio_only(block: SpiController) -> LabSpi {
        LabSpi::build(block, None)
    }

    fn build(block: SpiController, dma: Option<Arc<DmaDomain>>) -> LabSpi {
        let fifo_bytes = block.read(regs::FIFOSIZE) as usize;
        let base_hz = u64::from(block.read(regs::BASECLK));
        let cfg = block.config().clone();
        let max_div = 1 << 20;
        let caps = ControllerCaps {
            name: cfg.name,
            max_speed_hz: (base_hz / 2) as u32,
            // Rounded up: base / max_div is not a whole number of Hz in general.
            min_speed_hz: base_hz.div_ceil(max_div).max(1) as u32,
            clock: ClockModel::Divider { base_hz, min_div: 2, max_div: max_div as u32 },
            fifo_bytes: fifo_bytes as u32,
            bits_per_word_mask: bits_per_word_mask(fifo_bytes),
            // CS names a line in 4 bits: a block configured with more lines
            // can select only the first 16.
            num_cs: cfg.num_cs.min(regs::CS_LINE_MASK as u8 + 1),
            can_poll: true,
            has_irq: true,
            mode_flags: crate::spi::ModeFlags::NONE,
        };
        let wakeup = crate::spi::thread_wakeup();
        let mut spi = LabSpi {
            block,
            caps,
            fifo_bytes,
            preloaded: 0,
            word_ns: word_ns(8, 2, base_hz),
            dma,
            lateness: timed::WakeLateness::default(),
            irq_lead: timed::WakeLateness::for_interrupt(wakeup.latency_ns),
            sleep_cpu_ns: wakeup.sleep_cpu_ns,
        };
        // The block may have been left powered down (by an earlier driver's
        // idle teardown): power it up and wait for READY, as after teardown.
        spi.set_power(true);
        spi
    }

    /// The block this driver runs.
    pub fn block(&self) -> &SpiController {
        &self.block
    }

    fn depth(&self, wb: usize) -> usize {
        self.fifo_bytes / wb
    }

    /// Pushes words `words` of `tx` (zeros for a read) into the TX FIFO.
    fn push(&self, tx: Option<&[u8]>, words: Range<usize>, wb: usize) {
        if words.is_empty() {
            return;
        }
        match tx {
            None => self.block.write_fifo_iter(std::iter::repeat_n(0, words.len())),
            Some(b) if wb == 1 => self.block.write_fifo_bytes(&b[words]),
            Some(b) => self.block.write_fifo_iter(words.map(|i| tx_word(b, i, wb))),
        }
    }

    /// Shifts words `words` of `data` as one burst (at most
    /// [`MAX_BURST_WORDS`]); the first `preloaded` of them are already in the
    /// TX FIFO.
    #[allow(clippy::too_many_arguments)]
    fn burst(
        &mut self,
        data: &mut Data<'_>,
        words: Range<usize>,
        wb: usize,
        preloaded: usize,
        completion: Completion,
        timeout: &mut Timeout,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let (from, end) = (words.start, words.end);
        let depth = self.depth(wb);
        let mut pushed = from + preloaded;
        if preloaded == 0 {
            self.block.write(regs::XFERLEN, (end - from) as u32);
            pushed = (from + depth).min(end);
            self.push(data.tx(), from..pushed, wb);
        }
        let irq = completion == Completion::Irq;
        if irq {
            self.block.write(regs::RXTHR, (end - from).min(depth / 2).max(1) as u32);
            self.block.write(regs::IRQEN, regs::IRQ_RXTH);
        }
        let started = irq.then(now);
        self.block.write(regs::START, regs::START_GO);
        in_flight.run();
        let mut popped = from;
        let mut spins = 0u32;
        while popped < end {
            if irq && !self.block.irq().wait(Some(Duration::from_nanos(timeout.deadline().remaining_ns()))) {
                return Err(self.fail(ControllerFault::Timeout));
            }
            let status = self.status()?;
            let rx = regs::rx_level(status) as usize;
            if rx > 0 {
                self.drain(data, popped..popped + rx, wb);
                popped += rx;
            }
            if pushed < end {
                pushed = self.refill(data, pushed, popped, end, status, wb);
            }
            if irq {
                if popped < end {
                    self.block.write(regs::RXTHR, (end - popped).min(depth / 2).max(1) as u32);
                }
            } else if rx == 0 {
                self.idle(&mut spins, timeout)?;
            }
        }
        if irq {
            self.block.write(regs::IRQEN, 0);
        }
        Ok(TransferTiming { started, completed: irq.then(now) })
    }

    /// Shifts `n` words whose TX words are all in the FIFO already, polled:
    /// starts the burst and pops the words as they come back.
    fn shift_preloaded(
        &mut self,
        data: &mut Data<'_>,
        n: usize,
        wb: usize,
        timeout: &mut Timeout,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        self.block.write(regs::START, regs::START_GO);
        in_flight.run();
        self.pop_all(data, n, wb, timeout)
    }

    /// [`shift_preloaded`](LabSpi::shift_preloaded), asleep until shortly
    /// before the burst's predicted end ([`Completion::Timed`]).
    fn shift_timed(
        &mut self,
        data: &mut Data<'_>,
        n: usize,
        wb: usize,
        timeout: &mut Timeout,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        self.block.write(regs::START, regs::START_GO);
        in_flight.run();
        self.sleep_until_rx_level(n, timeout)?;
        self.pop_all(data, n, wb, timeout)
    }

    /// Pops the `n` words of a started burst as they come back.
    #[inline(always)]
    fn pop_all(
        &mut self,
        data: &mut Data<'_>,
        n: usize,
        wb: usize,
        timeout: &mut Timeout,
    ) -> Result<TransferTiming, ControllerFault> {
        let (mut popped, mut spins) = (0, 0);
        while popped < n {
            let rx = regs::rx_level(self.status()?) as usize;
            if rx > 0 {
                self.drain(data, popped..popped + rx, wb);
                popped += rx;
            } else {
                self.idle(&mut spins, timeout)?;
            }
        }
        Ok(TransferTiming { started: None, completed: None })
    }

    /// Reads `STATUS`; a FIFO error or a refused start aborts the burst.
    #[inline]
    fn status(&mut self) -> Result<u32, ControllerFault> {
        let status = self.block.read(regs::STATUS);
        if status & regs::STATUS_ERR != 0 {
            return Err(self.fail(ControllerFault::Fault("FIFO error or refused start (STATUS.ERR)")));
        }
        Ok(status)
    }

    /// A polled burst found nothing to do. The status read paces the loop;
    /// a pause hint would only delay noticing the last word. The first idle
    /// poll starts the timeout, every 256th checks it.
    #[inline]
    pub(super) fn idle(&mut self, spins: &mut u32, timeout: &mut Timeout) -> Result<(), ControllerFault> {
        *spins = spins.wrapping_add(1);
        if *spins % 256 == 1 && timeout.deadline().is_past() {
            return Err(self.fail(ControllerFault::Timeout));
        }
        Ok(())
    }

    /// Pushes as many of words `pushed..end` as the TX FIFO has room for
    /// (`popped` words have come back); returns the new `pushed`.
    fn refill(&mut self, data: &Data<'_>, pushed: usize, popped: usize, end: usize, status: u32, wb: usize) -> usize {
        let depth = self.depth(wb);
        let in_flight = pushed - popped;
        let room = depth.saturating_sub(regs::tx_level(status) as usize).min(depth - in_flight.min(depth));
        let to = (pushed + room).min(end);
        // RX words stored so far lie before `popped` ≤ `pushed`, so an
        // in-place buffer's bytes from `pushed` on are still TX data.
        self.push(data.tx(), pushed..to, wb);
        to
    }

    /// Aborts the burst after `fault`.
    #[cold]
    #[inline(never)]
    pub(super) fn fail(&mut self, fault: ControllerFault) -> ControllerFault {
        self.abort();
        fault
    }

    /// Pops words `words` from the RX FIFO into `data` (dropped for a write).
    fn drain(&self, data: &mut Data<'_>, words: Range<usize>, wb: usize) {
        match data.rx_mut() {
            Some(buf) if wb == 1 => self.block.read_fifo_bytes(&mut buf[words]),
            Some(buf) => {
                for i in words {
                    rx_store(buf, i, wb, self.block.read(regs::RXDATA));
                }
            }
            None => self.block.drop_fifo(words.len()),
        }
    }
}

impl Controller for LabSpi {
    fn caps(&self) -> &ControllerCaps {
        &self.caps
    }

    fn configure(&mut self, mode: Mode, speed_hz: u32, bits: u8) {
        let (cpol, cpha) = mode.bits();
        let mut ctrl = regs::CTRL_EN | (u32::from(bits.clamp(1, 32) - 1) << regs::CTRL_BPW_SHIFT);
        if cpol {
            ctrl |= regs::CTRL_CPOL;
        }
        if cpha {
            ctrl |= regs::CTRL_CPHA;
        }
        self.block.write(regs::CTRL, ctrl);
        let div = self.caps.divider(speed_hz);
        self.block.write(regs::CLKDIV, div);
        if let ClockModel::Divider { base_hz, .. } = self.caps.clock {
            self.word_ns = word_ns(bits.clamp(1, 32), div, base_hz);
        }
    }

    fn set_cs(&mut self, cs: u8, active: bool) {
        let v = u32::from(cs) & regs::CS_LINE_MASK | if active { regs::CS_ASSERT } else { 0 };
        self.block.write(regs::CS, v);
    }

    fn preload(&mut self, data: &Data<'_>, bits: u8) -> usize {
        let wb = word_bytes(bits);
        let words = (data.len() / wb).min(MAX_BURST_WORDS);
        let n = words.min(self.depth(wb));
        self.block.write(regs::XFERLEN, words as u32);
        self.push(data.tx(), 0..n, wb);
        self.preloaded = n;
        n
    }

    fn abort(&mut self) {
        self.block.write(regs::IRQEN, 0);
        self.block.write(regs::RESET, 1);
        self.preloaded = 0;
    }

    fn discard_preload(&mut self) {
        if self.preloaded > 0 {
            // Nothing is shifting (no START since the preload): RESET only empties the FIFOs.
            self.block.write(regs::RESET, 1);
            self.preloaded = 0;
        }
    }

    fn transfer(
        &mut self,
        data: &mut Data<'_>,
        bits: u8,
        preloaded: usize,
        completion: Completion,
        timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let wb = word_bytes(bits);
        let n = data.len() / wb;
        let mut timeout = Timeout::new(timeout_ns);
        let mut preloaded = preloaded.min(self.preloaded);
        self.preloaded = 0;
        if preloaded == n && completion == Completion::Poll {
            return self.shift_preloaded(data, n, wb, &mut timeout, in_flight);
        }
        let completion = match completion {
            Completion::Timed if n <= self.depth(wb) => {
                if preloaded < n {
                    self.block.write(regs::XFERLEN, n as u32);
                    self.push(data.tx(), preloaded..n, wb);
                }
                return self.shift_timed(data, n, wb, &mut timeout, in_flight);
            }
            // Refills need the CPU before the end: no end to sleep until.
            Completion::Timed => Completion::Irq,
            other => other,
        };
        let mut timing = TransferTiming { started: None, completed: None };
        let mut from = 0;
        // CS stays active between bursts: a longer transfer only pauses SCLK.
        while from < n {
            let to = (from + MAX_BURST_WORDS).min(n);
            let burst = self.burst(data, from..to, wb, preloaded, completion, &mut timeout, in_flight)?;
            timing.started = timing.started.or(burst.started);
            timing.completed = burst.completed;
            preloaded = 0;
            from = to;
        }
        Ok(timing)
    }

    fn dma(&self) -> Option<DmaSupport> {
        let domain = self.dma.clone()?;
        Some(DmaSupport { domain, min_len: self.fifo_bytes + 1 })
    }

    unsafe fn transfer_dma(
        &mut self,
        len: usize,
        bits: u8,
        addrs: DmaAddrs,
        completion: Completion,
        timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        if self.dma.is_none() {
            return Err(ControllerFault::Fault("this driver was made without DMA (LabSpi::pio_only)"));
        }
        let wb = word_bytes(bits);
        let mut timeout = Timeout::new(timeout_ns);
        // SAFETY: forwarded from the caller.
        unsafe { self.dma_transfer(len / wb, wb, addrs, completion, &mut timeout, in_flight) }
    }

    fn set_power(&mut self, on: bool) {
        if on {
            self.block.write(regs::PWR, regs::PWR_ON);
            let limit = Deadline::after_ns(1_000_000_000);
            while self.block.read(regs::STATUS) & regs::STATUS_READY == 0 && !limit.is_past() {
                std::hint::spin_loop();
            }
            self.block.write(regs::CTRL, regs::CTRL_EN | (7 << regs::CTRL_BPW_SHIFT));
        } else {
            self.block.write(regs::PWR, 0);
        }
    }
}
