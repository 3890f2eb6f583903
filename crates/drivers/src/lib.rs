//! Device drivers, written against the stack's traits only: they never know whether they run on the lab or on Linux.
//!
//! - [`ad7606`]: the Analog Devices AD7606 8-channel simultaneous-sampling ADC on SPI.
//! - [`can`]: CAN / CAN FD frames as drivers hand them to applications.
//! - [`mcp251xfd`]: the Microchip MCP2517FD/MCP2518FD CAN FD controller on SPI.

pub mod ad7606;
pub mod can;
pub mod mcp251xfd;
pub mod spi_nor;
