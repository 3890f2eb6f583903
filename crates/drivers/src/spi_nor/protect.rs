//! Block protection: status register 1's BP bits.

use super::error::{Error, Op};
use super::SpiNor;
use wirespeed::spi::Transfer;
use wirespeed::time::now;

/// The layout assumed for parts not in the table: BP2..BP0 at bits 4:2,
/// any non-zero value taken as protecting the whole array.
const FALLBACK_BP_MASK: u8 = 0x1C;

/// What the BP bits protect now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protection {
    /// Status register 1.
    pub sr1: u8,
    /// The BP field.
    pub bp: u8,
    /// The protected byte range `[start, end)` (empty: nothing protected).
    pub range: (u32, u32),
    /// Whether `range` comes from the part's table row (`false`: the
    /// fallback, where any BP value protects everything).
    pub layout_known: bool,
}

impl Protection {
    /// Whether any byte is protected.
    pub fn any(&self) -> bool {
        self.range.1 > self.range.0
    }
}

impl SpiNor {
    /// Status register 1 (`05`, not counted as a WIP poll).
    pub fn read_status(&mut self) -> Result<u8, Error> {
        let mut sr = [0u8; 1];
        self.dev.sync(&mut [Transfer::write(&[0x05]), Transfer::read(&mut sr)])?;
        Ok(sr[0])
    }

    fn protection_of(&self, sr1: u8) -> Protection {
        let size = self.geometry.size;
        match self.protect {
            Some(p) => Protection { sr1, bp: p.bp(sr1), range: p.range(sr1, size), layout_known: true },
            None => {
                let bp = (sr1 & FALLBACK_BP_MASK) >> 2;
                Protection { sr1, bp, range: if bp == 0 { (0, 0) } else { (0, size) }, layout_known: false }
            }
        }
    }

    /// Reads status register 1 and decodes the BP bits.
    pub fn protection(&mut self) -> Result<Protection, Error> {
        let sr1 = self.read_status()?;
        Ok(self.protection_of(sr1))
    }

    /// [`Error::Protected`] with the first protected address if the BP
    /// bits cover any of `len` bytes from `addr`.
    pub(super) fn check_unprotected(&mut self, addr: u32, len: u32) -> Result<(), Error> {
        let (start, end) = self.protection()?.range;
        let req_end = u64::from(addr) + u64::from(len);
        if start < end && u64::from(start) < req_end && addr < end {
            return Err(Error::Protected { addr: addr.max(start) });
        }
        Ok(())
    }

    /// Clears the block protection: `06` (SST: `50`) then `01 00`, waits
    /// the status write time, and checks the BP bits read back as 0
    /// ([`Error::StatusWriteRefused`] otherwise, e.g. WP# low with the
    /// status register protect bit set).
    pub fn unprotect(&mut self) -> Result<(), Error> {
        let enable = if self.ewsr { 0x50 } else { 0x06 };
        self.dev.sync(&mut [Transfer::write(&[enable]).cs_change(None), Transfer::write(&[0x01, 0x00])])?;
        self.wait_ready(self.geometry.write_status, now(), Op::WriteStatus, 0)?;
        let p = self.protection()?;
        if p.bp != 0 {
            return Err(Error::StatusWriteRefused { wrote: 0, read: p.sr1 });
        }
        Ok(())
    }
}
