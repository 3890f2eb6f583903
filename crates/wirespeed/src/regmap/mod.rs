//! Register maps: typed register access to a device over a bus, with caches.
//!
//! Modeled on the Linux kernel's regmap. A [`Regmap`] is built from a
//! [`RegmapConfig`] (wire [`format`](mod@format), address space, register properties,
//! defaults, [`cache`] type) and a [`RegmapBus`] (the transport: the SPI
//! adapter [`SpiBus`], or the [`RamBus`] for tests).
//!
//! ```
//! use wirespeed::regmap::{format::StdFormat, RamBus, Regmap, RegmapConfig, RegSet};
//! // A device with a command byte (0x03 read, 0x02 write), an address byte
//! // and 8-bit registers.
//! let format = StdFormat::new(16, 8).with_flags(0x0300, 0x0200);
//! let mut config = RegmapConfig::new(format, 0xFF);
//! config.volatile = RegSet::ranges([0xF0..=0xF3]);
//! config.defaults = vec![(0x00, 0x12)];
//! let ram = RamBus::new(config.format.clone(), 1, 0xFF);
//! let map = Regmap::new(config, ram.clone()).unwrap();
//! map.write(0x10, 0xAB).unwrap();
//! assert_eq!(ram.peek(0x10), 0xAB);
//! assert_eq!(map.read(0x10).unwrap(), 0xAB); // from the cache
//! assert_eq!(ram.messages(), 1);
//! map.multi_write(&[(0x20, 1), (0x21, 2), (0x22, 3)]).unwrap(); // one message
//! assert_eq!(ram.messages(), 2);
//! ```

pub mod bus;
pub mod cache;
pub mod config;
pub mod error;
pub mod format;
mod map;
mod props;
pub mod ram_bus;
pub mod spi_bus;

pub use bus::{Batch, RegmapBus};
pub use config::{CacheType, RegSet, RegmapConfig, FLAT_CACHE_MAX_SLOTS};
pub use error::{BusError, ConfigError, RegmapError};
pub use map::{Regmap, SyncReport};
pub use ram_bus::RamBus;
pub use spi_bus::SpiBus;

#[cfg(test)]
mod tests;
