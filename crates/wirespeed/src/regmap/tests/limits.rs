//! Boundaries of the address space, the bus and the formats: the largest
//! maps, bursts at the edges of a format's regions and of the bus's message
//! size.

use super::rig::{ram_rig, suite_config, suite_format};
use crate::regmap::format::{DeviceRequest, Format, Inline, Op, StdFormat};
use crate::regmap::{Batch, BusError, CacheType, ConfigError, RamBus, Regmap, RegmapBus, RegmapConfig, RegmapError};
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

#[test]
fn a_flat_cache_too_large_to_allocate_is_refused() {
    // The default cache is flat: a full 32-bit map would ask for 2^32 slots.
    let format = StdFormat::new(32, 8);
    let config = RegmapConfig::new(format, u32::MAX);
    assert_eq!(config.cache, CacheType::Flat);
    let ram = RamBus::new(Arc::new(format), 1, 0xFF);
    let err = Regmap::new(config, ram).expect_err("2^32 flat slots");
    assert_eq!(err, ConfigError::FlatCacheTooLarge { slots: 1 << 32, max: crate::regmap::FLAT_CACHE_MAX_SLOTS });
    assert!(err.to_string().contains("Sparse"), "{err}");
    // The largest flat map still builds.
    let mut config = RegmapConfig::new(format, (crate::regmap::FLAT_CACHE_MAX_SLOTS - 1) as u32);
    config.cache = CacheType::Flat;
    let map = Regmap::new(config, RamBus::new(Arc::new(format), 1, 0xF_FFFF)).unwrap();
    map.write(0xF_FFFF, 7).unwrap();
    assert_eq!(map.read(0xF_FFFF).unwrap(), 7);
}

#[test]
fn bursts_longer_than_the_bus_message_limit_are_split_into_commands_that_fit() {
    for cache in [CacheType::None, CacheType::Flat] {
        let r = ram_rig(cache);
        let ram = r.dev.ram().unwrap();
        // 2-byte header: at most 6 one-byte registers per 8-byte message.
        ram.set_max_message_bytes(Some(8));
        let vals: Vec<u32> = (1..=10).collect();
        r.map.bulk_write(0xA0, &vals).expect("a burst the bus cannot carry whole is split");
        assert_eq!((0xA0..0xAA).map(|g| ram.peek(g)).collect::<Vec<_>>(), vals);
        let writes: Vec<(u32, u32)> = (0..8).map(|i| (0xB0 + i, 0x40 + i)).collect();
        r.map.multi_write(&writes).unwrap();
        assert_eq!((0xB0..0xB8).map(|g| ram.peek(g)).collect::<Vec<_>>(), (0x40..0x48).collect::<Vec<_>>());
        r.map.drop_region(0xA0, 0xA9).unwrap();
        let before = r.log.messages();
        let mut out = [0u32; 10];
        r.map.bulk_read(0xA0, &mut out).expect("a read the bus cannot carry whole is split");
        assert_eq!(out.to_vec(), vals);
        let reads: Vec<_> = r.log.since(before).iter().flat_map(|m| m.windows.clone()).collect();
        assert_eq!(reads, vec![(Op::Read, 0xA0, 6), (Op::Read, 0xA6, 4)], "{cache:?}");
    }
}

/// A format of the public trait that reports a value width of its own.
#[derive(Debug)]
struct Width(u32);

impl Format for Width {
    fn name(&self) -> &'static str {
        "width"
    }
    fn max_address(&self) -> u32 {
        0xFF
    }
    fn val_bits(&self) -> u32 {
        self.0
    }
    fn encode_val(&self, val: u32, out: &mut [u8]) {
        StdFormat::new(8, 8).encode_val(val, out)
    }
    fn decode_val(&self, bytes: &[u8]) -> u32 {
        StdFormat::new(8, 8).decode_val(bytes)
    }
    fn header(&self, op: Op, reg: u32, data_len: usize) -> Inline {
        StdFormat::new(8, 8).header(op, reg, data_len)
    }
    fn decode_header(&self, op: Op, tx: &[u8]) -> Result<DeviceRequest, String> {
        StdFormat::new(8, 8).decode_header(op, tx)
    }
}

#[test]
fn a_format_with_a_value_width_other_than_8_16_32_is_refused() {
    // 12 bits would be sent as one byte (0xABC silently becomes 0xBC); 0 and
    // 40 bits would panic (chunks of 0 bytes, a shift by 40).
    for bits in [0, 12, 24, 40] {
        let config = RegmapConfig::new(Width(bits), 0xFF);
        let ram = RamBus::new(Arc::new(StdFormat::new(8, 8)), 1, 0xFF);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Regmap::new(config, ram).map(|_| ())));
        assert_eq!(r.ok(), Some(Err(ConfigError::BadWidth { what: "val_bits", bits })), "val_bits = {bits}");
    }
}

/// A RAM bus whose `n`-th batch message (counting from 1) fails.
struct FailNthBatch {
    ram: RamBus,
    n: usize,
    seen: usize,
}

impl RegmapBus for FailNthBatch {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        self.ram.write(segments)
    }
    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        self.ram.write_then_read(tx, rx)
    }
    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        self.seen += 1;
        if self.seen == self.n {
            return Err(BusError::Transport("nak".into()));
        }
        self.ram.write_batch(batch)
    }
    fn max_message_bytes(&self) -> Option<usize> {
        self.ram.max_message_bytes()
    }
}

#[test]
fn a_write_that_fails_after_earlier_messages_were_applied_leaves_no_stale_cache() {
    for cache in [CacheType::Flat, CacheType::Sparse] {
        let ram = RamBus::new(Arc::new(suite_format()), 1, 0xFF);
        ram.set_max_message_bytes(Some(6)); // two 3-byte windows per message
        let bus = FailNthBatch { ram: ram.clone(), n: 2, seen: 0 };
        let map = Regmap::new(suite_config(cache), bus).unwrap();
        let writes = [(0x40, 1), (0x50, 2), (0x60, 3), (0x70, 4)];
        for &(reg, _) in &writes {
            assert_eq!(map.read(reg).unwrap(), 0); // cached: 0
        }
        assert!(matches!(map.multi_write(&writes), Err(RegmapError::Bus { .. })));
        // The first message reached the device; the second did not.
        assert_eq!(writes.map(|(reg, _)| ram.peek(reg)), [1, 2, 0, 0]);
        let seen = writes.map(|(reg, _)| map.read(reg).unwrap());
        assert_eq!(seen, [1, 2, 0, 0], "{cache:?}: the cache must agree with the device");
    }
}
