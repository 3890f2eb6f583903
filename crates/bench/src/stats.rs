//! Small statistics helpers shared by the scenarios.

/// Median of `xs` (mean of the two middle values for an even count); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    percentile(xs, 50.0)
}

/// The `p`-th percentile (0..=100) of `xs` by linear interpolation; NaN if empty.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_of_sorted(&v, p)
}

/// The `p`-th percentile (0..=100) of ascending, non-empty `sorted`, by
/// linear interpolation between the two nearest ranks.
pub fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// Arithmetic mean; NaN if empty.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Population standard deviation; NaN if empty.
pub fn stddev(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt()
}

/// Rounds to `digits` decimals, for JSON that people read.
pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 100.0), 5.0);
        assert!(median(&[]).is_nan());
        assert_eq!(stddev(&[2.0, 4.0]), 1.0);
        assert_eq!(round(1.23456, 2), 1.23);
    }
}
