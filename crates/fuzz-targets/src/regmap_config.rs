//! Target `regmap_config`: [`RegmapConfig`] validation (`Regmap::new`) for
//! any format parameters (the generic format's register/value widths, flag
//! masks, padding and byte orders; the MCP251xFD formats), stride, last
//! register, register sets, defaults and cache. A configuration is refused
//! with a typed [`ConfigError`](wirespeed::regmap::ConfigError) or
//! accepted; a map accepted with a small address space then serves any
//! sequence of accesses on a RAM-backed bus speaking its format, with a
//! typed error or the value last written (masked to the register width).

use arbitrary::{Result, Unstructured};
use std::sync::Arc;
use wirespeed::regmap::format::{Endian, Format, Mcp251xfd, StdFormat};
use wirespeed::regmap::{CacheType, RamBus, RegSet, Regmap, RegmapConfig};

/// The largest map whose accesses are run (the RAM bus holds every register).
const MAX_RUN: u32 = 4095;

fn endian(u: &mut Unstructured<'_>) -> Result<Endian> {
    Ok(*u.choose(&[Endian::Big, Endian::Little, Endian::Native])?)
}

fn format(u: &mut Unstructured<'_>) -> Result<Arc<dyn Format>> {
    Ok(match u.int_in_range(0u8..=5)? {
        0 => Arc::new(Mcp251xfd::plain()),
        1 => Arc::new(Mcp251xfd::crc()),
        _ => {
            let reg_bits = crate::support::pick(u, &[8, 16, 32, 8, 16])?;
            let val_bits = crate::support::pick(u, &[8, 16, 32, 8, 16, 32])?;
            let mut f = StdFormat::new(reg_bits, val_bits);
            if u.arbitrary()? {
                let read = crate::support::pick(u, &[0x80, 0x8000, 0x0300, 0])?;
                let write = crate::support::pick(u, &[0, 0x0200, 0x40, 0x80])?;
                f = f.with_flags(read, write);
            }
            if u.arbitrary()? {
                f = f.with_padding(crate::support::pick(u, &[0, 8, 16, 24, 32])?);
            }
            f = f.with_endian(endian(u)?, endian(u)?);
            if u.arbitrary()? {
                f = f.without_auto_increment();
            }
            Arc::new(f)
        }
    })
}

fn reg(u: &mut Unstructured<'_>, max: u32) -> Result<u32> {
    Ok(if u.ratio(1u8, 8)? { u.arbitrary()? } else { u.int_in_range(0..=max.saturating_add(8))? })
}

fn set(u: &mut Unstructured<'_>, max: u32) -> Result<RegSet> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => RegSet::All,
        1 => RegSet::Nothing,
        _ => {
            let n = u.int_in_range(0usize..=4)?;
            let mut ranges = Vec::with_capacity(n);
            for _ in 0..n {
                let (a, b) = (reg(u, max)?, reg(u, max)?);
                ranges.push(a..=b);
            }
            RegSet::ranges(ranges)
        }
    })
}

fn config(u: &mut Unstructured<'_>) -> Result<RegmapConfig> {
    let format = format(u)?;
    let max_register = crate::support::pick(u, &[0, 1, 0xFF, 0xFFF, MAX_RUN, 0xFFFF, u32::MAX])?;
    let small = max_register.min(MAX_RUN);
    let n = u.int_in_range(0usize..=6)?;
    let mut defaults = Vec::with_capacity(n);
    for _ in 0..n {
        defaults.push((reg(u, small)?, crate::support::pick(u, &[0, 0xFF, 0xFFFF, u32::MAX])?));
    }
    Ok(RegmapConfig {
        format,
        reg_stride: crate::support::pick(u, &[1, 1, 2, 4, 4, 0, 3])?,
        max_register,
        readable: set(u, small)?,
        writeable: set(u, small)?,
        volatile: set(u, small)?,
        precious: set(u, small)?,
        defaults,
        cache: *u.choose(&[CacheType::None, CacheType::Flat, CacheType::Sparse])?,
    })
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(cfg) = config(&mut u) else { return };
    let bus = RamBus::new(cfg.format.clone(), cfg.reg_stride, cfg.max_register.min(MAX_RUN));
    let max = cfg.max_register;
    let Ok(map) = Regmap::new(cfg.clone(), bus) else { return };
    assert!(cfg.reg_stride > 0 && max <= cfg.format.max_address(), "accepted {cfg:?}");
    if max > MAX_RUN {
        return;
    }
    let val_bits = cfg.format.val_bits();
    let mask = if val_bits == 32 { u32::MAX } else { (1 << val_bits) - 1 };
    for _ in 0..16 {
        let (Ok(op), Ok(r), Ok(v)) = (u.int_in_range(0u8..=5), reg(&mut u, max), u.arbitrary::<u32>()) else { break };
        match op {
            0 => {
                if map.write(r, v).is_ok() && cfg.readable.contains(r) && !cfg.precious.contains(r) {
                    if let Ok(back) = map.read(r) {
                        assert_eq!(back, v & mask, "read after write of {r:#x}");
                    }
                }
            }
            1 => drop(map.read(r)),
            2 => drop(map.update_bits(r, v, v.rotate_left(7))),
            3 => {
                let n = usize::from(u.int_in_range(0u8..=6).unwrap_or(0));
                let vals: Vec<u32> = (0..n as u32).map(|i| v.wrapping_mul(i + 1) & mask).collect();
                if map.bulk_write(r, &vals).is_ok() {
                    let mut back = vec![0; n];
                    if map.bulk_read(r, &mut back).is_ok() {
                        assert_eq!(back, vals, "bulk read after bulk write at {r:#x}");
                    }
                }
            }
            4 => {
                map.mark_dirty();
                drop(map.sync());
            }
            _ => drop(map.dump()),
        }
    }
}
