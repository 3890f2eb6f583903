//! The spidev user API, from the kernel's `include/uapi/linux/spi/spidev.h`
//! and `spi.h`: the `spi_ioc_transfer` struct and the ioctl numbers.
//! Tests pin the layout and numbers to the header.

use rustix::ioctl::{opcode, Opcode};

/// `struct spi_ioc_transfer`: one transfer of an `SPI_IOC_MESSAGE(n)`.
/// Buffers are user addresses in 64-bit fields on every architecture.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpiIocTransfer {
    /// User address of the TX bytes (0: send zeros).
    pub tx_buf: u64,
    /// User address of the RX buffer (0: discard what comes back).
    pub rx_buf: u64,
    /// Bytes in each buffer.
    pub len: u32,
    /// Clock for this transfer (0: the device's default).
    pub speed_hz: u32,
    /// Wait after the transfer, before CS changes or the next transfer (µs).
    pub delay_usecs: u16,
    /// Bits per word (0: the device's default).
    pub bits_per_word: u8,
    /// Deassert CS after this transfer (inside a message), or keep it
    /// asserted after the message (on the last transfer).
    pub cs_change: u8,
    /// TX data lines (0/1 single, 2 dual, 4 quad).
    pub tx_nbits: u8,
    /// RX data lines.
    pub rx_nbits: u8,
    /// Wait between words (µs).
    pub word_delay_usecs: u8,
    /// Padding (zero).
    pub pad: u8,
}

/// The ioctl group of spidev (`SPI_IOC_MAGIC`).
pub const SPI_IOC_MAGIC: u8 = b'k';

/// The most transfers one `SPI_IOC_MESSAGE(n)` can carry: the size field of
/// an ioctl number has 14 bits (`SPI_MSGSIZE(N)` is 0 from 1 << 14 bytes on).
pub const MAX_TRANSFERS_PER_IOCTL: usize = ((1 << 14) - 1) / std::mem::size_of::<SpiIocTransfer>();

/// `SPI_IOC_MESSAGE(n)`: `_IOW('k', 0, char[n * 32])`.
pub const fn spi_ioc_message(n: usize) -> Opcode {
    opcode::from_components(
        rustix::ioctl::Direction::Write,
        SPI_IOC_MAGIC,
        0,
        n * std::mem::size_of::<SpiIocTransfer>(),
    )
}

/// `SPI_IOC_RD_MODE`: read the low 8 bits of the device's mode.
pub const SPI_IOC_RD_MODE: Opcode = opcode::read::<u8>(SPI_IOC_MAGIC, 1);
/// `SPI_IOC_WR_MODE`: write the device's mode (8 bits; the rest cleared).
pub const SPI_IOC_WR_MODE: Opcode = opcode::write::<u8>(SPI_IOC_MAGIC, 1);
/// `SPI_IOC_RD_LSB_FIRST`: read whether words shift LSB first (0 or 1).
pub const SPI_IOC_RD_LSB_FIRST: Opcode = opcode::read::<u8>(SPI_IOC_MAGIC, 2);
/// `SPI_IOC_WR_LSB_FIRST`: write whether words shift LSB first.
pub const SPI_IOC_WR_LSB_FIRST: Opcode = opcode::write::<u8>(SPI_IOC_MAGIC, 2);
/// `SPI_IOC_WR_BITS_PER_WORD`: write the device's default word size (0: 8).
pub const SPI_IOC_WR_BITS_PER_WORD: Opcode = opcode::write::<u8>(SPI_IOC_MAGIC, 3);
/// `SPI_IOC_WR_MAX_SPEED_HZ`: write the device's default clock.
pub const SPI_IOC_WR_MAX_SPEED_HZ: Opcode = opcode::write::<u32>(SPI_IOC_MAGIC, 4);
/// `SPI_IOC_RD_MODE32`: read the device's 32-bit mode.
pub const SPI_IOC_RD_MODE32: Opcode = opcode::read::<u32>(SPI_IOC_MAGIC, 5);
/// `SPI_IOC_WR_MODE32`: write the device's 32-bit mode.
pub const SPI_IOC_WR_MODE32: Opcode = opcode::write::<u32>(SPI_IOC_MAGIC, 5);
/// `SPI_IOC_RD_MAX_SPEED_HZ`: read the device's default clock.
pub const SPI_IOC_RD_MAX_SPEED_HZ: Opcode = opcode::read::<u32>(SPI_IOC_MAGIC, 4);
/// `SPI_IOC_RD_BITS_PER_WORD`: read the device's default word size.
pub const SPI_IOC_RD_BITS_PER_WORD: Opcode = opcode::read::<u8>(SPI_IOC_MAGIC, 3);

/// Mode bits `SPI_CPHA` and `SPI_CPOL` (the clock mode).
pub const SPI_CPHA: u32 = 0x01;
/// See [`SPI_CPHA`].
pub const SPI_CPOL: u32 = 0x02;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn transfer_struct_has_the_kernel_layout() {
        assert_eq!(size_of::<SpiIocTransfer>(), 32);
        assert_eq!(std::mem::align_of::<SpiIocTransfer>(), 8);
        let offsets = [
            offset_of!(SpiIocTransfer, tx_buf),
            offset_of!(SpiIocTransfer, rx_buf),
            offset_of!(SpiIocTransfer, len),
            offset_of!(SpiIocTransfer, speed_hz),
            offset_of!(SpiIocTransfer, delay_usecs),
            offset_of!(SpiIocTransfer, bits_per_word),
            offset_of!(SpiIocTransfer, cs_change),
            offset_of!(SpiIocTransfer, tx_nbits),
            offset_of!(SpiIocTransfer, rx_nbits),
            offset_of!(SpiIocTransfer, word_delay_usecs),
            offset_of!(SpiIocTransfer, pad),
        ];
        assert_eq!(offsets, [0, 8, 16, 20, 24, 26, 27, 28, 29, 30, 31]);
    }

    #[test]
    fn ioctl_numbers_are_the_kernel_s() {
        // asm-generic/ioctl.h: dir << 30 | size << 16 | 'k' << 8 | nr (x86, arm, arm64, riscv).
        assert_eq!(spi_ioc_message(1) as u64, 0x4020_6b00);
        assert_eq!(spi_ioc_message(2) as u64, 0x4040_6b00);
        assert_eq!(spi_ioc_message(511) as u64, 0x7fe0_6b00);
        assert_eq!(SPI_IOC_RD_MODE32 as u64, 0x8004_6b05);
        assert_eq!(SPI_IOC_WR_MODE32 as u64, 0x4004_6b05);
        assert_eq!(SPI_IOC_RD_MAX_SPEED_HZ as u64, 0x8004_6b04);
        assert_eq!(SPI_IOC_RD_BITS_PER_WORD as u64, 0x8001_6b03);
        assert_eq!(SPI_IOC_WR_BITS_PER_WORD as u64, 0x4001_6b03);
        assert_eq!(SPI_IOC_RD_MODE as u64, 0x8001_6b01);
        assert_eq!(SPI_IOC_WR_MODE as u64, 0x4001_6b01);
        assert_eq!(SPI_IOC_RD_LSB_FIRST as u64, 0x8001_6b02);
        assert_eq!(SPI_IOC_WR_LSB_FIRST as u64, 0x4001_6b02);
        assert_eq!(SPI_IOC_WR_MAX_SPEED_HZ as u64, 0x4004_6b04);
        assert_eq!(MAX_TRANSFERS_PER_IOCTL, 511);
    }
}
