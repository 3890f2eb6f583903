//! The GPIO character device (`/dev/gpiochipN`) served from a lab GPIO
//! chip: the kernel's gpiolib-cdev, uAPI v2 (python `gpiod` 2.x, libgpiod
//! 2.x) and v1 (libgpiod 1.6's `gpiodetect`, `gpioinfo`, `gpioget`,
//! `gpioset`, `gpiomon`), with its checks and errors.
//!
//! - `chip_file`: the chip file (chip and line info, info watches, requests).
//! - `line_request`, `handle_v1`, `event_v1`: the files requests create.
//! - `lines`: who holds each line, shared by every file of the node.
//! - `requested`: what all requests do with their lines; `convert`: flags.
//! - `records`: the queues behind `read` and readiness.
//!
//! Where the lab differs from a kernel: events are stamped with the lab
//! clock (CLOCK_MONOTONIC, as the kernel's default); a released line turns
//! back into an input (keeping its bias); there is no hardware timestamp
//! engine (`EVENT_CLOCK_HTE` is `EOPNOTSUPP`); an unknown ioctl is `ENOTTY`
//! (the kernel's GPIO files say `EINVAL`), so the shim can report it.

mod chip_file;
mod convert;
mod event_v1;
mod handle_v1;
mod line_request;
mod lines;
mod records;
mod requested;

use crate::node::{CharDev, Errno, Node, NodeFile};
use lines::ChipState;
use std::sync::Arc;

/// `/dev/gpiochip{index}` serving a lab GPIO chip.
#[derive(Debug)]
pub struct GpioChipNode {
    state: Arc<ChipState>,
}

impl GpioChipNode {
    /// Serves `chip` as `/dev/gpiochip{index}`; `names[i]` names line i.
    pub fn new(chip: wirespeed_lab::gpio::GpioChip, index: u32, names: Vec<Option<String>>) -> GpioChipNode {
        GpioChipNode { state: Arc::new(ChipState::new(chip, index, names)) }
    }
}

impl Node for GpioChipNode {
    fn char_dev(&self) -> CharDev {
        CharDev { major: CharDev::GPIO_MAJOR, minor: self.state.index }
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn NodeFile>, Errno> {
        Ok(Arc::new(chip_file::ChipFile::open(&self.state)?))
    }
}

#[cfg(test)]
mod tests;
