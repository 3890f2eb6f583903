//! Sleeping through most of a transfer whose end is predictable
//! ([`Completion::Timed`](crate::spi::Completion::Timed)): until the
//! predicted end less how late this driver's interrupt waits wake up, on the
//! block's interrupt line with only its error interrupt enabled, so that an
//! error ends the sleep at once. The caller polls the rest.
//!
//! How early to wake is learnt as it goes ([`WakeLateness`]): it starts from
//! the delay layer's measured wake-up margin plus the thread's timer slack
//! (a futex timeout may fire that much late), then rises whenever the
//! first status read after a wake-up finds the transfer already done (the
//! wake-up came after the end) and falls slowly when it does not, so that
//! about one timed transfer in twenty wakes after its end. What it learns
//! includes whatever delays the real end past the predicted one (IOTLB
//! walks of a DMA transfer) and what delays the first status read after the
//! wake-up (on the lab: its emulation of the words shifted during the sleep).

use super::LabSpi;
use std::time::Duration;
use wirespeed_lab::spi::regs;
use wirespeed_time::realtime::current_timer_slack_ns;
use wirespeed_time::{now, wake_margin, Instant};

/// Sleeps shorter than this are not worth their wake-up: the caller polls instead.
const MIN_SLEEP_NS: u64 = 10_000;

/// The most a timed wait wakes before its end: beyond this, polling costs
/// more than sleeping on the interrupt would.
const MAX_LATENESS_NS: u64 = 2_000_000;

/// However late wake-ups have been, a timed wait of a long transfer wakes
/// at most this share (1/25, 4 %) of what is left before its end: the CPU
/// stays free for 96 % of it, and a wake-up later than that is late.
const EARLY_SHARE: u64 = 25;

/// Below this much left, the share does not bind: short transfers wake as
/// early as wake-ups need.
const SHARE_FROM_NS: u64 = 2_000_000;

/// How long before a transfer's predicted end to wake: one step more after
/// each wake-up that came after the transfer's end, a nineteenth of a step
/// less after each one before it.
#[derive(Debug, Default)]
pub(super) struct WakeLateness {
    ns: Option<u64>,
}

impl WakeLateness {
    fn get(&mut self, wait: Duration) -> u64 {
        *self.ns.get_or_insert_with(|| wake_margin(wait).as_nanos() as u64 + current_timer_slack_ns())
    }

    fn observe(&mut self, woke_after_end: bool) {
        let m = self.ns.unwrap_or(0);
        let step = (m / 64).max(500);
        let next = if woke_after_end { m.saturating_add(step) } else { m.saturating_sub(step / 19) };
        self.ns = Some(next.min(MAX_LATENESS_NS));
    }
}

impl LabSpi {
    /// How long `words` words take on the wire at the clock last configured.
    pub(super) fn burst_ns(&self, words: usize) -> u64 {
        self.word_ns.saturating_mul(words as u64)
    }

    /// Sleeps until shortly before `end` (the predicted end of the running
    /// burst), waking early if the block raises its error interrupt.
    pub(super) fn sleep_until_near(&mut self, end: Instant) {
        // Done already (a wire the lab made instant, or a fault): nothing to sleep for.
        if self.block.read(regs::STATUS) & (regs::STATUS_DONE | regs::STATUS_ERR) != 0 {
            return;
        }
        let left = end.as_ns().saturating_sub(now().as_ns());
        let mut early = self.lateness.get(Duration::from_nanos(left));
        if left >= SHARE_FROM_NS {
            early = early.min(left / EARLY_SHARE);
        }
        let sleep = left.saturating_sub(early);
        if sleep < MIN_SLEEP_NS {
            return;
        }
        self.block.write(regs::IRQEN, regs::IRQ_ERR);
        let woke_on_error = self.block.irq().wait(Some(Duration::from_nanos(sleep)));
        self.block.write(regs::IRQEN, 0);
        if !woke_on_error {
            let status = self.block.read(regs::STATUS);
            self.lateness.observe(status & regs::STATUS_DONE != 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WakeLateness;

    #[test]
    fn the_estimate_rises_with_late_wake_ups_and_falls_slowly_when_in_time() {
        let mut l = WakeLateness { ns: Some(50_000) };
        for _ in 0..100 {
            l.observe(true);
        }
        let high = l.ns.unwrap();
        assert!(high > 150_000, "{high}");
        for _ in 0..100 {
            l.observe(false);
        }
        let lower = l.ns.unwrap();
        assert!(lower < high && lower > high / 2, "{lower} vs {high}");
        for _ in 0..100_000 {
            l.observe(true);
        }
        assert_eq!(l.ns, Some(super::MAX_LATENESS_NS));
    }
}
