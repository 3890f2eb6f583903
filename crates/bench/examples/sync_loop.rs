//! Runs back-to-back 9-byte sync messages on an instant-wire lab: the
//! software's own cost, for `valgrind --tool=callgrind` instruction counts.
//!
//! `cargo build --release --example sync_loop -p wirespeed-bench`, then
//! `valgrind --tool=callgrind target/release/examples/sync_loop [fast|classic] [prepared|unprepared] [count]`.

use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, DeviceConfig, OwnedTransfer, Policy, Transfer};
use wirespeed_lab::devices::Loopback;
use wirespeed_lab::{Lab, LabConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let policy = Policy::by_name(args.get(1).map_or("fast", String::as_str)).unwrap_or_else(Policy::fast);
    let prepared = args.get(2).is_some_and(|s| s == "prepared");
    let count: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let instant_wire = std::env::var_os("WIRE").is_none();
    let lab = Lab::new(LabConfig { instant_wire, ..LabConfig::default() });
    let block = lab.spi_controller(Default::default());
    block.attach(0, Loopback::new());
    let bus = Bus::new(LabSpi::new(block), policy);
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).expect("valid device");
    let mut pm = dev.prepare(vec![OwnedTransfer::duplex(vec![0xA5; 9])]).expect("valid message");
    let tx = [0xA5u8; 9];
    let mut rx = [0u8; 9];
    for _ in 0..count {
        let r = if prepared { dev.run(&mut pm) } else { dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]) };
        r.expect("transfer");
    }
    println!("{count} messages, {:?}", bus.stats().messages);
}
