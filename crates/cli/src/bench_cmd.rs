//! `wirespeed bench <scenario>`: one subcommand per experiment.

use clap::Subcommand;

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// E3: cost of removal safety on GPIO toggles (none / interlock / wirespeed).
    Gpio {
        /// High/low cycles per pass.
        #[arg(long, default_value_t = 1_000_000)]
        toggles: u64,
        /// Passes (each runs all three guards, interleaved).
        #[arg(long, default_value_t = 10)]
        passes: u32,
        /// Slices each pass is cut into, interleaved across guards.
        #[arg(long, default_value_t = 50)]
        slices: u32,
        /// Do not attach the edge-counting probe to the toggled pad.
        #[arg(long)]
        no_probe: bool,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one experiment and prints its report.
pub fn run(cmd: BenchCommand) -> Result<(), String> {
    match cmd {
        BenchCommand::Gpio { toggles, passes, slices, no_probe, json } => {
            let opts = wirespeed_bench::gpio::GpioOptions { toggles, passes, slices, probe: !no_probe };
            let r = wirespeed_bench::gpio::run(&opts)?;
            print_report(json, r.to_json(), || r.table());
        }
    }
    Ok(())
}

fn print_report(json: bool, value: serde_json::Value, table: impl FnOnce() -> String) {
    if json {
        println!("{value}");
    } else {
        print!("{}", table());
    }
}
