//! [`Delay`]: the `time` layer's precise delays as an embedded-hal 1.0
//! [`DelayNs`], for driver crates that take a delay provider.
//!
//! Waits spin on the monotonic clock below the spin threshold (100 µs by
//! default) and sleep-then-spin above it, so a 1 µs delay takes about 1 µs
//! rather than the 53–82 µs of a `nanosleep(1 µs)` at normal priority (seed
//! 004's measurement); never shorter than asked.
//!
//! ```
//! use embedded_hal::delay::DelayNs;
//! let mut delay = wirespeed::delay::Delay;
//! let t = wirespeed::time::now();
//! delay.delay_us(20);
//! assert!(wirespeed::time::now().ns_since(t) >= 20_000);
//! ```

use embedded_hal::delay::DelayNs;

/// A delay provider backed by [`time::delay_ns`](crate::time::delay_ns).
/// Holds no state: create one wherever a driver needs it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Delay;

impl DelayNs for Delay {
    fn delay_ns(&mut self, ns: u32) {
        crate::time::delay_ns(u64::from(ns));
    }

    fn delay_us(&mut self, us: u32) {
        crate::time::delay_ns(u64::from(us) * 1_000);
    }

    fn delay_ms(&mut self, ms: u32) {
        crate::time::delay_ns(u64::from(ms) * 1_000_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::now;

    #[test]
    fn waits_at_least_as_long_as_asked_in_every_unit() {
        let mut d = Delay;
        let t = now();
        d.delay_ns(3_000);
        assert!(now().ns_since(t) >= 3_000);
        let t = now();
        d.delay_us(150);
        assert!(now().ns_since(t) >= 150_000);
        let t = now();
        d.delay_ms(5);
        assert!(now().ns_since(t) >= 5_000_000);
    }
}
