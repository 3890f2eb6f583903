//! A RAM-backed bus for tests: serves a register format's device side from
//! memory and records every message.
//!
//! Like the kernel's `regmap-ram`, but at the byte level: the RAM bus decodes
//! the command with the format's device side ([`Format::decode_header`]),
//! checks write trailers (CRC) as the device would — a write with a bad CRC
//! is discarded and counted, not applied — and appends a read trailer. Each
//! [`RegmapBus`] call is recorded as one [`Access`] of one or more windows.
//! Faults: flip a bit of the next read reply or the next write, fail the
//! next message.
//!
//! Clones share the RAM and the log: give one to the register map, keep one
//! as the backdoor.

use super::bus::{Batch, RegmapBus};
use super::error::BusError;
use super::format::{Format, Op};
use std::sync::{Arc, Mutex, MutexGuard};

/// One chip-select window of a recorded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Direction.
    pub op: Op,
    /// First register addressed (as decoded by the device side).
    pub reg: u32,
    /// Registers transferred.
    pub count: usize,
    /// Bytes the host sent.
    pub tx: Vec<u8>,
    /// Bytes the device answered (reads: data and trailer).
    pub rx: Vec<u8>,
}

/// One recorded bus message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Its windows, in order.
    pub windows: Vec<Window>,
    /// Whether it came through [`RegmapBus::submit_batch`].
    pub submitted: bool,
}

#[derive(Debug)]
struct State {
    format: Arc<dyn Format>,
    stride: u32,
    regs: Vec<u32>,
    log: Vec<Access>,
    flip_rx: Option<(usize, u8)>,
    flip_tx: Option<(usize, u8)>,
    fail_next: Option<BusError>,
    rejected: u64,
    max_message_bytes: Option<usize>,
}

/// A register file in RAM behind a recording bus. See the module docs.
#[derive(Debug, Clone)]
pub struct RamBus {
    state: Arc<Mutex<State>>,
}

impl RamBus {
    /// Registers `0..=max_register` (every `stride`), all zero, spoken to in `format`.
    pub fn new(format: Arc<dyn Format>, stride: u32, max_register: u32) -> RamBus {
        let stride = stride.max(1);
        RamBus {
            state: Arc::new(Mutex::new(State {
                format,
                stride,
                regs: vec![0; (max_register / stride) as usize + 1],
                log: Vec::new(),
                flip_rx: None,
                flip_tx: None,
                fail_next: None,
                rejected: 0,
                max_message_bytes: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Backdoor: a register's value (0 outside the RAM).
    pub fn peek(&self, reg: u32) -> u32 {
        let s = self.lock();
        s.regs.get((reg / s.stride) as usize).copied().unwrap_or(0)
    }
    /// Backdoor: sets a register without bus traffic.
    pub fn poke(&self, reg: u32, val: u32) {
        let mut s = self.lock();
        let i = (reg / s.stride) as usize;
        if let Some(r) = s.regs.get_mut(i) {
            *r = val;
        }
    }
    /// The messages recorded so far.
    pub fn accesses(&self) -> Vec<Access> {
        self.lock().log.clone()
    }
    /// Number of messages recorded so far.
    pub fn messages(&self) -> usize {
        self.lock().log.len()
    }
    /// Number of windows (device commands) recorded so far.
    pub fn windows(&self) -> usize {
        self.lock().log.iter().map(|a| a.windows.len()).sum()
    }
    /// Forgets the log.
    pub fn clear_log(&self) {
        self.lock().log.clear();
    }
    /// Flips bit `bit` of byte `byte` of the next read reply (data or CRC).
    pub fn flip_next_read_bit(&self, byte: usize, bit: u8) {
        self.lock().flip_rx = Some((byte, bit % 8));
    }
    /// Flips bit `bit` of byte `byte` of the next write window, as received.
    pub fn flip_next_write_bit(&self, byte: usize, bit: u8) {
        self.lock().flip_tx = Some((byte, bit % 8));
    }
    /// Makes the next message fail with `error` (nothing is applied).
    pub fn fail_next(&self, error: BusError) {
        self.lock().fail_next = Some(error);
    }
    /// Writes the device discarded because their trailer (CRC) was wrong.
    pub fn rejected_writes(&self) -> u64 {
        self.lock().rejected
    }
    /// Limits the size of one message (for tests of the splitting).
    pub fn set_max_message_bytes(&self, max: Option<usize>) {
        self.lock().max_message_bytes = max;
    }
}

impl State {
    fn take_failure(&mut self) -> Result<(), BusError> {
        self.fail_next.take().map_or(Ok(()), Err)
    }

    fn slot(&self, reg: u32, i: usize) -> Result<usize, BusError> {
        let idx = (reg / self.stride) as usize + i;
        if idx < self.regs.len() {
            Ok(idx)
        } else {
            Err(BusError::BadCommand(format!("register {:#x} is outside the RAM", idx as u64 * u64::from(self.stride))))
        }
    }

    fn serve_write(&mut self, mut tx: Vec<u8>) -> Result<Window, BusError> {
        if let Some((byte, bit)) = self.flip_tx.take() {
            if let Some(b) = tx.get_mut(byte) {
                *b ^= 1 << bit;
            }
        }
        let f = self.format.clone();
        let req = f.decode_header(Op::Write, &tx).map_err(BusError::BadCommand)?;
        let tl = f.trailer_len();
        let vb = f.val_bytes();
        if tx.len() < req.header_len + tl {
            return Err(BusError::BadCommand(format!(
                "write of {} bytes is shorter than its header and trailer",
                tx.len()
            )));
        }
        let (head, rest) = tx.split_at(req.header_len);
        let (data, trailer) = rest.split_at(rest.len() - tl);
        let count = data.len() / vb;
        let window = Window { op: Op::Write, reg: req.reg, count, tx: tx.clone(), rx: Vec::new() };
        if f.trailer(head, data).as_slice() != trailer || req.data_len.is_some_and(|n| n != data.len()) {
            // What the device does with a corrupted command: discard it.
            self.rejected += 1;
            return Ok(window);
        }
        if data.len() % vb != 0 {
            return Err(BusError::BadCommand(format!("{} data bytes is not a whole number of registers", data.len())));
        }
        self.slot(req.reg, count.saturating_sub(1))?;
        for (i, chunk) in data.chunks_exact(vb).enumerate() {
            let idx = self.slot(req.reg, i)?;
            self.regs[idx] = f.decode_val(chunk);
        }
        Ok(window)
    }

    fn serve_read(&mut self, tx: Vec<u8>, rx: &mut [u8]) -> Result<Window, BusError> {
        let f = self.format.clone();
        let req = f.decode_header(Op::Read, &tx).map_err(BusError::BadCommand)?;
        let tl = f.trailer_len();
        let vb = f.val_bytes();
        let data_len = rx.len().checked_sub(tl).filter(|n| n % vb == 0 && *n > 0).ok_or_else(|| {
            BusError::BadCommand(format!("read of {} bytes is not whole registers plus a {tl}-byte trailer", rx.len()))
        })?;
        if req.data_len.is_some_and(|n| n != data_len) {
            return Err(BusError::BadCommand(format!(
                "length field says {:?} bytes, {data_len} clocked",
                req.data_len
            )));
        }
        let count = data_len / vb;
        self.slot(req.reg, count - 1)?;
        let (data, trailer) = rx.split_at_mut(data_len);
        for (i, chunk) in data.chunks_exact_mut(vb).enumerate() {
            let idx = self.slot(req.reg, i)?;
            f.encode_val(self.regs[idx], chunk);
        }
        trailer.copy_from_slice(f.trailer(&tx[..req.header_len], data).as_slice());
        if let Some((byte, bit)) = self.flip_rx.take() {
            if let Some(b) = rx.get_mut(byte) {
                *b ^= 1 << bit;
            }
        }
        Ok(Window { op: Op::Read, reg: req.reg, count, tx, rx: rx.to_vec() })
    }

    fn check_len(&self, len: usize) -> Result<(), BusError> {
        match self.max_message_bytes {
            Some(max) if len > max => Err(BusError::TooLong { len, max }),
            _ => Ok(()),
        }
    }
}

impl RegmapBus for RamBus {
    fn write(&mut self, segments: &[&[u8]]) -> Result<(), BusError> {
        let mut s = self.lock();
        s.take_failure()?;
        let tx = segments.concat();
        s.check_len(tx.len())?;
        let w = s.serve_write(tx)?;
        s.log.push(Access { windows: vec![w], submitted: false });
        Ok(())
    }

    fn write_then_read(&mut self, tx: &[&[u8]], rx: &mut [u8]) -> Result<(), BusError> {
        let mut s = self.lock();
        s.take_failure()?;
        let tx = tx.concat();
        s.check_len(tx.len() + rx.len())?;
        let w = s.serve_read(tx, rx)?;
        s.log.push(Access { windows: vec![w], submitted: false });
        Ok(())
    }

    fn write_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        self.batch(batch, false)
    }

    fn submit_batch(&mut self, batch: Batch<'_>) -> Result<(), BusError> {
        self.batch(batch, true)
    }

    fn max_message_bytes(&self) -> Option<usize> {
        self.lock().max_message_bytes
    }
}

impl RamBus {
    fn batch(&mut self, batch: Batch<'_>, submitted: bool) -> Result<(), BusError> {
        let mut s = self.lock();
        s.take_failure()?;
        s.check_len(batch.total_bytes())?;
        let windows = batch.windows().map(|w| s.serve_write(w.to_vec())).collect::<Result<Vec<_>, _>>()?;
        s.log.push(Access { windows, submitted });
        Ok(())
    }
}
