//! The model against the datasheet, driven through its SPI face directly.

use super::regs::*;
use super::testkit::*;
use super::*;
use crate::can::tools::{DataMode, Generator, GeneratorConfig, Recorder};
use crate::can::{CanId, ErrorState};
use crate::pin::PinSink;
use std::time::Duration;
use wirespeed_time::Instant;

#[test]
fn reset_values_match_the_datasheet() {
    let mut t = T::new();
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0, "oscillator still starting");
    t.ready();
    assert_eq!(t.read(OSC), OSC_RESET_READY);
    assert_eq!(t.read(C1CON), C1CON_RESET);
    assert_eq!(t.read(C1NBTCFG), NBTCFG_RESET);
    assert_eq!(t.read(C1DBTCFG), DBTCFG_RESET);
    assert_eq!(t.read(C1TDC), TDC_RESET);
    assert_eq!(t.read(C1VEC), C1VEC_RESET);
    assert_eq!(t.read(C1INT), 0);
    assert_eq!(t.read(C1TREC), TREC_TXBO, "in configuration mode the controller is off the bus");
    assert_eq!(t.read(C1TEFCON), 0x0000_0400);
    assert_eq!(t.read(C1TXQCON), FIFOCON_RESET | FIFOCON_TXEN);
    assert_eq!(t.read(c1fifocon(1)), FIFOCON_RESET);
    assert_eq!(t.read(IOCON) & !(IOCON_GPIO0 | IOCON_GPIO1), IOCON_RESET);
    assert_eq!(t.read(DEVID), DEVID_MCP2518FD);
    assert!(t.dev.int_pin().is_high());
    // RESET restores them; the running oscillator keeps running (see
    // tests_sleep for the start-up it takes after power-on and wake).
    t.write(C1NBTCFG, 0x0102_0304);
    t.xfer(&[0x00, 0x00]);
    assert_eq!(t.read(C1NBTCFG), NBTCFG_RESET);
    assert_eq!(t.read(OSC), OSC_RESET_READY);
}

#[test]
fn mode_changes_through_reqop_and_opmod() {
    let mut t = T::new();
    t.ready();
    t.write(C1INT, INT_MODIF << 16);
    t.write_byte(C1CON + 3, MODE_NORMAL_FD);
    let con = t.read(C1CON);
    assert_eq!(((con >> 24) & 7, (con >> 21) & 7), (0, 4), "REQOP reads back at once, OPMOD follows later");
    t.set_mode(MODE_NORMAL_FD);
    assert_ne!(t.read(C1INT) & INT_MODIF, 0);
    assert!(!t.dev.int_pin().is_high(), "MODIF enabled: INT low");
    t.write(C1INT, INT_MODIF << 16); // clear MODIF (write 0), keep MODIE
    assert!(t.dev.int_pin().is_high());
    // Normal → internal loopback must go through configuration mode.
    t.write_byte(C1CON + 3, MODE_INTERNAL_LOOPBACK);
    t.later(100_000);
    assert_eq!((t.read(C1CON) >> 21) & 7, u32::from(MODE_NORMAL_FD));
    assert_eq!(t.dev.stats().invalid_mode_requests, 1);
    for m in [
        MODE_CONFIG,
        MODE_LISTEN_ONLY,
        MODE_CONFIG,
        MODE_EXTERNAL_LOOPBACK,
        MODE_CONFIG,
        MODE_NORMAL_CAN20,
        MODE_RESTRICTED,
        MODE_CONFIG,
    ] {
        t.set_mode(m);
    }
    // Bit timing is writable only in configuration mode.
    t.set_mode(MODE_NORMAL_FD);
    t.write(C1NBTCFG, 0);
    assert_eq!(t.read(C1NBTCFG), NBTCFG_RESET);
}

#[test]
fn no_oscillator_means_no_mode_change() {
    let mut t = T::new();
    t.dev.set_oscillator_dead(true);
    t.later(1_000_000);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0);
    t.write_byte(C1CON + 3, MODE_NORMAL_FD);
    t.later(1_000_000);
    assert_eq!((t.read(C1CON) >> 21) & 7, u32::from(MODE_CONFIG));
    t.dev.set_devid(0);
    assert_eq!(t.read(DEVID), 0);
}

#[test]
fn pll_and_sysclk() {
    let mut t = T::new();
    t.ready();
    t.write(OSC, OSC_PLLEN);
    assert_eq!(t.read(OSC) & OSC_PLLRDY, 0);
    t.later(200_000);
    assert_ne!(t.read(OSC) & OSC_PLLRDY, 0);
}

#[test]
fn crc_instructions_and_crc_error_flags() {
    let mut t = T::new();
    t.ready();
    let (data, got, mine) = crc_read(&mut t, C1CON, 4);
    assert_eq!(data, C1CON_RESET.to_le_bytes());
    assert_eq!(got, mine, "READ_CRC: CRC over command, length and data");
    // RAM lengths count words.
    let (data, got, mine) = crc_read(&mut t, 0x400, 2);
    assert_eq!((data.len(), got), (8, mine));
    // A good WRITE_CRC writes and flags nothing.
    crc_write(&mut t, C1NBTCFG, &0x0001_1E07u32.to_le_bytes(), false);
    assert_eq!(t.read(C1NBTCFG), 0x0001_1E07);
    assert_eq!(t.read(CRC) & (CRC_CRCERRIF | CRC_FERRIF), 0);
    // A bad CRC sets CRCERRIF (and, enabled, SPICRCIF and INT).
    t.write(CRC, CRC_CRCERRIE);
    t.write(C1INT, INT_SPICRCIF << 16);
    crc_write(&mut t, C1DBTCFG, &[1, 2, 3, 4], true);
    assert_ne!(t.read(CRC) & CRC_CRCERRIF, 0);
    assert_ne!(t.read(C1INT) & INT_SPICRCIF, 0);
    assert!(!t.dev.int_pin().is_high());
    t.write(CRC, CRC_CRCERRIE); // clear the flag
    assert_eq!(t.read(CRC) & CRC_CRCERRIF, 0);
    assert!(t.dev.int_pin().is_high());
    // A short CRC access is a format error.
    t.xfer(&[0xA0, 0x04, 4, 1, 2]);
    assert_ne!(t.read(CRC) & CRC_FERRIF, 0);
    // WRITE_SAFE writes only with a good CRC.
    let safe = |t: &mut T, addr: u16, data: &[u8], bad: bool| {
        let mut cmd = vec![0xC0 | (addr >> 8) as u8, addr as u8];
        cmd.extend(data);
        let c = crc16(&cmd) ^ u16::from(bad);
        cmd.extend(c.to_be_bytes());
        t.xfer(&cmd);
    };
    safe(&mut t, c1fltobj(0), &[0x11], true);
    assert_eq!(t.read(c1fltobj(0)), 0);
    safe(&mut t, c1fltobj(0), &[0x11], false);
    assert_eq!(t.read(c1fltobj(0)), 0x11, "one byte for a register");
    safe(&mut t, 0x400, &[1, 2, 3, 4], true);
    assert_ne!(t.read(0x400), 0x0403_0201);
    safe(&mut t, 0x400, &[1, 2, 3, 4], false);
    assert_eq!(t.read(0x400), 0x0403_0201, "one word for RAM");
    // Bit flips on the wire: MOSI caught by the device, MISO by the host.
    t.write(CRC, 0);
    t.dev.flip_mosi(1, 0x01);
    crc_write(&mut t, 0x404, &[1, 2, 3, 4], false);
    assert_ne!(t.read(CRC) & CRC_CRCERRIF, 0);
    t.dev.flip_miso(1, 0x80);
    let (_, got, mine) = crc_read(&mut t, C1CON, 4);
    assert_ne!(got, mine);
    assert_eq!(t.dev.stats().spi_crc_errors, 4);
}

#[test]
fn ram_layout_follows_fifo_configuration() {
    let mut t = T::new();
    t.ready();
    setup_fifos(&mut t);
    assert_eq!(t.read(C1TEFUA), 0);
    assert_eq!(t.read(C1TXQUA), 4 * 8, "after the TEF: 4 objects of 8 bytes");
    assert_eq!(t.read(c1fifoua(1)), 32 + 4 * 16, "after the TXQ: 4 objects of 8 + 8 bytes");
    assert_eq!(t.read(c1fifoua(2)), 32 + 64 + 4 * 20, "RX objects with timestamp: 12 + 8 bytes");
    assert!(!t.dev.ram_overflow());
}

#[test]
fn internal_loopback_fills_rx_fifo_and_tef_and_uinc_drains_them() {
    let mut t = T::new();
    t.ready();
    setup_fifos(&mut t);
    t.set_mode(MODE_INTERNAL_LOOPBACK);
    let tbc0 = t.read(C1TBC);
    queue_txq(&mut t, 0x123, false, &[1, 2, 3, 4, 5, 6, 7, 8], 5);
    queue_txq(&mut t, 0x1ABC_DEF0, true, &[9; 8], 6);
    t.wait_for(|t| (t.read(c1fifosta(1)) >> 8) & 0x1F == 2 && t.read(C1TEFSTA) & TEFSTA_TEFHIF != 0);
    let at = t.later(0);
    assert!(!t.dev.int_pin().is_high(), "RX and TEF interrupts pending");
    let sta = t.read(c1fifosta(1));
    assert_eq!(sta & FIFOSTA_TFNRFNIF, FIFOSTA_TFNRFNIF);
    assert_eq!((sta >> 8) & 0x1F, 2, "FIFOCI: next object the FIFO writes");
    assert_eq!(t.read(C1RXIF), 1 << 1);
    let vec = t.read(C1VEC);
    assert_eq!((vec & 0x7F, (vec >> 24) & 0x7F), (0x49, 1), "ICOD: TEF (0x49) outranks FIFO 1; RXCODE: FIFO 1");
    // RX object 0: ID, flags (DLC 8, FILHIT 0), timestamp, data.
    let ua = u16::try_from(t.read(c1fifoua(1))).unwrap();
    let r = t.xfer(&[
        0x30 | ((0x400 + ua) >> 8) as u8,
        (0x400 + ua) as u8,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ]);
    let w = |i: usize| u32::from_le_bytes([r[2 + i], r[3 + i], r[4 + i], r[5 + i]]);
    assert_eq!(w(0), 0x123);
    assert_eq!(w(4) & 0xFFF, 8);
    let ts = w(8).wrapping_sub(tbc0);
    assert!(ts < 5_000, "timestamp {ts} µs after TBC0");
    assert_eq!(&r[14..22], &[1, 2, 3, 4, 5, 6, 7, 8]);
    // The lower ID went first; the extended frame is object 1.
    t.write_byte(c1fifocon(1) + 1, (FIFOCON_UINC >> 8) as u8);
    let ua1 = u16::try_from(t.read(c1fifoua(1))).unwrap();
    assert_eq!(ua1, ua + 20);
    let r = t.xfer(&[0x30 | ((0x400 + ua1) >> 8) as u8, (0x400 + ua1) as u8, 0, 0, 0, 0, 0, 0, 0, 0]);
    let idw = u32::from_le_bytes([r[2], r[3], r[4], r[5]]);
    let flags = u32::from_le_bytes([r[6], r[7], r[8], r[9]]);
    assert_eq!(((idw & 0x7FF) << 18) | ((idw >> 11) & 0x3FFFF), 0x1ABC_DEF0);
    assert_ne!(flags & OBJ_FLAGS_IDE, 0);
    t.write_byte(c1fifocon(1) + 1, (FIFOCON_UINC >> 8) as u8);
    assert_eq!(t.read(C1RXIF), 0);
    // TEF: two events with the sequence numbers, in transmit order.
    assert_eq!(t.read(C1TEFSTA) & TEFSTA_TEFNEIF, TEFSTA_TEFNEIF);
    for seq in [5, 6] {
        let tua = u16::try_from(t.read(C1TEFUA)).unwrap();
        let r = t.xfer(&[0x30 | ((0x400 + tua) >> 8) as u8, (0x400 + tua) as u8, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(u32::from_le_bytes([r[6], r[7], r[8], r[9]]) >> OBJ_FLAGS_SEQ_SHIFT, seq);
        t.write_byte(C1TEFCON + 1, (TEFCON_UINC >> 8) as u8);
    }
    assert_eq!(t.read(C1TEFSTA) & TEFSTA_TEFNEIF, 0);
    assert!(t.dev.int_pin().is_high(), "all sources cleared: INT released");
    assert_eq!(t.read(C1TXQSTA) & FIFOSTA_TFERFFIF, FIFOSTA_TFERFFIF, "TXQ empty");
    assert_eq!(t.read(C1TXREQ), 0);
    assert!(t.t >= at);
}

#[test]
fn received_frame_lowers_int_at_eof_plus_store_delay() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let edges = Arc::new(Edges(Mutex::new(Vec::new())));
    t.dev.int_pin().connect(edges.clone(), now());
    let data = [0xDE, 0xAD, 0xBE, 0xEF, 0, 1, 2, 3];
    let mut fixed = [0u8; 64];
    fixed[..8].copy_from_slice(&data);
    let gen = Generator::attach(
        &bus,
        "gen",
        GeneratorConfig { count: 1, gap_ns: 0, data: DataMode::Fixed(fixed), ..Default::default() },
    )
    .unwrap();
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)), "the model acknowledges");
    t.wait_for(|t| t.read(C1RXIF) != 0);
    let eof = rec.records()[0].stamp.eof;
    let e = edges.0.lock().unwrap().clone();
    assert_eq!(e.iter().find(|(h, _)| !h).map(|x| x.1), Some(eof.add_ns(1_000)), "INT falls 1 µs after EOF");
    let ua = u16::try_from(t.read(c1fifoua(1))).unwrap();
    let r = t.xfer(&[
        0x30 | ((0x400 + ua) >> 8) as u8,
        (0x400 + ua) as u8,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ]);
    assert_eq!(u32::from_le_bytes([r[2], r[3], r[4], r[5]]), 0x077);
    assert_eq!(&r[14..22], &data);
    t.write_byte(c1fifocon(1) + 1, (FIFOCON_UINC >> 8) as u8);
    assert!(t.dev.int_pin().is_high());
    let rise = edges.0.lock().unwrap().last().copied().unwrap();
    assert!(rise.0 && rise.1 == t.t, "INT rises at the UINC byte");
    assert_eq!(t.read(C1TREC) & 0xFFFF, 0);
}

/// Notes when the INT pin was driven low, in host time.
struct FellAt(Mutex<Option<Instant>>);
impl PinSink for FellAt {
    fn drive(&self, high: bool, _at: Instant) {
        if !high {
            self.0.lock().unwrap().get_or_insert(now());
        }
    }
}

/// A bus listener that takes 20 ms over each frame (told after receivers).
struct SlowObserver(Mutex<Option<Instant>>);
impl crate::can::BusObserver for SlowObserver {
    fn frame(&self, _r: &crate::can::FrameRecord) {
        std::thread::sleep(Duration::from_millis(20));
        self.0.lock().unwrap().get_or_insert(now());
    }
}

#[test]
fn int_falls_on_time_even_when_other_bus_listeners_are_slow() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let slow = Arc::new(SlowObserver(Mutex::new(None)));
    bus.observe(slow.clone());
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let fell = Arc::new(FellAt(Mutex::new(None)));
    t.dev.int_pin().connect(fell.clone(), now());
    let gen = Generator::attach(&bus, "gen", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    gen.start(now());
    // The transmitter hears of its frame after the listeners. No SPI access
    // before that: an access applies due events itself.
    assert!(gen.wait_done(Duration::from_secs(5)), "the model acknowledges");
    let slow_done = slow.0.lock().unwrap().expect("the observer saw the frame");
    let fell = *fell.0.lock().unwrap();
    // The store is due 1 µs after EOF: INT must not wait for the listener's 20 ms.
    assert!(fell.is_some_and(|f| f < slow_done), "INT fell at {fell:?}, the slow listener returned at {slow_done:?}");
    t.wait_for(|t| t.read(C1RXIF) != 0);
}

#[test]
fn filters_and_masks_route_frames() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    t.write(c1fifocon(1), 3 << 24);
    t.write(c1fifocon(2), 3 << 24);
    // Filter 0: standard 0x100..=0x10F (mask 0x7F0) → FIFO 1; filter 1: extended only, exact → FIFO 2.
    t.write(c1fltobj(0), 0x100);
    t.write(c1mask(0), MASK_MIDE | 0x7F0);
    t.write(c1fltobj(1), FLTOBJ_EXIDE | 0x155 | (0x2AAAA << 11));
    t.write(c1mask(1), MASK_MIDE | 0x1FFF_FFFF);
    t.write(c1fltcon(0), u32::from(FLTEN1 | 1) | (u32::from(FLTEN1 | 2) << 8));
    t.set_mode(MODE_NORMAL_FD);
    let ids = [
        CanId::Standard(0x105),
        CanId::Standard(0x205),
        CanId::Extended((0x155 << 18) | 0x2AAAA),
        CanId::Extended(0x105),
    ];
    for id in ids {
        let g =
            Generator::attach(&bus, "g", GeneratorConfig { id, count: 1, gap_ns: 0, ..Default::default() }).unwrap();
        g.start(now());
        assert!(g.wait_done(Duration::from_secs(5)));
    }
    t.wait_for(|t| t.dev.stats().rx_frames == 4);
    let count = |t: &mut T, m| (t.read(c1fifosta(m)) >> 8) & 0x1F;
    assert_eq!((count(&mut t, 1), count(&mut t, 2)), (1, 1));
    let s = t.dev.stats();
    assert_eq!((s.rx_frames, s.rx_stored, s.rx_unmatched), (4, 2, 2));
    // FILHIT of the FIFO 2 object names filter 1.
    let ua = u16::try_from(t.read(c1fifoua(2))).unwrap();
    let r = t.xfer(&[0x30 | ((0x404 + ua) >> 8) as u8, (0x404 + ua) as u8, 0, 0, 0, 0]);
    assert_eq!((u32::from_le_bytes([r[2], r[3], r[4], r[5]]) >> OBJ_FLAGS_FILHIT_SHIFT) & 0x1F, 1);
}

const FLTEN1: u8 = FLTCON_FLTEN;

#[test]
fn full_rx_fifo_overflows_and_counts() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    t.write(c1fifocon(1), (1 << 24) | FIFOCON_RXOVIE);
    t.write(c1fltcon(0), u32::from(FLTCON_FLTEN | 1));
    t.write(C1INT, INT_RXOVIF << 16);
    t.set_mode(MODE_NORMAL_FD);
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 3, gap_ns: 0, ..Default::default() }).unwrap();
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.read(c1fifosta(1)) & FIFOSTA_RXOVIF != 0);
    assert_ne!(t.read(c1fifosta(1)) & FIFOSTA_TFERFFIF, 0, "full");
    assert_eq!(t.read(C1RXOVIF), 1 << 1);
    assert_ne!(t.read(C1INT) & INT_RXOVIF, 0);
    assert_eq!(t.read(C1VEC) & 0x7F, 0x43);
    assert!(!t.dev.int_pin().is_high());
    assert_eq!(t.dev.stats().rx_overflows, 1);
    t.write_byte(c1fifosta(1), 0); // clear RXOVIF
    assert_eq!(t.read(C1INT) & INT_RXOVIF, 0);
    assert!(t.dev.int_pin().is_high());
}

#[test]
fn lone_transmitter_counts_errors_and_one_shot_aborts() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    setup_fifos(&mut t);
    let con = t.read(C1CON);
    t.write(C1CON, con | CON_RTXAT);
    t.write(C1TXQCON, (3 << 24) | FIFOCON_TXATIE); // TXAT = 0: one attempt
    t.write(C1INT, (INT_TXATIF | INT_CERRIF | INT_IVMIF) << 16);
    t.set_mode(MODE_NORMAL_FD);
    queue_txq(&mut t, 0x42, false, &[0; 8], 1);
    t.wait_for(|t| t.read(C1TXQSTA) & FIFOSTA_TXATIF != 0);
    let sta = t.read(C1TXQSTA);
    assert_ne!(sta & FIFOSTA_TXATIF, 0, "sta {sta:#x} {:?} {:#x}", t.dev.stats(), t.read(C1TXQCON));
    assert_ne!(sta & FIFOSTA_TXABT, 0);
    assert_ne!(sta & FIFOSTA_TXERR, 0);
    assert_eq!(t.read(C1TXREQ), 0);
    assert_eq!(t.read(C1TXATIF), 1);
    assert_eq!((t.read(C1TREC) >> 8) & 0xFF, 8, "one ACK error: TEC 8");
    assert_ne!(t.read(C1BDIAG1) & BDIAG1_NACKERR, 0);
    // A bus error is an invalid message (IVMIF); CERRIF waits for a change
    // of the fault-confinement state, which TEC 8 is not.
    assert_ne!(t.read(C1INT) & INT_IVMIF, 0);
    assert_eq!(t.read(C1INT) & INT_CERRIF, 0);
    assert_eq!(t.read(C1VEC) & 0x7F, 0x4A);
    // Bus-off through the backdoor: that is a state change.
    t.dev.force_bus_off(now());
    let trec = t.read(C1TREC);
    assert_ne!(trec & TREC_TXBO, 0);
    assert_ne!(t.read(C1INT) & INT_CERRIF, 0);
    assert_eq!(bus.error_counters(NodeId(0)).state(), ErrorState::BusOff);
}

#[test]
fn echo_through_the_model_on_the_bus() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_CAN20);
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    queue_txq(&mut t, 0x77, false, &[7; 8], 9);
    let txreq_at = t.t;
    t.wait_for(|t| t.read(C1TEFSTA) & TEFSTA_TEFNEIF != 0);
    let r = rec.records();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].error, None);
    assert_eq!(r[0].stamp.sof, txreq_at.add_ns(2_000), "SOF 2 µs after the TXREQ byte");
    assert_eq!(g.frames_received(), 1);
    assert_eq!(t.read(C1TEFSTA) & TEFSTA_TEFNEIF, TEFSTA_TEFNEIF);
}

use crate::can::NodeId;
use std::sync::{Arc, Mutex};

#[test]
fn a_lab_with_a_device_on_a_bus_stops_its_interrupt_thread_when_dropped() {
    let mut t = T::new();
    let watch = t.lab.scheduler().watch();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 4);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    let gen = Generator::attach(&bus, "gen", GeneratorConfig { count: 2, gap_ns: 0, ..Default::default() }).unwrap();
    gen.start(now());
    assert!(gen.wait_done(Duration::from_secs(5)));
    assert!(!watch.is_stopped());
    drop((t, bus, rec, gen));
    // A task running now may hold its part of the lab a moment longer.
    let give_up = now().add_ns(2_000_000_000);
    while !watch.is_stopped() && now() < give_up {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(watch.is_stopped(), "a part of the lab keeps its interrupt thread alive (a reference cycle)");
}

#[test]
fn rx_payload_longer_than_the_object_is_truncated_and_flagged_invalid() {
    // Reference manual, "Mismatch of DLC and payload size during reception":
    // the bytes that fit are stored, and IVMIF and DLCMM are set.
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    setup_fifos(&mut t); // FIFO 1: 8-byte payloads
    t.write(C1INT, (INT_RXIF | INT_IVMIF) << 16);
    t.set_mode(MODE_NORMAL_FD);
    let ua = usize::try_from(t.read(c1fifoua(1))).unwrap();
    let slot1 = t.dev.peek_ram(ua + 20, 8);
    let g = Generator::attach(
        &bus,
        "g",
        GeneratorConfig {
            count: 1,
            gap_ns: 0,
            fd: true,
            len: 64,
            data: DataMode::Fixed([0x5A; 64]),
            ..Default::default()
        },
    )
    .unwrap();
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.read(C1RXIF) != 0);
    assert_ne!(t.read(C1BDIAG1) & BDIAG1_DLCMM, 0);
    assert_ne!(t.read(C1INT) & INT_IVMIF, 0, "IVMIF set with DLCMM");
    // The next object (FIFO 1 slot 1) is not overwritten.
    assert_eq!(t.dev.peek_ram(ua + 20, 8), slot1);
}

/// Writes a TX object claiming DLC 15 (64 bytes) into the TXQ, whose
/// objects hold 8 (as `setup_fifos` makes it), and requests it.
fn request_tx_of_a_dlc_beyond_the_payload(t: &mut T) {
    write_tx_obj(t, 0, 0x123, 15 | OBJ_FLAGS_FDF, &[0xA5; 8]);
    t.write_byte(C1TXQCON + 1, ((FIFOCON_UINC | FIFOCON_TXREQ) >> 8) as u8);
}

#[test]
fn tx_object_whose_dlc_exceeds_its_payload_is_not_sent() {
    // Reference manual, "Mismatch of DLC and payload size during
    // transmission": the message is not sent; IVMIF and DLCMM are set and
    // TXREQ is cleared.
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    setup_fifos(&mut t); // TXQ: 8-byte payloads
    t.write(C1INT, INT_IVMIF << 16);
    t.set_mode(MODE_NORMAL_FD);
    let _peer = Generator::attach(&bus, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    request_tx_of_a_dlc_beyond_the_payload(&mut t);
    // INT falls when the message is refused, not at the next SPI access.
    t.wait_for(|t| !t.dev.int_pin().is_high());
    assert_ne!(t.read(C1INT) & INT_IVMIF, 0);
    std::thread::sleep(Duration::from_millis(2));
    assert!(rec.records().is_empty(), "nothing on the bus: {:?}", rec.records());
    assert_ne!(t.read(C1BDIAG1) & BDIAG1_DLCMM, 0);
    assert_eq!(t.read(C1TXREQ), 0, "TXREQ cleared");
    assert_eq!(t.dev.stats().tx_frames, 0);
}

#[test]
fn in_internal_loopback_a_tx_object_whose_dlc_exceeds_its_payload_raises_ivmif_and_int() {
    // The refusal above, in internal loopback mode (no bus: the device
    // transmits to itself): nothing is looped back, IVMIF and DLCMM are set,
    // TXREQ is cleared, and INT falls at the instant of the refusal, when
    // the message would have started (TXREQ + tx_start_delay_ns). The SPI
    // write that set TXREQ drives the pins too, at its own instant: only the
    // edge's stamp tells that the refusal drove INT, not that write.
    let mut t = T::new();
    t.ready();
    setup_fifos(&mut t); // TXQ: 8-byte payloads; FIFO 1 receives every frame
    t.write(C1INT, INT_IVMIF << 16);
    t.set_mode(MODE_INTERNAL_LOOPBACK);
    let edges = Arc::new(Edges(Mutex::new(Vec::new())));
    t.dev.int_pin().connect(edges.clone(), now());
    request_tx_of_a_dlc_beyond_the_payload(&mut t);
    let requested = t.t;
    t.wait_for(|t| !t.dev.int_pin().is_high());
    let refused_at = requested.add_ns(t.dev.config().tx_start_delay_ns);
    let falls: Vec<Instant> = edges.0.lock().unwrap().iter().filter(|(high, _)| !high).map(|e| e.1).collect();
    assert_eq!(falls, vec![refused_at], "INT falls once, at the refusal");
    assert_ne!(t.read(C1INT) & INT_IVMIF, 0);
    assert_ne!(t.read(C1BDIAG1) & BDIAG1_DLCMM, 0);
    assert_eq!(t.read(C1TXREQ), 0, "TXREQ cleared");
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(t.read(C1RXIF), 0, "nothing looped back");
    assert_eq!(t.read(C1TEFSTA) & TEFSTA_TEFNEIF, 0, "no TEF entry");
    assert_eq!(t.dev.stats().tx_frames, 0);
}

#[test]
fn a_sent_message_is_not_offered_again_while_its_completion_is_being_stored() {
    // A store delay (10 µs) longer than the intermission (3 µs at 1 Mbit/s):
    // the next arbitration comes before the TEF entry is written.
    let mut t = T::new();
    t.dev.set_config(Mcp2518fdConfig { store_delay_ns: 10_000, ..Mcp2518fdConfig::default() });
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    setup_fifos(&mut t);
    t.set_mode(MODE_NORMAL_FD);
    // A peer whose frame becomes ready while the model's is on the wire:
    // the bus arbitrates again right after it.
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    queue_txq(&mut t, 0x10, false, &[1; 8], 1);
    g.start(t.t.add_ns(20_000));
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.read(C1TEFSTA) & TEFSTA_TEFNEIF != 0);
    std::thread::sleep(Duration::from_millis(2));
    let ids: Vec<u32> = rec.records().iter().filter(|r| r.error.is_none()).map(|r| r.frame.id().raw()).collect();
    assert_eq!(ids.iter().filter(|&&id| id == 0x10).count(), 1, "the model's frame went out once: {ids:x?}");
    assert_eq!(t.dev.stats().tx_frames, 1);
}

#[test]
fn tx_fifos_of_equal_priority_send_the_highest_index_first() {
    // Reference manual, "Transmit priority": among FIFOs with the same
    // TXPRI the highest index goes first; the TXQ wins a tie with FIFOs.
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    let rec = Recorder::attach(&bus, 16);
    let _peer = Generator::attach(&bus, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let con = t.read(C1CON);
    t.write(C1CON, con | CON_TXQEN);
    for m in [1, 3] {
        t.write(c1fifocon(m), FIFOCON_TXEN | (1 << FIFOCON_TXPRI_SHIFT));
    }
    t.write(C1TXQCON, FIFOCON_TXEN | (1 << FIFOCON_TXPRI_SHIFT));
    t.set_mode(MODE_NORMAL_CAN20);
    for (m, id) in [(1u16, 0x100u32), (3, 0x300), (0, 0x400)] {
        write_tx_obj(&mut t, m, id, 1, &[0; 8]);
        t.write_byte(c1fifocon(m) + 1, (FIFOCON_UINC >> 8) as u8);
    }
    t.write(C1TXREQ, (1 << 0) | (1 << 1) | (1 << 3));
    t.wait_for(|t| t.dev.stats().tx_frames == 3);
    let ids: Vec<u32> = rec.records().iter().map(|r| r.frame.id().raw()).collect();
    assert_eq!(ids, vec![0x400, 0x300, 0x100], "TXQ, then FIFO 3, then FIFO 1");
}
