//! Rust errors as Python exceptions: `OSError` (with the errno, so
//! `FileNotFoundError`, `PermissionError` … as the kernel would give them)
//! where py-spidev raises `IOError`, `ValueError` for a message the core
//! refuses, `OverflowError` for one larger than spidev takes in one piece.

use pyo3::exceptions::{PyOSError, PyOverflowError, PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::PyErr;
use wirespeed::linux::spidev::SpidevError;
use wirespeed::spi::{BackendError, InvalidMessage, SpiError};

/// `OSError(errno, message)`: Python picks the subclass from the errno.
pub fn os_error(errno: i32, message: impl Into<String>) -> PyErr {
    PyOSError::new_err((errno, message.into()))
}

/// The error of an operation on a closed `SpiDev`.
pub fn closed() -> PyErr {
    os_error(libc::EBADF, "the SpiDev is not open: call open(bus, device) first")
}

/// A refused message.
pub fn invalid(e: InvalidMessage) -> PyErr {
    match e {
        InvalidMessage::MessageTooLarge { .. } => PyOverflowError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// An SPI core error.
pub fn spi(e: SpiError) -> PyErr {
    let text = e.to_string();
    match e {
        SpiError::Invalid(i) => invalid(i),
        SpiError::Timeout { .. } => PyTimeoutError::new_err(text),
        SpiError::Controller { .. } | SpiError::ChipSelect(_) | SpiError::DmaFault { .. } => os_error(libc::EIO, text),
        SpiError::Dma { .. } => os_error(libc::ENOMEM, text),
        SpiError::BusGone => os_error(libc::ENODEV, text),
        SpiError::CalledFromCallback | SpiError::LockedByCaller => PyRuntimeError::new_err(text),
        SpiError::Backend(b) => match b {
            BackendError::Refused { .. } | BackendError::ModeRefused { .. } => os_error(libc::EINVAL, text),
            BackendError::TooLarge { .. } => os_error(libc::EMSGSIZE, text),
            BackendError::Gone { .. } => os_error(libc::ENODEV, text),
            BackendError::Os { errno, .. } => os_error(errno, text),
            _ => os_error(libc::EIO, text),
        },
    }
}

/// A spidev node that could not be opened.
pub fn open(e: SpidevError) -> PyErr {
    let text = e.to_string();
    match e {
        SpidevError::NotFound { .. } => os_error(libc::ENOENT, text),
        SpidevError::PermissionDenied { .. } => os_error(libc::EACCES, text),
        SpidevError::NotSpidev { .. } => os_error(libc::ENOTTY, text),
        SpidevError::Os { errno, .. } => os_error(errno, text),
    }
}
