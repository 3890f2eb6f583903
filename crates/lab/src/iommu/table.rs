//! The IOMMU's page table: one PTE per mapped 4 KiB I/O page.
//!
//! Only the leaves are modelled (a map from I/O page number to PTE); the
//! walk through the upper levels is a cost ([`IommuConfig::walk_ns`](super::IommuConfig::walk_ns)),
//! not a structure.

use super::Perm;
use std::collections::HashMap;

/// A present PTE: the physical page and what the device may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pte {
    /// Physical page number.
    pub ppn: u64,
    pub perm: Perm,
}

#[derive(Debug, Default)]
pub(super) struct PageTable {
    ptes: HashMap<u64, Pte>,
}

impl PageTable {
    pub fn get(&self, vpn: u64) -> Option<Pte> {
        self.ptes.get(&vpn).copied()
    }

    pub fn len(&self) -> usize {
        self.ptes.len()
    }

    /// The first page of `vpns` that is mapped, if any.
    pub fn first_mapped(&self, vpns: std::ops::Range<u64>) -> Option<u64> {
        vpns.into_iter().find(|v| self.ptes.contains_key(v))
    }

    /// The first page of `vpns` that is not mapped, if any.
    pub fn first_unmapped(&self, vpns: std::ops::Range<u64>) -> Option<u64> {
        vpns.into_iter().find(|v| !self.ptes.contains_key(v))
    }

    /// Writes the PTEs of `vpns` to consecutive physical pages from `ppn`.
    pub fn map(&mut self, vpns: std::ops::Range<u64>, ppn: u64, perm: Perm) {
        for (i, vpn) in vpns.enumerate() {
            self.ptes.insert(vpn, Pte { ppn: ppn + i as u64, perm });
        }
    }

    /// Clears the PTEs of `vpns`.
    pub fn unmap(&mut self, vpns: std::ops::Range<u64>) {
        for vpn in vpns {
            self.ptes.remove(&vpn);
        }
    }
}
