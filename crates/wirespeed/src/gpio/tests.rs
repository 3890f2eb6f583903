//! Behaviour of the GPIO core on the lab chip: requests, values, events,
//! interrupt waits, and removal under load.

use super::*;
use crate::backend::lab::gpio::open;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::{Lab, LabConfig, Pin};
use wirespeed_time::now;

const LONG: Option<Duration> = Some(Duration::from_secs(5));

fn setup(lines: u32) -> (Lab, GpioChip, Chip) {
    let lab = Lab::new(LabConfig::default());
    let hw = lab.gpio_chip(GpioChipConfig { lines, ..GpioChipConfig::default() });
    let chip = open(&hw).unwrap();
    (lab, hw, chip)
}

fn out(offset: u32, v: bool) -> RequestConfig {
    RequestConfig::new("test").line(offset, LineSettings::output(v))
}

#[test]
fn info_requests_busy_lines_and_line_info() {
    let (_lab, hw, chip) = setup(8);
    let info = chip.info().unwrap();
    assert_eq!((info.name.as_str(), info.lines), ("gpiochip0", 8));
    let r = chip.request_lines(&RequestConfig::new("led").line(3, LineSettings::output(true))).unwrap();
    let li = chip.line_info(3).unwrap();
    assert!(li.used);
    assert_eq!(li.consumer, "led");
    assert_eq!(li.settings.direction, Direction::Output);
    assert_eq!(
        chip.request_lines(&out(3, false)).unwrap_err(),
        GpioError::LineBusy { offset: 3, consumer: "led".into() }
    );
    let other_open = open(&hw).unwrap();
    assert!(
        matches!(other_open.request_lines(&out(3, false)), Err(GpioError::LineBusy { .. })),
        "a second open sees the line busy"
    );
    assert_eq!(chip.request_lines(&out(8, false)).unwrap_err(), GpioError::OffsetOutOfRange { offset: 8, lines: 8 });
    assert!(matches!(r.set_value(4, true), Err(GpioError::NotRequested { offset: 4, .. })));
    drop(r);
    assert!(!chip.line_info(3).unwrap().used, "dropping the request releases the line");
    chip.request_lines(&out(3, false)).unwrap();
}

#[test]
fn values_active_low_and_many_lines() {
    let (_lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("t")
        .line(0, LineSettings::output(false))
        .line(1, LineSettings::output(true).active_low(true))
        .line(2, LineSettings::output(false));
    let r = chip.request_lines(&cfg).unwrap();
    assert!(!hw.value(1).unwrap(), "active-low 1 is the low level");
    r.set_value(1, false).unwrap();
    assert!(hw.value(1).unwrap());
    r.set_values(0b101, 0b101).unwrap();
    assert_eq!(r.values(0b111).unwrap(), 0b101);
    assert!(hw.value(0).unwrap() && hw.value(2).unwrap());
    r.set_many(&[(0, false), (1, true)]).unwrap();
    assert_eq!(r.values(0b111).unwrap(), 0b110);
    assert!(r.set_values(0b1000, 0).is_err(), "bit of a line not requested");
}

#[test]
fn reconfigure_and_direction_errors() {
    let (_lab, hw, chip) = setup(4);
    let r = chip.request_lines(&RequestConfig::new("t").line(2, LineSettings::input().bias(Bias::PullUp))).unwrap();
    assert!(r.value(2).unwrap());
    assert_eq!(r.set_value(2, false).unwrap_err(), GpioError::WrongDirection { offset: 2, needs: "an output" });
    r.reconfigure(&LineConfig::new().line(2, LineSettings::output(false))).unwrap();
    r.set_value(2, true).unwrap();
    assert!(hw.value(2).unwrap());
    assert!(r.reconfigure(&LineConfig::new().line(3, LineSettings::input())).is_err(), "not the request's lines");
    assert_eq!(chip.line_info(2).unwrap().settings.direction, Direction::Output);
}

#[test]
fn edge_events_carry_lab_timestamps_and_sequence_numbers() {
    let (_lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("irq").line(5, LineSettings::input().bias(Bias::PullUp).edge(Edge::Both));
    let r = chip.request_lines(&cfg).unwrap();
    let int = Pin::new("int", true);
    int.connect(hw.input_sink(5), now());
    let t0 = now();
    int.set(false, t0);
    int.set(true, t0.add_ns(1_000));
    // The event fd polls readable.
    let fd = r.event_fd().unwrap();
    assert!(fd::wait_readable(&[fd], Some(Duration::from_secs(1))).unwrap());
    let mut buf = [EdgeEvent { offset: 0, kind: EdgeKind::Rising, timestamp: t0, seqno: 0, line_seqno: 0 }; 4];
    assert_eq!(r.read_edge_events(&mut buf).unwrap(), 2);
    assert_eq!((buf[0].kind, buf[0].timestamp, buf[0].seqno, buf[0].offset), (EdgeKind::Falling, t0, 1, 5));
    assert_eq!((buf[1].kind, buf[1].timestamp, buf[1].line_seqno), (EdgeKind::Rising, t0.add_ns(1_000), 2));
    assert_eq!(r.read_edge_events(&mut buf).unwrap(), 0);
    assert_eq!(r.wait_edge_event(Some(Duration::from_millis(5))).unwrap(), None, "timeout");
}

#[test]
fn active_low_flips_edge_kinds() {
    let (_lab, hw, chip) = setup(4);
    let s = LineSettings::input().bias(Bias::PullUp).active_low(true).edge(Edge::Rising);
    let r = chip.request_lines(&RequestConfig::new("t").line(0, s)).unwrap();
    hw.drive_external(0, Some(false), now());
    let e = r.wait_edge_event(LONG).unwrap().unwrap();
    assert_eq!(e.kind, EdgeKind::Rising, "high to low on an active-low line is inactive to active");
    assert!(r.value(0).unwrap());
}

#[test]
fn irq_wait_sleeps_for_far_edges_and_polls_for_near_ones() {
    let (lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("irq").line(6, LineSettings::input().bias(Bias::PullUp).edge(Edge::Falling));
    let r = chip.request_lines(&cfg).unwrap();
    let int = Pin::new("int", true);
    int.connect(hw.input_sink(6), now());
    // The device raises its interrupt at `at`, from the lab's interrupt thread,
    // stamping the edge with the scheduled instant.
    let fire = |delay_ns: u64| {
        let at = now().add_ns(delay_ns);
        let p = int.clone();
        lab.scheduler().schedule(at, move |_ran| {
            p.set(false, at);
            p.set(true, at);
        });
        at
    };
    // Far enough ahead that the wait surely starts before the edge, even on a loaded machine.
    let at = fire(50_000_000);
    let e = r.wait_edge(LONG).unwrap().expect("the interrupt came");
    assert_eq!(e.timestamp, at);
    assert!(now() >= at);
    let s = r.wait_stats();
    assert_eq!((s.slept, s.polled), (1, 0), "no history: sleep");
    assert!(s.wake_cost_ns > 0);
    // Interrupts nearer than a wake-up takes (half the cost measured so
    // far, at most 2 µs: where wake-ups take 1.4 µs, as CI once measured,
    // a 2 µs interrupt is not near) teach it that the expected wait is
    // below the wake-up cost; sixty of them wash out the first wait's
    // 50 ms. (Some are already there when the wait starts: on a loaded
    // machine the woken interrupt thread may run on this thread's CPU
    // before it gets to wait.)
    for _ in 0..60 {
        fire((r.wait_stats().wake_cost_ns / 2).min(2_000));
        assert!(r.wait_edge(LONG).unwrap().is_some());
    }
    let s = r.wait_stats();
    assert!(s.expected_wait_ns.unwrap() < s.wake_cost_ns, "{s:?}");
    // So the next wait polls first; its edge, 50 ms away, comes after the
    // poll's budget (twice the wake-up cost), so it then sleeps.
    let at = fire(50_000_000);
    assert_eq!(r.wait_edge(LONG).unwrap().map(|e| e.timestamp), Some(at));
    let t = r.wait_stats();
    assert_eq!((t.polled, t.slept), (s.polled + 1, s.slept + 1), "polled, then slept: {t:?}");
    // Forced modes.
    r.set_wait_mode(WaitMode::Sleep);
    let before = r.wait_stats().slept;
    fire(50_000_000);
    assert!(r.wait_edge(LONG).unwrap().is_some());
    assert_eq!(r.wait_stats().slept, before + 1);
    r.set_wait_mode(WaitMode::Poll);
    assert_eq!(r.wait_edge(Some(Duration::from_millis(2))).unwrap(), None, "poll times out");
}

#[test]
fn wait_level_sees_busy_go_low() {
    let (lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("adc").line(1, LineSettings::input().bias(Bias::PullDown).edge(Edge::Both));
    let r = chip.request_lines(&cfg).unwrap();
    let busy = Pin::new("busy", false);
    busy.connect(hw.input_sink(1), now());
    busy.set(true, now());
    let _ = r.try_edge_event();
    assert!(r.value(1).unwrap());
    let b = busy.clone();
    lab.scheduler().schedule(now().add_ns(2_000_000), move |t| b.set(false, t));
    assert!(r.wait_level(1, false, LONG).unwrap());
    assert!(!r.wait_level(1, true, Some(Duration::from_millis(3))).unwrap(), "times out");
    let plain = chip.request_lines(&RequestConfig::new("x").line(2, LineSettings::input().bias(Bias::PullUp))).unwrap();
    assert!(matches!(plain.wait_level(2, false, LONG), Err(GpioError::InvalidConfig { .. })), "no edges, no sleep");
    plain.set_wait_mode(WaitMode::Poll);
    assert!(!plain.wait_level(2, false, Some(Duration::from_millis(1))).unwrap());
}

#[test]
fn a_sleeper_wakes_on_the_edge_and_the_descriptor_follows_the_queue() {
    let (_lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("irq").line(3, LineSettings::input().bias(Bias::PullUp).edge(Edge::Falling));
    let r = chip.request_lines(&cfg).unwrap();
    let fd = r.event_fd().unwrap();
    assert!(!fd::wait_readable(&[fd], Some(Duration::ZERO)).unwrap(), "readable with no event queued");
    let int = Pin::new("int", true);
    int.connect(hw.input_sink(3), now());
    let driver = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        int.set(false, now());
        int
    });
    let t = now();
    let e = r.wait_edge_event(Some(Duration::from_secs(20))).unwrap();
    let slept_ms = now().ns_since(t) / 1_000_000;
    let _int = driver.join().unwrap();
    assert_eq!(e.map(|e| (e.kind, e.offset)), Some((EdgeKind::Falling, 3)));
    assert!(slept_ms < 10_000, "woke {slept_ms} ms after an edge 20 ms in");
    assert!(!fd::wait_readable(&[fd], Some(Duration::ZERO)).unwrap(), "still readable once the queue is empty");
}

#[test]
fn removal_fails_everything_after_and_wakes_sleepers() {
    let (_lab, hw, chip) = setup(8);
    let r = chip.request_lines(&out(0, false)).unwrap();
    let irq = chip.request_lines(&RequestConfig::new("i").line(1, LineSettings::input().edge(Edge::Both))).unwrap();
    let sleeper = std::thread::spawn(move || irq.wait_edge_event(Some(Duration::from_secs(20))));
    std::thread::sleep(Duration::from_millis(20));
    hw.remove();
    let woke = sleeper.join().unwrap();
    assert!(matches!(woke, Err(GpioError::ChipGone { .. })), "{woke:?}");
    assert!(chip.is_gone());
    assert!(matches!(r.set_value(0, true), Err(GpioError::ChipGone { .. })));
    assert!(matches!(r.value(0), Err(GpioError::ChipGone { .. })));
    assert!(matches!(r.event_fd(), Err(GpioError::ChipGone { .. })));
    assert!(matches!(chip.info(), Err(GpioError::ChipGone { .. })));
    assert!(matches!(chip.request_lines(&out(2, false)), Err(GpioError::ChipGone { .. })));
    assert_eq!(hw.accesses_after_removal(), 0);
    chip.remove();
    drop(r);
    assert!(matches!(open(&hw), Err(GpioError::ChipGone { .. })));
}

/// Threads toggle their lines while the lab chip is unplugged, many times.
/// Asserts: an access that began after removal completed never succeeds,
/// every failure is `ChipGone`, and nothing reached the chip after it went.
fn stress_once<G: SoundGuard>(round: u64, threads: usize) {
    let (_lab, hw, chip) = setup(8);
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let ok_total = Arc::new(AtomicU64::new(0));
    let mut joins = Vec::new();
    for t in 0..threads {
        let r = chip.request_lines_with::<G>(&out(t as u32, false)).unwrap();
        let (done, start, ok_total) = (done.clone(), start.clone(), ok_total.clone());
        joins.push(std::thread::spawn(move || {
            start.wait();
            let mut v = false;
            let mut ok = 0u64;
            loop {
                let removal_finished = done.load(Ordering::SeqCst);
                v = !v;
                match r.set_value(t as u32, v) {
                    Ok(()) => {
                        assert!(!removal_finished, "an access succeeded after removal completed");
                        ok += 1;
                    }
                    Err(GpioError::ChipGone { .. }) => break,
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            assert!(matches!(r.value(t as u32), Err(GpioError::ChipGone { .. })));
            ok_total.fetch_add(ok, Ordering::Relaxed);
        }));
    }
    start.wait();
    // Vary the moment of removal from "at once" to a few hundred µs.
    wirespeed_time::spin_for_ns((round % 7) * 50_000);
    hw.remove();
    done.store(true, Ordering::SeqCst);
    for j in joins {
        j.join().unwrap();
    }
    assert_eq!(hw.accesses_after_removal(), 0, "an access touched the removed chip");
}

#[test]
fn stress_removal_while_toggling_revocable() {
    for round in 0..150 {
        stress_once::<Revocable>(round, 3);
    }
}

#[test]
fn stress_removal_while_toggling_interlock() {
    for round in 0..50 {
        stress_once::<Interlock>(round, 3);
    }
}

/// The same with software removal (`Chip::remove`) and a backend that
/// poisons itself when freed: any call after the free is counted.
#[test]
fn stress_software_removal_never_touches_freed_backend() {
    use std::os::fd::RawFd;
    struct Poisoned {
        freed: Arc<AtomicBool>,
        late: Arc<AtomicU64>,
        value: AtomicU64,
    }
    impl RequestBackend for Poisoned {
        fn get_values(&self, mask: u64) -> Result<u64, GpioError> {
            if self.freed.load(Ordering::SeqCst) {
                self.late.fetch_add(1, Ordering::SeqCst);
            }
            Ok(self.value.load(Ordering::Relaxed) & mask)
        }
        fn set_values(&self, mask: u64, bits: u64) -> Result<(), GpioError> {
            if self.freed.load(Ordering::SeqCst) {
                self.late.fetch_add(1, Ordering::SeqCst);
            }
            self.value.store(bits & mask, Ordering::Relaxed);
            Ok(())
        }
        fn reconfigure(&self, _c: &LineConfig) -> Result<(), GpioError> {
            Ok(())
        }
        fn event_fd(&self) -> RawFd {
            -1
        }
        fn read_events(&self, _o: &mut [EdgeEvent]) -> Result<usize, GpioError> {
            Ok(0)
        }
    }
    impl Drop for Poisoned {
        fn drop(&mut self) {
            self.freed.store(true, Ordering::SeqCst);
        }
    }
    struct PoisonChip {
        freed: Arc<AtomicBool>,
        late: Arc<AtomicU64>,
    }
    impl ChipBackend for PoisonChip {
        fn info(&self) -> Result<ChipInfo, GpioError> {
            Ok(ChipInfo { name: "poison".into(), label: String::new(), lines: 8 })
        }
        fn line_info(&self, offset: u32) -> Result<LineInfo, GpioError> {
            Ok(LineInfo {
                offset,
                name: String::new(),
                used: false,
                consumer: String::new(),
                settings: LineSettings::default(),
            })
        }
        fn request(&self, _c: &RequestConfig) -> Result<Box<dyn RequestBackend>, GpioError> {
            Ok(Box::new(Poisoned { freed: self.freed.clone(), late: self.late.clone(), value: AtomicU64::new(0) }))
        }
    }
    for round in 0..100u64 {
        let freed = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicU64::new(0));
        let chip = Chip::from_backend(Box::new(PoisonChip { freed: freed.clone(), late: late.clone() })).unwrap();
        let mut joins = Vec::new();
        for t in 0..2u32 {
            let r = chip.request_lines(&out(t, false)).unwrap();
            joins.push(std::thread::spawn(move || {
                let mut v = false;
                while r.set_value(t, v).is_ok() {
                    v = !v;
                }
            }));
        }
        wirespeed_time::spin_for_ns((round % 5) * 40_000);
        chip.remove();
        assert!(freed.load(Ordering::SeqCst), "removal returned before freeing");
        for j in joins {
            j.join().unwrap();
        }
        assert_eq!(late.load(Ordering::SeqCst), 0, "round {round}: freed backend used");
    }
}

/// A poll loop on `event_fd` that takes one event per wake-up: two edges are
/// queued, the descriptor polls readable, `try_edge_event` takes the first —
/// the descriptor must stay readable while the second waits.
#[test]
fn event_fd_stays_readable_while_an_event_taken_one_by_one_waits() {
    let (_lab, hw, chip) = setup(8);
    let cfg = RequestConfig::new("irq").line(4, LineSettings::input().bias(Bias::PullUp).edge(Edge::Both));
    let r = chip.request_lines(&cfg).unwrap();
    let fd = r.event_fd().unwrap();
    let t0 = now();
    hw.drive_external(4, Some(false), t0);
    hw.drive_external(4, Some(true), t0.add_ns(1_000));
    assert!(fd::wait_readable(&[fd], Some(Duration::from_secs(1))).unwrap());
    let first = r.try_edge_event().unwrap().expect("the first edge");
    assert_eq!(first.kind, EdgeKind::Falling);
    assert!(
        fd::wait_readable(&[fd], Some(Duration::ZERO)).unwrap(),
        "the descriptor went quiet with an edge still pending: a poll loop would sleep through it"
    );
    assert_eq!(r.try_edge_event().unwrap().map(|e| e.kind), Some(EdgeKind::Rising));
    assert!(!fd::wait_readable(&[fd], Some(Duration::ZERO)).unwrap(), "readable with nothing pending");
}

/// A chip opened while the lab chip is being unplugged, asked for lines
/// after the lab marked itself gone but before that open's own removal ran
/// (the lab's "late" callbacks, in order): programming the hardware fails,
/// and the request must fail with `ChipGone` — not deadlock on the glue's
/// lock (which would also hang the unplug and every later open).
#[test]
fn a_request_that_finds_the_lab_chip_gone_fails_cleanly() {
    use std::sync::Mutex;
    let (_lab, hw, _chip) = setup(4);
    let late_open: Arc<Mutex<Option<Chip>>> = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (hw2, late_open) = (hw.clone(), late_open.clone());
        hw.on_remove(move || {
            // Registered during removal: runs after the lab chip is marked gone,
            // before the removal of the chip opened below (registered after it).
            let slot = late_open.clone();
            hw2.on_remove(move || {
                let c = slot.lock().unwrap().clone().expect("opened");
                let _ = tx.send(c.request_lines(&out(1, false)).map(|_| ()));
            });
            *late_open.lock().unwrap() = Some(open(&hw2).expect("not yet removed"));
        });
    }
    let remover = {
        let hw = hw.clone();
        std::thread::spawn(move || hw.remove())
    };
    let got = rx.recv_timeout(Duration::from_secs(10)).expect("the request hung (deadlock on the glue lock)");
    assert!(matches!(got, Err(GpioError::ChipGone { .. })), "{got:?}");
    remover.join().unwrap();
    let c = late_open.lock().unwrap().take().unwrap();
    assert!(c.is_gone());
}

/// `set_many` naming a line twice is ambiguous (which value?): refused with
/// a typed error, and nothing is set.
#[test]
fn set_many_refuses_an_offset_twice_and_sets_nothing() {
    let (_lab, hw, chip) = setup(4);
    let cfg = RequestConfig::new("t").line(0, LineSettings::output(false)).line(1, LineSettings::output(false));
    let r = chip.request_lines(&cfg).unwrap();
    let e = r.set_many(&[(1, true), (0, false), (1, false)]).unwrap_err();
    assert!(matches!(e, GpioError::InvalidConfig { .. }) && e.to_string().contains("offset 1 twice"), "{e}");
    assert_eq!((hw.value(0), hw.value(1)), (Ok(false), Ok(false)), "nothing set");
}

/// Every open registers for the lab chip's removal; dropping the chip
/// withdraws it, so a program that opens the chip again and again (as a
/// gpiod tool does per command) does not grow the lab's list without end.
#[test]
fn opening_and_dropping_a_chip_leaves_no_removal_callback_behind() {
    let (_lab, hw, chip) = setup(4);
    let registered = hw.remove_callbacks();
    assert_eq!(registered, 1, "the open chip's own registration");
    for _ in 0..100 {
        let again = open(&hw).unwrap();
        assert_eq!(hw.remove_callbacks(), registered + 1);
        drop(again);
    }
    assert_eq!(hw.remove_callbacks(), registered);
    // The registration that stays still works: removal reaches the open chip.
    hw.remove();
    assert!(chip.is_gone());
    assert_eq!(hw.remove_callbacks(), 0);
}
