//! The IOMMU's page table: a 4-level radix tree of 512-entry tables, as
//! VT-d's second-level tables, whose leaves hold one 64-bit PTE per 4 KiB
//! I/O page.
//!
//! Software updates it as hardware page tables are updated: tables are
//! allocated on first use and installed with one compare-and-swap, and a
//! single page's PTE is checked and then written or cleared with one 64-bit
//! store, as a driver's page-table code does (Linux's io-pgtable-arm:
//! `-EEXIST` for a present entry, then the write). No lock is taken, and a
//! single page takes no read-modify-write, so threads mapping different
//! pages never wait for one another (seed 003: "a single 64-bit write of
//! the PTE").
//! Tables stay allocated
//! until the IOMMU is dropped (Linux also keeps a domain's page-table pages).
//! The walk through the upper levels costs the device
//! [`IommuConfig::walk_ns`](super::IommuConfig::walk_ns) of lab time; here
//! it is three pointer loads.
//!
//! Multi-page requests are all-or-nothing: the caller checks the range,
//! then each PTE is claimed with a compare-and-swap (a mark in the bits
//! below the page number) and only then published or cleared; if another
//! thread raced in between, the claims are undone and the request fails as
//! if its check had found the conflict. Single pages take no claim: a map
//! of a page that is mapped (or claimed), or an unmap of one that is not
//! mapped (or is being cleared), is refused, but two requests for the same
//! page at the same instant — two owners of one IOVA, the caller's bug —
//! are not guaranteed to be caught, as in a driver's page-table code.

use super::Perm;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// A present PTE: the physical page and what the device may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pte {
    /// Physical page number.
    pub ppn: u64,
    pub perm: Perm,
}

const PRESENT: u64 = 1 << 0;
const READ: u64 = 1 << 1;
const WRITE: u64 = 1 << 2;
/// A multi-page `map` claimed the PTE and has not published it (not present).
const PENDING: u64 = 1 << 3;
/// A multi-page `unmap` claimed the PTE and has not cleared it (still present).
const CLEARING: u64 = 1 << 4;
/// Bits below the physical page number (a host page number has at most 52 bits).
const PPN_SHIFT: u32 = 12;

impl Pte {
    fn encode(self) -> u64 {
        (self.ppn << PPN_SHIFT)
            | PRESENT
            | if self.perm.read { READ } else { 0 }
            | if self.perm.write { WRITE } else { 0 }
    }

    fn decode(raw: u64) -> Option<Pte> {
        (raw & PRESENT != 0)
            .then_some(Pte { ppn: raw >> PPN_SHIFT, perm: Perm { read: raw & READ != 0, write: raw & WRITE != 0 } })
    }
}

const BITS: u32 = 9;
const ENTRIES: usize = 1 << BITS;
const MASK: u64 = (ENTRIES as u64) - 1;

/// A last-level table: 512 PTEs. (No count of present PTEs: a counter all
/// mapping threads update would be one cache line they all fight for;
/// [`PageTable::len`] counts them instead.)
struct Leaf {
    ptes: [AtomicU64; ENTRIES],
}

/// An upper-level table: 512 pointers to tables of the level below (null: none).
struct Dir<T> {
    slots: [AtomicPtr<T>; ENTRIES],
}

/// Allocates a zeroed `T`.
///
/// # Safety
/// All-zero bytes must be a valid `T` (atomics and null pointers are).
unsafe fn zeroed_box<T>() -> Box<T> {
    // SAFETY: the caller's contract.
    unsafe { Box::<T>::new_zeroed().assume_init() }
}

impl<T> Dir<T> {
    fn get(&self, i: u64) -> Option<&T> {
        let p = self.slots[(i & MASK) as usize].load(Ordering::Acquire);
        // SAFETY: a non-null slot points to a table installed by `get_or_make`
        // and freed only when this table is dropped (`&self` outlives the result).
        unsafe { p.as_ref() }
    }

    /// The table at `i`, allocated (zeroed) and installed if there is none.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    unsafe fn get_or_make(&self, i: u64) -> &T {
        if let Some(t) = self.get(i) {
            return t;
        }
        // SAFETY: forwarded from the caller.
        let new = Box::into_raw(unsafe { zeroed_box::<T>() });
        let slot = &self.slots[(i & MASK) as usize];
        match slot.compare_exchange(std::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just installed; freed only when `self` is dropped.
            Ok(_) => unsafe { &*new },
            Err(theirs) => {
                // SAFETY: `new` was never shared; `theirs` is installed (as in `get`).
                unsafe {
                    drop(Box::from_raw(new));
                    &*theirs
                }
            }
        }
    }

    fn children(&self) -> impl Iterator<Item = &T> {
        // SAFETY: as in `get`.
        self.slots.iter().filter_map(|s| unsafe { s.load(Ordering::Acquire).as_ref() })
    }
}

impl<T> Drop for Dir<T> {
    fn drop(&mut self) {
        for s in &mut self.slots {
            let p = *s.get_mut();
            if !p.is_null() {
                // SAFETY: installed from `Box::into_raw` and owned by this table alone.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// The root: IOVA bits 47..39, then 38..30, 29..21, and the leaf's 20..12.
pub(super) struct PageTable {
    root: Box<Dir<Dir<Dir<Leaf>>>>,
}

impl Default for PageTable {
    fn default() -> PageTable {
        // SAFETY: a table of null pointers is all zeroes.
        PageTable { root: unsafe { zeroed_box() } }
    }
}

impl std::fmt::Debug for PageTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageTable").field("mapped", &self.len()).finish()
    }
}

impl PageTable {
    fn leaf(&self, vpn: u64) -> Option<&Leaf> {
        self.root.get(vpn >> (3 * BITS))?.get(vpn >> (2 * BITS))?.get(vpn >> BITS)
    }

    fn leaf_or_make(&self, vpn: u64) -> &Leaf {
        // SAFETY: tables and leaves are atomics and null pointers: all-zero is valid.
        unsafe { self.root.get_or_make(vpn >> (3 * BITS)).get_or_make(vpn >> (2 * BITS)).get_or_make(vpn >> BITS) }
    }

    fn slot(&self, vpn: u64) -> Option<&AtomicU64> {
        Some(&self.leaf(vpn)?.ptes[(vpn & MASK) as usize])
    }

    pub fn get(&self, vpn: u64) -> Option<Pte> {
        Pte::decode(self.slot(vpn)?.load(Ordering::Acquire))
    }

    /// Present PTEs (a snapshot; a scan of the leaves, for the backdoor).
    pub fn len(&self) -> usize {
        let leaves = self.root.children().flat_map(Dir::children).flat_map(Dir::children);
        leaves.map(|l| l.ptes.iter().filter(|p| p.load(Ordering::Relaxed) & PRESENT != 0).count()).sum()
    }

    /// The first page of `vpns` that is mapped, if any.
    pub fn first_mapped(&self, vpns: std::ops::Range<u64>) -> Option<u64> {
        vpns.into_iter().find(|&v| self.get(v).is_some())
    }

    /// The first page of `vpns` that is not mapped, if any.
    pub fn first_unmapped(&self, vpns: std::ops::Range<u64>) -> Option<u64> {
        vpns.into_iter().find(|&v| self.get(v).is_none())
    }

    /// The leaf slot of `vpn`, the table path allocated if needed.
    fn slot_or_make(&self, vpn: u64) -> &AtomicU64 {
        &self.leaf_or_make(vpn).ptes[(vpn & MASK) as usize]
    }

    /// Writes the PTEs of `vpns` to consecutive physical pages from `ppn`,
    /// each only if it is clear. If one is not (another thread mapped it
    /// since the caller checked), nothing is mapped and that page is
    /// returned. A multi-page range is first claimed PTE by PTE with a
    /// pending mark the device does not see as present, then published; a
    /// single page is checked and stored (see the module docs).
    pub fn map(&self, vpns: std::ops::Range<u64>, ppn: u64, perm: Perm) -> Result<(), u64> {
        let start = vpns.start;
        let pte = |vpn: u64| Pte { ppn: ppn + (vpn - start), perm }.encode();
        if vpns.end - start == 1 {
            let s = self.slot_or_make(start);
            if s.load(Ordering::Relaxed) != 0 {
                return Err(start);
            }
            s.store(pte(start), Ordering::Release);
            return Ok(());
        }
        for vpn in vpns.clone() {
            let s = self.slot_or_make(vpn);
            if s.compare_exchange(0, PENDING, Ordering::Acquire, Ordering::Relaxed).is_err() {
                for undo in start..vpn {
                    self.slot_or_make(undo).store(0, Ordering::Release);
                }
                return Err(vpn);
            }
        }
        for vpn in vpns {
            self.slot_or_make(vpn).store(pte(vpn), Ordering::Release);
        }
        Ok(())
    }

    /// Clears the PTEs of `vpns`, each only if it is present. If one is not
    /// (another thread unmapped it since the caller checked), nothing is
    /// unmapped and that page is returned. A multi-page range is first
    /// claimed PTE by PTE with a clearing mark (the PTE stays present for
    /// the device meanwhile), then cleared; a single page is checked and
    /// cleared (see the module docs).
    pub fn unmap(&self, vpns: std::ops::Range<u64>) -> Result<(), u64> {
        let start = vpns.start;
        // Present, and not being cleared by a multi-page unmap.
        let unmappable = |raw: u64| raw & PRESENT != 0 && raw & CLEARING == 0;
        if vpns.end - start == 1 {
            let s = self.slot(start).ok_or(start)?;
            if !unmappable(s.load(Ordering::Relaxed)) {
                return Err(start);
            }
            s.store(0, Ordering::Release);
            return Ok(());
        }
        // Marks an unmappable PTE as being cleared.
        let claim = |vpn: u64| -> bool {
            let Some(s) = self.slot(vpn) else { return false };
            let raw = s.load(Ordering::Relaxed);
            unmappable(raw) && s.compare_exchange(raw, raw | CLEARING, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        };
        for vpn in vpns.clone() {
            if !claim(vpn) {
                for undo in start..vpn {
                    if let Some(s) = self.slot(undo) {
                        s.fetch_and(!CLEARING, Ordering::Release);
                    }
                }
                return Err(vpn);
            }
        }
        for vpn in vpns {
            if let Some(s) = self.slot(vpn) {
                s.store(0, Ordering::Release);
            }
        }
        Ok(())
    }
}
