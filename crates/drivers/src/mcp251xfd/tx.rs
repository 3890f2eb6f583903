//! Transmit through the TX FIFO and collect completions from the TEF.

use super::error::Error;
use super::hot::TEF_OBJ;
use super::regio::check_read;
use super::regs::*;
use super::{BusState, Mcp251xfd};
use crate::can::Frame;
use wirespeed::time::now;

impl Mcp251xfd {
    /// Queues `frame` for transmission: one prepared message writes the TX
    /// object and requests it (and carries a deferred RX UINC and, without
    /// TX timestamps, the UINC of a completion the last interrupt announced). Waits up to
    /// [`Config::tx_timeout`](super::Config::tx_timeout) for room if the
    /// queue is full.
    pub fn send(&mut self, frame: &Frame) -> Result<(), Error> {
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
        if self.state == BusState::BusOff {
            return Err(Error::BusOff);
        }
        if self.tx_in_flight >= usize::from(self.plan.layout.tx_depth) {
            self.make_room()?;
        }
        let l = self.plan.layout;
        let addr = l.tx_base + u16::from(self.tx_head) * l.tx_obj;
        let class = usize::from(frame.len() > 8);
        let rx_u = usize::from(self.rx_uinc_pending);
        // A completion the last status read announced rides along (its
        // UINC alone is the whole reap when TX timestamps are off).
        let tef_u = usize::from(self.tef_hint && !self.cfg.tx_timestamps && self.tx_in_flight > 0);
        let seq = self.tx_seq & 0x7F;
        self.hot.fill_tx((class, rx_u, tef_u), addr, frame, seq);
        self.io.dev.run(&mut self.hot.tx[class][rx_u][tef_u])?;
        self.rx_uinc_pending = false;
        if tef_u == 1 {
            self.tef_hint = false;
            self.completed()?;
        }
        self.tx_seq = self.tx_seq.wrapping_add(1);
        self.tx_head = (self.tx_head + 1) % l.tx_depth;
        self.tx_in_flight += 1;
        self.stats.tx_frames += 1;
        Ok(())
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

    /// Collects completed transmissions from the TEF (checking TEFSTA
    /// until it is empty). Returns how many.
    pub fn reap_tef(&mut self) -> Result<usize, Error> {
        self.tef_hint = false;
        let mut n = 0;
        while self.tx_in_flight > 0 {
            let sta = self.io.read(C1TEFSTA)?;
            if sta & TEFSTA_TEFOVIF != 0 {
                self.stats.tef_overflows += 1;
                self.io.write_byte(C1TEFSTA, !(TEFSTA_TEFOVIF as u8))?;
            }
            if sta & TEFSTA_TEFNEIF == 0 {
                break;
            }
            self.reap_one()?;
            n += 1;
        }
        Ok(n)
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
            self.io.dev.run(&mut self.hot.tef_uinc)?;
            return self.completed();
        }
        let addr = l.tef_base + u16::from(self.tef_tail()) * l.tef_obj;
        self.hot.set_tef_addr(addr);
        self.io.dev.run(&mut self.hot.tef)?;
        match check_read(self.hot.tef.rx(0).unwrap_or(&[]), addr, self.hot.crc) {
            Ok(obj) => {
                debug_assert_eq!(obj.len(), TEF_OBJ);
                let ts = u32::from_le_bytes([obj[8], obj[9], obj[10], obj[11]]);
                self.last_tx_timestamp = Some(self.ts.extend(ts, now()));
            }
            // The UINC in the same message already ran, so the entry is gone
            // either way: the completion counts, its timestamp is lost (counted).
            Err(_) => self.stats.crc_errors += 1,
        }
        self.completed()
    }

    /// The TEF entry of the oldest transmission in flight: the TEF has the
    /// TX FIFO's depth and receives its frames in order.
    fn tef_tail(&self) -> u8 {
        let depth = usize::from(self.plan.layout.tx_depth);
        ((usize::from(self.tx_head) + depth - self.tx_in_flight) % depth) as u8
    }

    fn completed(&mut self) -> Result<(), Error> {
        self.tx_in_flight -= 1;
        self.stats.tx_done += 1;
        Ok(())
    }
}
