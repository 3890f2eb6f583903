//! Sends back-to-back sync SPI messages on an instant-wire lab, for counting
//! the instructions one message costs (`scripts/instructions` runs it under
//! `valgrind --tool=callgrind`; this VM has no hardware counters).
//!
//! The loop is `bench spi`'s own ([`wirespeed_bench::spi::rig::round`]),
//! under one policy preset (fast by default). The wire is instant so that no
//! loop spins while bits shift: for the polling presets (fast, linux-6.9) the
//! count is the same from run to run, and it is software alone — the stack's
//! and the lab's, which `scripts/instructions` tells apart by source file.
//! Classic (5.18) waits on the IRQ, which the lab's interrupt thread
//! delivers, and kicks the pump thread after every message: its count also
//! includes those threads' work, and it depends on how they are scheduled.
//!
//! ```text
//! cargo run --release -p wirespeed-bench --example spi_message_cost -- prepared 1000 9 linux-6.9
//! ```
//! Arguments: `unprepared` (`dev.sync`, validated per call) or `prepared`
//! (`dev.run`), the number of messages, the bytes per message (default 9),
//! and the policy preset (`fast`, the default, `linux-6.9` or `linux69`, or
//! `classic`). One message of each kind is sent before the counted ones, so
//! that the first-use costs fall outside the difference of two counts.

use std::process::ExitCode;

use wirespeed::spi::Policy;
use wirespeed_bench::spi::rig::{round, Rig, Style};

const USAGE: &str = "usage: spi_message_cost unprepared|prepared <messages> [bytes per message, default 9] \
                     [policy: fast (default), linux-6.9 (or linux69), classic]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let style = match args.first().map(String::as_str) {
        Some("prepared") => Style::Prepared,
        Some("unprepared") => Style::Unprepared,
        _ => return Err(USAGE.into()),
    };
    let messages: u64 = args.get(1).and_then(|s| s.parse().ok()).ok_or(USAGE)?;
    let size = match args.get(2).map(|s| s.parse::<usize>()) {
        None => 9,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return Err(USAGE.into()),
    };
    let policy = match args.get(3) {
        None => Policy::fast(),
        Some(name) => Policy::by_name(name)
            .ok_or_else(|| format!("unknown policy {name:?} (fast, linux-6.9 or classic)\n{USAGE}"))?,
    };
    if args.len() > 4 {
        return Err(USAGE.into());
    }
    let rig = Rig::new(policy, 20_000_000, true)?;
    let mut message = rig.prepared(size)?;
    for warm_up in [Style::Unprepared, Style::Prepared] {
        round(&rig, warm_up, size, 1, &mut message)?;
    }
    round(&rig, style, size, messages, &mut message)?;
    Ok(())
}
