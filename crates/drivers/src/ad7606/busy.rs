//! Waiting for the end of a conversion. With BUSY wired ([`Busy::Edge`]),
//! the driver decides how, as the SPI core decides how to complete a
//! transfer: a conversion shorter than the BUSY line's measured wake-up
//! cost is waited by spinning to its predicted end, then polling BUSY's
//! level (edge detection is then switched off on the line: no event per
//! conversion to queue and discard); a longer one sleeps on BUSY's falling edge. Without BUSY
//! ([`Busy::Predicted`]) the datasheet's maximum conversion time is waited
//! with the stack's precise delay.

use super::error::Error;
use wirespeed::gpio::{Direction, Edge, LineConfig, LineRequest};
use wirespeed::time::{delay_until, now, spin_until, Deadline, Instant};

/// How the driver learns that a conversion ended.
#[derive(Debug)]
pub enum Busy {
    /// BUSY is wired to this request's only line (an input with edge
    /// detection on the falling edge, or both).
    Edge(LineRequest),
    /// BUSY is not wired: wait the datasheet's maximum conversion time.
    Predicted,
}

/// How the wait is done (chosen once, from the figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusyMode {
    /// Spin to the predicted end, then poll BUSY's level.
    Poll,
    /// Sleep on BUSY's falling edge.
    Sleep,
    /// No BUSY line: wait the maximum conversion time.
    Predicted,
}

/// Counters of the BUSY waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusyStats {
    /// Waits that found BUSY low by polling.
    pub polled: u64,
    /// Polls that found BUSY still high at the predicted end.
    pub poll_extra: u64,
    /// Waits that slept on the edge.
    pub slept: u64,
    /// Waits that only waited the predicted time.
    pub predicted: u64,
}

#[derive(Debug)]
pub(crate) struct BusyWait {
    line: Option<(LineRequest, u32, bool)>,
    pub(crate) mode: BusyMode,
    typ_ns: u64,
    max_ns: u64,
    slack_ns: u64,
    pub(crate) stats: BusyStats,
}

impl BusyWait {
    pub(crate) fn new(busy: Busy, typ_ns: u64, max_ns: u64, slack_ns: u64) -> Result<BusyWait, Error> {
        let (line, mode) = match busy {
            Busy::Predicted => (None, BusyMode::Predicted),
            Busy::Edge(req) => {
                let offset = single_line(&req, "BUSY")?;
                let s = req.settings(offset).map_err(|error| Error::Gpio { line: "BUSY", error })?;
                if s.direction != Direction::Input || !matches!(s.edge, Edge::Falling | Edge::Both) {
                    return Err(Error::invalid(
                        "BUSY line",
                        format!("line {offset}: {:?}, edge {:?}", s.direction, s.edge),
                        "an input with edge detection on the falling edge or both",
                    ));
                }
                // The edge's wake-up cost is the line's own learned figure.
                let wake = req.wait_stats().wake_cost_ns;
                let mode = if typ_ns < wake { BusyMode::Poll } else { BusyMode::Sleep };
                if mode == BusyMode::Poll {
                    // Polling reads the level: edge events would only be
                    // queued (an interrupt each, on Linux) to be thrown away.
                    let cfg = LineConfig::new().line(offset, s.edge(Edge::None));
                    req.reconfigure(&cfg).map_err(|error| Error::Gpio { line: "BUSY", error })?;
                }
                (Some((req, offset, s.active_low)), mode)
            }
        };
        Ok(BusyWait { line, mode, typ_ns, max_ns, slack_ns, stats: BusyStats::default() })
    }

    /// Before CONVST: forget edges left from earlier conversions, so that
    /// a sleeping wait sees this conversion's.
    #[inline]
    pub(crate) fn arm(&mut self) -> Result<(), Error> {
        if let (BusyMode::Sleep, Some((req, _, _))) = (self.mode, &self.line) {
            while req.try_edge_event().map_err(gpio)?.is_some() {}
        }
        Ok(())
    }

    /// Waits until the conversion started at `start` has ended.
    #[inline]
    pub(crate) fn wait(&mut self, start: Instant) -> Result<(), Error> {
        let limit = start.add_ns(self.max_ns + self.slack_ns);
        let Some((req, offset, active_low)) = &self.line else {
            self.stats.predicted += 1;
            delay_until(Deadline::at(start.add_ns(self.max_ns)));
            return Ok(());
        };
        let busy = |r: &LineRequest| -> Result<bool, Error> { Ok(r.value(*offset).map_err(gpio)? != *active_low) };
        match self.mode {
            BusyMode::Poll => {
                spin_until(Deadline::at(start.add_ns(self.typ_ns)));
                if busy(req)? {
                    self.stats.poll_extra += 1;
                    // Past the typical end: yield between looks, whoever
                    // lowers BUSY may need this CPU.
                    while busy(req)? {
                        if now() >= limit {
                            return self.timeout(start);
                        }
                        std::thread::yield_now();
                    }
                }
                self.stats.polled += 1;
                Ok(())
            }
            _ => {
                self.stats.slept += 1;
                while busy(req)? {
                    let t = now();
                    if t >= limit {
                        return self.timeout(start);
                    }
                    req.wait_edge(Some(std::time::Duration::from_nanos(limit.ns_since(t)))).map_err(gpio)?;
                }
                Ok(())
            }
        }
    }

    fn timeout(&self, start: Instant) -> Result<(), Error> {
        Err(Error::BusyTimeout { waited_ns: now().ns_since(start), max_conversion_ns: self.max_ns })
    }
}

fn gpio(error: wirespeed::gpio::GpioError) -> Error {
    Error::Gpio { line: "BUSY", error }
}

/// The offset of a request's only line.
pub(crate) fn single_line(req: &LineRequest, what: &'static str) -> Result<u32, Error> {
    match req.offsets() {
        [o] => Ok(*o),
        other => Err(Error::invalid(
            if what == "BUSY" { "BUSY request" } else { "CONVST request" },
            format!("{} lines {other:?}", other.len()),
            "a request of exactly one line",
        )),
    }
}
