//! E6: the highest sustained sample rate of the lab AD7606 (8 channels,
//! read after each conversion) at 20 MHz SPI with no overrun, against the
//! part's own limit (seed 002: a Python AD7606 loop on a Pi at ~35-37 kHz).
//!
//! Setup ([`rig`]): the lab's WSPI block with the AD7606 model on CS 2
//! (oversampling 1 by default: tCONV 3.45 µs typical), CONVST on GPIO
//! line 8, BUSY on line 9; the stack's bus (policy `fast`) and
//! `wirespeed_drivers::ad7606` with BUSY wired.
//!
//! - `wire_limit_ksps` = 1 / (tCONV typical + CS setup (25 ns; t4, BUSY↓
//!   to CS↓, is 0) + 128 SCLKs at the clock): the fastest any reader of
//!   the part can go reading after each conversion.
//! - For each runner ([`search`]): its free-running throughput
//!   (`<name>_max_ksps`, the median of rounds of back-to-back sets), then
//!   paced runs of `periods` sample periods from that rate down in 3 %
//!   steps (two tries per rate) until one has no overrun (no period
//!   missed, no set dropped): `<name>_ksps`, `<name>_overruns` (0 there),
//!   `<name>_vs_wire` = `<name>_ksps / wire_limit_ksps`, also
//!   `overruns.<name>`. The Rust driver is `rust`; other runners plug in
//!   through [`run_with`] and [`AdcRunner`].
//! - The Python runners ([`python`], [`run_all`]): `python` (the driver's
//!   `wirespeed.ad7606` from a Python loop that paces itself), `python_raw`
//!   (wirespeed's `gpio` and `SpiDev.message` by hand), `pyspidev` (python
//!   gpiod + py-spidev through the shim), each on a lab of its own built
//!   from the same rig; `python_vs_rust`, `python_vs_pyspidev` and
//!   `python_raw_vs_pyspidev` are ratios of sustained rates, and
//!   `python_vs_pyspidev_bound` = `wire_limit_ksps / pyspidev_ksps` is the
//!   most any program could beat py-spidev by on this rig. Through the shim
//!   py-spidev's ioctls make no system call, so it runs faster here than
//!   on a kernel, and that bound is low (1.6 to 2.3 in runs on the
//!   2-core VM this was written on, at 20 MHz).
//! - `part`: the model's counters over the whole run (conversions, missed
//!   conversions = results overwritten unread, reads during BUSY).

pub mod python;
pub mod python_runner;
pub mod rig;
mod rust_runner;
pub mod search;

pub use python::{default_python, run_all, PythonError, PythonOptions};
pub use rust_runner::RustRunner;
pub use search::{sustained_rate, AdcRunner, RateTrial, SearchOptions, Sustained};

use crate::stats::round;
use crate::table::Table;
use serde_json::{json, Map, Value};
use wirespeed_drivers::ad7606::{wire_period_ns, Config};
use wirespeed_lab::devices::ad7606::Stats as PartStats;

/// Options of the adc experiment.
#[derive(Debug, Clone)]
pub struct AdcOptions {
    /// SPI clock, Hz.
    pub speed_hz: u32,
    /// Oversampling ratio of the part (1, 2, 4 … 64).
    pub oversampling: u8,
    /// Rounds of the free-running throughput measurement.
    pub rounds: usize,
    /// Sets per round.
    pub per_round: usize,
    /// The rate search.
    pub search: SearchOptions,
}

impl Default for AdcOptions {
    fn default() -> Self {
        AdcOptions {
            speed_hz: 20_000_000,
            oversampling: 1,
            rounds: 7,
            per_round: 5_000,
            search: SearchOptions::default(),
        }
    }
}

/// The experiment's result.
#[derive(Debug, Clone)]
pub struct AdcReport {
    /// The options it ran with.
    pub options: AdcOptions,
    /// tCONV typical, ns.
    pub conversion_ns: u64,
    /// One sample set's least time (conversion, CS setup, wire), ns.
    pub period_limit_ns: u64,
    /// The Rust driver's result first, then the other runners'.
    pub runners: Vec<Sustained>,
    /// How the Rust driver waited for BUSY.
    pub busy_mode: String,
    /// The part's counters.
    pub part: PartStats,
}

impl AdcReport {
    /// 1 / period_limit, kSPS.
    pub fn wire_limit_ksps(&self) -> f64 {
        1e6 / self.period_limit_ns as f64
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let wire = self.wire_limit_ksps();
        let mut adc = Map::new();
        adc.insert("wire_limit_ksps".into(), json!(round(wire, 2)));
        adc.insert("speed_hz".into(), json!(self.options.speed_hz));
        adc.insert("oversampling".into(), json!(self.options.oversampling));
        adc.insert("conversion_ns".into(), json!(self.conversion_ns));
        adc.insert("period_limit_ns".into(), json!(self.period_limit_ns));
        adc.insert("periods_per_trial".into(), json!(self.options.search.periods));
        adc.insert("rust_busy_mode".into(), json!(self.busy_mode));
        let mut overruns = Map::new();
        for r in &self.runners {
            let n = &r.name;
            let ksps = r.rate_hz / 1e3;
            adc.insert(format!("{n}_ksps"), json!(round(ksps, 2)));
            adc.insert(format!("{n}_vs_wire"), json!(round(ksps / wire, 4)));
            adc.insert(format!("{n}_overruns"), json!(r.overruns));
            adc.insert(format!("{n}_max_ksps"), json!(round(r.max_hz / 1e3, 2)));
            let trials: Vec<Value> = r
                .trials
                .iter()
                .map(|t| {
                    json!({
                        "rate_ksps": round(t.rate_hz / 1e3, 2),
                        "samples": t.samples,
                        "overruns": t.overruns,
                        "max_late_us": round(t.max_late_ns as f64 / 1e3, 1),
                    })
                })
                .collect();
            adc.insert(format!("{n}_trials"), Value::Array(trials));
            overruns.insert(n.clone(), json!(r.overruns));
        }
        adc.insert("overruns".into(), Value::Object(overruns));
        for (a, b) in [("python", "rust"), ("python", "pyspidev"), ("python_raw", "pyspidev")] {
            let rate = |n: &str| self.runners.iter().find(|r| r.name == n).map(|r| r.rate_hz);
            if let (Some(x), Some(y)) = (rate(a), rate(b)) {
                adc.insert(format!("{a}_vs_{b}"), json!(if y > 0.0 { round(x / y, 3) } else { 0.0 }));
            }
        }
        // The most any program could beat py-spidev by on this rig: the wire limit over its rate.
        if let Some(p) = self.runners.iter().find(|r| r.name == "pyspidev").filter(|r| r.rate_hz > 0.0) {
            adc.insert("python_vs_pyspidev_bound".into(), json!(round(wire * 1e3 / p.rate_hz, 3)));
        }
        adc.insert(
            "part".into(),
            json!({
                "conversions": self.part.conversions,
                "missed_conversions": self.part.missed_conversions,
                "reads_during_busy": self.part.reads_during_busy,
                "convst_ignored": self.part.convst_ignored,
            }),
        );
        json!({ "scenario": "adc", "adc": adc })
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let wire = self.wire_limit_ksps();
        let mut t = Table::new(&["reader", "sustained kSPS", "vs wire", "overruns", "free-running kSPS", "trials"]);
        t.row(vec!["wire limit".into(), format!("{wire:.1}"), "1.000".into(), "-".into(), "-".into(), "-".into()]);
        for r in &self.runners {
            t.row(vec![
                r.name.clone(),
                format!("{:.1}", r.rate_hz / 1e3),
                format!("{:.3}", r.rate_hz / 1e3 / wire),
                r.overruns.to_string(),
                format!("{:.1}", r.max_hz / 1e3),
                r.trials.len().to_string(),
            ]);
        }
        format!(
            "{}AD7606 at {} MHz, oversampling {}: tCONV {} ns + 128 SCLKs; {} periods per trial; BUSY {}\n",
            t.render(),
            self.options.speed_hz as f64 / 1e6,
            self.options.oversampling,
            self.conversion_ns,
            self.options.search.periods,
            self.busy_mode
        )
    }
}

/// Runs the experiment with the Rust driver alone.
pub fn run(opts: &AdcOptions) -> Result<AdcReport, String> {
    run_with(opts, &mut [])
}

/// Runs the experiment with the Rust driver, then each of `extra` (they
/// bring their own lab), all through the same search.
pub fn run_with(opts: &AdcOptions, extra: &mut [&mut dyn AdcRunner]) -> Result<AdcReport, String> {
    let cfg = Config { oversampling: opts.oversampling, ..Config::default() };
    let period_limit_ns = wire_period_ns(&cfg, opts.speed_hz).map_err(|e| e.to_string())?;
    let conversion_ns = cfg.conversion_typ_ns().map_err(|e| e.to_string())?;
    let cap_hz = cfg.max_rate_hz().map_err(|e| e.to_string())?.min(1e9 / period_limit_ns as f64);
    let rig = rig::Rig::new(opts.oversampling)?;
    let mut rust =
        RustRunner::new(&rig, opts.speed_hz, opts.oversampling, opts.rounds, opts.per_round, opts.search.periods)?;
    let busy_mode = format!("{:?}", rust.adc.busy_mode()).to_lowercase();
    let mut runners = vec![sustained_rate(&mut rust, cap_hz, &opts.search)?];
    let part = rig.part.stats();
    drop(rust);
    for r in extra.iter_mut() {
        runners.push(sustained_rate(&mut **r, cap_hz, &opts.search)?);
    }
    Ok(AdcReport { options: opts.clone(), conversion_ns, period_limit_ns, runners, busy_mode, part })
}
