//! The FIFO path hands words that ended to the devices in runs of words
//! back to back: what the devices see must be what single words would have
//! shown them — every word, in order, at its own instant — whatever the
//! run's length and wherever the shifter stalled.

use super::lane::Lane;
use super::regs::*;
use super::*;
use crate::trace::TraceEvent;
use crate::LabConfig;
use std::sync::Mutex;

/// The words of one call the block made, each with the instant it started.
type Call = Vec<(u32, Instant)>;

/// Echoes every word and keeps, per call the block made, the words with
/// the instant each started.
#[derive(Clone, Default)]
struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl SpiDeviceModel for Recorder {
    fn chip_select(&mut self, _asserted: bool, _at: Instant) {}

    fn exchange(&mut self, mosi: u32, _bits: u8, at: Instant) -> u32 {
        self.calls.lock().unwrap().push(vec![(mosi, at)]);
        mosi
    }

    fn exchange_burst(&mut self, mosi: &[u32], miso: &mut [u32], _bits: u8, at: Instant, word_ns: u64) {
        let words = mosi.iter().enumerate().map(|(i, &m)| (m, at.add_ns(i as u64 * word_ns))).collect();
        self.calls.lock().unwrap().push(words);
        miso.copy_from_slice(mosi);
    }
}

impl Recorder {
    fn words(&self) -> Vec<(u32, Instant)> {
        self.calls.lock().unwrap().iter().flatten().copied().collect()
    }
}

fn block(lab: LabConfig, fifo_bytes: u32) -> (Lab, SpiController, Recorder) {
    let lab = Lab::new(lab);
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, fifo_bytes, ..Default::default() });
    let recorder = Recorder::default();
    block.attach(0, recorder.clone());
    block.write(CS, CS_ASSERT);
    (lab, block, recorder)
}

fn traced_starts(block: &SpiController) -> Vec<(u32, Instant)> {
    block
        .trace_take()
        .events
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::Word { start, mosi, .. } => Some((mosi, start)),
            TraceEvent::Cs { .. } => None,
        })
        .collect()
}

fn wait_done(block: &SpiController) {
    let limit = now().add_ns(5_000_000_000);
    while block.read(STATUS) & STATUS_DONE == 0 {
        assert!(now() < limit, "the burst did not end in 5 s");
        std::thread::yield_now();
    }
}

#[test]
fn a_burst_longer_than_a_run_reaches_the_device_whole_in_order_and_in_a_few_calls() {
    let (_lab, block, recorder) = block(LabConfig { instant_wire: true, ..LabConfig::default() }, 1024);
    let sent: Vec<u8> = (0..600u32).map(|i| (i * 7 + 3) as u8).collect();
    block.trace_start(2048);
    block.write(XFERLEN, sent.len() as u32);
    block.write_fifo_bytes(&sent);
    block.write(START, START_GO);
    wait_done(&block);
    let mut echoed = vec![0u8; sent.len()];
    block.read_fifo_bytes(&mut echoed);
    assert_eq!(echoed, sent, "every word answered, in order");
    assert_eq!(block.read(STATUS) & STATUS_ERR, 0);
    let seen = recorder.words();
    assert_eq!(seen.iter().map(|&(m, _)| m as u8).collect::<Vec<_>>(), sent);
    assert_eq!(seen, traced_starts(&block), "the device and the analyser saw the same words at the same instants");
    // Preloaded words on an instant wire all end at START, back to back:
    // one call a run, a run as long as the chunk it is gathered in.
    let calls = recorder.calls.lock().unwrap().len();
    assert_eq!(calls, sent.len().div_ceil(<u32 as Lane>::CHUNK), "calls for {} words back to back", sent.len());
}

#[test]
fn words_after_a_full_rx_fifo_start_when_a_pop_makes_room_and_reach_the_device_then() {
    // A 4-byte FIFO, words of 8 bits at 200 MHz / 50 (2 µs each): the
    // shifter stops with four words unread and goes on at each pop.
    let (_lab, block, recorder) = block(LabConfig::default(), 4);
    block.trace_start(64);
    block.write(CLKDIV, 50);
    block.write(XFERLEN, 12);
    block.write_fifo(&[0, 1, 2, 3]);
    let before_start = now();
    block.write(START, START_GO);
    let after_start = now();
    let mut next = 4u32;
    let mut echoed = Vec::new();
    let mut pops = Vec::new();
    let limit = now().add_ns(5_000_000_000);
    while echoed.len() < 12 {
        assert!(now() < limit, "only {} words echoed in 5 s", echoed.len());
        let s = block.read(STATUS);
        assert_eq!(s & STATUS_ERR, 0, "status {s:#x}");
        if (s >> STATUS_RXLVL_SHIFT) & 0xFF == 4 {
            // Full: the next word waits for this pop.
            std::thread::sleep(std::time::Duration::from_micros(20));
            pops.push(now());
            echoed.push(block.read(RXDATA));
            if next < 12 {
                block.write(TXDATA, next);
                next += 1;
            }
        } else if (s >> STATUS_RXLVL_SHIFT) & 0xFF > 0 && next == 12 {
            echoed.push(block.read(RXDATA));
        }
    }
    assert_eq!(echoed, (0..12).collect::<Vec<_>>());
    let seen = recorder.words();
    assert_eq!(seen, traced_starts(&block));
    assert_eq!(seen.iter().map(|&(m, _)| m).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
    assert!(
        seen[0].1 >= before_start && seen[0].1 <= after_start,
        "the first word starts at START: {:?} not within {before_start:?}..={after_start:?}",
        seen[0].1
    );
    for (k, &(m, start)) in seen.iter().enumerate().take(4) {
        assert_eq!(start.ns_since(seen[0].1), k as u64 * 2_000, "preloaded word {m} shifts back to back");
    }
    for pair in seen.windows(2) {
        assert!(pair[1].1.ns_since(pair[0].1) >= 2_000, "word {} starts before word {} ended", pair[1].0, pair[0].0);
    }
    // Every word from the fifth on starts after a pop made room for it.
    for (k, &(m, start)) in seen.iter().enumerate().skip(4) {
        let pop = pops[k - 4];
        assert!(start >= pop, "word {m} started before the pop that made room for it");
    }
}
