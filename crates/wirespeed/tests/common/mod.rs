//! Test benches on the lab: a WSPI block with devices, driven by the SPI core.

#![allow(dead_code)]

pub mod alloc_count;

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, Controller, Policy};
use wirespeed_lab::devices::{Loopback, RegFile};
use wirespeed_lab::spi::{SpiController, SpiDeviceModel};
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

/// A bus on a lab of its own (`config`) with `device` on CS 0, run by the
/// lab's controller driver as `wrap` makes it (`|d| d` for the driver
/// itself, or a wrapper that injects faults). Keep the lab alive with the bus.
pub fn lab_bus<C: Controller>(
    config: LabConfig,
    policy: Policy,
    device: impl SpiDeviceModel + 'static,
    wrap: impl FnOnce(LabSpi) -> C,
) -> (Lab, Bus) {
    let lab = Lab::new(config);
    let block = lab.spi_controller(Default::default());
    block.attach(0, device);
    let bus = Bus::new(wrap(LabSpi::new(block)), policy);
    (lab, bus)
}

/// Runs `f` on its own thread and returns its result, or fails the test
/// with `stuck` if it has not finished within `limit`: a lost wake-up must
/// fail a test, not hang it.
pub fn within<R: Send + 'static>(limit: Duration, stuck: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(RecvTimeoutError::Disconnected) => std::panic::resume_unwind(worker.join().unwrap_err()),
        Err(RecvTimeoutError::Timeout) => panic!("{stuck} (after {limit:?})"),
    }
}

pub fn poll_policy() -> Policy {
    Policy { poll_below_ns: Some(u64::MAX), ..Policy::fast() }
}

pub fn irq_policy() -> Policy {
    Policy { poll_below_ns: Some(0), timed_completion: false, ..Policy::fast() }
}
