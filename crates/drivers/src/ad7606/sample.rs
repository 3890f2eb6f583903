//! [`SampleSet`]: the eight codes of one conversion, with when it was taken.

use super::config::{Range, CHANNELS, FRAME_BYTES};
use wirespeed::time::Instant;

/// One conversion of all eight channels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleSet {
    /// V1..V8, two's complement codes (−32768 ..= 32767).
    pub codes: [i16; CHANNELS],
    /// When CONVST rose (the sampling instant), on the stack's monotonic clock.
    pub timestamp: Instant,
    /// The range the codes are on.
    pub range: Range,
}

impl SampleSet {
    /// Decodes the 16 bytes read from DOUTA (V1 first, MSB first).
    pub(crate) fn decode(raw: &[u8], timestamp: Instant, range: Range) -> SampleSet {
        let mut codes = [0i16; CHANNELS];
        for (c, pair) in codes.iter_mut().zip(raw[..FRAME_BYTES].chunks_exact(2)) {
            *c = i16::from_be_bytes([pair[0], pair[1]]);
        }
        SampleSet { codes, timestamp, range }
    }

    /// The input voltages: code · range / 32768.
    pub fn volts(&self) -> [f64; CHANNELS] {
        let lsb = self.range.volts() / 32768.0;
        self.codes.map(|c| f64::from(c) * lsb)
    }
}
