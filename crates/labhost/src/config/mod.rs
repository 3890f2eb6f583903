//! The board file: a TOML description of the lab the shim serves
//! (`WIRESPEED_LAB=lab.toml`), checked into a [`BoardSpec`] that
//! [`Board`](crate::Board) builds.
//!
//! # Format
//!
//! ```toml
//! # A lab board for the wirespeed shim.
//! [lab]
//! instant_wire = false          # optional: every transfer completes at once
//!
//! [[spi]]                       # one WSPI block with 4 native chip selects
//! bus = 0                       # serves /dev/spidev0.<cs>
//! base_clock_hz = 200000000     # optional (default 200 MHz): 2..=4294967295
//! fifo_bytes = 64               # optional (default 64): 1..=65536
//! bufsiz = 4096                 # optional (default 4096): spidev's bufsiz, 1..=4194304
//!
//! [[spi.device]]
//! cs = 0                        # 0..=3, once per bus
//! kind = "spi-nor"              # spi-nor | loopback | mcp2518fd | ad7606
//! chip = "w25q128jv"            # w25q128jv, mx25l12835f, gd25q64c, sst25vf016b, w25q256jv
//! image = "flash.bin"           # optional: backing file (see below); memory when absent
//! max_speed_hz = 50000000       # optional (default 50 MHz, at most base/2)
//! time_scale = 1.0              # optional: multiplies the datasheet's times, >= 0
//!
//! [[spi.device]]
//! cs = 1
//! kind = "loopback"             # MISO = MOSI
//!
//! [[spi.device]]
//! cs = 2
//! kind = "mcp2518fd"            # on a lab CAN bus of its own (no other node)
//! osc_hz = 40000000             # optional: 4, 20 or 40 MHz (default 40 MHz)
//! can_bitrate = 500000          # optional (default 500 kbit/s): 1..=1000000
//! can_data_bitrate = 2000000    # optional (default 2 Mbit/s): can_bitrate..=10000000
//!
//! [[spi.device]]
//! cs = 3
//! kind = "ad7606"               # 8-channel 16-bit ADC, read over DOUTA (16 bytes a set)
//! range = "10V"                 # optional: "10V" (±10 V, the default) or "5V"
//! oversampling = 1              # optional: 1, 2, 4, 8, 16, 32, 64 (default 1)
//! signals = ["sine:1.0V:50Hz", "dc:2.5V", "noise:0.01V"]  # optional: V1, V2, …; others 0 V
//!
//! [[gpio]]
//! chip = 0                      # serves /dev/gpiochip0
//! lines = 32                    # 1..=512
//! label = "wirespeed-lab"       # optional (default "lab-gpio"), 1..=31 bytes
//!
//! [[gpio.line]]
//! offset = 0                    # below `lines`, once per chip
//! name = "TICK"                 # optional line name, 1..=31 bytes
//! toggle_every_us = 10000       # driven from outside: an edge every 10 ms, starting low
//!
//! [[gpio.line]]
//! offset = 1
//! level = "high"                # driven from outside at a fixed level ("high" | "low")
//!
//! [[gpio.line]]
//! offset = 2
//! name = "CAN_INT"
//! wire = "spi0.2:int"           # the MCP2518FD's INT drives this line's input
//!
//! [[gpio.line]]
//! offset = 3
//! name = "FLASH_WP"
//! wire = "spi0.0:wp"            # this line's pad drives the NOR's WP# (low: protect)
//!
//! [[gpio.line]]
//! offset = 8
//! name = "CONVST"
//! wire = "spi0.3:convst"        # this line's pad drives the AD7606's CONVST (rising: convert)
//!
//! [[gpio.line]]
//! offset = 9
//! name = "BUSY"
//! wire = "spi0.3:busy"          # the AD7606's BUSY (high while converting) drives this line's input
//! ```
//!
//! Rules beyond the ranges above:
//! - Every key is optional except `bus`, `cs`, `kind`, `chip` (spi-nor),
//!   `chip` and `lines` (`[[gpio]]`) and `offset`; unknown keys, and keys
//!   of another kind of device (`chip` on a loopback), are errors.
//! - `max_speed_hz` (a node's default clock, the device tree's
//!   `spi-max-frequency`) must be in `ceil(base_clock_hz / 2^20)..=base_clock_hz / 2`
//!   (the block's divider range); absent, it is 50 MHz capped at `base_clock_hz / 2`.
//! - `image` is relative to the program's working directory, not to the
//!   board file's folder. A missing or empty file is created erased (0xFF,
//!   the chip's size); a file of another size is an error. Writes go
//!   through to the file at once.
//! - A line has at most one driver: `toggle_every_us` (10..=3600000000),
//!   `level`, or `wire`. A wire is `spi<bus>.<cs>:<pin>` and names a device
//!   the file describes: an MCP2518FD has the outputs `int`, `int0`, `int1`
//!   (active low; they drive the line's input), a spi-nor has the input
//!   `wp` (driven by the line's pad, which starts pulled up, as WP# is on
//!   a board); an AD7606 has the input `convst` (driven by the line's pad,
//!   pulled down until software drives it) and the output `busy`; a
//!   loopback has none. A device input takes one line.
//! - An AD7606's `signals` are, per channel from V1, `dc:<v>V`,
//!   `sine:<amplitude>V:<freq>Hz[:<offset>V]` or `noise:<rms>V[:<mean>V]`
//!   (Gaussian); at most 8, channels not listed are at 0 V.
//! - Bus numbers and gpio chip numbers are each used once.
//!
//! Errors are one line, `file:line: what is wrong (what is allowed)`; the
//! line is the offending value's, or the table header's for a missing key
//! or a device that could not be built (its image file).
//!
//! # Modules
//! - `schema`: the file as serde reads it; `model`: the checked [`BoardSpec`];
//! - `check_spi`, `check_gpio`, `wire`: the checks; `limits`: ranges and defaults;
//! - `errors`: [`BoardError`] and line numbers;
//! - `build_spi`, `build_gpio`: the lab built from a [`BoardSpec`].

mod build_gpio;
mod build_spi;
mod check_gpio;
mod check_spi;
mod errors;
pub mod limits;
pub mod model;
mod schema;
#[cfg(test)]
mod tests;
mod wire;

pub(crate) use build_gpio::build_gpio;
pub use build_gpio::{GpioParts, Toggler};
pub(crate) use build_spi::build_spi;
pub use build_spi::{LabDevice, SpiParts, TRACE_EVENTS};
pub use errors::{BoardError, Source};
pub use model::{
    BoardSpec, DeviceKind, DevicePin, DeviceSpec, GpioChipSpec, LineDriver, LineDriverSpec, SpiBusSpec, WireRef,
};

/// Reads and checks the board file `text`; errors name it `name`.
pub fn parse(text: &str, name: &str) -> Result<BoardSpec, BoardError> {
    let src = Source { name, text };
    let raw: schema::RawBoard = toml::from_str(text).map_err(|e| src.toml_error(&e))?;
    let spi = check_spi::check(&src, &raw.spi)?;
    let gpio = check_gpio::check(&src, &raw.gpio, &spi)?;
    Ok(BoardSpec { instant_wire: raw.lab.instant_wire, spi, gpio })
}
