//! Target `lab_loopback`: the loopback model fed any word stream with chip
//! select toggles echoes every word, whatever its size.

use crate::support::{step, Step, Wire};
use arbitrary::Unstructured;
use wirespeed_lab::devices::Loopback;

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut dev = Loopback::new();
    let mut wire = Wire::new();
    let bits: Vec<u8> = (1..=32).collect();
    while let Ok(s) = step(&mut u, &bits) {
        if let (Step::Word { mosi, bits }, Some(miso)) = (s, wire.apply(&mut dev, s)) {
            assert_eq!(miso, mosi & crate::support::mask(bits), "the loopback echoes");
        }
    }
}
