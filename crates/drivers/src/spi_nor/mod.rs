//! Driver for SPI NOR flash (JEDEC `9F` ID, SFDP, 25-series command set),
//! written against the stack's SPI API only.
//!
//! ```text
//! let dev = bus.device(DeviceConfig::new(0, 50_000_000))?;
//! let mut flash = SpiNor::probe(dev)?;
//! flash.unprotect()?;
//! flash.erase(0, 4096)?;
//! flash.program(0x100, b"hello")?;
//! assert_eq!(flash.verify(0x100, b"hello")?, None);
//! ```
//!
//! - **Probe** ([`SpiNor::probe`]): reads the JEDEC ID (`9F`); all `00` or
//!   all `FF` is [`Error::NoChip`] and nothing more is sent. Then SFDP
//!   (`5A`, 3 address bytes, one dummy byte): the header, the first
//!   parameter header (which must be the BFPT) and up to 16 BFPT DWORDs:
//!   density, address bytes, erase types, and, when present, erase times
//!   (DWORD 10), page size, page program and chip erase times (DWORD 11)
//!   and `B7` 4-byte mode entry (DWORD 16). The built-in table
//!   ([`KNOWN_CHIPS`], data) names the part and supplies everything for
//!   parts without SFDP (the SST25VF016B); when both exist, size, page
//!   size and erase sizes are cross-checked ([`Error::Mismatch`]). Parts
//!   larger than 16 MiB are switched to 4-byte addressing with `B7` (the
//!   mode is lost on a chip reset or power cycle: probe again).
//! - **Read** ([`SpiNor::read`]): `03` with 3 or 4 address bytes, one
//!   message (command transfer + read transfer, one chip-select window) per
//!   piece of at most [`MAX_READ_PIECE`] bytes; if the backend refuses a
//!   message that large, the piece shrinks to the backend's limit.
//! - **Program** ([`SpiNor::program`]): page by page, each one message
//!   `06` then `02` (chip select toggled between), then a WIP wait. SST
//!   parts: byte program `02` for an odd start or a last odd byte, AAI word
//!   program `AD` for the rest, ended by `04`.
//! - **Erase** ([`SpiNor::erase`]): the range must be aligned to the
//!   smallest erase size; each step uses the largest erase type whose size
//!   is aligned at that address and fits what is left. [`SpiNor::chip_erase`]: `C7`.
//! - **WIP wait**: after a program, erase or status write the driver
//!   sleeps the operation's typical time ([`wirespeed::time::delay`]), then
//!   polls RDSR (`05`, a prepared message), sleeping an eighth of the
//!   typical time after the first busy poll and doubling up to the typical
//!   time. It gives up with [`Error::Timeout`] once the maximum time plus
//!   [`WAIT_SLACK_NS`] has passed. Times are the SFDP's typical times where it
//!   has them (maxima from its multipliers), else the table's; where both
//!   exist the larger maximum is used. [`SpiNor::set_time_scale`] scales
//!   them all. Polls are counted ([`Stats::status_polls`]).
//! - **Smart write** ([`SpiNor::write`]): read, compare per smallest
//!   sector, skip equal sectors, program without erasing where only 1→0
//!   changes are needed, erase the rest with the largest blocks that are
//!   wholly to be erased, program the non-`FF` pages, verify what changed.
//! - **Protection**: before a program or erase, status register 1 is read
//!   and a request touching the range its BP bits protect fails with
//!   [`Error::Protected`] without sending the command (for parts not in the
//!   table, BP2..BP0 at bits 4:2 non-zero counts as all protected).
//!   [`SpiNor::unprotect`] writes 0 to status register 1 (`06`, or SST's
//!   `50`, then `01 00`) and checks the BP bits read back as 0.

mod chips;
mod erase;
mod error;
mod geometry;
mod probe;
mod program;
mod protect;
mod read;
pub mod sfdp;
mod smart;
mod wait;

pub use chips::{by_jedec_id, KnownChip, KNOWN_CHIPS};
pub use error::{Error, Op};
pub use geometry::{EraseType, Geometry, OpTime, ProgramKind, ProtectLayout};
pub use protect::Protection;
pub use smart::{EraseCount, Phase, Progress, WriteReport};
pub use wait::WAIT_SLACK_NS;

use wirespeed::spi::{PreparedMessage, SpiDevice};

/// The largest read piece (bytes of data in one message).
pub const MAX_READ_PIECE: usize = 64 * 1024;

/// Counters since the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Status reads made while waiting for WIP to clear.
    pub status_polls: u64,
    /// Program commands sent (pages; SST: bytes and AAI words).
    pub program_commands: u64,
    /// Sector/block/chip erase commands sent.
    pub erase_commands: u64,
    /// Read messages sent by [`SpiNor::read`] and [`SpiNor::verify`].
    pub read_messages: u64,
}

/// A probed SPI NOR flash.
pub struct SpiNor {
    dev: SpiDevice,
    id: [u8; 3],
    name: &'static str,
    geometry: Geometry,
    protect: Option<ProtectLayout>,
    ewsr: bool,
    rdsr: PreparedMessage,
    stats: Stats,
    time_scale: f64,
    read_piece: usize,
}

impl std::fmt::Debug for SpiNor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpiNor").field("name", &self.name).field("id", &self.id).finish()
    }
}

impl SpiNor {
    /// Identifies the chip on `dev` (see the module docs).
    pub fn probe(dev: SpiDevice) -> Result<SpiNor, Error> {
        probe::probe(dev)
    }

    /// The part's name from the table, or `"SFDP flash"` for a part known only by its SFDP.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The JEDEC ID read at probe.
    pub fn jedec_id(&self) -> [u8; 3] {
        self.id
    }

    /// Layout and timing.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The SPI device.
    pub fn device(&self) -> &SpiDevice {
        &self.dev
    }

    /// Multiplies every typical and maximum time the driver waits for
    /// (default 1.0). Negative or non-finite values act as 1.0.
    pub fn set_time_scale(&mut self, scale: f64) {
        self.time_scale = if scale.is_finite() && scale >= 0.0 { scale } else { 1.0 };
    }

    /// The command bytes for `op` at `addr`, and how many there are (1 + address bytes).
    fn cmd(&self, op: u8, addr: u32) -> ([u8; 5], usize) {
        let a = addr.to_be_bytes();
        if self.geometry.address_bytes == 4 {
            ([op, a[0], a[1], a[2], a[3]], 5)
        } else {
            ([op, a[1], a[2], a[3], 0], 4)
        }
    }

    /// `Ok` when `len` bytes from `addr` are inside the array.
    fn check_range(&self, addr: u32, len: u64) -> Result<(), Error> {
        let size = self.geometry.size;
        if u64::from(addr) + len > u64::from(size) {
            return Err(Error::OutOfRange { addr, len, size });
        }
        Ok(())
    }
}
