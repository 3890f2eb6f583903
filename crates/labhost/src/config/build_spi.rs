//! Builds one `[[spi]]`: its WSPI block, the device models on its chip
//! selects, the stack's bus on the block (as the bench's `lab-spidev`
//! target does: [`LabSpi`] with [`Policy::fast`], the emulated kernel
//! running the block as fast as it can) and a spidev node per device.

use super::errors::{BoardError, Source};
use super::model::{DeviceKind, DeviceSpec, SpiBusSpec};
use crate::node::Node;
use crate::spidev::SpidevNode;
use std::path::Path;
use std::sync::{Arc, Mutex};
use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, Policy};
use wirespeed_lab::can::{self, BitRates};
use wirespeed_lab::devices::{Ad7606, Ad7606Config, Loopback, Mcp2518fd, Mcp2518fdConfig, SpiNor, SpiNorOptions};
use wirespeed_lab::spi::{SpiController, SpiControllerConfig};
use wirespeed_lab::Lab;

/// Events a block's trace holds when one is asked for (about 32 MiB).
pub const TRACE_EVENTS: usize = 1 << 20;

/// A built `[[spi]]`.
#[derive(Debug)]
pub struct SpiParts {
    /// Bus number.
    pub bus_no: u32,
    /// The WSPI block.
    pub block: SpiController,
    /// The stack's bus on the block (the one the spidev nodes run on).
    pub bus: Bus,
    /// spidev's bufsiz on this bus.
    pub bufsiz: usize,
    /// Devices by chip select, in file order.
    pub devices: Vec<(u8, LabDevice)>,
}

/// A device model on a board (a clone of the attached one: its backdoor).
#[derive(Clone, Debug)]
pub enum LabDevice {
    /// An SPI NOR flash.
    SpiNor(SpiNor),
    /// A loopback.
    Loopback(Loopback),
    /// An MCP2518FD and the CAN bus it is the node of.
    Mcp2518fd {
        /// The device.
        device: Mcp2518fd,
        /// Its CAN bus.
        can: can::Bus,
    },
    /// An AD7606.
    Ad7606(Ad7606),
}

/// Builds `spec` on `lab`: image paths are relative to `base_dir`; `trace`
/// starts the block's bus trace. Appends its nodes to `nodes`, numbering
/// their minors from `next_minor`.
pub(crate) fn build_spi(
    lab: &Lab,
    spec: &SpiBusSpec,
    src: &Source<'_>,
    base_dir: &Path,
    trace: bool,
    next_minor: &mut u32,
    nodes: &mut Vec<(String, Arc<dyn Node>)>,
) -> Result<SpiParts, BoardError> {
    let config = SpiControllerConfig {
        name: block_name(spec.bus),
        fifo_bytes: spec.fifo_bytes,
        base_clock_hz: spec.base_clock_hz,
        ..SpiControllerConfig::default()
    };
    let at_bus = |e: &dyn std::fmt::Display| src.error_at_line(spec.line, format!("bus {}: {e}", spec.bus));
    let block = lab.try_spi_controller(config).map_err(|e| at_bus(&e))?;
    let mut devices = Vec::with_capacity(spec.devices.len());
    for d in &spec.devices {
        let device = build_device(lab, spec.bus, d, base_dir).map_err(|e| src.error_at_line(d.line, e))?;
        let attached = match device.clone() {
            LabDevice::SpiNor(nor) => block.try_attach(d.cs, nor),
            LabDevice::Loopback(l) => block.try_attach(d.cs, l),
            LabDevice::Mcp2518fd { device, .. } => block.try_attach(d.cs, device),
            LabDevice::Ad7606(adc) => block.try_attach(d.cs, adc),
        };
        attached.map_err(|e| src.error_at_line(d.line, e.to_string()))?;
        devices.push((d.cs, device));
    }
    let bus = Bus::try_new(LabSpi::new(block.clone()), Policy::fast()).map_err(|e| at_bus(&e))?;
    if trace {
        block.trace_start(TRACE_EVENTS);
    }
    for d in &spec.devices {
        let node = SpidevNode::new(bus.clone(), d.cs, *next_minor, d.max_speed_hz, spec.bufsiz);
        *next_minor += 1;
        nodes.push((format!("/dev/spidev{}.{}", spec.bus, d.cs), Arc::new(node)));
    }
    Ok(SpiParts { bus_no: spec.bus, block, bus, bufsiz: spec.bufsiz, devices })
}

/// The model `d` describes, or why it could not be made (one line).
fn build_device(lab: &Lab, bus_no: u32, d: &DeviceSpec, base_dir: &Path) -> Result<LabDevice, String> {
    match &d.kind {
        DeviceKind::SpiNor { chip, image, time_scale } => {
            let options = SpiNorOptions { time_scale: *time_scale, ..SpiNorOptions::default() };
            let nor = match image {
                Some(path) => SpiNor::with_image_options(chip, base_dir.join(path), options)
                    .map_err(|e| format!("spi{bus_no}.{} ({}): {e}", d.cs, chip.name))?,
                None => SpiNor::with_options(chip, options),
            };
            Ok(LabDevice::SpiNor(nor))
        }
        DeviceKind::Loopback => Ok(LabDevice::Loopback(Loopback::new())),
        DeviceKind::Mcp2518fd { osc_hz, can_bitrate, can_data_bitrate } => {
            let name = format!("can-spi{bus_no}.{}", d.cs);
            let can = can::Bus::new(lab, &name, BitRates::new(*can_bitrate, *can_data_bitrate))
                .map_err(|e| format!("spi{bus_no}.{}: {e}", d.cs))?;
            let device = Mcp2518fd::new(lab, Mcp2518fdConfig { osc_hz: *osc_hz, ..Mcp2518fdConfig::default() });
            device.attach_to_bus(&can, "mcp2518fd");
            Ok(LabDevice::Mcp2518fd { device, can })
        }
        DeviceKind::Ad7606 { range, oversampling, signals } => {
            let cfg = Ad7606Config { range: *range, oversampling: *oversampling, ..Ad7606Config::default() };
            let adc = Ad7606::new(lab, cfg).map_err(|e| format!("spi{bus_no}.{}: {e}", d.cs))?;
            for (ch, s) in signals.iter().enumerate() {
                adc.set_signal(ch, *s);
            }
            Ok(LabDevice::Ad7606(adc))
        }
    }
}

/// `spi<bus>` as the `'static` name a block wants; each name is made once
/// per process, however many boards are built.
fn block_name(bus: u32) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let name = format!("spi{bus}");
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    leaked
}
