//! Loom model of the caller/pump hand-off: the real `Bus`, pump thread,
//! queue and async slots, built on loom's locks, condition variables,
//! atomics, threads and thread-locals (see `sync.rs`). Run:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p wirespeed --release --lib spi_loom
//! ```
//!
//! The controller completes every transfer at once and logs (chip select,
//! first byte) while the bus is held. The idle delay is an hour, and loom's
//! `wait_timeout` never times out, so the pump's idle timer never wakes it:
//! a lost wake-up is a deadlock, which loom reports. Each model checks, over
//! every interleaving loom explores, that every message ran exactly once,
//! that a thread's async message ran before its later sync call, and that
//! every waiter returned.

use super::controller::{
    ClockModel, Completion, Controller, ControllerCaps, ControllerFault, InFlight, TransferTiming,
};
use super::{Bus, Data, DeviceConfig, Mode, OwnedTransfer, Policy, SpiDevice, Transfer};
use loom::thread;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// (chip select, message tag) of every transfer, in wire order.
type Log = Arc<Mutex<Vec<(u8, u8)>>>;

/// A controller whose transfers complete at once. The log is a std mutex:
/// it is only touched with the bus held (or after the pump has stopped).
struct Fake {
    caps: ControllerCaps,
    cs: Option<u8>,
    log: Log,
}

impl Controller for Fake {
    fn caps(&self) -> &ControllerCaps {
        &self.caps
    }
    fn configure(&mut self, _: Mode, _: u32, _: u8) {}
    fn set_cs(&mut self, cs: u8, active: bool) {
        self.cs = active.then_some(cs);
    }
    fn preload(&mut self, _: &Data<'_>, _: u8) -> usize {
        0
    }
    fn transfer(
        &mut self,
        data: &mut Data<'_>,
        _: u8,
        _: usize,
        _: Completion,
        _: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        let tag = match data {
            Data::Write(b) => b[0],
            _ => unreachable!("the model only writes"),
        };
        self.log.lock().unwrap().push((self.cs.expect("CS asserted"), tag));
        in_flight.run();
        Ok(TransferTiming { started: None, completed: None })
    }
    fn set_power(&mut self, _: bool) {}
}

/// A bus on the fake controller (fast policy, idle timer out of the way) and two devices.
/// A bus on [`Fake`]; `async_in_caller` as given (on: an async message may
/// run in its submitter's thread, off: always through the pump).
fn bus(async_in_caller: bool) -> (Bus, SpiDevice, SpiDevice, Log) {
    let log = Log::default();
    let caps = ControllerCaps {
        name: "loom",
        max_speed_hz: 50_000_000,
        min_speed_hz: 1_000,
        clock: ClockModel::Exact,
        fifo_bytes: 64,
        bits_per_word_mask: 0x80,
        num_cs: 2,
        can_poll: true,
        has_irq: false,
        mode_flags: super::ModeFlags::NONE,
    };
    let policy = Policy { idle_delay: Duration::from_secs(3600), async_in_caller, ..Policy::fast() };
    let bus = Bus::new(Fake { caps, cs: None, log: log.clone() }, policy);
    let a = bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let b = bus.device(DeviceConfig::new(1, 1_000_000)).unwrap();
    (bus, a, b, log)
}

fn submit(dev: &SpiDevice, tag: u8) -> super::Pending {
    dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![tag])]).unwrap())
}

/// Drops the bus (joining the pump) and returns the log.
fn finish(bus: Bus, log: Log) -> Vec<(u8, u8)> {
    drop(bus);
    let v = log.lock().unwrap().clone();
    v
}

/// Runs `f` under loom with at most 3 preemptions per execution (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise): about 16 s each in release;
/// with a bound of 4 neither finished within 5 minutes.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// Thread A submits an async message, then makes a sync call; thread B makes
/// a sync call at the same time. A's sync call must not overtake its async
/// message (it may run in A's thread only if the queue is empty), and every
/// message runs once.
#[test]
fn spi_loom_async_then_sync_against_a_concurrent_sync() {
    async_then_sync(false);
}

/// The same, where A's async message may run in A's thread.
#[test]
fn spi_loom_async_in_caller_then_sync_against_a_concurrent_sync() {
    async_then_sync(true);
}

fn async_then_sync(async_in_caller: bool) {
    model(move || {
        let (bus, a, b, log) = bus(async_in_caller);
        let tb = thread::spawn(move || {
            b.sync(&mut [Transfer::write(&[3])]).unwrap();
        });
        let pending = submit(&a, 1);
        a.sync(&mut [Transfer::write(&[2])]).unwrap();
        let (_, r) = pending.wait();
        r.unwrap();
        tb.join().unwrap();
        drop(a);
        let log = finish(bus, log);
        let at = |e: (u8, u8)| {
            assert_eq!(log.iter().filter(|&&x| x == e).count(), 1, "{e:?} did not run exactly once: {log:?}");
            log.iter().position(|&x| x == e).unwrap()
        };
        assert_eq!(log.len(), 3, "{log:?}");
        assert!(at((0, 1)) < at((0, 2)), "A's sync call overtook its async message: {log:?}");
        at((1, 3));
    });
}

/// Each submit races the pump finishing the previous one: it may land while
/// the pump drains, between the drain and its re-check of the queue, or
/// once the pump sleeps (quiet_pump signals only a sleeping pump). Two
/// threads submit, each a message after the other's first has completed
/// or not: the pump must never sleep with a job queued.
#[test]
fn spi_loom_submit_races_the_pump_going_to_sleep() {
    submits_race_the_pump(false);
}

/// The same, where a submit finding the bus idle runs in its own thread.
#[test]
fn spi_loom_submit_in_caller_races_the_pump_going_to_sleep() {
    submits_race_the_pump(true);
}

fn submits_race_the_pump(async_in_caller: bool) {
    model(move || {
        let (bus, a, b, log) = bus(async_in_caller);
        let tb = thread::spawn(move || {
            let (_, r) = submit(&b, 3).wait();
            r.unwrap();
        });
        for tag in 1..=2 {
            let (_, r) = submit(&a, tag).wait();
            r.unwrap();
        }
        tb.join().unwrap();
        drop(a);
        let mut log = finish(bus, log);
        log.sort_unstable();
        assert_eq!(log, [(0, 1), (0, 2), (1, 3)]);
    });
}

/// The models run on a step clock (`wirespeed_time::now` under loom): a
/// message's latency, and so the histogram counter its statistics bump,
/// depends on the schedule alone, as loom's replay of a schedule needs. On
/// the host's clock a model took different branches on the same schedule,
/// and loom aborted inside its own bookkeeping.
#[test]
fn spi_loom_clock_steps_a_microsecond_per_read_on_every_thread() {
    loom::model(|| {
        let t = thread::spawn(|| {
            let a = wirespeed_time::now();
            wirespeed_time::now().ns_since(a)
        });
        let a = wirespeed_time::now();
        let mine = wirespeed_time::now().ns_since(a);
        let theirs = t.join().unwrap();
        assert_eq!((mine, theirs), (1_000, 1_000));
    });
}
