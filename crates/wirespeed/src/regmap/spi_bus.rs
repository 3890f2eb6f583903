//! [`SpiBus`]: the register-map bus over an SPI device of the SPI core.
//!
//! Every [`RegmapBus`] call is one SPI message:
//! - `write(&[cmd, data, crc])`: one transfer per non-empty segment, CS held
//!   across them (a gather write, no copying);
//! - `write_then_read(tx, rx)`: the write transfers, then one read transfer;
//! - `write_batch`: one transfer per window with `cs_change` between them
//!   (CS released for the device's `cs_inactive_ns`). Batches run as
//!   [`PreparedMessage`]s kept per *shape* (window lengths): a register map
//!   that repeats a multi-register write of the same layout pays validation
//!   and allocation once, then only copies its bytes in and runs;
//! - `submit_batch`: the prepared message goes to the core's async queue
//!   ([`SpiDevice::submit`]), so the pump thread keeps the bus busy while the
//!   register map lays out the next batch; [`RegmapBus::complete`] waits.

use super::bus::{Batch, RegmapBus};
use super::error::BusError;
use crate::spi::{OwnedTransfer, Pending, PreparedMessage, SpiDevice, SpiError, Transfer};
use std::fmt;

/// Segments per gather write carried without allocation.
const INLINE_SEGMENTS: usize = 4;
/// Prepared batch messages kept (by shape).
const PREPARED_KEPT: usize = 8;

/// A register-map bus over one SPI device.
pub struct SpiBus {
    dev: SpiDevice,
    /// Prepared batch messages by window lengths, most recently used last.
    prepared: Vec<(Vec<usize>, PreparedMessage)>,
    /// Submitted batches and their shapes, until [`RegmapBus::complete`].
    pending: Vec<(Pending, Vec<usize>)>,
    /// Scratch: the shape of the batch being laid out, to look it up.
    shape: Vec<usize>,
}

impl fmt::Debug for SpiBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpiBus").field("device", &self.dev).field("prepared", &self.prepared.len()).finish()
    }
}

fn bus_error(e: SpiError) -> BusError {
    BusError::Spi(e)
}

impl SpiBus {
    /// A bus over `dev`.
    pub fn new(dev: SpiDevice) -> SpiBus {
        SpiBus { dev, prepared: Vec::new(), pending: Vec::new(), shape: Vec::new() }
    }

    /// The SPI device.
    pub fn device(&self) -> &SpiDevice {
        &self.dev
    }

    /// A prepared message for `batch`, filled with its bytes, and its shape:
    /// a kept one with the shape vector it was kept with (a repeated batch
    /// allocates nothing), or a new one.
    fn message_for(&mut self, batch: Batch<'_>) -> Result<(PreparedMessage, Vec<usize>), BusError> {
        self.shape.clear();
        self.shape.extend(batch.windows().map(<[u8]>::len));
        let kept = self.prepared.iter().position(|(s, _)| *s == self.shape);
        let (shape, mut msg) = match kept {
            // `remove`, not `swap_remove`: the others keep their recency order.
            Some(i) => self.prepared.remove(i),
            None => {
                let n = batch.len();
                let transfers = batch
                    .windows()
                    .enumerate()
                    .map(|(i, w)| {
                        let t = OwnedTransfer::write(w.to_vec());
                        if i + 1 < n {
                            t.cs_change(None)
                        } else {
                            t
                        }
                    })
                    .collect();
                let msg = self.dev.prepare(transfers).map_err(|e| bus_error(SpiError::Invalid(e)))?;
                (self.shape.clone(), msg)
            }
        };
        for (i, w) in batch.windows().enumerate() {
            if let Some(tx) = msg.tx_mut(i) {
                tx.copy_from_slice(w);
            }
        }
        Ok((msg, shape))
    }

    fn keep(&mut self, msg: PreparedMessage, shape: Vec<usize>) {
        if self.prepared.len() >= PREPARED_KEPT {
            self.prepared.remove(0);
        }
        self.prepared.push((shape, msg));
    }
}

/// Non-empty segments, without allocating for up to [`INLINE_SEGMENTS`].
fn run_gather(dev: &SpiDevice, segments: &[&[u8]], rx: Option<&mut [u8]>) -> Result<(), SpiError> {
    let mut segs: [&[u8]; INLINE_SEGMENTS] = [&[]; INLINE_SEGMENTS];
    let mut n = 0;
    let mut overflow = false;
    for s in segments.iter().filter(|s| !s.is_empty()) {
        if n == INLINE_SEGMENTS {
            overflow = true;
            break;
        }
        segs[n] = s;
        n += 1;
    }
    if overflow {
        let mut v: Vec<Transfer<'_>> = segments.iter().filter(|s| !s.is_empty()).map(|s| Transfer::write(s)).collect();
        if let Some(rx) = rx {
            v.push(Transfer::read(rx));
        }
        return dev.sync(&mut v);
    }
    let w = Transfer::write;
    match (n, rx) {
        (0, None) => Ok(()),
        (1, None) => dev.sync(&mut [w(segs[0])]),
        (2, None) => dev.sync(&mut [w(segs[0]), w(segs[1])]),
        (3, None) => dev.sync(&mut [w(segs[0]), w(segs[1]), w(segs[2])]),
        (_, None) => dev.sync(&mut [w(segs[0]), w(segs[1]), w(segs[2]), w(segs[3])]),
        (0, Some(rx)) => dev.sync(&mut [Transfer::read(rx)]),
        (1, Some(rx)) => dev.sync(&mut [w(segs[0]), Transfer::read(rx)]),
        (2, Some(rx)) => dev.sync(&mut [w(segs[0]), w(segs[1]), Transfer::read(rx)]),
        (3, Some(rx)) => dev.sync(&mut [w(segs[0]), w(segs[1]), w(segs[2]), Transfer::read(rx)]),
        (_, Some(rx)) => dev.sync(&mut [w(segs[0]), w(segs[1]), w(segs[2]), w(segs[3]), Transfer::read(rx)]),
    }
}

impl RegmapBus for SpiBus {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        run_gather(&self.dev, segments, None).map_err(bus_error)
    }

    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        run_gather(&self.dev, tx, Some(rx)).map_err(bus_error)
    }

    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (mut msg, shape) = self.message_for(batch)?;
        let r = self.dev.run(&mut msg);
        self.keep(msg, shape);
        r.map_err(bus_error)
    }

    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (msg, shape) = self.message_for(batch)?;
        self.pending.push((self.dev.submit(msg), shape));
        Ok(())
    }

    fn complete(&mut self) -> Result<(), BusError> {
        let mut first_err = Ok(());
        // Drained in place, so the queue keeps its capacity.
        let mut pending = std::mem::take(&mut self.pending);
        for (p, shape) in pending.drain(..) {
            let (msg, r) = p.wait();
            self.keep(msg, shape);
            if first_err.is_ok() {
                first_err = r.map_err(bus_error);
            }
        }
        self.pending = pending;
        first_err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::lab::LabSpi;
    use crate::spi::{Bus, DeviceConfig, Policy};
    use wirespeed_lab::{devices::Loopback, Lab, LabConfig};

    #[test]
    fn the_least_recently_used_prepared_batch_is_the_one_evicted() {
        let lab = Lab::new(LabConfig::default());
        let block = lab.spi_controller(Default::default());
        block.attach(0, Loopback::new());
        let bus = Bus::new(LabSpi::new(block), Policy::fast());
        let mut spi = SpiBus::new(bus.device(DeviceConfig::new(0, 20_000_000)).unwrap());
        let bytes = [0u8; 16];
        let mut send = |len: usize| spi.write_batch(Batch::new(&bytes[..len], &[len]).unwrap()).unwrap();
        for len in 1..=PREPARED_KEPT {
            send(len);
        }
        send(1); // the oldest shape is used again: now the most recent
        send(PREPARED_KEPT + 1); // a new shape evicts the least recently used: 2
        let kept: Vec<usize> = spi.prepared.iter().map(|(shape, _)| shape[0]).collect();
        let mut expected: Vec<usize> = (3..=PREPARED_KEPT).collect();
        expected.extend([1, PREPARED_KEPT + 1]);
        assert_eq!(kept, expected, "most recently used last");
    }
}
