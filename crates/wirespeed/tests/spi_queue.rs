//! The SPI core's queue: the caller-context fast path and the pump thread
//! hand messages to each other without losing, repeating or reordering any.

mod common;

use common::{alloc_count, bench, within};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirespeed::spi::{Bus, DeviceConfig, InvalidMessage, OwnedTransfer, Policy, SpiDevice, SpiError, Transfer};
use wirespeed_lab::spi::SpiDeviceModel;
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::Instant;

/// Records the MOSI bytes of every CS window, in the order they hit the
/// wire, and when each window opened.
#[derive(Clone, Default)]
struct Recorder {
    windows: Arc<Mutex<Vec<Vec<u8>>>>,
    opened: Arc<Mutex<Vec<Instant>>>,
}

impl SpiDeviceModel for Recorder {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        if asserted {
            self.windows.lock().unwrap().push(Vec::new());
            self.opened.lock().unwrap().push(at);
        }
    }
    fn exchange(&mut self, mosi: u32, _bits: u8, _at: Instant) -> u32 {
        if let Some(w) = self.windows.lock().unwrap().last_mut() {
            w.push(mosi as u8);
        }
        mosi
    }
}

/// A bus on a lab of its own with a [`Recorder`] on CS 0.
fn recorder_bus(policy: Policy) -> (Lab, Recorder, Bus) {
    let rec = Recorder::default();
    let (lab, bus) = common::lab_bus(LabConfig::default(), policy, rec.clone(), |d| d);
    (lab, rec, bus)
}

fn msg(thread: u8, seq: u32) -> [u8; 5] {
    let s = seq.to_be_bytes();
    [thread, s[0], s[1], s[2], s[3]]
}

/// Every thread mixes async submits and sync calls to one device; each
/// message carries (thread, sequence). On the wire, each thread's sequence
/// must appear exactly once per number and in order.
fn hammer(policy: Policy, threads: u8, per_thread: u32) {
    let (_lab, rec, bus) = recorder_bus(policy);
    std::thread::scope(|sc| {
        for t in 0..threads {
            let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
            sc.spawn(move || {
                let mut pending = Vec::new();
                let mut seq = 0;
                while seq < per_thread {
                    // A burst of async submits, then a sync call that must land after them.
                    let burst = (seq % 7) + 1;
                    for _ in 0..burst.min(per_thread - seq) {
                        let pm = dev.prepare(vec![OwnedTransfer::write(msg(t, seq).to_vec())]).unwrap();
                        pending.push(dev.submit(pm));
                        seq += 1;
                    }
                    if seq < per_thread {
                        dev.sync(&mut [Transfer::write(&msg(t, seq))]).unwrap();
                        seq += 1;
                    }
                    for p in pending.drain(..) {
                        let (_, r) = p.wait();
                        r.unwrap();
                    }
                }
            });
        }
    });
    let windows = rec.windows.lock().unwrap().clone();
    assert_eq!(windows.len(), usize::from(threads) * per_thread as usize, "messages lost or repeated");
    let mut next = vec![0u32; usize::from(threads)];
    for w in &windows {
        assert_eq!(w.len(), 5, "a message was torn: {w:?}");
        let t = usize::from(w[0]);
        let seq = u32::from_be_bytes([w[1], w[2], w[3], w[4]]);
        assert_eq!(seq, next[t], "thread {t}: message {seq} out of order (expected {})", next[t]);
        next[t] += 1;
    }
    let s = bus.stats();
    assert_eq!(s.messages, u64::from(threads) * u64::from(per_thread));
    assert!(s.queued > 0, "the test must exercise the queue");
}

/// `hammer` under a watchdog: a message the pump lost leaves its caller
/// waiting forever.
fn hammer_or_fail(policy: Policy, threads: u8, per_thread: u32) {
    within(Duration::from_secs(120), "a caller still waits: the pump lost a message", move || {
        hammer(policy, threads, per_thread)
    });
}

#[test]
fn handoff_between_caller_and_pump_keeps_every_message_once_and_in_order() {
    for round in 0..5 {
        hammer_or_fail(Policy::fast(), 4, 400 + round * 50);
    }
}

/// With the default idle delay a pump that slept through a queued message
/// is woken by its idle timer within a second, so a lost wake-up only slows
/// the tests above down. With an idle delay of an hour it leaves the message
/// queued: every message must still complete, queued to a pump asleep on an
/// idle bus or during the hammer's traffic.
#[test]
fn a_queued_message_wakes_the_pump_without_help_from_its_idle_timer() {
    let policy = Policy { idle_delay: Duration::from_secs(3600), ..Policy::fast() };
    let (_lab, _rec, bus) = recorder_bus(policy.clone());
    let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
    for round in 0..10u8 {
        // Time for the pump to go to sleep.
        std::thread::sleep(Duration::from_millis(2));
        let p = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![round])]).unwrap());
        p.wait_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("round {round}: the pump slept through a queued message"))
            .1
            .unwrap();
    }
    within(Duration::from_secs(30), "a caller still waits: the pump slept through a queued message", move || {
        hammer(policy, 4, 300)
    });
}

#[test]
fn classic_handoff_keeps_order_too() {
    hammer_or_fail(Policy::classic(), 3, 200);
}

/// Queues three async messages behind a bus lock, lets the pump run them,
/// and returns when each message's callback ran and when each message's CS
/// window opened on the wire.
fn completions_and_starts(policy: Policy) -> (Vec<Instant>, Vec<Instant>) {
    let (_lab, rec, bus) = recorder_bus(policy);
    let dev = bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let done = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let lock = dev.lock_bus().unwrap();
    for i in 0..3u8 {
        let pm = dev.prepare(vec![OwnedTransfer::write(vec![i; 16])]).unwrap();
        let (done, tx) = (done.clone(), tx.clone());
        dev.submit_with(pm, move |_, r| {
            r.unwrap();
            done.lock().unwrap().push(wirespeed_time::now());
            let _ = tx.send(());
        });
    }
    drop(lock);
    for _ in 0..3 {
        rx.recv_timeout(Duration::from_secs(30)).expect("an async message never completed");
    }
    let done = done.lock().unwrap().clone();
    let opened = rec.opened.lock().unwrap().clone();
    (done, opened)
}

#[test]
fn the_pipelined_pump_completes_a_message_while_the_next_one_shifts() {
    let (done, opened) = completions_and_starts(Policy::fast());
    assert_eq!((done.len(), opened.len()), (3, 3));
    for k in 0..2 {
        assert!(done[k] > opened[k + 1], "message {k} completed before message {} started", k + 1);
    }
    assert!(done[0] < done[1] && done[1] < done[2], "completions out of order");

    let serial = Policy { pipelined_pump: false, ..Policy::fast() };
    let (done, opened) = completions_and_starts(serial);
    for k in 0..2 {
        assert!(done[k] < opened[k + 1], "not pipelined: message {k} must complete before message {} starts", k + 1);
    }
}

#[test]
fn fast_sync_never_wakes_the_pump_classic_does() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let before = b.bus.pump_wakeups();
    for _ in 0..500 {
        dev.write(&[0; 9]).unwrap();
    }
    assert_eq!(b.bus.pump_wakeups(), before, "a sync message woke the pump");
    assert_eq!(b.bus.take_pump_kick_wait_max(), Duration::ZERO, "fast makes no kick to wait");
    assert_eq!(b.bus.stats().sync_immediate, 500);

    let c = bench(Policy::classic());
    let dev = c.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let (before, kicks_before) = (c.bus.pump_wakeups(), c.bus.pump_kicks());
    let coalesced_before = c.bus.pump_kicks_coalesced();
    c.bus.take_pump_kick_wait_max();
    let t0 = std::time::Instant::now();
    for _ in 0..100 {
        dev.write(&[0; 9]).unwrap();
    }
    let kicks = c.bus.pump_kicks() - kicks_before;
    assert_eq!(kicks, 100, "classic (5.18) kicks the pump after every message");
    // Every kick signalled the pump or found one pending, never both (both
    // counted when the kick is made, so nothing is left to wait for here).
    // The only other signal of a sync-only bus is a power-up after an idle
    // teardown (the bus starts powered).
    let coalesced = c.bus.pump_kicks_coalesced() - coalesced_before;
    let signalled = c.bus.pump_wakeups() - before;
    let teardowns = c.bus.teardowns();
    assert!(coalesced < kicks, "{coalesced} of {kicks} kicks found one pending: the first cannot have");
    assert!(
        (kicks - coalesced..=kicks - coalesced + teardowns).contains(&signalled),
        "{signalled} signals for {kicks} kicks, {coalesced} of them coalesced, and {teardowns} teardowns"
    );
    // A kick while the last one is pending wakes nobody (kthread_queue_work
    // queues a work item once), so the wake-ups are at most the kicks. The
    // kicked pump may not have been scheduled yet (valgrind runs one thread
    // at a time), but it must wake.
    assert!(eventually(Duration::from_secs(30), || c.bus.pump_wakeups() > before), "100 kicks never woke the pump");
    let woke = c.bus.pump_wakeups() - before;
    assert!(woke <= 100, "{woke} wake-ups for 100 kicks");
    // The pump takes each kick up and times how long it waited: some time,
    // never more than has passed since the first message began.
    let mut waited = Duration::ZERO;
    assert!(
        eventually(Duration::from_secs(30), || {
            waited = waited.max(c.bus.take_pump_kick_wait_max());
            waited > Duration::ZERO
        }),
        "the pump never took a kick up"
    );
    assert!(
        waited <= t0.elapsed(),
        "a kick waited {waited:?}, longer than the {:?} since the first message",
        t0.elapsed()
    );
    // ... but runs each one in the caller's thread, as 5.18's __spi_sync does on an idle controller.
    let s = c.bus.stats();
    assert_eq!((s.sync_immediate, s.queued), (100, 0), "classic pumps sync messages in the caller: {s:?}");

    // linux-6.9: in the caller, and no kick.
    let l = bench(Policy::linux69());
    let dev = l.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let before = l.bus.pump_wakeups();
    for _ in 0..100 {
        dev.write(&[0; 9]).unwrap();
    }
    assert_eq!(l.bus.pump_wakeups(), before, "6.0's no-queue sync path does not kick the pump");
    assert_eq!(l.bus.stats().sync_immediate, 100);
}

#[test]
fn a_kick_the_pump_took_up_is_no_longer_pending() {
    let c = bench(Policy::classic());
    let dev = c.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    dev.write(&[0; 9]).unwrap();
    // The only kick so far: once the pump has timed its wait, it has taken it up.
    assert!(
        eventually(Duration::from_secs(30), || c.bus.take_pump_kick_wait_max() > Duration::ZERO),
        "the pump never took the kick up"
    );
    dev.write(&[0; 9]).unwrap();
    assert_eq!(c.bus.pump_kicks(), 2);
    assert_eq!(c.bus.pump_kicks_coalesced(), 0, "the second kick found the first still pending");
}

#[test]
fn the_idle_timer_rechecks_once_per_idle_delay_not_per_message() {
    const IDLE: Duration = Duration::from_millis(50);
    let policy = Policy { idle_delay: IDLE, ..Policy::fast() };
    let b = bench(policy);
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    dev.write(&[1; 4]).unwrap();
    let (signals, timer) = (b.bus.pump_wakeups(), b.bus.pump_timer_wakeups());
    let t0 = std::time::Instant::now();
    let mut traffic = Traffic::default();
    // At least eight idle delays of traffic, and on until the pump has
    // re-checked once (a loaded machine may run it late).
    while t0.elapsed() < 8 * IDLE || b.bus.pump_timer_wakeups() == timer {
        assert!(t0.elapsed() < Duration::from_secs(30), "the idle timer never re-checked");
        traffic.write(&dev, IDLE);
    }
    let elapsed = t0.elapsed();
    assert_eq!(b.bus.pump_wakeups(), signals, "a sync message signalled the pump");
    let rechecks = b.bus.pump_timer_wakeups() - timer;
    // About one re-check per idle delay of traffic (the pump sleeps until
    // the last activity + the delay). A stalled sender shortens the next
    // interval, so the bound allows twice that: still nothing like one per
    // message.
    let most = 2 * (elapsed.as_millis() as u64 / IDLE.as_millis() as u64) + 1;
    let msgs = traffic.messages;
    assert!(rechecks <= most, "{rechecks} idle re-checks in {elapsed:?} ({msgs} messages), at most {most} expected");
    traffic.assert_no_teardown_while_busy(&b.bus);
}

/// Sync writes, with the pauses of an idle delay or more between them
/// counted: the bus may
/// go idle (and be torn down) only where the sender paused for an idle
/// delay, which a descheduled test thread can do on a loaded machine.
#[derive(Default)]
struct Traffic {
    messages: u64,
    last: Option<std::time::Instant>,
    idle_pauses: u64,
}

impl Traffic {
    fn write(&mut self, dev: &SpiDevice, idle: Duration) {
        dev.write(&[1; 4]).unwrap();
        let now = std::time::Instant::now();
        if self.last.is_some_and(|last| now - last >= idle) {
            self.idle_pauses += 1;
        }
        self.last = Some(now);
        self.messages += 1;
    }

    fn assert_no_teardown_while_busy(&self, bus: &Bus) {
        let (teardowns, pauses) = (bus.teardowns(), self.idle_pauses);
        assert!(teardowns <= pauses, "torn down {teardowns} times while busy ({pauses} pauses of an idle delay)");
    }
}

/// Polls `done` every millisecond until it holds (true) or `limit` has passed (false).
fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while !done() {
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Runs `f` while another thread holds `dev`'s bus lock, which keeps
/// whatever `f` submits queued however late `f`'s thread runs (one thread
/// at a time under valgrind). `f` lets the lock go by calling the function
/// it is given (again: no effect); it goes at the latest when `f` returns.
/// (`f` cannot hold the lock itself: a waiter that holds it is refused at
/// once, as it could never see its message done.)
fn with_bus_held_elsewhere<R>(dev: &SpiDevice, f: impl FnOnce(&dyn Fn()) -> R) -> R {
    let (locked, is_locked) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|sc| {
        let holder = dev.clone();
        sc.spawn(move || {
            let _lock = holder.lock_bus().unwrap();
            locked.send(()).unwrap();
            let _ = released.recv();
        });
        is_locked.recv().unwrap();
        let r = f(&|| {
            let _ = release.send(());
        });
        let _ = release.send(());
        r
    })
}

#[test]
fn idle_teardown_runs_once_after_the_idle_delay() {
    const IDLE: Duration = Duration::from_millis(40);
    let policy = Policy { idle_delay: IDLE, ..Policy::fast() };
    let b = bench(policy);
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut traffic = Traffic::default();
    for _ in 0..200 {
        traffic.write(&dev, IDLE);
    }
    traffic.assert_no_teardown_while_busy(&b.bus);
    let busy = b.bus.teardowns();
    let once = |expected: u64| {
        let idled = eventually(Duration::from_secs(30), || b.bus.teardowns() >= busy + expected);
        assert!(idled, "no teardown {expected} within 30 s of idling");
        // Long enough for a second teardown, if one were (wrongly) coming.
        std::thread::sleep(5 * IDLE);
        assert_eq!(b.bus.teardowns(), busy + expected, "teardown must run exactly once per idle period");
    };
    once(1);
    assert!(!b.block.is_ready(), "the controller must be powered down");
    let ups = b.block.power_ups();
    let mut rx = [0u8; 4];
    dev.sync(&mut [Transfer::duplex(&[1, 2, 3, 4], &mut rx)]).unwrap();
    assert_eq!(rx, [1, 2, 3, 4]);
    assert_eq!(b.block.power_ups(), ups + 1, "the next transfer powers the controller up");
    once(2);
}

#[test]
fn bus_lock_holds_off_others_and_queues_their_async_work() {
    let b = bench(Policy::fast());
    let a = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let other = b.bus.device(DeviceConfig::new(1, 20_000_000)).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (async_done, async_finished) = std::sync::mpsc::channel();
    let mut lock = a.lock_bus().unwrap();
    std::thread::scope(|sc| {
        let o2 = order.clone();
        let other2 = other.clone();
        let h = sc.spawn(move || {
            other2.write(&[0x02, 0x00, 0x11]).unwrap();
            o2.lock().unwrap().push("other sync");
        });
        let pm = other.prepare(vec![OwnedTransfer::write(vec![0x02, 0x01, 0x22])]).unwrap();
        let o3 = order.clone();
        other.submit_with(pm, move |_, r| {
            r.unwrap();
            o3.lock().unwrap().push("other async");
            let _ = async_done.send(());
        });
        std::thread::sleep(Duration::from_millis(50));
        lock.sync(&mut [Transfer::write(&[0xAA])]).unwrap();
        order.lock().unwrap().push("locked sync");
        drop(lock);
        h.join().unwrap();
    });
    async_finished.recv_timeout(Duration::from_secs(30)).expect("the queued async message never ran");
    let order = order.lock().unwrap().clone();
    assert_eq!(order[0], "locked sync", "{order:?}");
    assert_eq!(order.len(), 3, "{order:?}");
    assert_eq!((b.regfile.peek(0), b.regfile.peek(1)), (0x11, 0x22), "queued work was lost");
}

#[test]
fn a_bus_lock_waits_for_async_messages_submitted_before_it() {
    let (_lab, rec, bus) = recorder_bus(Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 10_000_000)).unwrap();
    for round in 0..20u8 {
        rec.windows.lock().unwrap().clear();
        let p = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![0xA0, round])]).unwrap());
        {
            let mut lock = dev.lock_bus().unwrap();
            lock.sync(&mut [Transfer::write(&[0xB0, round])]).unwrap();
        }
        p.wait().1.unwrap();
        let windows = rec.windows.lock().unwrap().clone();
        assert_eq!(
            windows,
            [[0xA0, round], [0xB0, round]],
            "round {round}: the locked sync overtook the async message"
        );
    }
}

/// The pump takes a job from the queue only once it holds the bus. Here it
/// is woken for an async message while the caller holds the bus lock, so it
/// waits for the bus with the message still queued; the caller then drops
/// the lock and at once sends a sync message, which finds the bus free
/// before the pump gets it. It must see the async message queued and go
/// behind it: a pump that had taken the message out first (the queue
/// looks empty, the bus is free) would let the sync message run first.
#[test]
fn a_sync_call_never_overtakes_a_message_the_pump_is_about_to_run() {
    let (_lab, rec, bus) = recorder_bus(Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
    for round in 0..40u8 {
        rec.windows.lock().unwrap().clear();
        let lock = dev.lock_bus().unwrap();
        let p = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![0xA0, round])]).unwrap());
        // Time for the woken pump to find the message and block on the bus.
        std::thread::sleep(Duration::from_millis(1));
        drop(lock);
        dev.sync(&mut [Transfer::write(&[0xB0, round])]).unwrap();
        p.wait().1.unwrap();
        let windows = rec.windows.lock().unwrap().clone();
        assert_eq!(windows, [[0xA0, round], [0xB0, round]], "round {round}: the sync call overtook the async message");
    }
}

#[test]
fn async_handles_wait_poll_and_return_the_message() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let pm = dev.prepare(vec![OwnedTransfer::duplex(vec![9; 64])]).unwrap();
    // The bus is held until the first poll has been refused.
    let (pm, r, polls) = with_bus_held_elsewhere(&dev, |release| {
        let mut p = dev.submit(pm);
        let mut polls = 0;
        loop {
            match p.try_take() {
                Ok((pm, r)) => break (pm, r, polls),
                Err(back) => {
                    release();
                    polls += 1;
                    p = back;
                    std::thread::yield_now();
                }
            }
        }
    });
    r.unwrap();
    assert!(polls > 0, "done while the bus was locked");
    assert_eq!(pm.rx(0).unwrap(), &[9u8; 64][..]);
    // A message prepared for another device is refused, and comes back.
    let other = b.bus.device(DeviceConfig::new(1, 1_000_000)).unwrap();
    let (_, r) = other.submit(pm).wait();
    assert!(r.is_err());
}

#[test]
fn prepared_messages_do_not_allocate_per_run() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let mut pm = dev.prepare(vec![OwnedTransfer::duplex(vec![0; 9])]).unwrap();
    for _ in 0..10 {
        dev.run(&mut pm).unwrap(); // warm: per-thread shard, controller buffers
    }
    let before = alloc_count::get();
    for i in 0..1000u32 {
        pm.tx_mut(0).unwrap()[0] = i as u8;
        dev.run(&mut pm).unwrap();
    }
    let n = alloc_count::get() - before;
    assert_eq!(n, 0, "{n} allocations in 1000 prepared runs");
    assert_eq!(pm.rx(0).unwrap()[0], (999u32 % 256) as u8);
}

#[test]
fn a_callback_gets_an_error_for_a_sync_call_or_bus_lock_on_its_own_bus_and_the_bus_carries_on() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let inner_dev = dev.clone();
    let pm = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
    dev.submit_with(pm, move |_, r| {
        r.unwrap();
        let sync = inner_dev.write(&[2; 4]);
        let lock = inner_dev.lock_bus().map(drop);
        let _ = tx.send((sync, lock));
    });
    let from_callback = rx.recv_timeout(Duration::from_secs(30)).expect("the callback never ran (or hung in it)");
    assert_eq!(from_callback, (Err(SpiError::CalledFromCallback), Err(SpiError::CalledFromCallback)));
    dev.write(&[3; 4]).unwrap();
    let s = b.bus.stats();
    assert_eq!((s.messages, s.bytes_tx), (2, 8), "the refused call must send nothing");
}

#[test]
fn a_panicking_callback_does_not_stop_the_pump() {
    let b = bench(Policy::fast());
    let dev = b.bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
    let pm = dev.prepare(vec![OwnedTransfer::write(vec![1; 4])]).unwrap();
    dev.submit_with(pm, |_, _| panic!("a user's callback panics (expected by this test)"));
    let pm = dev.prepare(vec![OwnedTransfer::duplex(vec![7; 4])]).unwrap();
    let (pm, r) = within(Duration::from_secs(30), "the pump died with the callback", move || dev.submit(pm).wait());
    r.unwrap();
    assert_eq!(pm.rx(0).unwrap(), &[7; 4][..]);
}

#[test]
fn waiting_with_a_time_limit_returns_the_handle_until_the_message_is_done() {
    let b = bench(Policy::fast());
    // 64 bytes at 100 kHz: 5.12 ms on the wire.
    let dev = b.bus.device(DeviceConfig::new(0, 100_000)).unwrap();
    let pm = dev.prepare(vec![OwnedTransfer::duplex(vec![5; 64])]).unwrap();
    with_bus_held_elsewhere(&dev, |release| {
        let pending = dev.submit(pm);
        let t0 = std::time::Instant::now();
        let pending = match pending.wait_timeout(Duration::from_micros(100)) {
            Ok(_) => panic!("a message completed while the bus was locked"),
            Err(p) => p,
        };
        assert!(t0.elapsed() >= Duration::from_micros(100), "returned before its time limit");
        let unlocked = std::time::Instant::now();
        release();
        let (pm, r) = pending.wait_timeout(Duration::from_secs(30)).expect("not done after 30 s");
        r.unwrap();
        assert!(unlocked.elapsed() >= Duration::from_micros(5_120), "done before its bits were shifted");
        assert_eq!(pm.rx(0).unwrap(), &[5; 64][..]);
    });
}

#[test]
fn a_prepared_message_runs_only_on_the_device_it_was_prepared_for() {
    // Two buses: the first device of each would share a per-bus number.
    let a = bench(Policy::fast());
    let b = bench(Policy::fast());
    let fast = a.bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
    let slow_same_bus = a.bus.device(DeviceConfig::new(1, 1_000_000)).unwrap();
    let slow_other_bus = b.bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    let mut pm = fast.prepare(vec![OwnedTransfer::write(vec![0xAA; 8])]).unwrap();
    for dev in [&slow_same_bus, &slow_other_bus] {
        assert_eq!(dev.run(&mut pm), Err(SpiError::Invalid(InvalidMessage::WrongDevice)));
        let (back, result) = dev.submit(pm).wait();
        assert_eq!(result, Err(SpiError::Invalid(InvalidMessage::WrongDevice)));
        pm = back;
    }
    assert_eq!((b.loopback.words(), a.regfile.accesses()), (0, 0), "a refused message sends nothing");
    fast.run(&mut pm).unwrap();
    assert_eq!(a.loopback.words(), 8);
}

/// `async_in_caller`: a short async message on an idle bus runs before
/// `submit` returns, with no wake-up of the pump; the kernel presets queue
/// it for the pump as `spi_async` does. A callback, a message too long, or
/// a bus held elsewhere still goes through the queue, in order.
#[test]
fn a_short_async_message_on_an_idle_bus_runs_in_the_submitting_thread_with_async_in_caller() {
    for (policy, in_caller) in [(Policy::fast(), true), (Policy::linux69(), false), (Policy::classic(), false)] {
        let (_lab, rec, bus) = recorder_bus(policy.clone());
        let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
        dev.write(&[0]).unwrap(); // powers the controller up (one wake-up of the pump)
        std::thread::sleep(Duration::from_millis(5)); // the pump is asleep again
        let wakeups = bus.pump_wakeups();
        let p = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![1, 2, 3])]).unwrap());
        assert_eq!(p.ran_in_caller(), in_caller, "{policy:?}");
        assert!(p.is_done() || !in_caller);
        let (_, r) = p.wait();
        r.unwrap();
        assert_eq!(bus.pump_wakeups() == wakeups, in_caller, "{policy:?}");
        assert_eq!(rec.windows.lock().unwrap().last().unwrap(), &[1, 2, 3]);
    }
    let (_lab, rec, bus) = recorder_bus(Policy::fast());
    let dev = bus.device(DeviceConfig::new(0, 1_000_000)).unwrap();
    // A callback runs on the pump thread, as documented.
    let (tx, rx) = std::sync::mpsc::channel();
    dev.submit_with(dev.prepare(vec![OwnedTransfer::write(vec![4])]).unwrap(), move |_, r| {
        tx.send((std::thread::current().name().map(str::to_owned), r.is_ok())).unwrap();
    });
    let (name, ok) = rx.recv().unwrap();
    assert!(ok && name.is_some_and(|n| n.starts_with("spi-pump")));
    // 4 KiB at 1 MHz (33 ms of wire) is too long to run before returning.
    const { assert!(wirespeed::spi::ASYNC_IN_CALLER_MAX_NS < 33_000_000) };
    let long = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![5; 4096])]).unwrap());
    assert!(!long.ran_in_caller());
    let (_, r) = long.wait();
    r.unwrap();
    // On a bus held by another thread it queues, and runs after the holder's messages.
    let short = with_bus_held_elsewhere(&dev, |release| {
        let p = dev.submit(dev.prepare(vec![OwnedTransfer::write(vec![6])]).unwrap());
        assert!(!p.ran_in_caller() && !p.is_done());
        release();
        p
    });
    let (_, r) = short.wait();
    r.unwrap();
    let w = rec.windows.lock().unwrap();
    assert_eq!(w.iter().map(|w| w[0]).collect::<Vec<_>>(), [4, 5, 6]);
}
