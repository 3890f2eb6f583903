//! A DMA chunk's memory side: its TX words read from where the engine's
//! translation put them, and the device's answers written back there. Words
//! of up to 8 bits are handed to the device in place, a byte per word, when
//! the TX and RX ranges do not overlap: no copy in or out of the chunk.

use super::lane::Lane;

/// Where a chunk's words are in host memory.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChunkMemory {
    /// The TX words' host address; `None`: no TX buffer, or a page reached
    /// through a stale IOTLB entry (the device is sent zeros).
    pub tx: Option<u64>,
    /// The RX words' host address; `None`: the answers are dropped.
    pub rx: Option<u64>,
    /// Bytes a word takes in memory.
    pub word_bytes: u64,
}

/// A DMA chunk of one width: room for what is sent and the answers when
/// they cannot be used in place, and for the answers of a second selected
/// device, which nobody hears.
pub(super) struct Chunk<W> {
    mosi: Box<[W]>,
    miso: Box<[W]>,
    unheard: Box<[W]>,
}

impl<W: Lane> Chunk<W> {
    pub fn new() -> Chunk<W> {
        let buf = || vec![W::default(); W::CHUNK].into_boxed_slice();
        Chunk { mosi: buf(), miso: buf(), unheard: buf() }
    }

    /// The chunk's rooms, for words that are not in host memory (a FIFO
    /// burst's, [`Ended`](super::fifo_run::Ended)): what is sent, the
    /// answers, the unheard answers; [`Lane::CHUNK`] words each.
    pub fn rooms(&mut self) -> (&mut [W], &mut [W], &mut [W]) {
        (&mut self.mosi, &mut self.miso, &mut self.unheard)
    }

    /// Shifts `n` words (at most [`Lane::CHUNK`]) of the memory at `at`:
    /// `wires` gets what is sent, the room for the answers and the room
    /// for unheard ones; the answers are then stored less the bits outside `mask`.
    ///
    /// # Safety
    /// Each address in `at` must be valid for `n` words of
    /// `at.word_bytes` bytes, to read (TX) and to write (RX), with no
    /// reference holding them, for the duration of the call.
    pub unsafe fn shift(&mut self, n: usize, at: ChunkMemory, mask: u32, wires: impl FnOnce(&[W], &mut [W], &mut [W])) {
        let span = n * at.word_bytes as usize;
        let overlap = match (at.tx, at.rx) {
            (Some(t), Some(r)) => t < r + span as u64 && r < t + span as u64,
            _ => false,
        };
        // SAFETY: the caller's TX range; it is not written while this borrow
        // lives (RX is borrowed below only where the two do not overlap, or
        // after the last use of this one).
        let tx = at.tx.map(|a| unsafe { std::slice::from_raw_parts(a as *const u8, span) });
        let mosi: &[W] = match tx.and_then(|m| W::in_place(m)).filter(|_| !overlap) {
            Some(m) => m,
            None => {
                let mosi = &mut self.mosi[..n];
                match tx {
                    Some(m) => W::load(m, at.word_bytes, mosi),
                    None => mosi.fill(W::default()),
                }
                mosi
            }
        };
        // SAFETY: the caller's RX range, which no reference holds: the TX
        // borrow is live here only if it does not overlap (else `mosi` is the chunk's copy).
        let mut rx = at.rx.map(|a| unsafe { std::slice::from_raw_parts_mut(a as *mut u8, span) });
        let unheard = &mut self.unheard[..n];
        match rx.as_deref_mut().and_then(|m| W::in_place_mut(m)) {
            Some(miso) => {
                wires(mosi, miso, unheard);
                W::mask(miso, mask);
            }
            None => {
                let miso = &mut self.miso[..n];
                wires(mosi, miso, unheard);
                if let Some(m) = rx {
                    W::store(m, at.word_bytes, miso, mask);
                }
            }
        }
    }
}
