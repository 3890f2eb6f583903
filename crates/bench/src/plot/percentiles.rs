//! The percentiles a chart marks (p50, p99, p99.9), computed as the benches
//! compute theirs (`crate::stats::percentile_of_sorted`: linear
//! interpolation between the two nearest ranks), from one sort.

use crate::stats::percentile_of_sorted;

/// The marked percentiles of one series, in the samples' unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    /// The median.
    pub p50: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
}

impl Percentiles {
    /// The percentiles of `samples` (any order); `None` if there are none.
    pub fn of(samples: &[f64]) -> Option<Percentiles> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: percentile_of_sorted(&sorted, 50.0),
            p99: percentile_of_sorted(&sorted, 99.0),
            p999: percentile_of_sorted(&sorted, 99.9),
        })
    }

    /// `(name, value)` of each, in increasing order.
    pub fn named(&self) -> [(&'static str, f64); 3] {
        [("p50", self.p50), ("p99", self.p99), ("p99.9", self.p999)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn percentiles_of_known_samples() {
        // 1..=1000 shuffled: rank = p/100 × 999, so p50 = 500.5,
        // p99 = 1 + 989.01 = 990.01, p99.9 = 1 + 998.001 = 999.001.
        let samples: Vec<f64> = (1..=1000).map(|i| f64::from((i * 7919) % 1000 + 1)).collect();
        let p = Percentiles::of(&samples).unwrap();
        assert!(close(p.p50, 500.5), "{p:?}");
        assert!(close(p.p99, 990.01), "{p:?}");
        assert!(close(p.p999, 999.001), "{p:?}");
    }

    #[test]
    fn one_sample_is_every_percentile_and_none_is_none() {
        assert_eq!(Percentiles::of(&[4.0]), Some(Percentiles { p50: 4.0, p99: 4.0, p999: 4.0 }));
        assert_eq!(Percentiles::of(&[]), None);
    }
}
