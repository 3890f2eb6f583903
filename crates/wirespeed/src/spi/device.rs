//! [`DeviceConfig`]: one chip on a bus — its chip select, mode, clock and
//! chip-select timing.

use super::mode_flags::ModeFlags;
use super::transfer::Mode;
use std::fmt;
use std::sync::Arc;

/// A chip-select line driven by software (a GPIO line), for devices that are
/// not on one of the controller's native chip selects.
/// [`GpioCs`](crate::gpio::GpioCs) implements it for a GPIO output line.
///
/// The core calls it with the bus held, before the first clock and after
/// the last (applying the device's CS setup, hold and inactive times from
/// the moment it returns); an error fails the transfer with
/// [`SpiError::ChipSelect`](super::SpiError::ChipSelect) carrying its text.
pub trait CsPin: Send + Sync {
    /// Drives the line active (the device selected) or inactive.
    fn set_active(&self, active: bool) -> Result<(), String>;
}

/// Which line selects the device.
#[derive(Clone)]
pub enum ChipSelect {
    /// One of the controller's native chip selects.
    Native(u8),
    /// A GPIO line.
    Gpio(Arc<dyn CsPin>),
    /// No chip select: the user drives it (e.g. embedded-hal `SpiBus` users).
    None,
}

impl fmt::Debug for ChipSelect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChipSelect::Native(n) => write!(f, "Native({n})"),
            ChipSelect::Gpio(_) => write!(f, "Gpio"),
            ChipSelect::None => write!(f, "None"),
        }
    }
}

/// How to talk to one device.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// Chip-select line.
    pub cs: ChipSelect,
    /// Clock mode.
    pub mode: Mode,
    /// Mode bits beyond the clock mode (CS polarity, bit order, dual/quad
    /// lines); the controller must support them ([`ControllerCaps::mode_flags`](super::ControllerCaps::mode_flags)).
    pub flags: ModeFlags,
    /// Default clock for transfers that do not set one.
    pub speed_hz: u32,
    /// The device's maximum clock (transfers above it are rejected).
    pub max_speed_hz: u32,
    /// Default bits per word.
    pub bits_per_word: u8,
    /// CS active → first clock, minimum (ns).
    pub cs_setup_ns: u32,
    /// Last clock → CS inactive, minimum (ns).
    pub cs_hold_ns: u32,
    /// CS inactive between two selections, minimum (ns).
    pub cs_inactive_ns: u32,
}

impl DeviceConfig {
    /// A device on native chip select `cs`, mode 0, 8 bits, at `speed_hz`
    /// (also its maximum), with no CS timing requirements.
    pub fn new(cs: u8, speed_hz: u32) -> DeviceConfig {
        DeviceConfig {
            cs: ChipSelect::Native(cs),
            mode: Mode::Mode0,
            flags: ModeFlags::NONE,
            speed_hz,
            max_speed_hz: speed_hz,
            bits_per_word: 8,
            cs_setup_ns: 0,
            cs_hold_ns: 0,
            cs_inactive_ns: 0,
        }
    }

    /// Sets the CS timing (setup, hold, inactive) in ns.
    #[must_use]
    pub fn cs_timing_ns(mut self, setup: u32, hold: u32, inactive: u32) -> DeviceConfig {
        self.cs_setup_ns = setup;
        self.cs_hold_ns = hold;
        self.cs_inactive_ns = inactive;
        self
    }

    /// Sets the clock mode.
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> DeviceConfig {
        self.mode = mode;
        self
    }

    /// Sets the mode bits beyond the clock mode.
    #[must_use]
    pub fn flags(mut self, flags: ModeFlags) -> DeviceConfig {
        self.flags = flags;
        self
    }

    /// Sets the maximum clock.
    #[must_use]
    pub fn max_speed_hz(mut self, hz: u32) -> DeviceConfig {
        self.max_speed_hz = hz;
        self
    }

    /// Sets the default bits per word.
    #[must_use]
    pub fn bits_per_word(mut self, bits: u8) -> DeviceConfig {
        self.bits_per_word = bits;
        self
    }

    /// Uses a GPIO line as chip select.
    #[must_use]
    pub fn gpio_cs(mut self, pin: Arc<dyn CsPin>) -> DeviceConfig {
        self.cs = ChipSelect::Gpio(pin);
        self
    }
}
