//! The AD7606 driver on the lab part: values of DC and sine sources,
//! oversampling and BUSY, reads during a conversion, paced sampling with
//! its overruns, and configurations refused before anything is sent.

use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirespeed::backend::lab::{gpio as labgpio, LabSpi};
use wirespeed::gpio::{Edge, LineRequest, LineSettings, RequestConfig};
use wirespeed::spi::{Bus, Policy, SpiDevice};
use wirespeed::time::now;
use wirespeed_drivers::ad7606::{self, Ad7606, Busy, BusyMode, Config, Error, Range, SampleRing};
use wirespeed_lab::devices::ad7606::{Ad7606 as Part, Ad7606Config, Range as PartRange, Signal};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::{Lab, LabConfig};

const CONVST: u32 = 8;
const BUSY: u32 = 9;
const HZ: u32 = 20_000_000;

struct Rig {
    _lab: Lab,
    part: Part,
    gpio: GpioChip,
    bus: Bus,
    spi: SpiDevice,
    chip: wirespeed::gpio::Chip,
}

fn rig(oversampling: u8) -> Rig {
    rig_wired(oversampling, true)
}

fn rig_wired(oversampling: u8, busy_wired: bool) -> Rig {
    let lab = Lab::new(LabConfig::default());
    let part = Part::new(&lab, Ad7606Config { oversampling, ..Ad7606Config::default() }).unwrap();
    let block = lab.spi_controller(Default::default());
    block.attach(0, part.clone());
    let gpio = lab.gpio_chip(GpioChipConfig::default());
    gpio.output_pin(CONVST).connect(part.convst_input(), now());
    if busy_wired {
        part.busy_pin().connect(gpio.input_sink(BUSY), now());
    }
    let chip = labgpio::open(&gpio).unwrap();
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    let spi = bus.device(ad7606::device_config(0, HZ)).unwrap();
    Rig { _lab: lab, part, gpio, bus, spi, chip }
}

impl Rig {
    fn convst(&self) -> LineRequest {
        self.chip.request_lines(&RequestConfig::new("ad7606-convst").line(CONVST, LineSettings::output(false))).unwrap()
    }
    fn busy(&self) -> LineRequest {
        let s = LineSettings::input().edge(Edge::Falling);
        self.chip.request_lines(&RequestConfig::new("ad7606-busy").line(BUSY, s)).unwrap()
    }
    fn driver(&self, oversampling: u8) -> Ad7606 {
        let cfg = Config { oversampling, ..Config::default() };
        Ad7606::new(self.spi.clone(), self.convst(), Busy::Edge(self.busy()), cfg).unwrap()
    }
}

#[test]
fn dc_levels_come_back_within_quantization_on_both_ranges() {
    let r = rig(1);
    let volts = [0.0, 1.0, -1.0, 2.5, -7.25, 9.99, -9.99, 0.333];
    for (ch, v) in volts.iter().enumerate() {
        r.part.set_signal(ch, Signal::Dc(*v));
    }
    let mut adc = r.driver(1);
    assert_eq!(adc.busy_mode(), BusyMode::Poll, "a 3.45 µs conversion is polled");
    let s = adc.sample().unwrap();
    let lsb = 10.0 / 32768.0;
    for (got, want) in s.volts().iter().zip(volts) {
        assert!((got - want).abs() <= lsb, "{got} vs {want}");
    }
    // ±5 V: twice the resolution, and 7.25 V clamps at full scale.
    r.part.set_range(PartRange::Pm5V);
    drop(adc);
    let cfg = Config { range: Range::Pm5V, ..Config::default() };
    let mut adc = Ad7606::new(r.spi.clone(), r.convst(), Busy::Edge(r.busy()), cfg).unwrap();
    let s = adc.sample().unwrap();
    assert!((s.volts()[3] - 2.5).abs() <= 5.0 / 32768.0, "{:?}", s.volts());
    assert_eq!(s.codes[4], -32768);
    assert_eq!(r.part.stats().missed_conversions, 0);
}

#[test]
fn sine_values_match_the_source_at_each_timestamp() {
    let r = rig(1);
    let (amp, f) = (4.0, 1_000.0);
    r.part.set_signal(0, Signal::Sine { amplitude: amp, freq_hz: f, offset: 0.0, phase: 0.0 });
    let mut adc = r.driver(1);
    let ring = SampleRing::new(256).unwrap();
    let rep = adc.run(20_000.0, Some(200), &ring, &AtomicBool::new(false)).unwrap();
    assert_eq!(rep.samples + rep.missed_periods, 200);
    let (mut seen_high, mut n, mut off) = (false, 0, Vec::new());
    while let Some(s) = ring.pop() {
        // The driver's timestamp precedes CONVST's edge by the cost of one
        // GPIO write, unless the thread was preempted between the two: a
        // few such sets are allowed (the Python test takes the 99th
        // percentile for the same reason).
        let t = s.timestamp.as_ns() as f64 * 1e-9;
        let want = amp * (std::f64::consts::TAU * f * t).sin();
        let slope = amp * std::f64::consts::TAU * f * 5e-6; // 5 µs of the steepest slope
        if (s.volts()[0] - want).abs() > slope + 2.0 * 10.0 / 32768.0 {
            off.push((s.volts()[0], want));
        }
        seen_high |= s.volts()[0] > 3.5;
        n += 1;
    }
    assert!(
        off.len() * 50 <= n,
        "{} of {n} sets off the source at their timestamps (value, source): {off:?}",
        off.len()
    );
    assert!(seen_high);
}

#[test]
fn oversampling_lengthens_busy_and_the_driver_sleeps_on_the_edge() {
    let r = rig(16);
    r.part.set_all_signals(Signal::Dc(3.0));
    let mut adc = r.driver(16);
    assert_eq!(adc.busy_mode(), BusyMode::Sleep, "a 66 µs conversion sleeps on BUSY's edge");
    let mut took = Vec::new();
    for _ in 0..5 {
        let t = now();
        let s = adc.sample().unwrap();
        took.push(now().ns_since(t));
        assert_eq!(s.codes[0], 9830);
    }
    took.sort_unstable();
    assert!(took[0] >= 66_000, "{took:?}");
    assert_eq!(adc.busy_stats().slept, 5);
    drop(adc);
    let r1 = rig(1);
    let mut fast = r1.driver(1);
    let mut quick: Vec<u64> = (0..5)
        .map(|_| {
            let t = now();
            fast.sample().unwrap();
            now().ns_since(t)
        })
        .collect();
    quick.sort_unstable();
    assert!(quick[2] < took[2], "OS 1 is quicker: {quick:?} {took:?}");
}

#[test]
fn a_read_during_busy_returns_the_previous_set() {
    let r = rig(64);
    let mut adc = r.driver(64);
    // The read must land within the 257 µs conversion: one that the host
    // delayed past it (a stalled vCPU takes milliseconds) reads the new
    // set, so that try is done again.
    for tries_left in (0..5).rev() {
        r.part.set_all_signals(Signal::Dc(1.0));
        let first = adc.sample().unwrap();
        r.part.set_all_signals(Signal::Dc(-2.0));
        let during_before = r.part.stats().reads_during_busy;
        let t0 = now();
        let t = adc.start().unwrap();
        let during = adc.read_registers(t).unwrap();
        let read_in_time = now().ns_since(t0) < 200_000;
        let after = adc.finish(t).unwrap();
        assert_eq!(after.codes, [-6554; 8]);
        if read_in_time {
            assert_eq!(during.codes, first.codes);
            assert_eq!(r.part.stats().reads_during_busy, during_before + 1);
            return;
        }
        assert!(tries_left > 0, "five reads came later than the 257 µs conversion");
    }
}

#[test]
fn overruns_are_counted_when_the_ring_is_not_drained() {
    let r = rig(1);
    let mut adc = r.driver(1);
    let ring = SampleRing::new(4).unwrap();
    let rep = adc.run(10_000.0, Some(50), &ring, &AtomicBool::new(false)).unwrap();
    assert!(rep.samples > 4, "{rep:?}");
    assert_eq!(rep.ring_full, rep.samples - 4);
    assert_eq!(rep.overruns(), rep.ring_full + rep.missed_periods);
    assert!(rep.overruns() >= 46);
    assert_eq!(ring.dropped(), rep.ring_full);
}

#[test]
fn overruns_are_counted_when_the_sampler_is_too_slow() {
    // Without BUSY the driver waits the maximum conversion time (315 µs at
    // 64×), more than the 320 µs period once the read is added: the sampler
    // falls behind and misses periods.
    let r = rig_wired(64, false);
    let cfg = Config { oversampling: 64, max_lag: Duration::ZERO, ..Config::default() };
    let mut adc = Ad7606::new(r.spi.clone(), r.convst(), Busy::Predicted, cfg).unwrap();
    let ring = SampleRing::new(1024).unwrap();
    let rep = adc.run(3_125.0, Some(300), &ring, &AtomicBool::new(false)).unwrap();
    assert!(rep.missed_periods > 0, "{rep:?}");
    assert_eq!(rep.samples + rep.missed_periods, 300);
    assert_eq!(r.part.stats().missed_conversions, 0, "every conversion made was read");
}

#[test]
fn predicted_busy_reads_the_right_values() {
    let r = rig_wired(2, false);
    r.part.set_all_signals(Signal::Dc(-5.0));
    let cfg = Config { oversampling: 2, ..Config::default() };
    let mut adc = Ad7606::new(r.spi.clone(), r.convst(), Busy::Predicted, cfg).unwrap();
    assert_eq!(adc.busy_mode(), BusyMode::Predicted);
    for _ in 0..20 {
        assert_eq!(adc.sample().unwrap().codes, [-16384; 8]);
    }
    let s = r.part.stats();
    assert_eq!((s.reads_during_busy, s.missed_conversions, s.conversions), (0, 0, 20));
}

/// Waits until the sampler has pushed `n` sets into its ring (they stay
/// there), or fails after a deadline far beyond any host's stall: how fast
/// the sets come is the host's, what they hold is the test's.
fn wait_for_sets(cont: &ad7606::Continuous, n: u64) {
    let deadline = now().add_ns(10_000_000_000);
    while cont.ring().pushed() < n {
        assert!(now() < deadline, "only {} sets in 10 s", cont.ring().pushed());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn continuous_sampling_fills_the_ring_with_timestamped_sets() {
    let r = rig(1);
    r.part.set_all_signals(Signal::Dc(0.5));
    let adc = r.driver(1);
    let cont = adc.start_continuous(10_000.0, 4096).unwrap();
    wait_for_sets(&cont, 100);
    let (adc, rep) = cont.stop().unwrap();
    assert!(rep.samples >= 100, "{rep:?}");
    assert_eq!(adc.samples(), rep.samples);
    // Every period of the 100 µs grid is a set or a missed period (a host
    // that stalls the sampler costs periods, never the grid), and no set
    // comes before its period's deadline.
    assert_eq!(rep.samples + rep.missed_periods, rep.periods, "{rep:?}");
    assert!((rep.periods - 1) * rep.period_ns <= rep.elapsed_ns, "{rep:?}");
    assert!(rep.achieved_hz() < 10_500.0, "{rep:?}");
}

#[test]
fn continuous_ring_drains_into_flat_arrays() {
    let r = rig(1);
    r.part.set_all_signals(Signal::Dc(0.5));
    let cont = r.driver(1).start_continuous(10_000.0, 64).unwrap();
    wait_for_sets(&cont, 64);
    let mut codes = vec![0i16; 64 * 8];
    let mut ts = vec![0u64; 64];
    let n = cont.ring().drain_into(&mut codes, &mut ts);
    let over = cont.overruns();
    let (_adc, rep) = cont.stop().unwrap();
    assert_eq!(n, 64, "the ring held the 64 sets pushed");
    assert!(codes[..n * 8].iter().all(|&c| c == 1638), "{:?}", &codes[..16]);
    assert!(ts[..n].windows(2).all(|w| w[1] > w[0]));
    // On the 100 µs grid: no set before its period's deadline, and the
    // first at most `max_lag` (1 ms by default) after its own.
    assert!(ts[n - 1] - ts[0] + 1_000_000 >= (n as u64 - 1) * 100_000, "{:?}", &ts[..n]);
    assert!(rep.overruns() >= over);
}

#[test]
fn bad_configurations_are_typed_errors_and_nothing_reaches_the_bus() {
    let r = rig(1);
    let bad_os = Config { oversampling: 3, ..Config::default() };
    let e = Ad7606::new(r.spi.clone(), r.convst(), Busy::Edge(r.busy()), bad_os).unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { what: "oversampling ratio", .. }), "{e}");
    assert!(e.to_string().contains("1, 2, 4, 8, 16, 32, 64"), "{e}");
    // BUSY without edge detection.
    let plain = r.chip.request_lines(&RequestConfig::new("b").line(BUSY, LineSettings::input())).unwrap();
    let e = Ad7606::new(r.spi.clone(), r.convst(), Busy::Edge(plain), Config::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { what: "BUSY line", .. }), "{e}");
    // CONVST as an input.
    let input = r.chip.request_lines(&RequestConfig::new("c").line(CONVST, LineSettings::input())).unwrap();
    let e = Ad7606::new(r.spi.clone(), input, Busy::Predicted, Config::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { what: "CONVST line", .. }), "{e}");
    // A clock above the part's SCLK limit.
    let fast = r.bus.device(ad7606::device_config(0, 40_000_000)).unwrap();
    let e = Ad7606::new(fast, r.convst(), Busy::Predicted, Config::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { what: "SPI clock", .. }), "{e}");
    // A rate the part cannot do, and a ring of nothing.
    let mut adc = r.driver(1);
    let ring = SampleRing::new(8).unwrap();
    let e = adc.run(250_000.0, Some(1), &ring, &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(e, Error::InvalidConfig { what: "sample rate", .. }), "{e}");
    assert!(matches!(SampleRing::new(0), Err(Error::InvalidConfig { .. })));
    assert_eq!(r.bus.stats().messages, 0);
    let s = r.part.stats();
    assert_eq!((s.reads, s.conversions), (0, 0));
}

#[test]
fn busy_that_never_falls_is_a_timeout() {
    let r = rig_wired(1, false);
    r.gpio.drive_external(BUSY, Some(true), now());
    let cfg = Config { busy_slack: Duration::from_millis(2), ..Config::default() };
    let mut adc = Ad7606::new(r.spi.clone(), r.convst(), Busy::Edge(r.busy()), cfg).unwrap();
    match adc.sample() {
        Err(Error::BusyTimeout { waited_ns, max_conversion_ns }) => {
            assert_eq!(max_conversion_ns, 4_150);
            assert!(waited_ns >= 2_000_000, "{waited_ns}");
        }
        other => panic!("{other:?}"),
    }
}
