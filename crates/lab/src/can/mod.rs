//! A virtual CAN / CAN FD bus with bit-accurate timing.
//!
//! - [`Frame`]: classic and FD frames (standard/extended IDs, RTR, DLC up to
//!   64 bytes, BRS, ESI).
//! - [`FrameBits`]: a frame's exact bitstream (stuff bits, CRC-15/17/21, FD
//!   stuff count and fixed stuff bits) and its duration at given [`BitRates`].
//! - [`Bus`]: nodes ([`CanNode`]) attach to it; it arbitrates, acknowledges,
//!   sends error frames, keeps error counters, and stamps every frame's SOF
//!   and EOF on the lab clock. A frame occupies the bus in real time; it is
//!   delivered at its EOF by the lab's interrupt thread.
//! - [`tools`]: a `cangen`-like [`Generator`](tools::Generator), a bus
//!   [`Recorder`](tools::Recorder) and an echo-gap checker.
//!
//! ```
//! use wirespeed_lab::{Lab, LabConfig, can::{Bus, BitRates, tools::{Generator, GeneratorConfig, Recorder}}};
//! let lab = Lab::new(LabConfig::default());
//! let bus = Bus::new(&lab, "can0", BitRates::new(1_000_000, 1_000_000)).unwrap();
//! let rec = Recorder::attach(&bus, 16);
//! let gen = Generator::attach(&bus, "cangen", GeneratorConfig { count: 2, gap_ns: 0, ..Default::default() }).unwrap();
//! let _peer = Generator::attach(&bus, "peer", GeneratorConfig { count: 0, ..Default::default() }).unwrap(); // acknowledges
//! gen.start(wirespeed_time::now());
//! assert!(gen.wait_done(std::time::Duration::from_secs(5)));
//! assert_eq!(rec.records().len(), 2);
//! ```

mod bits;
mod bus;
pub(crate) use bus::WeakBus;
mod frame;
#[cfg(test)]
mod tests;
pub mod tools;

pub use bits::{
    crc15_bytes, crc17_bytes, crc21_bytes, crc_step, BitRates, FrameBits, ERROR_FRAME_BITS, INTERMISSION_BITS,
    SUSPEND_BITS,
};
pub use bus::{
    Bus, BusConfigError, BusError, BusObserver, CanNode, ErrorCounters, ErrorState, FrameRecord, FrameStamp, NodeId,
    Participation, Role, TxOutcome, TxRequest,
};
pub use frame::{dlc_to_len, len_to_dlc, CanId, Frame, FrameError, EXTENDED_ID_MAX, STANDARD_ID_MAX};
