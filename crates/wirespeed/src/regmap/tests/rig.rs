//! Test rigs: a register map with a given cache over a given bus, a recorder
//! of every bus message (decoded by the format's device side) and a backdoor
//! to the device. The suite's register layout (a command-byte device, the
//! same as the lab's `RegFile`):
//!
//! | registers | property |
//! |---|---|
//! | 0x00..=0x0F | defaults `0x10 + reg` |
//! | 0xF0..=0xF3 | volatile |
//! | 0xF8..=0xF9 | precious |
//! | 0xFA..=0xFB | write-only (not readable) |
//! | 0xFC..=0xFD | read-only (not writeable) |

use crate::regmap::format::{Format, Op, StdFormat};
use crate::regmap::{Batch, BusError, CacheType, RamBus, RegSet, Regmap, RegmapBus, RegmapConfig};
use std::sync::{Arc, Mutex};

pub const CACHES: [CacheType; 3] = [CacheType::None, CacheType::Flat, CacheType::Sparse];

/// One recorded message: its windows as (direction, first register, count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub windows: Vec<(Op, u32, usize)>,
    pub submitted: bool,
}

/// Shared message log.
#[derive(Debug, Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Msg>>>);

impl Log {
    pub fn messages(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    /// Messages recorded after the first `from`.
    pub fn since(&self, from: usize) -> Vec<Msg> {
        self.0.lock().unwrap()[from..].to_vec()
    }
    /// Registers covered by read windows after message `from`.
    pub fn regs_read_since(&self, from: usize) -> Vec<u32> {
        self.since(from)
            .iter()
            .flat_map(|m| m.windows.clone())
            .filter(|w| w.0 == Op::Read)
            .flat_map(|(_, r, n)| (0..n as u32).map(move |i| r + i))
            .collect()
    }
    /// Write windows after message `from`.
    pub fn write_windows_since(&self, from: usize) -> usize {
        self.since(from).iter().flat_map(|m| m.windows.clone()).filter(|w| w.0 == Op::Write).count()
    }
    fn push(&self, m: Msg) {
        self.0.lock().unwrap().push(m);
    }
}

/// Wraps any bus and records each message it carries.
pub struct Recorder<B> {
    pub inner: B,
    pub format: Arc<dyn Format>,
    pub log: Log,
}

impl<B> Recorder<B> {
    fn decode(&self, op: Op, tx: &[u8], data_len: usize) -> (Op, u32, usize) {
        let req = self.format.decode_header(op, tx).expect("recorder: undecodable command");
        (op, req.reg, data_len / self.format.val_bytes())
    }
}

impl<B: RegmapBus> RegmapBus for Recorder<B> {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        let tx = segments.concat();
        let w = self.decode(
            Op::Write,
            &tx,
            tx.len() - self.format.trailer_len() - header_len(&*self.format, Op::Write, &tx),
        );
        self.inner.write(segments)?;
        self.log.push(Msg { windows: vec![w], submitted: false });
        Ok(())
    }
    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        let t = tx.concat();
        let w = self.decode(Op::Read, &t, rx.len() - self.format.trailer_len());
        self.inner.write_then_read(tx, rx)?;
        self.log.push(Msg { windows: vec![w], submitted: false });
        Ok(())
    }
    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        let m = self.batch_msg(batch, false);
        self.inner.write_batch(batch)?;
        self.log.push(m);
        Ok(())
    }
    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        let m = self.batch_msg(batch, true);
        self.inner.submit_batch(batch)?;
        self.log.push(m);
        Ok(())
    }
    fn complete(&mut self) -> Result<(), BusError> {
        self.inner.complete()
    }
    fn max_message_bytes(&self) -> Option<usize> {
        self.inner.max_message_bytes()
    }
}

impl<B> Recorder<B> {
    fn batch_msg(&self, batch: Batch<'_>, submitted: bool) -> Msg {
        let f = &*self.format;
        let windows = batch
            .windows()
            .map(|w| self.decode(Op::Write, w, w.len() - f.trailer_len() - header_len(f, Op::Write, w)))
            .collect();
        Msg { windows, submitted }
    }
}

fn header_len(f: &dyn Format, op: Op, tx: &[u8]) -> usize {
    f.decode_header(op, tx).map(|r| r.header_len).unwrap_or(0)
}

/// The device behind a rig, seen through its backdoor.
pub trait Device: Send + Sync {
    fn peek(&self, reg: u32) -> u32;
    fn poke(&self, reg: u32, val: u32);
    /// Chip-select windows the device saw, if it counts them.
    fn cs_windows(&self) -> Option<u64> {
        None
    }
    /// Whether the rig can inject bus faults.
    fn ram(&self) -> Option<&RamBus> {
        None
    }
}

impl Device for RamBus {
    fn peek(&self, reg: u32) -> u32 {
        RamBus::peek(self, reg)
    }
    fn poke(&self, reg: u32, val: u32) {
        RamBus::poke(self, reg, val)
    }
    fn cs_windows(&self) -> Option<u64> {
        Some(self.windows() as u64)
    }
    fn ram(&self) -> Option<&RamBus> {
        Some(self)
    }
}

pub struct Rig {
    pub name: String,
    pub cache: CacheType,
    pub map: Regmap,
    pub log: Log,
    pub dev: Box<dyn Device>,
}

impl Rig {
    pub fn caching(&self) -> bool {
        self.cache != CacheType::None
    }
}

pub fn suite_format() -> StdFormat {
    StdFormat::new(16, 8).with_flags(0x0300, 0x0200)
}

pub fn suite_config(cache: CacheType) -> RegmapConfig {
    let mut c = RegmapConfig::new(suite_format(), 0xFF);
    c.cache = cache;
    c.volatile = RegSet::ranges([0xF0..=0xF3]);
    c.precious = RegSet::ranges([0xF8..=0xF9]);
    c.readable = RegSet::predicate(|r| !(0xFA..=0xFB).contains(&r));
    c.writeable = RegSet::predicate(|r| !(0xFC..=0xFD).contains(&r));
    c.defaults = (0..0x10).map(|r| (r, 0x10 + r)).collect();
    c
}

/// Builds a rig over `bus`: pokes the defaults into the device first.
pub fn rig(name: &str, cache: CacheType, bus: impl RegmapBus + 'static, dev: Box<dyn Device>) -> Rig {
    let config = suite_config(cache);
    for &(r, v) in &config.defaults {
        dev.poke(r, v);
    }
    let log = Log::default();
    let rec = Recorder { inner: bus, format: config.format.clone(), log: log.clone() };
    let map = Regmap::new(config, rec).expect("suite config");
    Rig { name: format!("{name}/{cache:?}"), cache, map, log, dev }
}

pub fn ram_rig(cache: CacheType) -> Rig {
    let ram = RamBus::new(Arc::new(suite_format()), 1, 0xFF);
    rig("ram", cache, ram.clone(), Box::new(ram))
}

/// Every rig: each cache type over each bus.
pub fn rigs() -> Vec<Rig> {
    let mut v: Vec<Rig> = CACHES.iter().map(|&c| ram_rig(c)).collect();
    v.extend(super::spi_rig::spi_rigs());
    v
}
