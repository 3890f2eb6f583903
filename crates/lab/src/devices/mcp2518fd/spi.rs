//! The SPI face: instruction decoding, byte by byte, as the bits shift.
//!
//! Every access is CS low, a 16-bit command (4-bit instruction, 12-bit
//! address, MSB first), then data; the address increments after each data
//! byte. READ_CRC / WRITE_CRC add a length byte N after the command (N bytes
//! for SFRs and registers, N 32-bit words for RAM) and a CRC-16 after the
//! data; WRITE_SAFE sends one byte (registers, SFRs) or one word (RAM) and a
//! CRC, and writes only if the CRC matches. The device's CRC covers the
//! command bytes, the length byte (if any) and the data.
//!
//! - READ / READ_CRC: each data byte is read at the instant its first bit
//!   shifts, so the value is the register's state at that instant.
//! - WRITE / WRITE_CRC: each byte takes effect when received (a WRITE_CRC
//!   with a bad CRC has already written; it sets `CRC.CRCERRIF`).
//! - A CRC access whose byte count does not match N sets `CRC.FERRIF` when
//!   CS rises. RESET (two zero bytes) resets the device when CS rises
//!   (unless asleep, see `sleep`).
//! - What the host reads departs from the registers where the silicon
//!   does (see `quirks`): FIFOCI, the READ_CRC of C1TBC, ECC, and every
//!   data byte when SCLK is above the device's limit.

use super::core::Core;
use super::crc16::crc16_update;
use super::quirks::{slip, tbc_byte_flips};
use super::regs::*;
use wirespeed_time::Instant;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Idle,
    Cmd1,
    Len,
    Data,
    Crc,
    Ignore,
}

/// The decoder's state within one CS assertion.
#[derive(Clone, Debug, Default)]
pub(super) struct SpiState {
    phase: Phase,
    bytes: usize,
    instr: u8,
    cmd0: u8,
    addr: u16,
    crc: u16,
    len: usize,
    done: usize,
    crc_in: [u8; 2],
    crc_n: usize,
    extra: usize,
    safe: [u8; 4],
    /// The RAM word (offset) whose ECC this access checked last, and what
    /// the host sees of it.
    pub(super) ecc_word: Option<usize>,
    pub(super) ecc_data: u32,
    /// A read changed a flag (ECCSTAT): the pins need updating.
    pub(super) flags_changed: bool,
    /// A byte of this access wrote a register or raised a CRC flag since
    /// the pins were last updated (a command byte, a read or a RAM write
    /// changes nothing they show).
    pins_stale: bool,
    /// The previous byte on each wire (for a late-sampling slip).
    prev_mosi: u8,
    prev_miso: u8,
    /// This access was corrupted by a too-fast SCLK (counted once).
    slipped: bool,
}

fn in_ram(addr: u16) -> bool {
    (RAM_START..RAM_START + RAM_SIZE as u16).contains(&addr)
}

impl SpiState {
    pub fn select(&mut self) {
        *self = SpiState { phase: Phase::Cmd1, ..SpiState::default() };
    }

    /// Whether the bytes since the last call may have changed what the
    /// pins show; the pins are then brought up to date by the caller.
    pub fn take_pins_stale(&mut self) -> bool {
        let stale = self.pins_stale || self.flags_changed;
        self.pins_stale = false;
        self.flags_changed = false;
        stale
    }

    /// CS went low while the device slept in Low-Power Mode: the access
    /// only wakes it (see `sleep`).
    pub fn lost(&mut self) {
        *self = SpiState { phase: Phase::Ignore, ..SpiState::default() };
    }

    /// CS went high at `at`: finish the access.
    pub fn deselect(core: &mut Core, at: Instant) {
        let mut s = std::mem::take(&mut core.spi);
        // Each byte's changes reached the pins as it shifted (`exchange`):
        // only what this edge does can move them now.
        let stale = s.take_pins_stale();
        let moved = match s.instr {
            // Asleep, the instruction is ignored (and counted).
            INSTR_RESET if s.bytes == 2 && s.phase != Phase::Ignore && !core.reset_ignored() => {
                core.reset(at);
                true
            }
            INSTR_READ_CRC | INSTR_WRITE_CRC | INSTR_WRITE_SAFE if s.bytes >= 2 => {
                let complete = matches!(s.phase, Phase::Crc) && s.crc_n == 2 && s.extra == 0;
                if !complete {
                    core.format_error();
                }
                !complete || stale
            }
            _ => stale,
        };
        if moved {
            core.update_pins(at);
        }
    }

    /// One byte shifted at `at`; returns MISO as the host samples it.
    pub fn byte(core: &mut Core, mosi_wire: u8, at: Instant) -> u8 {
        let data = core.spi.bytes >= 2;
        let late = data && core.spi_too_fast(at);
        let mosi_in = if late { slip(core.spi.prev_mosi, mosi_wire) } else { mosi_wire };
        let miso = Self::decode(core, mosi_in, at);
        let s = &mut core.spi;
        let out = if late { slip(s.prev_miso, miso) } else { miso };
        if late && !s.slipped {
            s.slipped = true;
            core.hits.spi_clock += 1;
        }
        let s = &mut core.spi;
        s.prev_mosi = mosi_wire;
        s.prev_miso = miso;
        out
    }

    /// One byte as the device received it; returns what it drives on MISO.
    fn decode(core: &mut Core, mosi_in: u8, at: Instant) -> u8 {
        let mut mosi = mosi_in;
        let s = &mut core.spi;
        if s.bytes >= 2 && core.flip_mosi.0 > 0 {
            core.flip_mosi.0 -= 1;
            mosi ^= core.flip_mosi.1;
        }
        let s = &mut core.spi;
        s.bytes += 1;
        match s.phase {
            Phase::Idle | Phase::Ignore => 0,
            Phase::Cmd1 if s.bytes == 1 => {
                s.cmd0 = mosi;
                s.instr = mosi >> 4;
                0
            }
            Phase::Cmd1 => {
                s.addr = (u16::from(s.cmd0 & 0xF) << 8) | u16::from(mosi);
                s.crc = crc16_update(0xFFFF, &[s.cmd0, mosi]);
                s.phase = match s.instr {
                    INSTR_RESET => Phase::Idle,
                    INSTR_READ | INSTR_WRITE => Phase::Data,
                    INSTR_READ_CRC | INSTR_WRITE_CRC => Phase::Len,
                    INSTR_WRITE_SAFE => {
                        s.len = if in_ram(s.addr) { 4 } else { 1 };
                        Phase::Data
                    }
                    _ => Phase::Ignore,
                };
                if s.instr == INSTR_RESET && s.addr != 0 {
                    s.phase = Phase::Ignore;
                }
                0
            }
            Phase::Len => {
                s.crc = crc16_update(s.crc, &[mosi]);
                let n = usize::from(mosi);
                s.len = if in_ram(s.addr) { 4 * n } else { n };
                s.phase = if s.len == 0 { Phase::Crc } else { Phase::Data };
                0
            }
            Phase::Data => Self::data(core, mosi, at),
            Phase::Crc => {
                let s = &mut core.spi;
                if s.crc_n >= 2 {
                    s.extra += 1;
                    return 0;
                }
                let out = if s.crc_n == 0 { (s.crc >> 8) as u8 } else { s.crc as u8 };
                s.crc_in[s.crc_n] = mosi;
                s.crc_n += 1;
                if s.crc_n == 2 && s.instr != INSTR_READ_CRC {
                    let got = u16::from_be_bytes(s.crc_in);
                    let want = s.crc;
                    s.pins_stale = true;
                    if got != want {
                        core.crc_error(want);
                    } else if s.instr == INSTR_WRITE_SAFE {
                        let (addr, n, buf) = (s.addr, s.len, s.safe);
                        for (i, b) in buf[..n].iter().enumerate() {
                            core.write_byte(addr.wrapping_add(i as u16) & 0xFFF, *b, at);
                        }
                    }
                    return 0;
                }
                if s.instr == INSTR_READ_CRC {
                    out
                } else {
                    0
                }
            }
        }
    }

    fn data(core: &mut Core, mosi: u8, at: Instant) -> u8 {
        let (instr, addr) = (core.spi.instr, core.spi.addr);
        let next = (addr + 1) & 0xFFF;
        match instr {
            INSTR_READ => {
                core.spi.addr = next;
                let v = core.host_read_byte(addr, at);
                flip_miso(core, v)
            }
            INSTR_WRITE => {
                core.spi.addr = next;
                core.spi.pins_stale |= !in_ram(addr);
                core.write_byte(addr, mosi, at);
                0
            }
            INSTR_READ_CRC => {
                let v = core.host_read_byte(addr, at);
                let s = &mut core.spi;
                s.addr = next;
                s.crc = crc16_update(s.crc, &[v]);
                s.done += 1;
                if s.done == s.len {
                    s.phase = Phase::Crc;
                }
                // The CRC covers the true byte; the wire may not carry it.
                let sent = if addr == C1TBC && core.errata.tbc_read_crc && tbc_byte_flips(v) {
                    core.hits.tbc_read_crc += 1;
                    v ^ 0x80
                } else {
                    v
                };
                flip_miso(core, sent)
            }
            INSTR_WRITE_CRC => {
                core.write_byte(addr, mosi, at);
                let s = &mut core.spi;
                s.pins_stale |= !in_ram(addr);
                s.addr = next;
                s.crc = crc16_update(s.crc, &[mosi]);
                s.done += 1;
                if s.done == s.len {
                    s.phase = Phase::Crc;
                }
                0
            }
            _ => {
                // WRITE_SAFE: buffer until the CRC checks out.
                let s = &mut core.spi;
                s.safe[s.done] = mosi;
                s.crc = crc16_update(s.crc, &[mosi]);
                s.done += 1;
                if s.done == s.len {
                    s.phase = Phase::Crc;
                }
                0
            }
        }
    }
}

fn flip_miso(core: &mut Core, v: u8) -> u8 {
    if core.flip_miso.0 > 0 {
        core.flip_miso.0 -= 1;
        v ^ core.flip_miso.1
    } else {
        v
    }
}
