//! The flat cache: one atomic value per register plus present and dirty
//! bitmaps. A read is two atomic loads and takes no lock, so any number of
//! threads read cached registers while another one talks to the device.
//!
//! Writers are serialized by the register map's I/O lock (see the
//! [module contract](super)). A writer stores the value, then publishes the
//! present bit with `Release`; a reader loads the present bit with `Acquire`
//! before the value, so it never sees a present slot without its value.
//! A `loom` model checks this (`RUSTFLAGS="--cfg loom" cargo test -p
//! wirespeed --lib regmap::cache::flat`).

use super::Cache;
use crate::regmap::config::{CacheType, FLAT_CACHE_MAX_SLOTS};
use crate::regmap::error::ConfigError;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// One slot per register.
#[derive(Debug)]
pub struct FlatCache {
    vals: Box<[AtomicU32]>,
    present: Box<[AtomicU64]>,
    dirty: Box<[AtomicU64]>,
}

fn bit(idx: u32) -> (usize, u64) {
    ((idx / 64) as usize, 1u64 << (idx % 64))
}

impl FlatCache {
    /// A cache of `slots` registers, all absent; more than
    /// [`FLAT_CACHE_MAX_SLOTS`] is refused (a sparse cache holds those).
    pub fn new(slots: u64) -> Result<FlatCache, ConfigError> {
        if slots > FLAT_CACHE_MAX_SLOTS {
            return Err(ConfigError::FlatCacheTooLarge { slots, max: FLAT_CACHE_MAX_SLOTS });
        }
        let words = slots.div_ceil(64) as usize;
        Ok(FlatCache {
            vals: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            present: (0..words).map(|_| AtomicU64::new(0)).collect(),
            dirty: (0..words).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    fn in_range(&self, idx: u32) -> bool {
        (idx as usize) < self.vals.len()
    }
}

impl Cache for FlatCache {
    fn kind(&self) -> CacheType {
        CacheType::Flat
    }

    #[inline]
    fn get(&self, idx: u32) -> Option<u32> {
        let (w, m) = bit(idx);
        let present = self.present.get(w)?.load(Ordering::Acquire);
        if present & m == 0 {
            return None;
        }
        Some(self.vals[idx as usize].load(Ordering::Relaxed))
    }

    fn set(&self, idx: u32, val: u32, dirty: bool) {
        if !self.in_range(idx) {
            return;
        }
        let (w, m) = bit(idx);
        self.vals[idx as usize].store(val, Ordering::Relaxed);
        if dirty {
            self.dirty[w].fetch_or(m, Ordering::Relaxed);
        } else if self.dirty[w].load(Ordering::Relaxed) & m != 0 {
            self.dirty[w].fetch_and(!m, Ordering::Relaxed);
        }
        // Release also for an already-present slot, so that a reader which
        // sees this RMW sees the new value.
        self.present[w].fetch_or(m, Ordering::Release);
    }

    fn is_dirty(&self, idx: u32) -> bool {
        let (w, m) = bit(idx);
        self.dirty.get(w).is_some_and(|d| d.load(Ordering::Relaxed) & m != 0)
    }

    fn drop_range(&self, first: u32, last: u32) {
        let last = last.min((self.vals.len() as u32).saturating_sub(1));
        for idx in first..=last {
            let (w, m) = bit(idx);
            self.present[w].fetch_and(!m, Ordering::Release);
            self.dirty[w].fetch_and(!m, Ordering::Relaxed);
        }
    }

    fn mark_all_dirty(&self) {
        for (p, d) in self.present.iter().zip(self.dirty.iter()) {
            d.store(p.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    fn collect_dirty(&self, out: &mut Vec<(u32, u32)>) {
        for (w, d) in self.dirty.iter().enumerate() {
            let mut bits = d.load(Ordering::Relaxed);
            while bits != 0 {
                let idx = w as u32 * 64 + bits.trailing_zeros();
                out.push((idx, self.vals[idx as usize].load(Ordering::Relaxed)));
                bits &= bits - 1;
            }
        }
    }

    fn clear_dirty(&self, idx: u32) {
        let (w, m) = bit(idx);
        if let Some(d) = self.dirty.get(w) {
            d.fetch_and(!m, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn a_reader_never_sees_a_present_slot_without_its_value() {
        loom::model(|| {
            let c = Arc::new(FlatCache::new(2).unwrap());
            let w = c.clone();
            let t = loom::thread::spawn(move || {
                w.set(1, 5, false);
                w.set(1, 6, true);
                w.drop_range(1, 1);
            });
            let a = c.get(1);
            let b = c.get(1);
            assert!(matches!(a, None | Some(5) | Some(6)), "{a:?}");
            assert!(matches!(b, None | Some(5) | Some(6)), "{b:?}");
            if a == Some(6) {
                assert_ne!(b, Some(5), "went back");
            }
            t.join().unwrap();
            assert_eq!(c.get(1), None);
            assert!(!c.is_dirty(1));
        });
    }
}
