//! The system-call boundary of the spidev backend: [`SpidevIo`], the four
//! calls it makes on a `/dev/spidevB.C` descriptor, and [`SpidevFd`], which
//! makes them with `rustix`. Tests put a double of [`SpidevIo`] here to check
//! what the backend asks of the kernel without one.

use super::uapi::{self, SpiIocTransfer};
use rustix::ioctl::{ioctl, Getter, Ioctl, IoctlOutput, Opcode, Setter};
use std::ffi::c_void;
use std::os::fd::OwnedFd;

/// An errno from a system call.
pub type Errno = i32;

/// What the spidev backend asks of a spidev descriptor.
pub trait SpidevIo: Send + 'static {
    /// `SPI_IOC_MESSAGE(xfers.len())`: the transfers as one message, CS held
    /// between them unless a transfer's `cs_change` says otherwise.
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno>;
    /// `SPI_IOC_RD_MODE32`.
    fn mode32(&mut self) -> Result<u32, Errno>;
    /// `SPI_IOC_WR_MODE32`.
    fn set_mode32(&mut self, mode: u32) -> Result<(), Errno>;
    /// `SPI_IOC_RD_MAX_SPEED_HZ`: the device's default clock.
    fn max_speed_hz(&mut self) -> Result<u32, Errno>;
}

/// An open `/dev/spidevB.C`.
#[derive(Debug)]
pub struct SpidevFd {
    fd: OwnedFd,
}

impl SpidevFd {
    /// Opens `path` for reading and writing (close-on-exec).
    pub fn open(path: &std::path::Path) -> Result<SpidevFd, Errno> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| e.raw_os_error())?;
        Ok(SpidevFd { fd })
    }
}

/// `SPI_IOC_MESSAGE(n)`, whose number depends on `n`.
struct Message<'a>(&'a mut [SpiIocTransfer]);

// SAFETY: the opcode's size is that of the slice the pointer points to, and
// the kernel only reads it (it writes RX data through the user addresses
// inside, which the caller keeps valid for the call).
unsafe impl Ioctl for Message<'_> {
    type Output = ();
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> Opcode {
        uapi::spi_ioc_message(self.0.len())
    }
    fn as_ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }
    unsafe fn output_from_ptr(_: IoctlOutput, _: *mut c_void) -> rustix::io::Result<()> {
        Ok(())
    }
}

impl SpidevIo for SpidevFd {
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno> {
        // SAFETY: every buffer address in `xfers` points to memory of its
        // `len` that the caller owns for the call (the backend builds them
        // from the message's live buffers).
        unsafe { ioctl(&self.fd, Message(xfers)) }.map_err(|e| e.raw_os_error())
    }
    fn mode32(&mut self) -> Result<u32, Errno> {
        // SAFETY: SPI_IOC_RD_MODE32 writes one u32.
        unsafe { ioctl(&self.fd, Getter::<{ uapi::SPI_IOC_RD_MODE32 }, u32>::new()) }.map_err(|e| e.raw_os_error())
    }
    fn set_mode32(&mut self, mode: u32) -> Result<(), Errno> {
        // SAFETY: SPI_IOC_WR_MODE32 reads one u32.
        unsafe { ioctl(&self.fd, Setter::<{ uapi::SPI_IOC_WR_MODE32 }, u32>::new(mode)) }.map_err(|e| e.raw_os_error())
    }
    fn max_speed_hz(&mut self) -> Result<u32, Errno> {
        // SAFETY: SPI_IOC_RD_MAX_SPEED_HZ writes one u32.
        unsafe { ioctl(&self.fd, Getter::<{ uapi::SPI_IOC_RD_MAX_SPEED_HZ }, u32>::new()) }
            .map_err(|e| e.raw_os_error())
    }
}
