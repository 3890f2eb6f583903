use super::regs::*;
use super::*;
use crate::devices::Loopback;
use crate::iommu::{DmaFault, FaultReason, IommuStats, Perm};
use crate::test_pages::Pages;
use crate::trace::TraceEvent;
use crate::LabConfig;
use std::time::Duration;
use wirespeed_time::now;

/// 8-bit words at 200 MHz / 2.
const WORD_NS: u64 = 80;
const TX_IOVA: u64 = 0x1000_0000;
const RX_IOVA: u64 = 0x2000_0000;

/// A block with `dev` selected on CS 0, 8-bit words of [`WORD_NS`], its
/// done and error interrupts enabled.
fn block_on(config: LabConfig, dev: impl SpiDeviceModel + 'static) -> (Lab, SpiController) {
    let lab = Lab::new(config);
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, ..SpiControllerConfig::default() });
    block.attach(0, dev);
    block.write(CS, CS_ASSERT);
    block.write(CLKDIV, 2);
    block.write(IRQEN, IRQ_DONE | IRQ_ERR);
    (lab, block)
}

fn dma_block_with(config: LabConfig) -> (Lab, SpiController, Loopback) {
    let dev = Loopback::new();
    let (lab, block) = block_on(config, dev.clone());
    (lab, block, dev)
}

fn dma_block() -> (Lab, SpiController, Loopback) {
    dma_block_with(LabConfig::default())
}

fn pattern(mem: &mut Pages) {
    for (i, b) in mem.bytes_mut().iter_mut().enumerate() {
        *b = (i * 7 + i / 256) as u8;
    }
}

/// Starts a burst of `len` words of `bits` bits with `d` loaded, sleeps on
/// the interrupt line (done or error), and returns `STATUS` and the time
/// from `START` to the wake-up.
fn run(block: &SpiController, d: DmaDescriptor, len: u32, bits: u32) -> (u32, u64) {
    block.write(IRQSTAT, IRQ_DONE);
    block.write(CTRL, CTRL_EN | ((bits - 1) << CTRL_BPW_SHIFT));
    block.write(XFERLEN, len);
    // SAFETY: every test keeps the buffers alive, unreferenced, until `run` returns.
    unsafe { block.load_dma_descriptor(d) };
    let t0 = now();
    block.write(START, START_GO);
    assert!(block.irq().wait(Some(Duration::from_secs(5))), "no interrupt within 5 s");
    let elapsed = now().ns_since(t0);
    (block.read(STATUS), elapsed)
}

fn map(iommu: &Iommu, iova: u64, mem: &Pages, pages: u64, perm: Perm) {
    // SAFETY: each test unmaps before dropping `mem`, or drops the IOMMU's block first.
    unsafe { iommu.map(iova, mem.addr(), pages * 4096, perm) }.unwrap();
}

fn word_times(block: &SpiController) -> Vec<(Instant, Instant, u32)> {
    let trace = block.trace_take();
    trace
        .events
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::Word { start, end, mosi, .. } => Some((start, end, mosi)),
            TraceEvent::Cs { .. } => None,
        })
        .collect()
}

#[test]
fn a_dma_loopback_of_4096_bytes_without_iommu_takes_the_wire_time_and_copies_tx_to_rx() {
    let (_lab, block, dev) = dma_block();
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    let d = DmaDescriptor { tx: Some(tx.addr()), rx: Some(rx.addr()) };
    let (s, elapsed) = run(&block, d, 4096, 8);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR | STATUS_DMAFAULT), STATUS_DONE, "{s:#x}");
    assert!(elapsed >= 4096 * WORD_NS, "done after {elapsed} ns, before the wire time");
    assert_ne!(block.read(IRQSTAT) & IRQ_DONE, 0);
    assert_eq!(rx.bytes(), tx.bytes());
    assert_eq!(dev.words(), 4096);
    assert_eq!(rx_level(s), 0, "the FIFOs are not used");
    // The descriptor served its burst; its addresses read back.
    assert_eq!(block.read(DMACTRL), 0);
    let back = |lo, hi| u64::from(block.read(lo)) | u64::from(block.read(hi)) << 32;
    assert_eq!((back(DMATX_LO, DMATX_HI), back(DMARX_LO, DMARX_HI)), (tx.addr(), rx.addr()));
}

#[test]
fn a_dma_loopback_through_an_iommu_walks_each_page_once_per_direction_and_waits_for_the_walks() {
    let (lab, block, dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    assert!(block.iommu().is_some());
    let (mut tx, rx) = (Pages::new(2), Pages::new(2));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 2, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 2, Perm::WRITE);
    // 4096 bytes of 16-bit words from the middle of the first page: word 1024 is on the second.
    let d = DmaDescriptor { tx: Some(TX_IOVA + 2048), rx: Some(RX_IOVA + 2048) };
    block.trace_start(4096);
    let (s, elapsed) = run(&block, d, 2048, 16);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_DONE, "{s:#x}");
    let walk = iommu.config().walk_ns;
    assert!(elapsed >= 2048 * 2 * WORD_NS + 4 * walk, "done after {elapsed} ns");
    assert_eq!(&rx.bytes()[2048..6144], &tx.bytes()[2048..6144]);
    assert!(rx.bytes()[..2048].iter().chain(&rx.bytes()[6144..]).all(|&b| b == 0), "nothing else written");
    assert_eq!(dev.words(), 2048);
    let st = iommu.stats();
    assert_eq!((st.walks, st.iotlb_misses, st.iotlb_hits, st.faults), (4, 4, 0, 0));
    // Native-endian 16-bit words from memory went on the wire.
    let words = word_times(&block);
    assert_eq!(words.len(), 2048);
    assert_eq!(words[0].2, u32::from(u16::from_ne_bytes([tx.bytes()[2048], tx.bytes()[2049]])));
    // Back to back, but for the two walks (TX, RX) of the second pages.
    for (k, w) in words.windows(2).enumerate() {
        let gap = w[1].0.ns_since(w[0].1);
        assert_eq!(gap, if k + 1 == 1024 { 2 * walk } else { 0 }, "gap before word {}", k + 1);
    }
    iommu.unmap(TX_IOVA, 8192).unwrap();
    iommu.unmap(RX_IOVA, 8192).unwrap();
}

#[test]
fn an_unmapped_rx_page_stops_the_burst_there_with_err_dmafault_and_the_interrupt() {
    let (lab, block, dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, rx) = (Pages::new(2), Pages::new(2));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 2, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);
    let d = DmaDescriptor { tx: Some(TX_IOVA), rx: Some(RX_IOVA) };
    let (s, elapsed) = run(&block, d, 8192, 8);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR | STATUS_DMAFAULT, "{s:#x}");
    assert!(elapsed >= 4096 * WORD_NS, "the fault came after {elapsed} ns, before the burst reached the page");
    assert!(block.irq().is_raised());
    assert_eq!(block.read(IRQSTAT) & (IRQ_DONE | IRQ_ERR), IRQ_ERR);
    let fault = u64::from(block.read(DMAFAULT_LO)) | u64::from(block.read(DMAFAULT_HI)) << 32;
    assert_eq!(fault, RX_IOVA + 4096);
    assert_eq!(iommu.faults(), [DmaFault { iova: RX_IOVA + 4096, write: true, reason: FaultReason::NotMapped }]);
    assert_eq!(dev.words(), 4096, "the words before the page shifted, no more");
    assert_eq!(&rx.bytes()[..4096], &tx.bytes()[..4096], "and reached memory");
    assert!(rx.bytes()[4096..].iter().all(|&b| b == 0));

    block.write(RESET, 1);
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_ERR | STATUS_DMAFAULT), 0, "{s:#x}");
    assert!(!block.irq().is_raised(), "IRQ_ERR is a level: RESET lowers it");
    assert_eq!(fault, u64::from(block.read(DMAFAULT_LO)) | u64::from(block.read(DMAFAULT_HI)) << 32);
    drop(block);
}

#[test]
fn strict_unmap_and_invalidate_make_the_next_burst_fault() {
    let (lab, block, _dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 1, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);
    let d = DmaDescriptor { tx: Some(TX_IOVA), rx: Some(RX_IOVA) };
    assert_eq!(run(&block, d, 64, 8).0 & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    iommu.unmap(RX_IOVA, 4096).unwrap();
    iommu.invalidate(RX_IOVA, 4096);
    let (s, _) = run(&block, d, 64, 8);
    assert_eq!(s & (STATUS_DONE | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR | STATUS_DMAFAULT, "{s:#x}");
    assert_eq!(iommu.faults(), [DmaFault { iova: RX_IOVA, write: true, reason: FaultReason::NotMapped }]);
    assert_eq!(iommu.stats().stale_hits, 0);
    iommu.unmap(TX_IOVA, 4096).unwrap();
}

#[test]
fn lazy_unmap_leaves_stale_hits_that_touch_no_memory_until_the_invalidation() {
    let (lab, block, dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, mut rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 1, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);
    let d = DmaDescriptor { tx: Some(TX_IOVA), rx: Some(RX_IOVA) };
    assert_eq!(run(&block, d, 64, 8).0 & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    assert_eq!(&rx.bytes()[..64], &tx.bytes()[..64]);
    iommu.unmap(TX_IOVA, 4096).unwrap();
    iommu.unmap(RX_IOVA, 4096).unwrap();
    rx.bytes_mut().fill(0xEE);

    block.trace_start(64);
    let (s, _) = run(&block, d, 64, 8);
    assert_eq!(s & (STATUS_DONE | STATUS_ERR), STATUS_DONE, "stale hits let the burst go on: {s:#x}");
    assert_eq!(iommu.stats().stale_hits, 2, "one per page and direction");
    assert!(word_times(&block).iter().all(|w| w.2 == 0), "TX read zeros, not the unmapped page");
    assert!(rx.bytes().iter().all(|&b| b == 0xEE), "RX writes were dropped");
    assert_eq!(dev.words(), 128);

    iommu.invalidate_all();
    let (s, _) = run(&block, d, 64, 8);
    assert_eq!(s & (STATUS_DONE | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR | STATUS_DMAFAULT, "{s:#x}");
    assert_eq!(iommu.faults(), [DmaFault { iova: TX_IOVA, write: false, reason: FaultReason::NotMapped }]);
    assert_eq!(dev.words(), 128, "the burst stopped before its first word");
}

#[test]
fn an_unmap_after_a_burst_ended_in_time_does_not_fault_it_however_late_software_looks() {
    let (lab, block, _dev) = dma_block();
    block.write(IRQEN, 0);
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 1, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);
    block.write(XFERLEN, 4096);
    // SAFETY: the buffers outlive the burst and the IOMMU maps them.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: Some(TX_IOVA), rx: Some(RX_IOVA) }) };
    block.write(START, START_GO);
    // The burst (328 µs) ends long before the unmap; no register is read meanwhile.
    std::thread::sleep(Duration::from_millis(5));
    iommu.unmap(TX_IOVA, 4096).unwrap();
    iommu.unmap(RX_IOVA, 4096).unwrap();
    iommu.invalidate_all();
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_DONE, "{s:#x}");
    assert_eq!(rx.bytes(), tx.bytes());
    assert_eq!(iommu.stats().faults, 0);
}

#[test]
fn plain_register_writes_cannot_point_the_engine_at_memory() {
    let (_lab, block, _dev) = dma_block();
    for reg in [DMATX_LO, DMATX_HI, DMARX_LO, DMARX_HI, DMAFAULT_LO, DMAFAULT_HI] {
        block.write(reg, 0x1234_5678);
        assert_eq!(block.read(reg), 0, "register {reg:#x} is read only");
    }
    block.write(DMACTRL, DMACTRL_TXEN | DMACTRL_RXEN);
    assert_eq!(block.read(DMACTRL), 0, "DMACTRL bits are set only by a descriptor");
    // A FIFO burst runs, as no descriptor is armed.
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0x5A);
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(1));
    assert_eq!(block.read(RXDATA), 0x5A);

    let rx = Pages::new(1);
    // SAFETY: the descriptor is disarmed before any START.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: None, rx: Some(rx.addr()) }) };
    assert_eq!(block.read(DMACTRL), DMACTRL_RXEN);
    block.write(DMACTRL, 0);
    assert_eq!(block.read(DMACTRL), 0, "DMA off");
    block.write(TXDATA, 0x3C);
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(1));
    assert_eq!(block.read(RXDATA), 0x3C, "a FIFO burst again");
    assert!(rx.bytes().iter().all(|&b| b == 0));
}

#[test]
fn an_instant_wire_completes_a_dma_burst_at_its_start_and_misaligned_addresses_are_refused() {
    let (_lab, block, _dev) = dma_block_with(LabConfig { instant_wire: true, ..LabConfig::default() });
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    block.write(XFERLEN, 1024);
    block.write(CTRL, CTRL_EN | (31 << CTRL_BPW_SHIFT));
    // SAFETY: the buffers outlive the burst, which ends within START.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: Some(tx.addr()), rx: Some(rx.addr()) }) };
    block.write(START, START_GO);
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_DONE, "{s:#x}");
    assert_eq!(rx.bytes(), tx.bytes(), "32-bit words: 4 bytes each");

    // 16-bit words from an odd address.
    block.write(CTRL, CTRL_EN | (15 << CTRL_BPW_SHIFT));
    // SAFETY: START refuses the descriptor; nothing is read.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: Some(tx.addr() + 1), rx: None }) };
    block.write(START, START_GO);
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR, "refused: {s:#x}");
    block.write(RESET, 1);
    assert_eq!(block.read(DMACTRL), 0, "RESET clears the descriptor");
}

/// Starts a 4096-word burst of 40 µs words from `TX_IOVA` to `RX_IOVA`
/// (one page each, mapped) and sleeps 10 ms into it.
fn slow_burst_under_way(block: &SpiController) {
    block.write(CLKDIV, 1000);
    block.write(XFERLEN, 4096);
    // SAFETY: the callers keep the mapped buffers alive until the burst ends.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: Some(TX_IOVA), rx: Some(RX_IOVA) }) };
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(10));
}

/// The first word whose RX byte is not the TX byte: the rest must be untouched (zero).
fn first_unwritten(tx: &Pages, rx: &Pages) -> usize {
    let k = rx.bytes().iter().zip(tx.bytes()).position(|(r, t)| r != t).expect("a word RX memory did not get");
    assert!(rx.bytes()[k..].iter().all(|&b| b == 0), "memory written after the unmap");
    k
}

#[test]
fn an_unmap_during_a_burst_stops_the_engine_using_its_copy_of_the_translation() {
    let (lab, block, dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    map(&iommu, TX_IOVA, &tx, 1, Perm::READ);
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);

    // Lazy: the rest of the page is reached through the stale IOTLB entry.
    slow_burst_under_way(&block);
    iommu.unmap(RX_IOVA, 4096).unwrap();
    assert!(block.irq().wait(Some(Duration::from_secs(5))));
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_DONE, "{s:#x}");
    let k = first_unwritten(&tx, &rx);
    assert!((1..4096).contains(&k), "unmapped after {k} words");
    assert_eq!(iommu.stats().stale_hits, 1);

    // Strict: the rest of the page faults at its next word.
    map(&iommu, RX_IOVA, &rx, 1, Perm::WRITE);
    iommu.invalidate(RX_IOVA, 4096);
    let words_before = dev.words();
    block.write(IRQSTAT, IRQ_DONE);
    slow_burst_under_way(&block);
    iommu.unmap(RX_IOVA, 4096).unwrap();
    iommu.invalidate(RX_IOVA, 4096);
    assert!(block.irq().wait(Some(Duration::from_secs(5))));
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR | STATUS_DMAFAULT, "{s:#x}");
    let k = dev.words() - words_before;
    assert!((1..4096).contains(&k), "unmapped after {k} words");
    let fault = u64::from(block.read(DMAFAULT_LO)) | u64::from(block.read(DMAFAULT_HI)) << 32;
    assert_eq!(fault, RX_IOVA + k, "the fault is at the first word after the unmap");
    assert_eq!(iommu.faults(), [DmaFault { iova: RX_IOVA + k, write: true, reason: FaultReason::NotMapped }]);
    iommu.unmap(TX_IOVA, 4096).unwrap();
}

#[test]
fn a_burst_started_in_passthrough_uses_host_addresses_and_one_started_translated_stays_translated() {
    let (lab, block, _dev) = dma_block();
    let iommu = lab.default_iommu();
    block.attach_iommu(&iommu);
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    pattern(&mut tx);
    iommu.set_passthrough(true);
    let (s, _) = run(&block, DmaDescriptor { tx: Some(tx.addr()), rx: Some(rx.addr()) }, 4096, 8);
    assert_eq!(s & (STATUS_DONE | STATUS_ERR), STATUS_DONE, "{s:#x}");
    assert_eq!(rx.bytes(), tx.bytes());
    assert_eq!(iommu.stats(), IommuStats::default(), "nothing translated");

    // Passthrough switched on mid-burst does not turn the IOVAs into host pointers.
    iommu.set_passthrough(false);
    map(&iommu, TX_IOVA, &tx, 1, Perm::READ);
    block.write(IRQSTAT, IRQ_DONE);
    block.write(CLKDIV, 1000);
    block.write(XFERLEN, 4096);
    // SAFETY: the IOMMU maps TX; the burst writes no memory.
    unsafe { block.load_dma_descriptor(DmaDescriptor { tx: Some(TX_IOVA), rx: None }) };
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(2));
    iommu.set_passthrough(true);
    iommu.unmap(TX_IOVA, 4096).unwrap();
    iommu.invalidate(TX_IOVA, 4096);
    assert!(block.irq().wait(Some(Duration::from_secs(5))));
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_ERR | STATUS_DMAFAULT), STATUS_ERR | STATUS_DMAFAULT, "{s:#x}");
    assert_eq!(iommu.stats().faults, 1);
}

/// Answers the complement of each word and notes what it saw: MOSI, the
/// word's start, and when it was handed over.
#[derive(Clone, Default)]
struct Witness(std::sync::Arc<std::sync::Mutex<Vec<(u32, Instant, Instant)>>>);

impl SpiDeviceModel for Witness {
    fn chip_select(&mut self, _asserted: bool, _at: Instant) {}
    fn exchange(&mut self, mosi: u32, _bits: u8, at: Instant) -> u32 {
        self.0.lock().unwrap().push((mosi, at, now()));
        !mosi
    }
}

#[test]
fn a_polled_burst_hands_a_device_each_word_once_in_order_at_its_start_and_only_after_its_end() {
    let witness = Witness::default();
    let (_lab, block) = block_on(LabConfig::default(), witness.clone());
    let (mut tx, rx) = (Pages::new(2), Pages::new(2));
    pattern(&mut tx);
    // 5000 words from the middle of a page: chunks meet a page boundary and the polls' instants.
    let (len, offset) = (5000, 1500);
    let d = DmaDescriptor { tx: Some(tx.addr() + offset), rx: Some(rx.addr() + offset) };
    block.write(CTRL, CTRL_EN | (7 << CTRL_BPW_SHIFT));
    block.write(XFERLEN, len);
    // SAFETY: `tx` and `rx` outlive the burst, which ends before the loop does.
    unsafe { block.load_dma_descriptor(d) };
    block.write(START, START_GO);
    let mut polls = 0;
    while block.read(STATUS) & STATUS_DONE == 0 {
        polls += 1;
    }
    let seen = witness.0.lock().unwrap().clone();
    assert_eq!(seen.len(), len as usize, "after {polls} polls");
    let at0 = seen[0].1;
    for (k, &(mosi, at, handed)) in seen.iter().enumerate() {
        assert_eq!(mosi, u32::from(tx.bytes()[offset as usize + k]), "word {k}");
        assert_eq!(at, at0.add_ns(k as u64 * WORD_NS), "word {k} starts back to back");
        assert!(
            handed >= at.add_ns(WORD_NS),
            "word {k} handed over {} ns before its end",
            at.add_ns(WORD_NS).ns_since(handed)
        );
    }
    let range = offset as usize..offset as usize + len as usize;
    assert!(rx.bytes()[range.clone()].iter().zip(&tx.bytes()[range]).all(|(r, t)| *r == !*t), "RX holds the answers");
    assert_eq!(block.clocked().words, u64::from(len));
    assert_eq!(block.clocked().wire_ns, u64::from(len) * WORD_NS);
}

/// The MISO of every word in `block`'s trace, taken.
fn traced_miso(block: &SpiController) -> Vec<u32> {
    let trace = block.trace_take();
    trace
        .events
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::Word { miso, .. } => Some(miso),
            TraceEvent::Cs { .. } => None,
        })
        .collect()
}

#[test]
fn answers_keep_only_the_words_bits_in_dma_memory_the_rx_fifo_and_the_trace() {
    // The witness answers !mosi: every bit above the word's 12 is set.
    let (_lab, block) = block_on(LabConfig::default(), Witness::default());
    let (mut tx, rx) = (Pages::new(1), Pages::new(1));
    let words: Vec<u16> = (0..300u16).map(|i| (i * 13) & 0xFFF).collect();
    for (k, w) in words.iter().enumerate() {
        tx.bytes_mut()[2 * k..2 * k + 2].copy_from_slice(&w.to_ne_bytes());
    }
    block.trace_start(1024);
    let d = DmaDescriptor { tx: Some(tx.addr()), rx: Some(rx.addr()) };
    let (status, _) = run(&block, d, words.len() as u32, 12);
    assert_eq!(status & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    for (k, w) in words.iter().enumerate() {
        let got = u16::from_ne_bytes([rx.bytes()[2 * k], rx.bytes()[2 * k + 1]]);
        assert_eq!(got, !w & 0xFFF, "DMA word {k}");
    }
    let traced = traced_miso(&block);
    assert_eq!(traced, words.iter().map(|w| u32::from(!w & 0xFFF)).collect::<Vec<_>>(), "the trace's MISO");
    // The FIFO path: one word.
    block.write(IRQSTAT, IRQ_DONE);
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0x123);
    block.write(START, START_GO);
    while block.read(STATUS) & STATUS_DONE == 0 {}
    assert_eq!(block.read(RXDATA), !0x123 & 0xFFF, "the RX FIFO's word");
}

#[test]
fn answers_of_words_narrower_than_a_byte_keep_only_their_bits_in_dma_memory_and_the_trace() {
    // The witness answers !mosi: the 3 bits above a 5-bit word are set.
    let (_lab, block) = block_on(LabConfig::default(), Witness::default());
    let (mut tx, rx) = (Pages::new(2), Pages::new(2));
    // Across a page boundary, so that the byte lane's chunks split there.
    let (len, offset) = (600usize, 4096 - 250);
    for k in 0..len {
        tx.bytes_mut()[offset + k] = (k * 7) as u8 & 0x1F;
    }
    block.trace_start(1024);
    let d = DmaDescriptor { tx: Some(tx.addr() + offset as u64), rx: Some(rx.addr() + offset as u64) };
    let (status, _) = run(&block, d, len as u32, 5);
    assert_eq!(status & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    let expected: Vec<u8> = (0..len).map(|k| !tx.bytes()[offset + k] & 0x1F).collect();
    assert_eq!(&rx.bytes()[offset..offset + len], &expected[..], "DMA memory");
    let traced = traced_miso(&block);
    assert_eq!(traced, expected.iter().map(|&b| u32::from(b)).collect::<Vec<_>>(), "the trace's MISO");
}
