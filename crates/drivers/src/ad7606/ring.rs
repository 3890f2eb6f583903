//! [`SampleRing`]: a fixed-size single-producer, single-consumer ring of
//! sample sets. Pushing never blocks and never allocates: a full ring
//! drops the new set and counts it ([`SampleRing::dropped`]).
//!
//! One sampling run at a time produces ([`SampleRing::producer`] refuses a
//! second); consumers take a lock only among themselves, never against
//! the producer. Codes and timestamps can be drained into flat arrays
//! ([`SampleRing::drain_into`]: `n × 8` `i16` and `n` `u64` ns), the layout
//! numpy wants.

use super::config::CHANNELS;
use super::error::Error;
use super::sample::SampleSet;
use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// The ring.
pub struct SampleRing {
    slots: Box<[UnsafeCell<SampleSet>]>,
    /// Sets pushed so far (the next write is at `head % len`).
    head: AtomicU64,
    /// Sets popped so far.
    tail: AtomicU64,
    dropped: AtomicU64,
    producer: Mutex<()>,
    consumer: Mutex<()>,
}

// SAFETY: a slot is written only by the one producer (held by `Producer`'s
// guard) while it is outside `tail..head`, and read only by the one
// consumer (under `consumer`) while it is inside; `head`'s release store
// publishes a write before the consumer can see the slot, `tail`'s release
// store retires a read before the producer can reuse it.
unsafe impl Sync for SampleRing {}

impl fmt::Debug for SampleRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SampleRing")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("dropped", &self.dropped())
            .finish()
    }
}

/// The right to push into a ring, held for one sampling run.
#[derive(Debug)]
pub struct Producer<'a> {
    ring: &'a SampleRing,
    _guard: MutexGuard<'a, ()>,
}

impl SampleRing {
    /// A ring of `capacity` sets (1 ..= 2^26).
    pub fn new(capacity: usize) -> Result<SampleRing, Error> {
        if !(1..=1 << 26).contains(&capacity) {
            return Err(Error::invalid("ring capacity", capacity, "1..=67108864 sample sets"));
        }
        let slots = (0..capacity).map(|_| UnsafeCell::new(SampleSet::default())).collect();
        Ok(SampleRing {
            slots,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            producer: Mutex::new(()),
            consumer: Mutex::new(()),
        })
    }

    /// Sets it holds.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Sets waiting to be taken.
    pub fn len(&self) -> usize {
        (self.head.load(Ordering::Acquire) - self.tail.load(Ordering::Acquire)) as usize
    }

    /// Whether no set is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets pushed so far (taken, waiting or not).
    pub fn pushed(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Sets dropped because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Claims the producer side, or says another run holds it.
    pub fn producer(&self) -> Result<Producer<'_>, Error> {
        match self.producer.try_lock() {
            Ok(g) => Ok(Producer { ring: self, _guard: g }),
            Err(TryLockError::Poisoned(p)) => Ok(Producer { ring: self, _guard: p.into_inner() }),
            Err(TryLockError::WouldBlock) => Err(Error::RingInUse),
        }
    }

    fn consumer(&self) -> MutexGuard<'_, ()> {
        self.consumer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the oldest set.
    pub fn pop(&self) -> Option<SampleSet> {
        let _c = self.consumer();
        let t = self.tail.load(Ordering::Relaxed);
        if t == self.head.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: slot `t` is inside `tail..head`: written and published, and
        // the producer does not touch it until `tail` moves past it.
        let s = unsafe { *self.slots[(t % self.slots.len() as u64) as usize].get() };
        self.tail.store(t + 1, Ordering::Release);
        Some(s)
    }

    /// Takes up to `timestamps_ns.len()` sets (and at most `codes.len() / 8`):
    /// codes row by row into `codes` (V1..V8 each), sampling instants in ns
    /// into `timestamps_ns`. Returns how many.
    pub fn drain_into(&self, codes: &mut [i16], timestamps_ns: &mut [u64]) -> usize {
        let _c = self.consumer();
        let max = timestamps_ns.len().min(codes.len() / CHANNELS) as u64;
        let t = self.tail.load(Ordering::Relaxed);
        let n = (self.head.load(Ordering::Acquire) - t).min(max);
        for i in 0..n {
            // SAFETY: as in `pop`, for each slot of `t..t + n` ⊆ `tail..head`.
            let s = unsafe { &*self.slots[((t + i) % self.slots.len() as u64) as usize].get() };
            let i = i as usize;
            codes[i * CHANNELS..(i + 1) * CHANNELS].copy_from_slice(&s.codes);
            timestamps_ns[i] = s.timestamp.as_ns();
        }
        self.tail.store(t + n, Ordering::Release);
        n as usize
    }
}

impl Producer<'_> {
    /// Appends `s`; if the ring is full, drops it, counts it and returns false.
    #[inline]
    pub fn push(&self, s: SampleSet) -> bool {
        let r = self.ring;
        let h = r.head.load(Ordering::Relaxed);
        if h - r.tail.load(Ordering::Acquire) >= r.slots.len() as u64 {
            r.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // SAFETY: slot `h` is outside `tail..head` (the ring is not full), so
        // no consumer reads it, and this guard makes us the only writer.
        unsafe { *r.slots[(h % r.slots.len() as u64) as usize].get() = s };
        r.head.store(h + 1, Ordering::Release);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use wirespeed::time::Instant;

    fn set(i: u64) -> SampleSet {
        SampleSet { codes: [i as i16; CHANNELS], timestamp: Instant::from_ns(i), ..SampleSet::default() }
    }

    #[test]
    fn full_ring_drops_and_counts_and_one_producer_at_a_time() {
        let r = SampleRing::new(2).unwrap();
        let p = r.producer().unwrap();
        assert!(matches!(r.producer(), Err(Error::RingInUse)));
        assert!(p.push(set(1)) && p.push(set(2)) && !p.push(set(3)));
        assert_eq!((r.len(), r.dropped()), (2, 1));
        assert_eq!(r.pop().map(|s| s.timestamp.as_ns()), Some(1));
        let (mut c, mut t) = ([0i16; 16], [0u64; 2]);
        assert_eq!(r.drain_into(&mut c, &mut t), 1);
        assert_eq!((t[0], c[0], c[7]), (2, 2, 2));
        assert!(SampleRing::new(0).is_err());
    }

    /// A producer and a consumer racing: every set comes out once, in
    /// order, intact, or was counted as dropped.
    #[test]
    fn stress_spsc_loses_nothing_uncounted() {
        let r = Arc::new(SampleRing::new(64).unwrap());
        let n = 200_000u64;
        let prod = {
            let r = r.clone();
            std::thread::spawn(move || {
                let p = r.producer().unwrap();
                for i in 1..=n {
                    p.push(set(i));
                    if i % 16 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let (mut got, mut last) = (0u64, 0u64);
        loop {
            while let Some(s) = r.pop() {
                let i = s.timestamp.as_ns();
                assert!(i > last && s.codes.iter().all(|&c| c == i as i16), "{i} after {last}: {:?}", s.codes);
                last = i;
                got += 1;
            }
            if prod.is_finished() && r.is_empty() {
                break;
            }
        }
        prod.join().unwrap();
        assert_eq!(got + r.dropped(), n);
        assert!(got >= 64, "at least what the ring held at the end");
    }
}
