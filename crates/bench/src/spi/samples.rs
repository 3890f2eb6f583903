//! Per-message latencies for `--plot`: a sampling pass after the measured
//! rounds, on the same rigs, timing every message on its own (two clock
//! reads each). It runs only when asked ([`super::SpiOptions::latency_samples`]),
//! after the figures are taken, so the reported medians never carry its
//! clock reads; its rounds are interleaved like theirs (classic, linux-6.9,
//! fast, then the other way round).

use wirespeed::spi::Transfer;
use wirespeed_time::now;

use super::rig::Rig;
use super::SpiReport;
use crate::plot::{LatencyPlot, Series};

/// Every sampled message's latency, µs, per policy (unprepared sync
/// messages, as the `classic`, `linux69` and `fast` figures are).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencySamples {
    pub classic: Vec<f64>,
    pub linux69: Vec<f64>,
    pub fast: Vec<f64>,
}

/// Times `msgs` messages of `size` bytes per rig (`[classic, linux69,
/// fast]`), in `rounds` interleaved rounds.
pub(super) fn sample(rigs: [&Rig; 3], size: usize, msgs: u64, rounds: u32) -> Result<LatencySamples, String> {
    let mut out: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(msgs as usize));
    let rounds = u64::from(rounds.max(1));
    for k in 0..rounds {
        let per_round = msgs / rounds + u64::from(k < msgs % rounds);
        let order = if k % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for i in order {
            timed_round(rigs[i], size, per_round, &mut out[i])?;
        }
    }
    let [classic, linux69, fast] = out;
    Ok(LatencySamples { classic, linux69, fast })
}

/// Sends `msgs` back-to-back sync messages, pushing each one's latency (µs).
fn timed_round(rig: &Rig, size: usize, msgs: u64, out: &mut Vec<f64>) -> Result<(), String> {
    let tx = vec![0xA5u8; size];
    let mut rx = vec![0u8; size];
    for _ in 0..msgs {
        let t0 = now();
        rig.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).map_err(|e| e.to_string())?;
        out.push(now().ns_since(t0) as f64 / 1e3);
    }
    Ok(())
}

impl SpiReport {
    /// The latency histogram of classic, linux-6.9 and fast, with the wire
    /// time per message as the limit; `None` unless the run kept samples.
    pub fn latency_plot(&self) -> Option<LatencyPlot> {
        let s = self.latency_samples.as_ref()?;
        let o = &self.options;
        let series = |label: &str, samples: &[f64]| Series { label: label.into(), samples_us: samples.to_vec() };
        Some(LatencyPlot {
            title: format!(
                "bench spi: {}-byte sync messages at {} MHz on {}, {} per policy",
                o.size,
                f64::from(self.clock_hz) / 1e6,
                o.target,
                s.fast.len()
            ),
            x_label: "latency per message (µs)".into(),
            series: vec![
                series("classic (Linux 5.18)", &s.classic),
                series("linux-6.9", &s.linux69),
                series("fast", &s.fast),
            ],
            wire_limit_us: Some(self.fast.wire_us_per_msg),
        })
    }
}
