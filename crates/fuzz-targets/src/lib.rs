//! Fuzz targets for every decoder and validator of outside input in
//! wirespeed (issue 33): SPI message/transfer and device validation, regmap
//! configuration, the MCP251xFD command format, SFDP parsing, the board
//! file, the spidev and GPIO uAPI decoding the shim serves, and the command
//! decoders of every lab device model.
//!
//! Each module is one target: `pub fn run(data: &[u8])` turns the bytes into
//! inputs (with [`arbitrary::Unstructured`] or as raw bytes), feeds the code
//! under test and asserts what must hold — no panic, a typed error or an
//! acceptance from validators, round trips where one exists, invariants of
//! the models. A failed property panics, which libFuzzer reports as a crash.
//!
//! `fuzz/` is the cargo-fuzz project (one thin binary per entry of
//! [`TARGETS`]); `scripts/fuzz` runs it. `tests/regressions.rs` replays
//! `regressions/<target>/*` (found inputs and seeds) on stable.

pub mod board_config;
pub mod device_config;
mod fake_controller;
pub mod lab_ad7606;
pub mod lab_loopback;
pub mod lab_mcp2518fd;
pub mod lab_regfile;
pub mod lab_spi_controller;
pub mod lab_spi_nor;
pub mod mcp251xfd_format;
pub mod regmap_config;
pub mod sfdp;
pub mod shim_gpio;
pub mod shim_spidev;
pub mod spi_message;
mod support;

/// One fuzz target: its name (the cargo-fuzz binary and the regression
/// folder) and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("spi_message", spi_message::run),
    ("device_config", device_config::run),
    ("regmap_config", regmap_config::run),
    ("mcp251xfd_format", mcp251xfd_format::run),
    ("sfdp", sfdp::run),
    ("board_config", board_config::run),
    ("shim_spidev", shim_spidev::run),
    ("shim_gpio", shim_gpio::run),
    ("lab_loopback", lab_loopback::run),
    ("lab_regfile", lab_regfile::run),
    ("lab_spi_nor", lab_spi_nor::run),
    ("lab_ad7606", lab_ad7606::run),
    ("lab_mcp2518fd", lab_mcp2518fd::run),
    ("lab_spi_controller", lab_spi_controller::run),
];

/// The entry point of target `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}
