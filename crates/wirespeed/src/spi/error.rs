//! Errors of the SPI core: what was wrong, which value, what is allowed.

use super::mode_flags::ModeFlags;
use std::fmt;

/// Why a message was rejected before anything was sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidMessage {
    /// The message has no transfers.
    Empty,
    /// A transfer has neither a TX nor an RX buffer, or both are empty.
    EmptyTransfer {
        /// Index of the transfer in the message.
        index: usize,
    },
    /// TX and RX buffers of one transfer differ in length.
    LengthMismatch {
        /// Index of the transfer.
        index: usize,
        /// TX length in bytes.
        tx: usize,
        /// RX length in bytes.
        rx: usize,
    },
    /// A transfer's length is not a whole number of words.
    PartialWord {
        /// Index of the transfer.
        index: usize,
        /// Length in bytes.
        len: usize,
        /// Bytes per word at this transfer's bits per word.
        word_bytes: usize,
    },
    /// A speed of 0 Hz.
    ZeroSpeed {
        /// Index of the transfer (None: the device's own setting).
        index: Option<usize>,
    },
    /// A speed above what the device or the controller allows.
    SpeedTooHigh {
        /// Index of the transfer (None: the device's own setting).
        index: Option<usize>,
        /// Requested speed.
        requested_hz: u32,
        /// Highest allowed speed.
        max_hz: u32,
    },
    /// A speed below what the controller can divide down to.
    SpeedTooLow {
        /// Index of the transfer (None: the device's own setting).
        index: Option<usize>,
        /// Requested speed.
        requested_hz: u32,
        /// Lowest possible speed.
        min_hz: u32,
    },
    /// Bits per word the controller cannot shift.
    UnsupportedBitsPerWord {
        /// Index of the transfer (None: the device's own setting).
        index: Option<usize>,
        /// Requested bits per word.
        bits: u8,
        /// Bit mask of supported values: bit n−1 set means n bits are supported.
        supported_mask: u32,
    },
    /// A prepared message was run on a device it was not prepared for.
    WrongDevice,
    /// A prepared message's RX buffer ([`OwnedTransfer::read`](super::OwnedTransfer::read))
    /// could not be allocated.
    BufferTooLarge {
        /// Index of the transfer.
        index: usize,
        /// Requested length in bytes.
        len: usize,
    },
    /// A chip select the controller does not have.
    NoSuchChipSelect {
        /// Requested line.
        cs: u8,
        /// Number of native lines.
        available: u8,
    },
    /// Mode bits the controller does not support.
    UnsupportedModeFlags {
        /// The bits asked for that are not supported.
        refused: ModeFlags,
        /// What the controller supports.
        supported: ModeFlags,
    },
    /// A transfer asks for data lines the device is not set up for.
    UnsupportedLines {
        /// Index of the transfer.
        index: usize,
        /// "tx" or "rx".
        dir: &'static str,
        /// Lines asked for.
        nbits: u8,
        /// The device's mode bits.
        device_flags: ModeFlags,
    },
    /// The message is larger than the backend can take in one piece where
    /// its chip select must stay active (e.g. spidev's `bufsiz`).
    MessageTooLarge {
        /// Bytes that would have to go in one piece.
        bytes: usize,
        /// The backend's limit.
        limit: usize,
        /// How to raise the limit, or how to change the message.
        hint: &'static str,
    },
    /// A delay longer than the backend can express.
    DelayTooLong {
        /// Index of the transfer.
        index: usize,
        /// Which delay.
        what: &'static str,
        /// Requested delay.
        ns: u64,
        /// The longest the backend can do.
        max_ns: u64,
    },
}

fn at(index: Option<usize>) -> String {
    index.map_or_else(|| "device setting".to_owned(), |i| format!("transfer {i}"))
}

fn list_bits(mask: u32) -> String {
    let v: Vec<String> = (1..=32).filter(|b| mask & (1 << (b - 1)) != 0).map(|b: u32| b.to_string()).collect();
    v.join(", ")
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidMessage::Empty => write!(f, "empty message: a message needs at least one transfer"),
            InvalidMessage::EmptyTransfer { index } => {
                write!(f, "transfer {index} moves no data: give it a non-empty TX or RX buffer")
            }
            InvalidMessage::LengthMismatch { index, tx, rx } => write!(
                f,
                "transfer {index}: TX is {tx} bytes but RX is {rx} bytes; a full-duplex transfer needs equal lengths"
            ),
            InvalidMessage::PartialWord { index, len, word_bytes } => {
                write!(f, "transfer {index}: {len} bytes is not a whole number of {word_bytes}-byte words")
            }
            InvalidMessage::ZeroSpeed { index } => {
                write!(f, "{}: speed 0 Hz; give a speed above 0 Hz", at(*index))
            }
            InvalidMessage::SpeedTooHigh { index, requested_hz, max_hz } => {
                write!(f, "{}: speed {requested_hz} Hz is above the maximum of {max_hz} Hz", at(*index))
            }
            InvalidMessage::SpeedTooLow { index, requested_hz, min_hz } => {
                write!(f, "{}: speed {requested_hz} Hz is below the controller's minimum of {min_hz} Hz", at(*index))
            }
            InvalidMessage::UnsupportedBitsPerWord { index, bits, supported_mask } => write!(
                f,
                "{}: {bits} bits per word is not supported; allowed: {}",
                at(*index),
                list_bits(*supported_mask)
            ),
            InvalidMessage::WrongDevice => {
                write!(f, "this prepared message belongs to another device; prepare it with the device that runs it")
            }
            InvalidMessage::BufferTooLarge { index, len } => {
                write!(f, "transfer {index}: an RX buffer of {len} bytes could not be allocated")
            }
            InvalidMessage::NoSuchChipSelect { cs, available } => {
                write!(f, "chip select {cs} does not exist; the controller has {available} (0..{available})")
            }
            InvalidMessage::UnsupportedModeFlags { refused, supported } => {
                write!(f, "mode bits {refused} are not supported by this controller; supported: {supported}")
            }
            InvalidMessage::UnsupportedLines { index, dir, nbits, device_flags } => write!(
                f,
                "transfer {index}: {dir} on {nbits} lines needs the device's {} flag (device flags: {device_flags}); \
                 allowed: 1, or 2/4 with the matching DUAL/QUAD flag",
                if *nbits == 2 {
                    format!("{}_DUAL or {}_QUAD", dir.to_uppercase(), dir.to_uppercase())
                } else {
                    format!("{}_QUAD", dir.to_uppercase())
                }
            ),
            InvalidMessage::MessageTooLarge { bytes, limit, hint } => write!(
                f,
                "{bytes} bytes must go in one piece (chip select held) but the backend takes at most {limit}: {hint}"
            ),
            InvalidMessage::DelayTooLong { index, what, ns, max_ns } => {
                write!(
                    f,
                    "transfer {index}: {what} of {ns} ns is longer than this backend can do ({max_ns} ns at most)"
                )
            }
        }
    }
}

/// An error from the SPI core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpiError {
    /// The message was rejected; nothing was sent.
    Invalid(InvalidMessage),
    /// The controller did not finish a transfer in time.
    Timeout {
        /// Index of the transfer.
        index: usize,
        /// How long the core waited, in µs.
        waited_us: u64,
    },
    /// The controller reported a fault (FIFO over/underflow, refused start, …).
    Controller {
        /// Index of the transfer.
        index: usize,
        /// What the controller driver said.
        reason: &'static str,
    },
    /// A GPIO chip select could not be driven.
    ChipSelect(String),
    /// The bus was shut down.
    BusGone,
    /// A sync call (`sync`, `run`, `write`, …) or `lock_bus` from a
    /// [`submit_with`](super::SpiDevice::submit_with) callback to its own
    /// bus: the callback runs on that bus's pump thread with the bus held,
    /// which would have to finish the callback before it could run the
    /// message or give up the bus. Nothing was sent.
    CalledFromCallback,
    /// A sync call or `lock_bus` from the thread that holds the bus's
    /// [`BusLock`](super::BusLock) for another device: it would wait for
    /// the lock its own thread holds. Run the message through the lock
    /// (`BusLock::sync`, `BusLock::run`) or drop the lock first. Nothing was sent.
    LockedByCaller,
    /// A message-level backend (Linux spidev) failed the message: what the
    /// system said and what to do about it.
    Backend(BackendError),
    /// The controller's DMA engine met an address the IOMMU does not map
    /// for that access: the transfer stopped there and the controller was reset.
    DmaFault {
        /// Index of the transfer.
        index: usize,
        /// The device address (IOVA) of the access.
        device_addr: u64,
    },
    /// A transfer's buffers could not be mapped for DMA (or unmapped after
    /// it): nothing was sent if the map failed.
    Dma {
        /// Index of the transfer.
        index: usize,
        /// What the DMA layer said.
        reason: String,
    },
}

/// What went wrong below a message-level backend (the kernel, for spidev).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendError {
    /// The kernel refused a value of the message or the device (EINVAL):
    /// a speed, word size, mode or line count the controller driver cannot do.
    Refused {
        /// The device node.
        device: String,
        /// The values sent, for the user to check against the controller.
        detail: String,
    },
    /// The kernel kept mode bits other than those written: the controller refuses them.
    ModeRefused {
        /// The device node.
        device: String,
        /// Bits written.
        asked: ModeFlags,
        /// Bits that did not stick.
        refused: ModeFlags,
    },
    /// The message was too large for the kernel (EMSGSIZE).
    TooLarge {
        /// The device node.
        device: String,
        /// Bytes sent in the refused piece.
        bytes: usize,
        /// The limit the backend knew of.
        limit: usize,
    },
    /// The device went away (ENODEV, ENXIO, ESHUTDOWN).
    Gone {
        /// The device node.
        device: String,
    },
    /// Another system error.
    Os {
        /// The device node.
        device: String,
        /// What was being done.
        op: &'static str,
        /// The errno.
        errno: i32,
    },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Refused { device, detail } => write!(
                f,
                "{device}: the kernel's controller driver refused the message ({detail}); check the speed, bits per \
                 word, mode and line counts against what the controller supports"
            ),
            BackendError::ModeRefused { device, asked, refused } => {
                write!(f, "{device}: the controller refused mode bits {refused} (asked for {asked})")
            }
            BackendError::TooLarge { device, bytes, limit } => write!(
                f,
                "{device}: the kernel refused a message of {bytes} bytes (limit {limit}); raise spidev's buffer with \
                 spidev.bufsiz= on the kernel command line"
            ),
            BackendError::Gone { device } => write!(f, "{device}: the device has gone (unbound or removed)"),
            BackendError::Os { device, op, errno } => {
                write!(f, "{device}: {op} failed: {}", std::io::Error::from_raw_os_error(*errno))
            }
        }
    }
}

impl std::error::Error for BackendError {}

impl fmt::Display for SpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpiError::Invalid(e) => write!(f, "invalid SPI message: {e}"),
            SpiError::Timeout { index, waited_us } => {
                write!(f, "transfer {index} did not complete within {waited_us} µs")
            }
            SpiError::Controller { index, reason } => write!(f, "transfer {index}: controller fault: {reason}"),
            SpiError::ChipSelect(e) => write!(f, "chip select: {e}"),
            SpiError::BusGone => write!(f, "the SPI bus has been shut down"),
            SpiError::CalledFromCallback => write!(
                f,
                "sync call or bus lock from a completion callback of the same bus: it would wait for the thread \
                 running the callback; submit the message (submit or submit_with) instead"
            ),
            SpiError::LockedByCaller => write!(
                f,
                "sync call or bus lock from the thread that holds this bus's lock: it would wait for itself; \
                 run the message through the BusLock (lock.sync or lock.run) or drop the lock first"
            ),
            SpiError::Backend(e) => write!(f, "{e}"),
            SpiError::DmaFault { index, device_addr } => write!(
                f,
                "transfer {index}: DMA fault at device address {device_addr:#x}: the IOMMU does not map it for that access"
            ),
            SpiError::Dma { index, reason } => write!(f, "transfer {index}: DMA mapping: {reason}"),
        }
    }
}

impl std::error::Error for SpiError {}
impl std::error::Error for InvalidMessage {}

impl From<InvalidMessage> for SpiError {
    fn from(e: InvalidMessage) -> Self {
        SpiError::Invalid(e)
    }
}

/// A bus could not be started: its pump thread could not be created (the
/// process is out of threads or memory). Nothing was started; the
/// controller was dropped with the bus.
#[derive(Debug)]
pub struct BusStartError {
    /// The controller's name ([`ControllerCaps::name`](super::ControllerCaps::name)).
    pub controller: &'static str,
    /// What the operating system said.
    pub source: std::io::Error,
}

impl fmt::Display for BusStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot start the pump thread of SPI bus {:?}: {}; the process is out of threads or memory \
             (see ulimit -u and the memory limits)",
            self.controller, self.source
        )
    }
}

impl std::error::Error for BusStartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_is_allowed() {
        let e =
            SpiError::from(InvalidMessage::UnsupportedBitsPerWord { index: Some(2), bits: 12, supported_mask: 0x8080 });
        assert_eq!(e.to_string(), "invalid SPI message: transfer 2: 12 bits per word is not supported; allowed: 8, 16");
        let e = InvalidMessage::SpeedTooHigh { index: None, requested_hz: 50_000_000, max_hz: 20_000_000 };
        assert!(e.to_string().contains("device setting"));
        assert!(e.to_string().contains("20000000"));
    }
}
