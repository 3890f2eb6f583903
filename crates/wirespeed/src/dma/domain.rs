//! [`DmaDomain`]: one device's view of memory — the IOMMU mode, the IOVA
//! allocator, the lazy flush queues and counters — and the map/unmap core
//! that [`Mapping`](super::Mapping), [`SgMapping`](super::SgMapping) and
//! [`RawMapping`] use.
//!
//! Hot path (strict or lazy, magazines, a thread that has mapped before):
//! map = a thread-local lookup, an IOVA from the thread's magazine (its
//! uncontended [`SlotLock`]), the PTE writes; unmap = the PTE clears, then either
//! the range invalidation and the IOVA back into the magazine (strict) or an
//! entry in the thread's flush queue (lazy, its uncontended lock). No
//! allocation, no lock another thread takes in the common case.

use super::buffer::DmaBuffer;
use super::config::{AllocatorKind, DomainConfig, IommuMode};
use super::error::{DmaError, UnmapError};
use super::flush_queue::{FlushQueue, Keep};
use super::flusher::{FlushTarget, Flusher};
use super::hw::{Direction, IommuHw};
use super::iova::{GlobalLockAllocator, IovaAllocator, IovaStats, MagazineAllocator};
use super::mapping::{Mapping, RawMapping};
use super::per_thread::{self, ThreadSlot};
use super::slot_lock::SlotLock;
use super::stats::{bump, bump_own, Counters, DmaStats};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

const PAGE: u64 = super::PAGE_SIZE as u64;

/// A device's DMA address space: maps memory for the device and unmaps it,
/// in one of four [`IommuMode`]s.
pub struct DmaDomain {
    inner: Arc<Inner>,
}

enum Iova {
    Magazines(MagazineAllocator),
    Global(GlobalLockAllocator),
}

impl Iova {
    fn alloc(&self, pages: u64) -> Option<u64> {
        match self {
            Iova::Magazines(a) => a.alloc(pages),
            Iova::Global(a) => a.alloc(pages),
        }
    }

    fn free(&self, iova: u64, pages: u64) {
        match self {
            Iova::Magazines(a) => a.free(iova, pages),
            Iova::Global(a) => a.free(iova, pages),
        }
    }

    /// Frees the ranges `f` hands to the function it is given: the magazine
    /// allocator looks up the thread's caches once for all of them; the
    /// global-lock one takes its lock per range, as Linux's `free_iova`.
    fn free_many(&self, f: impl FnOnce(&mut dyn FnMut(u64, u64))) {
        match self {
            Iova::Magazines(a) => a.free_many(f),
            Iova::Global(a) => f(&mut |iova, pages| a.free(iova, pages)),
        }
    }

    /// As `free_many`, but straight into the global allocator (one lock)
    /// for both kinds: for a flush of every thread's queue.
    fn free_to_global(&self, f: impl FnOnce(&mut dyn FnMut(u64, u64))) {
        match self {
            Iova::Magazines(a) => a.free_to_global(f),
            Iova::Global(a) => a.free_with(f),
        }
    }

    fn global(&self) -> &GlobalLockAllocator {
        match self {
            Iova::Magazines(a) => a.global(),
            Iova::Global(a) => a,
        }
    }

    fn stats(&self) -> IovaStats {
        match self {
            Iova::Magazines(a) => a.stats(),
            Iova::Global(a) => a.stats(),
        }
    }
}

pub(crate) struct Inner {
    id: u64,
    config: DomainConfig,
    hw: Option<Arc<dyn IommuHw>>,
    iova: Iova,
    /// Every live thread's slot (registry; lock order: registry, then a slot's queue).
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Exited threads' counters, and the (rare) flush counters.
    shared: Counters,
    flush_started: AtomicU64,
    flush_finished: AtomicU64,
    flusher: Option<Arc<Flusher>>,
    me: Weak<Inner>,
}

/// A thread's counters and flush queue in one domain.
struct Slot {
    counters: Counters,
    fq: SlotLock<FlushQueue>,
    owner: Weak<Inner>,
}

impl ThreadSlot for Slot {
    fn thread_exit(&self) {
        if let Some(inner) = self.owner.upgrade() {
            inner.retire(self);
        }
    }

    fn owner_alive(&self) -> bool {
        self.owner.strong_count() > 0
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FlushTarget for Inner {
    fn timer_flush(&self) {
        if self.flush_queues() {
            bump(&self.shared.timer_flushes);
        }
    }
}

impl Inner {
    /// The IOMMU, in the modes that program it.
    fn translating(&self) -> Option<&dyn IommuHw> {
        match self.config.mode {
            IommuMode::Strict | IommuMode::Lazy => self.hw.as_deref(),
            IommuMode::None | IommuMode::Identity => None,
        }
    }

    /// Runs `f` on this thread's slot (`None`: the thread is exiting).
    fn with_slot<R>(&self, f: impl FnOnce(&Slot) -> R) -> Option<R> {
        per_thread::with(
            self.id,
            || {
                let slot = Arc::new(Slot {
                    counters: Counters::default(),
                    fq: SlotLock::new(FlushQueue::new(if self.config.mode == IommuMode::Lazy {
                        self.config.lazy.queue_entries
                    } else {
                        0
                    })),
                    owner: self.me.clone(),
                });
                lock(&self.slots).push(slot.clone());
                slot
            },
            f,
        )
    }

    /// Bumps a per-thread counter.
    fn count(&self, which: fn(&Counters) -> &AtomicU64) {
        if self.with_slot(|s| bump_own(which(&s.counters))).is_none() {
            bump(which(&self.shared));
        }
    }

    fn alloc_iova(&self, pages: u64) -> Result<u64, DmaError> {
        if let Some(iova) = self.iova.alloc(pages) {
            return Ok(iova);
        }
        // Ranges waiting for a lazy flush may be what is missing.
        if self.config.mode == IommuMode::Lazy && self.flush_queues() {
            if let Some(iova) = self.iova.alloc(pages) {
                return Ok(iova);
            }
        }
        Err(DmaError::IovaExhausted { pages, space_pages: self.iova.global().space_pages() })
    }

    /// One `invalidate_all`, numbered so queued entries know whether it covers them.
    fn flush_hw(&self, hw: &dyn IommuHw) {
        let g = self.flush_started.fetch_add(1, Ordering::SeqCst) + 1;
        hw.invalidate_all();
        self.flush_finished.fetch_max(g, Ordering::SeqCst);
        bump(&self.shared.invalidate_alls);
    }

    fn free_now(&self, iova: u64, pages: u64, keep: Keep) {
        self.iova.free(iova, pages);
        drop(keep); // the memory may go now: no translation of it is left
    }

    /// Frees the entries of `q` a finished flush covers (one batch).
    fn free_done(&self, q: &mut FlushQueue) {
        let finished = self.flush_finished.load(Ordering::SeqCst);
        if !q.front_done(finished) {
            return;
        }
        self.iova.free_many(|free| q.pop_done(finished, free));
    }

    /// Flushes every thread's queue with one `invalidate_all` if anything is
    /// queued; `true` if it did.
    fn flush_queues(&self) -> bool {
        let Some(hw) = self.translating() else { return false };
        let reg = lock(&self.slots);
        if reg.iter().all(|s| s.fq.lock().is_empty()) {
            return false;
        }
        self.flush_hw(hw);
        bump(&self.shared.flushes);
        // Into the global allocator, not this thread's magazines: a thread's
        // IOVAs stay on PTE lines no other thread writes (see `PTE_LINE_PAGES`).
        // Lock order as on the unmap path: a queue, then the global allocator.
        let finished = self.flush_finished.load(Ordering::SeqCst);
        for s in reg.iter() {
            let mut q = s.fq.lock();
            if !q.front_done(finished) {
                continue;
            }
            self.iova.free_to_global(|free| q.pop_done(finished, free));
        }
        true
    }

    /// Thread exit: counters into `shared`, queued ranges flushed and freed.
    fn retire(&self, slot: &Slot) {
        let mut reg = lock(&self.slots);
        slot.counters.retire_into(&self.shared);
        let mut q = slot.fq.lock();
        if !q.is_empty() {
            if let Some(hw) = self.translating() {
                self.flush_hw(hw);
                bump(&self.shared.flushes);
            }
            self.free_done(&mut q);
        }
        drop(q);
        reg.retain(|s| !std::ptr::eq(Arc::as_ptr(s), slot));
    }

    /// Lazy unmap, after the PTEs were cleared: queue the range (and count the unmap).
    fn enqueue(&self, hw: &dyn IommuHw, iova: u64, pages: u64, keep: Keep) {
        let mut keep = Some(keep);
        let arm = self.with_slot(|slot| {
            bump_own(&slot.counters.unmaps);
            // SAFETY: `with_slot` hands this thread its own slot, and nothing
            // under this lock takes it again.
            let mut q = unsafe { slot.fq.lock_own() };
            self.free_done(&mut q);
            if q.is_full() {
                self.flush_hw(hw);
                bump(&self.shared.flushes);
                self.free_done(&mut q);
            }
            q.push(iova, pages, self.flush_started.load(Ordering::SeqCst), keep.take().unwrap_or(Keep::Nothing));
            let Some(f) = &self.flusher else { return false };
            // Read under the queue lock (see flusher.rs).
            !f.armed.load(Ordering::Relaxed) && !f.armed.swap(true, Ordering::AcqRel)
        });
        if let Some(keep) = keep {
            // No thread-local queue (the thread is exiting): flush now.
            bump(&self.shared.unmaps);
            self.flush_hw(hw);
            bump(&self.shared.flushes);
            self.free_now(iova, pages, keep);
        }
        if arm == Some(true) {
            if let Some(f) = &self.flusher {
                if !f.arm(self.me.clone()) {
                    // No timer thread: nothing may wait unbounded.
                    f.armed.store(false, Ordering::SeqCst);
                    self.flush_queues();
                }
            }
        }
    }

    /// Ends a translated mapping of `pages` pages at `iova`.
    fn release(&self, iova: u64, pages: u64, keep: Keep) -> Result<(), DmaError> {
        let Some(hw) = self.translating() else { return Ok(()) };
        let len = pages * PAGE;
        if let Err(error) = hw.unmap_pages(iova, len) {
            // The entries may still be there: keep the IOVA out of use and
            // the memory allocated, forever.
            hw.invalidate(iova, len);
            self.count(|c| &c.invalidations);
            self.count(|c| &c.hw_errors);
            std::mem::forget(keep);
            return Err(DmaError::Hardware { iova, len, error });
        }
        if self.config.mode == IommuMode::Strict {
            self.count(|c| &c.unmaps);
            hw.invalidate(iova, len);
            self.count(|c| &c.invalidations);
            self.iova.free(iova, pages);
            drop(keep);
        } else {
            self.enqueue(hw, iova, pages, keep);
        }
        Ok(())
    }

    /// Maps pages `[page_phys, page_phys + pages * PAGE)` at a new IOVA.
    ///
    /// # Safety
    /// As [`DmaDomain::map_raw`].
    unsafe fn map_pages(&self, hw: &dyn IommuHw, page_phys: u64, pages: u64, dir: Direction) -> Result<u64, DmaError> {
        let iova = self.alloc_iova(pages)?;
        let len = pages * PAGE;
        // SAFETY: the caller keeps the memory valid until the unmap.
        if let Err(error) = unsafe { hw.map_pages(iova, page_phys, len, dir.perm()) } {
            self.iova.free(iova, pages);
            self.count(|c| &c.hw_errors);
            return Err(DmaError::Hardware { iova, len, error });
        }
        Ok(iova)
    }
}

/// The pages `[phys, phys + len)` spans: (first page's address, pages).
pub(crate) fn span(phys: u64, len: usize) -> Result<(u64, u64), DmaError> {
    if len == 0 {
        return Err(DmaError::ZeroLength);
    }
    let overflow = DmaError::AddressOverflow { phys, len };
    let end = phys.checked_add(len as u64).ok_or(overflow.clone())?;
    let page_phys = phys - phys % PAGE;
    let pages = (end - page_phys).div_ceil(PAGE);
    page_phys.checked_add(pages * PAGE).ok_or(overflow)?;
    Ok((page_phys, pages))
}

impl DmaDomain {
    /// A domain over `hw` (required by [`IommuMode::Strict`] and
    /// [`IommuMode::Lazy`], never called in [`IommuMode::None`]; in
    /// [`IommuMode::Identity`] it is told `set_passthrough(true)` here and
    /// nothing else). Errors: [`DmaError::NoIommu`], [`DmaError::InvalidConfig`].
    pub fn new(hw: Option<Arc<dyn IommuHw>>, config: DomainConfig) -> Result<DmaDomain, DmaError> {
        config.validate()?;
        let iova = match config.allocator {
            AllocatorKind::Magazines => Iova::Magazines(MagazineAllocator::new(config.iova_base, config.iova_limit)?),
            AllocatorKind::GlobalLock => Iova::Global(GlobalLockAllocator::new(config.iova_base, config.iova_limit)?),
        };
        let translating = matches!(config.mode, IommuMode::Strict | IommuMode::Lazy);
        if translating && hw.is_none() {
            return Err(DmaError::NoIommu);
        }
        let flusher = (config.mode == IommuMode::Lazy).then(|| Arc::new(Flusher::new(config.lazy.timeout)));
        let inner = Arc::new_cyclic(|me| Inner {
            id: per_thread::new_owner_id(),
            config,
            hw,
            iova,
            slots: Mutex::new(Vec::new()),
            shared: Counters::default(),
            flush_started: AtomicU64::new(0),
            flush_finished: AtomicU64::new(0),
            flusher,
            me: me.clone(),
        });
        if config.mode == IommuMode::Identity {
            if let Some(hw) = &inner.hw {
                hw.set_passthrough(true);
            }
        }
        Ok(DmaDomain { inner })
    }

    /// The configuration.
    pub fn config(&self) -> &DomainConfig {
        &self.inner.config
    }

    /// The mode.
    pub fn mode(&self) -> IommuMode {
        self.inner.config.mode
    }

    /// This domain's id (unique in the process).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Maps `len` bytes at `phys` for the device, with the permission of
    /// `dir`. The device address keeps the offset within the page
    /// (`iova_of_first_page + phys % 4096`); in `None`/`Identity` it is `phys`.
    /// On error nothing is mapped or allocated.
    ///
    /// # Safety
    /// `[phys, phys + len)` must be memory that stays valid for the device's
    /// accesses until [`unmap_raw`](DmaDomain::unmap_raw) of the mapping has
    /// returned — and, in [`IommuMode::Lazy`], until the flush after it (see
    /// the lazy window there) if the device may misbehave. While the device
    /// may write it, no Rust reference may hold it.
    #[inline]
    pub unsafe fn map_raw(&self, phys: u64, len: usize, dir: Direction) -> Result<RawMapping, DmaError> {
        let i = &self.inner;
        let (page_phys, pages) = span(phys, len)?;
        let raw = match i.translating() {
            None => RawMapping::new(phys, len, 0, 0, dir, i.id),
            Some(hw) => {
                let space_pages = i.iova.global().space_pages();
                if pages > space_pages {
                    return Err(DmaError::TooLarge { len, pages, space_pages });
                }
                // One look-up of the thread's slot for the mapping and its count.
                let in_slot = i.with_slot(|slot| {
                    // SAFETY: forwarded from the caller.
                    let iova = unsafe { i.map_pages(hw, page_phys, pages, dir) }?;
                    bump_own(&slot.counters.maps);
                    Ok(iova)
                });
                let iova = match in_slot {
                    Some(r) => r?,
                    None => {
                        // SAFETY: forwarded from the caller.
                        let iova = unsafe { i.map_pages(hw, page_phys, pages, dir) }?;
                        bump(&i.shared.maps);
                        iova
                    }
                };
                return Ok(RawMapping::new(iova + phys % PAGE, len, iova, pages, dir, i.id));
            }
        };
        i.count(|c| &c.maps);
        Ok(raw)
    }

    /// Ends a mapping of [`map_raw`](DmaDomain::map_raw): strict: PTEs
    /// cleared, IOTLB invalidated, IOVA freed before this returns; lazy: PTEs
    /// cleared, the rest queued. A mapping of another domain is handed back
    /// unchanged in the error.
    #[inline]
    pub fn unmap_raw(&self, m: RawMapping) -> Result<(), UnmapError> {
        if m.domain() != self.inner.id {
            let error = DmaError::WrongDomain { mapping_domain: m.domain(), domain: self.inner.id };
            return Err(UnmapError { error, mapping: Some(m) });
        }
        self.release(&m, Keep::Nothing).map_err(|error| UnmapError { error, mapping: None })
    }

    pub(crate) fn release(&self, m: &RawMapping, keep: Keep) -> Result<(), DmaError> {
        m.sync_for_cpu();
        if m.pages() == 0 {
            self.inner.count(|c| &c.unmaps);
            return Ok(());
        }
        self.inner.release(m.iova(), m.pages(), keep)
    }

    /// Maps a whole buffer; the [`Mapping`] unmaps on drop and keeps the CPU
    /// off the buffer meanwhile.
    pub fn map<'a>(&'a self, buf: &'a mut DmaBuffer, dir: Direction) -> Result<Mapping<'a>, DmaError> {
        let len = buf.len();
        self.map_range(buf, 0..len, dir)
    }

    /// Maps `range` of a buffer (`start < end <= buf.len()`).
    pub fn map_range<'a>(
        &'a self,
        buf: &'a mut DmaBuffer,
        range: Range<usize>,
        dir: Direction,
    ) -> Result<Mapping<'a>, DmaError> {
        let (start, end) = (range.start, range.end);
        if start >= end || end > buf.len() {
            return Err(DmaError::RangeOutOfBounds { start, end, len: buf.len() });
        }
        let phys = buf.phys() + start as u64;
        // SAFETY: the memory is the buffer's; `Mapping` borrows the buffer
        // mutably until it unmaps, and holds a reference on the memory so it
        // stays allocated even if the mapping is leaked.
        let raw = unsafe { self.map_raw(phys, end - start, dir) }?;
        Ok(Mapping::new(self, raw, buf.region().clone()))
    }

    /// Lazy mode: flushes every thread's queue now (one `invalidate_all`)
    /// and frees the IOVAs it covers. Other modes: nothing to do.
    pub fn flush(&self) {
        self.inner.flush_queues();
    }

    /// Returns every IOVA cached in magazines and depots to the global tree
    /// (the magazine allocator; nothing for the global-lock one).
    pub fn drain_iova_caches(&self) {
        if let Iova::Magazines(a) = &self.inner.iova {
            a.drain_caches();
        }
    }

    /// IOVA ranges held by live mappings and lazy queues (handed out by the
    /// allocator, not cached): 0 once everything is unmapped and flushed.
    pub fn iova_outstanding(&self) -> u64 {
        self.inner.iova.stats().outstanding()
    }

    /// Counters, summed over the threads (a snapshot).
    pub fn stats(&self) -> DmaStats {
        let i = &self.inner;
        let mut s = DmaStats::default();
        i.shared.add_to(&mut s);
        for slot in lock(&i.slots).iter() {
            slot.counters.add_to(&mut s);
            s.lazy_pending += slot.fq.lock().len() as u64;
        }
        s.iova = i.iova.stats();
        s
    }

    pub(crate) fn translating(&self) -> Option<&dyn IommuHw> {
        self.inner.translating()
    }

    pub(crate) fn space_pages(&self) -> u64 {
        self.inner.iova.global().space_pages()
    }

    pub(crate) fn alloc_iova(&self, pages: u64) -> Result<u64, DmaError> {
        self.inner.alloc_iova(pages)
    }

    /// Undoes a partial scatter-gather mapping: clears `[iova, iova + mapped_pages)`,
    /// invalidates it, frees the `pages`-page IOVA range.
    pub(crate) fn undo_partial(&self, hw: &dyn IommuHw, iova: u64, mapped_pages: u64, pages: u64) {
        if mapped_pages > 0 {
            let _ = hw.unmap_pages(iova, mapped_pages * PAGE);
            hw.invalidate(iova, mapped_pages * PAGE);
            self.inner.count(|c| &c.invalidations);
        }
        self.inner.iova.free(iova, pages);
    }

    pub(crate) fn count_map(&self) {
        self.inner.count(|c| &c.maps);
    }

    pub(crate) fn release_pages(&self, iova: u64, pages: u64, keep: Keep) -> Result<(), DmaError> {
        self.inner.release(iova, pages, keep)
    }

    pub(crate) fn count_hw_error(&self) {
        self.inner.count(|c| &c.hw_errors);
    }

    pub(crate) fn count_unmap(&self) {
        self.inner.count(|c| &c.unmaps);
    }
}

impl Drop for DmaDomain {
    fn drop(&mut self) {
        self.inner.flush_queues();
        if let Some(f) = &self.inner.flusher {
            f.shutdown();
        }
    }
}

impl fmt::Debug for DmaDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaDomain")
            .field("id", &self.inner.id)
            .field("config", &self.inner.config)
            .field("has_hw", &self.inner.hw.is_some())
            .finish()
    }
}
