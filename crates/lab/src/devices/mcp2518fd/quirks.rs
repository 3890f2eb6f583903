//! What the host reads over SPI where the silicon departs from its
//! registers: the FIFOCI erratum ([`Errata::fifoci`]), the READ_CRC of
//! C1TBC ([`Errata::tbc_read_crc`]), the SPI clock limit
//! ([`Errata::spi_clock_limit`]) and the ECC check of RAM reads (see
//! `ecc`). The registers themselves (and the backdoor's `peek`) stay true.
//!
//! - **FIFOCI** (errata sheet DS80000789 item 6; kernel mcp251xfd-rx.c
//!   "workaround broken RX FIFO head index erratum" and the TEF one in
//!   mcp251xfd-tef.c): shortly after the controller stored a frame into an
//!   RX FIFO, FIFOSTA.FIFOCI of that FIFO reads one too large (head + 1 mod
//!   depth) unless the FIFO is full; shortly after a TX FIFO completed a
//!   message its FIFOCI reads tail + 1. "Shortly" is
//!   [`Mcp2518fdConfig::fifoci_window_ns`]. The flags and FIFOUA are right.
//! - **READ_CRC of C1TBC** (kernel mcp251xfd-regmap.c: "if the lowest byte
//!   ... is 0x00 or 0x80 the calculated CRC doesn't always match ... If the
//!   highest bit in the lowest byte is flipped the transferred CRC
//!   matches"): byte 0 of C1TBC goes out with bit 7 flipped when its true
//!   value & 0xF8 is 0x00 or 0x80; the CRC sent covers the true byte.
//! - **SPI clock** (errata sheet: F_SCK ≤ 0.85 × SYSCLK / 2; the kernel sets
//!   `max_speed_hz` to freq × 85 / 100 / 2): above it the device samples
//!   late. Every byte after the 2-byte command slips by one bit, both
//!   ways: the host reads each MISO byte shifted right by one with the
//!   previous byte's LSB as its MSB, and each MOSI byte lands the same way.
//!   SYSCLK is the crystal, × 10 once the PLL is ready, / 2 with SCLKDIV.
//!
//! [`Errata::fifoci`]: super::Errata::fifoci
//! [`Errata::tbc_read_crc`]: super::Errata::tbc_read_crc
//! [`Errata::spi_clock_limit`]: super::Errata::spi_clock_limit
//! [`Mcp2518fdConfig::fifoci_window_ns`]: super::Mcp2518fdConfig::fifoci_window_ns

use super::core::Core;
use super::regs::*;
use wirespeed_time::Instant;

/// Whether byte 0 of C1TBC with value `v` goes out flipped in a READ_CRC.
pub(super) fn tbc_byte_flips(v: u8) -> bool {
    matches!(v & 0xF8, 0x00 | 0x80)
}

/// The byte the far side samples one bit late: `cur` shifted right, the
/// previous byte's LSB in front.
pub(super) fn slip(prev: u8, cur: u8) -> u8 {
    (prev << 7) | (cur >> 1)
}

impl Core {
    /// SYSCLK as the SPI limit sees it.
    fn spi_sysclk_hz(&self, at: Instant) -> u64 {
        let mut f = self.cfg.osc_hz;
        if self.osc & OSC_PLLEN != 0 && self.osc_ready(at) && at >= self.pll_ready_at {
            f *= 10;
        }
        if self.osc & OSC_SCLKDIV != 0 {
            f /= 2;
        }
        f
    }

    /// Whether the SCLK the controller reported is above the device's limit.
    pub(super) fn spi_too_fast(&self, at: Instant) -> bool {
        self.errata.spi_clock_limit
            && self.sclk_hz != 0
            && u128::from(self.sclk_hz) * 200 > u128::from(self.spi_sysclk_hz(at)) * 85
    }

    /// A data byte the host reads at `addr`, as the silicon answers it.
    pub(super) fn host_read_byte(&mut self, addr: u16, at: Instant) -> u8 {
        let lane = 8 * u32::from(addr & 3);
        if (RAM_START..RAM_START + RAM_SIZE as u16).contains(&addr) {
            let off = usize::from((addr & !3) - RAM_START);
            if self.spi.ecc_word != Some(off) {
                self.spi.ecc_word = Some(off);
                let (w, changed) = self.ram_host_read(off);
                self.spi.ecc_data = w;
                self.spi.flags_changed |= changed;
            }
            return (self.spi.ecc_data >> lane) as u8;
        }
        if (0x050..0x1D0).contains(&addr) && (addr - 0x050) % 12 == 5 {
            let m = usize::from((addr - 0x050) / 12);
            if let Some(ci) = self.fifoci_lie(m, at) {
                // Bits 15:13 read 0: the byte is FIFOCI alone.
                return ci;
            }
        }
        self.read_byte(addr, at)
    }

    /// The FIFOCI a read of FIFO `m`'s FIFOSTA at `at` sees, if it lies.
    fn fifoci_lie(&mut self, m: usize, at: Instant) -> Option<u8> {
        if !self.errata.fifoci {
            return None;
        }
        let f = &self.fifos[m];
        let moved = f.moved_at?;
        if at < moved || at.ns_since(moved) >= self.cfg.fifoci_window_ns {
            return None;
        }
        if !f.is_tx() && f.full() {
            return None;
        }
        let ci = (self.fifoci(m) + 1) % f.depth();
        self.hits.fifoci += 1;
        Some(ci)
    }
}
