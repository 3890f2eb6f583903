//! Target `sfdp`: SFDP parsing and the probe that trusts it.
//!
//! The input is a chip: a JEDEC ID (any, or a known part's) and an SFDP
//! space (any bytes, or the lab's JESD216B table of a part with bytes
//! overwritten). A device model serves `9F` and `5A` from them, reads as
//! erased and is never busy. Then:
//! - `parse_header` / `parse_bfpt` on the raw bytes return a value or a
//!   typed error; what they accept is within JESD216's fields;
//! - `SpiNor::probe` returns a driver or a typed error, and a driver it
//!   returns serves reads, erases, programs and writes at any address and
//!   length with results or typed errors — never a panic or an endless loop.

use crate::support::bus;
use arbitrary::{Arbitrary, Unstructured};
use wirespeed::spi::DeviceConfig;
use wirespeed_drivers::spi_nor::sfdp::{parse_bfpt, parse_header, HEADER_LEN};
use wirespeed_drivers::spi_nor::{SpiNor, KNOWN_CHIPS};
use wirespeed_lab::devices::spi_nor::{sfdp::table, CHIPS};
use wirespeed_lab::spi::SpiDeviceModel;
use wirespeed_time::Instant;

/// Serves `9F` and `5A`; `05` reads 0 (idle, unprotected); array reads 0xFF.
struct SfdpChip {
    id: [u8; 3],
    space: Vec<u8>,
    cmd: Vec<u8>,
}

impl SpiDeviceModel for SfdpChip {
    fn chip_select(&mut self, _asserted: bool, _at: Instant) {
        self.cmd.clear();
    }

    fn exchange(&mut self, mosi: u32, _bits: u8, _at: Instant) -> u32 {
        self.cmd.push(mosi as u8);
        let i = self.cmd.len() - 1;
        u32::from(match self.cmd[0] {
            0x9F => *self.id.get(i.wrapping_sub(1)).unwrap_or(&0),
            0x5A if i >= 5 => {
                let a = self.cmd[1..4].iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
                *self.space.get(a + i - 5).unwrap_or(&0xFF)
            }
            0x05 | 0x35 => 0,
            _ => 0xFF,
        })
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Read { addr: u32, len: u16 },
    Erase { addr: u32, len: u32 },
    Program { addr: u32, len: u16 },
    Write { addr: u32, len: u16 },
    ChipErase,
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    known_id: Option<u8>,
    id: [u8; 3],
    base: Option<u8>,
    edits: Vec<(u16, u8)>,
    ops: Vec<Op>,
    raw: &'a [u8],
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let mut space = match input.base {
        Some(i) => table(&CHIPS[usize::from(i) % CHIPS.len()]),
        None => input.raw.to_vec(),
    };
    for &(pos, val) in &input.edits {
        if let Some(b) = space.get_mut(usize::from(pos)) {
            *b = val;
        }
    }
    let id = input.known_id.map_or(input.id, |i| KNOWN_CHIPS[usize::from(i) % KNOWN_CHIPS.len()].jedec_id);

    // The parsers alone.
    let mut h = [0xFF; HEADER_LEN];
    let n = space.len().min(HEADER_LEN);
    h[..n].copy_from_slice(&space[..n]);
    if let Ok(Some(hdr)) = parse_header(&h) {
        assert!(hdr.bfpt_dwords >= 9 && hdr.revision.0 == 1, "{hdr:?}");
    }
    if let Ok(b) = parse_bfpt(&space) {
        assert!(b.erase.iter().all(|e| e.size.is_power_of_two()), "{b:?}");
        assert!(b.erase.windows(2).all(|w| w[0].size <= w[1].size), "erase types sorted: {b:?}");
    }

    // The probe and a driver it returns.
    let (block, bus) = bus();
    block.attach(0, SfdpChip { id, space, cmd: Vec::new() });
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).expect("a plain device");
    let Ok(mut nor) = SpiNor::probe(dev) else { return };
    nor.set_time_scale(0.0);
    let g = nor.geometry().clone();
    assert!(!g.erase.is_empty() && matches!(g.address_bytes, 3 | 4), "{g:?}");
    // Lengths are capped so that one input stays short on a part whose
    // SFDP claims 1-byte pages or 2-byte erase units.
    let len = |l: u16| vec![0xA5; usize::from(l) % 4097];
    for op in input.ops.iter().take(8) {
        // Results or typed errors: whether each is right is the driver's tests' business.
        let _ = match *op {
            Op::Read { addr, len: l } => nor.read(addr, &mut len(l)),
            Op::Erase { addr, len } => nor.erase(addr, len % 8193),
            Op::Program { addr, len: l } => nor.program(addr, &len(l)),
            Op::Write { addr, len: l } => nor.write(addr, &len(l), &mut |_| {}).map(drop),
            Op::ChipErase => nor.chip_erase(),
        };
    }
}
