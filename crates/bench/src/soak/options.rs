//! What a soak run is asked to do.

use std::time::Duration;

/// When the run stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// After this many messages (SPI messages and GPIO toggles).
    Messages(u64),
    /// After this long.
    Duration(Duration),
}

/// A soak run's options.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Worker threads sending SPI messages (the GPIO worker and the fault
    /// injector run besides them).
    pub threads: usize,
    /// When to stop.
    pub limit: Limit,
    /// Seed of the workers' and the injector's random choices.
    pub seed: u64,
    /// Inject faults (off: a clean run, every fault count 0).
    pub faults: bool,
    /// Print progress to stderr every few seconds.
    pub progress: bool,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            threads: 8,
            limit: Limit::Duration(Duration::from_secs(10)),
            seed: 0x5EED_50A4,
            faults: true,
            progress: false,
        }
    }
}

/// Options the run cannot take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionsError {
    /// No worker threads, or more than the checker's streams allow.
    Threads(usize),
    /// A limit of zero messages or zero time.
    EmptyLimit,
}

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionsError::Threads(n) => {
                write!(f, "{n} worker threads: give 1 to {MAX_THREADS}")
            }
            OptionsError::EmptyLimit => {
                write!(f, "a soak of no messages or no time: give --messages or --duration above 0")
            }
        }
    }
}

impl std::error::Error for OptionsError {}

/// Most worker threads (a worker's number travels in one byte of each frame).
pub const MAX_THREADS: usize = 64;

impl SoakOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(OptionsError::Threads(self.threads));
        }
        match self.limit {
            Limit::Messages(0) => Err(OptionsError::EmptyLimit),
            Limit::Duration(d) if d.is_zero() => Err(OptionsError::EmptyLimit),
            _ => Ok(()),
        }
    }
}
