//! spidev (`/dev/spidevB.C`) served from a lab SPI device: the ioctls,
//! `read` and `write` of the kernel's `drivers/spi/spidev.c`, with its
//! rules and errors. One message runs as one [`LabSpidevIo`] message (the
//! lab's SPI core, controller driver and WSPI block).
//!
//! What the kernel keeps per device (mode, word size, default clock) is
//! shared by every open file of the node, as in spidev:
//! - `SPI_IOC_WR_MODE` / `WR_MODE32`: bits outside the user mask are
//!   `EINVAL`; bits the controller lacks are `EINVAL` except dual/quad
//!   lines, which `spi_setup` clears (the lab block has none of the extra
//!   bits: CPOL and CPHA only). `WR_MODE` writes the low 8 bits and clears
//!   the rest, as the kernel's `u8` read does.
//! - `SPI_IOC_WR_LSB_FIRST`: `EINVAL` for 1 (the lab block shifts MSB first).
//! - `SPI_IOC_WR_BITS_PER_WORD`: 0 means 8; a size the controller cannot
//!   shift is `EINVAL`.
//! - `SPI_IOC_WR_MAX_SPEED_HZ`: 0 is `EINVAL`; the value is the clock of
//!   transfers that give none, and what `RD_MAX_SPEED_HZ` returns.
//! - `SPI_IOC_MESSAGE(n)`: returns the bytes moved; a size that is not a
//!   whole number of `spi_ioc_transfer` is `EINVAL`; more than `bufsiz`
//!   bytes each way is `EMSGSIZE`.
//! - `read`/`write`: one half-duplex transfer at the default clock,
//!   `EMSGSIZE` above `bufsiz`.
//! - any other request: `ENOTTY`.

use crate::node::{CharDev, Errno, FdInstaller, Node, NodeFile};
use crate::ready::never_ready;
use crate::user_mem::{self, get, put};
use std::ffi::c_void;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed::backend::lab::LabSpidevIo;
use wirespeed::linux::spidev::uapi::{self, SpiIocTransfer};
use wirespeed::linux::spidev::{Limits, SpidevIo};
use wirespeed::spi::Bus;

/// The mode bits a program may set (`SPI_MODE_USER_MASK` of Linux 6.1).
const SPI_MODE_USER_MASK: u32 = (1 << 17) - 1;
/// CPOL | CPHA: all the lab block does.
const SUPPORTED_MODE: u32 = uapi::SPI_CPOL | uapi::SPI_CPHA;
/// `SPI_TX_DUAL | SPI_TX_QUAD | SPI_RX_DUAL | SPI_RX_QUAD | SPI_TX_OCTAL | SPI_RX_OCTAL`:
/// cleared by `spi_setup` when the controller lacks them, not refused.
const LINE_BITS: u32 = 0xf00 | (1 << 13) | (1 << 14);
/// `SPI_LSB_FIRST`.
const SPI_LSB_FIRST: u32 = 1 << 3;

// The request numbers, from the one definition in `uapi`, as `ioctl` passes them.
const MESSAGE_0: u64 = uapi::spi_ioc_message(0) as u64;
const RD_MODE: u64 = uapi::SPI_IOC_RD_MODE as u64;
const WR_MODE: u64 = uapi::SPI_IOC_WR_MODE as u64;
const RD_MODE32: u64 = uapi::SPI_IOC_RD_MODE32 as u64;
const WR_MODE32: u64 = uapi::SPI_IOC_WR_MODE32 as u64;
const RD_LSB_FIRST: u64 = uapi::SPI_IOC_RD_LSB_FIRST as u64;
const WR_LSB_FIRST: u64 = uapi::SPI_IOC_WR_LSB_FIRST as u64;
const RD_BITS_PER_WORD: u64 = uapi::SPI_IOC_RD_BITS_PER_WORD as u64;
const WR_BITS_PER_WORD: u64 = uapi::SPI_IOC_WR_BITS_PER_WORD as u64;
const RD_MAX_SPEED_HZ: u64 = uapi::SPI_IOC_RD_MAX_SPEED_HZ as u64;
const WR_MAX_SPEED_HZ: u64 = uapi::SPI_IOC_WR_MAX_SPEED_HZ as u64;
/// The size field of an ioctl number (`SPI_IOC_MESSAGE(n)` carries n × 32 there).
const SIZE_FIELD: u64 = 0x3fff << 16;

/// `/dev/spidev{bus_no}.{cs}` on a lab bus.
#[derive(Debug)]
pub struct SpidevNode {
    minor: u32,
    state: Arc<Mutex<Device>>,
}

/// What spidev keeps per device.
#[derive(Debug)]
struct Device {
    io: LabSpidevIo,
    mode: u32,
    bits_per_word: u8,
    speed_hz: u32,
    bits_mask: u32,
    bufsiz: usize,
    /// Reused for every message: the program's transfers with defaults filled in.
    xfers: Vec<SpiIocTransfer>,
}

impl SpidevNode {
    /// The node of native chip select `cs` of `bus`, device number minor
    /// `minor`, default clock `default_speed_hz` (the device tree's
    /// `spi-max-frequency`) and spidev's `bufsiz`.
    pub fn new(bus: Bus, cs: u8, minor: u32, default_speed_hz: u32, bufsiz: usize) -> SpidevNode {
        let bits_mask = bus.caps().bits_per_word_mask;
        let io = LabSpidevIo::new(bus, cs, default_speed_hz, Limits::with_bufsiz(bufsiz));
        let device = Device {
            io,
            mode: 0,
            bits_per_word: 8,
            speed_hz: default_speed_hz,
            bits_mask,
            bufsiz,
            xfers: Vec::with_capacity(8),
        };
        SpidevNode { minor, state: Arc::new(Mutex::new(device)) }
    }
}

impl Node for SpidevNode {
    fn char_dev(&self) -> CharDev {
        CharDev { major: CharDev::SPIDEV_MAJOR, minor: self.minor }
    }
    fn open(&self, _flags: i32) -> Result<Arc<dyn NodeFile>, Errno> {
        Ok(Arc::new(SpidevFile { state: Arc::clone(&self.state), ready: never_ready()? }))
    }
}

/// One open file of a spidev node.
#[derive(Debug)]
struct SpidevFile {
    state: Arc<Mutex<Device>>,
    ready: OwnedFd,
}

impl SpidevFile {
    fn lock(&self) -> MutexGuard<'_, Device> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Device {
    fn set_mode(&mut self, requested: u32) -> Result<i32, Errno> {
        if requested & !SPI_MODE_USER_MASK != 0 {
            return Err(libc::EINVAL);
        }
        let mode = requested & !LINE_BITS;
        if mode & !SUPPORTED_MODE != 0 {
            return Err(libc::EINVAL);
        }
        self.io.set_mode32(mode)?;
        self.mode = mode;
        Ok(0)
    }

    fn message(&mut self, user: *const SpiIocTransfer, n: usize) -> Result<i32, Errno> {
        self.xfers.clear();
        if !user_mem::readable(user as usize, n * std::mem::size_of::<SpiIocTransfer>()) {
            return Err(libc::EFAULT);
        }
        let mut total = 0usize;
        for i in 0..n {
            // SAFETY: the request's size field says n transfers at `user`, mapped (checked above).
            let mut x = unsafe { std::ptr::read_unaligned(user.add(i)) };
            // The kernel copies each buffer in and out: EFAULT, nothing sent, if one is not there.
            let len = x.len as usize;
            if (x.tx_buf != 0 && !user_mem::readable(x.tx_buf as usize, len))
                || (x.rx_buf != 0 && !user_mem::writable(x.rx_buf as usize, len))
            {
                return Err(libc::EFAULT);
            }
            if x.speed_hz == 0 {
                x.speed_hz = self.speed_hz;
            }
            if x.bits_per_word == 0 {
                x.bits_per_word = self.bits_per_word;
            }
            total += x.len as usize;
            self.xfers.push(x);
        }
        self.io.message(&mut self.xfers)?;
        i32::try_from(total).map_err(|_| libc::EMSGSIZE)
    }

    fn half_duplex(&mut self, tx: *const u8, rx: *mut u8, len: usize) -> Result<usize, Errno> {
        if len > self.bufsiz {
            return Err(libc::EMSGSIZE);
        }
        if len == 0 {
            return Ok(0);
        }
        let x = SpiIocTransfer {
            tx_buf: tx as u64,
            rx_buf: rx as u64,
            len: len as u32,
            speed_hz: self.speed_hz,
            bits_per_word: self.bits_per_word,
            ..SpiIocTransfer::default()
        };
        self.io.message(&mut [x])?;
        Ok(len)
    }
}

impl NodeFile for SpidevFile {
    fn readiness(&self) -> BorrowedFd<'_> {
        self.ready.as_fd()
    }

    unsafe fn ioctl(&self, request: u64, arg: *mut c_void, _fds: &dyn FdInstaller) -> Result<i32, Errno> {
        let mut d = self.lock();
        // SAFETY: (every get/put below) the request's direction and size
        // match the type read or written, as spidev.h defines the request;
        // the program passes a pointer to that much memory.
        unsafe {
            match request {
                r if r & !SIZE_FIELD == MESSAGE_0 => {
                    let size = ((r & SIZE_FIELD) >> 16) as usize;
                    if !size.is_multiple_of(std::mem::size_of::<SpiIocTransfer>()) {
                        return Err(libc::EINVAL);
                    }
                    let n = size / std::mem::size_of::<SpiIocTransfer>();
                    if n == 0 {
                        return Ok(0);
                    }
                    d.message(arg.cast::<SpiIocTransfer>().cast_const(), n)
                }
                RD_MODE => put(arg, (d.mode & 0xff) as u8),
                RD_MODE32 => put(arg, d.mode),
                WR_MODE => d.set_mode(u32::from(get::<u8>(arg)?)),
                WR_MODE32 => d.set_mode(get::<u32>(arg)?),
                RD_LSB_FIRST => put(arg, u8::from(d.mode & SPI_LSB_FIRST != 0)),
                WR_LSB_FIRST => {
                    let lsb = get::<u8>(arg)? != 0;
                    let mode = if lsb { d.mode | SPI_LSB_FIRST } else { d.mode & !SPI_LSB_FIRST };
                    d.set_mode(mode)
                }
                RD_BITS_PER_WORD => put(arg, d.bits_per_word),
                WR_BITS_PER_WORD => {
                    let bits = match get::<u8>(arg)? {
                        0 => 8,
                        b => b,
                    };
                    if bits > 32 || d.bits_mask & (1 << (bits - 1)) == 0 {
                        return Err(libc::EINVAL);
                    }
                    d.bits_per_word = bits;
                    Ok(0)
                }
                RD_MAX_SPEED_HZ => put(arg, d.speed_hz),
                WR_MAX_SPEED_HZ => {
                    let hz = get::<u32>(arg)?;
                    if hz == 0 {
                        return Err(libc::EINVAL);
                    }
                    d.speed_hz = hz;
                    Ok(0)
                }
                _ => Err(libc::ENOTTY),
            }
        }
    }

    fn read(&self, buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        self.lock().half_duplex(std::ptr::null(), buf.as_mut_ptr(), buf.len())
    }

    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        self.lock().half_duplex(buf.as_ptr(), std::ptr::null_mut(), buf.len())
    }
}

#[cfg(test)]
mod tests;
