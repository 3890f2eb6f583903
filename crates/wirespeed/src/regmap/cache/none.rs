//! The absent cache: stores nothing, so every access reaches the device.

use super::Cache;
use crate::regmap::config::CacheType;

/// No cache.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCache;

impl Cache for NoCache {
    fn kind(&self) -> CacheType {
        CacheType::None
    }
    fn stores(&self) -> bool {
        false
    }
    fn get(&self, _idx: u32) -> Option<u32> {
        None
    }
    fn set(&self, _idx: u32, _val: u32, _dirty: bool) {}
    fn is_dirty(&self, _idx: u32) -> bool {
        false
    }
    fn drop_range(&self, _first: u32, _last: u32) {}
    fn mark_all_dirty(&self) {}
    fn collect_dirty(&self, _out: &mut Vec<(u32, u32)>) {}
    fn clear_dirty(&self, _idx: u32) {}
}
