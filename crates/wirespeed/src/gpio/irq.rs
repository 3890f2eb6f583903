//! Interrupt lines: a driver waits for a device's interrupt as a GPIO edge.
//!
//! [`LineRequest::wait_edge`] and [`LineRequest::wait_level`] either poll
//! (spin reading the line's events or level) or sleep (block on the event
//! descriptor), and choose by themselves, as the SPI core chooses how to
//! complete a transfer: **poll when the expected wait is shorter than the
//! measured cost of a wake-up**, sleep otherwise. Both figures are learned
//! per handle:
//! - the expected wait: a moving average of how long past waits took (from
//!   the call to the edge's timestamp);
//! - the wake-up cost: a moving average, over sleeping waits, of the time
//!   from the edge's timestamp to the waiter running again.
//!
//! A poll that overruns its budget (twice the wake-up cost) falls back to
//! sleeping, so a mispredicted wait costs at most that much CPU.
//! [`WaitMode`] forces one way, e.g. for measurements.

use super::backend::EdgeEvent;
use super::config::Edge;
use super::error::GpioError;
use super::guard::AccessGuard;
use super::request::LineRequest;
use std::cell::Cell;
use std::time::Duration;
use wirespeed_time::{now, Instant};

/// Wake-up cost assumed before one was measured (seed 004: a sleep at normal
/// priority costs ~50 µs or more).
pub const DEFAULT_WAKE_COST_NS: u64 = 50_000;

/// How a wait waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitMode {
    /// Poll if the expected wait is below the measured wake-up cost, else sleep.
    #[default]
    Adaptive,
    /// Always poll (spin) until the deadline.
    Poll,
    /// Always sleep.
    Sleep,
}

/// What a handle learned about its waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitStats {
    /// Waits that polled.
    pub polled: u64,
    /// Waits that slept (including polls that fell back to sleeping).
    pub slept: u64,
    /// Measured wake-up cost (moving average), ns.
    pub wake_cost_ns: u64,
    /// Expected wait (moving average), ns; `None` before the first event.
    pub expected_wait_ns: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct WaitState {
    mode: Cell<WaitMode>,
    polled: Cell<u64>,
    slept: Cell<u64>,
    wake_cost_ns: Cell<u64>,
    expected_ns: Cell<Option<u64>>,
}

impl Default for WaitState {
    fn default() -> Self {
        WaitState {
            mode: Cell::new(WaitMode::Adaptive),
            polled: Cell::new(0),
            slept: Cell::new(0),
            wake_cost_ns: Cell::new(DEFAULT_WAKE_COST_NS),
            expected_ns: Cell::new(None),
        }
    }
}

fn ewma(old: u64, new: u64) -> u64 {
    (old * 3 + new) / 4
}

impl WaitState {
    fn should_poll(&self) -> bool {
        match self.mode.get() {
            WaitMode::Poll => true,
            WaitMode::Sleep => false,
            WaitMode::Adaptive => self.expected_ns.get().is_some_and(|e| e < self.wake_cost_ns.get()),
        }
    }

    fn record_wait(&self, start: Instant, event_at: Instant) {
        let w = event_at.ns_since(start);
        self.expected_ns.set(Some(self.expected_ns.get().map_or(w, |e| ewma(e, w))));
    }

    fn record_wake(&self, event_at: Instant, woke: Instant) {
        self.wake_cost_ns.set(ewma(self.wake_cost_ns.get(), woke.ns_since(event_at)));
    }

    fn stats(&self) -> WaitStats {
        WaitStats {
            polled: self.polled.get(),
            slept: self.slept.get(),
            wake_cost_ns: self.wake_cost_ns.get(),
            expected_wait_ns: self.expected_ns.get(),
        }
    }
}

fn deadline_of(start: Instant, timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| start.add_ns(t.as_nanos().min(u128::from(u64::MAX)) as u64))
}

impl<G: AccessGuard> LineRequest<G> {
    /// Chooses how [`LineRequest::wait_edge`] and [`LineRequest::wait_level`] wait.
    pub fn set_wait_mode(&self, mode: WaitMode) {
        self.waits.mode.set(mode);
    }

    /// What this handle learned about its waits.
    pub fn wait_stats(&self) -> WaitStats {
        self.waits.stats()
    }

    /// Waits for the next edge event of the request (an interrupt), polling
    /// or sleeping as the expected wait and the wake-up cost decide.
    /// `Ok(None)` if `timeout` passes first (`None`: no timeout).
    pub fn wait_edge(&self, timeout: Option<Duration>) -> Result<Option<EdgeEvent>, GpioError> {
        let start = now();
        let deadline = deadline_of(start, timeout);
        if let Some(e) = self.try_edge_event()? {
            self.waits.record_wait(start, e.timestamp);
            return Ok(Some(e));
        }
        if self.waits.should_poll() {
            self.waits.polled.set(self.waits.polled.get() + 1);
            let budget = match self.waits.mode.get() {
                WaitMode::Poll => deadline,
                _ => {
                    let b = start.add_ns(2 * self.waits.wake_cost_ns.get());
                    Some(deadline.map_or(b, |d| d.min(b)))
                }
            };
            loop {
                if let Some(e) = self.try_edge_event()? {
                    self.waits.record_wait(start, e.timestamp);
                    return Ok(Some(e));
                }
                let t = now();
                if deadline.is_some_and(|d| t >= d) {
                    return Ok(None);
                }
                if budget.is_some_and(|b| t >= b) {
                    break; // Mispredicted: sleep for the rest.
                }
                std::hint::spin_loop();
            }
        }
        self.waits.slept.set(self.waits.slept.get() + 1);
        let e = self.sleep_for_event(deadline)?;
        if let Some(e) = e {
            let woke = now();
            self.waits.record_wait(start, e.timestamp);
            if e.timestamp >= start {
                self.waits.record_wake(e.timestamp, woke);
            }
        }
        Ok(e)
    }

    /// Waits until line `offset` reads logical `level`; returns false on
    /// timeout. Checks the level first; then waits for edges (consuming the
    /// request's edge events), which needs edge detection on the line —
    /// unless the handle's mode is [`WaitMode::Poll`], which polls the level.
    pub fn wait_level(&self, offset: u32, level: bool, timeout: Option<Duration>) -> Result<bool, GpioError> {
        let start = now();
        let deadline = deadline_of(start, timeout);
        if self.is_output(offset)? {
            return Err(GpioError::WrongDirection { offset, needs: "an input" });
        }
        if self.value(offset)? == level {
            return Ok(true);
        }
        if self.waits.mode.get() == WaitMode::Poll {
            loop {
                if self.value(offset)? == level {
                    return Ok(true);
                }
                if deadline.is_some_and(|d| now() >= d) {
                    return Ok(false);
                }
                std::hint::spin_loop();
            }
        }
        if self.settings(offset)?.edge == Edge::None {
            return Err(GpioError::invalid(
                "wait_level",
                format!("line {offset} without edge detection"),
                "a line with edge detection, or WaitMode::Poll",
            ));
        }
        loop {
            let left = match deadline {
                None => None,
                Some(d) => {
                    let t = now();
                    if t >= d {
                        return Ok(self.value(offset)? == level);
                    }
                    Some(Duration::from_nanos(d.ns_since(t)))
                }
            };
            let e = self.wait_edge(left)?;
            if self.value(offset)? == level {
                return Ok(true);
            }
            if e.is_none() {
                return Ok(false);
            }
        }
    }
}
