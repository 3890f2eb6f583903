//! One echo rig: a lab with a CAN bus, the `cangen`-like generator, a bus
//! recorder, an MCP2518FD model on a WSPI block (CS 0) with its INT pin on a
//! lab GPIO chip (and on a probe timing how long it is low), and the driver
//! on a bus run with one policy.

use std::sync::{Arc, Mutex};
use wirespeed::backend::lab::{gpio as labgpio, LabSpi};
use wirespeed::gpio::{Edge, LineRequest, LineSettings, RequestConfig};
use wirespeed::spi::{Bus as SpiBus, Policy, SpiDevice};
use wirespeed_drivers::mcp251xfd;
use wirespeed_lab::can::tools::{DataMode, Generator, GeneratorConfig, Recorder};
use wirespeed_lab::can::{BitRates, Bus as CanBus, CanId};
use wirespeed_lab::devices::mcp2518fd::{Errata, Mcp2518fd, Mcp2518fdConfig};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::spi::{SpiController, SpiControllerConfig};
use wirespeed_lab::PinSink;
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::realtime::CpuList;
use wirespeed_time::{now, Instant};

/// The INT line's offset on the lab GPIO chip.
pub const INT_LINE: u32 = 5;

/// The instant INT last fell (if low now) and the finished low intervals.
type Lows = (Option<Instant>, Vec<(Instant, Instant)>);

/// Records the INT pin's low intervals (the seed's "IRQ line low").
#[derive(Default)]
pub struct LowProbe {
    fell: Mutex<Lows>,
    /// Per fall: its instant and how late (ns) the lab drove it.
    late: Mutex<Vec<(Instant, u64)>>,
}

impl PinSink for LowProbe {
    fn drive(&self, high: bool, at: Instant) {
        let mut g = self.fell.lock().unwrap_or_else(|e| e.into_inner());
        if !high {
            g.0.get_or_insert(at);
            // The lab's interrupt thread drives the pin: how late it ran.
            self.late.lock().unwrap_or_else(|e| e.into_inner()).push((at, now().ns_since(at)));
        } else if let Some(f) = g.0.take() {
            g.1.push((f, at));
        }
    }
}

impl LowProbe {
    /// How late (ns) the lab's interrupt thread asserted INT, per assertion.
    pub fn lateness(&self) -> Vec<u64> {
        self.late.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|&(_, n)| n).collect()
    }

    /// How late (ns) the lab's interrupt thread drove the fall at `fell`
    /// (an instant [`LowProbe::intervals`] gives), if the probe saw it.
    pub fn lateness_of(&self, fell: Instant) -> Option<u64> {
        let late = self.late.lock().unwrap_or_else(|e| e.into_inner());
        late.iter().rev().find(|&&(at, _)| at == fell).map(|&(_, n)| n)
    }

    /// (fell, rose) of each low interval so far.
    pub fn intervals(&self) -> Vec<(Instant, Instant)> {
        self.fell.lock().unwrap_or_else(|e| e.into_inner()).1.clone()
    }
}

pub struct Rig {
    pub _lab: Lab,
    pub _can: CanBus,
    pub model: Mcp2518fd,
    pub block: SpiController,
    pub _gpio: GpioChip,
    pub _spi_bus: SpiBus,
    pub spi: SpiDevice,
    pub int: Option<LineRequest>,
    pub gen: Generator,
    pub rec: Recorder,
    pub probe: Arc<LowProbe>,
}

/// What the generator sends.
#[derive(Clone, Copy, Debug)]
pub struct Traffic {
    pub id: u16,
    pub len: usize,
    pub gap_ns: u64,
    pub count: u64,
    pub bitrate: u32,
    /// The model's silicon errata on (the default) or the ideal chip.
    pub errata: bool,
}

impl Rig {
    /// A rig whose lab's interrupt thread runs on `lab_cpus` (if given).
    pub fn new(
        policy: Policy,
        name: &'static str,
        t: &Traffic,
        record: usize,
        lab_cpus: Option<&CpuList>,
    ) -> Result<Rig, String> {
        let config = LabConfig { interrupt_thread_cpus: lab_cpus.cloned(), ..LabConfig::default() };
        let lab = Lab::try_new(config).map_err(|e| e.to_string())?;
        let can =
            CanBus::new(&lab, "can0", BitRates::new(t.bitrate, t.bitrate.max(2_000_000))).map_err(|e| e.to_string())?;
        let rec = Recorder::attach(&can, record);
        let model = Mcp2518fd::new(&lab, Mcp2518fdConfig::default());
        model.set_errata(if t.errata { Errata::ALL } else { Errata::NONE });
        model.attach_to_bus(&can, "mcp2518fd");
        let block = lab.spi_controller(SpiControllerConfig { name, ..SpiControllerConfig::default() });
        block.attach(0, model.clone());
        let gpio = lab.gpio_chip(GpioChipConfig::default());
        let probe = Arc::new(LowProbe::default());
        // The probe first: its lateness is the lab's, not the wake-up of
        // the thread waiting on the GPIO line (which the sink performs).
        model.int_pin().connect(probe.clone(), now());
        model.int_pin().connect(gpio.input_sink(INT_LINE), now());
        let chip = labgpio::open(&gpio).map_err(|e| e.to_string())?;
        let int = chip
            .request_lines(
                &RequestConfig::new("mcp2518fd-int").line(INT_LINE, LineSettings::input().edge(Edge::Falling)),
            )
            .map_err(|e| e.to_string())?;
        let spi_bus = SpiBus::try_new(LabSpi::new(block.clone()), policy).map_err(|e| e.to_string())?;
        let dcfg = mcp251xfd::device_config(0, Mcp2518fdConfig::default().osc_hz as u32);
        let spi = spi_bus.device(dcfg).map_err(|e| e.to_string())?;
        let id = CanId::Standard(t.id);
        let gen = Generator::attach(
            &can,
            "cangen",
            GeneratorConfig {
                id,
                len: t.len,
                fd: false,
                brs: false,
                gap_ns: t.gap_ns,
                count: t.count,
                data: DataMode::Random { seed: 0x5EED },
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(Rig {
            _lab: lab,
            _can: can,
            model,
            block,
            _gpio: gpio,
            _spi_bus: spi_bus,
            spi,
            int: Some(int),
            gen,
            rec,
            probe,
        })
    }
}

/// CPU time (ns) of this process's thread whose name starts with `prefix`
/// (`/proc/self/task/*/comm`, `schedstat`); 0 if none.
pub fn named_thread_cpu_ns(prefix: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    let mut total = 0;
    for e in dir.flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(prefix) {
            let s = std::fs::read_to_string(p.join("schedstat")).unwrap_or_default();
            total += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    total
}
