//! Wire formats: how a register access is laid out in bytes.
//!
//! One strategy object per format, behind the [`Format`] trait, so that the
//! register map never branches on the device type:
//! - [`StdFormat`]: the kernel's generic layout — a register field of 8/16/32
//!   bits with read/write flag masks, optional padding, values of 8/16/32 bits,
//!   each with its own endianness (e.g. a "command byte + address byte" device
//!   is a 16-bit register field with flag masks `0x0300` / `0x0200`).
//! - [`Mcp251xfd`]: the MCP2517FD/MCP2518FD — a big-endian 16-bit command
//!   word `instr << 12 | addr`, 32-bit little-endian values, and the
//!   CRC-protected `READ_CRC`/`WRITE_CRC` variant (length byte, CRC-16).
//!
//! A format also has a *device side* ([`Format::decode_header`]) so that a
//! test bus ([`RamBus`](super::RamBus)) can serve the same protocol from RAM.

mod crc16;
mod mcp251xfd;
mod std_format;

pub use crc16::crc16_cms;
pub use mcp251xfd::{Mcp251xfd, MCP251XFD_RAM_SIZE, MCP251XFD_RAM_START};
pub use std_format::StdFormat;

use super::error::{ConfigError, RegmapError};
use std::fmt;

/// Direction of an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Register read.
    Read,
    /// Register write.
    Write,
}

/// Byte order of a field on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Endian {
    /// Most significant byte first (the usual for register addresses).
    #[default]
    Big,
    /// Least significant byte first.
    Little,
    /// The host's order.
    Native,
}

impl Endian {
    fn is_big(self) -> bool {
        match self {
            Endian::Big => true,
            Endian::Little => false,
            Endian::Native => cfg!(target_endian = "big"),
        }
    }

    /// Writes the low `out.len()` bytes (1..=4) of `v` in this order.
    pub fn put(self, v: u32, out: &mut [u8]) {
        let n = out.len();
        for (i, b) in out.iter_mut().enumerate() {
            let shift = if self.is_big() { 8 * (n - 1 - i) } else { 8 * i };
            *b = (v >> shift) as u8;
        }
    }

    /// Reads `bytes` (1..=4) in this order.
    pub fn get(self, bytes: &[u8]) -> u32 {
        let n = bytes.len();
        bytes.iter().enumerate().fold(0u32, |acc, (i, &b)| {
            let shift = if self.is_big() { 8 * (n - 1 - i) } else { 8 * i };
            acc | (u32::from(b) << shift)
        })
    }
}

/// A short header or trailer (at most 8 bytes), kept inline: building one
/// allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Inline {
    buf: [u8; 8],
    len: u8,
}

impl Inline {
    /// No bytes.
    pub const EMPTY: Inline = Inline { buf: [0; 8], len: 0 };

    /// Appends bytes; the caller keeps the total within 8.
    pub fn push(&mut self, bytes: &[u8]) {
        let start = self.len as usize;
        let end = (start + bytes.len()).min(8);
        self.buf[start..end].copy_from_slice(&bytes[..end - start]);
        self.len = end as u8;
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl fmt::Debug for Inline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x?}", self.as_slice())
    }
}

/// What the device side of a format decoded from the start of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceRequest {
    /// First register addressed.
    pub reg: u32,
    /// Bytes of command/address/padding/length before the data.
    pub header_len: usize,
    /// Data bytes announced by the header (a length field), if it has one.
    pub data_len: Option<usize>,
}

/// A register access layout (see the module docs). Implementations are
/// immutable data; every method is cheap and allocation-free.
pub trait Format: Send + Sync + fmt::Debug {
    /// Short name, for messages.
    fn name(&self) -> &'static str;
    /// Checks the format's own parameters.
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }
    /// Largest register address the command can carry.
    fn max_address(&self) -> u32;
    /// Register value width in bits (8, 16 or 32).
    fn val_bits(&self) -> u32;
    /// Register value width in bytes.
    fn val_bytes(&self) -> usize {
        (self.val_bits() / 8) as usize
    }
    /// Encodes one value into `out` (`val_bytes()` long).
    fn encode_val(&self, val: u32, out: &mut [u8]);
    /// Decodes one value from `bytes` (`val_bytes()` long).
    fn decode_val(&self, bytes: &[u8]) -> u32;
    /// The bytes that start an access of `data_len` data bytes at `reg`.
    fn header(&self, op: Op, reg: u32, data_len: usize) -> Inline;
    /// Bytes that follow the data, in both directions (e.g. a CRC).
    fn trailer_len(&self) -> usize {
        0
    }
    /// The trailer for `header` + `data`: sent after a write's data, and what
    /// the device sends after a read's data.
    fn trailer(&self, _header: &[u8], _data: &[u8]) -> Inline {
        Inline::EMPTY
    }
    /// Checks a read's trailer (e.g. the CRC) against header and data.
    fn check_read(&self, reg: u32, header: &[u8], data: &[u8], trailer: &[u8]) -> Result<(), RegmapError> {
        let _ = (reg, header, data, trailer);
        Ok(())
    }
    /// Largest number of data bytes one command at `reg` may carry.
    fn max_data_bytes(&self, _reg: u32) -> usize {
        usize::MAX
    }
    /// Whether one command may carry several adjacent registers (the device
    /// increments the address after each value).
    fn auto_increment(&self) -> bool {
        true
    }
    /// Device side: decodes the header at the start of `tx` for an access of
    /// direction `op`; `Err` says why the device would reject it.
    fn decode_header(&self, op: Op, tx: &[u8]) -> Result<DeviceRequest, String>;
}
