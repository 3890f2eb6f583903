//! The register-map test suite: one set of checks run over every cache type
//! and every bus (see [`rig`]), plus the CRC-format checks on the RAM bus.

mod crc;
mod limits;
mod rig;
mod spi_rig;
mod stress;
mod submit;
mod suite;
