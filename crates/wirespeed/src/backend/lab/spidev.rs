//! [`LabSpidevIo`]: the kernel's side of a spidev node, emulated on the lab,
//! so that the spidev backend (and anything above it: drivers, regmap,
//! embedded-hal users) runs with no kernel SPI. It plays the part of the
//! kernel's spidev, SPI core and controller driver: each `SPI_IOC_MESSAGE`
//! runs as one message on a lab SPI block (through the stack's own
//! controller-level core and [`LabSpi`](super::LabSpi)), with spidev's
//! rules:
//! - TX and RX bytes of one ioctl each at most `bufsiz`, every buffer
//!   counted rounded up as spidev does, else `EMSGSIZE`;
//! - a transfer of no buffers moves nothing and only waits its delay; a
//!   length with no buffer is `EINVAL`;
//! - `speed_hz` 0 means the node's default clock; speeds above the
//!   controller's maximum are clamped;
//! - `cs_change` inside a message keeps CS inactive for the kernel's 10 µs;
//! - mode bits the lab block cannot do (anything beyond CPOL/CPHA) do not
//!   stick: a read-back shows them gone, as on a controller without them.
//!
//! Delays are waited to the microsecond the ioctl asks for.

use crate::linux::spidev::io::{Errno, SpidevIo};
use crate::linux::spidev::plan::{Limits, KERNEL_CS_CHANGE_GAP_NS};
use crate::linux::spidev::uapi::{SpiIocTransfer, SPI_CPHA, SPI_CPOL};
use crate::spi::{Bus, DeviceConfig, Mode, SpiDevice, SpiError, Transfer};

/// A lab SPI device behind an emulated spidev node (see the module docs).
#[derive(Debug)]
pub struct LabSpidevIo {
    bus: Bus,
    cs: u8,
    mode: u32,
    default_speed_hz: u32,
    limits: Limits,
    /// Devices by (mode, CS setup in ns): one per distinct pair met.
    devices: Vec<((u32, u32), SpiDevice)>,
}

impl LabSpidevIo {
    /// The node of native chip select `cs` of `bus` (a lab block's bus), with
    /// default clock `default_speed_hz` (the device tree's `spi-max-frequency`).
    pub fn new(bus: Bus, cs: u8, default_speed_hz: u32, limits: Limits) -> LabSpidevIo {
        LabSpidevIo { bus, cs, mode: 0, default_speed_hz, limits, devices: Vec::new() }
    }

    fn device(&mut self, setup_ns: u32) -> Result<SpiDevice, Errno> {
        let key = (self.mode, setup_ns);
        if let Some((_, d)) = self.devices.iter().find(|(k, _)| *k == key) {
            return Ok(d.clone());
        }
        let mode = match (self.mode & SPI_CPOL != 0, self.mode & SPI_CPHA != 0) {
            (false, false) => Mode::Mode0,
            (false, true) => Mode::Mode1,
            (true, false) => Mode::Mode2,
            (true, true) => Mode::Mode3,
        };
        let max = self.bus.caps().max_speed_hz;
        let cfg = DeviceConfig::new(self.cs, self.default_speed_hz.min(max))
            .max_speed_hz(max)
            .mode(mode)
            .cs_timing_ns(setup_ns, 0, 0);
        let d = self.bus.device(cfg).map_err(|_| libc::EINVAL)?;
        self.devices.push((key, d.clone()));
        Ok(d)
    }
}

/// Bytes spidev counts for a buffer of `len`.
fn counted(len: u32, limits: Limits) -> usize {
    (len as usize).div_ceil(limits.align) * limits.align
}

impl SpidevIo for LabSpidevIo {
    fn message(&mut self, xfers: &mut [SpiIocTransfer]) -> Result<(), Errno> {
        let tx: usize = xfers.iter().filter(|x| x.tx_buf != 0).map(|x| counted(x.len, self.limits)).sum();
        let rx: usize = xfers.iter().filter(|x| x.rx_buf != 0).map(|x| counted(x.len, self.limits)).sum();
        if tx > self.limits.bufsiz || rx > self.limits.bufsiz {
            return Err(libc::EMSGSIZE);
        }
        // Leading transfers with no buffers wait with CS active before the first clock.
        let lead = xfers.iter().take_while(|x| x.tx_buf == 0 && x.rx_buf == 0).count();
        let setup_us: u64 = xfers[..lead].iter().map(|x| u64::from(x.delay_usecs)).sum();
        let dev = self.device(u32::try_from(setup_us * 1000).map_err(|_| libc::EINVAL)?)?;
        let max = self.bus.caps().max_speed_hz;
        let mut transfers: Vec<Transfer<'_>> = Vec::with_capacity(xfers.len());
        for x in &xfers[lead..] {
            let len = x.len as usize;
            if x.tx_buf == 0 && x.rx_buf == 0 {
                if len > 0 {
                    return Err(libc::EINVAL);
                }
                // Its delay lengthens the transfer before it.
                if let Some(prev) = transfers.last_mut() {
                    prev.delay_after_ns += u32::from(x.delay_usecs) * 1000;
                }
                continue;
            }
            // SAFETY: the caller (the spidev backend) points tx_buf and rx_buf
            // at live buffers of `len` bytes for the duration of the call, as
            // the ioctl's contract requires; an in-place transfer gives both the same address.
            let data = unsafe {
                match (x.tx_buf, x.rx_buf) {
                    (t, 0) => crate::spi::Data::Write(std::slice::from_raw_parts(t as *const u8, len)),
                    (0, r) => crate::spi::Data::Read(std::slice::from_raw_parts_mut(r as *mut u8, len)),
                    (t, r) if t == r => crate::spi::Data::InPlace(std::slice::from_raw_parts_mut(r as *mut u8, len)),
                    (t, r) => crate::spi::Data::Duplex(
                        std::slice::from_raw_parts(t as *const u8, len),
                        std::slice::from_raw_parts_mut(r as *mut u8, len),
                    ),
                }
            };
            let speed = if x.speed_hz == 0 { self.default_speed_hz } else { x.speed_hz };
            let mut t = Transfer {
                data,
                speed_hz: speed.min(max),
                bits_per_word: x.bits_per_word,
                delay_after_ns: u32::from(x.delay_usecs) * 1000,
                cs_change: false,
                cs_change_delay_ns: None,
                word_delay_ns: u32::from(x.word_delay_usecs) * 1000,
                tx_nbits: 0,
                rx_nbits: 0,
            };
            if x.cs_change != 0 {
                t = t.cs_change(Some(KERNEL_CS_CHANGE_GAP_NS as u32));
            }
            transfers.push(t);
        }
        if transfers.is_empty() {
            return Ok(());
        }
        dev.sync(&mut transfers).map_err(|e| match e {
            SpiError::Invalid(_) => libc::EINVAL,
            SpiError::Timeout { .. } => libc::ETIMEDOUT,
            SpiError::BusGone => libc::ESHUTDOWN,
            _ => libc::EIO,
        })
    }

    fn mode32(&mut self) -> Result<u32, Errno> {
        Ok(self.mode)
    }

    fn set_mode32(&mut self, mode: u32) -> Result<(), Errno> {
        self.mode = mode & (SPI_CPOL | SPI_CPHA);
        Ok(())
    }

    fn max_speed_hz(&mut self) -> Result<u32, Errno> {
        Ok(self.default_speed_hz)
    }
}
