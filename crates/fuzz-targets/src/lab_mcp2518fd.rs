//! Target `lab_mcp2518fd`: the MCP2518FD model's SPI command decoder (READ,
//! WRITE, READ_CRC, WRITE_CRC, WRITE_SAFE, RESET; registers, SFRs and
//! message RAM) fed any byte stream with chip-select toggles and time
//! steps. It must not panic, and afterwards a READ_CRC of any SFR or RAM
//! word, framed by the driver's encoder, must come back with a CRC the
//! driver accepts (after a wake-up access, and with the TBC erratum's
//! workaround for C1TBC).

use crate::support::{lab, mask, step, Step, Wire};
use arbitrary::Unstructured;
use wirespeed_drivers::mcp251xfd::regio;
use wirespeed_lab::devices::{Mcp2518fd, Mcp2518fdConfig};

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut dev = Mcp2518fd::new(&lab(), Mcp2518fdConfig::default());
    let mut wire = Wire::new();
    let bits = [8, 8, 8, 8, 8, 8, 16, 24, 32, 4, 12];
    while let Ok(s) = step(&mut u, &bits) {
        // The first byte of an access is an instruction nibble + address high bits:
        // steer a quarter of them to the instructions the part has.
        let s = match s {
            Step::Word { mosi, bits: 8 } if mosi & 0x300 == 0x300 => {
                let instr = [0x0, 0x2, 0x3, 0xA, 0xB, 0xC][(mosi >> 10) as usize % 6];
                Step::Word { mosi: (instr << 4) | (mosi & 0x0F), bits: 8 }
            }
            s => s,
        };
        if let (Step::Word { bits, .. }, Some(miso)) = (s, wire.apply(&mut dev, s)) {
            assert_eq!(miso & !mask(bits), 0, "MISO beyond a {bits}-bit word");
        }
    }
    let Ok(word) = u.int_in_range(0u16..=0x3FF) else { return };
    let addr = word * 4;
    // The silicon's ways (the model's `Errata`): a chip the stream left in
    // Low-Power Mode loses the access that wakes it, so wake it first.
    wire.access(&mut dev, &[]);
    let (h, t) = regio::overhead(true);
    let mut buf = vec![0u8; h + 4 + t];
    regio::encode_read(&mut buf, addr, 4, true);
    let mut rx = wire.access(&mut dev, &buf);
    // A READ_CRC of C1TBC may carry byte 0 with bit 7 flipped, with the CRC
    // of the true byte (the kernel's TBC workaround).
    if addr == 0x010 && regio::check_read(&rx, addr, true).is_err() && matches!(rx[h] & 0xF8, 0x00 | 0x80) {
        rx[h] ^= 0x80;
    }
    if let Err(e) = regio::check_read(&rx, addr, true) {
        panic!("READ_CRC of {addr:#05x} after the stream: {e}");
    }
}
