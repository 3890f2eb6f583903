//! A transfer's buffers mapped for the controller's DMA engine: mapped
//! before the transfer and unmapped after it (the kernel's `spi_map_msg`),
//! or, for a prepared message under policy `premapped_dma`, once for its
//! lifetime.

use super::controller::DmaAddrs;
use super::transfer::Data;
use crate::dma::{Direction, DmaDomain, RawMapping};

/// The mappings of one transfer's buffers (one for an in-place transfer).
#[derive(Debug)]
pub(crate) struct TransferMapping {
    tx: Option<RawMapping>,
    rx: Option<RawMapping>,
    in_place: bool,
}

impl TransferMapping {
    /// Maps `data`'s buffers in `domain`. On error nothing stays mapped.
    ///
    /// # Safety
    /// The buffers must stay valid, and untouched by the CPU while the
    /// device may write them, until [`unmap`](TransferMapping::unmap).
    pub(crate) unsafe fn map(domain: &DmaDomain, data: &Data<'_>) -> Result<TransferMapping, String> {
        let map = |addr: *const u8, len: usize, dir| {
            // SAFETY: forwarded from the caller.
            unsafe { domain.map_raw(addr as u64, len, dir) }.map_err(|e| e.to_string())
        };
        let (tx, rx, in_place) = match data {
            Data::Write(b) => (Some(map(b.as_ptr(), b.len(), Direction::ToDevice)?), None, false),
            Data::Read(b) => (None, Some(map(b.as_ptr(), b.len(), Direction::FromDevice)?), false),
            Data::InPlace(b) => (Some(map(b.as_ptr(), b.len(), Direction::Bidirectional)?), None, true),
            Data::Duplex(t, r) => {
                let tx = map(t.as_ptr(), t.len(), Direction::ToDevice)?;
                match map(r.as_ptr(), r.len(), Direction::FromDevice) {
                    Ok(rx) => (Some(tx), Some(rx), false),
                    Err(e) => {
                        let _ = domain.unmap_raw(tx);
                        return Err(e);
                    }
                }
            }
        };
        Ok(TransferMapping { tx, rx, in_place })
    }

    /// The device addresses the engine is programmed with.
    pub(crate) fn addrs(&self) -> DmaAddrs {
        let tx = self.tx.as_ref().map(RawMapping::device_addr);
        let rx = if self.in_place { tx } else { self.rx.as_ref().map(RawMapping::device_addr) };
        DmaAddrs { tx, rx }
    }

    /// Before the device reads what the CPU wrote.
    pub(crate) fn sync_for_device(&self) {
        if let Some(m) = &self.tx {
            m.sync_for_device();
        }
    }

    /// Before the CPU reads what the device wrote (a prepared message's RX, between runs).
    pub(crate) fn sync_for_cpu(&self) {
        if let Some(m) = self.rx.as_ref().or(if self.in_place { self.tx.as_ref() } else { None }) {
            m.sync_for_cpu();
        }
    }

    /// Unmaps both buffers (both are tried even if the first fails).
    pub(crate) fn unmap(self, domain: &DmaDomain) -> Result<(), String> {
        let tx = self.tx.map_or(Ok(()), |m| domain.unmap_raw(m));
        let rx = self.rx.map_or(Ok(()), |m| domain.unmap_raw(m));
        tx.and(rx).map_err(|e| e.to_string())
    }
}
