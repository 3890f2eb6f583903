//! The soak board's SPI NOR chip, behind a power switch that can cut power
//! in the middle of a page program.
//!
//! The chip is the lab's W25Q128JV model ([`SpiNor`]), times scaled by
//! [`TIME_SCALE`], on `spi0` CS 3, driven by the SPI NOR driver. It is
//! attached through [`SwitchedNor`], which forwards every chip-select edge
//! and word to the model and watches the bus for the flash worker:
//!
//! - the worker **arms** a cut ([`NorPower::arm`], a fraction `f` of the
//!   program time) just before it asks the driver for a page program;
//! - when chip select rises on the next `02` (page program) and the model
//!   has started it (its [`SpiNor::last_op_window`] begins at that edge),
//!   the cut is **scheduled** at `start + f × (due − start)`: inside the
//!   program's busy window whatever the host's scheduling does;
//! - it **fires** at the first bus event (or [`NorPower::settle`]) stamped at
//!   or after that instant: [`SpiNor::power_cut`] at the scheduled instant
//!   (the model is lazy, so nothing has looked at the chip since the
//!   program began: the cut lands mid-program, leaving the first
//!   `floor(f × 256)` bytes programmed, and the chip powered back up).
//!   [`NorPower::cuts`] counts the cuts that fired.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use wirespeed::spi::{Bus, DeviceConfig};
use wirespeed_drivers::spi_nor::{Error as NorError, SpiNor as NorDriver};
use wirespeed_lab::devices::spi_nor::W25Q128JV;
use wirespeed_lab::devices::{SpiNor, SpiNorOptions};
use wirespeed_lab::spi::{SpiController, SpiDeviceModel};
use wirespeed_time::{delay_ns, now, Instant};

/// The chip's times are the datasheet's typical times × this (tPP 100 µs,
/// tSE 11 ms); the driver waits with the same scale.
pub const TIME_SCALE: f64 = 0.25;
/// The flash's chip select on its bus.
pub const FLASH_CS: u8 = 3;
/// The flash's clock.
pub const FLASH_HZ: u32 = 50_000_000;
/// Page program opcode.
const PAGE_PROGRAM: u8 = 0x02;

/// The power switch: armed and scheduled cuts, and the cuts that fired.
#[derive(Debug)]
pub struct NorPower {
    chip: SpiNor,
    /// Armed cut: the fraction of the program time, in thousandths (0: none).
    armed_permille: AtomicU32,
    /// Scheduled cut: its instant in ns (0: none).
    cut_at_ns: AtomicU64,
    cuts: AtomicU64,
}

impl NorPower {
    fn new(chip: SpiNor) -> NorPower {
        NorPower { chip, armed_permille: AtomicU32::new(0), cut_at_ns: AtomicU64::new(0), cuts: AtomicU64::new(0) }
    }

    /// Arms a cut of the next page program, `permille` thousandths (1..=999)
    /// into its busy window.
    pub fn arm(&self, permille: u32) {
        self.armed_permille.store(permille.clamp(1, 999), Ordering::Release);
    }

    /// Whether a cut is armed or scheduled and has not fired.
    pub fn busy(&self) -> bool {
        self.armed_permille.load(Ordering::Acquire) != 0 || self.cut_at_ns.load(Ordering::Acquire) != 0
    }

    /// Cuts that fired.
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::Acquire)
    }

    /// The chip's backdoor.
    pub fn chip(&self) -> &SpiNor {
        &self.chip
    }

    /// Waits until a scheduled cut is due and fires it (nothing if none is
    /// scheduled): after a program attempt, so that the attempt's cut is
    /// known before the next command.
    pub fn settle(&self) {
        let due = self.cut_at_ns.load(Ordering::Acquire);
        if due == 0 {
            return;
        }
        let t = now();
        if t.as_ns() < due {
            delay_ns(due - t.as_ns());
        }
        self.fire(now());
    }

    /// Fires the scheduled cut if `at` is at or past it.
    fn fire(&self, at: Instant) {
        let due = self.cut_at_ns.load(Ordering::Acquire);
        if due == 0 || at.as_ns() < due {
            return;
        }
        if self.cut_at_ns.compare_exchange(due, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.chip.power_cut(Instant::from_ns(due));
            self.cuts.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Chip select rose at `at` after a command with `opcode`: schedules
    /// an armed cut if that command started a page program.
    fn released(&self, opcode: Option<u8>, at: Instant) {
        if opcode != Some(PAGE_PROGRAM) {
            return;
        }
        let permille = self.armed_permille.load(Ordering::Acquire);
        if permille == 0 {
            return;
        }
        let Some((start, due)) = self.chip.last_op_window() else { return };
        if start != at {
            return; // refused or ignored: no program began here
        }
        let cut_at = start.add_ns(due.ns_since(start) * u64::from(permille) / 1000).as_ns().max(1);
        self.armed_permille.store(0, Ordering::Release);
        self.cut_at_ns.store(cut_at, Ordering::Release);
    }
}

/// The model as attached: forwards to the chip, drives the power switch.
#[derive(Debug)]
pub struct SwitchedNor {
    chip: SpiNor,
    power: std::sync::Arc<NorPower>,
    opcode: Option<u8>,
    first: bool,
}

impl SpiDeviceModel for SwitchedNor {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        self.power.fire(at);
        self.chip.chip_select(asserted, at);
        if asserted {
            self.opcode = None;
            self.first = true;
        } else {
            self.power.released(self.opcode.take(), at);
        }
    }

    fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32 {
        self.power.fire(at);
        if std::mem::take(&mut self.first) {
            self.opcode = Some(mosi as u8);
        }
        self.chip.exchange(mosi, bits, at)
    }
}

/// The flash on the board: its driver and its power switch.
#[derive(Debug)]
pub struct SoakFlash {
    /// Index of its bus.
    pub bus: usize,
    /// The probed driver (the flash worker holds it for the run).
    pub driver: Mutex<NorDriver>,
    /// The power switch and the chip's backdoor.
    pub power: std::sync::Arc<NorPower>,
}

impl SoakFlash {
    /// Attaches a new chip to `block` at [`FLASH_CS`] and probes it over `bus`.
    pub fn attach(block: &SpiController, bus: &Bus, bus_index: usize) -> Result<SoakFlash, NorError> {
        let chip = SpiNor::with_options(&W25Q128JV, SpiNorOptions { time_scale: TIME_SCALE, random_times_seed: None });
        let power = std::sync::Arc::new(NorPower::new(chip.clone()));
        block.attach(FLASH_CS, SwitchedNor { chip, power: power.clone(), opcode: None, first: false });
        let dev = bus
            .device(DeviceConfig::new(FLASH_CS, FLASH_HZ))
            .map_err(|e| NorError::Spi(wirespeed::spi::SpiError::Invalid(e)))?;
        let mut driver = NorDriver::probe(dev)?;
        driver.set_time_scale(TIME_SCALE);
        driver.unprotect()?;
        Ok(SoakFlash { bus: bus_index, driver: Mutex::new(driver), power })
    }
}
