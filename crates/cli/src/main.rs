//! The `wirespeed` command: benchmarks on the lab, lab tools, the demo.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench_cmd;
mod host_flag;
mod lab_cmd;
mod realtime_flag;

/// wirespeed: low-latency peripheral I/O for Linux, run on the emulated lab.
#[derive(Debug, Parser)]
#[command(name = "wirespeed", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one experiment on the lab and print a table (or JSON with --json).
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
    /// Look at the emulated hardware directly (bus traces).
    #[command(subcommand)]
    Lab(lab_cmd::LabCommand),
    /// Seed 000's CAN echo on the lab, classic against fast, in a few
    /// seconds: the quick `bench canecho` and its table.
    Demo {
        #[command(flatten)]
        realtime: realtime_flag::RealtimeArgs,
        #[command(flatten)]
        host: host_flag::HostArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(b) => bench_cmd::run(b),
        Command::Demo { realtime, host } => bench_cmd::demo(realtime, host),
        Command::Lab(l) => lab_cmd::run(l),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wirespeed: {e}");
            ExitCode::FAILURE
        }
    }
}
