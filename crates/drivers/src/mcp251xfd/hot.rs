//! The hot path's prepared SPI messages, built once at initialisation and
//! run with no validation and no allocation (as the Linux driver builds its
//! `spi_message`s once):
//!
//! - `status_rx`: READ of C1INT (4 bytes) and, in a second chip-select
//!   window of the same message, a speculative READ of the RX object at the
//!   driver's tail (header, timestamp and the first 8 data bytes).
//!   Interrupts are almost always a received frame, so one message usually
//!   carries everything; if C1INT.RXIF is clear the object bytes are
//!   ignored. (RXIF is the OR of C1RXIF over the RX FIFOs, and the driver
//!   has one, so reading C1RXIF too would add 32 clocks and no news.)
//! - `rx_uinc`: WRITE of the RX FIFO's FIFOCON byte 1 = UINC.
//! - `tx[class][rx_uinc][tef_uinc]`: WRITE of the TX object at the TX FIFO's
//!   head, then WRITE of its FIFOCON byte 1 = UINC | TXREQ, and optionally the
//!   deferred RX UINC and a deferred TEF UINC (a completion the last status
//!   read announced) — one message, CS toggled between accesses, the
//!   request first so that the frame reaches the wire as early as possible.
//! - `tef`: READ of the TEF object at the tail, then WRITE TEFCON byte 1 =
//!   UINC; `tef_uinc`: the UINC alone, when TX timestamps are not wanted.
//!
//! With CRC, every access carries a length byte and a CRC-16; reads are
//! checked by [`check_read`](super::regio::check_read).

use super::config::Layout;
use super::error::Error;
use super::regio::{check_read, encode_read, encode_write, overhead, readdress_write};
use super::regs::*;
use crate::can::{CanId, Frame};
use wirespeed::spi::{OwnedTransfer, PreparedMessage, SpiDevice};

/// Bytes of an RX object read speculatively: R0, R1, timestamp, 8 data bytes.
pub(crate) const RX_HEAD: usize = 20;
/// Bytes of a TEF object: TE0, TE1, timestamp.
pub(crate) const TEF_OBJ: usize = 12;

pub(crate) struct Hot {
    pub crc: bool,
    pub status_rx: PreparedMessage,
    pub rx_uinc: PreparedMessage,
    /// [short (≤ 8 data bytes), long (tx payload)] × [plain, + RX UINC] ×
    /// [plain, + TEF UINC].
    pub tx: [[[PreparedMessage; 2]; 2]; 2],
    pub tx_data: [usize; 2],
    pub tef: PreparedMessage,
    /// TEF UINC alone (completions without TX timestamps).
    pub tef_uinc: PreparedMessage,
}

impl std::fmt::Debug for Hot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hot").field("crc", &self.crc).finish_non_exhaustive()
    }
}

fn read(addr: u16, n: usize, crc: bool) -> OwnedTransfer {
    let (h, t) = overhead(crc);
    let mut b = vec![0u8; h + n + t];
    encode_read(&mut b, addr, n, crc);
    OwnedTransfer::duplex(b)
}

fn write(addr: u16, data: &[u8], crc: bool) -> OwnedTransfer {
    let (h, t) = overhead(crc);
    let mut b = vec![0u8; h + data.len() + t];
    encode_write(&mut b, addr, data, crc);
    OwnedTransfer::write(b)
}

/// A WRITE of byte 1 of the control register at `con` (where UINC and
/// TXREQ live), setting `bits`.
fn con_byte1(con: u16, bits: u32, crc: bool) -> OwnedTransfer {
    write(con + 1, &[(bits >> 8) as u8], crc)
}

impl Hot {
    pub(crate) fn build(dev: &SpiDevice, l: &Layout, crc: bool) -> Result<Hot, Error> {
        let p = |v: Vec<OwnedTransfer>| dev.prepare(v).map_err(|e| Error::Spi(e.into()));
        let status_rx = p(vec![read(C1INT, 4, crc).cs_change(None), read(l.rx_base, RX_HEAD, crc)])?;
        let rx_uinc_t = || con_byte1(c1fifocon(RX_FIFO), FIFOCON_UINC, crc);
        let rx_uinc = p(vec![rx_uinc_t()])?;
        let tx_data = [8usize, usize::from(l.tx_obj) - 8];
        let tef_uinc_t = || con_byte1(C1TEFCON, TEFCON_UINC, crc);
        let tx_msg = |data: usize, rx_u: bool, tef_u: bool| {
            let mut v = vec![
                write(l.tx_base, &vec![0u8; 8 + data], crc),
                con_byte1(c1fifocon(TX_FIFO), FIFOCON_UINC | FIFOCON_TXREQ, crc),
            ];
            if rx_u {
                v.push(rx_uinc_t());
            }
            if tef_u {
                v.push(tef_uinc_t());
            }
            // CS toggles between accesses (each is one instruction).
            let last = v.len() - 1;
            let v = v.into_iter().enumerate().map(|(i, t)| if i < last { t.cs_change(None) } else { t }).collect();
            p(v)
        };
        let class = |data: usize| -> Result<[[PreparedMessage; 2]; 2], Error> {
            Ok([
                [tx_msg(data, false, false)?, tx_msg(data, false, true)?],
                [tx_msg(data, true, false)?, tx_msg(data, true, true)?],
            ])
        };
        let tx = [class(tx_data[0])?, class(tx_data[1])?];
        let tef = p(vec![read(l.tef_base, TEF_OBJ, crc).cs_change(None), tef_uinc_t()])?;
        let tef_uinc = p(vec![tef_uinc_t()])?;
        Ok(Hot { crc, status_rx, rx_uinc, tx, tx_data, tef, tef_uinc })
    }

    /// Points the speculative RX read at `addr`.
    pub(crate) fn set_rx_addr(&mut self, addr: u16) {
        let instr = if self.crc { INSTR_READ_CRC } else { INSTR_READ };
        if let Some(b) = self.status_rx.tx_mut(1) {
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

    /// C1INT and the RX object bytes of the last `status_rx` run.
    pub(crate) fn status(&self, rx_addr: u16) -> Result<(u32, &[u8]), Error> {
        let s = check_read(self.status_rx.rx(0).unwrap_or(&[]), C1INT, self.crc)?;
        let int = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        let obj = check_read(self.status_rx.rx(1).unwrap_or(&[]), rx_addr, self.crc)?;
        Ok((int, obj))
    }

    /// Fills TX message `[class][rx_u][tef_u]` with `frame` at `addr`, sequence `seq`.
    pub(crate) fn fill_tx(&mut self, (class, rx_u, tef_u): (usize, usize, usize), addr: u16, frame: &Frame, seq: u32) {
        let crc = self.crc;
        let (h, _) = overhead(crc);
        let Some(b) = self.tx[class][rx_u][tef_u].tx_mut(0) else { return };
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
