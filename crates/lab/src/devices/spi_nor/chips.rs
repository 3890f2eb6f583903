//! The chip table: each supported part is a [`ChipSpec`] row of data, as in
//! flashrom's chip database; the model has no code specific to one part.
//!
//! Timing figures are the typical and maximum values of each datasheet's
//! "AC electrical characteristics" / "program and erase" table, as recalled
//! when the row was written; check them against the current datasheet
//! revision before quoting them as measured facts.

/// A typical and a maximum duration, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTime {
    /// Typical duration (ns).
    pub typ_ns: u64,
    /// Maximum duration (ns).
    pub max_ns: u64,
}

const fn us(typ: u64, max: u64) -> OpTime {
    OpTime { typ_ns: typ * 1_000, max_ns: max * 1_000 }
}
const fn ms(typ: u64, max: u64) -> OpTime {
    OpTime { typ_ns: typ * 1_000_000, max_ns: max * 1_000_000 }
}

/// One erase granularity of a part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraseType {
    /// Bytes erased (a power of two), aligned to this size.
    pub size: u32,
    /// Opcode with a 3-byte address (or a 4-byte one in 4-byte mode).
    pub opcode: u8,
    /// Opcode that always takes a 4-byte address, if the part has one.
    pub opcode_4b: Option<u8>,
    /// How long the erase takes.
    pub time: OpTime,
}

/// How data is programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramKind {
    /// Page program `02`: up to a page per command; bytes past the page end
    /// wrap to the page's start (when more than a page is sent, the last
    /// page's worth of bytes is kept).
    Page,
    /// SST style: byte program `02` (the first data byte only) and
    /// auto-address-increment word program `AD`.
    ByteAndAai,
}

/// Where the block-protect bits sit in status register 1 and what they
/// protect: with the BP field equal to `n > 0`, the top (or, with the TB bit
/// set, the bottom) `min(size, unit << (n - 1))` bytes are protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtectLayout {
    /// Bit position of BP0 in status register 1.
    pub bp_shift: u8,
    /// Number of BP bits.
    pub bp_bits: u8,
    /// Position of the top/bottom bit in status register 1, if any.
    pub tb_bit: Option<u8>,
    /// Bytes protected by the smallest non-zero BP value.
    pub unit: u32,
}

/// One part: everything the model needs to behave as that chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChipSpec {
    /// Datasheet part name.
    pub name: &'static str,
    /// JEDEC ID as returned by `9F`: manufacturer, memory type, capacity.
    pub jedec_id: [u8; 3],
    /// Size in bytes (a power of two).
    pub size: u32,
    /// Program page size in bytes (1 for byte-program parts).
    pub page_size: u32,
    /// Page program, or SST byte program plus AAI.
    pub program: ProgramKind,
    /// Erase granularities, smallest first.
    pub erase: &'static [EraseType],
    /// Page program time (tPP; for SST parts the byte/word program time tBP).
    pub page_program: OpTime,
    /// Chip erase time (tCE).
    pub chip_erase: OpTime,
    /// Write status register time (tW); zero when the write is immediate.
    pub write_status: OpTime,
    /// Has read status register 2 (`35`).
    pub rdsr2: bool,
    /// Has the 4-byte-address opcodes `13`/`0C`/`12` and the erase
    /// types' `opcode_4b`.
    pub four_byte_opcodes: bool,
    /// Has enter/exit 4-byte address mode (`B7`/`E9`).
    pub four_byte_mode: bool,
    /// Has software reset (`66` then `99`).
    pub reset: bool,
    /// Has deep power-down (`B9`, released by `AB`).
    pub deep_power_down: bool,
    /// The legacy electronic ID byte `AB` returns after three dummy bytes.
    pub release_id: Option<u8>,
    /// Has fast read (`0B`, one dummy byte).
    pub fast_read: bool,
    /// Answers `5A` with an SFDP table (JESD216B).
    pub sfdp: bool,
    /// Has SST's enable-write-status-register command (`50`).
    pub ewsr: bool,
    /// Block-protect bits.
    pub protect: ProtectLayout,
    /// Status register 1 bits that `01` writes.
    pub sr1_writable: u8,
    /// Status register 2 bits that `01`'s second byte writes (0: no second byte).
    pub sr2_writable: u8,
    /// Status register 1 at power-up (its non-volatile bits, on a new chip).
    pub sr1_default: u8,
}

const KIB: u32 = 1024;
const MIB: u32 = 1024 * 1024;

/// Winbond W25Q128JV, 128 Mbit. Times: datasheet "AC Electrical
/// Characteristics" (revision I, 2021, §9.6; its text is in
/// `bennett-lahn/dma-tapeout`, `docs/datasheets/md/W25Q128JV.md`): tPP
/// 0.4/3 ms, tSE 45/400 ms, tBE1 (32K) 120/1600 ms, tBE2 (64K) 150/2000 ms,
/// tCE 40/200 s, tW 10/15 ms (typ/max). Revisions before F (2018) gave a
/// typical tPP of 0.7 ms (revision D, `khofesh/winbond`, `W25Q128JV.pdf`):
/// the chip's SFDP dump in the message of Linux commit 83e824a4a595 ("mtd:
/// spi-nor: Correct flags for Winbond w25q128") encodes that older 0.7 ms
/// on SFDP's 64 µs grid (0.704 ms), and its 64 ms tSE is SFDP's 16 ms
/// grid, not the table. The maxima agree with a W25Qxx driver's table
/// (`iammingge/Driver_W25Qxx`, `W25Qxx.c`, row `W25Q128JV`).
pub const W25Q128JV: ChipSpec = ChipSpec {
    name: "W25Q128JV",
    jedec_id: [0xEF, 0x40, 0x18],
    size: 16 * MIB,
    page_size: 256,
    program: ProgramKind::Page,
    erase: &[
        EraseType { size: 4 * KIB, opcode: 0x20, opcode_4b: None, time: ms(45, 400) },
        EraseType { size: 32 * KIB, opcode: 0x52, opcode_4b: None, time: ms(120, 1600) },
        EraseType { size: 64 * KIB, opcode: 0xD8, opcode_4b: None, time: ms(150, 2000) },
    ],
    page_program: us(400, 3000),
    chip_erase: ms(40_000, 200_000),
    write_status: ms(10, 15),
    rdsr2: true,
    four_byte_opcodes: false,
    four_byte_mode: false,
    reset: true,
    deep_power_down: true,
    release_id: Some(0x17),
    fast_read: true,
    sfdp: true,
    ewsr: false,
    // SR1: BUSY WEL BP0 BP1 BP2 TB SEC SRP; 1/64 of 16 MiB = 256 KiB.
    protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: Some(5), unit: 256 * KIB },
    sr1_writable: 0xFC,
    sr2_writable: 0x43,
    sr1_default: 0x00,
};

/// Macronix MX25L12835F, 128 Mbit. Times: datasheet revision 1.6 (2016,
/// P/N PM1795; `lvalen91/CPC200-CCPA_resources`,
/// `hardware/MX25L12835F_datasheet.pdf`), §14 "Erase and Programming
/// Performance" and Table 18: tPP 0.5/1.5 ms, tSE 30/120 ms, tBE32
/// 0.15/0.65 s, tBE64 0.28/0.65 s, tCE 50/80 s, tW 40 ms max (no typical
/// given: the maximum is used). Revision 1.1 (2012) had slower times
/// (tPP 0.6/3 ms, tSE 43/200 ms), changed in revision 1.3.
pub const MX25L12835F: ChipSpec = ChipSpec {
    name: "MX25L12835F",
    jedec_id: [0xC2, 0x20, 0x18],
    size: 16 * MIB,
    page_size: 256,
    program: ProgramKind::Page,
    erase: &[
        EraseType { size: 4 * KIB, opcode: 0x20, opcode_4b: None, time: ms(30, 120) },
        EraseType { size: 32 * KIB, opcode: 0x52, opcode_4b: None, time: ms(150, 650) },
        EraseType { size: 64 * KIB, opcode: 0xD8, opcode_4b: None, time: ms(280, 650) },
    ],
    page_program: us(500, 1500),
    chip_erase: ms(50_000, 80_000),
    write_status: ms(40, 40),
    rdsr2: false,
    four_byte_opcodes: false,
    four_byte_mode: false,
    reset: true,
    deep_power_down: true,
    release_id: Some(0x17),
    fast_read: true,
    sfdp: true,
    ewsr: false,
    // SR: WIP WEL BP0..BP3 QE SRWD; BP=1 protects the top 64 KiB block.
    protect: ProtectLayout { bp_shift: 2, bp_bits: 4, tb_bit: None, unit: 64 * KIB },
    sr1_writable: 0xFC,
    sr2_writable: 0x00,
    sr1_default: 0x00,
};

/// GigaDevice GD25Q64C, 64 Mbit. Times: datasheet revision 3.0 (2018),
/// §8.6 "AC Characteristics", the −40…85 °C table (`espruino/EspruinoDocs`,
/// `datasheets/GD25Q64C.pdf`): tPP 0.6/2.4 ms, tSE 50/200 ms, tBE32
/// 0.15/0.8 s, tBE64 0.20/1.2 s, tCE 25/60 s, tW 5/30 ms; the maxima are
/// those for up to 50K cycles (beyond: tSE 300 ms, tBE32 1.6 s, tBE64
/// 2.0 s), and the 105 °C and 125 °C grades have their own, longer maxima.
pub const GD25Q64C: ChipSpec = ChipSpec {
    name: "GD25Q64C",
    jedec_id: [0xC8, 0x40, 0x17],
    size: 8 * MIB,
    page_size: 256,
    program: ProgramKind::Page,
    erase: &[
        EraseType { size: 4 * KIB, opcode: 0x20, opcode_4b: None, time: ms(50, 200) },
        EraseType { size: 32 * KIB, opcode: 0x52, opcode_4b: None, time: ms(150, 800) },
        EraseType { size: 64 * KIB, opcode: 0xD8, opcode_4b: None, time: ms(200, 1200) },
    ],
    page_program: us(600, 2400),
    chip_erase: ms(25_000, 60_000),
    write_status: ms(5, 30),
    rdsr2: true,
    four_byte_opcodes: false,
    four_byte_mode: false,
    reset: true,
    deep_power_down: true,
    release_id: Some(0x16),
    fast_read: true,
    sfdp: true,
    ewsr: false,
    // SR1: WIP WEL BP0 BP1 BP2 BP3(TB) BP4(SEC) SRP0; 1/64 of 8 MiB = 128 KiB.
    protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: Some(5), unit: 128 * KIB },
    sr1_writable: 0xFC,
    sr2_writable: 0x43,
    sr1_default: 0x00,
};

/// Microchip (SST) SST25VF016B, 16 Mbit. Times: data sheet S71271-02
/// (2006; `bangkr/ELink407`, `datasheet/SST25VF016B.pdf`): typical from its
/// features list (sector/block erase 18 ms, chip erase 35 ms, byte program
/// 7 µs), maximum from its Table 12 "AC Operating Characteristics" (tSE
/// and tBE 25 ms, tSCE 50 ms, tBP 10 µs). WRSR is immediate (the table
/// gives it no time).
pub const SST25VF016B: ChipSpec = ChipSpec {
    name: "SST25VF016B",
    jedec_id: [0xBF, 0x25, 0x41],
    size: 2 * MIB,
    page_size: 1,
    program: ProgramKind::ByteAndAai,
    erase: &[
        EraseType { size: 4 * KIB, opcode: 0x20, opcode_4b: None, time: ms(18, 25) },
        EraseType { size: 32 * KIB, opcode: 0x52, opcode_4b: None, time: ms(18, 25) },
        EraseType { size: 64 * KIB, opcode: 0xD8, opcode_4b: None, time: ms(18, 25) },
    ],
    page_program: us(7, 10),
    chip_erase: ms(35, 50),
    write_status: us(0, 0),
    rdsr2: false,
    four_byte_opcodes: false,
    four_byte_mode: false,
    reset: false,
    deep_power_down: false,
    release_id: None,
    fast_read: true,
    sfdp: false,
    ewsr: true,
    // SR: BUSY WEL BP0 BP1 BP2 BP3 AAI BPL; BP3 is not decoded for 16 Mbit.
    // BP=1 protects the top 1/32 (64 KiB); 6 and 7 protect everything.
    protect: ProtectLayout { bp_shift: 2, bp_bits: 3, tb_bit: None, unit: 64 * KIB },
    sr1_writable: 0xBC,
    sr2_writable: 0x00,
    // Power-up default: BP0..BP2 set (the whole array protected).
    sr1_default: 0x1C,
};

/// Winbond W25Q256JV, 256 Mbit, 4-byte addressing. Times: datasheet "AC
/// Electrical Characteristics" (revision I, 2018, §9.7;
/// `pdaxrom/N64cart`, `docs/W25Q256JV.pdf`): tPP 0.4/3 ms, tSE 50/400 ms,
/// tBE1 120/1600 ms, tBE2 150/2000 ms, tCE 80/400 s, tW 10/15 ms. The
/// typical tSE is 50 ms in revisions B, G and I (the W25Q128JV's is 45);
/// the typical tPP was 0.7 ms before revision H.
pub const W25Q256JV: ChipSpec = ChipSpec {
    name: "W25Q256JV",
    jedec_id: [0xEF, 0x40, 0x19],
    size: 32 * MIB,
    page_size: 256,
    program: ProgramKind::Page,
    erase: &[
        EraseType { size: 4 * KIB, opcode: 0x20, opcode_4b: Some(0x21), time: ms(50, 400) },
        EraseType { size: 32 * KIB, opcode: 0x52, opcode_4b: None, time: ms(120, 1600) },
        EraseType { size: 64 * KIB, opcode: 0xD8, opcode_4b: Some(0xDC), time: ms(150, 2000) },
    ],
    page_program: us(400, 3000),
    chip_erase: ms(80_000, 400_000),
    write_status: ms(10, 15),
    rdsr2: true,
    four_byte_opcodes: true,
    four_byte_mode: true,
    reset: true,
    deep_power_down: true,
    release_id: Some(0x18),
    fast_read: true,
    sfdp: true,
    ewsr: false,
    // SR1: BUSY WEL BP0..BP3 TB SRP; BP=1 protects the top 64 KiB.
    protect: ProtectLayout { bp_shift: 2, bp_bits: 4, tb_bit: Some(6), unit: 64 * KIB },
    sr1_writable: 0xFC,
    sr2_writable: 0x43,
    sr1_default: 0x00,
};

/// Every part the model knows.
pub const CHIPS: &[ChipSpec] = &[W25Q128JV, MX25L12835F, GD25Q64C, SST25VF016B, W25Q256JV];

impl ChipSpec {
    /// The row whose datasheet name is `name`.
    pub fn by_name(name: &str) -> Option<&'static ChipSpec> {
        CHIPS.iter().find(|c| c.name.eq_ignore_ascii_case(name))
    }
    /// The row whose JEDEC ID is `id`.
    pub fn by_jedec_id(id: [u8; 3]) -> Option<&'static ChipSpec> {
        CHIPS.iter().find(|c| c.jedec_id == id)
    }
    /// The byte range `[start, end)` the block-protect bits of `sr1` protect.
    pub fn protected_range(&self, sr1: u8) -> (u32, u32) {
        let p = &self.protect;
        let bp = (sr1 >> p.bp_shift) & ((1u8 << p.bp_bits) - 1);
        if bp == 0 {
            return (0, 0);
        }
        let len = u64::from(p.unit).checked_shl(u32::from(bp) - 1).unwrap_or(u64::MAX).min(u64::from(self.size)) as u32;
        let bottom = p.tb_bit.is_some_and(|b| sr1 & (1 << b) != 0);
        if bottom {
            (0, len)
        } else {
            (self.size - len, self.size)
        }
    }
}
