//! [`Held`]: the lines one request holds (a v2 line request, a v1 handle or
//! a v1 event request) and what every kind does with them: configure them
//! on the lab chip, read their logical values, drive outputs.

use super::convert::{lab_setup, LineConfig};
use super::lines::{errno, ChipState, Claim};
use crate::node::Errno;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed::linux::gpio_cdev::uapi::*;

/// One held line, as its edge listener sees it too.
#[derive(Debug)]
pub(crate) struct HeldLine {
    pub offset: u32,
    /// Its v2 flags (active-low, edges, event clock …).
    pub flags: AtomicU64,
    /// Events seen on it (`line_seqno` of the last one).
    pub seqno: AtomicU32,
}

impl HeldLine {
    pub fn flags(&self) -> u64 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn active_low(&self) -> bool {
        self.flags() & GPIO_V2_LINE_FLAG_ACTIVE_LOW != 0
    }
}

/// The lines of one request; dropping it releases them.
#[derive(Debug)]
pub(crate) struct Held {
    pub lines: Arc<[HeldLine]>,
    /// Flags line info shows of these lines (v1 event requests hide their edges).
    shown: u64,
    /// Serializes reconfiguration and writes, as the kernel's `config_mutex`.
    config: Mutex<()>,
    claim: Claim,
}

impl Held {
    /// Claims `offsets` for `consumer`; `shown` masks the flags line info
    /// shows. The lines stay as they are until [`Held::configure`].
    pub fn claim(state: &Arc<ChipState>, offsets: &[u32], consumer: Vec<u8>, shown: u64) -> Result<Held, Errno> {
        let claim = state.claim(offsets, consumer)?;
        let lines = offsets
            .iter()
            .map(|&offset| HeldLine { offset, flags: AtomicU64::new(0), seqno: AtomicU32::new(0) })
            .collect();
        Ok(Held { lines, shown, config: Mutex::new(()), claim })
    }

    pub fn state(&self) -> &Arc<ChipState> {
        &self.claim.state
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Takes the configuration lock for a multi-line change.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `cfg` to line `idx` and tells watchers (`event_type`).
    pub fn configure(&self, idx: usize, cfg: &LineConfig, event_type: u32) -> Result<(), Errno> {
        let line = &self.lines[idx];
        let state = self.state();
        let current = state.chip.setup(line.offset).map_err(errno)?;
        line.flags.store(cfg.flags, Ordering::Relaxed);
        let debounce_us = if cfg.flags & GPIO_V2_LINE_FLAG_INPUT != 0 { cfg.debounce_us } else { 0 };
        state.set_shown(line.offset, cfg.flags & self.shown, debounce_us);
        if let Some(setup) = lab_setup(cfg, current) {
            state.chip.configure(line.offset, &setup, wirespeed_time::now()).map_err(errno)?;
        }
        state.notify(line.offset, event_type);
        Ok(())
    }

    /// The logical value of line `idx`.
    pub fn get(&self, idx: usize) -> Result<bool, Errno> {
        let line = &self.lines[idx];
        Ok(self.state().chip.value(line.offset).map_err(errno)? != line.active_low())
    }

    /// Whether line `idx` is an output now.
    pub fn is_output(&self, idx: usize) -> Result<bool, Errno> {
        Ok(self.state().chip.setup(self.lines[idx].offset).map_err(errno)?.output)
    }

    /// Drives line `idx` to logical `value`.
    pub fn set(&self, idx: usize, value: bool) -> Result<(), Errno> {
        let line = &self.lines[idx];
        self.state().chip.set_output(line.offset, value != line.active_low()).map_err(errno)
    }
}
