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
//!   (bit timing, RAM layout) before touching the bus; then the probe, as
//!   the Linux driver's soft reset: wake the chip (OSC with OSCDIS clear,
//!   CLKODIV ÷ 10; wait for OSCRDY), request configuration mode, RESET
//!   (a sleeping chip ignores RESET and mode requests), wait for OSCRDY
//!   ([`Config::osc_timeout`], 30 ms), check DEVID and configuration mode,
//!   tell the variant by OSC.LPMEN ([`Mcp251xfd::variant`]: set = MCP2518FD,
//!   clear = MCP2517FD) and restore OSC. Then IOCON (INT0/INT1 as
//!   interrupt outputs, push-pull), ECC (ECCCON = ECCEN | SECIE | DEDIE)
//!   and the whole 2 KiB RAM zeroed in the largest writes the format allows
//!   (one plain write; 1020-byte WRITE_CRCs), bit timing, time base (1 µs
//!   ticks), TEF, RX FIFO 1 with timestamps, TX FIFO 2, filters (accept
//!   all), interrupts, and the mode. Transmission uses a TX FIFO rather
//!   than the TXQ, which sends by ID and so may reorder frames that share one.
//! - **Lifecycle**: a failed probe ([`Error::OscillatorNotReady`],
//!   [`Error::WrongDevice`], [`Error::NotInConfigMode`],
//!   [`Error::ModeTimeout`]) has written at most three things, in this
//!   order: OSC = 0x60 (the wake-up: CLKODIV ÷ 10, oscillator on, no PLL),
//!   C1CON byte 3 = 0x04 (REQOP = configuration) and the RESET
//!   instruction; everything else it did was reads. If the oscillator does
//!   not start after the wake-up, only OSC was written. The chip is left
//!   in configuration mode (or asleep / without clock, as it was found).
//! - **Receive**: the INT line ([`intwait`]) → one prepared message (three
//!   chip-select windows) reading C1INT, the RX FIFO's FIFOSTA and the RX
//!   object at the tail (module `hot`) → the frame. FIFOSTA gives the
//!   number of objects waiting: none if TFNRFNIF is clear, the depth if
//!   TFERFFIF is set, else (FIFOCI − tail) mod depth. The first frame is
//!   handed over at once; the others are read by the next call in one
//!   burst (two reads at the ring's wrap, one SPI message) and their UINCs
//!   sent in one message — unless, its UINC sent, INT is high: then the
//!   FIFO is empty and the others were FIFOCI's phantoms (the erratum
//!   below), settled by a GPIO read with no SPI message. A single frame's UINC is deferred until after the
//!   next transmit (it rides in its message) or the next receive, so an
//!   echo's TX reaches the wire first — while the TX messages run in the
//!   driver's thread. Where the SPI core queues them for its pump thread
//!   (the kernel presets), the interrupt's pass sends the UINC before it
//!   returns, as the Linux driver's handler does: riding in a queued TX
//!   message it would hold INT low until the pump ran it.
//! - **Transmit** ([`Mcp251xfd::send`]): one prepared message writes the
//!   object at the TX FIFO's head and sets UINC | TXREQ, submitted
//!   asynchronously as the Linux driver's `spi_async` (with the fast policy
//!   on an idle bus it runs before `send` returns; [`Mcp251xfd::flush_tx`]
//!   waits for it). An echoed frame
//!   costs one status message and one TX message (without TX timestamps;
//!   with them, a third message reads the completion's TEF object).
//! - **Completions** come back through the TEF, reaped lazily by default.
//!   The Linux driver enables C1INT.TEFIE and takes a TEF interrupt per
//!   completion; here C1INT.TEFIF (the TEF's not-empty flag, TEFNEIE in
//!   TEFCON) is seen in every status read, and C1INT.TEFIE is left clear so
//!   that a completion does not cost a service pass of its own (two SPI
//!   messages and a wake-up per transmitted frame): with TX timestamps the
//!   entry is read before the next wait; without, its UINC rides in the
//!   next transmit's message. [`Config::tef_irq`] does it Linux's way: TEFIE
//!   on, and each pass that sees TEFIF drains the TEF. When the TX queue is full (or
//!   on [`Mcp251xfd::reap_tef`]) the TEF is drained by the TX FIFO's FIFOCI,
//!   as the Linux driver does, in one burst with the SEQ check below.
//! - **Errors**: CERRIF (fault-confinement changes) → C1TREC → state
//!   (active, warning, passive, bus-off), with events counted; while not
//!   error active every service pass reads C1TREC (the chip announces no
//!   return to error active). Bus errors come as IVMIF: C1BDIAG1 is decoded
//!   into [`BusErrorCounters`] and cleared. At bus-off the driver stops the
//!   controller (configuration mode) and restarts it fully (RESET and the
//!   whole configuration) [`Config::bus_off_restart`] later (100 ms by
//!   default) at its next call, or on [`Mcp251xfd::restart`]; meanwhile
//!   [`Mcp251xfd::send`] returns [`Error::BusOff`]. A MAB error (SERRIF +
//!   MODIF: the chip dropped to Restricted or Listen-Only mode) is counted,
//!   its flags cleared and the configured mode requested again without
//!   waiting, so the chip retransmits the aborted frame. ECC errors (ECCIF)
//!   are counted by kind and cleared. RX overflow is counted
//!   ([`Stats::rx_overflows`]), never silent; so is a full software queue
//!   ([`Stats::rx_dropped`]) and a frame longer than the RX object, which
//!   the device truncates ([`Stats::rx_truncated`]).
//! - **CRC** ([`Config::crc`]): every access uses READ_CRC / WRITE_CRC;
//!   bad replies are retried, then reported; one-byte writes use
//!   WRITE_SAFE, and a write the chip refused (SPICRCIF) is made good.
//! - **SPI clock**: every transfer the driver builds (configuration path
//!   and prepared messages) is clocked at most 0.85 × SYSCLK / 2
//!   ([`spi_clock_limit`]), whatever the [`SpiDevice`] was configured for;
//!   with the PLL ([`Config::pll`]: SYSCLK = 10 × the clock, enabled after
//!   the probe and waited for, as Linux's `mcp251xfd_chip_clock_init()`),
//!   the limit of the bare clock holds until the PLL has locked.
//! - **Timestamps**: the 32-bit TBC at 1 µs, extended to 64 bits ([`timestamp`]).
//!
//! # Silicon errata
//!
//! Each workaround has a switch in [`Workarounds`] ([`Config::workarounds`],
//! all on by default, [`Workarounds::NONE`] all off) and a counter in
//! [`Stats`]; [`Stats::errata_recovered`] is the sum of the counters.
//! Errata sheets: MCP2518FD DS80000789, MCP2517FD DS80000792.
//!
//! | erratum / chip behaviour | Linux `mcp251xfd` | switch | counter |
//! |---|---|---|---|
//! | RESET and mode requests are ignored in Sleep (oscillator stopped) | `mcp251xfd_chip_softreset_do()`: `mcp251xfd_chip_wake()`, configuration mode, then RESET | `wake_before_reset` | `sleep_wakes` |
//! | RAM powers up undefined: with ECC, a read of never-written RAM is a double-bit error; single-bit errors are corrected only with ECC on | `mcp251xfd_chip_ecc_init()` (ECCEN, SECIE, DEDIE, RAM zeroed), `mcp251xfd_handle_eccif()` | `ecc_init` | `ecc_corrected` (and `ecc_uncorrectable`) |
//! | READ_CRC of C1TBC: when byte 0 & 0xF8 is 0x00 or 0x80 the CRC fits byte 0 with bit 7 flipped | `mcp251xfd_regmap_crc_read()`: flip, re-check, keep the flipped value | `tbc_crc` | `tbc_crc_fixed` |
//! | DS80000789E 6: RX FIFOSTA.FIFOCI (head) reads one too far shortly after a store: an old object would be read as new | `mcp251xfd_handle_rxif_one()`: timestamp ≤ `ring->last_valid` → stop | `rx_index`: 64-bit timestamp ≤ the last valid one → stale: not delivered, not UINC'd (the burst's last object's timestamp is read first, so a frame stored during the burst cannot pass with an old header) | `rx_stale` |
//! | DS80000789E 6 on the TX FIFO: FIFOCI (tail) too far: a TEF object not yet written would count as a completion | `mcp251xfd_get_tef_len()`, `mcp251xfd_handle_tefif_one()`: SEQ ≠ expected → stop | `tef_seq`: 7-bit SEQ (starting at 1, so zeroed RAM never matches) vs the oldest frame in flight | `tef_stale` |
//! | No CERRIF on the way back from warning / passive to error active | `mcp251xfd_irq()`: handle CERRIF on every pass while not error active | `trec_poll` | `trec_active_polled` |
//! | Bus errors raise IVMIF with C1BDIAG1 bits, not CERRIF | `mcp251xfd_handle_ivmif()`: decode BDIAG1, write 0 | `ivmif_bdiag` | `ivmif_decoded`, [`Stats::bus_errors`] |
//! | WRITE_CRC writes bytes as they arrive: a corrupted UINC / TXREQ byte acts before its CRC fails | `MCP251XFD_SPI_INSTRUCTION_WRITE_CRC_SAFE` | `write_safe`: one-byte writes as WRITE_SAFE; on SPICRCIF the TX FIFO head (C1FIFOUA), RX FIFO and TEF tails are compared with the driver's and the missing UINC (\| TXREQ) re-issued; configuration-path bytes are checked and repeated | `write_safe_recovered` |
//! | TX MAB underflow / RX MAB overflow: SERRIF + MODIF, the chip drops to Restricted or Listen-Only mode | `mcp251xfd_handle_serrif()`, `mcp251xfd_handle_modif()`, `mcp251xfd_chip_set_normal_mode_nowait()` | `mab_recovery` | `mab_errors` |
//! | SPI above 0.85 × SYSCLK / 2 corrupts data (the errata sheets' SPI clock limit) | `mcp251xfd_probe()`: `spi->max_speed_hz` lowered to freq / 2 × 0.85 | `spi_clock`: every transfer's `speed_hz` | `spi_clock_clamped` (0 or 1) |

pub mod bittiming;
mod config;
mod errata;
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
pub use errata::{spi_clock_limit, Variant, Workarounds};
pub use error::Error;
pub use filter::Filter;
pub use intwait::{IntWaitConfig, IntWaitStats};

use crate::can::Frame;
use hot::{Hot, Wire};
use intwait::IntWait;
use regio::RegIo;
use std::collections::VecDeque;
use std::time::Duration;
use timestamp::TsExtender;
use wirespeed::gpio::LineRequest;
use wirespeed::spi::SpiDevice;
use wirespeed::time::{now, Instant};

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
    /// TEC passed 255: the driver stopped the controller (configuration
    /// mode) until its restart.
    BusOff,
}

/// CAN bus errors by kind, decoded from C1BDIAG1 at each IVMIF
/// ([`Workarounds::ivmif_bdiag`]): each counts the IVMIF events whose
/// BDIAG1 had that bit (the chip keeps one bit per kind, not a count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusErrorCounters {
    /// Nominal bit rate: a dominant bit was read back recessive (NBIT0ERR).
    pub nominal_bit0: u64,
    /// Nominal bit rate: a recessive bit was read back dominant (NBIT1ERR).
    pub nominal_bit1: u64,
    /// A transmitted frame was not acknowledged (NACKERR).
    pub nominal_ack: u64,
    /// Nominal bit rate: a fixed-form field was wrong (NFORMERR).
    pub nominal_form: u64,
    /// Nominal bit rate: a stuff error (NSTUFERR).
    pub nominal_stuff: u64,
    /// Nominal bit rate: a CRC error (NCRCERR).
    pub nominal_crc: u64,
    /// Data bit rate: DBIT0ERR.
    pub data_bit0: u64,
    /// Data bit rate: DBIT1ERR.
    pub data_bit1: u64,
    /// Data bit rate: DFORMERR.
    pub data_form: u64,
    /// Data bit rate: DSTUFERR.
    pub data_stuff: u64,
    /// Data bit rate: DCRCERR.
    pub data_crc: u64,
    /// A received frame's DLC needed more bytes than its RX object holds (DLCMM).
    pub dlc_mismatch: u64,
    /// A received CAN FD frame had ESI set (a transmitter error passive).
    pub esi: u64,
    /// The controller went bus-off (TXBOERR).
    pub tx_bus_off: u64,
}

impl BusErrorCounters {
    /// Adds the error bits of a C1BDIAG1 value.
    pub fn record(&mut self, bdiag1: u32) {
        use regs::*;
        let bits: [(u32, &mut u64); 14] = [
            (BDIAG1_NBIT0ERR, &mut self.nominal_bit0),
            (BDIAG1_NBIT1ERR, &mut self.nominal_bit1),
            (BDIAG1_NACKERR, &mut self.nominal_ack),
            (BDIAG1_NFORMERR, &mut self.nominal_form),
            (BDIAG1_NSTUFERR, &mut self.nominal_stuff),
            (BDIAG1_NCRCERR, &mut self.nominal_crc),
            (BDIAG1_DBIT0ERR, &mut self.data_bit0),
            (BDIAG1_DBIT1ERR, &mut self.data_bit1),
            (BDIAG1_DFORMERR, &mut self.data_form),
            (BDIAG1_DSTUFERR, &mut self.data_stuff),
            (BDIAG1_DCRCERR, &mut self.data_crc),
            (BDIAG1_DLCMM, &mut self.dlc_mismatch),
            (BDIAG1_ESI, &mut self.esi),
            (BDIAG1_TXBOERR, &mut self.tx_bus_off),
        ];
        for (bit, counter) in bits {
            if bdiag1 & bit != 0 {
                *counter += 1;
            }
        }
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.nominal_bit0
            + self.nominal_bit1
            + self.nominal_ack
            + self.nominal_form
            + self.nominal_stuff
            + self.nominal_crc
            + self.data_bit0
            + self.data_bit1
            + self.data_form
            + self.data_stuff
            + self.data_crc
            + self.dlc_mismatch
            + self.esi
            + self.tx_bus_off
    }
}

/// Driver counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames received from the device.
    pub rx_frames: u64,
    /// Frames queued for transmission.
    pub tx_frames: u64,
    /// Transmissions completed (TEF entries; frames dropped by a restart count too).
    pub tx_done: u64,
    /// RX FIFO overflow events (each lost at least one frame).
    pub rx_overflows: u64,
    /// Frames dropped because the driver's queue was full.
    pub rx_dropped: u64,
    /// Frames dropped because their payload was longer than the RX object
    /// ([`Config::rx_payload`]): the device kept only the bytes that fit.
    pub rx_truncated: u64,
    /// RX objects read in a burst after the first of an interrupt (the
    /// FIFO held more than one frame).
    pub rx_burst_frames: u64,
    /// TEF overflow events.
    pub tef_overflows: u64,
    /// SPI CRC errors seen (retried, recovered or reported).
    pub crc_errors: u64,
    /// CAN error interrupts (CERRIF: fault-confinement state changes).
    pub cerr_interrupts: u64,
    /// CAN bus errors by kind (from C1BDIAG1 at IVMIF).
    pub bus_errors: BusErrorCounters,
    /// Transitions into error passive.
    pub error_passive_events: u64,
    /// Transitions into bus-off.
    pub bus_off_events: u64,
    /// Restarts after bus-off (by [`Config::bus_off_restart`] or [`Mcp251xfd::restart`]).
    pub bus_off_recoveries: u64,
    /// System errors (SERRIF) and invalid messages (IVMIF).
    pub system_errors: u64,
    /// Interrupt service passes.
    pub irq_passes: u64,
    /// Passes that found nothing to do.
    pub spurious: u64,
    /// [`Workarounds::wake_before_reset`]: initialisations that found the
    /// chip asleep (OSC.OSCDIS set) and woke it before the RESET.
    pub sleep_wakes: u64,
    /// [`Workarounds::ecc_init`]: single-bit RAM errors the ECC corrected (ECCSTAT.SECIF).
    pub ecc_corrected: u64,
    /// Double-bit RAM errors the ECC detected (ECCSTAT.DEDIF): data lost.
    pub ecc_uncorrectable: u64,
    /// [`Workarounds::tbc_crc`]: C1TBC reads made good by the TBC erratum check.
    pub tbc_crc_fixed: u64,
    /// [`Workarounds::rx_index`]: RX objects found stale (not newer than
    /// the last valid frame): not delivered, not acknowledged.
    pub rx_stale: u64,
    /// [`Workarounds::tef_seq`]: TEF objects found stale (wrong SEQ).
    pub tef_stale: u64,
    /// [`Workarounds::trec_poll`]: returns to error active found by
    /// polling C1TREC (the chip raises no CERRIF for them).
    pub trec_active_polled: u64,
    /// [`Workarounds::ivmif_bdiag`]: IVMIF events decoded from C1BDIAG1.
    pub ivmif_decoded: u64,
    /// [`Workarounds::write_safe`]: one-byte writes the chip refused
    /// (WRITE_SAFE with a bad CRC) and the driver made good: repeated, or
    /// the missing UINC / TXREQ re-issued.
    pub write_safe_recovered: u64,
    /// [`Workarounds::mab_recovery`]: MAB errors (TX underflow / RX
    /// overflow: the chip dropped to Restricted or Listen-Only mode) after
    /// which the configured mode was requested again.
    pub mab_errors: u64,
    /// [`Workarounds::spi_clock`]: 1 if the SPI device was configured
    /// faster than 0.85 × SYSCLK / 2 and the driver clocks it lower.
    pub spi_clock_clamped: u64,
    /// How many times a workaround fired: the sum of `sleep_wakes`,
    /// `ecc_corrected`, `tbc_crc_fixed`, `rx_stale`, `tef_stale`,
    /// `trec_active_polled`, `ivmif_decoded`, `write_safe_recovered`,
    /// `mab_errors` and `spi_clock_clamped`.
    pub errata_recovered: u64,
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
    /// RX objects consumed whose UINC has not been sent yet.
    rx_owed: u8,
    /// RX objects known (from FIFOSTA) to wait after the tail, not read yet.
    rx_known: u8,
    /// 64-bit timestamp of the newest valid RX object.
    rx_last_valid: u64,
    /// Burst buffers (allocated once).
    rx_bulk: Vec<u8>,
    tef_bulk: Vec<u8>,
    tx_head: u8,
    tx_in_flight: usize,
    tef_hint: bool,
    tx_seq: u32,
    last_tx_timestamp: Option<u64>,
    ts: TsExtender,
    state: BusState,
    tec_rec: (u8, u8),
    /// A MAB error's mode request is under way.
    mab_pending: bool,
    /// UINC writes sent since the chip's indices were last compared with
    /// the driver's: the most a refused-write repair may re-issue.
    unverified: Unverified,
    /// When the driver stopped the controller at bus-off.
    bus_off_at: Option<Instant>,
    variant: Variant,
    devid: u32,
    /// SPI clocks (0: the device's own) before SYSCLK is final and after
    /// ([`Workarounds::spi_clock`], [`Config::pll`]).
    spi_hz: (u32, u32),
    stats: Stats,
    /// The last frame's TX message while the SPI core holds it.
    tx_submitted: Option<tx::Submitted>,
    /// The SPI core ran the last TX message in this thread, before `send`
    /// returned: a deferred RX UINC may ride in the next one.
    tx_ran_here: bool,
}

/// UINC writes (TX FIFO, RX FIFO, TEF) not yet checked against the chip.
#[derive(Clone, Copy, Debug, Default)]
struct Unverified {
    tx: u32,
    rx: u32,
    tef: u32,
}

/// The driver's SPI clocks for `spi` (0: the device's own): before SYSCLK
/// is final (the PLL off: the probe) and after, and whether either had to
/// be lowered.
fn spi_clocks(spi: &SpiDevice, cfg: &Config) -> (u32, u32, bool) {
    let dev = spi.config().speed_hz;
    let clamp = |limit: u32| if cfg.workarounds.spi_clock && dev > limit { limit } else { 0 };
    let (slow, fast) = (clamp(spi_clock_limit(cfg.clock_hz)), clamp(spi_clock_limit(cfg.sysclk_hz())));
    (slow, fast, slow != 0 || fast != 0)
}

fn regio(spi: SpiDevice, cfg: &Config, hz: u32) -> Result<RegIo, Error> {
    let w = cfg.workarounds;
    RegIo::with_options(spi, cfg.crc, w.write_safe, w.tbc_crc, hz)
}

impl Mcp251xfd {
    /// Probes and configures the device on `spi`, with its INT output on
    /// line `int_offset` of `int` (an input with edge detection).
    pub fn new(spi: SpiDevice, int: LineRequest, int_offset: u32, cfg: Config) -> Result<Mcp251xfd, Error> {
        let plan = cfg.plan()?;
        let wait = IntWait::new(cfg.int_wait, &int, int_offset)?;
        let (slow, fast, clamped) = spi_clocks(&spi, &cfg);
        let wire = Wire { crc: cfg.crc, safe: cfg.workarounds.write_safe, hz: fast };
        let hot = Hot::build(&spi, &plan.layout, wire)?;
        let mut io = regio(spi, &cfg, slow)?;
        let p = init::probe(&mut io, &cfg)?;
        let l = plan.layout;
        let mut d = Mcp251xfd {
            io,
            int,
            wait,
            rxq: VecDeque::with_capacity(cfg.rx_queue),
            rx_bulk: vec![0; usize::from(l.rx_depth) * usize::from(l.rx_obj)],
            tef_bulk: vec![0; usize::from(l.tef_depth) * usize::from(l.tef_obj)],
            cfg,
            plan,
            hot,
            rx_tail: 0,
            rx_owed: 0,
            rx_known: 0,
            rx_last_valid: 0,
            tx_head: 0,
            tx_in_flight: 0,
            tef_hint: false,
            tx_seq: 1,
            last_tx_timestamp: None,
            ts: TsExtender::default(),
            state: BusState::Active,
            tec_rec: (0, 0),
            mab_pending: false,
            unverified: Unverified::default(),
            bus_off_at: None,
            variant: p.variant,
            devid: p.devid,
            spi_hz: (slow, fast),
            stats: Stats { spi_clock_clamped: u64::from(clamped), sleep_wakes: u64::from(p.woke), ..Stats::default() },
            tx_submitted: None,
            tx_ran_here: true,
        };
        d.configure()?;
        Ok(d)
    }

    /// Only the probe: wake-up, configuration mode, RESET, oscillator,
    /// DEVID, variant. Returns DEVID. What it writes is listed in the
    /// module documentation (*Lifecycle*).
    pub fn probe(spi: SpiDevice, cfg: &Config) -> Result<u32, Error> {
        let (slow, _, _) = spi_clocks(&spi, cfg);
        Ok(init::probe(&mut regio(spi, cfg, slow)?, cfg)?.devid)
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
            if let Some(f) = self.rxq.pop_front() {
                return Ok(Some(f));
            }
            // A bus-off restart due before the deadline ends the wait early.
            let restart = self.restart_at();
            let until = match (deadline, restart) {
                (Some(d), Some(r)) => Some(d.min(r)),
                (d, r) => d.or(r),
            };
            if !self.wait.wait(&self.int, until)? {
                if restart.is_some_and(|r| now() >= r) {
                    self.housekeeping()?;
                    continue;
                }
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

    /// The fault-confinement state as of the last interrupt (or C1TREC poll).
    pub fn bus_state(&self) -> BusState {
        self.state
    }

    /// (TEC, REC) as of the last C1TREC read.
    pub fn error_counters(&self) -> (u8, u8) {
        self.tec_rec
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.crc_errors += self.io.crc_errors;
        s.tbc_crc_fixed += self.io.tbc_fixed;
        s.write_safe_recovered += self.io.safe_retries;
        s.errata_recovered = s.sleep_wakes
            + s.ecc_corrected
            + s.tbc_crc_fixed
            + s.rx_stale
            + s.tef_stale
            + s.trec_active_polled
            + s.ivmif_decoded
            + s.write_safe_recovered
            + s.mab_errors
            + s.spi_clock_clamped;
        s
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

    /// The chip variant (told apart by OSC.LPMEN at the probe).
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// DEVID as read at the probe.
    pub fn devid(&self) -> u32 {
        self.devid
    }

    /// The SPI clock the driver runs the device at (Hz): the device's own,
    /// or 0.85 × SYSCLK / 2 if that was faster ([`Workarounds::spi_clock`]).
    pub fn spi_clock_hz(&self) -> u32 {
        if self.io.speed_hz == 0 {
            self.io.dev.config().speed_hz
        } else {
            self.io.speed_hz
        }
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

    /// When the driver restarts the controller after bus-off by itself.
    fn restart_at(&self) -> Option<Instant> {
        if self.state != BusState::BusOff {
            return None;
        }
        let (at, d) = (self.bus_off_at?, self.cfg.bus_off_restart?);
        Some(at.add_ns(d.as_nanos().min(u128::from(u64::MAX)) as u64))
    }

    /// Restarts the controller if a bus-off restart is due.
    pub(super) fn auto_restart(&mut self) -> Result<(), Error> {
        if self.restart_at().is_some_and(|r| now() >= r) {
            self.restart()?;
        }
        Ok(())
    }

    fn housekeeping(&mut self) -> Result<(), Error> {
        self.auto_restart()?;
        if self.state == BusState::BusOff {
            return Ok(());
        }
        if self.rx_known > 0 {
            self.read_known()?;
        }
        if self.rx_owed > 0 {
            self.run_rx_uinc()?;
        }
        self.poll_trec()?;
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
