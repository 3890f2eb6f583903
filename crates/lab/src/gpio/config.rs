//! [`GpioChipConfig`]: the static properties of a lab GPIO chip, and the
//! ranges a chip can be built with ([`GpioConfigError`] for the others).

use std::fmt;

/// Static properties of a GPIO chip block.
#[derive(Clone, Debug)]
pub struct GpioChipConfig {
    /// Kernel-style name (`gpiochip0`).
    pub name: String,
    /// Functional label (`lab-gpio`).
    pub label: String,
    /// Number of lines, 1..=[`MAX_LINES`](Self::MAX_LINES).
    pub lines: u32,
}

impl Default for GpioChipConfig {
    fn default() -> Self {
        GpioChipConfig { name: "gpiochip0".into(), label: "lab-gpio".into(), lines: 32 }
    }
}

impl GpioChipConfig {
    /// The most lines a chip may have (a SoC's GPIO controllers have tens
    /// to a few hundred; every line's state is set aside up front).
    pub const MAX_LINES: u32 = 1024;

    /// Whether a chip can be built with these properties.
    pub fn validate(&self) -> Result<(), GpioConfigError> {
        if !(1..=Self::MAX_LINES).contains(&self.lines) {
            return Err(GpioConfigError::Lines { lines: self.lines });
        }
        Ok(())
    }
}

/// A GPIO chip configuration no chip can be built with
/// ([`Lab::try_gpio_chip`](crate::Lab::try_gpio_chip)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpioConfigError {
    /// `lines` outside 1..=[`GpioChipConfig::MAX_LINES`].
    Lines {
        /// The number given.
        lines: u32,
    },
}

impl fmt::Display for GpioConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpioConfigError::Lines { lines } => {
                write!(f, "GPIO chip of {lines} lines; allowed: 1..={}", GpioChipConfig::MAX_LINES)
            }
        }
    }
}

impl std::error::Error for GpioConfigError {}
