//! A controller driver with any capabilities the input chooses, wired as a
//! loopback (MISO = MOSI), that records every call the core makes which
//! its capabilities do not allow. The core catches a driver's panics, so
//! violations are recorded and checked by the target after the call.

use arbitrary::{Result, Unstructured};
use std::sync::{Arc, Mutex};
use wirespeed::spi::{
    ClockModel, Completion, Controller, ControllerCaps, ControllerFault, Data, InFlight, Mode, ModeFlags,
    TransferTiming,
};

/// What the core asked that the capabilities forbid, and the calls made.
#[derive(Debug, Default)]
pub struct Log {
    /// One line per forbidden call.
    pub violations: Vec<String>,
    /// Words shifted.
    pub transfers: u64,
}

/// The fake driver.
#[derive(Debug)]
pub struct FakeController {
    caps: ControllerCaps,
    bits: u8,
    log: Arc<Mutex<Log>>,
}

/// Capabilities from the input: any mask, chip-select count and flags; a
/// clock model whose dividers are 1 ≤ min ≤ max (a driver's own numbers).
pub fn caps(u: &mut Unstructured<'_>) -> Result<ControllerCaps> {
    let clock = if u.arbitrary()? {
        ClockModel::Exact
    } else {
        let min_div = u.int_in_range(1u32..=16)?;
        let max_div = min_div.saturating_mul(u.int_in_range(1u32..=1 << 20)?);
        ClockModel::Divider { base_hz: u.int_in_range(1u64..=1 << 33)?, min_div, max_div }
    };
    let max_speed_hz = u.int_in_range(1u32..=u32::MAX)?;
    let (can_poll, has_irq): (bool, bool) = (u.arbitrary()?, u.arbitrary()?);
    Ok(ControllerCaps {
        name: "fuzz",
        max_speed_hz,
        min_speed_hz: u.int_in_range(1u32..=max_speed_hz)?,
        clock,
        fifo_bytes: u.int_in_range(1u32..=512)?,
        bits_per_word_mask: u.arbitrary()?,
        num_cs: u.int_in_range(0u8..=8)?,
        // A driver offers at least one way to complete (the core polls when it has no IRQ).
        can_poll: can_poll || !has_irq,
        has_irq,
        mode_flags: ModeFlags::from_bits_truncate(u.arbitrary()?),
    })
}

impl FakeController {
    /// A driver with `caps` and the log it writes.
    pub fn new(caps: ControllerCaps) -> (FakeController, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        (FakeController { caps, bits: 8, log: log.clone() }, log)
    }

    fn violation(&self, what: String) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).violations.push(what);
    }
}

impl Controller for FakeController {
    fn caps(&self) -> &ControllerCaps {
        &self.caps
    }

    fn configure(&mut self, _mode: Mode, speed_hz: u32, bits: u8) {
        if !self.caps.supports_bits(bits) {
            self.violation(format!("configure: {bits} bits per word"));
        }
        if speed_hz == 0 || speed_hz > self.caps.max_speed_hz {
            self.violation(format!("configure: {speed_hz} Hz"));
        }
        self.bits = bits;
    }

    fn set_cs(&mut self, cs: u8, _active: bool) {
        if cs >= self.caps.num_cs {
            self.violation(format!("set_cs({cs}) of {}", self.caps.num_cs));
        }
    }

    fn preload(&mut self, _data: &Data<'_>, _bits: u8) -> usize {
        0
    }

    fn transfer(
        &mut self,
        data: &mut Data<'_>,
        bits: u8,
        _preloaded: usize,
        completion: Completion,
        _timeout_ns: u64,
        in_flight: &mut InFlight<'_>,
    ) -> std::result::Result<TransferTiming, ControllerFault> {
        if bits != self.bits {
            self.violation(format!("transfer of {bits}-bit words configured for {}", self.bits));
        }
        let word = wirespeed_word_bytes(bits);
        if !data.len().is_multiple_of(word) {
            self.violation(format!("transfer of {} bytes in {word}-byte words", data.len()));
        }
        if (completion == Completion::Poll && !self.caps.can_poll)
            || (completion == Completion::Irq && !self.caps.has_irq)
        {
            self.violation(format!("completion {completion:?} not offered"));
        }
        in_flight.run();
        match data {
            Data::Write(_) | Data::InPlace(_) => {}
            Data::Read(rx) => rx.fill(0),
            Data::Duplex(tx, rx) => {
                let n = tx.len().min(rx.len());
                rx[..n].copy_from_slice(&tx[..n]);
            }
        }
        self.log.lock().unwrap_or_else(|e| e.into_inner()).transfers += 1;
        Ok(TransferTiming { started: None, completed: None })
    }

    fn set_power(&mut self, _on: bool) {}
}

/// Bytes per word of `bits` (the kernel's rounding: 1, 2 or 4).
pub fn wirespeed_word_bytes(bits: u8) -> usize {
    match bits {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}
