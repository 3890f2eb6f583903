//! The sparse cache: blocks of 64 registers in a `BTreeMap`, created when a
//! register of the block is first stored and removed when dropped empty — the
//! memory follows the registers in use, as the kernel's rbtree/maple caches.
//! One mutex guards the map (reads lock it briefly).

use super::Cache;
use crate::regmap::config::CacheType;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

const BLOCK: u32 = 64;

#[derive(Debug)]
struct Block {
    vals: [u32; BLOCK as usize],
    present: u64,
    dirty: u64,
}

/// Blocks of registers allocated on demand.
#[derive(Debug, Default)]
pub struct SparseCache {
    blocks: Mutex<BTreeMap<u32, Block>>,
}

impl SparseCache {
    /// An empty cache.
    pub fn new() -> SparseCache {
        SparseCache::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u32, Block>> {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn split(idx: u32) -> (u32, usize, u64) {
    (idx / BLOCK, (idx % BLOCK) as usize, 1u64 << (idx % BLOCK))
}

impl Cache for SparseCache {
    fn kind(&self) -> CacheType {
        CacheType::Sparse
    }

    fn get(&self, idx: u32) -> Option<u32> {
        let (key, i, m) = split(idx);
        let blocks = self.lock();
        let b = blocks.get(&key)?;
        (b.present & m != 0).then_some(b.vals[i])
    }

    fn set(&self, idx: u32, val: u32, dirty: bool) {
        let (key, i, m) = split(idx);
        let mut blocks = self.lock();
        let b = blocks.entry(key).or_insert_with(|| Block { vals: [0; BLOCK as usize], present: 0, dirty: 0 });
        b.vals[i] = val;
        b.present |= m;
        if dirty {
            b.dirty |= m;
        } else {
            b.dirty &= !m;
        }
    }

    fn is_dirty(&self, idx: u32) -> bool {
        let (key, _, m) = split(idx);
        self.lock().get(&key).is_some_and(|b| b.dirty & m != 0)
    }

    fn drop_range(&self, first: u32, last: u32) {
        if first > last {
            return;
        }
        let mut blocks = self.lock();
        let keys: Vec<u32> = blocks.range(first / BLOCK..=last / BLOCK).map(|(&k, _)| k).collect();
        for key in keys {
            let lo = (key * BLOCK).max(first);
            let hi = (key * BLOCK + BLOCK - 1).min(last);
            let mask = (lo..=hi).fold(0u64, |acc, idx| acc | 1u64 << (idx % BLOCK));
            if let Some(b) = blocks.get_mut(&key) {
                b.present &= !mask;
                b.dirty &= !mask;
                if b.present == 0 {
                    blocks.remove(&key);
                }
            }
        }
    }

    fn mark_all_dirty(&self) {
        for b in self.lock().values_mut() {
            b.dirty = b.present;
        }
    }

    fn collect_dirty(&self, out: &mut Vec<(u32, u32)>) {
        for (&key, b) in self.lock().iter() {
            let mut bits = b.dirty;
            while bits != 0 {
                let i = bits.trailing_zeros();
                out.push((key * BLOCK + i, b.vals[i as usize]));
                bits &= bits - 1;
            }
        }
    }

    fn clear_dirty(&self, idx: u32) {
        let (key, _, m) = split(idx);
        if let Some(b) = self.lock().get_mut(&key) {
            b.dirty &= !m;
        }
    }
}
