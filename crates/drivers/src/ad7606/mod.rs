//! Driver for the Analog Devices AD7606 (8 channels, 16 bits, simultaneous
//! sampling) on its serial interface, written against the stack's SPI and
//! GPIO traits only.
//!
//! ```text
//! let spi = bus.device(ad7606::device_config(2, 20_000_000))?;
//! let convst = chip.request_lines(&RequestConfig::new("ad7606").line(8, LineSettings::output(false)))?;
//! let busy = chip.request_lines(&RequestConfig::new("ad7606").line(9, LineSettings::input().edge(Edge::Falling)))?;
//! let mut adc = Ad7606::new(spi, convst, Busy::Edge(busy), Config::default())?;
//! let set = adc.sample()?;                  // one conversion: codes, volts, timestamp
//! let ring = SampleRing::new(4096)?;
//! let report = adc.run(50_000.0, Some(10_000), &ring, &AtomicBool::new(false))?;
//! assert_eq!(report.overruns(), 0);
//! ```
//!
//! - **One sample set** ([`Ad7606::sample`]): a CONVST pulse through a GPIO
//!   line (the timestamp is taken just before its rising edge, the sampling
//!   instant), the end of the conversion (module `busy`: the driver picks
//!   polling or sleeping from the conversion time and the line's wake-up
//!   cost), then one prepared 16-byte read (V1..V8): no allocation, no
//!   validation on the way.
//! - **Paced sampling** ([`Ad7606::run`], [`Ad7606::start_continuous`],
//!   module `sampler`): CONVST at a requested rate on deadlines of the
//!   monotonic clock, each set into a [`SampleRing`] with its timestamp.
//!   Overruns are counted and reported, never silent: sets dropped because
//!   the ring was full, and sample periods that passed with no conversion
//!   because the sampler fell a whole period behind.
//! - **Errors** ([`Error`]): a bad configuration or rate is refused before
//!   anything reaches the bus; BUSY that never falls is a timeout.

mod busy;
mod config;
mod error;
mod ring;
mod sample;
mod sampler;

pub use busy::{Busy, BusyMode, BusyStats};
pub use config::{
    device_config, wire_period_ns, Config, Range, CHANNELS, CONVST_PULSE_NS, CS_SETUP_NS, FRAME_BYTES, MAX_SCLK_HZ,
    OVERSAMPLING_RATIOS,
};
pub use error::Error;
pub use ring::{Producer, SampleRing};
pub use sample::SampleSet;
pub use sampler::{Continuous, RunReport};

use busy::BusyWait;
use wirespeed::gpio::LineRequest;
use wirespeed::spi::{OwnedTransfer, PreparedMessage, SpiDevice};
use wirespeed::time::{now, spin_until, Deadline, Instant};

/// One AD7606. Owns its SPI device and its CONVST and BUSY lines; used by
/// one thread at a time (it is `Send`).
#[derive(Debug)]
pub struct Ad7606 {
    spi: SpiDevice,
    convst: LineRequest,
    convst_offset: u32,
    /// The logical value that drives CONVST's pad high.
    convst_on: bool,
    /// CONVST's last rising edge came no later than this: the end of the
    /// write that raised it. The conversion is timed from here, so a
    /// thread preempted between its timestamp and the edge still waits
    /// the whole conversion.
    edge_by: Instant,
    busy: BusyWait,
    read: PreparedMessage,
    cfg: Config,
    samples: u64,
}

impl Ad7606 {
    /// Takes the part on `spi` with CONVST on `convst` (a request of one
    /// output line) and BUSY as `busy` says, strapped as `cfg`. Checks
    /// everything first and sends nothing on the bus; drives CONVST low.
    pub fn new(spi: SpiDevice, convst: LineRequest, busy: Busy, cfg: Config) -> Result<Ad7606, Error> {
        cfg.validate()?;
        let dev = spi.config();
        if dev.speed_hz > MAX_SCLK_HZ {
            return Err(Error::invalid("SPI clock", dev.speed_hz, format!("at most {MAX_SCLK_HZ} Hz (SCLK)")));
        }
        if dev.bits_per_word != 8 {
            return Err(Error::invalid("bits per word", dev.bits_per_word, "8"));
        }
        let convst_offset = busy::single_line(&convst, "CONVST")?;
        let s = convst.settings(convst_offset).map_err(|error| Error::Gpio { line: "CONVST", error })?;
        if s.direction != wirespeed::gpio::Direction::Output {
            return Err(Error::invalid("CONVST line", format!("line {convst_offset}: {:?}", s.direction), "an output"));
        }
        let slack = u64::try_from(cfg.busy_slack.as_nanos()).unwrap_or(u64::MAX);
        let busy = BusyWait::new(busy, cfg.conversion_typ_ns()?, cfg.conversion_max_ns()?, slack)?;
        let read = spi
            .prepare(vec![OwnedTransfer::read(FRAME_BYTES)])
            .map_err(|e| Error::Spi(wirespeed::spi::SpiError::from(e)))?;
        let convst_on = !s.active_low;
        convst.set_value(convst_offset, !convst_on).map_err(|error| Error::Gpio { line: "CONVST", error })?;
        Ok(Ad7606 { spi, convst, convst_offset, convst_on, edge_by: now(), busy, read, cfg, samples: 0 })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// How BUSY is waited for.
    pub fn busy_mode(&self) -> BusyMode {
        self.busy.mode
    }

    /// Counters of the BUSY waits.
    pub fn busy_stats(&self) -> BusyStats {
        self.busy.stats
    }

    /// Sample sets read so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The SPI device.
    pub fn spi(&self) -> &SpiDevice {
        &self.spi
    }

    /// Pulses CONVST; returns the instant just before its rising edge
    /// (and keeps the one just after it in `edge_by`).
    #[inline]
    fn convst(&mut self) -> Result<Instant, Error> {
        let gpio = |error| Error::Gpio { line: "CONVST", error };
        self.busy.arm()?;
        let t = now();
        self.convst.set_value(self.convst_offset, self.convst_on).map_err(gpio)?;
        self.edge_by = now();
        spin_until(Deadline::at(self.edge_by.add_ns(CONVST_PULSE_NS)));
        self.convst.set_value(self.convst_offset, !self.convst_on).map_err(gpio)?;
        Ok(t)
    }

    /// Reads the output registers as they are (16 bytes, V1..V8). During a
    /// conversion the part returns the previous conversion's results.
    #[inline]
    pub fn read_registers(&mut self, timestamp: Instant) -> Result<SampleSet, Error> {
        self.spi.run(&mut self.read)?;
        let raw = self.read.rx(0).unwrap_or(&[0; FRAME_BYTES]);
        Ok(SampleSet::decode(raw, timestamp, self.cfg.range))
    }

    /// One conversion of all eight channels: CONVST, the end of the
    /// conversion, the read. The timestamp is the CONVST instant.
    #[inline]
    pub fn sample(&mut self) -> Result<SampleSet, Error> {
        let t = self.convst()?;
        self.busy.wait(self.edge_by)?;
        let s = self.read_registers(t)?;
        self.samples += 1;
        Ok(s)
    }

    /// Starts a conversion and returns at once (its CONVST instant): a
    /// [`read_registers`](Ad7606::read_registers) before it ends returns
    /// the previous set; [`finish`](Ad7606::finish) waits for it and reads it.
    pub fn start(&mut self) -> Result<Instant, Error> {
        self.convst()
    }

    /// Waits for the conversion started at `started` and reads it.
    pub fn finish(&mut self, started: Instant) -> Result<SampleSet, Error> {
        self.busy.wait(started.max(self.edge_by))?;
        let s = self.read_registers(started)?;
        self.samples += 1;
        Ok(s)
    }
}
