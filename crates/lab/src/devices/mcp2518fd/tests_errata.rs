//! The [`Errata`] switches and [`ErrataHits`] counters through the backdoor.

use super::*;
use crate::{Lab, LabConfig};

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
fn the_backdoor_switches_behaviours_and_counts_hits() {
    let lab = Lab::new(LabConfig::default());
    let dev = Mcp2518fd::new(&lab, Mcp2518fdConfig::default());
    assert_eq!(dev.errata(), Errata::ALL);
    assert_eq!(dev.errata_hits(), ErrataHits::default());
    dev.set_errata(Errata::NONE);
    assert_eq!(dev.errata(), Errata::NONE);
    let cfg = Mcp2518fdConfig::default();
    assert_eq!((cfg.osc_startup_ns, cfg.fifoci_window_ns), (3_000_000, 10_000));
}
