//! A thread's lazy flush queue: unmapped IOVA ranges waiting for the IOTLB
//! flush that makes them safe to reuse (Linux `struct iova_fq`).
//!
//! Each entry records the domain's flush-start count when it was queued; it
//! may be freed once a flush that *started later* has finished
//! (`finished > entry.gen`), whoever ran it (Linux's
//! `fq_flush_start_cnt`/`fq_flush_finish_cnt`). The ring is allocated once,
//! when the thread first unmaps in the domain, and never grows.

use super::buffer::Region;
use std::collections::VecDeque;
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
pub(crate) struct Entry {
    pub(crate) iova: u64,
    pub(crate) pages: u64,
    pub(crate) gen: u64,
    pub(crate) keep: Keep,
}

#[derive(Debug)]
pub(crate) struct FlushQueue {
    ring: VecDeque<Entry>,
    cap: usize,
}

impl FlushQueue {
    pub(crate) fn new(cap: usize) -> FlushQueue {
        FlushQueue { ring: VecDeque::with_capacity(cap), cap }
    }

    pub(crate) fn len(&self) -> usize {
        self.ring.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.ring.len() >= self.cap
    }

    /// Queues an entry (the caller made room: `!is_full()`).
    pub(crate) fn push(&mut self, e: Entry) {
        self.ring.push_back(e);
    }

    /// Whether the oldest entry is covered by a finished flush (`gen < finished`).
    pub(crate) fn front_done(&self, finished: u64) -> bool {
        self.ring.front().is_some_and(|e| e.gen < finished)
    }

    /// Pops the entries a finished flush covers (`gen < finished`), oldest
    /// first, handing each to `free`. Entries are queued in `gen` order.
    pub(crate) fn pop_done(&mut self, finished: u64, mut free: impl FnMut(Entry)) {
        while self.ring.front().is_some_and(|e| e.gen < finished) {
            if let Some(e) = self.ring.pop_front() {
                free(e);
            }
        }
    }
}
