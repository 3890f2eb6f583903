//! Catching up after a stall: when the RX FIFO holds several frames (the
//! thread was held off while the bus kept delivering), read them in as few
//! accesses as the register interface allows and release them with one
//! message of UINCs, instead of a status read and a UINC per frame. Under
//! backlog this roughly halves the SPI messages per frame, which is what
//! lets a slow path catch up before the 32-deep FIFO overflows.

use super::error::Error;
use super::hot::decode_rx;
use super::regio::MAX_ACCESS;
use super::regs::*;
use super::Mcp251xfd;
use wirespeed::time::now;

impl Mcp251xfd {
    /// Frames in the RX FIFO at the driver's tail and after it (one FIFOSTA
    /// read; FIFOCI is the slot the FIFO writes next).
    fn rx_waiting(&mut self) -> Result<u8, Error> {
        let sta = self.io.read(c1fifosta(RX_FIFO))?;
        let depth = self.plan.layout.rx_depth;
        if sta & FIFOSTA_TFNRFNIF == 0 {
            return Ok(0);
        }
        if sta & FIFOSTA_TFERFFIF != 0 {
            return Ok(depth);
        }
        let head = ((sta >> FIFOSTA_FIFOCI_SHIFT) & 0x1F) as u8;
        Ok((head + depth - self.rx_tail) % depth)
    }

    /// Moves every frame waiting in the RX FIFO (as many as the queue has
    /// room for) into the queue. Returns how many; fewer than two are left
    /// to the ordinary interrupt service, which reads one with the status.
    pub(super) fn drain_backlog(&mut self) -> Result<usize, Error> {
        if self.rx_uinc_pending {
            self.run_rx_uinc()?;
        }
        let room = self.cfg.rx_queue.saturating_sub(self.rxq.len());
        let n = usize::from(self.rx_waiting()?).min(room);
        if n < 2 {
            return Ok(0);
        }
        let l = self.plan.layout;
        let obj = usize::from(l.rx_obj);
        let depth = usize::from(l.rx_depth);
        let per_read = (MAX_ACCESS / obj).max(1);
        let mut buf = [0u8; MAX_ACCESS];
        let mut done = 0;
        while done < n {
            let slot = (usize::from(self.rx_tail) + done) % depth;
            // Contiguous in RAM up to the end of the ring.
            let k = (n - done).min(per_read).min(depth - slot);
            let addr = l.rx_base + (slot * obj) as u16;
            self.io.read_bytes(addr, &mut buf[..k * obj])?;
            let t = now();
            for i in 0..k {
                let (mut f, ts, _) = decode_rx(&buf[i * obj..(i + 1) * obj]);
                f.timestamp = Some(self.ts.extend(ts, t));
                self.rxq.push_back(f);
            }
            done += k;
        }
        self.rx_tail = ((usize::from(self.rx_tail) + n) % depth) as u8;
        self.hot.set_rx_addr(self.rx_addr());
        self.io.dev.run(&mut self.hot.rx_uincs[n - 1])?;
        self.stats.rx_frames += n as u64;
        self.stats.backlog_drains += 1;
        Ok(n)
    }
}
