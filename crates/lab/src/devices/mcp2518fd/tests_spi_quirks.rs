//! What the host reads over SPI where the silicon departs from its
//! registers: the READ_CRC of C1TBC ([`Errata::tbc_read_crc`]) and the SPI
//! clock limit ([`Errata::spi_clock_limit`]), each with its switch on and off.

use super::quirks::slip;
use super::regs::*;
use super::testkit::*;
use super::*;

/// A ready device with `errata`.
fn device(errata: Errata) -> T {
    let mut t = T::with(Mcp2518fdConfig::default(), errata);
    t.ready();
    t
}

#[test]
fn read_crc_of_tbc_flips_bit_7_of_byte_0_and_sends_the_crc_of_the_true_byte() {
    let mut t = device(Errata::ALL);
    // TBCEN = 0: TBC reads 0, so byte 0 is 0x00.
    let (data, got, mine) = crc_read(&mut t, C1TBC, 4);
    assert_eq!(data, vec![0x80, 0, 0, 0], "byte 0 goes out as 0x80");
    assert_ne!(got, mine, "the CRC does not match what was received");
    assert_eq!(got, crc16(&[0xB0, 0x10, 4, 0, 0, 0, 0]), "it matches the true byte");
    assert_eq!(t.dev.errata_hits().tbc_read_crc, 1);
    // A READ_CRC that starts past byte 0 is unaffected.
    let (data, got, mine) = crc_read(&mut t, C1TBC + 1, 3);
    assert_eq!((data, got), (vec![0, 0, 0], mine));
    // A READ_CRC that includes it from an earlier register is hit too.
    let (data, _, _) = crc_read(&mut t, C1TDC, 8);
    assert_eq!(data[4], 0x80);
    assert_eq!(t.dev.errata_hits().tbc_read_crc, 2);
}

#[test]
fn read_crc_of_tbc_flips_only_bytes_whose_top_five_bits_are_0x00_or_0x80() {
    let mut t = device(Errata::ALL);
    // Stop the counter at chosen values: TBCEN on, then TBC written, read at once
    // (prescaler 1023: one tick per 25.6 µs, the reads come 100 ns apart).
    t.later(1_000_000_000); // far ahead of real time: nothing but the test moves the clock
    t.write(C1TSCON, TSCON_TBCEN | 1023);
    for (v, flips) in [(0x85u8, true), (0x07, true), (0x78, false), (0xF8, false), (0x08, false)] {
        t.write(C1TBC, u32::from(v));
        let (data, got, mine) = crc_read(&mut t, C1TBC, 1);
        let sent = if flips { v ^ 0x80 } else { v };
        assert_eq!(data, vec![sent], "TBC byte 0 = {v:#04x}");
        assert_eq!(got == mine, !flips);
    }
}

#[test]
fn plain_read_of_tbc_is_unaffected() {
    let mut t = device(Errata::ALL);
    assert_eq!(t.read(C1TBC), 0);
    assert_eq!(t.dev.errata_hits().tbc_read_crc, 0);
}

#[test]
fn without_the_erratum_read_crc_of_tbc_sends_the_true_byte() {
    let mut t = device(Errata { tbc_read_crc: false, ..Errata::ALL });
    let (data, got, mine) = crc_read(&mut t, C1TBC, 4);
    assert_eq!((data, got), (vec![0, 0, 0, 0], mine));
    assert_eq!(t.dev.errata_hits().tbc_read_crc, 0);
}

/// `bytes` as sampled one bit late, `first_prev` being the byte before them.
fn slipped(first_prev: u8, bytes: &[u8]) -> Vec<u8> {
    let mut prev = first_prev;
    bytes
        .iter()
        .map(|&b| {
            let s = slip(prev, b);
            prev = b;
            s
        })
        .collect()
}

#[test]
fn above_the_spi_clock_limit_every_data_byte_slips_one_bit_both_ways() {
    let mut t = device(Errata::ALL);
    // 40 MHz SYSCLK: the limit is 0.85 × 20 MHz = 17 MHz.
    t.spi.sclk_hz(17_000_000);
    assert_eq!(t.read(C1CON), C1CON_RESET, "17 MHz is within the limit");
    assert_eq!(t.dev.errata_hits().spi_clock, 0);
    t.spi.sclk_hz(18_000_000);
    let want = slipped(0, &C1CON_RESET.to_le_bytes());
    assert_eq!(t.read(C1CON).to_le_bytes().to_vec(), want, "MISO: each byte late by a bit");
    assert_eq!(t.dev.errata_hits().spi_clock, 1, "one access");
    // MOSI: the command still lands (the address is right), the data slips.
    let v = 0x0001_1E07u32;
    t.write(C1NBTCFG, v);
    let landed = u32::from_le_bytes(slipped(C1NBTCFG as u8, &v.to_le_bytes()).try_into().unwrap());
    assert_eq!(t.dev.peek(C1NBTCFG, t.t), landed & 0xFFFF_7F7F);
    assert_eq!(t.dev.errata_hits().spi_clock, 2);
    // Back under the limit: right again.
    t.spi.sclk_hz(10_000_000);
    t.write(C1NBTCFG, v);
    assert_eq!(t.read(C1NBTCFG), v);
    assert_eq!(t.dev.errata_hits().spi_clock, 2);
}

#[test]
fn the_spi_clock_limit_follows_sysclk() {
    let mut t = device(Errata::ALL);
    t.spi.sclk_hz(10_000_000);
    assert_eq!(t.read(DEVID), DEVID_MCP2518FD);
    // SCLKDIV halves SYSCLK: the limit becomes 8.5 MHz.
    t.write(OSC, OSC_SCLKDIV | (3 << 5));
    assert_ne!(t.read(DEVID), DEVID_MCP2518FD);
    t.spi.sclk_hz(8_000_000);
    assert_eq!(t.read(DEVID), DEVID_MCP2518FD);
    // The PLL (× 10) once locked raises it.
    t.write(OSC, OSC_PLLEN | (3 << 5));
    t.spi.sclk_hz(50_000_000);
    assert_ne!(t.read(DEVID), DEVID_MCP2518FD, "PLL still locking");
    t.later(t.dev.config().pll_lock_ns);
    assert_eq!(t.read(DEVID), DEVID_MCP2518FD);
}

#[test]
fn without_the_spi_clock_limit_any_sclk_reads_true() {
    let mut t = device(Errata { spi_clock_limit: false, ..Errata::ALL });
    t.spi.sclk_hz(100_000_000);
    assert_eq!(t.read(C1CON), C1CON_RESET);
    t.write(C1NBTCFG, 0x0001_1E07);
    assert_eq!(t.read(C1NBTCFG), 0x0001_1E07);
    assert_eq!(t.dev.errata_hits().spi_clock, 0);
}
