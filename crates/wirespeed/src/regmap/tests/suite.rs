//! The checks, each run over every rig (cache type × bus).

use super::rig::{rigs, Rig};
use crate::regmap::format::Op;
use crate::regmap::{CacheType, RegmapError};

fn each(check: impl Fn(&Rig)) {
    let all = rigs();
    assert_eq!(all.len(), 6, "every cache type over the RAM bus and over SPI to the lab");
    for rig in &all {
        check(rig);
    }
}

#[test]
fn write_then_read_round_trips_through_the_device() {
    each(|r| {
        r.map.write(0x20, 0x5A).unwrap();
        assert_eq!(r.dev.peek(0x20), 0x5A, "{}", r.name);
        assert_eq!(r.map.read(0x20).unwrap(), 0x5A, "{}", r.name);
        r.dev.poke(0x21, 0xC3);
        assert_eq!(r.map.read(0x21).unwrap(), 0xC3, "{}", r.name);
    });
}

#[test]
fn cached_reads_never_reach_the_bus() {
    each(|r| {
        r.map.write(0x22, 0x11).unwrap();
        let before = r.log.messages();
        for _ in 0..50 {
            assert_eq!(r.map.read(0x22).unwrap(), 0x11, "{}", r.name);
            assert_eq!(r.map.read(0x03).unwrap(), 0x13, "{} default", r.name);
        }
        let used = r.log.messages() - before;
        if r.caching() {
            assert_eq!(used, 0, "{}: cached reads reached the bus", r.name);
            // A change behind the map's back is not seen until the region is dropped.
            r.dev.poke(0x22, 0x99);
            assert_eq!(r.map.read(0x22).unwrap(), 0x11, "{}", r.name);
            r.map.drop_region(0x20, 0x2F).unwrap();
            assert_eq!(r.map.read(0x22).unwrap(), 0x99, "{}", r.name);
            assert_eq!(r.log.regs_read_since(before), vec![0x22], "{}", r.name);
        } else {
            assert_eq!(used, 100, "{}: without a cache every read is a message", r.name);
        }
    });
}

#[test]
fn volatile_registers_are_never_cached() {
    each(|r| {
        r.dev.poke(0xF1, 1);
        assert_eq!(r.map.read(0xF1).unwrap(), 1, "{}", r.name);
        r.dev.poke(0xF1, 2);
        let before = r.log.messages();
        assert_eq!(r.map.read(0xF1).unwrap(), 2, "{}", r.name);
        assert_eq!(r.log.regs_read_since(before), vec![0xF1], "{}", r.name);
        r.map.write(0xF2, 7).unwrap();
        assert_eq!(r.dev.peek(0xF2), 7, "{}", r.name);
        r.dev.poke(0xF2, 8);
        assert_eq!(r.map.read(0xF2).unwrap(), 8, "{}", r.name);
        r.map.set_cache_only(true);
        assert_eq!(r.map.read(0xF1), Err(RegmapError::CacheOnly { reg: 0xF1 }), "{}", r.name);
        assert_eq!(r.map.write(0xF1, 3), Err(RegmapError::CacheOnly { reg: 0xF1 }), "{}", r.name);
        r.map.set_cache_only(false);
        assert_eq!(r.dev.peek(0xF1), 2, "{}", r.name);
    });
}

#[test]
fn update_bits_skips_unchanged_writes() {
    each(|r| {
        r.map.write(0x30, 0x0F).unwrap();
        let before = r.log.messages();
        assert!(!r.map.update_bits(0x30, 0x0F, 0xFF).unwrap(), "{}", r.name);
        assert!(!r.map.update_bits(0x30, 0xF0, 0x00).unwrap(), "{}", r.name);
        assert_eq!(r.log.write_windows_since(before), 0, "{}: unchanged value written", r.name);
        let expected_reads = if r.caching() { 0 } else { 2 };
        assert_eq!(r.log.messages() - before, expected_reads, "{}", r.name);
        assert!(r.map.update_bits(0x30, 0xF0, 0xA0).unwrap(), "{}", r.name);
        assert_eq!(r.dev.peek(0x30), 0xAF, "{}", r.name);
        assert_eq!(r.log.write_windows_since(before), 1, "{}", r.name);
        // A write-only register with a cached value can be updated from the cache.
        if r.caching() {
            r.map.write(0xFA, 0x01).unwrap();
            assert!(r.map.update_bits(0xFA, 0x02, 0x02).unwrap(), "{}", r.name);
            assert_eq!(r.dev.peek(0xFA), 0x03, "{}", r.name);
        } else {
            assert_eq!(r.map.update_bits(0xFA, 0x02, 0x02), Err(RegmapError::NotReadable { reg: 0xFA }), "{}", r.name);
        }
    });
}

#[test]
fn sync_writes_exactly_the_dirty_non_default_set() {
    each(|r| {
        r.map.set_cache_only(true);
        let res = r.map.write(0x02, 0x55);
        if !r.caching() {
            assert_eq!(res, Err(RegmapError::CacheOnly { reg: 0x02 }), "{}", r.name);
            r.map.set_cache_only(false);
            assert_eq!(r.map.sync().unwrap().written, 0, "{}", r.name);
            return;
        }
        res.unwrap();
        r.map.write(0x01, 0x11).unwrap(); // dirty, but its default
        r.map.write(0x40, 0x77).unwrap(); // no default
        r.map.write(0x41, 0x78).unwrap();
        assert_eq!(r.map.read(0x40).unwrap(), 0x77, "{}", r.name);
        assert_eq!(r.map.read(0x50), Err(RegmapError::CacheOnly { reg: 0x50 }), "{}", r.name);
        assert_eq!(r.map.sync(), Err(RegmapError::CacheOnly { reg: 0x01 }), "{}", r.name);
        assert_eq!(r.dev.peek(0x40), 0, "{}: cache-only write reached the device", r.name);
        // Sentinels: whatever sync does not write keeps 0xEE.
        for reg in 0..0x60 {
            r.dev.poke(reg, 0xEE);
        }
        r.map.set_cache_only(false);
        let before = r.log.messages();
        let rep = r.map.sync().unwrap();
        assert_eq!((rep.written, rep.skipped_at_default, rep.messages), (3, 1, 1), "{}", r.name);
        let changed: Vec<(u32, u32)> = (0..0x60).map(|g| (g, r.dev.peek(g))).filter(|&(_, v)| v != 0xEE).collect();
        assert_eq!(changed, vec![(0x02, 0x55), (0x40, 0x77), (0x41, 0x78)], "{}", r.name);
        let msgs = r.log.since(before);
        assert_eq!(msgs.len(), 1, "{}: sync is batched into one message", r.name);
        assert_eq!(msgs[0].windows, vec![(Op::Write, 0x02, 1), (Op::Write, 0x40, 2)], "{}", r.name);
        assert!(msgs[0].submitted, "{}: sync goes through the async submit", r.name);
        // Nothing left dirty.
        let before = r.log.messages();
        assert_eq!(r.map.sync().unwrap().written, 0, "{}", r.name);
        assert_eq!(r.log.messages(), before, "{}", r.name);
    });
}

#[test]
fn mark_dirty_restores_non_defaults_after_a_reset() {
    each(|r| {
        if !r.caching() {
            return;
        }
        r.map.write(0x04, 0x99).unwrap();
        r.map.write(0x05, 0x15).unwrap(); // written, but at its default
        r.map.write(0x60, 0x01).unwrap();
        // Device reset: back to defaults, everything else 0.
        for reg in 0..=0xFF {
            r.dev.poke(reg, if reg < 0x10 { 0x10 + reg } else { 0 });
        }
        r.map.mark_dirty();
        let rep = r.map.sync().unwrap();
        assert_eq!(r.dev.peek(0x04), 0x99, "{}", r.name);
        assert_eq!(r.dev.peek(0x60), 0x01, "{}", r.name);
        assert_eq!(rep.written, 2, "{}: {rep:?}", r.name);
        assert_eq!(rep.skipped_at_default, 15, "{}: {rep:?}", r.name);
    });
}

#[test]
fn sync_does_not_count_read_only_registers_as_at_their_default() {
    each(|r| {
        if !r.caching() {
            return;
        }
        r.dev.poke(0xFC, 0x5A); // read-only, no default
        assert_eq!(r.map.read(0xFC).unwrap(), 0x5A); // now cached
        r.map.write(0x04, 0x99).unwrap();
        r.map.mark_dirty();
        let rep = r.map.sync().unwrap();
        // 0x04 written; 0x00..=0x0F but 0x04 at their default; 0xFC neither.
        assert_eq!((rep.written, rep.skipped_at_default), (1, 15), "{}: {rep:?}", r.name);
        assert_eq!(r.map.sync().unwrap(), Default::default(), "{}: nothing left dirty", r.name);
    });
}

#[test]
fn dump_never_reads_precious_or_unreadable_registers() {
    each(|r| {
        r.dev.poke(0xF8, 0x42);
        r.dev.poke(0xF0, 0x24);
        let before = r.log.messages();
        let dump = r.map.dump().unwrap();
        let read = r.log.regs_read_since(before);
        for reg in [0xF8, 0xF9, 0xFA, 0xFB] {
            assert!(!read.contains(&reg), "{}: dump read {reg:#x}", r.name);
            assert!(dump.iter().all(|&(g, _)| g != reg), "{}: dump lists {reg:#x}", r.name);
        }
        assert_eq!(dump.len(), 256 - 4, "{}", r.name);
        assert!(dump.contains(&(0xF0, 0x24)), "{}", r.name);
        assert!(dump.contains(&(0x07, 0x17)), "{}", r.name);
        if r.caching() {
            assert!(!read.contains(&0x07), "{}: dump read a cached register", r.name);
        }
        // An explicit read of a precious register is allowed.
        assert_eq!(r.map.read(0xF8).unwrap(), 0x42, "{}", r.name);
    });
}

#[test]
fn multi_write_of_8_adjacent_registers_is_one_message() {
    each(|r| {
        let cs0 = r.dev.cs_windows();
        let before = r.log.messages();
        let writes: Vec<(u32, u32)> = (0..8).map(|i| (0x80 + i, 0xA0 + i)).collect();
        r.map.multi_write(&writes).unwrap();
        let msgs = r.log.since(before);
        assert_eq!(msgs.len(), 1, "{}", r.name);
        assert_eq!(msgs[0].windows, vec![(Op::Write, 0x80, 8)], "{}", r.name);
        if let (Some(a), Some(b)) = (cs0, r.dev.cs_windows()) {
            assert_eq!(b - a, 1, "{}: one chip-select window", r.name);
        }
        for i in 0..8 {
            assert_eq!(r.dev.peek(0x80 + i), 0xA0 + i, "{}", r.name);
        }
        // Non-adjacent runs: one message, one window per run, in order.
        let before = r.log.messages();
        r.map.multi_write(&[(0x90, 1), (0x91, 2), (0x98, 3), (0x92, 4)]).unwrap();
        let msgs = r.log.since(before);
        assert_eq!(msgs.len(), 1, "{}", r.name);
        assert_eq!(
            msgs[0].windows,
            vec![(Op::Write, 0x90, 2), (Op::Write, 0x98, 1), (Op::Write, 0x92, 1)],
            "{}",
            r.name
        );
        assert_eq!((r.dev.peek(0x91), r.dev.peek(0x98), r.dev.peek(0x92)), (2, 3, 4), "{}", r.name);
        // Validation happens before anything is written.
        let before = r.log.messages();
        assert_eq!(
            r.map.multi_write(&[(0x93, 1), (0xFC, 2)]),
            Err(RegmapError::NotWriteable { reg: 0xFC }),
            "{}",
            r.name
        );
        assert_eq!(r.log.messages(), before, "{}", r.name);
        assert_eq!(r.dev.peek(0x93), 0, "{}", r.name);
    });
}

#[test]
fn bulk_and_raw_access() {
    each(|r| {
        r.map.bulk_write(0xA0, &[1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!((0xA0..0xA6).map(|g| r.dev.peek(g)).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6], "{}", r.name);
        let mut out = [0u32; 6];
        let before = r.log.messages();
        r.map.bulk_read(0xA0, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6], "{}", r.name);
        assert_eq!(r.log.messages() - before, usize::from(!r.caching()), "{}", r.name);
        r.map.raw_write(0xB0, &[9, 8, 7]).unwrap();
        let mut raw = [0u8; 4];
        for g in 0xB0..0xB4 {
            r.dev.poke(g, r.dev.peek(g)); // no change; keeps the device as is
        }
        r.dev.poke(0xB3, 6);
        r.map.raw_read(0xB0, &mut raw).unwrap();
        assert_eq!(raw, [9, 8, 7, 6], "{}", r.name);
        // A range across a volatile register is read from the device in one command.
        r.dev.poke(0xF0, 5);
        let before = r.log.messages();
        let mut v = [0u32; 3];
        r.map.bulk_read(0xEF, &mut v).unwrap();
        assert_eq!(v[1], 5, "{}", r.name);
        assert_eq!(r.log.since(before)[0].windows, vec![(Op::Read, 0xEF, 3)], "{}", r.name);
        assert_eq!(
            r.map.bulk_read(0xFE, &mut [0; 3]),
            Err(RegmapError::OutOfRange { reg: 0x100, max: 0xFF }),
            "{}",
            r.name
        );
        assert_eq!(r.map.bulk_read(0xF9, &mut [0; 2]), Err(RegmapError::NotReadable { reg: 0xFA }), "{}", r.name);
        assert_eq!(
            r.map.raw_read(0x10, &mut []),
            Err(RegmapError::BadLength { reg: 0x10, len: 0, multiple_of: 1 }),
            "{}",
            r.name
        );
    });
}

#[test]
fn typed_errors_change_nothing() {
    each(|r| {
        let before = r.log.messages();
        assert_eq!(r.map.read(0x100), Err(RegmapError::OutOfRange { reg: 0x100, max: 0xFF }));
        assert_eq!(r.map.read(0xFB), Err(RegmapError::NotReadable { reg: 0xFB }));
        assert_eq!(r.map.write(0xFD, 1), Err(RegmapError::NotWriteable { reg: 0xFD }));
        assert_eq!(r.map.write(0x20, 0x1FF), Err(RegmapError::ValueTooWide { reg: 0x20, value: 0x1FF, bits: 8 }));
        assert_eq!(r.map.drop_region(0x2F, 0x20), Err(RegmapError::BadRegion { first: 0x2F, last: 0x20 }));
        assert_eq!(r.log.messages(), before, "{}", r.name);
        assert_eq!(r.map.read(0xFC).unwrap(), 0, "{}: read-only register reads", r.name);
    });
}

#[test]
fn cache_bypass_goes_to_the_device_and_leaves_the_cache() {
    each(|r| {
        r.map.write(0x24, 1).unwrap();
        r.map.set_cache_bypass(true);
        r.map.write(0x24, 2).unwrap();
        assert_eq!(r.dev.peek(0x24), 2, "{}", r.name);
        let before = r.log.messages();
        assert_eq!(r.map.read(0x24).unwrap(), 2, "{}", r.name);
        assert_eq!(r.log.messages() - before, 1, "{}", r.name);
        r.map.set_cache_bypass(false);
        // As in the kernel: bypassed writes do not update the cache.
        let expected = if r.caching() { 1 } else { 2 };
        assert_eq!(r.map.read(0x24).unwrap(), expected, "{}", r.name);
    });
}

#[test]
fn bus_errors_name_the_register_and_keep_the_cache() {
    for cache in super::rig::CACHES {
        let r = super::rig::ram_rig(cache);
        let ram = r.dev.ram().unwrap();
        r.map.write(0x26, 1).unwrap();
        ram.fail_next(crate::regmap::BusError::Transport("nak".into()));
        let e = r.map.write(0x26, 2).unwrap_err();
        assert!(matches!(e, RegmapError::Bus { reg: 0x26, .. }), "{e}");
        if cache != CacheType::None {
            assert_eq!(r.map.read(0x26).unwrap(), 1);
        }
        // Sync failure keeps registers dirty.
        if cache != CacheType::None {
            r.map.set_cache_only(true);
            r.map.write(0x27, 5).unwrap();
            r.map.set_cache_only(false);
            ram.fail_next(crate::regmap::BusError::Transport("nak".into()));
            assert!(matches!(r.map.sync(), Err(RegmapError::Bus { reg: 0x27, .. })));
            assert_eq!(r.map.sync().unwrap().written, 1);
            assert_eq!(ram.peek(0x27), 5);
        }
    }
}

#[test]
fn sync_splits_at_the_bus_message_limit() {
    let r = super::rig::ram_rig(CacheType::Flat);
    let ram = r.dev.ram().unwrap();
    ram.set_max_message_bytes(Some(8));
    r.map.set_cache_only(true);
    for reg in [0x40, 0x50, 0x60, 0x70] {
        r.map.write(reg, 1).unwrap();
    }
    r.map.set_cache_only(false);
    // Each window is 3 bytes: two fit in one 8-byte message.
    let rep = r.map.sync().unwrap();
    assert_eq!((rep.written, rep.messages), (4, 2));
    assert_eq!(ram.messages(), 2);
}
