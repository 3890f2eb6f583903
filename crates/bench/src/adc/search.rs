//! The highest sustained rate: from a runner's free-running throughput
//! down in small steps until a run of N sample periods has no overrun.
//! Any runner (the Rust driver here; Python clients elsewhere) plugs in
//! through [`AdcRunner`] and gets the same search.

/// One paced run at one rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateTrial {
    /// The rate asked for, Hz.
    pub rate_hz: f64,
    /// Sample periods the run covered.
    pub periods: u64,
    /// Sets read.
    pub samples: u64,
    /// Sets lost: periods with no conversion plus sets dropped.
    pub overruns: u64,
    /// Sets read per second of the run.
    pub achieved_hz: f64,
    /// Largest delay of a sample after its deadline, ns (caught up if below the lag bound).
    pub max_late_ns: u64,
}

/// A way of sampling the lab AD7606 that the search can drive.
pub trait AdcRunner {
    /// Its name in the report (`rust`, `python`, …): keys are `<name>_ksps` etc.
    fn name(&self) -> &str;
    /// Its free-running throughput: back-to-back sample sets per second (median).
    fn max_hz(&mut self) -> Result<f64, String>;
    /// One paced run of `periods` sample periods at `rate_hz`.
    fn trial(&mut self, rate_hz: f64, periods: u64) -> Result<RateTrial, String>;
}

/// How the search steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchOptions {
    /// Sample periods per trial.
    pub periods: u64,
    /// Trials per rate before stepping down (a rate passes on its first clean trial).
    pub attempts: u32,
    /// Each step multiplies the rate by this.
    pub step: f64,
    /// Give up below this share of the starting rate.
    pub floor: f64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { periods: 20_000, attempts: 2, step: 0.97, floor: 0.2 }
    }
}

/// What the search found for one runner.
#[derive(Clone, Debug, PartialEq)]
pub struct Sustained {
    /// The runner's name.
    pub name: String,
    /// Free-running throughput, Hz.
    pub max_hz: f64,
    /// The highest rate whose trial had no overrun, Hz (0: none down to the floor).
    pub rate_hz: f64,
    /// Overruns of the trial at that rate (0), or of the last trial if none passed.
    pub overruns: u64,
    /// Every trial, in order.
    pub trials: Vec<RateTrial>,
}

/// Runs the search for `runner`, starting at its free-running throughput
/// capped at `cap_hz` (the part's or the wire's limit).
pub fn sustained_rate(runner: &mut dyn AdcRunner, cap_hz: f64, opts: &SearchOptions) -> Result<Sustained, String> {
    let max_hz = runner.max_hz()?;
    let start = max_hz.min(cap_hz);
    let mut rate = start;
    let mut trials = Vec::new();
    while rate >= start * opts.floor {
        for _ in 0..opts.attempts.max(1) {
            let t = runner.trial(rate, opts.periods)?;
            trials.push(t);
            if t.overruns == 0 {
                return Ok(Sustained { name: runner.name().to_owned(), max_hz, rate_hz: rate, overruns: 0, trials });
            }
        }
        rate *= opts.step;
    }
    let overruns = trials.last().map_or(0, |t| t.overruns);
    Ok(Sustained { name: runner.name().to_owned(), max_hz, rate_hz: 0.0, overruns, trials })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overruns above 80 Hz.
    struct Fake(u32);
    impl AdcRunner for Fake {
        fn name(&self) -> &str {
            "fake"
        }
        fn max_hz(&mut self) -> Result<f64, String> {
            Ok(100.0)
        }
        fn trial(&mut self, rate_hz: f64, periods: u64) -> Result<RateTrial, String> {
            self.0 += 1;
            let overruns = u64::from(rate_hz > 80.0);
            Ok(RateTrial {
                rate_hz,
                periods,
                samples: periods - overruns,
                overruns,
                achieved_hz: rate_hz,
                max_late_ns: 0,
            })
        }
    }

    #[test]
    fn steps_down_to_the_first_clean_rate() {
        let mut f = Fake(0);
        let opts = SearchOptions { periods: 10, attempts: 2, step: 0.9, floor: 0.5 };
        let s = sustained_rate(&mut f, 1e9, &opts).unwrap();
        assert!((s.rate_hz - 72.9).abs() < 1e-9, "{s:?}");
        assert_eq!((s.overruns, s.trials.len()), (0, 7));
        let s = sustained_rate(&mut Fake(0), 50.0, &opts).unwrap();
        assert_eq!((s.rate_hz, s.trials.len()), (50.0, 1));
    }
}
