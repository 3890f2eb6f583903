//! Device models that attach to the lab's buses. Each has a bus face (it
//! implements [`SpiDeviceModel`](crate::spi::SpiDeviceModel)) and a backdoor
//! for tests: clone the handle before attaching it and keep the clone.

pub mod ad7606;
mod loopback;
pub mod mcp2518fd;
mod regfile;
pub mod spi_nor;

pub use ad7606::{Ad7606, Ad7606Config};
pub use loopback::Loopback;
pub use mcp2518fd::{EccFault, Errata, ErrataHits, MabError, Mcp2518fd, Mcp2518fdConfig};
pub use regfile::{RegFile, REGFILE_READ, REGFILE_WRITE};
pub use spi_nor::{ChipSpec, SpiNor, SpiNorOptions};
