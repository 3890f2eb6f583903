//! The [`Errata`] switches and [`ErrataHits`] counters through the backdoor.

use super::regs::*;
use super::testkit::*;
use super::*;

#[test]
fn every_behaviour_is_on_by_default_and_named_in_field_order() {
    assert_eq!(Errata::default(), Errata::ALL);
    assert_eq!(
        Errata::ALL.names(),
        vec!["tbc_read_crc", "fifoci", "no_cerrif_to_active", "spi_clock_limit", "ecc", "sleep", "mab_errors"]
    );
    assert!(Errata::NONE.names().is_empty());
    assert_eq!(Errata { ecc: true, sleep: true, ..Errata::NONE }.names(), vec!["ecc", "sleep"]);
}

#[test]
fn hit_counts_are_named_by_their_fields_and_add_counter_by_counter() {
    let a = ErrataHits {
        tbc_read_crc: 1,
        fifoci: 2,
        cerrif_suppressed: 3,
        spi_clock: 4,
        ecc_sec: 5,
        ecc_ded: 6,
        reset_ignored: 7,
        mab: 8,
    };
    let names: Vec<_> = a.counts().iter().map(|&(n, _)| n).collect();
    assert_eq!(
        names,
        ["tbc_read_crc", "fifoci", "cerrif_suppressed", "spi_clock", "ecc_sec", "ecc_ded", "reset_ignored", "mab"]
    );
    assert_eq!(a.counts().map(|(_, c)| c), [1, 2, 3, 4, 5, 6, 7, 8]);
    let sum = a.plus(ErrataHits { fifoci: 10, mab: 100, ..ErrataHits::default() });
    assert_eq!(sum.counts().map(|(_, c)| c), [1, 12, 3, 4, 5, 6, 7, 108]);
    assert_eq!(ErrataHits::default().plus(a), a);
}

#[test]
fn the_backdoor_switches_behaviours_and_counts_hits() {
    let mut t = T::with(Mcp2518fdConfig::default(), Errata::ALL);
    t.ready();
    assert_eq!(t.dev.errata(), Errata::ALL);
    assert_eq!(t.dev.errata_hits(), ErrataHits::default());
    // TBCEN = 0: TBC reads 0, whose READ_CRC the erratum hits.
    let (on, _, _) = crc_read(&mut t, C1TBC, 4);
    assert_eq!((on[0], t.dev.errata_hits().tbc_read_crc), (0x80, 1), "on: hit and counted");
    // Switched off on the same device, mid-life: the true byte, no count.
    t.dev.set_errata(Errata { tbc_read_crc: false, ..Errata::ALL });
    let (off, got, mine) = crc_read(&mut t, C1TBC, 4);
    assert_eq!((off[0], got, t.dev.errata_hits().tbc_read_crc), (0, mine, 1), "off: true and not counted");
    let cfg = Mcp2518fdConfig::default();
    assert_eq!((cfg.osc_startup_ns, cfg.fifoci_window_ns), (3_000_000, 10_000));
}
