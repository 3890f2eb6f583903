//! Test benches on the lab: a WSPI block with devices, driven by the SPI core.

#![allow(dead_code)]

pub mod alloc_count;

use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, Policy};
use wirespeed_lab::devices::{Loopback, RegFile};
use wirespeed_lab::spi::SpiController;
use wirespeed_lab::{Lab, LabConfig};

pub struct Bench {
    pub lab: Lab,
    pub block: SpiController,
    pub loopback: Loopback,
    pub regfile: RegFile,
    pub bus: Bus,
}

/// Loopback on CS 0, a 256-register file on CS 1.
pub fn bench(policy: Policy) -> Bench {
    let lab = Lab::new(LabConfig::default());
    let block = lab.spi_controller(Default::default());
    let loopback = Loopback::new();
    let regfile = RegFile::new(256);
    block.attach(0, loopback.clone());
    block.attach(1, regfile.clone());
    let bus = Bus::new(LabSpi::new(block.clone()), policy);
    Bench { lab, block, loopback, regfile, bus }
}

pub fn poll_policy() -> Policy {
    Policy { poll_below_ns: Some(u64::MAX), ..Policy::fast() }
}

pub fn irq_policy() -> Policy {
    Policy { poll_below_ns: Some(0), ..Policy::fast() }
}
