//! The two ways the core waits: by deadline (fast) and the kernel's way
//! (classic: rounded up to whole microseconds, busy below 10 µs, sleeping above).

use wirespeed_time::{spin_until, Deadline};

/// Waits until `deadline`; returns at once (one clock read) if it has passed.
#[inline]
pub(crate) fn wait_until(deadline: Deadline) {
    if !deadline.is_past() {
        wirespeed_time::delay_until(deadline);
    }
}

/// The kernel's `_spi_transfer_delay_ns` (5.18 and 6.9 alike): 0 returns,
/// up to 1 µs is spun for exactly that long (`ndelay`), up to 10 µs is
/// rounded up to whole microseconds and spun (`udelay`), longer is slept
/// (`usleep_range(us, us + us/10)`; a sleep takes one duration here, so the
/// range's middle, `us + us/20`).
pub(crate) fn classic_delay_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    if ns <= 1_000 {
        spin_until(Deadline::after_ns(ns));
        return;
    }
    let us = ns.div_ceil(1_000);
    if us <= 10 {
        spin_until(Deadline::after_ns(us * 1_000));
    } else {
        std::thread::sleep(std::time::Duration::from_micros(us + us / 20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_time::now;

    #[test]
    fn classic_spins_up_to_a_microsecond_and_rounds_up_above() {
        // ndelay(50) waits 50 ns, not a microsecond: the fastest of many
        // tries shows it (a preempted try is only ever longer).
        let fastest = (0..200)
            .map(|_| {
                let t = now();
                classic_delay_ns(50);
                now().ns_since(t)
            })
            .min()
            .unwrap();
        assert!((50..1_000).contains(&fastest), "ndelay(50) took at least {fastest} ns");
        let t = now();
        classic_delay_ns(1_001);
        assert!(now().ns_since(t) >= 2_000, "1.001 µs is udelay(2)");
        let t = now();
        classic_delay_ns(0);
        assert!(now().ns_since(t) < 1_000_000);
    }

    #[test]
    fn deadline_wait_is_never_early() {
        let d = Deadline::after_ns(30_000);
        wait_until(d);
        assert!(d.is_past());
    }
}
