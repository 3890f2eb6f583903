//! The MCP251xFD driver on the lab: init, echo, faults (bus-off, RX
//! overflow, CRC), and the failed-probe lifecycle.

use std::time::Duration;
use wirespeed::backend::lab::{gpio as labgpio, LabSpi, LabSpidevIo};
use wirespeed::gpio::{Edge, LineSettings, RequestConfig};
use wirespeed::linux::spidev::{Limits, Spidev};
use wirespeed::spi::{Bus as SpiBus, Policy};
use wirespeed::time::now;
use wirespeed_drivers::can::{CanId, Frame};
use wirespeed_drivers::mcp251xfd::{self, BusState, Config, Error, Filter, Mcp251xfd};
use wirespeed_lab::can::tools::{Generator, GeneratorConfig, Recorder};
use wirespeed_lab::can::{BitRates, Bus as CanBus};
use wirespeed_lab::devices::mcp2518fd::{Mcp2518fd, Mcp2518fdConfig, Mode};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::trace::cs_windows;
use wirespeed_lab::{Lab, LabConfig};

const INT_LINE: u32 = 5;

struct Rig {
    _lab: Lab,
    can: CanBus,
    dev: Mcp2518fd,
    block: SpiController,
    _gpio: GpioChip,
    spi: wirespeed::spi::SpiDevice,
    int: Option<wirespeed::gpio::LineRequest>,
}

/// How the driver reaches the chip: the stack's controller driver for the
/// lab block, or the spidev backend over an emulated spidev node of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Controller,
    Spidev,
}

fn rig(bitrate: u32) -> Rig {
    rig_on(bitrate, Path::Controller)
}

fn rig_on(bitrate: u32, path: Path) -> Rig {
    let lab = Lab::new(LabConfig::default());
    let can = CanBus::new(&lab, "can0", BitRates::new(bitrate, 2_000_000)).unwrap();
    let dev = Mcp2518fd::new(&lab, Mcp2518fdConfig::default());
    dev.attach_to_bus(&can, "mcp2518fd");
    let block = lab.spi_controller(Default::default());
    block.attach(0, dev.clone());
    let gpio = lab.gpio_chip(GpioChipConfig::default());
    dev.int_pin().connect(gpio.input_sink(INT_LINE), now());
    let chip = labgpio::open(&gpio).unwrap();
    let int = chip
        .request_lines(&RequestConfig::new("mcp2518fd-int").line(INT_LINE, LineSettings::input().edge(Edge::Falling)))
        .unwrap();
    let bus = SpiBus::new(LabSpi::new(block.clone()), Policy::fast());
    let bus = match path {
        Path::Controller => bus,
        Path::Spidev => {
            let limits = Limits::with_bufsiz(Limits::DEFAULT_BUFSIZ);
            let node = LabSpidevIo::new(bus, 0, 40_000_000, limits);
            SpiBus::with_message_backend(Spidev::with_io(node, "lab spidev0.0", limits).unwrap(), Policy::fast())
        }
    };
    let spi = bus.device(mcp251xfd::device_config(0, 40_000_000)).unwrap();
    Rig { _lab: lab, can, dev, block, _gpio: gpio, spi, int: Some(int) }
}

fn cfg(bitrate: u32) -> Config {
    Config { nominal_bitrate: bitrate, ..Config::default() }
}

fn driver(r: &mut Rig, c: Config) -> Result<Mcp251xfd, Error> {
    Mcp251xfd::new(r.spi.clone(), r.int.take().unwrap(), INT_LINE, c)
}

#[test]
fn init_programs_timing_fifos_and_mode() {
    let mut r = rig(250_000);
    let mut d = driver(&mut r, cfg(250_000)).unwrap();
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
    let nbt = r.dev.peek(0x004, now());
    assert_eq!(nbt, d.plan().nominal.register());
    assert_eq!(d.plan().nominal.bitrate(40_000_000), 250_000);
    assert!(!r.dev.ram_overflow());
    // The time base runs at 1 µs.
    let a = d.time_base().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let b = d.time_base().unwrap();
    assert!((4_000..100_000).contains(&(b - a)), "{a} → {b}");
}

#[test]
fn echo_through_the_driver_with_timestamps() {
    for (crc, tx_timestamps, path) in [
        (false, true, Path::Controller),
        (true, true, Path::Controller),
        (false, false, Path::Controller),
        (true, true, Path::Spidev),
    ] {
        let mut r = rig_on(500_000, path);
        let rec = Recorder::attach(&r.can, 1024);
        let gen =
            Generator::attach(&r.can, "cangen", GeneratorConfig { count: 50, gap_ns: 2_000_000, ..Default::default() })
                .unwrap();
        let mut d = driver(&mut r, Config { crc, tx_timestamps, ..cfg(500_000) }).unwrap();
        gen.start(now());
        let mut last_ts = 0;
        for i in 0..50 {
            let f = d
                .recv(Some(Duration::from_secs(2)))
                .unwrap()
                .unwrap_or_else(|| panic!("frame {i} never came (crc {crc}, {path:?})"));
            let ts = f.timestamp.unwrap();
            assert!(ts > last_ts || i == 0, "timestamps increase");
            last_ts = ts;
            let echo = f.with_id(CanId::Standard(0x078)).unwrap();
            d.send(&echo).unwrap();
        }
        if !tx_timestamps {
            // Each echo completed before the next request arrived: the next
            // send carried its TEF UINC (no reap of its own).
            assert!(d.stats().tx_done >= 45, "completions ride in the sends: {:?}", d.stats());
        }
        std::thread::sleep(Duration::from_millis(5));
        d.poll().unwrap();
        d.reap_tef().unwrap();
        assert_eq!((d.stats().tx_done, d.tx_in_flight()), (50, 0), "every echo completes through the TEF");
        let recs = rec.records();
        let ok = recs.iter().filter(|r| r.error.is_none());
        let (sent, echoed): (Vec<&wirespeed_lab::can::FrameRecord>, Vec<_>) =
            ok.partition(|r| r.transmitter == gen.node());
        assert_eq!(echoed.len(), 50);
        let bad: Vec<_> = sent
            .iter()
            .zip(&echoed)
            .enumerate()
            .filter(|(_, (a, b))| a.frame.data() != b.frame.data())
            .map(|(i, (a, b))| (i, a.frame.data().to_vec(), b.frame.data().to_vec()))
            .collect();
        assert!(
            bad.is_empty(),
            "echoes carry the payloads in order (crc {crc}, ts {tx_timestamps}, {path:?}): {bad:?} of {}",
            sent.len()
        );
        let s = d.stats();
        assert_eq!((s.rx_frames, s.tx_frames, s.rx_overflows, s.rx_dropped), (50, 50, 0, 0));
        assert_eq!(d.last_tx_timestamp().is_some_and(|t| t > last_ts), tx_timestamps);
        if crc {
            assert_eq!(r.dev.stats().spi_crc_errors, 0);
        }
    }
}

#[test]
fn hot_path_uses_few_transfers() {
    let mut r = rig(500_000);
    let gen =
        Generator::attach(&r.can, "cangen", GeneratorConfig { count: 3, gap_ns: 2_000_000, ..Default::default() })
            .unwrap();
    let mut d = driver(&mut r, cfg(500_000)).unwrap();
    r.block.trace_start(1 << 16);
    gen.start(now());
    for _ in 0..3 {
        let f = d.recv(Some(Duration::from_secs(2))).unwrap().unwrap();
        d.send(&f.with_id(CanId::Standard(0x078)).unwrap()).unwrap();
    }
    let w = cs_windows(&r.block.trace_take());
    let bits: Vec<u64> = w.iter().map(|w| w.bits).collect();
    // Per echo: status + RX object (one message), TX object + TXREQ + RX UINC
    // (one message), then (next round) the TEF object + UINC.
    assert!(bits.len() <= 3 * 7, "{bits:?}");
    assert_eq!(&bits[..5], &[48, 176, 144, 24, 24], "{bits:?}");
}

#[test]
fn overflow_is_counted_never_silent() {
    let mut r = rig(500_000);
    let gen =
        Generator::attach(&r.can, "cangen", GeneratorConfig { count: 12, gap_ns: 0, ..Default::default() }).unwrap();
    let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let mut d = driver(&mut r, Config { rx_depth: 4, ..cfg(500_000) }).unwrap();
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(2));
    let got = d.frames(Duration::from_millis(50)).count();
    let s = d.stats();
    assert_eq!(got, 4, "a 4-deep FIFO holds 4 frames");
    assert!(s.rx_overflows >= 1, "{s:?}");
    assert_eq!(r.dev.stats().rx_overflows, 8);
    // Injected overflow: counted too, and the flag is cleared (INT released).
    r.dev.inject_rx_overflow(1, now());
    d.poll().unwrap();
    assert_eq!(d.stats().rx_overflows, s.rx_overflows + 1);
    assert!(r.dev.int_pin().is_high(), "INT released after the overflow was handled");
}

#[test]
fn bus_off_is_reported_and_recovered() {
    let mut r = rig(125_000);
    let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let mut d = driver(&mut r, cfg(125_000)).unwrap();
    r.dev.force_bus_off(now());
    let _ = d.recv(Some(Duration::from_millis(2))).unwrap();
    assert_eq!(
        d.bus_state(),
        BusState::BusOff,
        "{:?} {:?} int high {}",
        d.stats(),
        d.error_counters(),
        r.dev.int_pin().is_high()
    );
    assert_eq!(d.stats().bus_off_events, 1);
    let f = Frame::classic(CanId::Standard(0x100), &[1, 2]).unwrap();
    assert_eq!(d.send(&f), Err(Error::BusOff));
    // Automatic recovery after 128 × 11 recessive bits (11.3 ms at 125 kbit/s).
    let _ = d.recv(Some(Duration::from_millis(50))).unwrap();
    assert_eq!(d.bus_state(), BusState::Active, "{:?}", d.stats());
    assert_eq!(d.stats().bus_off_recoveries, 1);
    d.send(&f).unwrap();
    // Manual recovery: restart.
    r.dev.force_bus_off(now());
    let _ = d.recv(Some(Duration::from_millis(2))).unwrap();
    assert_eq!(d.bus_state(), BusState::BusOff);
    d.restart().unwrap();
    assert_eq!(d.bus_state(), BusState::Active);
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
}

#[test]
fn filters_select_frames() {
    let mut r = rig(500_000);
    let a = Generator::attach(
        &r.can,
        "a",
        GeneratorConfig {
            id: wirespeed_lab::can::CanId::Standard(0x100),
            count: 3,
            gap_ns: 500_000,
            ..Default::default()
        },
    )
    .unwrap();
    let b = Generator::attach(
        &r.can,
        "b",
        GeneratorConfig {
            id: wirespeed_lab::can::CanId::Standard(0x200),
            count: 3,
            gap_ns: 500_000,
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = driver(&mut r, cfg(500_000)).unwrap();
    d.set_filters(&[Filter::exact(CanId::Standard(0x200))]).unwrap();
    a.start(now());
    b.start(now());
    let got: Vec<Frame> = d.frames(Duration::from_millis(50)).map(Result::unwrap).collect();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|f| f.id() == CanId::Standard(0x200)));
    assert!(matches!(
        d.set_filters(&[Filter { id: CanId::Standard(0x7FF), mask: 0xFFFF, match_kind: true }]),
        Err(Error::InvalidConfig { .. })
    ));
}

#[test]
fn failed_probe_reports_and_leaves_config_mode_with_only_probe_accesses() {
    // No oscillator.
    let mut r = rig(500_000);
    r.dev.set_oscillator_dead(true);
    r.block.trace_start(1 << 16);
    let e = driver(&mut r, cfg(500_000)).unwrap_err();
    assert!(matches!(e, Error::OscillatorNotReady { .. }), "{e}");
    assert!(e.to_string().contains("configuration mode"));
    assert_eq!(r.dev.mode(now()), Mode::Config);
    let w = cs_windows(&r.block.trace_take());
    assert_eq!(w[0].mosi, vec![0x00, 0x00], "RESET first");
    for win in &w[1..] {
        assert_eq!(win.mosi[0] >> 4, 0x3, "after RESET only READs: {:02x?}", win.mosi);
        assert_eq!(&win.mosi[..2], &[0x3E, 0x00], "only OSC is read");
    }
    // Wrong DEVID.
    let mut r = rig(500_000);
    r.dev.set_devid(0x0000_0024);
    r.block.trace_start(1 << 16);
    let e = driver(&mut r, cfg(500_000)).unwrap_err();
    assert_eq!(e, Error::WrongDevice { devid: 0x24, expected_id: 1 });
    assert_eq!(r.dev.mode(now()), Mode::Config);
    let w = cs_windows(&r.block.trace_take());
    assert!(w[1..].iter().all(|w| w.mosi[0] >> 4 == 0x3), "only reads after RESET");
    assert_eq!(w.last().unwrap().mosi[..2], [0x3E, 0x14], "DEVID is the last access");
    // A bad configuration is refused before anything reaches the bus.
    let mut r = rig(500_000);
    r.block.trace_start(1 << 16);
    let e = driver(&mut r, Config { nominal_bitrate: 100, ..cfg(500_000) }).unwrap_err();
    assert!(matches!(e, Error::BitTiming { .. }), "{e}");
    assert!(r.block.trace_take().events.is_empty());
}

#[test]
fn crc_access_detects_and_retries_corrupted_replies() {
    let mut r = rig(500_000);
    let mut d = driver(&mut r, Config { crc: true, ..cfg(500_000) }).unwrap();
    let before = d.stats().crc_errors;
    r.dev.flip_miso(1, 0x01);
    assert_eq!(d.regs().read(0xE14).unwrap(), 0x14, "the retry reads DEVID intact");
    assert!(d.stats().crc_errors > before, "the corrupted reply was counted");
    // A corrupted write is flagged by the device and reported.
    r.dev.flip_mosi(1, 0x80);
    let e = d.regs().write(0x1F0, 0).unwrap_err();
    assert!(matches!(e, Error::WriteCrc { addr: 0x1F0, .. }), "{e}");
}

/// Receives `n` frames sent `gap_ns` apart with the given INT-wait budget;
/// returns what the wait did.
fn periodic_receive(budget_permille: u32, n: u64, gap_ns: u64) -> mcp251xfd::IntWaitStats {
    let mut r = rig(500_000);
    let gen = Generator::attach(&r.can, "cangen", GeneratorConfig { count: n, gap_ns, ..Default::default() }).unwrap();
    let mut c = cfg(500_000);
    c.int_wait.poll_budget_permille = budget_permille;
    let mut d = driver(&mut r, c).unwrap();
    gen.start(now());
    for i in 0..n {
        assert!(d.recv(Some(Duration::from_secs(2))).unwrap().is_some(), "frame {i} never came");
    }
    d.int_wait_stats()
}

#[test]
fn int_wait_polls_ahead_of_periodic_interrupts_only_within_its_budget() {
    // A generous budget (20 % of a 5 ms period), so that a loaded test
    // machine's late wake-ups still leave polling affordable.
    let s = periodic_receive(200, 40, 5_000_000);
    assert!(s.period_ns > 4_000_000 && s.period_ns < 6_000_000, "period learned: {s:?}");
    assert!(s.timed_sleeps >= 20, "sleeps timed to the predicted interrupt: {s:?}");
    assert!(s.polled + s.early >= 20, "interrupts met by the poll or just before it: {s:?}");
    // No budget: every interrupt is slept for, none predicted.
    let s = periodic_receive(0, 20, 5_000_000);
    assert_eq!((s.timed_sleeps, s.polled), (0, 0), "{s:?}");
    assert!(s.woken + s.immediate >= 20, "{s:?}");
}

#[test]
fn fd_frame_longer_than_the_rx_object_is_counted_not_padded_with_other_objects() {
    // An 8-byte RX object holds the first 8 bytes of a 64-byte FD frame (the
    // device truncates, DLC kept): the rest is not in the object.
    let mut r = rig(500_000);
    let send = |r: &Rig, len: usize, byte: u8| {
        let g = Generator::attach(
            &r.can,
            "g",
            GeneratorConfig {
                count: 1,
                gap_ns: 0,
                fd: true,
                brs: true,
                len,
                data: wirespeed_lab::can::tools::DataMode::Fixed([byte; 64]),
                ..Default::default()
            },
        )
        .unwrap();
        g.start(now());
        assert!(g.wait_done(Duration::from_secs(5)));
    };
    let mut d = driver(&mut r, Config { data_bitrate: Some(2_000_000), ..cfg(500_000) }).unwrap();
    // Fill the next objects with something recognisable first.
    send(&r, 8, 0x11);
    assert_eq!(d.recv(Some(Duration::from_secs(2))).unwrap().unwrap().data(), &[0x11; 8]);
    send(&r, 64, 0x5A);
    send(&r, 8, 0x22);
    let got: Vec<Frame> = d.frames(Duration::from_millis(50)).map(Result::unwrap).collect();
    for f in &got {
        assert!(f.data().iter().all(|&b| b == f.data()[0]), "a frame with bytes it never carried: {f:?}");
    }
    assert_eq!(got.last().map(|f| f.data().to_vec()), Some(vec![0x22; 8]), "the ring goes on");
    assert_eq!(d.stats().rx_truncated, 1, "{:?}", d.stats());
}

#[test]
fn send_refuses_an_identifier_out_of_range_instead_of_truncating_it() {
    let mut r = rig(500_000);
    let rec = Recorder::attach(&r.can, 16);
    let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let mut d = driver(&mut r, cfg(500_000)).unwrap();
    for id in [CanId::Standard(0x900), CanId::Extended(0x2000_0123)] {
        // `from_raw` takes a controller's fields as they are; the id is not checked there.
        let f = Frame::from_raw(id, 1, false, false, false, false, &[7]);
        assert_eq!(
            d.send(&f),
            Err(Error::Frame(wirespeed_drivers::can::FrameError::InvalidId {
                id: id.raw(),
                extended: id.is_extended()
            }))
        );
    }
    assert_eq!(d.tx_in_flight(), 0);
    std::thread::sleep(Duration::from_millis(5));
    assert!(rec.records().is_empty(), "nothing sent: {:?}", rec.records());
}
