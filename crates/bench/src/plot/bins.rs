//! The x range every series shares and each series' histogram over it.
//!
//! The axis ends just past the largest p99.9 (and the wire limit), or at
//! [`TAIL_CAP`] times the largest median if that is nearer ([`axis_end`]), so
//! that a few slow outliers (a preempted message on a busy machine takes
//! milliseconds) cannot squeeze the bulk into a few pixels; what lies beyond
//! is counted in the legend, not drawn. Latencies that span a wide range (the
//! largest p99.9 at least [`LOG_RATIO`] times the smallest sample, as a
//! classic tail against a fast bulk) get a logarithmic axis with bins of
//! equal width on it; narrow ones (100 µs waits that end at 101–160 µs) a
//! linear one.

/// Bins across the x axis.
pub const BINS: usize = 120;

/// The spread (largest p99.9 / smallest sample) from which the axis is logarithmic.
pub const LOG_RATIO: f64 = 4.0;

/// The axis ends at most this many times the largest median.
pub const TAIL_CAP: f64 = 12.0;

/// Where the samples' part of the axis ends: the largest p99.9, or
/// [`TAIL_CAP`] × the largest median if that is less.
pub fn axis_end(max_p50: f64, max_p999: f64) -> f64 {
    if max_p50 > 0.0 {
        max_p999.min(TAIL_CAP * max_p50)
    } else {
        max_p999
    }
}

/// The shared x range, in the samples' unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XRange {
    pub lo: f64,
    pub hi: f64,
    /// Logarithmic (bins of equal ratio) rather than linear.
    pub log: bool,
}

impl XRange {
    /// The range for series whose smallest sample is `min`, drawn up to
    /// `end` ([`axis_end`]), with the wire limit `wire` if known.
    pub fn fit(min: f64, end: f64, wire: Option<f64>) -> XRange {
        let floor = wire.map_or(min, |w| w.min(min));
        let top = wire.map_or(end, |w| w.max(end));
        if floor > 0.0 && top / floor >= LOG_RATIO {
            // Room before the floor for the wire limit's label.
            return XRange { lo: floor / 1.3, hi: top * 1.12, log: true };
        }
        let span = (top - floor).max(top.abs() * 0.05).max(1e-3);
        let hi = top + span * 0.08;
        let lo = if floor >= 0.0 && floor < 0.5 * top { 0.0 } else { floor - span * 0.08 };
        XRange { lo, hi, log: false }
    }

    /// Where `x` lies along the axis, 0 at its start and 1 at its end.
    pub fn fraction(&self, x: f64) -> f64 {
        if self.log {
            (x / self.lo).ln() / (self.hi / self.lo).ln()
        } else {
            (x - self.lo) / (self.hi - self.lo)
        }
    }

    /// The start of bin `i` (`BINS` is the axis' end).
    pub fn edge(&self, i: usize) -> f64 {
        let f = i as f64 / BINS as f64;
        if self.log {
            self.lo * (self.hi / self.lo).powf(f)
        } else {
            self.lo + (self.hi - self.lo) * f
        }
    }

    /// The bin `x` falls in, if it is not past the axis' end (values before
    /// its start go to the first bin).
    pub fn bin_of(&self, x: f64) -> Option<usize> {
        if x > self.hi {
            return None;
        }
        let f = if self.log && x <= 0.0 { 0.0 } else { self.fraction(x) };
        Some(((f * BINS as f64).floor().max(0.0) as usize).min(BINS - 1))
    }
}

/// One series' counts over an [`XRange`].
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Samples per bin, [`BINS`] of them.
    pub counts: Vec<u64>,
    /// Samples past the axis' end (drawn as a count, not as bars).
    pub beyond: u64,
}

impl Histogram {
    /// Counts `samples` into the bins of `range`.
    pub fn of(samples: &[f64], range: XRange) -> Histogram {
        let mut counts = vec![0u64; BINS];
        let mut beyond = 0;
        for &x in samples {
            match range.bin_of(x) {
                Some(bin) => counts[bin] += 1,
                None => beyond += 1,
            }
        }
        Histogram { counts, beyond }
    }

    /// The tallest bin's count.
    pub fn peak(&self) -> u64 {
        self.counts.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_spread_is_linear_and_starts_at_zero_near_it() {
        let r = XRange::fit(2.0, 6.0, Some(1.6));
        assert!(!r.log && r.lo == 0.0, "{r:?}");
        assert!(r.hi > 6.0 && r.hi < 7.0, "{r:?}");
    }

    #[test]
    fn a_narrow_spread_far_from_zero_is_zoomed_in() {
        let r = XRange::fit(100.5, 160.0, Some(100.0));
        assert!(!r.log && r.lo > 90.0 && r.lo < 100.0, "{r:?}");
    }

    #[test]
    fn a_wide_spread_is_logarithmic_and_holds_the_wire() {
        let r = XRange::fit(3.9, 67.0, Some(3.6));
        assert!(r.log && r.lo < 3.6 && r.hi > 67.0, "{r:?}");
        assert!((r.fraction(r.lo)).abs() < 1e-12 && (r.fraction(r.hi) - 1.0).abs() < 1e-12);
        assert!((r.edge(BINS) - r.hi).abs() < 1e-9 && (r.edge(0) - r.lo).abs() < 1e-12);
        // Equal ratios take equal room.
        let (a, b) = (r.fraction(5.0) - r.fraction(2.5), r.fraction(40.0) - r.fraction(20.0));
        assert!((a - b).abs() < 1e-12);
    }

    #[test]
    fn every_sample_is_counted_once() {
        let r = XRange { lo: 0.0, hi: 12.0, log: false };
        let h = Histogram::of(&[0.0, 0.05, 6.0, 12.0, 12.5, 100.0], r);
        assert_eq!(h.counts.iter().sum::<u64>(), 4);
        assert_eq!(h.beyond, 2);
        assert_eq!(h.counts[0], 2);
        assert_eq!(h.counts[BINS / 2], 1);
        assert_eq!(h.counts[BINS - 1], 1, "the axis' end falls in the last bin");
        assert_eq!(h.peak(), 2);
        let log = XRange { lo: 1.0, hi: 100.0, log: true };
        let h = Histogram::of(&[0.5, 1.0, 10.0, 100.0, 101.0], log);
        assert_eq!((h.counts[0], h.counts[BINS / 2], h.counts[BINS - 1], h.beyond), (2, 1, 1, 1));
    }

    #[test]
    fn a_far_tail_is_cut_at_a_multiple_of_the_median() {
        assert_eq!(axis_end(4.0, 30.0), 30.0);
        assert_eq!(axis_end(4.0, 4000.0), 4.0 * TAIL_CAP);
        assert_eq!(axis_end(0.0, 3.0), 3.0);
    }

    #[test]
    fn equal_samples_still_get_a_range() {
        let r = XRange::fit(5.0, 5.0, None);
        assert!(r.lo < 5.0 && r.hi > 5.0, "{r:?}");
    }
}
