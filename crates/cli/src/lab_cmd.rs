//! `wirespeed lab …`: tools that look at the emulated hardware directly.

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
        /// Messages to record.
        #[arg(long, default_value_t = 20)]
        count: u64,
        /// Bytes per message (1-65536; count × (size + 4) at most 2^23: 127 messages of 65536 bytes).
        #[arg(long, default_value_t = 9)]
        size: usize,
        /// SPI clock in Hz.
        #[arg(long, default_value_t = 20_000_000)]
        hz: u32,
        /// Output file.
        #[arg(long, short, default_value = "wirespeed-trace.vcd")]
        out: PathBuf,
    },
}

/// Runs a lab tool.
pub fn run(cmd: LabCommand) -> Result<(), String> {
    match cmd {
        LabCommand::Trace { policy, count, size, hz, out } => {
            let p = Policy::by_name(&policy)
                .ok_or_else(|| format!("unknown policy {policy:?}: use {}", Policy::PRESETS.join(", ")))?;
            let trace = wirespeed_bench::spi::trace_sample(p, size, hz, count)?;
            write_file(&out, &trace)?;
            eprintln!("wrote {} events ({} messages, {policy}) to {}", trace.events.len(), count, out.display());
            Ok(())
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
