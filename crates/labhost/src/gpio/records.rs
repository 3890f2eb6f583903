//! [`Records`]: what a GPIO file has for `read(2)` (line events, line-info
//! changes) on an [`EventQueue`], ending with the chip's removal: once the
//! lab chip is unplugged the descriptor turns readable and every read is
//! `ENODEV`, as the kernel wakes its readers when the device goes away.

use crate::node::Errno;
use crate::ready::EventQueue;
use std::fmt;
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Weak};
use wirespeed_lab::gpio::{GpioChip, RemoveCallbackId};

/// What to do with a record that finds the queue full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WhenFull {
    /// Drop it (v1 events, line-info changes: `kfifo_in` fails).
    DropNewest,
    /// Drop the oldest to make room (v2 line events: `kfifo_skip`).
    DropOldest,
}

#[derive(Clone, Copy)]
enum Slot<T> {
    Record(T),
    Gone,
}

impl<T> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Slot::Record(_) => "Record",
            Slot::Gone => "Gone",
        })
    }
}

/// A bounded record queue with its readiness eventfd.
pub(crate) struct Records<T> {
    queue: EventQueue<Slot<T>>,
    when_full: WhenFull,
}

impl<T> fmt::Debug for Records<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Records").field("queue", &self.queue).field("when_full", &self.when_full).finish()
    }
}

impl<T: Copy> Records<T> {
    pub fn new(capacity: usize, when_full: WhenFull) -> Result<Records<T>, Errno> {
        Ok(Records { queue: EventQueue::new(capacity)?, when_full })
    }

    /// Readable while a read would return at once.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.queue.fd()
    }

    pub fn push(&self, record: T) {
        if !self.queue.push(Slot::Record(record)) && self.when_full == WhenFull::DropOldest {
            let mut oldest = Vec::with_capacity(1);
            let _ = self.queue.take(1, true, &mut oldest);
            self.queue.push(Slot::Record(record));
        }
    }

    /// The chip went away: drop what waits and make every read `ENODEV`.
    pub fn gone(&self) {
        self.queue.clear();
        self.queue.push(Slot::Gone);
    }

    /// `read(2)` of whole `size`-byte records into `buf`, each written by `encode`.
    pub fn read(
        &self,
        buf: &mut [u8],
        size: usize,
        nonblocking: bool,
        encode: impl Fn(&T, &mut [u8]),
    ) -> Result<usize, Errno> {
        if buf.len() < size {
            return Err(libc::EINVAL);
        }
        let mut taken = Vec::new();
        self.queue.take(buf.len() / size, nonblocking, &mut taken)?;
        let mut done = 0;
        for slot in taken {
            match slot {
                Slot::Record(r) => {
                    encode(&r, &mut buf[done..done + size]);
                    done += size;
                }
                Slot::Gone => {
                    self.queue.push(Slot::Gone);
                    return if done == 0 { Err(libc::ENODEV) } else { Ok(done) };
                }
            }
        }
        Ok(done)
    }

    /// Calls [`Records::gone`] when `chip` is removed, until the guard drops.
    pub fn on_removal(self: &Arc<Self>, chip: &GpioChip) -> RemovalGuard
    where
        T: Send + 'static,
    {
        let weak: Weak<Records<T>> = Arc::downgrade(self);
        let id = chip.on_remove(move || {
            if let Some(records) = weak.upgrade() {
                records.gone();
            }
        });
        RemovalGuard { chip: chip.clone(), id }
    }
}

/// Withdraws a [`Records::on_removal`] registration when dropped.
#[derive(Debug)]
pub(crate) struct RemovalGuard {
    chip: GpioChip,
    id: RemoveCallbackId,
}

impl Drop for RemovalGuard {
    fn drop(&mut self) {
        self.chip.forget_on_remove(self.id);
    }
}

/// Copies a padding-free uAPI struct into `dst` byte for byte.
pub(crate) fn encode_plain<T: Copy>(value: &T, dst: &mut [u8]) {
    let size = std::mem::size_of::<T>();
    assert!(dst.len() >= size);
    // SAFETY: `dst` has room for `size` bytes (checked) and does not overlap
    // `value`. Only used for uAPI structs whose layout tests show no
    // implicit padding and whose unions start from `uapi::zeroed()`, so
    // every byte copied is initialized.
    unsafe { std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), dst.as_mut_ptr(), size) }
}
