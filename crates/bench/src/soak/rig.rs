//! The soak's board: two lab SPI buses with loopback devices, and a lab
//! GPIO chip whose output line 0 is wired to its input line 1 (a chip that
//! can be unplugged and plugged back, see [`GpioSlot`]).
//!
//! `spi0` carries three loopbacks (CS 0–2) and a SPI NOR flash (CS 3,
//! W25Q128JV behind a power switch, see [`super::nor_power`]), `spi1` two
//! loopbacks (CS 0–1) and a register file (CS 2) behind a register map;
//! each device has its own clock and frame length, all on the stack's
//! `fast` policy and the lab controller driver.

use super::frame::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};
use super::nor_power::SoakFlash;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use wirespeed::backend::lab::LabSpi;
use wirespeed::regmap::format::StdFormat;
use wirespeed::regmap::{CacheType, ConfigError, Regmap, RegmapConfig, SpiBus};
use wirespeed::spi::{Bus, BusStartError, DeviceConfig, InvalidMessage, Policy, SpiDevice};
use wirespeed_lab::devices::{Loopback, RegFile};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::spi::{SpiController, SpiControllerConfig};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

/// The GPIO output line the worker toggles.
pub const GPIO_OUT: u32 = 0;
/// The GPIO input line wired to [`GPIO_OUT`], watched for edges.
pub const GPIO_IN: u32 = 1;

/// (bus, chip select, clock in Hz, frame bytes) of each device.
const DEVICES: [(usize, u8, u32, usize); 5] = [
    (0, 0, 20_000_000, 16),
    (0, 1, 25_000_000, 24),
    (0, 2, 10_000_000, 32),
    (1, 0, 20_000_000, 20),
    (1, 1, 40_000_000, 48),
];
const BUS_NAMES: [&str; 2] = ["spi0", "spi1"];
/// The register file: on `spi1`, CS 2, 20 MHz.
const REGFILE_BUS: usize = 1;
const REGFILE_CS: u8 = 2;
/// The SPI NOR flash's bus (its CS is [`super::nor_power::FLASH_CS`]).
const FLASH_BUS: usize = 0;
/// First register the workers use: worker `w` owns register `REGMAP_FIRST + w`.
pub const REGMAP_FIRST: u32 = 0x10;

/// One loopback device on one of the buses.
#[derive(Debug)]
pub struct SoakDevice {
    /// Its name in the report (`spi0.1`: bus `spi0`, CS 1).
    pub name: String,
    /// Index of its bus in [`Rig::blocks`] and [`Rig::buses`].
    pub bus: usize,
    /// The stack's handle.
    pub dev: SpiDevice,
    /// The lab's backdoor to it (to make its MISO stuck).
    pub loopback: Loopback,
    /// Bytes of every frame sent to it.
    pub frame_bytes: usize,
}

/// The GPIO chip in its socket: the injector unplugs it and plugs in a new
/// one (a new generation); the GPIO worker takes whichever is there.
pub struct GpioSlot {
    lab: Lab,
    chip: Mutex<GpioChip>,
    generation: AtomicU64,
}

impl fmt::Debug for GpioSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpioSlot").field("generation", &self.generation()).finish_non_exhaustive()
    }
}

fn wired_chip(lab: &Lab) -> GpioChip {
    let chip = lab.gpio_chip(GpioChipConfig { lines: 2, ..GpioChipConfig::default() });
    chip.output_pin(GPIO_OUT).connect(chip.input_sink(GPIO_IN), now());
    chip
}

impl GpioSlot {
    fn new(lab: &Lab) -> GpioSlot {
        GpioSlot { lab: lab.clone(), chip: Mutex::new(wired_chip(lab)), generation: AtomicU64::new(0) }
    }

    /// The chip in the socket and its generation.
    pub fn current(&self) -> (u64, GpioChip) {
        let chip = self.chip.lock().unwrap_or_else(|e| e.into_inner());
        (self.generation(), chip.clone())
    }

    /// Generation of the chip in the socket (0 for the first).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Unplugs the chip in the socket (its users' accesses fail from now
    /// on); returns its generation.
    pub fn unplug(&self) -> u64 {
        let (generation, chip) = self.current();
        chip.remove();
        generation
    }

    /// Plugs a new chip in, wired like the first: the next generation.
    pub fn plug_new(&self) {
        let mut chip = self.chip.lock().unwrap_or_else(|e| e.into_inner());
        *chip = wired_chip(&self.lab);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// The board, built.
#[derive(Debug)]
pub struct Rig {
    /// The lab (kept alive for the run).
    pub lab: Lab,
    /// The SPI blocks' backdoors, by bus.
    pub blocks: Vec<SpiController>,
    /// The stack's buses.
    pub buses: Vec<Bus>,
    /// Every SPI device, indexed by its number in frames.
    pub devices: Vec<SoakDevice>,
    /// The GPIO chip.
    pub gpio: GpioSlot,
    /// The register map of the register file (no cache: every access goes to the device).
    pub regmap: Regmap,
    /// Bus index of the register map's device.
    pub regmap_bus: usize,
    /// The SPI NOR flash (its driver, probed, and its power switch).
    pub flash: SoakFlash,
}

/// Why the board could not be built.
#[derive(Debug)]
pub enum RigError {
    /// A bus's pump thread could not start.
    Bus(BusStartError),
    /// A device's configuration was refused.
    Device(String, InvalidMessage),
    /// The register map's configuration was refused.
    Regmap(ConfigError),
    /// The SPI NOR flash did not probe.
    Flash(wirespeed_drivers::spi_nor::Error),
}

impl fmt::Display for RigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RigError::Bus(e) => write!(f, "{e}"),
            RigError::Device(name, e) => write!(f, "device {name}: {e}"),
            RigError::Regmap(e) => write!(f, "register map: {e}"),
            RigError::Flash(e) => write!(f, "SPI NOR flash: {e}"),
        }
    }
}

impl std::error::Error for RigError {}

impl Rig {
    /// Builds the board on a new lab.
    pub fn build() -> Result<Rig, RigError> {
        let lab = Lab::new(LabConfig::default());
        let mut blocks = Vec::new();
        let mut buses = Vec::new();
        for name in BUS_NAMES {
            let block = lab.spi_controller(SpiControllerConfig { name, ..SpiControllerConfig::default() });
            let bus = Bus::try_new(LabSpi::new(block.clone()), Policy::fast()).map_err(RigError::Bus)?;
            blocks.push(block);
            buses.push(bus);
        }
        let mut devices = Vec::new();
        for (bus, cs, hz, frame_bytes) in DEVICES {
            debug_assert!((MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&frame_bytes));
            let name = format!("{}.{cs}", BUS_NAMES[bus]);
            let loopback = Loopback::new();
            blocks[bus].attach(cs, loopback.clone());
            let cfg = DeviceConfig::new(cs, hz).cs_timing_ns(50, 50, 50);
            let dev = buses[bus].device(cfg).map_err(|e| RigError::Device(name.clone(), e))?;
            devices.push(SoakDevice { name, bus, dev, loopback, frame_bytes });
        }
        let regfile = RegFile::new(256);
        blocks[REGFILE_BUS].attach(REGFILE_CS, regfile);
        let name = format!("{}.{REGFILE_CS}", BUS_NAMES[REGFILE_BUS]);
        let dev = buses[REGFILE_BUS]
            .device(DeviceConfig::new(REGFILE_CS, 20_000_000))
            .map_err(|e| RigError::Device(name, e))?;
        // The lab's RegFile: command byte (0x03 read, 0x02 write), address byte, 8-bit registers.
        let mut cfg = RegmapConfig::new(StdFormat::new(16, 8).with_flags(0x0300, 0x0200), 0xFF);
        cfg.cache = CacheType::None;
        let regmap = Regmap::new(cfg, SpiBus::new(dev)).map_err(RigError::Regmap)?;
        let flash = SoakFlash::attach(&blocks[FLASH_BUS], &buses[FLASH_BUS], FLASH_BUS).map_err(RigError::Flash)?;
        let gpio = GpioSlot::new(&lab);
        Ok(Rig { lab, blocks, buses, devices, gpio, regmap, regmap_bus: REGFILE_BUS, flash })
    }
}
