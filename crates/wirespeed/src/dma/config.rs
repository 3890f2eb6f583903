//! How a [`DmaDomain`](super::DmaDomain) translates: [`DomainConfig`],
//! [`IommuMode`], [`AllocatorKind`], [`LazyConfig`], and their validation.

use super::error::DmaError;
use std::time::Duration;

/// How device addresses relate to physical ones, and when the IOTLB is invalidated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IommuMode {
    /// No IOMMU: device address = physical address; nothing to program.
    None,
    /// Passthrough: device address = physical address, no page-table writes
    /// (the IOMMU is told `set_passthrough(true)` once, at domain creation).
    Identity,
    /// Every unmap clears the PTEs and invalidates the IOTLB for the range
    /// (the caller waits for it); the IOVA is freed after the invalidation.
    /// The device can never use a translation after its unmap returned.
    Strict,
    /// Unmap clears the PTEs; the invalidation and the IOVA's release are
    /// deferred to the thread's flush queue (Linux: per-CPU flush queues of
    /// 256 entries, 10 ms). A queue is flushed with one `invalidate_all` when
    /// it is full, when the domain's flush timer fires, or on
    /// [`DmaDomain::flush`](super::DmaDomain::flush); its IOVAs are freed only
    /// after that, so an IOVA is never reused while a stale IOTLB entry could
    /// translate it.
    ///
    /// **The lazy window**: after an unmap, a device may still reach the old
    /// memory through a stale IOTLB entry until the flush that covers it —
    /// at most [`LazyConfig::queue_entries`] later unmaps by the same thread,
    /// or [`LazyConfig::timeout`] after the unmap (plus the time the flush
    /// thread needs to be scheduled and to run one `invalidate_all`),
    /// whichever comes first. The timeout holds on an idle system too: a
    /// per-domain flush thread, started on first use, sleeps until the timer's
    /// deadline and waits without a timeout while nothing is queued.
    /// Memory of a [`DmaBuffer`](super::DmaBuffer) is kept allocated until
    /// the flush (the buffer may be dropped earlier); memory mapped with
    /// [`map_raw`](super::DmaDomain::map_raw) is the caller's to keep.
    Lazy,
}

/// Which IOVA allocator a domain uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocatorKind {
    /// [`MagazineAllocator`](super::MagazineAllocator): per-thread magazines,
    /// depot, global tree (Linux iova rcache).
    Magazines,
    /// [`GlobalLockAllocator`](super::GlobalLockAllocator): one lock around
    /// the tree (the classic baseline).
    GlobalLock,
}

/// The flush queues of [`IommuMode::Lazy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LazyConfig {
    /// Entries per thread's queue (1..=65536; Linux: 256). A full queue is flushed.
    pub queue_entries: usize,
    /// The longest an unmapped range waits for its invalidation (1 µs..=60 s; Linux: 10 ms).
    pub timeout: Duration,
}

impl LazyConfig {
    /// Largest `queue_entries`.
    pub const MAX_QUEUE_ENTRIES: usize = 65536;
    /// Largest `timeout`.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
}

impl Default for LazyConfig {
    fn default() -> LazyConfig {
        LazyConfig { queue_entries: 256, timeout: Duration::from_millis(10) }
    }
}

/// A domain's configuration. The default: strict, magazines, IOVAs in
/// `[1 MiB, 4 GiB)` (a 32-bit DMA mask; IOVA 0 is never used), lazy queues as Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DomainConfig {
    /// Translation mode.
    pub mode: IommuMode,
    /// IOVA allocator.
    pub allocator: AllocatorKind,
    /// First IOVA (page-aligned, non-zero).
    pub iova_base: u64,
    /// End of the IOVA space (exclusive, page-aligned, above `iova_base`).
    pub iova_limit: u64,
    /// Flush queues of [`IommuMode::Lazy`].
    pub lazy: LazyConfig,
}

impl Default for DomainConfig {
    fn default() -> DomainConfig {
        DomainConfig {
            mode: IommuMode::Strict,
            allocator: AllocatorKind::Magazines,
            iova_base: 1 << 20,
            iova_limit: 1 << 32,
            lazy: LazyConfig::default(),
        }
    }
}

impl DomainConfig {
    /// The default with `mode`.
    pub fn with_mode(mode: IommuMode) -> DomainConfig {
        DomainConfig { mode, ..DomainConfig::default() }
    }

    /// Checks the lazy settings (the IOVA range is checked by the allocator).
    pub(crate) fn validate(&self) -> Result<(), DmaError> {
        let l = &self.lazy;
        if l.queue_entries == 0 || l.queue_entries > LazyConfig::MAX_QUEUE_ENTRIES {
            return Err(DmaError::InvalidConfig {
                what: "lazy.queue_entries",
                value: l.queue_entries as u64,
                allowed: "1..=65536",
            });
        }
        if l.timeout < Duration::from_micros(1) || l.timeout > LazyConfig::MAX_TIMEOUT {
            return Err(DmaError::InvalidConfig {
                what: "lazy.timeout (ns)",
                value: l.timeout.as_nanos().min(u64::MAX as u128) as u64,
                allowed: "1 µs..=60 s",
            });
        }
        Ok(())
    }
}
