//! Interrupt flags derived from FIFO/TEF state, C1VEC, and the INT pins.

use super::core::Core;
use super::pin_out::PinId;
use super::regs::*;
use super::Mode;
use wirespeed_time::Instant;

/// FIFOCON bits that enable one of a FIFO's interrupts.
const FIFO_IE_BITS: u32 = FIFOCON_TFNRFNIE | FIFOCON_TFHRFHIE | FIFOCON_TFERFFIE | FIFOCON_RXOVIE | FIFOCON_TXATIE;

impl Core {
    // ---------------------------------------------------------------- interrupts

    /// FIFOSTA flags (bits 7:0) of FIFO `m`.
    pub(super) fn fifo_flags(&self, m: usize) -> u32 {
        let f = &self.fifos[m];
        let d = u32::from(f.depth());
        let c = u32::from(f.count);
        let mut s = f.sta;
        if f.is_tx() {
            if c < d {
                s |= FIFOSTA_TFNRFNIF;
            }
            if m != 0 && c * 2 <= d {
                s |= FIFOSTA_TFHRFHIF;
            }
            if c == 0 {
                s |= FIFOSTA_TFERFFIF;
            }
            s & !FIFOSTA_RXOVIF
        } else {
            if c > 0 {
                s |= FIFOSTA_TFNRFNIF;
            }
            if c * 2 >= d && c > 0 {
                s |= FIFOSTA_TFHRFHIF;
            }
            if c == d {
                s |= FIFOSTA_TFERFFIF;
            }
            s & !(FIFOSTA_TXATIF | FIFOSTA_TXERR | FIFOSTA_TXLARB | FIFOSTA_TXABT)
        }
    }

    pub(super) fn fifo_active(&self, m: usize) -> bool {
        m != 0 || self.con & CON_TXQEN != 0
    }

    /// Recomputes [`Core::ie_fifos`] after a FIFOCON change.
    pub(super) fn refresh_ie_fifos(&mut self) {
        self.ie_fifos = (0..32).filter(|&m| self.fifos[m].con & FIFO_IE_BITS != 0).fold(0, |acc, m| acc | 1 << m);
    }

    pub(super) fn fifo_irq(&self, m: usize) -> (bool, bool, bool, bool) {
        // (tx pending, rx pending, rx overflow, tx attempts)
        if !self.fifo_active(m) || self.mode == Mode::Config {
            return (false, false, false, false);
        }
        let f = &self.fifos[m];
        let ie = f.con;
        let fl = self.fifo_flags(m);
        let level = fl & ie & 0x7 != 0;
        let ov = fl & FIFOSTA_RXOVIF != 0 && ie & FIFOCON_RXOVIE != 0;
        let at = fl & FIFOSTA_TXATIF != 0 && ie & FIFOCON_TXATIE != 0;
        if f.is_tx() {
            (level, false, false, at)
        } else {
            (false, level, ov, false)
        }
    }

    pub(super) fn irq_bits(&self) -> (u32, u32, u32, u32) {
        let (mut tx, mut rx, mut ov, mut at) = (0, 0, 0, 0);
        let mut fifos = self.ie_fifos;
        while fifos != 0 {
            let m = fifos.trailing_zeros() as usize;
            fifos &= fifos - 1;
            let (t, r, o, a) = self.fifo_irq(m);
            tx |= u32::from(t) << m;
            rx |= u32::from(r) << m;
            ov |= u32::from(o) << m;
            at |= u32::from(a) << m;
        }
        (tx, rx, ov, at)
    }

    pub(super) fn tef_flags(&self) -> u32 {
        let t = &self.tef;
        let mut s = t.sta & TEFSTA_TEFOVIF;
        if self.con & CON_STEF == 0 || self.mode == Mode::Config {
            return s;
        }
        let (c, d) = (u32::from(t.count), u32::from(t.depth()));
        if c > 0 {
            s |= TEFSTA_TEFNEIF;
        }
        if c > 0 && c * 2 >= d {
            s |= TEFSTA_TEFHIF;
        }
        if c == d {
            s |= TEFSTA_TEFFIF;
        }
        s
    }

    /// C1INT flags (bits 15:0) as of now.
    pub(super) fn int_flag_bits(&self) -> u32 {
        let (tx, rx, ov, at) = self.irq_bits();
        let mut f = self.int_flags & INT_CLEARABLE;
        if tx != 0 {
            f |= INT_TXIF;
        }
        if rx != 0 {
            f |= INT_RXIF;
        }
        if ov != 0 {
            f |= INT_RXOVIF;
        }
        if at != 0 {
            f |= INT_TXATIF;
        }
        if self.tef_flags() & self.tef.con & 0xF != 0 {
            f |= INT_TEFIF;
        }
        let crc_if = (self.crc & CRC_CRCERRIF != 0 && self.crc & CRC_CRCERRIE != 0)
            || (self.crc & CRC_FERRIF != 0 && self.crc & CRC_FERRIE != 0);
        if crc_if {
            f |= INT_SPICRCIF;
        }
        let ecc_if = (self.eccstat & ECCSTAT_SECIF != 0 && self.ecccon & ECCCON_SECIE != 0)
            || (self.eccstat & ECCSTAT_DEDIF != 0 && self.ecccon & ECCCON_DEDIE != 0);
        if ecc_if {
            f |= INT_ECCIF;
        }
        f
    }

    pub(super) fn vec_word(&self) -> u32 {
        let (tx, rx, _, _) = self.irq_bits();
        let flags = self.int_flag_bits() & (self.int_en >> 16);
        let mut icod = 0x40u32;
        let specials = [
            (INT_CERRIF, 0x41),
            (INT_WAKIF, 0x42),
            (INT_RXOVIF, 0x43),
            (INT_SERRIF, 0x44),
            (INT_TBCIF, 0x46),
            (INT_MODIF, 0x47),
            (INT_IVMIF, 0x48),
            (INT_TEFIF, 0x49),
            (INT_TXATIF, 0x4A),
        ];
        for (bit, code) in specials {
            if flags & bit != 0 {
                icod = code;
            }
        }
        let fifo_mask = (if flags & INT_TXIF != 0 { tx } else { 0 }) | (if flags & INT_RXIF != 0 { rx } else { 0 });
        if icod == 0x40 && fifo_mask != 0 {
            icod = 31 - fifo_mask.leading_zeros();
        }
        let code = |bits: u32| if bits == 0 { 0x40 } else { 31 - bits.leading_zeros() };
        let rxcode = code(rx);
        let txcode = code(tx);
        let filhit = if rx != 0 {
            let f = &self.fifos[rxcode as usize];
            (self.ram_word(f.obj_addr(f.tail) + 4) >> OBJ_FLAGS_FILHIT_SHIFT) & 0x1F
        } else {
            0
        };
        icod | (filhit << 8) | (txcode << 16) | (rxcode << 24)
    }

    pub(super) fn update_pins(&mut self, at: Instant) {
        #[cfg(test)]
        {
            self.pin_updates += 1;
        }
        let flags = self.int_flag_bits();
        let en = self.int_en >> 16;
        self.pin_latch.drive(PinId::Int, flags & en == 0, at);
        let gpio = |pm: u32, tris: u32, lat: u32, active: bool| {
            if self.iocon & pm == 0 {
                !active
            } else if self.iocon & tris == 0 {
                self.iocon & lat != 0
            } else {
                true
            }
        };
        let int0 = gpio(IOCON_PM0, IOCON_TRIS0, IOCON_LAT0, flags & en & INT_TXIF != 0);
        let int1 = gpio(IOCON_PM1, IOCON_TRIS1, IOCON_LAT1, flags & en & INT_RXIF != 0);
        self.pin_latch.drive(PinId::Int0, int0, at);
        self.pin_latch.drive(PinId::Int1, int1, at);
    }
}
