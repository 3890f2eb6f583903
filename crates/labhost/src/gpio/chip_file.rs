//! An open `/dev/gpiochipN`: chip info, line info (v1 and v2), line-info
//! watches whose changes are read from the chip file, and the requests that
//! create line files (gpiolib-cdev's `gpio_ioctl` and `lineinfo_watch_read`).

use super::lines::ChipState;
use super::records::{encode_plain, Records, RemovalGuard, WhenFull};
use super::{convert, event_v1, handle_v1, line_request};
use crate::node::{Errno, FdInstaller, NodeFile};
use crate::user_mem::{get, put};
use std::ffi::c_void;
use std::fmt;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed::linux::gpio_cdev::uapi::*;

/// The kernel's line-info change FIFO per chip file (`DECLARE_KFIFO(events, …, 32)`).
const CHANGE_FIFO: usize = 32;

/// The watches of one chip file and the changes they queued.
pub(crate) struct Watch {
    records: Arc<Records<gpio_v2_line_info_changed>>,
    state: Mutex<WatchState>,
}

#[derive(Debug)]
struct WatchState {
    /// The ABI of the first watch (1 or 2; 0: none yet): changes are read
    /// in its format, and a watch of the other ABI is `EPERM`.
    abi: u8,
    watched: Vec<bool>,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch").field("records", &self.records).field("state", &self.state).finish()
    }
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `changed` if line `offset` is watched.
    pub fn line_changed(&self, offset: u32, changed: &gpio_v2_line_info_changed) {
        if self.lock().watched.get(offset as usize).copied().unwrap_or(false) {
            self.records.push(*changed);
        }
    }

    /// Starts watching `offset` in `abi`'s format.
    fn watch(&self, offset: u32, abi: u8) -> Result<(), Errno> {
        let mut s = self.lock();
        if s.abi != 0 && s.abi != abi {
            return Err(libc::EPERM);
        }
        s.abi = abi;
        let watched = &mut s.watched[offset as usize];
        if *watched {
            return Err(libc::EBUSY);
        }
        *watched = true;
        Ok(())
    }

    fn unwatch(&self, offset: u32) -> Result<(), Errno> {
        let mut s = self.lock();
        match s.watched.get_mut(offset as usize) {
            None => Err(libc::EINVAL),
            Some(w) if !*w => Err(libc::EBUSY),
            Some(w) => {
                *w = false;
                Ok(())
            }
        }
    }
}

/// An open chip file.
#[derive(Debug)]
pub(crate) struct ChipFile {
    state: Arc<ChipState>,
    watch: Arc<Watch>,
    _removal: RemovalGuard,
}

impl ChipFile {
    pub fn open(state: &Arc<ChipState>) -> Result<ChipFile, Errno> {
        state.present()?;
        let records = Arc::new(Records::new(CHANGE_FIFO, WhenFull::DropNewest)?);
        let watched = vec![false; state.num_lines() as usize];
        let watch = Arc::new(Watch { records, state: Mutex::new(WatchState { abi: 0, watched }) });
        state.add_watcher(&watch);
        let removal = watch.records.on_removal(&state.chip);
        Ok(ChipFile { state: Arc::clone(state), watch, _removal: removal })
    }

    fn chip_info(&self) -> gpiochip_info {
        gpiochip_info {
            name: convert::name_field(format!("gpiochip{}", self.state.index).as_bytes()),
            label: convert::name_field(self.state.chip.label().as_bytes()),
            lines: self.state.num_lines(),
        }
    }

    /// `lineinfo_get` (v2).
    fn line_info(&self, info: &gpio_v2_line_info, watch: bool) -> Result<gpio_v2_line_info, Errno> {
        if info.padding != [0; 4] {
            return Err(libc::EINVAL);
        }
        self.state.check_offset(info.offset)?;
        if watch {
            self.watch.watch(info.offset, 2)?;
        }
        Ok(self.state.line_info(info.offset))
    }

    /// `lineinfo_get_v1`.
    fn line_info_v1(&self, info: &gpioline_info, watch: bool) -> Result<gpioline_info, Errno> {
        self.state.check_offset(info.line_offset)?;
        if watch {
            self.watch.watch(info.line_offset, 1)?;
        }
        Ok(convert::info_to_v1(&self.state.line_info(info.line_offset)))
    }
}

fn encode_v1(changed: &gpio_v2_line_info_changed, dst: &mut [u8]) {
    let v1 = gpioline_info_changed {
        info: convert::info_to_v1(&changed.info),
        timestamp: changed.timestamp_ns,
        event_type: changed.event_type,
        padding: [0; 5],
    };
    encode_plain(&v1, dst);
}

impl NodeFile for ChipFile {
    fn readiness(&self) -> BorrowedFd<'_> {
        self.watch.records.fd()
    }

    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, fds: &dyn FdInstaller) -> Result<i32, Errno> {
        self.state.present()?;
        // SAFETY: (every get/put) the request number encodes the size of
        // the struct read or written, which the program's pointer covers
        // (this method's contract: `arg` is valid for that many bytes).
        unsafe {
            match request as u32 {
                GPIO_GET_CHIPINFO_IOCTL => put(arg, self.chip_info()),
                GPIO_V2_GET_LINEINFO_IOCTL => put(arg, self.line_info(&get(arg)?, false)?),
                GPIO_V2_GET_LINEINFO_WATCH_IOCTL => put(arg, self.line_info(&get(arg)?, true)?),
                GPIO_GET_LINEINFO_IOCTL => put(arg, self.line_info_v1(&get(arg)?, false)?),
                GPIO_GET_LINEINFO_WATCH_IOCTL => put(arg, self.line_info_v1(&get(arg)?, true)?),
                GPIO_GET_LINEINFO_UNWATCH_IOCTL => self.watch.unwatch(get::<u32>(arg)?).map(|()| 0),
                GPIO_V2_GET_LINE_IOCTL => {
                    let mut req: gpio_v2_line_request = get(arg)?;
                    line_request::create(&self.state, &mut req, fds)?;
                    put(arg, req)
                }
                GPIO_GET_LINEHANDLE_IOCTL => {
                    let mut req: gpiohandle_request = get(arg)?;
                    handle_v1::create(&self.state, &mut req, fds)?;
                    put(arg, req)
                }
                GPIO_GET_LINEEVENT_IOCTL => {
                    let mut req: gpioevent_request = get(arg)?;
                    event_v1::create(&self.state, &mut req, fds)?;
                    put(arg, req)
                }
                _ => Err(libc::ENOTTY),
            }
        }
    }

    /// `lineinfo_watch_read`: changes in the format of the first watch.
    fn read(&self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        self.state.present()?;
        if self.watch.lock().abi == 1 {
            self.watch.records.read(buf, std::mem::size_of::<gpioline_info_changed>(), nonblocking, encode_v1)
        } else {
            let size = std::mem::size_of::<gpio_v2_line_info_changed>();
            self.watch.records.read(buf, size, nonblocking, encode_plain)
        }
    }

    /// The chip file has no `write` (`EINVAL`).
    fn write(&self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(libc::EINVAL)
    }
}
