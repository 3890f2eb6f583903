//! The bench's lab: a WSPI block with an AD7606 on chip select 2 and a GPIO
//! chip whose line 8 drives CONVST and whose line 9 follows BUSY, as the
//! example board file wires them.

use wirespeed::backend::lab::{gpio as labgpio, LabSpi};
use wirespeed::gpio::{Edge, LineSettings, RequestConfig};
use wirespeed::spi::{Bus, Policy};
use wirespeed_drivers::ad7606::{self, Ad7606, Busy, Config};
use wirespeed_lab::devices::ad7606::{Ad7606 as Part, Ad7606Config, Signal};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

/// CONVST's line on the GPIO chip.
pub const CONVST_LINE: u32 = 8;
/// BUSY's line on the GPIO chip.
pub const BUSY_LINE: u32 = 9;
/// The part's chip select.
pub const CS: u8 = 2;

/// The lab the Rust runner samples.
#[derive(Debug)]
pub struct Rig {
    /// The lab (its interrupt thread lowers BUSY).
    pub lab: Lab,
    /// The part's backdoor.
    pub part: Part,
    /// The GPIO chip.
    pub gpio: GpioChip,
    /// The stack's bus on the block.
    pub bus: Bus,
}

impl Rig {
    /// Builds it with the part at `oversampling`, a 1 kHz 5 V sine on V1 and DC elsewhere.
    pub fn new(oversampling: u8) -> Result<Rig, String> {
        let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
        let part =
            Part::new(&lab, Ad7606Config { oversampling, ..Ad7606Config::default() }).map_err(|e| e.to_string())?;
        part.set_all_signals(Signal::Dc(1.25));
        part.set_signal(0, Signal::Sine { amplitude: 5.0, freq_hz: 1_000.0, offset: 0.0, phase: 0.0 });
        let block = lab.try_spi_controller(Default::default()).map_err(|e| e.to_string())?;
        block.try_attach(CS, part.clone()).map_err(|e| e.to_string())?;
        let gpio = lab.try_gpio_chip(GpioChipConfig::default()).map_err(|e| e.to_string())?;
        gpio.output_pin(CONVST_LINE).connect(part.convst_input(), now());
        part.busy_pin().connect(gpio.input_sink(BUSY_LINE), now());
        let bus = Bus::try_new(LabSpi::new(block), Policy::fast()).map_err(|e| e.to_string())?;
        Ok(Rig { lab, part, gpio, bus })
    }

    /// The Rust driver on it at `speed_hz`, BUSY wired.
    pub fn driver(&self, speed_hz: u32, oversampling: u8) -> Result<Ad7606, String> {
        let spi = self.bus.device(ad7606::device_config(CS, speed_hz)).map_err(|e| e.to_string())?;
        let chip = labgpio::open(&self.gpio).map_err(|e| e.to_string())?;
        let convst = chip
            .request_lines(&RequestConfig::new("ad7606-convst").line(CONVST_LINE, LineSettings::output(false)))
            .map_err(|e| e.to_string())?;
        let busy = chip
            .request_lines(
                &RequestConfig::new("ad7606-busy").line(BUSY_LINE, LineSettings::input().edge(Edge::Falling)),
            )
            .map_err(|e| e.to_string())?;
        Ad7606::new(spi, convst, Busy::Edge(busy), Config { oversampling, ..Config::default() })
            .map_err(|e| e.to_string())
    }
}
