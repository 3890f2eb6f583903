//! The harness the model's tests share: a device driven through its SPI
//! face with synthetic, increasing instants, and helpers for common set-ups.

use super::regs::*;
use super::*;
use crate::can::{BitRates, Bus};
use crate::pin::PinSink;
use crate::{Lab, LabConfig};
use std::sync::Mutex;
use std::time::Duration;
use wirespeed_time::Instant;

pub(super) struct T {
    pub lab: Lab,
    pub dev: Mcp2518fd,
    pub spi: Mcp2518fd,
    pub t: Instant,
}

impl T {
    pub fn new() -> T {
        let lab = Lab::new(LabConfig::default());
        let dev = Mcp2518fd::new(&lab, Mcp2518fdConfig::default());
        let t = now();
        T { lab, spi: dev.clone(), dev, t }
    }
    /// Moves the test's clock on (synthetic stamps, increasing).
    pub fn later(&mut self, ns: u64) -> Instant {
        self.t = self.t.add_ns(ns).max(now());
        self.t
    }
    pub fn xfer(&mut self, bytes: &[u8]) -> Vec<u8> {
        let at = self.later(100);
        self.spi.chip_select(true, at);
        let out = bytes.iter().map(|&b| self.spi.exchange(u32::from(b), 8, at) as u8).collect();
        self.spi.chip_select(false, at);
        out
    }
    pub fn read(&mut self, addr: u16) -> u32 {
        let r = self.xfer(&[0x30 | (addr >> 8) as u8, addr as u8, 0, 0, 0, 0]);
        u32::from_le_bytes([r[2], r[3], r[4], r[5]])
    }
    pub fn write(&mut self, addr: u16, v: u32) {
        let b = v.to_le_bytes();
        self.xfer(&[0x20 | (addr >> 8) as u8, addr as u8, b[0], b[1], b[2], b[3]]);
    }
    pub fn write_byte(&mut self, addr: u16, v: u8) {
        self.xfer(&[0x20 | (addr >> 8) as u8, addr as u8, v]);
    }
    /// Polls `cond` (real time) for up to a second.
    pub fn wait_for(&mut self, mut cond: impl FnMut(&mut T) -> bool) {
        for _ in 0..2000 {
            if cond(self) {
                return;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        panic!("condition never met");
    }
    /// Moves the test's clock past the oscillator's start-up after power-on.
    pub fn ready(&mut self) {
        self.later(self.dev.config().osc_startup_ns + 10_000);
        assert_ne!(self.read(OSC) & OSC_OSCRDY, 0);
    }
    /// Sleeps until real time reaches the test's clock.
    pub fn catch_up(&mut self) {
        let d = self.t.ns_since(now());
        std::thread::sleep(Duration::from_nanos(d));
    }
    pub fn set_mode(&mut self, m: u8) {
        let con = self.read(C1CON);
        self.write(C1CON, (con & !(7 << 24)) | (u32::from(m) << 24));
        for _ in 0..2000 {
            if (self.read(C1CON) >> 21) & 7 == u32::from(m) {
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        panic!("mode {m} never reached");
    }
}

pub(super) fn crc_read(t: &mut T, addr: u16, n: u8) -> (Vec<u8>, u16, u16) {
    let mut cmd = vec![0xB0 | (addr >> 8) as u8, addr as u8, n];
    let len = if (0x400..0xC00).contains(&addr) { 4 * n as usize } else { n as usize };
    cmd.extend(std::iter::repeat_n(0, len + 2));
    let r = t.xfer(&cmd);
    let data = r[3..3 + len].to_vec();
    let got = u16::from_be_bytes([r[3 + len], r[4 + len]]);
    let mut mine = cmd[..3].to_vec();
    mine.extend(&data);
    (data, got, crc16(&mine))
}

pub(super) fn crc_write(t: &mut T, addr: u16, data: &[u8], corrupt: bool) {
    let n = if (0x400..0xC00).contains(&addr) { data.len() / 4 } else { data.len() };
    let mut cmd = vec![0xA0 | (addr >> 8) as u8, addr as u8, n as u8];
    cmd.extend(data);
    let c = crc16(&cmd) ^ u16::from(corrupt);
    cmd.extend(c.to_be_bytes());
    t.xfer(&cmd);
}

/// TEF 4 deep, TXQ 4 × 8 bytes, FIFO1 RX 4 × 8 bytes with timestamps, filter 0 → FIFO1 for everything.
pub(super) fn setup_fifos(t: &mut T) {
    t.write(C1TEFCON, (3 << 24) | TEFCON_TEFNEIE);
    t.write(C1TXQCON, (3 << 24) | FIFOCON_TXEN);
    t.write(c1fifocon(1), (3 << 24) | FIFOCON_TFNRFNIE | FIFOCON_RXOVIE | FIFOCON_RXTSEN);
    t.write(c1fltobj(0), 0);
    t.write(c1mask(0), 0);
    t.write(c1fltcon(0), u32::from(FLTCON_FLTEN | 1));
    t.write(C1TSCON, TSCON_TBCEN | 39); // 1 µs ticks at 40 MHz
    t.write(C1INT, (INT_RXIF | INT_TEFIF | INT_RXOVIF | INT_CERRIF) << 16);
}

/// Writes a TX object (ID word, flags word, `data`) at the user address of
/// FIFO `m` (0: the TXQ), in one SPI write.
pub(super) fn write_tx_obj(t: &mut T, m: u16, idw: u32, flags: u32, data: &[u8]) {
    let ua = t.read(c1fifoua(m));
    let mut b = vec![0x20 | ((0x400 + ua) >> 8) as u8, (0x400 + ua) as u8];
    b.extend(idw.to_le_bytes());
    b.extend(flags.to_le_bytes());
    b.extend(data);
    t.xfer(&b);
}

pub(super) fn queue_txq(t: &mut T, id: u32, ide: bool, data: &[u8; 8], seq: u32) {
    let idw = if ide { ((id >> 18) & 0x7FF) | ((id & 0x3FFFF) << 11) } else { id };
    let flags = 8 | if ide { OBJ_FLAGS_IDE } else { 0 } | (seq << OBJ_FLAGS_SEQ_SHIFT);
    write_tx_obj(t, 0, idw, flags, data);
    t.write_byte(C1TXQCON + 1, ((FIFOCON_UINC | FIFOCON_TXREQ) >> 8) as u8);
}

pub(super) struct Edges(pub Mutex<Vec<(bool, Instant)>>);
impl PinSink for Edges {
    fn drive(&self, high: bool, at: Instant) {
        self.0.lock().unwrap().push((high, at));
    }
}

/// A ready device on a new 1 / 2 Mbit/s bus, with the bus's bit timing set.
pub(super) fn ready_on_bus(t: &mut T) -> Bus {
    let bus = Bus::new(&t.lab, "can0", BitRates::new(1_000_000, 2_000_000)).unwrap();
    t.ready();
    // The bus runs in real time: let it catch up with the test's clock.
    t.catch_up();
    t.dev.attach_to_bus(&bus, "mcp");
    set_bit_timing(t);
    bus
}

/// The bit timing of [`ready_on_bus`]'s bus (again after a RESET).
pub(super) fn set_bit_timing(t: &mut T) {
    // 1 Mbit/s nominal at 40 MHz: BRP 0, 40 TQ (TSEG1 29+1, TSEG2 8+1); data 2 Mbit/s: 20 TQ.
    t.write(C1NBTCFG, (29 << 16) | (8 << 8) | 8);
    t.write(C1DBTCFG, (14 << 16) | (3 << 8) | 3);
}

impl T {
    /// A device with `cfg` and the silicon behaviours `errata`.
    pub fn with(cfg: Mcp2518fdConfig, errata: Errata) -> T {
        let lab = Lab::new(LabConfig::default());
        let dev = Mcp2518fd::new(&lab, cfg);
        dev.set_errata(errata);
        if errata.ecc != Errata::ALL.ecc {
            // The switch decides the power-up RAM: power up again under it.
            dev.power_cycle(now());
        }
        let t = now();
        T { lab, spi: dev.clone(), dev, t }
    }
    /// FIFOCI (bits 12:8) of FIFO `m` as the host reads it.
    pub fn fifoci(&mut self, m: u16) -> u32 {
        (self.read(c1fifosta(m)) >> FIFOSTA_FIFOCI_SHIFT) & 0x1F
    }
    /// Sets the operation mode's bits in C1CON (REQOP) and nothing else.
    pub fn request_mode(&mut self, m: u8) {
        self.write_byte(C1CON + 3, m);
    }
    /// OPMOD as read.
    pub fn opmod(&mut self) -> u8 {
        ((self.read(C1CON) >> CON_OPMOD_SHIFT) & 7) as u8
    }
}
