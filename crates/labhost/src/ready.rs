//! [`EventQueue`]: records an open file has for `read(2)`, and the eventfd
//! that makes the program's descriptor readable while there are any.
//!
//! The invariant, kept under the queue's lock: the eventfd's counter is
//! non-zero exactly while the queue is not empty. So `poll`, `select` and
//! `epoll` on the program's descriptor (a duplicate of the eventfd) tell the
//! truth with no help from the shim, and a blocking read waits in `poll`.

use crate::node::Errno;
use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard};

/// A bounded FIFO of records with an eventfd for readiness.
#[derive(Debug)]
pub struct EventQueue<T> {
    fd: OwnedFd,
    queue: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    items: VecDeque<T>,
    capacity: usize,
    dropped: u64,
}

impl<T: Copy> EventQueue<T> {
    /// A queue holding at most `capacity` records (older ones are kept and
    /// newer ones dropped when full, as the kernel's kfifo does).
    pub fn new(capacity: usize) -> Result<EventQueue<T>, Errno> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(|e| e.raw_os_error())?;
        let capacity = capacity.max(1);
        Ok(EventQueue {
            fd,
            queue: Mutex::new(Inner { items: VecDeque::with_capacity(capacity), capacity, dropped: 0 }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The eventfd (readable while records wait).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Appends a record; `false` if the queue was full and it was dropped.
    pub fn push(&self, item: T) -> bool {
        let mut q = self.lock();
        if q.items.len() >= q.capacity {
            q.dropped += 1;
            return false;
        }
        q.items.push_back(item);
        if q.items.len() == 1 {
            // 1 never overflows the counter, which is zero while the queue is empty.
            let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
        }
        true
    }

    /// Records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Records waiting.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether no record waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes up to `max` records (at least one): waits for the first unless
    /// `nonblocking`, when an empty queue is `EAGAIN`.
    pub fn take(&self, max: usize, nonblocking: bool, out: &mut Vec<T>) -> Result<(), Errno> {
        loop {
            {
                let mut q = self.lock();
                if !q.items.is_empty() {
                    let n = max.min(q.items.len());
                    out.extend(q.items.drain(..n));
                    if q.items.is_empty() {
                        let mut counter = [0u8; 8];
                        let _ = rustix::io::read(&self.fd, &mut counter);
                    }
                    return Ok(());
                }
            }
            if nonblocking {
                return Err(libc::EAGAIN);
            }
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.raw_os_error()),
            }
        }
    }

    /// Drops every waiting record (a line reconfigured, a request closed).
    pub fn clear(&self) {
        let mut q = self.lock();
        if !q.items.is_empty() {
            q.items.clear();
            let mut counter = [0u8; 8];
            let _ = rustix::io::read(&self.fd, &mut counter);
        }
    }
}

/// An eventfd that is never readable: the readiness of files with nothing
/// to poll for (a spidev node).
pub fn never_ready() -> Result<OwnedFd, Errno> {
    eventfd(0, EventfdFlags::CLOEXEC).map_err(|e| e.raw_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn readable(fd: BorrowedFd<'_>) -> bool {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 })).unwrap() == 1
    }

    #[test]
    fn the_fd_is_readable_exactly_while_records_wait() {
        let q = EventQueue::<u32>::new(4).unwrap();
        assert!(!readable(q.fd()));
        assert!(q.push(1) && q.push(2));
        assert!(readable(q.fd()));
        let mut out = Vec::new();
        q.take(1, true, &mut out).unwrap();
        assert_eq!(out, [1]);
        assert!(readable(q.fd()), "one record still waits");
        q.take(8, true, &mut out).unwrap();
        assert_eq!(out, [1, 2]);
        assert!(!readable(q.fd()));
        assert_eq!(q.take(1, true, &mut out), Err(libc::EAGAIN));
    }

    #[test]
    fn a_full_queue_keeps_the_old_records_and_counts_the_dropped() {
        let q = EventQueue::<u32>::new(2).unwrap();
        assert!(q.push(1) && q.push(2));
        assert!(!q.push(3));
        assert_eq!(q.dropped(), 1);
        let mut out = Vec::new();
        q.take(8, true, &mut out).unwrap();
        assert_eq!(out, [1, 2]);
    }

    #[test]
    fn a_blocking_take_waits_for_a_push_from_another_thread() {
        let q = Arc::new(EventQueue::<u32>::new(4).unwrap());
        let pusher = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                q.push(7);
            })
        };
        let mut out = Vec::new();
        q.take(4, false, &mut out).unwrap();
        assert_eq!(out, [7]);
        pusher.join().unwrap();
    }
}
