//! [`Error`]: what went wrong, with the values involved and what is allowed.

use std::fmt;
use wirespeed::gpio::GpioError;
use wirespeed::spi::SpiError;

/// The driver's errors.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The read of a sample set failed on the bus.
    Spi(SpiError),
    /// A GPIO access failed.
    Gpio {
        /// Which line: "CONVST" or "BUSY".
        line: &'static str,
        /// What the GPIO layer said.
        error: GpioError,
    },
    /// A setting out of range; nothing was sent to the device.
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// BUSY did not fall within the time allowed after CONVST.
    BusyTimeout {
        /// How long the driver waited, ns.
        waited_ns: u64,
        /// The datasheet's maximum conversion time at this oversampling, ns.
        max_conversion_ns: u64,
    },
    /// The sample ring already has a producer (another sampling run feeds it).
    RingInUse,
    /// The continuous sampler's thread could not be started, or it panicked.
    Thread(String),
}

impl Error {
    pub(crate) fn invalid(what: &'static str, value: impl fmt::Display, allowed: impl Into<String>) -> Error {
        Error::InvalidConfig { what, value: value.to_string(), allowed: allowed.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spi(e) => write!(f, "AD7606: reading the sample set failed: {e}"),
            Error::Gpio { line, error } => write!(f, "AD7606: {line} line: {error}"),
            Error::InvalidConfig { what, value, allowed } => {
                write!(f, "AD7606: invalid {what} {value} (allowed: {allowed})")
            }
            Error::BusyTimeout { waited_ns, max_conversion_ns } => write!(
                f,
                "AD7606: BUSY still high {} µs after CONVST (the conversion takes at most {} µs)",
                waited_ns / 1000,
                max_conversion_ns / 1000
            ),
            Error::RingInUse => write!(f, "AD7606: the sample ring is already fed by another sampling run"),
            Error::Thread(e) => write!(f, "AD7606: continuous sampler thread: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<SpiError> for Error {
    fn from(e: SpiError) -> Error {
        Error::Spi(e)
    }
}
