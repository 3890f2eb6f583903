//! The `wirespeed` command: benchmarks on the lab, lab tools, the demo,
//! `list` (what SPI and GPIO devices there are to talk to), `spi` (hex
//! messages to one of them) and `flash` (a SPI NOR programmer).

use clap::{Parser, Subcommand};
use cli_error::CliError;
use std::process::ExitCode;

mod bench_cmd;
mod cli_error;
mod flash_cmd;
mod flash_error;
mod flash_ops;
mod flash_target;
mod host_flag;
mod lab_cmd;
mod lab_run;
mod list_cmd;
mod realtime_flag;
mod soak_cmd;
mod spi_cmd;
mod spi_segments;

/// wirespeed: low-latency peripheral I/O for Linux, on the emulated lab or on real spidev and GPIO devices.
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
    /// The emulated hardware: bus traces, and unmodified programs run on lab devices (`lab run`).
    #[command(subcommand)]
    Lab(lab_cmd::LabCommand),
    /// What there is to talk to: spidev nodes, other SPI devices, GPIO chips, the lab.
    ///
    /// spidev nodes (/dev/spidevB.C = bus B, chip select C) with their
    /// driver, device-tree node and controller; SPI devices a kernel driver
    /// holds, with the commands that hand one to spidev; GPIO chips (or why
    /// one did not open); spidev's message size limit (bufsiz); and the
    /// emulated lab with the commands that use each part.
    List(list_cmd::ListArgs),
    /// Talk to a SPI device from the shell: hex in, hex out.
    ///
    /// `wirespeed spi --dev /dev/spidevB.C xfer 9f000000` sends one message
    /// and prints what came back. Each segment after `xfer` is one transfer
    /// of the message; a lone `/` between two drops CS between them
    /// (cs_change), still in the one message. `--dev lab-spidev` runs on an
    /// emulated spidev node with a loopback device, no hardware needed.
    Spi(spi_cmd::SpiArgs),
    /// A SPI NOR flash: probe, read, write, verify, erase, with progress bars.
    ///
    /// `wirespeed flash --dev /dev/spidevB.C probe` identifies the chip
    /// (JEDEC ID, SFDP); `read -o FILE`, `write FILE`, `verify FILE` and
    /// `erase` work on all of it or on --offset/--length. `--lab CHIP[:IMAGE]`
    /// runs on an emulated chip (backed by IMAGE when given), no hardware needed.
    Flash(flash_cmd::FlashArgs),
    /// Everything at once on two lab buses, with faults injected: every
    /// message checked for loss, duplication, reordering and corruption.
    Soak(soak_cmd::SoakArgs),
    /// Seed 000's CAN echo on the lab, classic against fast, in a few
    /// seconds: the quick `bench canecho` and its table.
    Demo {
        #[command(flatten)]
        realtime: realtime_flag::RealtimeArgs,
        #[command(flatten)]
        host: host_flag::HostArgs,
    },
}

/// Runs `wirespeed`. Exit codes: 0 on success; 2 for bad input, whether
/// clap finds it while parsing or a command after ([`CliError::Usage`]: an
/// invalid value, an unknown chip, a range beyond the chip, a missing node
/// or board file); 1 for a failure while running ([`CliError::Runtime`]: a
/// device I/O error, a failed verify). `lab run` exits with its program's code.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), CliError> = match cli.command {
        Command::Bench(b) => bench_cmd::run(b),
        Command::Demo { realtime, host } => bench_cmd::demo(realtime, host).map_err(CliError::Runtime),
        Command::Lab(l) => match lab_cmd::run(l) {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        Command::List(l) => list_cmd::run(l).map_err(CliError::from),
        Command::Spi(s) => spi_cmd::run(s).map_err(CliError::from),
        Command::Flash(f) => flash_cmd::run(f).map_err(CliError::from),
        Command::Soak(s) => soak_cmd::run(s),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wirespeed: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
