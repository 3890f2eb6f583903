//! Paced sampling: CONVST on deadlines `start + k · period`, each set into
//! a [`SampleRing`] with its CONVST instant. A sampler that is late (it
//! was preempted) catches up: the late periods' conversions are started
//! at once, back to back, and their timestamps show the delay
//! ([`RunReport::max_late_ns`]). Lateness is bounded by
//! [`Config::max_lag`](super::Config::max_lag), the software's "FIFO
//! depth": past it the periods missed are skipped and counted as overruns,
//! as a hardware-paced CONVST would have lost them. A full ring drops the
//! new set and counts it. A rate above what the system sustains thus shows
//! up as overruns, never as a silently slower rate.

use super::error::Error;
use super::ring::SampleRing;
use super::Ad7606;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use wirespeed::time::{delay_until, now, Deadline, Instant};

/// What a sampling run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Sample periods the run covered.
    pub periods: u64,
    /// Sets read (and offered to the ring).
    pub samples: u64,
    /// Periods with no conversion: the sampler was more than `max_lag` late.
    pub missed_periods: u64,
    /// Sets the ring dropped because it was full.
    pub ring_full: u64,
    /// Largest delay of a CONVST after its deadline, ns.
    pub max_late_ns: u64,
    /// Conversions started a whole period or more after their deadline (caught up).
    pub late_sets: u64,
    /// The requested period, ns.
    pub period_ns: u64,
    /// From the first deadline to the end of the last read, ns.
    pub elapsed_ns: u64,
}

impl RunReport {
    /// Every loss: missed periods and sets dropped by a full ring.
    pub fn overruns(&self) -> u64 {
        self.missed_periods + self.ring_full
    }

    /// Sets read per second of the run.
    pub fn achieved_hz(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.samples as f64 * 1e9 / self.elapsed_ns as f64
        }
    }
}

impl Ad7606 {
    fn period_ns(&self, rate_hz: f64) -> Result<u64, Error> {
        let max = self.cfg.max_rate_hz()?;
        if !(rate_hz.is_finite() && rate_hz >= 1.0 && rate_hz <= max) {
            return Err(Error::invalid("sample rate", format!("{rate_hz} Hz"), format!("1..={max} Hz")));
        }
        Ok((1e9 / rate_hz).round() as u64)
    }

    /// Samples at `rate_hz` in this thread into `ring`, for `periods`
    /// sample periods (`None`: until `stop` is set). A set that completes
    /// allocates nothing here; overruns are in the report.
    pub fn run(
        &mut self,
        rate_hz: f64,
        periods: Option<u64>,
        ring: &SampleRing,
        stop: &AtomicBool,
    ) -> Result<RunReport, Error> {
        self.run_counting(rate_hz, periods, ring, stop, &AtomicU64::new(0))
    }

    /// [`Ad7606::run`], also adding missed periods to `missed` as they happen.
    fn run_counting(
        &mut self,
        rate_hz: f64,
        periods: Option<u64>,
        ring: &SampleRing,
        stop: &AtomicBool,
        missed: &AtomicU64,
    ) -> Result<RunReport, Error> {
        let period = self.period_ns(rate_hz)?;
        let max_lag = u64::try_from(self.cfg.max_lag.as_nanos()).unwrap_or(u64::MAX).max(period);
        let producer = ring.producer()?;
        let dropped0 = ring.dropped();
        let mut r = RunReport { period_ns: period, ..RunReport::default() };
        let start = now();
        let mut next: Instant = start;
        while periods.is_none_or(|n| r.periods < n) && !stop.load(Ordering::Relaxed) {
            delay_until(Deadline::at(next));
            let late = now().ns_since(next);
            if late > max_lag {
                let skip = (late / period).min(periods.map_or(u64::MAX, |n| n - r.periods));
                r.missed_periods += skip;
                r.periods += skip;
                missed.fetch_add(skip, Ordering::Relaxed);
                next = next.add_ns(skip * period);
                continue;
            }
            r.max_late_ns = r.max_late_ns.max(late);
            r.late_sets += u64::from(late >= period);
            let s = self.sample()?;
            producer.push(s);
            r.samples += 1;
            r.periods += 1;
            next = next.add_ns(period);
        }
        r.ring_full = ring.dropped() - dropped0;
        r.elapsed_ns = now().ns_since(start);
        Ok(r)
    }

    /// Moves the driver to a thread of its own that samples at `rate_hz`
    /// into a new ring of `ring_capacity` sets until stopped. The rate and
    /// capacity are checked here; nothing is sent before they pass.
    pub fn start_continuous(self, rate_hz: f64, ring_capacity: usize) -> Result<Continuous, Error> {
        self.period_ns(rate_hz)?;
        let shared = Arc::new(Shared {
            ring: SampleRing::new(ring_capacity)?,
            stop: AtomicBool::new(false),
            missed: AtomicU64::new(0),
        });
        let s = shared.clone();
        let mut adc = self;
        let handle = std::thread::Builder::new()
            .name("ad7606-sampler".into())
            .spawn(move || {
                let r = adc.run_counting(rate_hz, None, &s.ring, &s.stop, &s.missed);
                (adc, r)
            })
            .map_err(|e| Error::Thread(e.to_string()))?;
        Ok(Continuous { shared, handle: Some(handle) })
    }
}

#[derive(Debug)]
struct Shared {
    ring: SampleRing,
    stop: AtomicBool,
    missed: AtomicU64,
}

/// A sampler running on its own thread ([`Ad7606::start_continuous`]).
/// Dropping it stops the thread (and drops the driver).
#[derive(Debug)]
pub struct Continuous {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<(Ad7606, Result<RunReport, Error>)>>,
}

impl Continuous {
    /// The ring the sets arrive in (take them with `pop` or `drain_into`).
    pub fn ring(&self) -> &SampleRing {
        &self.shared.ring
    }

    /// Overruns so far: missed periods plus sets the full ring dropped.
    pub fn overruns(&self) -> u64 {
        self.shared.missed.load(Ordering::Relaxed) + self.shared.ring.dropped()
    }

    /// Stops the sampler; returns the driver and the run's report (or the
    /// error that ended it early). Sets still in the ring stay there.
    pub fn stop(mut self) -> Result<(Ad7606, RunReport), Error> {
        self.shared.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take().ok_or_else(|| Error::Thread("already stopped".into()))?;
        let (adc, r) = handle.join().map_err(|_| Error::Thread("the sampler thread panicked".into()))?;
        r.map(|r| (adc, r))
    }
}

impl Drop for Continuous {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
