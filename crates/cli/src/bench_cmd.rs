//! `wirespeed bench <scenario>`: one subcommand per experiment.

use clap::Subcommand;

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {}

/// Runs one experiment and prints its report.
pub fn run(cmd: BenchCommand) -> Result<(), String> {
    match cmd {}
}
