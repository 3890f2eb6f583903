//! An eventfd (a pollable "something happened" counter) and a nanosecond
//! `ppoll` on a few descriptors: how line handles sleep for edge events.

use super::error::GpioError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A non-blocking, close-on-exec eventfd.
#[derive(Debug)]
pub(crate) struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    pub(crate) fn new() -> Result<EventFd, GpioError> {
        // SAFETY: eventfd takes plain integers; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(GpioError::Os { op: "eventfd", errno: errno() });
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Makes the descriptor readable.
    pub(crate) fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our own descriptor. A full
        // counter (EAGAIN) is still readable, which is all a signal needs.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Makes the descriptor unreadable again (used by backends that queue events).
    #[cfg_attr(not(feature = "lab"), allow(dead_code))]
    pub(crate) fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a valid u64; EAGAIN when already drained.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Sleeps until one of `fds` is readable (or hung up, or invalid) or the
/// timeout passes (`None`: no timeout). Returns whether any was ready.
pub(crate) fn wait_readable(fds: &[RawFd], timeout: Option<Duration>) -> Result<bool, GpioError> {
    let mut pfds = [libc::pollfd { fd: -1, events: 0, revents: 0 }; 4];
    let n = fds.len().min(pfds.len());
    for (p, &fd) in pfds.iter_mut().zip(fds) {
        *p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    }
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds[..n]` are valid pollfd entries and `tsp` is null or points to a live timespec.
    let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), n as libc::nfds_t, tsp, std::ptr::null()) };
    if r < 0 {
        let e = errno();
        if e == libc::EINTR {
            return Ok(false);
        }
        return Err(GpioError::Os { op: "ppoll", errno: e });
    }
    Ok(r > 0)
}
