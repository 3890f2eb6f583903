//! The per-chip state every open file of a `/dev/gpiochipN` shares: who
//! holds each line (consumer, flags, debounce) for line info, the chip
//! files watching for line-info changes, and [`Claim`], a request's hold on
//! its lines that gives them back when the request goes.

use super::chip_file::Watch;
use super::convert::{name_field, DIRECTION_FLAGS};
use crate::node::Errno;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use wirespeed::linux::gpio_cdev::uapi::*;
use wirespeed_lab::gpio::{EdgeDetect, GpioChip, LabGpioError, LineSetup};

/// A requested line's holder, as line info shows it.
#[derive(Clone, Debug, Default)]
struct Holder {
    consumer: Vec<u8>,
    /// v2 flags shown in line info (direction comes from the lab line).
    flags: u64,
    debounce_us: u32,
}

/// The chip behind a node, and what the kernel keeps beside it.
#[derive(Debug)]
pub(crate) struct ChipState {
    pub chip: GpioChip,
    pub index: u32,
    names: Vec<Option<String>>,
    holders: Mutex<Vec<Option<Holder>>>,
    watchers: Mutex<Vec<Weak<Watch>>>,
}

/// A lab error as the errno the kernel returns for it.
pub(crate) fn errno(e: LabGpioError) -> Errno {
    match e {
        LabGpioError::Removed => libc::ENODEV,
        LabGpioError::OffsetOutOfRange { .. } => libc::EINVAL,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ChipState {
    pub fn new(chip: GpioChip, index: u32, names: Vec<Option<String>>) -> ChipState {
        let lines = chip.num_lines() as usize;
        ChipState { chip, index, names, holders: Mutex::new(vec![None; lines]), watchers: Mutex::new(Vec::new()) }
    }

    /// `ENODEV` once the lab chip is removed.
    pub fn present(&self) -> Result<(), Errno> {
        if self.chip.is_removed() {
            Err(libc::ENODEV)
        } else {
            Ok(())
        }
    }

    pub fn num_lines(&self) -> u32 {
        self.chip.num_lines()
    }

    /// `EINVAL` for an offset the chip does not have.
    pub fn check_offset(&self, offset: u32) -> Result<(), Errno> {
        if offset < self.num_lines() {
            Ok(())
        } else {
            Err(libc::EINVAL)
        }
    }

    /// `gpio_desc_to_lineinfo` + `supinfo_to_lineinfo` for a valid offset.
    pub fn line_info(&self, offset: u32) -> gpio_v2_line_info {
        let mut info: gpio_v2_line_info = zeroed();
        info.offset = offset;
        if let Some(Some(name)) = self.names.get(offset as usize) {
            info.name = name_field(name.as_bytes());
        }
        let setup = self.chip.setup(offset).unwrap_or_default();
        info.flags = if setup.output { GPIO_V2_LINE_FLAG_OUTPUT } else { GPIO_V2_LINE_FLAG_INPUT };
        let holder = lock(&self.holders)[offset as usize].clone();
        if let Some(h) = holder {
            info.flags |= GPIO_V2_LINE_FLAG_USED | (h.flags & !DIRECTION_FLAGS);
            info.consumer = name_field(&h.consumer);
            if h.debounce_us != 0 {
                info.attrs[0].id = GPIO_V2_LINE_ATTR_ID_DEBOUNCE;
                info.attrs[0].u.debounce_period_us = h.debounce_us;
                info.num_attrs = 1;
            }
        }
        info
    }

    /// Takes `offsets` for `consumer` (`"?"` if empty), all or none: `EBUSY`
    /// if any is held (or named twice), `EINVAL` if any is not on the chip.
    /// The lines are not configured yet; line info shows them used.
    pub fn claim(self: &Arc<Self>, offsets: &[u32], consumer: Vec<u8>) -> Result<Claim, Errno> {
        for &offset in offsets {
            self.check_offset(offset)?;
        }
        let consumer = if consumer.is_empty() { b"?".to_vec() } else { consumer };
        let mut holders = lock(&self.holders);
        for (i, &offset) in offsets.iter().enumerate() {
            if holders[offset as usize].is_some() || offsets[..i].contains(&offset) {
                return Err(libc::EBUSY);
            }
        }
        for &offset in offsets {
            holders[offset as usize] = Some(Holder { consumer: consumer.clone(), ..Holder::default() });
        }
        Ok(Claim { state: Arc::clone(self), offsets: offsets.to_vec() })
    }

    /// Records what line info shows of a held line's configuration.
    pub fn set_shown(&self, offset: u32, flags: u64, debounce_us: u32) {
        if let Some(h) = lock(&self.holders)[offset as usize].as_mut() {
            h.flags = flags;
            h.debounce_us = debounce_us;
        }
    }

    /// Starts telling `watch` of line-info changes.
    pub fn add_watcher(&self, watch: &Arc<Watch>) {
        let mut watchers = lock(&self.watchers);
        watchers.retain(|w| w.strong_count() > 0);
        watchers.push(Arc::downgrade(watch));
    }

    /// `gpiod_line_state_notify`: queues a `gpio_v2_line_info_changed` of
    /// kind `event_type` for every chip file watching `offset`.
    pub fn notify(&self, offset: u32, event_type: u32) {
        let watchers: Vec<Arc<Watch>> = lock(&self.watchers).iter().filter_map(Weak::upgrade).collect();
        if watchers.is_empty() {
            return;
        }
        let mut changed: gpio_v2_line_info_changed = zeroed();
        changed.info = self.line_info(offset);
        changed.timestamp_ns = wirespeed_time::now().as_ns();
        changed.event_type = event_type;
        for w in watchers {
            w.line_changed(offset, &changed);
        }
    }
}

/// A request's hold on its lines. Dropping it releases them: no more edge
/// events, back to an input (keeping the bias, as a driver's `free` does),
/// line info unused, and a "released" change for watchers.
#[derive(Debug)]
pub(crate) struct Claim {
    pub state: Arc<ChipState>,
    pub offsets: Vec<u32>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let chip = &self.state.chip;
        for &offset in &self.offsets {
            if !chip.is_removed() {
                let _ = chip.set_listener(offset, None);
                if let Ok(setup) = chip.setup(offset) {
                    let input = LineSetup { output: false, edge: EdgeDetect::None, debounce_ns: 0, ..setup };
                    let _ = chip.configure(offset, &input, wirespeed_time::now());
                }
            }
            lock(&self.state.holders)[offset as usize] = None;
            if !chip.is_removed() {
                self.state.notify(offset, GPIO_V2_LINE_CHANGED_RELEASED);
            }
        }
    }
}
