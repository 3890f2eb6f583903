//! [`SpiControllerConfig`]: the static properties of a WSPI block, and the
//! ranges a block can be built with ([`SpiConfigError`] for the others).

use std::fmt;

/// Static properties of a controller block.
#[derive(Clone, Debug)]
pub struct SpiControllerConfig {
    /// Name, for traces and errors.
    pub name: &'static str,
    /// TX and RX FIFO depth in bytes (each), 1..=[`MAX_FIFO_BYTES`](Self::MAX_FIFO_BYTES).
    /// A word takes 1, 2 or 4 bytes (up to 8, 16 or 32 bits): a word wider
    /// than the FIFO cannot be pushed at all.
    pub fifo_bytes: u32,
    /// Native chip-select lines; 0 for a block whose devices all have their
    /// chip select driven from outside (a GPIO line).
    pub num_cs: u8,
    /// Input clock, 1..=`u32::MAX` Hz (what the 32-bit `BASECLK` register
    /// reports); SCLK = this / CLKDIV.
    pub base_clock_hz: u64,
    /// Time from `PWR.ON` to `STATUS.READY`, in ns.
    pub power_up_ns: u64,
}

impl Default for SpiControllerConfig {
    fn default() -> Self {
        SpiControllerConfig { name: "spi0", fifo_bytes: 64, num_cs: 4, base_clock_hz: 200_000_000, power_up_ns: 20_000 }
    }
}

impl SpiControllerConfig {
    /// The deepest FIFO a block may have, in bytes (SoC SPI FIFOs hold tens
    /// to hundreds of bytes; the model sets its FIFOs' memory aside up front).
    pub const MAX_FIFO_BYTES: u32 = 1 << 16;

    /// Whether a block can be built with these properties.
    pub fn validate(&self) -> Result<(), SpiConfigError> {
        if !(1..=Self::MAX_FIFO_BYTES).contains(&self.fifo_bytes) {
            return Err(SpiConfigError::FifoBytes { fifo_bytes: self.fifo_bytes });
        }
        if !(1..=u64::from(u32::MAX)).contains(&self.base_clock_hz) {
            return Err(SpiConfigError::BaseClock { base_clock_hz: self.base_clock_hz });
        }
        Ok(())
    }
}

/// A WSPI block configuration no block can be built with
/// ([`Lab::try_spi_controller`](crate::Lab::try_spi_controller)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpiConfigError {
    /// `fifo_bytes` outside 1..=[`SpiControllerConfig::MAX_FIFO_BYTES`].
    FifoBytes {
        /// The depth given.
        fifo_bytes: u32,
    },
    /// `base_clock_hz` outside 1..=`u32::MAX`.
    BaseClock {
        /// The clock given.
        base_clock_hz: u64,
    },
}

impl fmt::Display for SpiConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpiConfigError::FifoBytes { fifo_bytes } => write!(
                f,
                "SPI controller FIFO of {fifo_bytes} bytes; allowed: 1..={} (at least one 8-bit word)",
                SpiControllerConfig::MAX_FIFO_BYTES
            ),
            SpiConfigError::BaseClock { base_clock_hz } => write!(
                f,
                "SPI controller input clock of {base_clock_hz} Hz; allowed: 1..={} Hz (the 32-bit BASECLK register)",
                u32::MAX
            ),
        }
    }
}

impl std::error::Error for SpiConfigError {}

/// A device attached to a native chip select the block does not have
/// ([`SpiController::try_attach`](super::SpiController::try_attach)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSuchChipSelect {
    /// The block's name.
    pub block: &'static str,
    /// The chip select asked for.
    pub cs: u8,
    /// The block's native chip selects (`0..num_cs` exist).
    pub num_cs: u8,
}

impl fmt::Display for NoSuchChipSelect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let NoSuchChipSelect { block, cs, num_cs } = self;
        if *num_cs == 0 {
            write!(f, "{block} has no native chip selects (CS {cs} asked); attach with attach_external_cs")
        } else {
            write!(f, "{block} has {num_cs} native chip selects; CS {cs} asked, allowed: 0..={}", num_cs - 1)
        }
    }
}

impl std::error::Error for NoSuchChipSelect {}
