//! Concurrency: lock-free cached reads race with writers and region drops.
//! Readers must only ever see values that were written, in order per register.

use super::rig::ram_rig;
use crate::regmap::CacheType;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

#[test]
fn concurrent_cached_reads_see_only_written_values_in_order() {
    for cache in [CacheType::Flat, CacheType::Sparse] {
        let r = Arc::new(ram_rig(cache));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(3));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (r, stop, start) = (r.clone(), stop.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let mut last = [0u32; 4];
                    let mut n = 0u64;
                    // At least one pass, however the threads are scheduled.
                    while n == 0 || !stop.load(Ordering::Relaxed) {
                        for (i, l) in last.iter_mut().enumerate() {
                            let v = r.map.read(0x40 + i as u32).unwrap();
                            assert!(v >= *l, "register {i} went back from {l} to {v}");
                            *l = v;
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        start.wait();
        for v in 1..=255u32 {
            for i in 0..4 {
                r.map.write(0x40 + i, v).unwrap();
            }
            if v % 16 == 0 {
                // Dropping forces re-reads from the device, which holds the same values.
                r.map.drop_region(0x40, 0x43).unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
        for h in readers {
            assert!(h.join().unwrap() > 0);
        }
        assert_eq!(r.map.read(0x43).unwrap(), 255);
    }
}
