//! The SPI CRC of the MCP2518FD: CRC-16 with polynomial 0x8005, initial value
//! 0xFFFF, MSB first, no reflection, no final XOR (CRC-16/CMS), computed over
//! the command bytes, the length byte and the data bytes.

/// Feeds `bytes` into a running CRC.
pub fn crc16_update(mut crc: u16, bytes: &[u8]) -> u16 {
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x8005 } else { crc << 1 };
        }
    }
    crc
}

/// The CRC of `bytes` from the device's initial value 0xFFFF.
pub fn crc16(bytes: &[u8]) -> u16 {
    crc16_update(0xFFFF, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_catalogue_check_value() {
        // CRC RevEng catalogue, CRC-16/CMS: check = 0xaee7.
        assert_eq!(crc16(b"123456789"), 0xAEE7);
        assert_eq!(crc16_update(crc16(b"1234"), b"56789"), 0xAEE7);
    }
}
