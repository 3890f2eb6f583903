//! Target `device_config`: [`DeviceConfig`] validation (`Bus::device`)
//! against any controller capabilities. A configuration is refused with a
//! typed [`InvalidMessage`](wirespeed::spi::InvalidMessage) or accepted;
//! one accepted has a chip select the controller has, flags it supports, a
//! word size it shifts and a clock within its range, and a one-byte
//! message on it reaches the driver only with values its capabilities allow.

use crate::fake_controller::{caps, FakeController};
use arbitrary::{Result, Unstructured};
use wirespeed::spi::{Bus, DeviceConfig, Mode, ModeFlags, Policy, Transfer};

/// A configuration from the input: any field, any value.
pub fn config(u: &mut Unstructured<'_>) -> Result<DeviceConfig> {
    let cs = u.int_in_range(0u8..=9)?;
    let mode = *u.choose(&[Mode::Mode0, Mode::Mode1, Mode::Mode2, Mode::Mode3])?;
    let speed = crate::support::pick(u, &[0, 1, 1_000, 1_000_000, 20_000_000, 100_000_000, u32::MAX])?;
    let max = crate::support::pick(u, &[0, speed, speed / 2, speed.saturating_mul(2), u32::MAX])?;
    let bits = crate::support::pick(u, &[0, 1, 7, 8, 9, 12, 16, 24, 32, 33, 64, 255])?;
    let flags = if u.arbitrary()? { ModeFlags::NONE } else { ModeFlags::from_bits_truncate(u.arbitrary()?) };
    // CS times are waited for real: keep them short.
    let setup = u.int_in_range(0u32..=1_000)?;
    let hold = u.int_in_range(0u32..=1_000)?;
    let inactive = u.int_in_range(0u32..=1_000)?;
    Ok(DeviceConfig::new(cs, speed)
        .max_speed_hz(max)
        .mode(mode)
        .flags(flags)
        .bits_per_word(bits)
        .cs_timing_ns(setup, hold, inactive))
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(caps), Ok(cfg)) = (caps(&mut u), config(&mut u)) else { return };
    let (controller, log) = FakeController::new(caps.clone());
    let bus = Bus::new(controller, Policy::fast());
    let Ok(dev) = bus.device(cfg.clone()) else { return };
    let wirespeed::spi::ChipSelect::Native(cs) = cfg.cs else { unreachable!("native chip selects only") };
    assert!(cs < caps.num_cs, "chip select {cs} of {}", caps.num_cs);
    assert!(caps.mode_flags.contains(cfg.flags), "flags {:?} of {:?}", cfg.flags, caps.mode_flags);
    assert!(caps.supports_bits(cfg.bits_per_word), "{} bits, mask {:#x}", cfg.bits_per_word, caps.bits_per_word_mask);
    assert!(cfg.speed_hz > 0, "a device clock of 0 Hz");
    let word = crate::fake_controller::wirespeed_word_bytes(cfg.bits_per_word);
    let tx = vec![0x5Au8; word];
    let mut rx = vec![0u8; word];
    let result = dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]);
    let log = log.lock().unwrap_or_else(|e| e.into_inner());
    assert!(log.violations.is_empty(), "{:?} for {cfg:?} on {caps:?}", log.violations);
    if result.is_ok() {
        assert_eq!(rx, tx, "the loopback's echo");
    }
}
