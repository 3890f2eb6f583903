//! Sequence bookkeeping: every message's completion is settled against the
//! stream it belongs to, one stream per (device, worker).
//!
//! A worker issues sequence numbers 0, 1, 2, … per stream and settles each
//! message once when it completes (successfully or with an error). With at
//! most [`WINDOW`] messages of a stream outstanding, a stream keeps a fixed
//! 64-bit window of settled numbers above the oldest unsettled one, so its
//! memory does not grow with the run:
//! - **duplicated**: a number settled twice (below the window, or its bit set);
//! - **reordered**: a number settled while an older one of the same stream
//!   is still outstanding (the core promises per-device FIFO completion);
//! - **unknown**: a number that was never issued (counted as corrupted);
//! - **lost**: issued and never settled, counted at the end as
//!   `issued − settled` (a message that failed with a typed error is settled).
//!
//! If an old number never settles and the window must move past it, it
//! stays counted as lost; should it settle after all, it counts as a duplicate.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Most messages of one stream outstanding at once.
pub const WINDOW: u32 = 64;

/// What settling one sequence number found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The oldest outstanding number, or one whose elders all settled.
    InOrder,
    /// Settled while an older one is still outstanding.
    Reordered,
    /// Settled before.
    Duplicated,
    /// Never issued.
    Unknown,
}

/// One stream's numbers: issued, settled, and the window of settled ones.
#[derive(Debug, Default, Clone)]
pub struct Stream {
    next: u32,
    base: u32,
    settled_bits: u64,
    issued: u64,
    settled: u64,
}

impl Stream {
    /// Issues the next sequence number.
    pub fn issue(&mut self) -> u32 {
        let seq = self.next;
        self.next = self.next.wrapping_add(1);
        self.issued += 1;
        seq
    }

    /// Settles `seq` and says how.
    pub fn settle(&mut self, seq: u32) -> Settled {
        if seq >= self.next {
            return Settled::Unknown;
        }
        if seq < self.base {
            return Settled::Duplicated;
        }
        let mut offset = seq - self.base;
        if offset >= 64 {
            // An old number never settled: move the window past it (it stays lost).
            let shift = offset - 63;
            self.settled_bits = self.settled_bits.checked_shr(shift).unwrap_or(0);
            self.base += shift;
            offset = 63;
        }
        let bit = 1u64 << offset;
        if self.settled_bits & bit != 0 {
            return Settled::Duplicated;
        }
        let elders = bit - 1;
        let verdict = if self.settled_bits & elders == elders { Settled::InOrder } else { Settled::Reordered };
        self.settled_bits |= bit;
        self.settled += 1;
        while self.settled_bits & 1 != 0 {
            self.settled_bits >>= 1;
            self.base += 1;
        }
        verdict
    }

    /// Issued and not settled (so far).
    pub fn outstanding(&self) -> u64 {
        self.issued.saturating_sub(self.settled)
    }
}

/// Counts over the whole run (all streams, all devices).
#[derive(Debug, Default)]
pub struct Tally {
    /// Messages completed (successfully or with an error), GPIO toggles included.
    pub messages: AtomicU64,
    /// Completed with an error.
    pub failed: AtomicU64,
    /// Lost outside the streams (a GPIO edge that never came).
    pub lost_events: AtomicU64,
    /// Settled twice, or an extra GPIO edge.
    pub duplicated: AtomicU64,
    /// RX that is not the intact echo of TX, with no stuck device to blame.
    pub corrupted: AtomicU64,
    /// Panics caught in a worker or a completion callback.
    pub untyped_errors: AtomicU64,
    /// Typed errors of a kind no injected fault causes.
    pub unexpected_errors: AtomicU64,
    /// RX read while the device's MISO was stuck (the stuck-device fault seen).
    pub stuck_reads: AtomicU64,
    /// SPI NOR page program calls of the flash worker (not in `messages`).
    pub flash_writes: AtomicU64,
    /// SPI NOR pages read back intact after their program.
    pub flash_verified: AtomicU64,
}

/// The streams of every (device, worker) and the run's tally.
#[derive(Debug)]
pub struct Checker {
    workers: usize,
    streams: Vec<Mutex<Stream>>,
    reordered: Vec<AtomicU64>,
    /// The run's counts.
    pub tally: Tally,
}

impl Checker {
    /// Streams for `devices` × `workers`.
    pub fn new(devices: usize, workers: usize) -> Checker {
        Checker {
            workers,
            streams: (0..devices * workers).map(|_| Mutex::new(Stream::default())).collect(),
            reordered: (0..devices).map(|_| AtomicU64::new(0)).collect(),
            tally: Tally::default(),
        }
    }

    fn stream(&self, device: usize, worker: usize) -> std::sync::MutexGuard<'_, Stream> {
        self.streams[device * self.workers + worker].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Issues the next sequence number of (`device`, `worker`).
    pub fn issue(&self, device: usize, worker: usize) -> u32 {
        self.stream(device, worker).issue()
    }

    /// Settles `seq` of (`device`, `worker`) and counts what it found.
    pub fn settle(&self, device: usize, worker: usize, seq: u32) -> Settled {
        let verdict = self.stream(device, worker).settle(seq);
        self.note(device, verdict);
        verdict
    }

    /// Counts a verdict found elsewhere (e.g. a GPIO edge's sequence number).
    pub fn note(&self, device: usize, verdict: Settled) {
        match verdict {
            Settled::InOrder => {}
            Settled::Reordered => self.note_reordered(device),
            Settled::Duplicated => {
                self.tally.duplicated.fetch_add(1, Relaxed);
            }
            Settled::Unknown => {
                self.tally.corrupted.fetch_add(1, Relaxed);
            }
        }
    }

    /// Counts one message of `device` that completed out of order.
    pub fn note_reordered(&self, device: usize) {
        if let Some(r) = self.reordered.get(device) {
            r.fetch_add(1, Relaxed);
        }
    }

    /// Messages reordered, per device.
    pub fn reordered(&self) -> Vec<u64> {
        self.reordered.iter().map(|r| r.load(Relaxed)).collect()
    }

    /// Messages issued and never settled, plus lost GPIO edges.
    pub fn lost(&self) -> u64 {
        let in_streams: u64 =
            self.streams.iter().map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).outstanding()).sum();
        in_streams + self.tally.lost_events.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_completions_count_nothing() {
        let c = Checker::new(1, 1);
        for _ in 0..1000 {
            let s = c.issue(0, 0);
            assert_eq!(c.settle(0, 0, s), Settled::InOrder);
        }
        assert_eq!((c.lost(), c.tally.duplicated.load(Relaxed), c.reordered()), (0, 0, vec![0]));
    }

    #[test]
    fn a_lost_message_is_counted() {
        let c = Checker::new(1, 1);
        let (a, _never, b) = (c.issue(0, 0), c.issue(0, 0), c.issue(0, 0));
        c.settle(0, 0, a);
        assert_eq!(c.settle(0, 0, b), Settled::Reordered, "b settled while its elder is outstanding");
        assert_eq!(c.lost(), 1);
    }

    #[test]
    fn a_duplicate_is_counted_inside_and_below_the_window() {
        let c = Checker::new(1, 1);
        let (a, b, d) = (c.issue(0, 0), c.issue(0, 0), c.issue(0, 0));
        c.settle(0, 0, b); // reordered: a outstanding
        assert_eq!(c.settle(0, 0, b), Settled::Duplicated, "inside the window");
        c.settle(0, 0, a);
        assert_eq!(c.settle(0, 0, a), Settled::Duplicated, "below the window");
        assert_eq!(c.settle(0, 0, d), Settled::InOrder);
        assert_eq!(c.tally.duplicated.load(Relaxed), 2);
        assert_eq!(c.reordered(), vec![1]);
        assert_eq!(c.lost(), 0);
    }

    #[test]
    fn reordering_is_counted_per_device_and_unknown_numbers_as_corrupted() {
        let c = Checker::new(2, 2);
        let (a, b) = (c.issue(1, 1), c.issue(1, 1));
        assert_eq!(c.settle(1, 1, b), Settled::Reordered);
        assert_eq!(c.settle(1, 1, a), Settled::InOrder);
        assert_eq!(c.reordered(), vec![0, 1]);
        assert_eq!(c.settle(0, 0, 7), Settled::Unknown);
        assert_eq!(c.tally.corrupted.load(Relaxed), 1);
    }

    #[test]
    fn the_window_moves_past_a_number_that_never_settles() {
        let mut s = Stream::default();
        let first = s.issue();
        let rest: Vec<u32> = (0..200).map(|_| s.issue()).collect();
        for &n in &rest {
            s.settle(n);
        }
        assert_eq!(s.outstanding(), 1, "the first stays lost");
        assert_eq!(s.settle(first), Settled::Duplicated, "settling it after the window moved on");
    }
}
