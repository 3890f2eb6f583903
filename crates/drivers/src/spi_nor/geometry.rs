//! [`Geometry`]: what the driver knows about the part after the probe.

/// A typical and a maximum duration, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTime {
    /// Typical duration (ns): the driver sleeps this long before the first status poll.
    pub typ_ns: u64,
    /// Maximum duration (ns): the driver gives up ([`Error::Timeout`](super::Error::Timeout)) after it.
    pub max_ns: u64,
}

impl OpTime {
    pub(crate) const fn us(typ: u64, max: u64) -> OpTime {
        OpTime { typ_ns: typ * 1_000, max_ns: max * 1_000 }
    }
    pub(crate) const fn ms(typ: u64, max: u64) -> OpTime {
        OpTime { typ_ns: typ * 1_000_000, max_ns: max * 1_000_000 }
    }
}

/// One erase granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraseType {
    /// Bytes erased (a power of two), aligned to this size.
    pub size: u32,
    /// Opcode.
    pub opcode: u8,
    /// How long it takes.
    pub time: OpTime,
}

/// How data is programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramKind {
    /// Page program `02`, up to a page per command.
    Page,
    /// SST: byte program `02` and auto-address-increment word program `AD`.
    ByteAndAai,
}

/// Where the block-protect (BP) bits sit in status register 1 and what
/// they protect: with the BP field equal to `n > 0`, the top (or, with the
/// TB bit set, the bottom) `min(size, unit << (n - 1))` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtectLayout {
    /// Bit position of BP0.
    pub bp_shift: u8,
    /// Number of BP bits.
    pub bp_bits: u8,
    /// Position of the top/bottom bit, if any.
    pub tb_bit: Option<u8>,
    /// Bytes protected by the smallest non-zero BP value.
    pub unit: u32,
}

impl ProtectLayout {
    /// The BP field of `sr1`.
    pub fn bp(&self, sr1: u8) -> u8 {
        (sr1 >> self.bp_shift) & ((1u8 << self.bp_bits) - 1)
    }

    /// The byte range `[start, end)` protected on a `size`-byte part.
    pub fn range(&self, sr1: u8, size: u32) -> (u32, u32) {
        let bp = self.bp(sr1);
        if bp == 0 {
            return (0, 0);
        }
        let len = u64::from(self.unit).checked_shl(u32::from(bp) - 1).unwrap_or(u64::MAX).min(u64::from(size)) as u32;
        if self.tb_bit.is_some_and(|b| sr1 & (1 << b) != 0) {
            (0, len)
        } else {
            (size - len, size)
        }
    }
}

/// The part's layout and timing, from SFDP where the chip has it and from
/// the built-in ID table otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Array size in bytes.
    pub size: u32,
    /// Program page size in bytes (1 for SST byte/AAI parts).
    pub page_size: u32,
    /// Erase granularities, smallest first.
    pub erase: Vec<EraseType>,
    /// Address bytes the driver sends (4: the probe entered 4-byte mode with `B7`).
    pub address_bytes: u8,
    /// SFDP revision (major, minor), `None` without SFDP.
    pub sfdp_revision: Option<(u8, u8)>,
    /// How data is programmed.
    pub program: ProgramKind,
    /// Page (or SST byte/word) program time.
    pub page_program: OpTime,
    /// Chip erase time.
    pub chip_erase: OpTime,
    /// Write status register time.
    pub write_status: OpTime,
}
