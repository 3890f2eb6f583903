//! The v2 line request (`GPIO_V2_GET_LINE_IOCTL`) and its file: values,
//! reconfiguration and edge events read as `gpio_v2_line_event` records
//! (gpiolib-cdev's `linereq`).

use super::convert::{self, LineConfig, EDGE_FLAGS};
use super::lines::ChipState;
use super::records::{encode_plain, Records, RemovalGuard, WhenFull};
use super::requested::{Held, HeldLine};
use crate::node::{Errno, FdInstaller, NodeFile};
use crate::user_mem::{get, put};
use std::ffi::c_void;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use wirespeed::linux::gpio_cdev::uapi::*;
use wirespeed_lab::gpio::LineEvent;

/// Where a request's edge events go (shared with the lab line listeners).
#[derive(Debug)]
struct Events {
    records: Arc<Records<gpio_v2_line_event>>,
    lines: Arc<[HeldLine]>,
    /// Events seen on the whole request.
    seqno: AtomicU32,
}

impl Events {
    /// `edge_irq_thread`: an edge of line `idx` as the program sees it.
    fn edge(&self, idx: usize, ev: LineEvent) {
        let line = &self.lines[idx];
        let flags = line.flags();
        let edges = flags & EDGE_FLAGS;
        let level = ev.rising != line.active_low();
        if edges == 0
            || (edges == GPIO_V2_LINE_FLAG_EDGE_RISING && !level)
            || (edges == GPIO_V2_LINE_FLAG_EDGE_FALLING && level)
        {
            return;
        }
        let line_seqno = line.seqno.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let seqno =
            if self.lines.len() == 1 { line_seqno } else { self.seqno.fetch_add(1, Ordering::Relaxed).wrapping_add(1) };
        let timestamp_ns = if flags & GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME != 0 {
            realtime_of(ev.at.as_ns())
        } else {
            ev.at.as_ns()
        };
        self.records.push(gpio_v2_line_event {
            timestamp_ns,
            id: if level { GPIO_V2_LINE_EVENT_RISING_EDGE } else { GPIO_V2_LINE_EVENT_FALLING_EDGE },
            offset: line.offset,
            seqno,
            line_seqno,
            padding: [0; 6],
        });
    }
}

/// A CLOCK_MONOTONIC instant as CLOCK_REALTIME.
fn realtime_of(monotonic_ns: u64) -> u64 {
    let age = wirespeed_time::now().as_ns().saturating_sub(monotonic_ns);
    let real = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(real.as_nanos()).unwrap_or(u64::MAX).saturating_sub(age)
}

/// An open v2 line request.
#[derive(Debug)]
pub(crate) struct LineRequestFile {
    events: Arc<Events>,
    _removal: RemovalGuard,
    held: Held,
}

/// `linereq_create`: requests and configures the lines, installs the file
/// and writes its descriptor into `req.fd`.
pub(crate) fn create(
    state: &Arc<ChipState>,
    req: &mut gpio_v2_line_request,
    fds: &dyn FdInstaller,
) -> Result<i32, Errno> {
    let n = req.num_lines as usize;
    if n == 0 || n > GPIO_V2_LINES_MAX || req.padding != [0; 5] {
        return Err(libc::EINVAL);
    }
    convert::validate_v2_config(&req.config, n)?;
    let capacity = match req.event_buffer_size as usize {
        0 => n * 16,
        size => size.min(GPIO_V2_LINES_MAX * 16),
    };
    let held = Held::claim(state, &req.offsets[..n], convert::c_label(&req.consumer), u64::MAX)?;
    let records = Arc::new(Records::new(capacity, WhenFull::DropOldest)?);
    let events =
        Arc::new(Events { records: Arc::clone(&records), lines: Arc::clone(&held.lines), seqno: AtomicU32::new(0) });
    for (idx, line) in held.lines.iter().enumerate() {
        let events = Arc::clone(&events);
        let listener = Arc::new(move |ev: LineEvent| events.edge(idx, ev));
        state.chip.set_listener(line.offset, Some(listener)).map_err(super::lines::errno)?;
    }
    for idx in 0..n {
        held.configure(idx, &convert::v2_line_config(&req.config, idx), GPIO_V2_LINE_CHANGED_REQUESTED)?;
    }
    let file = LineRequestFile { events, _removal: records.on_removal(&state.chip), held };
    req.fd = fds.install(Arc::new(file), true)?;
    Ok(0)
}

impl LineRequestFile {
    fn get_values(&self, lv: &mut gpio_v2_line_values) -> Result<(), Errno> {
        let mut bits = 0;
        let mut any = false;
        for idx in (0..self.held.len()).filter(|&i| lv.mask & (1 << i) != 0) {
            any = true;
            if self.held.get(idx)? {
                bits |= 1 << idx;
            }
        }
        if !any {
            return Err(libc::EINVAL);
        }
        lv.bits = bits;
        Ok(())
    }

    fn set_values(&self, lv: &gpio_v2_line_values) -> Result<(), Errno> {
        let _config = self.held.lock();
        let chosen: Vec<usize> = (0..self.held.len()).filter(|&i| lv.mask & (1 << i) != 0).collect();
        for &idx in &chosen {
            if !self.held.is_output(idx)? {
                return Err(libc::EPERM);
            }
        }
        if chosen.is_empty() {
            return Err(libc::EINVAL);
        }
        for idx in chosen {
            self.held.set(idx, lv.bits & (1 << idx) != 0)?;
        }
        Ok(())
    }

    fn set_config(&self, lc: &gpio_v2_line_config) -> Result<(), Errno> {
        convert::validate_v2_config(lc, self.held.len())?;
        let _config = self.held.lock();
        for idx in 0..self.held.len() {
            let cfg: LineConfig = convert::v2_line_config(lc, idx);
            self.held.configure(idx, &cfg, GPIO_V2_LINE_CHANGED_CONFIG)?;
        }
        Ok(())
    }
}

impl NodeFile for LineRequestFile {
    fn readiness(&self) -> BorrowedFd<'_> {
        self.events.records.fd()
    }

    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, _fds: &dyn FdInstaller) -> Result<i32, Errno> {
        self.held.state().present()?;
        // SAFETY: (every get/put) the request number encodes the size of
        // the struct read or written, which the program's pointer covers
        // (this method's contract: `arg` is valid for that many bytes).
        unsafe {
            match request as u32 {
                GPIO_V2_LINE_GET_VALUES_IOCTL => {
                    let mut lv: gpio_v2_line_values = get(arg)?;
                    self.get_values(&mut lv)?;
                    put(arg, lv)
                }
                GPIO_V2_LINE_SET_VALUES_IOCTL => self.set_values(&get(arg)?).map(|()| 0),
                GPIO_V2_LINE_SET_CONFIG_IOCTL => self.set_config(&get(arg)?).map(|()| 0),
                _ => Err(libc::ENOTTY),
            }
        }
    }

    fn read(&self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        self.held.state().present()?;
        self.events.records.read(buf, std::mem::size_of::<gpio_v2_line_event>(), nonblocking, encode_plain)
    }

    fn write(&self, _buf: &[u8]) -> Result<usize, Errno> {
        Err(libc::EINVAL)
    }
}
