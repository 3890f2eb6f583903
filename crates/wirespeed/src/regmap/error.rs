//! Typed errors of the register map: each names the register, the value that
//! was wrong and what is allowed.

use std::fmt;

/// An error from the bus under a register map (the transport failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusError {
    /// The SPI core's error, kept whole (a register map over [`SpiBus`](super::SpiBus)).
    Spi(crate::spi::SpiError),
    /// Another transport reported an error (its own message).
    Transport(String),
    /// A message was longer than the bus can carry.
    TooLong {
        /// Bytes in the message.
        len: usize,
        /// Largest message the bus accepts.
        max: usize,
    },
    /// The device did not understand the command (RAM bus: undecodable header).
    BadCommand(String),
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Spi(e) => write!(f, "SPI error: {e}"),
            BusError::Transport(m) => write!(f, "transport error: {m}"),
            BusError::TooLong { len, max } => write!(f, "message of {len} bytes is longer than the bus allows ({max})"),
            BusError::BadCommand(m) => write!(f, "device rejected the command: {m}"),
        }
    }
}

impl std::error::Error for BusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BusError::Spi(e) => Some(e),
            _ => None,
        }
    }
}

/// An error of a register access. Nothing was changed (neither the device nor
/// the cache) unless the variant says otherwise ([`RegmapError::Bus`] during a
/// multi-message operation may have left earlier messages applied; a write's
/// cache then holds what those messages wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegmapError {
    /// The register may not be read (see `RegmapConfig::readable`).
    NotReadable {
        /// Register address.
        reg: u32,
    },
    /// The register may not be written (see `RegmapConfig::writeable`).
    NotWriteable {
        /// Register address.
        reg: u32,
    },
    /// The register lies above the map's last register.
    OutOfRange {
        /// Register address.
        reg: u32,
        /// The map's `max_register`.
        max: u32,
    },
    /// The address is not a multiple of the register stride.
    Misaligned {
        /// Register address.
        reg: u32,
        /// The map's register stride.
        stride: u32,
    },
    /// The value does not fit the register width.
    ValueTooWide {
        /// Register address.
        reg: u32,
        /// The value given.
        value: u32,
        /// Register width in bits.
        bits: u32,
    },
    /// A raw buffer is not a whole number of registers, or is empty.
    BadLength {
        /// First register address.
        reg: u32,
        /// Buffer length in bytes (raw) or values (bulk).
        len: usize,
        /// The length must be a non-zero multiple of this.
        multiple_of: usize,
    },
    /// The CRC sent by the device does not match its data.
    CrcMismatch {
        /// First register of the access.
        reg: u32,
        /// CRC computed over command, length and data.
        computed: u16,
        /// CRC the device sent.
        received: u16,
    },
    /// The access needs the device but the map is in cache-only mode (or the
    /// register cannot be cached: volatile, or no cache).
    CacheOnly {
        /// Register address.
        reg: u32,
    },
    /// A register region whose first register lies above its last.
    BadRegion {
        /// First register given.
        first: u32,
        /// Last register given.
        last: u32,
    },
    /// The bus failed.
    Bus {
        /// First register of the access.
        reg: u32,
        /// What the bus reported.
        error: BusError,
    },
}

impl fmt::Display for RegmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegmapError::NotReadable { reg } => write!(f, "register {reg:#x} is not readable"),
            RegmapError::NotWriteable { reg } => write!(f, "register {reg:#x} is not writeable"),
            RegmapError::OutOfRange { reg, max } => {
                write!(f, "register {reg:#x} is out of range (the last register is {max:#x})")
            }
            RegmapError::Misaligned { reg, stride } => {
                write!(f, "register {reg:#x} is not a multiple of the register stride {stride}")
            }
            RegmapError::ValueTooWide { reg, value, bits } => {
                write!(f, "value {value:#x} for register {reg:#x} does not fit in {bits} bits")
            }
            RegmapError::BadLength { reg, len, multiple_of } => {
                write!(f, "access at {reg:#x}: length {len} is not a non-zero multiple of {multiple_of}")
            }
            RegmapError::CrcMismatch { reg, computed, received } => {
                write!(f, "CRC mismatch reading {reg:#x}: device sent {received:#06x}, data gives {computed:#06x}")
            }
            RegmapError::CacheOnly { reg } => write!(
                f,
                "register {reg:#x} needs the device, but the map is cache-only (or the register is not cached)"
            ),
            RegmapError::BadRegion { first, last } => {
                write!(f, "region {first:#x}..={last:#x} is empty: its first register must not lie above its last")
            }
            RegmapError::Bus { reg, error } => write!(f, "bus error accessing {reg:#x}: {error}"),
        }
    }
}

impl std::error::Error for RegmapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegmapError::Bus { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A register map configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A register or value width other than 8, 16 or 32 bits.
    BadWidth {
        /// Which width (`"reg_bits"`, `"val_bits"`).
        what: &'static str,
        /// The width given.
        bits: u32,
    },
    /// Padding that is not a whole number of bytes (or more than 32 bits).
    BadPadding {
        /// The padding given, in bits.
        bits: u32,
    },
    /// A register stride of 0.
    ZeroStride,
    /// `max_register` does not fit the command format's address field.
    MaxRegisterTooLarge {
        /// `max_register` given.
        max: u32,
        /// Largest address the format can carry.
        format_max: u32,
    },
    /// A read or write flag mask outside the register field, or both equal.
    BadFlagMask {
        /// The read mask.
        read: u32,
        /// The write mask.
        write: u32,
    },
    /// A default for a register the map cannot hold.
    BadDefault {
        /// Register address.
        reg: u32,
        /// Why (out of range, misaligned, too wide).
        why: &'static str,
    },
    /// A flat cache (one slot per register) for more registers than
    /// [`FLAT_CACHE_MAX_SLOTS`](super::FLAT_CACHE_MAX_SLOTS).
    FlatCacheTooLarge {
        /// Register slots the map covers (`max_register / reg_stride + 1`).
        slots: u64,
        /// The most a flat cache holds.
        max: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::BadWidth { what, bits } => write!(f, "{what} = {bits}: allowed are 8, 16 and 32"),
            ConfigError::BadPadding { bits } => {
                write!(f, "pad_bits = {bits}: must be a multiple of 8, at most 32")
            }
            ConfigError::ZeroStride => write!(f, "reg_stride = 0: must be at least 1"),
            ConfigError::MaxRegisterTooLarge { max, format_max } => {
                write!(f, "max_register = {max:#x} does not fit the format's address field (at most {format_max:#x})")
            }
            ConfigError::BadFlagMask { read, write } => write!(
                f,
                "flag masks read = {read:#x}, write = {write:#x}: must lie inside the register field and differ"
            ),
            ConfigError::BadDefault { reg, why } => write!(f, "default for register {reg:#x}: {why}"),
            ConfigError::FlatCacheTooLarge { slots, max } => write!(
                f,
                "a flat cache for {slots} registers: at most {max} (use CacheType::Sparse for a large map, or a smaller max_register)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
