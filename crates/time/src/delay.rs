//! Precise delays: [`delay`], [`delay_ns`], [`delay_until`].
//!
//! Seed 004 measured what sleeping really costs: `nanosleep(1 µs)` takes
//! 53–82 µs at normal priority, and even a 100 µs sleep overshoots by tens of
//! microseconds. So a delay here is built from the monotonic clock only —
//! never from a calibrated loop, whose calibration goes stale as soon as the
//! CPU changes frequency or the thread changes core:
//!
//! * **Short waits** (below the spin threshold, default 100 µs) spin on the
//!   clock with the CPU's pause hint. They cost the CPU for the wait and are
//!   accurate to about one clock read.
//! * **Long waits** sleep (on a per-thread `timerfd`, which unlike
//!   `clock_nanosleep` is not fired late by the thread's timer slack; see `sleep`)
//!   until the deadline minus a *wake-up margin* — how late this kind of
//!   thread wakes up on this machine, measured by the library (see
//!   [`wake_margin`]) — and spin the rest. They cost the CPU for roughly the
//!   margin only.
//!
//! A delay never returns before its deadline, and a zero delay returns at once
//! without reading the clock.
//!
//! The threshold can be changed at build time (environment variable
//! `WIRESPEED_SPIN_THRESHOLD_US` when compiling this crate, see
//! [`BUILD_SPIN_THRESHOLD`]) and at run time ([`set_spin_threshold`]).
//!
//! ```
//! use std::time::Duration;
//! use wirespeed_time::{delay, delay_ns, delay_until, now, Deadline};
//!
//! let start = now();
//! delay_ns(500);                                  // spins
//! delay(Duration::from_micros(300));              // sleeps ~the first part, spins the rest
//! delay_until(Deadline::after_ns_from(start, 1_000_000));
//! assert!(now().ns_since(start) >= 1_000_000);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::{now, Instant};
use crate::deadline::Deadline;
use crate::sleep::sleep_until;
use crate::wake_margin::{self, Bucket};

/// Parses the decimal microsecond count given at build time; a malformed
/// value stops the build with a message rather than being silently ignored.
const fn parse_threshold_us(s: &str) -> u64 {
    let b = s.as_bytes();
    assert!(!b.is_empty(), "WIRESPEED_SPIN_THRESHOLD_US is empty; expected a whole number of microseconds");
    let mut i = 0;
    let mut v: u64 = 0;
    while i < b.len() {
        let c = b[i];
        assert!(
            c.is_ascii_digit(),
            "WIRESPEED_SPIN_THRESHOLD_US must be a whole number of microseconds (digits only), e.g. 100"
        );
        v = match v.checked_mul(10) {
            Some(x) => match x.checked_add((c - b'0') as u64) {
                Some(y) => y,
                None => panic!("WIRESPEED_SPIN_THRESHOLD_US is too large"),
            },
            None => panic!("WIRESPEED_SPIN_THRESHOLD_US is too large"),
        };
        i += 1;
    }
    assert!(v <= u64::MAX / 1_000, "WIRESPEED_SPIN_THRESHOLD_US is too large");
    v
}

const BUILD_SPIN_THRESHOLD_NS: u64 = match option_env!("WIRESPEED_SPIN_THRESHOLD_US") {
    Some(s) => parse_threshold_us(s) * 1_000,
    None => 100_000,
};

/// The spin threshold this crate was built with: 100 µs unless the
/// environment variable `WIRESPEED_SPIN_THRESHOLD_US` (whole microseconds)
/// was set when it was compiled. Waits shorter than the threshold spin; waits
/// at least this long sleep first. [`set_spin_threshold`] overrides it at run
/// time.
pub const BUILD_SPIN_THRESHOLD: Duration = Duration::from_nanos(BUILD_SPIN_THRESHOLD_NS);

static SPIN_THRESHOLD_NS: AtomicU64 = AtomicU64::new(BUILD_SPIN_THRESHOLD_NS);

/// The current spin threshold (process-wide).
pub fn spin_threshold() -> Duration {
    Duration::from_nanos(SPIN_THRESHOLD_NS.load(Ordering::Relaxed))
}

/// Sets the spin threshold for the whole process and returns the previous
/// one. `Duration::ZERO` makes every delay sleep first (lowest CPU use);
/// `Duration::MAX` makes every delay spin (lowest latency, one core busy).
/// Durations beyond `u64::MAX` nanoseconds (584 years) count as that.
pub fn set_spin_threshold(threshold: Duration) -> Duration {
    let ns = u64::try_from(threshold.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(SPIN_THRESHOLD_NS.swap(ns, Ordering::Relaxed))
}

/// Waits for `duration`: spins below the spin threshold, sleeps then spins
/// above it. Never returns early; `Duration::ZERO` returns at once.
#[inline]
pub fn delay(duration: Duration) {
    delay_ns(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
}

/// Waits for `ns` nanoseconds; see [`delay`]. Zero returns without reading
/// the clock.
#[inline]
pub fn delay_ns(ns: u64) {
    if ns != 0 {
        delay_nonzero_ns(ns);
    }
}

/// [`delay_ns`] past its zero check, kept out of line: callers that pass a
/// zero (a register access with no latency) pay for the check alone.
#[inline(never)]
fn delay_nonzero_ns(ns: u64) {
    let start = now();
    wait_until(start.add_ns(ns), ns);
}

/// Waits until `deadline` has passed; returns at once (one clock read) if it
/// already has. See [`delay`].
#[inline]
pub fn delay_until(deadline: Deadline) {
    let t = now();
    let remaining = deadline.instant().ns_since(t);
    if remaining > 0 {
        wait_until(deadline.instant(), remaining);
    }
}

/// The common path: `remaining` is how far `target` lies ahead right now.
#[inline]
fn wait_until(target: Instant, remaining: u64) {
    if remaining >= SPIN_THRESHOLD_NS.load(Ordering::Relaxed) {
        sleep_then_spin(target, remaining);
    }
    spin_to(target);
}

/// Spins until `target`. The pause hint keeps the spin polite to a sibling
/// hyper-thread; it is left out for the last stretch so that the clock is
/// read as often as possible just before the deadline.
#[inline]
fn spin_to(target: Instant) {
    const NO_PAUSE_LAST_NS: u64 = 250;
    loop {
        let t = now();
        if t >= target {
            return;
        }
        if target.ns_since(t) > NO_PAUSE_LAST_NS {
            std::hint::spin_loop();
        }
    }
}

/// Shortest sleep worth a system call: below this the thread spins instead.
const MIN_SLEEP_NS: u64 = 5_000;

/// Sleeps until `target` minus the wake-up margin of this thread's class for
/// a wait this long, feeding the observed lateness back into the margin. The
/// caller spins the rest.
#[cold]
fn sleep_then_spin(target: Instant, remaining: u64) {
    let class = wake_margin::current_class();
    let bucket = Bucket::for_wait(remaining);
    let margin = wake_margin::margin_ns(class, remaining);
    // Measuring the margin (the first time) takes a while: read the clock again.
    let remaining = target.ns_since(now());
    if remaining < margin.saturating_add(MIN_SLEEP_NS) {
        if remaining >= 4 * MIN_SLEEP_NS {
            // The margin keeps waits of this length from ever sleeping, so no
            // sleep would correct it: let it drift down. (Not for tiny waits,
            // which a threshold set near zero sends here too.)
            wake_margin::observe_skipped(class, bucket);
        }
        return;
    }
    let wake_at = Instant::from_ns(target.as_ns() - margin);
    loop {
        match sleep_until(wake_at) {
            Ok(woke) => {
                wake_margin::observe(class, bucket, woke.ns_since(wake_at));
                return;
            }
            // A signal: sleep again if it is still worth it, else spin.
            Err(libc::EINTR) => {
                if wake_at.ns_since(now()) < MIN_SLEEP_NS {
                    return;
                }
            }
            // Cannot happen with a valid timespec; spin the rest regardless.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Tests that change the process-wide threshold run one at a time.
    static THRESHOLD_LOCK: Mutex<()> = Mutex::new(());

    fn elapsed_ns(f: impl FnOnce()) -> u64 {
        let s = now();
        f();
        now().ns_since(s)
    }

    #[test]
    fn build_threshold_parses() {
        assert_eq!(parse_threshold_us("0"), 0);
        assert_eq!(parse_threshold_us("100"), 100);
        assert_eq!(parse_threshold_us("250000"), 250_000);
        if option_env!("WIRESPEED_SPIN_THRESHOLD_US").is_none() {
            assert_eq!(BUILD_SPIN_THRESHOLD, Duration::from_micros(100));
        }
    }

    #[test]
    fn never_early_across_the_range() {
        let _g = THRESHOLD_LOCK.lock().unwrap();
        for ns in [1u64, 50, 999, 1_000, 10_000, 99_999, 100_000, 150_000, 1_000_000, 3_000_000] {
            for _ in 0..3 {
                let took = elapsed_ns(|| delay_ns(ns));
                assert!(took >= ns, "delay_ns({ns}) returned after {took} ns");
                let took = elapsed_ns(|| delay(Duration::from_nanos(ns)));
                assert!(took >= ns, "delay({ns} ns) returned after {took} ns");
            }
        }
    }

    #[test]
    fn one_millisecond_is_not_much_late() {
        let _g = THRESHOLD_LOCK.lock().unwrap();
        // Generous: a loaded CI machine may preempt us; take the best of a few.
        let best = (0..5).map(|_| elapsed_ns(|| delay(Duration::from_millis(1)))).min().unwrap();
        assert!(best >= 1_000_000);
        assert!(best < 3_000_000, "1 ms delay took {best} ns");
    }

    #[test]
    fn zero_and_past_deadlines_return_at_once() {
        let took = elapsed_ns(|| delay(Duration::ZERO));
        assert!(took < 1_000_000);
        let took = elapsed_ns(|| delay_until(Deadline::at(Instant::from_ns(1))));
        assert!(took < 1_000_000);
        let took = elapsed_ns(|| delay_until(Deadline::at(now())));
        assert!(took < 1_000_000);
    }

    #[test]
    fn delay_until_hits_its_deadline() {
        let _g = THRESHOLD_LOCK.lock().unwrap();
        for ns in [200u64, 20_000, 400_000, 2_000_000] {
            let d = Deadline::after_ns(ns);
            delay_until(d);
            let t = now();
            assert!(d.is_past_at(t));
            assert!(t.ns_since(d.instant()) < 50_000_000, "{} ns late", t.ns_since(d.instant()));
        }
    }

    #[test]
    fn long_delays_sleep_rather_than_spin() {
        let _g = THRESHOLD_LOCK.lock().unwrap();
        // Thread CPU time over a 20 ms delay: spinning would cost ~20 ms.
        let cpu = crate::thread_cpu_ns;
        delay(Duration::from_millis(20)); // measures the margin, if not yet known
        let c0 = cpu();
        let took = elapsed_ns(|| delay(Duration::from_millis(20)));
        let used = cpu() - c0;
        assert!(took >= 20_000_000);
        assert!(used < took / 2, "20 ms delay used {used} ns of CPU");
    }

    #[test]
    fn threshold_is_settable_and_max_means_spin() {
        let _g = THRESHOLD_LOCK.lock().unwrap();
        let old = set_spin_threshold(Duration::MAX);
        assert_eq!(spin_threshold(), Duration::from_nanos(u64::MAX));
        let took = elapsed_ns(|| delay(Duration::from_micros(300)));
        assert!(took >= 300_000);
        let back = set_spin_threshold(old);
        assert_eq!(back, Duration::from_nanos(u64::MAX));
        assert_eq!(spin_threshold(), old);
    }

    #[test]
    fn concurrent_delays_are_never_early() {
        // Stress: several threads share the margin table and update it at
        // once; every delay must still respect its deadline.
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    for k in 0..40u64 {
                        let ns = [700u64, 120_000, 600_000, 2_500_000][((i + k) % 4) as usize];
                        let s = now();
                        delay_ns(ns);
                        let took = now().ns_since(s);
                        assert!(took >= ns, "{ns} ns delay took {took} ns");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for class in wake_margin::Class::ALL {
            for bucket in Bucket::ALL {
                let m = wake_margin::peek_ns(class, bucket);
                assert!(m == wake_margin::UNKNOWN || m <= wake_margin::MAX_MARGIN_NS);
            }
        }
    }
}
