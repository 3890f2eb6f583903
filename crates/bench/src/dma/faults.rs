//! Fault injection: DMA to addresses the IOMMU does not map.
//!
//! A layer between the domain and the lab IOMMU skips the page-table writes
//! of every `every`-th mapping, as a driver bug or a torn-down mapping
//! would leave it: the core believes the buffer mapped, the device's
//! accesses find no translation. Each such message must come back as a
//! typed [`SpiError::DmaFault`] naming an address of the skipped range,
//! and the lab IOMMU's fault log must hold the fault; the other messages
//! must still carry their data.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use wirespeed::dma::{IommuHw, IommuHwError, IommuMode, Perm};
use wirespeed::spi::{Policy, SpiError, Transfer};

use super::rig::DmaRig;

/// Skips the table writes of every `every`-th mapping.
struct SkipMaps {
    inner: Arc<dyn IommuHw>,
    every: u64,
    maps: AtomicU64,
    skipped: Mutex<Vec<(u64, u64)>>,
    /// The range of the latest skipped mapping (kept after its unmap).
    last_skipped: Mutex<Option<(u64, u64)>>,
}

impl SkipMaps {
    fn last_skipped_covers(&self, addr: u64) -> bool {
        self.last_skipped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|(iova, len)| (iova..iova + len).contains(&addr))
    }
    fn take_skipped(&self, iova: u64) -> bool {
        let mut s = self.skipped.lock().unwrap_or_else(|e| e.into_inner());
        match s.iter().position(|&(i, _)| i == iova) {
            Some(k) => {
                s.swap_remove(k);
                true
            }
            None => false,
        }
    }
}

impl IommuHw for SkipMaps {
    unsafe fn map_pages(&self, iova: u64, phys: u64, len: u64, perm: Perm) -> Result<(), IommuHwError> {
        if (self.maps.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(self.every) {
            self.skipped.lock().unwrap_or_else(|e| e.into_inner()).push((iova, len));
            *self.last_skipped.lock().unwrap_or_else(|e| e.into_inner()) = Some((iova, len));
            return Ok(());
        }
        // SAFETY: passed on from our caller's contract unchanged.
        unsafe { self.inner.map_pages(iova, phys, len, perm) }
    }
    fn unmap_pages(&self, iova: u64, len: u64) -> Result<(), IommuHwError> {
        if self.take_skipped(iova) {
            return Ok(());
        }
        self.inner.unmap_pages(iova, len)
    }
    fn invalidate(&self, iova: u64, len: u64) {
        self.inner.invalidate(iova, len);
    }
    fn invalidate_all(&self) {
        self.inner.invalidate_all();
    }
}

/// What the fault run found.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    pub messages: u64,
    /// Messages whose buffers had a mapping skipped.
    pub injected: u64,
    /// Of those, messages that failed with a typed DMA fault naming an address in the skipped range.
    pub caught: u64,
    /// Faults the lab IOMMU logged.
    pub iommu_logged: u64,
    /// Messages without a skipped mapping that failed or returned wrong data.
    pub collateral: u64,
}

/// Runs `messages` duplex messages of `size` bytes with every `every`-th mapping skipped.
pub fn run(size: usize, hz: u32, messages: u64, every: u64) -> Result<Faults, String> {
    let skip: Arc<Mutex<Option<Arc<SkipMaps>>>> = Arc::default();
    let slot = skip.clone();
    // The faults go into the transfers' own mappings: no bounce buffers
    // (mapped once, they would make every message fault or none).
    let policy = Policy { bounce_dma: false, ..Policy::fast() };
    let rig = DmaRig::new(IommuMode::Strict, hz, policy, move |inner| {
        let s = Arc::new(SkipMaps {
            inner,
            every: every.max(1),
            maps: AtomicU64::new(0),
            skipped: Mutex::default(),
            last_skipped: Mutex::default(),
        });
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
        s
    })?;
    let skip = skip.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or("the rig has no IOMMU")?;
    let tx: Vec<u8> = (0..size).map(|i| i as u8 ^ 0x5A).collect();
    let mut rx = vec![0u8; size];
    let mut f = Faults { messages, ..Faults::default() };
    for _ in 0..messages {
        let before = skip.maps.load(Ordering::Relaxed);
        rx.fill(0);
        let r = rig.dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]);
        let after = skip.maps.load(Ordering::Relaxed);
        let injected = (before + 1..=after).any(|n| n.is_multiple_of(skip.every));
        if injected {
            f.injected += 1;
        }
        match r {
            Err(SpiError::DmaFault { device_addr, .. }) if injected && skip.last_skipped_covers(device_addr) => {
                f.caught += 1
            }
            Ok(()) if !injected && rx == tx => {}
            _ => f.collateral += u64::from(!injected),
        }
    }
    f.iommu_logged = rig.iommu.as_ref().map_or(0, |i| i.stats().faults);
    Ok(f)
}
