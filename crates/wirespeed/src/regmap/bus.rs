//! The bus under a register map: what a register map needs from a transport.
//!
//! A *window* is one chip-select window (one device command): the bytes of a
//! write, or a command followed by read-back. A *message* is what the bus
//! carries as one unit — on SPI one message with several transfers, on the
//! [`RamBus`](super::RamBus) one recorded access. Every method of
//! [`RegmapBus`] is exactly one message, so a gather write
//! (`write(&[&cmd, &data, &crc])`) or several coalesced register writes
//! ([`RegmapBus::write_batch`]) cost one message, never one per piece.

use super::error::BusError;

/// Several write windows carried as one message: a byte buffer cut at `ends`
/// (window `i` is `bytes[ends[i-1]..ends[i]]`). Built by the register map in
/// reused scratch space, so building one allocates nothing.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    bytes: &'a [u8],
    start: usize,
    ends: &'a [usize],
}

impl<'a> Batch<'a> {
    /// A batch from a buffer and the end offset of each window (ascending,
    /// the last equal to `bytes.len()`); `None` if `ends` does not fit.
    pub fn new(bytes: &'a [u8], ends: &'a [usize]) -> Option<Batch<'a>> {
        let ascending = ends.windows(2).all(|w| w[0] <= w[1]);
        let fits = ends.last().map_or(bytes.is_empty(), |&e| e == bytes.len());
        (ascending && fits).then_some(Batch { bytes, start: 0, ends })
    }

    /// The windows of `bytes` from `start` cut at `ends` (absolute offsets,
    /// checked by the caller).
    pub(crate) fn part(bytes: &'a [u8], start: usize, ends: &'a [usize]) -> Batch<'a> {
        debug_assert!(ends.iter().all(|&e| e >= start && e <= bytes.len()));
        Batch { bytes, start, ends }
    }

    /// Number of windows.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    /// Whether the batch has no window.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    /// Total bytes of all windows.
    pub fn total_bytes(&self) -> usize {
        self.ends.last().map_or(0, |&e| e - self.start)
    }
    /// The windows in order.
    pub fn windows(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (bytes, start, ends) = (self.bytes, self.start, self.ends);
        ends.iter().enumerate().map(move |(i, &end)| {
            let from = if i == 0 { start } else { ends[i - 1] };
            &bytes[from..end]
        })
    }
}

/// A transport a register map can run on.
///
/// Implementations must carry each call as **one** message. `Send` so that a
/// [`Regmap`](super::Regmap) can be shared between threads (it serializes bus
/// access itself).
pub trait RegmapBus: Send {
    /// One window: the segments written back to back (gather write).
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError>;

    /// One window: the `tx` segments written, then `rx.len()` bytes read.
    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError>;

    /// Several write windows (chip select released between them) as one
    /// message. The default sends each window as its own message: override it
    /// when the transport can do better (SPI: one message, `cs_change`).
    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        for w in batch.windows() {
            self.write(&[w])?;
        }
        Ok(())
    }

    /// Submits a batch that may complete later (the bus is kept busy while the
    /// caller prepares the next one). Errors may be reported here or by
    /// [`complete`](RegmapBus::complete). Default: [`write_batch`](RegmapBus::write_batch), synchronously.
    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        self.write_batch(batch)
    }

    /// Waits until everything submitted has completed; reports the first error.
    fn complete(&mut self) -> Result<(), BusError> {
        Ok(())
    }

    /// Largest message in bytes (all windows together), if the bus has a limit.
    fn max_message_bytes(&self) -> Option<usize> {
        None
    }
}

impl<B: RegmapBus + ?Sized> RegmapBus for Box<B> {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        (**self).write(segments)
    }
    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        (**self).write_then_read(tx, rx)
    }
    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        (**self).write_batch(batch)
    }
    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        (**self).submit_batch(batch)
    }
    fn complete(&mut self) -> Result<(), BusError> {
        (**self).complete()
    }
    fn max_message_bytes(&self) -> Option<usize> {
        (**self).max_message_bytes()
    }
}
