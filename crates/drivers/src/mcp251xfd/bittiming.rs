//! Bit timing: BRP, TSEG1, TSEG2 and SJW for a requested bit rate from the
//! controller's clock, with the sample point near a target (80 %).
//!
//! For each prescaler (smallest first, for the finest time quanta) the bit
//! is cut into `1 + TSEG1 + TSEG2` quanta; the candidate with the smallest
//! bit-rate error wins, then the one whose sample point is closest to the
//! target. SJW = min(TSEG2, its field's limit). Registers encode each value
//! minus one.
//!
//! ```
//! use wirespeed_drivers::mcp251xfd::bittiming::{compute, NOMINAL};
//! let t = compute(&NOMINAL, 40_000_000, 250_000, 800, 5_000).unwrap();
//! assert_eq!((t.brp, 1 + t.tseg1 + t.tseg2), (1, 160));
//! assert_eq!(t.sample_point_permille(), 800);
//! assert_eq!(t.bitrate(40_000_000), 250_000);
//! ```

use super::error::Error;

/// Field limits of one bit-timing register.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// "nominal" or "data".
    pub phase: &'static str,
    /// Largest prescaler.
    pub brp_max: u32,
    /// TSEG1 range (quanta, prop + phase 1).
    pub tseg1: (u32, u32),
    /// TSEG2 range.
    pub tseg2: (u32, u32),
    /// Largest SJW.
    pub sjw_max: u32,
}

/// C1NBTCFG.
pub const NOMINAL: Limits = Limits { phase: "nominal", brp_max: 256, tseg1: (2, 256), tseg2: (1, 128), sjw_max: 128 };
/// C1DBTCFG.
pub const DATA: Limits = Limits { phase: "data", brp_max: 256, tseg1: (1, 32), tseg2: (1, 16), sjw_max: 16 };

/// One solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitTiming {
    /// Prescaler.
    pub brp: u32,
    /// Propagation + phase segment 1, quanta.
    pub tseg1: u32,
    /// Phase segment 2, quanta.
    pub tseg2: u32,
    /// Synchronisation jump width, quanta.
    pub sjw: u32,
}

impl BitTiming {
    /// Quanta per bit.
    pub fn quanta(&self) -> u32 {
        1 + self.tseg1 + self.tseg2
    }
    /// The bit rate reached from `clock_hz`.
    pub fn bitrate(&self, clock_hz: u32) -> u32 {
        (u64::from(clock_hz) / (u64::from(self.brp) * u64::from(self.quanta()))) as u32
    }
    /// Sample point in ‰ of the bit.
    pub fn sample_point_permille(&self) -> u32 {
        (1 + self.tseg1) * 1000 / self.quanta()
    }
    /// The register value (NBTCFG / DBTCFG layout: BRP 31:24, TSEG1 23:16, TSEG2 14:8, SJW 6:0, each minus one).
    pub fn register(&self) -> u32 {
        ((self.brp - 1) << 24) | ((self.tseg1 - 1) << 16) | ((self.tseg2 - 1) << 8) | (self.sjw - 1)
    }
}

/// The timing for `bitrate` from `clock_hz` with the sample point near
/// `sample_permille`; fails if the best error exceeds `max_error_ppm`.
pub fn compute(
    lim: &Limits,
    clock_hz: u32,
    bitrate: u32,
    sample_permille: u32,
    max_error_ppm: u32,
) -> Result<BitTiming, Error> {
    let err =
        |best| Error::BitTiming { phase: lim.phase, requested: bitrate, clock_hz, best_error_ppm: best, max_error_ppm };
    if bitrate == 0 || clock_hz == 0 {
        return Err(err(u32::MAX));
    }
    if !(500..=950).contains(&sample_permille) {
        return Err(Error::InvalidConfig {
            what: "sample point",
            value: format!("{sample_permille} ‰"),
            allowed: "500..=950 ‰",
        });
    }
    let qmin = 1 + lim.tseg1.0 + lim.tseg2.0;
    let qmax = 1 + lim.tseg1.1 + lim.tseg2.1;
    // (error ppm, sample-point distance, solution)
    let mut best: Option<(u64, u32, BitTiming)> = None;
    for brp in 1..=lim.brp_max {
        let per = u64::from(brp) * u64::from(bitrate);
        let q = ((u64::from(clock_hz) + per / 2) / per) as u32;
        if q < qmin {
            break;
        }
        if q > qmax {
            continue;
        }
        let rate = u64::from(clock_hz) / (u64::from(brp) * u64::from(q));
        let e = rate.abs_diff(u64::from(bitrate)) * 1_000_000 / u64::from(bitrate);
        let tseg2 = ((u64::from(q) * u64::from(1000 - sample_permille) + 500) / 1000) as u32;
        let tseg2 = tseg2.clamp(lim.tseg2.0, lim.tseg2.1);
        let tseg1 = q - 1 - tseg2;
        if !(lim.tseg1.0..=lim.tseg1.1).contains(&tseg1) {
            continue;
        }
        let t = BitTiming { brp, tseg1, tseg2, sjw: tseg2.min(lim.sjw_max) };
        let d = t.sample_point_permille().abs_diff(sample_permille);
        if best.is_none_or(|(be, bd, _)| (e, d) < (be, bd)) {
            best = Some((e, d, t));
        }
    }
    match best {
        Some((e, _, t)) if e <= u64::from(max_error_ppm) => Ok(t),
        Some((e, _, _)) => Err(err(e.min(u64::from(u32::MAX - 1)) as u32)),
        None => Err(err(u32::MAX)),
    }
}

/// TDC register for a data timing: automatic mode, offset at the data sample point.
pub fn tdc_register(data: &BitTiming) -> u32 {
    let tdco = (data.brp * (1 + data.tseg1)).min(63);
    (2 << 16) | (tdco << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_rates_from_40_mhz_are_exact_near_80_percent() {
        for (lim, rate) in [
            (&NOMINAL, 125_000),
            (&NOMINAL, 500_000),
            (&NOMINAL, 1_000_000),
            (&DATA, 2_000_000),
            (&DATA, 5_000_000),
            (&DATA, 8_000_000),
        ] {
            let t = compute(lim, 40_000_000, rate, 800, 0).unwrap();
            assert_eq!(t.bitrate(40_000_000), rate, "{t:?}");
            assert!((750..=850).contains(&t.sample_point_permille()), "{rate}: {t:?}");
            assert!(t.sjw <= t.tseg2);
        }
    }

    #[test]
    fn unreachable_rates_are_typed_errors() {
        let e = compute(&DATA, 40_000_000, 15_000_000, 800, 5_000).unwrap_err();
        assert!(matches!(e, Error::BitTiming { phase: "data", requested: 15_000_000, .. }), "{e}");
        let e = compute(&NOMINAL, 40_000_000, 100, 800, 5_000).unwrap_err();
        assert!(matches!(e, Error::BitTiming { best_error_ppm: u32::MAX, .. }), "{e}");
        assert!(matches!(compute(&NOMINAL, 40_000_000, 250_000, 300, 0), Err(Error::InvalidConfig { .. })));
    }

    #[test]
    fn register_encoding_matches_the_field_layout() {
        let t = BitTiming { brp: 1, tseg1: 127, tseg2: 32, sjw: 32 };
        assert_eq!(t.register(), 0x007E_1F1F);
    }
}
