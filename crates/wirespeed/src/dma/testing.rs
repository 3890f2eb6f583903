//! [`FakeIommu`]: a software IOMMU for tests — a page table and an IOTLB in
//! hash maps, call counters, fault injection, and a check that no IOVA is
//! mapped again while a stale IOTLB entry could still translate it.

use super::error::{IommuHwError, IommuHwErrorKind};
use super::hw::{IommuHw, Perm};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

const PAGE: u64 = super::PAGE_SIZE as u64;

/// How often each [`IommuHw`] method was called.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FakeCalls {
    /// `map_pages` calls (failed ones included).
    pub map: u64,
    /// `unmap_pages` calls.
    pub unmap: u64,
    /// `invalidate` calls.
    pub invalidate: u64,
    /// `invalidate_all` calls.
    pub invalidate_all: u64,
    /// `set_passthrough` calls.
    pub set_passthrough: u64,
}

impl FakeCalls {
    /// Calls of any method.
    pub fn total(&self) -> u64 {
        self.map + self.unmap + self.invalidate + self.invalidate_all + self.set_passthrough
    }
}

#[derive(Debug, Default)]
struct State {
    /// vpn -> (ppn, perm)
    table: HashMap<u64, (u64, Perm)>,
    /// vpn -> (ppn, perm): what a device translated and the IOTLB kept.
    iotlb: HashMap<u64, (u64, Perm)>,
    calls: FakeCalls,
    passthrough: bool,
    /// `map_pages` calls to let through before failing (None: never fail).
    fail_map_after: Option<u64>,
    fail_unmap: bool,
    /// Maps over a page whose stale IOTLB entry was still there.
    stale_reuses: u64,
}

/// A software IOMMU (see the module docs). Thread-safe (one mutex).
#[derive(Debug, Default)]
pub struct FakeIommu {
    state: Mutex<State>,
}

fn check(iova: u64, len: u64) -> Result<(), IommuHwError> {
    if !iova.is_multiple_of(PAGE) || len == 0 || !len.is_multiple_of(PAGE) || iova.checked_add(len).is_none() {
        return Err(IommuHwError::new(
            IommuHwErrorKind::InvalidRange,
            format!("range {iova:#x} + {len:#x}: must be page-aligned and non-empty"),
        ));
    }
    Ok(())
}

impl FakeIommu {
    /// An empty table and IOTLB.
    pub fn new() -> FakeIommu {
        FakeIommu::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls so far.
    pub fn calls(&self) -> FakeCalls {
        self.lock().calls
    }

    /// Pages with a PTE.
    pub fn mapped_pages(&self) -> usize {
        self.lock().table.len()
    }

    /// Whether the page of `iova` has a PTE.
    pub fn is_mapped(&self, iova: u64) -> bool {
        self.lock().table.contains_key(&(iova / PAGE))
    }

    /// Entries in the IOTLB.
    pub fn iotlb_len(&self) -> usize {
        self.lock().iotlb.len()
    }

    /// Whether the IOTLB holds a translation of the page of `iova`.
    pub fn iotlb_contains(&self, iova: u64) -> bool {
        self.lock().iotlb.contains_key(&(iova / PAGE))
    }

    /// A device access: the physical address of `iova` (IOTLB first, then
    /// the table, whose entry the IOTLB then keeps); `None` is a fault.
    pub fn translate(&self, iova: u64) -> Option<u64> {
        let mut st = self.lock();
        if st.passthrough {
            return Some(iova);
        }
        let vpn = iova / PAGE;
        let pte = match st.iotlb.get(&vpn) {
            Some(&pte) => pte,
            None => {
                let pte = *st.table.get(&vpn)?;
                st.iotlb.insert(vpn, pte);
                pte
            }
        };
        Some(pte.0 * PAGE + iova % PAGE)
    }

    /// Whether passthrough is on.
    pub fn passthrough(&self) -> bool {
        self.lock().passthrough
    }

    /// Lets `n` more `map_pages` calls through, then fails every one.
    pub fn fail_map_after(&self, n: u64) {
        self.lock().fail_map_after = Some(n);
    }

    /// Makes `unmap_pages` fail (or work again).
    pub fn fail_unmap(&self, on: bool) {
        self.lock().fail_unmap = on;
    }

    /// Maps of a page the IOTLB still held a stale translation of (must stay 0).
    pub fn stale_reuses(&self) -> u64 {
        self.lock().stale_reuses
    }
}

impl IommuHw for FakeIommu {
    unsafe fn map_pages(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuHwError> {
        let mut st = self.lock();
        st.calls.map += 1;
        check(iova, len)?;
        if !phys.is_multiple_of(PAGE) {
            return Err(IommuHwError::new(IommuHwErrorKind::InvalidRange, format!("phys {phys:#x} not page-aligned")));
        }
        if !perm.read && !perm.write {
            return Err(IommuHwError::new(IommuHwErrorKind::Permission, "neither read nor write"));
        }
        if let Some(n) = st.fail_map_after.as_mut() {
            if *n == 0 {
                return Err(IommuHwError::new(IommuHwErrorKind::Other, "injected map failure"));
            }
            *n -= 1;
        }
        let first = iova / PAGE;
        let n = len / PAGE;
        if let Some(v) = (first..first + n).find(|v| st.table.contains_key(v)) {
            return Err(IommuHwError::new(IommuHwErrorKind::AlreadyMapped, format!("page {:#x}", v * PAGE)));
        }
        for i in 0..n {
            if st.iotlb.contains_key(&(first + i)) {
                st.stale_reuses += 1;
            }
            st.table.insert(first + i, (phys / PAGE + i, perm));
        }
        Ok(())
    }

    fn unmap_pages(&self, iova: u64, len: u64) -> Result<(), IommuHwError> {
        let mut st = self.lock();
        st.calls.unmap += 1;
        check(iova, len)?;
        if st.fail_unmap {
            return Err(IommuHwError::new(IommuHwErrorKind::Other, "injected unmap failure"));
        }
        let first = iova / PAGE;
        let n = len / PAGE;
        if let Some(v) = (first..first + n).find(|v| !st.table.contains_key(v)) {
            return Err(IommuHwError::new(IommuHwErrorKind::NotMapped, format!("page {:#x}", v * PAGE)));
        }
        for v in first..first + n {
            st.table.remove(&v);
        }
        Ok(())
    }

    fn invalidate(&self, iova: u64, len: u64) {
        let mut st = self.lock();
        st.calls.invalidate += 1;
        if len == 0 {
            return;
        }
        let first = iova / PAGE;
        let last = iova.saturating_add(len - 1) / PAGE;
        if last - first < st.iotlb.len() as u64 {
            for v in first..=last {
                st.iotlb.remove(&v);
            }
        } else {
            st.iotlb.retain(|v, _| *v < first || *v > last);
        }
    }

    fn invalidate_all(&self) {
        let mut st = self.lock();
        st.calls.invalidate_all += 1;
        st.iotlb.clear();
    }

    fn set_passthrough(&self, on: bool) {
        let mut st = self.lock();
        st.calls.set_passthrough += 1;
        st.passthrough = on;
    }
}
