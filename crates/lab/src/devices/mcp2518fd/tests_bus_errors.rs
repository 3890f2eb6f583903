//! Bus errors and fault confinement as the chip reports them: IVMIF and
//! C1BDIAG1 for an error, CERRIF for a state change (not on the way back
//! to error active with [`Errata::no_cerrif_to_active`]), and TBCIF when
//! the time base counter wraps.

use super::regs::*;
use super::testkit::*;
use super::*;
use crate::can::tools::{Generator, GeneratorConfig};
use std::time::Duration;

/// A device in normal FD mode on a bus, every frame into FIFO 1, and a
/// generator that sends one frame (`fd`, `brs`) the bus corrupts once.
fn receive_corrupted(fd: bool, brs: bool) -> T {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    setup_fifos(&mut t);
    t.write(C1INT, (INT_IVMIF | INT_CERRIF) << 16);
    t.set_mode(MODE_NORMAL_FD);
    let g =
        Generator::attach(&bus, "g", GeneratorConfig { count: 1, gap_ns: 0, fd, brs, ..Default::default() }).unwrap();
    bus.corrupt_next(1);
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.read(C1RXIF) != 0);
    t
}

#[test]
fn a_crc_error_received_sets_ivmif_and_ncrcerr_not_cerrif() {
    let mut t = receive_corrupted(false, false);
    let int = t.read(C1INT);
    assert_ne!(int & INT_IVMIF, 0);
    assert_eq!(int & INT_CERRIF, 0, "REC 1: still error active");
    let bdiag1 = t.read(C1BDIAG1);
    assert_ne!(bdiag1 & BDIAG1_NCRCERR, 0);
    assert_eq!(bdiag1 & BDIAG1_DCRCERR, 0);
    assert!(!t.dev.int_pin().is_high(), "IVMIE set: INT low");
    assert_eq!(t.read(C1VEC) & 0x7F, 0x48, "ICOD: invalid message");
    // Cleared by writing 0, like the kernel's handler does.
    t.write(C1BDIAG1, 0);
    t.write(C1INT, (INT_IVMIF | INT_CERRIF | INT_RXIF) << 16);
    assert_eq!(t.read(C1INT) & INT_IVMIF, 0);
}

#[test]
fn a_crc_error_in_a_frame_with_brs_sets_dcrcerr() {
    let mut t = receive_corrupted(true, true);
    let bdiag1 = t.read(C1BDIAG1);
    assert_ne!(bdiag1 & BDIAG1_DCRCERR, 0, "the CRC field went at the data rate");
    assert_eq!(bdiag1 & BDIAG1_NCRCERR, 0);
    assert_ne!(t.read(C1INT) & INT_IVMIF, 0);
    // An FD frame without BRS stays in the nominal phase.
    let mut t = receive_corrupted(true, false);
    assert_ne!(t.read(C1BDIAG1) & BDIAG1_NCRCERR, 0);
}

/// Walks a device's counters through warning, passive and back.
fn walk_counters(t: &mut T) -> Vec<bool> {
    let steps = [8u16, 96, 128, 100, 0];
    steps
        .iter()
        .map(|&tec| {
            t.write(C1INT, 0); // clear every flag
            t.dev.lock().counters_changed(ErrorCounters { tec, rec: 0 });
            t.read(C1INT) & INT_CERRIF != 0
        })
        .collect()
}

#[test]
fn cerrif_marks_fault_confinement_changes_but_not_the_return_to_error_active() {
    let mut t = T::new();
    t.ready();
    // TEC 8 (no change), 96 (warning), 128 (passive), 100 (warning), 0 (active).
    assert_eq!(walk_counters(&mut t), vec![false, true, true, true, false]);
    assert_eq!(t.dev.errata_hits().cerrif_suppressed, 1);
}

#[test]
fn without_the_erratum_the_return_to_error_active_raises_cerrif() {
    let mut t = T::with(Mcp2518fdConfig::default(), Errata { no_cerrif_to_active: false, ..Errata::ALL });
    t.ready();
    assert_eq!(walk_counters(&mut t), vec![false, true, true, true, true]);
    assert_eq!(t.dev.errata_hits().cerrif_suppressed, 0);
}

#[test]
fn tbcif_is_set_when_the_time_base_counter_wraps() {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000); // far ahead of real time: nothing but the test moves the clock
    t.write(C1INT, INT_TBCIF << 16);
    t.write(C1TSCON, TSCON_TBCEN); // prescaler 1: 25 ns ticks at 40 MHz
    t.write(C1TBC, 0xFFFF_FF00);
    let written = t.t;
    // 256 ticks: 6.4 µs.
    t.later(6_000);
    assert_eq!(t.read(C1INT) & INT_TBCIF, 0);
    assert!(t.dev.int_pin().is_high());
    t.later(1_000);
    assert_ne!(t.read(C1INT) & INT_TBCIF, 0);
    assert!(!t.dev.int_pin().is_high());
    assert_eq!(t.read(C1VEC) & 0x7F, 0x46);
    let tbc = t.read(C1TBC);
    assert!(tbc < 0x200, "wrapped: {tbc:#x}");
    assert!(t.t.ns_since(written) < 8_000);
    // Cleared by writing 0; a TBC write moves the next wrap.
    t.write(C1INT, INT_TBCIF << 16);
    t.write(C1TBC, 0xFFFF_FFF0); // 16 ticks: 400 ns
    t.write(C1TBC, 0);
    t.later(2_000);
    assert_eq!(t.read(C1INT) & INT_TBCIF, 0, "the wrap moved ~107 s away");
    // The prescaler stretches the ticks: 0x100 ticks of 10 × 25 ns = 64 µs.
    t.write(C1TSCON, TSCON_TBCEN | 9);
    t.write(C1TBC, 0xFFFF_FF00);
    t.later(60_000);
    assert_eq!(t.read(C1INT) & INT_TBCIF, 0);
    t.later(5_000);
    assert_ne!(t.read(C1INT) & INT_TBCIF, 0);
}
