//! Register and RAM reads and writes with each register's semantics
//! (read-only fields, write-0-to-clear flags, action bits, config-mode-only fields).

use super::core::{merge, Core};
use super::pin_out::PinId;
use super::regs::*;
use super::txrx::trec_flags;
use super::Mode;
use wirespeed_time::Instant;

impl Core {
    // ---------------------------------------------------------------- registers

    pub(super) fn is_config(&self) -> bool {
        self.mode == Mode::Config
    }

    pub(super) fn ua(&self, m: usize) -> u32 {
        let f = &self.fifos[m];
        let slot = if f.is_tx() { f.head } else { f.tail };
        f.obj_addr(slot) as u32
    }

    pub(super) fn fifoci(&self, m: usize) -> u8 {
        let f = &self.fifos[m];
        if f.is_tx() {
            if m == 0 {
                self.tx_slot(0).unwrap_or(f.head)
            } else {
                f.tail
            }
        } else {
            f.head
        }
    }

    /// The 32-bit register (or RAM word) at `addr & !3`, as of `at`.
    pub(super) fn read_word(&self, addr: u16, at: Instant) -> u32 {
        let a = addr & !3;
        match a {
            C1CON => {
                let busy = self.bus().is_some_and(|(b, _)| Self::is_bus_mode(self.mode) && b.busy_until(at).is_some());
                (self.con & !(7 << CON_OPMOD_SHIFT) & !CON_BUSY)
                    | (u32::from(self.mode.bits()) << CON_OPMOD_SHIFT)
                    | if busy { CON_BUSY } else { 0 }
            }
            C1NBTCFG => self.nbtcfg,
            C1DBTCFG => self.dbtcfg,
            C1TDC => self.tdc,
            C1TBC => self.tbc(at),
            C1TSCON => self.tscon,
            C1VEC => self.vec_word(),
            C1INT => self.int_flag_bits() | self.int_en,
            C1RXIF => self.irq_bits().1,
            C1TXIF => self.irq_bits().0,
            C1RXOVIF => self.irq_bits().2,
            C1TXATIF => self.irq_bits().3,
            C1TXREQ => (0..32).filter(|&m| self.fifos[m].txreq).fold(0, |acc, m| acc | (1 << m)),
            C1TREC => {
                if self.is_config() {
                    return TREC_TXBO;
                }
                let c = self.counters;
                let tec = u32::from(c.tec.min(255));
                let rec = u32::from(c.rec.min(255));
                rec | (tec << 8) | trec_flags(c)
            }
            C1BDIAG0 => u32::from(self.counters.rec.min(255)) | (u32::from(self.counters.tec.min(255)) << 8),
            C1BDIAG1 => self.bdiag1,
            C1TEFCON => self.tef.con | if self.is_config() { TEFCON_FRESET } else { 0 },
            C1TEFSTA => self.tef_flags(),
            C1TEFUA => self.tef.obj_addr(self.tef.tail) as u32,
            0x04C => 0,
            0x050..=0x1CF => {
                let m = usize::from((a - 0x050) / 12);
                match (a - 0x050) % 12 {
                    0 => {
                        let f = &self.fifos[m];
                        f.con
                            | if f.txreq { FIFOCON_TXREQ } else { 0 }
                            | if self.is_config() { FIFOCON_FRESET } else { 0 }
                    }
                    4 => self.fifo_flags(m) | (u32::from(self.fifoci(m)) << FIFOSTA_FIFOCI_SHIFT),
                    _ => self.ua(m),
                }
            }
            0x1D0..=0x1EF => {
                let n = usize::from(a - 0x1D0);
                u32::from_le_bytes([self.fltcon[n], self.fltcon[n + 1], self.fltcon[n + 2], self.fltcon[n + 3]])
            }
            0x1F0..=0x2EF => {
                let n = usize::from((a - 0x1F0) / 8);
                if (a - 0x1F0).is_multiple_of(8) {
                    self.fltobj[n]
                } else {
                    self.mask[n]
                }
            }
            0x400..=0xBFF => self.ram_word(usize::from(a - 0x400)),
            OSC => {
                let mut w = self.osc;
                let ready = self.osc_ready(at);
                if ready {
                    w |= OSC_OSCRDY;
                }
                if ready && self.osc & OSC_PLLEN != 0 && at >= self.pll_ready_at {
                    w |= OSC_PLLRDY;
                }
                if self.osc & OSC_SCLKDIV != 0 {
                    w |= OSC_SCLKRDY;
                }
                w
            }
            IOCON => {
                let mut w = self.iocon & !(IOCON_GPIO0 | IOCON_GPIO1);
                if self.pin_latch.level(PinId::Int0) {
                    w |= IOCON_GPIO0;
                }
                if self.pin_latch.level(PinId::Int1) {
                    w |= IOCON_GPIO1;
                }
                w
            }
            CRC => self.crc,
            ECCCON => self.ecccon,
            ECCSTAT => self.eccstat,
            DEVID => self.devid,
            _ => 0,
        }
    }

    pub(super) fn read_byte(&self, addr: u16, at: Instant) -> u8 {
        (self.read_word(addr, at) >> (8 * (addr & 3))) as u8
    }

    pub(super) fn write_byte(&mut self, addr: u16, val: u8, at: Instant) {
        let lane = u32::from(addr & 3);
        self.write_word(addr & !3, u32::from(val) << (8 * lane), 0xFF << (8 * lane), at);
    }

    /// Writes the bytes of `val` selected by `mask` to the register at `a`.
    pub(super) fn write_word(&mut self, a: u16, val: u32, mask: u32, at: Instant) {
        let cfg = self.is_config();
        match a {
            C1CON => {
                let writable = if cfg { 0xF01F_177F } else { 0xF000_0000 };
                self.con = merge(self.con, val, mask & writable & !(7 << CON_REQOP_SHIFT) & !CON_ABAT);
                if mask & 0xFF00_0000 != 0 {
                    if val & CON_ABAT != 0 {
                        for f in self.fifos.iter_mut() {
                            if f.txreq {
                                f.txreq = false;
                                f.sta |= FIFOSTA_TXABT;
                            }
                        }
                    }
                    let req = ((val >> CON_REQOP_SHIFT) & 7) as u8;
                    self.request_mode(Mode::from_bits(req), at);
                }
                if cfg {
                    self.layout();
                }
            }
            C1NBTCFG if cfg => self.nbtcfg = merge(self.nbtcfg, val, mask & 0xFFFF_7F7F),
            C1DBTCFG if cfg => self.dbtcfg = merge(self.dbtcfg, val, mask & 0xFF1F_0F0F),
            C1TDC if cfg => self.tdc = merge(self.tdc, val, mask & 0x0303_7F3F),
            C1TBC => {
                let cur = self.tbc(at);
                self.tbc_base = merge(cur, val, mask);
                self.tbc_at = at;
                if let Some(s) = self.tbc_stop.as_mut() {
                    *s = at;
                }
                self.schedule_tbc_wrap(at);
            }
            C1TSCON => {
                let cur = self.tbc(at);
                let was = self.tscon & TSCON_TBCEN != 0;
                self.tscon = merge(self.tscon, val, mask & 0x0007_03FF);
                let now_on = self.tscon & TSCON_TBCEN != 0;
                self.tbc_base = if now_on && was { cur } else { 0 };
                self.tbc_at = at;
                if let Some(s) = self.tbc_stop.as_mut() {
                    *s = at;
                }
                self.schedule_tbc_wrap(at);
            }
            C1INT => {
                self.int_en = merge(self.int_en, val, mask & 0xFFFF_0000);
                let clear = mask & INT_CLEARABLE & !val;
                self.int_flags &= !clear;
            }
            C1TXREQ => {
                for m in 0..32 {
                    if mask & val & (1 << m) != 0 {
                        self.set_txreq(m, at);
                    }
                }
            }
            C1BDIAG1 => self.bdiag1 = merge(self.bdiag1, val, mask),
            C1TEFCON => {
                let writable = 0x0F | if cfg { TEFCON_TEFTSEN | (0x1F << FIFOCON_FSIZE_SHIFT) } else { 0 };
                self.tef.con = merge(self.tef.con, val, mask & writable);
                if mask & 0xFF00 != 0 {
                    if val & TEFCON_FRESET != 0 {
                        self.tef.reset();
                    }
                    if val & TEFCON_UINC != 0 && self.tef.count > 0 && !cfg {
                        self.tef.tail = (self.tef.tail + 1) % self.tef.depth();
                        self.tef.count -= 1;
                    }
                }
                if cfg {
                    self.layout();
                }
            }
            C1TEFSTA => {
                let clear = mask & TEFSTA_TEFOVIF & !val;
                self.tef.sta &= !clear;
            }
            0x050..=0x1CF => {
                let m = usize::from((a - 0x050) / 12);
                match (a - 0x050) % 12 {
                    0 => self.write_fifocon(m, val, mask, at),
                    4 => {
                        let clr = FIFOSTA_RXOVIF | FIFOSTA_TXATIF | FIFOSTA_TXERR | FIFOSTA_TXLARB | FIFOSTA_TXABT;
                        self.fifos[m].sta &= !(mask & clr & !val);
                    }
                    _ => {}
                }
            }
            0x1D0..=0x1EF => {
                let n = usize::from(a - 0x1D0);
                for i in 0..4 {
                    if mask & (0xFF << (8 * i)) != 0 {
                        self.fltcon[n + i] = ((val >> (8 * i)) as u8) & 0x9F;
                    }
                }
            }
            0x1F0..=0x2EF => {
                let n = usize::from((a - 0x1F0) / 8);
                if (a - 0x1F0).is_multiple_of(8) {
                    self.fltobj[n] = merge(self.fltobj[n], val, mask & 0x7FFF_FFFF);
                } else {
                    self.mask[n] = merge(self.mask[n], val, mask & 0x7FFF_FFFF);
                }
            }
            0x400..=0xBFF => {
                let off = usize::from(a - 0x400);
                let w = merge(self.ram_word(off), val, mask);
                self.set_ram_word(off, w);
            }
            OSC => {
                if self.osc_write_wakes(val, mask, at) {
                    return;
                }
                let before = self.osc;
                let clk = self.sysclk_hz();
                self.rebase_tbc(at);
                self.osc =
                    merge(self.osc, val, mask & (OSC_PLLEN | OSC_OSCDIS | OSC_LPMEN | OSC_SCLKDIV | OSC_CLKODIV_MASK));
                if self.osc & OSC_PLLEN != 0 && before & OSC_PLLEN == 0 {
                    self.pll_ready_at = at.add_ns(self.cfg.pll_lock_ns);
                }
                if self.sysclk_hz() != clk {
                    self.schedule_tbc_wrap(at);
                }
            }
            IOCON => {
                let w = IOCON_TRIS0 | IOCON_TRIS1 | IOCON_XSTBYEN | IOCON_LAT0 | IOCON_LAT1 | IOCON_PM0 | IOCON_PM1;
                self.iocon = merge(self.iocon, val, mask & (w | IOCON_TXCANOD | IOCON_SOF | IOCON_INTOD));
            }
            CRC => {
                self.crc = merge(self.crc, val, mask & (CRC_CRCERRIE | CRC_FERRIE));
                self.crc &= !(mask & (CRC_CRCERRIF | CRC_FERRIF) & !val);
            }
            ECCCON => self.ecccon = merge(self.ecccon, val, mask & 0x7F07),
            ECCSTAT => self.eccstat &= !(mask & (ECCSTAT_SECIF | ECCSTAT_DEDIF) & !val),
            _ => {}
        }
    }

    pub(super) fn write_fifocon(&mut self, m: usize, val: u32, mask: u32, at: Instant) {
        let cfg = self.is_config();
        let mut writable = 0x1F | (0x7F << FIFOCON_TXPRI_SHIFT);
        if cfg {
            writable |= FIFOCON_RXTSEN | FIFOCON_RTREN | FIFOCON_TXEN | (0xFF << FIFOCON_FSIZE_SHIFT);
        }
        let f = &mut self.fifos[m];
        f.con = merge(f.con, val, mask & writable);
        if m == 0 {
            f.con |= FIFOCON_TXEN;
            f.con &= !(FIFOCON_RXTSEN | FIFOCON_RTREN);
        }
        self.refresh_ie_fifos();
        if cfg {
            self.layout();
        }
        if mask & 0xFF00 == 0 {
            return;
        }
        if val & FIFOCON_FRESET != 0 {
            self.fifos[m].reset();
        }
        if val & FIFOCON_UINC != 0 && !cfg {
            self.uinc(m, at);
        }
        if val & FIFOCON_TXREQ != 0 {
            self.set_txreq(m, at);
        } else if self.fifos[m].txreq {
            self.fifos[m].txreq = false;
            self.fifos[m].sta |= FIFOSTA_TXABT;
        }
    }

    pub(super) fn uinc(&mut self, m: usize, at: Instant) {
        let delay = self.cfg.tx_start_delay_ns;
        let f = &mut self.fifos[m];
        if f.is_tx() {
            if m == 0 {
                if f.pending & (1 << f.head) != 0 {
                    return;
                }
                f.pending |= 1 << f.head;
            } else if f.full() {
                return;
            }
            if f.count == 0 {
                f.ready_at = at.add_ns(delay);
            }
            f.head = (f.head + 1) % f.depth();
            f.count += 1;
            if f.txreq {
                self.kick(at);
            }
        } else if f.count > 0 {
            f.tail = (f.tail + 1) % f.depth();
            f.count -= 1;
        }
    }

    pub(super) fn set_txreq(&mut self, m: usize, at: Instant) {
        if self.is_config() || !self.fifo_enabled_for_tx(m) {
            return;
        }
        let delay = self.cfg.tx_start_delay_ns;
        let f = &mut self.fifos[m];
        if !f.txreq {
            f.txreq = true;
            f.ready_at = f.ready_at.max(at.add_ns(delay));
        }
        if f.count == 0 {
            f.txreq = false;
            return;
        }
        self.kick(at);
    }
}
