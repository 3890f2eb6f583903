//! A small register-file device for testing the layers above the SPI core.
//!
//! Protocol (8-bit words, mode 0): CS low, a command byte
//! ([`REGFILE_READ`] or [`REGFILE_WRITE`]), an address byte, then data bytes;
//! the address increments after each data byte and wraps at the file's size.
//! During a read, MISO carries `reg[addr]` in each data byte; elsewhere MISO
//! is 0. An unknown command makes the device ignore the rest of the access.

use crate::spi::SpiDeviceModel;
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed_time::Instant;

/// Command byte: read registers from the address that follows.
pub const REGFILE_READ: u8 = 0x03;
/// Command byte: write registers from the address that follows.
pub const REGFILE_WRITE: u8 = 0x02;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Command,
    Address { write: bool },
    Data { write: bool, addr: u8 },
    Ignore,
}

#[derive(Debug)]
struct State {
    regs: Vec<u8>,
    phase: Phase,
    reads: u64,
    writes: u64,
    accesses: u64,
}

/// A register file of up to 256 byte registers. Clones share the device:
/// keep one as the backdoor.
#[derive(Clone, Debug)]
pub struct RegFile {
    state: Arc<Mutex<State>>,
}

impl RegFile {
    /// A device with `size` registers (1..=256), all zero.
    pub fn new(size: usize) -> RegFile {
        let size = size.clamp(1, 256);
        RegFile {
            state: Arc::new(Mutex::new(State {
                regs: vec![0; size],
                phase: Phase::Idle,
                reads: 0,
                writes: 0,
                accesses: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Backdoor: a register's value.
    pub fn peek(&self, addr: u8) -> u8 {
        let s = self.lock();
        s.regs[addr as usize % s.regs.len()]
    }
    /// Backdoor: sets a register without any bus traffic.
    pub fn poke(&self, addr: u8, value: u8) {
        let mut s = self.lock();
        let n = s.regs.len();
        s.regs[addr as usize % n] = value;
    }
    /// Backdoor: data bytes read over the bus so far.
    pub fn bytes_read(&self) -> u64 {
        self.lock().reads
    }
    /// Backdoor: data bytes written over the bus so far.
    pub fn bytes_written(&self) -> u64 {
        self.lock().writes
    }
    /// Backdoor: CS assertions so far.
    pub fn accesses(&self) -> u64 {
        self.lock().accesses
    }
}

impl SpiDeviceModel for RegFile {
    fn chip_select(&mut self, asserted: bool, _at: Instant) {
        let mut s = self.lock();
        if asserted {
            s.accesses += 1;
            s.phase = Phase::Command;
        } else {
            s.phase = Phase::Idle;
        }
    }

    fn exchange(&mut self, mosi: u32, bits: u8, _at: Instant) -> u32 {
        let mut s = self.lock();
        if bits != 8 {
            s.phase = Phase::Ignore;
            return 0;
        }
        let byte = mosi as u8;
        let n = s.regs.len();
        match s.phase {
            Phase::Idle | Phase::Ignore => 0,
            Phase::Command => {
                s.phase = match byte {
                    REGFILE_READ => Phase::Address { write: false },
                    REGFILE_WRITE => Phase::Address { write: true },
                    _ => Phase::Ignore,
                };
                0
            }
            Phase::Address { write } => {
                s.phase = Phase::Data { write, addr: byte };
                0
            }
            Phase::Data { write, addr } => {
                let i = addr as usize % n;
                s.phase = Phase::Data { write, addr: ((i + 1) % n) as u8 };
                if write {
                    s.regs[i] = byte;
                    s.writes += 1;
                    0
                } else {
                    s.reads += 1;
                    u32::from(s.regs[i])
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(dev: &mut RegFile, bytes: &[u8]) -> Vec<u8> {
        dev.chip_select(true, Instant::ZERO);
        let out = bytes.iter().map(|&b| dev.exchange(u32::from(b), 8, Instant::ZERO) as u8).collect();
        dev.chip_select(false, Instant::ZERO);
        out
    }

    #[test]
    fn write_then_read_with_autoincrement_and_wrap() {
        let mut d = RegFile::new(4);
        access(&mut d, &[REGFILE_WRITE, 3, 0xAA, 0xBB]);
        assert_eq!((d.peek(3), d.peek(0)), (0xAA, 0xBB));
        assert_eq!(access(&mut d, &[REGFILE_READ, 3, 0, 0]), vec![0, 0, 0xAA, 0xBB]);
        assert_eq!((d.bytes_written(), d.bytes_read(), d.accesses()), (2, 2, 2));
    }

    #[test]
    fn unknown_command_and_wrong_width_are_ignored() {
        let mut d = RegFile::new(8);
        d.poke(1, 7);
        assert_eq!(access(&mut d, &[0x55, 1, 9]), vec![0, 0, 0]);
        assert_eq!(d.peek(1), 7);
        d.chip_select(true, Instant::ZERO);
        assert_eq!(d.exchange(0x0301, 16, Instant::ZERO), 0);
        assert_eq!(d.exchange(u32::from(REGFILE_WRITE), 8, Instant::ZERO), 0);
        d.chip_select(false, Instant::ZERO);
        assert_eq!(d.bytes_written(), 0);
    }
}
