//! The WSPI block's state, computed lazily from timestamps.
//!
//! The shifter is never "run": each register access first [`Model::advance`]s
//! the model to the access's instant, working out which words have started and
//! finished since the last access (word k starts at the latest of: the end of
//! word k−1, the instant it was pushed, and the instant the RX FIFO had room
//! for it) and handing finished words to the selected device, a run of words
//! back to back in one call ([`Ended`]). A DMA burst
//! is worked out by the block's [`DmaEngine`] instead of the FIFOs.

use super::dma::{DmaEngine, Step};
use super::dma_memory::Chunk;
use super::faults::InjectedFaults;
use super::fifo_run::Ended;
use super::lane::Lane;
use super::regs::*;
use super::{SpiControllerConfig, SpiDeviceModel};
use crate::irq::IrqLine;
use crate::lab::Lab;
use crate::trace::{Recorder, TraceEvent, GPIO_CS_BASE};
use std::collections::VecDeque;
use wirespeed_time::{now, Instant};

struct Burst {
    len: u32,
    bits: u8,
    word_ns: u64,
    scheduled: u32,
    done: u32,
    last_end: Instant,
    /// Set when a word could not be scheduled because the RX FIFO was full;
    /// the next word then cannot start before the pop that made room.
    rx_stalled: bool,
    /// An injected stall ([`InjectedFaults`]): no word shifts until `RESET`.
    stalled: bool,
}

struct InFlight {
    mosi: u32,
    start: Instant,
    end: Instant,
}

/// The words the block has clocked since it was created, and their wire
/// time: what a logic analyser on SCLK would add up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clocked {
    /// Words shifted (FIFO and DMA).
    pub words: u64,
    /// Their bits.
    pub bits: u64,
    /// Their wire time, ns (each word's first bit to its last).
    pub wire_ns: u64,
}

impl std::ops::Add for Clocked {
    type Output = Clocked;
    fn add(self, o: Clocked) -> Clocked {
        Clocked { words: self.words + o.words, bits: self.bits + o.bits, wire_ns: self.wire_ns + o.wire_ns }
    }
}

impl Clocked {
    /// What was clocked between `earlier` (a reading of the same block)
    /// and `self`.
    pub fn since(self, earlier: Clocked) -> Clocked {
        Clocked {
            words: self.words.saturating_sub(earlier.words),
            bits: self.bits.saturating_sub(earlier.bits),
            wire_ns: self.wire_ns.saturating_sub(earlier.wire_ns),
        }
    }
}

/// What a logic analyser on the wires sees: the trace, while one records,
/// and the running totals.
#[derive(Default)]
pub(super) struct Analyser {
    pub(super) trace: Recorder,
    pub(super) clocked: Clocked,
}

impl Analyser {
    /// Words clocked back to back, the first starting at `start`.
    fn words<W: Lane>(&mut self, mosi: &[W], miso: &[W], bits: u8, start: Instant, word_ns: u64) {
        let n = miso.len() as u64;
        self.clocked.words += n;
        self.clocked.bits += n * u64::from(bits);
        self.clocked.wire_ns = self.clocked.wire_ns.saturating_add(n.saturating_mul(word_ns));
        if self.trace.is_enabled() {
            let mut start = start;
            for (&mosi, &miso) in mosi.iter().zip(miso) {
                let end = start.add_ns(word_ns);
                let (mosi, miso) = (mosi.into(), miso.into());
                self.trace.record(TraceEvent::Word { start, end, bits, mosi, miso: miso & word_mask(bits) });
                start = end;
            }
        }
    }
}

struct External {
    device: Box<dyn SpiDeviceModel>,
    selected: bool,
    /// The SCLK last reported to the device (0: never).
    sclk_told: u64,
}

pub(super) struct Model {
    fifo_bytes: u32,
    base_clock_hz: u64,
    power_up_ns: u64,
    instant_wire: bool,
    ctrl: u32,
    clkdiv: u32,
    cs: u32,
    xferlen: u32,
    irqen: u32,
    rxthr: u32,
    powered: bool,
    ready_at: Instant,
    done_flag: bool,
    err: bool,
    burst: Option<Burst>,
    tx: VecDeque<(u32, Instant)>,
    inflight: VecDeque<InFlight>,
    rx: VecDeque<u32>,
    popped_in_burst: u32,
    devices: Vec<Option<Box<dyn SpiDeviceModel>>>,
    /// Per native chip select: the SCLK last reported to its device (0: never).
    sclk_told: Vec<u64>,
    external: Vec<External>,
    pub(super) analyser: Analyser,
    pub(super) power_ups: u64,
    pub(super) dma: DmaEngine,
    /// The DMA chunks being worked out, one per width (allocated once: a
    /// poll during a burst does not clear kilobytes of stack); the 32-bit
    /// one also gathers a FIFO burst's runs of words ([`Ended`]).
    byte_chunk: Chunk<u8>,
    word_chunk: Chunk<u32>,
    pub(super) faults: InjectedFaults,
    /// When the pending interrupt check runs (a check that finds the
    /// state changed is harmless, so a superseded one is never cancelled).
    check_at: Option<Instant>,
    /// An instant the model read the clock at, the latest it keeps: a
    /// `STATUS` read whose answer cannot depend on the time uses it
    /// instead of reading the clock (see [`Model::quiet`]).
    seen: Instant,
}

/// What [`Model::update_irq`] leaves for after the model's lock: waking the
/// line's waiters and arming a check (which may wake the interrupt thread)
/// are system calls, too slow to make while other threads spin on the lock.
#[must_use]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct IrqEffects {
    /// The line rose: wake its waiters.
    pub wake: bool,
    /// Arm an interrupt check at this instant.
    pub check_at: Option<Instant>,
}

/// How long a word of `bits` bits takes at SCLK = `base_hz` / `clkdiv`:
/// bits × CLKDIV base-clock periods, rounded up to a whole ns (never early),
/// saturating at the end of time for a sub-hertz clock.
fn word_ns(bits: u8, clkdiv: u32, base_hz: u64) -> u64 {
    let ns = (u128::from(bits) * u128::from(clkdiv.max(2)) * 1_000_000_000).div_ceil(u128::from(base_hz.max(1)));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// The low `bits` bits of a word (1 ≤ `bits` ≤ 32): what a device's answer keeps.
pub(super) fn word_mask(bits: u8) -> u32 {
    u32::MAX >> (32 - u32::from(bits))
}

fn bits_of(ctrl: u32) -> u8 {
    (((ctrl >> CTRL_BPW_SHIFT) & CTRL_BPW_MASK) + 1) as u8
}

/// `dev`'s answers to `mosi`: a FIFO's single word through
/// [`SpiDeviceModel::exchange`], a DMA chunk through its lane's burst call
/// ([`SpiDeviceModel::exchange_bytes`] or [`SpiDeviceModel::exchange_burst`]).
#[inline(always)]
fn exchange<W: Lane>(dev: &mut dyn SpiDeviceModel, mosi: &[W], miso: &mut [W], timing: (u8, Instant, u64)) {
    match (mosi, &mut *miso) {
        ([m], [r]) => *r = W::from_word(dev.exchange((*m).into(), timing.0, timing.1)),
        _ => W::exchange_burst(dev, mosi, miso, timing),
    }
}

/// What a DMA step did.
enum Chunked {
    /// A chunk shifted; the burst ended with it or goes on.
    Shifted { burst_ended: bool },
    /// The burst stopped on a fault.
    Fault,
    /// Nothing more happens by the instant asked.
    Wait,
}

/// The block's wires: its chip select, the devices on it and the
/// analyser, borrowed apart from the rest of the model.
pub(super) struct Wires<'a> {
    cs: u32,
    devices: &'a mut [Option<Box<dyn SpiDeviceModel>>],
    external: &'a mut [External],
    analyser: &'a mut Analyser,
}

impl Wires<'_> {
    /// Words on the wires, back to back, the first starting at `start`: the
    /// selected devices receive `mosi` (the native one answers, else the first
    /// selected external one; nobody: all ones), and the analyser sees them.
    /// Their answers go to `miso` (as long as `mosi`; so is `unheard`, where
    /// a second selected device's go) as the device gave them, bits above `bits`
    /// included: whoever keeps them masks them with [`word_mask`] (the RX
    /// FIFO, the DMA engine's store, the trace), so that a DMA chunk is not
    /// walked once more for it. Inlined at both callers: called out of line, the
    /// FIFO path's one-word calls cost about 70 more instructions a word
    /// (callgrind, `scripts/instructions`).
    #[inline(always)]
    pub(super) fn shift<W: Lane>(
        &mut self,
        mosi: &[W],
        miso: &mut [W],
        unheard: &mut [W],
        (bits, start, word_ns): (u8, Instant, u64),
    ) {
        let native = self.cs & CS_ASSERT != 0;
        let line = (self.cs & CS_LINE_MASK) as usize;
        let mut answered = false;
        if native {
            if let Some(Some(d)) = self.devices.get_mut(line) {
                exchange(d.as_mut(), mosi, miso, (bits, start, word_ns));
                answered = true;
            }
        }
        for e in self.external.iter_mut().filter(|e| e.selected) {
            if answered {
                exchange(e.device.as_mut(), mosi, &mut unheard[..mosi.len()], (bits, start, word_ns));
            } else {
                exchange(e.device.as_mut(), mosi, miso, (bits, start, word_ns));
                answered = true;
            }
        }
        if !answered {
            miso.fill(W::from_word(word_mask(bits)));
        }
        self.analyser.words(mosi, miso, bits, start, word_ns);
    }

    /// The DMA engine's next step as of `t`, its words worked in `chunk`.
    fn dma_chunk<W: Lane>(&mut self, dma: &mut DmaEngine, chunk: &mut Chunk<W>, t: Instant) -> Chunked {
        match dma.step(t, W::CHUNK) {
            Step::Words { n, bits, start, word_ns, memory } => {
                let words = (bits, start, word_ns);
                let wires = |mosi: &[W], miso: &mut [W], unheard: &mut [W]| self.shift(mosi, miso, unheard, words);
                // SAFETY: the engine gives the host addresses of words in a
                // descriptor's buffers, on pages it translated (a chunk ends
                // before the next page): without translation,
                // `load_dma_descriptor`'s contract keeps them valid until the
                // burst ends; with it, `Iommu::map`'s contract keeps a page
                // valid while it is mapped, which the IOMMU cannot change while
                // the block's lock is held (it settles the block first), and a
                // page reached through a stale entry gives no address.
                unsafe { chunk.shift(n, memory, word_mask(bits), wires) };
                Chunked::Shifted { burst_ended: dma.finish_words(n) }
            }
            Step::Fault => Chunked::Fault,
            Step::Wait => Chunked::Wait,
        }
    }
}

impl Model {
    pub(super) fn new(cfg: &SpiControllerConfig, lab: &Lab) -> Model {
        Model {
            fifo_bytes: cfg.fifo_bytes,
            base_clock_hz: cfg.base_clock_hz,
            power_up_ns: cfg.power_up_ns,
            instant_wire: lab.config().instant_wire,
            ctrl: 7 << CTRL_BPW_SHIFT,
            clkdiv: 2,
            cs: 0,
            xferlen: 1,
            irqen: 0,
            rxthr: 1,
            powered: true,
            ready_at: Instant::ZERO,
            done_flag: false,
            err: false,
            burst: None,
            tx: VecDeque::with_capacity(cfg.fifo_bytes as usize),
            inflight: VecDeque::with_capacity(cfg.fifo_bytes as usize),
            rx: VecDeque::with_capacity(cfg.fifo_bytes as usize),
            popped_in_burst: 0,
            devices: (0..cfg.num_cs).map(|_| None).collect(),
            sclk_told: vec![0; cfg.num_cs as usize],
            external: Vec::new(),
            analyser: Analyser::default(),
            power_ups: 0,
            dma: DmaEngine::new(),
            byte_chunk: Chunk::new(),
            word_chunk: Chunk::new(),
            faults: InjectedFaults::default(),
            check_at: None,
            seen: Instant::ZERO,
        }
    }

    pub(super) fn attach(&mut self, cs: u8, device: Box<dyn SpiDeviceModel>) {
        self.devices[cs as usize] = Some(device);
        self.sclk_told[cs as usize] = 0;
    }

    pub(super) fn attach_external(&mut self, device: Box<dyn SpiDeviceModel>) -> usize {
        self.external.push(External { device, selected: false, sclk_told: 0 });
        self.external.len() - 1
    }

    fn depth_words(&self, bits: u8) -> u32 {
        self.fifo_bytes / u32::from(bits.div_ceil(8)).next_power_of_two()
    }

    fn current_depth(&self) -> u32 {
        match &self.burst {
            Some(b) => self.depth_words(b.bits),
            None => self.idle_depth(),
        }
    }

    /// The FIFO's depth while no burst runs: for the word size `CTRL` sets.
    fn idle_depth(&self) -> u32 {
        self.depth_words(bits_of(self.ctrl))
    }

    fn native_selected(&self) -> Option<usize> {
        (self.cs & CS_ASSERT != 0).then_some((self.cs & CS_LINE_MASK) as usize)
    }

    /// Works out everything that happened on the wire up to `t`.
    pub(super) fn advance(&mut self, t: Instant) {
        if self.burst.is_none() {
            if self.dma.busy() {
                self.advance_dma(t);
            }
            return;
        }
        let depth = self.current_depth();
        let Some(b) = self.burst.as_mut() else { return };
        if b.stalled {
            return;
        }
        let Model { cs, devices, external, analyser, tx, inflight, rx, word_chunk, popped_in_burst, done_flag, .. } =
            self;
        let wires = Wires { cs: *cs, devices, external, analyser };
        let mut ended = Ended::new(wires, word_chunk, rx, (b.bits, b.word_ns));
        while let Some(f) = inflight.front().filter(|f| f.end <= t) {
            ended.word(f.mosi, f.start, f.end);
            inflight.pop_front();
        }
        // Scheduling a word waits for its push and for RX room, never for
        // an earlier word to end. A word that ended by `t`, with none still
        // shifting before it, goes straight to the devices.
        while b.scheduled < b.len {
            let Some(&(mosi, pushed)) = tx.front() else { break };
            if b.scheduled - *popped_in_burst >= depth {
                b.rx_stalled = true;
                break;
            }
            tx.pop_front();
            let mut start = b.last_end.max(pushed);
            if b.rx_stalled {
                start = start.max(t);
                b.rx_stalled = false;
            }
            let end = start.add_ns(b.word_ns);
            if end <= t && inflight.is_empty() {
                ended.word(mosi, start, end);
            } else {
                inflight.push_back(InFlight { mosi, start, end });
            }
            b.last_end = end;
            b.scheduled += 1;
        }
        b.done += ended.finish();
        if b.done == b.len {
            *done_flag = true;
            self.burst = None;
        }
    }

    /// [`Model::advance`] for a DMA burst.
    fn advance_dma(&mut self, t: Instant) {
        let Model { cs, devices, external, analyser, dma, byte_chunk, word_chunk, .. } = self;
        let mut wires = Wires { cs: *cs, devices, external, analyser };
        loop {
            let chunked =
                if dma.byte_wide() { wires.dma_chunk(dma, byte_chunk, t) } else { wires.dma_chunk(dma, word_chunk, t) };
            match chunked {
                Chunked::Shifted { burst_ended } => self.done_flag |= burst_ended,
                Chunked::Fault => {
                    self.err = true;
                    return;
                }
                Chunked::Wait => return,
            }
        }
    }

    /// When word `k` of the running burst will end if software does nothing more.
    fn predicted_end(&self, k: u32) -> Option<Instant> {
        let b = self.burst.as_ref()?;
        if k >= b.len || b.stalled {
            return None;
        }
        if k < b.scheduled {
            let idx = (k - b.done) as usize;
            return self.inflight.get(idx).map(|f| f.end);
        }
        let depth = self.current_depth();
        let mut last = b.last_end;
        for (scheduled, &(_, pushed)) in (b.scheduled..).zip(self.tx.iter()) {
            if scheduled - self.popped_in_burst >= depth || b.rx_stalled {
                return None;
            }
            last = last.max(pushed).add_ns(b.word_ns);
            if scheduled == k {
                return Some(last);
            }
        }
        None
    }

    /// Words in the TX FIFO at `t` (after [`Model::advance`] to `t`): those
    /// not yet scheduled, and those scheduled to start shifting after `t`.
    #[inline]
    fn tx_level(&self, t: Instant) -> usize {
        let waiting = match self.inflight.back() {
            // Usual: nothing scheduled, or all of it already shifting.
            None => 0,
            Some(last) if last.start <= t => 0,
            Some(_) => self.inflight.len() - self.inflight.partition_point(|f| f.start <= t),
        };
        self.tx.len() + waiting
    }

    fn status(&self, t: Instant) -> u32 {
        let mut s = 0;
        if self.burst.is_some() || self.dma.busy() {
            s |= STATUS_BUSY;
        }
        if self.dma.faulted() {
            s |= STATUS_DMAFAULT;
        }
        if self.done_flag {
            s |= STATUS_DONE;
        }
        if self.powered && t >= self.ready_at {
            s |= STATUS_READY;
        }
        if self.err {
            s |= STATUS_ERR;
        }
        // The level fields are 8 bits wide: a deeper FIFO reads 255 until it drains below.
        let level = |n: usize| n.min(0xFF) as u32;
        s | level(self.tx_level(t)) << STATUS_TXLVL_SHIFT | level(self.rx.len()) << STATUS_RXLVL_SHIFT
    }

    fn irq_pending(&self) -> u32 {
        let mut p = 0;
        if self.done_flag {
            p |= IRQ_DONE;
        }
        if self.rx.len() as u32 >= self.rxthr.max(1) {
            p |= IRQ_RXTH;
        }
        if self.err {
            p |= IRQ_ERR;
        }
        p
    }

    pub(super) fn read(&mut self, reg: u32) -> u32 {
        match reg {
            STATUS => {
                let t = if self.quiet() { self.seen } else { self.see_now() };
                self.advance(t);
                self.status(t)
            }
            RXDATA => self.pop_rx(),
            IRQSTAT => {
                self.advance(now());
                self.irq_pending()
            }
            CTRL => self.ctrl,
            CLKDIV => self.clkdiv,
            CS => self.cs,
            XFERLEN => self.xferlen,
            IRQEN => self.irqen,
            RXTHR => self.rxthr,
            PWR => u32::from(self.powered),
            ID => ID_VALUE,
            FIFOSIZE => self.fifo_bytes,
            BASECLK => self.base_clock_hz.min(u64::from(u32::MAX)) as u32,
            DMAFAULT_LO | DMAFAULT_HI => {
                self.advance(now());
                self.dma.read(reg)
            }
            DMACTRL | DMATX_LO | DMATX_HI | DMARX_LO | DMARX_HI => self.dma.read(reg),
            _ => 0,
        }
    }

    /// One `RXDATA` read per item of `into`, handed to `each` with its
    /// word, `before_each` run before each read (the register's latency):
    /// that many [`read`](Model::read)s without the register dispatch.
    pub(super) fn read_rx<T>(
        &mut self,
        into: impl IntoIterator<Item = T>,
        mut before_each: impl FnMut(),
        mut each: impl FnMut(T, u32),
    ) {
        for item in into {
            before_each();
            each(item, self.pop_rx());
        }
    }

    /// `words` written to `TXDATA` one after another, `before_each` run
    /// before each write (the register's latency): that many
    /// [`write`](Model::write)s without the register dispatch.
    pub(super) fn write_tx(&mut self, words: impl IntoIterator<Item = u32>, mut before_each: impl FnMut()) {
        // Nothing here writes CTRL: the idle depth holds for every push
        // (a burst running now may end between two of them).
        let idle_depth = self.idle_depth();
        for w in words {
            before_each();
            self.push_tx(w, idle_depth);
        }
    }

    /// A read of `RXDATA`.
    #[inline(always)]
    fn pop_rx(&mut self) -> u32 {
        // A word already in the RX FIFO can be popped without knowing
        // the time, unless the pop releases a shifter stalled on a full FIFO.
        let stalled = self.burst.as_ref().is_some_and(|b| b.rx_stalled);
        if !stalled {
            if let Some(w) = self.rx.pop_front() {
                self.popped_in_burst += 1;
                return w;
            }
        }
        let t = now();
        self.advance(t);
        match self.rx.pop_front() {
            Some(w) => {
                self.popped_in_burst += 1;
                self.advance(t);
                w
            }
            None => {
                self.err = true;
                0
            }
        }
    }

    /// A write of `v` to `TXDATA`; `idle_depth` is [`Model::idle_depth`].
    #[inline(always)]
    fn push_tx(&mut self, v: u32, idle_depth: u32) {
        if self.burst.is_none() {
            // Pushes before a burst starts need no timestamp: they wait for START.
            self.enqueue_tx(v, Instant::ZERO, idle_depth);
            return;
        }
        let t = now();
        self.advance(t);
        if self.enqueue_tx(v, t, self.current_depth()) {
            self.advance(t);
        }
    }

    /// Puts `v`, pushed at `t`, in the TX FIFO if it has room below
    /// `depth` (else flags the overflow); says whether it did.
    #[inline(always)]
    fn enqueue_tx(&mut self, v: u32, t: Instant, depth: u32) -> bool {
        if self.tx_level(t) as u32 >= depth {
            self.err = true;
            return false;
        }
        self.tx.push_back((v, t));
        true
    }

    pub(super) fn write(&mut self, reg: u32, v: u32) {
        match reg {
            TXDATA => self.push_tx(v, self.idle_depth()),
            START if v & START_GO != 0 => self.start(),
            CS => {
                let v = v & (CS_LINE_MASK | CS_ASSERT);
                if v & CS_ASSERT != 0 && (v & CS_LINE_MASK) as usize >= self.devices.len() {
                    // No such line to drive: refused, like a START that cannot run.
                    self.err = true;
                    return;
                }
                let t = now();
                self.advance(t);
                let old = self.native_selected();
                self.cs = v;
                let new = self.native_selected();
                if old != new {
                    if let Some(l) = old {
                        self.native_cs_edge(l, false, t);
                    }
                    if let Some(l) = new {
                        self.native_cs_edge(l, true, t);
                    }
                }
            }
            CTRL => self.ctrl = v,
            CLKDIV => self.clkdiv = v,
            XFERLEN => self.xferlen = v & 0xFF_FFFF,
            IRQEN => self.irqen = v & (IRQ_DONE | IRQ_RXTH | IRQ_ERR),
            IRQSTAT if v & IRQ_DONE != 0 => {
                // A burst that ended before the write is done, and cleared by it.
                self.advance(now());
                self.done_flag = false;
            }
            RXTHR => self.rxthr = v.max(1),
            DMACTRL => self.dma.write_ctrl(v),
            PWR => {
                let on = v & PWR_ON != 0;
                if on && !self.powered {
                    self.ready_at = now().add_ns(self.power_up_ns);
                    self.power_ups += 1;
                }
                self.powered = on;
            }
            RESET if v & 1 != 0 => {
                // Words that shifted before the reset reached the device.
                self.advance(now());
                self.burst = None;
                self.tx.clear();
                self.inflight.clear();
                self.rx.clear();
                self.err = false;
                self.done_flag = false;
                self.dma.reset();
            }
            // The DMA address registers are read only: a descriptor loads them.
            _ => {}
        }
    }

    fn native_cs_edge(&mut self, line: usize, asserted: bool, t: Instant) {
        if let Some(Some(d)) = self.devices.get_mut(line) {
            d.chip_select(asserted, t);
        }
        self.analyser.trace.record(TraceEvent::Cs { line: line as u8, asserted, at: t });
    }

    pub(super) fn external_cs(&mut self, index: usize, asserted: bool, t: Instant) {
        self.advance(t);
        let e = &mut self.external[index];
        if e.selected != asserted {
            e.selected = asserted;
            e.device.chip_select(asserted, t);
            self.analyser.trace.record(TraceEvent::Cs { line: GPIO_CS_BASE + index as u8, asserted, at: t });
        }
    }

    /// Tells the selected devices the SCLK of the burst starting, if it
    /// changed since they were last told.
    fn tell_sclk(&mut self) {
        let hz = self.base_clock_hz / u64::from(self.clkdiv.max(2));
        if let Some(line) = self.native_selected() {
            if self.sclk_told[line] != hz {
                if let Some(Some(d)) = self.devices.get_mut(line) {
                    d.sclk_hz(hz);
                    self.sclk_told[line] = hz;
                }
            }
        }
        for e in self.external.iter_mut().filter(|e| e.selected && e.sclk_told != hz) {
            e.device.sclk_hz(hz);
            e.sclk_told = hz;
        }
    }

    fn start(&mut self) {
        let t = self.see_now();
        self.advance(t);
        if self.burst.is_some() || self.dma.busy() || !self.powered || t < self.ready_at || self.xferlen == 0 {
            self.err = true;
            return;
        }
        if self.faults.take_refusal() {
            self.err = true;
            return;
        }
        self.tell_sclk();
        let bits = bits_of(self.ctrl);
        let word_ns = if self.instant_wire { 0 } else { word_ns(bits, self.clkdiv, self.base_clock_hz) };
        if self.dma.armed() {
            if !self.dma.start(self.xferlen, bits, word_ns, self.instant_wire, t) {
                self.err = true;
                return;
            }
            self.done_flag = false;
            self.advance(t);
            return;
        }
        self.done_flag = false;
        self.popped_in_burst = 0;
        self.rx.clear();
        let stalled = self.faults.take_stall();
        self.burst = Some(Burst {
            len: self.xferlen,
            bits,
            word_ns,
            scheduled: 0,
            done: 0,
            last_end: t,
            rx_stalled: false,
            stalled,
        });
        self.advance(t);
    }

    /// Reads the clock, and keeps the reading as [`Model::seen`].
    fn see_now(&mut self) -> Instant {
        self.seen = now();
        self.seen
    }

    /// Whether the block's state holds still whatever the time from
    /// [`Model::seen`] on: no burst shifts (FIFO or DMA) and power-up, if
    /// any, has ended by then. `STATUS` then reads the same at `seen` as
    /// now, so it needs no clock read: a burst that an instant wire ended
    /// at its start costs the poll that sees it done none.
    fn quiet(&self) -> bool {
        self.burst.is_none() && !self.dma.busy() && (!self.powered || self.ready_at <= self.seen)
    }

    /// The interrupt check armed for `due` ran.
    pub(super) fn check_fired(&mut self, due: Instant) {
        if self.check_at == Some(due) {
            self.check_at = None;
        }
        self.advance(now());
    }

    /// Drives the IRQ line's level from the current state, and says what is
    /// left to do once the lock is released: waking the line's waiters, and
    /// when the interrupt thread must look again because an enabled source
    /// will fire then.
    pub(super) fn update_irq(&mut self, line: &IrqLine) -> IrqEffects {
        if self.irqen == 0 {
            if line.is_raised() {
                line.lower();
            }
            self.check_at = None;
            return IrqEffects::default();
        }
        if self.irq_pending() & self.irqen != 0 {
            return IrqEffects { wake: line.set_raised(), check_at: None };
        }
        if line.is_raised() {
            line.lower();
        }
        let mut due: Option<Instant> = None;
        if let Some(b) = &self.burst {
            if self.irqen & IRQ_DONE != 0 {
                due = self.predicted_end(b.len - 1);
            }
            if self.irqen & IRQ_RXTH != 0 {
                let k = self.popped_in_burst.saturating_add(self.rxthr.max(1) - 1);
                if let Some(e) = self.predicted_end(k.min(b.len - 1)) {
                    due = Some(due.map_or(e, |d| d.min(e)));
                }
            }
        }
        if let Some(e) = self.dma.next_event(self.irqen & IRQ_DONE != 0, self.irqen & IRQ_ERR != 0) {
            due = Some(due.map_or(e, |d| d.min(e)));
        }
        let arm = due.filter(|&d| self.check_at != Some(d));
        self.check_at = due;
        IrqEffects { wake: false, check_at: arm }
    }
}
