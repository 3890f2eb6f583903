//! Sends back-to-back sync SPI messages on an instant-wire lab, for counting
//! the instructions one message costs (`scripts/instructions` runs it under
//! `valgrind --tool=callgrind`; this VM has no hardware counters).
//!
//! The wire is instant so that no loop spins while bits shift: the count is
//! the same from run to run, and it is software alone — the stack's and the
//! lab's, which `scripts/instructions` tells apart by source file.
//!
//! ```text
//! cargo run --release -p wirespeed-bench --example spi_message_cost -- prepared 1000 9
//! ```
//! Arguments: `unprepared` (`dev.sync`, validated per call) or `prepared`
//! (`dev.run`), the number of messages, and the bytes per message (default 9).
//! One message of each kind is sent before the counted ones, so that the
//! first-use costs fall outside the difference of two counts.

use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy, Transfer};
use wirespeed_lab::devices::Loopback;
use wirespeed_lab::{Lab, LabConfig};

fn usage() -> ! {
    eprintln!("usage: spi_message_cost unprepared|prepared <messages> [bytes per message, default 9]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let prepared = match args.first().map(String::as_str) {
        Some("prepared") => true,
        Some("unprepared") => false,
        _ => usage(),
    };
    let Some(Ok(messages)) = args.get(1).map(|s| s.parse::<u64>()) else { usage() };
    let size = match args.get(2).map(|s| s.parse::<usize>()) {
        None => 9,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => usage(),
    };

    let lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
    let block = lab.spi_controller(Default::default());
    block.attach(0, Loopback::new());
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap_or_else(|e| panic!("device: {e}"));
    let mut message =
        dev.prepare(vec![OwnedTransfer::duplex(vec![0xA5; size])]).unwrap_or_else(|e| panic!("prepare: {e}"));
    let tx = vec![0xA5u8; size];
    let mut rx = vec![0u8; size];
    let mut send = |prepared: bool| {
        let result = if prepared { dev.run(&mut message) } else { dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]) };
        result.unwrap_or_else(|e| panic!("message: {e}"));
    };
    send(false);
    send(true);
    for _ in 0..messages {
        send(prepared);
    }
}
