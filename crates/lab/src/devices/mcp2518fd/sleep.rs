//! Sleep and Low-Power Mode ([`Errata::sleep`]).
//!
//! Datasheet DS20006027, "Sleep Mode" / "Low Power Mode": entering Sleep
//! (REQOP = 001) stops the oscillator: OSC.OSCDIS reads 1 and OSCRDY 0,
//! SYSCLK is gone, so the controller neither takes part on the bus nor
//! counts time (TBC stands still) and mode requests go unanswered. If
//! OSC.LPMEN is set on entry it is Low-Power Mode (MCP2518FD only). The SPI
//! still works in Sleep: a write to OSC that clears OSCDIS wakes the device
//! (only OSCDIS changes, as the kernel's `mcp251xfd_chip_clock_enable`
//! notes), OSCRDY rises `osc_startup_ns` later and the device is then in
//! configuration mode. In Low-Power Mode asserting CS wakes it as well, and
//! that wake is a power-on reset: registers to reset values, RAM undefined
//! (the access that woke it is lost). While asleep the RESET instruction is
//! ignored (the kernel wakes the chip before its soft reset: "The Set Mode
//! and SPI Reset command only seems to work if the controller is not in
//! Sleep Mode"). A frame on the bus during Sleep sets C1INT.WAKIF without
//! being stored (datasheet, whatever the switch).
//!
//! With the switch off, Sleep is the old shallow mode: the oscillator runs,
//! RESET is honoured and a request for configuration mode leaves it.
//!
//! [`Errata::sleep`]: super::Errata::sleep

use super::core::{Core, Event};
use super::regs::*;
use super::Mode;
use wirespeed_time::Instant;

impl Core {
    /// Whether the device is asleep with its oscillator stopped.
    pub(super) fn asleep(&self) -> bool {
        self.mode == Mode::Sleep && self.osc & OSC_OSCDIS != 0
    }

    /// The controller entered Sleep at `at`.
    pub(super) fn sleep_entered(&mut self, at: Instant) {
        if !self.errata.sleep {
            return;
        }
        if self.tscon & TSCON_TBCEN != 0 {
            self.tbc_base = self.tbc(at);
        }
        self.tbc_at = at;
        self.tbc_stop = Some(at);
        self.schedule_tbc_wrap(at);
        self.lpm = self.osc & OSC_LPMEN != 0;
        self.osc |= OSC_OSCDIS;
    }

    /// A write to OSC at `at` with OSCDIS clear while the oscillator is
    /// stopped: it starts; the device wakes when it is ready. Returns
    /// whether the write was such a wake (and so changed nothing else).
    pub(super) fn osc_write_wakes(&mut self, val: u32, mask: u32, at: Instant) -> bool {
        if self.osc & OSC_OSCDIS == 0 || mask & OSC_OSCDIS == 0 || val & OSC_OSCDIS != 0 {
            return false;
        }
        self.osc &= !OSC_OSCDIS;
        if !self.errata.sleep {
            // The shallow model: the clock is back at once (and so is the
            // time base, should the switch have gone off in deep sleep).
            if self.tbc_stop.take().is_some() {
                self.tbc_at = at;
                self.schedule_tbc_wrap(at);
            }
            return false;
        }
        self.osc_ready_at = at.add_ns(self.cfg.osc_startup_ns);
        if self.mode == Mode::Sleep {
            self.push_event(self.osc_ready_at, Event::Woken);
        }
        true
    }

    /// The oscillator woken from Sleep is ready at `at`: configuration
    /// mode, and the time base counter runs on from where it stopped.
    pub(super) fn woken(&mut self, at: Instant) {
        if self.mode != Mode::Sleep || self.osc & OSC_OSCDIS != 0 {
            return;
        }
        self.tbc_stop = None;
        self.tbc_at = at;
        self.schedule_tbc_wrap(at);
        self.enter_mode(Mode::Config, at);
    }

    /// CS asserted at `at`: in Low-Power Mode this wakes the device with a
    /// power-on reset. Returns whether it did (the access is then lost).
    pub(super) fn cs_wakes(&mut self, at: Instant) -> bool {
        if !(self.errata.sleep && self.lpm && self.asleep()) {
            return false;
        }
        self.power_on(at);
        true
    }

    /// Whether the RESET instruction is ignored now (and counts it).
    pub(super) fn reset_ignored(&mut self) -> bool {
        if self.errata.sleep && self.mode == Mode::Sleep {
            self.hits.reset_ignored += 1;
            return true;
        }
        false
    }

    /// Bus activity while asleep: WAKIF.
    pub(super) fn bus_activity_in_sleep(&mut self) {
        self.int_flags |= INT_WAKIF;
    }
}
