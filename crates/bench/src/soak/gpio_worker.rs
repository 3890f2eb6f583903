//! The GPIO worker: toggles an output line wired to an input line and
//! checks that each toggle brings exactly one edge event, of the right
//! kind, with the next sequence number.
//!
//! Per toggle: no event within a second is a lost message, a second event
//! a duplicate, a line sequence number other than the next a reordering
//! (below: duplicate), an edge of the wrong kind a corruption. When the
//! chip is unplugged (the injector's `gpio_removal`), the first
//! `GpioError::ChipGone` is that fault's report; the worker then waits for
//! the new chip, opens it and requests its lines again.

use super::budget::Budget;
use super::checker::{Checker, Settled};
use super::faults::FaultLedger;
use super::rig::{GpioSlot, GPIO_IN, GPIO_OUT};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use wirespeed::backend::lab::gpio::open;
use wirespeed::gpio::{Chip, Edge, EdgeKind, GpioError, LineRequest, LineSettings, RequestConfig};

/// How long a toggle's edge may take.
const EDGE_LIMIT: Duration = Duration::from_secs(1);
/// Pause between toggles (GPIO is a side load, not the main one).
const TOGGLE_GAP: Duration = Duration::from_micros(200);

/// The GPIO worker; `device` is its index in the per-device counts.
pub struct GpioWorker<'a> {
    slot: &'a GpioSlot,
    checker: &'a Checker,
    ledger: &'a FaultLedger,
    budget: &'a Budget,
    device: usize,
}

enum Stop {
    Budget,
    ChipGone,
    /// An unexpected error (counted): open the chip again.
    Error,
}

impl<'a> GpioWorker<'a> {
    /// A worker on `slot`'s chip, counted as device `device`.
    pub fn new(
        slot: &'a GpioSlot,
        checker: &'a Checker,
        ledger: &'a FaultLedger,
        budget: &'a Budget,
        device: usize,
    ) -> GpioWorker<'a> {
        GpioWorker { slot, checker, ledger, budget, device }
    }

    /// Toggles until the budget says stop, across chip removals.
    pub fn run(self) {
        let mut seen_generation = None;
        loop {
            let (generation, hw) = self.slot.current();
            if seen_generation == Some(generation) {
                // This chip is gone: wait for the next one.
                if !self.budget.claim(0) {
                    return;
                }
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            let outcome = open(&hw).and_then(|chip| {
                let config = RequestConfig::new("soak")
                    .line(GPIO_OUT, LineSettings::output(false))
                    .line(GPIO_IN, LineSettings::input().edge(Edge::Both));
                let request = chip.request_lines(&config)?;
                Ok(self.toggle(&chip, &request))
            });
            match outcome {
                Ok(Stop::Budget) => return,
                Ok(Stop::ChipGone) | Err(GpioError::ChipGone { .. }) => {
                    if !self.ledger.gpio_chip_gone(generation) {
                        self.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
                    }
                    seen_generation = Some(generation);
                }
                Ok(Stop::Error) => std::thread::sleep(Duration::from_millis(1)),
                Err(_) => {
                    self.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// Toggles on one chip until the budget stops or the chip goes.
    fn toggle(&self, chip: &Chip, request: &LineRequest) -> Stop {
        let tally = &self.checker.tally;
        let mut level = false;
        let mut expected_seqno = 1u32;
        loop {
            if !self.budget.claim(1) {
                return Stop::Budget;
            }
            level = !level;
            if let Err(e) = request.set_value(GPIO_OUT, level) {
                return self.failed(&e);
            }
            tally.messages.fetch_add(1, Relaxed);
            match request.wait_edge_event(Some(EDGE_LIMIT)) {
                Err(e) => return self.failed(&e),
                Ok(None) if chip.is_gone() => return Stop::ChipGone,
                Ok(None) => {
                    tally.lost_events.fetch_add(1, Relaxed);
                }
                Ok(Some(ev)) => {
                    let kind = if level { EdgeKind::Rising } else { EdgeKind::Falling };
                    if ev.kind != kind || ev.offset != GPIO_IN {
                        tally.corrupted.fetch_add(1, Relaxed);
                    }
                    let verdict = match ev.line_seqno.cmp(&expected_seqno) {
                        std::cmp::Ordering::Equal => Settled::InOrder,
                        std::cmp::Ordering::Greater => {
                            // The line's sequence skipped: the edges between were lost.
                            tally.lost_events.fetch_add(u64::from(ev.line_seqno - expected_seqno), Relaxed);
                            Settled::InOrder
                        }
                        std::cmp::Ordering::Less => Settled::Duplicated,
                    };
                    self.checker.note(self.device, verdict);
                    expected_seqno = ev.line_seqno.max(expected_seqno) + 1;
                }
            }
            match request.try_edge_event() {
                Ok(Some(_)) => {
                    tally.duplicated.fetch_add(1, Relaxed);
                }
                Ok(None) => {}
                Err(e) => return self.failed(&e),
            }
            std::thread::sleep(TOGGLE_GAP);
        }
    }

    fn failed(&self, e: &GpioError) -> Stop {
        if matches!(e, GpioError::ChipGone { .. }) {
            return Stop::ChipGone;
        }
        self.checker.tally.unexpected_errors.fetch_add(1, Relaxed);
        Stop::Error
    }
}
