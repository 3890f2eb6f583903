//! Probe (wake-up, configuration mode, RESET, oscillator, DEVID, variant)
//! and configuration (I/O pins, ECC and RAM, timing, time base, FIFOs,
//! filters, interrupts, mode); the full restart.

use super::config::Config;
use super::errata::Variant;
use super::error::Error;
use super::filter::Filter;
use super::regio::RegIo;
use super::regs::*;
use super::{BusState, Mcp251xfd};
use std::time::Duration;
use wirespeed::time::{now, Instant};

fn elapsed_us(t0: Instant) -> u64 {
    now().ns_since(t0) / 1_000
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// What the probe found.
pub(super) struct Probe {
    pub devid: u32,
    pub variant: Variant,
    /// The chip was asleep (OSC.OSCDIS set) and was woken.
    pub woke: bool,
}

/// Polls OSC every `pause` until all of `ready` are set, up to
/// `osc_timeout`; `late` makes the error from the last OSC and the wait.
fn poll_osc(
    io: &mut RegIo,
    cfg: &Config,
    ready: u32,
    pause: Duration,
    late: fn(u32, u64) -> Error,
) -> Result<u32, Error> {
    let t0 = now();
    loop {
        let osc = io.read(OSC)?;
        if osc & ready == ready {
            return Ok(osc);
        }
        if now().ns_since(t0) > ns(cfg.osc_timeout) {
            return Err(late(osc, elapsed_us(t0)));
        }
        std::thread::sleep(pause);
    }
}

/// Polls OSC until OSCRDY (every 100 µs: the lab's and the silicon's
/// oscillator needs ~3 ms), up to `osc_timeout`.
fn wait_osc(io: &mut RegIo, cfg: &Config) -> Result<u32, Error> {
    poll_osc(io, cfg, OSC_OSCRDY, Duration::from_micros(100), |osc, waited_us| Error::OscillatorNotReady {
        osc,
        waited_us,
    })
}

/// Turns the PLL on (SYSCLK = 10 × the clock) and waits for OSC.PLLRDY
/// with OSCRDY, up to `osc_timeout` (Linux: mcp251xfd_chip_clock_init()).
fn lock_pll(io: &mut RegIo, cfg: &Config) -> Result<(), Error> {
    io.write(OSC, OSC_CLKODIV_10 | OSC_PLLEN)?;
    let ready = OSC_PLLRDY | OSC_OSCRDY;
    poll_osc(io, cfg, ready, Duration::from_micros(20), |osc, waited_us| Error::PllNotLocked { osc, waited_us })?;
    Ok(())
}

/// Writes REQOP and waits up to `mode_timeout` for OPMOD to follow.
pub(super) fn request_mode(io: &mut RegIo, cfg: &Config, mode: u8) -> Result<(), Error> {
    io.write_byte(C1CON + 3, mode)?;
    let t0 = now();
    loop {
        let cur = ((io.read(C1CON)? >> CON_OPMOD_SHIFT) & 7) as u8;
        if cur == mode {
            return Ok(());
        }
        if now().ns_since(t0) > ns(cfg.mode_timeout) {
            return Err(Error::ModeTimeout { requested: mode, current: cur });
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// The probe, as the Linux driver's soft reset does it: wake the chip
/// (OSC = CLKODIV ÷ 10 with OSCDIS clear; wait for OSCRDY), request
/// configuration mode (RESET and mode changes are ignored in Sleep), RESET,
/// wait for OSCRDY, check DEVID and configuration mode, then tell the
/// variant by OSC.LPMEN and restore OSC.
///
/// Writes before any check can fail: OSC (the wake-up), C1CON byte 3
/// (REQOP = configuration) and the RESET instruction — with
/// [`Workarounds::wake_before_reset`](super::Workarounds::wake_before_reset)
/// off only the RESET. A failure after the RESET (oscillator, DEVID, mode)
/// leaves the chip as the reset left it: in configuration mode, nothing
/// else written. Only a chip that passed the checks gets the LPMEN probe.
pub(super) fn probe(io: &mut RegIo, cfg: &Config) -> Result<Probe, Error> {
    let mut woke = false;
    if cfg.workarounds.wake_before_reset {
        // Asleep? Sleep stops the oscillator and sets OSCDIS. The first
        // access may also wake a chip in low-power mode (a power-on reset),
        // whose reply is garbage: a failed read is not an error here.
        let before = io.read(OSC).ok();
        io.write_unchecked(OSC, OSC_CLKODIV_10)?;
        if cfg.crc {
            // A refused or corrupted wake-up write is seen by the OSCRDY wait.
            io.take_crc_flags()?;
            io.crc_flag_seen = false;
        }
        wait_osc(io, cfg)?;
        woke = before.is_some_and(|o| o & OSC_OSCDIS != 0);
        request_mode(io, cfg, MODE_CONFIG)?;
    }
    io.reset()?;
    wait_osc(io, cfg)?;
    let devid = io.read(DEVID)?;
    let id = (devid >> 4) & 0xF;
    if !matches!(id, DEVID_ID_MCP2518FD | DEVID_ID_MCP2517FD) || devid >> 8 != 0 {
        return Err(Error::WrongDevice { devid, expected_id: DEVID_ID_MCP2518FD });
    }
    let opmod = ((io.read(C1CON)? >> CON_OPMOD_SHIFT) & 7) as u8;
    if opmod != MODE_CONFIG {
        return Err(Error::NotInConfigMode { opmod });
    }
    // LPMEN exists on the MCP2518FD only (Linux: mcp251xfd_register_chip_detect()).
    io.write(OSC, OSC_CLKODIV_10 | OSC_LPMEN)?;
    let osc = io.read(OSC)?;
    io.write(OSC, OSC_CLKODIV_10)?;
    let variant = if osc & OSC_LPMEN != 0 { Variant::Mcp2518fd } else { Variant::Mcp2517fd };
    Ok(Probe { devid, variant, woke })
}

impl Mcp251xfd {
    fn request_mode(&mut self, mode: u8) -> Result<(), Error> {
        request_mode(&mut self.io, &self.cfg, mode)
    }

    /// Writes the configuration (device in configuration mode) and enters the operation mode.
    pub(super) fn configure(&mut self) -> Result<(), Error> {
        let p = self.plan;
        let l = p.layout;
        let w = self.cfg.workarounds;
        let io = &mut self.io;
        if self.cfg.pll {
            lock_pll(io, &self.cfg)?;
        }
        // SYSCLK is final: the SPI may run at its limit for it.
        io.speed_hz = self.spi_hz.1;
        // INT0 / INT1 as interrupt outputs (TX / RX), push-pull, like INT.
        io.write(IOCON, 0)?;
        if w.ecc_init {
            // ECC on, then every RAM byte written once, so no read of
            // never-written RAM raises a double-bit error (Linux:
            // mcp251xfd_chip_ecc_init()).
            io.write(ECCCON, ECCCON_ECCEN | ECCCON_SECIE | ECCCON_DEDIE)?;
            io.write_ram(RAM_START, &vec![0u8; usize::from(RAM_SIZE)])?;
        }
        io.write(C1CON, CON_ISOCRCEN | CON_PXEDIS | CON_STEF | (u32::from(MODE_CONFIG) << CON_REQOP_SHIFT))?;
        io.write(C1NBTCFG, p.nominal.register())?;
        if let Some(d) = p.data {
            io.write(C1DBTCFG, d.register())?;
            io.write(C1TDC, super::bittiming::tdc_register(&d))?;
        }
        io.write(C1TSCON, TSCON_TBCEN | p.tbc_pre)?;
        io.write(
            C1TEFCON,
            TEFCON_TEFNEIE | TEFCON_TEFOVIE | TEFCON_TEFTSEN | (u32::from(l.tef_depth - 1) << FIFOCON_FSIZE_SHIFT),
        )?;
        io.write(
            c1fifocon(RX_FIFO),
            (u32::from(l.rx_plsize) << FIFOCON_PLSIZE_SHIFT)
                | (u32::from(l.rx_depth - 1) << FIFOCON_FSIZE_SHIFT)
                | FIFOCON_RXTSEN
                | FIFOCON_RXOVIE
                | FIFOCON_TFNRFNIE,
        )?;
        io.write(
            c1fifocon(TX_FIFO),
            (u32::from(l.tx_plsize) << FIFOCON_PLSIZE_SHIFT)
                | (u32::from(l.tx_depth - 1) << FIFOCON_FSIZE_SHIFT)
                | (3 << FIFOCON_TXAT_SHIFT)
                | (1 << FIFOCON_TXPRI_SHIFT)
                | FIFOCON_TXEN,
        )?;
        let mut ie = INT_RXIF | INT_RXOVIF | INT_CERRIF | INT_SERRIF | INT_IVMIF;
        if self.cfg.tef_irq {
            ie |= INT_TEFIF;
        }
        if w.ecc_init {
            ie |= INT_ECCIF;
        }
        if self.cfg.crc {
            ie |= INT_SPICRCIF;
            io.write(CRC, CRC_CRCERRIE | CRC_FERRIE)?;
        }
        io.write(C1INT, ie << 16)?;
        self.set_filters(&[Filter::accept_all()])?;
        self.start()
    }

    /// Leaves configuration mode for the configured mode and checks the layout.
    fn start(&mut self) -> Result<(), Error> {
        let mode = self.cfg.reqop();
        self.request_mode(mode)?;
        self.rx_tail = 0;
        self.rx_owed = 0;
        self.rx_known = 0;
        self.rx_last_valid = 0;
        self.tx_head = 0;
        self.tx_in_flight = 0;
        // SEQ starts at 1: a never-written (zeroed) TEF object carries 0,
        // which then matches no frame of the first lap (tef_seq).
        self.tx_seq = 1;
        self.tef_hint = false;
        self.state = BusState::Active;
        self.tec_rec = (0, 0);
        self.mab_pending = false;
        self.unverified = super::Unverified::default();
        self.bus_off_at = None;
        let l = self.plan.layout;
        for (what, reg, expected) in [
            ("TEF", C1TEFUA, l.tef_base),
            ("RX FIFO", c1fifoua(RX_FIFO), l.rx_base),
            ("TX FIFO", c1fifoua(TX_FIFO), l.tx_base),
        ] {
            // User addresses count from the start of the message RAM.
            let reported = self.io.read(reg)? + u32::from(RAM_START);
            if reported != u32::from(expected) {
                return Err(Error::LayoutMismatch { what, expected, reported });
            }
        }
        // Entering the mode set MODIF: start with no stale flags.
        self.clear_int_flags(INT_CLEARABLE)?;
        let tbc = self.io.read(C1TBC)?;
        self.ts.start(tbc, now());
        self.hot.set_rx_addr(l.rx_base);
        self.hot.set_tef_addr(l.tef_base);
        Ok(())
    }

    /// Clears the C1INT flags in `flags` (write 0; the other flags and the
    /// enables are written 1 / kept). One-byte writes: WRITE_SAFE with CRC.
    pub(super) fn clear_int_flags(&mut self, flags: u32) -> Result<(), Error> {
        let keep = !(flags & INT_CLEARABLE);
        for byte in 0..2u16 {
            let mask = 0xFF << (8 * byte);
            if flags & INT_CLEARABLE & mask != 0 {
                self.io.write_byte(C1INT + byte, ((keep & mask) >> (8 * byte)) as u8)?;
            }
        }
        Ok(())
    }

    /// Restarts the controller fully, as after power-on: wake-up, RESET,
    /// the whole configuration and the operation mode (the Linux driver's
    /// bus-off restart). Frames in the TX queue are dropped (counted as
    /// done); the driver's RX queue is kept.
    pub fn restart(&mut self) -> Result<(), Error> {
        let was_off = self.state == BusState::BusOff;
        // The queue is dropped: a frame whose message failed is not counted.
        let _ = self.flush_tx();
        // RESET turns the PLL off: the slow clock until it is back.
        self.io.speed_hz = self.spi_hz.0;
        let p = probe(&mut self.io, &self.cfg)?;
        self.stats.sleep_wakes += u64::from(p.woke);
        self.stats.tx_done += self.tx_in_flight as u64;
        self.tx_in_flight = 0;
        self.configure()?;
        if was_off {
            self.stats.bus_off_recoveries += 1;
        }
        Ok(())
    }

    /// Stops the controller after bus-off: configuration mode (which the
    /// driver leaves only by a full restart).
    pub(super) fn stop_bus_off(&mut self) -> Result<(), Error> {
        self.bus_off_at = Some(now());
        // A chip that does not follow is restarted anyway (RESET).
        match self.request_mode(MODE_CONFIG) {
            Ok(()) | Err(Error::ModeTimeout { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Replaces the acceptance filters (at most 32; each sends matches to
    /// RX FIFO 1). An empty list receives nothing.
    pub fn set_filters(&mut self, filters: &[Filter]) -> Result<(), Error> {
        if filters.len() > 32 {
            return Err(Error::InvalidConfig {
                what: "filters",
                value: filters.len().to_string(),
                allowed: "at most 32",
            });
        }
        for f in filters {
            f.check()?;
        }
        for n in 0..32u16 {
            let fltcon = c1fltcon(n / 4) + n % 4;
            self.io.write_byte(fltcon, 0)?;
            if let Some(f) = filters.get(usize::from(n)) {
                let (obj, mask) = f.registers();
                self.io.write(c1fltobj(n), obj)?;
                self.io.write(c1mask(n), mask)?;
                self.io.write_byte(fltcon, FLTCON_FLTEN | 1)?;
            }
        }
        Ok(())
    }
}
