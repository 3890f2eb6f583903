//! The serial face: DOUTA only, V1..V8 as 16-bit two's complement words,
//! MSB first, 128 SCLKs per complete read; DIN is not used (MOSI ignored).

use super::Ad7606;
use crate::spi::SpiDeviceModel;
use wirespeed_time::Instant;

impl SpiDeviceModel for Ad7606 {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        self.lock().chip_select(asserted, at);
    }

    fn exchange(&mut self, _mosi: u32, bits: u8, at: Instant) -> u32 {
        self.lock().shift(bits, at)
    }
}
