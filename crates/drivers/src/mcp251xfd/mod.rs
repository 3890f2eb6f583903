//! Driver for the Microchip MCP2518FD (and MCP2517FD) CAN FD controller on
//! SPI, written against the stack's SPI, regmap and GPIO traits only.
//!
//! ```text
//! let spi = bus.device(mcp251xfd::device_config(0, 40_000_000))?;
//! let int = chip.request_lines(&RequestConfig::new("mcp2518fd-int")
//!     .line(5, LineSettings::input().edge(Edge::Falling)))?;
//! let mut can = Mcp251xfd::new(spi, int, 5, Config { nominal_bitrate: 250_000, ..Config::default() })?;
//! can.send(&frame)?;
//! while let Some(f) = can.recv(Some(Duration::from_secs(1)))? { … }
//! ```
//!
//! - **Initialisation** ([`Mcp251xfd::new`]): validates the configuration
//!   (bit timing, RAM layout) before touching the bus; then the probe —
//!   RESET, OSC.OSCRDY, DEVID, configuration mode — which only reads after
//!   the reset, so a failed probe ([`Error::OscillatorNotReady`],
//!   [`Error::WrongDevice`]) leaves the device in configuration mode with
//!   nothing written; then bit timing, time base (1 µs ticks), TEF, RX
//!   FIFO 1 with timestamps, TX FIFO 2, filters (accept all), interrupts,
//!   and the mode. Transmission uses a TX FIFO rather than the TXQ, which
//!   sends by ID and so may reorder frames that share one.
//! - **Receive**: the INT line ([`intwait`]) → one prepared message reading
//!   C1INT and the RX object at the tail (module `hot`) → the frame. The
//!   RX UINC is deferred until after the next transmit (or the next
//!   receive), so an echo's TX reaches the wire first.
//! - **Transmit** ([`Mcp251xfd::send`]): one prepared message writes the
//!   object at the TX FIFO's head and sets UINC | TXREQ. Completions come back
//!   through the TEF, reaped lazily: the TEF does not raise INT; a
//!   receive's status read tells that it holds an entry (C1INT.TEFIF). With
//!   TX timestamps the entry is read before the next wait; without, its
//!   UINC rides in the next transmit's message. Whenever the TX queue is
//!   full, the TEF is drained (TEFSTA).
//! - **Errors**: CERRIF → error counters and state (active, warning,
//!   passive, bus-off) with events counted; the controller recovers from
//!   bus-off by itself (128 × 11 recessive bits) or on
//!   [`Mcp251xfd::restart`]. RX overflow is counted ([`Stats::rx_overflows`]),
//!   never silent; so is a full software queue ([`Stats::rx_dropped`]) and
//!   a frame longer than the RX object, which the device truncates
//!   ([`Stats::rx_truncated`]).
//! - **CRC** ([`Config::crc`]): every access uses READ_CRC / WRITE_CRC;
//!   bad replies are retried, then reported.
//! - **Timestamps**: the 32-bit TBC at 1 µs, extended to 64 bits ([`timestamp`]).

pub mod bittiming;
mod config;
mod error;
mod filter;
mod hot;
mod init;
pub mod intwait;
mod irq;
pub mod regio;
pub mod regs;
pub mod timestamp;
mod tx;

pub use config::{device_config, Config, Layout, OpMode, Plan};
pub use error::Error;
pub use filter::Filter;
pub use intwait::{IntWaitConfig, IntWaitStats};

use crate::can::Frame;
use hot::Hot;
use intwait::IntWait;
use regio::RegIo;
use std::collections::VecDeque;
use std::time::Duration;
use timestamp::TsExtender;
use wirespeed::gpio::LineRequest;
use wirespeed::spi::SpiDevice;
use wirespeed::time::now;

/// The controller's fault-confinement state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BusState {
    /// Error active (both counters below 96).
    #[default]
    Active,
    /// A counter reached 96.
    Warning,
    /// A counter passed 127.
    Passive,
    /// TEC passed 255: the controller does not take part in bus traffic.
    BusOff,
}

/// Driver counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames received from the device.
    pub rx_frames: u64,
    /// Frames queued for transmission.
    pub tx_frames: u64,
    /// Transmissions completed (TEF entries).
    pub tx_done: u64,
    /// RX FIFO overflow events (each lost at least one frame).
    pub rx_overflows: u64,
    /// Frames dropped because the driver's queue was full.
    pub rx_dropped: u64,
    /// Frames dropped because their payload was longer than the RX object
    /// ([`Config::rx_payload`]): the device kept only the bytes that fit.
    pub rx_truncated: u64,
    /// TEF overflow events.
    pub tef_overflows: u64,
    /// SPI CRC errors seen (retried or reported).
    pub crc_errors: u64,
    /// CAN error interrupts (CERRIF).
    pub bus_errors: u64,
    /// Transitions into error passive.
    pub error_passive_events: u64,
    /// Transitions into bus-off.
    pub bus_off_events: u64,
    /// Returns from bus-off to error active.
    pub bus_off_recoveries: u64,
    /// System errors (SERRIF) and invalid messages (IVMIF).
    pub system_errors: u64,
    /// Interrupt service passes.
    pub irq_passes: u64,
    /// Passes that found nothing to do.
    pub spurious: u64,
}

/// One MCP251xFD. Owns its SPI device and INT line; used by one thread at a
/// time (it is `Send`, not `Sync`), which plays both the IRQ thread and the
/// application.
#[derive(Debug)]
pub struct Mcp251xfd {
    io: RegIo,
    int: LineRequest,
    wait: IntWait,
    cfg: Config,
    plan: Plan,
    hot: Hot,
    rxq: VecDeque<Frame>,
    rx_tail: u8,
    rx_uinc_pending: bool,
    tx_head: u8,
    tx_in_flight: usize,
    tef_hint: bool,
    tx_seq: u32,
    last_tx_timestamp: Option<u64>,
    ts: TsExtender,
    state: BusState,
    tec_rec: (u8, u8),
    stats: Stats,
}

impl Mcp251xfd {
    /// Probes and configures the device on `spi`, with its INT output on
    /// line `int_offset` of `int` (an input with edge detection).
    pub fn new(spi: SpiDevice, int: LineRequest, int_offset: u32, cfg: Config) -> Result<Mcp251xfd, Error> {
        let plan = cfg.plan()?;
        let wait = IntWait::new(cfg.int_wait, &int, int_offset)?;
        let hot = Hot::build(&spi, &plan.layout, cfg.crc)?;
        let mut io = RegIo::new(spi, cfg.crc)?;
        init::probe(&mut io, &cfg)?;
        let mut d = Mcp251xfd {
            io,
            int,
            wait,
            rxq: VecDeque::with_capacity(cfg.rx_queue),
            cfg,
            plan,
            hot,
            rx_tail: 0,
            rx_uinc_pending: false,
            tx_head: 0,
            tx_in_flight: 0,
            tef_hint: false,
            tx_seq: 0,
            last_tx_timestamp: None,
            ts: TsExtender::default(),
            state: BusState::Active,
            tec_rec: (0, 0),
            stats: Stats::default(),
        };
        d.configure()?;
        Ok(d)
    }

    /// Only the probe: reset, oscillator, DEVID, configuration mode. Returns
    /// DEVID. Puts nothing on the bus but the RESET and reads.
    pub fn probe(spi: SpiDevice, cfg: &Config) -> Result<u32, Error> {
        init::probe(&mut RegIo::new(spi, cfg.crc)?, cfg)
    }

    /// Receives the next frame, waiting up to `timeout` (`None`: forever).
    /// `Ok(None)` on timeout.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<Frame>, Error> {
        if let Some(f) = self.rxq.pop_front() {
            return Ok(Some(f));
        }
        let deadline = timeout.map(|t| now().add_ns(t.as_nanos().min(u128::from(u64::MAX)) as u64));
        self.housekeeping()?;
        loop {
            if !self.wait.wait(&self.int, deadline)? {
                return Ok(self.rxq.pop_front());
            }
            self.service()?;
            if let Some(f) = self.rxq.pop_front() {
                return Ok(Some(f));
            }
            if deadline.is_some_and(|d| now() >= d) {
                return Ok(None);
            }
        }
    }

    /// An iterator of received frames; it ends at the first `timeout` with
    /// no frame (or at an error, which it yields).
    pub fn frames(&mut self, timeout: Duration) -> Frames<'_> {
        Frames { dev: self, timeout, done: false }
    }

    /// Handles whatever the device signals, without waiting (frames go to
    /// the queue `recv` reads).
    pub fn poll(&mut self) -> Result<(), Error> {
        self.housekeeping()?;
        while self.wait.asserted(&self.int)? {
            if !self.service()? {
                break;
            }
        }
        Ok(())
    }

    /// The fault-confinement state as of the last interrupt.
    pub fn bus_state(&self) -> BusState {
        self.state
    }

    /// (TEC, REC) as of the last error interrupt.
    pub fn error_counters(&self) -> (u8, u8) {
        self.tec_rec
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        Stats { crc_errors: self.stats.crc_errors + self.io.crc_errors, ..self.stats }
    }

    /// What the INT wait learned.
    pub fn int_wait_stats(&self) -> IntWaitStats {
        self.wait.stats
    }

    /// Frames sent whose completion (TEF) has not been collected.
    pub fn tx_in_flight(&self) -> usize {
        self.tx_in_flight
    }

    /// The TEF timestamp of the last completed transmission (µs, 64-bit).
    pub fn last_tx_timestamp(&self) -> Option<u64> {
        self.last_tx_timestamp
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The computed RAM layout and bit timings.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Register access for diagnostics (reads and writes on the configuration path).
    pub fn regs(&mut self) -> &mut RegIo {
        &mut self.io
    }

    /// The current 64-bit time base (µs), read from TBC.
    pub fn time_base(&mut self) -> Result<u64, Error> {
        let t = self.io.read(regs::C1TBC)?;
        Ok(self.ts.extend(t, now()))
    }

    fn housekeeping(&mut self) -> Result<(), Error> {
        if self.rx_uinc_pending {
            self.run_rx_uinc()?;
        }
        // Without TX timestamps a completion is only a TEF UINC: the next
        // `send` carries it in its own message (one SPI message fewer per
        // echoed frame). With timestamps the entry is read now.
        let tef_room = self.tx_in_flight < usize::from(self.plan.layout.tx_depth);
        if self.tef_hint && (self.cfg.tx_timestamps || !tef_room) {
            self.reap_hinted()?;
        }
        Ok(())
    }
}

/// Iterator over received frames (see [`Mcp251xfd::frames`]).
#[derive(Debug)]
pub struct Frames<'a> {
    dev: &'a mut Mcp251xfd,
    timeout: Duration,
    done: bool,
}

impl Iterator for Frames<'_> {
    type Item = Result<Frame, Error>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.dev.recv(Some(self.timeout)) {
            Ok(Some(f)) => Some(Ok(f)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
