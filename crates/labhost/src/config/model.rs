//! A checked board description ([`BoardSpec`]): every value in range,
//! every default filled in, every wire resolved; each part keeps the line
//! it was written on, so that building errors can name it too.

use std::path::PathBuf;
use wirespeed_lab::devices::ad7606::{Range, Signal};
use wirespeed_lab::devices::ChipSpec;

/// A checked board file.
#[derive(Clone, Debug, PartialEq)]
pub struct BoardSpec {
    /// `[lab] instant_wire`.
    pub instant_wire: bool,
    /// `[[spi]]` tables, in file order.
    pub spi: Vec<SpiBusSpec>,
    /// `[[gpio]]` tables, in file order.
    pub gpio: Vec<GpioChipSpec>,
}

/// One WSPI block and its devices.
#[derive(Clone, Debug, PartialEq)]
pub struct SpiBusSpec {
    /// Bus number.
    pub bus: u32,
    /// Line of its `[[spi]]` header.
    pub line: usize,
    /// The block's input clock in Hz.
    pub base_clock_hz: u64,
    /// FIFO depth in bytes.
    pub fifo_bytes: u32,
    /// spidev's bufsiz.
    pub bufsiz: usize,
    /// Devices, in file order.
    pub devices: Vec<DeviceSpec>,
}

/// One device on a native chip select.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    /// Chip select.
    pub cs: u8,
    /// Line of its `[[spi.device]]` header.
    pub line: usize,
    /// The node's default clock in Hz.
    pub max_speed_hz: u32,
    /// What it is.
    pub kind: DeviceKind,
}

/// The kinds of device a board file can attach.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceKind {
    /// An SPI NOR flash.
    SpiNor {
        /// The part.
        chip: &'static ChipSpec,
        /// Backing file, as written (relative paths are taken from the
        /// working directory when built); memory when `None`.
        image: Option<PathBuf>,
        /// Multiplies the datasheet times.
        time_scale: f64,
    },
    /// MISO wired to MOSI.
    Loopback,
    /// An MCP2518FD CAN FD controller on a CAN bus of its own.
    Mcp2518fd {
        /// Crystal frequency in Hz.
        osc_hz: u64,
        /// The CAN bus's nominal bit rate.
        can_bitrate: u32,
        /// The CAN bus's data-phase bit rate.
        can_data_bitrate: u32,
    },
    /// An AD7606 8-channel ADC.
    Ad7606 {
        /// Input range.
        range: Range,
        /// Oversampling ratio.
        oversampling: u8,
        /// The sources on V1, V2, … (at most 8; the others are at 0 V).
        signals: Vec<Signal>,
    },
}

impl DeviceKind {
    /// The name a board file gives the kind.
    pub fn name(&self) -> &'static str {
        match self {
            DeviceKind::SpiNor { .. } => "spi-nor",
            DeviceKind::Loopback => "loopback",
            DeviceKind::Mcp2518fd { .. } => "mcp2518fd",
            DeviceKind::Ad7606 { .. } => "ad7606",
        }
    }

    /// The pins a GPIO line can be wired to.
    pub fn pins(&self) -> &'static [DevicePin] {
        match self {
            DeviceKind::SpiNor { .. } => &[DevicePin::Wp],
            DeviceKind::Loopback => &[],
            DeviceKind::Mcp2518fd { .. } => &[DevicePin::Int, DevicePin::Int0, DevicePin::Int1],
            DeviceKind::Ad7606 { .. } => &[DevicePin::Convst, DevicePin::Busy],
        }
    }
}

/// A device pin a GPIO line can be wired to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevicePin {
    /// MCP2518FD INT (output, active low).
    Int,
    /// MCP2518FD INT0 / GPIO0 (output, active low).
    Int0,
    /// MCP2518FD INT1 / GPIO1 (output, active low).
    Int1,
    /// SPI NOR WP# (input, active low).
    Wp,
    /// AD7606 CONVST (input: a rising edge starts a conversion).
    Convst,
    /// AD7606 BUSY (output, high while converting).
    Busy,
}

impl DevicePin {
    /// Its name in a `wire`.
    pub fn name(self) -> &'static str {
        match self {
            DevicePin::Int => "int",
            DevicePin::Int0 => "int0",
            DevicePin::Int1 => "int1",
            DevicePin::Wp => "wp",
            DevicePin::Convst => "convst",
            DevicePin::Busy => "busy",
        }
    }

    /// Whether the device drives it (the GPIO line is then an input).
    pub fn is_device_output(self) -> bool {
        !matches!(self, DevicePin::Wp | DevicePin::Convst)
    }
}

/// A pin of a device on an SPI bus: `spi<bus>.<cs>:<pin>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireRef {
    /// Bus number.
    pub bus: u32,
    /// Chip select.
    pub cs: u8,
    /// The pin.
    pub pin: DevicePin,
}

/// One GPIO chip block.
#[derive(Clone, Debug, PartialEq)]
pub struct GpioChipSpec {
    /// Chip number (`/dev/gpiochip<chip>`).
    pub chip: u32,
    /// Line of its `[[gpio]]` header.
    pub line: usize,
    /// Number of lines.
    pub lines: u32,
    /// The chip's label.
    pub label: String,
    /// Line names, one per line.
    pub names: Vec<Option<String>>,
    /// Lines driven from outside or wired to a device, in file order.
    pub drivers: Vec<LineDriverSpec>,
}

/// What drives one line from outside the chip.
#[derive(Clone, Debug, PartialEq)]
pub struct LineDriverSpec {
    /// The line offset.
    pub offset: u32,
    /// Line of its `[[gpio.line]]` header.
    pub line: usize,
    /// The driver.
    pub driver: LineDriver,
}

/// The drivers a line can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineDriver {
    /// Toggles every `period_us` µs, starting low.
    Toggle {
        /// Time between two edges in µs.
        period_us: u64,
    },
    /// A fixed level (`true`: high).
    Level(bool),
    /// Wired to a device pin.
    Wire(WireRef),
}
