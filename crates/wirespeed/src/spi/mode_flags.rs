//! [`ModeFlags`]: the SPI mode bits beyond CPOL/CPHA, numbered as the
//! kernel numbers them (`include/uapi/linux/spi/spi.h`), so that a backend
//! over Linux passes them through unchanged.

use std::fmt;

/// SPI mode bits beyond the clock mode ([`Mode`](super::Mode)): chip-select
/// polarity, bit order, wiring, dual/quad lines. A device asks for them in
/// [`DeviceConfig::flags`](super::DeviceConfig::flags); a controller says
/// which it supports in [`ControllerCaps::mode_flags`](super::ControllerCaps::mode_flags).
///
/// ```
/// use wirespeed::spi::ModeFlags;
/// let f = ModeFlags::CS_HIGH | ModeFlags::LSB_FIRST;
/// assert!(f.contains(ModeFlags::CS_HIGH));
/// assert_eq!(f.to_string(), "CS_HIGH|LSB_FIRST");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ModeFlags(u32);

impl ModeFlags {
    /// No flags: CS active low, MSB first, separate MOSI/MISO.
    pub const NONE: ModeFlags = ModeFlags(0);
    /// Chip select active high (`SPI_CS_HIGH`).
    pub const CS_HIGH: ModeFlags = ModeFlags(1 << 2);
    /// Least significant bit first (`SPI_LSB_FIRST`).
    pub const LSB_FIRST: ModeFlags = ModeFlags(1 << 3);
    /// MOSI and MISO share one wire (`SPI_3WIRE`).
    pub const THREE_WIRE: ModeFlags = ModeFlags(1 << 4);
    /// The controller loops MOSI back to MISO (`SPI_LOOP`).
    pub const LOOP: ModeFlags = ModeFlags(1 << 5);
    /// No chip select: one device on the bus, or CS driven by software (`SPI_NO_CS`).
    pub const NO_CS: ModeFlags = ModeFlags(1 << 6);
    /// The device pulls its READY line low to pause the master (`SPI_READY`).
    pub const READY: ModeFlags = ModeFlags(1 << 7);
    /// Transmits on 2 lines when a transfer asks for it (`SPI_TX_DUAL`).
    pub const TX_DUAL: ModeFlags = ModeFlags(1 << 8);
    /// Transmits on 4 lines when a transfer asks for it (`SPI_TX_QUAD`).
    pub const TX_QUAD: ModeFlags = ModeFlags(1 << 9);
    /// Receives on 2 lines when a transfer asks for it (`SPI_RX_DUAL`).
    pub const RX_DUAL: ModeFlags = ModeFlags(1 << 10);
    /// Receives on 4 lines when a transfer asks for it (`SPI_RX_QUAD`).
    pub const RX_QUAD: ModeFlags = ModeFlags(1 << 11);
    /// Every flag above.
    pub const ALL: ModeFlags = ModeFlags(0xffc);

    const NAMES: [(ModeFlags, &'static str); 10] = [
        (ModeFlags::CS_HIGH, "CS_HIGH"),
        (ModeFlags::LSB_FIRST, "LSB_FIRST"),
        (ModeFlags::THREE_WIRE, "3WIRE"),
        (ModeFlags::LOOP, "LOOP"),
        (ModeFlags::NO_CS, "NO_CS"),
        (ModeFlags::READY, "READY"),
        (ModeFlags::TX_DUAL, "TX_DUAL"),
        (ModeFlags::TX_QUAD, "TX_QUAD"),
        (ModeFlags::RX_DUAL, "RX_DUAL"),
        (ModeFlags::RX_QUAD, "RX_QUAD"),
    ];

    /// The flags of the kernel's mode bits `bits` (CPOL/CPHA and unknown bits dropped).
    pub const fn from_bits_truncate(bits: u32) -> ModeFlags {
        ModeFlags(bits & ModeFlags::ALL.0)
    }
    /// The kernel's mode bits of these flags.
    pub const fn bits(self) -> u32 {
        self.0
    }
    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: ModeFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The flags of `self` that `other` lacks.
    pub const fn without(self, other: ModeFlags) -> ModeFlags {
        ModeFlags(self.0 & !other.0)
    }
}

impl std::ops::BitOr for ModeFlags {
    type Output = ModeFlags;
    fn bitor(self, rhs: ModeFlags) -> ModeFlags {
        ModeFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for ModeFlags {
    fn bitor_assign(&mut self, rhs: ModeFlags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Display for ModeFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return write!(f, "none");
        }
        let mut first = true;
        for (flag, name) in ModeFlags::NAMES {
            if self.contains(flag) {
                write!(f, "{}{name}", if first { "" } else { "|" })?;
                first = false;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ModeFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModeFlags({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_carry_the_kernel_numbers_and_names() {
        // include/uapi/linux/spi/spi.h
        assert_eq!(ModeFlags::CS_HIGH.bits(), 0x04);
        assert_eq!(ModeFlags::NO_CS.bits(), 0x40);
        assert_eq!(ModeFlags::RX_QUAD.bits(), 0x800);
        assert_eq!(ModeFlags::from_bits_truncate(0x3 | 0x40 | 0x1_0000), ModeFlags::NO_CS);
        assert_eq!((ModeFlags::TX_DUAL | ModeFlags::RX_QUAD).to_string(), "TX_DUAL|RX_QUAD");
        assert_eq!(ModeFlags::NONE.to_string(), "none");
        let names: u32 = ModeFlags::NAMES.iter().fold(0, |m, (f, _)| m | f.bits());
        assert_eq!(names, ModeFlags::ALL.bits(), "every flag has a name");
    }
}
