//! The Python runners' setup: which interpreters (`target/py-venv` with the
//! `wirespeed` package, `target/shim-venv` with py-spidev and python gpiod,
//! or the paths given), the board file equivalent to the Rust runner's rig
//! ([`board_toml`]), and [`run_all`]: the Rust driver, then the three
//! Python loops one after the other, through the same search.

use super::python_runner::{ClientSetup, PythonKind, PythonRunner, CLIENT_SOURCE};
use super::rig::{BUSY_LINE, CONVST_LINE, CS};
use super::search::sustained_rate;
use super::{run_with, AdcOptions, AdcReport};
use crate::shim::launcher::Launcher;
use crate::shim::scratch::Scratch;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use wirespeed_drivers::ad7606::Config;

/// The Python side of `bench adc`.
#[derive(Debug, Clone)]
pub struct PythonOptions {
    /// A Python that imports `wirespeed` (default: [`default_python`]`("py-venv")`).
    pub python: PathBuf,
    /// A Python that imports `spidev` and `gpiod` (default: [`default_python`]`("shim-venv")`).
    pub shim_python: PathBuf,
    /// Starts a program under the shim.
    pub launcher: Launcher,
}

/// Why the Python runners cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PythonError {
    /// The interpreter is missing or lacks the modules.
    Missing {
        /// Its path.
        python: PathBuf,
        /// The modules it must import.
        modules: &'static str,
        /// What it said (empty: it does not exist).
        detail: String,
        /// How to get one.
        hint: &'static str,
    },
    /// The scratch directory could not be written.
    Io(String),
}

impl fmt::Display for PythonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PythonError::Missing { python, modules, detail, hint } => {
                write!(f, "bench adc: {} cannot import {modules}", python.display())?;
                if !detail.is_empty() {
                    write!(f, " ({detail})")?;
                }
                write!(f, ": {hint}; or run the Rust driver alone with --no-python")
            }
            PythonError::Io(e) => write!(f, "bench adc: {e}"),
        }
    }
}

impl std::error::Error for PythonError {}

const PY_HINT: &str = "install the package with `python3 -m venv target/py-venv && target/py-venv/bin/pip install \
                       ./crates/python` (scripts/test's python step does), or pass --python PATH";
const SHIM_HINT: &str = "install them with `python3 -m venv target/shim-venv && target/shim-venv/bin/pip install \
                         spidev 'gpiod>=2'` (scripts/test does), or pass --shim-python PATH";

/// `<venv>/bin/python3` under the `target` directory this executable was
/// built in (`target/release/wirespeed` → `target/<venv>`), else under
/// `./target`.
pub fn default_python(venv: &str) -> PathBuf {
    let rel = Path::new(venv).join("bin").join("python3");
    let exe = std::env::current_exe().ok();
    let near = exe.as_deref().and_then(Path::parent).and_then(Path::parent).map(|t| t.join(&rel));
    match near {
        Some(p) if p.is_file() => p,
        _ => Path::new("target").join(rel),
    }
}

fn check(python: &Path, import: &str, modules: &'static str, hint: &'static str) -> Result<(), PythonError> {
    let missing = |detail: String| PythonError::Missing { python: python.to_owned(), modules, detail, hint };
    match Command::new(python).arg("-c").arg(import).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(missing(String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").trim().to_owned())),
        Err(e) => Err(missing(e.to_string())),
    }
}

/// The board file of the bench's rig ([`super::rig::Rig`]): the AD7606 on
/// `/dev/spidev0.<CS>` at `speed_hz` and `oversampling`, a 5 V 1 kHz sine on
/// V1 and 1.25 V elsewhere, CONVST on gpiochip0's line 8, BUSY on line 9.
pub fn board_toml(speed_hz: u32, oversampling: u8) -> String {
    format!(
        "# bench adc's rig for the Python runners\n\
         [[spi]]\nbus = 0\n\n\
         [[spi.device]]\ncs = {CS}\nkind = \"ad7606\"\nmax_speed_hz = {speed_hz}\nrange = \"10V\"\n\
         oversampling = {oversampling}\n\
         signals = [\"sine:5V:1000Hz\", \"dc:1.25V\", \"dc:1.25V\", \"dc:1.25V\", \"dc:1.25V\", \"dc:1.25V\", \
         \"dc:1.25V\", \"dc:1.25V\"]\n\n\
         [[gpio]]\nchip = 0\nlines = 32\n\n\
         [[gpio.line]]\noffset = {CONVST_LINE}\nname = \"CONVST\"\nwire = \"spi0.{CS}:convst\"\n\n\
         [[gpio.line]]\noffset = {BUSY_LINE}\nname = \"BUSY\"\nwire = \"spi0.{CS}:busy\"\n"
    )
}

/// The Rust driver, then `python`, `python_raw` and `pyspidev` (each on a
/// lab of its own built from [`board_toml`]), all through the same search.
pub fn run_all(opts: &AdcOptions, py: &PythonOptions) -> Result<AdcReport, String> {
    check(&py.python, "import wirespeed.ad7606", "wirespeed.ad7606", PY_HINT).map_err(|e| e.to_string())?;
    check(&py.shim_python, "import spidev, gpiod; gpiod.line.Value", "spidev and gpiod (2.x)", SHIM_HINT)
        .map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| PythonError::Io(e.to_string()).to_string();
    let scratch = Scratch::new("adc").map_err(io)?;
    let (script, board) = (scratch.join("client.py"), scratch.join("board.toml"));
    std::fs::write(&script, CLIENT_SOURCE).map_err(io)?;
    std::fs::write(&board, board_toml(opts.speed_hz, opts.oversampling)).map_err(io)?;
    let max_lag_ns = u64::try_from(Config::default().max_lag.as_nanos()).unwrap_or(u64::MAX);
    let base = ClientSetup {
        python: &py.python,
        script: &script,
        board: &board,
        launcher: &py.launcher,
        oversampling: opts.oversampling,
        speed_hz: opts.speed_hz,
        rounds: opts.rounds,
        per_round: opts.per_round,
        max_lag_ns,
    };
    let mut report = run_with(opts, &mut [])?;
    let cfg = Config { oversampling: opts.oversampling, ..Config::default() };
    let cap_hz = cfg.max_rate_hz().map_err(|e| e.to_string())?.min(1e9 / report.period_limit_ns as f64);
    // One client at a time: an idle one's lab threads would share the CPUs.
    for (kind, python) in
        [(PythonKind::Driver, &py.python), (PythonKind::Raw, &py.python), (PythonKind::PySpidev, &py.shim_python)]
    {
        let mut runner = PythonRunner::start(kind, &ClientSetup { python, ..base })?;
        report.runners.push(sustained_rate(&mut runner, cap_hz, &opts.search)?);
    }
    Ok(report)
}
