//! Boundaries of the address space, the bus and the formats: the largest
//! maps, bursts at the edges of a format's regions and of the bus's message
//! size.

use crate::regmap::format::StdFormat;
use crate::regmap::{CacheType, RamBus, Regmap, RegmapConfig};
use std::sync::Arc;

#[test]
fn a_map_of_the_whole_32_bit_address_space_builds_and_works() {
    // 32-bit register field, no flags: every u32 is a register (stride 1).
    for cache in [CacheType::None, CacheType::Sparse] {
        let format = StdFormat::new(32, 8);
        let mut config = RegmapConfig::new(format, u32::MAX);
        config.cache = cache;
        let ram = RamBus::new(Arc::new(format), 1, 0xFF);
        let map = Regmap::new(config, ram.clone()).expect("a full 32-bit map is a valid configuration");
        map.write(0x10, 0x5A).unwrap();
        assert_eq!(ram.peek(0x10), 0x5A);
        assert_eq!(map.read(0x10).unwrap(), 0x5A);
        assert_eq!(map.max_register(), u32::MAX);
    }
}
