//! [`EventSignal`]: a futex a backend bumps when edge events arrive, so that
//! a handle sleeping for events wakes with one `futex` call instead of
//! `ppoll` on descriptors plus a `read` to drain an eventfd.
//!
//! Backends whose events come from a kernel descriptor (the Linux character
//! device) have nothing to bump: their handles sleep in `ppoll`. An
//! in-process backend (the lab) offers a signal through
//! [`RequestBackend::event_signal`](super::RequestBackend::event_signal);
//! the core keeps it beside the request, so a sleeper never touches backend
//! state outside an access, and the chip's remover bumps it too (a sleeper
//! then finds the chip gone).
//!
//! Protocol — a sleeper: `let seen = s.sequence();` then look for events;
//! if there are none, `s.wait(seen, timeout)`. A notifier: queue the event,
//! then `s.notify()`. Either the sleeper's look finds the event, or the
//! notify comes after `seen` was read and the wait returns at once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A wake-up counter with futex sleeping; see the module docs.
#[derive(Debug, Default)]
pub struct EventSignal {
    seq: AtomicU32,
    sleepers: AtomicU32,
}

impl EventSignal {
    /// A new signal with no sleepers.
    pub fn new() -> EventSignal {
        EventSignal::default()
    }

    /// The current count, to pass to [`EventSignal::wait`] after looking for events.
    pub fn sequence(&self) -> u32 {
        self.seq.load(Ordering::SeqCst)
    }

    /// Something happened: wakes every sleeper (no system call when none sleeps).
    pub fn notify(&self) {
        self.seq.fetch_add(1, Ordering::SeqCst);
        // SeqCst on both sides (Dekker): either this load sees the sleeper's
        // increment, or the sleeper's futex sees the new count and returns.
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            futex_wake_all(&self.seq);
        }
    }

    /// Sleeps until the count differs from `seen` (or already does), or
    /// `timeout` passes (`None`: no limit). May return early (a signal, a
    /// spurious wake-up): callers look again and loop.
    pub fn wait(&self, seen: u32, timeout: Option<Duration>) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.seq.load(Ordering::SeqCst) == seen {
            futex_wait(&self.seq, seen, timeout);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 for the call's duration; `tsp` is
    // null or points to a live relative timespec. EAGAIN (the count moved),
    // EINTR and ETIMEDOUT all mean "look again", which every caller does.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, expected, tsp);
    }
}

fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only reads the address as a key; `word` is live.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_notify_after_the_snapshot_makes_the_wait_return_at_once() {
        let s = EventSignal::new();
        let seen = s.sequence();
        s.notify();
        let t = Instant::now();
        s.wait(seen, Some(Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(5), "waited {:?} for a count that had moved", t.elapsed());
    }

    #[test]
    fn a_wait_with_nothing_notified_times_out() {
        let s = EventSignal::new();
        let t = Instant::now();
        s.wait(s.sequence(), Some(Duration::from_millis(20)));
        assert!(t.elapsed() >= Duration::from_millis(20), "returned after {:?}", t.elapsed());
    }

    #[test]
    fn notify_wakes_a_sleeping_thread() {
        let s = Arc::new(EventSignal::new());
        let seen = s.sequence();
        let sleeper = {
            let s = s.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                while s.sequence() == seen && t.elapsed() < Duration::from_secs(20) {
                    s.wait(seen, Some(Duration::from_secs(20)));
                }
                t.elapsed()
            })
        };
        // Let it fall asleep (the test holds either way: a notify before the
        // sleep makes the wait return at once).
        while s.sleepers.load(Ordering::SeqCst) == 0 && !sleeper.is_finished() {
            std::thread::yield_now();
        }
        s.notify();
        let took = sleeper.join().unwrap();
        assert!(took < Duration::from_secs(10), "the sleeper slept {took:?} through the notify");
    }

    /// One thread queues items and notifies; another takes them, sleeping on
    /// the signal when it finds none. A lost wake-up leaves an item queued
    /// while the taker sleeps out its whole timeout.
    #[test]
    fn no_wake_up_is_lost_under_a_stream_of_notifies() {
        use std::sync::atomic::AtomicU64;
        const ITEMS: u64 = 20_000;
        let s = Arc::new(EventSignal::new());
        let queued = Arc::new(AtomicU64::new(0));
        let producer = {
            let (s, queued) = (s.clone(), queued.clone());
            std::thread::spawn(move || {
                for i in 0..ITEMS {
                    queued.store(i + 1, Ordering::SeqCst);
                    s.notify();
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut taken = 0;
        let mut lost = 0;
        while taken < ITEMS {
            let seen = s.sequence();
            let q = queued.load(Ordering::SeqCst);
            if q > taken {
                taken = q;
                continue;
            }
            let t = Instant::now();
            s.wait(seen, Some(Duration::from_secs(2)));
            if t.elapsed() >= Duration::from_secs(2) && queued.load(Ordering::SeqCst) > taken {
                lost += 1;
            }
        }
        producer.join().unwrap();
        assert_eq!(lost, 0, "{lost} waits slept through a queued item");
    }
}
