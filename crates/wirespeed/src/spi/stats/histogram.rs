//! Histograms: transfer sizes in powers of two, latencies in an HDR-style
//! log-linear layout (16 linear sub-buckets per power of two: ≤ 6.25 % error).

/// Buckets of the transfer-size histogram.
pub const SIZE_BUCKETS: usize = 18;
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Buckets of the latency histogram (covers 0 ns to ~2^48 ns).
pub const LATENCY_BUCKETS: usize = (48 - SUB_BITS as usize + 1) * SUB;

pub(super) fn size_bucket(len: usize) -> usize {
    if len <= 1 {
        0
    } else {
        ((usize::BITS - (len - 1).leading_zeros()) as usize).min(SIZE_BUCKETS - 1)
    }
}

/// A latency histogram in ns with HDR-style precision.
#[derive(Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    buckets: Vec<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram { buckets: vec![0; LATENCY_BUCKETS] }
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count())
            .field("p50_ns", &self.percentile(50.0))
            .field("p99_ns", &self.percentile(99.0))
            .finish()
    }
}

impl LatencyHistogram {
    /// The bucket of a value.
    pub(super) fn bucket_of(ns: u64) -> usize {
        if ns < SUB as u64 {
            return ns as usize;
        }
        let mag = 63 - ns.leading_zeros(); // ≥ SUB_BITS
        let sub = (ns >> (mag - SUB_BITS)) as usize & (SUB - 1);
        (((mag - SUB_BITS + 1) as usize) * SUB + sub).min(LATENCY_BUCKETS - 1)
    }

    /// The lowest value of a bucket.
    fn bucket_low(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let mag = (i / SUB) as u32 + SUB_BITS - 1;
        let sub = (i % SUB) as u64;
        (1u64 << mag) | (sub << (mag - SUB_BITS))
    }

    pub(super) fn add_bucket(&mut self, i: usize, n: u64) {
        self.buckets[i] += n;
    }

    /// Records one value.
    pub fn record(&mut self, ns: u64) {
        self.buckets[Self::bucket_of(ns)] += 1;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The `p`-th percentile (0..=100), as the low edge of its bucket; 0 if empty.
    pub fn percentile(&self, p: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::bucket_low(i);
            }
        }
        Self::bucket_low(LATENCY_BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_buckets_are_powers_of_two() {
        assert_eq!(size_bucket(0), 0);
        assert_eq!(size_bucket(1), 0);
        assert_eq!(size_bucket(2), 1);
        assert_eq!(size_bucket(9), 4);
        assert_eq!(size_bucket(16), 4);
        assert_eq!(size_bucket(17), 5);
        assert_eq!(size_bucket(1 << 30), SIZE_BUCKETS - 1);
    }

    #[test]
    fn latency_buckets_are_within_a_sixteenth() {
        for v in [0u64, 1, 15, 16, 17, 100, 999, 4_321, 1_000_000, 123_456_789] {
            let lo = LatencyHistogram::bucket_low(LatencyHistogram::bucket_of(v));
            assert!(lo <= v, "{v}: low edge {lo}");
            assert!(v - lo <= v / 16, "{v}: low edge {lo} too far");
        }
        let mut h = LatencyHistogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.percentile(50.0);
        assert!((470_000..=500_000).contains(&p50), "{p50}");
        assert!(h.percentile(100.0) >= 940_000);
    }
}
