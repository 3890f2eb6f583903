//! Bulk SPI DMA throughput under each IOMMU mode (no IOMMU, identity,
//! strict, lazy): long duplex transfers through the stack's one API (the
//! core maps them and the lab's DMA engine moves them), the modes
//! interleaved message by message so that drift hits them alike.

use wirespeed::spi::{Policy, Transfer};
use wirespeed_time::now;

use super::rig::{DmaRig, MODES};
use crate::stats::median;

/// Throughput of one mode.
#[derive(Clone, Debug)]
pub struct ModeThroughput {
    pub mode: &'static str,
    /// Median bytes per second over the messages.
    pub bytes_per_s: f64,
    /// Median elapsed time of one message, in µs.
    pub us_per_msg: f64,
}

/// Bulk results: every mode, and the wire's own limit.
#[derive(Clone, Debug)]
pub struct Bulk {
    pub size: usize,
    pub hz: u32,
    pub msgs: usize,
    pub wire_bytes_per_s: f64,
    pub modes: Vec<ModeThroughput>,
}

impl Bulk {
    /// Throughput of `mode` over throughput with no IOMMU.
    pub fn vs_none(&self, mode: &str) -> f64 {
        let of = |m: &str| self.modes.iter().find(|t| t.mode == m).map_or(f64::NAN, |t| t.bytes_per_s);
        of(mode) / of("none")
    }
}

/// Runs `msgs` messages of `size` bytes at `hz` in every mode, interleaved.
pub fn run(size: usize, hz: u32, msgs: usize) -> Result<Bulk, String> {
    let rigs = MODES
        .iter()
        .map(|&(name, mode)| DmaRig::new(mode, hz, Policy::fast(), |hw| hw).map(|r| (name, r)))
        .collect::<Result<Vec<_>, _>>()?;
    let tx: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
    let mut rx = vec![0u8; size];
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(msgs); rigs.len()];
    // One untimed message each: first-use costs (IOVA caches, page faults) out of the figures.
    for (name, rig) in &rigs {
        rig.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).map_err(|e| format!("{name}: {e}"))?;
    }
    for _ in 0..msgs {
        for (k, (name, rig)) in rigs.iter().enumerate() {
            rx.fill(0);
            let t0 = now();
            rig.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).map_err(|e| format!("{name}: {e}"))?;
            times[k].push(now().ns_since(t0) as f64);
            if rx != tx {
                return Err(format!("{name}: the loopback returned other data than was sent"));
            }
        }
    }
    let modes = rigs
        .iter()
        .zip(&times)
        .map(|((name, _), t)| {
            let ns = median(t);
            ModeThroughput { mode: name, bytes_per_s: size as f64 * 1e9 / ns, us_per_msg: ns / 1e3 }
        })
        .collect();
    Ok(Bulk { size, hz, msgs, wire_bytes_per_s: f64::from(hz) / 8.0, modes })
}
