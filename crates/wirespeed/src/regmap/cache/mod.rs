//! Register caches, one per module behind the [`Cache`] trait.
//!
//! - [`none`]: no storage; every access reaches the device.
//! - [`flat`]: one atomic slot per register with present/dirty bitmaps —
//!   reads take no lock at all.
//! - [`sparse`]: blocks of 64 registers in a `BTreeMap`, allocated when first
//!   written (like the kernel's rbtree/maple caches for sparse maps).
//!
//! Caches address registers by *slot* (`register / stride`). Concurrency
//! contract: the register map calls every mutating method with its I/O lock
//! held (one mutator at a time); [`Cache::get`] may run concurrently with
//! them from any thread and sees either the old or the new value.

pub mod flat;
pub mod none;
pub mod sparse;

use super::config::CacheType;
use super::error::ConfigError;
use std::fmt;

/// Storage of register values with a present and a dirty mark per slot.
pub trait Cache: Send + Sync + fmt::Debug {
    /// Which kind this is.
    fn kind(&self) -> CacheType;
    /// Whether the cache stores anything (false for [`none::NoCache`]).
    fn stores(&self) -> bool {
        true
    }
    /// The cached value of slot `idx`, if present.
    fn get(&self, idx: u32) -> Option<u32>;
    /// Stores a value; `dirty` = the device does not have it yet.
    fn set(&self, idx: u32, val: u32, dirty: bool);
    /// Whether slot `idx` is present and dirty.
    fn is_dirty(&self, idx: u32) -> bool;
    /// Forgets slots `first..=last` (values and dirty marks).
    fn drop_range(&self, first: u32, last: u32);
    /// Marks every present slot dirty (the device lost its state).
    fn mark_all_dirty(&self);
    /// Appends `(slot, value)` of every dirty slot, ascending.
    fn collect_dirty(&self, out: &mut Vec<(u32, u32)>);
    /// Clears the dirty mark of slot `idx`.
    fn clear_dirty(&self, idx: u32);
}

/// A cache of `kind` for `slots` registers (up to 2^32: every `u32` slot;
/// a flat cache refuses more than
/// [`FLAT_CACHE_MAX_SLOTS`](super::FLAT_CACHE_MAX_SLOTS)).
pub fn new_cache(kind: CacheType, slots: u64) -> Result<Box<dyn Cache>, ConfigError> {
    Ok(match kind {
        CacheType::None => Box::new(none::NoCache),
        CacheType::Flat => Box::new(flat::FlatCache::new(slots)?),
        CacheType::Sparse => Box::new(sparse::SparseCache::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same contract checks for every storing cache.
    fn contract(c: &dyn Cache) {
        assert_eq!(c.get(5), None);
        c.set(5, 0xAB, false);
        c.set(200, 7, true);
        c.set(64, 1, true);
        assert_eq!((c.get(5), c.get(200), c.get(64)), (Some(0xAB), Some(7), Some(1)));
        assert!(!c.is_dirty(5) && c.is_dirty(200));
        let mut d = Vec::new();
        c.collect_dirty(&mut d);
        assert_eq!(d, vec![(64, 1), (200, 7)]);
        c.clear_dirty(64);
        c.mark_all_dirty();
        d.clear();
        c.collect_dirty(&mut d);
        assert_eq!(d, vec![(5, 0xAB), (64, 1), (200, 7)]);
        c.set(5, 0xAC, false);
        assert!(!c.is_dirty(5));
        c.drop_range(6, 200);
        assert_eq!((c.get(5), c.get(64), c.get(200)), (Some(0xAC), None, None));
        assert!(!c.is_dirty(200));
        d.clear();
        c.collect_dirty(&mut d);
        assert!(d.is_empty());
    }

    #[test]
    fn flat_and_sparse_follow_the_contract() {
        contract(&flat::FlatCache::new(256).unwrap());
        contract(&sparse::SparseCache::new());
    }

    #[test]
    fn a_flat_cache_too_large_is_refused_and_the_others_are_made_for_any_size() {
        use crate::regmap::FLAT_CACHE_MAX_SLOTS;
        let max = FLAT_CACHE_MAX_SLOTS;
        assert_eq!(new_cache(CacheType::Flat, max).unwrap().kind(), CacheType::Flat);
        for slots in [max + 1, 1 << 32] {
            let err = new_cache(CacheType::Flat, slots).unwrap_err();
            assert_eq!(err, ConfigError::FlatCacheTooLarge { slots, max });
        }
        for kind in [CacheType::None, CacheType::Sparse] {
            assert_eq!(new_cache(kind, 1 << 32).unwrap().kind(), kind);
        }
    }

    #[test]
    fn none_stores_nothing() {
        let c = none::NoCache;
        c.set(1, 2, true);
        assert_eq!(c.get(1), None);
        assert!(!c.stores() && !c.is_dirty(1));
    }
}
