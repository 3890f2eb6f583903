//! The register map over the SPI core on the lab: the hot path allocates
//! nothing once a write pattern has been seen.

mod common;

use common::{alloc_count, bench};
use wirespeed::regmap::format::StdFormat;
use wirespeed::regmap::{CacheType, Regmap, RegmapConfig, SpiBus};
use wirespeed::spi::{DeviceConfig, Policy};

#[test]
fn repeated_multi_register_writes_do_not_allocate() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    // The lab's RegFile: command byte (0x03 read, 0x02 write), address byte, 8-bit registers.
    let mut cfg = RegmapConfig::new(StdFormat::new(16, 8).with_flags(0x0300, 0x0200), 0xFF);
    cfg.cache = CacheType::None;
    let map = Regmap::new(cfg, SpiBus::new(dev)).unwrap();
    // Two windows (0x10..=0x11 and 0x20): one message, CS toggled between.
    let writes = |i: u32| [(0x10, i & 0xFF), (0x11, (i + 1) & 0xFF), (0x20, (i + 2) & 0xFF)];
    for i in 0..10 {
        map.multi_write(&writes(i)).unwrap(); // warm: prepared message, per-thread shard
    }
    let messages = map.bus_messages();
    let before = alloc_count::get();
    for i in 0..1000 {
        map.multi_write(&writes(i)).unwrap();
    }
    let n = alloc_count::get() - before;
    assert_eq!(n, 0, "{n} allocations in 1000 multi-register writes");
    assert_eq!(map.bus_messages() - messages, 1000, "one message each");
    let last = |i: u32| (i & 0xFF) as u8;
    assert_eq!((b.regfile.peek(0x10), b.regfile.peek(0x11), b.regfile.peek(0x20)), (last(999), last(1000), last(1001)));
}
