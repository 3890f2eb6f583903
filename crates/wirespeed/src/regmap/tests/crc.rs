//! The MCP251xFD formats on the RAM bus, over every cache type: plain and
//! CRC-protected commands round-trip, corrupted CRCs are detected both ways,
//! the length byte counts bytes (SFR) or words (RAM), stride 4 is enforced.

use super::rig::CACHES;
use crate::regmap::format::{crc16_cms, Format, Mcp251xfd, Op};
use crate::regmap::{CacheType, RamBus, RegSet, Regmap, RegmapConfig, RegmapError};
use std::sync::Arc;

fn mcp(format: Mcp251xfd, cache: CacheType) -> (Regmap, RamBus) {
    let mut c = RegmapConfig::new(format, 0xBFC);
    c.reg_stride = 4;
    c.cache = cache;
    c.volatile = RegSet::ranges([0x010..=0x01C]);
    let ram = RamBus::new(Arc::new(format) as Arc<dyn Format>, 4, 0xBFC);
    (Regmap::new(c, ram.clone()).unwrap(), ram)
}

#[test]
fn plain_commands_round_trip() {
    for cache in CACHES {
        let (map, ram) = mcp(Mcp251xfd::plain(), cache);
        map.write(0x004, 0x1122_3344).unwrap();
        let a = ram.accesses();
        assert_eq!(a[0].windows[0].tx, vec![0x20, 0x04, 0x44, 0x33, 0x22, 0x11]);
        ram.poke(0x010, 0xDEAD_BEEF);
        assert_eq!(map.read(0x010).unwrap(), 0xDEAD_BEEF);
        assert_eq!(ram.accesses()[1].windows[0].tx, vec![0x30, 0x10]);
        assert_eq!(map.read(0x006), Err(RegmapError::Misaligned { reg: 0x006, stride: 4 }));
        assert_eq!(map.read(0xC00), Err(RegmapError::OutOfRange { reg: 0xC00, max: 0xBFC }));
    }
}

#[test]
fn crc_commands_round_trip_with_length_units() {
    for cache in CACHES {
        let (map, ram) = mcp(Mcp251xfd::crc(), cache);
        map.write(0x020, 0xCAFE_F00D).unwrap();
        assert_eq!(ram.peek(0x020), 0xCAFE_F00D);
        let tx = ram.accesses()[0].windows[0].tx.clone();
        assert_eq!(&tx[..3], &[0xA0, 0x20, 4], "SFR: length in bytes");
        assert_eq!(u16::from_be_bytes([tx[7], tx[8]]), crc16_cms(&[&tx[..7]]));
        let writes: Vec<(u32, u32)> = (0..8).map(|i| (0x400 + 4 * i, 0x0101_0101 * i)).collect();
        map.multi_write(&writes).unwrap();
        let a = ram.accesses();
        assert_eq!(a.len(), 2, "8 adjacent registers: one message");
        assert_eq!(a[1].windows.len(), 1);
        assert_eq!(&a[1].windows[0].tx[..3], &[0xA4, 0x00, 8], "RAM: length in words");
        let mut out = [0u32; 8];
        map.set_cache_bypass(true);
        map.bulk_read(0x400, &mut out).unwrap();
        map.set_cache_bypass(false);
        assert_eq!(out.to_vec(), writes.iter().map(|w| w.1).collect::<Vec<_>>());
        assert_eq!(ram.rejected_writes(), 0);
        ram.poke(0x014, 0x5555_AAAA);
        assert_eq!(map.read(0x014).unwrap(), 0x5555_AAAA);
    }
}

#[test]
fn corrupted_read_crc_is_detected_and_not_cached() {
    for cache in CACHES {
        for byte in [0usize, 3, 4, 5] {
            let (map, ram) = mcp(Mcp251xfd::crc(), cache);
            ram.poke(0x040, 0x0BAD_F00D);
            ram.flip_next_read_bit(byte, 5); // data byte or CRC byte
            match map.read(0x040) {
                Err(RegmapError::CrcMismatch { reg: 0x040, computed, received }) => assert_ne!(computed, received),
                other => panic!("{cache:?} byte {byte}: {other:?}"),
            }
            // Nothing was cached: the next read goes to the device and is right.
            assert_eq!(map.read(0x040).unwrap(), 0x0BAD_F00D);
            assert_eq!(ram.accesses().iter().filter(|a| a.windows[0].op == Op::Read).count(), 2);
        }
    }
}

#[test]
fn corrupted_write_is_rejected_by_the_device() {
    for cache in CACHES {
        let (map, ram) = mcp(Mcp251xfd::crc(), cache);
        ram.flip_next_write_bit(4, 0);
        map.write(0x030, 0x1234_5678).unwrap(); // the device cannot NAK on SPI
        assert_eq!(ram.rejected_writes(), 1);
        assert_eq!(ram.peek(0x030), 0);
        map.write(0x030, 0x1234_5678).unwrap();
        assert_eq!(ram.peek(0x030), 0x1234_5678);
    }
}

#[test]
fn long_crc_bursts_are_split_at_the_length_byte() {
    let (map, ram) = mcp(Mcp251xfd::crc(), CacheType::None);
    // 300 RAM words > 255 per command: two windows, one message.
    let vals: Vec<u32> = (0..300).collect();
    map.bulk_write(0x400, &vals).unwrap();
    let a = ram.accesses();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].windows.iter().map(|w| w.count).collect::<Vec<_>>(), vec![255, 45]);
    let mut out = vec![0u32; 300];
    map.bulk_read(0x400, &mut out).unwrap();
    assert_eq!(out, vals);
    // SFR reads: 252 bytes per command, and never across into the RAM.
    let mut sfr = vec![0u32; 4];
    map.bulk_read(0x3F8, &mut sfr).unwrap();
    let a = ram.accesses();
    let reads: Vec<(u32, usize)> = a[a.len() - 2..].iter().map(|x| (x.windows[0].reg, x.windows[0].count)).collect();
    assert_eq!(reads, vec![(0x3F8, 2), (0x400, 2)]);
}

#[test]
fn crc_bursts_above_the_ram_are_not_cut_to_one_register() {
    // The MCP2518FD's own SFRs (OSC, IOCON, CRC, ECCCON, ECCSTAT, DEVID) lie
    // above the message RAM, at 0xE00..=0xE14: nothing to cross into there.
    let format = Mcp251xfd::crc();
    let mut c = RegmapConfig::new(format, 0xE14);
    c.reg_stride = 4;
    c.cache = CacheType::None;
    let ram = RamBus::new(Arc::new(format) as Arc<dyn Format>, 4, 0xE14);
    let map = Regmap::new(c, ram.clone()).unwrap();
    let vals: Vec<u32> = (0..6).map(|i| 0x1111_1111 * i).collect();
    map.bulk_write(0xE00, &vals).unwrap();
    let mut out = [0u32; 6];
    map.bulk_read(0xE00, &mut out).unwrap();
    assert_eq!(out.to_vec(), vals);
    let a = ram.accesses();
    let windows: Vec<(Op, u32, usize)> = a.iter().flat_map(|x| &x.windows).map(|w| (w.op, w.reg, w.count)).collect();
    assert_eq!(windows, vec![(Op::Write, 0xE00, 6), (Op::Read, 0xE00, 6)], "one command each way");
}
