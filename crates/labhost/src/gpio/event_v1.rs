//! The v1 line event request (`GPIO_GET_LINEEVENT_IOCTL`) and its file:
//! one input line whose edges are read as `gpioevent_data` records, and
//! whose value `GPIOHANDLE_GET_LINE_VALUES_IOCTL` reads (gpiolib-cdev's
//! `lineevent`; libgpiod 1.6's gpiomon).

use super::convert::{self, LineConfig, EDGE_FLAGS};
use super::lines::ChipState;
use super::records::{Records, RemovalGuard, WhenFull};
use super::requested::{Held, HeldLine};
use crate::node::{Errno, FdInstaller, NodeFile};
use crate::user_mem::put;
use std::ffi::c_void;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use wirespeed::linux::gpio_cdev::uapi::*;
use wirespeed_lab::gpio::LineEvent;

/// The kernel's fixed v1 event FIFO (`DECLARE_KFIFO(events, …, 16)`).
const EVENT_FIFO: usize = 16;

/// An open v1 event request.
#[derive(Debug)]
pub(crate) struct EventFile {
    records: Arc<Records<gpioevent_data>>,
    _removal: RemovalGuard,
    held: Held,
}

/// `lineevent_irq_thread`: an edge as the program sees it.
fn edge(records: &Records<gpioevent_data>, line: &HeldLine, ev: LineEvent) {
    let edges = line.flags() & EDGE_FLAGS;
    let level = ev.rising != line.active_low();
    if edges == 0
        || (edges == GPIO_V2_LINE_FLAG_EDGE_RISING && !level)
        || (edges == GPIO_V2_LINE_FLAG_EDGE_FALLING && level)
    {
        return;
    }
    let id = if level { GPIOEVENT_EVENT_RISING_EDGE } else { GPIOEVENT_EVENT_FALLING_EDGE };
    records.push(gpioevent_data { timestamp: ev.at.as_ns(), id });
}

/// `lineevent_create`: requests the line as an input with edge detection,
/// installs the file and writes its descriptor into `req.fd`.
pub(crate) fn create(state: &Arc<ChipState>, req: &mut gpioevent_request, fds: &dyn FdInstaller) -> Result<i32, Errno> {
    state.check_offset(req.lineoffset)?;
    convert::validate_event_flags(req.handleflags, req.eventflags)?;
    // The kernel shows no edge flags for a v1 event line.
    let held = Held::claim(state, &[req.lineoffset], convert::c_label(&req.consumer_label), !EDGE_FLAGS)?;
    let records = Arc::new(Records::new(EVENT_FIFO, WhenFull::DropNewest)?);
    let listener = {
        let (records, lines) = (Arc::clone(&records), Arc::clone(&held.lines));
        Arc::new(move |ev: LineEvent| edge(&records, &lines[0], ev))
    };
    state.chip.set_listener(req.lineoffset, Some(listener)).map_err(super::lines::errno)?;
    let flags = convert::handle_flags_to_v2(req.handleflags)
        | GPIO_V2_LINE_FLAG_INPUT
        | convert::event_flags_to_v2(req.eventflags);
    held.configure(0, &LineConfig { flags, value: false, debounce_us: 0 }, GPIO_V2_LINE_CHANGED_REQUESTED)?;
    let file = EventFile { _removal: records.on_removal(&state.chip), records, held };
    req.fd = fds.install(Arc::new(file), true)?;
    Ok(0)
}

fn encode(ev: &gpioevent_data, dst: &mut [u8]) {
    dst.fill(0);
    dst[..8].copy_from_slice(&ev.timestamp.to_ne_bytes());
    dst[8..12].copy_from_slice(&ev.id.to_ne_bytes());
}

impl NodeFile for EventFile {
    fn readiness(&self) -> BorrowedFd<'_> {
        self.records.fd()
    }

    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, _fds: &dyn FdInstaller) -> Result<i32, Errno> {
        self.held.state().present()?;
        match request as u32 {
            GPIOHANDLE_GET_LINE_VALUES_IOCTL => {
                let mut data = gpiohandle_data { values: [0; GPIOHANDLES_MAX] };
                data.values[0] = u8::from(self.held.get(0)?);
                // SAFETY: the request's size is that of `gpiohandle_data`,
                // which the program's pointer covers.
                unsafe { put(arg, data) }
            }
            _ => Err(libc::ENOTTY),
        }
    }

    fn read(&self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        self.held.state().present()?;
        self.records.read(buf, std::mem::size_of::<gpioevent_data>(), nonblocking, encode)
    }

    fn write(&self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(libc::EINVAL)
    }
}
