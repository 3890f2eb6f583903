//! Interrupt service: one prepared message reads C1INT, the RX FIFO's
//! FIFOSTA and the RX object at the tail; the rest of a burst is read in
//! one go; rare sources (errors, overflows, ECC, MAB, refused writes) take
//! the configuration path.

use super::error::Error;
use super::hot::{decode_rx, RX_HEAD};
use super::regio::max_access;
use super::regs::*;
use super::{BusState, Mcp251xfd};
use crate::can::Frame;
use wirespeed::time::now;

/// Interrupt sources other than RX that the driver must handle.
const RARE: u32 =
    INT_RXOVIF | INT_CERRIF | INT_SERRIF | INT_IVMIF | INT_SPICRCIF | INT_MODIF | INT_TBCIF | INT_WAKIF | INT_ECCIF;

impl Mcp251xfd {
    fn rx_addr(&self) -> u16 {
        let l = &self.plan.layout;
        l.rx_base + u16::from(self.rx_tail) * l.rx_obj
    }

    /// Sends every RX UINC owed, in one message.
    pub(super) fn run_rx_uinc(&mut self) -> Result<(), Error> {
        let k = usize::from(self.rx_owed);
        if k > 0 {
            self.io.dev.run(&mut self.hot.rx_uinc[k - 1])?;
            self.rx_owed = 0;
            self.unverified.rx = self.unverified.rx.saturating_add(k as u32);
        }
        Ok(())
    }

    /// Objects in the RX FIFO from its FIFOSTA: none if TFNRFNIF is clear,
    /// all if TFERFFIF (full) is set, else the distance from the tail to
    /// the head (FIFOCI) — at least one, since the FIFO is not empty.
    fn rx_count(&self, sta: u32) -> u8 {
        let depth = self.plan.layout.rx_depth;
        if sta & FIFOSTA_TFNRFNIF == 0 {
            0
        } else if sta & FIFOSTA_TFERFFIF != 0 {
            depth
        } else {
            let ci = super::hot::fifoci(sta, depth);
            ((ci + depth - self.rx_tail) % depth).max(1)
        }
    }

    /// One service pass. Returns whether anything was handled.
    pub(super) fn service(&mut self) -> Result<bool, Error> {
        if self.rx_known > 0 {
            self.read_known()?;
        }
        if self.rx_owed > 0 {
            self.run_rx_uinc()?;
        }
        let safe = self.cfg.crc && self.cfg.workarounds.write_safe;
        if self.io.crc_flag_seen {
            // The configuration path found (and cleared) CRCERRIF: it may
            // have been one of the hot path's writes.
            self.io.crc_flag_seen = false;
            if safe {
                self.check_heads()?;
            }
        }
        self.stats.irq_passes += 1;
        let mut tries = 0;
        let mut repaired = false;
        let (int, n, first, addr) = loop {
            let addr = self.rx_addr();
            self.io.dev.run(&mut self.hot.status_rx)?;
            match self.hot.status(addr) {
                Ok((int, _, _)) if safe && int & INT_SPICRCIF != 0 && !repaired => {
                    // A write was refused (WRITE_SAFE with a bad CRC): until
                    // the missing UINCs are re-issued the chip's tails are
                    // not the driver's, and this status read's RX object may
                    // not be the chip's tail. Repair, then read again.
                    self.io.take_crc_flags()?;
                    self.io.crc_flag_seen = false;
                    self.check_heads()?;
                    repaired = true;
                }
                Ok((int, sta, obj)) => {
                    let n = self.rx_count(sta);
                    break (int, n, (n > 0).then(|| decode_rx(obj)), addr);
                }
                Err(e) => {
                    self.stats.crc_errors += 1;
                    tries += 1;
                    if tries >= 3 {
                        return Err(e);
                    }
                }
            }
        };
        let mut handled = false;
        if let Some((f, ts, len)) = first {
            // The FIFO is not empty, so the object at the tail is a frame
            // (FIFOSTA's flags are sound; only FIFOCI may lie): trusted.
            let t = self.ts.extend(ts, now());
            self.rx_last_valid = self.rx_last_valid.max(t);
            self.take_rx(f, t, len, addr, true)?;
            // The others are read by the next call, after the caller had
            // this one (an echo is not delayed by the burst).
            self.rx_known = n - 1;
            handled = true;
        }
        if int & INT_TEFIF != 0 {
            self.tef_hint = true;
            if self.cfg.tef_irq {
                // The TEF holds INT low: drain it now.
                self.reap_tef()?;
                handled = true;
            }
        }
        let mut trec_read = false;
        if int & RARE != 0 {
            trec_read = self.rare(int)?;
            handled = true;
        }
        if !trec_read {
            self.poll_trec()?;
        }
        if !handled {
            self.stats.spurious += 1;
        }
        if !self.tx_ran_here && self.rx_owed > 0 {
            // The TX message would carry this UINC only when the SPI core's
            // pump ran it: until then INT would stay low, and the next wait
            // would end at once in a pass that finds nothing. Sent now, as
            // the Linux driver's interrupt handler does.
            self.run_rx_uinc()?;
        }
        Ok(handled)
    }

    /// Consumes the RX object at the tail: the frame goes to the queue
    /// (unless its payload did not fit the object), the tail moves on and
    /// its UINC is owed. `head_only`: only the first 8 data bytes were read.
    fn take_rx(&mut self, f: Frame, t: u64, len: usize, addr: u16, head_only: bool) -> Result<(), Error> {
        if len > self.cfg.rx_payload {
            // The device stored the frame truncated (DLC kept, IVMIF set):
            // the rest of its data is not in the object, and the bytes
            // after it belong to the next one. Dropped and counted.
            self.stats.rx_truncated += 1;
        } else {
            self.deliver_rx(f, t, len, addr, head_only)?;
        }
        self.rx_tail = (self.rx_tail + 1) % self.plan.layout.rx_depth;
        self.rx_owed += 1;
        self.hot.set_rx_addr(self.rx_addr());
        Ok(())
    }

    /// Reads the RX objects FIFOSTA announced after the first, in one
    /// message (one read, two at the ring's wrap), stops at the first stale
    /// one ([`Workarounds::rx_index`](super::Workarounds::rx_index)), queues
    /// the others and sends all their UINCs in one message.
    ///
    /// Only the last object can be a phantom (FIFOCI reads at most one too
    /// far), and its frame may be stored while the burst is read: the
    /// burst would then see its old header before its new timestamp. So
    /// the same message reads that object's timestamp first, and that
    /// earlier value decides.
    ///
    /// When every UINC owed has been sent and INT is high, the FIFO is
    /// empty (its not-empty interrupt is enabled), so whatever FIFOSTA
    /// announced beyond the first object was FIFOCI's phantom: that is
    /// settled by reading the INT line, with no SPI message.
    pub(super) fn read_known(&mut self) -> Result<(), Error> {
        let check = self.cfg.workarounds.rx_index;
        if check && self.rx_owed == 0 && !self.wait.asserted(&self.int)? {
            self.rx_known = 0;
            self.stats.rx_stale += 1;
            return Ok(());
        }
        let k = usize::from(std::mem::take(&mut self.rx_known));
        let l = self.plan.layout;
        let (depth, obj) = (usize::from(l.rx_depth), usize::from(l.rx_obj));
        let tail = usize::from(self.rx_tail);
        let mut ts_first = [0u8; 4];
        {
            let per_access = (max_access(l.rx_base, self.cfg.crc) / obj).max(1);
            let mut parts: [(u16, &mut [u8]); 6] = Default::default();
            let mut n = 0;
            if check {
                let last = (tail + k - 1) % depth;
                parts[0] = (l.rx_base + (last * obj + 8) as u16, &mut ts_first[..]);
                n = 1;
            }
            let mut rest = &mut self.rx_bulk[..k * obj];
            let first = k.min(depth - tail);
            for (mut slot, mut left) in [(tail, first), (0, k - first)] {
                while left > 0 {
                    let m = left.min(per_access);
                    let (b, r) = std::mem::take(&mut rest).split_at_mut(m * obj);
                    rest = r;
                    parts[n] = (l.rx_base + (slot * obj) as u16, b);
                    n += 1;
                    slot += m;
                    left -= m;
                }
            }
            self.io.read_parts(&mut parts[..n])?;
        }
        for i in 0..k {
            let (f, mut ts, len) = decode_rx(&self.rx_bulk[i * obj..(i + 1) * obj]);
            if check && i == k - 1 {
                ts = u32::from_le_bytes(ts_first);
            }
            let t = self.ts.extend(ts, now());
            if check && t <= self.rx_last_valid {
                // FIFOCI read one too far (DS80000789E 6): this object is
                // from the ring's previous lap. Nothing after it is new.
                self.stats.rx_stale += 1;
                break;
            }
            self.rx_last_valid = self.rx_last_valid.max(t);
            let addr = self.rx_addr();
            self.take_rx(f, t, len, addr, false)?;
            self.stats.rx_burst_frames += 1;
        }
        self.run_rx_uinc()
    }

    /// Queues the frame received in the RX object at `addr` (its payload
    /// fits the object): reads the rest of a long FD payload if only the
    /// head was read, and stamps it.
    fn deliver_rx(&mut self, mut f: Frame, t: u64, len: usize, addr: u16, head_only: bool) -> Result<(), Error> {
        if head_only && len > RX_HEAD - 12 {
            // A long FD payload: the rest after the first 8 bytes.
            let mut buf = [0u8; 64];
            let rest = (len - 8).div_ceil(4) * 4;
            self.io.read_bytes(addr + RX_HEAD as u16, &mut buf[8..8 + rest])?;
            buf[..8].copy_from_slice(&f.data()[..8]);
            f = Frame::from_raw(f.id(), f.dlc(), f.is_fd(), f.brs(), f.esi(), f.is_remote(), &buf[..len]);
        }
        f.timestamp = Some(t);
        self.stats.rx_frames += 1;
        if self.rxq.len() < self.cfg.rx_queue {
            self.rxq.push_back(f);
        } else {
            self.stats.rx_dropped += 1;
        }
        Ok(())
    }

    /// The rare sources of C1INT `int`. Returns whether C1TREC was read.
    fn rare(&mut self, int: u32) -> Result<bool, Error> {
        let w = self.cfg.workarounds;
        let mut trec_read = false;
        if int & INT_RXOVIF != 0 {
            let sta = self.io.read(c1fifosta(RX_FIFO))?;
            if sta & FIFOSTA_RXOVIF != 0 {
                self.stats.rx_overflows += 1;
                self.io.write_byte(c1fifosta(RX_FIFO), !(FIFOSTA_RXOVIF as u8))?;
            }
        }
        if int & INT_SPICRCIF != 0 {
            // A CRC access failed its check in the chip (CRC.CRCERRIF).
            self.io.take_crc_flags()?;
            self.io.crc_flag_seen = false;
            if self.cfg.crc && w.write_safe {
                // A refused WRITE_SAFE wrote nothing: find what is missing.
                self.check_heads()?;
            }
        }
        if int & INT_ECCIF != 0 {
            let st = self.io.read(ECCSTAT)?;
            let seen = st & (ECCSTAT_SECIF | ECCSTAT_DEDIF);
            if st & ECCSTAT_SECIF != 0 {
                self.stats.ecc_corrected += 1;
            }
            if st & ECCSTAT_DEDIF != 0 {
                self.stats.ecc_uncorrectable += 1;
            }
            if seen != 0 {
                self.io.write_byte(ECCSTAT, !(seen as u8))?;
            }
        }
        if int & (INT_SERRIF | INT_IVMIF) != 0 {
            self.stats.system_errors += 1;
        }
        if int & (INT_SERRIF | INT_MODIF) != 0 && w.mab_recovery && self.state != BusState::BusOff {
            self.mab_check()?;
        }
        if int & INT_IVMIF != 0 && w.ivmif_bdiag {
            // Bus errors are reported here, not by CERRIF (Linux:
            // mcp251xfd_handle_ivmif()): decode and clear C1BDIAG1.
            let b = self.io.read(C1BDIAG1)?;
            self.stats.bus_errors.record(b);
            self.stats.ivmif_decoded += 1;
            self.io.write(C1BDIAG1, 0)?;
        }
        if int & INT_CERRIF != 0 {
            self.stats.cerr_interrupts += 1;
            self.update_bus_state()?;
            trec_read = true;
        }
        let clear = int & INT_CLEARABLE;
        if clear != 0 {
            // Writing 0 clears a flag; the enables (upper half) are left alone.
            self.clear_int_flags(clear)?;
        }
        Ok(trec_read)
    }

    /// SERRIF / MODIF: a TX MAB underflow or RX MAB overflow drops the chip
    /// to Restricted (or Listen-Only) mode; the configured mode is
    /// requested again without waiting, and the chip retransmits the
    /// aborted frame (Linux: mcp251xfd_handle_modif(), then
    /// mcp251xfd_chip_set_normal_mode_nowait()).
    fn mab_check(&mut self) -> Result<(), Error> {
        let want = self.cfg.reqop();
        let opmod = ((self.io.read(C1CON)? >> CON_OPMOD_SHIFT) & 7) as u8;
        if opmod == want {
            self.mab_pending = false;
            return Ok(());
        }
        if opmod == MODE_RESTRICTED || opmod == MODE_LISTEN_ONLY {
            if !self.mab_pending {
                self.stats.mab_errors += 1;
                self.mab_pending = true;
            }
            self.io.write_byte(C1CON + 3, want)?;
        }
        Ok(())
    }

    /// After a refused write ([`Workarounds::write_safe`](super::Workarounds::write_safe)):
    /// compares the chip's TX FIFO head, RX FIFO tail and TEF tail with the
    /// driver's and re-issues the UINC (| TXREQ) writes that did not land,
    /// so that no frame is lost or sent twice. A difference larger than the
    /// UINCs sent since the last comparison is not a refused write: left alone.
    pub(super) fn check_heads(&mut self) -> Result<(), Error> {
        let l = self.plan.layout;
        let slot = |ua: u32, base: u16, obj: u16, depth: u8| -> u8 {
            let off = (ua + u32::from(RAM_START)).wrapping_sub(u32::from(base));
            ((off / u32::from(obj)) % u32::from(depth)) as u8
        };
        let sent = self.unverified;
        self.unverified = super::Unverified::default();
        // TX: the chip's head follows our UINCs only.
        let chip_head = slot(self.io.read(c1fifoua(TX_FIFO))?, l.tx_base, l.tx_obj, l.tx_depth);
        let missing = (self.tx_head + l.tx_depth - chip_head) % l.tx_depth;
        if missing > 0 && u32::from(missing) <= sent.tx && usize::from(missing) <= self.tx_in_flight {
            for _ in 0..missing {
                self.io.dev.run(&mut self.hot.tx_req)?;
            }
            self.unverified.tx = u32::from(missing);
            self.stats.write_safe_recovered += u64::from(missing);
        }
        // RX: the chip's tail is ours minus the UINCs not sent yet.
        let chip_tail = slot(self.io.read(c1fifoua(RX_FIFO))?, l.rx_base, l.rx_obj, l.rx_depth);
        let expected = (self.rx_tail + l.rx_depth - self.rx_owed) % l.rx_depth;
        let missing = (expected + l.rx_depth - chip_tail) % l.rx_depth;
        if missing > 0 && u32::from(missing) <= sent.rx {
            self.io.dev.run(&mut self.hot.rx_uinc[usize::from(missing) - 1])?;
            self.unverified.rx = u32::from(missing);
            self.stats.write_safe_recovered += u64::from(missing);
        }
        // TEF: the chip's tail is the oldest completion not collected.
        let chip_tef = slot(self.io.read(C1TEFUA)?, l.tef_base, l.tef_obj, l.tef_depth);
        let missing = (self.tef_tail() + l.tef_depth - chip_tef) % l.tef_depth;
        if missing > 0 && u32::from(missing) <= sent.tef {
            self.io.dev.run(&mut self.hot.tef_uinc[usize::from(missing) - 1])?;
            self.unverified.tef = u32::from(missing);
            self.stats.write_safe_recovered += u64::from(missing);
        }
        Ok(())
    }

    /// While not error active, reads C1TREC: the chip raises no CERRIF on
    /// the way back to error active ([`Workarounds::trec_poll`](super::Workarounds::trec_poll)).
    pub(super) fn poll_trec(&mut self) -> Result<(), Error> {
        if self.cfg.workarounds.trec_poll && matches!(self.state, BusState::Warning | BusState::Passive) {
            self.update_bus_state()?;
            if self.state == BusState::Active {
                self.stats.trec_active_polled += 1;
            }
        }
        Ok(())
    }

    /// Reads C1TREC and updates the fault-confinement state; at bus-off,
    /// stops the controller.
    pub(super) fn update_bus_state(&mut self) -> Result<BusState, Error> {
        let trec = self.io.read(C1TREC)?;
        self.tec_rec = (((trec >> 8) & 0xFF) as u8, (trec & 0xFF) as u8);
        let st = if trec & TREC_TXBO != 0 {
            BusState::BusOff
        } else if trec & (TREC_TXBP | TREC_RXBP) != 0 {
            BusState::Passive
        } else if trec & TREC_EWARN != 0 {
            BusState::Warning
        } else {
            BusState::Active
        };
        if st != self.state && self.state != BusState::BusOff {
            match st {
                BusState::BusOff => self.stats.bus_off_events += 1,
                BusState::Passive => self.stats.error_passive_events += 1,
                _ => {}
            }
            self.state = st;
            if st == BusState::BusOff {
                self.stop_bus_off()?;
            }
        }
        Ok(self.state)
    }
}
