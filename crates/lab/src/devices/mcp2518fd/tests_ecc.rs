//! The message RAM's power-up content and ECC ([`Errata::ecc`]), with the
//! switch on and off, and the injected faults.

use super::regs::*;
use super::testkit::*;
use super::*;

const ECCIE: u32 = INT_ECCIF << 16;

/// A ready device with `errata`, ECC enabled with both interrupts, ECCIE set.
fn with_ecc(errata: Errata) -> T {
    let mut t = T::with(Mcp2518fdConfig::default(), errata);
    t.ready();
    t.write(ECCCON, ECCCON_ECCEN | ECCCON_SECIE | ECCCON_DEDIE);
    t.write(C1INT, ECCIE);
    t
}

fn erraddr(t: &mut T) -> u32 {
    (t.read(ECCSTAT) & ECCSTAT_ERRADDR_MASK) >> ECCSTAT_ERRADDR_SHIFT
}

#[test]
fn ram_powers_up_pseudo_random_from_the_seed() {
    let t1 = T::new();
    let t2 = T::new();
    let seeded = T::with(Mcp2518fdConfig { ram_seed: 42, ..Mcp2518fdConfig::default() }, Errata::ALL);
    let ram = t1.dev.peek_ram(0, RAM_SIZE);
    assert_eq!(ram, t2.dev.peek_ram(0, RAM_SIZE), "same seed, same content");
    assert_ne!(ram, seeded.dev.peek_ram(0, RAM_SIZE));
    assert!(ram.iter().filter(|&&b| b == 0).count() < RAM_SIZE / 16, "not zeroed");
    t1.dev.power_cycle(now());
    assert_ne!(t1.dev.peek_ram(0, RAM_SIZE), ram, "undefined again after a power cycle");
}

#[test]
fn with_eccen_a_word_never_written_reads_as_a_double_error() {
    let mut t = with_ecc(Errata::ALL);
    let raw = u32::from_le_bytes(t.dev.peek_ram(0x10, 4).try_into().unwrap());
    assert_eq!(t.read(0x410), raw, "the stored (random) data");
    let stat = t.read(ECCSTAT);
    assert_eq!(stat & (ECCSTAT_SECIF | ECCSTAT_DEDIF), ECCSTAT_DEDIF);
    assert_eq!(erraddr(&mut t), 0x410);
    assert_ne!(t.read(C1INT) & INT_ECCIF, 0);
    assert!(!t.dev.int_pin().is_high(), "ECCIE: INT low at the read");
    assert_eq!(t.dev.errata_hits().ecc_ded, 1);
    // The kernel's cure: zero the RAM after enabling ECC.
    t.xfer(&[0x24, 0x00].into_iter().chain(std::iter::repeat_n(0, RAM_SIZE)).collect::<Vec<u8>>());
    t.write(ECCSTAT, 0);
    assert_eq!(t.read(C1INT) & INT_ECCIF, 0);
    assert!(t.dev.int_pin().is_high());
    assert_eq!(t.read(0x410), 0);
    assert_eq!(t.read(0xBFC), 0);
    assert_eq!(t.read(ECCSTAT) & (ECCSTAT_SECIF | ECCSTAT_DEDIF), 0);
    assert_eq!(t.dev.errata_hits().ecc_ded, 1);
}

#[test]
fn without_eccen_words_never_written_read_clean() {
    let mut t = T::new();
    t.ready();
    t.read(0x410);
    assert_eq!(t.read(ECCSTAT), 0);
}

#[test]
fn without_the_erratum_ram_powers_up_zero_and_reads_clean() {
    let mut t = with_ecc(Errata { ecc: false, ..Errata::ALL });
    assert_eq!(t.dev.peek_ram(0, RAM_SIZE), vec![0; RAM_SIZE]);
    assert_eq!(t.read(0x410), 0);
    assert_eq!(t.read(ECCSTAT), 0);
    assert_eq!(t.dev.errata_hits().ecc_ded, 0);
}

#[test]
fn a_single_bit_fault_is_corrected_and_sets_secif() {
    for errata in [Errata::ALL, Errata { ecc: false, ..Errata::ALL }] {
        let mut t = with_ecc(errata);
        t.write(0x404, 0x1234_5678);
        t.dev.inject_ram_fault(6, EccFault::Single); // rounded down to the word at 0x404
        let raw = u32::from_le_bytes(t.dev.peek_ram(4, 4).try_into().unwrap());
        assert_eq!((raw ^ 0x1234_5678).count_ones(), 1, "one bit flipped in RAM");
        assert_eq!(t.read(0x404), 0x1234_5678, "corrected on the way out");
        assert_eq!(t.read(ECCSTAT) & (ECCSTAT_SECIF | ECCSTAT_DEDIF), ECCSTAT_SECIF);
        assert_eq!(erraddr(&mut t), 0x404);
        assert_ne!(t.read(C1INT) & INT_ECCIF, 0);
        assert_eq!(t.dev.errata_hits().ecc_sec, 1);
    }
}

#[test]
fn a_double_bit_fault_reads_raw_and_sets_dedif() {
    let mut t = with_ecc(Errata::ALL);
    t.write(0x7F0, 0xA5A5_A5A5);
    t.dev.inject_ram_fault(0x3F0, EccFault::Double);
    let got = t.read(0x7F0);
    assert_eq!((got ^ 0xA5A5_A5A5).count_ones(), 2);
    assert_eq!(t.read(ECCSTAT) & (ECCSTAT_SECIF | ECCSTAT_DEDIF), ECCSTAT_DEDIF);
    assert_eq!(erraddr(&mut t), 0x7F0);
    // Two singles make a double.
    t.write(0x400, 7);
    t.dev.inject_ram_fault(0, EccFault::Single);
    t.dev.inject_ram_fault(0, EccFault::Single);
    t.write(ECCSTAT, 0);
    assert_ne!(t.read(0x400), 7);
    assert_eq!(t.read(ECCSTAT) & (ECCSTAT_SECIF | ECCSTAT_DEDIF), ECCSTAT_DEDIF);
}

#[test]
fn without_eccen_faults_read_raw_and_flag_nothing() {
    let mut t = with_ecc(Errata::ALL);
    t.write(ECCCON, 0);
    t.write(0x404, 0x1234_5678);
    t.dev.inject_ram_fault(4, EccFault::Single);
    assert_ne!(t.read(0x404), 0x1234_5678);
    assert_eq!(t.read(ECCSTAT), 0);
    assert_eq!(t.dev.errata_hits().ecc_sec, 0);
}

#[test]
fn writing_a_word_gives_it_valid_ecc_again() {
    let mut t = with_ecc(Errata::ALL);
    t.write(0x404, 1);
    t.dev.inject_ram_fault(4, EccFault::Double);
    t.write_byte(0x405, 2); // one byte of the word
    assert_eq!(t.read(0x404) >> 8 & 0xFF, 2);
    assert_eq!(t.read(ECCSTAT), 0);
}

#[test]
fn eccif_needs_the_matching_enable() {
    let mut t = with_ecc(Errata::ALL);
    t.write(ECCCON, ECCCON_ECCEN | ECCCON_SECIE | (0x55 << ECCCON_PARITY_SHIFT));
    assert_eq!(t.read(ECCCON), ECCCON_ECCEN | ECCCON_SECIE | (0x55 << ECCCON_PARITY_SHIFT), "PARITY is writable");
    t.read(0x420); // never written: double error, DEDIE off
    assert_ne!(t.read(ECCSTAT) & ECCSTAT_DEDIF, 0);
    assert_eq!(t.read(C1INT) & INT_ECCIF, 0);
    t.write(ECCCON, ECCCON_ECCEN | ECCCON_DEDIE);
    assert_ne!(t.read(C1INT) & INT_ECCIF, 0);
}

#[test]
fn corrupt_next_rx_store_faults_the_first_data_word_of_the_next_rx_object() {
    let mut t = with_ecc(Errata::ALL);
    setup_fifos(&mut t); // FIFO 1: RX with timestamps, 8-byte payloads
    t.xfer(&[0x24, 0x00].into_iter().chain(std::iter::repeat_n(0, RAM_SIZE)).collect::<Vec<u8>>());
    t.set_mode(MODE_INTERNAL_LOOPBACK);
    t.dev.corrupt_next_rx_store(EccFault::Single);
    queue_txq(&mut t, 0x123, false, &[1, 2, 3, 4, 5, 6, 7, 8], 1);
    t.wait_for(|t| t.read(C1RXIF) != 0);
    let ua = u16::try_from(t.read(c1fifoua(1))).unwrap();
    let data = 0x400 + ua + 12; // ID, flags, timestamp, then the data
    let raw = u32::from_le_bytes(t.dev.peek_ram(usize::from(ua) + 12, 4).try_into().unwrap());
    assert_ne!(raw, 0x0403_0201);
    assert_eq!(t.read(ECCSTAT) & ECCSTAT_SECIF, 0, "not yet read");
    assert_eq!(t.read(data), 0x0403_0201, "corrected");
    assert_eq!(t.read(ECCSTAT) & (ECCSTAT_SECIF | ECCSTAT_DEDIF), ECCSTAT_SECIF);
    assert_eq!(erraddr(&mut t), u32::from(data));
    assert_eq!(t.read(data + 4), 0x0807_0605, "only the first data word");
}
