//! Target `lab_ad7606`: the AD7606 model (any oversampling setting, valid
//! or not; DOUTA reads with chip-select toggles, CONVST and RESET edges and
//! time steps in between). Settings it cannot take are a typed error; the
//! bus face must not panic and never drive bits beyond the word.

use crate::support::{lab, mask, step, Step, Wire};
use arbitrary::Unstructured;
use wirespeed_lab::devices::ad7606::{Corner, Range};
use wirespeed_lab::devices::{Ad7606, Ad7606Config};

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(os), Ok(range), Ok(corner)) = (u.arbitrary::<u8>(), u.arbitrary::<bool>(), u.arbitrary::<bool>()) else {
        return;
    };
    let range = if range { Range::Pm5V } else { Range::Pm10V };
    let corner = if corner { Corner::Max } else { Corner::Typical };
    let cfg = Ad7606Config { range, oversampling: os, corner };
    let mut dev = match Ad7606::new(&lab(), cfg) {
        Ok(dev) => dev,
        Err(e) => {
            assert!(![1, 2, 4, 8, 16, 32, 64].contains(&os), "refused a valid ratio: {e}");
            return;
        }
    };
    assert!([1, 2, 4, 8, 16, 32, 64].contains(&os), "accepted oversampling {os}");
    let mut wire = Wire::new();
    let bits = [16, 16, 16, 16, 8, 8, 1, 12, 24, 32];
    while let Ok(s) = step(&mut u, &bits) {
        match u.int_in_range(0u8..=15) {
            Ok(0) => dev.drive_convst(true, wire.t),
            Ok(1) => dev.drive_convst(false, wire.t),
            _ => {}
        }
        if let (Step::Word { bits, .. }, Some(miso)) = (s, wire.apply(&mut dev, s)) {
            assert_eq!(miso & !mask(bits), 0, "MISO beyond a {bits}-bit word: {miso:#x}");
        }
    }
}
