//! Builds one `[[gpio]]`: its lab GPIO chip, what drives its lines from
//! outside (a toggling or fixed level, a device's output pin), the device
//! inputs its pads drive, and its `/dev/gpiochipN` node.

use super::build_spi::{LabDevice, SpiParts};
use super::errors::{BoardError, Source};
use super::model::{DevicePin, GpioChipSpec, LineDriver, WireRef};
use crate::gpio::GpioChipNode;
use crate::node::Node;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use wirespeed_lab::devices::SpiNor;
use wirespeed_lab::gpio::{EdgeDetect, GpioChip, GpioChipConfig, LineSetup, Pull};
use wirespeed_lab::{Lab, Pin, PinSink, Scheduler};
use wirespeed_time::{now, Instant};

/// A built `[[gpio]]`.
#[derive(Debug)]
pub struct GpioParts {
    /// Chip number (`/dev/gpiochip<index>`).
    pub index: u32,
    /// The lab chip.
    pub chip: GpioChip,
    /// Its toggling lines: each stops when its handle here is dropped.
    pub togglers: Vec<Arc<Toggler>>,
}

/// Builds `spec` on `lab`, wiring lines to the devices of `spi`; appends
/// its node to `nodes`.
pub(crate) fn build_gpio(
    lab: &Lab,
    spec: &GpioChipSpec,
    src: &Source<'_>,
    spi: &[SpiParts],
    nodes: &mut Vec<(String, Arc<dyn Node>)>,
) -> Result<GpioParts, BoardError> {
    let config =
        GpioChipConfig { name: format!("gpiochip{}", spec.chip), label: spec.label.clone(), lines: spec.lines };
    let chip = lab.try_gpio_chip(config).map_err(|e| src.error_at_line(spec.line, e.to_string()))?;
    let mut togglers = Vec::new();
    for d in &spec.drivers {
        let at = now();
        match d.driver {
            LineDriver::Toggle { period_us } => {
                togglers.push(Toggler::start(lab.scheduler(), &chip, d.offset, period_us * 1000));
            }
            LineDriver::Level(high) => chip.drive_external(d.offset, Some(high), at),
            LineDriver::Wire(w) => {
                let device = find(spi, w).ok_or_else(|| src.error_at_line(d.line, "the wired device was not built"))?;
                wire(&chip, d.offset, w.pin, device, at);
            }
        }
    }
    let node = GpioChipNode::new(chip.clone(), spec.chip, spec.names.clone());
    nodes.push((format!("/dev/gpiochip{}", spec.chip), Arc::new(node)));
    Ok(GpioParts { index: spec.chip, chip, togglers })
}

fn find(spi: &[SpiParts], w: WireRef) -> Option<&LabDevice> {
    let bus = spi.iter().find(|b| b.bus_no == w.bus)?;
    bus.devices.iter().find(|(cs, _)| *cs == w.cs).map(|(_, d)| d)
}

/// Connects line `offset` of `chip` and `pin` of `device` (checked to have it).
fn wire(chip: &GpioChip, offset: u32, pin: DevicePin, device: &LabDevice, at: Instant) {
    match (device, pin) {
        (LabDevice::Mcp2518fd { device, .. }, DevicePin::Int | DevicePin::Int0 | DevicePin::Int1) => {
            let net: Pin = match pin {
                DevicePin::Int => device.int_pin(),
                DevicePin::Int0 => device.int0_pin(),
                _ => device.int1_pin(),
            };
            net.connect(chip.input_sink(offset), at);
        }
        (LabDevice::SpiNor(nor), DevicePin::Wp) => {
            // The board's pull-up on WP#: write protection is off until software drives the line low.
            let _ = chip.configure(offset, &LineSetup::input(Pull::Up, EdgeDetect::None), at);
            chip.output_pin(offset).connect(Arc::new(WpInput(nor.clone())), at);
        }
        (LabDevice::Ad7606(adc), DevicePin::Busy) => adc.busy_pin().connect(chip.input_sink(offset), at),
        (LabDevice::Ad7606(adc), DevicePin::Convst) => {
            // CONVST idles low (a pull-down on the board) until software drives it.
            let _ = chip.configure(offset, &LineSetup::input(Pull::Down, EdgeDetect::None), at);
            chip.output_pin(offset).connect(adc.convst_input(), at);
        }
        _ => unreachable!("the board file's checks match pins to the devices that have them"),
    }
}

/// A NOR's WP# input, driven by a GPIO pad.
struct WpInput(SpiNor);

impl PinSink for WpInput {
    fn drive(&self, high: bool, _at: Instant) {
        self.0.set_wp_low(!high);
    }
}

/// A line driven from outside that toggles every `period_ns`, starting
/// low, on the lab's interrupt thread. Its scheduled events hold it weakly:
/// it stops when the board drops it.
#[derive(Debug)]
pub struct Toggler {
    chip: GpioChip,
    offset: u32,
    period_ns: u64,
    high: AtomicBool,
    scheduler: Scheduler,
}

impl Toggler {
    fn start(scheduler: &Scheduler, chip: &GpioChip, offset: u32, period_ns: u64) -> Arc<Toggler> {
        let t = Arc::new(Toggler {
            chip: chip.clone(),
            offset,
            period_ns,
            high: AtomicBool::new(false),
            scheduler: scheduler.clone(),
        });
        let start = now();
        chip.drive_external(offset, Some(false), start);
        t.schedule(Arc::downgrade(&t), start.add_ns(period_ns));
        t
    }

    fn schedule(&self, me: Weak<Toggler>, due: Instant) {
        self.scheduler.schedule(due, move |ran| {
            if let Some(t) = me.upgrade() {
                t.tick(&me, due, ran);
            }
        });
    }

    fn tick(&self, me: &Weak<Toggler>, due: Instant, ran: Instant) {
        let high = !self.high.fetch_xor(true, Ordering::Relaxed);
        self.chip.drive_external(self.offset, Some(high), due);
        let mut next = due.add_ns(self.period_ns);
        if next <= ran {
            // Late by a whole period or more (a stopped process): skip the missed edges.
            next = ran.add_ns(self.period_ns);
        }
        self.schedule(me.clone(), next);
    }
}
