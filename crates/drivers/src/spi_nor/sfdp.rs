//! SFDP (JESD216) parsing: the header, the first parameter header (which
//! must be the Basic Flash Parameter Table) and the BFPT fields the driver
//! uses. Pure functions of bytes; the bus reads are in the probe.

use super::error::Error;
use super::geometry::{EraseType, OpTime};

/// Bytes of the SFDP header plus the first parameter header.
pub const HEADER_LEN: usize = 16;
/// BFPT DWORDs the driver reads at most (JESD216B has 16).
pub const BFPT_MAX_DWORDS: usize = 16;

/// Where the BFPT is, from the headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// SFDP revision (major, minor).
    pub revision: (u8, u8),
    /// BFPT address in the SFDP space.
    pub bfpt_addr: u32,
    /// BFPT length in DWORDs.
    pub bfpt_dwords: usize,
}

/// Address bytes, BFPT DWORD 1 bits 18:17.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressBytes {
    /// 3 only.
    Three,
    /// 3 by default, 4 on request.
    ThreeOrFour,
    /// 4 only.
    Four,
}

/// What the BFPT says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bfpt {
    /// Array size in bytes (DWORD 2).
    pub size: u64,
    /// Address bytes (DWORD 1).
    pub address_bytes: AddressBytes,
    /// Erase types (DWORDs 8–9), smallest first; times from DWORD 10 when
    /// present (else zero).
    pub erase: Vec<EraseType>,
    /// Whether DWORD 10 (erase times) was present.
    pub erase_times: bool,
    /// Page size (DWORD 11), if present.
    pub page_size: Option<u32>,
    /// Page program time (DWORD 11), if present.
    pub page_program: Option<OpTime>,
    /// Chip erase time (DWORD 11), if present.
    pub chip_erase: Option<OpTime>,
    /// `B7` enters 4-byte address mode (DWORD 16 bit 24), if present.
    pub enter_4b_b7: bool,
}

/// `None` when the signature is not "SFDP" (the part has no SFDP).
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<Option<Header>, Error> {
    if &h[0..4] != b"SFDP" {
        return Ok(None);
    }
    let revision = (h[5], h[4]);
    if revision.0 != 1 {
        return Err(Error::BadSfdp { reason: "major revision is not 1" });
    }
    let p = &h[8..16];
    if p[0] != 0x00 || p[7] != 0xFF {
        return Err(Error::BadSfdp { reason: "first parameter table is not the BFPT (ID FF00)" });
    }
    let bfpt_dwords = usize::from(p[3]);
    if bfpt_dwords < 9 {
        return Err(Error::BadSfdp { reason: "BFPT shorter than 9 DWORDs" });
    }
    let bfpt_addr = u32::from_le_bytes([p[4], p[5], p[6], 0]);
    Ok(Some(Header { revision, bfpt_addr, bfpt_dwords }))
}

/// Multiplier field (4 bits): max = 2 × (m + 1) × typical.
fn max_of(typ_ns: u64, m: u32) -> OpTime {
    OpTime { typ_ns, max_ns: typ_ns * 2 * u64::from(m + 1) }
}

/// A time field of `count_bits` count bits then unit bits: (count + 1) × unit.
fn time(field: u32, count_bits: u32, units_ns: &[u64]) -> u64 {
    let count = u64::from(field & ((1 << count_bits) - 1)) + 1;
    let unit = (field >> count_bits) as usize;
    count * units_ns.get(unit).copied().unwrap_or(0)
}

/// Parses the BFPT DWORDs (little-endian bytes, 4 × DWORD count).
pub fn parse_bfpt(bytes: &[u8]) -> Result<Bfpt, Error> {
    let d: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if d.len() < 9 {
        return Err(Error::BadSfdp { reason: "BFPT shorter than 9 DWORDs" });
    }
    let address_bytes = match (d[0] >> 17) & 0b11 {
        0b00 => AddressBytes::Three,
        0b01 => AddressBytes::ThreeOrFour,
        0b10 => AddressBytes::Four,
        _ => return Err(Error::BadSfdp { reason: "reserved address-bytes field" }),
    };
    let size = if d[1] & (1 << 31) == 0 {
        (u64::from(d[1]) + 1) / 8
    } else {
        let n = d[1] & 0x7FFF_FFFF;
        if !(3..=63).contains(&n) {
            return Err(Error::BadSfdp { reason: "density out of range" });
        }
        1u64 << (n - 3)
    };
    let erase_times = d.len() >= 10;
    let mut erase = Vec::new();
    for i in 0..4 {
        let field = (d[7 + i / 2] >> (16 * (i % 2))) & 0xFFFF;
        let n = field & 0xFF;
        if n == 0 {
            continue;
        }
        if n > 31 {
            return Err(Error::BadSfdp { reason: "erase size out of range" });
        }
        let t = if erase_times {
            let f = (d[9] >> (4 + 7 * i)) & 0x7F;
            max_of(time(f, 5, &[1_000_000, 16_000_000, 128_000_000, 1_000_000_000]), d[9] & 0xF)
        } else {
            OpTime { typ_ns: 0, max_ns: 0 }
        };
        erase.push(EraseType { size: 1 << n, opcode: (field >> 8) as u8, time: t });
    }
    erase.sort_by_key(|e| e.size);
    let (page_size, page_program, chip_erase) = if d.len() >= 11 {
        let w = d[10];
        let pp = max_of(time((w >> 8) & 0x3F, 5, &[8_000, 64_000]), w & 0xF);
        let erase_mult = if erase_times { d[9] & 0xF } else { 0 };
        let ce = time((w >> 24) & 0x7F, 5, &[16_000_000, 256_000_000, 4_000_000_000, 64_000_000_000]);
        (Some(1u32 << ((w >> 4) & 0xF)), Some(pp), Some(max_of(ce, erase_mult)))
    } else {
        (None, None, None)
    };
    let enter_4b_b7 = d.len() >= 16 && d[15] & (1 << 24) != 0;
    Ok(Bfpt { size, address_bytes, erase, erase_times, page_size, page_program, chip_erase, enter_4b_b7 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bfpt9() -> Vec<u8> {
        let mut d = [0u32; 9];
        d[0] = 0xFF80_20E5;
        d[1] = 16 * 1024 * 1024 * 8 - 1;
        d[7] = 0x520F_200C; // 4 KiB 20h, 32 KiB 52h
        d[8] = 0x0000_D810; // 64 KiB D8h
        d.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn header_without_signature_is_no_sfdp() {
        assert_eq!(parse_header(&[0xFF; HEADER_LEN]), Ok(None));
    }

    #[test]
    fn header_finds_bfpt() {
        let h = *b"SFDP\x06\x01\x00\xFF\x00\x06\x01\x10\x30\x00\x00\xFF";
        assert_eq!(parse_header(&h), Ok(Some(Header { revision: (1, 6), bfpt_addr: 0x30, bfpt_dwords: 16 })));
        let mut bad = h;
        bad[8] = 0x84;
        assert!(matches!(parse_header(&bad), Err(Error::BadSfdp { .. })));
    }

    #[test]
    fn jesd216_nine_dwords_have_no_times() {
        let b = parse_bfpt(&bfpt9()).unwrap();
        assert_eq!(b.size, 16 << 20);
        assert_eq!(b.address_bytes, AddressBytes::Three);
        assert_eq!(
            b.erase.iter().map(|e| (e.size, e.opcode)).collect::<Vec<_>>(),
            [(4096, 0x20), (32768, 0x52), (65536, 0xD8)]
        );
        assert!(!b.erase_times);
        assert_eq!(b.page_size, None);
    }

    #[test]
    fn exponent_density() {
        let mut v = bfpt9();
        v[4..8].copy_from_slice(&(0x8000_0000u32 | 34).to_le_bytes()); // 2^34 bits
        assert_eq!(parse_bfpt(&v).unwrap().size, 2u64 << 30);
    }

    #[test]
    fn times_decode() {
        let mut v = bfpt9();
        // DWORD 10: multiplier 4; type 1: 25 ms (count 24, unit 1 ms).
        let d10: u32 = 4 | (24 << 4);
        // DWORD 11: mult 3, page 2^8, pp 7 × 64 µs (6 | unit bit), chip erase 3 × 16 ms.
        let d11: u32 = 3 | (8 << 4) | ((6 | (1 << 5)) << 8) | (2 << 24);
        v.extend_from_slice(&d10.to_le_bytes());
        v.extend_from_slice(&d11.to_le_bytes());
        let b = parse_bfpt(&v).unwrap();
        assert_eq!(b.erase[0].time, OpTime { typ_ns: 25_000_000, max_ns: 250_000_000 });
        assert_eq!(b.page_size, Some(256));
        assert_eq!(b.page_program, Some(OpTime { typ_ns: 448_000, max_ns: 448_000 * 8 }));
        assert_eq!(b.chip_erase, Some(OpTime { typ_ns: 48_000_000, max_ns: 480_000_000 }));
    }
}
