//! Bus-level tests: bit-accurate lengths against vectors derived with an
//! independent list-based encoder, timing on the lab clock, arbitration, ACK
//! and injected faults.

use super::tools::{pair_echoes, DataMode, EchoReport, Generator, GeneratorConfig, Recorder};
use super::*;
use crate::{Lab, LabConfig};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirespeed_time::{now, Instant};

fn sid(id: u16) -> CanId {
    CanId::Standard(id)
}

/// (frame, total bits SOF..EOF, dynamic stuff bits, CRC) for classic frames, derived by
/// building each field as a list of bits, computing CRC-15 over SOF..data and stuffing
/// SOF..CRC with the five-equal-bits rule (a separate, list-based implementation).
#[test]
fn classic_frames_have_the_reference_lengths() {
    let cases: [(Frame, usize, u32, u32); 7] = [
        (Frame::new_classic(sid(0x077), &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap(), 123, 15, 31286),
        (Frame::new_classic(sid(0x000), &[0; 8]).unwrap(), 124, 16, 5211),
        (Frame::new_classic(sid(0x7FF), &[0xFF; 8]).unwrap(), 123, 15, 19593),
        (Frame::new_classic(sid(0x123), &[0x55; 8]).unwrap(), 109, 1, 25983),
        (Frame::new_classic(sid(0x077), &[]).unwrap(), 47, 3, 2230),
        (Frame::new_classic(CanId::Extended(0x1ABC_DEF0), &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap(), 139, 11, 4973),
        (Frame::new_remote(sid(0x100), 8).unwrap(), 46, 2, 16328),
    ];
    for (f, len, stuff, crc) in cases {
        let fb = FrameBits::encode(&f);
        assert_eq!((fb.len(), fb.stuff_bits(), fb.crc()), (len, stuff, crc), "{f:?}");
        assert_eq!(fb.data_bits(), 0);
    }
    // 108 unstuffed bits + 15 stuff bits at 250 kbit/s: 123 × 4 µs.
    let f = Frame::new_classic(sid(0x077), &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap();
    assert_eq!(FrameBits::encode(&f).duration_ns(BitRates::new(250_000, 250_000)), 123 * 4_000);
}

/// (frame, total bits, dynamic stuff bits, fixed stuff bits, data-phase bits), same reference encoder:
/// dynamic stuffing SOF..data (no stuff bit after the last data bit), Gray stuff count + parity,
/// fixed stuff bits before the stuff count and after every 4th bit.
#[test]
fn fd_frames_have_the_reference_lengths() {
    let cases: [(Frame, usize, u32, u32, u32); 5] = [
        (Frame::new_fd(sid(0x077), &[0; 64], true).unwrap(), 679, 103, 7, 651),
        (Frame::new_fd(sid(0x077), &[0; 64], false).unwrap(), 679, 103, 7, 0),
        (Frame::new_fd(sid(0x123), &[0x55; 8], true).unwrap(), 123, 0, 6, 96),
        (Frame::new_fd(sid(0x123), &[0xAA; 16], true).unwrap(), 187, 0, 6, 160),
        (Frame::new_fd(CanId::Extended(0x1ABC_DEF0), &[0; 20], true).unwrap(), 276, 33, 7, 228),
    ];
    for (f, len, stuff, fixed, data) in cases {
        let fb = FrameBits::encode(&f);
        assert_eq!(
            (fb.len(), fb.stuff_bits(), fb.fixed_stuff_bits(), fb.data_bits()),
            (len, stuff, fixed, data),
            "{f:?}"
        );
    }
}

#[test]
fn fd_brs_frames_are_shorter_and_split_by_rate() {
    let rates = BitRates::new(500_000, 2_000_000);
    let data = [0xA5u8; 64];
    let brs = FrameBits::encode(&Frame::new_fd(sid(0x10), &data, true).unwrap());
    let slow = FrameBits::encode(&Frame::new_fd(sid(0x10), &data, false).unwrap());
    assert_eq!(brs.len(), slow.len(), "BRS changes timing, not the bitstream length");
    assert!(brs.duration_ns(rates) * 3 < slow.duration_ns(rates));
    assert_eq!(brs.duration_ns(rates), u64::from(brs.nominal_bits()) * 2_000 + u64::from(brs.data_bits()) * 500);
}

#[test]
fn fd_stream_has_fixed_stuff_bits_every_fourth_bit() {
    let f = Frame::new_fd(sid(0x321), &[0x0F; 12], true).unwrap();
    let fb = FrameBits::encode(&f);
    let s: Vec<bool> = (0..fb.len()).map(|i| fb.bit(i)).collect();
    // The CRC field (stuff count + CRC-17, with 6 fixed stuff bits) ends before the CRC delimiter.
    let end = fb.len() - 10;
    let start = end - (4 + 17 + 6);
    for k in (start..end).step_by(5) {
        assert_ne!(s[k], s[k - 1], "fixed stuff bit at {k} must complement the bit before it");
    }
}

fn lab_bus(rate: u32) -> (Lab, Bus) {
    let lab = Lab::new(LabConfig::default());
    let bus = Bus::new(&lab, "can0", BitRates::new(rate, rate.max(1_000_000))).unwrap();
    (lab, bus)
}

fn quiet(bus: &Bus, name: &str) -> Generator {
    Generator::attach(bus, name, GeneratorConfig { count: 0, ..Default::default() }).unwrap()
}

#[test]
fn frame_occupies_the_bus_for_its_bit_time_and_is_stamped() {
    let (_lab, bus) = lab_bus(250_000);
    let rec = Recorder::attach(&bus, 64);
    let data = [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
    let gen = Generator::attach(
        &bus,
        "gen",
        GeneratorConfig { count: 3, gap_ns: 1_000_000, data: DataMode::Fixed(pad(&data)), ..Default::default() },
    )
    .unwrap();
    let _ack = quiet(&bus, "ack");
    let start = now().add_ns(2_000_000);
    gen.start(start);
    assert!(gen.wait_done(Duration::from_secs(5)));
    let r = rec.records();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].stamp.sof, start, "an idle bus starts the frame when it is ready");
    for x in &r {
        assert_eq!(x.error, None);
        assert_eq!(x.stamp.eof.ns_since(x.stamp.sof), 123 * 4_000);
    }
    assert_eq!(r[1].stamp.sof.ns_since(r[0].stamp.eof), 1_000_000, "gap from EOF");
    let sent = gen.sent();
    assert_eq!(sent[2].stamp, r[2].stamp);
    assert!(now() >= r[2].stamp.eof, "delivered no earlier than EOF");
}

fn pad(d: &[u8]) -> [u8; 64] {
    let mut b = [0; 64];
    b[..d.len()].copy_from_slice(d);
    b
}

#[test]
fn an_idle_bus_arbitrates_only_when_a_node_has_a_frame() {
    let (_lab, bus) = lab_bus(500_000);
    let gen =
        Generator::attach(&bus, "gen", GeneratorConfig { count: 5, gap_ns: 500_000, ..Default::default() }).unwrap();
    let _ack = quiet(&bus, "ack");
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(bus.frames_ok(), 5);
    // One round per frame: none after a frame that left nobody waiting.
    assert_eq!(bus.arbitrations(), 5);
}

#[test]
fn lowest_id_wins_arbitration_and_loser_retries_after_intermission() {
    let (_lab, bus) = lab_bus(1_000_000);
    let rec = Recorder::attach(&bus, 64);
    let cfg = |id| GeneratorConfig { id: sid(id), count: 1, gap_ns: 0, ..Default::default() };
    let high = Generator::attach(&bus, "high", cfg(0x200)).unwrap();
    let low = Generator::attach(&bus, "low", cfg(0x100)).unwrap();
    let t = now().add_ns(1_000_000);
    high.start(t);
    low.start(t);
    assert!(high.wait_done(Duration::from_secs(5)) && low.wait_done(Duration::from_secs(5)));
    let r = rec.records();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].frame.id(), sid(0x100));
    assert_eq!(r[0].stamp.sof, t);
    assert_eq!(r[1].frame.id(), sid(0x200));
    assert_eq!(r[1].stamp.sof.ns_since(r[0].stamp.eof), 3_000, "3-bit intermission at 1 Mbit/s");
}

#[test]
fn lone_node_gets_ack_errors_goes_error_passive_and_succeeds_once_a_peer_appears() {
    let (_lab, bus) = lab_bus(1_000_000);
    let rec = Recorder::attach(&bus, 100_000);
    let gen = Generator::attach(&bus, "lonely", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    gen.start(now());
    std::thread::sleep(Duration::from_millis(30));
    assert!(!gen.is_done());
    let c = bus.error_counters(gen.node());
    assert_eq!(c.tec, 128, "ACK errors stop counting once error passive");
    assert_eq!(c.state(), ErrorState::Passive);
    let r = rec.records();
    assert!(r.len() > 16);
    let fb = FrameBits::encode(&r[0].frame);
    assert_eq!(r[0].error, Some(BusError::Ack));
    assert_eq!(r[0].stamp.eof.ns_since(r[0].stamp.sof), (fb.ack_slot() as u64 + 1 + 14) * 1_000);
    // Error passive: intermission plus 8 bits of suspended transmission between attempts.
    let last = &r[r.len() - 2..];
    assert_eq!(last[1].stamp.sof.ns_since(last[0].stamp.eof), (3 + 8) * 1_000);
    let _peer = quiet(&bus, "peer");
    assert!(gen.wait_done(Duration::from_secs(5)));
    assert_eq!(bus.error_counters(gen.node()).tec, 127);
}

#[test]
fn corrupted_frames_are_retransmitted() {
    let (_lab, bus) = lab_bus(500_000);
    let rec = Recorder::attach(&bus, 64);
    let gen = Generator::attach(&bus, "gen", GeneratorConfig { count: 2, gap_ns: 0, ..Default::default() }).unwrap();
    let peer = quiet(&bus, "peer");
    bus.corrupt_next(2);
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    let errs: Vec<_> = rec.records().iter().map(|r| r.error).collect();
    assert_eq!(errs, vec![Some(BusError::Crc), Some(BusError::Crc), None, None]);
    assert_eq!(gen.attempts_failed(), 2);
    assert_eq!(bus.error_counters(gen.node()).tec, 14, "+8 +8 -1 -1");
    assert_eq!(bus.error_counters(peer.node()).rec, 0, "+1 +1 -1 -1");
    assert_eq!(peer.frames_received(), 2);
}

#[test]
fn bus_off_node_is_silent_until_it_recovers() {
    let (_lab, bus) = lab_bus(1_000_000);
    let rec = Recorder::attach(&bus, 64);
    let gen = Generator::attach(&bus, "gen", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    let _peer = quiet(&bus, "peer");
    let t = now();
    bus.force_bus_off(gen.node(), t);
    assert_eq!(bus.error_counters(gen.node()).state(), ErrorState::BusOff);
    gen.start(t);
    assert!(gen.wait_done(Duration::from_secs(5)));
    let r = rec.records();
    assert!(r[0].stamp.sof.ns_since(t) >= 128 * 11 * 1_000, "sent only after 128 × 11 bit times");
    assert_eq!(bus.error_counters(gen.node()), ErrorCounters::default());
}

struct Classic20Node;
impl CanNode for Classic20Node {
    fn participation(&self, _at: Instant) -> Participation {
        Participation { role: Role::Active, rates: None, fd_tolerant: false }
    }
    fn tx_request(&self, _at: Instant) -> Option<TxRequest> {
        None
    }
    fn tx_done(&self, _: u64, _: TxOutcome, _: FrameStamp) {}
    fn rx_frame(&self, _: &Frame, _: FrameStamp) {}
}

#[test]
fn can20_node_destroys_fd_frames() {
    let (_lab, bus) = lab_bus(500_000);
    let rec = Recorder::attach(&bus, 64);
    let gen = Generator::attach(
        &bus,
        "gen",
        GeneratorConfig { count: 1, gap_ns: 0, fd: true, brs: true, len: 16, ..Default::default() },
    )
    .unwrap();
    bus.attach(Arc::new(Classic20Node), "can20");
    gen.start(now());
    std::thread::sleep(Duration::from_millis(5));
    assert!(!gen.is_done());
    assert!(rec.records().iter().all(|r| r.error == Some(BusError::Form)));
}

/// Echoes each received frame after a fixed delay (a lab stand-in for canecho).
struct EchoNode {
    bus: Bus,
    delay_ns: u64,
    queue: Mutex<Vec<(Instant, Frame)>>,
}
impl CanNode for EchoNode {
    fn participation(&self, _at: Instant) -> Participation {
        Participation::ACTIVE
    }
    fn tx_request(&self, at: Instant) -> Option<TxRequest> {
        let q = self.queue.lock().unwrap();
        q.first().filter(|(t, _)| *t <= at).map(|(_, f)| TxRequest { frame: *f, token: 0, self_ack: false })
    }
    fn tx_done(&self, _: u64, outcome: TxOutcome, _: FrameStamp) {
        if outcome == TxOutcome::Sent {
            self.queue.lock().unwrap().remove(0);
        }
    }
    fn rx_frame(&self, frame: &Frame, stamp: FrameStamp) {
        let at = stamp.eof.add_ns(self.delay_ns);
        self.queue.lock().unwrap().push((at, *frame));
        self.bus.request(at);
    }
}

/// `count` generated frames 2 ms apart at 1 Mbit/s, each echoed `delay_ns`
/// after its EOF; the recorded traffic, paired.
fn echo_report(count: u64, delay_ns: u64) -> EchoReport {
    let (_lab, bus) = lab_bus(1_000_000);
    let rec = Recorder::attach(&bus, 64);
    let gen =
        Generator::attach(&bus, "gen", GeneratorConfig { count, gap_ns: 2_000_000, ..Default::default() }).unwrap();
    bus.attach(Arc::new(EchoNode { bus: bus.clone(), delay_ns, queue: Mutex::new(Vec::new()) }), "echo");
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_nanos(delay_ns + 3_000_000));
    pair_echoes(&rec.records(), gen.node())
}

#[test]
fn echo_pairs_measure_eof_to_sof_gaps() {
    let report = echo_report(5, 150_000);
    assert_eq!((report.pairs.len(), report.unanswered, report.payload_mismatches()), (5, 0, 0));
    assert!(report.pairs.iter().all(|p| p.gap_ns == 150_000 && p.id_match));
}

#[test]
fn a_late_echo_still_pairs_with_its_own_request() {
    // Echoes come 2.5 ms after each request: after the next one (2 ms apart).
    let report = echo_report(4, 2_500_000);
    assert_eq!((report.pairs.len(), report.unanswered, report.payload_mismatches()), (4, 0, 0));
    assert!(report.pairs.iter().all(|p| p.gap_ns >= 2_500_000), "{:?}", report.gaps_us());
}

/// Notes what the bus tells a receiver, and when (host time).
#[derive(Default)]
struct StagingNode {
    told: Mutex<Vec<(&'static str, FrameStamp, Instant)>>,
}
impl CanNode for StagingNode {
    fn participation(&self, _at: Instant) -> Participation {
        Participation::ACTIVE
    }
    fn tx_request(&self, _at: Instant) -> Option<TxRequest> {
        None
    }
    fn tx_done(&self, _: u64, _: TxOutcome, _: FrameStamp) {}
    fn rx_coming(&self, _frame: &Frame, stamp: FrameStamp) {
        self.told.lock().unwrap().push(("coming", stamp, now()));
    }
    fn rx_frame(&self, _frame: &Frame, stamp: FrameStamp) {
        self.told.lock().unwrap().push(("frame", stamp, now()));
    }
    fn rx_error(&self, _error: BusError, at: Instant) {
        self.told.lock().unwrap().push(("error", FrameStamp { sof: at, eof: at }, now()));
    }
}

#[test]
fn a_receiver_hears_of_a_good_frame_at_arbitration_and_gets_it_at_eof_and_of_a_bad_one_only_its_error() {
    // (When it hears of it, in host time, depends on the interrupt thread
    // keeping up; that a frame is never delivered before its EOF does not.)
    let (_lab, bus) = lab_bus(1_000_000);
    let node = Arc::new(StagingNode::default());
    bus.attach(node.clone(), "rx");
    let gen =
        Generator::attach(&bus, "gen", GeneratorConfig { count: 2, gap_ns: 1_000_000, ..Default::default() }).unwrap();
    // The first attempt's CRC is corrupted: its receivers see an error, not
    // a frame; the retransmission and the second frame come through.
    bus.corrupt_next(1);
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(2));
    let told = node.told.lock().unwrap().clone();
    let kinds: Vec<&str> = told.iter().map(|t| t.0).collect();
    assert_eq!(kinds, ["error", "coming", "frame", "coming", "frame"], "{told:?}");
    for pair in told[1..].chunks(2) {
        let (coming, frame) = (pair[0], pair[1]);
        assert_eq!(coming.1.eof, frame.1.eof, "the same frame");
        assert!(coming.2 <= frame.2, "told ahead");
        assert!(frame.2 >= frame.1.eof, "delivered at EOF, not before");
    }
}
