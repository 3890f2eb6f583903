//! The normal pass' 100 µs waits as a latency histogram (`--plot`): the
//! kernel's `nanosleep(100 µs)` (what classic code waits with) against
//! wirespeed's `delay(100 µs)`, with the bare 100 µs spin as the host's
//! reference and the requested 100 µs as the floor.

use super::DelayReport;
use crate::plot::{LatencyPlot, Series};

/// The wait the chart compares, µs.
const REQUESTED_US: f64 = 100.0;

/// `(test name, legend label)` of the chart's series, in drawing order.
const SERIES: [(&str, &str); 3] = [
    ("nanosleep_100us", "nanosleep(100 µs) (classic)"),
    ("delay_100us", "wirespeed delay(100 µs) (fast)"),
    ("spin_100us", "bare 100 µs spin (reference)"),
];

impl DelayReport {
    /// The chart, or `None` unless the run kept its samples
    /// ([`super::DelayOptions::keep_samples`]).
    pub fn latency_plot(&self) -> Option<LatencyPlot> {
        let series = SERIES
            .iter()
            .map(|&(name, label)| {
                self.normal.samples(name).map(|xs| Series { label: label.into(), samples_us: xs.to_vec() })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(LatencyPlot {
            title: format!("bench delay: 100 µs waits at normal priority, {} each", self.iterations),
            x_label: "time per wait, asked for 100 µs (µs)".into(),
            series,
            wire_limit_us: Some(REQUESTED_US),
        })
    }
}
