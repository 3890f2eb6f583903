//! The message RAM's power-up content and its ECC ([`Errata::ecc`]).
//!
//! Datasheet DS20006027, "ECC": each 32-bit RAM word carries a 7-bit
//! SEC/DED code. With ECCCON.ECCEN set, a read of a word whose data no
//! longer matches its code corrects a single flipped bit (ECCSTAT.SECIF)
//! or reports two (ECCSTAT.DEDIF, data as stored); ECCSTAT.ERRADDR holds
//! the word's address. Writing a word gives it a valid code again.
//!
//! The RAM powers up undefined: its code does not match its data, which
//! is why the kernel driver (mcp251xfd-core.c, `mcp251xfd_chip_ecc_init`)
//! zeroes the whole 2 KiB after enabling ECC. The model fills it from
//! [`Mcp2518fdConfig::ram_seed`](super::Mcp2518fdConfig::ram_seed) at each
//! power-up and reports a double error for a word read with ECCEN that was
//! never written since. With the switch off the RAM powers up zero and
//! unwritten words read clean; injected faults
//! ([`Mcp2518fd::inject_ram_fault`](super::Mcp2518fd::inject_ram_fault))
//! behave the same either way.
//!
//! Only the host's SPI reads check the code (the controller's own reads of
//! TX objects do not).
//!
//! [`Errata::ecc`]: super::Errata::ecc

use super::core::Core;
use super::errata::EccFault;
use super::regs::*;

/// A splitmix64 step: the power-up RAM's pseudo-random source.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Core {
    /// Power applied: RAM content undefined (pseudo-random from the seed
    /// and the power-up count, zero with the switch off), nothing written,
    /// no injected fault.
    pub(super) fn ram_power_up(&mut self) {
        self.ram_written = [0; RAM_SIZE / 4 / 64];
        self.ram_true.clear();
        if !self.errata.ecc {
            self.ram.fill(0);
            return;
        }
        let mut state = self.cfg.ram_seed ^ self.power_ups.wrapping_mul(0xD1B5_4A32_D192_ED03);
        for chunk in self.ram.chunks_mut(8) {
            let r = splitmix(&mut state).to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// The word at `off` was written (by the host or the controller): its
    /// code is valid again.
    pub(super) fn ram_wrote(&mut self, off: usize) {
        let w = off / 4;
        if let Some(bits) = self.ram_written.get_mut(w / 64) {
            *bits |= 1 << (w % 64);
        }
        if !self.ram_true.is_empty() {
            self.ram_true.remove(&(off & !3));
        }
    }

    fn ram_was_written(&self, off: usize) -> bool {
        let w = off / 4;
        self.ram_written.get(w / 64).is_some_and(|bits| bits & (1 << (w % 64)) != 0)
    }

    /// Writes `bytes` to RAM from `off` (the controller storing an object).
    pub(super) fn ram_write_bytes(&mut self, off: usize, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            if let Some(r) = self.ram.get_mut(off + i) {
                *r = *b;
            }
        }
        let mut w = off & !3;
        while w < off + bytes.len() {
            self.ram_wrote(w);
            w += 4;
        }
    }

    /// Flips one or two more bits of the word at `off` (word aligned),
    /// keeping the code of what it held.
    pub(super) fn inject_ram_fault(&mut self, off: usize, fault: EccFault) {
        if off + 4 > RAM_SIZE {
            return;
        }
        let raw = self.ram_word(off);
        let truth = *self.ram_true.get(&off).unwrap_or(&raw);
        let mut flipped = raw ^ truth;
        let want = match fault {
            EccFault::Single => 1,
            EccFault::Double => 2,
        };
        // Flip the lowest bits not flipped yet.
        for _ in 0..want {
            let bit = (!flipped).trailing_zeros();
            if bit < 32 {
                flipped |= 1 << bit;
            }
        }
        let w = truth ^ flipped;
        for (i, b) in w.to_le_bytes().iter().enumerate() {
            self.ram[off + i] = *b;
        }
        self.ram_true.insert(off, truth);
    }

    /// The host reads the RAM word at `off` (word aligned): checks its code
    /// (with ECCEN), sets ECCSTAT, counts; returns the word the host sees.
    /// Returns whether a flag changed as well.
    pub(super) fn ram_host_read(&mut self, off: usize) -> (u32, bool) {
        let raw = self.ram_word(off);
        if self.ecccon & ECCCON_ECCEN == 0 {
            return (raw, false);
        }
        let truth = self.ram_true.get(&off).copied();
        let flips = truth.map_or(0, |t| (t ^ raw).count_ones());
        let undefined = self.errata.ecc && !self.ram_was_written(off);
        let (flag, data) = if flips >= 2 || (flips == 0 && undefined) {
            self.hits.ecc_ded += 1;
            (ECCSTAT_DEDIF, raw)
        } else if flips == 1 {
            self.hits.ecc_sec += 1;
            (ECCSTAT_SECIF, truth.unwrap_or(raw))
        } else {
            return (raw, false);
        };
        let addr = (u32::from(RAM_START) + off as u32) << ECCSTAT_ERRADDR_SHIFT;
        self.eccstat = (self.eccstat & !ECCSTAT_ERRADDR_MASK) | addr | flag;
        (data, true)
    }
}
