//! [`SpidevError`]: why a spidev node could not be opened, and what to do.

use super::io::Errno;
use std::fmt;

/// A spidev node could not be opened or is not a spidev node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpidevError {
    /// No such node (ENOENT, ENODEV, ENXIO).
    NotFound {
        /// The path.
        path: String,
    },
    /// No permission (EACCES, EPERM).
    PermissionDenied {
        /// The path.
        path: String,
    },
    /// The node answers, but not as spidev (ENOTTY).
    NotSpidev {
        /// The path.
        path: String,
    },
    /// Another system error.
    Os {
        /// The path.
        path: String,
        /// What was being done.
        op: &'static str,
        /// The errno.
        errno: Errno,
    },
}

impl SpidevError {
    pub(crate) fn from_open(errno: Errno, path: &str) -> SpidevError {
        let path = path.to_owned();
        match errno {
            libc::ENOENT | libc::ENODEV | libc::ENXIO | libc::ENOTDIR => SpidevError::NotFound { path },
            libc::EACCES | libc::EPERM => SpidevError::PermissionDenied { path },
            errno => SpidevError::Os { path, op: "open", errno },
        }
    }

    pub(crate) fn from_call(op: &'static str, errno: Errno, path: &str) -> SpidevError {
        let path = path.to_owned();
        match errno {
            libc::ENOTTY | libc::EINVAL => SpidevError::NotSpidev { path },
            libc::ENODEV | libc::ENXIO => SpidevError::NotFound { path },
            errno => SpidevError::Os { path, op, errno },
        }
    }
}

impl fmt::Display for SpidevError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpidevError::NotFound { path } => write!(
                f,
                "{path}: no such spidev node; is spidev loaded and the device in the device tree (on a Raspberry Pi, \
                 dtparam=spi=on; elsewhere an overlay, or driver_override to rebind a device to spidev)? \
                 `wirespeed list` shows what there is"
            ),
            SpidevError::PermissionDenied { path } => write!(
                f,
                "{path}: permission denied; add yourself to the node's group (often `spi`: sudo usermod -aG spi \
                 $USER, then log in again) or add a udev rule: SUBSYSTEM==\"spidev\", GROUP=\"spi\", MODE=\"0660\""
            ),
            SpidevError::NotSpidev { path } => {
                write!(f, "{path}: not a spidev node (it refuses spidev's ioctls); pick a /dev/spidevB.C node")
            }
            SpidevError::Os { path, op, errno } => {
                write!(f, "{path}: {op} failed: {}", std::io::Error::from_raw_os_error(*errno))
            }
        }
    }
}

impl std::error::Error for SpidevError {}
