//! Finished FIFO words on their way to the devices: gathered into runs of
//! words back to back, each run handed to the selected devices (and the
//! analyser) in one call, so that a burst costs the emulation a call a run
//! rather than one a word. A run is what the words one by one would have
//! shown the devices: the same words, each at its own instant. The run is
//! gathered in the block's 32-bit DMA [`Chunk`]: a FIFO burst and a DMA
//! burst never run together.

use super::dma_memory::Chunk;
use super::lane::Lane;
use super::model::{word_mask, Wires};
use std::collections::VecDeque;
use wirespeed_time::Instant;

/// FIFO words that ended, gathered into runs of words back to back so
/// that each run reaches the devices (and the analyser) in one call.
pub(super) struct Ended<'a> {
    wires: Wires<'a>,
    room: &'a mut Chunk<u32>,
    rx: &'a mut VecDeque<u32>,
    bits: u8,
    word_ns: u64,
    /// Words in the current run, the first starting at `start`; the next
    /// joins it if it starts at `next`.
    n: usize,
    start: Instant,
    next: Instant,
    /// Words handed over so far.
    count: u32,
}

impl<'a> Ended<'a> {
    /// Words of `bits` bits, `word_ns` each, ending on `wires`; their
    /// answers go to `rx`.
    pub(super) fn new(
        wires: Wires<'a>,
        room: &'a mut Chunk<u32>,
        rx: &'a mut VecDeque<u32>,
        (bits, word_ns): (u8, u64),
    ) -> Ended<'a> {
        Ended { wires, room, rx, bits, word_ns, n: 0, start: Instant::ZERO, next: Instant::ZERO, count: 0 }
    }

    /// A word that shifted from `start` to `end`.
    pub(super) fn word(&mut self, mosi: u32, start: Instant, end: Instant) {
        if self.n == u32::CHUNK || (self.n > 0 && start != self.next) {
            self.hand_over();
        }
        if self.n == 0 {
            self.start = start;
        }
        self.room.rooms().0[self.n] = mosi;
        self.n += 1;
        self.next = end;
    }

    /// Hands over the last run; says how many words were handed over in all.
    pub(super) fn finish(mut self) -> u32 {
        self.hand_over();
        self.count
    }

    /// The current run to the devices, their answers to the RX FIFO.
    fn hand_over(&mut self) {
        let n = self.n;
        if n == 0 {
            return;
        }
        let (mosi, miso, unheard) = self.room.rooms();
        self.wires.shift(&mosi[..n], &mut miso[..n], &mut unheard[..n], (self.bits, self.start, self.word_ns));
        let mask = word_mask(self.bits);
        self.rx.extend(miso[..n].iter().map(|&w| w & mask));
        self.count += n as u32;
        self.n = 0;
    }
}
