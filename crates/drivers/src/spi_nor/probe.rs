//! The probe: JEDEC ID, SFDP, the ID table, their cross-check, 4-byte mode.

use super::chips::{by_jedec_id, KnownChip};
use super::error::Error;
use super::geometry::{EraseType, Geometry, OpTime, ProgramKind};
use super::sfdp::{self, AddressBytes, Bfpt, HEADER_LEN};
use super::{SpiNor, Stats, MAX_READ_PIECE};
use wirespeed::spi::{OwnedTransfer, SpiDevice, Transfer};

/// Times for a part known only by SFDP without the time DWORDs.
const DEFAULT_PAGE_PROGRAM: OpTime = OpTime::ms(1, 5);
const DEFAULT_ERASE: OpTime = OpTime::ms(100, 4000);
const DEFAULT_CHIP_ERASE: OpTime = OpTime::ms(50_000, 400_000);
const DEFAULT_WRITE_STATUS: OpTime = OpTime::ms(15, 100);
const SFDP_NAME: &str = "SFDP flash";
const SIXTEEN_MIB: u64 = 16 << 20;

pub(super) fn probe(dev: SpiDevice) -> Result<SpiNor, Error> {
    let mut id = [0u8; 3];
    dev.sync(&mut [Transfer::write(&[0x9F]), Transfer::read(&mut id)])?;
    if id == [0; 3] || id == [0xFF; 3] {
        return Err(Error::NoChip { id });
    }
    let known = by_jedec_id(id);
    let mut h = [0u8; HEADER_LEN];
    read_sfdp(&dev, 0, &mut h)?;
    let sfdp = match sfdp::parse_header(&h)? {
        Some(hdr) => {
            let mut b = vec![0u8; 4 * hdr.bfpt_dwords.min(sfdp::BFPT_MAX_DWORDS)];
            read_sfdp(&dev, hdr.bfpt_addr, &mut b)?;
            Some((hdr.revision, sfdp::parse_bfpt(&b)?))
        }
        None => None,
    };
    let (name, geometry, enter_b7) = match (known, sfdp) {
        (Some(k), Some((rev, b))) => {
            cross_check(k, &b)?;
            let (g, b7) = from_sfdp(rev, &b, Some(k))?;
            (k.name, g, b7)
        }
        (None, Some((rev, b))) => {
            let (g, b7) = from_sfdp(rev, &b, None)?;
            (SFDP_NAME, g, b7)
        }
        (Some(k), None) => (k.name, from_table(k)?, false),
        (None, None) => return Err(Error::UnknownChip { id }),
    };
    if enter_b7 {
        dev.sync(&mut [Transfer::write(&[0xB7])])?;
    }
    let rdsr = dev.prepare(vec![OwnedTransfer::duplex(vec![0x05, 0])]).map_err(|e| Error::Spi(e.into()))?;
    Ok(SpiNor {
        dev,
        id,
        name,
        geometry,
        protect: known.map(|k| k.protect),
        ewsr: known.is_some_and(|k| k.ewsr),
        rdsr,
        stats: Stats::default(),
        time_scale: 1.0,
        read_piece: MAX_READ_PIECE,
    })
}

/// Reads `buf.len()` bytes of the SFDP space from `addr`.
fn read_sfdp(dev: &SpiDevice, addr: u32, buf: &mut [u8]) -> Result<(), Error> {
    let a = addr.to_be_bytes();
    dev.sync(&mut [Transfer::write(&[0x5A, a[1], a[2], a[3], 0x00]), Transfer::read(buf)])?;
    Ok(())
}

/// Bit n set for each 2^n-byte erase size.
fn erase_mask(sizes: impl Iterator<Item = u32>) -> u64 {
    sizes.fold(0, |m, s| m | 1u64 << s.trailing_zeros())
}

fn cross_check(k: &KnownChip, b: &Bfpt) -> Result<(), Error> {
    let mismatch = |field, table, sfdp| Err(Error::Mismatch { chip: k.name, field, table, sfdp });
    if b.size != u64::from(k.size) {
        return mismatch("size", u64::from(k.size), b.size);
    }
    if let Some(p) = b.page_size {
        if k.program == ProgramKind::Page && p != k.page_size {
            return mismatch("page size", u64::from(k.page_size), u64::from(p));
        }
    }
    let (t, s) = (erase_mask(k.erase.iter().map(|e| e.size)), erase_mask(b.erase.iter().map(|e| e.size)));
    if t != s {
        return mismatch("erase sizes", t, s);
    }
    Ok(())
}

/// An operation's time from SFDP and from the known-parts table. Where both
/// have one, the typical time is the smaller: SFDP's coarse units (e.g.
/// 64 µs steps for a page program, 16 ms for a 4 KiB erase) round the
/// datasheet's typical up, and a wait that starts later than the chip
/// finishes costs the whole difference on every operation. The limit is
/// the larger maximum, so a slow chip is never declared timed out early.
fn merge(sfdp: Option<OpTime>, table: Option<OpTime>, default: OpTime) -> OpTime {
    match (sfdp, table) {
        (Some(s), Some(t)) => OpTime { typ_ns: s.typ_ns.min(t.typ_ns), max_ns: s.max_ns.max(t.max_ns) },
        (Some(s), None) => s,
        (None, Some(t)) => t,
        (None, None) => default,
    }
}

fn from_sfdp(rev: (u8, u8), b: &Bfpt, k: Option<&KnownChip>) -> Result<(Geometry, bool), Error> {
    let size = u32::try_from(b.size).map_err(|_| Error::Unsupported { what: "arrays larger than 4 GiB" })?;
    if b.erase.is_empty() {
        return Err(Error::BadSfdp { reason: "no erase types" });
    }
    let (address_bytes, enter_b7) = match (b.address_bytes, b.size > SIXTEEN_MIB) {
        (AddressBytes::Four, _) => (4, false),
        (_, false) => (3, false),
        (AddressBytes::ThreeOrFour, true) if b.enter_4b_b7 => (4, true),
        (AddressBytes::ThreeOrFour, true) => {
            return Err(Error::Unsupported { what: "4-byte addressing without B7 entry" })
        }
        (AddressBytes::Three, true) => return Err(Error::BadSfdp { reason: "over 16 MiB with 3-byte addresses only" }),
    };
    let erase = b
        .erase
        .iter()
        .map(|e| {
            let table = k.and_then(|k| k.erase.iter().find(|t| t.size == e.size)).map(|t| t.time);
            let time = merge(b.erase_times.then_some(e.time), table, DEFAULT_ERASE);
            EraseType { size: e.size, opcode: e.opcode, time }
        })
        .collect();
    let g = Geometry {
        size,
        page_size: b.page_size.or(k.map(|k| k.page_size)).unwrap_or(256),
        erase,
        address_bytes,
        sfdp_revision: Some(rev),
        program: k.map_or(ProgramKind::Page, |k| k.program),
        page_program: merge(b.page_program, k.map(|k| k.page_program), DEFAULT_PAGE_PROGRAM),
        chip_erase: merge(b.chip_erase, k.map(|k| k.chip_erase), DEFAULT_CHIP_ERASE),
        write_status: k.map_or(DEFAULT_WRITE_STATUS, |k| k.write_status),
    };
    Ok((g, enter_b7))
}

fn from_table(k: &KnownChip) -> Result<Geometry, Error> {
    if u64::from(k.size) > SIXTEEN_MIB {
        return Err(Error::Unsupported { what: "4-byte addressing for a part without SFDP" });
    }
    Ok(Geometry {
        size: k.size,
        page_size: k.page_size,
        erase: k.erase.to_vec(),
        address_bytes: 3,
        sfdp_revision: None,
        program: k.program,
        page_program: k.page_program,
        chip_erase: k.chip_erase,
        write_status: k.write_status,
    })
}
