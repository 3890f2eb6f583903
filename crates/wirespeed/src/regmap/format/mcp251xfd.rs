//! The MCP2517FD/MCP2518FD SPI command formats.
//!
//! Every command starts with a big-endian 16-bit word `instr << 12 | addr`
//! (4-bit instruction, 12-bit byte address). Registers are 32 bits,
//! little-endian on the wire, at addresses that are multiples of 4 (use a
//! register stride of 4). The address increments through a burst.
//!
//! The CRC forms (`READ_CRC` = 0b1011, `WRITE_CRC` = 0b1010) add a length
//! byte after the command word and a CRC-16 after the data, sent big-endian.
//! The CRC (poly 0x8005, init 0xFFFF) covers command word, length byte and
//! data. The length counts data **bytes** for SFRs and 32-bit **words** for
//! the message RAM (0x400..0xC00) — as the Linux `mcp251xfd` driver does
//! (`__mcp251xfd_spi_cmd_crc_set_len`: "Number of u32 for RAM access, number
//! of u8 otherwise").

use super::{crc16_cms, DeviceRequest, Endian, Format, Inline, Op};
use crate::regmap::error::RegmapError;

/// First address of the message RAM.
pub const MCP251XFD_RAM_START: u32 = 0x400;
/// Size of the message RAM in bytes.
pub const MCP251XFD_RAM_SIZE: u32 = 2048;

const READ: u8 = 0b0011;
const WRITE: u8 = 0b0010;
const READ_CRC: u8 = 0b1011;
const WRITE_CRC: u8 = 0b1010;

/// The MCP251xFD command format, plain or CRC-protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mcp251xfd {
    crc: bool,
}

impl Mcp251xfd {
    /// `READ` / `WRITE`.
    pub const fn plain() -> Mcp251xfd {
        Mcp251xfd { crc: false }
    }
    /// `READ_CRC` / `WRITE_CRC`, with the CRC checked on every read.
    pub const fn crc() -> Mcp251xfd {
        Mcp251xfd { crc: true }
    }

    fn in_ram(reg: u32) -> bool {
        (MCP251XFD_RAM_START..MCP251XFD_RAM_START + MCP251XFD_RAM_SIZE).contains(&reg)
    }
}

impl Format for Mcp251xfd {
    fn name(&self) -> &'static str {
        if self.crc {
            "mcp251xfd-crc"
        } else {
            "mcp251xfd"
        }
    }

    fn max_address(&self) -> u32 {
        0xFFF
    }

    fn val_bits(&self) -> u32 {
        32
    }

    fn encode_val(&self, val: u32, out: &mut [u8]) {
        Endian::Little.put(val, out);
    }

    fn decode_val(&self, bytes: &[u8]) -> u32 {
        Endian::Little.get(bytes)
    }

    fn header(&self, op: Op, reg: u32, data_len: usize) -> Inline {
        let instr = match (op, self.crc) {
            (Op::Read, false) => READ,
            (Op::Write, false) => WRITE,
            (Op::Read, true) => READ_CRC,
            (Op::Write, true) => WRITE_CRC,
        };
        let word = (u16::from(instr) << 12) | (reg & 0xFFF) as u16;
        let mut h = Inline::EMPTY;
        h.push(&word.to_be_bytes());
        if self.crc {
            let len = if Self::in_ram(reg) { data_len / 4 } else { data_len };
            h.push(&[len.min(255) as u8]);
        }
        h
    }

    fn trailer_len(&self) -> usize {
        if self.crc {
            2
        } else {
            0
        }
    }

    fn trailer(&self, header: &[u8], data: &[u8]) -> Inline {
        let mut t = Inline::EMPTY;
        if self.crc {
            t.push(&crc16_cms(&[header, data]).to_be_bytes());
        }
        t
    }

    fn check_read(&self, reg: u32, header: &[u8], data: &[u8], trailer: &[u8]) -> Result<(), RegmapError> {
        if !self.crc {
            return Ok(());
        }
        let computed = crc16_cms(&[header, data]);
        let received = u16::from_be_bytes([trailer[0], trailer[1]]);
        if computed == received {
            Ok(())
        } else {
            Err(RegmapError::CrcMismatch { reg, computed, received })
        }
    }

    fn max_data_bytes(&self, reg: u32) -> usize {
        if !self.crc {
            usize::MAX
        } else if Self::in_ram(reg) {
            255 * 4
        } else if reg < MCP251XFD_RAM_START {
            // 255 bytes, whole registers, and not across into the RAM (whose
            // length unit differs).
            (252u32).min((MCP251XFD_RAM_START - reg).max(4)) as usize
        } else {
            // Above the RAM (0xE00..: OSC, IOCON, CRC, ECC, DEVID): nothing
            // to cross into.
            252
        }
    }

    fn decode_header(&self, op: Op, tx: &[u8]) -> Result<DeviceRequest, String> {
        let need = if self.crc { 3 } else { 2 };
        if tx.len() < need {
            return Err(format!("{} bytes, the command needs {need}", tx.len()));
        }
        let word = u16::from_be_bytes([tx[0], tx[1]]);
        let instr = (word >> 12) as u8;
        let reg = u32::from(word & 0xFFF);
        let expected = match (op, self.crc) {
            (Op::Read, false) => READ,
            (Op::Write, false) => WRITE,
            (Op::Read, true) => READ_CRC,
            (Op::Write, true) => WRITE_CRC,
        };
        if instr != expected {
            return Err(format!("instruction {instr:#06b}, expected {expected:#06b}"));
        }
        let data_len = self.crc.then(|| {
            let n = usize::from(tx[2]);
            if Self::in_ram(reg) {
                n * 4
            } else {
                n
            }
        });
        Ok(DeviceRequest { reg, header_len: need, data_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_commands() {
        let f = Mcp251xfd::plain();
        assert_eq!(f.header(Op::Read, 0xE00, 4).as_slice(), &[0x3E, 0x00]);
        assert_eq!(f.header(Op::Write, 0x004, 4).as_slice(), &[0x20, 0x04]);
        let mut b = [0; 4];
        f.encode_val(0x1122_3344, &mut b);
        assert_eq!(b, [0x44, 0x33, 0x22, 0x11]);
        assert_eq!(f.trailer_len(), 0);
    }

    #[test]
    fn crc_commands_length_units_and_crc() {
        let f = Mcp251xfd::crc();
        // SFR: length in bytes.
        assert_eq!(f.header(Op::Read, 0x010, 8).as_slice(), &[0xB0, 0x10, 8]);
        // RAM: length in 32-bit words.
        assert_eq!(f.header(Op::Write, 0x400, 8).as_slice(), &[0xA4, 0x00, 2]);
        let h = f.header(Op::Write, 0x010, 4);
        let data = [1, 2, 3, 4];
        let t = f.trailer(h.as_slice(), &data);
        let crc = crc16_cms(&[&[0xA0, 0x10, 4, 1, 2, 3, 4]]);
        assert_eq!(t.as_slice(), &crc.to_be_bytes());
        assert_eq!(f.check_read(0x10, h.as_slice(), &data, t.as_slice()), Ok(()));
        let bad = [t.as_slice()[0] ^ 0x01, t.as_slice()[1]];
        assert!(matches!(
            f.check_read(0x10, h.as_slice(), &data, &bad),
            Err(RegmapError::CrcMismatch { reg: 0x10, .. })
        ));
        let req = f.decode_header(Op::Write, &[0xA4, 0x00, 2]).unwrap();
        assert_eq!((req.reg, req.header_len, req.data_len), (0x400, 3, Some(8)));
        assert!(f.decode_header(Op::Read, &[0x34, 0x00, 2]).is_err());
    }

    #[test]
    fn crc_bursts_stay_within_length_byte_and_region() {
        let f = Mcp251xfd::crc();
        assert_eq!(f.max_data_bytes(0x000), 252);
        assert_eq!(f.max_data_bytes(0x3F8), 8);
        assert_eq!(f.max_data_bytes(0x400), 1020);
        assert_eq!(f.max_data_bytes(0xE00), 252);
        assert_eq!(Mcp251xfd::plain().max_data_bytes(0), usize::MAX);
    }
}
