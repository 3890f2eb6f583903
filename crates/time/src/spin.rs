//! Busy-waiting on the monotonic clock with the CPU's pause hint.
//!
//! Spinning is exact to the clock's resolution and costs the CPU for the wait;
//! it is the right tool for waits far shorter than a scheduler wake-up
//! (seed 004: `nanosleep(1 µs)` takes 53–82 µs at normal priority).

use crate::clock::{now, Instant};
use crate::deadline::Deadline;

/// Spins until `deadline` has passed and returns the instant observed then.
/// Returns at once, after one clock read, if it already has.
#[inline]
pub fn spin_until(deadline: Deadline) -> Instant {
    loop {
        let t = now();
        if deadline.is_past_at(t) {
            return t;
        }
        std::hint::spin_loop();
    }
}

/// Spins for `ns` nanoseconds from now; zero returns without reading the clock.
#[inline]
pub fn spin_for_ns(ns: u64) {
    if ns > 0 {
        spin_until(Deadline::after_ns(ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_at_least_as_long_as_asked() {
        for ns in [0u64, 50, 1_000, 20_000] {
            let start = now();
            spin_for_ns(ns);
            let took = now().ns_since(start);
            assert!(took >= ns, "asked {ns} ns, spun {took} ns");
        }
    }

    #[test]
    fn past_deadline_returns_immediately() {
        let t = now();
        let seen = spin_until(Deadline::at(Instant::from_ns(1)));
        assert!(seen >= t);
    }
}
