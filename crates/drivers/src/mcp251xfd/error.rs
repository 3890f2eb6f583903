//! [`Error`]: what went wrong, with the values read and what was expected.

use crate::can::FrameError;
use std::fmt;
use wirespeed::gpio::GpioError;
use wirespeed::spi::SpiError;

/// The driver's errors.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// An SPI transfer failed.
    Spi(SpiError),
    /// The INT line failed.
    Gpio(String),
    /// The oscillator did not report ready after reset (OSC.OSCRDY stayed 0).
    /// The device was left in configuration mode.
    OscillatorNotReady {
        /// The last OSC value read.
        osc: u32,
        /// How long the driver waited, µs.
        waited_us: u64,
    },
    /// The PLL did not lock (OSC.PLLRDY stayed 0) after it was enabled
    /// ([`Config::pll`](super::Config::pll)). The chip is in configuration mode.
    PllNotLocked {
        /// The last OSC value read.
        osc: u32,
        /// How long the driver waited, µs.
        waited_us: u64,
    },
    /// DEVID names neither an MCP2518FD nor an MCP2517FD. The device was left in configuration mode.
    WrongDevice {
        /// The DEVID value read.
        devid: u32,
        /// The ID field (bits 7:4) expected.
        expected_id: u32,
    },
    /// The device did not reach a requested operation mode.
    ModeTimeout {
        /// Mode requested (REQOP value).
        requested: u8,
        /// Mode it reported (OPMOD).
        current: u8,
    },
    /// The device is not in configuration mode after reset.
    NotInConfigMode {
        /// OPMOD read.
        opmod: u8,
    },
    /// No bit timing reaches the requested bit rate from this clock closely enough.
    BitTiming {
        /// "nominal" or "data".
        phase: &'static str,
        /// Requested bit rate.
        requested: u32,
        /// Clock.
        clock_hz: u32,
        /// Best relative error found, in parts per million (`u32::MAX`: none at all).
        best_error_ppm: u32,
        /// Largest error accepted, ppm.
        max_error_ppm: u32,
    },
    /// A configuration value out of range.
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// The TEF/FIFO layout does not fit the 2 KiB message RAM.
    RamOverflow {
        /// Bytes needed.
        needed: usize,
    },
    /// The device placed a FIFO elsewhere than the driver computed.
    LayoutMismatch {
        /// Which FIFO.
        what: &'static str,
        /// Address the driver expects.
        expected: u16,
        /// Address the device reports (its user address + the RAM's start).
        reported: u32,
    },
    /// A READ_CRC reply failed its CRC (after retries).
    Crc {
        /// Address read.
        addr: u16,
        /// CRC of what arrived.
        computed: u16,
        /// CRC the device sent.
        received: u16,
    },
    /// The device flagged a WRITE_CRC with a bad CRC or length.
    WriteCrc {
        /// Address written.
        addr: u16,
        /// CRC register value.
        crc_register: u32,
    },
    /// The register map refused or failed an access.
    Register {
        /// Address.
        addr: u16,
        /// What the register map said.
        reason: String,
    },
    /// A register access of an unsupported size.
    AccessSize {
        /// Address.
        addr: u16,
        /// Bytes.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// The frame does not fit this controller's configuration.
    Frame(FrameError),
    /// A CAN FD frame on a controller configured for CAN 2.0, or one
    /// longer than the TX payload size.
    FrameNotSupported {
        /// What is wrong.
        reason: &'static str,
    },
    /// The TX queue stayed full for the whole timeout.
    TxTimeout {
        /// Frames waiting for completion.
        in_flight: usize,
    },
    /// The controller is bus-off; sending is refused until it recovers.
    BusOff,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spi(e) => write!(f, "SPI: {e}"),
            Error::Gpio(e) => write!(f, "INT line: {e}"),
            Error::OscillatorNotReady { osc, waited_us } => write!(
                f,
                "oscillator not ready after {waited_us} µs (OSC = {osc:#010x}, OSCRDY bit 10 clear); device left in configuration mode"
            ),
            Error::PllNotLocked { osc, waited_us } => write!(
                f,
                "PLL not locked after {waited_us} µs (OSC = {osc:#010x}, PLLRDY bit 8 clear); device left in configuration mode"
            ),
            Error::WrongDevice { devid, expected_id } => write!(
                f,
                "DEVID = {devid:#010x}: ID field {} is neither an MCP2518FD ({expected_id}) nor an MCP2517FD (0); device left in configuration mode",
                (devid >> 4) & 0xF
            ),
            Error::ModeTimeout { requested, current } => {
                write!(f, "requested operation mode {requested}, device stayed in mode {current}")
            }
            Error::NotInConfigMode { opmod } => write!(f, "after reset the device reports mode {opmod}, not configuration (4)"),
            Error::BitTiming { phase, requested, clock_hz, best_error_ppm, max_error_ppm } => {
                if *best_error_ppm == u32::MAX {
                    write!(f, "{phase} bit rate {requested} bit/s cannot be reached from a {clock_hz} Hz clock at all")
                } else {
                    write!(
                        f,
                        "{phase} bit rate {requested} bit/s from a {clock_hz} Hz clock: best error {best_error_ppm} ppm, allowed {max_error_ppm} ppm"
                    )
                }
            }
            Error::InvalidConfig { what, value, allowed } => write!(f, "{what} = {value}; allowed: {allowed}"),
            Error::RamOverflow { needed } => write!(f, "FIFOs need {needed} bytes of message RAM; the device has 2048"),
            Error::LayoutMismatch { what, expected, reported } => {
                write!(f, "{what} at {reported:#x} in the device, the driver computed {expected:#x}")
            }
            Error::Crc { addr, computed, received } => {
                write!(f, "READ_CRC at {addr:#05x}: CRC {received:#06x} received, {computed:#06x} computed")
            }
            Error::WriteCrc { addr, crc_register } => {
                write!(f, "WRITE_CRC at {addr:#05x} rejected by the device (CRC register {crc_register:#010x})")
            }
            Error::Register { addr, reason } => write!(f, "register {addr:#05x}: {reason}"),
            Error::AccessSize { addr, len, max } => {
                write!(f, "access of {len} bytes at {addr:#05x}; allowed 1..={max} (whole words in RAM with CRC)")
            }
            Error::Frame(e) => write!(f, "frame: {e}"),
            Error::FrameNotSupported { reason } => write!(f, "frame not supported: {reason}"),
            Error::TxTimeout { in_flight } => write!(f, "TX queue full ({in_flight} in flight) for the whole timeout"),
            Error::BusOff => write!(f, "controller is bus-off"),
        }
    }
}

impl std::error::Error for Error {}

impl From<SpiError> for Error {
    fn from(e: SpiError) -> Self {
        Error::Spi(e)
    }
}

impl From<GpioError> for Error {
    fn from(e: GpioError) -> Self {
        Error::Gpio(e.to_string())
    }
}

impl From<FrameError> for Error {
    fn from(e: FrameError) -> Self {
        Error::Frame(e)
    }
}
