//! [`Lab`]: one emulated board — its interrupt thread and the blocks on it.

use crate::gpio::{GpioChip, GpioChipConfig, GpioConfigError};
use crate::iommu::{Iommu, IommuConfig, IommuConfigError};
use crate::scheduler::Scheduler;
use crate::spi::{SpiConfigError, SpiController, SpiControllerConfig};
use crate::start_error::LabStartError;
use wirespeed_time::realtime::CpuList;

/// Settings shared by every block of a lab.
#[derive(Clone, Debug, Default)]
pub struct LabConfig {
    /// An infinitely fast wire: every transfer completes the instant it starts.
    /// Use it to count the software's cost alone.
    pub instant_wire: bool,
    /// Extra time every register access of every block takes, in ns (a slow
    /// SoC interconnect). Default 0.
    pub reg_access_latency_ns: u64,
    /// The CPUs the lab's interrupt thread runs on (`None`, the default:
    /// wherever the scheduler puts it). The emulated hardware then never
    /// takes the CPU of software kept off these CPUs: on a shared CPU the
    /// scheduler may run the interrupt thread in the middle of that
    /// software's transfer.
    pub interrupt_thread_cpus: Option<CpuList>,
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
    ///
    /// # Panics
    /// If the interrupt thread cannot be created (the process is out of
    /// threads or memory), as [`std::thread::spawn`] does;
    /// [`try_new`](Lab::try_new) returns that as an error.
    pub fn new(config: LabConfig) -> Lab {
        Lab::try_new(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A new lab with its own interrupt thread, or why that thread could not
    /// be started.
    pub fn try_new(config: LabConfig) -> Result<Lab, LabStartError> {
        Lab::try_new_with(config, std::thread::Builder::new())
    }

    /// [`Lab::try_new`] with the interrupt thread made by `builder`.
    fn try_new_with(config: LabConfig, builder: std::thread::Builder) -> Result<Lab, LabStartError> {
        let scheduler = Scheduler::try_start_on(builder, "lab-irq", config.interrupt_thread_cpus.as_ref())?;
        Ok(Lab { config, scheduler })
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
    ///
    /// # Panics
    /// If no block can have `config` (see [`SpiControllerConfig::validate`]);
    /// [`try_spi_controller`](Lab::try_spi_controller) returns that as an error.
    pub fn spi_controller(&self, config: SpiControllerConfig) -> SpiController {
        self.try_spi_controller(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Adds an SPI controller block to the board, or says why no block can
    /// have `config`.
    pub fn try_spi_controller(&self, config: SpiControllerConfig) -> Result<SpiController, SpiConfigError> {
        SpiController::new(self, config)
    }

    /// Adds a GPIO chip block to the board.
    ///
    /// # Panics
    /// If no chip can have `config` (see [`GpioChipConfig::validate`]);
    /// [`try_gpio_chip`](Lab::try_gpio_chip) returns that as an error.
    pub fn gpio_chip(&self, config: GpioChipConfig) -> GpioChip {
        GpioChip::new(self, config)
    }

    /// Adds a GPIO chip block to the board, or says why no chip can have
    /// `config`.
    pub fn try_gpio_chip(&self, config: GpioChipConfig) -> Result<GpioChip, GpioConfigError> {
        GpioChip::try_new(self, config)
    }

    /// Adds an IOMMU to the board, or says why no IOMMU can have `config`.
    /// Attach it to the blocks whose DMA it translates
    /// ([`SpiController::attach_iommu`]).
    pub fn iommu(&self, config: IommuConfig) -> Result<Iommu, IommuConfigError> {
        Iommu::new(config)
    }

    /// Adds an IOMMU with the default configuration ([`IommuConfig::default`]).
    pub fn default_iommu(&self) -> Iommu {
        Iommu::build(IommuConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;
    use wirespeed_time::now;

    #[test]
    fn a_lab_whose_interrupt_thread_cannot_start_is_an_error_not_a_panic() {
        // A stack larger than any address space: pthread_create fails,
        // deterministically and for this thread only.
        let no_stack = std::thread::Builder::new().stack_size(1 << 50);
        let e = Lab::try_new_with(LabConfig::default(), no_stack).expect_err("an interrupt thread with no stack");
        assert_eq!(e.thread, "lab-irq");
        assert!(e.to_string().contains("cannot start the lab's interrupt thread \"lab-irq\""), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        // Where the thread can start, the lab starts and delivers its events.
        let lab = Lab::try_new(LabConfig::default()).expect("the interrupt thread starts");
        let (tx, rx) = mpsc::channel();
        lab.scheduler().schedule(now(), move |_| tx.send(()).unwrap());
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "the lab's interrupt thread runs no events");
    }

    #[test]
    fn the_interrupt_thread_runs_on_the_cpus_it_is_given_or_the_lab_does_not_start() {
        let cpus = wirespeed_time::realtime::current_thread_cpus().unwrap();
        let last = *cpus.cpus().last().unwrap();
        let config =
            |c: usize| LabConfig { interrupt_thread_cpus: Some(CpuList::new(&[c]).unwrap()), ..LabConfig::default() };
        let lab = Lab::try_new(config(last)).unwrap();
        // The interrupt thread reports where it may run from inside an event.
        let (tx, rx) = mpsc::channel();
        lab.scheduler().schedule(now(), move |_| {
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap().to_owned();
            tx.send(line).unwrap()
        });
        let line = rx.recv_timeout(Duration::from_secs(5)).expect("the pinned interrupt thread runs events");
        assert_eq!(line.trim_start_matches("Cpus_allowed_list:").trim(), last.to_string());
        // A CPU this process may not use: the lab does not start, and says which.
        let missing = (0..wirespeed_time::realtime::MAX_CPUS).rev().find(|c| !cpus.cpus().contains(c)).unwrap();
        let e = Lab::try_new(config(missing)).expect_err("a CPU the process may not use");
        assert!(e.cpus.is_some());
        assert!(e.to_string().contains(&format!("on CPUs [{missing}]")), "{e}");
    }
}
