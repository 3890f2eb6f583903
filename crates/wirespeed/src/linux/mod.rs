//! Linux backends (feature `linux`).
//!
//! - [`gpio_cdev`]: GPIO character device uAPI v2 (`/dev/gpiochipN`).

pub mod discover;
pub mod gpio_cdev;
pub mod spidev;
