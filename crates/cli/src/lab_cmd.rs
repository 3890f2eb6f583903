//! `wirespeed lab …`: tools that look at the emulated hardware directly.

use crate::cli_error::CliError;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use wirespeed::spi::Policy;
use wirespeed_lab::trace::vcd::write_vcd;

/// Lab tools.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Record the SPI bus like a logic analyzer and write it as VCD
    /// (open it in PulseView or GTKWave): sync messages on a loopback device.
    Trace {
        /// Policy: `fast`, `linux-6.9` or `classic`.
        #[arg(long, default_value = "fast")]
        policy: String,
        /// Messages to record (at least 1).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
        count: u64,
        /// Bytes per message (1-65536; count × (size + 4) at most 2^23: 127 messages of 65536 bytes).
        #[arg(long, default_value_t = 9)]
        size: usize,
        /// SPI clock in Hz.
        #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u32).range(1..))]
        hz: u32,
        /// Output file.
        #[arg(long, short, default_value = "wirespeed-trace.vcd")]
        out: PathBuf,
    },
    /// Run an unmodified program on lab devices: its /dev/spidevB.C and
    /// /dev/gpiochipN are those of a board file.
    ///
    /// The program runs with the shim (libwirespeed_shim.so) preloaded
    /// (LD_PRELOAD), which serves the board's nodes from an emulated lab in
    /// real time; every other file is the host's. Examples:
    ///
    ///   wirespeed lab run --config examples/lab.toml -- flashrom -p linux_spi:dev=/dev/spidev0.0 -r out.bin
    ///
    ///   wirespeed lab run --config examples/lab.toml -- gpiomon --num-events=4 gpiochip0 0
    ///
    ///   wirespeed lab run --config examples/lab.toml --trace bus.vcd -- python3 my_spidev_script.py
    ///
    /// The board file format is documented in examples/lab.toml. Statically
    /// linked programs and raw syscall() users bypass LD_PRELOAD and see
    /// the host's devices. Exits with the program's status.
    #[command(verbatim_doc_comment)]
    Run {
        /// The board file (TOML): SPI buses and their devices, GPIO chips and their lines.
        #[arg(long, default_value = "examples/lab.toml")]
        config: PathBuf,
        /// Record the SPI bus traffic and write it as VCD to this file when the program exits.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<std::ffi::OsString>,
    },
}

/// Runs a lab tool; the exit code is the program's for `lab run`.
pub fn run(cmd: LabCommand) -> Result<u8, CliError> {
    match cmd {
        LabCommand::Run { config, trace, program } => {
            // A board file that is missing or wrong is bad input (exit code 2).
            crate::lab_run::check_config(&config).map_err(CliError::Usage)?;
            let status = crate::lab_run::run(&config, trace.as_deref(), &program[0], &program[1..])?;
            Ok(status.code().map_or(1, |c| c.clamp(0, 255) as u8))
        }
        LabCommand::Trace { policy, count, size, hz, out } => {
            let p = Policy::by_name(&policy).ok_or_else(|| {
                CliError::Usage(format!("unknown policy {policy:?}: use {}", Policy::PRESETS.join(", ")))
            })?;
            let trace = wirespeed_bench::spi::trace_sample(p, size, hz, count)?;
            write_file(&out, &trace)?;
            eprintln!("wrote {} events ({} messages, {policy}) to {}", trace.events.len(), count, out.display());
            Ok(0)
        }
    }
}

fn write_file(path: &Path, trace: &wirespeed_lab::trace::Trace) -> Result<(), String> {
    let f = std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    write_vcd(trace, &mut w).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes a sample trace of both policies (classic first) to `path`.
pub fn write_sample_vcd(path: &Path, size: usize, hz: u32) -> Result<(), String> {
    let mut trace = wirespeed_bench::spi::trace_sample(Policy::classic(), size, hz, 20)?;
    let fast = wirespeed_bench::spi::trace_sample(Policy::fast(), size, hz, 20)?;
    // The two labs share the monotonic clock: the fast recording follows the classic one.
    trace.events.extend(fast.events);
    write_file(path, &trace)
}
