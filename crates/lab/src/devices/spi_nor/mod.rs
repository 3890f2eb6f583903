//! SPI NOR flash: one model, many parts, each a row of data ([`ChipSpec`]).
//!
//! # Bus face
//! Mode 0/3, 8-bit words. A command is the bytes of one chip-select
//! assertion. Read-type commands drive MISO as they are clocked: `9F` (JEDEC
//! ID), `05`/`35` (status 1/2; re-evaluated on every byte, so polling in one
//! assertion sees WIP fall), `03`/`13` (read), `0B`/`0C` (fast read, one
//! dummy byte), `5A` (SFDP: 3 address bytes, 1 dummy; see [`sfdp`]) and `AB`
//! (release from deep power-down; after three dummy bytes, the legacy ID
//! byte). Undriven MISO reads `0xFF`.
//!
//! Write-type commands take effect when CS rises, and only with the exact
//! byte count (one byte for `06`, `04`, `C7`, `60`, `B7`, `E9`, `66`, `99`,
//! `B9`; opcode + address for erases; at least one data byte for programs;
//! `01` takes one status byte, or two on parts with status register 2): `06`/`04` set/clear WEL; `02`/`12` page
//! program (data wrap within the page; new = old & data); `20`/`52`/`D8`
//! and the 4-byte `21`/`DC` erase the aligned sector/block; `C7`/`60` erase
//! the chip (refused while any block is protected); `01` writes the status
//! register; `B7`/`E9` enter/exit 4-byte address mode; `66` then `99`
//! (consecutive) reset; `B9` enters deep power-down, after which only `AB` is
//! answered. SST parts: `02` programs the first data byte only, `AD` is AAI
//! word programming (AAI bit 0x40 set, WEL kept, the address wrapping at
//! the array's end, ended by `04`) and `50` enables one `01`. Opcodes a
//! part does not have are ignored (so is the whole assertion).
//!
//! Programs, erases and status writes need WEL, start at CS rise, set WIP
//! until their due time (computed from timestamps whenever status is looked
//! at; no thread runs them) and clear WEL at the end. One that touches a
//! block-protected range is refused: no WIP, WEL cleared. While WIP is set
//! only `05`, `35` and `66`/`99` are accepted; a reset during WIP cuts the
//! operation as a power cut would. Durations are the row's typical times,
//! or (with [`SpiNorOptions::random_times_seed`]) drawn uniformly between
//! typical and maximum per operation; both times
//! [`SpiNorOptions::time_scale`].
//!
//! # Backdoor face
//! Clone the handle before attaching it. [`SpiNor::peek`]/[`SpiNor::poke`]
//! the array, [`SpiNor::status`]/[`SpiNor::force_status`],
//! [`SpiNor::busy_window`], [`SpiNor::last_op_window`],
//! [`SpiNor::power_cut`] (partial state documented there),
//! [`SpiNor::set_stuck_wip`], read bit flips
//! ([`SpiNor::set_flip_probability`], [`SpiNor::flip_on_read`]) and the WP#
//! pin ([`SpiNor::set_wp_low`]: while low, `01` is refused, WEL cleared, when
//! bit 7 of status register 1 — SRP, SRWD or BPL — is set).
//!
//! # Not modelled
//! Dual/quad I/O, SEC/CMP protect bits (stored, no effect), OTP and
//! security registers, suspend/resume, the extended address register,
//! tRES1/tDP delays, status register 3, Macronix's configuration register
//! (`15`), SST's read-ID `90`/`AB` and hardware end-of-write detection,
//! status register protect bit 1 (SRP1/SRL).

mod backing;
mod chips;
pub mod sfdp;
mod state;
#[cfg(test)]
mod tests;
mod timing;

pub use backing::ImageError;
pub use chips::{
    ChipSpec, EraseType, OpTime, ProgramKind, ProtectLayout, CHIPS, GD25Q64C, MX25L12835F, SST25VF016B, W25Q128JV,
    W25Q256JV,
};
pub use state::{SR_AAI, SR_LOCK, SR_WEL, SR_WIP};

use crate::spi::SpiDeviceModel;
use backing::Backing;
use state::Core;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use timing::{Rng, Timer};
use wirespeed_time::{now, Instant};

/// Per-instance settings.
#[derive(Clone, Debug)]
pub struct SpiNorOptions {
    /// Multiplies every operation's time (1.0: the datasheet's; tests use
    /// small values to wait less). Negative or non-finite values act as 1.0.
    pub time_scale: f64,
    /// `Some(seed)`: each operation's time is drawn uniformly between the
    /// row's typical and maximum from a generator seeded with `seed`.
    /// `None` (default): typical.
    pub random_times_seed: Option<u64>,
}

impl Default for SpiNorOptions {
    fn default() -> SpiNorOptions {
        SpiNorOptions { time_scale: 1.0, random_times_seed: None }
    }
}

/// An SPI NOR flash chip. Clones share the chip: keep one as the backdoor.
#[derive(Clone)]
pub struct SpiNor {
    core: Arc<Mutex<Core>>,
}

impl std::fmt::Debug for SpiNor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpiNor").field("chip", &self.spec().name).finish()
    }
}

impl SpiNor {
    /// A chip backed by memory, erased (all 0xFF), with default options.
    pub fn new(spec: &'static ChipSpec) -> SpiNor {
        SpiNor::with_options(spec, SpiNorOptions::default())
    }

    /// A chip backed by memory, erased (all 0xFF).
    pub fn with_options(spec: &'static ChipSpec, options: SpiNorOptions) -> SpiNor {
        SpiNor::build(spec, Backing::memory(spec.size), &options)
    }

    /// A chip backed by the host file `path`, with default options: see
    /// [`with_image_options`](SpiNor::with_image_options).
    pub fn with_image(spec: &'static ChipSpec, path: impl AsRef<Path>) -> Result<SpiNor, ImageError> {
        SpiNor::with_image_options(spec, path, SpiNorOptions::default())
    }

    /// A chip backed by the host file `path`: a missing or empty file is
    /// created erased (0xFF, the chip's size); another size is an
    /// [`ImageError::Size`]. The array is held in memory and every change
    /// is written through to the file at once (one `pwrite` per changed
    /// range); [`flush`](SpiNor::flush) also syncs it to disk.
    pub fn with_image_options(
        spec: &'static ChipSpec,
        path: impl AsRef<Path>,
        options: SpiNorOptions,
    ) -> Result<SpiNor, ImageError> {
        Ok(SpiNor::build(spec, Backing::file(spec.size, path.as_ref())?, &options))
    }

    fn build(spec: &'static ChipSpec, mem: Backing, options: &SpiNorOptions) -> SpiNor {
        let timer = Timer::new(options.random_times_seed, options.time_scale);
        SpiNor { core: Arc::new(Mutex::new(Core::new(spec, mem, timer))) }
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The chip's row.
    pub fn spec(&self) -> &'static ChipSpec {
        self.lock().spec
    }

    /// Backdoor: `len` bytes of the array from `addr` (wrapping at its end),
    /// as they are now (a due operation is completed first).
    pub fn peek(&self, addr: u32, len: usize) -> Vec<u8> {
        let mut c = self.lock();
        c.settle(now());
        let size = c.spec.size as usize;
        (0..len).map(|k| c.mem.data[(addr as usize + k) % size]).collect()
    }

    /// Backdoor: writes bytes into the array (no program rules), wrapping at its end.
    pub fn poke(&self, addr: u32, bytes: &[u8]) {
        let mut c = self.lock();
        c.settle(now());
        let size = c.spec.size as usize;
        let mut a = addr as usize % size;
        for chunk in bytes.chunks(size) {
            let first = chunk.len().min(size - a);
            c.mem.data[a..a + first].copy_from_slice(&chunk[..first]);
            c.mem.write_through(a, a + first);
            c.mem.data[..chunk.len() - first].copy_from_slice(&chunk[first..]);
            c.mem.write_through(0, chunk.len() - first);
            a = (a + chunk.len()) % size;
        }
    }

    /// Backdoor: status registers 1 and 2 now.
    pub fn status(&self) -> (u8, u8) {
        self.lock().status(now())
    }

    /// Backdoor: sets status registers 1 and 2. WIP is not settable here
    /// (it reflects an operation in progress; see [`set_stuck_wip`](SpiNor::set_stuck_wip)).
    pub fn force_status(&self, sr1: u8, sr2: u8) {
        self.lock().force_status(sr1, sr2);
    }

    /// Backdoor: the start and due instants of the operation in progress.
    pub fn busy_window(&self) -> Option<(Instant, Instant)> {
        let mut c = self.lock();
        c.settle(now());
        c.busy_window()
    }

    /// Backdoor: the start and due instants of the last operation that took
    /// time (program, erase, status write), whether or not it is over.
    pub fn last_op_window(&self) -> Option<(Instant, Instant)> {
        self.lock().last_window()
    }

    /// Fault: power lost at `at`, then restored. `at` is meant to be "now or
    /// recently": an operation that a look at the chip (bus or backdoor)
    /// already found complete stays complete. An operation in progress
    /// at `at` stops with a partial effect, by the fraction `f` of its time
    /// elapsed: a program leaves the first `floor(f × n)` of its `n` bytes
    /// programmed (in the order they were sent, from the start address;
    /// `f` is clamped to 0..=1);
    /// an erase of `len` bytes first pre-programs to 0x00 then erases to
    /// 0xFF, in address order, each over half its time, so for `f < 0.5`
    /// the first `floor(2f × len)` bytes are 0x00 (the rest unchanged) and
    /// for `f ≥ 0.5` the first `floor((2f − 1) × len)` bytes are 0xFF and the
    /// rest 0x00; a status write is lost. Then the chip is as powered up:
    /// WIP, WEL, AAI, 4-byte mode, deep power-down and stuck WIP cleared;
    /// non-volatile status bits kept.
    pub fn power_cut(&self, at: Instant) {
        self.lock().power_cut(at);
    }

    /// Fault: while set, WIP reads 1 and no operation completes (commands
    /// other than status reads and reset are ignored).
    pub fn set_stuck_wip(&self, stuck: bool) {
        self.lock().stuck_wip = stuck;
    }

    /// Fault: each byte read over the bus by `03`/`13`/`0B`/`0C` has one
    /// random bit flipped with probability `p`, drawn from a generator
    /// seeded with `seed`. The array is not changed.
    pub fn set_flip_probability(&self, p: f64, seed: u64) {
        let mut c = self.lock();
        c.flip_probability = p;
        c.flip_rng = Rng::new(seed);
    }

    /// Fault: bytes read over the bus at `addr` come XORed with `mask`
    /// (0 removes the fault). The array is not changed.
    pub fn flip_on_read(&self, addr: u32, mask: u8) {
        let mut c = self.lock();
        let a = addr & (c.spec.size - 1);
        if mask == 0 {
            c.flips.remove(&a);
        } else {
            c.flips.insert(a, mask);
        }
    }

    /// The WP# pin: `true` drives it low (write-protect asserted).
    pub fn set_wp_low(&self, low: bool) {
        self.lock().wp_low = low;
    }

    /// Syncs an image file to disk (writes already went through). Also
    /// returns a write-through error seen since the last call, if any.
    pub fn flush(&self) -> std::io::Result<()> {
        let mut c = self.lock();
        if let Some(e) = c.mem.io_error.take() {
            return Err(e);
        }
        c.mem.flush()
    }
}

impl SpiDeviceModel for SpiNor {
    fn chip_select(&mut self, asserted: bool, at: Instant) {
        self.lock().chip_select(asserted, at);
    }
    fn exchange(&mut self, mosi: u32, bits: u8, at: Instant) -> u32 {
        self.lock().exchange(mosi, bits, at)
    }
}
