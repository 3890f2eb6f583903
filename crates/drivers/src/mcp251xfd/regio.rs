//! Register access on the SPI wire: the 4-bit instruction + 12-bit address
//! command, 32-bit little-endian values, and the CRC-protected forms
//! (READ_CRC / WRITE_CRC: a length byte after the command, a CRC-16 after
//! the data; the length counts bytes for registers and SFRs, 32-bit words
//! for message RAM; WRITE_SAFE: one data byte and a CRC-16, written by the
//! device only if the CRC matches).
//!
//! [`RegIo`] is the configuration path. Whole 32-bit registers go through
//! the stack's [`Regmap`] (MCP251xFD format, plain or CRC, no cache: the
//! driver reads status registers it must see fresh and writes each
//! configuration register once), over a bus that clocks every transfer at
//! the driver's SPI clock limit (see [`Workarounds::spi_clock`](super::Workarounds::spi_clock)).
//! Single-byte writes (REQOP, FLTCON bytes, write-0-to-clear flags) and RAM
//! bursts use one SPI transfer: a byte write must not touch the other bytes
//! of its register, whose action bits a 32-bit write would trigger (the
//! Linux driver special-cases the same accesses). With CRC and
//! [`Workarounds::write_safe`](super::Workarounds::write_safe), a one-byte
//! write is a WRITE_SAFE, checked through CRC.CRCERRIF and repeated if the
//! device refused it (only idempotent bytes go this way: the UINC/TXREQ
//! bytes of the hot path are never repeated blindly, see `irq.rs`).
//! A READ_CRC of C1TBC applies the TBC erratum workaround
//! ([`Workarounds::tbc_crc`](super::Workarounds::tbc_crc)).
//! The encoders ([`encode_read`], [`encode_write`], [`encode_write_safe`],
//! [`check_read`]) are shared with the prepared messages of the hot path;
//! the framing itself is the stack's regmap format
//! (`wirespeed::regmap::format::Mcp251xfd`), WRITE_SAFE (which that format
//! does not have) is framed here with the same CRC-16.

use super::error::Error;
use super::regs::*;
use wirespeed::regmap::format::{crc16_cms, Format, Mcp251xfd as Mcp251xfdFormat, Op};
use wirespeed::regmap::{BusError, CacheType, Regmap, RegmapBus, RegmapConfig, RegmapError};
use wirespeed::spi::{SpiDevice, SpiError, Transfer};

/// Largest data part of one [`RegIo`] access, in bytes (the whole message
/// RAM). With CRC the length byte limits it further: 255 words (1020
/// bytes) in RAM, 252 bytes of registers.
pub const MAX_ACCESS: usize = RAM_SIZE as usize;

/// Bytes of a WRITE_SAFE of one register byte: command, data, CRC.
pub const WRITE_SAFE_LEN: usize = 5;

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

/// Largest data part of one access at `addr`.
pub fn max_access(addr: u16, crc: bool) -> usize {
    match (crc, in_ram(addr)) {
        (false, _) => MAX_ACCESS,
        (true, true) => 1020,
        (true, false) => 252,
    }
}

/// A WRITE_SAFE of byte `val` at register address `addr` (not RAM, where
/// WRITE_SAFE takes a whole word): command, data, CRC-16 over both.
pub fn encode_write_safe(addr: u16, val: u8) -> [u8; WRITE_SAFE_LEN] {
    let c = cmd(INSTR_WRITE_SAFE, addr);
    let crc = crc16_cms(&[&c, &[val]]).to_be_bytes();
    [c[0], c[1], val, crc[0], crc[1]]
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

/// The register map's bus: every transfer at the driver's clock (`hz`,
/// 0 = the device's own), one message per call.
struct ClockedBus {
    dev: SpiDevice,
    hz: u32,
}

/// Runs the non-empty `segments` as writes (CS held), then `rx` if given,
/// at `hz`, without allocating for up to four segments.
fn gather(dev: &SpiDevice, hz: u32, segments: &[&[u8]], rx: Option<&mut [u8]>) -> Result<(), SpiError> {
    let mut segs: [&[u8]; 4] = [&[]; 4];
    let mut n = 0;
    for s in segments.iter().filter(|s| !s.is_empty()) {
        if n == segs.len() {
            // More pieces than the regmap ever hands over: allocate.
            let mut v: Vec<Transfer<'_>> =
                segments.iter().filter(|s| !s.is_empty()).map(|s| Transfer::write(s).speed_hz(hz)).collect();
            if let Some(rx) = rx {
                v.push(Transfer::read(rx).speed_hz(hz));
            }
            return dev.sync(&mut v);
        }
        segs[n] = s;
        n += 1;
    }
    fn w(s: &[u8], hz: u32) -> Transfer<'_> {
        Transfer::write(s).speed_hz(hz)
    }
    match (n, rx) {
        (0, None) => Ok(()),
        (1, None) => dev.sync(&mut [w(segs[0], hz)]),
        (2, None) => dev.sync(&mut [w(segs[0], hz), w(segs[1], hz)]),
        (3, None) => dev.sync(&mut [w(segs[0], hz), w(segs[1], hz), w(segs[2], hz)]),
        (_, None) => dev.sync(&mut [w(segs[0], hz), w(segs[1], hz), w(segs[2], hz), w(segs[3], hz)]),
        (0, Some(rx)) => dev.sync(&mut [Transfer::read(rx).speed_hz(hz)]),
        (1, Some(rx)) => dev.sync(&mut [w(segs[0], hz), Transfer::read(rx).speed_hz(hz)]),
        (2, Some(rx)) => dev.sync(&mut [w(segs[0], hz), w(segs[1], hz), Transfer::read(rx).speed_hz(hz)]),
        (3, Some(rx)) => {
            dev.sync(&mut [w(segs[0], hz), w(segs[1], hz), w(segs[2], hz), Transfer::read(rx).speed_hz(hz)])
        }
        (_, Some(rx)) => dev.sync(&mut [
            w(segs[0], hz),
            w(segs[1], hz),
            w(segs[2], hz),
            w(segs[3], hz),
            Transfer::read(rx).speed_hz(hz),
        ]),
    }
}

impl RegmapBus for ClockedBus {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        gather(&self.dev, self.hz, segments, None).map_err(BusError::Spi)
    }

    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        gather(&self.dev, self.hz, tx, Some(rx)).map_err(BusError::Spi)
    }
}

/// Register access for the configuration path.
#[derive(Debug)]
pub struct RegIo {
    pub(crate) dev: SpiDevice,
    map: Regmap,
    pub(crate) crc: bool,
    /// One-byte writes as WRITE_SAFE (with `crc`).
    pub(crate) write_safe: bool,
    /// The C1TBC READ_CRC workaround.
    pub(crate) tbc_crc: bool,
    /// Clock of every transfer (0: the device's).
    pub(crate) speed_hz: u32,
    /// Attempts of a CRC-protected access before its error is returned.
    pub(crate) attempts: u32,
    pub(crate) crc_errors: u64,
    /// TBC reads the erratum workaround made good.
    pub(crate) tbc_fixed: u64,
    /// WRITE_SAFE writes the device refused and that were repeated.
    pub(crate) safe_retries: u64,
    /// CRC.CRCERRIF / FERRIF was found set (and cleared) here: a write of
    /// the hot path may have been refused too, so the driver checks.
    pub(crate) crc_flag_seen: bool,
    /// Transfer buffer (commands + the largest access + CRCs), allocated once.
    scratch: Vec<u8>,
}

impl RegIo {
    pub(crate) fn with_options(
        dev: SpiDevice,
        crc: bool,
        write_safe: bool,
        tbc_crc: bool,
        speed_hz: u32,
    ) -> Result<RegIo, Error> {
        let format = if crc { Mcp251xfdFormat::crc() } else { Mcp251xfdFormat::plain() };
        let mut config = RegmapConfig::new(format, 0xFFC);
        config.reg_stride = 4;
        config.cache = CacheType::None;
        let bus = ClockedBus { dev: dev.clone(), hz: speed_hz };
        let map = Regmap::new(config, bus).map_err(|e| Error::InvalidConfig {
            what: "register map",
            value: e.to_string(),
            allowed: "a valid MCP251xFD map",
        })?;
        Ok(RegIo {
            dev,
            map,
            crc,
            write_safe,
            tbc_crc,
            speed_hz,
            attempts: 3,
            crc_errors: 0,
            tbc_fixed: 0,
            safe_retries: 0,
            crc_flag_seen: false,
            scratch: vec![0; MAX_ACCESS + 64],
        })
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

    fn send(&self, buf: &[u8]) -> Result<(), SpiError> {
        self.dev.sync(&mut [Transfer::write(buf).speed_hz(self.speed_hz)])
    }

    /// The RESET instruction.
    pub fn reset(&mut self) -> Result<(), Error> {
        self.send(&cmd(INSTR_RESET, 0)).map_err(Error::Spi)
    }

    /// Reads `out.len()` bytes from `addr` (with CRC, failed replies are
    /// retried; a C1TBC reply gets the TBC erratum check).
    pub fn read_bytes(&mut self, addr: u16, out: &mut [u8]) -> Result<(), Error> {
        let n = out.len();
        let max = max_access(addr, self.crc);
        if n == 0 || n > max || (self.crc && in_ram(addr) && !n.is_multiple_of(4)) {
            return Err(Error::AccessSize { addr, len: n, max });
        }
        let (h, t) = overhead(self.crc);
        let mut tries = 0;
        loop {
            let buf = &mut self.scratch[..h + n + t];
            encode_read(buf, addr, n, self.crc);
            self.dev.sync(&mut [Transfer::in_place(buf).speed_hz(self.speed_hz)]).map_err(Error::Spi)?;
            let e = match check_read(buf, addr, self.crc) {
                Ok(d) => {
                    out.copy_from_slice(d);
                    return Ok(());
                }
                Err(e) => e,
            };
            if self.tbc_crc && addr == C1TBC && n == 4 && matches!(buf[h] & 0xF8, 0x00 | 0x80) {
                // TBC erratum (Linux mcp251xfd-regmap.c): the CRC the chip
                // sends fits the value with bit 7 of its first byte flipped,
                // and that flipped value is the right one.
                buf[h] ^= 0x80;
                if let Ok(d) = check_read(buf, addr, self.crc) {
                    out.copy_from_slice(d);
                    self.tbc_fixed += 1;
                    return Ok(());
                }
            }
            self.crc_errors += 1;
            tries += 1;
            if tries >= self.attempts {
                return Err(e);
            }
        }
    }

    /// Writes `data` at `addr` (with CRC, the device's CRC flag is checked
    /// afterwards).
    pub fn write_bytes(&mut self, addr: u16, data: &[u8]) -> Result<(), Error> {
        let n = data.len();
        let max = max_access(addr, self.crc);
        if n == 0 || n > max || (self.crc && in_ram(addr) && !n.is_multiple_of(4)) {
            return Err(Error::AccessSize { addr, len: n, max });
        }
        if n == 1 && self.crc && self.write_safe {
            return self.write_safe_checked(addr, data[0]);
        }
        let (h, t) = overhead(self.crc);
        let buf = &mut self.scratch[..h + n + t];
        encode_write(buf, addr, data, self.crc);
        self.dev.sync(&mut [Transfer::write(buf).speed_hz(self.speed_hz)]).map_err(Error::Spi)?;
        if self.crc {
            // The device flags a bad CRC in CRC.CRCERRIF (the write already
            // happened: WRITE_CRC writes as bytes arrive). Check and clear.
            self.check_write_crc(addr)?;
        }
        Ok(())
    }

    /// Reads one 32-bit register (through the register map; CRC replies
    /// that fail are retried; C1TBC with CRC goes through [`read_bytes`](RegIo::read_bytes)
    /// for the TBC erratum check).
    pub fn read(&mut self, addr: u16) -> Result<u32, Error> {
        if self.crc && addr == C1TBC {
            let mut b = [0u8; 4];
            self.read_bytes(addr, &mut b)?;
            return Ok(u32::from_le_bytes(b));
        }
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
        self.write_unchecked(addr, val)?;
        if self.crc && addr != CRC {
            self.check_write_crc(addr)?;
        }
        Ok(())
    }

    /// Writes one 32-bit register without checking the device's CRC flag.
    pub(crate) fn write_unchecked(&mut self, addr: u16, val: u32) -> Result<(), Error> {
        if let Err(e) = self.map.write(u32::from(addr), val) {
            return Err(self.map_err(addr, e));
        }
        Ok(())
    }

    /// Reads CRC; if a flag is set, clears it and returns the register.
    pub(crate) fn take_crc_flags(&mut self) -> Result<Option<u32>, Error> {
        let c = self.read(CRC)?;
        if c & (CRC_CRCERRIF | CRC_FERRIF) == 0 {
            return Ok(None);
        }
        self.crc_errors += 1;
        self.crc_flag_seen = true;
        self.clear_crc_flags()?;
        Ok(Some(c))
    }

    /// Clears CRC.CRCERRIF and FERRIF (byte 2 of CRC = 0; the enables in
    /// byte 3 and the read-only CRC value are not touched).
    pub(crate) fn clear_crc_flags(&mut self) -> Result<(), Error> {
        self.write_byte_raw(CRC + 2, 0)
    }

    fn check_write_crc(&mut self, addr: u16) -> Result<(), Error> {
        match self.take_crc_flags()? {
            Some(c) => Err(Error::WriteCrc { addr, crc_register: c }),
            None => Ok(()),
        }
    }

    /// One register byte, unchecked: WRITE_SAFE with CRC and `write_safe`,
    /// else WRITE_CRC or WRITE.
    pub(crate) fn write_byte_raw(&mut self, addr: u16, val: u8) -> Result<(), Error> {
        if self.crc && self.write_safe {
            return self.send(&encode_write_safe(addr, val)).map_err(Error::Spi);
        }
        let (h, t) = overhead(self.crc);
        let buf = &mut self.scratch[..h + 1 + t];
        encode_write(buf, addr, &[val], self.crc);
        self.dev.sync(&mut [Transfer::write(buf).speed_hz(self.speed_hz)]).map_err(Error::Spi)
    }

    /// A WRITE_SAFE, then CRC.CRCERRIF: a refused write (nothing written)
    /// is cleared and sent again, up to `attempts` times. Only for bytes
    /// whose repetition is harmless (not UINC).
    fn write_safe_checked(&mut self, addr: u16, val: u8) -> Result<(), Error> {
        let mut tries = 0;
        loop {
            self.send(&encode_write_safe(addr, val)).map_err(Error::Spi)?;
            let Some(c) = self.take_crc_flags()? else { return Ok(()) };
            tries += 1;
            if tries >= self.attempts {
                return Err(Error::WriteCrc { addr, crc_register: c });
            }
            self.safe_retries += 1;
        }
    }

    /// Writes one byte of a register (action bits such as REQOP, flag
    /// clears). With CRC and `write_safe`: a checked WRITE_SAFE.
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

    /// Reads `out.len()` bytes of message RAM from `addr` in as few
    /// accesses as the format allows (whole words).
    pub(crate) fn read_ram(&mut self, addr: u16, out: &mut [u8]) -> Result<(), Error> {
        let max = max_access(addr, self.crc) & !3;
        let mut off = 0;
        while off < out.len() {
            let n = (out.len() - off).min(max);
            self.read_bytes(addr + off as u16, &mut out[off..off + n])?;
            off += n;
        }
        Ok(())
    }

    /// Reads several RAM ranges — `(address, buffer)`, each within one
    /// access ([`max_access`], whole words) — in one SPI message, one chip
    /// select window each, in the order given. With CRC, a bad reply
    /// repeats the whole message.
    pub(crate) fn read_parts(&mut self, parts: &mut [(u16, &mut [u8])]) -> Result<(), Error> {
        const MAX_PARTS: usize = 6;
        let (h, t) = overhead(self.crc);
        let mut total = 0;
        for (addr, out) in parts.iter() {
            let n = out.len();
            let max = max_access(*addr, self.crc);
            if n == 0 || n > max || !n.is_multiple_of(4) || !in_ram(*addr) {
                return Err(Error::AccessSize { addr: *addr, len: n, max });
            }
            total += h + n + t;
        }
        if parts.is_empty() || parts.len() > MAX_PARTS || total > self.scratch.len() {
            return Err(Error::AccessSize {
                addr: parts.first().map_or(0, |p| p.0),
                len: total,
                max: self.scratch.len(),
            });
        }
        let mut tries = 0;
        loop {
            let mut rest: &mut [u8] = &mut self.scratch[..total];
            let mut bufs: [&mut [u8]; MAX_PARTS] = Default::default();
            for (i, (addr, out)) in parts.iter().enumerate() {
                let (b, r) = rest.split_at_mut(h + out.len() + t);
                encode_read(b, *addr, out.len(), self.crc);
                bufs[i] = b;
                rest = r;
            }
            let n = parts.len();
            let hz = self.speed_hz;
            let res = {
                let mut xfers: [Transfer<'_>; MAX_PARTS] = std::array::from_fn(|_| Transfer::write(&[]));
                for (i, b) in bufs.iter_mut().take(n).enumerate() {
                    let tr = Transfer::in_place(b).speed_hz(hz);
                    // No cs_change delay, as the hot path's (`hot::chain`).
                    xfers[i] = if i + 1 < n { tr.cs_change(Some(0)) } else { tr };
                }
                self.dev.sync(&mut xfers[..n])
            };
            res.map_err(Error::Spi)?;
            let mut bad = None;
            for (i, (addr, out)) in parts.iter_mut().enumerate() {
                match check_read(bufs[i], *addr, self.crc) {
                    Ok(d) => out.copy_from_slice(d),
                    Err(e) => {
                        bad = Some(e);
                        break;
                    }
                }
            }
            let Some(e) = bad else { return Ok(()) };
            self.crc_errors += 1;
            tries += 1;
            if tries >= self.attempts {
                return Err(e);
            }
        }
    }

    /// Writes `data` to message RAM at `addr` in as few accesses as the
    /// format allows.
    pub(crate) fn write_ram(&mut self, addr: u16, data: &[u8]) -> Result<(), Error> {
        let max = max_access(addr, self.crc) & !3;
        let mut off = 0;
        while off < data.len() {
            let n = (data.len() - off).min(max);
            self.write_bytes(addr + off as u16, &data[off..off + n])?;
            off += n;
        }
        Ok(())
    }
}
