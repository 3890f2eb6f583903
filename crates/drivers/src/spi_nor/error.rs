//! [`Error`]: what went wrong, where, and the values seen.

use std::fmt;
use wirespeed::spi::SpiError;

/// The operation a [`Error::Timeout`] was waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Page program (or SST byte / AAI word program).
    Program,
    /// Sector or block erase.
    Erase,
    /// Chip erase.
    ChipErase,
    /// Write status register.
    WriteStatus,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Program => "program",
            Op::Erase => "erase",
            Op::ChipErase => "chip erase",
            Op::WriteStatus => "write status",
        })
    }
}

/// The driver's errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An SPI transfer failed.
    Spi(SpiError),
    /// The JEDEC ID read all `00` or all `FF`: no chip answers. Nothing
    /// was sent after the read ID command.
    NoChip {
        /// The ID bytes read.
        id: [u8; 3],
    },
    /// The JEDEC ID is not in the built-in table and the part has no SFDP.
    UnknownChip {
        /// The ID bytes read.
        id: [u8; 3],
    },
    /// The SFDP data is malformed.
    BadSfdp {
        /// What is wrong.
        reason: &'static str,
    },
    /// The built-in table's row for this ID and the chip's SFDP disagree.
    Mismatch {
        /// The table row's name.
        chip: &'static str,
        /// Which field ("size", "page size", "erase sizes": a bit mask
        /// with bit n set for a 2^n-byte erase).
        field: &'static str,
        /// The table's value.
        table: u64,
        /// The SFDP's value.
        sfdp: u64,
    },
    /// The part needs something this driver does not do.
    Unsupported {
        /// What.
        what: &'static str,
    },
    /// The range is not inside the array.
    OutOfRange {
        /// Start address.
        addr: u32,
        /// Length in bytes.
        len: u64,
        /// Array size.
        size: u32,
    },
    /// An erase range not aligned to the smallest erase size.
    Unaligned {
        /// Start address.
        addr: u32,
        /// Length in bytes.
        len: u32,
        /// The smallest erase size.
        granularity: u32,
    },
    /// The block-protect bits cover `addr`: nothing was sent to change it.
    Protected {
        /// The first protected address of the request.
        addr: u32,
    },
    /// The chip still reported WIP after the operation's maximum time.
    Timeout {
        /// The operation.
        op: Op,
        /// Its address (0 for chip erase and status writes).
        addr: u32,
    },
    /// A program failed.
    ProgramFailed {
        /// Address of the page (or byte/word) being programmed.
        addr: u32,
        /// Why.
        source: Box<Error>,
    },
    /// An erase failed.
    EraseFailed {
        /// Address of the sector/block being erased (0: chip erase).
        addr: u32,
        /// Why.
        source: Box<Error>,
    },
    /// [`SpiNor::write`](super::SpiNor::write) read back a byte that differs
    /// from what it wrote (e.g. after a power cut during the write).
    VerifyFailed {
        /// The first address that differs.
        addr: u32,
    },
    /// A status register write did not take effect (WP# with the status
    /// register protect bit set, or a non-volatile bit).
    StatusWriteRefused {
        /// Status register 1 value written.
        wrote: u8,
        /// Value read back.
        read: u8,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spi(e) => write!(f, "SPI: {e}"),
            Error::NoChip { id } => write!(f, "no chip: JEDEC ID {id:02X?}"),
            Error::UnknownChip { id } => write!(f, "JEDEC ID {id:02X?} is not in the table and the chip has no SFDP"),
            Error::BadSfdp { reason } => write!(f, "SFDP: {reason}"),
            Error::Mismatch { chip, field, table, sfdp } => {
                write!(f, "{chip}: {field} is {table:#x} in the ID table, {sfdp:#x} in the chip's SFDP")
            }
            Error::Unsupported { what } => write!(f, "unsupported: {what}"),
            Error::OutOfRange { addr, len, size } => {
                write!(f, "{len} bytes at {addr:#x} do not fit a {size:#x}-byte array")
            }
            Error::Unaligned { addr, len, granularity } => {
                write!(f, "erase of {len:#x} bytes at {addr:#x} is not aligned to {granularity:#x}")
            }
            Error::Protected { addr } => write!(f, "{addr:#x} is block-protected"),
            Error::Timeout { op, addr } => write!(f, "{op} at {addr:#x}: still busy after its maximum time"),
            Error::ProgramFailed { addr, source } => write!(f, "program at {addr:#x}: {source}"),
            Error::EraseFailed { addr, source } => write!(f, "erase at {addr:#x}: {source}"),
            Error::VerifyFailed { addr } => write!(f, "verify: {addr:#x} does not hold what was written"),
            Error::StatusWriteRefused { wrote, read } => {
                write!(f, "status register write of {wrote:#04x} refused: reads {read:#04x}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ProgramFailed { source, .. } | Error::EraseFailed { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<SpiError> for Error {
    fn from(e: SpiError) -> Self {
        Error::Spi(e)
    }
}
