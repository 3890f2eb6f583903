//! FIFO, TXQ and TEF bookkeeping and the message-object layout in RAM.
//!
//! RAM is allocated in order: TEF (if `C1CON.STEF`), TXQ (if `C1CON.TXQEN`),
//! then FIFO 1..31, each `FSIZE + 1` objects. Object sizes: TEF 8 bytes (+4
//! with `TEFTSEN`); TX objects 8 + payload; RX objects 8 (+4 with `RXTSEN`) +
//! payload, payload = `PLSIZE` bytes.

use super::regs::*;
use crate::can::{CanId, Frame};
use wirespeed_time::Instant;

/// One FIFO (index 0 = TXQ) or the TEF.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Fifo {
    /// Configuration bits as written (no action bits, no TXREQ).
    pub con: u32,
    pub head: u8,
    pub tail: u8,
    pub count: u8,
    /// TXQ only: slots queued for transmission.
    pub pending: u32,
    pub txreq: bool,
    /// Sticky status flags (RXOVIF, TXATIF, TXERR, TXLARB, TXABT / TEFOVIF).
    pub sta: u32,
    /// RAM offset of object 0 (from 0x400) and object size in bytes.
    pub base: u16,
    pub obj_size: u16,
    /// Earliest instant the next queued message may start.
    pub ready_at: Instant,
    pub attempts: u8,
    /// Bumped on every reset, so stale bus tokens are ignored.
    pub gen: u32,
    /// When the controller last stored an RX object into it / completed a
    /// TX message from it (the FIFOCI erratum's window opens then).
    pub moved_at: Option<Instant>,
}

impl Fifo {
    pub fn depth(&self) -> u8 {
        (((self.con >> FIFOCON_FSIZE_SHIFT) & 0x1F) + 1) as u8
    }
    pub fn payload(&self) -> u16 {
        PLSIZE_BYTES[((self.con >> FIFOCON_PLSIZE_SHIFT) & 7) as usize]
    }
    pub fn is_tx(&self) -> bool {
        self.con & FIFOCON_TXEN != 0
    }
    pub fn full(&self) -> bool {
        self.count >= self.depth()
    }
    pub fn reset(&mut self) {
        self.head = 0;
        self.tail = 0;
        self.count = 0;
        self.pending = 0;
        self.txreq = false;
        self.sta = 0;
        self.attempts = 0;
        self.moved_at = None;
        self.gen = self.gen.wrapping_add(1);
    }
    pub fn obj_addr(&self, slot: u8) -> usize {
        usize::from(self.base) + usize::from(slot) * usize::from(self.obj_size)
    }
}

/// The ID word (T0/R0/TE0) of a frame.
pub(super) fn id_word(id: CanId) -> u32 {
    match id {
        CanId::Standard(sid) => u32::from(sid) & OBJ_ID_SID_MASK,
        CanId::Extended(eid) => ((eid >> 18) & OBJ_ID_SID_MASK) | ((eid & 0x3_FFFF) << OBJ_ID_EID_SHIFT),
    }
}

/// The identifier an ID word and IDE flag describe.
pub(super) fn word_id(word: u32, ide: bool) -> CanId {
    let sid = word & OBJ_ID_SID_MASK;
    if ide {
        CanId::Extended((sid << 18) | ((word >> OBJ_ID_EID_SHIFT) & 0x3_FFFF))
    } else {
        CanId::Standard(sid as u16)
    }
}

/// The flags word (R1/TE1, without FILHIT/SEQ) of a frame.
pub(super) fn flags_word(f: &Frame) -> u32 {
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
