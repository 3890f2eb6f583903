//! The two widths the block works a DMA chunk in: a byte per word for
//! words of up to 8 bits (most SPI traffic: a chunk of them is the buffer's
//! own bytes, never widened), a `u32` per word for wider ones. For each:
//! how a device answers a chunk, and how a chunk is read from memory and
//! written back.

use super::SpiDeviceModel;
use wirespeed_time::Instant;

/// One word of a DMA chunk, as the block holds it.
pub(super) trait Lane: Copy + Default + Into<u32> + 'static {
    /// The most words one chunk of this width holds.
    const CHUNK: usize;

    /// The low bits of `w` that this width holds (a device's answer to a
    /// single word; bits above the word's are masked by whoever keeps it).
    fn from_word(w: u32) -> Self;

    /// `dev`'s answers to the words of a chunk of more than one word.
    fn exchange_burst(dev: &mut dyn SpiDeviceModel, mosi: &[Self], miso: &mut [Self], timing: (u8, Instant, u64));

    /// `memory` as words of this width, if the words lie in memory as this
    /// width holds them (a byte lane's do: it holds words of one byte).
    fn in_place(memory: &[u8]) -> Option<&[Self]>;

    /// [`in_place`](Lane::in_place), to write.
    fn in_place_mut(memory: &mut [u8]) -> Option<&mut [Self]>;

    /// Reads `words.len()` consecutive words of `word_bytes` bytes each
    /// (native endian) from `memory`: 1 for a byte lane, 2 or 4 for a `u32` one.
    fn load(memory: &[u8], word_bytes: u64, words: &mut [Self]);

    /// Writes the low `word_bytes` bytes of each of `words`, less the bits
    /// outside `mask`, to consecutive words of `memory`.
    fn store(memory: &mut [u8], word_bytes: u64, words: &[Self], mask: u32);

    /// Clears the bits outside `mask` of each of `words`.
    fn mask(words: &mut [Self], mask: u32);
}

impl Lane for u8 {
    /// A page: a chunk never crosses one, so a page of bytes moves at once.
    const CHUNK: usize = crate::iommu::PAGE_SIZE as usize;

    fn from_word(w: u32) -> u8 {
        w as u8
    }

    fn exchange_burst(
        dev: &mut dyn SpiDeviceModel,
        mosi: &[u8],
        miso: &mut [u8],
        (bits, at, word_ns): (u8, Instant, u64),
    ) {
        dev.exchange_bytes(mosi, miso, bits, at, word_ns);
    }

    fn in_place(memory: &[u8]) -> Option<&[u8]> {
        Some(memory)
    }

    fn in_place_mut(memory: &mut [u8]) -> Option<&mut [u8]> {
        Some(memory)
    }

    fn load(memory: &[u8], _word_bytes: u64, words: &mut [u8]) {
        words.copy_from_slice(&memory[..words.len()]);
    }

    fn store(memory: &mut [u8], _word_bytes: u64, words: &[u8], mask: u32) {
        let memory = &mut memory[..words.len()];
        memory.copy_from_slice(words);
        u8::mask(memory, mask);
    }

    fn mask(words: &mut [u8], mask: u32) {
        let m = mask as u8;
        if m != u8::MAX {
            words.iter_mut().for_each(|w| *w &= m);
        }
    }
}

impl Lane for u32 {
    const CHUNK: usize = 256;

    fn from_word(w: u32) -> u32 {
        w
    }

    fn exchange_burst(
        dev: &mut dyn SpiDeviceModel,
        mosi: &[u32],
        miso: &mut [u32],
        (bits, at, word_ns): (u8, Instant, u64),
    ) {
        dev.exchange_burst(mosi, miso, bits, at, word_ns);
    }

    /// Never: a `u32` lane holds words of 2 or 4 bytes, whose alignment
    /// in memory is not a `u32`'s.
    fn in_place(_memory: &[u8]) -> Option<&[u32]> {
        None
    }

    fn in_place_mut(_memory: &mut [u8]) -> Option<&mut [u32]> {
        None
    }

    /// The width is matched once per chunk, and each width's loop is one
    /// the compiler vectorizes.
    fn load(memory: &[u8], word_bytes: u64, words: &mut [u32]) {
        debug_assert!(word_bytes == 2 || word_bytes == 4, "words of one byte go in a byte lane");
        match word_bytes {
            2 => words
                .iter_mut()
                .zip(memory.chunks_exact(2))
                .for_each(|(w, c)| *w = u32::from(u16::from_ne_bytes([c[0], c[1]]))),
            _ => words
                .iter_mut()
                .zip(memory.chunks_exact(4))
                .for_each(|(w, c)| *w = u32::from_ne_bytes([c[0], c[1], c[2], c[3]])),
        }
    }

    fn store(memory: &mut [u8], word_bytes: u64, words: &[u32], mask: u32) {
        debug_assert!(word_bytes == 2 || word_bytes == 4, "words of one byte go in a byte lane");
        match word_bytes {
            2 => memory
                .chunks_exact_mut(2)
                .zip(words)
                .for_each(|(d, &w)| d.copy_from_slice(&((w & mask) as u16).to_ne_bytes())),
            _ => memory.chunks_exact_mut(4).zip(words).for_each(|(d, &w)| d.copy_from_slice(&(w & mask).to_ne_bytes())),
        }
    }

    fn mask(words: &mut [u32], mask: u32) {
        words.iter_mut().for_each(|w| *w &= mask);
    }
}
