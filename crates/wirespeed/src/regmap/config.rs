//! What a register map is told about its device: format, address space,
//! register properties, defaults and the cache to use.

use super::format::Format;
use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Arc;

/// A set of registers: all, none, a list of inclusive ranges, or a predicate.
#[derive(Clone, Default)]
pub enum RegSet {
    /// Every register.
    All,
    /// No register.
    #[default]
    Nothing,
    /// The registers inside any of these inclusive ranges.
    Ranges(Vec<RangeInclusive<u32>>),
    /// The registers for which the function returns `true`.
    Predicate(Arc<dyn Fn(u32) -> bool + Send + Sync>),
}

impl RegSet {
    /// The registers in `ranges`.
    pub fn ranges(ranges: impl IntoIterator<Item = RangeInclusive<u32>>) -> RegSet {
        RegSet::Ranges(ranges.into_iter().collect())
    }
    /// The registers for which `f` returns `true`.
    pub fn predicate(f: impl Fn(u32) -> bool + Send + Sync + 'static) -> RegSet {
        RegSet::Predicate(Arc::new(f))
    }
    /// Whether `reg` is in the set.
    pub fn contains(&self, reg: u32) -> bool {
        match self {
            RegSet::All => true,
            RegSet::Nothing => false,
            RegSet::Ranges(rs) => rs.iter().any(|r| r.contains(&reg)),
            RegSet::Predicate(f) => f(reg),
        }
    }
}

impl fmt::Debug for RegSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegSet::All => write!(f, "All"),
            RegSet::Nothing => write!(f, "Nothing"),
            RegSet::Ranges(rs) => {
                f.debug_list().entries(rs.iter().map(|r| format!("{:#x}..={:#x}", r.start(), r.end()))).finish()
            }
            RegSet::Predicate(_) => write!(f, "Predicate(..)"),
        }
    }
}

/// The most register slots a [`CacheType::Flat`] cache holds (4 MiB of
/// values); larger maps take [`CacheType::Sparse`].
pub const FLAT_CACHE_MAX_SLOTS: u64 = 1 << 20;

/// Which register cache a map keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheType {
    /// No cache: every access reaches the device.
    None,
    /// One slot per register (dense register maps; lock-free reads; at most
    /// [`FLAT_CACHE_MAX_SLOTS`] registers).
    #[default]
    Flat,
    /// Blocks of registers allocated on first use in an ordered map (large,
    /// sparsely used register maps).
    Sparse,
}

/// A register map's description of its device.
#[derive(Clone, Debug)]
pub struct RegmapConfig {
    /// Wire format (see [`format`](super::format)).
    pub format: Arc<dyn Format>,
    /// Distance between register addresses (4 for byte-addressed 32-bit registers).
    pub reg_stride: u32,
    /// Last valid register address.
    pub max_register: u32,
    /// Registers that may be read from the device (default: all).
    pub readable: RegSet,
    /// Registers that may be written (default: all).
    pub writeable: RegSet,
    /// Registers whose value changes by itself: never cached (default: none).
    pub volatile: RegSet,
    /// Registers that must only be read on explicit request (reading has a
    /// side effect, e.g. clear-on-read): never read by [`dump`](super::Regmap::dump).
    pub precious: RegSet,
    /// Power-on values `(register, value)`: the cache starts with them and
    /// [`sync`](super::Regmap::sync) skips registers at their default.
    pub defaults: Vec<(u32, u32)>,
    /// The cache to keep.
    pub cache: CacheType,
}

impl RegmapConfig {
    /// A map of `format` up to `max_register`: stride 1, everything readable
    /// and writeable, nothing volatile or precious, no defaults, flat cache.
    pub fn new(format: impl Format + 'static, max_register: u32) -> RegmapConfig {
        RegmapConfig {
            format: Arc::new(format),
            reg_stride: 1,
            max_register,
            readable: RegSet::All,
            writeable: RegSet::All,
            volatile: RegSet::Nothing,
            precious: RegSet::Nothing,
            defaults: Vec::new(),
            cache: CacheType::Flat,
        }
    }
}
