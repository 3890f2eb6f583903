//! CAN and CAN FD frames as drivers hand them to applications: an
//! identifier, flags, up to 64 data bytes and an optional hardware timestamp.
//!
//! ```
//! use wirespeed_drivers::can::{CanId, Frame};
//! let f = Frame::classic(CanId::standard(0x123).unwrap(), &[1, 2, 3]).unwrap();
//! assert_eq!((f.len(), f.dlc(), f.data()), (3, 3, &[1u8, 2, 3][..]));
//! assert!(Frame::classic(CanId::standard(0x123).unwrap(), &[0; 9]).is_err());
//! ```

use std::fmt;

/// Largest standard (11-bit) identifier.
pub const STANDARD_ID_MAX: u16 = 0x7FF;
/// Largest extended (29-bit) identifier.
pub const EXTENDED_ID_MAX: u32 = 0x1FFF_FFFF;

/// A CAN identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CanId {
    /// 11-bit identifier.
    Standard(u16),
    /// 29-bit identifier.
    Extended(u32),
}

impl CanId {
    /// A standard identifier; `None` above 0x7FF.
    pub fn standard(id: u16) -> Option<CanId> {
        (id <= STANDARD_ID_MAX).then_some(CanId::Standard(id))
    }
    /// An extended identifier; `None` above 0x1FFF_FFFF.
    pub fn extended(id: u32) -> Option<CanId> {
        (id <= EXTENDED_ID_MAX).then_some(CanId::Extended(id))
    }
    /// The raw identifier value.
    pub fn raw(self) -> u32 {
        match self {
            CanId::Standard(i) => u32::from(i),
            CanId::Extended(i) => i,
        }
    }
    /// Whether this is a 29-bit identifier.
    pub fn is_extended(self) -> bool {
        matches!(self, CanId::Extended(_))
    }
}

/// Why a frame could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// More data than the frame kind carries.
    DataTooLong {
        /// Bytes given.
        len: usize,
        /// Bytes allowed (8 classic, 64 FD).
        max: usize,
    },
    /// A CAN FD length that no DLC encodes (allowed: 0..=8, 12, 16, 20, 24, 32, 48, 64).
    InvalidFdLength {
        /// Bytes given.
        len: usize,
    },
    /// An identifier out of range.
    InvalidId {
        /// The value.
        id: u32,
        /// Whether it was meant as extended.
        extended: bool,
    },
    /// Remote frames exist only in classic CAN.
    RemoteFd,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::DataTooLong { len, max } => {
                write!(f, "{len} data bytes; this frame kind carries at most {max}")
            }
            FrameError::InvalidFdLength { len } => {
                write!(f, "{len} data bytes is not a CAN FD length; allowed: 0..=8, 12, 16, 20, 24, 32, 48, 64")
            }
            FrameError::InvalidId { id, extended: true } => write!(f, "extended id {id:#x} above {EXTENDED_ID_MAX:#x}"),
            FrameError::InvalidId { id, extended: false } => {
                write!(f, "standard id {id:#x} above {STANDARD_ID_MAX:#x}")
            }
            FrameError::RemoteFd => write!(f, "CAN FD has no remote frames"),
        }
    }
}

impl std::error::Error for FrameError {}

const FD_LENS: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64];

/// The payload length a DLC stands for (classic frames: at most 8).
pub fn dlc_to_len(dlc: u8, fd: bool) -> usize {
    let l = FD_LENS[usize::from(dlc & 0xF)];
    if fd {
        l
    } else {
        l.min(8)
    }
}

/// The DLC of a payload length (`None` if no DLC encodes it exactly).
pub fn len_to_dlc(len: usize) -> Option<u8> {
    FD_LENS.iter().position(|&l| l == len).map(|d| d as u8)
}

/// A CAN or CAN FD frame.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    id: CanId,
    len: u8,
    dlc: u8,
    fd: bool,
    brs: bool,
    esi: bool,
    rtr: bool,
    data: [u8; 64],
    /// Hardware timestamp in the controller's time base (µs for the
    /// MCP251xFD driver), extended to 64 bits; `None` if not stamped.
    pub timestamp: Option<u64>,
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("id", &self.id)
            .field("fd", &self.fd)
            .field("brs", &self.brs)
            .field("rtr", &self.rtr)
            .field("data", &self.data())
            .field("timestamp", &self.timestamp)
            .finish()
    }
}

impl Frame {
    /// A classic data frame (0..=8 bytes).
    pub fn classic(id: CanId, data: &[u8]) -> Result<Frame, FrameError> {
        check_id(id)?;
        if data.len() > 8 {
            return Err(FrameError::DataTooLong { len: data.len(), max: 8 });
        }
        let mut d = [0; 64];
        d[..data.len()].copy_from_slice(data);
        Ok(Frame {
            id,
            len: data.len() as u8,
            dlc: data.len() as u8,
            fd: false,
            brs: false,
            esi: false,
            rtr: false,
            data: d,
            timestamp: None,
        })
    }

    /// A classic remote frame asking for `len` (0..=8) bytes.
    pub fn remote(id: CanId, len: usize) -> Result<Frame, FrameError> {
        let mut f = Frame::classic(id, &[])?;
        if len > 8 {
            return Err(FrameError::DataTooLong { len, max: 8 });
        }
        f.dlc = len as u8;
        f.rtr = true;
        Ok(f)
    }

    /// A CAN FD frame; `brs` switches to the data bit rate.
    pub fn fd(id: CanId, data: &[u8], brs: bool) -> Result<Frame, FrameError> {
        check_id(id)?;
        if data.len() > 64 {
            return Err(FrameError::DataTooLong { len: data.len(), max: 64 });
        }
        let dlc = len_to_dlc(data.len()).ok_or(FrameError::InvalidFdLength { len: data.len() })?;
        let mut d = [0; 64];
        d[..data.len()].copy_from_slice(data);
        Ok(Frame { id, len: data.len() as u8, dlc, fd: true, brs, esi: false, rtr: false, data: d, timestamp: None })
    }

    /// Builds a frame from a controller's fields (DLC, flags); data beyond
    /// the DLC's length is ignored, missing data reads as zeros.
    pub fn from_raw(id: CanId, dlc: u8, fd: bool, brs: bool, esi: bool, rtr: bool, data: &[u8]) -> Frame {
        let fd = fd && !rtr;
        let len = if rtr { 0 } else { dlc_to_len(dlc, fd) };
        let mut d = [0; 64];
        let n = len.min(data.len());
        d[..n].copy_from_slice(&data[..n]);
        Frame { id, len: len as u8, dlc: dlc & 0xF, fd, brs: fd && brs, esi: fd && esi, rtr, data: d, timestamp: None }
    }

    /// The identifier.
    pub fn id(&self) -> CanId {
        self.id
    }
    /// The same frame with another identifier (checked).
    pub fn with_id(mut self, id: CanId) -> Result<Frame, FrameError> {
        check_id(id)?;
        self.id = id;
        Ok(self)
    }
    /// The data bytes.
    pub fn data(&self) -> &[u8] {
        &self.data[..usize::from(self.len)]
    }
    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    /// Whether the frame carries no data.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The data length code.
    pub fn dlc(&self) -> u8 {
        self.dlc
    }
    /// Whether it is a CAN FD frame.
    pub fn is_fd(&self) -> bool {
        self.fd
    }
    /// Bit-rate switch (FD only).
    pub fn brs(&self) -> bool {
        self.brs
    }
    /// Error state indicator (FD only).
    pub fn esi(&self) -> bool {
        self.esi
    }
    /// Whether it is a remote frame.
    pub fn is_remote(&self) -> bool {
        self.rtr
    }
}

/// Whether `id` fits its format (frames from [`Frame::from_raw`] are not checked).
pub(crate) fn check_id(id: CanId) -> Result<(), FrameError> {
    match id {
        CanId::Standard(i) if i > STANDARD_ID_MAX => Err(FrameError::InvalidId { id: u32::from(i), extended: false }),
        CanId::Extended(i) if i > EXTENDED_ID_MAX => Err(FrameError::InvalidId { id: i, extended: true }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_dlcs() {
        assert_eq!(dlc_to_len(15, true), 64);
        assert_eq!(dlc_to_len(15, false), 8);
        assert_eq!(len_to_dlc(48), Some(14));
        assert_eq!(len_to_dlc(9), None);
        let id = CanId::Extended(0x1234_5678);
        assert_eq!(Frame::fd(id, &[0; 9], false), Err(FrameError::InvalidFdLength { len: 9 }));
        assert_eq!(
            Frame::fd(CanId::Extended(0x2000_0000), &[], false),
            Err(FrameError::InvalidId { id: 0x2000_0000, extended: true })
        );
        let f = Frame::fd(id, &[7; 12], true).unwrap();
        assert_eq!((f.dlc(), f.len(), f.brs()), (9, 12, true));
        let r = Frame::remote(CanId::Standard(1), 4).unwrap();
        assert!(r.is_remote() && r.is_empty() && r.dlc() == 4);
        assert!(!FrameError::RemoteFd.to_string().is_empty());
    }
}
