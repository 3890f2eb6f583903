//! The device's state: SFRs, CAN FD controller registers, message RAM, FIFO
//! logic, operation modes, interrupts and pins, all computed as of the
//! instant of each access or internal event.

use super::errata::{EccFault, Errata, ErrataHits};
use super::fifo::Fifo;
use super::pin_out::{lock, PinLatch};
use super::regs::*;
use super::spi::SpiState;
use super::{Mcp2518fdConfig, Mode, Stats};
use crate::can::{BitRates, Bus, BusError, ErrorCounters, Frame, FrameStamp, NodeId, TxOutcome, WeakBus};
use crate::pin::Pin;
use crate::scheduler::{Scheduler, TimerId};
use std::collections::BTreeMap;
use std::sync::{Mutex, Weak};
use wirespeed_time::Instant;

pub(super) enum Event {
    Mode(Mode),
    Rx {
        frame: Frame,
        stamp: FrameStamp,
    },
    TxDone {
        token: u64,
        outcome: TxOutcome,
        stamp: FrameStamp,
    },
    /// The time base counter wraps from 0xFFFF_FFFF to 0 (TBCIF).
    TbcWrap,
    /// The oscillator woken from Sleep is ready: configuration mode.
    Woken,
}

pub(super) struct Pending {
    at: Instant,
    seq: u64,
    pub(super) ev: Event,
}

pub(super) struct Pins {
    pub int: Pin,
    pub int0: Pin,
    pub int1: Pin,
}

pub(super) struct Core {
    pub(super) cfg: Mcp2518fdConfig,
    pub(super) stats: Stats,
    pub(super) spi: SpiState,
    pub(super) pin_latch: PinLatch,
    /// How many times the pins were evaluated (tests count the emulation's work).
    #[cfg(test)]
    pub(super) pin_updates: u64,
    pub(super) bus: Option<(WeakBus, NodeId)>,
    pub(super) counters: ErrorCounters,
    /// FIFOs with an interrupt enable set in FIFOCON (bit m: FIFO m): the
    /// only ones that can raise an interrupt, kept with FIFOCON.
    pub(super) ie_fifos: u32,
    pub(super) osc_never_ready: bool,
    pub(super) devid: u32,
    pub(super) flip_mosi: (u32, u8),
    pub(super) flip_miso: (u32, u8),
    pub(super) weak: Weak<Mutex<Core>>,
    pub(super) scheduler: Scheduler,
    pub(super) osc: u32,
    pub(super) osc_ready_at: Instant,
    pub(super) pll_ready_at: Instant,
    pub(super) iocon: u32,
    pub(super) crc: u32,
    pub(super) ecccon: u32,
    pub(super) eccstat: u32,
    pub(super) con: u32,
    pub(super) mode: Mode,
    pub(super) nbtcfg: u32,
    pub(super) dbtcfg: u32,
    pub(super) tdc: u32,
    pub(super) tscon: u32,
    pub(super) tbc_base: u32,
    pub(super) tbc_at: Instant,
    pub(super) int_flags: u32,
    pub(super) int_en: u32,
    pub(super) bdiag1: u32,
    pub(super) tef: Fifo,
    pub(super) fifos: [Fifo; 32],
    pub(super) fltcon: [u8; 32],
    pub(super) fltobj: [u32; 32],
    pub(super) mask: [u32; 32],
    pub(super) ram: Box<[u8; RAM_SIZE]>,
    pub(super) events: Vec<Pending>,
    pub(super) seq: u64,
    /// Internal loopback: the bus-less transmitter is busy until then.
    pub(super) internal_idle_at: Instant,
    pub(super) internal_inflight: bool,
    /// The token of the message the bus is carrying (offered, not yet
    /// completed): it is not offered again before its completion is stored.
    pub(super) bus_inflight: Option<u64>,
    pub(super) layout_overflow: bool,
    pub(super) errata: Errata,
    pub(super) hits: ErrataHits,
    /// The SCLK the SPI controller last reported (0: never told).
    pub(super) sclk_hz: u64,
    pub(super) corrupt_next_rx: Option<EccFault>,
    /// RAM words written since power-up (bit w: word at offset 4w).
    pub(super) ram_written: [u64; RAM_SIZE / 4 / 64],
    /// RAM words holding injected bit flips: offset → the word its ECC encodes.
    pub(super) ram_true: BTreeMap<usize, u32>,
    /// Power-ups so far (seeds each power-up's RAM content).
    pub(super) power_ups: u64,
    /// In Sleep with the oscillator stopped, entered with OSC.LPMEN: Low-Power Mode.
    pub(super) lpm: bool,
    /// The time base counter stands still from this instant (oscillator stopped).
    pub(super) tbc_stop: Option<Instant>,
    pub(super) tbc_wrap_timer: Option<TimerId>,
    /// An injected TX MAB underflow waits for the next transmission.
    pub(super) mab_tx: bool,
    /// An injected RX MAB overflow waits for the next reception.
    pub(super) mab_rx: bool,
    /// A bus error seen while receiving, applied once the bus says which frame it hit.
    pub(super) rx_error_pending: Option<(BusError, Instant)>,
    /// The EOF of the frame whose reception was staged at arbitration
    /// (`CanNode::rx_coming`): its store is already among `events`.
    pub(super) rx_staged: Option<Instant>,
}

pub(super) fn merge(old: u32, val: u32, mask: u32) -> u32 {
    (old & !mask) | (val & mask)
}

impl Core {
    /// The bus this device is attached to, if any (and if it still exists).
    pub(super) fn bus(&self) -> Option<(Bus, NodeId)> {
        self.bus.as_ref().and_then(|(b, id)| Some((b.upgrade()?, *id)))
    }

    pub(super) fn new(cfg: Mcp2518fdConfig, scheduler: Scheduler, pins: Pins, at: Instant) -> Core {
        let mut c = Core {
            cfg,
            stats: Stats::default(),
            spi: SpiState::default(),
            pin_latch: PinLatch::new(pins),
            #[cfg(test)]
            pin_updates: 0,
            bus: None,
            counters: ErrorCounters::default(),
            ie_fifos: 0,
            osc_never_ready: false,
            devid: DEVID_MCP2518FD,
            flip_mosi: (0, 0),
            flip_miso: (0, 0),
            weak: Weak::new(),
            scheduler,
            osc: 0,
            osc_ready_at: at,
            pll_ready_at: at,
            iocon: 0,
            crc: 0,
            ecccon: 0,
            eccstat: 0,
            con: 0,
            mode: Mode::Config,
            nbtcfg: 0,
            dbtcfg: 0,
            tdc: 0,
            tscon: 0,
            tbc_base: 0,
            tbc_at: at,
            int_flags: 0,
            int_en: 0,
            bdiag1: 0,
            tef: Fifo::default(),
            fifos: [Fifo::default(); 32],
            fltcon: [0; 32],
            fltobj: [0; 32],
            mask: [0; 32],
            ram: Box::new([0; RAM_SIZE]),
            events: Vec::new(),
            seq: 0,
            internal_idle_at: at,
            internal_inflight: false,
            bus_inflight: None,
            layout_overflow: false,
            errata: Errata::ALL,
            hits: ErrataHits::default(),
            sclk_hz: 0,
            corrupt_next_rx: None,
            ram_written: [0; RAM_SIZE / 4 / 64],
            ram_true: BTreeMap::new(),
            power_ups: 0,
            lpm: false,
            tbc_stop: None,
            tbc_wrap_timer: None,
            mab_tx: false,
            mab_rx: false,
            rx_error_pending: None,
            rx_staged: None,
        };
        c.power_on(at);
        c
    }

    /// Power-on reset (power applied, or a wake from Low-Power Mode): every
    /// register to its reset value, the oscillator starting, RAM content
    /// undefined (see `ecc`).
    pub(super) fn power_on(&mut self, at: Instant) {
        self.power_ups += 1;
        self.ram_power_up();
        self.lpm = false;
        self.mab_tx = false;
        self.mab_rx = false;
        self.rx_error_pending = None;
        self.registers_reset(at);
        self.osc_ready_at = at.add_ns(self.cfg.osc_startup_ns);
        self.counters = ErrorCounters::default();
        if let Some((bus, id)) = self.bus() {
            bus.set_error_counters(id, ErrorCounters::default());
        }
        self.update_pins(at);
    }

    /// The RESET instruction: every register to its reset value and
    /// configuration mode; RAM keeps its contents. With [`Errata::sleep`]
    /// a running (or starting) oscillator keeps running: OSCRDY stays as it
    /// is; without it the oscillator restarts.
    pub(super) fn reset(&mut self, at: Instant) {
        let stopped = self.osc & OSC_OSCDIS != 0;
        self.registers_reset(at);
        if !self.errata.sleep || stopped {
            self.osc_ready_at = at.add_ns(self.cfg.osc_startup_ns);
        }
        self.update_pins(at);
    }

    /// Every register to its reset value (the oscillator's timing aside).
    fn registers_reset(&mut self, at: Instant) {
        self.osc = OSC_RESET_READY & !OSC_OSCRDY;
        self.pll_ready_at = at;
        self.lpm = false;
        self.tbc_stop = None;
        self.cancel_tbc_wrap();
        self.iocon = IOCON_RESET;
        self.crc = 0;
        self.ecccon = 0;
        self.eccstat = 0;
        self.con = C1CON_RESET;
        self.mode = Mode::Config;
        self.nbtcfg = NBTCFG_RESET;
        self.dbtcfg = DBTCFG_RESET;
        self.tdc = TDC_RESET;
        self.tscon = 0;
        self.tbc_base = 0;
        self.tbc_at = at;
        self.int_flags = 0;
        self.int_en = 0;
        self.bdiag1 = 0;
        self.tef.con = 0;
        self.tef.reset();
        for f in self.fifos.iter_mut() {
            f.con = FIFOCON_RESET & !FIFOCON_FRESET;
            f.reset();
        }
        self.fifos[0].con |= FIFOCON_TXEN;
        self.refresh_ie_fifos();
        self.fltcon = [0; 32];
        self.fltobj = [0; 32];
        self.mask = [0; 32];
        self.events.clear();
        self.rx_staged = None;
        self.internal_inflight = false;
        self.bus_inflight = None;
        self.layout();
        self.spi = SpiState::default();
    }

    // ---------------------------------------------------------------- time

    pub(super) fn osc_ready(&self, at: Instant) -> bool {
        !self.osc_never_ready && at >= self.osc_ready_at && self.osc & OSC_OSCDIS == 0
    }

    pub(super) fn sysclk_hz(&self) -> u64 {
        let mut f = self.cfg.osc_hz;
        if self.osc & OSC_PLLEN != 0 {
            f *= 10;
        }
        if self.osc & OSC_SCLKDIV != 0 {
            f /= 2;
        }
        f
    }

    /// The bit rates NBTCFG/DBTCFG give at the current SYSCLK.
    pub(super) fn bit_rates(&self) -> BitRates {
        let clk = self.sysclk_hz();
        let n = self.nbtcfg;
        let nbt = u64::from((n >> 24) & 0xFF) + 1;
        let ntq = 1 + u64::from((n >> 16) & 0xFF) + 1 + u64::from((n >> 8) & 0x7F) + 1;
        let d = self.dbtcfg;
        let dbt = u64::from((d >> 24) & 0xFF) + 1;
        let dtq = 1 + u64::from((d >> 16) & 0x1F) + 1 + u64::from((d >> 8) & 0xF) + 1;
        BitRates::new((clk / (nbt * ntq)) as u32, (clk / (dbt * dtq)) as u32)
    }

    pub(super) fn push_event(&mut self, at: Instant, ev: Event) -> TimerId {
        self.seq += 1;
        let seq = self.seq;
        let pos = self.events.partition_point(|p| (p.at, p.seq) <= (at, seq));
        self.events.insert(pos, Pending { at, seq, ev });
        let weak = self.weak.clone();
        self.scheduler.schedule(at, move |_| {
            if let Some(core) = weak.upgrade() {
                lock(&core).advance(at);
            }
        })
    }

    /// Applies every internal event due at or before `t`, in order.
    pub(super) fn advance(&mut self, t: Instant) {
        while self.events.first().is_some_and(|p| p.at <= t) {
            let p = self.events.remove(0);
            self.process(p.at, p.ev);
            self.update_pins(p.at);
        }
    }

    pub(super) fn process(&mut self, at: Instant, ev: Event) {
        match ev {
            Event::Mode(m) => self.enter_mode(m, at),
            Event::Rx { frame, stamp } => self.receive(&frame, stamp, at),
            Event::TxDone { token, outcome, stamp } => self.tx_finished(token, outcome, stamp, at),
            Event::TbcWrap => {
                self.tbc_wrap_timer = None;
                self.int_flags |= INT_TBCIF;
                self.schedule_tbc_wrap(at);
            }
            Event::Woken => self.woken(at),
        }
    }

    // ---------------------------------------------------------------- modes

    pub(super) fn is_bus_mode(m: Mode) -> bool {
        !matches!(m, Mode::Config | Mode::Sleep | Mode::InternalLoopback)
    }

    pub(super) fn mode_allowed(from: Mode, to: Mode) -> bool {
        use Mode::*;
        match (from, to) {
            (Config, _) | (_, Config) => true,
            (Sleep, _) => false,
            (InternalLoopback | ExternalLoopback, _) | (_, InternalLoopback | ExternalLoopback) => false,
            _ => true,
        }
    }

    pub(super) fn request_mode(&mut self, to: Mode, at: Instant) {
        self.con = (self.con & !(7 << CON_REQOP_SHIFT)) | (u32::from(to.bits()) << CON_REQOP_SHIFT);
        let target = self.events.iter().rev().find_map(|p| match p.ev {
            Event::Mode(m) => Some(m),
            _ => None,
        });
        if target.unwrap_or(self.mode) == to {
            return;
        }
        if !self.osc_ready(at) || !Self::mode_allowed(self.mode, to) {
            self.stats.invalid_mode_requests += 1;
            return;
        }
        self.drop_mode_requests();
        let bus_idle = self.bus().map_or(at, |(bus, _)| bus.idle_at());
        let switch = self.cfg.mode_switch_ns;
        let when = if self.mode == Mode::Config && Self::is_bus_mode(to) {
            // Bus integration: 11 recessive nominal bits on an idle bus.
            let rates = self.bit_rates();
            at.add_ns(switch).max(bus_idle).add_ns(rates.nominal_ns(11))
        } else if Self::is_bus_mode(self.mode) {
            // Leaving the bus waits for the frame in progress.
            at.add_ns(switch).max(bus_idle)
        } else {
            at.add_ns(switch)
        };
        self.push_event(when, Event::Mode(to));
    }

    /// Forgets mode changes under way.
    pub(super) fn drop_mode_requests(&mut self) {
        self.events.retain(|p| !matches!(p.ev, Event::Mode(_)));
    }

    pub(super) fn enter_mode(&mut self, to: Mode, at: Instant) {
        let from = self.mode;
        if from == to {
            return;
        }
        self.mode = to;
        self.int_flags |= INT_MODIF;
        if to == Mode::Sleep {
            self.sleep_entered(at);
        }
        if to == Mode::Config {
            self.tef.reset();
            for f in self.fifos.iter_mut() {
                f.reset();
            }
            self.internal_inflight = false;
        }
        if from == Mode::Config {
            self.layout();
            if let Some((bus, id)) = self.bus() {
                bus.set_error_counters(id, ErrorCounters::default());
            }
            self.counters = ErrorCounters::default();
        }
        self.kick(at);
    }

    // ---------------------------------------------------------------- RAM layout

    pub(super) fn layout(&mut self) {
        let mut off: u32 = 0;
        let stef = self.con & CON_STEF != 0;
        let ts = if self.tef.con & TEFCON_TEFTSEN != 0 { 12 } else { 8 };
        self.tef.obj_size = ts;
        self.tef.base = off as u16;
        if stef {
            off += u32::from(self.tef.depth()) * u32::from(ts);
        }
        for m in 0..32 {
            let f = &mut self.fifos[m];
            if m == 0 {
                f.con |= FIFOCON_TXEN;
                if self.con & CON_TXQEN == 0 {
                    f.base = off as u16;
                    f.obj_size = 8 + f.payload();
                    continue;
                }
            }
            let rxts = !f.is_tx() && f.con & FIFOCON_RXTSEN != 0;
            f.obj_size = 8 + if rxts { 4 } else { 0 } + f.payload();
            f.base = off.min(0xFFFF) as u16;
            off += u32::from(f.depth()) * u32::from(f.obj_size);
        }
        self.layout_overflow = off > RAM_SIZE as u32;
    }

    pub(super) fn ram_word(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        for (i, x) in b.iter_mut().enumerate() {
            *x = self.ram.get(off + i).copied().unwrap_or(0);
        }
        u32::from_le_bytes(b)
    }

    pub(super) fn set_ram_word(&mut self, off: usize, w: u32) {
        self.ram_write_bytes(off, &w.to_le_bytes());
    }

    // ---------------------------------------------------------------- SPI CRC bookkeeping

    pub(super) fn crc_error(&mut self, computed: u16) {
        self.crc = (self.crc & !0xFFFF) | u32::from(computed) | CRC_CRCERRIF;
        self.stats.spi_crc_errors += 1;
    }

    pub(super) fn format_error(&mut self) {
        self.crc |= CRC_FERRIF;
        self.stats.spi_format_errors += 1;
    }

    pub(super) fn inject_rx_overflow(&mut self, m: usize) {
        if m > 0 && m < 32 && !self.fifos[m].is_tx() {
            self.fifos[m].sta |= FIFOSTA_RXOVIF;
            self.stats.rx_overflows += 1;
        }
    }
}
