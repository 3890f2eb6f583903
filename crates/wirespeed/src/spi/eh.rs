//! embedded-hal 1.0 on the SPI core: [`SpiDevice`](embedded_hal::spi::SpiDevice)
//! and [`SpiBus`](embedded_hal::spi::SpiBus), so existing driver crates run
//! on wirespeed unmodified.
//!
//! A transaction becomes one message with CS held throughout; `DelayNs`
//! operations become waits between transfers (to the nanosecond, by deadline)
//! with CS still active. Nothing is allocated per transaction.
//! A transfer whose read and write buffers differ in length becomes a
//! full-duplex part plus a read-only or write-only rest (the shorter side is
//! padded with zeros or its extra bytes discarded, as the trait specifies).
//!
//! `SpiBus` calls are each their own message; use them on a device configured
//! with [`ChipSelect::None`](super::ChipSelect::None) and drive CS yourself.

use super::controller::ControllerCaps;
use super::device::DeviceConfig;
use super::error::{InvalidMessage, SpiError};
use super::exec::MessageSource;
use super::plan::{plan_shape, Step};
use super::transfer::{Data, Transfer};

use super::SpiDevice;
use embedded_hal::spi::{self, ErrorKind, Operation};

impl spi::Error for SpiError {
    fn kind(&self) -> ErrorKind {
        match self {
            SpiError::ChipSelect(_) => ErrorKind::ChipSelectFault,
            _ => ErrorKind::Other,
        }
    }
}

impl spi::ErrorType for SpiDevice {
    type Error = SpiError;
}

/// A transfer step of an operation list: which op, which byte range, which kind.
#[derive(Clone, Copy)]
enum Part {
    Whole,
    Head(usize),
    ReadTail(usize),
    WriteTail(usize),
}

struct Ops<'o, 'b> {
    ops: &'o mut [Operation<'b, u8>],
}

impl Ops<'_, '_> {
    /// Calls `f(op_index, part, delay_before)` for every transfer step in order.
    fn walk(&self, mut f: impl FnMut(usize, Part, u32) -> bool) {
        let mut delay = 0u32;
        for (i, op) in self.ops.iter().enumerate() {
            let parts: [Option<Part>; 2] = match op {
                Operation::DelayNs(ns) => {
                    delay = delay.saturating_add(*ns);
                    [None, None]
                }
                Operation::Transfer(r, w) if r.len() != w.len() => {
                    let n = r.len().min(w.len());
                    let head = (n > 0).then_some(Part::Head(n));
                    let tail = if r.len() > w.len() { Part::ReadTail(n) } else { Part::WriteTail(n) };
                    [head, Some(tail)]
                }
                Operation::Read([]) | Operation::Write([]) | Operation::TransferInPlace([]) => [None, None],
                _ => [Some(Part::Whole), None],
            };
            for p in parts.into_iter().flatten() {
                if !f(i, p, delay) {
                    return;
                }
                delay = 0;
            }
        }
    }

    fn locate(&self, idx: usize) -> (usize, Part, u32) {
        let mut seen = 0;
        let mut found = (0, Part::Whole, 0);
        self.walk(|i, p, d| {
            if seen == idx {
                found = (i, p, d);
                return false;
            }
            seen += 1;
            true
        });
        found
    }

    /// Delay after the last transfer (trailing `DelayNs` operations).
    fn trailing_delay(&self) -> u32 {
        let mut d = 0u32;
        for op in self.ops.iter().rev() {
            match op {
                Operation::DelayNs(ns) => d = d.saturating_add(*ns),
                _ => break,
            }
        }
        d
    }
}

fn data_of<'a>(op: &'a mut Operation<'_, u8>, part: Part) -> Data<'a> {
    match (op, part) {
        (Operation::Read(b), _) => Data::Read(b),
        (Operation::Write(b), _) => Data::Write(b),
        (Operation::TransferInPlace(b), _) => Data::InPlace(b),
        (Operation::Transfer(r, w), Part::Whole) => Data::Duplex(w, r),
        (Operation::Transfer(r, w), Part::Head(n)) => Data::Duplex(&w[..n], &mut r[..n]),
        (Operation::Transfer(r, _), Part::ReadTail(n)) => Data::Read(&mut r[n..]),
        (Operation::Transfer(_, w), Part::WriteTail(n)) => Data::Write(&w[n..]),
        (Operation::DelayNs(_), _) => Data::Write(&[]),
    }
}

impl MessageSource for Ops<'_, '_> {
    fn count(&self) -> usize {
        let mut n = 0;
        self.walk(|_, _, _| {
            n += 1;
            true
        });
        n
    }

    fn step(&self, i: usize, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        let (op, part, delay_before) = self.locate(i);
        // Planning needs only lengths; a shared view of the op is enough.
        let len = match (&self.ops[op], part) {
            (Operation::Read(b), _) => b.len(),
            (Operation::Write(b), _) => b.len(),
            (Operation::TransferInPlace(b), _) => b.len(),
            (Operation::Transfer(r, _), Part::Whole) => r.len(),
            (Operation::Transfer(_, _), Part::Head(n)) => n,
            (Operation::Transfer(r, _), Part::ReadTail(n)) => r.len() - n,
            (Operation::Transfer(_, w), Part::WriteTail(n)) => w.len() - n,
            (Operation::DelayNs(_), _) => 0,
        };
        let (tx, rx) = match (&self.ops[op], part) {
            (Operation::Read(_), _) | (_, Part::ReadTail(_)) => (false, true),
            (Operation::Write(_), _) | (_, Part::WriteTail(_)) => (true, false),
            _ => (true, true),
        };
        let mut st = plan_shape(i, len, 0, 0, dev, caps)?;
        st.tx = tx;
        st.rx = rx;
        st.delay_before_ns = delay_before;
        if i + 1 == self.count() {
            st.delay_after_ns = self.trailing_delay();
        }
        Ok(st)
    }

    fn data(&mut self, i: usize) -> Data<'_> {
        let (op, part, _) = self.locate(i);
        data_of(&mut self.ops[op], part)
    }
}

impl spi::SpiDevice<u8> for SpiDevice {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), SpiError> {
        let mut ops = Ops { ops: operations };
        let n = ops.count();
        if n == 0 {
            // Only delays (or nothing): honour them; no CS window is needed.
            super::waits::wait_until(wirespeed_time::Deadline::after_ns(u64::from(ops.trailing_delay())));
            return Ok(());
        }
        let caps = &self.bus().inner.caps;
        for i in 0..n {
            ops.step(i, self.config(), caps)?;
        }
        self.bus().inner.sync(&self.state, &mut ops)
    }
}

impl spi::SpiBus<u8> for SpiDevice {
    fn read(&mut self, words: &mut [u8]) -> Result<(), SpiError> {
        if words.is_empty() {
            return Ok(());
        }
        SpiDevice::read(self, words)
    }
    fn write(&mut self, words: &[u8]) -> Result<(), SpiError> {
        if words.is_empty() {
            return Ok(());
        }
        SpiDevice::write(self, words)
    }
    fn transfer(&mut self, read: &mut [u8], write: &[u8]) -> Result<(), SpiError> {
        spi::SpiDevice::transaction(self, &mut [Operation::Transfer(read, write)])
    }
    fn transfer_in_place(&mut self, words: &mut [u8]) -> Result<(), SpiError> {
        if words.is_empty() {
            return Ok(());
        }
        self.sync(&mut [Transfer::in_place(words)])
    }
    fn flush(&mut self) -> Result<(), SpiError> {
        Ok(())
    }
}
