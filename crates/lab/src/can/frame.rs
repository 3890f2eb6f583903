//! CAN 2.0 and CAN FD frames as software and the bus see them: identifier,
//! format flags and payload, with FD's DLC → length mapping.

use std::fmt;

/// Largest standard (11-bit) identifier.
pub const STANDARD_ID_MAX: u32 = 0x7FF;
/// Largest extended (29-bit) identifier.
pub const EXTENDED_ID_MAX: u32 = 0x1FFF_FFFF;

/// Payload lengths of the 16 DLC values in CAN FD frames.
const FD_LENGTHS: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64];

/// Why a frame could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The identifier does not fit its format.
    IdOutOfRange {
        /// The identifier given.
        id: u32,
        /// The largest allowed for the format.
        max: u32,
    },
    /// More data than the format carries.
    DataTooLong {
        /// Bytes given.
        len: usize,
        /// Most allowed.
        max: usize,
    },
    /// A CAN FD payload length that no DLC encodes.
    InvalidFdLength {
        /// Bytes given.
        len: usize,
    },
    /// A DLC above 15.
    DlcOutOfRange {
        /// The DLC given.
        dlc: u8,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::IdOutOfRange { id, max } => write!(f, "CAN identifier {id:#x} out of range (at most {max:#x})"),
            FrameError::DataTooLong { len, max } => {
                write!(f, "{len} data bytes do not fit this frame format (at most {max})")
            }
            FrameError::InvalidFdLength { len } => {
                write!(f, "{len} bytes is not a CAN FD payload length (allowed: 0-8, 12, 16, 20, 24, 32, 48, 64)")
            }
            FrameError::DlcOutOfRange { dlc } => write!(f, "DLC {dlc} out of range (0-15)"),
        }
    }
}

impl std::error::Error for FrameError {}

/// A CAN identifier: standard (11 bits) or extended (29 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CanId {
    /// An 11-bit identifier.
    Standard(u16),
    /// A 29-bit identifier.
    Extended(u32),
}

impl CanId {
    /// A standard identifier (0..=0x7FF).
    pub fn standard(id: u16) -> Result<CanId, FrameError> {
        if u32::from(id) > STANDARD_ID_MAX {
            return Err(FrameError::IdOutOfRange { id: u32::from(id), max: STANDARD_ID_MAX });
        }
        Ok(CanId::Standard(id))
    }

    /// An extended identifier (0..=0x1FFF_FFFF).
    pub fn extended(id: u32) -> Result<CanId, FrameError> {
        if id > EXTENDED_ID_MAX {
            return Err(FrameError::IdOutOfRange { id, max: EXTENDED_ID_MAX });
        }
        Ok(CanId::Extended(id))
    }

    /// The identifier's value.
    pub fn raw(self) -> u32 {
        match self {
            CanId::Standard(id) => u32::from(id),
            CanId::Extended(id) => id,
        }
    }

    /// Whether this is a 29-bit identifier.
    pub fn is_extended(self) -> bool {
        matches!(self, CanId::Extended(_))
    }

    /// The identifier, if it fits its format (the variants can be built
    /// with any value).
    fn checked(self) -> Result<CanId, FrameError> {
        match self {
            CanId::Standard(id) => CanId::standard(id),
            CanId::Extended(id) => CanId::extended(id),
        }
    }
}

/// Payload length of a DLC: classic frames carry at most 8 bytes (DLC 9..15
/// mean 8), CAN FD frames follow the FD table.
pub fn dlc_to_len(dlc: u8, fd: bool) -> usize {
    let dlc = usize::from(dlc & 0xF);
    if fd {
        usize::from(FD_LENGTHS[dlc])
    } else {
        dlc.min(8)
    }
}

/// The smallest DLC whose FD length is exactly `len`, if any.
pub fn len_to_dlc(len: usize) -> Option<u8> {
    FD_LENGTHS.iter().position(|&l| usize::from(l) == len).map(|p| p as u8)
}

/// One CAN frame: a classic data or remote frame, or a CAN FD frame.
/// Small and `Copy`: the data buffer is inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    id: CanId,
    fd: bool,
    brs: bool,
    esi: bool,
    rtr: bool,
    dlc: u8,
    data: [u8; 64],
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Frame");
        d.field("id", &self.id).field("dlc", &self.dlc);
        if self.fd {
            d.field("fd", &true).field("brs", &self.brs).field("esi", &self.esi);
        }
        if self.rtr {
            d.field("rtr", &true);
        }
        d.field("data", &self.data()).finish()
    }
}

impl Frame {
    /// A classic (CAN 2.0) data frame with `data.len()` ≤ 8 bytes.
    pub fn new_classic(id: CanId, data: &[u8]) -> Result<Frame, FrameError> {
        let id = id.checked()?;
        if data.len() > 8 {
            return Err(FrameError::DataTooLong { len: data.len(), max: 8 });
        }
        let mut f = Frame { id, fd: false, brs: false, esi: false, rtr: false, dlc: data.len() as u8, data: [0; 64] };
        f.data[..data.len()].copy_from_slice(data);
        Ok(f)
    }

    /// A classic remote frame (RTR) with DLC `dlc` (0..=15) and no data.
    pub fn new_remote(id: CanId, dlc: u8) -> Result<Frame, FrameError> {
        let id = id.checked()?;
        if dlc > 15 {
            return Err(FrameError::DlcOutOfRange { dlc });
        }
        Ok(Frame { id, fd: false, brs: false, esi: false, rtr: true, dlc, data: [0; 64] })
    }

    /// A CAN FD frame; `data.len()` must be a length some DLC encodes
    /// (0..=8, 12, 16, 20, 24, 32, 48, 64). `brs` switches to the data bitrate.
    pub fn new_fd(id: CanId, data: &[u8], brs: bool) -> Result<Frame, FrameError> {
        let id = id.checked()?;
        let dlc = len_to_dlc(data.len()).ok_or(FrameError::InvalidFdLength { len: data.len() })?;
        let mut f = Frame { id, fd: true, brs, esi: false, rtr: false, dlc, data: [0; 64] };
        f.data[..data.len()].copy_from_slice(data);
        Ok(f)
    }

    /// A frame from the fields of a message object: any DLC 0..=15 (bits
    /// above are ignored, as are identifier bits above 11 or 29); `data` is
    /// truncated or zero-padded to the DLC's length. RTR is ignored for FD
    /// frames, BRS and ESI for classic ones.
    pub fn from_parts(id: CanId, fd: bool, brs: bool, esi: bool, rtr: bool, dlc: u8, data: &[u8]) -> Frame {
        let dlc = dlc & 0xF;
        let id = match id {
            CanId::Standard(i) => CanId::Standard(i & STANDARD_ID_MAX as u16),
            CanId::Extended(i) => CanId::Extended(i & EXTENDED_ID_MAX),
        };
        let mut f = Frame { id, fd, brs: fd && brs, esi: fd && esi, rtr: !fd && rtr, dlc, data: [0; 64] };
        let n = if f.rtr { 0 } else { dlc_to_len(dlc, fd).min(data.len()) };
        f.data[..n].copy_from_slice(&data[..n]);
        f
    }

    /// Sets the error state indicator of an FD frame (no effect on classic frames).
    #[must_use]
    pub fn with_esi(mut self, esi: bool) -> Frame {
        self.esi = self.fd && esi;
        self
    }

    /// Sets a classic data frame's DLC to 9..=15 (still 8 data bytes on the wire).
    pub fn with_classic_dlc(mut self, dlc: u8) -> Result<Frame, FrameError> {
        if dlc > 15 {
            return Err(FrameError::DlcOutOfRange { dlc });
        }
        if self.fd || dlc_to_len(dlc, false) != self.len() {
            return Err(FrameError::DlcOutOfRange { dlc });
        }
        self.dlc = dlc;
        Ok(self)
    }

    /// The identifier.
    pub fn id(&self) -> CanId {
        self.id
    }
    /// The data length code as sent.
    pub fn dlc(&self) -> u8 {
        self.dlc
    }
    /// Number of data bytes on the wire (0 for remote frames).
    pub fn len(&self) -> usize {
        if self.rtr {
            0
        } else {
            dlc_to_len(self.dlc, self.fd)
        }
    }
    /// Whether the frame carries no data bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The data bytes.
    pub fn data(&self) -> &[u8] {
        &self.data[..self.len()]
    }
    /// Whether this is a CAN FD frame.
    pub fn is_fd(&self) -> bool {
        self.fd
    }
    /// Bit rate switch (FD only).
    pub fn brs(&self) -> bool {
        self.brs
    }
    /// Error state indicator (FD only).
    pub fn esi(&self) -> bool {
        self.esi
    }
    /// Whether this is a remote frame (classic only).
    pub fn is_remote(&self) -> bool {
        self.rtr
    }

    /// The arbitration field as a number whose smaller values win
    /// arbitration: the bits up to and including IDE, left-aligned in 32 bits.
    pub(crate) fn arbitration_key(&self) -> u32 {
        // Standard: ID(11) RTR/RRS IDE=0; extended: ID_A(11) SRR=1 IDE=1 ID_B(18) RTR/RRS.
        let rtr = u32::from(self.rtr);
        match self.id {
            CanId::Standard(id) => (u32::from(id) << 21) | (rtr << 20),
            CanId::Extended(id) => {
                let a = id >> 18;
                let b = id & 0x3_FFFF;
                (a << 21) | (1 << 20) | (1 << 19) | (b << 1) | rtr
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_dlc_mapping_both_ways() {
        assert_eq!((0..16).map(|d| dlc_to_len(d, true)).collect::<Vec<_>>(), FD_LENGTHS.map(usize::from).to_vec());
        assert_eq!(dlc_to_len(15, false), 8);
        assert_eq!(len_to_dlc(12), Some(9));
        assert_eq!(len_to_dlc(64), Some(15));
        assert_eq!(len_to_dlc(9), None);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert_eq!(CanId::standard(0x800), Err(FrameError::IdOutOfRange { id: 0x800, max: 0x7FF }));
        assert!(CanId::extended(0x2000_0000).is_err());
        let id = CanId::standard(1).unwrap();
        assert_eq!(Frame::new_classic(id, &[0; 9]), Err(FrameError::DataTooLong { len: 9, max: 8 }));
        assert_eq!(Frame::new_fd(id, &[0; 13], true), Err(FrameError::InvalidFdLength { len: 13 }));
        assert!(Frame::new_remote(id, 16).is_err());
        assert!(FrameError::InvalidFdLength { len: 13 }.to_string().contains("13"));
    }

    #[test]
    fn frames_refuse_identifiers_their_format_cannot_carry() {
        let err = |id, max| Err(FrameError::IdOutOfRange { id, max });
        assert_eq!(Frame::new_classic(CanId::Standard(0x900), &[1]), err(0x900, STANDARD_ID_MAX));
        assert_eq!(Frame::new_remote(CanId::Standard(0x800), 0), err(0x800, STANDARD_ID_MAX));
        assert_eq!(Frame::new_fd(CanId::Extended(0x2000_0000), &[], false), err(0x2000_0000, EXTENDED_ID_MAX));
        assert!(Frame::new_classic(CanId::Standard(0x7FF), &[]).is_ok());
        assert!(Frame::new_fd(CanId::Extended(EXTENDED_ID_MAX), &[], true).is_ok());
        let f = Frame::from_parts(CanId::Standard(0x900), false, false, false, false, 0, &[]);
        assert_eq!(f.id(), CanId::Standard(0x100), "a message object's fields: bits above 11 ignored");
    }

    #[test]
    fn arbitration_key_orders_like_the_bus() {
        let s = |id| Frame::new_classic(CanId::Standard(id), &[]).unwrap().arbitration_key();
        let r = |id| Frame::new_remote(CanId::Standard(id), 0).unwrap().arbitration_key();
        let e = |id| Frame::new_classic(CanId::Extended(id), &[]).unwrap().arbitration_key();
        assert!(s(0x100) < s(0x101));
        assert!(s(0x100) < r(0x100), "data beats remote");
        assert!(r(0x100) < e(0x100 << 18), "standard remote beats extended with the same base ID");
        assert!(e(0x0FF << 18 | 0x3FFFF) < s(0x100));
    }
}
