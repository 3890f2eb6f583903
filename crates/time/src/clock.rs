//! The monotonic clock: `CLOCK_MONOTONIC` as nanoseconds in a `u64`.
//!
//! A plain integer is cheap to copy, compare, store in an atomic and subtract,
//! which is what the lab and the SPI core do on every register access.

use std::fmt;

/// A point on the host's monotonic clock, in nanoseconds since an arbitrary
/// origin (the kernel's `CLOCK_MONOTONIC`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The clock's origin; earlier than any instant [`now`] returns.
    pub const ZERO: Instant = Instant(0);

    /// An instant from raw nanoseconds on `CLOCK_MONOTONIC`.
    pub const fn from_ns(ns: u64) -> Instant {
        Instant(ns)
    }

    /// Nanoseconds since the clock's origin.
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    /// `self + ns`, saturating at the end of time.
    #[must_use]
    pub const fn add_ns(self, ns: u64) -> Instant {
        Instant(self.0.saturating_add(ns))
    }

    /// Nanoseconds from `earlier` to `self`; zero if `earlier` is later.
    pub const fn ns_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Microseconds from `earlier` to `self`, as a float (for reports).
    pub fn us_since(self, earlier: Instant) -> f64 {
        self.ns_since(earlier) as f64 / 1_000.0
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({}.{:09}s)", self.0 / 1_000_000_000, self.0 % 1_000_000_000)
    }
}

/// Reads the monotonic clock (through the vDSO: no system call).
#[cfg(not(loom))]
#[inline]
pub fn now() -> Instant {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Instant(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Built with `--cfg loom` (the wirespeed crate's loom models), the clock
/// steps instead: each read advances 1 µs. Loom replays a schedule by the
/// choices it made and needs the code under the model to do the same on the
/// same schedule; the host's clock would not (a message's latency picks the
/// histogram counter the statistics bump). The count is the OS thread's, and
/// every loom thread of a model runs on its test's OS thread: within one
/// execution, what a read returns depends on the schedule alone.
#[cfg(loom)]
pub fn now() -> Instant {
    thread_local! {
        static STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
    }
    Instant(STEPS.with(|s| {
        let step = s.get();
        s.set(step + 1);
        step * 1_000
    }))
}

/// CPU time the calling thread has used, in ns (`CLOCK_THREAD_CPUTIME_ID`:
/// a system call). Time the thread spends preempted or asleep does not count.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec and the clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_matches_std() {
        let a = now();
        let std_start = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now();
        let std_elapsed = std_start.elapsed().as_nanos() as u64;
        assert!(b > a);
        let ours = b.ns_since(a);
        assert!(ours >= 2_000_000, "slept 2 ms, clock says {ours} ns");
        assert!(ours + 1_000_000 >= std_elapsed, "ours {ours} vs std {std_elapsed}");
    }

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_ns(10);
        assert_eq!(t.ns_since(Instant::from_ns(20)), 0);
        assert_eq!(Instant::from_ns(u64::MAX).add_ns(5).as_ns(), u64::MAX);
        assert_eq!(t.add_ns(5).ns_since(t), 5);
    }
}
