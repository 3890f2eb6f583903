//! The SPI core.
