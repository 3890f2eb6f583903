//! The SPI core's own DMA on the lab: transfers longer than the FIFO go by
//! DMA (mapped in the controller's domain, behind the block's IOMMU),
//! shorter ones by PIO; prepared messages keep their mappings (policy
//! `premapped_dma`); DMA faults come back typed, with chip select released;
//! the IOMMU modes (strict, lazy, identity, none) carry the data; timed
//! completion leaves the CPU free and still ends early on a fault.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wirespeed::backend::lab::{LabIommu, LabSpi};
use wirespeed::dma::{DmaDomain, DomainConfig, IommuHw, IommuHwError, IommuMode, Perm, PAGE_SIZE};
use wirespeed::spi::{
    Bus, Completion, Controller, ControllerCaps, ControllerFault, Data, DeviceConfig, DmaAddrs, DmaSupport, InFlight,
    Mode, OwnedTransfer, Policy, SpiDevice, SpiError, Transfer, TransferTiming, BOUNCE_MAX,
};
use wirespeed_lab::iommu::{FaultReason, Iommu, IommuConfig};
use wirespeed_lab::spi::{SpiController, SpiDeviceModel};
use wirespeed_lab::{Lab, LabConfig};

const PAGE: u64 = PAGE_SIZE as u64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

// ---------------------------------------------------------------------------
// A loopback device that records what it saw on its pins.

#[derive(Debug, Default)]
struct ProbeState {
    mosi: Mutex<Vec<u32>>,
    selected: AtomicBool,
    selects: AtomicU64,
    deselects: AtomicU64,
}

/// MISO = MOSI, like `Loopback`, recording every MOSI word and the chip select.
#[derive(Clone, Debug, Default)]
struct Probe(Arc<ProbeState>);

impl Probe {
    /// The MOSI words since the last call.
    fn take_mosi(&self) -> Vec<u32> {
        std::mem::take(&mut *lock(&self.0.mosi))
    }
    fn selected(&self) -> bool {
        self.0.selected.load(Ordering::SeqCst)
    }
    fn selects(&self) -> (u64, u64) {
        (self.0.selects.load(Ordering::SeqCst), self.0.deselects.load(Ordering::SeqCst))
    }
}

impl SpiDeviceModel for Probe {
    fn chip_select(&mut self, asserted: bool, _at: wirespeed::time::Instant) {
        self.0.selected.store(asserted, Ordering::SeqCst);
        let c = if asserted { &self.0.selects } else { &self.0.deselects };
        c.fetch_add(1, Ordering::SeqCst);
    }
    fn exchange(&mut self, mosi: u32, _bits: u8, _at: wirespeed::time::Instant) -> u32 {
        lock(&self.0.mosi).push(mosi);
        mosi
    }
}

fn bytes_as_words(b: &[u8]) -> Vec<u32> {
    b.iter().map(|&x| u32::from(x)).collect()
}

fn bytes_as_u16_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(2).map(|c| u32::from(u16::from_ne_bytes([c[0], c[1]]))).collect()
}

// ---------------------------------------------------------------------------
// A controller wrapper that counts how the core drove the driver.

#[derive(Debug, Default)]
struct SpyState {
    dma_calls: AtomicU64,
    pio_calls: AtomicU64,
    last_completion: Mutex<Option<Completion>>,
}

#[derive(Clone, Debug, Default)]
struct Spy(Arc<SpyState>);

impl Spy {
    fn dma_calls(&self) -> u64 {
        self.0.dma_calls.load(Ordering::SeqCst)
    }
    fn pio_calls(&self) -> u64 {
        self.0.pio_calls.load(Ordering::SeqCst)
    }
    fn last_completion(&self) -> Option<Completion> {
        *lock(&self.0.last_completion)
    }
}

/// Forwards everything to the lab driver, counting `transfer` and `transfer_dma`.
struct Spied {
    inner: LabSpi,
    spy: Spy,
}

impl Controller for Spied {
    fn caps(&self) -> &ControllerCaps {
        self.inner.caps()
    }
    fn configure(&mut self, mode: Mode, speed_hz: u32, bits: u8) {
        self.inner.configure(mode, speed_hz, bits);
    }
    fn set_cs(&mut self, cs: u8, active: bool) {
        self.inner.set_cs(cs, active);
    }
    fn preload(&mut self, data: &Data<'_>, bits: u8) -> usize {
        self.inner.preload(data, bits)
    }
    fn discard_preload(&mut self) {
        self.inner.discard_preload();
    }
    fn abort(&mut self) {
        self.inner.abort();
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
        self.spy.0.pio_calls.fetch_add(1, Ordering::SeqCst);
        *lock(&self.spy.0.last_completion) = Some(completion);
        self.inner.transfer(data, bits, preloaded, completion, timeout_ns, in_flight)
    }
    fn set_power(&mut self, on: bool) {
        self.inner.set_power(on);
    }
    fn dma(&self) -> Option<DmaSupport> {
        self.inner.dma()
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
        self.spy.0.dma_calls.fetch_add(1, Ordering::SeqCst);
        *lock(&self.spy.0.last_completion) = Some(completion);
        // SAFETY: our caller's contract, passed on unchanged.
        unsafe { self.inner.transfer_dma(len, bits, addrs, completion, timeout_ns, in_flight) }
    }
}

// ---------------------------------------------------------------------------
// An IOMMU driver that leaves holes: it skips the page-table writes of
// chosen pages of chosen mappings, as a driver bug would.

#[derive(Clone, Debug, PartialEq, Eq)]
struct Hole {
    /// The mapping's IOVA range as the domain asked for it.
    iova: u64,
    len: u64,
    /// The part of it left unmapped.
    skipped: Range<u64>,
}

#[derive(Debug)]
struct Holes {
    inner: LabIommu,
    maps: AtomicU64,
    /// (map number, 1-based over this IOMMU's life; pages of it to skip).
    armed: Mutex<Vec<(u64, Range<u64>)>>,
    live: Mutex<Vec<Hole>>,
    made: Mutex<Vec<Hole>>,
}

impl Holes {
    fn new(iommu: &Iommu) -> Holes {
        Holes {
            inner: LabIommu::new(iommu.clone()),
            maps: AtomicU64::new(0),
            armed: Mutex::default(),
            live: Mutex::default(),
            made: Mutex::default(),
        }
    }

    /// The `nth` mapping from now (1: the next) leaves its pages `pages`
    /// (relative to its first page, clamped to its length) unmapped.
    fn arm(&self, nth: u64, pages: Range<u64>) {
        let at = self.maps.load(Ordering::SeqCst) + nth;
        lock(&self.armed).push((at, pages));
    }

    /// The holes made so far, oldest first.
    fn made(&self) -> Vec<Hole> {
        lock(&self.made).clone()
    }
}

impl IommuHw for Holes {
    unsafe fn map_pages(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuHwError> {
        let n = self.maps.fetch_add(1, Ordering::SeqCst) + 1;
        let pages = {
            let mut armed = lock(&self.armed);
            armed.iter().position(|(at, _)| *at == n).map(|k| armed.swap_remove(k).1)
        };
        let Some(pages) = pages else {
            // SAFETY: our caller's contract, passed on unchanged.
            return unsafe { self.inner.map_pages(iova, phys, len, perm) };
        };
        let total = len / PAGE;
        let (a, b) = (pages.start.min(total), pages.end.min(total).max(pages.start.min(total)));
        if a > 0 {
            // SAFETY: a part of the range our caller made valid.
            unsafe { self.inner.map_pages(iova, phys, a * PAGE, perm) }?;
        }
        if b < total {
            let (at, from, rest) = (iova + b * PAGE, phys + b * PAGE, (total - b) * PAGE);
            // SAFETY: as above.
            if let Err(e) = unsafe { self.inner.map_pages(at, from, rest, perm) } {
                if a > 0 {
                    let _ = self.inner.unmap_pages(iova, a * PAGE);
                }
                return Err(e);
            }
        }
        let hole = Hole { iova, len, skipped: iova + a * PAGE..iova + b * PAGE };
        lock(&self.live).push(hole.clone());
        lock(&self.made).push(hole);
        Ok(())
    }

    fn unmap_pages(&self, iova: u64, len: u64) -> Result<(), IommuHwError> {
        let hole = {
            let mut live = lock(&self.live);
            live.iter().position(|h| h.iova == iova && h.len == len).map(|k| live.swap_remove(k))
        };
        let Some(h) = hole else { return self.inner.unmap_pages(iova, len) };
        if h.skipped.start > iova {
            self.inner.unmap_pages(iova, h.skipped.start - iova)?;
        }
        if h.skipped.end < iova + len {
            self.inner.unmap_pages(h.skipped.end, iova + len - h.skipped.end)?;
        }
        Ok(())
    }

    fn invalidate(&self, iova: u64, len: u64) {
        self.inner.invalidate(iova, len);
    }

    fn invalidate_all(&self) {
        self.inner.invalidate_all();
    }

    fn set_passthrough(&self, on: bool) {
        self.inner.set_passthrough(on);
    }
}

// ---------------------------------------------------------------------------
// The bench: a lab, a WSPI block with the probe on CS 0, maybe an IOMMU.

struct Rig {
    _lab: Lab,
    block: SpiController,
    iommu: Option<Iommu>,
    domain: Option<Arc<DmaDomain>>,
    probe: Probe,
    spy: Spy,
    bus: Bus,
    dev: SpiDevice,
}

/// A rig at `hz`; the block gets an IOMMU if `with_iommu`, and `make`
/// builds its driver (given the block and that IOMMU).
fn rig(policy: Policy, hz: u32, with_iommu: bool, make: impl FnOnce(SpiController, Option<&Iommu>) -> LabSpi) -> Rig {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    let probe = Probe::default();
    block.attach(0, probe.clone());
    let iommu = with_iommu.then(|| lab.iommu(IommuConfig::default()).expect("the default IOMMU config is valid"));
    if let Some(i) = &iommu {
        block.attach_iommu(i);
    }
    let driver = make(block.clone(), iommu.as_ref());
    let domain = driver.dma().map(|d| d.domain);
    let spy = Spy::default();
    let bus = Bus::new(Spied { inner: driver, spy: spy.clone() }, policy);
    let dev = bus.device(DeviceConfig::new(0, hz)).unwrap();
    Rig { _lab: lab, block, iommu, domain, probe, spy, bus, dev }
}

/// The default driver on a block behind a lab IOMMU: a strict domain.
fn strict_rig(policy: Policy, hz: u32) -> Rig {
    let r = rig(policy, hz, true, |block, _| LabSpi::new(block));
    assert_eq!(r.domain().mode(), IommuMode::Strict, "LabSpi::new on a block behind an IOMMU");
    r
}

/// A strict domain over a [`Holes`] wrapper of the block's IOMMU.
fn holes_rig(policy: Policy, hz: u32) -> (Rig, Arc<Holes>) {
    let mut holes = None;
    let r = rig(policy, hz, true, |block, iommu| {
        let h = Arc::new(Holes::new(iommu.expect("the rig has an IOMMU")));
        holes = Some(h.clone());
        let domain = DmaDomain::new(Some(h), DomainConfig::with_mode(IommuMode::Strict)).unwrap();
        LabSpi::with_dma(block, Arc::new(domain))
    });
    (r, holes.unwrap())
}

impl Rig {
    fn domain(&self) -> &DmaDomain {
        self.domain.as_deref().expect("the driver has DMA")
    }
    fn iommu(&self) -> &Iommu {
        self.iommu.as_ref().expect("the rig has an IOMMU")
    }
    /// (maps, unmaps) of the domain.
    fn maps(&self) -> (u64, u64) {
        let s = self.domain().stats();
        (s.maps, s.unmaps)
    }
    /// A duplex message of `tx`; returns what came back.
    fn duplex(&self, tx: &[u8]) -> Vec<u8> {
        let mut rx = vec![0u8; tx.len()];
        self.dev.sync(&mut [Transfer::duplex(tx, &mut rx)]).unwrap_or_else(|e| panic!("{} bytes: {e}", tx.len()));
        rx
    }
    /// One duplex transfer of `tx`, checked on the loopback: the same bytes
    /// back, sent on the wire as given, and no sooner than `wire` (the lab
    /// runs its clock in real time).
    fn duplex_on_wire(&self, tx: &[u8], wire: Duration, what: &str) {
        let t0 = Instant::now();
        assert_eq!(self.duplex(tx), tx, "{what}");
        assert!(t0.elapsed() >= wire, "{what} finished before its wire time");
        assert_eq!(self.probe.take_mosi(), bytes_as_words(tx), "{what}");
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `fast` with every DMA transfer's own buffers mapped and unmapped around
/// it (no bounce buffers): the mapping path.
fn mapping() -> Policy {
    Policy { bounce_dma: false, ..Policy::fast() }
}

/// Wire time of `bytes` 8-bit words at `hz`.
fn wire(bytes: usize, hz: u64) -> Duration {
    Duration::from_nanos(bytes as u64 * 8 * 1_000_000_000 / hz)
}

// ---------------------------------------------------------------------------
// 1. DMA above the FIFO, PIO up to it, through a strict IOMMU.

#[test]
fn a_transfer_longer_than_the_fifo_goes_by_dma_through_a_strict_iommu_and_one_that_fits_by_pio() {
    let r = strict_rig(mapping(), 20_000_000);
    assert_eq!(r.bus.caps().fifo_bytes, 64);

    let tx = pattern(4096, 7);
    assert_eq!(r.duplex(&tx), tx, "4096-byte duplex loopback");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx), "what the device received");
    assert_eq!((r.spy.dma_calls(), r.spy.pio_calls()), (1, 0), "4096 bytes go by DMA");
    assert_eq!(r.maps(), (2, 2), "one message: TX and RX mapped, and unmapped after");
    let ds = r.domain().stats();
    assert_eq!(ds.invalidations, 2, "strict: each unmap invalidates its range");
    assert_eq!(r.domain().iova_outstanding(), 0);
    let is = r.iommu().stats();
    assert_eq!(r.iommu().mapped_pages(), 0, "strict: nothing stays mapped after the message");
    assert!(is.walks > 0, "the engine translated through the IOMMU: {is:?}");
    assert_eq!(is.faults, 0, "{is:?}");

    // 64 bytes fit the FIFO: PIO, no mapping.
    let tx = pattern(64, 9);
    assert_eq!(r.duplex(&tx), tx, "64-byte duplex");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    assert_eq!(r.maps(), (2, 2), "a 64-byte transfer maps nothing");
    assert_eq!((r.spy.dma_calls(), r.spy.pio_calls()), (1, 1), "64 bytes go by PIO");
    assert_eq!(r.iommu().stats().walks, is.walks, "no DMA, no walk");

    // 65 bytes: one more than the FIFO, DMA again.
    let tx = pattern(65, 11);
    assert_eq!(r.duplex(&tx), tx, "65-byte duplex");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    assert_eq!(r.maps(), (4, 4), "65 bytes are mapped");
    assert_eq!((r.spy.dma_calls(), r.spy.pio_calls()), (2, 1), "65 bytes go by DMA");
    assert_eq!(r.iommu().mapped_pages(), 0);
    assert_eq!(r.domain().iova_outstanding(), 0);
}

#[test]
fn write_read_in_place_16_bit_and_mixed_dma_transfers_carry_the_right_data() {
    let hz = 20_000_000;
    let r = strict_rig(mapping(), hz);

    // Write only: the device receives the buffer; one mapping (TX).
    let tx = pattern(4096, 1);
    r.dev.sync(&mut [Transfer::write(&tx)]).unwrap();
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx), "write-only DMA");
    assert_eq!(r.maps(), (1, 1), "write: TX mapped alone");

    // Read only: zeros go out, so the loopback returns zeros; one mapping (RX).
    let mut rx = vec![0xA5u8; 4096];
    r.dev.sync(&mut [Transfer::read(&mut rx)]).unwrap();
    assert!(rx.iter().all(|&b| b == 0), "a read sends zeros, the loopback returns them");
    let mosi = r.probe.take_mosi();
    assert_eq!(mosi.len(), 4096);
    assert!(mosi.iter().all(|&w| w == 0), "a read sends zeros");
    assert_eq!(r.maps(), (2, 2), "read: RX mapped alone");

    // In place: one bidirectional mapping, the buffer comes back as it was.
    let orig = pattern(4096, 2);
    let mut buf = orig.clone();
    r.dev.sync(&mut [Transfer::in_place(&mut buf)]).unwrap();
    assert_eq!(buf, orig, "in-place loopback");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&orig), "in-place: the TX words");
    assert_eq!(r.maps(), (3, 3), "in place: one mapping for both directions");

    // 16-bit words, by transfer override: 2048 words of native-endian pairs.
    let tx = pattern(4096, 3);
    let mut rx = vec![0u8; 4096];
    r.dev.sync(&mut [Transfer::duplex(&tx, &mut rx).bits_per_word(16)]).unwrap();
    assert_eq!(rx, tx, "16-bit duplex by transfer override");
    assert_eq!(r.probe.take_mosi(), bytes_as_u16_words(&tx), "16-bit words as the device saw them");
    assert_eq!(r.maps(), (5, 5));

    // 16-bit words, by device configuration.
    let dev16 = r.bus.device(DeviceConfig::new(0, hz).bits_per_word(16)).unwrap();
    let tx = pattern(4096, 4);
    let mut rx = vec![0u8; 4096];
    dev16.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
    assert_eq!(rx, tx, "16-bit duplex by device configuration");
    assert_eq!(r.probe.take_mosi(), bytes_as_u16_words(&tx));
    assert_eq!(r.maps(), (7, 7));

    // A message mixing a PIO transfer and a DMA one under one CS.
    let (t0, t1) = (pattern(8, 5), pattern(3000, 6));
    let (mut r0, mut r1) = (vec![0u8; 8], vec![0u8; 3000]);
    let selects = r.probe.selects();
    r.dev.sync(&mut [Transfer::duplex(&t0, &mut r0), Transfer::duplex(&t1, &mut r1)]).unwrap();
    assert_eq!((r0, r1), (t0.clone(), t1.clone()), "mixed PIO + DMA message");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&[t0, t1].concat()));
    assert_eq!(r.probe.selects(), (selects.0 + 1, selects.1 + 1), "one CS window for the message");
    assert_eq!(r.maps(), (9, 9), "only the long transfer is mapped");

    assert_eq!(r.spy.dma_calls(), 6, "every transfer above 64 bytes went by DMA");
    assert_eq!(r.spy.pio_calls(), 1, "the 8-byte one by PIO");
    assert_eq!(r.iommu().mapped_pages(), 0);
    assert_eq!(r.domain().iova_outstanding(), 0);
    assert_eq!(r.iommu().stats().faults, 0);
}

// ---------------------------------------------------------------------------
// 2. Prepared messages and their mappings.

#[test]
fn a_prepared_message_under_fast_keeps_its_mapping_across_runs_and_unmaps_when_dropped() {
    let r = strict_rig(Policy::fast(), 50_000_000);
    // A short transfer (PIO, never mapped) and a long one (DMA, mapped once).
    let mut pm =
        r.dev.prepare(vec![OwnedTransfer::duplex(pattern(16, 0)), OwnedTransfer::duplex(pattern(4096, 0))]).unwrap();
    assert_eq!(r.maps(), (2, 0), "preparing maps the long transfer's TX and RX");
    let pages = r.iommu().mapped_pages();
    assert_eq!(
        pages, 2,
        "the buffers moved to page-aligned DMA memory: a page each, in the IOMMU while the message lives"
    );
    assert_eq!(r.domain().iova_outstanding(), 2);
    for run in 0..100u8 {
        let (a, b) = (pattern(16, run), pattern(4096, run.wrapping_mul(7)));
        pm.tx_mut(0).unwrap().copy_from_slice(&a);
        pm.tx_mut(1).unwrap().copy_from_slice(&b);
        r.dev.run(&mut pm).unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(pm.rx(0).unwrap(), &a[..], "run {run}: the PIO transfer");
        assert_eq!(pm.rx(1).unwrap(), &b[..], "run {run}: the DMA transfer sees the new TX bytes");
        assert_eq!(r.maps(), (2, 0), "run {run}: no mapping per run");
    }
    assert_eq!(r.spy.dma_calls(), 100);
    assert_eq!(r.iommu().mapped_pages(), pages, "the mapping stayed as it was");
    assert_eq!(r.iommu().stats().faults, 0);
    drop(pm);
    assert_eq!(r.maps(), (2, 2), "dropping the message unmaps both buffers");
    assert_eq!(r.iommu().mapped_pages(), 0, "nothing left in the IOMMU");
    assert_eq!(r.domain().iova_outstanding(), 0, "strict: the IOVAs are freed at once");
}

#[test]
fn a_prepared_message_under_linux69_is_mapped_and_unmapped_at_every_run() {
    let r = strict_rig(Policy::linux69(), 50_000_000);
    let mut pm = r.dev.prepare(vec![OwnedTransfer::duplex(pattern(4096, 0))]).unwrap();
    assert_eq!(r.maps(), (0, 0), "premapped_dma off: preparing maps nothing");
    assert_eq!(r.iommu().mapped_pages(), 0);
    for run in 1..=10u64 {
        let tx = pattern(4096, run as u8);
        pm.tx_mut(0).unwrap().copy_from_slice(&tx);
        r.dev.run(&mut pm).unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(pm.rx(0).unwrap(), &tx[..], "run {run}");
        assert_eq!(r.maps(), (2 * run, 2 * run), "run {run}: TX and RX mapped and unmapped once more");
        assert_eq!(r.iommu().mapped_pages(), 0, "run {run}: unmapped after the run");
    }
    assert_eq!(r.spy.dma_calls(), 10);
    drop(pm);
    assert_eq!(r.maps(), (20, 20), "nothing left to unmap on drop");
    assert_eq!(r.domain().iova_outstanding(), 0);
}

// ---------------------------------------------------------------------------
// 3. DMA faults.

#[test]
fn a_dma_fault_comes_back_typed_with_chip_select_released_and_the_next_message_works() {
    let (r, holes) = holes_rig(mapping(), 20_000_000);
    let iommu = r.iommu().clone();

    // The message's second transfer goes by DMA; its RX mapping (the
    // message's second mapping: TX is mapped first) is left out of the IOMMU.
    let tx = pattern(4096, 1);
    let mut rx = vec![0u8; 4096];
    holes.arm(2, 0..u64::MAX);
    let err = r.dev.sync(&mut [Transfer::write(&[1, 2, 3, 4]), Transfer::duplex(&tx, &mut rx)]).unwrap_err();
    let made = holes.made();
    assert_eq!(made.len(), 1, "{made:?}");
    let hole = &made[0];
    let rx_addr = hole.iova + rx.as_ptr() as u64 % PAGE;
    match err {
        SpiError::DmaFault { index, device_addr } => {
            assert_eq!(index, 1, "the fault names the DMA transfer");
            assert!(hole.skipped.contains(&device_addr), "{device_addr:#x} outside the unmapped {hole:x?}");
            assert!((hole.iova..hole.iova + hole.len).contains(&device_addr), "{device_addr:#x} outside the mapping");
            assert_eq!(device_addr, rx_addr, "the first RX write faults");
        }
        other => panic!("expected SpiError::DmaFault, got {other:?}"),
    }
    let faults = iommu.faults();
    assert!(
        faults.iter().any(|f| f.iova == rx_addr && f.write && f.reason == FaultReason::NotMapped),
        "the IOMMU logged the fault: {faults:?}"
    );
    assert!(!r.probe.selected(), "chip select released after the fault");
    let (on, off) = r.probe.selects();
    assert_eq!((on, off), (1, 1), "one CS window, closed");
    assert_eq!(r.maps(), (2, 2), "the failed transfer's buffers were unmapped");
    assert_eq!(iommu.mapped_pages(), 0);
    assert_eq!(r.domain().iova_outstanding(), 0);

    // The next good message on the same device works.
    r.probe.take_mosi();
    let tx = pattern(4096, 2);
    assert_eq!(r.duplex(&tx), tx, "the message after the fault");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    assert_eq!(iommu.stats().faults, faults.len() as u64, "no new fault");

    // A TX mapping left out: a read fault at the TX buffer's address.
    let tx = pattern(4096, 3);
    let mut rx = vec![0u8; 4096];
    holes.arm(1, 0..u64::MAX);
    let err = r.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap_err();
    let hole = holes.made()[1].clone();
    let tx_addr = hole.iova + tx.as_ptr() as u64 % PAGE;
    assert_eq!(err, SpiError::DmaFault { index: 0, device_addr: tx_addr }, "the first TX read faults");
    let last = *iommu.faults().last().unwrap();
    assert_eq!((last.iova, last.write, last.reason), (tx_addr, false, FaultReason::NotMapped));
    assert!(!r.probe.selected(), "chip select released after the TX fault");
    let tx = pattern(4096, 4);
    assert_eq!(r.duplex(&tx), tx, "the message after the TX fault");
    assert_eq!(iommu.mapped_pages(), 0);
    assert_eq!(r.domain().iova_outstanding(), 0);
}

// ---------------------------------------------------------------------------
// 4. The other IOMMU modes through the core.

#[test]
fn a_lazy_domain_leaves_no_iova_outstanding_and_no_page_mapped_after_a_flush() {
    let r = rig(mapping(), 50_000_000, true, |block, iommu| {
        let hw = Arc::new(LabIommu::new(iommu.unwrap().clone()));
        LabSpi::with_dma(block, Arc::new(DmaDomain::new(Some(hw), DomainConfig::with_mode(IommuMode::Lazy)).unwrap()))
    });
    assert_eq!(r.domain().mode(), IommuMode::Lazy);
    let n = 50u64;
    for i in 0..n {
        let tx = pattern(4096, i as u8);
        assert_eq!(r.duplex(&tx), tx, "message {i}");
    }
    let mut pm = r.dev.prepare(vec![OwnedTransfer::duplex(pattern(1000, 9))]).unwrap();
    r.dev.run(&mut pm).unwrap();
    assert_eq!(pm.rx(0).unwrap(), &pattern(1000, 9)[..]);
    drop(pm);
    assert_eq!(r.maps(), (2 * n + 2, 2 * n + 2));
    assert_eq!(r.iommu().mapped_pages(), 0, "lazy unmaps clear the PTEs at once");
    r.domain().flush();
    assert_eq!(r.domain().iova_outstanding(), 0, "after the flush no IOVA is held");
    assert_eq!(r.iommu().mapped_pages(), 0);
    let ds = r.domain().stats();
    assert_eq!(ds.lazy_pending, 0, "{ds:?}");
    assert_eq!(ds.invalidations, 0, "lazy: no invalidation per unmap: {ds:?}");
    assert!(ds.invalidate_alls >= 1, "lazy: flushed with global invalidations: {ds:?}");
    let is = r.iommu().stats();
    assert_eq!(is.invalidations, 0, "{is:?}");
    assert!(is.walks > 0 && is.faults == 0, "{is:?}");
    assert_eq!(r.spy.dma_calls(), n + 1);
}

#[test]
fn identity_and_no_iommu_domains_carry_the_data_and_map_nothing_in_the_iommu() {
    // Identity: the block's IOMMU in passthrough when the driver is made.
    let r = rig(Policy::fast(), 50_000_000, true, |block, iommu| {
        iommu.unwrap().set_passthrough(true);
        LabSpi::new(block)
    });
    assert_eq!(r.domain().mode(), IommuMode::Identity, "LabSpi::new on an IOMMU in passthrough");
    for i in 0..5u8 {
        let tx = pattern(4096, i);
        assert_eq!(r.duplex(&tx), tx, "identity message {i}");
        assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    }
    let mut buf = pattern(300, 1);
    r.dev.sync(&mut [Transfer::in_place(&mut buf)]).unwrap();
    assert_eq!(buf, pattern(300, 1));
    assert_eq!(r.maps(), (11, 11), "mappings are counted");
    assert_eq!(r.spy.dma_calls(), 6);
    let is = r.iommu().stats();
    assert_eq!(r.iommu().mapped_pages(), 0, "identity writes no page table");
    assert_eq!((is.walks, is.faults, is.invalidations), (0, 0, 0), "identity translates nothing: {is:?}");
    assert_eq!(r.domain().iova_outstanding(), 0);

    // No IOMMU on the block: device addresses are host addresses.
    let r = rig(Policy::fast(), 50_000_000, false, |block, _| LabSpi::new(block));
    assert_eq!(r.domain().mode(), IommuMode::None, "LabSpi::new on a block without an IOMMU");
    for i in 0..5u8 {
        let tx = pattern(4096, i ^ 0x40);
        assert_eq!(r.duplex(&tx), tx, "no-IOMMU message {i}");
        assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    }
    let tx = pattern(2000, 3);
    r.dev.sync(&mut [Transfer::write(&tx)]).unwrap();
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    assert_eq!(r.maps(), (11, 11));
    assert_eq!(r.spy.dma_calls(), 6);
    assert_eq!(r.domain().iova_outstanding(), 0, "no IOVA allocated without translation");
}

// ---------------------------------------------------------------------------
// 5. Timed completion.

#[test]
fn timed_dma_completion_leaves_the_calling_thread_idle_for_most_of_the_wire_time() {
    let hz = 1_000_000;
    let r = strict_rig(Policy::fast(), hz);
    let wire = wire(4096, u64::from(hz)); // 32.8 ms
    let mut min_cpu = Duration::MAX;
    for i in 0..4u8 {
        let tx = pattern(4096, i);
        let mut rx = vec![0u8; 4096];
        let (t0, c0) = (Instant::now(), thread_cpu_ns());
        r.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
        let (cpu, elapsed) = (Duration::from_nanos(thread_cpu_ns() - c0), t0.elapsed());
        assert_eq!(rx, tx, "run {i}");
        assert!(elapsed >= wire, "run {i}: {elapsed:?} for {wire:?} of wire: the lab did not run at 1 MHz");
        assert_eq!(r.spy.last_completion(), Some(Completion::Timed), "fast: a long transfer completes timed");
        min_cpu = min_cpu.min(cpu);
    }
    assert_eq!(r.spy.dma_calls(), 4);
    assert!(min_cpu < wire / 2, "timed completion used {min_cpu:?} of CPU for {wire:?} of wire");
}

#[test]
fn a_long_dma_transfer_completes_on_the_interrupt_without_timed_or_adaptive_completion() {
    let hz = 1_000_000;
    let policy = Policy { timed_completion: false, adaptive_completion: false, ..mapping() };
    let r = strict_rig(policy, hz);
    let raised = r.block.irq().raise_count();
    for i in 0..2u8 {
        r.duplex_on_wire(&pattern(4096, i), wire(4096, u64::from(hz)), &format!("run {i}"));
        assert_eq!(r.spy.last_completion(), Some(Completion::Irq), "the IRQ path");
    }
    assert!(r.block.irq().raise_count() > raised, "the block's interrupt completed the transfers");
    assert_eq!(r.maps(), (4, 4));
    assert_eq!(r.spy.dma_calls(), 2);
    assert_eq!(r.iommu().mapped_pages(), 0);
}

#[test]
fn a_timed_64_byte_pio_transfer_at_1_mhz_returns_the_right_data() {
    let hz = 1_000_000;
    let r = strict_rig(Policy::fast(), hz);
    for i in 0..3u8 {
        let raised = r.block.irq().raise_count();
        r.duplex_on_wire(&pattern(64, i), wire(64, u64::from(hz)), &format!("run {i}"));
        // Timed needs a wire time above the spin threshold (100 µs unless built otherwise).
        if wirespeed::time::spin_threshold() < wire(64, u64::from(hz)) {
            assert_eq!(r.spy.last_completion(), Some(Completion::Timed), "512 µs of wire completes timed");
            // A PIO transfer sleeps on its RX level, a few words (8 µs each) before the end.
            assert_eq!(r.block.irq().raise_count(), raised + 1, "run {i}: woken by the RX-level interrupt");
        }
    }
    assert_eq!((r.spy.dma_calls(), r.spy.pio_calls()), (0, 3), "64 bytes by PIO");
    assert_eq!(r.maps(), (0, 0));
}

#[test]
fn a_fifo_sized_transfer_too_long_to_poll_sleeps_until_its_rx_level_and_returns_the_right_data() {
    // 16 bytes at 2 MHz: 64 µs of wire, too short for a timer's sleep (not
    // above the spin threshold), too long for a 1 µs polling limit.
    let hz = 2_000_000;
    let w = wire(16, u64::from(hz));
    for (timed, want) in [(true, Completion::Timed), (false, Completion::Irq)] {
        let policy = Policy { poll_below_ns: Some(1_000), timed_completion: timed, ..Policy::fast() };
        let r = strict_rig(policy, hz);
        let raised = r.block.irq().raise_count();
        for i in 0..4u8 {
            r.duplex_on_wire(&pattern(16, i), w, &format!("timed {timed}, run {i}"));
            assert_eq!(r.spy.last_completion(), Some(want), "timed {timed}");
        }
        if !timed {
            assert!(r.block.irq().raise_count() >= raised + 4, "one interrupt per transfer");
        }
        assert_eq!((r.spy.dma_calls(), r.spy.pio_calls()), (0, 4), "16 bytes by PIO");
    }
}

#[test]
fn a_dma_fault_during_a_timed_wait_ends_it_well_before_the_wire_time() {
    let hz = 1_000_000;
    let (r, holes) = holes_rig(Policy::fast(), hz);
    let len = 64 * 1024; // 0.5 s of wire
    let tx = pattern(len, 5);
    let mut rx = vec![0u8; len];
    // The RX mapping (the second) has its second page left unmapped: the
    // fault comes when the burst reaches it, within 4096 words (≤ 33 ms).
    holes.arm(2, 1..2);
    let t0 = Instant::now();
    let err = r.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap_err();
    let elapsed = t0.elapsed();
    assert_eq!(r.spy.last_completion(), Some(Completion::Timed), "a 0.5 s transfer completes timed");
    let hole = holes.made()[0].clone();
    assert_eq!(hole.skipped.end - hole.skipped.start, PAGE, "{hole:x?}");
    match err {
        SpiError::DmaFault { index: 0, device_addr } => {
            assert_eq!(device_addr, hole.skipped.start, "the first RX write on the unmapped page faults");
        }
        other => panic!("expected SpiError::DmaFault, got {other:?}"),
    }
    assert!(
        elapsed < Duration::from_millis(250),
        "the fault ended the timed wait after {elapsed:?} of {:?} of wire",
        wire(len, u64::from(hz))
    );
    let fault = *r.iommu().faults().last().expect("the IOMMU logged the fault");
    assert_eq!((fault.iova, fault.write, fault.reason), (hole.skipped.start, true, FaultReason::NotMapped));
    // What reached RX before the fault is the start of TX (the first page).
    let first_page = (PAGE - rx.as_ptr() as u64 % PAGE) as usize;
    assert_eq!(rx[..first_page], tx[..first_page], "the words before the fault arrived");
    assert!(!r.probe.selected(), "chip select released after the fault");
    assert_eq!(r.maps(), (2, 2));
    assert_eq!(r.iommu().mapped_pages(), 0);
    assert_eq!(r.domain().iova_outstanding(), 0);
    // The device works again.
    let tx = pattern(256, 6);
    assert_eq!(r.duplex(&tx), tx);
}

// ---------------------------------------------------------------------------
// 6. A controller without DMA.

#[test]
fn prepared_messages_on_a_controller_without_dma_run_by_pio() {
    let r = rig(Policy::fast(), 50_000_000, true, |block, _| LabSpi::pio_only(block));
    assert!(r.domain.is_none(), "pio_only offers no DMA");
    let mut pm = r.dev.prepare(vec![OwnedTransfer::duplex(pattern(4096, 0))]).unwrap();
    for run in 0..5u8 {
        let tx = pattern(4096, run);
        pm.tx_mut(0).unwrap().copy_from_slice(&tx);
        r.dev.run(&mut pm).unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(pm.rx(0).unwrap(), &tx[..], "run {run}");
        assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx), "run {run}");
    }
    let tx = pattern(4096, 9);
    assert_eq!(r.duplex(&tx), tx, "a sync message of 4096 bytes");
    drop(pm);
    assert_eq!(r.spy.dma_calls(), 0, "transfer_dma is never reached without DMA");
    assert_eq!(r.spy.pio_calls(), 6);
    let is = r.iommu().stats();
    assert_eq!((r.iommu().mapped_pages(), is.walks), (0, 0), "PIO never touches the IOMMU: {is:?}");
}

// ---------------------------------------------------------------------------
// 5. Bounce buffers (policy `bounce_dma`).

#[test]
fn fast_bounces_short_dma_transfers_through_two_buffers_mapped_once_and_maps_longer_ones() {
    let r = strict_rig(Policy::fast(), 20_000_000);
    let bounce_pages = 2 * BOUNCE_MAX as u64 / PAGE;

    let tx = pattern(4096, 3);
    assert_eq!(r.duplex(&tx), tx, "a bounced duplex");
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&tx));
    assert_eq!(r.maps(), (2, 0), "the bounce pair mapped at first use, nothing unmapped");
    assert_eq!(r.iommu().mapped_pages(), bounce_pages);

    r.dev.sync(&mut [Transfer::write(&pattern(1000, 4))]).unwrap();
    assert_eq!(r.probe.take_mosi(), bytes_as_words(&pattern(1000, 4)), "a bounced write");
    let mut rx = vec![0xA5u8; BOUNCE_MAX];
    r.dev.sync(&mut [Transfer::read(&mut rx)]).unwrap();
    assert!(rx.iter().all(|&b| b == 0), "a bounced read of BOUNCE_MAX bytes: zeros out, zeros back");
    let orig = pattern(3000, 5);
    let mut buf = orig.clone();
    r.dev.sync(&mut [Transfer::in_place(&mut buf)]).unwrap();
    assert_eq!(buf, orig, "a bounced in-place transfer comes back as sent");
    assert_eq!(r.probe.take_mosi().len(), BOUNCE_MAX + 3000);
    assert_eq!(r.maps(), (2, 0), "no mapping per transfer");
    assert_eq!(r.domain().stats().invalidations, 0, "no unmap, no invalidation");
    assert_eq!(r.spy.dma_calls(), 4, "all four went by DMA");

    let long = pattern(BOUNCE_MAX + 1, 6);
    assert_eq!(r.duplex(&long), long, "one byte longer than BOUNCE_MAX");
    assert_eq!(r.maps(), (4, 2), "its own buffers mapped and unmapped");
    assert_eq!(r.domain().stats().invalidations, 2);

    let Rig { dev, bus, iommu, domain, .. } = r;
    drop(dev);
    drop(bus);
    assert_eq!(iommu.unwrap().mapped_pages(), 0, "the bounce pair is unmapped with its bus");
    assert_eq!(domain.unwrap().iova_outstanding(), 0);
}

#[test]
fn a_lazy_domain_bounces_too() {
    // (Identity and no translation never bounce: `identity_and_no_iommu_domains_…` counts their mappings under `fast`.)
    let lazy = rig(Policy::fast(), 50_000_000, true, |block, iommu| {
        let hw = Arc::new(LabIommu::new(iommu.unwrap().clone()));
        LabSpi::with_dma(block, Arc::new(DmaDomain::new(Some(hw), DomainConfig::with_mode(IommuMode::Lazy)).unwrap()))
    });
    for i in 0..3u8 {
        let tx = pattern(2000, i);
        assert_eq!(lazy.duplex(&tx), tx);
    }
    assert_eq!(lazy.maps(), (2, 0), "lazy: the bounce pair only");
}
