//! The Python clients as [`AdcRunner`]s: `client.py` (embedded) runs in a
//! subprocess and answers one request a line (protocol in its docstring):
//! its free-running throughput, then paced trials it times itself, with
//! the Rust driver's overrun rule (`Config::max_lag`, at least a period).
//!
//! - `python`: `wirespeed.ad7606.Ad7606.sample()` in a Python loop;
//! - `python_raw`: wirespeed's own `gpio` and `SpiDev.message`, the loop
//!   written by hand (CONVST up and down, BUSY polled, one 16-byte read);
//! - `pyspidev`: the same loop with python gpiod 2.x and py-spidev, their
//!   `/dev` nodes served by the `LD_PRELOAD` shim.

use super::search::{AdcRunner, RateTrial};
use crate::shim::launcher::Launcher;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The client's source.
pub const CLIENT_SOURCE: &str = include_str!("client.py");

/// Which Python loop a runner drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PythonKind {
    /// `wirespeed.ad7606` (the driver's `sample()`).
    Driver,
    /// `wirespeed.gpio` + `wirespeed.SpiDev.message`, by hand.
    Raw,
    /// python gpiod + py-spidev through the shim.
    PySpidev,
}

impl PythonKind {
    /// The runner's name (and the client's first argument).
    pub fn name(self) -> &'static str {
        match self {
            PythonKind::Driver => "python",
            PythonKind::Raw => "python_raw",
            PythonKind::PySpidev => "pyspidev",
        }
    }
}

/// How a client is started.
#[derive(Debug, Clone, Copy)]
pub struct ClientSetup<'a> {
    /// The Python interpreter.
    pub python: &'a Path,
    /// `client.py`, written out.
    pub script: &'a Path,
    /// The board file (the bench's rig as TOML).
    pub board: &'a Path,
    /// Starts PySpidev's client under the shim.
    pub launcher: &'a Launcher,
    /// The part's oversampling.
    pub oversampling: u8,
    /// SPI clock, Hz.
    pub speed_hz: u32,
    /// Free-running rounds and sets per round.
    pub rounds: usize,
    /// Sets per free-running round.
    pub per_round: usize,
    /// The overrun rule's lag bound, ns.
    pub max_lag_ns: u64,
}

/// A running client.
#[derive(Debug)]
pub struct PythonRunner {
    kind: PythonKind,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    rounds: usize,
    per_round: usize,
    max_lag_ns: u64,
}

impl PythonRunner {
    /// Starts the client of `kind` and waits for it to be ready.
    pub fn start(kind: PythonKind, s: &ClientSetup<'_>) -> Result<PythonRunner, String> {
        let tail: Vec<OsString> =
            vec![kind.name().into(), s.oversampling.to_string().into(), s.speed_hz.to_string().into()];
        let mut cmd = match kind {
            PythonKind::PySpidev => {
                let mut args: Vec<OsString> = vec![s.script.into(), kind.name().into(), "-".into()];
                args.extend(tail.into_iter().skip(1));
                s.launcher.command(s.board, s.python.as_os_str(), &args)?
            }
            _ => {
                let mut c = Command::new(s.python);
                c.arg(s.script).arg(kind.name()).arg(s.board).args(&tail[1..]).env_remove("WIRESPEED_LAB");
                c
            }
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("adc {}: cannot run {}: {e}", kind.name(), s.python.display()))?;
        let stdin = child.stdin.take().ok_or("adc: no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("adc: no stdout")?);
        let mut r = PythonRunner {
            kind,
            child,
            stdin,
            stdout,
            rounds: s.rounds.max(1),
            per_round: s.per_round.max(1),
            max_lag_ns: s.max_lag_ns,
        };
        r.answer("ready")?;
        Ok(r)
    }

    /// Sends `request` (if any) and reads the answer line starting with `word`.
    fn ask(&mut self, request: Option<String>, word: &str) -> Result<Vec<String>, String> {
        if let Some(req) = request {
            writeln!(self.stdin, "{req}").and_then(|_| self.stdin.flush()).map_err(|e| self.failed(e.to_string()))?;
        }
        self.answer(word)
    }

    fn answer(&mut self, word: &str) -> Result<Vec<String>, String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).map_err(|e| self.failed(e.to_string()))?;
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if n == 0 || words.first().map(String::as_str) != Some(word) {
            return Err(self.failed(format!("expected {word:?}, got {:?}", line.trim_end())));
        }
        Ok(words[1..].to_vec())
    }

    /// The error for a client that stopped answering, with its stderr.
    fn failed(&mut self, what: String) -> String {
        let _ = self.child.kill();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = self.child.wait();
        format!("adc {} client: {what}; its stderr: {}", self.kind.name(), err.trim_end())
    }
}

fn num<T: std::str::FromStr>(words: &[String], i: usize) -> Result<T, String> {
    words.get(i).and_then(|w| w.parse().ok()).ok_or_else(|| format!("adc client: bad answer {words:?}"))
}

impl AdcRunner for PythonRunner {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn max_hz(&mut self) -> Result<f64, String> {
        let w = self.ask(Some(format!("max {} {}", self.rounds, self.per_round)), "max")?;
        num(&w, 0)
    }

    fn trial(&mut self, rate_hz: f64, periods: u64) -> Result<RateTrial, String> {
        let w = self.ask(Some(format!("trial {rate_hz} {periods} {}", self.max_lag_ns)), "trial")?;
        let (periods, samples, missed, max_late_ns, elapsed_ns): (u64, u64, u64, u64, u64) =
            (num(&w, 0)?, num(&w, 1)?, num(&w, 2)?, num(&w, 3)?, num(&w, 4)?);
        let achieved_hz = if elapsed_ns == 0 { 0.0 } else { samples as f64 * 1e9 / elapsed_ns as f64 };
        Ok(RateTrial { rate_hz, periods, samples, overruns: missed, achieved_hz, max_late_ns })
    }
}

impl Drop for PythonRunner {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        // It exits on "quit" (the lab board finishing first): 2 s at most.
        for _ in 0..200 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
