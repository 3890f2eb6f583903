//! A prepared message's buffer: the heap memory it was given, or, once the
//! message is premapped for DMA, page-aligned DMA memory it moved to.
//!
//! Moving costs a copy and a page or more of memory per buffer, once, when
//! the message is prepared. What it buys at every run: the buffer starts on
//! a page, so an IOMMU translates as few pages as its length needs (a
//! 4096-byte heap buffer usually straddles two), and the memory is locked
//! where the system allows it.

use crate::dma::DmaBuffer;
use std::ops::{Deref, DerefMut};

#[derive(Debug)]
pub(crate) enum PreparedBuffer {
    Heap(Vec<u8>),
    Dma(DmaBuffer),
}

impl PreparedBuffer {
    /// Moves the bytes into DMA memory, if not there yet. Best effort: if
    /// that memory cannot be had, the bytes stay where they are.
    pub(crate) fn move_to_dma(&mut self) {
        if let PreparedBuffer::Heap(v) = self {
            if let Ok(mut b) = DmaBuffer::new(v.len()) {
                b.as_mut_slice().copy_from_slice(v);
                *self = PreparedBuffer::Dma(b);
            }
        }
    }
}

impl Deref for PreparedBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PreparedBuffer::Heap(v) => v,
            PreparedBuffer::Dma(b) => b.as_slice(),
        }
    }
}

impl DerefMut for PreparedBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            PreparedBuffer::Heap(v) => v,
            PreparedBuffer::Dma(b) => b.as_mut_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_to_dma_keeps_the_bytes_and_starts_them_on_a_page() {
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 31) as u8).collect();
        let mut b = PreparedBuffer::Heap(bytes.clone());
        b.move_to_dma();
        assert!(matches!(b, PreparedBuffer::Dma(_)));
        assert_eq!(&*b, &bytes[..]);
        assert_eq!(b.as_ptr() as usize % crate::dma::PAGE_SIZE, 0);
        b[4999] = 7;
        assert_eq!(b[4999], 7);
    }
}
