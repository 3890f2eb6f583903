//! Extends the controller's 32-bit time base counter (TBC) to 64 bits.
//!
//! Every timestamp the driver sees (RX objects, TEF objects, TBC reads)
//! goes through [`TsExtender::extend`]: the signed 32-bit distance from the
//! newest stamp seen is added to the 64-bit value, so a stamp slightly older
//! than the newest (a TEF entry read after a later RX) maps correctly and
//! never moves the clock back. Correct as long as some stamp is observed at
//! least every half wrap (2^31 ticks: 35 minutes at 1 µs per tick); the
//! driver reads TBC itself when it has seen nothing for
//! [`TsExtender::STALE_NS`].

use wirespeed::time::Instant;

/// The 64-bit extension state.
#[derive(Clone, Copy, Debug, Default)]
pub struct TsExtender {
    last32: u32,
    last64: u64,
    seen_at: Option<Instant>,
}

impl TsExtender {
    /// Host time after which the driver refreshes from TBC (30 minutes).
    pub const STALE_NS: u64 = 30 * 60 * 1_000_000_000;

    /// Starts from a TBC value read at `at`.
    pub fn start(&mut self, tbc: u32, at: Instant) {
        self.last32 = tbc;
        self.last64 = u64::from(tbc);
        self.seen_at = Some(at);
    }

    /// Whether a TBC read is due (nothing seen for [`Self::STALE_NS`]).
    pub fn stale(&self, now: Instant) -> bool {
        self.seen_at.is_some_and(|t| now.ns_since(t) > Self::STALE_NS)
    }

    /// The 64-bit value of a 32-bit stamp observed at host time `at`.
    pub fn extend(&mut self, t32: u32, at: Instant) -> u64 {
        let d = i64::from(t32.wrapping_sub(self.last32) as i32);
        let v = (self.last64 as i64).wrapping_add(d) as u64;
        if d >= 0 {
            self.last32 = t32;
            self.last64 = v;
            self.seen_at = Some(at);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_forward_and_tolerates_older_stamps() {
        let mut e = TsExtender::default();
        let t = Instant::from_ns(1);
        e.start(0xFFFF_FF00, t);
        assert_eq!(e.extend(0xFFFF_FFF0, t), 0xFFFF_FFF0);
        assert_eq!(e.extend(0x10, t), 0x1_0000_0010);
        assert_eq!(e.extend(0xFFFF_FFF8, t), 0xFFFF_FFF8, "an older stamp maps before the newest");
        assert_eq!(e.extend(0x20, t), 0x1_0000_0020, "and does not move the clock back");
        for i in 1..=8u64 {
            e.extend((0x20 + i * 0x4000_0000) as u32, t);
        }
        assert_eq!(e.extend(0x20, t), 0x3_0000_0020);
        assert!(!e.stale(t));
        assert!(e.stale(Instant::from_ns(TsExtender::STALE_NS + 2)));
    }
}
