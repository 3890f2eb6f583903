//! The MCP251xFD's SPI CRC: CRC-16 with polynomial 0x8005, initial value
//! 0xFFFF, MSB first, no reflection, no final XOR (CRC-16/CMS), over the
//! command bytes, the length byte and the data.

const fn table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u16) << 8;
        let mut b = 0;
        while b < 8 {
            c = if c & 0x8000 != 0 { (c << 1) ^ 0x8005 } else { c << 1 };
            b += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u16; 256] = table();

/// Feeds `bytes` into a running CRC.
pub fn crc16_update(mut crc: u16, bytes: &[u8]) -> u16 {
    for &b in bytes {
        crc = (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)];
    }
    crc
}

/// The CRC of `bytes` from the initial value 0xFFFF.
pub fn crc16(bytes: &[u8]) -> u16 {
    crc16_update(0xFFFF, bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn catalogue_check_value() {
        assert_eq!(super::crc16(b"123456789"), 0xAEE7);
    }
}
