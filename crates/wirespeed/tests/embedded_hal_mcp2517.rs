//! An existing embedded-hal 1.0 driver crate from the registry runs
//! unmodified on wirespeed and the lab: `mcp2517` (AtlasAero's `no_std`
//! driver for the MCP2517FD, whose SPI protocol and register map the
//! MCP2518FD shares) drives the lab's MCP2518FD model through
//! [`wirespeed::spi::SpiDevice`]'s `embedded_hal::spi::SpiDevice`
//! implementation. Nothing in the crate knows of wirespeed; all it is
//! given is the device and a clock.

use bytes::Bytes;
use embedded_can::{Id, StandardId};
use embedded_time::{clock, fraction::Fraction, Clock, Instant};
use mcp2517::can::{CanController, MCP2517};
use mcp2517::config::{BitRateConfig, CanBaudRate, Configuration, RequestMode, SysClk};
use mcp2517::message::{Can20, FrameType, TxMessage};
use std::time::Duration;
use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, DeviceConfig, Policy, SpiDevice};
use wirespeed_lab::can::tools::{DataMode, Generator, GeneratorConfig, Recorder};
use wirespeed_lab::can::{BitRates, Bus as CanBus, CanId};
use wirespeed_lab::devices::mcp2518fd::{Mcp2518fd, Mcp2518fdConfig, Mode};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

/// The host's monotonic clock as an embedded-time clock, in ns: the crate
/// times its mode changes with it.
struct HostClock;

impl Clock for HostClock {
    type T = u64;
    const SCALING_FACTOR: Fraction = Fraction::new(1, 1_000_000_000);

    fn try_now(&self) -> Result<Instant<Self>, clock::Error> {
        Ok(Instant::new(now().as_ns()))
    }
}

struct Board {
    _lab: Lab,
    can: CanBus,
    chip: Mcp2518fd,
    spi: SpiDevice,
}

/// An MCP2518FD with a 40 MHz crystal on CS 0 of a lab controller, on a
/// 500 kbit/s CAN bus; its SPI device at 10 MHz, mode 0.
fn board() -> Board {
    let lab = Lab::new(LabConfig::default());
    let can = CanBus::new(&lab, "can0", BitRates::new(500_000, 2_000_000)).unwrap();
    let chip = Mcp2518fd::new(&lab, Mcp2518fdConfig::default());
    chip.attach_to_bus(&can, "mcp2518fd");
    let block = lab.spi_controller(Default::default());
    block.attach(0, chip.clone());
    let bus = Bus::new(LabSpi::new(block), Policy::fast());
    let spi = bus.device(DeviceConfig::new(0, 10_000_000)).unwrap();
    Board { _lab: lab, can, chip, spi }
}

fn config(mode: RequestMode) -> Configuration {
    Configuration {
        mode,
        bit_rate: BitRateConfig { sys_clk: SysClk::Mhz40, can_speed: CanBaudRate::Kpbs500 },
        ..Configuration::default()
    }
}

fn standard(id: u16) -> Id {
    Id::Standard(StandardId::new(id).unwrap())
}

/// Polls the crate's non-blocking receive until a frame arrives (or gives up).
fn receive_within(
    can: &mut MCP2517<SpiDevice, HostClock>,
    buf: &mut [u8],
    limit: Duration,
) -> mcp2517::message::RxFrame {
    let t0 = std::time::Instant::now();
    loop {
        match can.receive(buf, false) {
            Ok(frame) => return frame,
            Err(mcp2517::can::CanError::RxFifoEmptyErr) if t0.elapsed() < limit => std::thread::yield_now(),
            Err(e) => panic!("no frame received within {limit:?}: {e:?}"),
        }
    }
}

#[test]
fn the_mcp2517_crate_configures_the_chip_and_loops_a_frame_back() {
    let b = board();
    let mut can: MCP2517<SpiDevice, HostClock> = MCP2517::new(b.spi.clone());
    can.reset().unwrap();
    can.configure(&config(RequestMode::InternalLoopback), &HostClock).unwrap();
    assert_eq!(b.chip.mode(now()), Mode::InternalLoopback, "the crate's mode request reached the chip");
    // What the crate wrote is what the datasheet's registers say: C1NBTCFG
    // for 500 kbit/s at 40 MHz (BRP 0, TSEG1 62, TSEG2 15, SJW 1).
    assert_eq!(b.chip.peek(0x004, now()), 0x003E_0F01);

    let msg = TxMessage::new(Can20::<8> {}, Bytes::from_static(&[0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3, 4]), standard(0x123))
        .unwrap();
    can.transmit(&msg, true).unwrap();
    let mut buf = [0u8; 8];
    let rx = receive_within(&mut can, &mut buf, Duration::from_secs(5));
    assert_eq!(rx.id, standard(0x123));
    assert_eq!(rx.frame_type, FrameType::Data);
    assert_eq!(rx.data_length, 8);
    assert_eq!(buf, [0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3, 4]);
    assert_eq!(b.can.frames_ok(), 0, "internal loopback puts nothing on the bus");
    assert!(matches!(can.receive(&mut buf, false), Err(mcp2517::can::CanError::RxFifoEmptyErr)));
}

#[test]
fn the_mcp2517_crate_sends_and_receives_on_the_virtual_can_bus() {
    let b = board();
    let rec = Recorder::attach(&b.can, 64);
    let mut can: MCP2517<SpiDevice, HostClock> = MCP2517::new(b.spi.clone());
    can.reset().unwrap();
    can.configure(&config(RequestMode::NormalCAN2_0), &HostClock).unwrap();
    assert_eq!(b.chip.mode(now()), Mode::NormalCan20);

    // Another node (it also acknowledges our frames) sends one frame.
    let data = DataMode::Fixed(std::array::from_fn(|i| 0x40 + i as u8));
    let peer = Generator::attach(
        &b.can,
        "peer",
        GeneratorConfig { id: CanId::Standard(0x0A5), len: 6, count: 1, data, ..Default::default() },
    )
    .unwrap();
    peer.start(now());
    let mut buf = [0u8; 8];
    let rx = receive_within(&mut can, &mut buf, Duration::from_secs(5));
    assert_eq!(rx.id, standard(0x0A5));
    assert_eq!(&buf[..rx.data_length], &[0x40, 0x41, 0x42, 0x43, 0x44, 0x45]);

    // And the crate's frame goes out on the wire, acknowledged.
    let msg = TxMessage::new(Can20::<8> {}, Bytes::from_static(&[7, 7, 7]), standard(0x321)).unwrap();
    can.transmit(&msg, true).unwrap();
    let t0 = std::time::Instant::now();
    let sent = loop {
        if let Some(r) = rec.records().into_iter().find(|r| r.frame.id() == CanId::Standard(0x321)) {
            break r;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "the crate's frame never reached the bus");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(sent.frame.data(), &[7, 7, 7]);
    assert!(sent.error.is_none(), "{:?}", sent.error);
}
