//! Register access on the SPI wire: the 4-bit instruction + 12-bit address
//! command, 32-bit little-endian values, and the CRC-protected forms
//! (READ_CRC / WRITE_CRC: a length byte after the command, a CRC-16 after
//! the data; the length counts bytes for registers and SFRs, 32-bit words
//! for message RAM).
//!
//! [`RegIo`] is the configuration path. Whole 32-bit registers go through
//! the stack's [`Regmap`] (MCP251xFD format, plain or CRC, no cache: the
//! driver reads status registers it must see fresh and writes each
//! configuration register once). Single-byte writes (REQOP, UINC/TXREQ,
//! FLTCON bytes, write-0-to-clear flags) and RAM bursts use one SPI
//! transfer with a stack buffer: a byte write must not touch the other
//! bytes of its register, whose action bits a 32-bit write would trigger
//! (the Linux driver special-cases the same accesses). The encoders
//! ([`encode_read`], [`encode_write`], [`check_read`]) are shared with the
//! prepared messages of the hot path; the framing itself is the stack's
//! regmap format (`wirespeed::regmap::format::Mcp251xfd`).

use super::error::Error;
use super::regs::*;
use wirespeed::regmap::format::{Format, Mcp251xfd as Mcp251xfdFormat, Op};
use wirespeed::regmap::{CacheType, Regmap, RegmapConfig, RegmapError, SpiBus};
use wirespeed::spi::{SpiDevice, Transfer};

/// Largest data part of one [`RegIo`] access, in bytes.
pub const MAX_ACCESS: usize = 128;

/// The stack's MCP251xFD command format: the one definition of the framing
/// (command word, length byte, CRC) for both the regmap path and the
/// prepared messages of the hot path.
const fn format(crc: bool) -> Mcp251xfdFormat {
    if crc {
        Mcp251xfdFormat::crc()
    } else {
        Mcp251xfdFormat::plain()
    }
}

fn in_ram(addr: u16) -> bool {
    (RAM_START..RAM_START + RAM_SIZE).contains(&addr)
}

/// Extra bytes of an access: command (+ length) before, CRC after, as the
/// format frames them.
pub fn overhead(crc: bool) -> (usize, usize) {
    let f = format(crc);
    (f.header(Op::Read, 0, 0).as_slice().len(), f.trailer_len())
}

/// Writes the header of a read of `n` bytes at `addr` into `buf[..hdr]` and
/// zeros the rest; `buf` is `hdr + n + trailer` long.
pub fn encode_read(buf: &mut [u8], addr: u16, n: usize, crc: bool) {
    buf.fill(0);
    let h = format(crc).header(Op::Read, u32::from(addr), n);
    buf[..h.as_slice().len()].copy_from_slice(h.as_slice());
}

/// Writes a write of `data` at `addr` into `buf` (`hdr + data + trailer` long).
pub fn encode_write(buf: &mut [u8], addr: u16, data: &[u8], crc: bool) {
    let (h, _) = overhead(crc);
    buf[h..h + data.len()].copy_from_slice(data);
    readdress_write(buf, addr, crc);
}

/// Rewrites the address (and CRC) of a write encoded by [`encode_write`].
pub fn readdress_write(buf: &mut [u8], addr: u16, crc: bool) {
    let (h, t) = overhead(crc);
    let n = buf.len() - h - t;
    let hdr = format(crc).header(Op::Write, u32::from(addr), n);
    buf[..h].copy_from_slice(hdr.as_slice());
    reseal_write(buf, crc);
}

/// Recomputes the CRC of an encoded write after its data changed.
pub fn reseal_write(buf: &mut [u8], crc: bool) {
    let (h, t) = overhead(crc);
    if t > 0 {
        let n = buf.len() - t;
        let trailer = format(crc).trailer(&buf[..h], &buf[h..n]);
        buf[n..].copy_from_slice(trailer.as_slice());
    }
}

/// The data of a completed read (checking its CRC if `crc`).
pub fn check_read(buf: &[u8], addr: u16, crc: bool) -> Result<&[u8], Error> {
    let (h, t) = overhead(crc);
    let n = buf.len() - h - t;
    let f = format(crc);
    // What came back in the header's place is not the command: check against
    // the header this read sent.
    let hdr = f.header(Op::Read, u32::from(addr), n);
    f.check_read(u32::from(addr), hdr.as_slice(), &buf[h..h + n], &buf[h + n..]).map_err(|e| regmap_error(addr, e))?;
    Ok(&buf[h..h + n])
}

/// The driver's error for a regmap error at `addr`: a CRC mismatch keeps
/// both CRCs; anything else names the register and says why.
fn regmap_error(addr: u16, e: RegmapError) -> Error {
    match e {
        RegmapError::CrcMismatch { computed, received, .. } => Error::Crc { addr, computed, received },
        e => Error::Register { addr, reason: e.to_string() },
    }
}

/// Register access for the configuration path.
#[derive(Debug)]
pub struct RegIo {
    pub(crate) dev: SpiDevice,
    map: Regmap,
    pub(crate) crc: bool,
    /// Attempts of a CRC-protected access before its error is returned.
    pub(crate) attempts: u32,
    pub(crate) crc_errors: u64,
}

impl RegIo {
    pub(crate) fn new(dev: SpiDevice, crc: bool) -> Result<RegIo, Error> {
        let format = if crc { Mcp251xfdFormat::crc() } else { Mcp251xfdFormat::plain() };
        let mut config = RegmapConfig::new(format, 0xFFC);
        config.reg_stride = 4;
        config.cache = CacheType::None;
        let map = Regmap::new(config, SpiBus::new(dev.clone())).map_err(|e| Error::InvalidConfig {
            what: "register map",
            value: e.to_string(),
            allowed: "a valid MCP251xFD map",
        })?;
        Ok(RegIo { dev, map, crc, attempts: 3, crc_errors: 0 })
    }

    fn map_err(&mut self, addr: u16, e: RegmapError) -> Error {
        match regmap_error(addr, e) {
            e @ Error::Crc { .. } => {
                self.crc_errors += 1;
                e
            }
            e => e,
        }
    }

    /// The RESET instruction.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.dev.write(&cmd(INSTR_RESET, 0)).map_err(Error::Spi)
    }

    /// Reads `out.len()` bytes from `addr`.
    pub fn read_bytes(&mut self, addr: u16, out: &mut [u8]) -> Result<(), Error> {
        let n = out.len();
        if n == 0 || n > MAX_ACCESS || (self.crc && in_ram(addr) && !n.is_multiple_of(4)) {
            return Err(Error::AccessSize { addr, len: n, max: MAX_ACCESS });
        }
        let (h, t) = overhead(self.crc);
        let mut buf = [0u8; MAX_ACCESS + 5];
        let buf = &mut buf[..h + n + t];
        let mut tries = 0;
        loop {
            encode_read(buf, addr, n, self.crc);
            self.dev.sync(&mut [Transfer::in_place(buf)]).map_err(Error::Spi)?;
            match check_read(buf, addr, self.crc) {
                Ok(d) => {
                    out.copy_from_slice(d);
                    return Ok(());
                }
                Err(e) => {
                    self.crc_errors += 1;
                    tries += 1;
                    if tries >= self.attempts {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Writes `data` at `addr`.
    pub fn write_bytes(&mut self, addr: u16, data: &[u8]) -> Result<(), Error> {
        let n = data.len();
        if n == 0 || n > MAX_ACCESS || (self.crc && in_ram(addr) && !n.is_multiple_of(4)) {
            return Err(Error::AccessSize { addr, len: n, max: MAX_ACCESS });
        }
        let (h, t) = overhead(self.crc);
        let mut buf = [0u8; MAX_ACCESS + 5];
        let buf = &mut buf[..h + n + t];
        encode_write(buf, addr, data, self.crc);
        self.dev.write(buf).map_err(Error::Spi)?;
        if self.crc {
            // The device flags a bad CRC in CRC.CRCERRIF (the write already
            // happened: WRITE_CRC writes as bytes arrive). Check and clear.
            self.check_write_crc(addr)?;
        }
        Ok(())
    }

    /// Reads one 32-bit register (through the register map; CRC replies
    /// that fail are retried).
    pub fn read(&mut self, addr: u16) -> Result<u32, Error> {
        let mut tries = 0;
        loop {
            match self.map.read(u32::from(addr)) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    let e = self.map_err(addr, e);
                    tries += 1;
                    if !matches!(e, Error::Crc { .. }) || tries >= self.attempts {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Writes one 32-bit register (through the register map; with CRC, the
    /// device's CRC flag is checked afterwards).
    pub fn write(&mut self, addr: u16, val: u32) -> Result<(), Error> {
        if let Err(e) = self.map.write(u32::from(addr), val) {
            return Err(self.map_err(addr, e));
        }
        if self.crc && addr != CRC {
            self.check_write_crc(addr)?;
        }
        Ok(())
    }

    fn check_write_crc(&mut self, addr: u16) -> Result<(), Error> {
        let c = self.read(CRC)?;
        if c & (CRC_CRCERRIF | CRC_FERRIF) != 0 {
            self.crc_errors += 1;
            let clear = (c & !(CRC_CRCERRIF | CRC_FERRIF)).to_le_bytes();
            let mut b2 = [0u8; 9];
            encode_write(&mut b2, CRC, &clear, true);
            self.dev.write(&b2).map_err(Error::Spi)?;
            return Err(Error::WriteCrc { addr, crc_register: c });
        }
        Ok(())
    }

    /// Writes one byte of a register (action bits such as UINC, REQOP).
    pub fn write_byte(&mut self, addr: u16, val: u8) -> Result<(), Error> {
        if self.crc && in_ram(addr) {
            return Err(Error::AccessSize { addr, len: 1, max: MAX_ACCESS });
        }
        self.write_bytes(addr, &[val])
    }

    /// Read-modify-write of the bits in `mask`.
    pub fn update(&mut self, addr: u16, mask: u32, val: u32) -> Result<(), Error> {
        let old = self.read(addr)?;
        let new = (old & !mask) | (val & mask);
        if new != old {
            self.write(addr, new)?;
        }
        Ok(())
    }
}
