//! The WIP wait: sleep the typical time, then poll RDSR with a prepared message.

use super::error::{Error, Op};
use super::geometry::OpTime;
use super::SpiNor;
use std::time::Duration;
use wirespeed::time::{delay, now, Instant};

/// Status register 1: write in progress.
pub(crate) const SR_WIP: u8 = 0x01;

/// Added to every maximum time before [`Error::Timeout`], for the host's
/// and the bus's own latency (not scaled by [`SpiNor::set_time_scale`]).
pub const WAIT_SLACK_NS: u64 = 10_000_000;

/// Smallest sleep between two polls.
const MIN_POLL_GAP_NS: u64 = 1_000;

fn scaled(ns: u64, scale: f64) -> u64 {
    (ns as f64 * scale) as u64
}

impl SpiNor {
    /// Status register 1 via the prepared RDSR message, counted as a poll.
    fn poll_status(&mut self) -> Result<u8, Error> {
        self.dev.run(&mut self.rdsr)?;
        self.stats.status_polls += 1;
        Ok(self.rdsr.rx(0).and_then(|r| r.get(1)).copied().unwrap_or(0xFF))
    }

    /// Waits for WIP to clear after an operation that started at `start`.
    pub(super) fn wait_ready(&mut self, t: OpTime, start: Instant, op: Op, addr: u32) -> Result<(), Error> {
        let typ = scaled(t.typ_ns, self.time_scale);
        let deadline = start.add_ns(scaled(t.max_ns.max(t.typ_ns), self.time_scale) + WAIT_SLACK_NS);
        let first = start.add_ns(typ);
        let n = now();
        if first > n {
            delay(Duration::from_nanos(first.ns_since(n)));
        }
        let mut gap = (typ / 8).max(MIN_POLL_GAP_NS);
        loop {
            if self.poll_status()? & SR_WIP == 0 {
                return Ok(());
            }
            let n = now();
            if n >= deadline {
                return Err(Error::Timeout { op, addr });
            }
            delay(Duration::from_nanos(gap.min(deadline.ns_since(n)).max(1)));
            gap = (gap * 2).min(typ.max(MIN_POLL_GAP_NS));
        }
    }
}
