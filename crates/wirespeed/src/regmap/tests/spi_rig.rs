//! Rigs over SPI to the lab's register-file device: the lab WSPI controller,
//! the stack's lab controller driver, the SPI core and [`SpiBus`].

use super::rig::{rig, Device, Rig, CACHES};
use crate::backend::lab::LabSpi;
use crate::regmap::SpiBus;
use crate::spi::{Bus, DeviceConfig, Policy};
use wirespeed_lab::devices::RegFile;
use wirespeed_lab::{Lab, LabConfig};

struct LabRegFile {
    regs: RegFile,
    _lab: Lab,
}

impl Device for LabRegFile {
    fn peek(&self, reg: u32) -> u32 {
        u32::from(self.regs.peek(reg as u8))
    }
    fn poke(&self, reg: u32, val: u32) {
        self.regs.poke(reg as u8, val as u8);
    }
    fn cs_windows(&self) -> Option<u64> {
        Some(self.regs.accesses())
    }
}

pub fn spi_rigs() -> Vec<Rig> {
    CACHES
        .iter()
        .map(|&cache| {
            let lab = Lab::new(LabConfig::default());
            let block = lab.spi_controller(Default::default());
            let regs = RegFile::new(256);
            block.attach(0, regs.clone());
            let bus = Bus::new(LabSpi::new(block), Policy::fast());
            let dev = bus.device(DeviceConfig::new(0, 20_000_000)).expect("SPI device");
            rig("spi-lab", cache, SpiBus::new(dev), Box::new(LabRegFile { regs, _lab: lab }))
        })
        .collect()
}
