//! A CPU budget for polling transfers that adaptive completion would
//! otherwise sleep through.
//!
//! Above its break-even point (the wake-up's latency plus the sleep's own
//! CPU) a transfer sleeps: that saves CPU and adds the wake-up's latency.
//! Where the bus is mostly idle — a register read every few milliseconds —
//! the CPU saved is a sliver of the machine and the latency is the whole
//! point, so such a transfer is polled instead while the bus's polling
//! beyond break-even stays within [`PERMILLE`] of wall time. A busy bus
//! spends its budget at once and goes back to sleeping, as before. The
//! budget is a token bucket refilled with the clock and capped at
//! [`CAP_NS`] (a few transfers' worth), so a long idle spell does not buy
//! a long spell of polling. It lives with the bus's hardware, under the
//! bus lock: one message at a time reads and spends it.

/// The share of wall time, ‰, that polling beyond break-even may take.
pub(crate) const PERMILLE: u64 = 3;
/// The most polling time the budget holds, ns.
pub(crate) const CAP_NS: u64 = 100_000;

/// The polling budget of one bus.
#[derive(Debug, Default)]
pub(crate) struct PollBudget {
    tokens_ns: u64,
    /// When the budget was last refilled (ns on the monotonic clock; 0: never).
    at_ns: u64,
}

impl PollBudget {
    /// Whether a transfer of `wire_ns` may be polled at `now_ns`; if so, its
    /// wire time is spent. A refused transfer spends nothing.
    pub(crate) fn take(&mut self, wire_ns: u64, now_ns: u64) -> bool {
        let earned = now_ns.saturating_sub(self.at_ns).saturating_mul(PERMILLE) / 1000;
        if self.tokens_ns.saturating_add(earned) >= CAP_NS {
            self.tokens_ns = CAP_NS;
            self.at_ns = now_ns;
        } else {
            // Only the time turned into budget is used up: calls closer
            // together than 1000 / PERMILLE ns still earn their share.
            self.tokens_ns += earned;
            self.at_ns += earned * 1000 / PERMILLE;
        }
        if self.tokens_ns < wire_ns {
            return false;
        }
        self.tokens_ns -= wire_ns;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_bus_polls_and_a_busy_one_is_held_to_its_share() {
        let mut b = PollBudget::default();
        // Long idle: the bucket is full, capped.
        let t0 = 1_000_000_000;
        assert!(b.take(10_000, t0));
        assert_eq!(b.tokens_ns, CAP_NS - 10_000);
        // Back to back: 10 µs transfers every 20 µs would poll half the
        // time; the budget lets through no more than its share once the
        // cap is spent.
        let (mut polled, mut t) = (0u64, t0);
        for _ in 0..10_000 {
            t += 20_000;
            polled += u64::from(b.take(10_000, t));
        }
        let allowed = (CAP_NS + 10_000 * 20_000 * PERMILLE / 1000) / 10_000;
        assert!(polled <= allowed, "polled {polled} transfers, the budget allows {allowed}");
        assert!(polled >= allowed - 1, "polled {polled} transfers, the budget allows {allowed}");
    }

    #[test]
    fn a_refused_transfer_spends_nothing_and_the_cap_holds() {
        let mut b = PollBudget::default();
        let t = 5_000_000_000;
        assert!(!b.take(CAP_NS + 1, t), "more than the cap is never polled");
        assert_eq!(b.tokens_ns, CAP_NS);
        assert!(b.take(CAP_NS, t));
        assert!(!b.take(1, t), "an empty budget refuses");
        // Earned back at PERMILLE of the time that passed.
        assert!(b.take(1_000, t + (1_000 * 1000u64).div_ceil(PERMILLE)));
    }

    #[test]
    fn frequent_calls_earn_the_same_as_rare_ones() {
        // Asked every 100 ns (each call earning less than 1 ns), the
        // budget still grows at PERMILLE of the time.
        let mut b = PollBudget::default();
        let t0 = 10_000_000_000;
        assert!(b.take(CAP_NS, t0));
        let mut t = t0;
        for _ in 0..100_000 {
            t += 100;
            assert!(!b.take(CAP_NS, t));
        }
        let expected = (t - t0) * PERMILLE / 1000;
        assert!(b.tokens_ns + 1 >= expected, "earned {} ns over {} ns, expected {expected}", b.tokens_ns, t - t0);
    }
}
