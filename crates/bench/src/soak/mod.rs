//! `wirespeed soak`: every mechanism at once on two lab buses, for long,
//! with faults injected at random, every message checked.
//!
//! The board ([`rig`]): `spi0` with three loopback devices, `spi1` with two,
//! a register file behind a register map on `spi1`, a GPIO chip with an
//! output wired to an input. `threads` SPI workers
//! ([`workers`]) send a random mix of sync, prepared, async (waited),
//! callback and bus-locked messages to random devices, and register-map
//! round trips; a GPIO worker
//! (`gpio_worker`) toggles the output and checks each edge event; the
//! injector ([`faults`]) arms faults through the lab's backdoors; a flash
//! worker ([`flash_worker`]) erases, programs and reads back pages of a
//! SPI NOR chip on `spi0` through the SPI NOR driver, and takes the
//! injector's power cuts mid-program ([`nor_power`]).
//!
//! Every SPI message carries (device, worker, sequence number, payload,
//! checksum) ([`frame`]); the loopback echoes it, and on completion the
//! echo is checked and the number settled in its (device, worker) stream
//! ([`checker`]): lost, duplicated, reordered and corrupted messages are
//! counted there. Each injected fault is counted once when it takes
//! effect and once when the software above reports it (the mapping is in
//! [`faults`]); a clean run has `lost = duplicated = reordered = corrupted
//! = untyped_errors = unexpected_errors = 0` and `faults_reported =
//! faults_injected`.
//!
//! Flash pages carry (sequence number, address, payload, checksum) and are
//! verified by reading them back; they are counted as `flash_writes` and
//! `flash_verified` beside `messages` (which counts framed SPI messages
//! and GPIO toggles only); a page that reads back wrong with no power cut
//! in its program is `corrupted`.
//! Memory: every bookkeeping structure is fixed-size per stream, so
//! `rss_growth_kib` (resident memory after warm-up to the end) stays flat.

mod budget;
pub mod checker;
pub mod faults;
pub mod flash_worker;
pub mod frame;
mod gpio_worker;
pub mod latency;
pub mod nor_power;
pub mod options;
pub mod report;
pub mod rig;
mod rng;
pub mod workers;

use budget::Budget;
use checker::Checker;
use faults::{FaultKind, FaultLedger, Injector};
use flash_worker::FlashWorker;
use gpio_worker::GpioWorker;
use latency::{rss_kib, LatencyHistogram};
pub use options::{Limit, OptionsError, SoakOptions};
pub use report::{FaultCount, SoakReport};
use rig::{Rig, RigError};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, ScopedJoinHandle};
use std::time::Duration;
use wirespeed_time::now;
use workers::{Shared, Worker};

/// A finished run: its report and its latencies (for a plot).
#[derive(Debug, Clone)]
pub struct SoakRun {
    /// The counts.
    pub report: SoakReport,
    /// Latencies of the successful SPI messages.
    pub latency: LatencyHistogram,
}

/// Why a soak could not run.
#[derive(Debug)]
pub enum SoakError {
    /// Options it cannot take.
    Options(OptionsError),
    /// The board could not be built.
    Rig(RigError),
    /// A thread could not be started.
    Thread(std::io::Error),
}

impl fmt::Display for SoakError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SoakError::Options(e) => write!(f, "soak: {e}"),
            SoakError::Rig(e) => write!(f, "soak: building the lab board: {e}"),
            SoakError::Thread(e) => write!(f, "soak: cannot start a thread: {e}"),
        }
    }
}

impl std::error::Error for SoakError {}

/// Fraction of the run before the resident-memory baseline is taken.
const WARM_UP: f64 = 0.05;
/// Seconds between progress lines.
const PROGRESS_EVERY_NS: u64 = 5_000_000_000;

/// Runs a soak.
pub fn run(options: &SoakOptions) -> Result<SoakRun, SoakError> {
    options.validate().map_err(SoakError::Options)?;
    let rig = Rig::build().map_err(SoakError::Rig)?;
    let devices = rig.devices.len();
    let checker = Checker::new(devices + 1, options.threads);
    let ledger = Arc::new(FaultLedger::new(devices, rig.buses.len()));
    let budget = Budget::new(options.limit);
    let injector_stop = AtomicBool::new(false);
    let started = now();
    let mut rss_base = None;
    let mut untyped_threads = 0;
    let mut spawn_error = None;
    let mut latency = LatencyHistogram::default();

    thread::scope(|s| {
        let shared = Shared { rig: &rig, checker: &checker, ledger: &ledger, budget: &budget };
        let mut workers: Vec<ScopedJoinHandle<'_, LatencyHistogram>> = Vec::new();
        for id in 0..options.threads {
            let spawned = thread::Builder::new()
                .name(format!("soak-{id}"))
                .spawn_scoped(s, move || Worker::new(id, shared, options.seed).run());
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => spawn_error = Some(e),
            }
        }
        let gpio = thread::Builder::new()
            .name("soak-gpio".into())
            .spawn_scoped(s, || GpioWorker::new(&rig.gpio, &checker, &ledger, &budget, devices).run());
        let flash = thread::Builder::new()
            .name("soak-flash".into())
            .spawn_scoped(s, || FlashWorker::new(&rig.flash, &checker, &ledger, options.seed).run(&budget));
        let injector = if options.faults {
            let spawned = thread::Builder::new()
                .name("soak-faults".into())
                .spawn_scoped(s, || Injector::new(&rig, &ledger, options.seed).run(&injector_stop));
            spawned.map_err(|e| spawn_error = Some(e)).ok()
        } else {
            None
        };

        let mut last_progress = now();
        while !budget.exhausted() {
            thread::sleep(Duration::from_millis(20));
            if rss_base.is_none() && budget.progress() >= WARM_UP {
                rss_base = rss_kib();
            }
            if options.progress && now().ns_since(last_progress) >= PROGRESS_EVERY_NS {
                last_progress = now();
                eprintln!(
                    "soak: {:>3.0}%  {} messages  {} faults reported  {:.0} s",
                    budget.progress() * 100.0,
                    checker.tally.messages.load(Ordering::Relaxed),
                    FaultKind::ALL.iter().map(|&k| ledger.reported(k)).sum::<u64>(),
                    now().ns_since(started) as f64 / 1e9
                );
            }
        }
        injector_stop.store(true, Ordering::Release);
        if let Some(h) = injector {
            untyped_threads += u64::from(h.join().is_err());
        }
        budget.injector_finished();
        for h in workers {
            match h.join() {
                Ok(h) => latency.merge(&h),
                Err(_) => untyped_threads += 1,
            }
        }
        for h in [gpio, flash] {
            match h {
                Ok(h) => untyped_threads += u64::from(h.join().is_err()),
                Err(e) => spawn_error = Some(e),
            }
        }
    });
    if let Some(e) = spawn_error {
        return Err(SoakError::Thread(e));
    }
    let elapsed_s = now().ns_since(started) as f64 / 1e9;
    let rss_end = rss_kib();
    Injector::count_lab_faults(&rig, &ledger);
    let report = report_of(&rig, &checker, &ledger, options, &latency, untyped_threads, elapsed_s, (rss_base, rss_end));
    Ok(SoakRun { report, latency })
}

#[allow(clippy::too_many_arguments)]
fn report_of(
    rig: &Rig,
    checker: &Checker,
    ledger: &FaultLedger,
    options: &SoakOptions,
    latency: &LatencyHistogram,
    untyped_threads: u64,
    elapsed_s: f64,
    (rss_base, rss_end): (Option<u64>, Option<u64>),
) -> SoakReport {
    let t = &checker.tally;
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Acquire);
    let names = rig.devices.iter().map(|d| d.name.clone()).chain(["gpio".to_owned()]);
    let reordered_per_device: Vec<(String, u64)> = names.zip(checker.reordered()).collect();
    let faults_by_kind: Vec<FaultCount> = FaultKind::ALL
        .iter()
        .map(|&k| FaultCount { kind: k.name(), injected: ledger.injected(k), reported: ledger.reported(k) })
        .collect();
    let rss_growth_kib = rss_base.zip(rss_end).map(|(a, b)| b as i64 - a as i64);
    SoakReport {
        threads: options.threads,
        messages: get(&t.messages),
        failed: get(&t.failed),
        lost: checker.lost(),
        duplicated: get(&t.duplicated),
        reordered: reordered_per_device.iter().map(|(_, c)| c).sum(),
        reordered_per_device,
        corrupted: get(&t.corrupted),
        untyped_errors: get(&t.untyped_errors) + untyped_threads,
        unexpected_errors: get(&t.unexpected_errors),
        faults_injected: faults_by_kind.iter().map(|f| f.injected).sum(),
        faults_reported: faults_by_kind.iter().map(|f| f.reported).sum(),
        faults_by_kind,
        stuck_reads: get(&t.stuck_reads),
        pump_stalls: ledger.pump_stalls(),
        flash_writes: get(&t.flash_writes),
        flash_verified: get(&t.flash_verified),
        latency_us: latency.summary(),
        rss_growth_kib,
        elapsed_s,
    }
}
