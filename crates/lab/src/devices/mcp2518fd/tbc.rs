//! The time base counter (C1TBC, C1TSCON) and its wrap interrupt.
//!
//! TBC counts SYSCLK / (TBCPRE + 1) while TSCON.TBCEN is set and the
//! oscillator runs (it stands still in Sleep, see `sleep`). The model keeps
//! a value (`tbc_base`) at an instant (`tbc_at`) and computes the count as
//! of any later instant. When it wraps from 0xFFFF_FFFF to 0 C1INT.TBCIF is
//! set (datasheet DS20006027): the wrap instant is scheduled whenever the
//! counter's course changes (TSCON, TBC or OSC writes, sleep, wake).

use super::core::{Core, Event};
use super::regs::*;
use wirespeed_time::Instant;

impl Core {
    /// Time base counter ticks from `tbc_at` to `at` (none while stopped).
    fn tbc_ticks(&self, at: Instant) -> u128 {
        let at = self.tbc_stop.map_or(at, |s| at.min(s));
        let pre = u128::from(self.tscon & 0x3FF) + 1;
        u128::from(at.ns_since(self.tbc_at)) * u128::from(self.sysclk_hz()) / 1_000_000_000 / pre
    }

    pub(super) fn tbc(&self, at: Instant) -> u32 {
        if self.tscon & TSCON_TBCEN == 0 {
            return 0;
        }
        self.tbc_base.wrapping_add(self.tbc_ticks(at) as u32)
    }

    pub(super) fn cancel_tbc_wrap(&mut self) {
        if let Some(id) = self.tbc_wrap_timer.take() {
            self.scheduler.cancel(id);
        }
        self.events.retain(|p| !matches!(p.ev, Event::TbcWrap));
    }

    /// Schedules TBCIF for the next wrap of the time base counter after
    /// `at`, if it runs (call after anything that changes its course).
    pub(super) fn schedule_tbc_wrap(&mut self, at: Instant) {
        self.cancel_tbc_wrap();
        let clk = u128::from(self.sysclk_hz());
        if self.tscon & TSCON_TBCEN == 0 || self.tbc_stop.is_some() || clk == 0 {
            return;
        }
        let pre = u128::from(self.tscon & 0x3FF) + 1;
        let total = u128::from(self.tbc_base) + self.tbc_ticks(at);
        // Ticks from `tbc_at` to the next multiple of 2^32.
        let n = ((total >> 32) + 1) * (1u128 << 32) - u128::from(self.tbc_base);
        let ns = (n * pre * 1_000_000_000).div_ceil(clk);
        let when = self.tbc_at.add_ns(u64::try_from(ns).unwrap_or(u64::MAX));
        self.tbc_wrap_timer = Some(self.push_event(when, Event::TbcWrap));
    }

    /// Moves the time base counter's origin to `at` (keeping its value),
    /// before a change of its clock.
    pub(super) fn rebase_tbc(&mut self, at: Instant) {
        if self.tbc_stop.is_none() {
            self.tbc_base = self.tbc(at);
            self.tbc_at = self.tbc_at.max(at);
        }
    }
}
