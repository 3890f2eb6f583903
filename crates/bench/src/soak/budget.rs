//! When the workers stop: the run's limit, then the injector's end.
//!
//! Workers claim messages before sending them. Once the limit is reached
//! the injector is stopped, but a fault it armed must still be seen, so
//! the workers keep going (and their messages keep counting) until the
//! injector has finished and disarmed what did not fire.

use super::options::Limit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use wirespeed_time::{now, Instant};

/// The run's limit and the injector's state.
#[derive(Debug)]
pub struct Budget {
    limit: Limit,
    started: Instant,
    claimed: AtomicU64,
    injector_done: AtomicBool,
}

impl Budget {
    /// A budget of `limit`, its time counted from now.
    pub fn new(limit: Limit) -> Budget {
        Budget { limit, started: now(), claimed: AtomicU64::new(0), injector_done: AtomicBool::new(false) }
    }

    /// Whether the limit is reached.
    pub fn exhausted(&self) -> bool {
        match self.limit {
            Limit::Messages(m) => self.claimed.load(Ordering::Relaxed) >= m,
            Limit::Duration(d) => now().ns_since(self.started) >= u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Claims `n` messages; `false` when the worker should stop (the limit
    /// reached and the injector done).
    pub fn claim(&self, n: u64) -> bool {
        let within = match self.limit {
            Limit::Messages(m) => self.claimed.fetch_add(n, Ordering::Relaxed) < m,
            Limit::Duration(_) => !self.exhausted(),
        };
        within || !self.injector_done.load(Ordering::Acquire)
    }

    /// The injector has stopped and disarmed its faults.
    pub fn injector_finished(&self) {
        self.injector_done.store(true, Ordering::Release);
    }

    /// Fraction of the limit used so far (0..=1), for progress.
    pub fn progress(&self) -> f64 {
        let f = match self.limit {
            Limit::Messages(m) => self.claimed.load(Ordering::Relaxed) as f64 / m as f64,
            Limit::Duration(d) => now().ns_since(self.started) as f64 / d.as_nanos() as f64,
        };
        f.min(1.0)
    }
}
