//! One thread's counters. Only the owning thread writes a shard, so an
//! update is a relaxed load and store — no atomic read-modify-write, no lock —
//! and readers summing the shards see every completed update.

use super::histogram::{LatencyHistogram, LATENCY_BUCKETS, SIZE_BUCKETS};
use super::StatsSnapshot;
use crate::sync::{AtomicU64, Ordering};

#[derive(Clone, Copy)]
pub(super) enum Counter {
    Messages,
    Transfers,
    BytesTx,
    BytesRx,
    Errors,
    Timeouts,
    SyncImmediate,
    Queued,
}

const COUNTERS: usize = 8;

pub(super) struct Shard {
    counters: [AtomicU64; COUNTERS],
    sizes: [AtomicU64; SIZE_BUCKETS],
    latency: Box<[AtomicU64; LATENCY_BUCKETS]>,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard").finish_non_exhaustive()
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            counters: Default::default(),
            sizes: Default::default(),
            latency: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
        }
    }
}

#[inline]
fn add(c: &AtomicU64, n: u64) {
    // Single writer: load + store is exact and needs no locked instruction.
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl Shard {
    #[inline]
    pub(super) fn bump(&self, c: Counter, n: u64) {
        add(&self.counters[c as usize], n);
    }

    #[inline]
    pub(super) fn bump_size(&self, bucket: usize) {
        add(&self.sizes[bucket], 1);
    }

    #[inline]
    pub(super) fn record_latency(&self, ns: u64) {
        add(&self.latency[LatencyHistogram::bucket_of(ns)], 1);
    }

    pub(super) fn add_into(&self, out: &mut StatsSnapshot) {
        let c = |k: Counter| self.counters[k as usize].load(Ordering::Relaxed);
        out.messages += c(Counter::Messages);
        out.transfers += c(Counter::Transfers);
        out.bytes_tx += c(Counter::BytesTx);
        out.bytes_rx += c(Counter::BytesRx);
        out.errors += c(Counter::Errors);
        out.timeouts += c(Counter::Timeouts);
        out.sync_immediate += c(Counter::SyncImmediate);
        out.queued += c(Counter::Queued);
        for (o, s) in out.size_histogram.iter_mut().zip(&self.sizes) {
            *o += s.load(Ordering::Relaxed);
        }
        for (i, b) in self.latency.iter().enumerate() {
            out.latency.add_bucket(i, b.load(Ordering::Relaxed));
        }
    }
}
