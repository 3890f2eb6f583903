use super::*;
use crate::LabConfig;
use std::sync::mpsc;
use std::time::Duration;

fn chip(lines: u32) -> (Lab, GpioChip) {
    let lab = Lab::new(LabConfig::default());
    let chip = lab.gpio_chip(GpioChipConfig { lines, ..GpioChipConfig::default() });
    (lab, chip)
}

fn listen(chip: &GpioChip, offset: u32) -> mpsc::Receiver<LineEvent> {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    chip.set_listener(
        offset,
        Some(Arc::new(move |e| {
            let _ = tx.lock().unwrap().send(e);
        })),
    )
    .unwrap();
    rx
}

struct Probe(Mutex<Vec<(bool, Instant)>>);
impl PinSink for Probe {
    fn drive(&self, high: bool, at: Instant) {
        self.0.lock().unwrap().push((high, at));
    }
}

#[test]
fn outputs_drive_the_pad_devices_listen_to() {
    let (_lab, chip) = chip(8);
    chip.configure(2, &LineSetup::output(false), now()).unwrap();
    let probe = Arc::new(Probe(Mutex::new(Vec::new())));
    chip.output_pin(2).connect(probe.clone(), now());
    chip.set_output(2, true).unwrap();
    chip.set_output(2, true).unwrap();
    chip.set_output(2, false).unwrap();
    let seen: Vec<bool> = probe.0.lock().unwrap().iter().map(|p| p.0).collect();
    assert_eq!(seen, vec![false, true, false], "initial level, then real changes only");
    assert!(!chip.value(2).unwrap());
}

#[test]
fn pulls_and_external_drive_decide_an_input() {
    let (_lab, chip) = chip(4);
    chip.configure(0, &LineSetup::input(Pull::Up, EdgeDetect::None), now()).unwrap();
    assert!(chip.value(0).unwrap());
    chip.drive_external(0, Some(false), now());
    assert!(!chip.value(0).unwrap());
    chip.drive_external(0, None, now());
    assert!(chip.value(0).unwrap(), "released: the pull-up wins");
    chip.configure(0, &LineSetup::input(Pull::Down, EdgeDetect::None), now()).unwrap();
    assert!(!chip.value(0).unwrap());
}

#[test]
fn open_drain_releases_high_to_the_pull() {
    let (_lab, chip) = chip(4);
    let setup =
        LineSetup { output: true, value: true, drive: Drive::OpenDrain, pull: Pull::Down, ..LineSetup::default() };
    chip.configure(1, &setup, now()).unwrap();
    assert!(!chip.value(1).unwrap(), "released, pulled down");
    chip.drive_external(1, Some(true), now());
    assert!(chip.value(1).unwrap());
    chip.set_output(1, false).unwrap();
    assert!(!chip.value(1).unwrap(), "driven low beats the device");
}

#[test]
fn device_pin_raises_edges_stamped_with_its_instant() {
    let (_lab, chip) = chip(4);
    chip.configure(3, &LineSetup::input(Pull::Up, EdgeDetect::Falling), now()).unwrap();
    let rx = listen(&chip, 3);
    let int = Pin::new("int", true);
    int.connect(chip.input_sink(3), now());
    let t = now();
    int.set(false, t);
    int.set(true, t.add_ns(10));
    let e = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert_eq!(e, LineEvent { offset: 3, rising: false, at: t });
    assert!(rx.recv_timeout(Duration::from_millis(20)).is_err(), "rising edges are not asked for");
}

#[test]
fn debounce_swallows_glitches_and_reports_stable_levels() {
    let (_lab, chip) = chip(4);
    let setup = LineSetup { debounce_ns: 2_000_000, ..LineSetup::input(Pull::Down, EdgeDetect::Both) };
    chip.configure(0, &setup, now()).unwrap();
    let rx = listen(&chip, 0);
    // A 100 µs glitch: never stable for 2 ms. Stamped 20 ms ahead, so that
    // a thread stalled between the two drives (valgrind) still glitches.
    let t = now().add_ns(20_000_000);
    chip.drive_external(0, Some(true), t);
    chip.drive_external(0, Some(false), t.add_ns(100_000));
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "a glitch was reported");
    let t2 = now();
    chip.drive_external(0, Some(true), t2);
    let e = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert!(e.rising);
    assert_eq!(e.at, t2.add_ns(2_000_000), "stamped when the level had been stable for the period");
    assert!(now() >= e.at, "reported before the debounce period passed");
}

#[test]
fn removal_runs_callbacks_first_then_fails_and_counts_accesses() {
    let (_lab, chip) = chip(4);
    chip.configure(0, &LineSetup::output(false), now()).unwrap();
    let (tx, rx) = mpsc::channel();
    let c2 = chip.clone();
    chip.on_remove(move || {
        // The chip still works while the callbacks run (software lets go here).
        tx.send(c2.set_output(0, true)).unwrap();
    });
    chip.remove();
    assert_eq!(rx.recv().unwrap(), Ok(()));
    assert!(chip.is_removed());
    assert_eq!(chip.accesses_after_removal(), 0);
    assert_eq!(chip.set_output(0, false), Err(LabGpioError::Removed));
    assert_eq!(chip.value(0), Err(LabGpioError::Removed));
    assert_eq!(chip.accesses_after_removal(), 2);
    chip.remove();
}

#[test]
fn bad_offsets_are_typed_errors() {
    let (_lab, chip) = chip(4);
    let e = chip.set_output(4, true).unwrap_err();
    assert_eq!(e, LabGpioError::OffsetOutOfRange { offset: 4, lines: 4 });
    assert!(e.to_string().contains("0..4"));
}

/// A device that drives a line and then lets it float (the level stays) has
/// not changed the level: the debounce period runs from the edge, not from
/// the release, and the event is stamped debounce after the edge.
#[test]
fn debounce_runs_from_the_edge_not_from_a_later_update_that_keeps_the_level() {
    let (_lab, chip) = chip(4);
    let setup = LineSetup { debounce_ns: 2_000_000, ..LineSetup::input(Pull::None, EdgeDetect::Both) };
    chip.configure(0, &setup, now()).unwrap();
    assert!(!chip.value(0).unwrap());
    let rx = listen(&chip, 0);
    let t = now();
    chip.drive_external(0, Some(true), t);
    chip.drive_external(0, None, t.add_ns(500_000));
    assert!(chip.value(0).unwrap(), "an undriven, unbiased input keeps its level");
    let e = rx.recv_timeout(Duration::from_secs(1)).unwrap();
    assert!(e.rising);
    assert_eq!(e.at, t.add_ns(2_000_000), "stamped debounce after the edge (the level never changed since)");
    assert!(rx.recv_timeout(Duration::from_millis(20)).is_err(), "one edge, one event");
}

/// A push-pull output's fast-path writes bypass the line's slow state, so
/// when it turns into a debounced input the last level change the slow state
/// knows of may lie long before; the debounce period cannot start before
/// edge detection does.
#[test]
fn debounce_of_an_output_turned_input_starts_at_the_reconfiguration() {
    let (_lab, chip) = chip(4);
    chip.configure(0, &LineSetup::output(false), now()).unwrap();
    chip.set_output(0, true).unwrap(); // the fast path: no lock, no update
    std::thread::sleep(Duration::from_millis(5));
    let rx = listen(&chip, 0);
    let setup = LineSetup { debounce_ns: 2_000_000, ..LineSetup::input(Pull::None, EdgeDetect::Both) };
    let t = now();
    chip.configure(0, &setup, t).unwrap();
    assert!(chip.value(0).unwrap(), "an undriven, unbiased input keeps its level");
    // The debounced level catches up with the high line: one rising edge,
    // reported once the debounce period has run from the reconfiguration.
    let e = rx.recv_timeout(Duration::from_millis(200)).expect("no edge event after the debounce period");
    assert!(e.rising);
    assert!(e.at >= t.add_ns(2_000_000), "an edge stamped {} ns before edge detection began", t.ns_since(e.at));
}

/// Two unplugs at once: the second must not return (nor mark the chip gone)
/// while the first is still running the callbacks in which software lets go.
#[test]
fn a_second_remove_waits_for_the_first_to_finish() {
    let (_lab, chip) = chip(4);
    let (entered_tx, entered_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    chip.on_remove(move || {
        entered_tx.send(()).unwrap();
        let _ = go_rx.recv_timeout(Duration::from_secs(10));
    });
    let first = {
        let c = chip.clone();
        std::thread::spawn(move || c.remove())
    };
    entered_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let second = {
        let c = chip.clone();
        std::thread::spawn(move || {
            c.remove();
            c.is_removed()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let early = second.is_finished();
    let marked = chip.is_removed();
    go_tx.send(()).unwrap();
    first.join().unwrap();
    assert!(second.join().unwrap(), "removed once the second remove returned");
    assert!(!early, "the second remove returned while the first one's callbacks still ran");
    assert!(!marked, "the chip was marked gone while software was still letting go");
}

#[test]
fn a_chip_of_no_lines_or_too_many_is_refused_saying_what_is_allowed() {
    let lab = Lab::new(LabConfig::default());
    let max = GpioChipConfig::MAX_LINES;
    for lines in [0, max + 1, u32::MAX] {
        let e = lab.try_gpio_chip(GpioChipConfig { lines, ..GpioChipConfig::default() }).unwrap_err();
        assert_eq!(e, GpioConfigError::Lines { lines });
        assert!(e.to_string().contains(&format!("{lines} lines; allowed: 1..={max}")), "{e}");
    }
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lab.gpio_chip(GpioChipConfig { lines: 0, ..GpioChipConfig::default() })
    }));
    let message = panic.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("0 lines"), "gpio_chip panics saying why: {message}");
    // The limits themselves are chips, with every line usable.
    for lines in [1, max] {
        let chip = lab.try_gpio_chip(GpioChipConfig { lines, ..GpioChipConfig::default() }).unwrap();
        chip.set_output(lines - 1, true).unwrap();
        assert!(chip.configure(lines, &LineSetup::output(true), now()).is_err(), "line {lines} does not exist");
    }
}

#[test]
fn an_announced_drive_shows_in_level_reads_from_its_instant_until_superseded() {
    use crate::pin::Pin;
    let lab = Lab::new(LabConfig::default());
    let chip = lab.gpio_chip(GpioChipConfig::default());
    chip.configure(4, &LineSetup::input(Pull::None, EdgeDetect::None), now()).unwrap();
    let busy = Pin::new("busy", true);
    busy.connect(chip.input_sink(4), now());
    let due = now().add_ns(2_000_000);
    busy.expect(false, due);
    // Read, then look at the clock: a low level read before `due` would be
    // early (a slow run, e.g. under valgrind, may read after `due`).
    let level = chip.value(4).unwrap();
    assert!(level || now() >= due, "not before its instant");
    std::thread::sleep(std::time::Duration::from_millis(3));
    assert!(!chip.value(4).unwrap(), "from its instant, with nobody driving the pin");
    // A real drive supersedes an announcement not yet due.
    busy.set(false, now());
    busy.set(true, now());
    busy.expect(false, now().add_ns(1_000_000));
    busy.set(true, now());
    busy.set(false, now());
    busy.set(true, now());
    std::thread::sleep(std::time::Duration::from_millis(2));
    assert!(chip.value(4).unwrap(), "the superseded announcement is forgotten");
}
