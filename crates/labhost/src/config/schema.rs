//! The board file as written: serde structs that refuse unknown keys and
//! wrong types, with the spans later checks need for their line numbers.
//! Every kind of device shares one table ([`RawDevice`]): which keys a kind
//! takes is checked afterwards, where the error can name the line.

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBoard {
    /// `[lab]`.
    #[serde(default)]
    pub lab: RawLab,
    /// `[[spi]]` tables.
    #[serde(default)]
    pub spi: Vec<Spanned<RawSpi>>,
    /// `[[gpio]]` tables.
    #[serde(default)]
    pub gpio: Vec<Spanned<RawGpio>>,
}

/// `[lab]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLab {
    /// Every transfer completes at once.
    #[serde(default)]
    pub instant_wire: bool,
}

/// One `[[spi]]` table: a WSPI block and the bus the stack runs on it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpi {
    /// Bus number (`/dev/spidev<bus>.<cs>`).
    pub bus: Spanned<u32>,
    /// The block's input clock in Hz.
    pub base_clock_hz: Option<Spanned<u64>>,
    /// FIFO depth in bytes.
    pub fifo_bytes: Option<Spanned<u32>>,
    /// spidev's bufsiz.
    pub bufsiz: Option<Spanned<u64>>,
    /// `[[spi.device]]` tables.
    #[serde(default)]
    pub device: Vec<Spanned<RawDevice>>,
}

/// One `[[spi.device]]` table, every kind's keys together.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevice {
    /// Native chip select.
    pub cs: Spanned<u8>,
    /// `spi-nor`, `loopback`, `mcp2518fd` or `ad7606`.
    pub kind: Spanned<String>,
    /// The node's default clock (`spi-max-frequency`).
    pub max_speed_hz: Option<Spanned<u32>>,
    /// spi-nor: the part.
    pub chip: Option<Spanned<String>>,
    /// spi-nor: backing file.
    pub image: Option<Spanned<String>>,
    /// spi-nor: multiplies the datasheet times.
    pub time_scale: Option<Spanned<f64>>,
    /// mcp2518fd: crystal frequency.
    pub osc_hz: Option<Spanned<u64>>,
    /// mcp2518fd: the CAN bus's nominal (arbitration) bit rate.
    pub can_bitrate: Option<Spanned<u32>>,
    /// mcp2518fd: the CAN bus's data-phase bit rate.
    pub can_data_bitrate: Option<Spanned<u32>>,
    /// ad7606: input range, "5V" or "10V".
    pub range: Option<Spanned<String>>,
    /// ad7606: oversampling ratio.
    pub oversampling: Option<Spanned<u8>>,
    /// ad7606: the source on V1, V2, … (at most 8).
    pub signals: Option<Spanned<Vec<String>>>,
}

/// One `[[gpio]]` table: a GPIO chip block.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpio {
    /// Chip number (`/dev/gpiochip<chip>`).
    pub chip: Spanned<u32>,
    /// Number of lines.
    pub lines: Spanned<u32>,
    /// The chip's label.
    pub label: Option<Spanned<String>>,
    /// `[[gpio.line]]` tables.
    #[serde(default)]
    pub line: Vec<Spanned<RawLine>>,
}

/// One `[[gpio.line]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLine {
    /// Line offset.
    pub offset: Spanned<u32>,
    /// Line name (line info).
    pub name: Option<Spanned<String>>,
    /// Driven from outside, toggling with this half-period.
    pub toggle_every_us: Option<Spanned<u64>>,
    /// Driven from outside at a fixed level.
    pub level: Option<Spanned<RawLevel>>,
    /// Wired to a device pin: `spi<bus>.<cs>:<pin>`.
    pub wire: Option<Spanned<String>>,
}

/// `level = "high" | "low"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RawLevel {
    /// Driven high.
    High,
    /// Driven low.
    Low,
}
