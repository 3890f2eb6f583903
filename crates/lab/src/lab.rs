//! [`Lab`]: one emulated board — its interrupt thread and the blocks on it.

use crate::gpio::{GpioChip, GpioChipConfig};
use crate::scheduler::Scheduler;
use crate::spi::{SpiController, SpiControllerConfig};

/// Settings shared by every block of a lab.
#[derive(Clone, Debug, Default)]
pub struct LabConfig {
    /// An infinitely fast wire: every transfer completes the instant it starts.
    /// Use it to count the software's cost alone.
    pub instant_wire: bool,
    /// Extra time every register access of every block takes, in ns (a slow
    /// SoC interconnect). Default 0.
    pub reg_access_latency_ns: u64,
}

/// An emulated board. Cheap to clone; the interrupt thread stops when the
/// last clone is dropped.
#[derive(Clone, Debug)]
pub struct Lab {
    config: LabConfig,
    scheduler: Scheduler,
}

impl Lab {
    /// A new lab with its own interrupt thread.
    pub fn new(config: LabConfig) -> Lab {
        Lab { config, scheduler: Scheduler::start("lab-irq") }
    }

    /// The lab's settings.
    pub fn config(&self) -> &LabConfig {
        &self.config
    }

    /// The lab's interrupt thread, for models that raise events at a time.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Adds an SPI controller block to the board.
    pub fn spi_controller(&self, config: SpiControllerConfig) -> SpiController {
        SpiController::new(self, config)
    }

    /// Adds a GPIO chip block to the board.
    pub fn gpio_chip(&self, config: GpioChipConfig) -> GpioChip {
        GpioChip::new(self, config)
    }
}
