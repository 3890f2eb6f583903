//! Line settings and request configuration, validated before any backend
//! sees them.
//!
//! ```
//! use wirespeed::gpio::{Bias, Edge, LineSettings, RequestConfig};
//! use std::time::Duration;
//! let cfg = RequestConfig::new("adc")
//!     .line(4, LineSettings::output(false))                 // CONVST
//!     .line(5, LineSettings::input().bias(Bias::PullUp)     // BUSY
//!         .edge(Edge::Falling).debounce(Duration::ZERO));
//! assert!(cfg.validate().is_ok());
//! ```

use super::error::GpioError;
use std::time::Duration;

/// Most lines in one request (the kernel's `GPIO_V2_LINES_MAX`).
pub const MAX_LINES: usize = 64;
/// Longest consumer name in bytes (the kernel's 32-byte field minus its NUL).
pub const MAX_CONSUMER: usize = 31;
/// Largest edge-event buffer of one request, in events (the kernel's
/// `GPIO_V2_LINES_MAX * 16`).
pub const MAX_EVENT_BUFFER: usize = MAX_LINES * 16;

/// Line direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Input.
    #[default]
    Input,
    /// Output.
    Output,
}

/// Line bias.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Bias {
    /// Leave the bias as it is.
    #[default]
    AsIs,
    /// No pull.
    Disabled,
    /// Pull-up.
    PullUp,
    /// Pull-down.
    PullDown,
}

/// Output drive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Drive {
    /// Drives both levels.
    #[default]
    PushPull,
    /// Drives low only.
    OpenDrain,
    /// Drives high only.
    OpenSource,
}

/// Edge detection (on logical values: "rising" is inactive to active).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Edge {
    /// None.
    #[default]
    None,
    /// Inactive to active.
    Rising,
    /// Active to inactive.
    Falling,
    /// Both.
    Both,
}

/// The settings of one line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LineSettings {
    /// Direction.
    pub direction: Direction,
    /// Logical output value at request (outputs only).
    pub output_value: bool,
    /// Bias.
    pub bias: Bias,
    /// Drive (outputs only).
    pub drive: Drive,
    /// Active low: logical 1 is the low level.
    pub active_low: bool,
    /// Edge detection (inputs only).
    pub edge: Edge,
    /// Debounce period (inputs only; whole microseconds, at most `u32::MAX` µs).
    pub debounce: Duration,
}

impl LineSettings {
    /// An input.
    pub fn input() -> LineSettings {
        LineSettings::default()
    }

    /// An output at logical `value`.
    pub fn output(value: bool) -> LineSettings {
        LineSettings { direction: Direction::Output, output_value: value, ..LineSettings::default() }
    }

    /// With bias `b`.
    #[must_use]
    pub fn bias(mut self, b: Bias) -> LineSettings {
        self.bias = b;
        self
    }

    /// With drive `d`.
    #[must_use]
    pub fn drive(mut self, d: Drive) -> LineSettings {
        self.drive = d;
        self
    }

    /// Active low.
    #[must_use]
    pub fn active_low(mut self, yes: bool) -> LineSettings {
        self.active_low = yes;
        self
    }

    /// With edge detection `e`.
    #[must_use]
    pub fn edge(mut self, e: Edge) -> LineSettings {
        self.edge = e;
        self
    }

    /// With debounce period `d`.
    #[must_use]
    pub fn debounce(mut self, d: Duration) -> LineSettings {
        self.debounce = d;
        self
    }

    /// Checks that the settings make sense together.
    pub fn validate(&self) -> Result<(), GpioError> {
        let output = self.direction == Direction::Output;
        if output && self.edge != Edge::None {
            return Err(GpioError::invalid("edge detection", format!("{:?} on an output", self.edge), "inputs only"));
        }
        if output && !self.debounce.is_zero() {
            return Err(GpioError::invalid("debounce", format!("{:?} on an output", self.debounce), "inputs only"));
        }
        if !output && self.drive != Drive::PushPull {
            return Err(GpioError::invalid("drive", format!("{:?} on an input", self.drive), "outputs only"));
        }
        if self.debounce.as_micros() > u128::from(u32::MAX) {
            return Err(GpioError::invalid("debounce", format!("{:?}", self.debounce), "0 to 4294967295 µs"));
        }
        if self.debounce.subsec_micros() * 1_000 != self.debounce.subsec_nanos() {
            return Err(GpioError::invalid("debounce", format!("{:?}", self.debounce), "whole microseconds"));
        }
        Ok(())
    }
}

/// Settings for a set of lines, by offset, in request order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineConfig {
    lines: Vec<(u32, LineSettings)>,
}

impl LineConfig {
    /// No lines.
    pub fn new() -> LineConfig {
        LineConfig::default()
    }

    /// Adds line `offset` with `settings`.
    #[must_use]
    pub fn line(mut self, offset: u32, settings: LineSettings) -> LineConfig {
        self.lines.push((offset, settings));
        self
    }

    /// The lines, in order.
    pub fn lines(&self) -> &[(u32, LineSettings)] {
        &self.lines
    }

    /// The offsets, in order.
    pub fn offsets(&self) -> impl Iterator<Item = u32> + '_ {
        self.lines.iter().map(|l| l.0)
    }

    /// Checks: 1..=64 lines, no offset twice, each line's settings valid.
    pub fn validate(&self) -> Result<(), GpioError> {
        if self.lines.is_empty() || self.lines.len() > MAX_LINES {
            return Err(GpioError::invalid("line count", self.lines.len(), "1 to 64 lines"));
        }
        for (i, (off, s)) in self.lines.iter().enumerate() {
            if self.lines[..i].iter().any(|(o, _)| o == off) {
                return Err(GpioError::invalid("line list", format!("offset {off} twice"), "each offset once"));
            }
            s.validate()?;
        }
        Ok(())
    }
}

/// A request for lines: consumer name, lines and settings, event buffer size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestConfig {
    /// Consumer name shown in line info (at most 31 bytes).
    pub consumer: String,
    /// The lines.
    pub lines: LineConfig,
    /// Edge events buffered before the oldest are dropped; 0: 16 per line.
    pub event_buffer_size: u32,
}

impl RequestConfig {
    /// A request by `consumer`, with no lines yet.
    pub fn new(consumer: &str) -> RequestConfig {
        RequestConfig { consumer: consumer.to_owned(), lines: LineConfig::new(), event_buffer_size: 0 }
    }

    /// Adds line `offset` with `settings`.
    #[must_use]
    pub fn line(mut self, offset: u32, settings: LineSettings) -> RequestConfig {
        self.lines = self.lines.line(offset, settings);
        self
    }

    /// Sets the event buffer size (0: 16 per line). As in the kernel, a size
    /// above [`MAX_EVENT_BUFFER`] is cut to it, and the buffer holds the size
    /// rounded up to a power of two (its kfifo): see
    /// [`effective_event_buffer`](Self::effective_event_buffer).
    #[must_use]
    pub fn event_buffer_size(mut self, n: u32) -> RequestConfig {
        self.event_buffer_size = n;
        self
    }

    /// Events buffered, as the kernel sizes its buffer: the size asked for
    /// (at most [`MAX_EVENT_BUFFER`]), or 16 per line, rounded up to a power
    /// of two. When it is full, the oldest event goes (the sequence numbers
    /// show the gap).
    pub fn effective_event_buffer(&self) -> usize {
        let asked = if self.event_buffer_size == 0 {
            self.lines.lines().len() * 16
        } else {
            (self.event_buffer_size as usize).min(MAX_EVENT_BUFFER)
        };
        asked.max(1).next_power_of_two()
    }

    /// Checks the consumer name and the lines.
    pub fn validate(&self) -> Result<(), GpioError> {
        if self.consumer.len() > MAX_CONSUMER || self.consumer.contains('\0') {
            return Err(GpioError::invalid("consumer name", format!("{:?}", self.consumer), "up to 31 bytes, no NUL"));
        }
        self.lines.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsense_is_rejected_with_what_is_allowed() {
        let e = LineSettings::output(true).edge(Edge::Both).validate().unwrap_err();
        assert!(e.to_string().contains("inputs only"), "{e}");
        assert!(LineSettings::input().drive(Drive::OpenDrain).validate().is_err());
        assert!(LineSettings::input().debounce(Duration::from_nanos(1_500)).validate().is_err());
        assert!(LineSettings::input().debounce(Duration::from_secs(5_000)).validate().is_err());
        let dup = RequestConfig::new("x").line(1, LineSettings::input()).line(1, LineSettings::input());
        assert!(dup.validate().unwrap_err().to_string().contains("offset 1 twice"));
        assert!(RequestConfig::new("x").validate().is_err(), "no lines");
        let long = RequestConfig::new(&"c".repeat(32)).line(0, LineSettings::input());
        assert!(long.validate().is_err());
        let mut many = RequestConfig::new("x");
        for o in 0..65 {
            many = many.line(o, LineSettings::input());
        }
        assert!(many.validate().is_err());
    }

    #[test]
    fn buffer_is_sized_as_the_kernel_sizes_it() {
        let c = RequestConfig::new("x").line(0, LineSettings::input()).line(1, LineSettings::input());
        assert_eq!(c.effective_event_buffer(), 32, "16 per line");
        let three = c.clone().line(2, LineSettings::input());
        assert_eq!(three.effective_event_buffer(), 64, "48 rounded up to a power of two, as kfifo_alloc does");
        assert_eq!(c.clone().event_buffer_size(5).effective_event_buffer(), 8);
        assert_eq!(c.event_buffer_size(u32::MAX).effective_event_buffer(), MAX_EVENT_BUFFER, "cut to 64 lines × 16");
    }
}
