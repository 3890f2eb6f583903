//! The generic register layout of the kernel's regmap: register field,
//! padding, value, with read/write flag masks ORed into the register field.

use super::{DeviceRequest, Endian, Format, Inline, Op};
use crate::regmap::error::ConfigError;

/// `[register field | flags][padding][values…]`.
///
/// `read_flag_mask` / `write_flag_mask` are ORed into the register field
/// (as in the kernel, e.g. `0x80` for "bit 7 = read" on an 8-bit field). The
/// address bits are those of the field below the lowest flag bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdFormat {
    /// Register field width: 8, 16 or 32 bits.
    pub reg_bits: u32,
    /// Zero bits between register field and data (a multiple of 8, ≤ 32).
    pub pad_bits: u32,
    /// Value width: 8, 16 or 32 bits.
    pub val_bits: u32,
    /// ORed into the register field of a read.
    pub read_flag_mask: u32,
    /// ORed into the register field of a write.
    pub write_flag_mask: u32,
    /// Byte order of the register field.
    pub reg_endian: Endian,
    /// Byte order of values.
    pub val_endian: Endian,
    /// Whether the device increments the address after each value.
    pub auto_increment: bool,
}

impl StdFormat {
    /// Big-endian fields, no padding, no flags, auto-increment.
    pub const fn new(reg_bits: u32, val_bits: u32) -> StdFormat {
        StdFormat {
            reg_bits,
            pad_bits: 0,
            val_bits,
            read_flag_mask: 0,
            write_flag_mask: 0,
            reg_endian: Endian::Big,
            val_endian: Endian::Big,
            auto_increment: true,
        }
    }
    /// With read and write flag masks.
    pub const fn with_flags(mut self, read: u32, write: u32) -> StdFormat {
        self.read_flag_mask = read;
        self.write_flag_mask = write;
        self
    }
    /// With `bits` of padding after the register field.
    pub const fn with_padding(mut self, bits: u32) -> StdFormat {
        self.pad_bits = bits;
        self
    }
    /// With the given byte orders.
    pub const fn with_endian(mut self, reg: Endian, val: Endian) -> StdFormat {
        self.reg_endian = reg;
        self.val_endian = val;
        self
    }
    /// One register per command (the device does not auto-increment).
    pub const fn without_auto_increment(mut self) -> StdFormat {
        self.auto_increment = false;
        self
    }

    fn field_mask(&self) -> u32 {
        if self.reg_bits >= 32 {
            u32::MAX
        } else {
            (1u32 << self.reg_bits) - 1
        }
    }
    fn reg_bytes(&self) -> usize {
        (self.reg_bits / 8) as usize
    }
}

impl Format for StdFormat {
    fn name(&self) -> &'static str {
        "std"
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for (what, bits) in [("reg_bits", self.reg_bits), ("val_bits", self.val_bits)] {
            if !matches!(bits, 8 | 16 | 32) {
                return Err(ConfigError::BadWidth { what, bits });
            }
        }
        if !self.pad_bits.is_multiple_of(8) || self.pad_bits > 32 {
            return Err(ConfigError::BadPadding { bits: self.pad_bits });
        }
        let (r, w) = (self.read_flag_mask, self.write_flag_mask);
        let outside = (r | w) & !self.field_mask() != 0;
        if outside || (r == w && r != 0) {
            return Err(ConfigError::BadFlagMask { read: r, write: w });
        }
        Ok(())
    }

    /// The address bits: those of the register field below the lowest flag bit.
    fn max_address(&self) -> u32 {
        let flags = self.read_flag_mask | self.write_flag_mask;
        if flags == 0 {
            self.field_mask()
        } else {
            self.field_mask() & ((1u32 << flags.trailing_zeros()) - 1)
        }
    }

    fn val_bits(&self) -> u32 {
        self.val_bits
    }

    fn encode_val(&self, val: u32, out: &mut [u8]) {
        self.val_endian.put(val, out);
    }

    fn decode_val(&self, bytes: &[u8]) -> u32 {
        self.val_endian.get(bytes)
    }

    fn header(&self, op: Op, reg: u32, _data_len: usize) -> Inline {
        let flags = match op {
            Op::Read => self.read_flag_mask,
            Op::Write => self.write_flag_mask,
        };
        let mut field = [0u8; 4];
        let n = self.reg_bytes();
        self.reg_endian.put((reg & self.max_address()) | flags, &mut field[..n]);
        let mut h = Inline::EMPTY;
        h.push(&field[..n]);
        h.push(&[0u8; 4][..(self.pad_bits / 8) as usize]);
        h
    }

    fn auto_increment(&self) -> bool {
        self.auto_increment
    }

    fn decode_header(&self, op: Op, tx: &[u8]) -> Result<DeviceRequest, String> {
        let n = self.reg_bytes();
        let header_len = n + (self.pad_bits / 8) as usize;
        if tx.len() < header_len {
            return Err(format!("{} bytes, the header needs {header_len}", tx.len()));
        }
        let raw = self.reg_endian.get(&tx[..n]);
        let (mine, other) = match op {
            Op::Read => (self.read_flag_mask, self.write_flag_mask),
            Op::Write => (self.write_flag_mask, self.read_flag_mask),
        };
        if raw & mine != mine || raw & (other & !mine) != 0 {
            return Err(format!("register field {raw:#x} lacks the {op:?} flags {mine:#x}"));
        }
        Ok(DeviceRequest { reg: raw & self.max_address(), header_len, data_len: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_byte_device_layout() {
        let f = StdFormat::new(16, 8).with_flags(0x0300, 0x0200);
        assert_eq!(f.validate(), Ok(()));
        assert_eq!(f.max_address(), 0xFF);
        assert_eq!(f.header(Op::Read, 0x42, 1).as_slice(), &[0x03, 0x42]);
        assert_eq!(f.header(Op::Write, 0x42, 1).as_slice(), &[0x02, 0x42]);
        assert_eq!(f.decode_header(Op::Write, &[0x02, 0x42, 9]).unwrap().reg, 0x42);
        assert!(f.decode_header(Op::Write, &[0x03, 0x42]).is_err());
    }

    #[test]
    fn padding_little_endian_values_and_flag_bit() {
        let f = StdFormat::new(8, 16).with_flags(0x80, 0).with_padding(8).with_endian(Endian::Big, Endian::Little);
        assert_eq!(f.max_address(), 0x7F);
        assert_eq!(f.header(Op::Read, 0x12, 2).as_slice(), &[0x92, 0x00]);
        assert_eq!(f.header(Op::Write, 0x12, 2).as_slice(), &[0x12, 0x00]);
        let mut b = [0; 2];
        f.encode_val(0xBEEF, &mut b);
        assert_eq!(b, [0xEF, 0xBE]);
        assert_eq!(f.decode_val(&b), 0xBEEF);
        let g = StdFormat::new(16, 32).with_endian(Endian::Little, Endian::Big);
        assert_eq!(g.header(Op::Write, 0x1234, 4).as_slice(), &[0x34, 0x12]);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert_eq!(StdFormat::new(12, 8).validate(), Err(ConfigError::BadWidth { what: "reg_bits", bits: 12 }));
        assert_eq!(StdFormat::new(8, 24).validate(), Err(ConfigError::BadWidth { what: "val_bits", bits: 24 }));
        assert_eq!(StdFormat::new(8, 8).with_padding(4).validate(), Err(ConfigError::BadPadding { bits: 4 }));
        assert!(StdFormat::new(8, 8).with_flags(0x100, 0).validate().is_err());
        assert!(StdFormat::new(8, 8).with_flags(0x80, 0x80).validate().is_err());
    }
}
