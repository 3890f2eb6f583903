//! SFDP (JESD216B) table generated from a chip row: the SFDP header, one
//! parameter header and the 16-DWORD Basic Flash Parameter Table (BFPT).
//!
//! What the BFPT says: 4 KiB erase and its opcode (DWORD 1), address bytes
//! (DWORD 1 bits 18:17), density (DWORD 2), no 1-1-2/1-2-2/1-1-4/1-4-4/2-2-2/
//! 4-4-4 reads (DWORDs 1, 3-7; 1-1-1 fast read `0B` needs no bit), the erase
//! types (DWORDs 8-9) and their typical times (DWORD 10), page size and
//! typical page program and chip erase times (DWORD 11), no suspend
//! (DWORD 12), legacy status polling and `B9`/`AB` deep power-down with a
//! 3 µs exit delay where the part has it (DWORD 14), `66`/`99` soft reset,
//! `B7`/`E9` 4-byte mode entry and exit and a non-volatile status register 1
//! written after `06` (DWORD 16). Other fields read 0 or
//! their reserved 1s.

use super::chips::{ChipSpec, OpTime};

/// Byte address of the BFPT in the SFDP space.
pub const BFPT_OFFSET: usize = 0x30;
/// BFPT length in DWORDs (JESD216B).
pub const BFPT_DWORDS: usize = 16;

/// The SFDP space of `spec` (empty when the part has none).
pub fn table(spec: &ChipSpec) -> Vec<u8> {
    if !spec.sfdp {
        return Vec::new();
    }
    let mut t = vec![0xFF; BFPT_OFFSET + 4 * BFPT_DWORDS];
    // SFDP header: signature, minor 6 (JESD216B), major 1, NPH = 0, access 0xFF.
    t[0..8].copy_from_slice(&[b'S', b'F', b'D', b'P', 0x06, 0x01, 0x00, 0xFF]);
    // Parameter header 0: BFPT (ID 0xFF00), rev 1.6, length, pointer.
    let ptp = (BFPT_OFFSET as u32).to_le_bytes();
    t[8..16].copy_from_slice(&[0x00, 0x06, 0x01, BFPT_DWORDS as u8, ptp[0], ptp[1], ptp[2], 0xFF]);
    for (i, d) in bfpt(spec).iter().enumerate() {
        t[BFPT_OFFSET + 4 * i..BFPT_OFFSET + 4 * i + 4].copy_from_slice(&d.to_le_bytes());
    }
    t
}

/// Encodes a typical time as (count, unit index) for a field of `count_bits`
/// whose units are `units_ns`: the smallest unit that holds it.
fn encode_time(ns: u64, count_bits: u32, units_ns: &[u64]) -> u32 {
    let max_count = 1u64 << count_bits;
    for (i, &u) in units_ns.iter().enumerate() {
        let count = ns.div_ceil(u).max(1);
        if count <= max_count || i == units_ns.len() - 1 {
            return ((count.min(max_count) - 1) as u32) | ((i as u32) << count_bits);
        }
    }
    0
}

/// Multiplier field: max = 2 × (m + 1) × typical, the smallest m that covers `t`.
fn multiplier(t: OpTime) -> u32 {
    let ratio = t.max_ns.div_ceil(t.typ_ns.max(1));
    (ratio.div_ceil(2).saturating_sub(1)).min(15) as u32
}

fn bfpt(spec: &ChipSpec) -> [u32; BFPT_DWORDS] {
    let mut d = [0u32; BFPT_DWORDS];
    let four_k = spec.erase.iter().find(|e| e.size == 4096);
    let addr_bytes = if spec.four_byte_mode || spec.four_byte_opcodes { 0b01 } else { 0b00 };
    d[0] = 0xFF80_0000
        | (addr_bytes << 17)
        | (u32::from(four_k.map_or(0xFF, |e| e.opcode)) << 8)
        | (u32::from(spec.page_size >= 64) << 2)
        | if four_k.is_some() { 0b01 } else { 0b11 };
    d[1] = spec.size * 8 - 1;
    // DWORDs 3-4: no 1-4-4/1-1-4/1-1-2/1-2-2 fast reads (all fields 0).
    d[4] = 0xFFFF_FFEE; // no 2-2-2 (bit 0) nor 4-4-4 (bit 4)
    d[5] = 0x0000_FFFF;
    d[6] = 0x0000_FFFF;
    for (i, e) in spec.erase.iter().take(4).enumerate() {
        let field = u32::from(e.size.trailing_zeros() as u8) | (u32::from(e.opcode) << 8);
        d[7 + i / 2] |= field << (16 * (i % 2));
    }
    // DWORD 10: erase times (units 1 ms, 16 ms, 128 ms, 1 s) and multiplier.
    if let Some(first) = spec.erase.first() {
        d[9] = multiplier(first.time);
        for (i, e) in spec.erase.iter().take(4).enumerate() {
            let f = encode_time(e.time.typ_ns, 5, &[1_000_000, 16_000_000, 128_000_000, 1_000_000_000]);
            d[9] |= f << (4 + 7 * i);
        }
    }
    // DWORD 11: multiplier, page size, page program (8/64 µs), chip erase (16 ms..64 s).
    let pp = encode_time(spec.page_program.typ_ns, 5, &[8_000, 64_000]);
    let ce = encode_time(spec.chip_erase.typ_ns, 5, &[16_000_000, 256_000_000, 4_000_000_000, 64_000_000_000]);
    d[10] = (1 << 31) | multiplier(spec.page_program) | (spec.page_size.trailing_zeros() << 4) | (pp << 8) | (ce << 24);
    d[11] = 1 << 31; // suspend/resume not supported
                     // DWORD 14: legacy status polling (05h, WIP); deep power-down B9/AB with
                     // a 3 µs exit delay (count 2 of 1 µs units), or "not supported".
    d[13] = if spec.deep_power_down { (0xB9 << 23) | (0xAB << 15) | (1 << 13) | (2 << 8) } else { 1 << 31 };
    d[13] |= (1 << 2) | 0b11;
    let reset = if spec.reset { 1 << 12 } else { 0 };
    let (enter, exit) = if spec.four_byte_mode { (1 << 24, 1 << 14) } else { (0, 0) };
    // Bit 0: non-volatile status register 1, written after 06h.
    d[15] = enter | exit | reset | 1;
    d
}
