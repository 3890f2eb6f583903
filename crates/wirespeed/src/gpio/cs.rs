//! [`GpioCs`]: a GPIO output line as the chip select of an SPI device.
//!
//! Any output line of any chip can select any device: give the device's
//! [`DeviceConfig`](crate::spi::DeviceConfig) a `GpioCs` with
//! [`DeviceConfig::gpio_cs`](crate::spi::DeviceConfig::gpio_cs). The SPI core
//! drives it exactly as it drives a native chip select, with the device's
//! CS setup, hold and inactive times measured from the edges.
//!
//! ```
//! # #[cfg(feature = "lab")] {
//! use std::sync::Arc;
//! use wirespeed::gpio::{CsPolarity, GpioCs};
//! use wirespeed::spi::DeviceConfig;
//! use wirespeed_lab::{Lab, LabConfig, gpio::GpioChipConfig};
//! let lab = Lab::new(LabConfig::default());
//! let hw = lab.gpio_chip(GpioChipConfig::default());
//! let chip = wirespeed::backend::lab::gpio::open(&hw).unwrap();
//! let cs = GpioCs::request(&chip, 5, "adc-cs", CsPolarity::ActiveLow).unwrap();
//! assert!(hw.value(5).unwrap(), "an active-low CS rests high");
//! let cfg = DeviceConfig::new(0, 10_000_000).gpio_cs(Arc::new(cs));
//! # let _ = cfg; }
//! ```
//!
//! # Active level
//!
//! The value `GpioCs` writes to the line is the **nCS signal**: logical 1
//! when the device is *not* selected, logical 0 while it is. So:
//!
//! | the line is requested…         | CS on the wire |
//! |---|---|
//! | normally (`active_low: false`) | **active-low** (the usual SPI `nCS`) |
//! | with `active_low: true`        | **active-high** |
//!
//! [`GpioCs::request`] does that for you from a [`CsPolarity`]; with
//! [`GpioCs::new`] on your own [`LineRequest`], the line's `active_low`
//! setting decides as in the table. This differs from Linux's `cs-gpios`,
//! where the GPIO value means "asserted" and a device-tree `GPIO_ACTIVE_LOW`
//! flag is what makes the wire active-low: here an unconfigured line is
//! already right for the common active-low device.
//!
//! # Sharing and cost
//!
//! A [`LineRequest`] is `Send` but not `Sync` (its removal guard is a plain
//! store to a slot owned by one thread at a time), while [`CsPin`] must be
//! `Sync`. The bus lock serializes chip-select changes of one bus, but
//! nothing stops the same `Arc<GpioCs>` from selecting devices on two buses
//! or being driven by hand, so that invariant cannot be proven from here.
//! `GpioCs` therefore keeps the request behind a `Mutex`: never contended in
//! normal use (one bus lock already excludes other users), it costs one
//! uncontended atomic read-modify-write to take and one to release per edge,
//! on a cache line only the CS-driving thread touches; the removal guard
//! inside stays the plain store and load. `wirespeed bench gpio` measures
//! it (`spi_gpio_cs.cs_set_ns` against `spi_gpio_cs.line_set_ns`).
//!
//! # Removal
//!
//! Once the line's chip is removed every edge fails, and the SPI transfer
//! with it: [`SpiError::ChipSelect`](crate::spi::SpiError::ChipSelect)
//! carries the GPIO error's text (`GPIO line 5: GPIO chip … is gone`).
//! Nothing is shifted: the core asserts CS before the first clock and stops
//! when that fails.

use super::config::{Direction, LineSettings, RequestConfig};
use super::error::GpioError;
use super::request::LineRequest;
use super::Chip;
use crate::spi::CsPin;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

/// The level that selects the device on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CsPolarity {
    /// Low selects (`nCS`; nearly every SPI device).
    #[default]
    ActiveLow,
    /// High selects.
    ActiveHigh,
}

/// A requested GPIO output line used as a chip select (see the module docs).
pub struct GpioCs {
    line: Mutex<LineRequest>,
    offset: u32,
    polarity: CsPolarity,
}

impl fmt::Debug for GpioCs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpioCs").field("offset", &self.offset).field("polarity", &self.polarity).finish()
    }
}

impl GpioCs {
    /// Requests line `offset` of `chip` as an output chip select with
    /// `polarity` on the wire, driven inactive from the start.
    pub fn request(chip: &Chip, offset: u32, consumer: &str, polarity: CsPolarity) -> Result<GpioCs, GpioError> {
        // The line's logical value is nCS: 1 = not selected, whatever the polarity.
        let settings = LineSettings::output(true).active_low(polarity == CsPolarity::ActiveHigh);
        let req = chip.request_lines(&RequestConfig::new(consumer).line(offset, settings))?;
        GpioCs::new(req, offset)
    }

    /// Uses line `offset` of an existing request (which it keeps) as a chip
    /// select. The line must be an output; it is driven inactive now. Its
    /// `active_low` setting gives the polarity: see the module docs.
    pub fn new(line: LineRequest, offset: u32) -> Result<GpioCs, GpioError> {
        let settings = line.settings(offset)?;
        if settings.direction != Direction::Output {
            return Err(GpioError::WrongDirection { offset, needs: "an output to serve as a chip select" });
        }
        line.set_value(offset, true)?;
        let polarity = if settings.active_low { CsPolarity::ActiveHigh } else { CsPolarity::ActiveLow };
        Ok(GpioCs { line: Mutex::new(line), offset, polarity })
    }

    /// The line's offset on its chip.
    pub fn offset(&self) -> u32 {
        self.offset
    }

    /// The level that selects the device on the wire.
    pub fn polarity(&self) -> CsPolarity {
        self.polarity
    }

    fn lock(&self) -> MutexGuard<'_, LineRequest> {
        // A panic while holding the lock cannot leave the request half-changed
        // (set_value is one backend call), so a poisoned lock is still usable.
        self.line.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Selects (`true`) or deselects the device.
    #[inline]
    pub fn set(&self, active: bool) -> Result<(), GpioError> {
        self.lock().set_value(self.offset, !active)
    }

    /// Whether the device is selected now, as the line reads back.
    pub fn is_active(&self) -> Result<bool, GpioError> {
        self.lock().value(self.offset).map(|v| !v)
    }
}

impl CsPin for GpioCs {
    #[inline]
    fn set_active(&self, active: bool) -> Result<(), String> {
        self.set(active).map_err(|e| cs_error(self.offset, &e))
    }
}

#[cold]
fn cs_error(offset: u32, e: &GpioError) -> String {
    format!("GPIO line {offset}: {e}")
}

#[cfg(all(test, not(loom), feature = "lab"))]
mod tests {
    use super::*;
    use crate::backend::lab::gpio::open;
    use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
    use wirespeed_lab::{Lab, LabConfig};

    fn chip() -> (Lab, GpioChip, Chip) {
        let lab = Lab::new(LabConfig::default());
        let hw = lab.gpio_chip(GpioChipConfig::default());
        let chip = open(&hw).unwrap();
        (lab, hw, chip)
    }

    #[test]
    fn wire_levels_follow_the_polarity() {
        let (_lab, hw, chip) = chip();
        let low = GpioCs::request(&chip, 1, "cs-low", CsPolarity::ActiveLow).unwrap();
        let high = GpioCs::request(&chip, 2, "cs-high", CsPolarity::ActiveHigh).unwrap();
        assert_eq!((low.polarity(), high.polarity()), (CsPolarity::ActiveLow, CsPolarity::ActiveHigh));
        assert_eq!((hw.value(1), hw.value(2)), (Ok(true), Ok(false)), "both start inactive");
        low.set_active(true).unwrap();
        high.set_active(true).unwrap();
        assert_eq!((hw.value(1), hw.value(2)), (Ok(false), Ok(true)));
        assert_eq!((low.is_active(), high.is_active()), (Ok(true), Ok(true)));
        low.set_active(false).unwrap();
        high.set_active(false).unwrap();
        assert_eq!((hw.value(1), hw.value(2)), (Ok(true), Ok(false)));
    }

    #[test]
    fn an_own_request_keeps_its_active_low_meaning_and_starts_inactive() {
        let (_lab, hw, chip) = chip();
        let cfg = RequestConfig::new("two")
            .line(3, LineSettings::output(false))
            .line(4, LineSettings::output(false).active_low(true));
        let req = chip.request_lines(&cfg).unwrap();
        assert_eq!((hw.value(3), hw.value(4)), (Ok(false), Ok(true)), "requested at logical 0");
        let cs = GpioCs::new(req, 4).unwrap();
        assert_eq!(cs.polarity(), CsPolarity::ActiveHigh);
        assert_eq!(hw.value(4), Ok(false), "driven inactive (low) at once");
        cs.set_active(true).unwrap();
        assert_eq!(hw.value(4), Ok(true));
    }

    #[test]
    fn unusable_lines_are_refused_with_what_was_wrong() {
        let (_lab, _hw, chip) = chip();
        let input = chip.request_lines(&RequestConfig::new("in").line(6, LineSettings::input())).unwrap();
        let e = GpioCs::new(input, 6).unwrap_err();
        assert!(matches!(e, GpioError::WrongDirection { offset: 6, .. }), "{e}");
        let out = chip.request_lines(&RequestConfig::new("out").line(7, LineSettings::output(true))).unwrap();
        let e = GpioCs::new(out, 8).unwrap_err();
        assert!(matches!(e, GpioError::NotRequested { offset: 8, .. }), "{e}");
        let _holder = chip.request_lines(&RequestConfig::new("holder").line(7, LineSettings::output(true))).unwrap();
        let e = GpioCs::request(&chip, 7, "again", CsPolarity::ActiveLow).unwrap_err();
        assert!(matches!(e, GpioError::LineBusy { offset: 7, .. }), "{e}");
    }

    #[test]
    fn removal_turns_every_edge_into_an_error_naming_line_and_chip() {
        let (_lab, hw, chip) = chip();
        let cs = GpioCs::request(&chip, 0, "cs", CsPolarity::ActiveLow).unwrap();
        hw.remove();
        let e = cs.set_active(true).unwrap_err();
        assert!(e.starts_with("GPIO line 0: ") && e.contains("gone"), "{e}");
        assert_eq!(hw.accesses_after_removal(), 0);
    }

    /// The `Mutex` is what makes a shared `GpioCs` sound: hammer one from
    /// several threads (as two buses sharing a line would) while the chip is
    /// removed. Each thread checks the line reads back what it wrote while it
    /// held the lock; afterwards every access fails and none reached the chip.
    #[test]
    fn shared_use_from_threads_survives_removal() {
        for _ in 0..20 {
            let (_lab, hw, chip) = chip();
            let cs = std::sync::Arc::new(GpioCs::request(&chip, 0, "cs", CsPolarity::ActiveLow).unwrap());
            let start = std::sync::Barrier::new(4);
            std::thread::scope(|s| {
                for t in 0..3 {
                    let (cs, start) = (&cs, &start);
                    s.spawn(move || {
                        start.wait();
                        let mut ok = 0u32;
                        loop {
                            let want = (ok + t).is_multiple_of(2);
                            let r = {
                                let line = cs.lock();
                                line.set_value(0, want).and_then(|()| line.value(0))
                            };
                            match r {
                                Ok(v) => assert_eq!(v, want, "another thread changed the line inside the lock"),
                                Err(GpioError::ChipGone { .. }) => break,
                                Err(e) => panic!("{e}"),
                            }
                            ok += 1;
                        }
                        assert!(cs.set_active(true).is_err());
                    });
                }
                start.wait();
                std::thread::sleep(std::time::Duration::from_millis(2));
                hw.remove();
            });
            assert_eq!(hw.accesses_after_removal(), 0);
        }
    }
}
