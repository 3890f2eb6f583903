//! Bounce buffers (policy `bounce_dma`): a bus's own pair of DMA buffers,
//! TX and RX, mapped once in its controller's domain for the bus's
//! lifetime. A transfer that is not prepared, short enough, behind an IOMMU
//! that translates, is copied into them, shifted from them and copied out,
//! instead of having its own buffers mapped and unmapped around it.
//!
//! Behind a translating IOMMU a mapping costs an IOVA allocation and
//! page-table writes, and its unmap the page-table clears, the IOVA's
//! release and, in strict mode, an IOTLB invalidation the caller waits for:
//! measured on the lab (4096-byte duplex transfers after a 33 ms wire time,
//! strict), about 2 µs to map both buffers and 12 µs to unmap them, where
//! copying in and out took about 1 and 1.5 µs. The copies grow with the
//! transfer and the mapping costs barely do: at that rate they would meet
//! near 45 KiB, and only transfers up to [`BOUNCE_MAX`] bytes, well below,
//! bounce (the cut-off is that margin, not a measured optimum). Lazy mode
//! has no invalidation to wait for, yet `bench spi --iommu lazy` still
//! measures bouncing cheaper. Without translation (no IOMMU, or identity) a
//! mapping is nearly free and nothing bounces.
//!
//! The device only ever sees the bounce pages, never the caller's memory
//! (as with Linux's swiotlb).

use super::controller::DmaAddrs;
use super::policy::Policy;
use super::transfer::Data;
use crate::dma::{Direction, DmaBuffer, DmaDomain, IommuMode, RawMapping};
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// The longest transfer that bounces, in bytes.
pub const BOUNCE_MAX: usize = 16 * 1024;

/// Whether a transfer of `len` bytes in `domain` bounces.
fn worth_it(domain: &DmaDomain, len: usize) -> bool {
    len <= BOUNCE_MAX && matches!(domain.mode(), IommuMode::Strict | IommuMode::Lazy)
}

/// A bus's bounce buffers: not made yet, made, or not to be had (their
/// allocation or mapping failed: its transfers map their own buffers).
#[derive(Debug, Default)]
pub(crate) enum BounceSlot {
    #[default]
    Untried,
    Ready(Bounce),
    Unavailable,
}

impl BounceSlot {
    /// The buffers for a transfer of `len` bytes that is not prepared, if
    /// `policy` and `domain` have it bounce (made on first use).
    pub(crate) fn get_for(&mut self, policy: &Policy, domain: &Arc<DmaDomain>, len: usize) -> Option<&mut Bounce> {
        if !policy.bounce_dma || !worth_it(domain, len) {
            return None;
        }
        if matches!(self, BounceSlot::Untried) {
            *self = Bounce::new(domain).map_or(BounceSlot::Unavailable, BounceSlot::Ready);
        }
        match self {
            BounceSlot::Ready(b) => Some(b),
            _ => None,
        }
    }
}

/// The pair of buffers and their mappings; unmapped on drop, and the
/// buffers freed only if both unmaps succeeded (a range whose unmap failed
/// may still be reachable by the device: its memory is never reused).
#[derive(Debug)]
pub(crate) struct Bounce {
    domain: Arc<DmaDomain>,
    tx: ManuallyDrop<DmaBuffer>,
    rx: ManuallyDrop<DmaBuffer>,
    tx_map: ManuallyDrop<RawMapping>,
    rx_map: ManuallyDrop<RawMapping>,
}

impl Bounce {
    /// Allocates and maps the pair in `domain`.
    pub(crate) fn new(domain: &Arc<DmaDomain>) -> Result<Bounce, crate::dma::DmaError> {
        let (tx, rx) = (DmaBuffer::new(BOUNCE_MAX)?, DmaBuffer::new(BOUNCE_MAX)?);
        let (tx, rx) = (ManuallyDrop::new(tx), ManuallyDrop::new(rx));
        // SAFETY: `Bounce` owns both buffers and unmaps them in `drop`
        // before they are freed; the CPU touches them only between
        // transfers (`load`, `unload`), while the engine is stopped.
        let tx_map = unsafe { domain.map_raw(tx.phys(), BOUNCE_MAX, Direction::ToDevice) }?;
        // SAFETY: as above.
        let rx_map = match unsafe { domain.map_raw(rx.phys(), BOUNCE_MAX, Direction::FromDevice) } {
            Ok(m) => m,
            Err(e) => {
                if domain.unmap_raw(tx_map).is_ok() {
                    drop(ManuallyDrop::into_inner(tx));
                }
                drop(ManuallyDrop::into_inner(rx));
                return Err(e);
            }
        };
        let (tx_map, rx_map) = (ManuallyDrop::new(tx_map), ManuallyDrop::new(rx_map));
        Ok(Bounce { domain: domain.clone(), tx, rx, tx_map, rx_map })
    }

    /// Copies what `data` sends into the TX buffer and returns the device
    /// addresses to shift `data` from and into. `data` is at most [`BOUNCE_MAX`] bytes.
    pub(crate) fn load(&mut self, data: &Data<'_>) -> DmaAddrs {
        let sent = data.tx();
        if let Some(b) = sent {
            self.tx.as_mut_slice()[..b.len()].copy_from_slice(b);
            self.tx_map.sync_for_device();
        }
        let received = !matches!(data, Data::Write(_));
        DmaAddrs { tx: sent.map(|_| self.tx_map.device_addr()), rx: received.then(|| self.rx_map.device_addr()) }
    }

    /// After the engine stopped: copies what was received into `data`.
    pub(crate) fn unload(&self, data: &mut Data<'_>) {
        self.rx_map.sync_for_cpu();
        if let Some(into) = data.rx_mut() {
            let n = into.len();
            into.copy_from_slice(&self.rx.as_slice()[..n]);
        }
    }
}

impl Drop for Bounce {
    fn drop(&mut self) {
        // SAFETY: each mapping and each buffer is taken or dropped once,
        // here, and never used after.
        unsafe {
            let tx_unmapped = self.domain.unmap_raw(ManuallyDrop::take(&mut self.tx_map)).is_ok();
            let rx_unmapped = self.domain.unmap_raw(ManuallyDrop::take(&mut self.rx_map)).is_ok();
            if tx_unmapped {
                ManuallyDrop::drop(&mut self.tx);
            }
            if rx_unmapped {
                ManuallyDrop::drop(&mut self.rx);
            }
        }
    }
}
