//! Target `lab_spi_nor`: the SPI NOR model of every part (3- and 4-byte
//! addressing, 4-byte mode, SST AAI, SFDP, deep power-down, reset, status
//! writes, protection) fed any command stream with chip-select toggles and
//! time steps. It must not panic, and afterwards — once out of deep
//! power-down and AAI and with every operation finished — it must answer
//! `9F` with its JEDEC ID and report WIP clear.
//!
//! The parts are the lab's rows with the array cut to 256 KiB (still at
//! least the largest erase block): a fresh array per input at the real
//! sizes (up to 32 MiB) would cost more than the decoding. Addresses are
//! masked by the size, so every command and address width is still
//! decoded; times are scaled by 10⁻⁶.

use crate::support::{step, Step, Wire};
use arbitrary::Unstructured;
use wirespeed_lab::devices::spi_nor::{ChipSpec, GD25Q64C, MX25L12835F, SR_WIP, SST25VF016B, W25Q128JV, W25Q256JV};
use wirespeed_lab::devices::{SpiNor, SpiNorOptions};
use wirespeed_lab::spi::SpiDeviceModel;

const SIZE: u32 = 256 * 1024;

static PARTS: [ChipSpec; 5] = [
    ChipSpec { size: SIZE, ..W25Q128JV },
    ChipSpec { size: SIZE, ..MX25L12835F },
    ChipSpec { size: SIZE, ..GD25Q64C },
    ChipSpec { size: SIZE, ..SST25VF016B },
    ChipSpec { size: SIZE, ..W25Q256JV },
];

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(spec) = u.choose(&PARTS) else { return };
    let options = SpiNorOptions { time_scale: 1e-6, random_times_seed: None };
    let mut dev = SpiNor::with_options(spec, options);
    let mut wire = Wire::new();
    let bits = [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 1, 16, 32];
    // Opcode-heavy: the first byte after CS is often one of the part's commands.
    const OPCODES: [u8; 32] = [
        0x9F, 0x05, 0x35, 0x03, 0x13, 0x0B, 0x0C, 0x5A, 0xAB, 0x06, 0x04, 0xC7, 0x60, 0xB7, 0xE9, 0x66, 0x99, 0xB9,
        0x02, 0x12, 0x20, 0x52, 0xD8, 0x21, 0xDC, 0x01, 0xAD, 0x50, 0x00, 0xFF, 0x5B, 0x90,
    ];
    while let Ok(s) = step(&mut u, &bits) {
        let s = match s {
            Step::Word { mosi, bits: 8 } if mosi & 0x300 == 0x300 => {
                Step::Word { mosi: u32::from(OPCODES[(mosi >> 10) as usize % OPCODES.len()]), bits: 8 }
            }
            s => s,
        };
        wire.apply(&mut dev, s);
    }
    let d: &mut dyn SpiDeviceModel = &mut dev;
    wire.access(d, &[0xAB, 0, 0, 0, 0]);
    wire.apply(d, Step::Wait(1_000_000_000));
    wire.access(d, &[0x04]);
    wire.apply(d, Step::Wait(1_000_000_000));
    let id = wire.access(d, &[0x9F, 0, 0, 0]);
    assert_eq!(id[1..], spec.jedec_id, "JEDEC ID after the stream");
    let status = wire.access(d, &[0x05, 0]);
    assert_eq!(status[1] & SR_WIP, 0, "WIP after every operation's time");
}
