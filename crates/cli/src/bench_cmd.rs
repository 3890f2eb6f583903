//! `wirespeed bench <scenario>`: one subcommand per experiment.

use clap::Subcommand;
use wirespeed_bench::delay::{self as delay_bench, DelayOptions};

use crate::realtime_flag::RealtimeArgs;

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// E5: what sleeping costs (seed 004's table: nop, sched_yield, nanosleep)
    /// and wirespeed's delay() from 1 µs to 1 ms, at normal priority and at
    /// SCHED_FIFO where permitted.
    Delay {
        /// Iterations of each test in each pass.
        #[arg(long, default_value_t = DelayOptions::default().iterations)]
        iterations: usize,
        /// Print one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        realtime: RealtimeArgs,
    },
}

/// Runs one experiment and prints its report.
pub fn run(cmd: BenchCommand) -> Result<(), String> {
    match cmd {
        BenchCommand::Delay { iterations, json, realtime } => {
            realtime.apply();
            let report = delay_bench::run(&DelayOptions { iterations, ..DelayOptions::default() })?;
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.table());
            }
            Ok(())
        }
    }
}
