//! The MCP251xFD driver on the lab: init, echo, faults (bus-off, RX
//! overflow, CRC), the failed-probe lifecycle and the hot path's cost in
//! SPI messages. The errata workarounds have their own tests
//! (`mcp251xfd_errata.rs`).

mod common;

use common::{cfg, driver, rig, rig_on, Path, Rig};
use std::time::Duration;
use wirespeed::time::now;
use wirespeed_drivers::can::{CanId, Frame};
use wirespeed_drivers::mcp251xfd::{self, BusState, Config, Error, Filter, Variant};
use wirespeed_lab::can::tools::{Generator, GeneratorConfig, Recorder};
use wirespeed_lab::devices::mcp2518fd::Mode;
use wirespeed_lab::trace::cs_windows;

#[test]
fn init_programs_timing_fifos_and_mode() {
    let mut r = rig(250_000);
    let mut d = driver(&mut r, cfg(250_000)).unwrap();
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
    let nbt = r.dev.peek(0x004, now());
    assert_eq!(nbt, d.plan().nominal.register());
    assert_eq!(d.plan().nominal.bitrate(40_000_000), 250_000);
    assert!(!r.dev.ram_overflow());
    assert_eq!(d.variant(), Variant::Mcp2518fd, "OSC.LPMEN is writable");
    // INT0 / INT1 are interrupt outputs, push-pull.
    assert_eq!(r.dev.peek(0xE04, now()) & (3 << 24 | 1 << 30), 0);
    // ECC on, the RAM written (zero) from end to end.
    assert_eq!(r.dev.peek(0xE0C, now()) & 7, 7);
    assert!(r.dev.peek_ram(0x7F0, 16).iter().all(|&b| b == 0));
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
            // send carried its TEF UINC (no reap of its own) — one per status
            // read, so frames a loaded machine read in a burst (one status
            // read for several) leave theirs to the final reap.
            let s = d.stats();
            assert!(s.tx_done + 50u64.saturating_sub(s.irq_passes) >= 45, "completions ride in the sends: {s:?}");
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
    // Per echo: C1INT's and the RX FIFOSTA's flag halves + RX object (one message), TX object +
    // TXREQ + RX UINC (one message), then (next round) the TEF object + UINC.
    assert!(bits.len() <= 3 * 8, "{bits:?}");
    assert_eq!(&bits[..6], &[32, 32, 176, 144, 24, 24], "{bits:?}");
}

/// SPI messages of `n` echoes (the driver's stats and the bus's).
fn echo_messages(tx_timestamps: bool, crc: bool, n: u64) -> (u64, mcp251xfd::Stats) {
    let mut r = rig(500_000);
    let gen =
        Generator::attach(&r.can, "cangen", GeneratorConfig { count: n, gap_ns: 2_000_000, ..Default::default() })
            .unwrap();
    let mut d = driver(&mut r, Config { tx_timestamps, crc, ..cfg(500_000) }).unwrap();
    let before = r.spi.bus().stats().messages;
    gen.start(now());
    for i in 0..n {
        let f = d.recv(Some(Duration::from_secs(2))).unwrap().unwrap_or_else(|| panic!("frame {i} never came"));
        d.send(&f.with_id(CanId::Standard(0x078)).unwrap()).unwrap();
    }
    (r.spi.bus().stats().messages - before, d.stats())
}

#[test]
fn an_echoed_frame_costs_one_status_message_and_one_tx_message() {
    // Without TX timestamps a completion is the TEF UINC riding in the next
    // echo's TX message: two messages per echo, errata workarounds and all
    // (the model runs with its errata on). The FIFOCI erratum's window (1 µs
    // after a store) may catch a status read now and then: each time it
    // costs one burst read of the stale object (counted in rx_stale). On a
    // loaded machine the driver may fall behind: then k frames cost one
    // status message, one burst read and one UINC message (+ k TX), at most
    // one message more than k echoes on time.
    for crc in [false, true] {
        let n = 30;
        let (msgs, s) = echo_messages(false, crc, n);
        let extra = s.rx_stale + s.rx_burst_frames;
        assert!(msgs <= 2 * n + extra, "crc {crc}: {msgs} SPI messages for {n} echoes: {s:?}");
        assert_eq!((s.rx_frames, s.tx_frames), (n, n));
        // Each status read announces at most one completion, which rides in
        // the next echo; one that came after the next frame's status read,
        // or frames read in a burst (fewer status reads), leave completions
        // for later (a full TX queue drains them).
        let lag = n - s.tx_done;
        assert!(lag <= 3 + n.saturating_sub(s.irq_passes), "completions ride in later TX messages: {s:?}");
    }
    // With TX timestamps each completion's TEF object is read: a third message.
    let (msgs, s) = echo_messages(true, false, 30);
    assert!(msgs <= 3 * 30 + s.rx_stale + s.rx_burst_frames, "{msgs}: {s:?}");
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
fn bus_off_stops_the_controller_and_restarts_it_fully() {
    let mut r = rig(125_000);
    let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let c = Config { bus_off_restart: Some(Duration::from_millis(20)), ..cfg(125_000) };
    let mut d = driver(&mut r, c).unwrap();
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
    assert_eq!(r.dev.mode(now()), Mode::Config, "stopped at bus-off");
    let f = Frame::classic(CanId::Standard(0x100), &[1, 2]).unwrap();
    assert_eq!(d.send(&f), Err(Error::BusOff));
    // Restarted by itself (RESET and the whole configuration) 20 ms later:
    // a receive that waits longer returns through the restart.
    let t0 = now();
    let _ = d.recv(Some(Duration::from_millis(50))).unwrap();
    assert_eq!(d.bus_state(), BusState::Active, "{:?}", d.stats());
    assert!(now().ns_since(t0) >= 15_000_000);
    assert_eq!(d.stats().bus_off_recoveries, 1);
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
    d.send(&f).unwrap();
    // Manual recovery: restart (here with no automatic restart).
    let mut r = rig(125_000);
    let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let mut d = driver(&mut r, Config { bus_off_restart: None, ..cfg(125_000) }).unwrap();
    r.dev.force_bus_off(now());
    let _ = d.recv(Some(Duration::from_millis(2))).unwrap();
    assert_eq!(d.bus_state(), BusState::BusOff);
    let _ = d.recv(Some(Duration::from_millis(30))).unwrap();
    assert_eq!(d.bus_state(), BusState::BusOff, "stays stopped without bus_off_restart");
    assert_eq!(d.send(&f), Err(Error::BusOff));
    d.restart().unwrap();
    assert_eq!(d.bus_state(), BusState::Active);
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
    assert_eq!(d.stats().bus_off_recoveries, 1);
    d.send(&f).unwrap();
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

/// (instruction, address) of a CS window's command.
fn command(w: &wirespeed_lab::trace::CsWindow) -> (u8, u16) {
    (w.mosi[0] >> 4, (u16::from(w.mosi[0] & 0xF) << 8) | u16::from(w.mosi[1]))
}

#[test]
fn failed_probe_reports_and_leaves_config_mode_with_only_probe_accesses() {
    // What a probe may write before its checks: OSC (the wake-up), C1CON
    // byte 3 (REQOP = configuration) and RESET.
    let probe_writes = [(0x2, 0xE00), (0x2, 0x003), (0x0, 0x000)];
    // No oscillator: the wake-up never completes; only the wake-up was written.
    let mut r = rig(500_000);
    r.dev.set_oscillator_dead(true);
    r.block.trace_start(1 << 16);
    let e = driver(&mut r, cfg(500_000)).unwrap_err();
    assert!(matches!(e, Error::OscillatorNotReady { .. }), "{e}");
    assert!(e.to_string().contains("configuration mode"));
    assert_eq!(r.dev.mode(now()), Mode::Config);
    let w = cs_windows(&r.block.trace_take());
    let writes: Vec<(u8, u16)> = w.iter().map(command).filter(|c| c.0 != 0x3).collect();
    assert_eq!(writes, vec![(0x2, 0xE00)], "only the wake-up write");
    assert_eq!(&w[1].mosi[..], &[0x2E, 0x00, 0x60, 0, 0, 0], "OSC = CLKODIV ÷ 10, oscillator on");
    assert!(w.iter().map(command).all(|c| c.0 != 0x3 || c.1 == 0xE00), "only OSC is read");
    // Wrong DEVID.
    let mut r = rig(500_000);
    r.dev.set_devid(0x0000_0024);
    r.block.trace_start(1 << 16);
    let e = driver(&mut r, cfg(500_000)).unwrap_err();
    assert_eq!(e, Error::WrongDevice { devid: 0x24, expected_id: 1 });
    assert_eq!(r.dev.mode(now()), Mode::Config);
    let w = cs_windows(&r.block.trace_take());
    let writes: Vec<(u8, u16)> = w.iter().map(command).filter(|c| c.0 != 0x3).collect();
    assert_eq!(writes, probe_writes, "wake-up, configuration mode, RESET: nothing else written");
    assert_eq!(w.last().map(command), Some((0x3, 0xE14)), "DEVID is the last access");
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
fn int_wait_starts_polling_early_enough_for_the_threads_timer_slack() {
    // A timed sleep may end as late as the thread's timer slack. With 1 ms
    // of it, a wait that first guessed tens of µs would sleep through most
    // of the first interrupts (each then pays a wake-up) while it learnt.
    // The host may hold a woken thread back far past its slack, now and
    // then (on 2026-11-27 one run's sleeps overshot by up to 1.07 ms and 8
    // of 28 interrupts came during them): the wait passes if one of three
    // runs keeps to the bound; a wrong first guess misses it in every run.
    use wirespeed::time::realtime::{current_timer_slack_ns, set_current_timer_slack_ns};
    let slack = current_timer_slack_ns();
    set_current_timer_slack_ns(1_000_000).unwrap();
    let kept = |s: &mcp251xfd::IntWaitStats| s.timed_sleeps >= 20 && s.early * 4 <= s.timed_sleeps;
    let mut runs = Vec::new();
    while runs.len() < 3 && !runs.last().is_some_and(kept) {
        runs.push(periodic_receive(500, 30, 5_000_000));
    }
    set_current_timer_slack_ns(slack).unwrap();
    assert!(runs.last().is_some_and(kept), "interrupts that came during the timed sleep, in every run: {runs:?}");
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

/// A frame's TX message is submitted as Linux's `spi_async`: the fast
/// policy runs it before `send` returns (a failure is that call's), a
/// kernel preset's pump thread runs it (a failure comes back from
/// `flush_tx` or the next `send`). Either way the failed frame is taken
/// back, and the next one goes out.
#[test]
fn a_failed_tx_message_is_reported_and_its_frame_taken_back_under_every_policy() {
    use wirespeed::spi::Policy;
    for (policy, name) in
        [(Policy::fast as fn() -> Policy, "fast"), (Policy::linux69, "linux-6.9"), (Policy::classic, "classic")]
    {
        let mut r = common::rig_with(common::RigOptions { policy, ..common::RigOptions::new(500_000) });
        let _peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
        let rec = Recorder::attach(&r.can, 16);
        let mut d = driver(&mut r, Config { tx_timestamps: false, ..cfg(500_000) }).unwrap();
        let f = |b: u8| Frame::classic(CanId::Standard(0x123), &[b]).unwrap();
        d.send(&f(1)).unwrap();
        d.flush_tx().unwrap();
        let before = (d.stats().tx_frames, d.tx_in_flight());
        r.block.refuse_next_start();
        // Reported once: by this send in fast, by the flush otherwise.
        let from_send = matches!(d.send(&f(2)), Err(Error::Spi(_)));
        let from_flush = matches!(d.flush_tx(), Err(Error::Spi(_)));
        assert_eq!((from_send, from_flush), (name == "fast", name != "fast"), "{name}");
        assert_eq!((d.stats().tx_frames, d.tx_in_flight()), before, "{name}: the failed frame is taken back");
        d.send(&f(3)).unwrap();
        d.flush_tx().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        d.poll().unwrap();
        d.reap_tef().unwrap();
        assert_eq!((d.stats().tx_done, d.tx_in_flight()), (2, 0), "{name}");
        let on_wire: Vec<u8> = rec.records().iter().filter(|r| r.error.is_none()).map(|r| r.frame.data()[0]).collect();
        assert_eq!(on_wire, [1, 3], "{name}");
    }
}

/// Under a kernel preset the TX message waits for the SPI core's pump
/// thread, so an RX UINC riding in it would hold INT low after the pass
/// and the next wait could end at once in a pass that finds nothing. The
/// driver sees its TX did not run in its thread and sends the UINC in the
/// interrupt's pass, as the Linux driver does: INT is high again when
/// `recv` returns (from the second frame on: the first send tells it).
#[test]
fn echoes_under_a_kernel_preset_cost_no_interrupt_pass_for_nothing() {
    use wirespeed::spi::Policy;
    for (policy, name) in
        [(Policy::classic as fn() -> Policy, "classic"), (Policy::linux69, "linux-6.9"), (Policy::fast, "fast")]
    {
        let mut r = common::rig_with(common::RigOptions { policy, ..common::RigOptions::new(500_000) });
        let gen =
            Generator::attach(&r.can, "cangen", GeneratorConfig { count: 20, gap_ns: 2_000_000, ..Default::default() })
                .unwrap();
        let mut d = driver(&mut r, cfg(500_000)).unwrap();
        gen.start(now());
        let mut int_high = Vec::new();
        for i in 0..20 {
            let f = d.recv(Some(Duration::from_secs(2))).unwrap().unwrap_or_else(|| panic!("{name}: frame {i}"));
            if i > 0 {
                int_high.push(r.dev.int_pin().is_high());
            }
            d.send(&f.with_id(CanId::Standard(0x078)).unwrap()).unwrap();
        }
        // Fast defers the UINC into the TX message (INT still low after
        // every pass); a kernel preset has sent it (INT high, the FIFO
        // empty). A host stall of 2 ms (the next frame) or of the pump
        // thread (the echo's TEF event late) can find INT low again, so a
        // few such passes are allowed: a driver that left the UINC in the
        // pump's TX message would leave INT low after nearly every one.
        let high = int_high.iter().filter(|&&h| h).count();
        if name == "fast" {
            assert_eq!(high, 0, "{name}: INT high after {high} of 19 passes");
        } else {
            assert!(high >= 15, "{name}: INT high after only {high} of 19 passes: {int_high:?}");
        }
        d.flush_tx().unwrap();
        let s = d.stats();
        assert!(s.spurious <= 1, "{name}: {s:?}");
        assert_eq!(s.rx_frames, 20, "{name}");
    }
}
