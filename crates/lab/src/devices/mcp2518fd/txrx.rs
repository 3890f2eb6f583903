//! Transmission (TXQ/FIFO selection, completion, TEF) and reception
//! (filters, RX objects) of the controller, and what it reports of bus
//! errors and fault confinement.
//!
//! Bus errors (datasheet DS20006027, C1BDIAG1 and C1INT): an error the
//! controller sees on the bus, receiving or transmitting, sets IVMIF and
//! the matching C1BDIAG1 bit, not CERRIF. The data-phase bits (D*) are
//! used for an error detected in the data phase of a frame with BRS: on
//! the lab's bus that is a CRC error (the CRC field is sent at the data
//! rate); its collision bit errors and FD-rejection form errors are in the
//! control field and its ACK errors after the CRC delimiter, all at the
//! nominal rate (N*). CERRIF is set only when the fault-confinement state
//! changes (error warning, error passive, bus-off, each way); with
//! [`Errata::no_cerrif_to_active`](super::Errata::no_cerrif_to_active) not
//! on the way back to error active (kernel mcp251xfd-core.c: "we don't get
//! a CERRIF IRQ on the transition TX ERROR_WARNING -> TX ERROR_ACTIVE").

use super::core::{Core, Event};
use super::fifo::{flags_word, id_word, word_id};
use super::regs::*;
use super::Mode;
use crate::can::{dlc_to_len, BusError, ErrorCounters, Frame, FrameBits, FrameStamp, TxOutcome};

/// C1TREC's fault-confinement flags for `c`.
pub(super) fn trec_flags(c: ErrorCounters) -> u32 {
    let mut w = 0;
    if c.tec >= 96 {
        w |= TREC_TXWARN | TREC_EWARN;
    }
    if c.rec >= 96 {
        w |= TREC_RXWARN | TREC_EWARN;
    }
    if c.rec > 127 {
        w |= TREC_RXBP;
    }
    if c.tec > 127 {
        w |= TREC_TXBP;
    }
    if c.tec > 255 {
        w |= TREC_TXBO;
    }
    w
}
use wirespeed_time::Instant;

impl Core {
    // ---------------------------------------------------------------- transmit

    pub(super) fn fifo_enabled_for_tx(&self, m: usize) -> bool {
        let f = &self.fifos[m];
        f.is_tx() && (m != 0 || self.con & CON_TXQEN != 0)
    }

    /// The next slot a TX FIFO / the TXQ would send.
    pub(super) fn tx_slot(&self, m: usize) -> Option<u8> {
        let f = &self.fifos[m];
        if f.count == 0 {
            return None;
        }
        if m != 0 {
            return Some(f.tail);
        }
        (0..f.depth()).filter(|s| f.pending & (1 << s) != 0).min_by_key(|&s| {
            let base = f.obj_addr(s);
            let fr = self.frame_at(base, f.payload()).0;
            (fr.arbitration_key(), s)
        })
    }

    /// Builds the frame of the TX object at RAM offset `base`.
    pub(super) fn frame_at(&self, base: usize, payload: u16) -> (Frame, u32, bool) {
        let idw = self.ram_word(base);
        let fl = self.ram_word(base + 4);
        let fd = fl & OBJ_FLAGS_FDF != 0 && self.mode != Mode::NormalCan20;
        let mut brs = fl & OBJ_FLAGS_BRS != 0 && self.con & CON_BRSDIS == 0;
        if !fd {
            brs = false;
        }
        let passive = self.counters.tec > 127 || self.counters.rec > 127;
        let esi = if self.con & CON_ESIGM != 0 { fl & OBJ_FLAGS_ESI != 0 || passive } else { passive };
        let dlc = (fl & OBJ_FLAGS_DLC_MASK) as u8;
        let len = dlc_to_len(dlc, fd);
        let mut data = [0u8; 64];
        let n = len.min(usize::from(payload));
        for (i, d) in data[..n].iter_mut().enumerate() {
            *d = self.ram.get(base + 8 + i).copied().unwrap_or(0);
        }
        let f = Frame::from_parts(
            word_id(idw, fl & OBJ_FLAGS_IDE != 0),
            fd,
            brs,
            esi,
            fl & OBJ_FLAGS_RTR != 0,
            dlc,
            &data[..len],
        );
        (f, fl, len > usize::from(payload))
    }

    /// The highest-priority message ready at `at`: (fifo, slot, frame).
    /// Between FIFOs of equal TXPRI the highest index goes first, and the
    /// TXQ before any FIFO of its priority.
    /// A message whose DLC needs more bytes than its object's payload is
    /// not sent: DLCMM and IVMIF are set and its FIFO's TXREQ is cleared.
    pub(super) fn tx_candidate(&mut self, at: Instant) -> Option<(usize, u8, Frame)> {
        loop {
            let mut best: Option<((u32, bool, usize), u8)> = None;
            for m in 0..32 {
                let f = &self.fifos[m];
                if !self.fifo_enabled_for_tx(m) || !f.txreq || f.count == 0 || f.ready_at > at {
                    continue;
                }
                let Some(slot) = self.tx_slot(m) else { continue };
                let rank = ((f.con >> FIFOCON_TXPRI_SHIFT) & 0x1F, m == 0, m);
                if best.is_none_or(|(r, _)| rank > r) {
                    best = Some((rank, slot));
                }
            }
            let ((_, _, m), slot) = best?;
            let f = self.fifos[m];
            let (frame, _, mismatch) = self.frame_at(f.obj_addr(slot), f.payload());
            if !mismatch {
                return Some((m, slot, frame));
            }
            self.bdiag1 |= BDIAG1_DLCMM;
            self.int_flags |= INT_IVMIF;
            self.fifos[m].txreq = false;
            // Refused wherever it was asked for (the bus or the internal loopback).
            self.update_pins(at);
        }
    }

    pub(super) fn token(&self, m: usize, slot: u8) -> u64 {
        (u64::from(self.fifos[m].gen) << 16) | ((m as u64) << 8) | u64::from(slot)
    }

    /// Tells the bus (or the internal loopback) when the next message is ready.
    pub(super) fn kick(&mut self, at: Instant) {
        let ready = (0..32)
            .filter(|&m| self.fifo_enabled_for_tx(m) && self.fifos[m].txreq && self.fifos[m].count > 0)
            .map(|m| self.fifos[m].ready_at)
            .min();
        let Some(ready) = ready else { return };
        match self.mode {
            Mode::InternalLoopback => self.internal_tx(ready.max(at)),
            m if Self::is_bus_mode(m) && m != Mode::ListenOnly && m != Mode::Restricted => {
                if let Some((bus, _)) = self.bus() {
                    bus.request(ready);
                }
            }
            _ => {}
        }
    }

    pub(super) fn internal_tx(&mut self, at: Instant) {
        if self.internal_inflight {
            return;
        }
        let start = at.max(self.internal_idle_at);
        let Some((m, slot, frame)) = self.tx_candidate(start) else { return };
        if self.mab_tx_aborts(start) {
            self.update_pins(start);
            return;
        }
        let rates = self.bit_rates();
        let fb = FrameBits::encode(&frame);
        let eof = start.add_ns(fb.duration_ns(rates));
        self.internal_idle_at = eof.add_ns(rates.nominal_ns(3));
        self.internal_inflight = true;
        let stamp = FrameStamp { sof: start, eof };
        let token = self.token(m, slot);
        let t = eof.add_ns(self.cfg.store_delay_ns);
        self.push_event(t, Event::TxDone { token, outcome: TxOutcome::Sent, stamp });
        self.push_event(t, Event::Rx { frame, stamp });
    }

    pub(super) fn lost_arbitration(&mut self, token: u64) {
        if self.bus_inflight == Some(token) {
            self.bus_inflight = None;
        }
        let m = ((token >> 8) & 0xFF) as usize;
        if m < 32 && u64::from(self.fifos[m].gen) == token >> 16 {
            self.fifos[m].sta |= FIFOSTA_TXLARB;
        }
    }

    pub(super) fn tx_done_from_bus(&mut self, token: u64, outcome: TxOutcome, stamp: FrameStamp) {
        let at = stamp.eof.add_ns(self.cfg.store_delay_ns);
        self.push_event(at, Event::TxDone { token, outcome, stamp });
    }

    pub(super) fn tx_finished(&mut self, token: u64, outcome: TxOutcome, stamp: FrameStamp, at: Instant) {
        let m = ((token >> 8) & 0xFF) as usize;
        let slot = (token & 0xFF) as u8;
        if self.mode == Mode::InternalLoopback {
            self.internal_inflight = false;
        }
        if self.bus_inflight == Some(token) {
            self.bus_inflight = None;
        }
        if m >= 32 || u64::from(self.fifos[m].gen) != token >> 16 {
            self.kick(at);
            return;
        }
        match outcome {
            TxOutcome::Sent => {
                let f = self.fifos[m];
                let base = f.obj_addr(slot);
                let (frame, flags, _) = self.frame_at(base, f.payload());
                if self.con & CON_STEF != 0 {
                    self.store_tef(&frame, flags, stamp);
                }
                let f = &mut self.fifos[m];
                if m == 0 {
                    f.pending &= !(1 << slot);
                } else {
                    f.tail = (f.tail + 1) % f.depth();
                }
                f.count = f.count.saturating_sub(1);
                f.attempts = 0;
                f.moved_at = Some(at);
                if f.count == 0 {
                    f.txreq = false;
                }
                self.stats.tx_frames += 1;
                self.bdiag1 = (self.bdiag1 & !0xFFFF) | (self.bdiag1.wrapping_add(1) & 0xFFFF);
                if self.mode == Mode::ExternalLoopback {
                    self.receive(&frame, stamp, at);
                }
            }
            TxOutcome::LostArbitration => {}
            TxOutcome::Error(e) => {
                // The transmitter of a frame the receivers found corrupt
                // sees no ACK; the others are nominal-phase errors.
                self.bdiag1 |= match e {
                    BusError::Ack => BDIAG1_NACKERR,
                    BusError::Bit => BDIAG1_NBIT1ERR,
                    BusError::Crc => BDIAG1_NACKERR,
                    BusError::Form => BDIAG1_NFORMERR,
                };
                self.int_flags |= INT_IVMIF;
                let rtxat = self.con & CON_RTXAT != 0;
                let f = &mut self.fifos[m];
                f.sta |= FIFOSTA_TXERR;
                f.attempts = f.attempts.saturating_add(1);
                let limit = match (f.con >> FIFOCON_TXAT_SHIFT) & 3 {
                    0 => Some(1),
                    1 => Some(3),
                    _ => None,
                };
                if rtxat && limit.is_some_and(|l| f.attempts >= l) {
                    f.txreq = false;
                    f.attempts = 0;
                    f.sta |= FIFOSTA_TXATIF | FIFOSTA_TXABT;
                }
            }
        }
        self.kick(at);
    }

    pub(super) fn store_tef(&mut self, frame: &Frame, tx_flags: u32, stamp: FrameStamp) {
        let t = self.tef;
        if t.full() {
            self.tef.sta |= TEFSTA_TEFOVIF;
            return;
        }
        let base = t.obj_addr(t.head);
        let seq = tx_flags & !((1 << OBJ_FLAGS_SEQ_SHIFT) - 1);
        self.set_ram_word(base, id_word(frame.id()));
        self.set_ram_word(base + 4, flags_word(frame) | seq);
        if self.tef.con & TEFCON_TEFTSEN != 0 {
            let ts = self.stamp_tbc(stamp);
            self.set_ram_word(base + 8, ts);
        }
        self.tef.head = (t.head + 1) % t.depth();
        self.tef.count += 1;
    }

    pub(super) fn stamp_tbc(&self, stamp: FrameStamp) -> u32 {
        self.tbc(if self.tscon & TSCON_TSEOF != 0 { stamp.eof } else { stamp.sof })
    }

    // ---------------------------------------------------------------- receive

    pub(super) fn rx_from_bus(&mut self, frame: &Frame, stamp: FrameStamp) {
        if self.rx_staged.take() == Some(stamp.eof) {
            return;
        }
        let at = stamp.eof.add_ns(self.cfg.store_delay_ns);
        self.push_event(at, Event::Rx { frame: *frame, stamp });
    }

    /// Stages the store of a frame the bus will deliver at `stamp.eof`: the
    /// event goes in now, due at EOF + the store delay as ever, so that at
    /// EOF [`Core::rx_from_bus`] has nothing left to do. A RESET before then
    /// drops it (and the staging), and the frame is then taken at EOF as
    /// any other.
    pub(super) fn stage_rx(&mut self, frame: &Frame, stamp: FrameStamp) {
        let at = stamp.eof.add_ns(self.cfg.store_delay_ns);
        self.push_event(at, Event::Rx { frame: *frame, stamp });
        self.rx_staged = Some(stamp.eof);
    }

    pub(super) fn filter_match(&self, frame: &Frame) -> Option<(usize, usize)> {
        let idw = id_word(frame.id());
        let ext = frame.id().is_extended();
        for n in 0..32 {
            let c = self.fltcon[n];
            if c & FLTCON_FLTEN == 0 {
                continue;
            }
            let obj = self.fltobj[n];
            let mask = self.mask[n];
            if mask & MASK_MIDE != 0 && (obj & FLTOBJ_EXIDE != 0) != ext {
                continue;
            }
            let idmask = if ext { 0x1FFF_FFFF & !FLTOBJ_SID11 } else { OBJ_ID_SID_MASK };
            if (obj ^ idw) & mask & idmask != 0 {
                continue;
            }
            return Some((n, usize::from(c & 0x1F)));
        }
        None
    }

    pub(super) fn receive(&mut self, frame: &Frame, stamp: FrameStamp, at: Instant) {
        if self.mode == Mode::Sleep {
            self.bus_activity_in_sleep();
            return;
        }
        if self.mode == Mode::Config {
            return;
        }
        self.stats.rx_frames += 1;
        if self.mab_rx_loses(frame, at) {
            return;
        }
        let Some((filter, m)) = self.filter_match(frame) else {
            self.stats.rx_unmatched += 1;
            return;
        };
        if m == 0 || self.fifos[m].is_tx() {
            self.stats.rx_unmatched += 1;
            return;
        }
        let f = self.fifos[m];
        if f.full() {
            self.fifos[m].sta |= FIFOSTA_RXOVIF;
            self.stats.rx_overflows += 1;
            return;
        }
        let base = f.obj_addr(f.head);
        self.set_ram_word(base, id_word(frame.id()));
        self.set_ram_word(base + 4, flags_word(frame) | ((filter as u32) << OBJ_FLAGS_FILHIT_SHIFT));
        let mut off = base + 8;
        if f.con & FIFOCON_RXTSEN != 0 {
            let ts = self.stamp_tbc(stamp);
            self.set_ram_word(off, ts);
            off += 4;
        }
        let n = frame.len().min(usize::from(f.payload()));
        if frame.len() > n {
            // Stored truncated: DLC mismatch, an invalid message.
            self.bdiag1 |= BDIAG1_DLCMM;
            self.int_flags |= INT_IVMIF;
        }
        if frame.esi() {
            self.bdiag1 |= BDIAG1_ESI;
        }
        self.ram_write_bytes(off, &frame.data()[..n]);
        if let Some(fault) = self.corrupt_next_rx.take() {
            self.inject_ram_fault(off, fault);
        }
        let f = &mut self.fifos[m];
        f.head = (f.head + 1) % f.depth();
        f.count += 1;
        f.moved_at = Some(at);
        self.stats.rx_stored += 1;
        self.bdiag1 = (self.bdiag1 & !0xFFFF) | (self.bdiag1.wrapping_add(1) & 0xFFFF);
    }

    /// A frame failed with `e` while the controller received it; `brs`:
    /// the frame switched to the data bit rate.
    pub(super) fn bus_error_seen(&mut self, e: BusError, brs: bool) {
        if self.mode == Mode::Sleep {
            self.bus_activity_in_sleep();
            return;
        }
        self.int_flags |= INT_IVMIF;
        self.bdiag1 |= match e {
            BusError::Crc if brs => BDIAG1_DCRCERR,
            BusError::Crc => BDIAG1_NCRCERR,
            BusError::Bit => BDIAG1_NBIT0ERR,
            // Receivers of an unacknowledged frame see the transmitter's
            // error flag in the ACK delimiter.
            BusError::Form | BusError::Ack => BDIAG1_NFORMERR,
        };
    }

    pub(super) fn counters_changed(&mut self, c: ErrorCounters) {
        let before = self.counters;
        self.counters = c;
        if c.tec > 255 {
            self.bdiag1 |= BDIAG1_TXBOERR;
        }
        let (was, now) = (trec_flags(before), trec_flags(c));
        if was == now || self.mode == Mode::Sleep {
            return;
        }
        if now == 0 && self.errata.no_cerrif_to_active {
            self.hits.cerrif_suppressed += 1;
        } else {
            self.int_flags |= INT_CERRIF;
        }
    }
}
