//! Extends the controller's 32-bit time base counter (TBC) to 64 bits.
//!
//! Every timestamp the driver sees (RX objects, TEF objects, TBC reads)
//! goes through [`TsExtender::extend`]: the signed 32-bit distance from the
//! newest stamp seen is added to the 64-bit value, so a stamp slightly older
//! than the newest (a TEF entry read after a later RX) maps correctly and
//! never moves the clock back. That distance is only unambiguous within half
//! a wrap (2^31 ticks: 35.8 minutes at 1 µs per tick), so after a long quiet
//! spell (a quarter wrap of host time since the newest stamp) the number of
//! wraps comes from the host clock instead: the value nearest to what host
//! time predicts. So no periodic read of TBC is needed to keep it right.

use wirespeed::time::Instant;

/// The 64-bit extension state.
#[derive(Clone, Copy, Debug, Default)]
pub struct TsExtender {
    last32: u32,
    last64: u64,
    seen_at: Option<Instant>,
}

/// TBC ticks per second (the driver programs the time base to count µs).
const TICKS_PER_S: u64 = 1_000_000;
/// Host time since the newest stamp, in ticks, from which the wrap count is
/// taken from the host clock (a quarter wrap: well inside the half wrap the
/// signed distance can tell, whatever the drift between the two clocks).
const HOST_RESOLVE_TICKS: u64 = 1 << 30;
const WRAP: u64 = 1 << 32;

impl TsExtender {
    /// Starts from a TBC value read at `at`.
    pub fn start(&mut self, tbc: u32, at: Instant) {
        self.last32 = tbc;
        self.last64 = u64::from(tbc);
        self.seen_at = Some(at);
    }

    /// The 64-bit value of a 32-bit stamp observed at host time `at`.
    pub fn extend(&mut self, t32: u32, at: Instant) -> u64 {
        let d = i64::from(t32.wrapping_sub(self.last32) as i32);
        let mut v = (self.last64 as i64).wrapping_add(d) as u64;
        let host_ticks = self.seen_at.map_or(0, |t| at.ns_since(t) / (1_000_000_000 / TICKS_PER_S));
        if host_ticks >= HOST_RESOLVE_TICKS {
            let expected = self.last64 + host_ticks;
            let same_wrap = (expected & !(WRAP - 1)) | u64::from(t32);
            v = [same_wrap.checked_sub(WRAP), Some(same_wrap), same_wrap.checked_add(WRAP)]
                .into_iter()
                .flatten()
                .min_by_key(|c| c.abs_diff(expected))
                .unwrap_or(same_wrap);
        }
        if v >= self.last64 {
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
    }

    #[test]
    fn after_a_long_quiet_spell_host_time_counts_the_wraps() {
        let s = 1_000_000_000u64; // 1 s in ns
        let mut e = TsExtender::default();
        e.start(0, Instant::from_ns(s));
        // 40 minutes later the 32-bit distance looks negative (more than half
        // a wrap): host time says it went forward.
        let forty_min = 40 * 60 * 1_000_000u64;
        assert_eq!(e.extend(forty_min as u32, Instant::from_ns(s + forty_min * 1_000)), forty_min);
        // 3 hours later (2.5 wraps), a stamp 2 ms short of what host time predicts.
        let three_h = 3 * 3600 * 1_000_000u64;
        let at = Instant::from_ns(s + (forty_min + three_h) * 1_000);
        let v = forty_min + three_h - 2_000;
        assert_eq!(e.extend(v as u32, at), v);
        // Right after, the signed distance is back in charge: an older stamp maps before.
        assert_eq!(e.extend((v - 5) as u32, at), v - 5);
    }
}
