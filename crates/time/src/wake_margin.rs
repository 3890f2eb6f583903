//! The wake-up margin: how much later than asked a sleeping thread wakes up.
//!
//! A long [`delay`](crate::delay) sleeps until its deadline minus this margin
//! and spins the rest, so the margin decides both its accuracy (too small:
//! the thread wakes after the deadline) and its CPU cost (too large: it spins
//! longer than needed). It depends on the machine and on the thread:
//!
//! * its **class** — a realtime thread (SCHED_FIFO/RR/DEADLINE) is run as
//!   soon as its timer fires; a normal thread waits its turn with the others
//!   (and, where the sleep falls back to `clock_nanosleep`, up to its timer
//!   slack — 50 µs by default — more); a normal thread whose slack was cut
//!   to under 10 µs is kept apart, as its wake-ups differ from both;
//! * the **length of the sleep** — a CPU idle for longer drops into deeper
//!   idle states (or, in a virtual machine, is descheduled by the host) and
//!   wakes more slowly.
//!
//! So the library keeps one margin per (class, wait-length bucket), each a
//! lock-free atomic. A margin is measured on first use (a few sleeps of the
//! bucket's typical length, keeping the upper quartile of the overshoot), then
//! follows every sleep the delays take: a streaming estimate of the 95th
//! percentile of the overshoot, to which a guard of one eighth is added. A
//! delay that does not sleep because the margin exceeds its wait lowers the
//! estimate by one step, so a margin measured during a burst of load comes
//! back down instead of turning every delay into a spin.
//! For waits of 500 µs and more, the margin used is at most a fifth of the
//! wait, so a long delay spends at most about a fifth of its time spinning
//! even when the machine is so loaded that wake-ups come very late. Never
//! a calibrated loop: margins only decide when to stop sleeping, and the
//! deadline itself is always checked on the clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::now;
use crate::sleep::sleep_until;

/// Marks a margin not measured yet.
pub(crate) const UNKNOWN: u64 = u64::MAX;
/// Margins are kept within this range (ns).
pub(crate) const MIN_MARGIN_NS: u64 = 500;
pub(crate) const MAX_MARGIN_NS: u64 = 20_000_000;
/// A normal thread whose timer slack is below this counts as low-slack.
const LOW_SLACK_NS: u64 = 10_000;

/// The kind of thread, as far as wake-up latency goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Realtime,
    LowSlack,
    Normal,
}

impl Class {
    #[cfg(test)]
    pub(crate) const ALL: [Class; 3] = [Class::Realtime, Class::LowSlack, Class::Normal];
}

/// Wait-length buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bucket {
    /// Below 512 µs.
    Short,
    /// 512 µs to 4 ms.
    Medium,
    /// 4 ms and more.
    Long,
}

impl Bucket {
    pub(crate) const ALL: [Bucket; 3] = [Bucket::Short, Bucket::Medium, Bucket::Long];

    /// The bucket for a wait of `ns`.
    pub(crate) fn for_wait(ns: u64) -> Bucket {
        if ns < 512_000 {
            Bucket::Short
        } else if ns < 4_000_000 {
            Bucket::Medium
        } else {
            Bucket::Long
        }
    }

    /// (sleep length, number of sleeps) used to measure this bucket.
    fn probe(self) -> (u64, usize) {
        match self {
            Bucket::Short => (40_000, 16),
            Bucket::Medium => (400_000, 8),
            Bucket::Long => (3_000_000, 6),
        }
    }
}

static MARGINS: [AtomicU64; 9] = [const { AtomicU64::new(UNKNOWN) }; 9];

fn slot(class: Class, bucket: Bucket) -> &'static AtomicU64 {
    &MARGINS[class as usize * 3 + bucket as usize]
}

/// The calling thread's class (two cheap system calls; used on the sleep
/// path only, which waits 100 µs or more).
pub(crate) fn current_class() -> Class {
    // SAFETY: plain queries about the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let policy = policy & !libc::SCHED_RESET_ON_FORK;
    if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR || policy == 6
    /* SCHED_DEADLINE */
    {
        return Class::Realtime;
    }
    if crate::realtime::current_timer_slack_ns() < LOW_SLACK_NS {
        Class::LowSlack
    } else {
        Class::Normal
    }
}

/// The stored estimate, or [`UNKNOWN`].
pub(crate) fn peek_ns(class: Class, bucket: Bucket) -> u64 {
    slot(class, bucket).load(Ordering::Relaxed)
}

/// The margin to sleep short of a deadline `wait_ns` away by: the estimate
/// plus a guard of one eighth, at most a fifth of waits of 500 µs or more.
/// Measures the estimate first if it is not known yet (this takes a few
/// sleeps of the bucket's length, once); the calling thread must be of
/// `class`.
pub(crate) fn margin_ns(class: Class, wait_ns: u64) -> u64 {
    let bucket = Bucket::for_wait(wait_ns);
    let mut m = peek_ns(class, bucket);
    if m == UNKNOWN {
        m = measure(bucket);
        // Whoever measured first wins; both measurements are valid.
        m = match slot(class, bucket).compare_exchange(UNKNOWN, m, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => m,
            Err(other) => other,
        };
    }
    (m + m / 8).min((wait_ns / 5).max(100_000))
}

/// Measures the overshoot of sleeps of the bucket's typical length on the
/// calling thread; keeps the upper quartile (robust to a burst of load: the
/// streaming estimate raises it quickly if it is too low).
fn measure(bucket: Bucket) -> u64 {
    let (len, n) = bucket.probe();
    let mut over = [0u64; 16];
    let mut got = 0;
    let mut attempts = 0;
    while got < n && attempts < 4 * n {
        attempts += 1;
        let at = now().add_ns(len);
        if let Ok(woke) = sleep_until(at) {
            over[got] = woke.ns_since(at);
            got += 1;
        }
    }
    let over = &mut over[..got];
    over.sort_unstable();
    let m = if got == 0 { MAX_MARGIN_NS / 20 } else { over[got * 3 / 4] };
    m.clamp(MIN_MARGIN_NS, MAX_MARGIN_NS)
}

/// Feeds one observed overshoot (how late a sleep returned after the instant
/// asked) into the streaming 95th-percentile estimate: up by 19 steps when
/// above it, down by one when not. Lost updates under a race only slow the
/// estimate down; they cannot make a delay early.
pub(crate) fn observe(class: Class, bucket: Bucket, overshoot_ns: u64) {
    let s = slot(class, bucket);
    let m = s.load(Ordering::Relaxed);
    if m == UNKNOWN {
        return;
    }
    s.store(next_estimate(m, overshoot_ns), Ordering::Relaxed);
}

/// A delay did not sleep because the margin exceeded its wait: one step down.
pub(crate) fn observe_skipped(class: Class, bucket: Bucket) {
    let s = slot(class, bucket);
    let m = s.load(Ordering::Relaxed);
    if m != UNKNOWN {
        s.store(next_estimate(m, 0), Ordering::Relaxed);
    }
}

/// One step of the streaming quantile estimate (steps of 1/512 of it).
fn next_estimate(m: u64, overshoot_ns: u64) -> u64 {
    let step = (m >> 9).max(50);
    let next = if overshoot_ns > m { m.saturating_add(19 * step) } else { m.saturating_sub(step) };
    next.clamp(MIN_MARGIN_NS, MAX_MARGIN_NS)
}

/// The wake-up margin a delay of `wait` on the calling thread sleeps short of
/// its deadline by (measuring it first if needed, which takes a few sleeps).
/// Waits below the spin threshold do not sleep at all.
pub fn wake_margin(wait: Duration) -> Duration {
    let ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(margin_ns(current_class(), ns))
}

/// The calling thread's wake-up margins per wait length, as measured by
/// [`remeasure_wake_margins`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeMargins {
    /// For waits below 512 µs.
    pub short: Duration,
    /// For waits from 512 µs to 4 ms.
    pub medium: Duration,
    /// For waits of 4 ms and more.
    pub long: Duration,
}

/// Measures the calling thread's class's margins again, now (about 30 ms of
/// sleeping), e.g. after changing its priority or timer slack, or before a
/// benchmark so that the first long delay does not pay for the measurement.
pub fn remeasure_wake_margins() -> WakeMargins {
    let class = current_class();
    let mut out = [Duration::ZERO; 3];
    for (i, b) in Bucket::ALL.into_iter().enumerate() {
        let m = measure(b);
        slot(class, b).store(m, Ordering::Relaxed);
        out[i] = Duration::from_nanos(m + m / 8);
    }
    WakeMargins { short: out[0], medium: out[1], long: out[2] }
}

/// Forgets every measured margin (all classes); each is measured again on
/// its next use. [`realtime::setup`](crate::realtime::setup) calls this when
/// it changed the scheduling policy or timer slack.
pub fn forget_wake_margins() {
    for s in &MARGINS {
        s.store(UNKNOWN, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slack_of_more_than_four_seconds_is_not_low() {
        // glibc's prctl() returns an int: 2^32 + 1 ns read back as 1 ns.
        std::thread::spawn(|| {
            crate::realtime::set_current_timer_slack_ns((1u64 << 32) + 1).unwrap();
            assert_eq!(current_class(), Class::Normal);
            crate::realtime::set_current_timer_slack_ns(1).unwrap();
            assert_eq!(current_class(), Class::LowSlack);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn buckets() {
        assert_eq!(Bucket::for_wait(100_000), Bucket::Short);
        assert_eq!(Bucket::for_wait(511_999), Bucket::Short);
        assert_eq!(Bucket::for_wait(512_000), Bucket::Medium);
        assert_eq!(Bucket::for_wait(1_000_000), Bucket::Medium);
        assert_eq!(Bucket::for_wait(4_000_000), Bucket::Long);
        assert_eq!(Bucket::for_wait(u64::MAX), Bucket::Long);
    }

    #[test]
    fn measured_margins_are_plausible() {
        let m = remeasure_wake_margins();
        for d in [m.short, m.medium, m.long] {
            assert!(d >= Duration::from_nanos(MIN_MARGIN_NS));
            assert!(d <= Duration::from_nanos(MAX_MARGIN_NS + MAX_MARGIN_NS / 8));
        }
        assert!(wake_margin(Duration::from_micros(200)) > Duration::ZERO);
    }

    #[test]
    fn estimate_tracks_the_95th_percentile() {
        // Drive one slot with a synthetic overshoot distribution: 0..100 µs
        // uniform; the estimate must settle near 95 µs.
        let mut m = 5_000;
        let mut x: u64 = 12345;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            m = next_estimate(m, (x >> 33) % 100_000);
        }
        assert!((85_000..=100_000).contains(&m), "estimate {m} ns");
        // Bounded both ways.
        assert_eq!(next_estimate(MIN_MARGIN_NS, 0), MIN_MARGIN_NS);
        assert_eq!(next_estimate(MAX_MARGIN_NS, u64::MAX), MAX_MARGIN_NS);
    }
}
