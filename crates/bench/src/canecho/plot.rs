//! The timed run's echo gaps as a latency histogram (`--plot`): every
//! frame's RX EOF → echo SOF gap, which the run keeps anyway, per policy,
//! with the physical limit of an echo as the floor.

use super::CanechoReport;
use crate::plot::{LatencyPlot, Series};

impl CanechoReport {
    /// Classic, linux-6.9 and fast's echo gaps on one chart, the echo's
    /// physical limit (`gap_limit_us`) drawn as the wire limit.
    pub fn latency_plot(&self) -> LatencyPlot {
        let o = &self.options;
        let series =
            |label: &str, p: &super::PolicyReport| Series { label: label.into(), samples_us: p.timed.gaps_us.clone() };
        LatencyPlot {
            title: format!(
                "bench canecho: {} frames of {} bytes at {} kbit/s, echoed by the mcp251xfd driver",
                o.frames,
                o.len,
                o.bitrate / 1000
            ),
            x_label: "echo latency per frame, RX EOF → echo SOF (µs)".into(),
            series: vec![
                series("classic (Linux 5.18)", &self.classic),
                series("linux-6.9", &self.linux69),
                series("fast", &self.fast),
            ],
            wire_limit_us: Some(self.fast.limit()),
        }
    }
}
