//! [`GpioError`]: everything a GPIO call can fail with, saying what was
//! wrong, the value, and what is allowed.

use std::fmt;

/// Why a GPIO operation failed. Nothing was changed when one is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpioError {
    /// The line is already requested (by this process or another consumer).
    LineBusy {
        /// The line.
        offset: u32,
        /// Who holds it, if known.
        consumer: String,
    },
    /// No such line on the chip.
    OffsetOutOfRange {
        /// The offset asked for.
        offset: u32,
        /// Lines on the chip (valid offsets are below it).
        lines: u32,
    },
    /// The offset is not one of this request's lines.
    NotRequested {
        /// The offset asked for.
        offset: u32,
        /// The request's lines.
        requested: Vec<u32>,
    },
    /// The chip was removed; the handle can only be dropped now.
    ChipGone {
        /// The chip's name.
        chip: String,
    },
    /// The OS refused access to the chip.
    PermissionDenied {
        /// The device path.
        path: String,
    },
    /// No such chip.
    NotFound {
        /// The device path or name.
        path: String,
    },
    /// A configuration value is not allowed.
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// The operation does not apply to the line in its current configuration
    /// (e.g. setting an input).
    WrongDirection {
        /// The line.
        offset: u32,
        /// What the operation needs.
        needs: &'static str,
    },
    /// Any other OS error.
    Os {
        /// The operation.
        op: &'static str,
        /// `errno`.
        errno: i32,
    },
}

impl fmt::Display for GpioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpioError::LineBusy { offset, consumer } if consumer.is_empty() => {
                write!(f, "GPIO line {offset} is busy (already requested)")
            }
            GpioError::LineBusy { offset, consumer } => {
                write!(f, "GPIO line {offset} is busy: requested by \"{consumer}\"")
            }
            GpioError::OffsetOutOfRange { offset, lines } => {
                write!(f, "GPIO line offset {offset} out of range: the chip has {lines} lines (0..{lines})")
            }
            GpioError::NotRequested { offset, requested } => {
                write!(f, "GPIO line {offset} is not part of this request (lines {requested:?})")
            }
            GpioError::ChipGone { chip } => write!(f, "GPIO chip {chip} is gone (removed)"),
            GpioError::PermissionDenied { path } => write!(f, "permission denied opening {path}"),
            GpioError::NotFound { path } => write!(f, "no GPIO chip at {path}"),
            GpioError::InvalidConfig { what, value, allowed } => {
                write!(f, "invalid GPIO {what}: {value} (allowed: {allowed})")
            }
            GpioError::WrongDirection { offset, needs } => write!(f, "GPIO line {offset} must be {needs} for this"),
            GpioError::Os { op, errno } => {
                write!(f, "{op} failed: {}", std::io::Error::from_raw_os_error(*errno))
            }
        }
    }
}

impl std::error::Error for GpioError {}

impl GpioError {
    pub(crate) fn invalid(what: &'static str, value: impl fmt::Display, allowed: &'static str) -> GpioError {
        GpioError::InvalidConfig { what, value: value.to_string(), allowed }
    }
}
