//! Sleeping through most of a transfer whose end is predictable
//! ([`Completion::Timed`](crate::spi::Completion::Timed)). A transfer that
//! fits the FIFO sleeps on the block's RX-threshold interrupt, set as many
//! words before its end as an interrupt's wake-up takes, or at its last
//! word when the words before that lead take no longer than a sleep's own
//! CPU: the lead is most or all of the transfer, and waking ahead would
//! cost more than polling it whole (`LabSpi::sleep_until_rx_level`). A DMA
//! transfer sleeps until the predicted end less how late this driver's
//! timed waits wake up, on the block's interrupt line with only its error
//! interrupt enabled, so that an error ends the sleep at once. Either way
//! the caller polls the rest.
//!
//! How early to wake is learnt as it goes ([`WakeLateness`], one for each
//! way): the timer's starts from the delay layer's measured wake-up margin
//! plus the thread's timer slack (a futex timeout may fire that much late),
//! the interrupt's from the SPI core's wake-up probe; each then rises whenever the
//! first status read after a wake-up finds the transfer already done (the
//! wake-up came after the end) and falls slowly when it does not (the
//! interrupt's also when it was too long for a transfer to sleep through
//! at all), so that about one timer's wake-up in twenty comes after the
//! end, and one interrupt's in three where its lead is much of the
//! transfer. What it learns
//! includes whatever delays the real end past the predicted one (IOTLB
//! walks of a DMA transfer) and what delays the first status read after the
//! wake-up (on the lab: its emulation of the words shifted during the sleep).

use super::{LabSpi, Timeout};
use crate::spi::ControllerFault;
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
/// each wake-up that came after the transfer's end, `1/down` of a step less
/// after each one before it, so that it settles where about one wake-up in
/// `down + 1` comes after the end.
#[derive(Debug)]
pub(super) struct WakeLateness {
    ns: Option<u64>,
    /// `down` while the estimate is more than [`SMALL_SHARE`] of the wait;
    /// below, [`TIMER_DOWN`].
    down: u64,
}

/// A timer's sleep through a long transfer, and any wait that the estimate
/// is a small part of: about one wake-up in twenty after its end.
const TIMER_DOWN: u64 = 19;

/// An RX-level interrupt's, where its lead is a large part of the transfer:
/// about one in three. A wake-up after the end costs only what it comes
/// after the end, while a lead longer than the wake-ups need is polled on
/// every transfer; and interrupt wake-ups on a busy machine have a tail
/// that a one-in-twenty lead pays for every time, leaving a short transfer
/// nothing to sleep through (on this 2-CPU VM under back-to-back CAN
/// traffic, measured: a median of 3–4 µs and one in five or more 12–16 µs,
/// as long as the transfers themselves). Measured A B A B in
/// `bench canecho --quick`, one in three against one in five: fast's CPU
/// per echo 28.4–30.6 µs against 31.0–34.1, its median gap unchanged
/// (31.1–32.1 µs against 31.0–34.5).
const IRQ_DOWN: u64 = 2;

/// An estimate below this share of the wait (1/4) costs little of it to
/// keep long: late wake-ups are held to one in twenty ([`TIMER_DOWN`]),
/// whatever the waker (a 64-byte transfer at 1 MHz: 512 µs, against a lead
/// of a few µs).
const SMALL_SHARE: u64 = 4;

impl Default for WakeLateness {
    fn default() -> Self {
        WakeLateness { ns: None, down: TIMER_DOWN }
    }
}

impl WakeLateness {
    /// An interrupt's estimate ([`IRQ_DOWN`]), starting at `ns`.
    pub(super) fn for_interrupt(ns: u64) -> WakeLateness {
        WakeLateness { ns: Some(ns), down: IRQ_DOWN }
    }

    /// The estimate of one that starts seeded ([`WakeLateness::for_interrupt`]).
    fn seeded_ns(&self) -> u64 {
        self.ns.unwrap_or(0)
    }

    fn get(&mut self, wait: Duration) -> u64 {
        *self.ns.get_or_insert_with(|| wake_margin(wait).as_nanos() as u64 + current_timer_slack_ns())
    }

    /// A wait shorter than the estimate was not slept through, so it
    /// tested nothing: the estimate eases down as after a wake-up in time,
    /// so that it is tested again. One that only rose would never see
    /// wake-ups get quicker (the host's load changed) once it passed the
    /// length of the waits it serves: none would be slept through again.
    fn untested(&mut self) {
        self.observe(false, 0);
    }

    /// A wait of `wait_ns` woke before its end or after it.
    fn observe(&mut self, woke_after_end: bool, wait_ns: u64) {
        let m = self.ns.unwrap_or(0);
        let step = (m / 64).max(500);
        let down = if m.saturating_mul(SMALL_SHARE) <= wait_ns { TIMER_DOWN } else { self.down };
        let next = if woke_after_end { m.saturating_add(step) } else { m.saturating_sub(step / down) };
        self.ns = Some(next.min(MAX_LATENESS_NS));
    }
}

impl LabSpi {
    /// Sleeps through most of a started burst of `n` words that all fit in
    /// the FIFO, on the block's RX-threshold interrupt set that many words
    /// before the end that the interrupt's wake-up takes (`irq_lead`: how
    /// late interrupt waits wake, learnt as timed sleeps' is): a FIFO level
    /// interrupt instead of a timer, so the wake-up costs what an
    /// interrupt's does, and no timer's lateness. A burst whose words
    /// before that lead take no longer than a sleep's own CPU
    /// (`sleep_cpu_ns`) sleeps until its last word instead: waking ahead
    /// would cost more CPU than polling it whole, for no less latency, and
    /// the core chose to sleep through it (its wire time is above the
    /// break-even point, or the bus's polling budget is spent), not to
    /// poll; such a wait tests no lead, which eases down as if untested.
    /// Errors end the sleep at once; the caller polls the rest.
    pub(super) fn sleep_until_rx_level(&mut self, n: usize, timeout: &mut Timeout) -> Result<(), ControllerFault> {
        let lead_ns = self.irq_lead.seeded_ns();
        let lead_words = lead_ns.div_ceil(self.word_ns.max(1)).max(1) as usize;
        let ahead = lead_words < n && self.burst_ns(n - lead_words) > self.sleep_cpu_ns;
        if !ahead {
            self.irq_lead.untested();
        }
        let level = if ahead { n - lead_words } else { n };
        // Already there (the CS gap or other in-flight work took that long):
        // nothing to sleep for, and nothing learnt about wake-ups.
        if regs::rx_level(self.status()?) as usize >= level {
            return Ok(());
        }
        self.block.write(regs::RXTHR, level as u32);
        self.block.write(regs::IRQEN, regs::IRQ_RXTH | regs::IRQ_ERR);
        let woke = self.block.irq().wait(Some(Duration::from_nanos(timeout.deadline().remaining_ns())));
        self.block.write(regs::IRQEN, 0);
        if !woke {
            return Err(self.fail(ControllerFault::Timeout));
        }
        if ahead {
            let status = self.status()?;
            self.irq_lead.observe(status & regs::STATUS_DONE != 0, self.burst_ns(n));
        }
        Ok(())
    }

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
            self.lateness.observe(status & regs::STATUS_DONE != 0, left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WakeLateness;

    #[test]
    fn the_estimate_rises_with_late_wake_ups_and_falls_slowly_when_in_time() {
        let mut l = WakeLateness { ns: Some(50_000), ..WakeLateness::default() };
        for _ in 0..100 {
            l.observe(true, 0);
        }
        let high = l.ns.unwrap();
        assert!(high > 150_000, "{high}");
        for _ in 0..100 {
            l.observe(false, 0);
        }
        let lower = l.ns.unwrap();
        assert!(lower < high && lower > high / 2, "{lower} vs {high}");
        for _ in 0..100_000 {
            l.observe(true, 0);
        }
        assert_eq!(l.ns, Some(super::MAX_LATENESS_NS));
    }

    /// Wake-ups of 3 µs, one in ten of 12 µs: the interrupt's lead for
    /// 10 µs transfers stays near the common case and takes the tail late;
    /// for 100 µs transfers, as the timer's for any, it covers the tail.
    #[test]
    fn a_lead_that_is_much_of_an_interrupt_wait_settles_below_a_one_in_ten_tail_and_others_above_it() {
        let settle = |mut l: WakeLateness, wait_ns: u64| {
            let mut at = Vec::new();
            for i in 0..20_000u64 {
                let woke_ns = if i % 10 == 0 { 12_000 } else { 3_000 };
                let lead = l.seeded_ns();
                l.observe(woke_ns > lead, wait_ns);
                if i >= 10_000 {
                    at.push(lead);
                }
            }
            at.iter().sum::<u64>() / at.len() as u64
        };
        let short = settle(WakeLateness::for_interrupt(6_000), 10_000);
        let long = settle(WakeLateness::for_interrupt(6_000), 100_000);
        let timer = settle(WakeLateness { ns: Some(6_000), ..WakeLateness::default() }, 10_000);
        assert!((3_000..4_500).contains(&short), "interrupt lead for 10 µs waits {short} ns");
        assert!(long > 11_000, "interrupt lead for 100 µs waits {long} ns");
        assert!(timer > 11_000, "timer lead {timer} ns");
    }

    /// A transfer no longer than the learnt lead sleeps until its last word
    /// (the core chose to sleep through it), and the lead eases back until
    /// a wake-up ahead of the end is tried again.
    #[test]
    fn a_transfer_shorter_than_the_lead_sleeps_to_its_end_while_the_lead_eases_back() {
        use crate::backend::lab::LabSpi;
        use crate::spi::{Bus, DeviceConfig, Policy, Transfer};
        use wirespeed_lab::spi::regs;
        use wirespeed_lab::{Lab, LabConfig};
        let lab = Lab::new(LabConfig::default());
        let block = lab.spi_controller(Default::default());
        let mut driver = LabSpi::pio_only(block.clone());
        // 16-byte transfers at 100 kHz take 1.28 ms, long enough that even
        // a slow host (valgrind) starts waiting before the last word: a
        // lead of 2 ms is 25 words.
        driver.irq_lead = WakeLateness::for_interrupt(2_000_000);
        let policy = Policy { poll_below_ns: Some(1_000), ..Policy::fast() };
        let dev = Bus::new(driver, policy).device(DeviceConfig::new(0, 100_000)).unwrap();
        let tx: Vec<u8> = (0..16u8).collect();
        let mut rx = [0u8; 16];
        let (mut to_the_end, mut slept) = (0u32, 0u32);
        loop {
            let raised = block.irq().raise_count();
            // Whatever this transfer leaves below 16 it armed ahead of its end.
            block.write(regs::RXTHR, 16);
            dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
            if block.read(regs::RXTHR) < 16 {
                break;
            }
            to_the_end += 1;
            slept += u32::from(block.irq().raise_count() > raised);
            assert!(to_the_end < 5_000, "the lead never eased back below the transfer");
        }
        // From 2 ms down to the 1.2 ms that leave a word to sleep through, by
        // 1/128 of the lead a transfer: about 60 transfers first.
        assert!(to_the_end > 30, "woke ahead after {to_the_end} transfers: the lead did not start longer than them");
        // Each slept on its interrupt (one the host took longer than the
        // whole transfer to start waiting for would find it done: allowed).
        assert!(slept * 10 >= to_the_end * 9, "{slept} of {to_the_end} transfers slept on their interrupt");
    }

    /// A wake-up ahead of the end is tried only where the words it lets
    /// the thread sleep through take longer than a sleep's own CPU: with
    /// less to spare, waking ahead and polling the rest would cost more
    /// than polling the whole transfer, so the wait sleeps to its end.
    #[test]
    fn a_wake_up_ahead_must_spare_more_polling_than_the_sleep_costs() {
        use crate::backend::lab::LabSpi;
        use crate::spi::{Bus, DeviceConfig, Policy, Transfer};
        use wirespeed_lab::spi::regs;
        use wirespeed_lab::{Lab, LabConfig};
        // 16-byte transfers at 100 kHz (80 µs a word) under a lead of 8
        // words: waking ahead spares 8 words, 640 µs of polling.
        let armed_ahead = |sleep_cpu_ns: u64| {
            let lab = Lab::new(LabConfig::default());
            let block = lab.spi_controller(Default::default());
            let mut driver = LabSpi::pio_only(block.clone());
            driver.irq_lead = WakeLateness::for_interrupt(8 * 80_000);
            driver.sleep_cpu_ns = sleep_cpu_ns;
            let policy = Policy { poll_below_ns: Some(1_000), ..Policy::fast() };
            let dev = Bus::new(driver, policy).device(DeviceConfig::new(0, 100_000)).unwrap();
            let tx: Vec<u8> = (0..16u8).collect();
            let mut rx = [0u8; 16];
            // A first transfer translates the code under valgrind, whose
            // first run could outlast the 8 words before the level.
            dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
            let mut ahead = 0;
            for _ in 0..5 {
                block.write(regs::RXTHR, 16);
                dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).unwrap();
                ahead += u32::from(block.read(regs::RXTHR) < 16);
            }
            ahead
        };
        assert_eq!(armed_ahead(1_000_000), 0, "a sleep dearer than the 640 µs it spares woke ahead");
        // Where the sleep costs less, the wait wakes ahead (a wait that
        // began after the level was reached arms nothing: allowed once).
        let cheap = armed_ahead(100_000);
        assert!(cheap >= 4, "a sleep cheaper than what it spares woke ahead in only {cheap} of 5 transfers");
    }
}
