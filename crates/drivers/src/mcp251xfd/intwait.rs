//! Waiting for the INT line: sleep on the GPIO edge when the interrupt is
//! far off, poll the level when it is due soon — within a CPU budget.
//!
//! The GPIO layer's own adaptive wait ([`LineRequest::wait_edge`]) polls
//! when the *average* wait is shorter than a wake-up; with frames 10 ms
//! apart it always sleeps, and every frame then pays the wake-up (tens of
//! µs). Traffic is often periodic, so this wait also predicts: it learns
//! the period between interrupts and its jitter, sleeps on the edge until
//! shortly before the next one is due (a timed sleep, so an early interrupt
//! still wakes it), then polls the level, yielding the CPU between looks
//! (whoever raises the interrupt may need that CPU). The guard before the
//! predicted instant covers the sleep's own lateness — tracked near its 90th
//! percentile, since a sleep that overruns the guard lets the interrupt come
//! first and pays the full wake-up — and the jitter. The lateness starts
//! from the waiting thread's timer slack (a timeout may fire that late) plus
//! 20 µs, and an interrupt that comes during the sleep, after the instant
//! the sleep was to end, raises it at once to what that proves (at most
//! doubling it).
//! Polling is used only when its expected cost — the guard — is at most
//! [`IntWaitConfig::poll_budget_permille`] of the period, so back-to-back
//! traffic (a short period) never makes the driver spin: it sleeps on the
//! edge. A poll that overruns (the interrupt did not come) falls back to
//! sleeping on the edge.

use std::time::Duration;
use wirespeed::gpio::{LineRequest, WaitMode};
use wirespeed::time::realtime::current_timer_slack_ns;
use wirespeed::time::{now, Instant};

use super::error::Error;

/// Knobs of the INT wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntWaitConfig {
    /// Largest share of the interrupt period spent polling, ‰ (0: never
    /// poll ahead of a predicted interrupt).
    pub poll_budget_permille: u32,
    /// Periods longer than this are not predicted (ns).
    pub max_period_ns: u64,
}

impl Default for IntWaitConfig {
    fn default() -> Self {
        IntWaitConfig { poll_budget_permille: 20, max_period_ns: 1_000_000_000 }
    }
}

/// Counters of the INT wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntWaitStats {
    /// Interrupts found by polling the level.
    pub polled: u64,
    /// Interrupts that woke a sleep on the edge.
    pub woken: u64,
    /// Interrupts already asserted when the wait began.
    pub immediate: u64,
    /// Timed sleeps ahead of a predicted interrupt.
    pub timed_sleeps: u64,
    /// Interrupts that came during a timed sleep (before the poll window).
    pub early: u64,
    /// Poll windows that ended without the interrupt.
    pub poll_misses: u64,
    /// Learned period, ns.
    pub period_ns: u64,
    /// Learned jitter, ns.
    pub jitter_ns: u64,
    /// Learned lateness of a timed sleep, ns (0 before the first predicted wait).
    pub oversleep_ns: u64,
}

fn ewma(old: u64, new: u64) -> u64 {
    (old * 7 + new) / 8
}

/// A high-quantile tracker: up by a quarter of the excess (at most 10 µs,
/// so a preempted sleep moves it a little, not by its size), down by 1/32
/// of the shortfall; it settles near the 90th percentile of its samples.
fn upper(old: u64, new: u64) -> u64 {
    if new > old {
        old + ((new - old) / 4).min(10_000)
    } else {
        old - (old - new) / 32
    }
}

/// How late a timed sleep is assumed to wake, beyond the waiting thread's
/// timer slack, before any has been measured, ns.
const WAKE_LATENCY_NS: u64 = 20_000;

/// State of the INT wait.
#[derive(Debug)]
pub(crate) struct IntWait {
    cfg: IntWaitConfig,
    offset: u32,
    active_low: bool,
    last: Option<Instant>,
    period: Option<u64>,
    jitter: u64,
    /// How late a timed sleep wakes (a high quantile), ns; `None` until the
    /// first predicted wait, which seeds it on the waiting thread.
    oversleep: Option<u64>,
    /// How long after its stamp an interrupt is seen (moving average), ns.
    late: u64,
    pub(crate) stats: IntWaitStats,
}

impl IntWait {
    pub(crate) fn new(cfg: IntWaitConfig, req: &LineRequest, offset: u32) -> Result<IntWait, Error> {
        let s = req.settings(offset)?;
        if s.direction != wirespeed::gpio::Direction::Input || s.edge == wirespeed::gpio::Edge::None {
            return Err(Error::InvalidConfig {
                what: "INT line",
                value: format!("line {offset}: {:?}, edge {:?}", s.direction, s.edge),
                allowed: "an input with edge detection on the falling (asserting) edge or both",
            });
        }
        req.set_wait_mode(WaitMode::Sleep);
        Ok(IntWait {
            cfg,
            offset,
            active_low: s.active_low,
            last: None,
            period: None,
            jitter: 0,
            oversleep: None,
            late: 20_000,
            stats: IntWaitStats::default(),
        })
    }

    /// Whether INT is asserted (the pin is low) now.
    #[inline]
    pub(crate) fn asserted(&self, req: &LineRequest) -> Result<bool, Error> {
        // With active-low, logical 1 is the low pin; without, logical 0 is.
        Ok(req.value(self.offset)? == self.active_low)
    }

    fn arrived(&mut self, at: Instant) {
        if let Some(l) = self.last {
            let p = at.ns_since(l);
            if p > self.cfg.max_period_ns {
                self.period = None;
            } else if let Some(old) = self.period {
                self.jitter = ewma(self.jitter, p.abs_diff(old));
                self.period = Some(ewma(old, p));
            } else {
                self.period = Some(p);
            }
        }
        self.last = Some(at);
        self.stats.period_ns = self.period.unwrap_or(0);
        self.stats.jitter_ns = self.jitter;
        self.stats.oversleep_ns = self.oversleep.unwrap_or(0);
    }

    /// How long before a predicted interrupt to start polling, given how
    /// late a timed sleep wakes.
    fn guard(&self, oversleep: u64) -> u64 {
        oversleep + 2 * self.jitter + 10_000
    }

    /// Waits until INT is asserted or `deadline` passes; true if asserted.
    pub(crate) fn wait(&mut self, req: &LineRequest, deadline: Option<Instant>) -> Result<bool, Error> {
        let start = now();
        // An edge stamped before the wait began is a stale event (its
        // interrupt was found by polling): the wake-up instant stands in.
        let stamp = |ev: Option<wirespeed::gpio::EdgeEvent>, woke: Instant| match ev {
            Some(e) if e.timestamp >= start && e.timestamp <= woke => e.timestamp,
            _ => woke,
        };
        if self.asserted(req)? {
            self.stats.immediate += 1;
            self.arrived(now());
            return Ok(true);
        }
        // Poll ahead of a predicted interrupt, if affordable.
        if let (Some(last), Some(period)) = (self.last, self.period) {
            // A sleep's timeout may fire as late as the waiting thread's
            // timer slack (50 µs for a normal thread): start from there, or
            // the first sleeps (one in five of a 100-frame run, measured)
            // overrun the guard while `upper` learns it.
            let oversleep = *self.oversleep.get_or_insert_with(|| WAKE_LATENCY_NS + current_timer_slack_ns());
            let guard = self.guard(oversleep);
            let affordable =
                guard.saturating_mul(1000) <= period.saturating_mul(u64::from(self.cfg.poll_budget_permille));
            let predicted = last.add_ns(period);
            let poll_from = Instant::from_ns(predicted.as_ns().saturating_sub(guard));
            let t = now();
            if affordable && t < predicted.add_ns(guard) {
                if t < poll_from {
                    let until = deadline.map_or(poll_from, |d| d.min(poll_from));
                    self.stats.timed_sleeps += 1;
                    let ev = req.wait_edge_event(Some(Duration::from_nanos(until.ns_since(t))))?;
                    let woke = now();
                    match ev {
                        // Woken by the timeout: exactly how late it was.
                        None if woke >= until => self.oversleep = Some(upper(oversleep, woke.ns_since(until))),
                        // Woken by an interrupt that came after `until`: the
                        // timeout had not fired by then, so the sleep was at
                        // least that late (a bound that can only raise it).
                        // Such a sleep costs the frame a whole wake-up, so
                        // the bound is taken at once (at most doubling the
                        // estimate, so one preempted sleep cannot price
                        // polling out of the budget for good).
                        Some(e) if e.timestamp > until && e.timestamp.ns_since(until) > oversleep => {
                            let at_least = e.timestamp.ns_since(until);
                            self.oversleep = Some(at_least.min(2 * oversleep));
                        }
                        _ => {}
                    }
                    if self.asserted(req)? {
                        self.stats.woken += 1;
                        self.stats.early += 1;
                        self.arrived(stamp(ev, woke));
                        return Ok(true);
                    }
                }
                // The interrupt may come late by the wake-up of whoever
                // raises it: allow as long again after the prediction.
                let budget_end = predicted.add_ns(2 * guard + self.late);
                let stop = deadline.map_or(budget_end, |d| d.min(budget_end));
                loop {
                    if self.asserted(req)? {
                        self.stats.polled += 1;
                        // The edge the poll found is queued: its stamp is
                        // the arrival (as for a woken wait), and taking it
                        // leaves no stale event behind.
                        let seen = now();
                        let mut at = seen;
                        while let Some(e) = req.try_edge_event()? {
                            if e.timestamp <= seen {
                                at = e.timestamp;
                            }
                        }
                        self.late = ewma(self.late, seen.ns_since(at));
                        self.arrived(at);
                        return Ok(true);
                    }
                    if now() >= stop {
                        self.stats.poll_misses += 1;
                        break;
                    }
                    // Yield, not spin: whoever raises the interrupt may need
                    // this CPU to do it (the thread is back at once if not).
                    std::thread::yield_now();
                }
            }
        }
        // Sleep on the edge (stale events from polled interrupts just loop once).
        loop {
            let left = match deadline {
                None => None,
                Some(d) => {
                    let t = now();
                    if t >= d {
                        return Ok(false);
                    }
                    Some(Duration::from_nanos(d.ns_since(t)))
                }
            };
            let ev = req.wait_edge_event(left)?;
            if self.asserted(req)? {
                self.stats.woken += 1;
                let woke = now();
                self.arrived(stamp(ev, woke));
                return Ok(true);
            }
            if ev.is_none() && deadline.is_some_and(|d| now() >= d) {
                return Ok(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::upper;

    #[test]
    fn upper_tracks_a_high_quantile_and_ignores_a_single_outlier() {
        let mut q = 20_000;
        // Mostly 100 µs, one in ten 150 µs: settles between the two.
        for i in 0..2_000 {
            q = upper(q, if i % 10 == 0 { 150_000 } else { 100_000 });
        }
        assert!((100_000..=150_000).contains(&q), "{q}");
        // One 10 ms outlier moves it by at most 10 µs.
        let before = q;
        q = upper(q, 10_000_000);
        assert_eq!(q, before + 10_000);
        // Lower samples bring it down, slowly.
        for _ in 0..500 {
            q = upper(q, 50_000);
        }
        assert!(q < 60_000, "{q}");
    }
}
