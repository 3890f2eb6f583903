//! Bus statistics: exact counts with no lock on the hot path.
//!
//! With [`Policy::lockfree_stats`](super::Policy::lockfree_stats) on, each
//! thread that uses a bus gets its own shard of counters, written only by that
//! thread (a relaxed load and store, no atomic read-modify-write) and summed
//! when read. Off, every update takes one shared mutex, as the kernel's
//! `SPI_STATISTICS_ADD_TO_FIELD` did.
//!
//! A snapshot is exact for every update completed before it was taken; one
//! taken while other threads record is exact counter by counter but not a
//! consistent cut across counters (it may count a transfer's bytes and not
//! yet the transfer).

mod histogram;
#[cfg(all(test, loom))]
mod loom_model;
mod shard;

use crate::sync::{thread_local, Arc, Mutex};
pub use histogram::{LatencyHistogram, SIZE_BUCKETS};
use shard::{Counter, Shard};

/// A snapshot of a bus's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Messages completed (successfully or not).
    pub messages: u64,
    /// Transfers completed.
    pub transfers: u64,
    /// Bytes sent.
    pub bytes_tx: u64,
    /// Bytes received.
    pub bytes_rx: u64,
    /// Messages that failed.
    pub errors: u64,
    /// Transfers that timed out.
    pub timeouts: u64,
    /// Sync messages run at once in the caller's thread.
    pub sync_immediate: u64,
    /// Messages that went through the queue (async, or sync while the bus was busy).
    pub queued: u64,
    /// Transfer sizes: bucket i counts transfers of 2^(i−1) < len ≤ 2^i bytes
    /// (bucket 0: 1 byte; the last bucket: everything larger).
    pub size_histogram: [u64; SIZE_BUCKETS],
    /// Message latency (submission → completion), in ns.
    pub latency: LatencyHistogram,
}

/// One message's contribution.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MessageRecord {
    pub immediate: bool,
    pub ok: bool,
    pub timeout: bool,
    pub latency_ns: u64,
}

static NEXT_STATS_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static SHARDS: std::cell::RefCell<Vec<(u64, Arc<Shard>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The statistics of one bus.
#[derive(Debug)]
pub struct Stats {
    id: u64,
    lockfree: bool,
    shards: Mutex<Vec<Arc<Shard>>>,
    /// Classic mode: the controller's copy and the device's copy, as the kernel kept them.
    locked: [Mutex<StatsSnapshot>; 2],
}

impl Stats {
    pub(crate) fn new(lockfree: bool) -> Stats {
        Stats {
            id: NEXT_STATS_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            lockfree,
            shards: Mutex::new(Vec::new()),
            locked: [Mutex::new(StatsSnapshot::default()), Mutex::new(StatsSnapshot::default())],
        }
    }

    /// Runs `f` on this thread's shard (made on first use).
    #[inline(always)]
    fn with_shard(&self, f: impl Fn(&Shard)) {
        let found = SHARDS.try_with(|cell| match cell.borrow().iter().find(|(id, _)| *id == self.id) {
            Some((_, s)) => {
                f(s);
                true
            }
            None => false,
        });
        if !matches!(found, Ok(true)) {
            self.with_new_shard(f);
        }
    }

    /// [`with_shard`](Self::with_shard) on a thread that has no shard yet.
    #[cold]
    #[inline(never)]
    fn with_new_shard(&self, f: impl Fn(&Shard)) {
        let s = Arc::new(Shard::default());
        f(&s);
        self.shards.lock().unwrap_or_else(|e| e.into_inner()).push(s.clone());
        // The thread may be exiting, its shards gone (a message sent from a
        // thread-local's destructor): then the bus's list alone keeps the shard.
        let _ = SHARDS.try_with(|cell| {
            let mut v = cell.borrow_mut();
            // Shards of dropped buses are held by this list alone: let them go
            // before adding one, so a thread that opens bus after bus keeps
            // neither their memory nor a longer search.
            v.retain(|(_, s)| Arc::strong_count(s) > 1);
            v.push((self.id, s));
        });
    }

    /// Records one transfer of `len` bytes.
    #[inline(always)]
    pub(crate) fn transfer(&self, tx: bool, rx: bool, len: usize) {
        if !self.lockfree {
            return self.transfer_locked(tx, rx, len);
        }
        let bucket = histogram::size_bucket(len);
        self.with_shard(move |s| {
            s.bump(Counter::Transfers, 1);
            if tx {
                s.bump(Counter::BytesTx, len as u64);
            }
            if rx {
                s.bump(Counter::BytesRx, len as u64);
            }
            s.bump_size(bucket);
        });
    }

    /// [`transfer`](Self::transfer) in the kernel's way: the same counters
    /// twice, for the controller and for the device, each under its own
    /// spinlock (spi_statistics_add_transfer_stats on both).
    #[inline(never)]
    fn transfer_locked(&self, tx: bool, rx: bool, len: usize) {
        let bucket = histogram::size_bucket(len);
        for copy in &self.locked {
            let mut l = copy.lock().unwrap_or_else(|e| e.into_inner());
            l.transfers += 1;
            if tx {
                l.bytes_tx += len as u64;
            }
            if rx {
                l.bytes_rx += len as u64;
            }
            l.size_histogram[bucket] += 1;
        }
    }

    /// Records a finished message.
    #[inline(always)]
    pub(crate) fn message(&self, r: MessageRecord) {
        if !self.lockfree {
            return self.message_locked(r);
        }
        self.with_shard(move |s| {
            s.bump(Counter::Messages, 1);
            if r.immediate {
                s.bump(Counter::SyncImmediate, 1);
            } else {
                s.bump(Counter::Queued, 1);
            }
            if !r.ok {
                s.bump(Counter::Errors, 1);
            }
            if r.timeout {
                s.bump(Counter::Timeouts, 1);
            }
            s.record_latency(r.latency_ns);
        });
    }

    /// [`message`](Self::message) in 5.18's way: its fields incremented in
    /// both copies, one spinlock round trip each. A sync message run at once
    /// takes spi_sync and spi_sync_immediate (__spi_sync), then messages
    /// (spi_transfer_one_message); a queued one spi_async (or spi_sync) and
    /// messages. Our own counters ride in the same round trips.
    #[inline(never)]
    fn message_locked(&self, r: MessageRecord) {
        for copy in &self.locked {
            if r.immediate {
                drop(copy.lock().unwrap_or_else(|e| e.into_inner())); // spi_sync
                copy.lock().unwrap_or_else(|e| e.into_inner()).sync_immediate += 1;
            } else {
                copy.lock().unwrap_or_else(|e| e.into_inner()).queued += 1;
            }
            let mut l = copy.lock().unwrap_or_else(|e| e.into_inner());
            l.messages += 1;
            l.errors += u64::from(!r.ok);
            l.timeouts += u64::from(r.timeout);
            l.latency.record(r.latency_ns);
        }
    }

    /// Sums every shard (and the locked counters) into a snapshot.
    pub fn snapshot(&self) -> StatsSnapshot {
        let mut out = self.locked[0].lock().unwrap_or_else(|e| e.into_inner()).clone();
        for s in self.shards.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            s.add_into(&mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(stats: &Stats, threads: usize, per_thread: u64) {
        std::thread::scope(|sc| {
            for t in 0..threads {
                sc.spawn(move || {
                    for i in 0..per_thread {
                        stats.transfer(true, i % 2 == 0, 9);
                        stats.message(MessageRecord {
                            immediate: t % 2 == 0,
                            ok: i % 10 != 0,
                            timeout: i % 100 == 0,
                            latency_ns: 1_000 + i,
                        });
                    }
                });
            }
        });
    }

    #[test]
    fn a_thread_keeps_no_shards_of_dropped_statistics() {
        for _ in 0..100 {
            let stats = Stats::new(true);
            stats.transfer(true, true, 1);
            assert_eq!(stats.snapshot().transfers, 1);
        }
        let kept = SHARDS.with(|cell| cell.borrow().len());
        assert!(kept <= 1, "this thread still holds {kept} shards of 100 dropped buses");
    }

    #[test]
    fn exact_under_concurrency_in_both_modes() {
        for lockfree in [true, false] {
            let stats = Stats::new(lockfree);
            load(&stats, 8, 20_000);
            let s = stats.snapshot();
            let n = 8 * 20_000;
            assert_eq!(s.messages, n, "lockfree={lockfree}");
            assert_eq!(s.transfers, n);
            assert_eq!(s.bytes_tx, 9 * n);
            assert_eq!(s.bytes_rx, 9 * n / 2);
            assert_eq!(s.errors, n / 10);
            assert_eq!(s.timeouts, n / 100);
            assert_eq!(s.sync_immediate, n / 2);
            assert_eq!(s.queued, n / 2);
            assert_eq!(s.size_histogram[histogram::size_bucket(9)], n);
            assert_eq!(s.latency.count(), n);
        }
    }

    #[test]
    fn updates_from_a_thread_local_destructor_are_counted() {
        // A device kept in a thread-local whose drop sends a last message
        // (a driver powering its chip down): it may run after this thread's
        // shards were destroyed.
        struct Late(Arc<Stats>);
        impl Drop for Late {
            fn drop(&mut self) {
                let stats = &self.0;
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    stats.transfer(true, false, 4);
                    stats.message(MessageRecord { ok: true, ..MessageRecord::default() });
                }));
            }
        }
        std::thread_local! {
            static LATE: std::cell::RefCell<Option<Late>> = const { std::cell::RefCell::new(None) };
        }
        let stats = Arc::new(Stats::new(true));
        let s = stats.clone();
        std::thread::spawn(move || {
            // Registered before the shards, so destroyed after them.
            LATE.with(|l| *l.borrow_mut() = Some(Late(s.clone())));
            s.transfer(true, false, 4);
            s.message(MessageRecord { ok: true, ..MessageRecord::default() });
        })
        .join()
        .unwrap();
        let snap = stats.snapshot();
        assert_eq!((snap.transfers, snap.messages, snap.bytes_tx, snap.latency.count()), (2, 2, 8, 2));
    }

    #[test]
    fn two_buses_on_one_thread_keep_separate_counts() {
        let a = Stats::new(true);
        let b = Stats::new(true);
        a.transfer(true, false, 4);
        b.transfer(false, true, 1);
        b.transfer(false, true, 1);
        assert_eq!((a.snapshot().transfers, b.snapshot().transfers), (1, 2));
        assert_eq!((a.snapshot().bytes_rx, b.snapshot().bytes_rx), (0, 2));
    }
}
