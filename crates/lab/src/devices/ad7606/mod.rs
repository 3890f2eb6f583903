//! A lab model of the Analog Devices AD7606: 8 simultaneously sampled
//! channels, 16 bits, ±5 V or ±10 V, read over its serial interface.
//!
//! **Pins**: CONVST (input, [`Ad7606::convst_input`]; a rising edge starts
//! a conversion of all channels, one during BUSY is ignored and counted),
//! BUSY (output [`Pin`], [`Ad7606::busy_pin`]; high from the CONVST edge
//! for tCONV, the [`timing`] table's value for the oversampling ratio),
//! RESET (input, [`Ad7606::reset_input`]; high aborts a conversion and
//! clears the results). The falling edge of BUSY is driven by the lab's
//! interrupt thread at its instant; anything that touches the model first
//! (an SPI word, the backdoor) applies it then, stamped with that instant.
//!
//! **Bus face** ([`SpiDeviceModel`](crate::spi::SpiDeviceModel), module `spi`): DOUTA only; one CS
//! window shifts V1..V8 as 16-bit two's complement codes, MSB first
//! (16 bytes); code = V / range · 32768, rounded and clamped. The data are
//! the output registers as of the window's first word: a read during BUSY
//! gets the previous conversion's results, as on the part. Words past the
//! 16th byte read 0.
//!
//! **Backdoor** ([`Ad7606`] is a cloneable handle): per-channel [`Signal`]s,
//! range (the RANGE pin), oversampling ratio (`OS[2:0]`), [`Stats`] — among
//! them conversions whose results were overwritten before one complete
//! read (missed) and reads that started during BUSY — and a MISO-stuck fault.
//!
//! Not modelled: the parallel interface, DOUTB, standby and shutdown, the
//! t1 delay (40 ns) between CONVST and BUSY, the internal reference.

mod core;
mod signal;
mod spi;
#[cfg(test)]
mod tests;
pub mod timing;

pub use signal::Signal;
pub use timing::Corner;

use self::core::Core;
use crate::lab::Lab;
use crate::pin::{Pin, PinSink};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use wirespeed_time::{now, Instant};

/// Analog channels.
pub const CHANNELS: usize = 8;
/// Bytes of one complete read (V1..V8).
pub const FRAME_BYTES: usize = self::core::FRAME_BYTES;

/// The analog input range (the RANGE pin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Range {
    /// ±5 V (RANGE low).
    Pm5V,
    /// ±10 V (RANGE high).
    #[default]
    Pm10V,
}

impl Range {
    /// Full scale, V.
    pub fn volts(self) -> f64 {
        match self {
            Range::Pm5V => 5.0,
            Range::Pm10V => 10.0,
        }
    }
}

/// How the part is strapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ad7606Config {
    /// Input range.
    pub range: Range,
    /// Oversampling ratio: 1, 2, 4, 8, 16, 32 or 64.
    pub oversampling: u8,
    /// Which column of the tCONV table the part converts at.
    pub corner: Corner,
}

impl Default for Ad7606Config {
    fn default() -> Self {
        Ad7606Config { range: Range::Pm10V, oversampling: 1, corner: Corner::Typical }
    }
}

/// A setting the part cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadOversampling(pub u8);

impl fmt::Display for BadOversampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AD7606 oversampling ratio {} (allowed: 1, 2, 4, 8, 16, 32, 64)", self.0)
    }
}

impl std::error::Error for BadOversampling {}

/// Counters the backdoor reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Conversions completed (results latched at BUSY's falling edge).
    pub conversions: u64,
    /// Conversions whose results were overwritten before one complete read.
    pub missed_conversions: u64,
    /// CONVST rising edges during BUSY (ignored).
    pub convst_ignored: u64,
    /// Reads (CS windows that shifted at least one word).
    pub reads: u64,
    /// Reads that started while BUSY was high (they got the previous results).
    pub reads_during_busy: u64,
    /// Reads that shifted all 16 bytes.
    pub complete_reads: u64,
    /// RESET pulses.
    pub resets: u64,
}

/// The device. Clones share it: attach one to an SPI controller, keep one
/// as the backdoor.
#[derive(Clone)]
pub struct Ad7606 {
    core: Arc<Mutex<Core>>,
}

impl fmt::Debug for Ad7606 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.lock();
        f.debug_struct("Ad7606")
            .field("range", &c.range)
            .field("oversampling", &c.oversampling)
            .field("stats", &c.stats)
            .finish()
    }
}

fn lock(core: &Mutex<Core>) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ad7606 {
    /// A part on `lab`, strapped as `cfg`, inputs at 0 V.
    pub fn new(lab: &Lab, cfg: Ad7606Config) -> Result<Ad7606, BadOversampling> {
        timing::oversampling_index(cfg.oversampling).ok_or(BadOversampling(cfg.oversampling))?;
        let busy = Pin::new("ad7606-busy", false);
        let core = Core::new(lab.scheduler().clone(), busy, cfg.range, cfg.oversampling, cfg.corner);
        let core = Arc::new(Mutex::new(core));
        lock(&core).weak = Arc::downgrade(&core);
        Ok(Ad7606 { core })
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// The BUSY output (high while converting).
    pub fn busy_pin(&self) -> Pin {
        self.lock().busy.clone()
    }

    /// The CONVST input, for a GPIO pad to `connect` to.
    pub fn convst_input(&self) -> Arc<dyn PinSink> {
        Arc::new(Input { core: Arc::downgrade(&self.core), which: Which::Convst })
    }

    /// The RESET input (active high), for a GPIO pad to `connect` to.
    pub fn reset_input(&self) -> Arc<dyn PinSink> {
        Arc::new(Input { core: Arc::downgrade(&self.core), which: Which::Reset })
    }

    /// Backdoor: drives CONVST as a board signal would.
    pub fn drive_convst(&self, high: bool, at: Instant) {
        self.lock().convst(high, at);
    }

    /// Backdoor: a RESET pulse (tRESET long) now.
    pub fn reset(&self) {
        let at = now();
        let mut c = self.lock();
        c.reset(true, at);
        c.reset(false, at.add_ns(timing::T_RESET_NS));
    }

    /// Backdoor: the source on channel `ch` (0 = V1); channels past V8 are ignored.
    pub fn set_signal(&self, ch: usize, signal: Signal) {
        if let Some(s) = self.lock().signals.get_mut(ch) {
            *s = signal;
        }
    }

    /// Backdoor: the same source on every channel.
    pub fn set_all_signals(&self, signal: Signal) {
        self.lock().signals = [signal; CHANNELS];
    }

    /// Backdoor: the source on each channel.
    pub fn signals(&self) -> [Signal; CHANNELS] {
        self.lock().signals
    }

    /// Backdoor: the RANGE pin.
    pub fn set_range(&self, range: Range) {
        self.lock().range = range;
    }

    /// The range.
    pub fn range(&self) -> Range {
        self.lock().range
    }

    /// Backdoor: the `OS[2:0]` pins (takes effect at the next CONVST).
    pub fn set_oversampling(&self, ratio: u8) -> Result<(), BadOversampling> {
        timing::oversampling_index(ratio).ok_or(BadOversampling(ratio))?;
        self.lock().oversampling = ratio;
        Ok(())
    }

    /// The oversampling ratio.
    pub fn oversampling(&self) -> u8 {
        self.lock().oversampling
    }

    /// The conversion time the part takes now, ns.
    pub fn conversion_ns(&self) -> u64 {
        let c = self.lock();
        timing::conversion_ns(c.oversampling, c.corner).unwrap_or(0)
    }

    /// Backdoor: whether BUSY is high as of now.
    pub fn is_busy(&self) -> bool {
        self.lock().is_busy(now())
    }

    /// Backdoor: the output data registers as of now.
    pub fn output(&self) -> [i16; CHANNELS] {
        self.lock().output(now())
    }

    /// The code `volts` converts to on the current range.
    pub fn code_of(&self, volts: f64) -> i16 {
        self.lock().code(volts)
    }

    /// Backdoor: counters, with conversions due by now applied.
    pub fn stats(&self) -> Stats {
        let mut c = self.lock();
        c.advance(now());
        c.stats
    }

    /// Fault: DOUTA stuck at `level` (`Some(true)`: all ones), or healthy (`None`).
    pub fn set_miso_stuck(&self, level: Option<bool>) {
        self.lock().miso_stuck = level;
    }
}

#[derive(Clone, Copy)]
enum Which {
    Convst,
    Reset,
}

/// A GPIO-driven input of the part.
struct Input {
    core: Weak<Mutex<Core>>,
    which: Which,
}

impl PinSink for Input {
    fn drive(&self, high: bool, at: Instant) {
        if let Some(core) = self.core.upgrade() {
            let mut c = lock(&core);
            match self.which {
                Which::Convst => c.convst(high, at),
                Which::Reset => c.reset(high, at),
            }
        }
    }
}
