//! What the `LD_PRELOAD` shim costs an unmodified program: the median time
//! of one 9-byte `SPI_IOC_MESSAGE(1)` on `/dev/spidev0.0`, served from a lab
//! loopback whose wire is instant (`instant_wire = true`: the transfer
//! itself takes no time, so what is left is software).
//!
//! Three ways of sending the same message, on the same board file (written
//! to a scratch directory):
//! - **C** (`shim.ioctl_ns`): [`clients::C_SOURCE`] (`shim/client.c`),
//!   compiled with `cc -O2` (`$CC` if set) and run under the shim by the
//!   [`Launcher`] the CLI gives (`wirespeed lab run`'s command): it opens the
//!   node, sets mode 0 and the clock, runs `warmup` messages, then `rounds`
//!   rounds of `count` `ioctl(fd, SPI_IOC_MESSAGE(1), &xfer)`, each round
//!   timed with `clock_gettime(CLOCK_MONOTONIC)`, every echo checked;
//! - **Python** (`shim.python_ioctl_ns`): the same through the standard
//!   library's `fcntl.ioctl` with a ctypes `spi_ioc_transfer`
//!   (`shim/client.py`, `python3` from `PATH`; no PyPI package);
//! - **in-process** (`shim.inprocess_ns`): the same message on the same
//!   node ([`wirespeed_labhost::Board::load`] of the same board file) called
//!   through `NodeFile::ioctl` in this process — the lab's spidev without
//!   the shim. `shim.overhead_ns` = C − in-process is the shim's own cost:
//!   its `ioctl` hook, descriptor lookup and the C library's call.
//!
//! Each figure is the median of its rounds' ns per ioctl. The rounds are
//! taken in three passes; each pass starts fresh clients (each loads the
//! board, warms up and runs one round, all untimed) and builds a fresh
//! board in this process, then asks for one round at a time: C,
//! in-process, Python, C, … (A B C A B C), so that a change of the host's
//! state during the run touches all three alike. Fresh processes per pass
//! because a process tends to stay on one CPU, and on a small VM one vCPU
//! can run ~1.5× slower than the other for seconds (seen on the 2-vCPU test
//! VM: whole passes at ~950 ns where others run at ~550): the median over
//! three processes of each kind is steadier than one process's figure.
//! `shim.overhead_ns_paired` is the median of the round-by-round
//! differences C − in-process; the shim's own cost is small (tens of ns)
//! next to that noise, so either overhead figure can come out negative on
//! a noisy host.

pub mod clients;
pub mod error;
pub mod inprocess;
pub mod launcher;
pub mod scratch;

use crate::stats::{median, round};
use crate::table::Table;
pub use error::ShimError;
pub use launcher::Launcher;
use serde_json::{json, Value};
use std::path::Path;

/// The node the benchmark's board serves and the clients open.
pub const DEVICE: &str = "/dev/spidev0.0";
/// The board file: one loopback on bus 0, CS 0, instant wire.
pub const BOARD: &str = "\
# Written by `wirespeed bench shim`: a loopback on /dev/spidev0.0 whose
# transfers complete instantly, so that only software is timed.
[lab]
instant_wire = true

[[spi]]
bus = 0

[[spi.device]]
cs = 0
kind = \"loopback\"
";
/// Bytes per message.
pub const MESSAGE_BYTES: usize = 9;
/// Passes, each with fresh client processes and a fresh in-process board.
const PASSES: usize = 3;

/// Options of the shim benchmark.
#[derive(Debug, Clone)]
pub struct ShimOptions {
    /// Timed rounds of each client (1-10000).
    pub rounds: usize,
    /// Messages per round (1-10000000).
    pub count: usize,
    /// Untimed messages each run starts with.
    pub warmup: usize,
    /// The clock the clients set (the wire is instant: it changes nothing).
    pub speed_hz: u32,
    /// Run the Python client too.
    pub python: bool,
}

impl Default for ShimOptions {
    fn default() -> Self {
        ShimOptions { rounds: 15, count: 2000, warmup: 2000, speed_hz: 10_000_000, python: true }
    }
}

impl ShimOptions {
    /// Refuses options out of range.
    pub fn check(&self) -> Result<(), ShimError> {
        if !(1..=10_000).contains(&self.rounds) {
            return Err(ShimError::Options(format!("--rounds must be within 1..=10000, not {}", self.rounds)));
        }
        if !(1..=10_000_000).contains(&self.count) {
            return Err(ShimError::Options(format!("--count must be within 1..=10000000, not {}", self.count)));
        }
        if self.speed_hz == 0 {
            return Err(ShimError::Options("the clock must be at least 1 Hz".into()));
        }
        Ok(())
    }
}

/// The benchmark's result: ns per ioctl of every round.
#[derive(Debug, Clone)]
pub struct ShimReport {
    /// Messages per round.
    pub count: usize,
    /// The C client's rounds under the shim.
    pub c_rounds: Vec<f64>,
    /// The Python client's rounds under the shim (`None`: not run).
    pub python_rounds: Option<Vec<f64>>,
    /// The in-process rounds.
    pub inprocess_rounds: Vec<f64>,
}

impl ShimReport {
    /// Median ns per ioctl from C under the shim.
    pub fn ioctl_ns(&self) -> f64 {
        median(&self.c_rounds)
    }
    /// Median ns per ioctl from Python under the shim.
    pub fn python_ioctl_ns(&self) -> Option<f64> {
        self.python_rounds.as_deref().map(median)
    }
    /// Median ns per ioctl in-process.
    pub fn inprocess_ns(&self) -> f64 {
        median(&self.inprocess_rounds)
    }
    /// The shim's own cost: C − in-process.
    pub fn overhead_ns(&self) -> f64 {
        self.ioctl_ns() - self.inprocess_ns()
    }
    /// The median of the round-by-round differences C − in-process.
    pub fn overhead_ns_paired(&self) -> f64 {
        let d: Vec<f64> = self.c_rounds.iter().zip(&self.inprocess_rounds).map(|(c, i)| c - i).collect();
        median(&d)
    }
}

/// One pass: a fresh board in this process and fresh clients, `rounds`
/// interleaved rounds of each, appended to `report`.
fn pass(
    report: &mut ShimReport,
    launcher: &Launcher,
    board: &Path,
    c_bin: &Path,
    py: Option<&Path>,
    job: &clients::ClientJob,
    rounds: usize,
) -> Result<(), ShimError> {
    let session = inprocess::Session::open(board, DEVICE, job.speed_hz)?;
    let mut c = clients::Running::c(launcher, board, c_bin, job)?;
    let mut python = py.map(|script| clients::Running::python(launcher, board, script, job)).transpose()?;
    // The in-process warm-up, as each client does its own; then one
    // untimed round of each client, so that none is still starting or
    // warming up while another is timed.
    session.rounds(0, job.count, job.warmup, job.speed_hz)?;
    c.round()?;
    if let Some(p) = python.as_mut() {
        p.round()?;
    }
    for _ in 0..rounds {
        report.c_rounds.push(c.round()?);
        report.inprocess_rounds.extend(session.rounds(1, job.count, 0, job.speed_hz)?);
        if let (Some(p), Some(out)) = (python.as_mut(), report.python_rounds.as_mut()) {
            out.push(p.round()?);
        }
    }
    c.finish()?;
    python.map_or(Ok(()), clients::Running::finish)
}

/// Runs the benchmark; `launcher` runs a program under the shim.
pub fn run(opts: &ShimOptions, launcher: &Launcher) -> Result<ShimReport, ShimError> {
    opts.check()?;
    let dir = scratch::Scratch::new("shim").map_err(|e| ShimError::Io(format!("scratch directory: {e}")))?;
    let board = dir.join("lab.toml");
    std::fs::write(&board, BOARD).map_err(|e| ShimError::Io(format!("{}: {e}", board.display())))?;
    let c_bin = clients::compile_c(dir.path())?;
    let py = if opts.python { Some(clients::prepare_python(dir.path())?) } else { None };
    let job = clients::ClientJob { dev: DEVICE, count: opts.count, warmup: opts.warmup, speed_hz: opts.speed_hz };
    let mut report = ShimReport {
        count: opts.count,
        c_rounds: Vec::with_capacity(opts.rounds),
        python_rounds: py.as_ref().map(|_| Vec::with_capacity(opts.rounds)),
        inprocess_rounds: Vec::with_capacity(opts.rounds),
    };
    let passes = PASSES.min(opts.rounds);
    for p in 0..passes {
        let rounds = opts.rounds / passes + usize::from(p < opts.rounds % passes);
        pass(&mut report, launcher, &board, &c_bin, py.as_deref(), &job, rounds)?;
    }
    Ok(report)
}

impl ShimReport {
    /// The report as one JSON object: `{"scenario": "shim", "shim": {…}}`.
    pub fn to_json(&self) -> Value {
        let rounds = |v: &[f64]| -> Value { v.iter().map(|x| json!(round(*x, 1))).collect::<Vec<_>>().into() };
        let py = self.python_ioctl_ns();
        json!({
            "scenario": "shim",
            "shim": {
                "ioctl_ns": round(self.ioctl_ns(), 1),
                "ioctl_ns_rounds": rounds(&self.c_rounds),
                "python_ioctl_ns": py.map(|x| round(x, 1)),
                "python_ioctl_ns_rounds": self.python_rounds.as_deref().map(rounds),
                "inprocess_ns": round(self.inprocess_ns(), 1),
                "inprocess_ns_rounds": rounds(&self.inprocess_rounds),
                "overhead_ns": round(self.overhead_ns(), 1),
                "overhead_ns_paired": round(self.overhead_ns_paired(), 1),
                "python_overhead_ns": py.map(|x| round(x - self.inprocess_ns(), 1)),
                "device": DEVICE,
                "message_bytes": MESSAGE_BYTES,
                "rounds": self.c_rounds.len(),
                "count": self.count,
            }
        })
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let mut t = Table::new(&["client", "median ns/ioctl", "min", "max", "over in-process"]);
        let inproc = self.inprocess_ns();
        let mut row = |name: &str, v: &[f64], over: bool| {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let m = median(v);
            t.row(vec![
                name.to_owned(),
                format!("{m:.0}"),
                format!("{min:.0}"),
                format!("{max:.0}"),
                if over { format!("{:+.0}", m - inproc) } else { "-".into() },
            ]);
        };
        row("C ioctl() through the shim", &self.c_rounds, true);
        if let Some(p) = &self.python_rounds {
            row("Python fcntl.ioctl through the shim", p, true);
        }
        row("in-process NodeFile::ioctl", &self.inprocess_rounds, false);
        format!(
            "shim: one {MESSAGE_BYTES}-byte SPI_IOC_MESSAGE(1) on {DEVICE} (lab loopback, instant wire), {} rounds × {}\n{}\
             the shim's own cost (C − in-process): {:.0} ns per ioctl\n",
            self.c_rounds.len(),
            self.count,
            t.render(),
            self.overhead_ns()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_out_of_range_are_refused() {
        assert!(ShimOptions::default().check().is_ok());
        assert!(ShimOptions { rounds: 0, ..ShimOptions::default() }.check().is_err());
        assert!(ShimOptions { count: 0, ..ShimOptions::default() }.check().is_err());
    }

    #[test]
    fn report_json_has_the_keys() {
        let r = ShimReport {
            count: 10,
            c_rounds: vec![900.0, 1000.0, 1100.0],
            python_rounds: None,
            inprocess_rounds: vec![400.0, 500.0, 600.0],
        };
        let j = r.to_json();
        assert_eq!(j["scenario"], "shim");
        let s = &j["shim"];
        assert_eq!(s["ioctl_ns"], 1000.0);
        assert_eq!(s["inprocess_ns"], 500.0);
        assert_eq!(s["overhead_ns"], 500.0);
        assert_eq!(s["overhead_ns_paired"], 500.0);
        assert_eq!(s["ioctl_ns_rounds"].as_array().map(Vec::len), Some(3));
        assert!(s["python_ioctl_ns"].is_null());
        assert!(r.table().contains("in-process"));
    }
}
