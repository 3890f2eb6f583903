//! The lab rig the MCP251xFD driver tests share: a CAN bus, an MCP2518FD
//! model on a lab SPI controller (directly, or behind a fault-injecting
//! proxy), its INT on a lab GPIO chip, and the stack's SPI bus over it.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use wirespeed::backend::lab::{gpio as labgpio, LabSpi, LabSpidevIo};
use wirespeed::gpio::{Edge, LineRequest, LineSettings, RequestConfig};
use wirespeed::linux::spidev::{Limits, Spidev};
use wirespeed::spi::{Bus as SpiBus, DeviceConfig, Policy, SpiDevice};
use wirespeed::time::now;
use wirespeed::time::Instant;
use wirespeed_drivers::mcp251xfd::{self, Config, Error, Mcp251xfd};
use wirespeed_lab::can::{BitRates, Bus as CanBus, NodeId};
use wirespeed_lab::devices::mcp2518fd::{Errata, Mcp2518fd, Mcp2518fdConfig};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::spi::{SpiController, SpiDeviceModel};
use wirespeed_lab::{Lab, LabConfig};

pub const INT_LINE: u32 = 5;

pub struct Rig {
    pub _lab: Lab,
    pub can: CanBus,
    pub dev: Mcp2518fd,
    /// The device's node on the CAN bus.
    pub node: NodeId,
    pub block: SpiController,
    pub _gpio: GpioChip,
    pub spi: SpiDevice,
    pub int: Option<LineRequest>,
    /// The MOSI fault injector, if the rig has one.
    pub flipper: Option<Flipper>,
}

/// How the driver reaches the chip: the stack's controller driver for the
/// lab block, or the spidev backend over an emulated spidev node of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Controller,
    Spidev,
}

/// What to build.
#[derive(Clone, Copy, Debug)]
pub struct RigOptions {
    pub bitrate: u32,
    pub path: Path,
    /// The SPI device's clock (`None`: `mcp251xfd::device_config`'s 17 MHz).
    pub spi_hz: Option<u32>,
    pub model: Mcp2518fdConfig,
    pub errata: Errata,
    /// Put a [`Flipper`] between the controller and the device.
    pub flipper: bool,
    /// The SPI core's policy.
    pub policy: fn() -> Policy,
}

impl RigOptions {
    pub fn new(bitrate: u32) -> RigOptions {
        RigOptions {
            bitrate,
            path: Path::Controller,
            spi_hz: None,
            model: Mcp2518fdConfig::default(),
            errata: Errata::ALL,
            flipper: false,
            policy: Policy::fast,
        }
    }
}

pub fn rig(bitrate: u32) -> Rig {
    rig_on(bitrate, Path::Controller)
}

pub fn rig_on(bitrate: u32, path: Path) -> Rig {
    rig_with(RigOptions { path, ..RigOptions::new(bitrate) })
}

pub fn rig_with(o: RigOptions) -> Rig {
    let lab = Lab::new(LabConfig::default());
    let can = CanBus::new(&lab, "can0", BitRates::new(o.bitrate, 2_000_000)).unwrap();
    let dev = Mcp2518fd::new(&lab, o.model);
    dev.set_errata(o.errata);
    let node = dev.attach_to_bus(&can, "mcp2518fd");
    let block = lab.spi_controller(Default::default());
    let flipper = if o.flipper {
        let f = Flipper::new(dev.clone());
        block.attach(0, f.clone());
        Some(f)
    } else {
        block.attach(0, dev.clone());
        None
    };
    let gpio = lab.gpio_chip(GpioChipConfig::default());
    dev.int_pin().connect(gpio.input_sink(INT_LINE), now());
    let chip = labgpio::open(&gpio).unwrap();
    let int = chip
        .request_lines(&RequestConfig::new("mcp2518fd-int").line(INT_LINE, LineSettings::input().edge(Edge::Falling)))
        .unwrap();
    let bus = SpiBus::new(LabSpi::new(block.clone()), (o.policy)());
    let bus = match o.path {
        Path::Controller => bus,
        Path::Spidev => {
            let limits = Limits::with_bufsiz(Limits::DEFAULT_BUFSIZ);
            let node = LabSpidevIo::new(bus, 0, 40_000_000, limits);
            SpiBus::with_message_backend(Spidev::with_io(node, "lab spidev0.0", limits).unwrap(), (o.policy)())
        }
    };
    let dcfg = match o.spi_hz {
        None => mcp251xfd::device_config(0, 40_000_000),
        Some(hz) => DeviceConfig::new(0, hz).cs_timing_ns(50, 50, 50),
    };
    let spi = bus.device(dcfg).unwrap();
    Rig { _lab: lab, can, dev, node, block, _gpio: gpio, spi, int: Some(int), flipper }
}

pub fn cfg(bitrate: u32) -> Config {
    Config { nominal_bitrate: bitrate, ..Config::default() }
}

pub fn driver(r: &mut Rig, c: Config) -> Result<Mcp251xfd, Error> {
    Mcp251xfd::new(r.spi.clone(), r.int.take().unwrap(), INT_LINE, c)
}

/// A proxy between the SPI controller and the device that, once armed,
/// aims the model's own MOSI fault ([`Mcp2518fd::flip_mosi`]) at the data
/// byte of the `skip + 1`-th write (WRITE, WRITE_CRC or WRITE_SAFE) to one
/// register byte address: it splits every word into bytes and arms the
/// flip just before that byte reaches the device.
#[derive(Clone)]
pub struct Flipper {
    dev: Mcp2518fd,
    st: Arc<Mutex<FlipState>>,
}

#[derive(Default)]
struct FlipState {
    /// (address, windows to let pass, XOR mask), while armed.
    armed: Option<(u16, u32, u8)>,
    /// Bytes of the current CS window so far, and its first two.
    pos: usize,
    cmd: [u8; 2],
    /// Flips done.
    fired: u32,
}

impl Flipper {
    fn new(dev: Mcp2518fd) -> Flipper {
        Flipper { dev, st: Arc::new(Mutex::new(FlipState::default())) }
    }

    /// Flips `mask` into the data byte of the `skip + 1`-th write to `addr` from now on.
    pub fn arm(&self, addr: u16, skip: u32, mask: u8) {
        self.st.lock().unwrap().armed = Some((addr, skip, mask));
    }

    /// How many flips were done.
    pub fn fired(&self) -> u32 {
        self.st.lock().unwrap().fired
    }

    fn before_byte(&mut self) {
        let mut st = self.st.lock().unwrap();
        let pos = st.pos;
        let Some((addr, skip, mask)) = st.armed else { return };
        if pos < 2 {
            return;
        }
        let instr = st.cmd[0] >> 4;
        let a = (u16::from(st.cmd[0] & 0xF) << 8) | u16::from(st.cmd[1]);
        // The data byte: after the command (WRITE, WRITE_SAFE), after the
        // length byte too (WRITE_CRC).
        let data_at = match instr {
            0x2 | 0xC => 2,
            0xA => 3,
            _ => return,
        };
        if a != addr || pos != data_at {
            return;
        }
        if skip > 0 {
            st.armed = Some((addr, skip - 1, mask));
            return;
        }
        st.armed = None;
        st.fired += 1;
        drop(st);
        self.dev.flip_mosi(1, mask);
    }
}

impl SpiDeviceModel for Flipper {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        {
            let mut st = self.st.lock().unwrap();
            st.pos = 0;
        }
        self.dev.chip_select(asserted, at);
    }

    fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32 {
        if bits == 0 || !bits.is_multiple_of(8) || bits > 32 {
            return self.dev.exchange(mosi, bits, at);
        }
        let n = bits / 8;
        let mut miso = 0u32;
        for i in (0..n).rev() {
            let b = (mosi >> (8 * u32::from(i))) as u8;
            self.before_byte();
            let m = self.dev.exchange(u32::from(b), 8, at);
            miso |= (m & 0xFF) << (8 * u32::from(i));
            let mut st = self.st.lock().unwrap();
            if st.pos < 2 {
                let p = st.pos;
                st.cmd[p] = b;
            }
            st.pos += 1;
        }
        miso
    }

    fn sclk_hz(&mut self, hz: u64) {
        self.dev.sclk_hz(hz);
    }
}
