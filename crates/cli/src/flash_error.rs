//! Why `wirespeed flash` failed: what was wrong and what is allowed.

use std::fmt;
use std::path::PathBuf;
use wirespeed_drivers::spi_nor::Error as NorError;

/// Why `wirespeed flash` failed.
#[derive(Debug)]
pub enum FlashError {
    /// Neither --lab nor --dev.
    NoTarget,
    /// `--lab NAME` names no chip of the lab.
    UnknownChip {
        /// The name given.
        name: String,
        /// The lab's chips.
        known: Vec<&'static str>,
    },
    /// `--dev` names no spidev node (missing, or not spidev).
    NoNode(String),
    /// The target could not be opened (or the lab image not used).
    Open(String),
    /// No chip answered the probe, or it could not be identified.
    Probe {
        /// The target.
        target: String,
        /// Why.
        error: NorError,
    },
    /// A file could not be read or written.
    File {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The image file could not be read.
    NoFile {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// An image whose size is not the chip's, without --offset/--length.
    SizeMismatch {
        /// The file.
        path: PathBuf,
        /// Its size.
        file: u64,
        /// The chip's size.
        chip: u64,
    },
    /// The range does not fit the chip (or the file).
    OutOfRange {
        /// What the range is measured against ("the chip", "the file").
        what: &'static str,
        /// First address.
        offset: u64,
        /// Length.
        length: u64,
        /// Size of what it must fit.
        size: u64,
    },
    /// An erase range not aligned to the smallest erase size.
    Unaligned {
        /// First address.
        offset: u64,
        /// Length.
        length: u64,
        /// The smallest erase size.
        granularity: u32,
    },
    /// Erase without a range or --chip.
    NothingToErase,
    /// The range is block-protected.
    Protected {
        /// The protected range.
        range: (u32, u32),
        /// Status register 1.
        sr1: u8,
    },
    /// The chip differs from the data.
    Mismatch {
        /// First differing address.
        addr: u64,
        /// The chip's byte there.
        chip: u8,
        /// The file's.
        file: u8,
    },
    /// The driver failed.
    Driver {
        /// The operation.
        op: &'static str,
        /// Why.
        error: NorError,
    },
    /// Ctrl-C.
    Interrupted {
        /// The operation.
        op: &'static str,
        /// The first address not done.
        next: u64,
        /// The end of the range.
        end: u64,
        /// How to resume.
        hint: String,
    },
}

impl fmt::Display for FlashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlashError::NoTarget => write!(
                f,
                "no target: give --dev /dev/spidevB.C (a real chip; `wirespeed list` shows the nodes) or --lab CHIP[:IMAGE] \
                 (an emulated one, e.g. --lab w25q128jv)"
            ),
            FlashError::UnknownChip { name, known } => {
                write!(f, "--lab {name:?}: no such lab chip; the lab has {} (any case)", known.join(", "))
            }
            FlashError::NoNode(e) | FlashError::Open(e) => write!(f, "{e}"),
            FlashError::Probe { target, error } => {
                write!(f, "{target}: no SPI NOR flash identified: {error}")?;
                if matches!(error, NorError::NoChip { .. }) {
                    write!(f, " (check the wiring, the chip select and the clock mode; try a lower --hz)")?;
                }
                Ok(())
            }
            FlashError::File { path, error } => write!(f, "{}: {error}", path.display()),
            FlashError::NoFile { path, error } => {
                write!(f, "cannot read the image {}: {error} (give an existing file)", path.display())
            }
            FlashError::SizeMismatch { path, file, chip } => write!(
                f,
                "{} is {file} bytes, the chip is {chip}: give --offset (where it goes, e.g. --offset 0) and/or \
                 --length (how many of its bytes) to write part of the chip, or a {chip}-byte image for all of it",
                path.display()
            ),
            FlashError::OutOfRange { what, offset, size, .. } if offset >= size => write!(
                f,
                "--offset {offset:#x} is beyond the end of {what} ({size} bytes): the last address is {:#x}",
                size.saturating_sub(1)
            ),
            FlashError::OutOfRange { what, offset, length, size } => write!(
                f,
                "{length} bytes at {offset:#x} do not fit {what} ({size} bytes, {size:#x}): --offset + --length must be at \
                 most {size:#x}"
            ),
            FlashError::Unaligned { offset, length, granularity } => write!(
                f,
                "erase of {length:#x} bytes at {offset:#x} is not aligned to the smallest erase size, {granularity} bytes \
                 ({granularity:#x}): --offset and --length must be multiples of it (e.g. --offset {:#x} --length {:#x})",
                offset / u64::from(*granularity) * u64::from(*granularity),
                (offset + length).max(offset + 1).div_ceil(u64::from(*granularity)) * u64::from(*granularity)
                    - offset / u64::from(*granularity) * u64::from(*granularity)
            ),
            FlashError::NothingToErase => {
                write!(f, "erase what? give --offset N --length N (a multiple of the erase size) or --chip (everything)")
            }
            FlashError::Protected { range, sr1 } => write!(
                f,
                "{:#x}..{:#x} is block-protected (status register 1 = {sr1:#04x}): add --unprotect to clear the BP bits \
                 first",
                range.0, range.1
            ),
            FlashError::Mismatch { addr, chip, file } => {
                write!(f, "verify failed: the chip holds {chip:#04x} at {addr:#x}, the file {file:#04x}")
            }
            FlashError::Driver { op, error } => write!(f, "{op}: {error}"),
            FlashError::Interrupted { op, next, end, hint } => write!(
                f,
                "{op} interrupted (Ctrl-C) at {next:#x}, {} bytes before the end ({end:#x}); {hint}",
                end - next
            ),
        }
    }
}

impl std::error::Error for FlashError {}

/// A driver error, with block protection told apart.
pub fn driver(op: &'static str) -> impl Fn(NorError) -> FlashError {
    move |error| FlashError::Driver { op, error }
}
