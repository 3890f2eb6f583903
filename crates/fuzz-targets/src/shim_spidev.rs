//! Target `shim_spidev`: the spidev ioctls the shim serves
//! (`wirespeed_labhost::spidev`, reached by `crates/shim`'s `ioctl` hook
//! unchanged): `SPI_IOC_MESSAGE(n)` with any request size and any
//! `spi_ioc_transfer` array (lengths, clocks, word sizes, lines,
//! `cs_change`, delays — kept short, they are waited), the mode, LSB, word
//! size and clock ioctls with any value, unknown requests, `read` and
//! `write` of any length, on a node with any `bufsiz`.
//!
//! Pointers are the one thing not drawn: like the kernel's
//! `copy_from_user`, the node trusts them (a bad one faults in the
//! program), so every buffer is a real one of the transfer's length.
//!
//! Properties: every call returns a value or an errno, never panics; a
//! message on the loopback returns the bytes moved and echoes its duplex
//! transfers; a value a write ioctl accepted is what its read ioctl returns.

use crate::support::bus;
use arbitrary::{Result, Unstructured};
use std::ffi::c_void;
use std::sync::Arc;
use wirespeed::linux::spidev::uapi::{self, spi_ioc_message, SpiIocTransfer};
use wirespeed_lab::devices::Loopback;
use wirespeed_labhost::spidev::SpidevNode;
use wirespeed_labhost::{Errno, FdInstaller, Node, NodeFile};

struct NoFds;
impl FdInstaller for NoFds {
    fn install(&self, _: Arc<dyn NodeFile>, _: bool) -> std::result::Result<i32, Errno> {
        panic!("spidev installs no descriptors")
    }
}

fn ioctl<T>(f: &Arc<dyn NodeFile>, request: u32, arg: &mut T) -> std::result::Result<i32, Errno> {
    // SAFETY: `arg` is a live T, at least the size the request names.
    unsafe { f.ioctl(u64::from(request), (arg as *mut T).cast::<c_void>(), &NoFds) }
}

/// One message: its transfers' buffers and headers.
fn message(f: &Arc<dyn NodeFile>, u: &mut Unstructured<'_>, bufsiz: usize) -> Result<()> {
    let n = u.int_in_range(0usize..=6)?;
    let mut tx: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut rx: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut xfers: Vec<SpiIocTransfer> = Vec::with_capacity(n + 1);
    for _ in 0..n {
        let len = if u.ratio(1u8, 8)? { u.int_in_range(0..=bufsiz + 16)? } else { u.int_in_range(0usize..=64)? };
        let fill: u8 = u.arbitrary()?;
        tx.push((0..len).map(|i| fill ^ i as u8).collect());
        rx.push(vec![0xEE; len]);
        let (has_tx, has_rx) = (u.ratio(3u8, 4)?, u.ratio(3u8, 4)?);
        xfers.push(SpiIocTransfer {
            tx_buf: if has_tx { tx.last().map_or(0, |b| b.as_ptr() as u64) } else { 0 },
            rx_buf: if has_rx { rx.last_mut().map_or(0, |b| b.as_mut_ptr() as u64) } else { 0 },
            len: len as u32,
            speed_hz: crate::support::pick(u, &[0, 0, 0, 1_000_000, 20_000_000, 1, u32::MAX])?,
            delay_usecs: u.int_in_range(0u16..=1)?,
            bits_per_word: crate::support::pick(u, &[0, 0, 0, 8, 16, 32, 12])?,
            cs_change: u.int_in_range(0u8..=1)?,
            tx_nbits: *u.choose(&[0, 0, 1, 2, 4, 8])?,
            rx_nbits: *u.choose(&[0, 0, 1, 2, 4, 8])?,
            word_delay_usecs: u.int_in_range(0u8..=1)?,
            pad: u.arbitrary()?,
        });
    }
    let size = std::mem::size_of::<SpiIocTransfer>();
    // Now and then a size field that is no whole number of transfers.
    let request = if u.ratio(1u8, 16)? {
        spi_ioc_message(n) + (u32::from(u.int_in_range(1u8..=31)?) << 16)
    } else {
        spi_ioc_message(n)
    };
    xfers.push(SpiIocTransfer::default());
    let wire_ok = xfers.iter().take(n).all(|x| matches!(x.bits_per_word, 0 | 8) && x.tx_buf != 0 && x.rx_buf != 0);
    // SAFETY: the array holds n (+1) transfers whose buffers live and are `len` long.
    let result = unsafe { f.ioctl(u64::from(request), xfers.as_mut_ptr().cast::<c_void>(), &NoFds) };
    let total: usize = xfers[..n].iter().map(|x| x.len as usize).sum();
    if let Ok(moved) = result {
        assert!((((request >> 16) & 0x3FFF) as usize).is_multiple_of(size), "size field {request:#x} accepted");
        assert_eq!(moved as usize, total, "bytes moved");
        if wire_ok {
            assert_eq!(tx, rx, "loopback echo");
        }
    }
    Ok(())
}

fn step(f: &Arc<dyn NodeFile>, u: &mut Unstructured<'_>, bufsiz: usize) -> Result<()> {
    match u.int_in_range(0u8..=9)? {
        0..=2 => message(f, u, bufsiz)?,
        3 => {
            let mut v: u32 = crate::support::pick(u, &[0, 1, 2, 3, 4, 8, 0x100, 0x800, 1 << 17])?;
            if ioctl(f, uapi::SPI_IOC_WR_MODE32, &mut v).is_ok() {
                let mut back = 0u32;
                ioctl(f, uapi::SPI_IOC_RD_MODE32, &mut back).expect("RD_MODE32");
                assert_eq!(back, v & 3, "mode read back (the lab block does CPOL/CPHA only)");
            }
        }
        4 => {
            let mut v: u8 = u.arbitrary()?;
            let req = *u.choose(&[uapi::SPI_IOC_WR_MODE, uapi::SPI_IOC_WR_LSB_FIRST])?;
            let _ = ioctl(f, req, &mut v);
            let mut back = 0u8;
            ioctl(f, uapi::SPI_IOC_RD_MODE, &mut back).expect("RD_MODE");
            ioctl(f, uapi::SPI_IOC_RD_LSB_FIRST, &mut back).expect("RD_LSB_FIRST");
            assert_eq!(back, 0, "LSB first on an MSB-first block");
        }
        5 => {
            let mut v: u8 = crate::support::pick(u, &[0, 8, 16, 32, 33])?;
            if ioctl(f, uapi::SPI_IOC_WR_BITS_PER_WORD, &mut v).is_ok() {
                let mut back = 0u8;
                ioctl(f, uapi::SPI_IOC_RD_BITS_PER_WORD, &mut back).expect("RD_BITS");
                assert_eq!(back, if v == 0 { 8 } else { v });
            }
        }
        6 => {
            let mut v: u32 = crate::support::pick(u, &[0, 1, 1_000_000, 20_000_000, u32::MAX])?;
            if ioctl(f, uapi::SPI_IOC_WR_MAX_SPEED_HZ, &mut v).is_ok() {
                let mut back = 0u32;
                ioctl(f, uapi::SPI_IOC_RD_MAX_SPEED_HZ, &mut back).expect("RD_MAX_SPEED_HZ");
                assert_eq!(back, v);
            }
        }
        7 => {
            // Any request: the arg is large enough for any spidev struct.
            let mut arg = [0u8; 64];
            let req: u32 = u.arbitrary()?;
            if !(req & !(0x3FFF << 16) == spi_ioc_message(0) && (req >> 16) & 0x3FFF >= 32) {
                let _ = ioctl(f, req, &mut arg);
            }
        }
        8 => {
            let n = u.int_in_range(0..=bufsiz + 8)?;
            let mut buf = vec![0u8; n];
            if let Ok(got) = f.read(&mut buf, true) {
                assert!(got == n && n <= bufsiz, "read of {n} returned {got} (bufsiz {bufsiz})");
            }
        }
        _ => {
            let n = u.int_in_range(0..=bufsiz + 8)?;
            if let Ok(put) = f.write(&vec![0x5Au8; n]) {
                assert!(put == n && n <= bufsiz, "write of {n} returned {put} (bufsiz {bufsiz})");
            }
        }
    }
    Ok(())
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(bufsiz) = u.int_in_range(1usize..=4096) else { return };
    let (block, bus) = bus();
    block.attach(1, Loopback::new());
    let node = SpidevNode::new(bus, 1, 1, 20_000_000, bufsiz);
    let f = node.open(libc::O_RDWR).expect("open");
    while !u.is_empty() && step(&f, &mut u, bufsiz).is_ok() {}
}
