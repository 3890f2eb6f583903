//! Interrupt service: one prepared message reads C1INT and the RX
//! object at the tail; rare sources (errors, overflows) take the
//! configuration path.

use super::error::Error;
use super::hot::{decode_rx, RX_HEAD};
use super::regs::*;
use super::{BusState, Mcp251xfd};
use wirespeed::time::now;

/// Interrupt sources other than RX that the driver must clear.
const RARE: u32 = INT_RXOVIF | INT_CERRIF | INT_SERRIF | INT_IVMIF | INT_SPICRCIF | INT_MODIF | INT_TBCIF | INT_WAKIF;

impl Mcp251xfd {
    fn rx_addr(&self) -> u16 {
        let l = &self.plan.layout;
        l.rx_base + u16::from(self.rx_tail) * l.rx_obj
    }

    pub(super) fn run_rx_uinc(&mut self) -> Result<(), Error> {
        self.io.dev.run(&mut self.hot.rx_uinc)?;
        self.rx_uinc_pending = false;
        Ok(())
    }

    /// One service pass. Returns whether anything was handled.
    pub(super) fn service(&mut self) -> Result<bool, Error> {
        if self.rx_uinc_pending {
            self.run_rx_uinc()?;
        }
        self.stats.irq_passes += 1;
        let addr = self.rx_addr();
        let mut tries = 0;
        let (int, frame) = loop {
            self.io.dev.run(&mut self.hot.status_rx)?;
            match self.hot.status(addr) {
                Ok((int, obj)) => {
                    let rx = (int & INT_RXIF != 0).then(|| decode_rx(obj));
                    break (int, rx);
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
        if let Some((f, ts, len)) = frame {
            if len > self.cfg.rx_payload {
                // The device stored the frame truncated (DLC kept, IVMIF
                // set): the rest of its data is not in the object, and the
                // bytes after it belong to the next one. Dropped and counted.
                self.stats.rx_truncated += 1;
            } else {
                self.deliver_rx(f, ts, len, addr)?;
            }
            self.rx_tail = (self.rx_tail + 1) % self.plan.layout.rx_depth;
            self.rx_uinc_pending = true;
            self.hot.set_rx_addr(self.rx_addr());
            handled = true;
        }
        if int & INT_TEFIF != 0 {
            self.tef_hint = true;
        }
        if int & RARE != 0 {
            self.rare(int)?;
            handled = true;
        }
        if !handled {
            self.stats.spurious += 1;
        }
        Ok(handled)
    }

    /// Queues the frame received in the RX object at `addr` (its payload
    /// fits the object): reads the rest of a long FD payload, after the
    /// bytes the status read brought, and stamps it.
    fn deliver_rx(&mut self, mut f: crate::can::Frame, ts: u32, len: usize, addr: u16) -> Result<(), Error> {
        if len > RX_HEAD - 12 {
            // A long FD payload: the rest after the first 8 bytes.
            let mut buf = [0u8; 64];
            let rest = (len - 8).div_ceil(4) * 4;
            self.io.read_bytes(addr + RX_HEAD as u16, &mut buf[8..8 + rest])?;
            buf[..8].copy_from_slice(&f.data()[..8]);
            f = crate::can::Frame::from_raw(f.id(), f.dlc(), f.is_fd(), f.brs(), f.esi(), f.is_remote(), &buf[..len]);
        }
        f.timestamp = Some(self.ts.extend(ts, now()));
        self.stats.rx_frames += 1;
        if self.rxq.len() < self.cfg.rx_queue {
            self.rxq.push_back(f);
        } else {
            self.stats.rx_dropped += 1;
        }
        Ok(())
    }

    fn rare(&mut self, int: u32) -> Result<(), Error> {
        if int & INT_RXOVIF != 0 {
            let sta = self.io.read(c1fifosta(RX_FIFO))?;
            if sta & FIFOSTA_RXOVIF != 0 {
                self.stats.rx_overflows += 1;
                self.io.write_byte(c1fifosta(RX_FIFO), !(FIFOSTA_RXOVIF as u8))?;
            }
        }
        if int & INT_SPICRCIF != 0 {
            let c = self.io.read(CRC)?;
            self.stats.crc_errors += 1;
            self.io.write(CRC, c & !(CRC_CRCERRIF | CRC_FERRIF))?;
        }
        if int & (INT_SERRIF | INT_IVMIF) != 0 {
            self.stats.system_errors += 1;
        }
        if int & INT_CERRIF != 0 {
            self.stats.bus_errors += 1;
            self.update_bus_state()?;
        }
        let clear = int & INT_CLEARABLE;
        if clear != 0 {
            // Writing 0 clears a flag; the enables (upper half) are left alone.
            let lo = !clear & 0xFFFF;
            self.io.write_bytes(C1INT, &(lo as u16).to_le_bytes())?;
        }
        Ok(())
    }

    /// Reads C1TREC and updates the fault-confinement state.
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
        if st != self.state {
            match st {
                BusState::BusOff => self.stats.bus_off_events += 1,
                BusState::Passive => self.stats.error_passive_events += 1,
                _ => {}
            }
            if self.state == BusState::BusOff {
                self.stats.bus_off_recoveries += 1;
            }
            self.state = st;
        }
        Ok(st)
    }
}
