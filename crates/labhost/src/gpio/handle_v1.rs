//! The v1 line handle (`GPIO_GET_LINEHANDLE_IOCTL`) and its file: get and
//! set values as `gpiohandle_data`, reconfigure with `gpiohandle_config`
//! (gpiolib-cdev's `linehandle`; libgpiod 1.6's gpioget and gpioset).

use super::convert::{self, LineConfig};
use super::lines::ChipState;
use super::requested::Held;
use crate::node::{Errno, FdInstaller, NodeFile};
use crate::ready::never_ready;
use crate::user_mem::{get, put};
use std::ffi::c_void;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use wirespeed::linux::gpio_cdev::uapi::*;

/// An open v1 line handle.
#[derive(Debug)]
pub(crate) struct HandleFile {
    ready: OwnedFd,
    held: Held,
}

fn line_config(flags: u32, default_values: &[u8; GPIOHANDLES_MAX], idx: usize) -> LineConfig {
    LineConfig { flags: convert::handle_flags_to_v2(flags), value: default_values[idx] != 0, debounce_us: 0 }
}

/// `linehandle_create`: requests and configures the lines, installs the
/// file and writes its descriptor into `req.fd`.
pub(crate) fn create(
    state: &Arc<ChipState>,
    req: &mut gpiohandle_request,
    fds: &dyn FdInstaller,
) -> Result<i32, Errno> {
    let n = req.lines as usize;
    if n == 0 || n > GPIOHANDLES_MAX {
        return Err(libc::EINVAL);
    }
    convert::validate_handle_flags(req.flags)?;
    let held = Held::claim(state, &req.lineoffsets[..n], convert::c_label(&req.consumer_label), u64::MAX)?;
    for idx in 0..n {
        held.configure(idx, &line_config(req.flags, &req.default_values, idx), GPIO_V2_LINE_CHANGED_REQUESTED)?;
    }
    let file = HandleFile { ready: never_ready()?, held };
    req.fd = fds.install(Arc::new(file), true)?;
    Ok(0)
}

impl HandleFile {
    fn get_values(&self) -> Result<gpiohandle_data, Errno> {
        let mut data = gpiohandle_data { values: [0; GPIOHANDLES_MAX] };
        for idx in 0..self.held.len() {
            data.values[idx] = u8::from(self.held.get(idx)?);
        }
        Ok(data)
    }

    fn set_values(&self, data: &gpiohandle_data) -> Result<(), Errno> {
        // The kernel checks the first line: all were requested alike.
        if !self.held.is_output(0)? {
            return Err(libc::EPERM);
        }
        let _config = self.held.lock();
        for idx in 0..self.held.len() {
            self.held.set(idx, data.values[idx] != 0)?;
        }
        Ok(())
    }

    fn set_config(&self, cfg: &gpiohandle_config) -> Result<(), Errno> {
        convert::validate_handle_flags(cfg.flags)?;
        let _config = self.held.lock();
        for idx in 0..self.held.len() {
            self.held.configure(idx, &line_config(cfg.flags, &cfg.default_values, idx), GPIO_V2_LINE_CHANGED_CONFIG)?;
        }
        Ok(())
    }
}

impl NodeFile for HandleFile {
    fn readiness(&self) -> BorrowedFd<'_> {
        self.ready.as_fd()
    }

    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, _fds: &dyn FdInstaller) -> Result<i32, Errno> {
        self.held.state().present()?;
        // SAFETY: (every get/put) the request number encodes the size of
        // the struct read or written, which the program's pointer covers
        // (this method's contract: `arg` is valid for that many bytes).
        unsafe {
            match request as u32 {
                GPIOHANDLE_GET_LINE_VALUES_IOCTL => put(arg, self.get_values()?),
                GPIOHANDLE_SET_LINE_VALUES_IOCTL => self.set_values(&get(arg)?).map(|()| 0),
                GPIOHANDLE_SET_CONFIG_IOCTL => self.set_config(&get(arg)?).map(|()| 0),
                _ => Err(libc::ENOTTY),
            }
        }
    }

    /// A line handle has no `read` (the kernel's file has none: `EINVAL`).
    fn read(&self, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(libc::EINVAL)
    }

    fn write(&self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(libc::EINVAL)
    }
}
