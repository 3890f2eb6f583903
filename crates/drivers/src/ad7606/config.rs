//! [`Config`]: how the part is strapped (range, oversampling) and the
//! datasheet figures the driver plans with.

use super::error::Error;
use std::time::Duration;
use wirespeed::spi::{DeviceConfig, Mode};

/// Analog channels.
pub const CHANNELS: usize = 8;
/// Bytes of one sample set on the wire (V1..V8, 16 bits each).
pub const FRAME_BYTES: usize = 2 * CHANNELS;
/// Maximum serial clock (VDRIVE ≥ 4.75 V), Hz.
pub const MAX_SCLK_HZ: u32 = 23_500_000;
/// Minimum CONVST high pulse (t3), ns.
pub const CONVST_PULSE_NS: u64 = 25;
/// CS falling edge to the first SCLK the driver asks the core for, ns.
pub const CS_SETUP_NS: u32 = 25;
/// The oversampling ratios the `OS[2:0]` pins select.
pub const OVERSAMPLING_RATIOS: [u8; 7] = [1, 2, 4, 8, 16, 32, 64];
/// tCONV typical by oversampling index (datasheet Rev. C, Table 3), ns.
const TCONV_TYP_NS: [u64; 7] = [3_450, 7_870, 16_050, 33_000, 66_000, 133_000, 257_000];
/// tCONV maximum by oversampling index, ns.
const TCONV_MAX_NS: [u64; 7] = [4_150, 9_100, 18_800, 39_000, 78_000, 158_000, 315_000];
/// The highest CONVST rate with oversampling off (Table 9: 200 kHz ÷ ratio).
const MAX_RATE_HZ: f64 = 200_000.0;

/// The analog input range (the RANGE pin's strapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Range {
    /// ±5 V.
    Pm5V,
    /// ±10 V.
    #[default]
    Pm10V,
}

impl Range {
    /// Full scale, V.
    pub fn volts(self) -> f64 {
        match self {
            Range::Pm5V => 5.0,
            Range::Pm10V => 10.0,
        }
    }
}

/// The part's strapping and the driver's limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Input range.
    pub range: Range,
    /// Oversampling ratio the OS pins select: 1, 2, 4, 8, 16, 32 or 64.
    pub oversampling: u8,
    /// Longest wait for BUSY beyond the datasheet's maximum conversion time.
    pub busy_slack: Duration,
    /// Paced sampling: how late a conversion may start and still be caught
    /// up; periods later than this are overruns (at least one period).
    pub max_lag: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            range: Range::Pm10V,
            oversampling: 1,
            busy_slack: Duration::from_millis(100),
            max_lag: Duration::from_millis(1),
        }
    }
}

impl Config {
    fn index(&self) -> Result<usize, Error> {
        OVERSAMPLING_RATIOS
            .iter()
            .position(|&r| r == self.oversampling)
            .ok_or_else(|| Error::invalid("oversampling ratio", self.oversampling, "1, 2, 4, 8, 16, 32, 64"))
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), Error> {
        self.index()?;
        if self.max_lag > Duration::from_secs(10) {
            return Err(Error::invalid("max_lag", format!("{:?}", self.max_lag), "at most 10 s"));
        }
        if self.busy_slack > Duration::from_secs(10) {
            return Err(Error::invalid("busy_slack", format!("{:?}", self.busy_slack), "at most 10 s"));
        }
        Ok(())
    }

    /// tCONV typical at this oversampling, ns.
    pub fn conversion_typ_ns(&self) -> Result<u64, Error> {
        Ok(TCONV_TYP_NS[self.index()?])
    }

    /// tCONV maximum at this oversampling, ns.
    pub fn conversion_max_ns(&self) -> Result<u64, Error> {
        Ok(TCONV_MAX_NS[self.index()?])
    }

    /// The highest CONVST rate the part allows at this oversampling, Hz.
    pub fn max_rate_hz(&self) -> Result<f64, Error> {
        self.index()?;
        Ok(MAX_RATE_HZ / f64::from(self.oversampling))
    }
}

/// The SPI device for an AD7606 on native chip select `cs` at `speed_hz`
/// (at most [`MAX_SCLK_HZ`]): mode 2 (CPOL 1: DOUTA changes on SCLK's
/// falling edge), 8-bit words, [`CS_SETUP_NS`] before the first clock.
pub fn device_config(cs: u8, speed_hz: u32) -> DeviceConfig {
    DeviceConfig::new(cs, speed_hz).mode(Mode::Mode2).cs_timing_ns(CS_SETUP_NS, 0, 0)
}

/// The least time one sample set takes with read-after-conversion at
/// `speed_hz`, ns: tCONV (typical), BUSY↓→CS↓ (t4 = 0), CS setup, 128 SCLKs.
pub fn wire_period_ns(cfg: &Config, speed_hz: u32) -> Result<u64, Error> {
    if speed_hz == 0 {
        return Err(Error::invalid("SPI clock", speed_hz, format!("1..={MAX_SCLK_HZ} Hz")));
    }
    let wire = (8 * FRAME_BYTES as u64 * 1_000_000_000).div_ceil(u64::from(speed_hz));
    Ok(cfg.conversion_typ_ns()? + u64::from(CS_SETUP_NS) + wire)
}
