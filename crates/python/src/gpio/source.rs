//! Which chip a path opens: a lab board's (`lab=`, or the board file named
//! by `WIRESPEED_LAB`) or the kernel's GPIO character device.
//!
//! The rule (the same as `wirespeed.SpiDev`'s):
//! 1. `lab=` given: the path must be one of its nodes (`lab.nodes()`), else
//!    `FileNotFoundError`;
//! 2. else, `WIRESPEED_LAB` set: its board (built once per process and
//!    shared with `SpiDev`, see [`crate::lab::env_board`]) serves the path
//!    if it is one of its GPIO chips;
//! 3. else the real device (`/dev/gpiochipN`, GPIO uAPI v2).
//!
//! A bare name (`"gpiochip0"`) means `/dev/gpiochip0`.

use super::error::{os_error, to_py};
use pyo3::prelude::*;
use std::ffi::c_void;
use std::sync::Arc;
use wirespeed::gpio::Chip;
use wirespeed::linux::gpio_cdev::uapi::{gpio_v2_line_info, GPIO_V2_GET_LINEINFO_IOCTL};
use wirespeed_labhost::{Board, Errno, FdInstaller, NodeFile};

/// An opened chip and what comes with it.
#[derive(Debug)]
pub struct Opened {
    /// The stack chip.
    pub chip: Chip,
    /// Line names from the board file (lab chips; the lab backend itself
    /// names lines `labN`). `None`: the chip's own line info has them.
    pub names: Option<Vec<String>>,
    /// The board serving the chip, kept alive while the chip or a request
    /// of it lives (its toggling lines stop when it goes).
    pub board: Option<Arc<Board>>,
}

/// The path as the boards name nodes: a bare name is under `/dev/`.
pub fn canonical(path: &str) -> String {
    if path.contains('/') {
        path.to_owned()
    } else {
        format!("/dev/{path}")
    }
}

/// Whether `board` serves `path` as a GPIO chip: its index.
fn served_index(board: &Board, path: &str) -> Option<u32> {
    let (p, _) = board.nodes().iter().find(|(p, _)| *p == path)?;
    let index: u32 = p.strip_prefix("/dev/gpiochip")?.parse().ok()?;
    board.gpio_chip(index).map(|_| index)
}

/// Opens `path`: on `lab` (a board and its name) if given, else per the rule above.
pub fn open(py: Python<'_>, path: &str, lab: Option<(Arc<Board>, String)>) -> PyResult<Opened> {
    let node = canonical(path);
    if let Some((board, name)) = lab {
        return match served_index(&board, &node) {
            Some(i) => open_lab(board, i, &node),
            None => {
                let nodes: Vec<&str> =
                    board.nodes().iter().map(|(p, _)| p.as_str()).filter(|p| p.starts_with("/dev/gpiochip")).collect();
                Err(os_error(
                    libc::ENOENT,
                    format!("{node}: no such GPIO chip on the lab board {name} (its GPIO chips: {})", nodes.join(", ")),
                ))
            }
        };
    }
    if let Some((board, _)) = crate::lab::env_board(py)? {
        if let Some(i) = served_index(&board, &node) {
            return open_lab(board, i, &node);
        }
    }
    let chip = wirespeed::linux::gpio_cdev::open(path).map_err(to_py)?;
    Ok(Opened { chip, names: None, board: None })
}

fn open_lab(board: Arc<Board>, index: u32, node: &str) -> PyResult<Opened> {
    let hw = board.gpio_chip(index).ok_or_else(|| os_error(libc::ENOENT, format!("no lab GPIO chip {node}")))?;
    let chip = wirespeed::backend::lab::gpio::open(hw).map_err(to_py)?;
    let names = board_line_names(&board, node, hw.num_lines());
    Ok(Opened { chip, names: Some(names), board: Some(board) })
}

struct NoFds;

impl FdInstaller for NoFds {
    fn install(&self, _file: Arc<dyn NodeFile>, _cloexec: bool) -> Result<i32, Errno> {
        Err(libc::ENOTTY)
    }
}

/// The line names the board file gives (empty for unnamed lines), asked of
/// the board's `/dev/gpiochipN` node as a program would (`GPIO_V2_GET_LINEINFO_IOCTL`).
fn board_line_names(board: &Board, node: &str, lines: u32) -> Vec<String> {
    let mut names = vec![String::new(); lines as usize];
    let Some((_, n)) = board.nodes().iter().find(|(p, _)| p == node) else {
        return names;
    };
    let Ok(file) = n.open(libc::O_RDWR) else {
        return names;
    };
    for (offset, name) in names.iter_mut().enumerate() {
        // SAFETY: an all-integer C struct: all zeroes is a valid value.
        let mut info: gpio_v2_line_info = unsafe { std::mem::zeroed() };
        info.offset = offset as u32;
        // SAFETY: the request's size is that of `gpio_v2_line_info`, and `arg`
        // points to one, readable and writable, for the call.
        let r = unsafe {
            file.ioctl(
                u64::from(GPIO_V2_GET_LINEINFO_IOCTL),
                (&mut info as *mut gpio_v2_line_info).cast::<c_void>(),
                &NoFds,
            )
        };
        if r.is_ok() {
            let end = info.name.iter().position(|&b| b == 0).unwrap_or(info.name.len());
            *name = String::from_utf8_lossy(&info.name[..end]).into_owned();
        }
    }
    names
}
