//! Transmit through the TX FIFO and collect completions from the TEF.
//!
//! A frame's message is submitted asynchronously, as the Linux driver's
//! `mcp251xfd_start_xmit` hands it to `spi_async`: on an idle bus the fast
//! policy runs it in this thread before [`Mcp251xfd::send`] returns (its
//! error is that call's); a kernel preset queues it for the SPI core's pump
//! thread, and its result is collected by the next `send` or
//! [`Mcp251xfd::flush_tx`], which report a failure and take the frame back
//! (not counted as sent).
//!
//! Completions are reaped two ways:
//! - **hinted** (the common case): every status read carries C1INT.TEFIF,
//!   the TEF's not-empty flag; the driver notes it and collects one entry
//!   lazily — its UINC rides in the next transmit's message (no TX
//!   timestamps), or one prepared message reads the object and sends the
//!   UINC (TX timestamps) before the next wait. The object is the one at
//!   the TEF's tail, which the chip says exists: no index is involved.
//! - **drained** ([`Mcp251xfd::reap_tef`], and whenever the TX queue is
//!   full): the number of completions comes from the TX FIFO's FIFOSTA
//!   (FIFOCI, its tail), as in the Linux driver's `mcp251xfd_get_tef_len()`;
//!   they are read in one burst (two at the ring's wrap) and acknowledged
//!   with one message of UINCs. FIFOCI may read one too large (DS80000789E
//!   6), so each object's SEQ is checked against the oldest frame in
//!   flight and the first mismatch ends the burst
//!   ([`Workarounds::tef_seq`](super::Workarounds::tef_seq)).

use super::error::Error;
use super::hot::{tef_seq, SEQ_MASK, TEF_OBJ};
use super::regio::check_read;
use super::regs::*;
use super::{BusState, Mcp251xfd};
use crate::can::Frame;
use wirespeed::spi::Pending;
use wirespeed::time::now;

/// A frame's TX message while the SPI core holds it.
#[derive(Debug)]
pub(super) struct Submitted {
    pending: Pending,
    /// Its place in `Hot::tx`.
    kind: (usize, usize, usize),
}

impl Mcp251xfd {
    /// Queues `frame` for transmission: one prepared message writes the TX
    /// object and requests it (and carries a deferred RX UINC and, without
    /// TX timestamps, the UINC of a completion the last interrupt announced),
    /// submitted asynchronously (see the module docs). Waits up to
    /// [`Config::tx_timeout`](super::Config::tx_timeout) for room if the
    /// queue is full. [`Error::BusOff`] while the controller is stopped
    /// after bus-off (a due [`Config::bus_off_restart`](super::Config::bus_off_restart)
    /// restarts it first). An error of the previous frame's message, if the
    /// SPI core ran it after that frame's `send` returned, comes back here
    /// first, and `frame` is not queued.
    pub fn send(&mut self, frame: &Frame) -> Result<(), Error> {
        self.flush_tx()?;
        // The object's ID word has room for exactly 11 or 29 bits: a larger
        // id (possible through `Frame::from_raw`) would be cut silently.
        crate::can::check_id(frame.id())?;
        if frame.is_fd() && self.cfg.data_bitrate.is_none() {
            return Err(Error::FrameNotSupported { reason: "CAN FD frame on a controller in CAN 2.0 mode" });
        }
        if frame.len() > self.cfg.tx_payload {
            return Err(Error::FrameNotSupported {
                reason: "payload longer than the TX object size (Config::tx_payload)",
            });
        }
        self.auto_restart()?;
        if self.state == BusState::BusOff {
            return Err(Error::BusOff);
        }
        if self.tx_in_flight >= usize::from(self.plan.layout.tx_depth) {
            self.make_room()?;
        }
        let l = self.plan.layout;
        let addr = l.tx_base + u16::from(self.tx_head) * l.tx_obj;
        let class = usize::from(frame.len() > 8);
        let rx_u = usize::from(self.rx_owed > 0);
        // A completion the last status read announced rides along (its
        // UINC alone is the whole reap when TX timestamps are off).
        let tef_u = usize::from(self.tef_hint && !self.cfg.tx_timestamps && self.tx_in_flight > 0);
        let seq = self.tx_seq & SEQ_MASK;
        self.hot.fill_tx((class, rx_u, tef_u), addr, frame, seq);
        let Some(msg) = self.hot.tx[class][rx_u][tef_u].take() else {
            unreachable!("flush_tx brought every TX message back")
        };
        let pending = self.io.dev.submit(msg);
        self.tx_ran_here = pending.ran_in_caller();
        self.tx_submitted = Some(Submitted { pending, kind: (class, rx_u, tef_u) });
        let u = &mut self.unverified;
        (u.tx, u.rx, u.tef) =
            (u.tx.saturating_add(1), u.rx.saturating_add(rx_u as u32), u.tef.saturating_add(tef_u as u32));
        self.rx_owed -= rx_u as u8;
        if tef_u == 1 {
            self.tef_hint = false;
            self.completed();
        }
        self.tx_seq = self.tx_seq.wrapping_add(1);
        self.tx_head = (self.tx_head + 1) % l.tx_depth;
        self.tx_in_flight += 1;
        self.stats.tx_frames += 1;
        // Run in this thread (an idle bus, the fast policy): its result is this call's.
        if self.tx_ran_here {
            self.flush_tx()?;
        }
        Ok(())
    }

    /// Waits until the last frame's TX message has run and takes it back.
    /// If it failed, the frame is taken back too (not counted as sent, its
    /// TX FIFO slot free again) and the error is returned.
    pub fn flush_tx(&mut self) -> Result<(), Error> {
        let Some(Submitted { pending, kind: (class, rx_u, tef_u) }) = self.tx_submitted.take() else {
            return Ok(());
        };
        let (msg, r) = pending.wait();
        self.hot.tx[class][rx_u][tef_u] = Some(msg);
        if let Err(e) = r {
            self.unsend(rx_u, tef_u);
            return Err(e.into());
        }
        Ok(())
    }

    /// Undoes `send`'s bookkeeping for a frame whose message failed, as
    /// if `send` had returned the error (which the sync path did).
    fn unsend(&mut self, rx_u: usize, tef_u: usize) {
        let depth = self.plan.layout.tx_depth;
        self.tx_head = (self.tx_head + depth - 1) % depth;
        self.tx_seq = self.tx_seq.wrapping_sub(1);
        self.tx_in_flight = self.tx_in_flight.saturating_sub(1);
        self.stats.tx_frames = self.stats.tx_frames.saturating_sub(1);
        self.rx_owed += rx_u as u8;
        let u = &mut self.unverified;
        (u.tx, u.rx, u.tef) =
            (u.tx.saturating_sub(1), u.rx.saturating_sub(rx_u as u32), u.tef.saturating_sub(tef_u as u32));
        if tef_u == 1 {
            self.tef_hint = true;
            self.tx_in_flight += 1;
            self.stats.tx_done = self.stats.tx_done.saturating_sub(1);
        }
    }

    fn make_room(&mut self) -> Result<(), Error> {
        let timeout = self.cfg.tx_timeout.as_nanos().min(u128::from(u64::MAX)) as u64;
        let t0 = now();
        loop {
            self.reap_tef()?;
            if self.tx_in_flight < usize::from(self.plan.layout.tx_depth) {
                return Ok(());
            }
            if self.wait.asserted(&self.int)? {
                self.service()?;
            }
            if self.state == BusState::BusOff {
                return Err(Error::BusOff);
            }
            if now().ns_since(t0) > timeout {
                return Err(Error::TxTimeout { in_flight: self.tx_in_flight });
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    /// Collects the completed transmissions the chip reports (TX FIFO
    /// FIFOCI against the driver's TEF tail), in one burst. Returns how many.
    pub fn reap_tef(&mut self) -> Result<usize, Error> {
        self.tef_hint = false;
        if self.tx_in_flight == 0 || self.state == BusState::BusOff {
            return Ok(0);
        }
        let l = self.plan.layout;
        let depth = l.tx_depth;
        let tefsta = self.io.read(C1TEFSTA)?;
        if tefsta & TEFSTA_TEFOVIF != 0 {
            self.stats.tef_overflows += 1;
            self.io.write_byte(C1TEFSTA, !(TEFSTA_TEFOVIF as u8))?;
        }
        let sta = self.io.read(c1fifosta(TX_FIFO))?;
        let ci = super::hot::fifoci(sta, depth);
        let tail = self.tef_tail();
        let mut n = usize::from((ci + depth - tail) % depth);
        // Equal indices with every slot in flight: nothing sent yet (the
        // FIFO is full) or everything sent (it is empty, or at least not
        // more than half full, as Linux checks: TFERFFIF itself may lie).
        if n == 0 && self.tx_in_flight == usize::from(depth) && sta & (FIFOSTA_TFERFFIF | FIFOSTA_TFHRFHIF) != 0 {
            n = usize::from(depth);
        }
        let n = n.min(self.tx_in_flight);
        if n == 0 {
            return Ok(0);
        }
        let valid = if self.cfg.tx_timestamps || self.cfg.workarounds.tef_seq { self.read_tef_burst(n)? } else { n };
        if valid > 0 {
            self.io.dev.run(&mut self.hot.tef_uinc[valid - 1])?;
            self.unverified.tef = self.unverified.tef.saturating_add(valid as u32);
            for _ in 0..valid {
                self.completed();
            }
        }
        Ok(valid)
    }

    /// Reads `n` TEF objects from the tail; returns how many are valid
    /// (SEQ as expected), stamping the last.
    fn read_tef_burst(&mut self, n: usize) -> Result<usize, Error> {
        let l = self.plan.layout;
        let (depth, obj) = (usize::from(l.tef_depth), usize::from(l.tef_obj));
        let tail = usize::from(self.tef_tail());
        let first = n.min(depth - tail);
        let addr = l.tef_base + l.tef_obj * tail as u16;
        self.io.read_ram(addr, &mut self.tef_bulk[..first * obj])?;
        if n > first {
            self.io.read_ram(l.tef_base, &mut self.tef_bulk[first * obj..n * obj])?;
        }
        let oldest = self.tx_seq.wrapping_sub(self.tx_in_flight as u32);
        let mut valid = 0;
        for i in 0..n {
            let o = &self.tef_bulk[i * obj..(i + 1) * obj];
            if self.cfg.workarounds.tef_seq && tef_seq(o) != oldest.wrapping_add(i as u32) & SEQ_MASK {
                // FIFOCI read one too large (DS80000789E 6): this entry is
                // from the ring's previous lap; nothing after it is new.
                self.stats.tef_stale += 1;
                break;
            }
            let ts = u32::from_le_bytes([o[8], o[9], o[10], o[11]]);
            if self.cfg.tx_timestamps {
                self.last_tx_timestamp = Some(self.ts.extend(ts, now()));
            }
            valid += 1;
        }
        Ok(valid)
    }

    /// Collects one TEF entry the last status read announced (C1INT.TEFIF):
    /// one prepared message, no TEFSTA read.
    pub(super) fn reap_hinted(&mut self) -> Result<(), Error> {
        self.tef_hint = false;
        if self.tx_in_flight > 0 {
            self.reap_one()?;
        }
        Ok(())
    }

    fn reap_one(&mut self) -> Result<(), Error> {
        let l = self.plan.layout;
        if !self.cfg.tx_timestamps {
            self.io.dev.run(&mut self.hot.tef_uinc[0])?;
            self.unverified.tef = self.unverified.tef.saturating_add(1);
            self.completed();
            return Ok(());
        }
        let addr = l.tef_base + u16::from(self.tef_tail()) * l.tef_obj;
        self.hot.set_tef_addr(addr);
        self.io.dev.run(&mut self.hot.tef)?;
        self.unverified.tef = self.unverified.tef.saturating_add(1);
        let oldest = self.tx_seq.wrapping_sub(self.tx_in_flight as u32) & SEQ_MASK;
        match check_read(self.hot.tef.rx(0).unwrap_or(&[]), addr, self.hot.crc) {
            Ok(obj) => {
                debug_assert_eq!(obj.len(), TEF_OBJ);
                if self.cfg.workarounds.tef_seq && tef_seq(obj) != oldest {
                    // TEFIF said the TEF holds an entry, so the one at its
                    // tail is real: a mismatch means the driver's count
                    // slipped. Counted; the entry is gone (its UINC ran).
                    self.stats.tef_stale += 1;
                }
                let ts = u32::from_le_bytes([obj[8], obj[9], obj[10], obj[11]]);
                self.last_tx_timestamp = Some(self.ts.extend(ts, now()));
            }
            // The UINC in the same message already ran, so the entry is gone
            // either way: the completion counts, its timestamp is lost (counted).
            Err(_) => self.stats.crc_errors += 1,
        }
        self.completed();
        Ok(())
    }

    /// The TEF entry of the oldest transmission in flight: the TEF has the
    /// TX FIFO's depth and receives its frames in order.
    pub(super) fn tef_tail(&self) -> u8 {
        let depth = usize::from(self.plan.layout.tx_depth);
        ((usize::from(self.tx_head) + depth - self.tx_in_flight) % depth) as u8
    }

    fn completed(&mut self) {
        self.tx_in_flight -= 1;
        self.stats.tx_done += 1;
    }
}
