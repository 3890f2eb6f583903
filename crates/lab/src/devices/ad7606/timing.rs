//! The AD7606's datasheet timing (AD7606/AD7606-6/AD7606-4 data sheet,
//! Rev. C, Table 3 "Timing Specifications", AD7606 = 8 channels, AVCC =
//! 4.75…5.25 V, VDRIVE = 2.3…5.25 V).
//!
//! Conversion time tCONV (CONVST rising edge to BUSY falling edge) per
//! oversampling ratio, typical and maximum, in ns:
//!
//! | OS ratio | typ     | max     |
//! |---------:|--------:|--------:|
//! | 1 (off)  |   3 450 |   4 150 |
//! | 2        |   7 870 |   9 100 |
//! | 4        |  16 050 |  18 800 |
//! | 8        |  33 000 |  39 000 |
//! | 16       |  66 000 |  78 000 |
//! | 32       | 133 000 | 158 000 |
//! | 64       | 257 000 | 315 000 |
//!
//! Verification: the rows for 1, 4 and 8 agree with the data sheet's
//! Figure 51 (tCONV ≈ 4 µs, 19 µs, 39 µs drawn for OS = 0, 4, 8, as found
//! in the sibling AD7607 sheet, same converter timing); the other rows are
//! from the Rev. C table as recalled and could **not** be checked against
//! the document here. The maximum CONVST rates of the oversampling table
//! (Table 9: 200, 100, 50, 25, 12.5, 6.25, 3.125 kHz) are consistent with them.
//!
//! Interface figures the model and the wire limit use:
//! - t1, CONVST high to BUSY high: 40 ns max (the model raises BUSY at the edge);
//! - t2/t3, minimum CONVST low/high pulse: 25 ns;
//! - t4, BUSY falling edge to CS falling edge setup: 0 ns;
//! - serial SCLK: at most 23.5 MHz (VDRIVE ≥ 4.75 V);
//! - tRESET, RESET high pulse: 50 ns min.

/// The oversampling ratios the `OS[2:0]` pins select (000 … 110).
pub const OVERSAMPLING_RATIOS: [u8; 7] = [1, 2, 4, 8, 16, 32, 64];

/// tCONV typical, ns, by oversampling index (ratio = 2^index).
const TCONV_TYP_NS: [u64; 7] = [3_450, 7_870, 16_050, 33_000, 66_000, 133_000, 257_000];
/// tCONV maximum, ns, by oversampling index.
const TCONV_MAX_NS: [u64; 7] = [4_150, 9_100, 18_800, 39_000, 78_000, 158_000, 315_000];

/// t1: CONVST high to BUSY high, max (ns).
pub const T1_CONVST_TO_BUSY_NS: u64 = 40;
/// t2/t3: minimum CONVST low and high pulse (ns).
pub const T_CONVST_PULSE_NS: u64 = 25;
/// t4: BUSY falling edge to CS falling edge (ns).
pub const T4_BUSY_TO_CS_NS: u64 = 0;
/// Maximum serial clock (VDRIVE ≥ 4.75 V), Hz.
pub const MAX_SCLK_HZ: u32 = 23_500_000;
/// Minimum RESET high pulse (ns).
pub const T_RESET_NS: u64 = 50;

/// The index of `ratio` in [`OVERSAMPLING_RATIOS`], if it is one.
pub fn oversampling_index(ratio: u8) -> Option<usize> {
    OVERSAMPLING_RATIOS.iter().position(|&r| r == ratio)
}

/// Which column of the tCONV table a model or a driver uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Corner {
    /// The typical conversion time (the lab part converts this fast).
    #[default]
    Typical,
    /// The guaranteed maximum.
    Max,
}

/// tCONV for oversampling `ratio` at `corner`, ns; `None` for a ratio the
/// OS pins cannot select.
pub fn conversion_ns(ratio: u8, corner: Corner) -> Option<u64> {
    let i = oversampling_index(ratio)?;
    Some(match corner {
        Corner::Typical => TCONV_TYP_NS[i],
        Corner::Max => TCONV_MAX_NS[i],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_grows_with_oversampling_and_max_exceeds_typical() {
        let mut last = 0;
        for r in OVERSAMPLING_RATIOS {
            let (t, m) = (conversion_ns(r, Corner::Typical).unwrap(), conversion_ns(r, Corner::Max).unwrap());
            assert!(t > last && m > t, "{r}: {t} {m}");
            last = t;
        }
        assert_eq!(conversion_ns(3, Corner::Typical), None);
        assert_eq!(conversion_ns(128, Corner::Max), None);
    }
}
