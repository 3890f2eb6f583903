//! Sleep, Low-Power Mode, wake-up and the oscillator's start-up
//! ([`Errata::sleep`]), with the switch on and off.

use super::regs::*;
use super::testkit::*;
use super::*;
use crate::can::tools::{Generator, GeneratorConfig};
use std::time::Duration;

const CLKODIV_10: u32 = 3 << 5;

/// A ready device with `errata`, asleep (LPMEN as given), the test's clock
/// far ahead of real time.
fn asleep(errata: Errata, lpmen: bool) -> T {
    let mut t = T::with(Mcp2518fdConfig::default(), errata);
    t.ready();
    t.later(1_000_000_000);
    if lpmen {
        t.write(OSC, OSC_LPMEN | CLKODIV_10);
    }
    t.request_mode(MODE_SLEEP);
    t.later(10_000);
    assert_eq!(t.opmod(), MODE_SLEEP);
    t
}

#[test]
fn sleep_stops_the_oscillator_and_a_write_to_osc_wakes_it_after_the_start_up() {
    let mut t = asleep(Errata::ALL, false);
    let osc = t.read(OSC);
    assert_eq!(osc & (OSC_OSCDIS | OSC_OSCRDY), OSC_OSCDIS, "oscillator stopped: {osc:#x}");
    // No clock, no mode change.
    t.request_mode(MODE_CONFIG);
    t.later(100_000);
    assert_eq!(t.opmod(), MODE_SLEEP);
    assert_eq!(t.dev.stats().invalid_mode_requests, 1);
    // The SPI still works; clearing OSCDIS wakes it (and changes nothing else).
    t.write(C1INT, INT_MODIF << 16);
    t.write(OSC, OSC_PLLEN | CLKODIV_10);
    let woke = t.t;
    let startup = t.dev.config().osc_startup_ns;
    t.later(startup - 10_000);
    assert_eq!(t.read(OSC) & (OSC_OSCDIS | OSC_OSCRDY | OSC_PLLEN), 0, "starting; PLLEN unaffected");
    assert_eq!(t.opmod(), MODE_SLEEP);
    t.t = woke.add_ns(startup);
    assert_eq!(t.read(OSC), OSC_RESET_READY, "ready");
    assert_eq!(t.opmod(), MODE_CONFIG, "awake in configuration mode");
    assert_ne!(t.read(C1INT) & INT_MODIF, 0);
    assert_eq!(t.dev.errata_hits().reset_ignored, 0);
}

#[test]
fn the_time_base_counter_stands_still_in_sleep() {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000);
    t.write(C1TSCON, TSCON_TBCEN | 39); // 1 µs ticks
    t.later(50_000);
    t.request_mode(MODE_SLEEP);
    t.later(10_000);
    let asleep = t.read(C1TBC);
    assert!((50..=53).contains(&asleep), "stopped on entering sleep: {asleep}");
    t.later(100_000);
    assert_eq!(t.read(C1TBC), asleep);
    t.write(OSC, CLKODIV_10);
    t.later(t.dev.config().osc_startup_ns);
    t.later(20_000);
    let awake = t.read(C1TBC);
    assert!(awake > asleep && awake <= asleep + 21, "runs on from where it stopped: {asleep} → {awake}");
}

#[test]
fn reset_is_ignored_in_sleep() {
    let mut t = asleep(Errata::ALL, false);
    t.write(C1NBTCFG + 4, 0); // a write in sleep works (DBTCFG is config-only: unchanged)
    t.xfer(&[0x00, 0x00]);
    assert_eq!(t.dev.errata_hits().reset_ignored, 1);
    assert_eq!(t.opmod(), MODE_SLEEP);
    assert_eq!(t.read(OSC) & OSC_OSCDIS, OSC_OSCDIS);
}

#[test]
fn reset_keeps_a_running_oscillator_and_power_cycle_restarts_it() {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000);
    t.write(OSC, OSC_PLLEN | CLKODIV_10);
    t.later(t.dev.config().pll_lock_ns);
    assert_ne!(t.read(OSC) & OSC_PLLRDY, 0);
    t.xfer(&[0x00, 0x00]);
    assert_eq!(t.read(OSC), OSC_RESET_READY, "OSCRDY stays, the PLL is off");
    let at = t.later(0);
    t.dev.power_cycle(at);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0);
    t.t = at.add_ns(t.dev.config().osc_startup_ns);
    assert_eq!(t.read(OSC), OSC_RESET_READY);
}

#[test]
fn low_power_mode_wakes_on_chip_select_with_a_power_on_reset() {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000);
    t.write(C1NBTCFG, 0x0001_1E07);
    t.write(0x400, 0x1234_5678);
    t.write(OSC, OSC_LPMEN | CLKODIV_10);
    assert_eq!(t.read(OSC) & OSC_LPMEN, OSC_LPMEN, "LPMEN reads back: an MCP2518FD");
    let ram = t.dev.peek_ram(0, RAM_SIZE);
    t.request_mode(MODE_SLEEP);
    t.later(10_000);
    assert_eq!(t.dev.mode(t.t), Mode::Sleep);
    // The access that wakes it is lost.
    let at = t.later(0);
    assert_eq!(t.read(C1NBTCFG), 0, "lost");
    t.t = at.add_ns(t.dev.config().osc_startup_ns - 1_000);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0, "starting");
    assert_eq!(t.opmod(), MODE_CONFIG);
    assert_eq!(t.read(C1NBTCFG), NBTCFG_RESET, "registers to reset values");
    assert_ne!(t.dev.peek_ram(0, RAM_SIZE), ram, "RAM undefined again");
    t.later(2_000);
    assert_eq!(t.read(OSC), OSC_RESET_READY);
}

#[test]
fn a_frame_on_the_bus_during_sleep_sets_wakif_and_is_not_stored() {
    let mut t = T::new();
    let bus = ready_on_bus(&mut t);
    setup_fifos(&mut t);
    t.write(C1INT, INT_WAKIF << 16);
    t.request_mode(MODE_SLEEP);
    t.wait_for(|t| t.opmod() == MODE_SLEEP);
    let _acker = Generator::attach(&bus, "acker", GeneratorConfig { count: 0, ..Default::default() }).unwrap();
    let g = Generator::attach(&bus, "g", GeneratorConfig { count: 1, gap_ns: 0, ..Default::default() }).unwrap();
    g.start(now());
    assert!(g.wait_done(Duration::from_secs(5)));
    t.wait_for(|t| t.read(C1INT) & INT_WAKIF != 0);
    assert!(!t.dev.int_pin().is_high(), "WAKIE: INT low");
    assert_eq!(t.read(C1VEC) & 0x7F, 0x42);
    assert_eq!(t.dev.stats().rx_stored, 0);
    assert_eq!(t.opmod(), MODE_SLEEP, "the host wakes it");
}

#[test]
fn without_the_erratum_sleep_is_shallow() {
    let mut t = asleep(Errata { sleep: false, ..Errata::ALL }, true);
    assert_eq!(t.read(OSC) & (OSC_OSCDIS | OSC_OSCRDY), OSC_OSCRDY, "the oscillator runs");
    t.set_mode(MODE_CONFIG);
    t.request_mode(MODE_SLEEP);
    t.later(10_000);
    t.xfer(&[0x00, 0x00]);
    assert_eq!(t.opmod(), MODE_CONFIG, "RESET honoured in sleep");
    assert_eq!(t.dev.errata_hits().reset_ignored, 0);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0, "the old model: RESET restarts the oscillator");
    t.later(t.dev.config().osc_startup_ns);
    // Stopping and restarting the oscillator by hand: back at once.
    t.write(OSC, OSC_OSCDIS | CLKODIV_10);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0);
    t.write(OSC, CLKODIV_10);
    assert_ne!(t.read(OSC) & OSC_OSCRDY, 0);
}

#[test]
fn with_the_erratum_a_restarted_oscillator_takes_its_start_up() {
    let mut t = T::new();
    t.ready();
    t.later(1_000_000_000);
    t.write(OSC, OSC_OSCDIS | CLKODIV_10);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0);
    t.write(OSC, CLKODIV_10);
    assert_eq!(t.read(OSC) & OSC_OSCRDY, 0);
    t.later(t.dev.config().osc_startup_ns);
    assert_ne!(t.read(OSC) & OSC_OSCRDY, 0);
}
