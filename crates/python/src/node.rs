//! The spidev node under a `SpiDev`: a real `/dev/spidevB.C` or a lab
//! board's node, reached through the same spidev ioctls, so that mode
//! checks, `bufsiz` cuts and errors are the same on both.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use wirespeed::linux::spidev::uapi::{self, SpiIocTransfer};
use wirespeed::linux::spidev::{Errno, SpidevIo};
use wirespeed_labhost::{FdInstaller, NodeFile};

/// Spidev never creates descriptors.
struct NoFds;

impl FdInstaller for NoFds {
    fn install(&self, _file: Arc<dyn NodeFile>, _cloexec: bool) -> Result<i32, Errno> {
        Err(libc::EINVAL)
    }
}

/// An open spidev node: a descriptor, or a lab node's open file.
#[derive(Debug, Clone)]
pub enum NodeHandle {
    /// A real node.
    Fd(Arc<OwnedFd>),
    /// A lab board's node.
    Lab(Arc<dyn NodeFile>),
}

impl NodeHandle {
    /// Opens a real node read-write.
    pub fn open_fd(path: &str) -> Result<NodeHandle, Errno> {
        let c = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
        }
        // SAFETY: a descriptor just opened, owned by nobody else.
        Ok(NodeHandle::Fd(Arc::new(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })))
    }

    /// The descriptor number (real nodes only).
    pub fn raw_fd(&self) -> Option<i32> {
        match self {
            NodeHandle::Fd(fd) => Some(fd.as_raw_fd()),
            NodeHandle::Lab(_) => None,
        }
    }

    /// `ioctl(request, arg)`.
    ///
    /// # Safety
    /// `arg` points to as many bytes as the request's size field says,
    /// writable for a read request.
    pub unsafe fn ioctl(&self, request: u64, arg: *mut c_void) -> Result<i32, Errno> {
        match self {
            NodeHandle::Fd(fd) => {
                // SAFETY: the caller's contract.
                let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) };
                if rc < 0 {
                    Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
                } else {
                    Ok(rc)
                }
            }
            // SAFETY: the caller's contract, which is the node's.
            NodeHandle::Lab(file) => unsafe { file.ioctl(request, arg, &NoFds) },
        }
    }

    /// Writes a `T` with `request`.
    pub fn write_value<T: Copy>(&self, request: u64, value: T) -> Result<(), Errno> {
        let mut v = value;
        // SAFETY: the request's size is `T`'s (the callers pair them).
        unsafe { self.ioctl(request, (&mut v as *mut T).cast()) }.map(|_| ())
    }

    /// Reads a `T` with `request`.
    pub fn read_value<T: Copy + Default>(&self, request: u64) -> Result<T, Errno> {
        let mut v = T::default();
        // SAFETY: as above.
        unsafe { self.ioctl(request, (&mut v as *mut T).cast()) }?;
        Ok(v)
    }
}

/// A [`NodeHandle`] as the spidev backend's system-call boundary.
#[derive(Debug)]
pub struct NodeIo(pub NodeHandle);

impl SpidevIo for NodeIo {
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno> {
        let request = uapi::spi_ioc_message(xfers.len()) as u64;
        // SAFETY: SPI_IOC_MESSAGE(n) reads n transfers; their buffer
        // addresses are the backend's, valid for the call.
        unsafe { self.0.ioctl(request, xfers.as_mut_ptr().cast()) }.map(|_| ())
    }
    fn mode32(&mut self) -> Result<u32, Errno> {
        self.0.read_value::<u32>(uapi::SPI_IOC_RD_MODE32 as u64)
    }
    fn set_mode32(&mut self, mode: u32) -> Result<(), Errno> {
        self.0.write_value::<u32>(uapi::SPI_IOC_WR_MODE32 as u64, mode)
    }
    fn max_speed_hz(&mut self) -> Result<u32, Errno> {
        self.0.read_value::<u32>(uapi::SPI_IOC_RD_MAX_SPEED_HZ as u64)
    }
}
