//! Per-message latency in a fixed-size histogram (memory does not grow
//! with the run), and the process's resident memory.
//!
//! Buckets are exact below 64 ns and 32 per power of two above (about 3 %
//! wide); a percentile is its bucket's midpoint, the maximum is exact.

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB + 2 * SUB;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    total: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { counts: vec![0; BUCKETS], total: 0, max_ns: 0 }
    }
}

fn index(ns: u64) -> usize {
    if ns < 2 * SUB as u64 {
        return ns as usize;
    }
    let top = 63 - ns.leading_zeros();
    let shift = top - SUB_BITS;
    shift as usize * SUB + (ns >> shift) as usize
}

fn lower_bound(index: usize) -> u64 {
    if index < 2 * SUB {
        return index as u64;
    }
    let shift = index / SUB - 1;
    ((index % SUB + SUB) as u64) << shift
}

fn midpoint(index: usize) -> f64 {
    let lo = lower_bound(index) as f64;
    let hi = if index + 1 < BUCKETS { lower_bound(index + 1) as f64 } else { lo * 1.03 };
    (lo + hi) / 2.0
}

/// p50, p99, p99.9 and the maximum, in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySummary {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl LatencyHistogram {
    /// Records one latency.
    pub fn record_ns(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Latencies recorded.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `p`-quantile (0..=1) in ns; 0 when empty.
    pub fn quantile_ns(&self, p: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((p * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return midpoint(i).min(self.max_ns as f64);
            }
        }
        self.max_ns as f64
    }

    /// The summary the report shows.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            p50_us: self.quantile_ns(0.5) / 1e3,
            p99_us: self.quantile_ns(0.99) / 1e3,
            p999_us: self.quantile_ns(0.999) / 1e3,
            max_us: self.max_ns as f64 / 1e3,
        }
    }

    /// About `limit` samples in µs (all of them when fewer were recorded)
    /// with the histogram's shape: each bucket's midpoint, repeated in
    /// proportion to its count (fractions carried over), for a plot.
    pub fn samples_us(&self, limit: u64) -> Vec<f64> {
        let scale = if self.total > limit { limit as f64 / self.total as f64 } else { 1.0 };
        let mut out = Vec::new();
        let mut wanted = 0.0;
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
            wanted += c as f64 * scale;
            let reps = (wanted.round() as usize).saturating_sub(out.len());
            out.extend(std::iter::repeat_n(midpoint(i).min(self.max_ns as f64) / 1e3, reps));
        }
        out
    }
}

/// The process's resident set (`VmRSS`) in KiB, if `/proc` says.
pub fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let i = index(ns);
            assert!(i < BUCKETS && i >= last, "{ns}");
            assert!(lower_bound(i) <= ns, "{ns}: bucket {i} starts at {}", lower_bound(i));
            last = i;
        }
    }

    #[test]
    fn percentiles_are_within_a_bucket() {
        let mut h = LatencyHistogram::default();
        for us in 1..=1000u64 {
            h.record_ns(us * 1_000);
        }
        let s = h.summary();
        assert!((s.p50_us - 500.0).abs() < 20.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 35.0, "{s:?}");
        assert_eq!(s.max_us, 1000.0);
        assert_eq!(h.samples_us(100).len(), 100);
        assert_eq!(h.samples_us(10_000).len(), 1000, "all of them when fewer were recorded");
        let median = crate::stats::median(&h.samples_us(100));
        assert!((median - 500.0).abs() < 40.0, "the samples keep the shape: median {median}");
    }
}
