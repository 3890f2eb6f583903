//! The hot path's prepared SPI messages, built once at initialisation and
//! run with no validation and no allocation (as the Linux driver builds its
//! `spi_message`s once):
//!
//! - `status_rx`: READ of C1INT's flag half (bytes 0–1: every interrupt
//!   flag; bytes 2–3 hold the enables, which the driver wrote itself), READ
//!   of the RX FIFO's FIFOSTA bytes 0–1 (not-empty / full / overflow flags
//!   and FIFOCI, the head index; bytes 2–3 are reserved) and, in
//!   a third chip-select window of the same message, a speculative READ of
//!   the RX object at the driver's tail (header, timestamp and the first 8
//!   data bytes). Interrupts are almost always a received frame, so one
//!   message usually carries everything; FIFOSTA says how many more
//!   objects wait (read in one burst, see `irq.rs`); if the FIFO is empty
//!   the object bytes are ignored.
//! - `rx_uinc[k - 1]`: k WRITEs of the RX FIFO's FIFOCON byte 1 = UINC, CS
//!   toggled between them (one per object consumed), one message.
//! - `tx[class][rx_uinc][tef_uinc]`: WRITE of the TX object at the TX FIFO's
//!   head, then WRITE of its FIFOCON byte 1 = UINC | TXREQ, and optionally the
//!   deferred RX UINC and a deferred TEF UINC (a completion the last status
//!   read announced) — one message, CS toggled between accesses, the
//!   request first so that the frame reaches the wire as early as possible.
//!   Submitted asynchronously (see `tx.rs`).
//! - `tx_req`: UINC | TXREQ alone (re-issued when the chip refused one).
//! - `tef`: READ of the TEF object at the tail, then WRITE TEFCON byte 1 =
//!   UINC; `tef_uinc[k - 1]`: k UINCs alone (completions without TX
//!   timestamps, or a burst of completions read at once).
//!
//! With CRC, every access carries a CRC-16 (reads are checked by
//! [`check_read`](super::regio::check_read)); the one-byte writes (UINC,
//! TXREQ) are WRITE_SAFE with [`Workarounds::write_safe`](super::Workarounds::write_safe)
//! (the chip drops a corrupted one instead of writing it), WRITE_CRC
//! without. Every transfer is clocked at the driver's SPI clock limit.

use super::config::Layout;
use super::error::Error;
use super::regio::{check_read, encode_read, encode_write, encode_write_safe, overhead, readdress_write};
use super::regs::*;
use crate::can::{CanId, Frame};
use wirespeed::spi::{OwnedTransfer, PreparedMessage, SpiDevice};

/// Bytes of an RX object read speculatively: R0, R1, timestamp, 8 data bytes.
pub(crate) const RX_HEAD: usize = 20;
/// Bytes of a TEF object: TE0, TE1, timestamp.
pub(crate) const TEF_OBJ: usize = 12;
/// Bytes of C1INT and of FIFOSTA the status read takes: the low half,
/// where every flag and FIFOCI live (32 SPI bits fewer per interrupt than
/// whole registers).
const STATUS_HALF: usize = 2;

/// How the hot path frames its accesses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wire {
    /// READ_CRC / WRITE_CRC.
    pub crc: bool,
    /// One-byte writes as WRITE_SAFE (with `crc`).
    pub safe: bool,
    /// Clock of every transfer (0: the device's).
    pub hz: u32,
}

pub(crate) struct Hot {
    pub crc: bool,
    pub status_rx: PreparedMessage,
    /// `rx_uinc[k - 1]`: k RX UINCs in one message.
    pub rx_uinc: Vec<PreparedMessage>,
    /// [short (≤ 8 data bytes), long (tx payload)] × [plain, + RX UINC] ×
    /// [plain, + TEF UINC]; `None` while submitted (the SPI core holds it).
    pub tx: [[[Option<PreparedMessage>; 2]; 2]; 2],
    pub tx_data: [usize; 2],
    /// UINC | TXREQ of the TX FIFO alone.
    pub tx_req: PreparedMessage,
    pub tef: PreparedMessage,
    /// `tef_uinc[k - 1]`: k TEF UINCs in one message.
    pub tef_uinc: Vec<PreparedMessage>,
}

impl std::fmt::Debug for Hot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hot").field("crc", &self.crc).finish_non_exhaustive()
    }
}

fn read(addr: u16, n: usize, w: Wire) -> OwnedTransfer {
    let (h, t) = overhead(w.crc);
    let mut b = vec![0u8; h + n + t];
    encode_read(&mut b, addr, n, w.crc);
    OwnedTransfer::duplex(b).speed_hz(w.hz)
}

fn write(addr: u16, data: &[u8], w: Wire) -> OwnedTransfer {
    let (h, t) = overhead(w.crc);
    let mut b = vec![0u8; h + data.len() + t];
    encode_write(&mut b, addr, data, w.crc);
    OwnedTransfer::write(b).speed_hz(w.hz)
}

/// A WRITE of byte 1 of the control register at `con` (where UINC and
/// TXREQ live), setting `bits`: WRITE_SAFE when the wire says so.
fn con_byte1(con: u16, bits: u32, w: Wire) -> OwnedTransfer {
    let v = (bits >> 8) as u8;
    if w.crc && w.safe {
        OwnedTransfer::write(encode_write_safe(con + 1, v).to_vec()).speed_hz(w.hz)
    } else {
        write(con + 1, &[v], w)
    }
}

/// The transfers as one message, CS toggled between them (each is one
/// instruction) with no delay beyond the device's CS inactive time: a
/// `cs_change` delay of 0 ns, as the Linux driver sets on every `cs_change`
/// (`mcp251xfd-ring.c`), where an unset one costs 10 µs in the kernel.
fn chain(v: Vec<OwnedTransfer>) -> Vec<OwnedTransfer> {
    let last = v.len() - 1;
    v.into_iter().enumerate().map(|(i, t)| if i < last { t.cs_change(Some(0)) } else { t }).collect()
}

impl Hot {
    pub(crate) fn build(dev: &SpiDevice, l: &Layout, w: Wire) -> Result<Hot, Error> {
        let p = |v: Vec<OwnedTransfer>| dev.prepare(chain(v)).map_err(|e| Error::Spi(e.into()));
        let status_rx = p(vec![
            read(C1INT, STATUS_HALF, w),
            read(c1fifosta(RX_FIFO), STATUS_HALF, w),
            read(l.rx_base, RX_HEAD, w),
        ])?;
        let rx_uinc_t = || con_byte1(c1fifocon(RX_FIFO), FIFOCON_UINC, w);
        let tef_uinc_t = || con_byte1(C1TEFCON, TEFCON_UINC, w);
        let tx_req_t = || con_byte1(c1fifocon(TX_FIFO), FIFOCON_UINC | FIFOCON_TXREQ, w);
        let rx_uinc = (1..=usize::from(l.rx_depth))
            .map(|k| p((0..k).map(|_| rx_uinc_t()).collect()))
            .collect::<Result<_, _>>()?;
        let tef_uinc = (1..=usize::from(l.tef_depth))
            .map(|k| p((0..k).map(|_| tef_uinc_t()).collect()))
            .collect::<Result<_, _>>()?;
        let tx_data = [8usize, usize::from(l.tx_obj) - 8];
        let tx_msg = |data: usize, rx_u: bool, tef_u: bool| {
            let mut v = vec![write(l.tx_base, &vec![0u8; 8 + data], w), tx_req_t()];
            if rx_u {
                v.push(rx_uinc_t());
            }
            if tef_u {
                v.push(tef_uinc_t());
            }
            p(v)
        };
        let class = |data: usize| -> Result<[[Option<PreparedMessage>; 2]; 2], Error> {
            Ok([
                [Some(tx_msg(data, false, false)?), Some(tx_msg(data, false, true)?)],
                [Some(tx_msg(data, true, false)?), Some(tx_msg(data, true, true)?)],
            ])
        };
        let tx = [class(tx_data[0])?, class(tx_data[1])?];
        let tx_req = p(vec![tx_req_t()])?;
        let tef = p(vec![read(l.tef_base, TEF_OBJ, w), tef_uinc_t()])?;
        Ok(Hot { crc: w.crc, status_rx, rx_uinc, tx, tx_data, tx_req, tef, tef_uinc })
    }

    /// Points the speculative RX read at `addr`.
    pub(crate) fn set_rx_addr(&mut self, addr: u16) {
        let instr = if self.crc { INSTR_READ_CRC } else { INSTR_READ };
        if let Some(b) = self.status_rx.tx_mut(2) {
            b[..2].copy_from_slice(&cmd(instr, addr));
        }
    }

    /// Points the TEF read at `addr`.
    pub(crate) fn set_tef_addr(&mut self, addr: u16) {
        let instr = if self.crc { INSTR_READ_CRC } else { INSTR_READ };
        if let Some(b) = self.tef.tx_mut(0) {
            b[..2].copy_from_slice(&cmd(instr, addr));
        }
    }

    /// C1INT's flags, the RX FIFO's FIFOSTA (low halves) and the RX object bytes of the last
    /// `status_rx` run.
    pub(crate) fn status(&self, rx_addr: u16) -> Result<(u32, u32, &[u8]), Error> {
        let half = |i: usize, addr: u16| -> Result<u32, Error> {
            let s = check_read(self.status_rx.rx(i).unwrap_or(&[]), addr, self.crc)?;
            Ok(u32::from(u16::from_le_bytes([s[0], s[1]])))
        };
        let int = half(0, C1INT)?;
        let sta = half(1, c1fifosta(RX_FIFO))?;
        let obj = check_read(self.status_rx.rx(2).unwrap_or(&[]), rx_addr, self.crc)?;
        Ok((int, sta, obj))
    }

    /// Fills TX message `[class][rx_u][tef_u]` with `frame` at `addr`, sequence `seq`.
    pub(crate) fn fill_tx(&mut self, (class, rx_u, tef_u): (usize, usize, usize), addr: u16, frame: &Frame, seq: u32) {
        let crc = self.crc;
        let (h, _) = overhead(crc);
        let Some(b) = self.tx[class][rx_u][tef_u].as_mut().and_then(|m| m.tx_mut(0)) else { return };
        let t0 = id_word(frame.id());
        let t1 = flags_word(frame) | (seq << OBJ_FLAGS_SEQ_SHIFT);
        b[h..h + 4].copy_from_slice(&t0.to_le_bytes());
        b[h + 4..h + 8].copy_from_slice(&t1.to_le_bytes());
        let data = &mut b[h + 8..h + 8 + self.tx_data[class]];
        data.fill(0);
        data[..frame.len()].copy_from_slice(frame.data());
        // Sets the address and computes the CRC over the filled object.
        readdress_write(b, addr, crc);
    }
}

/// The ID word (T0/R0/TE0).
pub(crate) fn id_word(id: CanId) -> u32 {
    match id {
        CanId::Standard(sid) => u32::from(sid) & OBJ_ID_SID_MASK,
        CanId::Extended(eid) => ((eid >> 18) & OBJ_ID_SID_MASK) | ((eid & 0x3_FFFF) << OBJ_ID_EID_SHIFT),
    }
}

/// The identifier of an ID word.
pub(crate) fn word_id(word: u32, ide: bool) -> CanId {
    let sid = word & OBJ_ID_SID_MASK;
    if ide {
        CanId::Extended((sid << 18) | ((word >> OBJ_ID_EID_SHIFT) & 0x3_FFFF))
    } else {
        CanId::Standard(sid as u16)
    }
}

/// The flags word (T1) without SEQ.
pub(crate) fn flags_word(f: &Frame) -> u32 {
    let mut w = u32::from(f.dlc()) & OBJ_FLAGS_DLC_MASK;
    if f.id().is_extended() {
        w |= OBJ_FLAGS_IDE;
    }
    if f.is_remote() {
        w |= OBJ_FLAGS_RTR;
    }
    if f.is_fd() {
        w |= OBJ_FLAGS_FDF;
    }
    if f.brs() {
        w |= OBJ_FLAGS_BRS;
    }
    if f.esi() {
        w |= OBJ_FLAGS_ESI;
    }
    w
}

/// The SEQ field of a TEF object's flags word (TE1), as the driver writes it (7 bits).
pub(crate) fn tef_seq(obj: &[u8]) -> u32 {
    (u32::from_le_bytes([obj[4], obj[5], obj[6], obj[7]]) >> OBJ_FLAGS_SEQ_SHIFT) & SEQ_MASK
}

/// The SEQ bits the driver uses (7: what both the MCP2517FD and the
/// MCP2518FD keep in a TEF object).
pub(crate) const SEQ_MASK: u32 = 0x7F;

/// Decodes an RX object's header: (frame without data beyond `data`, timestamp, payload length).
pub(crate) fn decode_rx(obj: &[u8]) -> (Frame, u32, usize) {
    let w = |i: usize| u32::from_le_bytes([obj[i], obj[i + 1], obj[i + 2], obj[i + 3]]);
    let (r0, r1, ts) = (w(0), w(4), w(8));
    let ide = r1 & OBJ_FLAGS_IDE != 0;
    let fd = r1 & OBJ_FLAGS_FDF != 0;
    let rtr = r1 & OBJ_FLAGS_RTR != 0;
    let dlc = (r1 & OBJ_FLAGS_DLC_MASK) as u8;
    let f =
        Frame::from_raw(word_id(r0, ide), dlc, fd, r1 & OBJ_FLAGS_BRS != 0, r1 & OBJ_FLAGS_ESI != 0, rtr, &obj[12..]);
    let len = f.len();
    (f, ts, len)
}

/// The FIFO circular index (FIFOCI) of a FIFOSTA value, within `depth`.
pub(crate) fn fifoci(sta: u32, depth: u8) -> u8 {
    ((sta >> FIFOSTA_FIFOCI_SHIFT) & FIFOSTA_FIFOCI_MASK) as u8 % depth
}
