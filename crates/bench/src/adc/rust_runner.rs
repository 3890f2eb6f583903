//! The Rust driver as an [`AdcRunner`]: free-running `sample()` loops for
//! its throughput, [`Ad7606::run`] for paced trials.

use super::rig::Rig;
use super::search::{AdcRunner, RateTrial};
use crate::stats::median;
use std::sync::atomic::AtomicBool;
use wirespeed_drivers::ad7606::{Ad7606, SampleRing};
use wirespeed_time::now;

/// The runner.
#[derive(Debug)]
pub struct RustRunner {
    /// The driver.
    pub adc: Ad7606,
    ring: SampleRing,
    rounds: usize,
    per_round: usize,
}

impl RustRunner {
    /// The driver on `rig`; throughput from `rounds` rounds of `per_round` sets;
    /// trials of up to `periods` periods.
    pub fn new(
        rig: &Rig,
        speed_hz: u32,
        oversampling: u8,
        rounds: usize,
        per_round: usize,
        periods: u64,
    ) -> Result<RustRunner, String> {
        let adc = rig.driver(speed_hz, oversampling)?;
        let ring = SampleRing::new(periods.clamp(1, 1 << 26) as usize).map_err(|e| e.to_string())?;
        Ok(RustRunner { adc, ring, rounds: rounds.max(1), per_round: per_round.max(1) })
    }
}

impl AdcRunner for RustRunner {
    fn name(&self) -> &str {
        "rust"
    }

    fn max_hz(&mut self) -> Result<f64, String> {
        // Warm up the bus and the BUSY path first.
        for _ in 0..1_000 {
            self.adc.sample().map_err(|e| e.to_string())?;
        }
        let mut per_set = Vec::with_capacity(self.rounds);
        for _ in 0..self.rounds {
            let t = now();
            for _ in 0..self.per_round {
                self.adc.sample().map_err(|e| e.to_string())?;
            }
            per_set.push(now().ns_since(t) as f64 / self.per_round as f64);
        }
        Ok(1e9 / median(&per_set))
    }

    fn trial(&mut self, rate_hz: f64, periods: u64) -> Result<RateTrial, String> {
        let r = self.adc.run(rate_hz, Some(periods), &self.ring, &AtomicBool::new(false)).map_err(|e| e.to_string())?;
        while self.ring.pop().is_some() {}
        Ok(RateTrial {
            rate_hz,
            periods: r.periods,
            samples: r.samples,
            overruns: r.overruns(),
            achieved_hz: r.achieved_hz(),
            max_late_ns: r.max_late_ns,
        })
    }
}
