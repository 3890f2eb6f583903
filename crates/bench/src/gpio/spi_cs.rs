//! E3, second part (`spi_gpio_cs`): what a GPIO chip select costs an SPI
//! bus, against a native one (seed 002: the 6.9 interlock slowed SPI with
//! GPIO chip select by ~9 %).
//!
//! Two loopback devices on one lab WSPI block: one on native CS 0, one
//! attached with an external CS input wired to a lab GPIO line driven
//! through the stack's `GpioCs`. Each round sends `messages` back-to-back
//! 9-byte full-duplex sync messages at 20 MHz (`Policy::fast()`) to one of
//! them; rounds alternate native, GPIO, native, GPIO … and each variant's
//! figure is the median over its rounds. Utilization is wire time over
//! elapsed time: 72 bits / 20 MHz = 3.6 µs of wire per message.
//!
//! It also measures what `GpioCs` adds to a bare line write (its `Mutex`):
//! `cs_set_ns` against `line_set_ns`, on unwired lines of one chip,
//! interleaved in slices, medians.

use crate::stats::{median, round};
use serde_json::{json, Value};
use std::sync::Arc;
use wirespeed::backend::lab::gpio::open;
use wirespeed::backend::lab::LabSpi;
use wirespeed::gpio::{CsPolarity, GpioCs, LineSettings, RequestConfig};
use wirespeed::spi::{Bus, DeviceConfig, Policy, SpiDevice, Transfer};
use wirespeed_lab::devices::Loopback;
use wirespeed_lab::gpio::GpioChipConfig;
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

/// Clock of the measured transfers.
pub const SPEED_HZ: u32 = 20_000_000;
/// Bytes per message.
pub const MESSAGE_BYTES: usize = 9;

/// Wire time of one message, ns.
fn wire_ns_per_message() -> f64 {
    (MESSAGE_BYTES * 8) as f64 * 1e9 / f64::from(SPEED_HZ)
}

/// Options of the SPI part.
#[derive(Clone, Debug)]
pub struct SpiCsOptions {
    /// Rounds per variant (0: skip the SPI part).
    pub rounds: u32,
    /// Messages per round.
    pub messages: u32,
    /// Set calls per variant for the lock-cost measurement (split in 20 slices).
    pub sets: u64,
}

impl Default for SpiCsOptions {
    fn default() -> Self {
        SpiCsOptions { rounds: 21, messages: 2_000, sets: 400_000 }
    }
}

/// Figures of the SPI part.
#[derive(Clone, Debug)]
pub struct SpiCsFigures {
    /// Options used.
    pub options: SpiCsOptions,
    /// Median utilization (wire / elapsed) with the native chip select.
    pub native_cs_utilization: f64,
    /// Median utilization with the GPIO chip select.
    pub gpio_cs_utilization: f64,
    /// Each native round's utilization.
    pub native_rounds: Vec<f64>,
    /// Each GPIO round's utilization.
    pub gpio_rounds: Vec<f64>,
    /// Median time per message, native, µs.
    pub native_us_per_message: f64,
    /// Median time per message, GPIO, µs.
    pub gpio_us_per_message: f64,
    /// Median cost of one `GpioCs` edge (lock + line write), ns.
    pub cs_set_ns: f64,
    /// Median cost of one bare `LineRequest::set_value`, ns.
    pub line_set_ns: f64,
}

fn device(bus: &Bus, cfg: DeviceConfig) -> Result<SpiDevice, String> {
    bus.device(cfg).map_err(|e| format!("device: {e}"))
}

/// One round: `messages` back-to-back sync messages; returns elapsed ns.
fn round_ns(dev: &SpiDevice, messages: u32, seed: u8) -> Result<u64, String> {
    let tx: [u8; MESSAGE_BYTES] = std::array::from_fn(|i| seed.wrapping_add(i as u8).wrapping_mul(29));
    let mut rx = [0u8; MESSAGE_BYTES];
    let t0 = now();
    for _ in 0..messages {
        dev.sync(&mut [Transfer::duplex(&tx, &mut rx)]).map_err(|e| format!("transfer: {e}"))?;
    }
    let ns = now().ns_since(t0);
    if rx != tx {
        return Err(format!("loopback echoed {rx:?} for {tx:?}"));
    }
    Ok(ns)
}

impl SpiCsOptions {
    /// Checks the options (before any measurement runs).
    pub fn validate(&self) -> Result<(), String> {
        if self.rounds == 0 || self.messages == 0 || self.sets < 40 {
            return Err(format!(
                "spi rounds ({}) and messages ({}) must be at least 1 and sets ({}) at least 40",
                self.rounds, self.messages, self.sets
            ));
        }
        Ok(())
    }
}

/// Runs the SPI part.
pub fn run(opts: &SpiCsOptions) -> Result<SpiCsFigures, String> {
    opts.validate()?;
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let block = lab.spi_controller(Default::default());
    let native_dev = Loopback::new();
    let gpio_dev = Loopback::new();
    block.attach(0, native_dev.clone());
    let cs_input = block.attach_external_cs(gpio_dev.clone());
    let hw = lab.gpio_chip(GpioChipConfig { lines: 8, ..GpioChipConfig::default() });
    let chip = open(&hw).map_err(|e| format!("opening the lab chip: {e}"))?;
    let cs = GpioCs::request(&chip, 1, "bench-cs", CsPolarity::ActiveLow).map_err(|e| format!("CS line: {e}"))?;
    hw.output_pin(1).connect(cs_input, now());
    let bus = Bus::try_new(LabSpi::new(block), Policy::fast()).map_err(|e| e.to_string())?;
    let native = device(&bus, DeviceConfig::new(0, SPEED_HZ))?;
    let gpio = device(&bus, DeviceConfig::new(0, SPEED_HZ).gpio_cs(Arc::new(cs)))?;

    round_ns(&native, opts.messages.min(200), 1)?;
    round_ns(&gpio, opts.messages.min(200), 2)?;
    let (n0, g0) = (native_dev.words(), gpio_dev.words());
    let wire = wire_ns_per_message() * f64::from(opts.messages);
    let (mut nat, mut gp) = (Vec::new(), Vec::new());
    for r in 0..opts.rounds {
        nat.push(wire / round_ns(&native, opts.messages, r as u8)? as f64);
        gp.push(wire / round_ns(&gpio, opts.messages, r as u8 ^ 0x80)? as f64);
    }
    let expect = u64::from(opts.rounds) * u64::from(opts.messages) * MESSAGE_BYTES as u64;
    let (nw, gw) = (native_dev.words() - n0, gpio_dev.words() - g0);
    if (nw, gw) != (expect, expect) {
        return Err(format!("devices saw {nw} (native) and {gw} (GPIO) words, expected {expect} each"));
    }
    let (cs_set_ns, line_set_ns) = lock_cost(opts.sets)?;
    let (nu, gu) = (median(&nat), median(&gp));
    let per_msg = |u: f64| wire_ns_per_message() / u / 1_000.0;
    Ok(SpiCsFigures {
        options: opts.clone(),
        native_cs_utilization: nu,
        gpio_cs_utilization: gu,
        native_us_per_message: per_msg(nu),
        gpio_us_per_message: per_msg(gu),
        native_rounds: nat,
        gpio_rounds: gp,
        cs_set_ns,
        line_set_ns,
    })
}

/// Median ns per edge of a `GpioCs` and of a bare line request, interleaved.
fn lock_cost(sets: u64) -> Result<(f64, f64), String> {
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let hw = lab.gpio_chip(GpioChipConfig { lines: 8, ..GpioChipConfig::default() });
    let chip = open(&hw).map_err(|e| format!("opening the lab chip: {e}"))?;
    let cs = GpioCs::request(&chip, 3, "bench-cs", CsPolarity::ActiveLow).map_err(|e| format!("CS line: {e}"))?;
    let line = chip
        .request_lines(&RequestConfig::new("bench-line").line(4, LineSettings::output(true)))
        .map_err(|e| format!("bench line: {e}"))?;
    const SLICES: u64 = 20;
    let per = sets / SLICES / 2;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..SLICES {
        let t0 = now();
        for _ in 0..per {
            cs.set(true).map_err(|e| e.to_string())?;
            cs.set(false).map_err(|e| e.to_string())?;
        }
        a.push(now().ns_since(t0) as f64 / (2 * per) as f64);
        let t0 = now();
        for _ in 0..per {
            line.set_value(4, false).map_err(|e| e.to_string())?;
            line.set_value(4, true).map_err(|e| e.to_string())?;
        }
        b.push(now().ns_since(t0) as f64 / (2 * per) as f64);
    }
    Ok((median(&a), median(&b)))
}

impl SpiCsFigures {
    /// The `spi_gpio_cs` JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "native_cs_utilization": round(self.native_cs_utilization, 4),
            "gpio_cs_utilization": round(self.gpio_cs_utilization, 4),
            "gpio_vs_native": round(self.gpio_cs_utilization / self.native_cs_utilization, 4),
            "native_us_per_message": round(self.native_us_per_message, 3),
            "gpio_us_per_message": round(self.gpio_us_per_message, 3),
            "wire_us_per_message": round(wire_ns_per_message() / 1_000.0, 3),
            "rounds": self.options.rounds,
            "messages_per_round": self.options.messages,
            "cs_set_ns": round(self.cs_set_ns, 2),
            "line_set_ns": round(self.line_set_ns, 2),
        })
    }

    /// Table rows: (chip select, utilization, µs per message).
    pub fn rows(&self) -> Vec<Vec<String>> {
        vec![
            vec![
                "native".to_string(),
                format!("{:.4}", self.native_cs_utilization),
                format!("{:.3}", self.native_us_per_message),
                "1.0000".to_string(),
            ],
            vec![
                "gpio".to_string(),
                format!("{:.4}", self.gpio_cs_utilization),
                format!("{:.3}", self.gpio_us_per_message),
                format!("{:.4}", self.gpio_cs_utilization / self.native_cs_utilization),
            ],
        ]
    }
}
