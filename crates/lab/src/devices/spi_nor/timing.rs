//! Operation durations: typical, or drawn uniformly between typical and
//! maximum from a seeded generator; then scaled.

use super::chips::OpTime;

/// A small seeded generator (SplitMix64): reproducible, no dependency.
#[derive(Clone, Debug)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// `true` with probability `p`.
    pub(super) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// How long operations take.
#[derive(Clone, Debug)]
pub(super) struct Timer {
    random: Option<Rng>,
    scale: f64,
}

impl Timer {
    pub(super) fn new(seed: Option<u64>, scale: f64) -> Timer {
        Timer { random: seed.map(Rng::new), scale: if scale.is_finite() && scale >= 0.0 { scale } else { 1.0 } }
    }
    /// The duration of one operation whose datasheet time is `t`, in ns.
    pub(super) fn draw(&mut self, t: OpTime) -> u64 {
        let ns = match &mut self.random {
            Some(r) => r.range(t.typ_ns, t.max_ns.max(t.typ_ns)),
            None => t.typ_ns,
        };
        (ns as f64 * self.scale).round() as u64
    }
}
