//! GPIO chip select on the lab: the SPI core drives a lab GPIO line through
//! `GpioCs`, the line's pad is wired to a device's CS input on the WSPI
//! block, and the bus trace shows what a scope would.

#![cfg(feature = "lab")]

use std::sync::Arc;
use wirespeed::backend::lab::{gpio::open, LabSpi};
use wirespeed::gpio::{Chip, CsPolarity, GpioCs};
use wirespeed::spi::{Bus, DeviceConfig, Policy, SpiDevice, SpiError, Transfer};
use wirespeed_lab::devices::{Loopback, RegFile, REGFILE_READ, REGFILE_WRITE};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::trace::{cs_high_gaps_ns, cs_windows, CsWindow, TraceEvent, GPIO_CS_BASE};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

/// The GPIO line used as chip select (any line works; not 0 on purpose).
const CS_LINE: u32 = 5;
/// The trace's number for the first externally selected device.
const GPIO_TRACE_LINE: u8 = GPIO_CS_BASE;

struct Board {
    _lab: Lab,
    block: SpiController,
    gpio_hw: GpioChip,
    _chip: Chip,
    loopback: Loopback,
    regfile: RegFile,
    bus: Bus,
    cs: Arc<GpioCs>,
}

/// A loopback on native CS 0, and a register file selected by GPIO line
/// `CS_LINE` of a lab GPIO chip.
fn board(policy: Policy) -> Board {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    let loopback = Loopback::new();
    block.attach(0, loopback.clone());
    let regfile = RegFile::new(256);
    let cs_input = block.attach_external_cs(regfile.clone());
    let gpio_hw = lab.gpio_chip(GpioChipConfig::default());
    let chip = open(&gpio_hw).unwrap();
    // Request (and so drive inactive) before wiring, as a board holds CS up with a pull.
    let cs = Arc::new(GpioCs::request(&chip, CS_LINE, "regfile-cs", CsPolarity::ActiveLow).unwrap());
    gpio_hw.output_pin(CS_LINE).connect(cs_input, now());
    let bus = Bus::new(LabSpi::new(block.clone()), policy);
    Board { _lab: lab, block, gpio_hw, _chip: chip, loopback, regfile, bus, cs }
}

impl Board {
    fn gpio_device(&self, cfg: DeviceConfig) -> SpiDevice {
        self.bus.device(cfg.gpio_cs(self.cs.clone())).unwrap()
    }
}

fn windows_of(w: &[CsWindow], line: u8) -> Vec<&CsWindow> {
    w.iter().filter(|w| w.line == line).collect()
}

#[test]
fn register_file_round_trips_through_a_gpio_chip_select() {
    let b = board(Policy::fast());
    let dev = b.gpio_device(DeviceConfig::new(0, 20_000_000));
    let data: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0x5A).collect();
    let mut tx = vec![REGFILE_WRITE, 0x40];
    tx.extend_from_slice(&data);
    dev.write(&tx).unwrap();
    assert_eq!((0..32).map(|i| b.regfile.peek(0x40 + i)).collect::<Vec<_>>(), data);
    let mut back = vec![0u8; 32];
    dev.write_then_read(&[REGFILE_READ, 0x40], &mut back).unwrap();
    assert_eq!(back, data);
    // Prepared messages and the async queue go through the same chip select.
    let mut msg = dev
        .prepare(vec![
            wirespeed::spi::OwnedTransfer::write(vec![REGFILE_READ, 0x41]),
            wirespeed::spi::OwnedTransfer::read(2),
        ])
        .unwrap();
    dev.run(&mut msg).unwrap();
    assert_eq!(msg.rx(1).unwrap(), &data[1..3]);
    let (msg, r) = dev.submit(msg).wait();
    r.unwrap();
    assert_eq!(msg.rx(1).unwrap(), &data[1..3]);
    assert_eq!(b.loopback.words(), 0, "the native device was never selected");
    assert!(b.gpio_hw.value(CS_LINE).unwrap(), "CS rests high (inactive) after the messages");
}

#[test]
fn trace_shows_gpio_cs_edges_around_the_words_with_setup_and_hold() {
    let b = board(Policy::fast());
    let (setup, hold, inactive) = (2_000u32, 1_500u32, 3_000u32);
    let dev = b.gpio_device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(setup, hold, inactive));
    b.block.trace_start(1 << 16);
    for i in 0..50u8 {
        dev.write(&[REGFILE_WRITE, i, i ^ 0xFF]).unwrap();
    }
    let trace = b.block.trace_take();
    assert_eq!(trace.dropped, 0);
    let cs_edges: Vec<_> = trace.events.iter().filter(|e| matches!(e, TraceEvent::Cs { .. })).collect();
    assert_eq!(cs_edges.len(), 100, "one assertion and one release per message");
    assert!(
        cs_edges.iter().all(|e| matches!(e, TraceEvent::Cs { line, .. } if *line == GPIO_TRACE_LINE)),
        "every edge is on the GPIO chip select: {cs_edges:?}"
    );
    let w = cs_windows(&trace);
    assert_eq!(w.len(), 50);
    let mut setups = Vec::new();
    for (i, win) in w.iter().enumerate() {
        assert_eq!(win.mosi, vec![REGFILE_WRITE, i as u8, i as u8 ^ 0xFF], "window {i}");
        let c2c = win.cs_to_clock_ns().unwrap();
        let hold_seen = win.clock_to_cs_ns().unwrap();
        assert!(c2c >= u64::from(setup), "window {i}: CS→clock {c2c} ns < setup {setup} ns");
        assert!(hold_seen >= u64::from(hold), "window {i}: clock→CS {hold_seen} ns < hold {hold} ns");
        setups.push(c2c);
    }
    // A deadline, not a sleep rounded up to scheduler ticks: the median
    // setup stays far below a tick (a preempted window or two may not).
    setups.sort_unstable();
    let median = setups[setups.len() / 2];
    assert!(median < u64::from(setup) + 500_000, "median CS→clock {median} ns: {setups:?}");
    let gaps = cs_high_gaps_ns(&w);
    assert!(gaps.iter().all(|&g| g >= u64::from(inactive)), "inactive time violated: {gaps:?}");
    // No word is clocked outside a window of the GPIO chip select.
    let words = trace.events.iter().filter(|e| matches!(e, TraceEvent::Word { .. })).count() as u32;
    assert_eq!(words, w.iter().map(|w| w.words).sum::<u32>());
}

#[test]
fn cs_change_toggles_the_gpio_line_inside_a_message() {
    let b = board(Policy::fast());
    let dev = b.gpio_device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(0, 0, 1_000));
    b.block.trace_start(1 << 12);
    dev.sync(&mut [Transfer::write(&[REGFILE_WRITE, 0, 7]).cs_change(None), Transfer::write(&[REGFILE_WRITE, 1, 8])])
        .unwrap();
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(cs_high_gaps_ns(&w)[0] >= 1_000);
    assert_eq!((b.regfile.peek(0), b.regfile.peek(1)), (7, 8), "each window is its own register access");
}

/// Checks a trace of two devices: no two chip selects active at once, and
/// each window carries its own device's bytes.
fn check_interleaving(w: &[CsWindow], native_payload: &[u8]) {
    for pair in w.windows(2) {
        let end = pair[0].deasserted_at.expect("every window closes");
        assert!(end <= pair[1].asserted_at, "windows overlap: {:?} and {:?}", pair[0], pair[1]);
    }
    for win in w {
        match win.line {
            0 => assert_eq!(win.mosi, native_payload),
            GPIO_TRACE_LINE => assert_eq!(win.mosi[0], REGFILE_WRITE, "{win:?}"),
            l => panic!("unexpected chip select {l}"),
        }
    }
}

#[test]
fn native_and_gpio_devices_interleave_from_one_thread_and_from_two() {
    let b = board(Policy::fast());
    let native = b.bus.device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(100, 100, 100)).unwrap();
    let gpio = b.gpio_device(DeviceConfig::new(0, 20_000_000).cs_timing_ns(100, 100, 100));
    let payload = [0xA5u8; 9];
    // One thread, A B A B.
    b.block.trace_start(1 << 16);
    for i in 0..100u8 {
        let mut rx = [0u8; 9];
        native.sync(&mut [Transfer::duplex(&payload, &mut rx)]).unwrap();
        assert_eq!(rx, payload, "loopback echo");
        gpio.write(&[REGFILE_WRITE, i, i.wrapping_add(1)]).unwrap();
    }
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(w.len(), 200);
    for (k, win) in w.iter().enumerate() {
        let want = if k % 2 == 0 { 0 } else { GPIO_TRACE_LINE };
        assert_eq!(win.line, want, "window {k} strictly alternates");
    }
    check_interleaving(&w, &payload);
    assert!((0..100u8).all(|i| b.regfile.peek(i) == i.wrapping_add(1)));
    // Two threads racing for the bus: the bus lock serializes them, CS included.
    b.block.trace_start(1 << 16);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..300 {
                let mut rx = [0u8; 9];
                native.sync(&mut [Transfer::duplex(&payload, &mut rx)]).unwrap();
                assert_eq!(rx, payload);
            }
        });
        s.spawn(|| {
            for i in 0..300u32 {
                let a = (i % 200) as u8;
                gpio.write(&[REGFILE_WRITE, a, a ^ 0x3C]).unwrap();
            }
        });
    });
    let w = cs_windows(&b.block.trace_take());
    assert_eq!(windows_of(&w, 0).len(), 300);
    assert_eq!(windows_of(&w, GPIO_TRACE_LINE).len(), 300);
    check_interleaving(&w, &payload);
    assert!((0..200u8).all(|a| b.regfile.peek(a) == a ^ 0x3C));
}

#[test]
fn chip_removal_fails_the_transfer_clearly_and_shifts_nothing() {
    let b = board(Policy::fast());
    let dev = b.gpio_device(DeviceConfig::new(0, 20_000_000));
    let native = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    dev.write(&[REGFILE_WRITE, 0x10, 0x11]).unwrap();
    let accesses = b.regfile.accesses();
    b.gpio_hw.remove();
    b.block.trace_start(1 << 12);
    for _ in 0..3 {
        let err = dev.write(&[REGFILE_WRITE, 0x10, 0x99]).unwrap_err();
        match &err {
            SpiError::ChipSelect(text) => {
                assert!(text.contains(&format!("GPIO line {CS_LINE}")) && text.contains("gone"), "{text}")
            }
            other => panic!("expected a chip-select error, got {other:?}"),
        }
        assert!(err.to_string().starts_with("chip select: GPIO line 5"), "{err}");
    }
    let mut rx = [0u8; 2];
    assert!(dev.write_then_read(&[REGFILE_READ, 0x10], &mut rx).is_err());
    let trace = b.block.trace_take();
    assert!(trace.events.is_empty(), "nothing may reach the wire after removal: {:?}", trace.events);
    assert_eq!(b.regfile.peek(0x10), 0x11);
    assert_eq!(b.regfile.accesses(), accesses, "the device was never selected again");
    assert_eq!(b.gpio_hw.accesses_after_removal(), 0, "the stack never touched the removed chip");
    // The bus itself is fine: the native device still works, and gets its own
    // bytes, not those the failed messages preloaded into the FIFO.
    assert!(Policy::fast().preload_fifo, "this check needs the preloading policy");
    let mut echo = [0u8; 3];
    native.sync(&mut [Transfer::duplex(&[1, 2, 3], &mut echo)]).unwrap();
    assert_eq!(echo, [1, 2, 3]);
}

#[test]
fn removal_while_cs_is_held_between_messages_stops_the_next_message() {
    let b = board(Policy::fast());
    let dev = b.gpio_device(DeviceConfig::new(0, 20_000_000));
    // A message ending with cs_change keeps the chip selected for the next one.
    dev.sync(&mut [Transfer::write(&[REGFILE_WRITE, 0x20]).cs_change(None)]).unwrap();
    assert!(!b.gpio_hw.value(CS_LINE).unwrap(), "CS still active after the first message");
    b.gpio_hw.remove();
    b.block.trace_start(1 << 12);
    let err = dev.write(&[0x77]).unwrap_err();
    assert!(matches!(&err, SpiError::ChipSelect(t) if t.contains("gone")), "{err:?}");
    let words = b.block.trace_take().events.iter().filter(|e| matches!(e, TraceEvent::Word { .. })).count();
    assert_eq!(words, 0, "no word is clocked once the chip select is out of control");
    assert_eq!(b.regfile.peek(0x20), 0, "the held access got no data byte");
    assert_eq!(b.gpio_hw.accesses_after_removal(), 0);
}

#[test]
fn a_held_chip_select_that_cannot_be_released_fails_the_next_device_with_its_name() {
    let b = board(Policy::fast());
    let held = b.gpio_device(DeviceConfig::new(0, 20_000_000));
    let native = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    held.sync(&mut [Transfer::write(&[REGFILE_WRITE, 0x20]).cs_change(None)]).unwrap();
    b.gpio_hw.remove();
    b.block.trace_start(1 << 12);
    let err = native.write(&[0x77]).unwrap_err();
    match &err {
        SpiError::ChipSelect(t) => assert!(
            t.contains("another device") && t.contains("cs_change") && t.contains(&format!("GPIO line {CS_LINE}")),
            "the error must say whose select failed: {t}"
        ),
        other => panic!("expected a chip-select error, got {other:?}"),
    }
    assert!(b.block.trace_take().events.is_empty(), "nothing is sent while another device may still be selected");
    // Reported once: the native device is not refused for ever because of a chip that has gone.
    let mut echo = [0u8; 3];
    native.sync(&mut [Transfer::duplex(&[1, 2, 3], &mut echo)]).unwrap();
    assert_eq!(echo, [1, 2, 3]);
}

#[test]
fn an_active_high_gpio_chip_select_selects_with_a_high_level() {
    // A device with an active-high CS: its CS input is the inverted pad (an
    // inverter on the board), so it is selected while the pad is high.
    struct Inverter(Arc<dyn wirespeed_lab::PinSink>);
    impl wirespeed_lab::PinSink for Inverter {
        fn drive(&self, high: bool, at: wirespeed_time::Instant) {
            self.0.drive(!high, at);
        }
    }
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    let loopback = Loopback::new();
    let cs_input = block.attach_external_cs(loopback.clone());
    let hw = lab.gpio_chip(GpioChipConfig::default());
    let chip = open(&hw).unwrap();
    let cs = GpioCs::request(&chip, 2, "hi-cs", CsPolarity::ActiveHigh).unwrap();
    assert!(!hw.value(2).unwrap(), "an active-high CS rests low");
    hw.output_pin(2).connect(Arc::new(Inverter(cs_input)), now());
    let bus = Bus::new(LabSpi::new(block.clone()), Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 20_000_000).gpio_cs(Arc::new(cs))).unwrap();
    let mut rx = [0u8; 4];
    dev.sync(&mut [Transfer::duplex(&[9, 8, 7, 6], &mut rx)]).unwrap();
    assert_eq!(rx, [9, 8, 7, 6], "the device answered: it was selected");
    assert_eq!((loopback.selects(), loopback.words()), (1, 4));
    assert!(!hw.value(2).unwrap());
}
