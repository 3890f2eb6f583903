//! [`Config`]: clock, bit rates, mode, FIFO sizes, CRC, timeouts; and the
//! message-RAM [`Layout`] computed from it, validated before the driver
//! touches the bus.

use super::bittiming::{self, BitTiming};
use super::errata::{spi_clock_limit, Workarounds};
use super::error::Error;
use super::intwait::IntWaitConfig;
use super::regs::*;
use std::time::Duration;
use wirespeed::spi::DeviceConfig;

/// Operation mode after initialisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OpMode {
    /// Normal operation (CAN FD if a data bit rate is set, else CAN 2.0).
    #[default]
    Normal,
    /// Receive only: no ACK, no transmission.
    ListenOnly,
    /// External loopback: transmits, needs no ACK, receives its own frames.
    ExternalLoopback,
}

/// Driver configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Oscillator frequency (the crystal or clock input), Hz: SYSCLK
    /// without the PLL.
    pub clock_hz: u32,
    /// Run SYSCLK from the PLL at 10 × `clock_hz` (a 4 MHz crystal gives
    /// the usual 40 MHz; the Linux driver does so for clocks of at most
    /// 4 MHz). SYSCLK may not exceed 40 MHz. The SPI clock stays within
    /// 0.85 × `clock_hz` / 2 until the PLL has locked.
    pub pll: bool,
    /// Nominal (arbitration) bit rate.
    pub nominal_bitrate: u32,
    /// Data bit rate: `Some` runs the controller in CAN FD mode, `None` in CAN 2.0 mode.
    pub data_bitrate: Option<u32>,
    /// Target sample point, ‰.
    pub sample_point_permille: u32,
    /// Largest accepted bit-rate error, ppm.
    pub max_bitrate_error_ppm: u32,
    /// Operation mode.
    pub mode: OpMode,
    /// Use the CRC-protected SPI instructions (READ_CRC / WRITE_CRC).
    pub crc: bool,
    /// RX FIFO depth (objects, 1..=32).
    pub rx_depth: u8,
    /// RX payload bytes per object (8, 12, 16, 20, 24, 32, 48 or 64).
    pub rx_payload: usize,
    /// TX queue depth (objects, 1..=32); the TEF has the same depth.
    pub tx_depth: u8,
    /// TX payload bytes per object.
    pub tx_payload: usize,
    /// Read each TEF object for its timestamp
    /// ([`Mcp251xfd::last_tx_timestamp`](super::Mcp251xfd::last_tx_timestamp));
    /// without, a completion is only the TEF's UINC (one 3-byte write).
    pub tx_timestamps: bool,
    /// Completions by their own interrupt, as Linux does (C1INT.TEFIE: the
    /// TEF holds INT low until it is drained, each pass drains it). Off by
    /// default: then INT stays for received frames, the TEF's flag
    /// (C1INT.TEFIF) is read with every status message and completions are
    /// collected lazily, in the next transmit's message — on, an echoed
    /// frame costs a second service pass (two more SPI messages and a
    /// wake-up) when its completion comes.
    pub tef_irq: bool,
    /// Frames the driver buffers between the device and `recv` (≥ 1).
    pub rx_queue: usize,
    /// How long to wait for OSC.OSCRDY after the wake-up and after the
    /// reset (the Linux driver polls every 3 ms for up to 30 ms).
    pub osc_timeout: Duration,
    /// How long to wait for a mode change.
    pub mode_timeout: Duration,
    /// How long `send` waits for room in a full TX queue.
    pub tx_timeout: Duration,
    /// How the driver waits for its INT line.
    pub int_wait: IntWaitConfig,
    /// The silicon errata workarounds (all on by default).
    pub workarounds: Workarounds,
    /// After bus-off the driver stops the controller (configuration mode);
    /// this long after, it restarts it fully (RESET and the whole
    /// configuration) by itself at its next call, like SocketCAN's
    /// `restart-ms`. `None`: it stays stopped until [`restart`](super::Mcp251xfd::restart).
    pub bus_off_restart: Option<Duration>,
}

impl Default for Config {
    /// 40 MHz clock, 500 kbit/s CAN 2.0, 80 % sample point, a 32-deep RX FIFO
    /// and an 8-deep TX FIFO/TEF of 8-byte objects.
    fn default() -> Self {
        Config {
            clock_hz: 40_000_000,
            pll: false,
            nominal_bitrate: 500_000,
            data_bitrate: None,
            sample_point_permille: 800,
            max_bitrate_error_ppm: 5_000,
            mode: OpMode::Normal,
            crc: false,
            rx_depth: 32,
            rx_payload: 8,
            tx_depth: 8,
            tx_payload: 8,
            tx_timestamps: true,
            tef_irq: false,
            rx_queue: 64,
            osc_timeout: Duration::from_millis(30),
            mode_timeout: Duration::from_millis(100),
            tx_timeout: Duration::from_millis(100),
            int_wait: IntWaitConfig::default(),
            workarounds: Workarounds::ALL,
            bus_off_restart: Some(Duration::from_millis(100)),
        }
    }
}

/// The device's SPI settings: mode 0, at most 85 % of SYSCLK / 2 (17 MHz at
/// 40 MHz, as the Linux driver uses), 50 ns CS setup, hold and disable times.
pub fn device_config(cs: u8, clock_hz: u32) -> DeviceConfig {
    let hz = spi_clock_limit(clock_hz);
    DeviceConfig::new(cs, hz).cs_timing_ns(50, 50, 50)
}

/// Addresses and sizes of the TEF, the RX FIFO (1) and the TX FIFO (2) in
/// message RAM, in the order the device allocates them (TEF, FIFO 1, FIFO 2;
/// the TXQ is disabled and takes no RAM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// TEF base and object size (12: with timestamp).
    pub tef_base: u16,
    /// TEF object size.
    pub tef_obj: u16,
    /// TEF depth.
    pub tef_depth: u8,
    /// TX FIFO base.
    pub tx_base: u16,
    /// TX FIFO object size.
    pub tx_obj: u16,
    /// TX FIFO depth.
    pub tx_depth: u8,
    /// RX FIFO 1 base.
    pub rx_base: u16,
    /// RX object size (12 + payload: with timestamp).
    pub rx_obj: u16,
    /// RX depth.
    pub rx_depth: u8,
    /// PLSIZE field values.
    pub tx_plsize: u8,
    /// PLSIZE of the RX FIFO.
    pub rx_plsize: u8,
}

fn plsize(what: &'static str, bytes: usize) -> Result<u8, Error> {
    PLSIZE_BYTES.iter().position(|&b| b == bytes).map(|p| p as u8).ok_or(Error::InvalidConfig {
        what,
        value: bytes.to_string(),
        allowed: "8, 12, 16, 20, 24, 32, 48 or 64",
    })
}

fn depth(what: &'static str, d: u8) -> Result<u8, Error> {
    if (1..=32).contains(&d) {
        Ok(d)
    } else {
        Err(Error::InvalidConfig { what, value: d.to_string(), allowed: "1..=32" })
    }
}

/// Everything computed from a [`Config`] before the bus is touched.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Message RAM layout.
    pub layout: Layout,
    /// Nominal timing.
    pub nominal: BitTiming,
    /// Data timing (CAN FD).
    pub data: Option<BitTiming>,
    /// TBC prescaler for 1 µs ticks.
    pub tbc_pre: u32,
}

impl Config {
    /// SYSCLK: `clock_hz`, or 10 × it through the PLL ([`Config::pll`]).
    pub fn sysclk_hz(&self) -> u32 {
        if self.pll {
            self.clock_hz.saturating_mul(10)
        } else {
            self.clock_hz
        }
    }

    /// Checks the configuration and computes the bit timings and RAM layout.
    pub fn plan(&self) -> Result<Plan, Error> {
        if self.pll && !(1_000_000..=4_000_000).contains(&self.clock_hz) {
            return Err(Error::InvalidConfig {
                what: "pll",
                value: format!("with clock_hz = {}", self.clock_hz),
                allowed: "a clock of 1..=4 MHz (the PLL makes SYSCLK 10 × the clock, at most 40 MHz)",
            });
        }
        let sysclk = self.sysclk_hz();
        let nominal = bittiming::compute(
            &bittiming::NOMINAL,
            sysclk,
            self.nominal_bitrate,
            self.sample_point_permille,
            self.max_bitrate_error_ppm,
        )?;
        let data = match self.data_bitrate {
            Some(r) => Some(bittiming::compute(
                &bittiming::DATA,
                sysclk,
                r,
                self.sample_point_permille,
                self.max_bitrate_error_ppm,
            )?),
            None => None,
        };
        if self.rx_queue == 0 {
            return Err(Error::InvalidConfig { what: "rx_queue", value: "0".into(), allowed: "1 or more" });
        }
        if self.data_bitrate.is_none() && (self.rx_payload != 8 || self.tx_payload != 8) {
            return Err(Error::InvalidConfig {
                what: "payload size",
                value: format!("rx {} / tx {}", self.rx_payload, self.tx_payload),
                allowed: "8 in CAN 2.0 mode (set data_bitrate for CAN FD)",
            });
        }
        let tx_plsize = plsize("tx_payload", self.tx_payload)?;
        let rx_plsize = plsize("rx_payload", self.rx_payload)?;
        let tx_depth = depth("tx_depth", self.tx_depth)?;
        let rx_depth = depth("rx_depth", self.rx_depth)?;
        let tef_obj = 12u16;
        let tx_obj = 8 + self.tx_payload as u16;
        let rx_obj = 12 + self.rx_payload as u16;
        let tef_base = RAM_START;
        let rx_base = tef_base + tef_obj * u16::from(tx_depth);
        let tx_base = rx_base + rx_obj * u16::from(rx_depth);
        let end = usize::from(tx_base + tx_obj * u16::from(tx_depth));
        if end > usize::from(RAM_START + RAM_SIZE) {
            return Err(Error::RamOverflow { needed: end - usize::from(RAM_START) });
        }
        if sysclk < 1_000_000 || !sysclk.is_multiple_of(1_000_000) || sysclk / 1_000_000 > 1024 {
            return Err(Error::InvalidConfig {
                what: "clock_hz",
                value: if self.pll {
                    format!("{} (SYSCLK {sysclk} with the PLL)", self.clock_hz)
                } else {
                    sysclk.to_string()
                },
                allowed: "a whole number of MHz, 1..=1024 MHz (timestamps tick in µs)",
            });
        }
        let layout = Layout {
            tef_base,
            tef_obj,
            tef_depth: tx_depth,
            tx_base,
            tx_obj,
            tx_depth,
            rx_base,
            rx_obj,
            rx_depth,
            tx_plsize,
            rx_plsize,
        };
        Ok(Plan { layout, nominal, data, tbc_pre: sysclk / 1_000_000 - 1 })
    }

    /// The REQOP value for the configured mode.
    pub fn reqop(&self) -> u8 {
        match (self.mode, self.data_bitrate.is_some()) {
            (OpMode::Normal, true) => MODE_NORMAL_FD,
            (OpMode::Normal, false) => MODE_NORMAL_CAN20,
            (OpMode::ListenOnly, _) => MODE_LISTEN_ONLY,
            (OpMode::ExternalLoopback, _) => MODE_EXTERNAL_LOOPBACK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_follows_the_device_order_and_checks_ram() {
        let p = Config { nominal_bitrate: 250_000, ..Config::default() }.plan().unwrap();
        let l = p.layout;
        assert_eq!(
            (l.tef_base, l.rx_base, l.tx_base, l.rx_depth),
            (0x400, 0x400 + 8 * 12, 0x400 + 8 * 12 + 32 * 20, 32)
        );
        assert_eq!(p.tbc_pre, 39);
        let big = Config {
            data_bitrate: Some(2_000_000),
            rx_payload: 64,
            tx_payload: 64,
            rx_depth: 32,
            tx_depth: 32,
            ..Config::default()
        };
        assert!(matches!(big.plan(), Err(Error::RamOverflow { .. })));
        let bad = Config { rx_payload: 10, data_bitrate: Some(2_000_000), ..Config::default() };
        assert!(matches!(bad.plan(), Err(Error::InvalidConfig { what: "rx_payload", .. })));
        assert!(matches!(Config { rx_payload: 64, ..Config::default() }.plan(), Err(Error::InvalidConfig { .. })));
        assert!(matches!(
            Config { tx_depth: 0, ..Config::default() }.plan(),
            Err(Error::InvalidConfig { what: "tx_depth", .. })
        ));
    }
}
