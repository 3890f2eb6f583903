//! Linux backends (feature `linux`).
//!
//! - [`spidev`]: SPI through `/dev/spidevB.C`, a message-level backend for
//!   [`Bus::with_message_backend`](crate::spi::Bus::with_message_backend).
//! - [`gpio_cdev`]: GPIO character device uAPI v2 (`/dev/gpiochipN`).
//! - [`discover`]: what spidev nodes, SPI devices and GPIO chips a machine has.

pub mod discover;
pub mod gpio_cdev;
pub mod spidev;
