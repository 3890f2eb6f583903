//! The WSPI block's DMA engine: its registers, and a DMA burst worked out
//! lazily from timestamps, a chunk of words at a time, as [`Model::advance`](super::model::Model::advance)
//! asks for it (the programming model is in [`regs`](super::regs)).
//!
//! Word k of a burst starts at the burst's start + k × the word time, plus
//! the walks the engine met so far. The engine translates a buffer's page
//! when the burst reaches its first word there, once per page and direction
//! (again after an `unmap` or an invalidation during the burst: the
//! engine's copy of a translation is dropped with the IOTLB's);
//! a walk delays that word by its walk time, a fault ends the burst at the
//! instant the walk ends.

use super::dma_memory::ChunkMemory;
use super::regs::*;
use crate::iommu::{DmaFault, Iommu, PAGE_SIZE};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wirespeed_time::Instant;

/// Where a DMA burst's buffers are, in device addresses (IOVAs when an IOMMU
/// translates, host addresses otherwise). `None`: no DMA in that direction
/// (TX words are zeros, RX words are discarded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaDescriptor {
    /// The TX buffer: words the device is sent.
    pub tx: Option<u64>,
    /// The RX buffer: words the device answers.
    pub rx: Option<u64>,
}

/// Bytes a word of `bits` bits takes in memory (and in the FIFO).
fn word_bytes(bits: u8) -> u64 {
    match bits {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

/// The buffer page the engine translated last.
#[derive(Clone, Copy)]
struct Page {
    /// Device page number.
    vpn: u64,
    /// Host address of the page's first byte.
    host: u64,
    /// Reached through a stale IOTLB entry: memory is not touched.
    stale: bool,
}

/// One direction of a running burst.
struct Stream {
    base: u64,
    /// The device writes this buffer (RX).
    write: bool,
    page: Option<Page>,
}

impl Stream {
    fn addr(&self, k: u32, bytes: u64) -> u64 {
        self.base + u64::from(k) * bytes
    }

    /// Makes sure the page of word `k` is translated; returns the walk's lab time.
    fn reach(&mut self, k: u32, bytes: u64, iommu: Option<&Iommu>) -> Result<u64, DmaFault> {
        let addr = self.addr(k, bytes);
        let vpn = addr / PAGE_SIZE;
        if self.page.is_some_and(|p| p.vpn == vpn) {
            return Ok(0);
        }
        let (phys, walk_ns, stale) = match iommu {
            None => (addr, 0, false),
            Some(m) => {
                let t = m.translate_mapped(addr, self.write)?;
                (t.phys, t.walk_ns, t.stale)
            }
        };
        self.page = Some(Page { vpn, host: phys - phys % PAGE_SIZE, stale });
        Ok(walk_ns)
    }

    /// The host address of word `k`, or `None` through a stale entry.
    fn host(&self, k: u32, bytes: u64) -> Option<u64> {
        let p = self.page.filter(|p| !p.stale)?;
        Some(p.host + self.addr(k, bytes) % PAGE_SIZE)
    }

    /// The index of the first word after `k` on another page.
    fn next_page_word(&self, k: u32, bytes: u64) -> u64 {
        match self.page {
            None => u64::from(k),
            // The page may be the address space's last: its end is 2^64.
            Some(p) => ((u128::from(p.vpn + 1) * u128::from(PAGE_SIZE) - u128::from(self.base)) / u128::from(bytes))
                .try_into()
                .unwrap_or(u64::MAX),
        }
    }
}

/// A running DMA burst.
struct Run {
    len: u32,
    bits: u8,
    bytes: u64,
    word_ns: u64,
    /// `instant_wire`: walks take no time either.
    instant: bool,
    /// The next word to complete, and when it starts.
    next: u32,
    next_start: Instant,
    tx: Option<Stream>,
    rx: Option<Stream>,
    /// The IOMMU that translates the burst's addresses; `None`: they are host addresses.
    iommu: Option<Iommu>,
    /// A fault met, and the instant it stops the burst.
    fault: Option<(DmaFault, Instant)>,
    /// Words before this one lie on pages both streams have translated:
    /// they need no [`reach_pages`](Run::reach_pages).
    reached_until: u64,
}

impl Run {
    fn walk(&self, ns: u64) -> u64 {
        if self.instant {
            0
        } else {
            ns
        }
    }

    /// Translates the pages of word `next` not yet translated (TX first),
    /// moving its start past the walks; a fault is noted with its instant.
    fn reach_pages(&mut self) {
        if u64::from(self.next) < self.reached_until {
            return;
        }
        for write in [false, true] {
            let stream = if write { self.rx.as_mut() } else { self.tx.as_mut() };
            let Some(stream) = stream else { continue };
            match stream.reach(self.next, self.bytes, self.iommu.as_ref()) {
                Ok(walk_ns) => self.next_start = self.next_start.add_ns(self.walk(walk_ns)),
                Err(f) => {
                    let walk_ns = self.iommu.as_ref().map_or(0, |m| m.config().walk_ns);
                    self.fault = Some((f, self.next_start.add_ns(self.walk(walk_ns))));
                    return;
                }
            }
        }
        self.reached_until = [&self.tx, &self.rx]
            .into_iter()
            .flatten()
            .map(|s| s.next_page_word(self.next, self.bytes))
            .min()
            .unwrap_or(u64::MAX);
    }

    /// When the burst ends if the words left meet no walk.
    fn predicted_end(&self) -> Instant {
        self.next_start.add_ns(u64::from(self.len - self.next).saturating_mul(self.word_ns))
    }

    /// When the burst reaches a page it has not translated yet, if the
    /// translation may fault.
    fn next_translation(&self) -> Option<Instant> {
        self.iommu.as_ref()?;
        let k = [&self.tx, &self.rx]
            .into_iter()
            .flatten()
            .map(|s| s.next_page_word(self.next, self.bytes))
            .filter(|&k| k < u64::from(self.len))
            .min()?;
        Some(self.next_start.add_ns((k - u64::from(self.next)).saturating_mul(self.word_ns)))
    }
}

/// What the running burst does next, up to the instant asked.
pub(super) enum Step {
    /// Nothing more happens by then (or no DMA burst runs).
    Wait,
    /// These `n` words shifted back to back, the first from `start`, each
    /// `word_ns` long, their TX and RX words in host memory at `memory`:
    /// read them, hand them to the device, store its answers, then
    /// [`DmaEngine::finish_words`].
    Words { n: usize, bits: u8, start: Instant, word_ns: u64, memory: ChunkMemory },
    /// The burst stopped on a fault.
    Fault,
}

/// The DMA engine's registers and running burst.
pub(super) struct DmaEngine {
    ctrl: u32,
    tx_addr: u64,
    rx_addr: u64,
    fault_addr: u64,
    faulted: bool,
    iommu: Option<Iommu>,
    run: Option<Run>,
    /// A burst runs: the IOMMU must settle the block before changing a translation.
    active: Arc<AtomicBool>,
}

impl DmaEngine {
    pub fn new() -> DmaEngine {
        DmaEngine {
            ctrl: 0,
            tx_addr: 0,
            rx_addr: 0,
            fault_addr: 0,
            faulted: false,
            iommu: None,
            run: None,
            active: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag that tells whether a burst runs.
    pub fn active_flag(&self) -> Arc<AtomicBool> {
        self.active.clone()
    }

    pub fn set_iommu(&mut self, iommu: Option<Iommu>) {
        self.iommu = iommu;
    }

    pub fn iommu(&self) -> Option<Iommu> {
        self.iommu.clone()
    }

    /// Loads a descriptor. Only [`SpiController::load_dma_descriptor`](super::SpiController::load_dma_descriptor)
    /// calls it: its safety contract covers the addresses.
    pub fn load(&mut self, d: DmaDescriptor) {
        self.ctrl = 0;
        if let Some(tx) = d.tx {
            self.tx_addr = tx;
            self.ctrl |= DMACTRL_TXEN;
        }
        if let Some(rx) = d.rx {
            self.rx_addr = rx;
            self.ctrl |= DMACTRL_RXEN;
        }
    }

    /// A register write to `DMACTRL`: clears bits, never sets one.
    pub fn write_ctrl(&mut self, v: u32) {
        self.ctrl &= v;
    }

    /// Reads a DMA register.
    pub fn read(&self, reg: u32) -> u32 {
        let lo = |a: u64| a as u32;
        let hi = |a: u64| (a >> 32) as u32;
        match reg {
            DMACTRL => self.ctrl,
            DMATX_LO => lo(self.tx_addr),
            DMATX_HI => hi(self.tx_addr),
            DMARX_LO => lo(self.rx_addr),
            DMARX_HI => hi(self.rx_addr),
            DMAFAULT_LO => lo(self.fault_addr),
            DMAFAULT_HI => hi(self.fault_addr),
            _ => 0,
        }
    }

    /// A descriptor waits for `START`.
    pub fn armed(&self) -> bool {
        self.ctrl != 0
    }

    pub fn busy(&self) -> bool {
        self.run.is_some()
    }

    pub fn faulted(&self) -> bool {
        self.faulted
    }

    /// `START` with a descriptor armed: takes it and starts a burst of `len`
    /// words at `t`. Returns false (and takes nothing) for an address that is
    /// not a multiple of the word's size or a buffer past the end of the
    /// address space.
    #[must_use]
    pub fn start(&mut self, len: u32, bits: u8, word_ns: u64, instant: bool, t: Instant) -> bool {
        let bytes = word_bytes(bits);
        let span = u64::from(len) * bytes;
        let fits = |base: u64| base.is_multiple_of(bytes) && base.checked_add(span).is_some();
        let (tx_on, rx_on) = (self.ctrl & DMACTRL_TXEN != 0, self.ctrl & DMACTRL_RXEN != 0);
        if (tx_on && !fits(self.tx_addr)) || (rx_on && !fits(self.rx_addr)) {
            return false;
        }
        let stream = |on: bool, base, write| on.then_some(Stream { base, write, page: None });
        self.run = Some(Run {
            len,
            bits,
            bytes,
            word_ns,
            instant,
            next: 0,
            next_start: t,
            tx: stream(tx_on, self.tx_addr, false),
            rx: stream(rx_on, self.rx_addr, true),
            // Latched: passthrough switched on mid-burst must not turn IOVAs into host pointers.
            iommu: self.iommu.clone().filter(|m| !m.passthrough()),
            fault: None,
            reached_until: 0,
        });
        self.ctrl = 0;
        self.active.store(true, Ordering::Release);
        true
    }

    /// Whether the running burst's words are of at most 8 bits, one byte
    /// each: its chunks are worked in `u8` lanes, else in `u32` ones.
    pub fn byte_wide(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.bytes == 1)
    }

    /// What the running burst does next, as of `t`. [`Step::Words`] gives
    /// at most `max_words`, all on the pages already translated.
    pub fn step(&mut self, t: Instant, max_words: usize) -> Step {
        let Some(run) = self.run.as_mut() else { return Step::Wait };
        if run.fault.is_none() && run.next_start <= t {
            run.reach_pages();
        }
        if let Some((f, at)) = run.fault {
            if at > t {
                return Step::Wait;
            }
            self.faulted = true;
            self.fault_addr = f.iova;
            self.end();
            return Step::Fault;
        }
        let end = run.next_start.add_ns(run.word_ns);
        if run.next_start > t || end > t {
            return Step::Wait;
        }
        let ended_by_t = t.ns_since(run.next_start).checked_div(run.word_ns).unwrap_or(u64::MAX);
        let on_reached_pages = run.reached_until - u64::from(run.next);
        let left = u64::from(run.len - run.next);
        let n = ended_by_t.min(on_reached_pages).min(left).min(max_words as u64) as usize;
        debug_assert!(n > 0, "a word ends by t, on a reached page, and the chunk holds one");
        let host = |s: &Option<Stream>| s.as_ref().and_then(|s| s.host(run.next, run.bytes));
        let memory = ChunkMemory { tx: host(&run.tx), rx: host(&run.rx), word_bytes: run.bytes };
        Step::Words { n, bits: run.bits, start: run.next_start, word_ns: run.word_ns, memory }
    }

    /// The `n` words [`Step::Words`] gave shifted and their answers are
    /// stored: moves on. Returns whether the burst ended.
    pub fn finish_words(&mut self, n: usize) -> bool {
        let Some(run) = self.run.as_mut() else { return false };
        let n = n as u32;
        run.next += n;
        run.next_start = run.next_start.add_ns(u64::from(n).saturating_mul(run.word_ns));
        if run.next == run.len {
            self.end();
            return true;
        }
        false
    }

    /// When software must be told something if `irq_done`/`irq_err` are
    /// enabled: the burst's predicted end, the instant it reaches a page
    /// whose translation may fault, or that of a fault already met.
    pub fn next_event(&self, irq_done: bool, irq_err: bool) -> Option<Instant> {
        let run = self.run.as_ref()?;
        if let Some((_, at)) = run.fault {
            return irq_err.then_some(at);
        }
        let done = irq_done.then(|| run.predicted_end());
        let err = if irq_err { run.next_translation() } else { None };
        match (done, err) {
            (Some(d), Some(e)) => Some(d.min(e)),
            (d, e) => d.or(e),
        }
    }

    /// Drops the running burst's translations: its next access to each page
    /// asks the IOMMU again.
    pub fn forget_translations(&mut self) {
        if let Some(run) = self.run.as_mut() {
            for s in [&mut run.tx, &mut run.rx].into_iter().flatten() {
                s.page = None;
            }
            run.reached_until = 0;
        }
    }

    /// `RESET`: aborts the burst, clears the fault and the descriptor.
    pub fn reset(&mut self) {
        self.end();
        self.faulted = false;
        self.ctrl = 0;
    }

    fn end(&mut self) {
        self.run = None;
        self.active.store(false, Ordering::Release);
    }
}
