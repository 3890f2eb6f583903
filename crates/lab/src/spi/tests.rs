use super::regs::*;
use super::*;
use crate::devices::Loopback;
use crate::trace::TraceEvent;
use crate::LabConfig;
use std::time::Duration;
use wirespeed_time::now;

fn block_with(config: LabConfig, spi: SpiControllerConfig) -> (Lab, SpiController) {
    let lab = Lab::new(config);
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, ..spi });
    block.attach(0, Loopback::new());
    block.write(CS, CS_ASSERT);
    (lab, block)
}

fn block() -> (Lab, SpiController) {
    block_with(LabConfig::default(), SpiControllerConfig::default())
}

/// Polls `STATUS` until `DONE`, for at most five seconds.
fn wait_done(block: &SpiController) -> u32 {
    let limit = now().add_ns(5_000_000_000);
    loop {
        let s = block.read(STATUS);
        if s & STATUS_DONE != 0 || now() > limit {
            return s;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[test]
fn a_divider_slower_than_a_hertz_gives_a_word_time_not_a_panic() {
    // SCLK = 200 MHz / 0xFFFF_FFFF is below 1 Hz; a client may write any value.
    let (_lab, block) = block();
    block.write(CLKDIV, u32::MAX);
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0xA5);
    block.write(START, START_GO);
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE | STATUS_ERR), STATUS_BUSY, "one word takes minutes: {s:#x}");
    block.write(RESET, 1);
    assert_eq!(block.read(STATUS) & (STATUS_BUSY | STATUS_ERR), 0);

    // A block clocked at 1 Hz, at its slowest divider and widest words.
    let (_lab, block) =
        block_with(LabConfig::default(), SpiControllerConfig { base_clock_hz: 1, ..SpiControllerConfig::default() });
    block.write(CTRL, CTRL_EN | (31 << CTRL_BPW_SHIFT));
    block.write(CLKDIV, u32::MAX);
    block.write(XFERLEN, 0xFF_FFFF);
    block.write(TXDATA, 1);
    block.write(IRQEN, IRQ_DONE);
    block.write(START, START_GO);
    assert_eq!(block.read(STATUS) & (STATUS_BUSY | STATUS_ERR), STATUS_BUSY);
    assert!(!block.irq().is_raised());
}

#[test]
fn a_word_lasts_its_bits_over_sclk_exactly_whatever_the_divider() {
    // 200 MHz base: one SCLK period is 5 ns × CLKDIV, an exact number of ns.
    for (div, bits, ns) in [(3u32, 8u32, 120u64), (3, 16, 240), (7, 32, 1_120), (2, 8, 80), (6, 8, 240)] {
        let (_lab, block) = block();
        block.trace_start(16);
        block.write(CTRL, CTRL_EN | ((bits - 1) << CTRL_BPW_SHIFT));
        block.write(CLKDIV, div);
        block.write(XFERLEN, 2);
        block.write_fifo(&[1, 2]);
        block.write(START, START_GO);
        assert_ne!(wait_done(&block) & STATUS_DONE, 0);
        let words: Vec<(Instant, Instant)> = block
            .trace_take()
            .events
            .iter()
            .filter_map(|e| match *e {
                TraceEvent::Word { start, end, .. } => Some((start, end)),
                TraceEvent::Cs { .. } => None,
            })
            .collect();
        assert_eq!(words.len(), 2);
        for (start, end) in &words {
            assert_eq!(end.ns_since(*start), ns, "{bits} bits at 200 MHz / {div}");
        }
        assert_eq!(words[1].0, words[0].1, "back to back");
    }
}
#[test]
fn the_clocked_totals_add_up_every_word_that_shifted_and_only_those() {
    let (_lab, block) = block();
    let before = block.clocked();
    // Two bursts: 3 words of 8 bits at 200 MHz / 3 (120 ns each), then 2
    // of 16 bits at / 7 (560 ns each).
    for (div, bits, words) in [(3u32, 8u32, 3u32), (7, 16, 2)] {
        block.write(CTRL, CTRL_EN | ((bits - 1) << CTRL_BPW_SHIFT));
        block.write(CLKDIV, div);
        block.write(XFERLEN, words);
        block.write_fifo(&vec![0x5A; words as usize]);
        block.write(START, START_GO);
        assert_ne!(wait_done(&block) & STATUS_DONE, 0);
        for _ in 0..words {
            block.read(RXDATA);
        }
    }
    let c = block.clocked().since(before);
    assert_eq!(c, Clocked { words: 5, bits: 3 * 8 + 2 * 16, wire_ns: 3 * 120 + 2 * 560 });
    // A burst that has not shifted yet adds nothing.
    block.write(CLKDIV, u32::MAX);
    block.write(XFERLEN, 1);
    block.write(TXDATA, 1);
    block.write(START, START_GO);
    assert_eq!(block.clocked().since(before), c);
    block.write(RESET, 1);
}

#[test]
fn a_huge_rx_threshold_is_a_threshold_never_reached_not_an_overflow() {
    let (_lab, block) = block_with(LabConfig { instant_wire: true, ..LabConfig::default() }, Default::default());
    block.write(RXTHR, u32::MAX);
    block.write(IRQEN, IRQ_RXTH);
    block.write(XFERLEN, 4);
    block.write_fifo(&[1, 2]);
    block.write(START, START_GO);
    // Two words shifted; the burst waits for two more.
    assert_eq!(block.read(RXDATA), 1);
    assert_eq!(block.read(RXDATA), 2);
    let s = block.read(STATUS);
    assert_eq!(s & (STATUS_BUSY | STATUS_ERR), STATUS_BUSY);
    assert!(!block.irq().is_raised());
    block.write_fifo(&[3, 4]);
    assert_eq!(block.read(RXDATA), 3);
    assert!(!block.irq().is_raised());
}

#[test]
fn words_waiting_to_shift_stay_in_the_tx_fifo() {
    // About 10 s per 8-bit word: nothing but the first word starts during the test.
    let (_lab, block) = block();
    block.write(CLKDIV, 0x1000_0000);
    let depth = block.read(FIFOSIZE);
    block.write(XFERLEN, 2 * depth);
    block.write_fifo(&vec![0x55; depth as usize]);
    assert_eq!(tx_level(block.read(STATUS)), depth);
    block.write(START, START_GO);
    let s = block.read(STATUS);
    assert_eq!(tx_level(s), depth - 1, "only the first word is in the shifter: {s:#x}");
    block.write(TXDATA, 0x55);
    let s = block.read(STATUS);
    assert_eq!((tx_level(s), s & STATUS_ERR), (depth, 0), "{s:#x}");
    block.write(TXDATA, 0x55);
    let s = block.read(STATUS);
    assert_eq!((tx_level(s), s & STATUS_ERR), (depth, STATUS_ERR), "a push into a full FIFO: {s:#x}");
}

fn words_in(trace: &crate::trace::Trace) -> usize {
    trace.events.iter().filter(|e| matches!(e, TraceEvent::Word { .. })).count()
}

#[test]
fn the_trace_holds_what_shifted_while_it_recorded_and_nothing_else() {
    let (_lab, block) = block();
    // Two words shift (1.6 µs) with no register access after START.
    block.trace_start(16);
    block.write(XFERLEN, 2);
    block.write_fifo(&[1, 2]);
    block.write(CLKDIV, 20);
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(2));
    block.trace_stop();
    let tr = block.trace_take();
    assert_eq!(words_in(&tr), 2, "words that shifted before the trace stopped: {tr:?}");
    assert_ne!(block.read(STATUS) & STATUS_DONE, 0);

    // Two words shift before the trace starts: they are not in it.
    block.write(XFERLEN, 2);
    block.write_fifo(&[3, 4]);
    block.write(START, START_GO);
    std::thread::sleep(Duration::from_millis(2));
    block.trace_start(16);
    assert_ne!(block.read(STATUS) & STATUS_DONE, 0);
    let tr = block.trace_take();
    assert_eq!(words_in(&tr), 0, "words that shifted before the trace started: {tr:?}");
}

#[test]
fn reset_after_a_burst_shifted_leaves_what_the_device_received() {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns: 0, ..SpiControllerConfig::default() });
    let dev = Loopback::new();
    block.attach(0, dev.clone());
    block.write(CS, CS_ASSERT);
    block.trace_start(16);
    block.write(XFERLEN, 2);
    block.write_fifo(&[1, 2]);
    block.write(START, START_GO);
    // Both words (160 ns) are on the wire long before the reset.
    std::thread::sleep(Duration::from_millis(2));
    block.write(RESET, 1);
    assert_eq!(dev.words(), 2, "the device saw the words that shifted");
    assert_eq!(words_in(&block.trace_take()), 2);
}

#[test]
fn clearing_done_after_the_burst_ended_clears_it() {
    let (_lab, block) = block();
    block.write(XFERLEN, 1);
    block.write(TXDATA, 1);
    block.write(START, START_GO);
    // The word (80 ns) has shifted long before DONE is cleared, unread.
    std::thread::sleep(Duration::from_millis(2));
    block.write(IRQSTAT, IRQ_DONE);
    assert_eq!(block.read(IRQSTAT) & IRQ_DONE, 0, "DONE rose before the clear");
    assert_eq!(block.read(STATUS) & (STATUS_BUSY | STATUS_DONE), 0);
    assert_eq!(block.read(RXDATA), 1);
}

#[test]
fn fifo_levels_beyond_their_field_do_not_spill_into_the_next() {
    let spi = SpiControllerConfig { fifo_bytes: 256, ..SpiControllerConfig::default() };
    let (_lab, block) = block_with(LabConfig { instant_wire: true, ..LabConfig::default() }, spi);
    block.write_fifo(&[0x5A; 256]);
    let s = block.read(STATUS);
    assert_eq!((tx_level(s), rx_level(s), s >> 24), (0xFF, 0, 0), "{s:#x}");
    block.write(XFERLEN, 256);
    block.write(START, START_GO);
    let s = block.read(STATUS);
    assert_eq!((tx_level(s), rx_level(s), s >> 24), (0, 0xFF, 0), "{s:#x}");
    assert_eq!(s & (STATUS_BUSY | STATUS_DONE), STATUS_DONE);
}

#[test]
fn asserting_a_chip_select_the_block_does_not_have_is_refused() {
    let (_lab, block) = block(); // 4 chip selects, CS0 asserted
    block.trace_start(16);
    for line in [4u32, 15] {
        block.write(CS, CS_ASSERT | line);
        assert_ne!(block.read(STATUS) & STATUS_ERR, 0, "CS{line}");
        assert_eq!(block.read(CS), CS_ASSERT, "CS0 stays selected");
        block.write(RESET, 1);
    }
    assert!(block.trace_take().events.is_empty(), "no edge on a line that does not exist");
    // Naming a missing line without asserting it selects nothing, which is fine.
    block.write(CS, 7);
    assert_eq!(block.read(STATUS) & STATUS_ERR, 0);
    assert_eq!(block.read(CS), 7);
}

#[test]
fn a_block_no_hardware_could_have_is_refused_with_what_is_allowed() {
    let lab = Lab::new(LabConfig::default());
    let build = |c: SpiControllerConfig| lab.try_spi_controller(c).map(|_| ());
    let d = SpiControllerConfig::default;
    let (max_fifo, max_clock) = (SpiControllerConfig::MAX_FIFO_BYTES, u64::from(u32::MAX));
    let refused = [
        // No FIFO: not one word could be pushed, so no transfer could start.
        (SpiControllerConfig { fifo_bytes: 0, ..d() }, SpiConfigError::FifoBytes { fifo_bytes: 0 }),
        (
            SpiControllerConfig { fifo_bytes: max_fifo + 1, ..d() },
            SpiConfigError::FifoBytes { fifo_bytes: max_fifo + 1 },
        ),
        // The model sets a block's FIFO memory aside up front (Model::new): unchecked, this one aborted the process.
        (SpiControllerConfig { fifo_bytes: u32::MAX, ..d() }, SpiConfigError::FifoBytes { fifo_bytes: u32::MAX }),
        (SpiControllerConfig { base_clock_hz: 0, ..d() }, SpiConfigError::BaseClock { base_clock_hz: 0 }),
        (
            SpiControllerConfig { base_clock_hz: max_clock + 1, ..d() },
            SpiConfigError::BaseClock { base_clock_hz: max_clock + 1 },
        ),
    ];
    for (config, want) in refused {
        assert_eq!(build(config), Err(want));
    }
    let e = SpiConfigError::FifoBytes { fifo_bytes: 0 }.to_string();
    assert!(e.contains("FIFO of 0 bytes") && e.contains(&format!("allowed: 1..={max_fifo}")), "{e}");
    let e = SpiConfigError::BaseClock { base_clock_hz: 0 }.to_string();
    assert!(e.contains("clock of 0 Hz") && e.contains(&format!("allowed: 1..={max_clock} Hz")), "{e}");
    // The limits themselves are blocks.
    assert_eq!(build(SpiControllerConfig { fifo_bytes: 1, ..d() }), Ok(()));
    assert_eq!(build(SpiControllerConfig { fifo_bytes: max_fifo, ..d() }), Ok(()));
    assert_eq!(build(SpiControllerConfig { base_clock_hz: 1, ..d() }), Ok(()));
    assert_eq!(build(SpiControllerConfig { base_clock_hz: max_clock, ..d() }), Ok(()));
}

#[test]
fn a_one_byte_fifo_shifts_bytes_and_refuses_a_wider_word_at_its_push() {
    let spi = SpiControllerConfig { fifo_bytes: 1, ..SpiControllerConfig::default() };
    let (_lab, block) = block_with(LabConfig::default(), spi);
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0xA5);
    block.write(START, START_GO);
    assert_eq!(wait_done(&block) & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    assert_eq!(block.read(RXDATA), 0xA5);
    // A 16-bit word does not fit: its push is an error at once.
    block.write(CTRL, CTRL_EN | (15 << CTRL_BPW_SHIFT));
    block.write(TXDATA, 0xBEEF);
    assert_eq!(block.read(STATUS) & (STATUS_ERR | STATUS_BUSY), STATUS_ERR);
}

#[test]
fn a_block_without_native_chip_selects_serves_a_device_on_an_external_one() {
    let lab = Lab::new(LabConfig::default());
    let spi = SpiControllerConfig { num_cs: 0, power_up_ns: 0, ..SpiControllerConfig::default() };
    let block = lab.try_spi_controller(spi).expect("GPIO chip selects only");
    let cs = block.attach_external_cs(Loopback::new());
    cs.drive(false, now());
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0x3C);
    block.write(START, START_GO);
    assert_eq!(wait_done(&block) & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    assert_eq!(block.read(RXDATA), 0x3C, "the loopback answered on its external chip select");
}

#[test]
fn a_device_on_a_chip_select_the_block_does_not_have_is_refused_and_nothing_changes() {
    let (lab, block) = block(); // 4 chip selects, a loopback on CS0, asserted
    let e = block.try_attach(4, Loopback::new()).unwrap_err();
    assert_eq!(e, NoSuchChipSelect { block: "spi0", cs: 4, num_cs: 4 });
    assert!(e.to_string().contains("CS 4 asked, allowed: 0..=3"), "{e}");
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| block.attach(9, Loopback::new()))).unwrap_err();
    assert!(panic.downcast_ref::<String>().is_some_and(|m| m.contains("CS 9 asked")), "attach panics saying why");
    // CS0's loopback still answers.
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0x5A);
    block.write(START, START_GO);
    assert_eq!(wait_done(&block) & (STATUS_DONE | STATUS_ERR), STATUS_DONE);
    assert_eq!(block.read(RXDATA), 0x5A);
    // A block with no native chip selects points to the external ones.
    let spi = SpiControllerConfig { num_cs: 0, ..SpiControllerConfig::default() };
    let gpio_cs_only = lab.try_spi_controller(spi).unwrap();
    let e = gpio_cs_only.try_attach(0, Loopback::new()).unwrap_err();
    assert!(e.to_string().contains("no native chip selects") && e.to_string().contains("attach_external_cs"), "{e}");
    assert_eq!(block.try_attach(3, Loopback::new()), Ok(()), "the last chip select exists");
}

#[test]
fn ready_rises_power_up_time_after_power_on_even_when_status_needs_no_clock() {
    let lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
    let power_up_ns = 20_000_000;
    let block = lab.spi_controller(SpiControllerConfig { power_up_ns, ..SpiControllerConfig::default() });
    block.attach(0, Loopback::new());
    // An instant burst ends at its start: the STATUS reads after it need no clock while powered and ready.
    block.write(CS, CS_ASSERT);
    block.write(XFERLEN, 1);
    block.write(TXDATA, 0x5A);
    block.write(START, START_GO);
    assert_eq!(block.read(STATUS) & (STATUS_DONE | STATUS_READY), STATUS_DONE | STATUS_READY);
    block.write(PWR, 0);
    // Before the write: the block's power-up starts no sooner.
    let on = now();
    block.write(PWR, PWR_ON);
    let status = block.read(STATUS);
    // Only a read that ended within the power-up time must see it not ready (the host may stall us past it).
    if now().ns_since(on) < power_up_ns {
        assert_eq!(status & STATUS_READY, 0, "not ready right after power-up");
    }
    let limit = on.add_ns(5_000_000_000);
    while block.read(STATUS) & STATUS_READY == 0 {
        assert!(now() < limit, "READY never rose");
        std::thread::sleep(Duration::from_micros(100));
    }
    let after = now().ns_since(on);
    assert!(after >= power_up_ns, "READY rose {after} ns after PWR.ON, before the power-up time");
    assert_ne!(block.read(STATUS) & STATUS_READY, 0, "and stays up");
}

#[test]
fn fifo_reads_pop_what_as_many_reads_would_and_flag_an_underflow_as_they_do() {
    let (_lab, block) = block_with(LabConfig { instant_wire: true, ..LabConfig::default() }, Default::default());
    block.write(XFERLEN, 5);
    block.write_fifo(&[0x11, 0x22, 0x33, 0x44, 0x55]);
    block.write(START, START_GO);
    assert_ne!(wait_done(&block) & STATUS_DONE, 0);
    let mut got = [0u8; 2];
    block.read_fifo_bytes(&mut got);
    assert_eq!(got, [0x11, 0x22]);
    block.drop_fifo(1);
    assert_eq!(rx_level(block.read(STATUS)), 2, "two words left");
    assert_eq!(block.read(STATUS) & STATUS_ERR, 0);
    // One word more than the FIFO holds: the last read underflows, as a single read would.
    let mut got = [0xFFu8; 3];
    block.read_fifo_bytes(&mut got);
    assert_eq!(got, [0x44, 0x55, 0]);
    assert_ne!(block.read(STATUS) & STATUS_ERR, 0, "an empty FIFO read is an error");
}

#[test]
fn fifo_writes_of_bytes_or_an_iterator_push_what_as_many_writes_would_and_flag_an_overflow_as_they_do() {
    let (_lab, block) = block_with(LabConfig { instant_wire: true, ..LabConfig::default() }, Default::default());
    let depth = block.read(FIFOSIZE);
    block.write(XFERLEN, 3);
    block.write_fifo_bytes(&[0x11, 0x22, 0x33]);
    assert_eq!(tx_level(block.read(STATUS)), 3);
    block.write(START, START_GO);
    assert_ne!(wait_done(&block) & STATUS_DONE, 0);
    let mut got = [0u8; 3];
    block.read_fifo_bytes(&mut got);
    assert_eq!(got, [0x11, 0x22, 0x33], "the loopback echoes the words in order");
    assert_eq!(block.read(STATUS) & STATUS_ERR, 0);
    // One word more than the FIFO holds: the last push overflows, as a single write would.
    block.write(RESET, 1);
    block.write(XFERLEN, depth + 1);
    block.write_fifo_iter(std::iter::repeat_n(0x5A, depth as usize + 1));
    let s = block.read(STATUS);
    assert_eq!((tx_level(s), s & STATUS_ERR), (depth, STATUS_ERR), "a push into a full FIFO: {s:#x}");
}
