//! What several targets share: one lab per thread (its interrupt thread is
//! too costly to start per input; every target builds fresh devices on it)
//! and a driver that feeds a device model's bus face a byte stream with
//! chip-select toggles and time steps chosen by the input.

use arbitrary::{Result, Unstructured};
use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, Policy};
use wirespeed_lab::spi::{SpiController, SpiControllerConfig, SpiDeviceModel};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::{now, Instant};

thread_local! {
    static LAB: Lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
    static BUS: (SpiController, Bus) = {
        let block = lab().spi_controller(SpiControllerConfig::default());
        let bus = Bus::new(LabSpi::new(block.clone()), Policy::fast());
        (block, bus)
    };
}

/// This thread's lab (instant wire).
pub fn lab() -> Lab {
    LAB.with(Lab::clone)
}

/// This thread's SPI bus on the lab (a default WSPI block: 4 chip selects,
/// 64-byte FIFOs, 200 MHz input clock) and its block, to attach devices to.
pub fn bus() -> (SpiController, Bus) {
    BUS.with(|(block, bus)| (block.clone(), bus.clone()))
}

/// One step of a bus-face stream.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Chip select goes active (`true`) or inactive.
    Cs(bool),
    /// One word of `bits` bits.
    Word { mosi: u32, bits: u8 },
    /// Time passes (ns).
    Wait(u64),
}

/// Reads one step. `bits` are the word sizes to pick from.
pub fn step(u: &mut Unstructured<'_>, bits: &[u8]) -> Result<Step> {
    // An exhausted `Unstructured` keeps answering (the range's start): stop.
    if u.is_empty() {
        return Err(arbitrary::Error::NotEnoughData);
    }
    Ok(match u.int_in_range(0u8..=15)? {
        0 => Step::Cs(true),
        1 => Step::Cs(false),
        2 => Step::Wait(u64::from(u.arbitrary::<u16>()?) << u.int_in_range(0u32..=24)?),
        _ => Step::Word { mosi: u.arbitrary()?, bits: *u.choose(bits)? },
    })
}

/// A model on the wire: tracks chip select and the wire's time.
#[derive(Debug)]
pub struct Wire {
    /// Chip select is active.
    pub selected: bool,
    /// The wire's clock.
    pub t: Instant,
}

impl Wire {
    /// A wire at the host's time, chip select inactive.
    pub fn new() -> Wire {
        Wire { selected: false, t: now() }
    }

    /// Applies `step` to `dev`: the MISO word of a word step.
    pub fn apply(&mut self, dev: &mut dyn SpiDeviceModel, step: Step) -> Option<u32> {
        match step {
            Step::Cs(on) => {
                if on != self.selected {
                    self.selected = on;
                    dev.chip_select(on, self.t);
                }
                None
            }
            Step::Wait(ns) => {
                self.t = self.t.add_ns(ns);
                None
            }
            Step::Word { mosi, bits } => {
                let mosi = mosi & mask(bits);
                let miso = dev.exchange(mosi, bits, self.t);
                // One clock per bit at 10 MHz.
                self.t = self.t.add_ns(100 * u64::from(bits));
                Some(miso)
            }
        }
    }

    /// One whole access: CS active, `tx` as 8-bit words, CS inactive; the MISO bytes.
    pub fn access(&mut self, dev: &mut dyn SpiDeviceModel, tx: &[u8]) -> Vec<u8> {
        self.apply(dev, Step::Cs(false));
        self.apply(dev, Step::Wait(1_000));
        self.apply(dev, Step::Cs(true));
        let rx = tx
            .iter()
            .map(|&b| self.apply(dev, Step::Word { mosi: u32::from(b), bits: 8 }).unwrap_or(0) as u8)
            .collect();
        self.apply(dev, Step::Cs(false));
        rx
    }
}

impl Default for Wire {
    fn default() -> Self {
        Wire::new()
    }
}

/// The low `bits` bits.
pub fn mask(bits: u8) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// One of `list`, or (one time in `list.len() + 1`) any value.
pub fn pick<'a, T: Copy + arbitrary::Arbitrary<'a>>(u: &mut Unstructured<'a>, list: &[T]) -> Result<T> {
    let any = u.arbitrary()?;
    let i = u.choose_index(list.len() + 1)?;
    Ok(list.get(i).copied().unwrap_or(any))
}
