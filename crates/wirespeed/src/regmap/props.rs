//! Register properties compiled for the hot path: one flag byte per register
//! in a table when the map is small enough, the configured sets otherwise.

use super::config::{RegSet, RegmapConfig};

pub(crate) const READABLE: u8 = 1;
pub(crate) const WRITEABLE: u8 = 2;
pub(crate) const VOLATILE: u8 = 4;
pub(crate) const PRECIOUS: u8 = 8;

/// Largest register count for which flags are tabulated (64 KiB of table).
const TABLE_MAX: u64 = 1 << 16;

#[derive(Debug)]
pub(crate) struct Props {
    table: Option<Box<[u8]>>,
    sets: [RegSet; 4],
    stride: u32,
}

impl Props {
    pub(crate) fn compile(cfg: &RegmapConfig, slots: u64) -> Props {
        let sets = [cfg.readable.clone(), cfg.writeable.clone(), cfg.volatile.clone(), cfg.precious.clone()];
        let mut p = Props { table: None, sets, stride: cfg.reg_stride };
        if slots <= TABLE_MAX {
            let table: Box<[u8]> = (0..slots as u32).map(|i| p.compute(i * cfg.reg_stride)).collect();
            p.table = Some(table);
        }
        p
    }

    fn compute(&self, reg: u32) -> u8 {
        [READABLE, WRITEABLE, VOLATILE, PRECIOUS]
            .iter()
            .zip(&self.sets)
            .filter(|(_, s)| s.contains(reg))
            .fold(0, |acc, (&bit, _)| acc | bit)
    }

    /// Flags of register `reg` (slot `idx`, already range-checked).
    #[inline]
    pub(crate) fn flags(&self, idx: u32) -> u8 {
        match &self.table {
            Some(t) => t[idx as usize],
            None => self.compute(idx * self.stride),
        }
    }
}
