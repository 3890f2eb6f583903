//! The lab's IOMMU: translates the device addresses (IOVAs) of the lab's DMA
//! engines to physical addresses, and faults on any access the mapping does
//! not allow.
//!
//! The lab's physical address space **is** the host process's virtual address
//! space: a physical address is a host pointer value. Pages are
//! [`PAGE_SIZE`] (4096) bytes; IOVAs have [`IOVA_BITS`] bits (a 4-level table).
//!
//! An [`Iommu`] has three faces:
//! - **Software (the driver)**: [`map`](Iommu::map) writes PTEs and costs no
//!   lab time (seed 003: "a single 64-bit write of the PTE"). The page
//!   table is updated as hardware tables are, with atomic PTE writes and no
//!   lock, so threads mapping different pages do not wait for one another
//!   (`table.rs`); only the device side (IOTLB, counters, fault log) is
//!   under a lock, which `map` and `unmap` never take.
//!   [`unmap`](Iommu::unmap) clears PTEs only: translations the IOTLB still
//!   holds keep working until [`invalidate`](Iommu::invalidate) or
//!   [`invalidate_all`](Iommu::invalidate_all) drops them, and the caller
//!   spins the invalidation's completion wait. [`set_passthrough`](Iommu::set_passthrough)
//!   makes device addresses physical (identity mode).
//! - **Device** ([`translate`](Iommu::translate)), used by DMA engines in the
//!   lab: IOTLB first, page-table walk on a miss (costing [`IommuConfig::walk_ns`]
//!   of lab time, spent by the device before the access that needed it).
//!   A hit whose PTE was since cleared or changed is a **stale hit**, the
//!   window lazy invalidation leaves open (seed 003: "lazy_flush leaves
//!   dangling references"). It is counted, and the engine must not touch host
//!   memory for it: its reads give zeros and its writes are dropped. Real
//!   hardware would reach the old page; the lab cannot let a device write
//!   memory that may have been freed and reused by the host process.
//! - **Backdoor** (tests, benchmarks): [`stats`](Iommu::stats), the fault log
//!   ([`faults`](Iommu::faults), [`take_faults`](Iommu::take_faults)),
//!   [`mapped_pages`](Iommu::mapped_pages), [`is_mapped`](Iommu::is_mapped).
//!
//! The lab's blocks are lazy (their state is worked out when software reads
//! it), so every change of the translation — `map`, `unmap`, the
//! invalidations — first brings the blocks that translate
//! through this IOMMU up to the present: accesses a device made before the
//! change use the translation from before it, as in time.
//!
//! ```
//! use wirespeed_lab::{Lab, LabConfig, devices::Loopback, iommu::Perm, spi::{regs, DmaDescriptor}};
//! let lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
//! let spi = lab.spi_controller(Default::default());
//! spi.attach(0, Loopback::new());
//! let iommu = lab.default_iommu();
//! spi.attach_iommu(&iommu);
//! #[repr(align(4096))]
//! struct Page([u8; 4096]);
//! let (tx, mut rx) = (Box::new(Page([0x5A; 4096])), Box::new(Page([0; 4096])));
//! unsafe {
//!     // SAFETY: both pages outlive their mappings (unmapped below).
//!     iommu.map(0x1000, tx.0.as_ptr() as u64, 4096, Perm::READ).unwrap();
//!     iommu.map(0x2000, rx.0.as_mut_ptr() as u64, 4096, Perm::WRITE).unwrap();
//!     spi.load_dma_descriptor(DmaDescriptor { tx: Some(0x1000), rx: Some(0x2000) });
//! }
//! spi.write(regs::CS, regs::CS_ASSERT);
//! spi.write(regs::XFERLEN, 4096);
//! spi.write(regs::START, regs::START_GO);
//! assert_ne!(spi.read(regs::STATUS) & regs::STATUS_DONE, 0);
//! iommu.unmap(0x1000, 0x2000).unwrap();
//! iommu.invalidate(0x1000, 0x2000);
//! assert_eq!(rx.0, tx.0);
//! ```
//!
//! # Where the cost figures come from
//! Seed 003 (`/work/shared/seeds/003_ab3f8ab10fbb94f6.txt`) measures software
//! costs only and gives no figures for the walk or the invalidations. The
//! defaults of [`IommuConfig`] are **estimates** for VT-d-class hardware, not
//! measurements: a 4-level walk at about 100 ns per level (a memory access
//! each, 400 ns), about 2 µs for one page-selective invalidation command and
//! its wait descriptor, about 4 µs for a global one, and a 64-entry IOTLB.
//! Set the figures of the system you model.

mod config;
mod error;
mod iotlb;
mod table;
#[cfg(test)]
mod tests;

pub use config::{IommuConfig, IommuConfigError};
pub use error::{DmaFault, FaultReason, IommuError};

use crate::spin::SpinLock;
use iotlb::Iotlb;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, Weak};
use table::PageTable;
use wirespeed_time::delay_ns;

/// Bytes in a page.
pub const PAGE_SIZE: u64 = 4096;
/// Bits of an IOVA: a range must end at or below 2^48.
pub const IOVA_BITS: u32 = 48;
/// The fault log keeps the last this many faults (all are counted in
/// [`IommuStats::faults`]).
pub const FAULT_LOG_CAPACITY: usize = 1024;

const PAGE_SHIFT: u32 = 12;

/// What a device may do with a mapped page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Perm {
    /// The device may read the page (DMA from memory: TX).
    pub read: bool,
    /// The device may write the page (DMA to memory: RX).
    pub write: bool,
}

impl Perm {
    /// Device reads only (TX buffers).
    pub const READ: Perm = Perm { read: true, write: false };
    /// Device writes only (RX buffers).
    pub const WRITE: Perm = Perm { read: false, write: true };
    /// Both.
    pub const READ_WRITE: Perm = Perm { read: true, write: true };

    /// Whether a device write (`true`) or read is allowed.
    pub fn allows(self, write: bool) -> bool {
        if write {
            self.write
        } else {
            self.read
        }
    }
}

/// A device access the IOMMU let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// The physical (host) address of the access.
    pub phys: u64,
    /// Lab time the page-table walk took, in ns (0 on an IOTLB hit).
    pub walk_ns: u64,
    /// A stale IOTLB hit: the page is no longer mapped there. The device must
    /// not touch `phys` (reads give zeros, writes are dropped).
    pub stale: bool,
}

/// The IOMMU's counters since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IommuStats {
    /// Translations served by the IOTLB (stale hits included).
    pub iotlb_hits: u64,
    /// Translations that missed the IOTLB.
    pub iotlb_misses: u64,
    /// Page-table walks (one per miss).
    pub walks: u64,
    /// Page-range invalidations ([`Iommu::invalidate`]).
    pub invalidations: u64,
    /// Global invalidations ([`Iommu::invalidate_all`]).
    pub invalidate_alls: u64,
    /// IOTLB hits on a translation the page table no longer has.
    pub stale_hits: u64,
    /// Device accesses refused.
    pub faults: u64,
    /// Pages mapped now.
    pub mapped_pages: u64,
}

/// A lab block that reaches memory through an IOMMU: brought up to the
/// present before the translation changes.
pub(crate) trait DmaClient: Send + Sync {
    /// Works out every access the block made up to now (before a change).
    fn settle(self: Arc<Self>);
    /// Drops the translations the block holds, so that its next access to
    /// each page asks the IOMMU again (after an `unmap` or an invalidation:
    /// the block's own copy of a translation must not outlive them).
    fn forget(self: Arc<Self>);
}

/// The device side: what translations and invalidations change. Software's
/// `map` and `unmap` never take its lock.
struct State {
    iotlb: Iotlb,
    /// Counters (`mapped_pages` is read from the table).
    stats: IommuStats,
    faults: VecDeque<DmaFault>,
}

struct Inner {
    config: IommuConfig,
    passthrough: AtomicBool,
    /// The page table: atomic PTEs, no lock (see `table.rs`).
    table: PageTable,
    state: SpinLock<State>,
    clients: RwLock<Vec<Weak<dyn DmaClient>>>,
    /// Whether `clients` has ever held a client: until then map and unmap
    /// skip it (one load of a line nobody writes, instead of the read lock's
    /// shared counter).
    has_clients: AtomicBool,
}

/// Handle to an emulated IOMMU. Clones share it.
#[derive(Clone)]
pub struct Iommu {
    inner: Arc<Inner>,
}

impl fmt::Debug for Iommu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iommu")
            .field("config", &self.inner.config)
            .field("passthrough", &self.passthrough())
            .field("stats", &self.stats())
            .finish()
    }
}

/// The pages of `[addr, addr + len)`.
fn pages(addr: u64, len: u64) -> std::ops::Range<u64> {
    (addr >> PAGE_SHIFT)..((addr + len) >> PAGE_SHIFT)
}

/// Checks a range given to `map` or `unmap`: page-aligned, a whole number of
/// pages, inside an address space of `bits` bits.
fn check_range(what: &'static str, addr: u64, len: u64, bits: u32) -> Result<(), IommuError> {
    if !addr.is_multiple_of(PAGE_SIZE) {
        return Err(IommuError::Misaligned { what, addr });
    }
    if len == 0 || !len.is_multiple_of(PAGE_SIZE) {
        return Err(IommuError::BadLength { len });
    }
    let end = u128::from(addr) + u128::from(len);
    if end > 1u128 << bits {
        return Err(IommuError::OutOfRange { what, addr, len });
    }
    Ok(())
}

impl Iommu {
    /// An IOMMU with `config`, or why none can have it.
    pub(crate) fn new(config: IommuConfig) -> Result<Iommu, IommuConfigError> {
        config.validate()?;
        Ok(Iommu::build(config))
    }

    /// An IOMMU with `config`, which [`IommuConfig::validate`] accepts.
    pub(crate) fn build(config: IommuConfig) -> Iommu {
        let state =
            State { iotlb: Iotlb::new(config.iotlb_entries), stats: IommuStats::default(), faults: VecDeque::new() };
        Iommu {
            inner: Arc::new(Inner {
                config,
                passthrough: AtomicBool::new(false),
                table: PageTable::default(),
                state: SpinLock::new(state),
                clients: RwLock::new(Vec::new()),
                has_clients: AtomicBool::new(false),
            }),
        }
    }

    /// The IOMMU's static configuration.
    pub fn config(&self) -> &IommuConfig {
        &self.inner.config
    }

    /// Registers a block to settle before the translation changes.
    pub(crate) fn add_client(&self, client: Weak<dyn DmaClient>) {
        let mut clients = self.inner.clients.write().unwrap_or_else(|e| e.into_inner());
        clients.retain(|c| c.strong_count() > 0);
        clients.push(client);
        self.inner.has_clients.store(true, Ordering::SeqCst);
    }

    fn settle_clients(&self) {
        if !self.inner.has_clients.load(Ordering::SeqCst) {
            return;
        }
        let clients = self.inner.clients.read().unwrap_or_else(|e| e.into_inner());
        for c in clients.iter().filter_map(Weak::upgrade) {
            c.settle();
        }
    }

    fn forget_in_clients(&self) {
        if !self.inner.has_clients.load(Ordering::SeqCst) {
            return;
        }
        let clients = self.inner.clients.read().unwrap_or_else(|e| e.into_inner());
        for c in clients.iter().filter_map(Weak::upgrade) {
            c.forget();
        }
    }

    /// Software: maps the pages of `[iova, iova + len)` to the physical
    /// (host) pages from `phys`, with `perm`. Costs no lab time (a PTE write
    /// is a memory store).
    ///
    /// `iova` and `phys` must be page-aligned and `len` a non-zero multiple of
    /// [`PAGE_SIZE`]; the IOVA range must end at or below 2^[`IOVA_BITS`];
    /// `perm` must allow something; no page of the range may be mapped
    /// already. Otherwise the error says which, and nothing is mapped.
    ///
    /// # Safety
    /// The host memory `[phys, phys + len)` must stay valid for the device's
    /// reads (if `perm.read`) and writes (if `perm.write`) until an
    /// [`unmap`](Iommu::unmap) of that range returns. While a DMA burst that
    /// uses the mapping runs (until software has seen it end), no Rust
    /// reference may hold memory the device may write, and no `&mut` memory
    /// it may read. (The lab never lets a
    /// device reach a page through a stale IOTLB entry, so no invalidation
    /// is needed for memory safety.)
    pub unsafe fn map(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuError> {
        check_range("iova", iova, len, IOVA_BITS)?;
        check_range("phys", phys, len, u64::BITS)?;
        if !perm.read && !perm.write {
            return Err(IommuError::NoPermission);
        }
        self.settle_clients();
        let table = &self.inner.table;
        let vpns = pages(iova, len);
        // One page: the table checks its one PTE as it writes it.
        let conflict = if vpns.end - vpns.start > 1 { table.first_mapped(vpns.clone()) } else { None };
        if let Some(vpn) = conflict {
            return Err(IommuError::AlreadyMapped { iova: vpn << PAGE_SHIFT });
        }
        if let Err(vpn) = table.map(vpns, phys >> PAGE_SHIFT, perm) {
            // Mapped already (or, for a range, mapped by another thread since the check): nothing is mapped.
            return Err(IommuError::AlreadyMapped { iova: vpn << PAGE_SHIFT });
        }
        Ok(())
    }

    /// Software: clears the PTEs of `[iova, iova + len)`. The IOTLB keeps
    /// what it cached until an invalidation: a device may still hit those
    /// entries (a stale hit, which the lab counts and keeps away from memory).
    ///
    /// The range rules of [`map`](Iommu::map) apply, and every page of it
    /// must be mapped; otherwise the error says which, and nothing is unmapped.
    pub fn unmap(&self, iova: u64, len: u64) -> Result<(), IommuError> {
        check_range("iova", iova, len, IOVA_BITS)?;
        self.settle_clients();
        let table = &self.inner.table;
        let vpns = pages(iova, len);
        // One page: the table checks its one PTE as it writes it.
        let conflict = if vpns.end - vpns.start > 1 { table.first_unmapped(vpns.clone()) } else { None };
        if let Some(vpn) = conflict {
            return Err(IommuError::NotMapped { iova: vpn << PAGE_SHIFT });
        }
        if let Err(vpn) = table.unmap(vpns) {
            // Not mapped (or, for a range, unmapped by another thread since the check): nothing is unmapped.
            return Err(IommuError::NotMapped { iova: vpn << PAGE_SHIFT });
        }
        self.forget_in_clients();
        Ok(())
    }

    /// Software: drops the IOTLB entries of every page that `[iova, iova + len)`
    /// touches (any alignment; `len` 0 drops nothing), then spins
    /// [`IommuConfig::invalidate_ns`] as the command's completion wait.
    pub fn invalidate(&self, iova: u64, len: u64) {
        self.settle_clients();
        {
            let mut st = self.inner.state.lock();
            if len > 0 {
                let last = iova.saturating_add(len - 1);
                st.iotlb.invalidate(iova >> PAGE_SHIFT, last >> PAGE_SHIFT);
            }
            st.stats.invalidations += 1;
        }
        self.forget_in_clients();
        delay_ns(self.inner.config.invalidate_ns);
    }

    /// Software: drops every IOTLB entry, then spins
    /// [`IommuConfig::invalidate_all_ns`] as the command's completion wait.
    pub fn invalidate_all(&self) {
        self.settle_clients();
        {
            let mut st = self.inner.state.lock();
            st.iotlb.clear();
            st.stats.invalidate_alls += 1;
        }
        self.forget_in_clients();
        delay_ns(self.inner.config.invalidate_all_ns);
    }

    /// Software: identity mode on or off. In identity mode a device address
    /// is the physical address: nothing is translated, walked or refused,
    /// and nothing is counted.
    ///
    /// A DMA engine decides when a burst starts whether its addresses are
    /// translated, and keeps to it until the burst ends (an IOVA must never
    /// become a host pointer in the middle of a burst). A driver that loads
    /// IOVAs into a descriptor must not let passthrough be switched on
    /// before that burst starts: the engine would take them for host
    /// addresses (see `SpiController::load_dma_descriptor`'s safety contract).
    pub fn set_passthrough(&self, on: bool) {
        self.inner.passthrough.store(on, Ordering::Release);
    }

    /// Whether the IOMMU is in identity mode.
    pub fn passthrough(&self) -> bool {
        self.inner.passthrough.load(Ordering::Acquire)
    }

    /// Device side: translates one access of a device (`write`: the device
    /// writes memory). Used by the lab's DMA engines; software never calls it.
    ///
    /// The IOTLB is looked up first. A hit whose cached permission allows the
    /// access is used; if the page table no longer maps that page to that
    /// physical page with that permission, the hit is stale
    /// ([`Translation::stale`]). A hit that does not allow the access is
    /// dropped and the table walked. A miss walks the table: a page that is
    /// not mapped, or not with the permission the access needs, is a
    /// [`DmaFault`] (logged); otherwise the translation is cached.
    pub fn translate(&self, iova: u64, write: bool) -> Result<Translation, DmaFault> {
        if self.passthrough() {
            return Ok(Translation { phys: iova, walk_ns: 0, stale: false });
        }
        self.translate_mapped(iova, write)
    }

    /// [`translate`](Iommu::translate) through the page table whatever the
    /// passthrough switch says: for an engine whose burst started translated.
    pub(crate) fn translate_mapped(&self, iova: u64, write: bool) -> Result<Translation, DmaFault> {
        let vpn = iova >> PAGE_SHIFT;
        let offset = iova & (PAGE_SIZE - 1);
        let mut st = self.inner.state.lock();
        if let Some(cached) = st.iotlb.lookup(vpn) {
            if cached.perm.allows(write) {
                st.stats.iotlb_hits += 1;
                let stale =
                    self.inner.table.get(vpn).is_none_or(|pte| pte.ppn != cached.ppn || !pte.perm.allows(write));
                if stale {
                    st.stats.stale_hits += 1;
                }
                return Ok(Translation { phys: (cached.ppn << PAGE_SHIFT) | offset, walk_ns: 0, stale });
            }
            st.iotlb.drop_page(vpn);
        }
        st.stats.iotlb_misses += 1;
        st.stats.walks += 1;
        let reason = match self.inner.table.get(vpn) {
            Some(pte) if pte.perm.allows(write) => {
                st.iotlb.fill(vpn, pte);
                let walk_ns = self.inner.config.walk_ns;
                return Ok(Translation { phys: (pte.ppn << PAGE_SHIFT) | offset, walk_ns, stale: false });
            }
            Some(_) => FaultReason::Permission,
            None => FaultReason::NotMapped,
        };
        let fault = DmaFault { iova, write, reason };
        st.stats.faults += 1;
        if st.faults.len() == FAULT_LOG_CAPACITY {
            st.faults.pop_front();
        }
        st.faults.push_back(fault);
        Err(fault)
    }

    /// Backdoor: the counters.
    pub fn stats(&self) -> IommuStats {
        let mut s = self.inner.state.lock().stats;
        s.mapped_pages = self.mapped_pages();
        s
    }

    /// Backdoor: the last [`FAULT_LOG_CAPACITY`] faults, oldest first; the
    /// log is left as it is.
    pub fn faults(&self) -> Vec<DmaFault> {
        self.inner.state.lock().faults.iter().copied().collect()
    }

    /// Backdoor: the logged faults, oldest first, emptying the log (the
    /// count in [`IommuStats::faults`] stays).
    pub fn take_faults(&self) -> Vec<DmaFault> {
        self.inner.state.lock().faults.drain(..).collect()
    }

    /// Backdoor: pages mapped now.
    pub fn mapped_pages(&self) -> u64 {
        self.inner.table.len() as u64
    }

    /// Backdoor: whether the page holding `iova` is mapped.
    pub fn is_mapped(&self, iova: u64) -> bool {
        self.inner.table.get(iova >> PAGE_SHIFT).is_some()
    }

    /// Backdoor: whether the IOTLB holds a translation of the page holding `iova`.
    pub fn is_cached(&self, iova: u64) -> bool {
        self.inner.state.lock().iotlb.contains(iova >> PAGE_SHIFT)
    }

    /// Backdoor: translations the IOTLB holds now.
    pub fn iotlb_len(&self) -> usize {
        self.inner.state.lock().iotlb.len()
    }
}
