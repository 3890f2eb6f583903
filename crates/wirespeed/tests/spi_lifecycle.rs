//! The SPI core's lifecycle under misuse and faults: panics in controller
//! drivers, callbacks and lock holders; the last handle dropped with work
//! queued, or on the pump thread itself; waits from the wrong thread;
//! durations at the ends of their range. The bus must neither hang, nor
//! lose accepted work, nor give up its fast path.

mod common;

use common::{bench, within};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{
    Bus, ClockModel, Completion, Controller, ControllerCaps, ControllerFault, Data, DeviceConfig, InFlight, Mode,
    OwnedTransfer, Pending, Policy, SpiError, TransferTiming,
};
use wirespeed_lab::{devices::Loopback, LabConfig};

const LIMIT: Duration = Duration::from_secs(30);

/// Runs this very test in a child process (so that a panic hook, a panic on
/// the pump thread or an abort cannot disturb the other tests); returns the
/// child's exit status and stderr. In the child, returns None.
fn in_child(name: &str) -> Option<(std::process::ExitStatus, String)> {
    if std::env::var("SPI_LIFECYCLE_CHILD").as_deref() == Ok(name) {
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("SPI_LIFECYCLE_CHILD", name)
        .output()
        .unwrap();
    Some((out.status, String::from_utf8_lossy(&out.stderr).into_owned()))
}

#[test]
fn queued_work_is_sent_before_the_bus_goes() {
    within(LIMIT, "dropping the bus hung", || {
        let common::Bench { lab: _lab, regfile, bus, .. } = bench(Policy::fast());
        let dev = bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
        for reg in 0..8u8 {
            let pm = dev.prepare(vec![OwnedTransfer::write(vec![0x02, reg, 0x40 + reg])]).unwrap();
            drop(dev.submit(pm)); // fire and forget
        }
        drop(dev);
        drop(bus); // joins the pump, which sends what it accepted first
        let written: Vec<u8> = (0..8).map(|r| regfile.peek(r)).collect();
        assert_eq!(written, (0x40..0x48).collect::<Vec<u8>>(), "accepted writes were dropped with the bus");
    });
}

fn streaming_callback_owns_the_last_handle(panic_in_callback: bool) {
    let common::Bench { lab: _lab, bus, .. } = bench(Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let pm = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
    let mine = dev.clone();
    mine.submit_with(pm, move |_pm, r| {
        let _keep = &dev; // the stream's device (e.g. to resubmit)
        let _ = gate_rx.recv(); // until the user has let go of its own handles
        let _ = tx.send(r.is_ok());
        if panic_in_callback {
            panic!("user callback panics (expected by this test)");
        }
    });
    drop(mine);
    drop(bus);
    let _ = gate_tx.send(());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn a_callback_may_drop_the_last_handle_of_its_bus() {
    let Some((status, stderr)) = in_child("a_callback_may_drop_the_last_handle_of_its_bus") else {
        return streaming_callback_owns_the_last_handle(false);
    };
    assert!(status.success(), "child failed: {status:?}\n{stderr}");
    assert!(!stderr.contains("panicked"), "the pump thread panicked:\n{stderr}");
}

#[test]
fn a_panicking_callback_may_drop_the_last_handle_of_its_bus() {
    let name = "a_panicking_callback_may_drop_the_last_handle_of_its_bus";
    let Some((status, stderr)) = in_child(name) else {
        return streaming_callback_owns_the_last_handle(true);
    };
    assert!(status.success(), "the process died: {status:?}\n{stderr}");
}

/// A controller driver with bugs: it panics on a write starting with 0xEE,
/// and powering up while its flag is armed (once per arming).
struct BuggyDriver(LabSpi, Arc<std::sync::atomic::AtomicBool>);

impl BuggyDriver {
    fn new(lab: LabSpi) -> BuggyDriver {
        BuggyDriver(lab, Arc::default())
    }
}

impl Controller for BuggyDriver {
    fn caps(&self) -> &ControllerCaps {
        self.0.caps()
    }
    fn configure(&mut self, mode: Mode, speed_hz: u32, bits: u8) {
        self.0.configure(mode, speed_hz, bits)
    }
    fn set_cs(&mut self, cs: u8, active: bool) {
        self.0.set_cs(cs, active)
    }
    fn preload(&mut self, data: &Data<'_>, bits: u8) -> usize {
        self.0.preload(data, bits)
    }
    fn discard_preload(&mut self) {
        self.0.discard_preload()
    }
    fn abort(&mut self) {
        self.0.abort()
    }
    fn transfer(
        &mut self,
        data: &mut Data<'_>,
        bits: u8,
        preloaded: usize,
        completion: Completion,
        timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        if let Data::Write(b) = data {
            if b.first() == Some(&0xEE) {
                panic!("controller driver bug (expected by this test)");
            }
        }
        self.0.transfer(data, bits, preloaded, completion, timeout_ns, in_flight)
    }
    fn set_power(&mut self, on: bool) {
        if on && self.1.swap(false, std::sync::atomic::Ordering::SeqCst) {
            panic!("controller driver bug powering up (expected by this test)");
        }
        self.0.set_power(on)
    }
}

#[test]
fn a_driver_panic_fails_its_message_and_the_bus_carries_on() {
    let Some((status, stderr)) = in_child("a_driver_panic_fails_its_message_and_the_bus_carries_on") else {
        return within(LIMIT, "a waiter hung after the driver panicked", || {
            let (_lab, bus) = common::lab_bus(LabConfig::default(), Policy::fast(), Loopback::new(), BuggyDriver::new);
            let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
            let bad = dev.prepare(vec![OwnedTransfer::write(vec![0xEE; 4])]).unwrap();
            let good = dev.prepare(vec![OwnedTransfer::duplex(vec![7; 4])]).unwrap();
            let (p_bad, p_good) = (dev.submit(bad), dev.submit(good));
            assert!(matches!(p_bad.wait().1, Err(SpiError::Controller { index: 0, .. })));
            let (good, r) = p_good.wait();
            r.unwrap();
            assert_eq!(good.rx(0), Some(&[7u8; 4][..]), "the message queued behind it ran");
            // The same in the caller's thread (the sync fast path).
            assert!(matches!(dev.write(&[0xEE, 1]), Err(SpiError::Controller { .. })));
            // The error names the transfer during which the driver panicked.
            let mut rx = [0u8; 2];
            let r = dev.sync(&mut [
                wirespeed::spi::Transfer::duplex(&[1, 2], &mut rx),
                wirespeed::spi::Transfer::write(&[0xEE, 2]),
            ]);
            assert!(matches!(r, Err(SpiError::Controller { index: 1, .. })), "{r:?}");
            let mut rx = [0u8; 2];
            dev.sync(&mut [wirespeed::spi::Transfer::duplex(&[1, 2], &mut rx)]).unwrap();
            assert_eq!(rx, [1, 2], "words of the failed message were left in the FIFO");
        });
    };
    assert!(status.success(), "child failed: {status:?}\n{stderr}");
    assert!(stderr.contains("controller driver bug"), "the panic was not reported:\n{stderr}");
}

#[test]
fn a_panic_under_the_bus_lock_leaves_the_fast_path_on() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let holder = dev.clone();
    let r = std::thread::spawn(move || {
        let _lock = holder.lock_bus().unwrap();
        panic!("user code panics while holding the bus lock (expected by this test)");
    })
    .join();
    assert!(r.is_err());
    let (wakeups, immediate) = (b.bus.pump_wakeups(), b.bus.stats().sync_immediate);
    for _ in 0..100 {
        dev.write(&[0; 4]).unwrap();
    }
    assert_eq!(
        (b.bus.pump_wakeups() - wakeups, b.bus.stats().sync_immediate - immediate),
        (0, 100),
        "(pump wake-ups, immediate syncs) for 100 sync messages on an idle bus"
    );
}

#[test]
fn the_lock_holder_gets_an_error_for_a_sync_call_outside_its_lock() {
    within(LIMIT, "the lock holder waited for itself", || {
        let b = bench(Policy::fast());
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        let other = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
        let mut lock = dev.lock_bus().unwrap();
        assert_eq!(other.write(&[1]), Err(SpiError::LockedByCaller));
        assert_eq!(dev.write(&[1]), Err(SpiError::LockedByCaller));
        assert_eq!(dev.lock_bus().err(), Some(SpiError::LockedByCaller));
        lock.sync(&mut [wirespeed::spi::Transfer::write(&[1])]).unwrap();
        drop(lock);
        assert_eq!(b.loopback.selects(), 1, "only the message run through the lock was sent");
        other.write(&[1]).unwrap();
    });
}

#[test]
fn a_callback_cannot_sleep_on_a_message_of_its_own_bus() {
    within(LIMIT, "a wait in a callback hung the pump", || {
        let b = bench(Policy::fast());
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        let later: Arc<Mutex<Option<Pending>>> = Arc::default();
        let (tx, rx) = std::sync::mpsc::channel();
        {
            // Both messages queue behind the lock, so the second is still
            // queued when the first one's callback runs.
            let _lock = dev.lock_bus().unwrap();
            let first = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
            let later2 = later.clone();
            dev.submit_with(first, move |_, _| {
                let p = later2.lock().unwrap().take().unwrap();
                let p = p.wait_timeout(Duration::from_secs(3600)).expect_err("returns the handle at once");
                let p = p.try_take().expect_err("not done yet");
                let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.wait()));
                let _ = tx.send(waited.is_err());
            });
            let second = dev.prepare(vec![OwnedTransfer::write(vec![2; 4])]).unwrap();
            *later.lock().unwrap() = Some(dev.submit(second));
        }
        assert_eq!(rx.recv_timeout(LIMIT), Ok(true), "Pending::wait in the callback must panic, not hang");
        dev.write(&[3; 4]).unwrap();
        assert_eq!(b.loopback.words(), 12, "both queued messages and the sync one were sent");
    });
}

#[test]
fn durations_too_long_to_count_mean_forever_not_at_once() {
    within(LIMIT, "hung", || {
        let b = bench(Policy { idle_delay: Duration::MAX, ..Policy::fast() });
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        for _ in 0..3 {
            dev.write(&[1, 2, 3]).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(b.bus.teardowns(), 0, "idle_delay = Duration::MAX tore the controller down");
        let pm = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
        let (_, r) = dev.submit(pm).wait_timeout(Duration::MAX).expect("done long before forever");
        r.unwrap();
    });
}

/// A controller with no hardware behind it: every transfer completes at once.
struct Inert(ControllerCaps);

impl Controller for Inert {
    fn caps(&self) -> &ControllerCaps {
        &self.0
    }
    fn configure(&mut self, _: Mode, _: u32, _: u8) {}
    fn set_cs(&mut self, _: u8, _: bool) {}
    fn preload(&mut self, _: &Data<'_>, _: u8) -> usize {
        0
    }
    fn transfer(
        &mut self,
        _: &mut Data<'_>,
        _: u8,
        _: usize,
        _: Completion,
        _: u64,
        in_flight: &mut InFlight<'_>,
    ) -> Result<TransferTiming, ControllerFault> {
        in_flight.run();
        Ok(TransferTiming { started: None, completed: None })
    }
    fn set_power(&mut self, _: bool) {}
}

fn inert() -> Inert {
    Inert(ControllerCaps {
        name: "inert",
        max_speed_hz: 50_000_000,
        min_speed_hz: 1_000,
        clock: ClockModel::Exact,
        fifo_bytes: 64,
        bits_per_word_mask: 0x80,
        num_cs: 1,
        can_poll: true,
        has_irq: false,
        mode_flags: wirespeed::spi::ModeFlags::NONE,
    })
}

#[test]
fn a_bus_whose_pump_thread_cannot_start_is_an_error_not_a_panic() {
    const NAME: &str = "a_bus_whose_pump_thread_cannot_start_is_an_error_not_a_panic";
    if std::env::var("SPI_LIFECYCLE_CHILD").as_deref() == Ok(NAME) {
        // In the child every new thread asks for an impossible stack.
        let e = Bus::try_new(inert(), Policy::fast()).expect_err("a pump thread started with no stack to run on");
        assert_eq!(e.controller, "inert");
        assert!(e.to_string().contains("cannot start the pump thread of SPI bus \"inert\""), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("SPI_LIFECYCLE_CHILD", NAME)
        .env("RUST_MIN_STACK", (1u64 << 50).to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {:?}\n{stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Where threads can start, the same bus starts and runs.
    let bus = Bus::try_new(inert(), Policy::fast()).expect("the pump thread starts");
    bus.device(DeviceConfig::new(0, 1_000_000)).unwrap().write(&[1, 2, 3]).unwrap();
}

#[test]
fn a_driver_panic_powering_up_fails_its_message_and_the_bus_carries_on() {
    let name = "a_driver_panic_powering_up_fails_its_message_and_the_bus_carries_on";
    let Some((status, stderr)) = in_child(name) else {
        return within(LIMIT, "a waiter hung after the driver panicked powering up", || {
            let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let policy = Policy { idle_delay: Duration::from_millis(20), ..Policy::fast() };
            let arm = armed.clone();
            let (_lab, bus) = common::lab_bus(LabConfig::default(), policy, Loopback::new(), |c| BuggyDriver(c, arm));
            let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
            let torn_down = |n: u64| {
                while bus.teardowns() < n {
                    std::thread::sleep(Duration::from_millis(5));
                }
            };
            // The pump powers the controller up for a queued message.
            torn_down(1);
            armed.store(true, std::sync::atomic::Ordering::SeqCst);
            let pm = dev.prepare(vec![OwnedTransfer::duplex(vec![7; 4])]).unwrap();
            assert!(matches!(dev.submit(pm).wait().1, Err(SpiError::Controller { index: 0, .. })));
            let good = dev.prepare(vec![OwnedTransfer::duplex(vec![8; 4])]).unwrap();
            let (good, r) = dev.submit(good).wait();
            r.unwrap();
            assert_eq!(good.rx(0), Some(&[8u8; 4][..]), "the bus did not carry on after the panic");
            // The caller's thread powers it up for a sync message on an idle bus.
            torn_down(2);
            armed.store(true, std::sync::atomic::Ordering::SeqCst);
            assert!(matches!(dev.write(&[1, 2]), Err(SpiError::Controller { index: 0, .. })));
            let mut rx = [0u8; 2];
            dev.sync(&mut [wirespeed::spi::Transfer::duplex(&[1, 2], &mut rx)]).unwrap();
            assert_eq!(rx, [1, 2]);
        });
    };
    assert!(status.success(), "child failed: {status:?}\n{stderr}");
    assert!(stderr.contains("powering up"), "the panic was not reported:\n{stderr}");
}

#[test]
fn a_thread_holding_two_buses_locks_gets_an_error_for_either_bus() {
    within(LIMIT, "the holder of two bus locks waited for itself", || {
        let (a, b) = (bench(Policy::fast()), bench(Policy::fast()));
        let (a0, a1) = (
            a.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap(),
            a.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap(),
        );
        let (b0, b1) = (
            b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap(),
            b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap(),
        );
        // Nested: the outer bus's lock is still held.
        let lock_a = a0.lock_bus().unwrap();
        let lock_b = b0.lock_bus().unwrap();
        assert_eq!(a1.write(&[1]), Err(SpiError::LockedByCaller));
        assert_eq!(a1.lock_bus().err(), Some(SpiError::LockedByCaller));
        assert_eq!(b1.write(&[1]), Err(SpiError::LockedByCaller));
        // Released out of order: the inner bus's lock is still held.
        drop(lock_a);
        assert_eq!(b1.write(&[1]), Err(SpiError::LockedByCaller));
        a1.write(&[1]).unwrap();
        drop(lock_b);
        b1.write(&[1]).unwrap();
    });
}

#[test]
fn the_lock_holder_cannot_sleep_on_a_message_queued_behind_its_lock() {
    within(LIMIT, "a wait under the bus lock hung its own thread", || {
        let b = bench(Policy::fast());
        let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        let lock = dev.lock_bus().unwrap();
        let pm = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
        let p = dev.submit(pm).wait_timeout(Duration::from_secs(3600)).expect_err("returns the handle at once");
        let p = p.try_take().expect_err("not done yet");
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.wait()));
        assert!(waited.is_err(), "Pending::wait under the lock must panic, not hang");
        drop(lock);
        let pm = dev.prepare(vec![OwnedTransfer::write(vec![2; 4])]).unwrap();
        dev.submit(pm).wait().1.unwrap();
        assert_eq!(b.loopback.words(), 8, "the message queued behind the lock was lost");
    });
}
