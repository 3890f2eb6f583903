//! embedded-hal 1.0 on the SPI core: [`SpiDevice`](embedded_hal::spi::SpiDevice)
//! and [`SpiBus`](embedded_hal::spi::SpiBus), so existing driver crates run
//! on wirespeed unmodified.
//!
//! A transaction becomes one message with CS held throughout; `DelayNs`
//! operations become waits between transfers (to the nanosecond, by deadline,
//! summed in 64 bits) with CS still active. A transaction that moves no data
//! still selects the device for as long as its delays (a CS pulse). Errors
//! name the operation by its index in the list. Nothing is allocated per
//! transaction.
//! A transfer whose read and write buffers differ in length becomes a
//! full-duplex part plus a read-only or write-only rest (the shorter side is
//! padded with zeros or its extra bytes discarded, as the trait specifies).
//!
//! `SpiBus` calls are each their own message; use them on a device configured
//! with [`ChipSelect::None`](super::ChipSelect::None) and drive CS yourself.
//!
//! [`SpiDevice`] implements both traits for `u8` words, shifted at the
//! device's bits per word (as the byte API). For drivers written against
//! `SpiDevice<u16>` or `SpiDevice<u32>` (or `SpiBus`), hand them
//! [`SpiDevice::u16_words`] or [`SpiDevice::u32_words`]: a [`WordDevice`]
//! shifts its words at the device's bits per word if those take 2 (or 4)
//! bytes, e.g. a 12-bit device with `u16`, else at 16 (or 32) bits, with
//! the buffers in native byte order, as spidev's. (A separate type, so that
//! `SpiDevice`'s own trait calls with untyped literals still infer `u8`.)
//!
//! ```
//! use embedded_hal::spi::SpiBus;
//! # use wirespeed::spi::{Bus, DeviceConfig, Policy};
//! # use wirespeed::backend::lab::LabSpi;
//! # use wirespeed_lab::{Lab, LabConfig, devices::Loopback};
//! # let lab = Lab::new(LabConfig::default());
//! # let block = lab.spi_controller(Default::default());
//! # block.attach(0, Loopback::new());
//! # let dev = Bus::new(LabSpi::new(block), Policy::fast()).device(DeviceConfig::new(0, 20_000_000))?;
//! let mut wide = dev.u16_words();
//! let mut rx = [0u16; 2];
//! wide.transfer(&mut rx, &[0x1234, 0xBEEF])?; // two 16-bit words on the wire
//! assert_eq!(rx, [0x1234, 0xBEEF]);
//! # Ok::<(), wirespeed::spi::SpiError>(())
//! ```

use super::controller::ControllerCaps;
use super::device::DeviceConfig;
use super::error::{InvalidMessage, SpiError};
use super::exec::MessageSource;
use super::plan::{plan_shape, word_bytes, Step, INLINE_STEPS};
use super::transfer::{Data, Transfer};

use super::SpiDevice;
use embedded_hal::spi::{self, ErrorKind, Operation};
use std::marker::PhantomData;

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

/// A word type of the traits: how its buffers look as bytes, and at how
/// many bits per word it is shifted.
trait Word: Copy + 'static {
    fn bytes(words: &[Self]) -> &[u8];
    fn bytes_mut(words: &mut [Self]) -> &mut [u8];
    /// The bits-per-word override for a transfer of these words (0: the device's).
    fn bits(dev: &DeviceConfig) -> u8;
}

impl Word for u8 {
    fn bytes(words: &[u8]) -> &[u8] {
        words
    }
    fn bytes_mut(words: &mut [u8]) -> &mut [u8] {
        words
    }
    fn bits(_: &DeviceConfig) -> u8 {
        0
    }
}

macro_rules! wide_word {
    ($t:ty) => {
        impl Word for $t {
            fn bytes(words: &[$t]) -> &[u8] {
                // SAFETY: the integer has no padding and u8 no alignment; the
                // byte view covers exactly the words' memory and borrows it.
                unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
            }
            fn bytes_mut(words: &mut [$t]) -> &mut [u8] {
                // SAFETY: as above; every byte pattern is a valid integer, so
                // whatever the controller writes leaves valid words.
                unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
            }
            fn bits(dev: &DeviceConfig) -> u8 {
                if word_bytes(dev.bits_per_word) == std::mem::size_of::<$t>() {
                    dev.bits_per_word
                } else {
                    <$t>::BITS as u8
                }
            }
        }
    };
}
wide_word!(u16);
wide_word!(u32);

/// A transfer step of an operation list: which op, which range of its words, which kind.
#[derive(Clone, Copy)]
enum Part {
    Whole,
    Head(usize),
    ReadTail(usize),
    WriteTail(usize),
    /// No data at all: the one step of a transaction that only waits, run
    /// as a CS window as long as its delays.
    Window,
}

/// Calls `f(op_index, part, delay_before_ns)` for every transfer step in
/// order, until `f` returns false; returns the delay after the last step.
fn walk<W: 'static>(ops: &[Operation<'_, W>], mut f: impl FnMut(usize, Part, u64) -> bool) -> u64 {
    let mut delay = 0u64;
    for (i, op) in ops.iter().enumerate() {
        let parts: [Option<Part>; 2] = match op {
            Operation::DelayNs(ns) => {
                delay = delay.saturating_add(u64::from(*ns));
                [None, None]
            }
            Operation::Transfer(r, w) if r.len() != w.len() => {
                let n = r.len().min(w.len());
                let head = (n > 0).then_some(Part::Head(n));
                let tail = if r.len() > w.len() { Part::ReadTail(n) } else { Part::WriteTail(n) };
                [head, Some(tail)]
            }
            Operation::Read([])
            | Operation::Write([])
            | Operation::TransferInPlace([])
            | Operation::Transfer([], []) => [None, None],
            _ => [Some(Part::Whole), None],
        };
        for p in parts.into_iter().flatten() {
            if !f(i, p, delay) {
                return 0;
            }
            delay = 0;
        }
    }
    delay
}

/// Where a step's data is, and its plan. Lengths and offsets of [`Part`]s
/// count words.
#[derive(Clone, Copy)]
struct Planned {
    op: usize,
    part: Part,
    step: Step,
}

/// An operation list as a message: its transfer steps, or one empty CS
/// window if it moves no data.
struct Ops<'o, 'b, W: 'static> {
    ops: &'o mut [Operation<'b, W>],
    /// Steps that move data (0: the message is one [`Part::Window`]).
    data_steps: usize,
    /// Delay after the last step (trailing `DelayNs` operations, including
    /// those before empty operations at the end).
    trailing_ns: u64,
    /// Every step, if there are at most [`INLINE_STEPS`] (filled by [`Ops::plan`]).
    planned: Option<[Planned; INLINE_STEPS]>,
}

impl<'o, 'b, W: Word> Ops<'o, 'b, W> {
    fn new(ops: &'o mut [Operation<'b, W>]) -> Self {
        let mut data_steps = 0;
        let trailing_ns = walk(ops, |_, _, _| {
            data_steps += 1;
            true
        });
        Ops { ops, data_steps, trailing_ns, planned: None }
    }

    /// Validates every step in one pass, keeping the plans of a short list.
    fn plan(&mut self, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<(), InvalidMessage> {
        let empty = Planned { op: 0, part: Part::Window, step: Step::EMPTY };
        let mut planned = [empty; INLINE_STEPS];
        if self.data_steps == 0 {
            planned[0].step = self.plan_part(0, 0, Part::Window, 0, dev, caps)?;
        } else {
            let mut k = 0;
            let mut failed = None;
            walk(self.ops, |op, part, delay| {
                match self.plan_part(k, op, part, delay, dev, caps) {
                    Ok(step) if k < INLINE_STEPS => planned[k] = Planned { op, part, step },
                    Ok(_) => {}
                    Err(e) => failed = Some(e),
                }
                k += 1;
                failed.is_none()
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
        if self.count() <= INLINE_STEPS {
            self.planned = Some(planned);
        }
        Ok(())
    }

    /// Step `idx`: its operation, part and delay before it.
    fn locate(&self, idx: usize) -> (usize, Part, u64) {
        if let Some(p) = &self.planned {
            return (p[idx].op, p[idx].part, p[idx].step.delay_before_ns);
        }
        if self.data_steps == 0 {
            return (0, Part::Window, 0);
        }
        let mut seen = 0;
        let mut found = (0, Part::Whole, 0);
        walk(self.ops, |i, p, d| {
            if seen == idx {
                found = (i, p, d);
                return false;
            }
            seen += 1;
            true
        });
        found
    }

    /// Plans step `k`, which is `part` of operation `op` after `delay_before` ns.
    fn plan_part(
        &self,
        k: usize,
        op: usize,
        part: Part,
        delay_before: u64,
        dev: &DeviceConfig,
        caps: &ControllerCaps,
    ) -> Result<Step, InvalidMessage> {
        let mut st = if let Part::Window = part {
            Step { bits: dev.bits_per_word, speed_hz: dev.speed_hz, ..Step::EMPTY }
        } else {
            // Planning needs only lengths; a shared view of the op is enough.
            let len = match (&self.ops[op], part) {
                (Operation::Transfer(_, _), Part::Head(n)) => n,
                (Operation::Transfer(r, _), Part::ReadTail(n)) => r.len() - n,
                (Operation::Transfer(_, w), Part::WriteTail(n)) => w.len() - n,
                (Operation::Read(b), _) => b.len(),
                (Operation::Write(b), _) => b.len(),
                (Operation::TransferInPlace(b), _) => b.len(),
                (Operation::Transfer(r, _), _) => r.len(),
                (Operation::DelayNs(_), _) => 0,
            };
            let (tx, rx) = match (&self.ops[op], part) {
                (Operation::Read(_), _) | (_, Part::ReadTail(_)) => (false, true),
                (Operation::Write(_), _) | (_, Part::WriteTail(_)) => (true, false),
                _ => (true, true),
            };
            Step { tx, rx, ..plan_shape(op, len * std::mem::size_of::<W>(), 0, W::bits(dev), dev, caps)? }
        };
        st.delay_before_ns = delay_before;
        if k + 1 == self.count() {
            st.delay_after_ns = self.trailing_ns;
        }
        Ok(st)
    }

    /// Reports an executor error by operation index, as the caller wrote
    /// the list, rather than by step.
    fn by_operation(&self, e: SpiError) -> SpiError {
        match e {
            SpiError::Timeout { index, waited_us } => SpiError::Timeout { index: self.locate(index).0, waited_us },
            SpiError::Controller { index, reason } => SpiError::Controller { index: self.locate(index).0, reason },
            other => other,
        }
    }
}

fn data_of<'a, W: Word>(op: &'a mut Operation<'_, W>, part: Part) -> Data<'a> {
    match (op, part) {
        (_, Part::Window) | (Operation::DelayNs(_), _) => Data::Write(&[]),
        (Operation::Read(b), _) => Data::Read(W::bytes_mut(b)),
        (Operation::Write(b), _) => Data::Write(W::bytes(b)),
        (Operation::TransferInPlace(b), _) => Data::InPlace(W::bytes_mut(b)),
        (Operation::Transfer(r, w), Part::Whole) => Data::Duplex(W::bytes(w), W::bytes_mut(r)),
        (Operation::Transfer(r, w), Part::Head(n)) => Data::Duplex(W::bytes(&w[..n]), W::bytes_mut(&mut r[..n])),
        (Operation::Transfer(r, _), Part::ReadTail(n)) => Data::Read(W::bytes_mut(&mut r[n..])),
        (Operation::Transfer(_, w), Part::WriteTail(n)) => Data::Write(W::bytes(&w[n..])),
    }
}

impl<W: Word> MessageSource for Ops<'_, '_, W> {
    fn count(&self) -> usize {
        self.data_steps.max(1)
    }

    fn step(&self, i: usize, dev: &DeviceConfig, caps: &ControllerCaps) -> Result<Step, InvalidMessage> {
        if let Some(p) = &self.planned {
            return Ok(p[i].step);
        }
        let (op, part, delay_before) = self.locate(i);
        self.plan_part(i, op, part, delay_before, dev, caps)
    }

    fn data(&mut self, i: usize) -> Data<'_> {
        let (op, part, _) = self.locate(i);
        data_of(&mut self.ops[op], part)
    }
}

/// Runs `operations` as one message with CS active from before the first
/// to after the last; a list that moves no data (delays only, or empty
/// buffers) still selects the device for as long as its delays.
/// Errors name the operation (its index in `operations`).
fn transaction<W: Word>(dev: &SpiDevice, operations: &mut [Operation<'_, W>]) -> Result<(), SpiError> {
    let mut ops = Ops::new(operations);
    ops.plan(dev.config(), &dev.bus().inner.caps)?;
    let result = dev.bus().inner.sync(&dev.state, &mut ops);
    result.map_err(|e| ops.by_operation(e))
}

impl spi::SpiDevice<u8> for SpiDevice {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), SpiError> {
        transaction(self, operations)
    }
}

/// A device whose embedded-hal word is `W` (`u16` or `u32`): see the
/// module docs and [`SpiDevice::u16_words`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct WordDevice<W> {
    dev: SpiDevice,
    words: PhantomData<fn() -> W>,
}

impl<W> WordDevice<W> {
    /// The device underneath.
    pub fn device(&self) -> &SpiDevice {
        &self.dev
    }
}

impl SpiDevice {
    /// This device for drivers written against the embedded-hal traits with
    /// `u16` words ([`WordDevice`]).
    pub fn u16_words(&self) -> WordDevice<u16> {
        WordDevice { dev: self.clone(), words: PhantomData }
    }

    /// This device for drivers written against the embedded-hal traits with
    /// `u32` words ([`WordDevice`]).
    pub fn u32_words(&self) -> WordDevice<u32> {
        WordDevice { dev: self.clone(), words: PhantomData }
    }
}

impl<W> spi::ErrorType for WordDevice<W> {
    type Error = SpiError;
}

/// One `SpiBus` call as its own message. Empty buffers move nothing and
/// send nothing (no message, no CS window), as the `u8` calls do.
fn bus_call<W: Word>(dev: &SpiDevice, op: Operation<'_, W>) -> Result<(), SpiError> {
    let empty = match &op {
        Operation::Read(b) | Operation::TransferInPlace(b) => b.is_empty(),
        Operation::Write(b) => b.is_empty(),
        Operation::Transfer(r, w) => r.is_empty() && w.is_empty(),
        Operation::DelayNs(_) => false,
    };
    if empty {
        return Ok(());
    }
    transaction(dev, &mut [op])
}

/// `SpiDevice` and `SpiBus` of words wider than a byte: each bus call one message.
macro_rules! wide_word_traits {
    ($t:ty) => {
        impl spi::SpiDevice<$t> for WordDevice<$t> {
            fn transaction(&mut self, operations: &mut [Operation<'_, $t>]) -> Result<(), SpiError> {
                transaction(&self.dev, operations)
            }
        }

        impl spi::SpiBus<$t> for WordDevice<$t> {
            fn read(&mut self, words: &mut [$t]) -> Result<(), SpiError> {
                bus_call(&self.dev, Operation::Read(words))
            }
            fn write(&mut self, words: &[$t]) -> Result<(), SpiError> {
                bus_call(&self.dev, Operation::Write(words))
            }
            fn transfer(&mut self, read: &mut [$t], write: &[$t]) -> Result<(), SpiError> {
                bus_call(&self.dev, Operation::Transfer(read, write))
            }
            fn transfer_in_place(&mut self, words: &mut [$t]) -> Result<(), SpiError> {
                bus_call(&self.dev, Operation::TransferInPlace(words))
            }
            fn flush(&mut self) -> Result<(), SpiError> {
                Ok(())
            }
        }
    };
}
wide_word_traits!(u16);
wide_word_traits!(u32);

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
        if read.is_empty() && write.is_empty() {
            return Ok(());
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_add_up_beyond_u32_and_land_on_the_step_after_them() {
        let mut rx = [0u8; 1];
        let mut list = [
            Operation::Write(&[1]),
            Operation::DelayNs(u32::MAX),
            Operation::Write(&[]),
            Operation::DelayNs(u32::MAX),
            Operation::Read(&mut rx),
            Operation::DelayNs(7),
            Operation::TransferInPlace(&mut []),
            Operation::DelayNs(5),
        ];
        let ops = Ops::new(&mut list);
        assert_eq!(ops.count(), 2);
        let (op, _, before) = ops.locate(1);
        assert_eq!((op, before), (4, 2 * u64::from(u32::MAX)));
        assert_eq!(ops.trailing_ns, 12, "delays around a trailing empty operation both count");
    }

    #[test]
    fn planning_once_gives_the_steps_a_walk_gives() {
        let (dev, caps) = (DeviceConfig::new(0, 20_000_000), crate::spi::controller::test_caps());
        for n in [3usize, INLINE_STEPS, INLINE_STEPS + 3] {
            let mut bufs: Vec<[u8; 2]> = (0..n).map(|i| [i as u8; 2]).collect();
            let mut list: Vec<Operation<'_, u8>> = Vec::new();
            for (i, b) in bufs.iter_mut().enumerate() {
                list.push(Operation::DelayNs(i as u32 * 10));
                list.push(if i % 2 == 0 { Operation::Write(&b[..]) } else { Operation::Read(&mut b[..]) });
            }
            let walked: Vec<_> = {
                let ops = Ops::new(&mut list);
                (0..ops.count()).map(|i| (ops.locate(i).0, ops.step(i, &dev, &caps).unwrap())).collect()
            };
            let mut ops = Ops::new(&mut list);
            ops.plan(&dev, &caps).unwrap();
            assert_eq!(ops.planned.is_some(), n <= INLINE_STEPS, "{n} steps");
            let planned: Vec<_> =
                (0..ops.count()).map(|i| (ops.locate(i).0, ops.step(i, &dev, &caps).unwrap())).collect();
            assert_eq!(planned, walked, "{n} steps");
            assert_eq!(walked[n - 1].1.delay_before_ns, (n as u64 - 1) * 10);
        }
    }

    #[test]
    fn a_list_without_data_is_one_window_as_long_as_its_delays() {
        let mut list: [Operation<'_, u8>; 3] =
            [Operation::DelayNs(3), Operation::Transfer(&mut [], &[]), Operation::DelayNs(4)];
        let ops = Ops::new(&mut list);
        assert_eq!((ops.count(), ops.trailing_ns), (1, 7));
        assert!(matches!(ops.locate(0), (0, Part::Window, 0)));
    }
}
