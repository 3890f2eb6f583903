//! The model driven on its pins and its serial face with explicit
//! instants, and once in real time through a GPIO chip.

use super::*;
use crate::gpio::{EdgeDetect, GpioChipConfig, LineSetup, Pull};
use crate::spi::SpiDeviceModel;
use crate::LabConfig;
use std::time::Duration;
use wirespeed_time::now;

fn part(cfg: Ad7606Config) -> (Lab, Ad7606) {
    let lab = Lab::new(LabConfig::default());
    let dev = Ad7606::new(&lab, cfg).unwrap();
    (lab, dev)
}

/// One CS window of 16 bytes starting at `at`; the codes it shifted.
fn read(dev: &mut Ad7606, at: Instant) -> [i16; CHANNELS] {
    dev.chip_select(true, at);
    let mut bytes = [0u8; FRAME_BYTES];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = dev.exchange(0, 8, at.add_ns(400 * i as u64)) as u8;
    }
    dev.chip_select(false, at.add_ns(6_400));
    std::array::from_fn(|ch| i16::from_be_bytes([bytes[2 * ch], bytes[2 * ch + 1]]))
}

fn convst(dev: &Ad7606, at: Instant) {
    dev.drive_convst(true, at);
    dev.drive_convst(false, at.add_ns(25));
}

#[test]
fn dc_levels_come_back_as_codes_with_clamping_and_both_ranges() {
    let (_lab, mut dev) = part(Ad7606Config::default());
    let volts = [0.0, 2.5, -2.5, 9.9997, -10.0, 12.0, -12.0, 0.000_1];
    for (ch, v) in volts.iter().enumerate() {
        dev.set_signal(ch, Signal::Dc(*v));
    }
    let t0 = now();
    convst(&dev, t0);
    let codes = read(&mut dev, t0.add_ns(5_000));
    assert_eq!(codes, [0, 8192, -8192, 32767, -32768, 32767, -32768, 0]);
    dev.set_range(Range::Pm5V);
    convst(&dev, t0.add_ns(20_000));
    let codes = read(&mut dev, t0.add_ns(25_000));
    assert_eq!(&codes[..3], &[0, 16384, -16384]);
    assert_eq!(dev.stats().conversions, 2);
}

#[test]
fn busy_lasts_the_table_time_and_a_read_during_busy_gets_the_previous_set() {
    let (_lab, mut dev) = part(Ad7606Config { oversampling: 4, ..Ad7606Config::default() });
    dev.set_all_signals(Signal::Dc(1.0));
    let t0 = now();
    convst(&dev, t0);
    let t_conv = timing::conversion_ns(4, Corner::Typical).unwrap();
    assert!(dev.lock().is_busy(t0.add_ns(t_conv - 1)));
    // During BUSY: the registers still hold the reset value.
    assert_eq!(read(&mut dev, t0.add_ns(100)), [0; CHANNELS]);
    // A CONVST during BUSY is ignored.
    convst(&dev, t0.add_ns(1_000));
    assert!(!dev.lock().is_busy(t0.add_ns(t_conv)));
    assert_eq!(read(&mut dev, t0.add_ns(t_conv + 10)), [3277; CHANNELS]);
    let s = dev.stats();
    assert_eq!((s.conversions, s.convst_ignored, s.reads_during_busy, s.complete_reads), (1, 1, 1, 2));
}

#[test]
fn results_overwritten_before_a_complete_read_are_counted_missed() {
    let (_lab, mut dev) = part(Ad7606Config::default());
    let t0 = now();
    for k in 0..3 {
        convst(&dev, t0.add_ns(k * 10_000));
    }
    // Three conversions, none read: two were overwritten.
    let _ = read(&mut dev, t0.add_ns(30_000));
    assert_eq!(dev.stats().missed_conversions, 2);
    // A partial read does not count as taking them.
    convst(&dev, t0.add_ns(40_000));
    dev.chip_select(true, t0.add_ns(45_000));
    dev.exchange(0, 8, t0.add_ns(45_000));
    dev.chip_select(false, t0.add_ns(46_000));
    convst(&dev, t0.add_ns(50_000));
    let _ = read(&mut dev, t0.add_ns(55_000));
    assert_eq!(dev.stats().missed_conversions, 3);
}

#[test]
fn sine_is_sampled_at_the_convst_instant_and_oversampling_averages() {
    let (_lab, mut dev) = part(Ad7606Config::default());
    let sine = Signal::Sine { amplitude: 5.0, freq_hz: 1_000.0, offset: 0.0, phase: 0.0 };
    dev.set_signal(0, sine);
    let t0 = now();
    convst(&dev, t0);
    let got = read(&mut dev, t0.add_ns(5_000))[0];
    let want = dev.code_of(5.0 * (std::f64::consts::TAU * 1_000.0 * t0.as_ns() as f64 * 1e-9).sin());
    assert!((i32::from(got) - i32::from(want)).abs() <= 1, "{got} {want}");
    // With 64× oversampling of a 10 kHz sine (257 µs ≈ 2.6 periods) the mean is small.
    dev.set_oversampling(64).unwrap();
    dev.set_signal(0, Signal::Sine { amplitude: 5.0, freq_hz: 10_000.0, offset: 0.0, phase: 0.0 });
    convst(&dev, t0.add_ns(10_000));
    let avg = read(&mut dev, t0.add_ns(400_000))[0];
    assert!(avg.abs() < 8_000, "{avg}");
    assert_eq!(dev.set_oversampling(3), Err(BadOversampling(3)));
}

#[test]
fn reset_aborts_and_clears_and_miso_fault_sticks() {
    let (_lab, mut dev) = part(Ad7606Config::default());
    dev.set_all_signals(Signal::Dc(5.0));
    let t0 = now();
    convst(&dev, t0);
    assert_eq!(read(&mut dev, t0.add_ns(5_000)), [16384; CHANNELS]);
    dev.reset();
    assert_eq!(dev.output(), [0; CHANNELS]);
    dev.set_miso_stuck(Some(true));
    assert_eq!(read(&mut dev, now()), [-1; CHANNELS]);
    assert!(
        Ad7606::new(&Lab::new(LabConfig::default()), Ad7606Config { oversampling: 0, ..Default::default() }).is_err()
    );
}

#[test]
fn busy_falls_on_a_gpio_input_in_real_time() {
    let lab = Lab::new(LabConfig::default());
    let dev = Ad7606::new(&lab, Ad7606Config { oversampling: 64, ..Ad7606Config::default() }).unwrap();
    let gpio = lab.gpio_chip(GpioChipConfig::default());
    gpio.configure(9, &LineSetup::input(Pull::None, EdgeDetect::Both), now()).unwrap();
    dev.busy_pin().connect(gpio.input_sink(9), now());
    gpio.configure(8, &LineSetup::output(false), now()).unwrap();
    gpio.output_pin(8).connect(dev.convst_input(), now());
    gpio.set_output(8, true).unwrap();
    assert!(gpio.value(9).unwrap(), "BUSY rises with CONVST");
    let t_conv = dev.conversion_ns();
    std::thread::sleep(Duration::from_nanos(t_conv) + Duration::from_millis(20));
    // Nobody touched the model: the interrupt thread lowered BUSY.
    assert!(!gpio.value(9).unwrap());
    assert_eq!(dev.lock().stats.conversions, 1);
}
