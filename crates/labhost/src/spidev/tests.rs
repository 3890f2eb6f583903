use super::*;
use std::ffi::c_void;
use wirespeed::backend::lab::LabSpi;
use wirespeed::linux::spidev::uapi::{spi_ioc_message, SPI_IOC_RD_MAX_SPEED_HZ, SPI_IOC_RD_MODE32, SPI_IOC_WR_MODE32};
use wirespeed::spi::Policy;
use wirespeed_lab::devices::spi_nor::W25Q128JV;
use wirespeed_lab::devices::{Loopback, SpiNor};
use wirespeed_lab::{Lab, LabConfig};

struct NoFds;
impl FdInstaller for NoFds {
    fn install(&self, _: Arc<dyn NodeFile>, _: bool) -> Result<i32, Errno> {
        panic!("spidev installs no descriptors")
    }
}

fn node(bufsiz: usize) -> (SpidevNode, SpidevNode, Lab) {
    let lab = Lab::new(LabConfig { instant_wire: true, ..LabConfig::default() });
    let block = lab.spi_controller(Default::default());
    block.attach(0, SpiNor::new(&W25Q128JV));
    block.attach(1, Loopback::new());
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    (SpidevNode::new(bus.clone(), 0, 0, 20_000_000, bufsiz), SpidevNode::new(bus, 1, 1, 20_000_000, bufsiz), lab)
}

const WR_LSB_FIRST: u64 = uapi::SPI_IOC_WR_LSB_FIRST as u64;
const RD_BITS: u64 = RD_BITS_PER_WORD;
const WR_BITS: u64 = WR_BITS_PER_WORD;
const WR_SPEED: u64 = WR_MAX_SPEED_HZ;

fn ioctl<T>(f: &Arc<dyn NodeFile>, request: u64, arg: &mut T) -> Result<i32, Errno> {
    // SAFETY: `arg` is a live T of the size the request names.
    unsafe { f.ioctl(request, (arg as *mut T).cast::<c_void>(), &NoFds) }
}

fn xfer(tx: &[u8], rx: &mut [u8]) -> SpiIocTransfer {
    SpiIocTransfer {
        tx_buf: tx.as_ptr() as u64,
        rx_buf: rx.as_mut_ptr() as u64,
        len: tx.len() as u32,
        ..SpiIocTransfer::default()
    }
}

#[test]
fn a_message_reads_the_nor_jedec_id_and_returns_the_bytes_moved() {
    let (nor, _, _lab) = node(4096);
    let f = nor.open(libc::O_RDWR).unwrap();
    let cmd = [0x9f];
    let mut id = [0u8; 3];
    let mut xfers = [
        SpiIocTransfer { tx_buf: cmd.as_ptr() as u64, len: 1, ..SpiIocTransfer::default() },
        SpiIocTransfer { rx_buf: id.as_mut_ptr() as u64, len: 3, ..SpiIocTransfer::default() },
    ];
    let n = ioctl(&f, spi_ioc_message(2) as u64, &mut xfers).unwrap();
    assert_eq!(n, 4);
    assert_eq!(id, [0xef, 0x40, 0x18]);
}

#[test]
fn read_and_write_are_half_duplex_transfers() {
    let (nor, _, _lab) = node(4096);
    let f = nor.open(libc::O_RDWR).unwrap();
    // RDID as write(9f) then read(3) would lose CS between them; a read alone clocks zeros.
    assert_eq!(f.write(&[0x06]).unwrap(), 1, "WREN");
    let mut status = [0u8; 2];
    let tx = [0x05, 0];
    let mut x = [xfer(&tx, &mut status)];
    ioctl(&f, spi_ioc_message(1) as u64, &mut x).unwrap();
    assert_eq!(status[1] & 0x02, 0x02, "WEL set by the write()");
    let mut buf = [0xaau8; 4];
    assert_eq!(f.read(&mut buf, false).unwrap(), 4);
}

#[test]
fn the_loopback_echoes_and_bufsiz_limits_each_direction() {
    let (_, lb, _lab) = node(64);
    let f = lb.open(libc::O_RDWR).unwrap();
    let tx: Vec<u8> = (0..64).collect();
    let mut rx = vec![0u8; 64];
    let mut x = [xfer(&tx, &mut rx)];
    assert_eq!(ioctl(&f, spi_ioc_message(1) as u64, &mut x), Ok(64));
    assert_eq!(rx, tx);
    let tx = [0u8; 65];
    let mut rx = [0u8; 65];
    let mut x = [xfer(&tx, &mut rx)];
    assert_eq!(ioctl(&f, spi_ioc_message(1) as u64, &mut x), Err(libc::EMSGSIZE));
    assert_eq!(f.write(&tx), Err(libc::EMSGSIZE));
    let mut big = [0u8; 65];
    assert_eq!(f.read(&mut big, false), Err(libc::EMSGSIZE));
}

#[test]
fn mode_speed_and_word_size_are_kept_per_device_and_checked() {
    let (_, lb, _lab) = node(4096);
    let a = lb.open(libc::O_RDWR).unwrap();
    let b = lb.open(libc::O_RDWR).unwrap();
    let mut mode: u8 = 3;
    assert_eq!(ioctl(&a, WR_MODE, &mut mode), Ok(0));
    let mut back: u8 = 0;
    ioctl(&b, RD_MODE, &mut back).unwrap();
    assert_eq!(back, 3, "another open file sees the device's mode");
    let mut m32: u32 = 0x4; // SPI_CS_HIGH: the lab block cannot
    assert_eq!(ioctl(&a, SPI_IOC_WR_MODE32 as u64, &mut m32), Err(libc::EINVAL));
    let mut m32: u32 = 1 << 20; // outside the user mask
    assert_eq!(ioctl(&a, SPI_IOC_WR_MODE32 as u64, &mut m32), Err(libc::EINVAL));
    let mut m32: u32 = 0x100 | 1; // TX_DUAL is cleared, not refused
    assert_eq!(ioctl(&a, SPI_IOC_WR_MODE32 as u64, &mut m32), Ok(0));
    ioctl(&a, SPI_IOC_RD_MODE32 as u64, &mut m32).unwrap();
    assert_eq!(m32, 1);
    let mut lsb: u8 = 1;
    assert_eq!(ioctl(&a, WR_LSB_FIRST, &mut lsb), Err(libc::EINVAL));
    let mut hz: u32 = 0;
    assert_eq!(ioctl(&a, WR_SPEED, &mut hz), Err(libc::EINVAL));
    let mut hz: u32 = 1_000_000;
    assert_eq!(ioctl(&a, WR_SPEED, &mut hz), Ok(0));
    let mut back: u32 = 0;
    ioctl(&b, SPI_IOC_RD_MAX_SPEED_HZ as u64, &mut back).unwrap();
    assert_eq!(back, 1_000_000);
    let mut bits: u8 = 0;
    assert_eq!(ioctl(&a, WR_BITS, &mut bits), Ok(0));
    ioctl(&a, RD_BITS, &mut bits).unwrap();
    assert_eq!(bits, 8, "0 means 8");
    let mut bits: u8 = 33;
    assert_eq!(ioctl(&a, WR_BITS, &mut bits), Err(libc::EINVAL));
}

#[test]
fn unknown_requests_and_odd_sizes_are_refused() {
    let (_, lb, _lab) = node(4096);
    let f = lb.open(libc::O_RDWR).unwrap();
    let mut word: u32 = 0;
    assert_eq!(ioctl(&f, 0x8004_6b63, &mut word), Err(libc::ENOTTY), "an unknown spidev number");
    assert_eq!(ioctl(&f, 0x5401, &mut word), Err(libc::ENOTTY), "TCGETS");
    // A message size that is not a whole number of transfers.
    let mut raw = [0u8; 40];
    assert_eq!(ioctl(&f, 0x4028_6b00, &mut raw), Err(libc::EINVAL));
    assert_eq!(ioctl(&f, 0x4000_6b00, &mut raw), Ok(0), "SPI_IOC_MESSAGE(0) moves nothing");
}
