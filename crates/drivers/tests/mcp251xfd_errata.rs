//! The MCP251xFD driver's errata workarounds against the lab model with its
//! silicon errata on: for each workaround a scenario runs twice, with
//! every workaround on (it must pass, and the workaround's counter must
//! move) and with that one workaround off (it must fail: frames lost,
//! duplicated or corrupted, a wrong value, a stuck state or an error).
//! Each scenario returns what went wrong instead of panicking, so the
//! failing half is checked, not assumed.

mod common;

use common::{cfg, driver, rig_with, Rig, RigOptions};
use std::time::Duration;
use wirespeed::time::now;
use wirespeed_drivers::can::{CanId, Frame};
use wirespeed_drivers::mcp251xfd::{regs, BusState, Config, Mcp251xfd, Stats, Workarounds};
use wirespeed_lab::can::tools::{DataMode, Generator, GeneratorConfig, Recorder};
use wirespeed_lab::can::{ErrorCounters, FrameRecord};
use wirespeed_lab::devices::mcp2518fd::{EccFault, ErrataHits, MabError, Mcp2518fdConfig, Mode};

/// What a scenario ended with.
#[derive(Debug)]
struct Outcome {
    /// Why the scenario failed (`None`: it passed).
    failure: Option<String>,
    /// The driver's counters (`None`: it did not initialise).
    stats: Option<Stats>,
    /// What the model's errata did.
    hits: ErrataHits,
}

impl Outcome {
    fn new(r: &Rig, d: Option<&Mcp251xfd>, failure: Option<String>) -> Outcome {
        Outcome { failure, stats: d.map(Mcp251xfd::stats), hits: r.dev.errata_hits() }
    }
}

/// Runs `scenario` with every workaround on and with `off` (one switched
/// off): the first must pass with `counter` > 0, the second must fail.
fn on_off(name: &str, scenario: fn(Workarounds) -> Outcome, off: Workarounds, counter: fn(&Stats) -> u64) {
    let on = scenario(Workarounds::ALL);
    assert_eq!(on.failure, None, "{name} on: {on:?}");
    let s = on.stats.expect("initialised");
    assert!(counter(&s) > 0, "{name} on: the workaround's counter did not move: {s:?}");
    assert!(s.errata_recovered >= counter(&s), "{name}: errata_recovered sums the workarounds: {s:?}");
    let off = scenario(off);
    let Some(why) = &off.failure else { panic!("{name} off: the scenario passed without the workaround: {off:?}") };
    eprintln!("{name}: without the workaround the scenario fails: {why}");
    if let Some(s) = off.stats {
        assert_eq!(counter(&s), 0, "{name} off: the switch is off, its counter stays: {s:?}");
    }
}

fn only_off(f: impl FnOnce(&mut Workarounds)) -> Workarounds {
    let mut w = Workarounds::ALL;
    f(&mut w);
    w
}

/// The frame a generator sent as its `i`-th (DataMode::Incrementing).
fn index_of(data: &[u8]) -> Option<u64> {
    let b: [u8; 8] = data.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Checks that `got` is exactly frames 0..n in order (by their index payload).
fn exactly_once(got: &[u64], n: u64) -> Option<String> {
    let want: Vec<u64> = (0..n).collect();
    (got != want.as_slice()).then(|| {
        let dup = got.iter().enumerate().find(|(i, x)| got[..*i].contains(x)).map(|(_, x)| *x);
        let missing: Vec<u64> = want.iter().filter(|x| !got.contains(x)).copied().collect();
        format!("{} frames of {n}: duplicate {dup:?}, missing {missing:?}, got {got:?}", got.len())
    })
}

/// Frame `i` of a test sequence: index `i` as its payload.
fn numbered(id: u16, i: u64) -> Frame {
    Frame::classic(CanId::Standard(id), &i.to_le_bytes()).unwrap()
}

/// The indexes of the frames with identifier `id` (only the driver uses
/// the ones the tests give it) that went on the bus without error.
fn on_bus(records: &[FrameRecord], id: u16) -> Vec<u64> {
    records
        .iter()
        .filter(|r| r.error.is_none())
        .filter(|r| r.frame.id() == wirespeed_lab::can::CanId::Standard(id))
        .filter_map(|r| index_of(r.frame.data()))
        .collect()
}

/// A generator of `count` frames `gap_ns` apart whose payloads number them.
fn numbering_generator(r: &Rig, count: u64, gap_ns: u64) -> Generator {
    let data = DataMode::Incrementing;
    Generator::attach(&r.can, "g", GeneratorConfig { count, gap_ns, data, ..Default::default() }).unwrap()
}

/// An idle node that acknowledges the driver's frames, and a recorder of the bus.
fn acking_peer_and_recorder(r: &Rig) -> (Generator, Recorder) {
    let peer = Generator::attach(&r.can, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    (peer, Recorder::attach(&r.can, 4096))
}

/// Receives frames and echoes each (id 0x078) until 50 ms pass with none
/// or more than `limit` came: the indexes received.
fn echo_numbered(d: &mut Mcp251xfd, limit: usize) -> Vec<u64> {
    let mut got = Vec::new();
    while let Ok(Some(f)) = d.recv(Some(Duration::from_millis(50))) {
        got.push(index_of(f.data()).unwrap_or(u64::MAX));
        let _ = d.send(&f.with_id(CanId::Standard(0x078)).unwrap());
        if got.len() > limit {
            break;
        }
    }
    got
}

/// Starts `gen` (5 numbered frames) and echoes them: why not each was
/// received and echoed exactly once, if not.
fn echo_five(d: &mut Mcp251xfd, gen: &Generator, rec: &Recorder) -> Option<String> {
    gen.start(now());
    let got = echo_numbered(d, 10);
    std::thread::sleep(Duration::from_millis(5));
    exactly_once(&got, 5)
        .map(|e| format!("received {e}"))
        .or_else(|| exactly_once(&on_bus(&rec.records(), 0x078), 5).map(|e| format!("echoed {e}")))
}

// ---------------------------------------------------------------- wake_before_reset

/// The chip is asleep (REQOP = Sleep stopped its oscillator) when the
/// driver starts.
fn scenario_wake_before_reset(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    std::thread::sleep(Duration::from_millis(5)); // oscillator up after power-on
    r.spi.write(&[0x20, 0x03, regs::MODE_SLEEP]).unwrap(); // WRITE C1CON byte 3: REQOP = Sleep
    let t0 = now();
    while r.dev.mode(now()) != Mode::Sleep {
        assert!(now().ns_since(t0) < 100_000_000, "the model never slept");
        std::thread::sleep(Duration::from_micros(100));
    }
    let gen = numbering_generator(&r, 3, 2_000_000);
    let mut d = match driver(&mut r, Config { workarounds: w, ..cfg(500_000) }) {
        Ok(d) => d,
        Err(e) => return Outcome::new(&r, None, Some(format!("Mcp251xfd::new: {e}"))),
    };
    gen.start(now());
    let got: Vec<u64> =
        d.frames(Duration::from_millis(50)).filter_map(|f| f.ok()).filter_map(|f| index_of(f.data())).collect();
    let failure = exactly_once(&got, 3);
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn wake_before_reset_wakes_a_sleeping_chip() {
    on_off("wake_before_reset", scenario_wake_before_reset, only_off(|w| w.wake_before_reset = false), |s| {
        s.sleep_wakes
    });
}

// ---------------------------------------------------------------- ecc_init

/// A single-bit fault in the next stored RX object.
fn scenario_ecc_init(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    let gen = numbering_generator(&r, 5, 2_000_000);
    let mut d = driver(&mut r, Config { workarounds: w, ..cfg(500_000) }).unwrap();
    r.dev.corrupt_next_rx_store(EccFault::Single);
    gen.start(now());
    let got: Vec<u64> =
        d.frames(Duration::from_millis(50)).filter_map(|f| f.ok()).filter_map(|f| index_of(f.data())).collect();
    let mut failure = exactly_once(&got, 5).map(|e| format!("frame data corrupted: {e}"));
    let (s, hits) = (d.stats(), r.dev.errata_hits());
    if failure.is_none() && (s.ecc_uncorrectable > 0 || hits.ecc_ded > 0) {
        failure = Some(format!("double-bit errors: {} seen, {} in the model", s.ecc_uncorrectable, hits.ecc_ded));
    }
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn ecc_init_corrects_a_single_bit_ram_fault_without_a_double_bit_storm() {
    on_off("ecc_init", scenario_ecc_init, only_off(|w| w.ecc_init = false), |s| s.ecc_corrected);
    let on = scenario_ecc_init(Workarounds::ALL);
    assert_eq!((on.hits.ecc_sec, on.hits.ecc_ded), (1, 0), "{on:?}");
}

// ---------------------------------------------------------------- tbc_crc

/// CRC on, TSCON.TBCEN cleared (TBC reads 0: byte 0 is 0x00 on every
/// read, which the chip's READ_CRC gets wrong), then TBC is read.
fn scenario_tbc_crc(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    let mut d = driver(&mut r, Config { crc: true, workarounds: w, ..cfg(500_000) }).unwrap();
    d.regs().write(regs::C1TSCON, 0).unwrap();
    let mut failure = None;
    for _ in 0..5 {
        match d.regs().read(regs::C1TBC) {
            Ok(0) => {}
            Ok(v) => failure = Some(format!("TBC read {v:#x}, stopped at 0")),
            Err(e) => failure = Some(format!("reading TBC: {e}")),
        }
    }
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn tbc_crc_reads_the_time_base_through_its_crc_erratum() {
    on_off("tbc_crc", scenario_tbc_crc, only_off(|w| w.tbc_crc = false), |s| s.tbc_crc_fixed);
}

// ---------------------------------------------------------------- rx_index

/// FIFOCI reads one too far for 5 ms after every store; a stream of frames
/// nearly back to back (300 µs between one's end and the next's start, so
/// the FIFO sometimes holds several and a burst is read, and the object
/// after the last one is usually not there yet when it is read), each
/// echoed; the ring wraps twice.
fn scenario_rx_index(w: Workarounds) -> Outcome {
    let n = 70;
    let model = Mcp2518fdConfig { fifoci_window_ns: 5_000_000, ..Mcp2518fdConfig::default() };
    let mut r = rig_with(RigOptions { model, ..RigOptions::new(500_000) });
    let gen = numbering_generator(&r, n, 300_000);
    let rec = Recorder::attach(&r.can, 4096);
    let mut d = driver(&mut r, Config { workarounds: w, ..cfg(500_000) }).unwrap();
    gen.start(now());
    let mut got = Vec::new();
    let mut failure = None;
    while let Some(f) = d.recv(Some(Duration::from_millis(50))).transpose() {
        match f {
            Ok(f) => {
                got.push(index_of(f.data()).unwrap_or(u64::MAX));
                if let Err(e) = d.send(&f.with_id(CanId::Standard(0x078)).unwrap()) {
                    failure = Some(format!("echo: {e}"));
                    break;
                }
            }
            Err(e) => {
                failure = Some(format!("recv: {e}"));
                break;
            }
        }
        if got.len() > 2 * n as usize {
            break;
        }
    }
    let failure = failure.or_else(|| exactly_once(&got, n).map(|e| format!("received {e}")));
    let failure = failure.or_else(|| {
        std::thread::sleep(Duration::from_millis(20));
        exactly_once(&on_bus(&rec.records(), 0x078), n).map(|e| format!("echoed {e}"))
    });
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn rx_index_delivers_each_frame_once_despite_the_fifoci_erratum() {
    on_off("rx_index", scenario_rx_index, only_off(|w| w.rx_index = false), |s| s.rx_stale);
}

// ---------------------------------------------------------------- tef_seq

/// FIFOCI reads one too far for 5 ms after every completion; TX timestamps
/// on; many frames sent back to back, so the queue fills and is drained by
/// the TX FIFO's FIFOCI.
fn scenario_tef_seq(w: Workarounds) -> Outcome {
    let n = 64;
    let model = Mcp2518fdConfig { fifoci_window_ns: 5_000_000, ..Mcp2518fdConfig::default() };
    let mut r = rig_with(RigOptions { model, ..RigOptions::new(500_000) });
    let (_peer, rec) = acking_peer_and_recorder(&r);
    let mut d = driver(&mut r, Config { tx_timestamps: true, workarounds: w, ..cfg(500_000) }).unwrap();
    let mut failure = None;
    for i in 0..n {
        if let Err(e) = d.send(&numbered(0x100, i)) {
            failure = Some(format!("send {i}: {e}"));
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(30));
    let _ = d.poll();
    let _ = d.reap_tef();
    let failure = failure
        .or_else(|| exactly_once(&on_bus(&rec.records(), 0x100), n).map(|e| format!("on the bus: {e}")))
        .or_else(|| {
            let s = d.stats();
            (s.tx_done != n || d.tx_in_flight() != 0)
                .then(|| format!("{} completions, {} in flight, for {n} frames", s.tx_done, d.tx_in_flight()))
        });
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn tef_seq_counts_each_completion_once_despite_the_fifoci_erratum() {
    on_off("tef_seq", scenario_tef_seq, only_off(|w| w.tef_seq = false), |s| s.tef_stale);
}

/// With [`Config::tef_irq`] (Linux's way: C1INT.TEFIE) completions come
/// back by their own interrupt: a `poll` collects them, with the TEF's
/// SEQ check under the FIFOCI erratum; without it they wait for the next
/// send or `reap_tef`.
#[test]
fn tef_irq_collects_completions_by_their_own_interrupt() {
    for tef_irq in [true, false] {
        let model = Mcp2518fdConfig { fifoci_window_ns: 5_000_000, ..Mcp2518fdConfig::default() };
        let mut r = rig_with(RigOptions { model, ..RigOptions::new(500_000) });
        let (_peer, rec) = acking_peer_and_recorder(&r);
        let mut d = driver(&mut r, Config { tef_irq, ..cfg(500_000) }).unwrap();
        for i in 0..6 {
            d.send(&numbered(0x100, i)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
        d.poll().unwrap();
        assert_eq!(exactly_once(&on_bus(&rec.records(), 0x100), 6), None);
        let s = d.stats();
        if tef_irq {
            assert_eq!((d.tx_in_flight(), s.tx_done), (0, 6), "collected by the TEF interrupt: {s:?}");
            assert!(d.last_tx_timestamp().is_some(), "{s:?}");
        } else {
            assert_eq!((d.tx_in_flight(), s.tx_done), (6, 0), "no interrupt for completions: {s:?}");
            assert_eq!(d.reap_tef().unwrap(), 6);
        }
    }
}

// ---------------------------------------------------------------- trec_poll

/// The driver's REC goes to the warning level (one corrupted frame on top
/// of 100) and back below 96 by the next good frames; the chip raises no
/// CERRIF on the way back.
fn scenario_trec_poll(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    let gen = numbering_generator(&r, 10, 2_000_000);
    let mut d = driver(&mut r, Config { workarounds: w, ..cfg(500_000) }).unwrap();
    r.can.set_error_counters(r.node, ErrorCounters { tec: 0, rec: 100 });
    r.can.corrupt_next(1);
    gen.start(now());
    let mut warned = false;
    let mut got = 0;
    while let Ok(Some(_)) = d.recv(Some(Duration::from_millis(50))) {
        got += 1;
        warned |= d.bus_state() == BusState::Warning;
    }
    let _ = d.poll();
    assert!(warned, "the scenario reaches error warning: {:?}", d.stats());
    let rec = r.can.error_counters(r.node).rec;
    assert!(rec < 96, "the scenario comes back to error active: REC {rec}");
    let failure = (got != 10 || d.bus_state() != BusState::Active).then(|| {
        format!("{got} frames; REC {rec} on the bus, the driver says {:?} {:?}", d.bus_state(), d.error_counters())
    });
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn trec_poll_sees_the_return_to_error_active() {
    on_off("trec_poll", scenario_trec_poll, only_off(|w| w.trec_poll = false), |s| s.trec_active_polled);
}

// ---------------------------------------------------------------- ivmif_bdiag

/// Two received frames corrupted on the wire (CRC errors), some time
/// apart: each an IVMIF with C1BDIAG1.NCRCERR (the chip keeps one bit per
/// kind of error, so each IVMIF counts once per kind).
fn scenario_ivmif_bdiag(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    let gen = numbering_generator(&r, 4, 2_000_000);
    let mut d = driver(&mut r, Config { workarounds: w, ..cfg(500_000) }).unwrap();
    r.can.corrupt_next(1);
    gen.start(now());
    let mut got = Vec::new();
    while let Ok(Some(f)) = d.recv(Some(Duration::from_millis(50))) {
        got.push(index_of(f.data()).unwrap_or(u64::MAX));
        if got.len() == 2 {
            r.can.corrupt_next(1);
        }
    }
    let _ = d.poll();
    let s = d.stats();
    let bdiag1 = r.dev.peek(regs::C1BDIAG1, now());
    let failure = exactly_once(&got, 4)
        .or_else(|| (s.bus_errors.nominal_crc != 2).then(|| format!("CRC errors counted: {:?}", s.bus_errors)))
        .or_else(|| (bdiag1 & 0xFFFF_0000 != 0).then(|| format!("C1BDIAG1 not cleared: {bdiag1:#010x}")));
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn ivmif_bdiag_counts_bus_errors_by_kind() {
    on_off("ivmif_bdiag", scenario_ivmif_bdiag, only_off(|w| w.ivmif_bdiag = false), |s| s.ivmif_decoded);
}

// ---------------------------------------------------------------- write_safe

/// CRC on; one MOSI bit flips in the UINC | TXREQ byte of the third frame's
/// TX message (0x03 → 0x02: TXREQ without UINC, if the chip writes it).
fn scenario_write_safe(w: Workarounds) -> Outcome {
    let n = 6;
    let mut r = rig_with(RigOptions { flipper: true, ..RigOptions::new(500_000) });
    let (_peer, rec) = acking_peer_and_recorder(&r);
    let mut d = driver(&mut r, Config { crc: true, workarounds: w, ..cfg(500_000) }).unwrap();
    let flipper = r.flipper.clone().unwrap();
    flipper.arm(regs::c1fifocon(regs::TX_FIFO) + 1, 2, 0x01);
    let mut failure = None;
    for i in 0..n {
        if let Err(e) = d.send(&numbered(0x100, i)).and_then(|()| d.poll()) {
            failure = Some(format!("frame {i}: {e}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(10));
    let _ = d.poll();
    assert_eq!(flipper.fired(), 1, "the fault was injected");
    let failure =
        failure.or_else(|| exactly_once(&on_bus(&rec.records(), 0x100), n).map(|e| format!("on the bus: {e}")));
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn write_safe_loses_no_frame_to_a_corrupted_txreq_byte() {
    on_off("write_safe", scenario_write_safe, only_off(|w| w.write_safe = false), |s| s.write_safe_recovered);
}

/// CRC on; frames received and echoed; one MOSI bit flips in the UINC byte
/// of the RX FIFO (0x01 → 0x00: no UINC, if the chip writes it) riding in
/// the third echo's TX message.
fn scenario_write_safe_rx(w: Workarounds) -> Outcome {
    let n = 8;
    let mut r = rig_with(RigOptions { flipper: true, ..RigOptions::new(500_000) });
    let gen = numbering_generator(&r, n, 2_000_000);
    let mut d = driver(&mut r, Config { crc: true, workarounds: w, ..cfg(500_000) }).unwrap();
    let flipper = r.flipper.clone().unwrap();
    flipper.arm(regs::c1fifocon(regs::RX_FIFO) + 1, 2, 0x01);
    gen.start(now());
    let got = echo_numbered(&mut d, 2 * n as usize);
    assert_eq!(flipper.fired(), 1, "the fault was injected");
    Outcome::new(&r, Some(&d), exactly_once(&got, n).map(|e| format!("received {e}")))
}

#[test]
fn write_safe_loses_or_repeats_no_frame_to_a_corrupted_rx_uinc_byte() {
    on_off("write_safe (RX)", scenario_write_safe_rx, only_off(|w| w.write_safe = false), |s| s.write_safe_recovered);
}

/// CRC on, no TX timestamps; six frames sent, their completions collected
/// by one drain ([`Mcp251xfd::reap_tef`]: one message of six TEF UINCs);
/// one MOSI bit flips in the second UINC byte (0x01 → 0x00).
fn scenario_write_safe_tef(w: Workarounds) -> Outcome {
    let n = 6;
    let mut r = rig_with(RigOptions { flipper: true, ..RigOptions::new(500_000) });
    let (_peer, rec) = acking_peer_and_recorder(&r);
    let mut d = driver(&mut r, Config { crc: true, tx_timestamps: false, workarounds: w, ..cfg(500_000) }).unwrap();
    for i in 0..n {
        d.send(&numbered(0x100, i)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(5));
    let flipper = r.flipper.clone().unwrap();
    flipper.arm(regs::C1TEFCON + 1, 1, 0x01);
    let reaped = d.reap_tef();
    let _ = d.poll();
    assert_eq!(flipper.fired(), 1, "the fault was injected");
    let tefsta = r.dev.peek(regs::C1TEFSTA, now());
    let failure = exactly_once(&on_bus(&rec.records(), 0x100), n)
        .map(|e| format!("on the bus: {e}"))
        .or_else(|| (reaped != Ok(6) || d.tx_in_flight() != 0).then(|| format!("reaped {reaped:?}")))
        .or_else(|| {
            (tefsta & regs::TEFSTA_TEFNEIF != 0).then(|| {
                "the chip's TEF still holds an entry the driver counted as collected (TEF tail one behind)".to_string()
            })
        });
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn write_safe_keeps_the_tef_in_step_after_a_corrupted_tef_uinc_byte() {
    on_off("write_safe (TEF)", scenario_write_safe_tef, only_off(|w| w.write_safe = false), |s| s.write_safe_recovered);
}

// ---------------------------------------------------------------- mab_recovery

/// A TX MAB underflow aborts the second frame and drops the chip to
/// Restricted Operation mode.
fn scenario_mab_recovery(w: Workarounds) -> Outcome {
    let mut r = rig_with(RigOptions::new(500_000));
    let (_peer, rec) = acking_peer_and_recorder(&r);
    let mut d = driver(&mut r, Config { workarounds: w, ..cfg(500_000) }).unwrap();
    let mut failure = None;
    for i in 0..4 {
        if i == 1 {
            r.dev.inject_mab_error(MabError::TxUnderflow, now());
        }
        if let Err(e) = d.send(&numbered(0x100, i)) {
            failure = Some(format!("frame {i}: {e}"));
        }
        // The application goes on receiving (here: nothing comes).
        let _ = d.recv(Some(Duration::from_millis(3)));
    }
    std::thread::sleep(Duration::from_millis(5));
    let _ = d.poll();
    let mode = r.dev.mode(now());
    let failure = failure
        .or_else(|| exactly_once(&on_bus(&rec.records(), 0x100), 4).map(|e| format!("on the bus: {e}")))
        .or_else(|| (mode != Mode::NormalCan20).then(|| format!("the chip stayed in {mode:?}")));
    Outcome::new(&r, Some(&d), failure)
}

#[test]
fn mab_recovery_gets_the_aborted_frame_out() {
    on_off("mab_recovery", scenario_mab_recovery, only_off(|w| w.mab_recovery = false), |s| s.mab_errors);
}

#[test]
fn mab_recovery_after_an_rx_overflow_restores_the_mode_and_reception() {
    // An RX MAB overflow loses the frame being received (the chip flags
    // RXOVIF on its FIFO) and drops to Restricted mode; the driver counts
    // both and requests its mode again; the frames after it arrive.
    let mut r = rig_with(RigOptions::new(500_000));
    let gen = numbering_generator(&r, 4, 2_000_000);
    let mut d = driver(&mut r, cfg(500_000)).unwrap();
    r.dev.inject_mab_error(MabError::RxOverflow, now());
    gen.start(now());
    let got: Vec<u64> =
        d.frames(Duration::from_millis(50)).filter_map(|f| f.ok()).filter_map(|f| index_of(f.data())).collect();
    let _ = d.poll();
    let s = d.stats();
    assert_eq!(got, vec![1, 2, 3], "{s:?}");
    assert_eq!((s.mab_errors, s.rx_overflows), (1, 1), "{s:?}");
    assert_eq!(r.dev.mode(now()), Mode::NormalCan20);
}

// ---------------------------------------------------------------- spi_clock

/// On a rig made with `o`, a driver with `config` receives and echoes 5
/// numbered frames; `check` then looks at the driver too.
fn echo_five_on(o: RigOptions, config: Config, check: impl FnOnce(&Mcp251xfd) -> Option<String>) -> Outcome {
    let mut r = rig_with(o);
    let gen = numbering_generator(&r, 5, 2_000_000);
    let rec = Recorder::attach(&r.can, 4096);
    let mut d = match driver(&mut r, config) {
        Ok(d) => d,
        Err(e) => return Outcome::new(&r, None, Some(format!("Mcp251xfd::new: {e}"))),
    };
    let failure = echo_five(&mut d, &gen, &rec).or_else(|| check(&d));
    Outcome::new(&r, Some(&d), failure)
}

/// The SPI device is set up at 20 MHz for a chip with a 40 MHz clock (the
/// limit is 17 MHz); frames are echoed.
fn scenario_spi_clock(w: Workarounds) -> Outcome {
    let o = RigOptions { spi_hz: Some(20_000_000), ..RigOptions::new(500_000) };
    echo_five_on(o, Config { workarounds: w, ..cfg(500_000) }, |_| None)
}

#[test]
fn spi_clock_keeps_the_clock_within_the_chip_s_limit() {
    on_off("spi_clock", scenario_spi_clock, only_off(|w| w.spi_clock = false), |s| s.spi_clock_clamped);
    let on = scenario_spi_clock(Workarounds::ALL);
    assert_eq!(on.hits.spi_clock, 0, "no access above the limit: {on:?}");
}

#[test]
fn the_clamp_reaches_every_transfer() {
    let mut r = rig_with(RigOptions { spi_hz: Some(20_000_000), ..RigOptions::new(500_000) });
    let d = driver(&mut r, cfg(500_000)).unwrap();
    assert_eq!(d.spi_clock_hz(), 17_000_000);
    assert_eq!(d.stats().spi_clock_clamped, 1, "counted once");
    assert_eq!(r.dev.errata_hits().spi_clock, 0, "init ran below the limit");
}

/// A 4 MHz clock with the PLL (SYSCLK 40 MHz) and the SPI device at the
/// 17 MHz the running chip allows: until the PLL locks the limit is
/// 1.7 MHz, so the probe must run slow and the frames then fast.
fn scenario_pll(w: Workarounds) -> Outcome {
    let model = Mcp2518fdConfig { osc_hz: 4_000_000, ..Mcp2518fdConfig::default() };
    let config = Config { clock_hz: 4_000_000, pll: true, workarounds: w, ..cfg(500_000) };
    echo_five_on(RigOptions { model, ..RigOptions::new(500_000) }, config, |d| {
        let hz = d.spi_clock_hz();
        (hz != 17_000_000).then(|| format!("after the PLL locked the SPI ran at {hz} Hz, not the device's 17 MHz"))
    })
}

#[test]
fn with_the_pll_the_probe_runs_below_the_bare_clock_s_limit() {
    on_off("spi_clock (PLL)", scenario_pll, only_off(|w| w.spi_clock = false), |s| s.spi_clock_clamped);
    let on = scenario_pll(Workarounds::ALL);
    assert_eq!(on.hits.spi_clock, 0, "no access above the limit of its moment: {on:?}");
    let bad = Config { clock_hz: 40_000_000, pll: true, ..cfg(500_000) };
    assert!(matches!(bad.plan(), Err(wirespeed_drivers::mcp251xfd::Error::InvalidConfig { what: "pll", .. })));
}

// ---------------------------------------------------------------- all together

#[test]
fn with_no_erratum_in_the_model_nothing_fires() {
    let mut r =
        rig_with(RigOptions { errata: wirespeed_lab::devices::mcp2518fd::Errata::NONE, ..RigOptions::new(500_000) });
    let gen = numbering_generator(&r, 20, 1_000_000);
    let mut d = driver(&mut r, Config { crc: true, ..cfg(500_000) }).unwrap();
    gen.start(now());
    let mut got = Vec::new();
    while let Ok(Some(f)) = d.recv(Some(Duration::from_millis(50))) {
        got.push(index_of(f.data()).unwrap());
        d.send(&f.with_id(CanId::Standard(0x078)).unwrap()).unwrap();
    }
    assert_eq!(exactly_once(&got, 20), None);
    let s = d.stats();
    assert_eq!(s.errata_recovered, 0, "{s:?}");
}
