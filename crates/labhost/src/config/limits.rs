//! The ranges and defaults a board file is checked against (the module
//! docs of [`crate::config`] list them for users).

use std::ops::RangeInclusive;
use wirespeed_lab::gpio::GpioChipConfig;
use wirespeed_lab::spi::SpiControllerConfig;

/// spidev's `bufsiz` when a bus gives none (the kernel's default).
pub const DEFAULT_BUFSIZ: usize = 4096;
/// `bufsiz`: at least one byte, at most 4 MiB (the largest a kernel
/// allocation for it gets on common configurations).
pub const BUFSIZ: RangeInclusive<u64> = 1..=1 << 22;
/// `base_clock_hz`: SCLK is at most half of it, so at least 2 Hz; at most
/// what the 32-bit `BASECLK` register reports.
pub const BASE_CLOCK_HZ: RangeInclusive<u64> = 2..=u32::MAX as u64;
/// `fifo_bytes`: what the WSPI block can be built with.
pub const FIFO_BYTES: RangeInclusive<u32> = 1..=SpiControllerConfig::MAX_FIFO_BYTES;
/// The WSPI block's largest clock divider: the slowest SCLK is base / this.
pub const MAX_CLOCK_DIVIDER: u64 = 1 << 20;
/// A device's default clock when it gives no `max_speed_hz` (capped at
/// half the block's input clock).
pub const DEFAULT_MAX_SPEED_HZ: u32 = 50_000_000;
/// `lines` of a GPIO chip (the kernel's old ARCH_NR_GPIOS).
pub const LINES: RangeInclusive<u32> = 1..=512;
/// Longest line name or chip label: the uAPI's 32-byte fields hold 31
/// bytes and a NUL.
pub const MAX_NAME_BYTES: usize = 31;
/// `toggle_every_us`: no faster than 10 µs (each edge is a wake-up of the
/// lab's interrupt thread), no slower than an hour.
pub const TOGGLE_US: RangeInclusive<u64> = 10..=3_600_000_000;
/// MCP2518FD crystals the datasheet allows.
pub const OSC_HZ: [u64; 3] = [4_000_000, 20_000_000, 40_000_000];
/// An MCP2518FD's CAN bus nominal bit rate when it gives none.
pub const DEFAULT_CAN_BITRATE: u32 = 500_000;
/// `can_bitrate`: what the lab's CAN bus runs.
pub const CAN_BITRATE: RangeInclusive<u32> = 1..=1_000_000;
/// An MCP2518FD's CAN bus data bit rate when it gives none.
pub const DEFAULT_CAN_DATA_BITRATE: u32 = 2_000_000;
/// `can_data_bitrate`: at least the nominal rate, at most this.
pub const MAX_CAN_DATA_BITRATE: u32 = 10_000_000;

/// The chip selects of every block a board file builds.
pub fn num_cs() -> u8 {
    SpiControllerConfig::default().num_cs
}

/// The lab's default input clock of a block.
pub fn default_base_clock_hz() -> u64 {
    SpiControllerConfig::default().base_clock_hz
}

/// The lab's default FIFO depth.
pub fn default_fifo_bytes() -> u32 {
    SpiControllerConfig::default().fifo_bytes
}

/// The label of a GPIO chip that gives none.
pub fn default_label() -> String {
    GpioChipConfig::default().label
}
