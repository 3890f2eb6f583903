//! Sleeping for edge events with the GIL released.
//!
//! A request's waiter owns duplicates of the descriptors it sleeps on (the
//! request's event descriptor, the chip's "gone" descriptor) and an eventfd
//! of its own that `release()` signals, so a thread sleeping in
//! `wait_edge_events` while another releases the request (or the chip is
//! removed) wakes up, and never sleeps on a closed or reused descriptor
//! number.

use pyo3::prelude::*;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Why a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// Edge events are pending (or the event descriptor reports an error,
    /// which the next read raises).
    Events,
    /// The timeout passed.
    Timeout,
    /// The request was released.
    Released,
    /// The chip was removed.
    Gone,
}

/// The descriptors one request's waits sleep on.
#[derive(Debug)]
pub struct WaitFds {
    event: OwnedFd,
    gone: OwnedFd,
    released: OwnedFd,
}

fn dup(fd: RawFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor number; a non-negative result is a new descriptor we own.
    let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `r` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

impl WaitFds {
    /// Duplicates `event` (readable while events wait) and `gone` (readable
    /// once the chip is removed) and makes the release eventfd.
    pub fn new(event: RawFd, gone: RawFd) -> std::io::Result<WaitFds> {
        // SAFETY: eventfd takes plain integers; a non-negative result is a new descriptor we own.
        let r = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `r` was just created and is owned by nobody else.
        let released = unsafe { OwnedFd::from_raw_fd(r) };
        Ok(WaitFds { event: dup(event)?, gone: dup(gone)?, released })
    }

    /// Wakes every wait (the request is being released).
    pub fn signal_released(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
        unsafe { libc::write(self.released.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// One `ppoll`, without the GIL's help: `None` on EINTR.
    fn poll_once(&self, timeout: Option<Duration>) -> std::io::Result<Option<Woke>> {
        let mut pfds = [
            libc::pollfd { fd: self.released.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.gone.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.event.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
        });
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `pfds` are valid pollfd entries and `tsp` is null or points to a live timespec.
        let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, tsp, std::ptr::null()) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) { Ok(None) } else { Err(e) };
        }
        Ok(Some(if pfds[0].revents != 0 {
            Woke::Released
        } else if pfds[1].revents != 0 {
            Woke::Gone
        } else if pfds[2].revents != 0 {
            Woke::Events
        } else {
            Woke::Timeout
        }))
    }

    /// Sleeps, with the GIL released, until events wait, the request is
    /// released, the chip is removed, or `timeout` passes (`None`: no limit;
    /// zero: just looks). Signals (Ctrl-C) interrupt it with their exception.
    pub fn wait(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<Woke> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let r = if left == Some(Duration::ZERO) {
                self.poll_once(left) // Just looking: not worth releasing the GIL.
            } else {
                py.detach(|| self.poll_once(left))
            };
            match r {
                Ok(Some(w)) => return Ok(w),
                Ok(None) => py.check_signals()?,
                Err(e) => return Err(e.into()),
            }
            // Interrupted: look again (at once if the deadline passed meanwhile).
        }
    }
}
