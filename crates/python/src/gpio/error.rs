//! Python exceptions for GPIO failures.
//!
//! | [`GpioError`]                                   | Python                                  |
//! |-------------------------------------------------|-----------------------------------------|
//! | `LineBusy`                                      | `OSError(EBUSY)`                        |
//! | `OffsetOutOfRange`, `NotRequested`, `InvalidConfig` | `ValueError`                        |
//! | `WrongDirection` (e.g. setting an input)        | `PermissionError` (`EPERM`, as the kernel) |
//! | `ChipGone`                                      | `OSError(ENODEV)`                       |
//! | `PermissionDenied`                              | `PermissionError` (`EACCES`)            |
//! | `NotFound`                                      | `FileNotFoundError` (`ENOENT`)          |
//! | `Os { errno }`                                  | `OSError(errno)` (its subclass)         |
//!
//! Using a closed chip raises `ChipClosedError`, a released request
//! `RequestReleasedError` (python gpiod's names and messages).

use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use wirespeed::gpio::GpioError;

pyo3::create_exception!(
    wirespeed.gpio,
    ChipClosedError,
    PyException,
    "Raised when a closed chip is used (as python gpiod's `gpiod.ChipClosedError`)."
);
pyo3::create_exception!(
    wirespeed.gpio,
    RequestReleasedError,
    PyException,
    "Raised when a released line request is used (as python gpiod's `gpiod.RequestReleasedError`)."
);

/// `OSError(errno, message)`: Python picks the subclass (`FileNotFoundError` …).
pub fn os_error(errno: i32, message: impl Into<String>) -> PyErr {
    PyOSError::new_err((errno, message.into()))
}

/// The Python exception for `e`.
pub fn to_py(e: GpioError) -> PyErr {
    let msg = e.to_string();
    match e {
        GpioError::LineBusy { .. } => os_error(libc::EBUSY, msg),
        GpioError::OffsetOutOfRange { .. } | GpioError::NotRequested { .. } | GpioError::InvalidConfig { .. } => {
            PyValueError::new_err(msg)
        }
        GpioError::WrongDirection { .. } => os_error(libc::EPERM, msg),
        GpioError::ChipGone { .. } => os_error(libc::ENODEV, msg),
        GpioError::PermissionDenied { .. } => os_error(libc::EACCES, msg),
        GpioError::NotFound { .. } => os_error(libc::ENOENT, msg),
        GpioError::Os { errno, .. } => os_error(errno, msg),
    }
}

/// `ChipClosedError("I/O operation on closed chip")`.
pub fn chip_closed() -> PyErr {
    ChipClosedError::new_err("I/O operation on closed chip")
}

/// `RequestReleasedError("GPIO lines have been released")`.
pub fn released() -> PyErr {
    RequestReleasedError::new_err("GPIO lines have been released")
}
