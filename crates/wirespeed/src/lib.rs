//! wirespeed: low-latency peripheral I/O for Linux.
//!
//! One API, and the software between transfers costs close to nothing: the
//! core picks the fast way by itself, drivers don't have to know the system.
//!
//! - [`time`]: monotonic clock, deadlines, precise delays; [`delay::Delay`]
//!   offers them to embedded-hal drivers as `DelayNs`.
//! - [`regmap`]: register maps with caches over any bus.
//! - [`spi`]: the SPI core — buses, devices, messages, policies.
//! - [`gpio`]: GPIO chips and lines, edge events, removal-safe handles.
//! - [`dma`]: DMA buffers, IOMMU domains (none, identity, strict, lazy),
//!   IOVA allocators with per-thread magazines, scatter-gather.
//!
//! Backends: the emulated lab (feature `lab`, the default) and Linux (feature `linux`).

pub use wirespeed_time as time;

mod asym_fence;
pub mod backend;
pub mod delay;
pub mod dma;
pub mod gpio;
#[cfg(feature = "linux")]
pub mod linux;
pub mod regmap;
pub mod spi;
mod sync;
