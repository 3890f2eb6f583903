//! Probe (reset, oscillator, DEVID, configuration mode) and configuration
//! (timing, time base, FIFOs, filters, interrupts, mode).

use super::config::Config;
use super::error::Error;
use super::filter::Filter;
use super::regio::RegIo;
use super::regs::*;
use super::{BusState, Mcp251xfd};
use wirespeed::time::{now, Instant};

fn elapsed_us(t0: Instant) -> u64 {
    now().ns_since(t0) / 1_000
}

/// RESET, wait for OSCRDY, check DEVID and configuration mode. Only reads
/// follow the reset, so a failure leaves the device as reset left it: in
/// configuration mode, nothing written.
pub(super) fn probe(io: &mut RegIo, cfg: &Config) -> Result<u32, Error> {
    io.reset()?;
    let t0 = now();
    let timeout_ns = cfg.osc_timeout.as_nanos().min(u128::from(u64::MAX)) as u64;
    let osc = loop {
        let osc = io.read(OSC)?;
        if osc & OSC_OSCRDY != 0 {
            break osc;
        }
        if now().ns_since(t0) > timeout_ns {
            return Err(Error::OscillatorNotReady { osc, waited_us: elapsed_us(t0) });
        }
        std::thread::sleep(std::time::Duration::from_micros(20));
    };
    let _ = osc;
    let devid = io.read(DEVID)?;
    if (devid >> 4) & 0xF != DEVID_ID_MCP2518FD || devid >> 8 != 0 {
        return Err(Error::WrongDevice { devid, expected_id: DEVID_ID_MCP2518FD });
    }
    let opmod = ((io.read(C1CON)? >> CON_OPMOD_SHIFT) & 7) as u8;
    if opmod != MODE_CONFIG {
        return Err(Error::NotInConfigMode { opmod });
    }
    Ok(devid)
}

impl Mcp251xfd {
    fn request_mode(&mut self, mode: u8) -> Result<(), Error> {
        self.io.write_byte(C1CON + 3, mode)?;
        let t0 = now();
        let timeout = self.cfg.mode_timeout.as_nanos().min(u128::from(u64::MAX)) as u64;
        loop {
            let cur = ((self.io.read(C1CON)? >> CON_OPMOD_SHIFT) & 7) as u8;
            if cur == mode {
                return Ok(());
            }
            if now().ns_since(t0) > timeout {
                return Err(Error::ModeTimeout { requested: mode, current: cur });
            }
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }

    /// Writes the configuration (device in configuration mode) and enters the operation mode.
    pub(super) fn configure(&mut self) -> Result<(), Error> {
        let p = self.plan;
        let l = p.layout;
        let io = &mut self.io;
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
        if self.cfg.crc {
            ie |= INT_SPICRCIF;
            io.write(CRC, (1 << 24) | (1 << 25))?;
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
        self.tx_head = 0;
        self.tx_in_flight = 0;
        self.rx_uinc_pending = false;
        self.tef_hint = false;
        self.state = BusState::Active;
        self.tec_rec = (0, 0);
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
        self.io.write_bytes(C1INT, &[0, 0])?;
        let tbc = self.io.read(C1TBC)?;
        self.ts.start(tbc, now());
        self.hot.set_rx_addr(l.rx_base);
        self.hot.set_tef_addr(l.tef_base);
        Ok(())
    }

    /// Restarts the controller: configuration mode (which resets the FIFOs
    /// and error counters), then the operation mode again. Frames in the
    /// TX queue are dropped (counted as done); the driver's RX queue is kept.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.request_mode(MODE_CONFIG)?;
        self.stats.tx_done += self.tx_in_flight as u64;
        self.start()
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
