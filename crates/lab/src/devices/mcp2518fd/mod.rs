//! A lab model of the Microchip MCP2518FD, an external CAN FD controller
//! with an SPI interface, faithful to the datasheet's programming model.
//!
//! **Bus face** ([`SpiDeviceModel`]): the SPI instructions RESET, READ,
//! WRITE, READ_CRC, WRITE_CRC and WRITE_SAFE with the device's CRC-16
//! (see the `spi` submodule); the SFRs (OSC, IOCON, CRC, ECCCON, ECCSTAT, DEVID),
//! the CAN FD controller registers (C1CON with REQOP/OPMOD and all eight
//! operation modes, NBTCFG/DBTCFG/TDC, TBC/TSCON, C1VEC, C1INT, C1RXIF,
//! C1TXIF, C1RXOVIF, C1TXATIF, C1TXREQ, C1TREC, C1BDIAG0/1, TEF, TXQ,
//! FIFO 1..31, 32 filters and masks) and the 2 KiB message RAM at 0x400 with
//! the datasheet's TX/RX/TEF object layout ([`regs`] has the map).
//!
//! **CAN face**: [`Mcp2518fd::attach_to_bus`] makes the device a node on a
//! [`can::Bus`](crate::can::Bus). A received frame is filtered and written
//! to its RX FIFO at EOF + [`Mcp2518fdConfig::store_delay_ns`] (the store
//! is queued when the bus tells of the frame at arbitration, so that at EOF
//! the interrupt thread only waits for its instant and makes it; measured
//! in `bench canecho --quick`, INT fell 2.3–3.8 µs late instead of 3.0–5.0);
//! a transmit
//! request (TXREQ / UINC) makes the message eligible after
//! [`Mcp2518fdConfig::tx_start_delay_ns`]; a sent frame completes (TEF
//! entry, FIFO tail) at its EOF + `store_delay_ns`; until then the device
//! offers the bus nothing (the message would otherwise go out twice when
//! the store delay outlasts the intermission).
//!
//! **Pins**: INT (and INT0 = TX / INT1 = RX when IOCON.PMx = 0) are lab
//! [`Pin`]s, active low, driven at the lab instant their source changes:
//! INT falls when a received frame is stored (by the lab's interrupt thread,
//! at that instant) and rises at the SPI byte that clears the last source.
//!
//! **Time**: the model's state is computed as of each SPI byte's instant
//! (internal events due by then are applied first). Events the interrupt
//! thread has already applied are not rolled back for a byte stamped
//! earlier, so state never goes backwards.
//!
//! **Backdoor** ([`Mcp2518fd`] is a cloneable handle): faults (oscillator
//! never ready, DEVID, MOSI/MISO bit flips for the CRC instructions, RX
//! overflow, bus-off, RAM bit flips, MAB errors, power cycles), peeking at
//! registers and RAM, counters, and the silicon behaviours' switches.
//!
//! **Silicon behaviours** ([`Errata`], each on by default, each switchable
//! with [`Mcp2518fd::set_errata`]; [`ErrataHits`] counts how often each
//! changed what the host saw). Sources: errata sheet DS80000789,
//! datasheet DS20006027, and the Linux driver
//! `drivers/net/can/spi/mcp251xfd` whose workarounds document them:
//!
//! - `tbc_read_crc`: a READ_CRC of C1TBC's byte 0 sends it with bit 7
//!   flipped when it is 0x00..0x07 or 0x80..0x87, with the CRC of the true
//!   byte (kernel mcp251xfd-regmap.c). See `quirks`.
//! - `fifoci`: FIFOSTA.FIFOCI reads one too far within
//!   [`Mcp2518fdConfig::fifoci_window_ns`] of a store into an RX FIFO (not
//!   full) or a completion from a TX FIFO (DS80000789 item 6; kernel
//!   mcp251xfd-rx.c / -tef.c). See `quirks`.
//! - `no_cerrif_to_active`: no CERRIF on the return to error active
//!   (kernel mcp251xfd-core.c). See `txrx`.
//! - `spi_clock_limit`: above 0.85 × SYSCLK / 2 (the SCLK the SPI
//!   controller reports through [`SpiDeviceModel::sclk_hz`]) every data
//!   byte slips by one bit both ways (datasheet; kernel `max_speed_hz`).
//!   See `quirks`.
//! - `ecc`: RAM powers up pseudo-random ([`Mcp2518fdConfig::ram_seed`]);
//!   with ECCCON.ECCEN an unwritten word reads as a double error (kernel
//!   `mcp251xfd_chip_ecc_init` zeroes the RAM). See `ecc`.
//! - `sleep`: Sleep stops the oscillator (no bus, no TBC, RESET and mode
//!   requests ignored); clearing OSC.OSCDIS wakes it after
//!   [`Mcp2518fdConfig::osc_startup_ns`]; Low-Power Mode (OSC.LPMEN) wakes
//!   on CS with a power-on reset; a RESET does not restart a running
//!   oscillator. See `sleep`.
//! - `mab_errors`: injected TX MAB underflows / RX MAB overflows change the
//!   mode to Restricted Operation or Listen Only (kernel
//!   `mcp251xfd_handle_serrif` / `_modif`). See `mab`.
//!
//! Always (datasheet behaviour, no switch): a bus error sets IVMIF and the
//! C1BDIAG1 bit (D* in the data phase of a BRS frame), CERRIF marks only
//! fault-confinement changes; TBCIF is set when TBC wraps to 0; a frame on
//! the bus during Sleep sets WAKIF.
//!
//! Not modelled: auto-RTR (RTREN), DeviceNet filtering (DNCNT), transmit
//! bandwidth sharing (TXBWS), TDC measurement, SID11, the SPI-underflow
//! system error, ECC checks of the controller's own RAM reads, GPIO inputs
//! driven from outside.

mod core;
mod crc16;
mod ecc;
mod errata;
mod fifo;
mod irq;
mod mab;
mod pin_out;
mod quirks;
mod registers;
pub mod regs;
mod sleep;
mod spi;
mod tbc;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bus_errors;
#[cfg(test)]
mod tests_conformance;
#[cfg(test)]
mod tests_ecc;
#[cfg(test)]
mod tests_errata;
#[cfg(test)]
mod tests_fifoci;
#[cfg(test)]
mod tests_mab;
#[cfg(test)]
mod tests_rx_staging;
#[cfg(test)]
mod tests_sclk;
#[cfg(test)]
mod tests_sleep;
#[cfg(test)]
mod tests_spi_quirks;
mod txrx;

pub use crc16::{crc16, crc16_update};
pub use errata::{EccFault, Errata, ErrataHits, MabError};

use self::core::{Core, Pins};
use crate::can::{
    Bus, BusError, BusObserver, CanNode, ErrorCounters, Frame, FrameRecord, FrameStamp, NodeId, Participation, Role,
    TxOutcome, TxRequest,
};
use crate::lab::Lab;
use crate::pin::Pin;
use crate::spi::SpiDeviceModel;
use pin_out::{lock, CoreGuard};
use std::sync::{Arc, Mutex};
use wirespeed_time::{now, spin_until, Deadline, Instant};

/// Longest store delay the bus's interrupt thread waits out inline (see `rx_frame`).
const INLINE_STORE_NS: u64 = 5_000;

/// Timing knobs, the crystal and the power-up RAM. Defaults are datasheet-plausible.
#[derive(Clone, Copy, Debug)]
pub struct Mcp2518fdConfig {
    /// Crystal / oscillator frequency (40 MHz on most boards; SYSCLK without PLL).
    pub osc_hz: u64,
    /// From power-on (or a wake from Sleep) to OSC.OSCRDY; the kernel
    /// budgets 3 ms per poll (MCP251XFD_OSC_STAB_SLEEP_US). A RESET does
    /// not restart a running oscillator (see [`Errata::sleep`]).
    pub osc_startup_ns: u64,
    /// From OSC.PLLEN to OSC.PLLRDY.
    pub pll_lock_ns: u64,
    /// From a frame's EOF to its RX object (or TEF object) written and INT asserted.
    pub store_delay_ns: u64,
    /// From TXREQ (or UINC on a requested FIFO) to the earliest SOF.
    pub tx_start_delay_ns: u64,
    /// Internal delay of a mode change (plus bus integration when joining the bus).
    pub mode_switch_ns: u64,
    /// How long after a FIFO's head (RX) or tail (TX) moved a FIFOSTA read
    /// sees FIFOCI one too far ([`Errata::fifoci`]). The errata sheet gives
    /// no duration (the kernel's report: "a time window after receiving a
    /// CAN frame"); the default, 10 µs, is of the order of a host's fastest
    /// reaction to INT, so that a driver reading FIFOSTA as soon as it can
    /// meets the erratum now and then, as the kernel's users did under load.
    pub fifoci_window_ns: u64,
    /// Seed of the pseudo-random RAM content at power-up ([`Errata::ecc`]);
    /// read at each power-up (creation, [`Mcp2518fd::power_cycle`], a wake
    /// from Low-Power Mode).
    pub ram_seed: u64,
}

impl Default for Mcp2518fdConfig {
    fn default() -> Self {
        Mcp2518fdConfig {
            osc_hz: 40_000_000,
            osc_startup_ns: 3_000_000,
            pll_lock_ns: 100_000,
            store_delay_ns: 1_000,
            tx_start_delay_ns: 2_000,
            mode_switch_ns: 1_000,
            fifoci_window_ns: 10_000,
            ram_seed: 0x2518_FD00_5EED_0001,
        }
    }
}

/// Operation modes (C1CON.REQOP / OPMOD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Normal CAN FD (mixed FD and classic frames).
    NormalFd,
    /// Sleep.
    Sleep,
    /// Internal loopback: frames never reach the bus.
    InternalLoopback,
    /// Listen only: no ACK, no transmission.
    ListenOnly,
    /// Configuration.
    Config,
    /// External loopback: transmits on the bus, needs no ACK, receives its own frames.
    ExternalLoopback,
    /// Normal CAN 2.0: FD frames on the bus are errors.
    NormalCan20,
    /// Restricted operation: receives and acknowledges, never transmits.
    Restricted,
}

impl Mode {
    /// The mode a 3-bit REQOP/OPMOD value names.
    pub fn from_bits(b: u8) -> Mode {
        match b & 7 {
            0 => Mode::NormalFd,
            1 => Mode::Sleep,
            2 => Mode::InternalLoopback,
            3 => Mode::ListenOnly,
            4 => Mode::Config,
            5 => Mode::ExternalLoopback,
            6 => Mode::NormalCan20,
            _ => Mode::Restricted,
        }
    }
    /// The mode's 3-bit value.
    pub fn bits(self) -> u8 {
        match self {
            Mode::NormalFd => 0,
            Mode::Sleep => 1,
            Mode::InternalLoopback => 2,
            Mode::ListenOnly => 3,
            Mode::Config => 4,
            Mode::ExternalLoopback => 5,
            Mode::NormalCan20 => 6,
            Mode::Restricted => 7,
        }
    }
}

/// Counters the backdoor reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames the controller received in a receiving mode.
    pub rx_frames: u64,
    /// Frames written to an RX FIFO.
    pub rx_stored: u64,
    /// Frames no filter accepted (or aimed at a TX FIFO).
    pub rx_unmatched: u64,
    /// Frames lost to a full RX FIFO (and injected overflows).
    pub rx_overflows: u64,
    /// Frames sent successfully.
    pub tx_frames: u64,
    /// REQOP writes that could not be honoured (bad transition, no clock).
    pub invalid_mode_requests: u64,
    /// SPI CRC mismatches (WRITE_CRC, WRITE_SAFE).
    pub spi_crc_errors: u64,
    /// SPI CRC accesses with the wrong byte count.
    pub spi_format_errors: u64,
}

/// The device. Clones share it: attach one to the SPI controller, keep one
/// as the backdoor.
#[derive(Clone)]
pub struct Mcp2518fd {
    core: Arc<Mutex<Core>>,
}

impl std::fmt::Debug for Mcp2518fd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.lock();
        f.debug_struct("Mcp2518fd").field("mode", &c.mode).field("stats", &c.stats).finish()
    }
}

struct Node(Arc<Mutex<Core>>);

impl Mcp2518fd {
    /// A device on `lab`, powered on now (the oscillator starts).
    pub fn new(lab: &Lab, cfg: Mcp2518fdConfig) -> Mcp2518fd {
        let pins = Pins {
            int: Pin::new("mcp2518fd-int", true),
            int0: Pin::new("mcp2518fd-int0", true),
            int1: Pin::new("mcp2518fd-int1", true),
        };
        let core = Arc::new(Mutex::new(Core::new(cfg, lab.scheduler().clone(), pins, now())));
        lock(&core).weak = Arc::downgrade(&core);
        Mcp2518fd { core }
    }

    fn lock(&self) -> CoreGuard<'_> {
        lock(&self.core)
    }

    /// Attaches the device to `bus` as a node.
    pub fn attach_to_bus(&self, bus: &Bus, name: &str) -> NodeId {
        let node = Arc::new(Node(self.core.clone()));
        let id = bus.attach(node.clone(), name);
        bus.observe(node);
        self.lock().bus = Some((bus.downgrade(), id));
        id
    }

    /// The INT output (active low).
    pub fn int_pin(&self) -> Pin {
        self.lock().pin_latch.pins().int.clone()
    }
    /// INT0/GPIO0: the TX interrupt when IOCON.PM0 = 0 (active low).
    pub fn int0_pin(&self) -> Pin {
        self.lock().pin_latch.pins().int0.clone()
    }
    /// INT1/GPIO1: the RX interrupt when IOCON.PM1 = 0 (active low).
    pub fn int1_pin(&self) -> Pin {
        self.lock().pin_latch.pins().int1.clone()
    }

    /// Backdoor: the 32-bit register or RAM word at `addr` as of `at`.
    pub fn peek(&self, addr: u16, at: Instant) -> u32 {
        let mut c = self.lock();
        c.advance(at);
        c.read_word(addr, at)
    }

    /// Backdoor: `len` bytes of message RAM from offset `offset` (0 = address 0x400).
    pub fn peek_ram(&self, offset: usize, len: usize) -> Vec<u8> {
        let c = self.lock();
        (offset..offset + len).map(|i| c.ram.get(i).copied().unwrap_or(0)).collect()
    }

    /// Backdoor: the operation mode as of `at`.
    pub fn mode(&self, at: Instant) -> Mode {
        let mut c = self.lock();
        c.advance(at);
        c.mode
    }

    /// Backdoor: counters.
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    /// Backdoor: the timing knobs.
    pub fn config(&self) -> Mcp2518fdConfig {
        self.lock().cfg
    }

    /// Backdoor: changes the timing knobs (applies to later events).
    pub fn set_config(&self, cfg: Mcp2518fdConfig) {
        self.lock().cfg = cfg;
    }

    /// Whether the FIFO/TEF/TXQ configuration overflows the 2 KiB RAM.
    pub fn ram_overflow(&self) -> bool {
        self.lock().layout_overflow
    }

    /// Fault: the oscillator never becomes ready (OSC.OSCRDY stays 0 and
    /// mode requests are ignored), or heals.
    pub fn set_oscillator_dead(&self, dead: bool) {
        self.lock().osc_never_ready = dead;
    }

    /// Fault: the DEVID register reads `devid`.
    pub fn set_devid(&self, devid: u32) {
        self.lock().devid = devid;
    }

    /// Fault: XOR `mask` into the next `n` MOSI bytes after the command (as
    /// the device receives them: WRITE_CRC / WRITE_SAFE detect it).
    pub fn flip_mosi(&self, n: u32, mask: u8) {
        self.lock().flip_mosi = (n, mask);
    }

    /// Fault: XOR `mask` into the next `n` MISO data bytes (the host's check
    /// of a READ_CRC detects it).
    pub fn flip_miso(&self, n: u32, mask: u8) {
        self.lock().flip_miso = (n, mask);
    }

    /// Fault: flags an overflow on RX FIFO `fifo` as if a frame had been lost.
    pub fn inject_rx_overflow(&self, fifo: usize, at: Instant) {
        let mut c = self.lock();
        c.advance(at);
        c.inject_rx_overflow(fifo);
        c.update_pins(at);
    }

    /// Backdoor: the silicon behaviours switched on.
    pub fn errata(&self) -> Errata {
        self.lock().errata
    }

    /// Backdoor: switches silicon behaviours on or off (applies from now
    /// on; the RAM content [`Errata::ecc`] decides is that of the next
    /// power-up: call [`Mcp2518fd::power_cycle`] for a device that never
    /// had it).
    pub fn set_errata(&self, e: Errata) {
        self.lock().errata = e;
    }

    /// Backdoor: how often each silicon behaviour changed what the host saw.
    pub fn errata_hits(&self) -> ErrataHits {
        self.lock().hits
    }

    /// Fault: flips one or two bits of the stored RAM word at `offset`
    /// (from 0x400, rounded down to a word), keeping its old ECC.
    pub fn inject_ram_fault(&self, offset: usize, fault: EccFault) {
        self.lock().inject_ram_fault(offset & !3, fault);
    }

    /// Fault: the next RX object stored gets `fault` in its first data word.
    pub fn corrupt_next_rx_store(&self, fault: EccFault) {
        self.lock().corrupt_next_rx = Some(fault);
    }

    /// Fault: a message-assembly-buffer error at `at` (see [`MabError`]).
    pub fn inject_mab_error(&self, kind: MabError, at: Instant) {
        let mut c = self.lock();
        c.advance(at);
        c.inject_mab_error(kind, at);
        c.update_pins(at);
    }

    /// Power is removed and restored at `at`: power-on reset, RAM content
    /// undefined again, the oscillator starting.
    pub fn power_cycle(&self, at: Instant) {
        let mut c = self.lock();
        c.advance(at);
        c.power_on(at);
    }

    /// Fault: drives the device bus-off (through its bus) at `at`.
    pub fn force_bus_off(&self, at: Instant) {
        let bus = self.lock().bus();
        if let Some((bus, id)) = bus {
            bus.force_bus_off(id, at);
        }
    }
}

impl SpiDeviceModel for Mcp2518fd {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        let mut c = self.lock();
        c.advance(at);
        if asserted {
            if c.cs_wakes(at) {
                c.spi.lost();
            } else {
                c.spi.select();
            }
        } else {
            spi::SpiState::deselect(&mut c, at);
        }
    }

    fn sclk_hz(&mut self, hz: u64) {
        self.lock().sclk_hz = hz;
    }

    fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32 {
        let mut c = self.lock();
        c.advance(at);
        if bits == 0 || !bits.is_multiple_of(8) || bits > 32 {
            return 0;
        }
        let n = bits / 8;
        let mut miso = 0u32;
        for i in (0..n).rev() {
            let b = (mosi >> (8 * u32::from(i))) as u8;
            miso |= u32::from(spi::SpiState::byte(&mut c, b, at)) << (8 * u32::from(i));
        }
        // Only a register write or a CRC flag can move the pins.
        if c.spi.take_pins_stale() {
            c.update_pins(at);
        }
        miso
    }
}

impl CanNode for Node {
    fn participation(&self, at: Instant) -> Participation {
        let mut c = lock(&self.0);
        c.advance(at);
        let role = match c.mode {
            // Asleep, the device only notices bus activity (WAKIF): it
            // hears every frame, acknowledges none.
            Mode::Sleep => return Participation { role: Role::ListenOnly, rates: None, fd_tolerant: true },
            Mode::Config | Mode::InternalLoopback => Role::Off,
            Mode::ListenOnly => Role::ListenOnly,
            Mode::Restricted => Role::Restricted,
            Mode::NormalFd | Mode::NormalCan20 | Mode::ExternalLoopback => Role::Active,
        };
        Participation { role, rates: Some(c.bit_rates()), fd_tolerant: c.mode != Mode::NormalCan20 }
    }

    fn tx_request(&self, at: Instant) -> Option<TxRequest> {
        let mut c = lock(&self.0);
        c.advance(at);
        if !matches!(c.mode, Mode::NormalFd | Mode::NormalCan20 | Mode::ExternalLoopback) || c.bus_inflight.is_some() {
            return None;
        }
        let (m, slot, frame) = c.tx_candidate(at)?;
        if c.mab_tx_aborts(at) {
            c.update_pins(at);
            return None;
        }
        let token = c.token(m, slot);
        c.bus_inflight = Some(token);
        Some(TxRequest { frame, token, self_ack: c.mode == Mode::ExternalLoopback })
    }

    fn tx_done(&self, token: u64, outcome: TxOutcome, stamp: FrameStamp) {
        let mut c = lock(&self.0);
        if outcome == TxOutcome::LostArbitration {
            c.lost_arbitration(token);
        } else {
            c.tx_done_from_bus(token, outcome, stamp);
        }
    }

    fn rx_coming(&self, frame: &Frame, stamp: FrameStamp) {
        lock(&self.0).stage_rx(frame, stamp);
    }

    fn rx_frame(&self, frame: &Frame, stamp: FrameStamp) {
        let due = {
            let mut c = lock(&self.0);
            c.rx_from_bus(frame, stamp);
            stamp.eof.add_ns(c.cfg.store_delay_ns)
        };
        // The bus tells its receivers at EOF from the interrupt thread, which
        // still has the frame's other listeners to tell before it reaches
        // the scheduled store. A store due within a few µs is done here, at
        // its instant, so that INT falls on time rather than after them.
        if due.ns_since(now()) <= INLINE_STORE_NS {
            spin_until(Deadline::at(due));
            lock(&self.0).advance(due);
        }
    }

    fn error_counters_changed(&self, counters: ErrorCounters, at: Instant) {
        let mut c = lock(&self.0);
        c.advance(at);
        c.counters_changed(counters);
        c.update_pins(at);
    }

    fn rx_error(&self, error: BusError, at: Instant) {
        // Which bit of C1BDIAG1 depends on the frame (BRS): the bus tells
        // its observers, this device among them, right after.
        let mut c = lock(&self.0);
        c.advance(at);
        c.rx_error_pending = Some((error, at));
    }
}

impl BusObserver for Node {
    fn frame(&self, record: &FrameRecord) {
        let mut c = lock(&self.0);
        if let Some((error, at)) = c.rx_error_pending.take() {
            c.advance(at);
            c.bus_error_seen(error, record.frame.brs());
            c.update_pins(at);
        }
    }
}
