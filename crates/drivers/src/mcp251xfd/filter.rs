//! Acceptance filters: an identifier and a mask (1 = the bit must match),
//! optionally matching only standard or only extended frames.

use super::error::Error;
use super::hot::id_word;
use super::regs::*;
use crate::can::CanId;

/// One acceptance filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    /// Identifier to compare with.
    pub id: CanId,
    /// Bits of the identifier that must match (in the identifier's own numbering).
    pub mask: u32,
    /// Match only frames of `id`'s kind (standard or extended).
    pub match_kind: bool,
}

impl Filter {
    /// Accepts every frame.
    pub fn accept_all() -> Filter {
        Filter { id: CanId::Standard(0), mask: 0, match_kind: false }
    }

    /// Accepts exactly `id` (of its kind).
    pub fn exact(id: CanId) -> Filter {
        let mask = if id.is_extended() { crate::can::EXTENDED_ID_MAX } else { u32::from(crate::can::STANDARD_ID_MAX) };
        Filter { id, mask, match_kind: true }
    }

    pub(super) fn check(&self) -> Result<(), Error> {
        let max =
            if self.id.is_extended() { crate::can::EXTENDED_ID_MAX } else { u32::from(crate::can::STANDARD_ID_MAX) };
        if self.id.raw() > max || self.mask > max {
            return Err(Error::InvalidConfig {
                what: "filter",
                value: format!("id {:#x} mask {:#x}", self.id.raw(), self.mask),
                allowed: "id and mask within 11 bits (standard) or 29 bits (extended)",
            });
        }
        Ok(())
    }

    /// (FLTOBJ, MASK) register values.
    pub(super) fn registers(&self) -> (u32, u32) {
        let mut obj = id_word(self.id);
        let mut mask = match self.id {
            CanId::Standard(_) => self.mask & OBJ_ID_SID_MASK,
            CanId::Extended(_) => id_word(CanId::Extended(self.mask)),
        };
        if self.id.is_extended() {
            obj |= FLTOBJ_EXIDE;
        }
        if self.match_kind {
            mask |= MASK_MIDE;
        }
        (obj, mask)
    }
}
