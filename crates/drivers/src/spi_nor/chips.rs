//! The built-in table of known JEDEC IDs: data, one row per part, used for
//! parts without SFDP and cross-checked against SFDP where both exist.
//!
//! Times are the datasheets' typical/maximum values.

use super::geometry::{EraseType, OpTime, ProgramKind, ProtectLayout};

/// One known part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownChip {
    /// Datasheet part name.
    pub name: &'static str,
    /// JEDEC ID (`9F`): manufacturer, memory type, capacity.
    pub jedec_id: [u8; 3],
    /// Size in bytes.
    pub size: u32,
    /// Program page size (1: byte program).
    pub page_size: u32,
    /// How data is programmed.
    pub program: ProgramKind,
    /// Erase granularities, smallest first.
    pub erase: &'static [EraseType],
    /// Page (SST: byte/word) program time.
    pub page_program: OpTime,
    /// Chip erase time.
    pub chip_erase: OpTime,
    /// Write status register time.
    pub write_status: OpTime,
    /// Block-protect bits.
    pub protect: ProtectLayout,
    /// A status register write needs `50` (EWSR) first rather than `06`.
    pub ewsr: bool,
}

const KIB: u32 = 1024;
const MIB: u32 = 1024 * KIB;

const fn erase3(t4k: OpTime, t32k: OpTime, t64k: OpTime) -> [EraseType; 3] {
    [
        EraseType { size: 4 * KIB, opcode: 0x20, time: t4k },
        EraseType { size: 32 * KIB, opcode: 0x52, time: t32k },
        EraseType { size: 64 * KIB, opcode: 0xD8, time: t64k },
    ]
}

const W25Q128_ERASE: [EraseType; 3] = erase3(OpTime::ms(45, 400), OpTime::ms(120, 1600), OpTime::ms(150, 2000));
// The W25Q256JV's datasheet gives a typical 4 KiB erase of 50 ms (the W25Q128JV's: 45).
const W25Q256_ERASE: [EraseType; 3] = erase3(OpTime::ms(50, 400), OpTime::ms(120, 1600), OpTime::ms(150, 2000));
// Datasheet revision 1.6, as the lab's row.
const MX25_ERASE: [EraseType; 3] = erase3(OpTime::ms(30, 120), OpTime::ms(150, 650), OpTime::ms(280, 650));
// The −40…85 °C grade's maxima for up to 50K cycles, as the lab's row.
const GD25_ERASE: [EraseType; 3] = erase3(OpTime::ms(50, 200), OpTime::ms(150, 800), OpTime::ms(200, 1200));
const SST_ERASE: [EraseType; 3] = erase3(OpTime::ms(18, 25), OpTime::ms(18, 25), OpTime::ms(18, 25));

/// The known parts.
pub const KNOWN_CHIPS: &[KnownChip] = &[
    KnownChip {
        name: "W25Q128JV",
        jedec_id: [0xEF, 0x40, 0x18],
        size: 16 * MIB,
        page_size: 256,
        program: ProgramKind::Page,
        erase: &W25Q128_ERASE,
        page_program: OpTime::us(400, 3000),
        chip_erase: OpTime::ms(40_000, 200_000),
        write_status: OpTime::ms(10, 15),
        protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: Some(5), unit: 256 * KIB },
        ewsr: false,
    },
    KnownChip {
        name: "W25Q256JV",
        jedec_id: [0xEF, 0x40, 0x19],
        size: 32 * MIB,
        page_size: 256,
        program: ProgramKind::Page,
        erase: &W25Q256_ERASE,
        page_program: OpTime::us(400, 3000),
        chip_erase: OpTime::ms(80_000, 400_000),
        write_status: OpTime::ms(10, 15),
        protect: ProtectLayout { bp_shift: 2, bp_bits: 4, tb_bit: Some(6), unit: 64 * KIB },
        ewsr: false,
    },
    KnownChip {
        name: "MX25L12835F",
        jedec_id: [0xC2, 0x20, 0x18],
        size: 16 * MIB,
        page_size: 256,
        program: ProgramKind::Page,
        erase: &MX25_ERASE,
        page_program: OpTime::us(500, 1500),
        chip_erase: OpTime::ms(50_000, 80_000),
        write_status: OpTime::ms(40, 40),
        protect: ProtectLayout { bp_shift: 2, bp_bits: 4, tb_bit: None, unit: 64 * KIB },
        ewsr: false,
    },
    KnownChip {
        name: "GD25Q64C",
        jedec_id: [0xC8, 0x40, 0x17],
        size: 8 * MIB,
        page_size: 256,
        program: ProgramKind::Page,
        erase: &GD25_ERASE,
        page_program: OpTime::us(600, 2400),
        chip_erase: OpTime::ms(25_000, 60_000),
        write_status: OpTime::ms(5, 30),
        protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: Some(5), unit: 128 * KIB },
        ewsr: false,
    },
    KnownChip {
        name: "SST25VF016B",
        jedec_id: [0xBF, 0x25, 0x41],
        size: 2 * MIB,
        page_size: 1,
        program: ProgramKind::ByteAndAai,
        erase: &SST_ERASE,
        page_program: OpTime::us(7, 10),
        chip_erase: OpTime::ms(35, 50),
        write_status: OpTime::us(0, 0),
        protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: None, unit: 64 * KIB },
        ewsr: true,
    },
];

/// The row for `id`.
pub fn by_jedec_id(id: [u8; 3]) -> Option<&'static KnownChip> {
    KNOWN_CHIPS.iter().find(|c| c.jedec_id == id)
}
