//! What a served device node is: a [`Node`] (one `/dev/…` path) that opens
//! [`NodeFile`]s, the kernel's side of one open file description.
//!
//! Every open file is backed by a real eventfd ([`NodeFile::readiness`]):
//! the program holds a duplicate of it, so `poll`, `select`, `epoll`,
//! `fcntl` and `close` work on it as on any descriptor, and the file makes
//! it readable exactly while it has something to read ([`crate::ready`]).

use std::ffi::c_void;
use std::fmt;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

/// An errno value, as the kernel returns them (positive).
pub type Errno = i32;

/// The device number `stat` reports for a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CharDev {
    /// Major number (spidev 153; GPIO chips the dynamic 254).
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl CharDev {
    /// spidev's major number (`SPIDEV_MAJOR`).
    pub const SPIDEV_MAJOR: u32 = 153;
    /// The major number GPIO chips get on a typical system (dynamic).
    pub const GPIO_MAJOR: u32 = 254;

    /// `major:minor`, as sysfs `dev` files show it.
    pub fn sysfs(self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

/// Turns an open file that an ioctl created (a GPIO line request) into a
/// descriptor of the program.
pub trait FdInstaller {
    /// Installs `file` and returns the new descriptor's number.
    fn install(&self, file: Arc<dyn NodeFile>, cloexec: bool) -> Result<i32, Errno>;
}

/// One `/dev/…` node.
pub trait Node: Send + Sync + fmt::Debug {
    /// Its device number.
    fn char_dev(&self) -> CharDev;
    /// Opens it (`open(2)`'s `flags`).
    fn open(&self, flags: i32) -> Result<Arc<dyn NodeFile>, Errno>;
}

/// The kernel's side of one open file.
pub trait NodeFile: Send + Sync + fmt::Debug {
    /// The eventfd the program's descriptor duplicates; readable while
    /// [`read`](NodeFile::read) has something to return.
    fn readiness(&self) -> BorrowedFd<'_>;

    /// `ioctl(fd, request, arg)`: `Ok` is the call's return value.
    ///
    /// # Safety
    /// `arg` is the program's argument, passed on unchecked: for a request
    /// whose size field says N bytes, it points to N readable (and, for a
    /// read request, writable) bytes, as the kernel's copy_from_user
    /// assumes. A bad pointer faults in the program, as it would not with
    /// the kernel (which returns `EFAULT`): the shim cannot tell.
    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, fds: &dyn FdInstaller) -> Result<i32, Errno>;

    /// `read(2)` into `buf`; `nonblocking` is the descriptor's `O_NONBLOCK`.
    fn read(&self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno>;

    /// `write(2)` of `buf`.
    fn write(&self, buf: &[u8]) -> Result<usize, Errno>;
}
