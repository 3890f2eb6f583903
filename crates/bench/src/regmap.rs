//! E-regmap: what a register map costs on top of the SPI core.
//!
//! Setup: the lab's WSPI controller at `speed_hz` with the register-file
//! device on CS 0 (8-bit registers, command byte 0x03/0x02, address byte,
//! auto-increment), driven through the stack's lab controller driver, the
//! SPI core and `regmap::SpiBus`; flat cache.
//!
//! - `cached_read_ns`: a cached register read. One read takes a few ns, below
//!   what a clock read can resolve, so `samples` batches of `cached_reads`
//!   reads are timed; the figure is the median over batches of the time per read.
//! - `uncached_read_us`: median of single reads of a volatile register (one
//!   SPI message: command and address out, one byte in).
//! - `multi_write`: 8 adjacent registers with `multi_write` (one message,
//!   one CS window) versus 8 separate `write`s, interleaved A B A B for
//!   `rounds` rounds; medians. Messages are counted by the SPI core's
//!   statistics and CS windows by the device, not by the register map.

use crate::stats::{median, round};
use crate::table::Table;
use serde_json::{json, Value};
use wirespeed::backend::lab::LabSpi;
use wirespeed::regmap::format::StdFormat;
use wirespeed::regmap::{CacheType, RegSet, Regmap, RegmapConfig, SpiBus};
use wirespeed::spi::{Bus, DeviceConfig, Policy};
use wirespeed_lab::devices::{RegFile, REGFILE_READ, REGFILE_WRITE};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

const REGISTERS: u32 = 8;
const FIRST: u32 = 0x40;
const VOLATILE: u32 = 0xF0;

/// Options of the regmap experiment.
#[derive(Debug, Clone)]
pub struct RegmapOptions {
    /// SPI clock.
    pub speed_hz: u32,
    /// SPI core policy (`fast` or `classic`).
    pub policy: String,
    /// Timed batches of cached reads.
    pub samples: usize,
    /// Cached reads per batch.
    pub cached_reads: usize,
    /// Uncached reads timed one by one.
    pub uncached_reads: usize,
    /// Rounds of (multi_write, 8 separate writes).
    pub rounds: usize,
}

impl Default for RegmapOptions {
    fn default() -> Self {
        RegmapOptions {
            speed_hz: 20_000_000,
            policy: "fast".into(),
            samples: 31,
            cached_reads: 10_000,
            uncached_reads: 300,
            rounds: 300,
        }
    }
}

/// The multi-register write comparison.
#[derive(Debug, Clone)]
pub struct MultiWriteReport {
    /// Adjacent registers written.
    pub registers: u32,
    /// SPI messages one `multi_write` used.
    pub messages: u64,
    /// Chip-select windows the device saw for one `multi_write`.
    pub cs_windows: u64,
    /// Median time of one `multi_write`, µs.
    pub elapsed_us: f64,
    /// Median time of the same registers written one by one, µs.
    pub separate_writes_elapsed_us: f64,
    /// SPI messages the separate writes used.
    pub separate_writes_messages: u64,
    /// Wire time of the multi-write, µs.
    pub wire_us: f64,
    /// Wire time of the separate writes, µs.
    pub separate_wire_us: f64,
}

/// The experiment's result.
#[derive(Debug, Clone)]
pub struct RegmapReport {
    /// SPI clock.
    pub speed_hz: u32,
    /// SPI core policy.
    pub policy: String,
    /// Median time per cached read, ns.
    pub cached_read_ns: f64,
    /// Median time of an uncached read, µs.
    pub uncached_read_us: f64,
    /// Wire time of an uncached read, µs.
    pub uncached_wire_us: f64,
    /// Multi-register write versus separate writes.
    pub multi_write: MultiWriteReport,
}

fn wire_us(bytes: u64, hz: u32) -> f64 {
    bytes as f64 * 8.0 / f64::from(hz) * 1e6
}

/// Runs the experiment.
pub fn run(opts: &RegmapOptions) -> Result<RegmapReport, String> {
    if opts.samples == 0 || opts.cached_reads == 0 || opts.uncached_reads == 0 || opts.rounds == 0 {
        return Err("samples, cached reads, uncached reads and rounds must be at least 1".into());
    }
    let policy = Policy::by_name(&opts.policy)
        .ok_or_else(|| format!("unknown policy {:?}: use {}", opts.policy, Policy::PRESETS.join(", ")))?;
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let block = lab.spi_controller(Default::default());
    let regfile = RegFile::new(256);
    block.attach(0, regfile.clone());
    let bus = Bus::try_new(LabSpi::new(block), policy).map_err(|e| e.to_string())?;
    let dev = bus.device(DeviceConfig::new(0, opts.speed_hz)).map_err(|e| format!("SPI device: {e}"))?;
    // The clock the controller's divider gives, which the wire times are at.
    let clock_hz = bus.caps().actual_speed_hz(opts.speed_hz);

    let format = StdFormat::new(16, 8).with_flags(u32::from(REGFILE_READ) << 8, u32::from(REGFILE_WRITE) << 8);
    let mut config = RegmapConfig::new(format, 0xFF);
    config.cache = CacheType::Flat;
    config.volatile = RegSet::ranges([VOLATILE..=VOLATILE]);
    let map = Regmap::new(config, SpiBus::new(dev)).map_err(|e| format!("regmap: {e}"))?;
    let err = |e: wirespeed::regmap::RegmapError| e.to_string();

    // Cached reads.
    map.write(0x10, 0x5A).map_err(err)?;
    let mut per_read = Vec::with_capacity(opts.samples);
    for _ in 0..opts.samples {
        let t0 = now();
        let mut acc = 0u32;
        for _ in 0..opts.cached_reads {
            acc = acc.wrapping_add(std::hint::black_box(&map).read(std::hint::black_box(0x10)).map_err(err)?);
        }
        let ns = now().ns_since(t0) as f64;
        std::hint::black_box(acc);
        per_read.push(ns / opts.cached_reads as f64);
    }

    // Uncached reads.
    let mut uncached = Vec::with_capacity(opts.uncached_reads);
    for _ in 0..opts.uncached_reads {
        let t0 = now();
        map.read(VOLATILE).map_err(err)?;
        uncached.push(now().us_since(t0));
    }

    // Message and CS-window counts, once each, from the core and the device.
    let writes: Vec<(u32, u32)> = (0..REGISTERS).map(|i| (FIRST + i, i)).collect();
    let (m0, w0) = (bus.stats().messages, regfile.accesses());
    map.multi_write(&writes).map_err(err)?;
    let (messages, cs_windows) = (bus.stats().messages - m0, regfile.accesses() - w0);
    let m0 = bus.stats().messages;
    for &(r, v) in &writes {
        map.write(r, v).map_err(err)?;
    }
    let separate_messages = bus.stats().messages - m0;

    // Interleaved timing.
    let (mut multi, mut separate) = (Vec::new(), Vec::new());
    let mut vals = writes.clone();
    for round in 0..opts.rounds {
        for (i, w) in vals.iter_mut().enumerate() {
            w.1 = (round as u32 + i as u32) & 0xFF;
        }
        let t0 = now();
        map.multi_write(&vals).map_err(err)?;
        multi.push(now().us_since(t0));
        let t0 = now();
        for &(r, v) in &vals {
            map.write(r, v).map_err(err)?;
        }
        separate.push(now().us_since(t0));
    }
    if (0..REGISTERS).any(|i| u32::from(regfile.peek((FIRST + i) as u8)) != vals[i as usize].1) {
        return Err("the device does not hold the values written".into());
    }

    Ok(RegmapReport {
        speed_hz: opts.speed_hz,
        policy: opts.policy.clone(),
        cached_read_ns: median(&per_read),
        uncached_read_us: median(&uncached),
        uncached_wire_us: wire_us(3, clock_hz),
        multi_write: MultiWriteReport {
            registers: REGISTERS,
            messages,
            cs_windows,
            elapsed_us: median(&multi),
            separate_writes_elapsed_us: median(&separate),
            separate_writes_messages: separate_messages,
            wire_us: wire_us(2 + u64::from(REGISTERS), clock_hz),
            separate_wire_us: wire_us(3 * u64::from(REGISTERS), clock_hz),
        },
    })
}

impl RegmapReport {
    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let m = &self.multi_write;
        json!({
            "scenario": "regmap",
            "speed_hz": self.speed_hz,
            "policy": self.policy,
            "cached_read_ns": round(self.cached_read_ns, 2),
            "uncached_read_us": round(self.uncached_read_us, 3),
            "uncached_wire_us": round(self.uncached_wire_us, 3),
            "multi_write": {
                "registers": m.registers,
                "messages": m.messages,
                "cs_windows": m.cs_windows,
                "elapsed_us": round(m.elapsed_us, 3),
                "separate_writes_elapsed_us": round(m.separate_writes_elapsed_us, 3),
                "separate_writes_messages": m.separate_writes_messages,
                "wire_us": round(m.wire_us, 3),
                "separate_wire_us": round(m.separate_wire_us, 3),
                "speedup": round(m.separate_writes_elapsed_us / m.elapsed_us, 2),
            }
        })
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let m = &self.multi_write;
        let mut t = Table::new(&["measure", "value", "wire"]);
        t.row(vec!["cached read".into(), format!("{:.1} ns", self.cached_read_ns), "-".into()]);
        t.row(vec![
            "uncached read".into(),
            format!("{:.2} µs", self.uncached_read_us),
            format!("{:.2} µs", self.uncached_wire_us),
        ]);
        t.row(vec![
            format!("multi_write {} regs ({} msg, {} CS)", m.registers, m.messages, m.cs_windows),
            format!("{:.2} µs", m.elapsed_us),
            format!("{:.2} µs", m.wire_us),
        ]);
        t.row(vec![
            format!("{} separate writes ({} msg)", m.registers, m.separate_writes_messages),
            format!("{:.2} µs", m.separate_writes_elapsed_us),
            format!("{:.2} µs", m.separate_wire_us),
        ]);
        format!("regmap on the lab register file, {} Hz, policy {}\n{}", self.speed_hz, self.policy, t.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_counts_one_message_for_eight_adjacent_registers() {
        let opts =
            RegmapOptions { samples: 3, cached_reads: 100, uncached_reads: 5, rounds: 5, ..RegmapOptions::default() };
        let r = run(&opts).unwrap();
        assert_eq!((r.multi_write.messages, r.multi_write.cs_windows), (1, 1));
        assert_eq!(r.multi_write.separate_writes_messages, 8);
        assert!(r.cached_read_ns > 0.0 && r.uncached_read_us > r.uncached_wire_us);
        let j = r.to_json();
        assert_eq!(j["multi_write"]["registers"], 8);
        assert!(r.table().contains("multi_write"));
        assert!(run(&RegmapOptions { policy: "nope".into(), ..opts.clone() }).is_err());
        assert!(run(&RegmapOptions { rounds: 0, ..opts }).is_err());
    }
}
