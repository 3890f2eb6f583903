//! A short soak with faults injected: every invariant holds, and faults
//! were injected (SPI NOR power cuts among them) and each reported once.

use std::time::Duration;
use wirespeed_bench::soak::{run, Limit, SoakOptions};

#[test]
fn a_short_soak_with_faults_loses_duplicates_reorders_and_corrupts_nothing() {
    let options = SoakOptions { threads: 4, limit: Limit::Duration(Duration::from_secs(3)), ..SoakOptions::default() };
    let r = run(&options).expect("the soak runs").report;
    let json = r.to_json();
    assert!(r.messages > 1_000, "{json}");
    assert_eq!((r.lost, r.duplicated, r.reordered, r.corrupted), (0, 0, 0, 0), "{json}");
    assert_eq!((r.untyped_errors, r.unexpected_errors), (0, 0), "{json}");
    assert!(r.faults_injected > 0, "{json}");
    assert_eq!(r.faults_reported, r.faults_injected, "{json}");
    for kind in &r.faults_by_kind {
        assert_eq!(kind.reported, kind.injected, "{json}");
    }
    let cuts = &json["soak"]["faults_by_kind"]["nor_power_cut"];
    assert!(cuts["injected"].as_u64().is_some_and(|n| n > 0), "a NOR power cut fired: {json}");
    assert_eq!(cuts["reported"], cuts["injected"], "{json}");
    // Each cut costs one page write that does not verify (so does a program
    // hit by an injected SPI fault, and redone).
    assert!(r.flash_verified > 0, "{json}");
    assert!(r.flash_writes - r.flash_verified >= cuts["injected"].as_u64().unwrap_or(0), "{json}");
    assert!(r.clean());
    assert_eq!(json["soak"]["latency_us"]["p99.9"].as_f64().map(|v| v > 0.0), Some(true), "{json}");
}

#[test]
fn without_faults_nothing_is_injected_and_nothing_fails() {
    let options = SoakOptions { threads: 2, limit: Limit::Messages(20_000), faults: false, ..SoakOptions::default() };
    let r = run(&options).expect("the soak runs").report;
    let json = r.to_json();
    assert!(r.messages >= 20_000, "{json}");
    assert_eq!((r.faults_injected, r.faults_reported, r.failed, r.stuck_reads), (0, 0, 0, 0), "{json}");
    assert_eq!(r.flash_writes, r.flash_verified, "{json}");
    assert!(r.clean(), "{json}");
}
