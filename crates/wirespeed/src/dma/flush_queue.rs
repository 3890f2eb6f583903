//! A thread's lazy flush queue: unmapped IOVA ranges waiting for the IOTLB
//! flush that makes them safe to reuse (Linux `struct iova_fq`).
//!
//! Each entry records the domain's flush-start count when it was queued; it
//! may be freed once a flush that *started later* has finished
//! (`finished > entry.gen`), whoever ran it (Linux's
//! `fq_flush_start_cnt`/`fq_flush_finish_cnt`). The ring is allocated once,
//! when the thread first unmaps in the domain, and never grows.

use super::buffer::Region;
use std::sync::Arc;

/// Memory an entry keeps allocated until its flush (buffers the device
/// could still reach through a stale IOTLB entry).
#[derive(Debug)]
#[allow(dead_code)] // the references are held, never read: dropping them is the point
pub(crate) enum Keep {
    /// Nothing (raw mappings: the caller's memory).
    Nothing,
    /// One buffer's memory.
    One(Arc<Region>),
    /// A scatter-gather mapping's buffers.
    Many(Vec<Arc<Region>>),
}

#[derive(Debug)]
struct Entry {
    iova: u64,
    pages: u64,
    gen: u64,
    keep: Keep,
}

/// A ring of `cap` entries, allocated whole at creation (an empty place holds
/// `Keep::Nothing`). An entry is written into its place field by field: built
/// whole on the stack and copied in, its 8-byte field stores stalled the
/// 16-byte loads of the copy (store-to-load forwarding; measured with `perf`).
#[derive(Debug)]
pub(crate) struct FlushQueue {
    ring: Box<[Entry]>,
    head: usize,
    len: usize,
}

impl FlushQueue {
    pub(crate) fn new(cap: usize) -> FlushQueue {
        let empty = || Entry { iova: 0, pages: 0, gen: 0, keep: Keep::Nothing };
        FlushQueue { ring: (0..cap).map(|_| empty()).collect(), head: 0, len: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.ring.len()
    }

    /// The place `i` entries after the head.
    fn place(&self, i: usize) -> usize {
        let at = self.head + i;
        if at >= self.ring.len() {
            at - self.ring.len()
        } else {
            at
        }
    }

    /// Queues an entry (the caller made room: `!is_full()`).
    pub(crate) fn push(&mut self, iova: u64, pages: u64, gen: u64, keep: Keep) {
        debug_assert!(!self.is_full());
        let at = self.place(self.len);
        let e = &mut self.ring[at];
        e.iova = iova;
        e.pages = pages;
        e.gen = gen;
        e.keep = keep;
        self.len += 1;
    }

    /// Whether the oldest entry is covered by a finished flush (`gen < finished`).
    pub(crate) fn front_done(&self, finished: u64) -> bool {
        self.len > 0 && self.ring[self.head].gen < finished
    }

    /// Pops the entries a finished flush covers (`gen < finished`), oldest
    /// first, handing each range to `free` as `(iova, pages)`; the memory the
    /// entry kept goes right after (no translation of it is left). Entries
    /// are queued in `gen` order.
    pub(crate) fn pop_done(&mut self, finished: u64, mut free: impl FnMut(u64, u64)) {
        while self.front_done(finished) {
            let e = &mut self.ring[self.head];
            let keep = std::mem::replace(&mut e.keep, Keep::Nothing);
            let (iova, pages) = (e.iova, e.pages);
            self.head = self.place(1);
            self.len -= 1;
            free(iova, pages);
            drop(keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FlushQueue, Keep};

    /// Entries leave in order, only once covered, across the ring's wrap.
    #[test]
    fn pops_covered_entries_in_order_across_the_wrap() {
        let mut q = FlushQueue::new(3);
        let mut out = Vec::new();
        for round in 0..4u64 {
            for i in 0..3 {
                assert!(!q.is_full());
                q.push(round * 10 + i, 1, round, Keep::Nothing);
            }
            assert!(q.is_full());
            assert_eq!(q.len(), 3);
            q.pop_done(round, |iova, _| out.push(iova));
            assert_eq!(q.len(), 3, "entries of a flush that has not finished left the queue");
            q.pop_done(round + 1, |iova, pages| out.push(iova * pages));
            assert!(q.is_empty());
        }
        let want: Vec<u64> = (0..4).flat_map(|r| (0..3).map(move |i| r * 10 + i)).collect();
        assert_eq!(out, want);
    }
}
