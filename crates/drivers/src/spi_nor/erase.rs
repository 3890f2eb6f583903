//! Erasing: the largest erase type that fits each aligned step, or the whole chip.

use super::error::{Error, Op};
use super::geometry::EraseType;
use super::SpiNor;
use wirespeed::spi::Transfer;
use wirespeed::time::now;

/// The largest of `types` aligned at `addr` and no longer than `left`
/// (`None` if not even the smallest fits).
pub(crate) fn largest_fitting(types: &[EraseType], addr: u32, left: u64) -> Option<EraseType> {
    types.iter().rev().find(|e| addr.is_multiple_of(e.size) && u64::from(e.size) <= left).copied()
}

fn failed(addr: u32) -> impl Fn(Error) -> Error {
    move |e| Error::EraseFailed { addr, source: Box::new(e) }
}

impl SpiNor {
    /// Erases `len` bytes from `addr`; both must be multiples of the
    /// smallest erase size ([`Error::Unaligned`]). Each step uses the
    /// largest erase type aligned there that fits what is left. Fails with
    /// [`Error::Protected`] before sending anything if the BP bits cover
    /// the range; a bus error or a timeout comes back as
    /// [`Error::EraseFailed`] with the block's address.
    pub fn erase(&mut self, addr: u32, len: u32) -> Result<(), Error> {
        self.check_range(addr, u64::from(len))?;
        if len == 0 {
            return Ok(());
        }
        let granularity = self.geometry.erase.first().map_or(1, |e| e.size);
        if !addr.is_multiple_of(granularity) || !len.is_multiple_of(granularity) {
            return Err(Error::Unaligned { addr, len, granularity });
        }
        self.check_unprotected(addr, len)?;
        let end = u64::from(addr) + u64::from(len);
        let mut a = addr;
        while u64::from(a) < end {
            let Some(e) = largest_fitting(&self.geometry.erase, a, end - u64::from(a)) else {
                return Err(Error::Unaligned { addr, len, granularity });
            };
            let (cmd, l) = self.cmd(e.opcode, a);
            self.dev
                .sync(&mut [Transfer::write(&[0x06]).cs_change(None), Transfer::write(&cmd[..l])])
                .map_err(|x| failed(a)(x.into()))?;
            self.stats.erase_commands += 1;
            self.wait_ready(e.time, now(), Op::Erase, a).map_err(failed(a))?;
            a = a.wrapping_add(e.size);
            if a == 0 {
                break; // erased up to the end of a 4 GiB array
            }
        }
        Ok(())
    }

    /// Erases the whole array (`C7`). Fails with [`Error::Protected`]
    /// before sending it if any block is protected.
    pub fn chip_erase(&mut self) -> Result<(), Error> {
        self.check_unprotected(0, self.geometry.size)?;
        self.dev
            .sync(&mut [Transfer::write(&[0x06]).cs_change(None), Transfer::write(&[0xC7])])
            .map_err(|x| failed(0)(x.into()))?;
        self.stats.erase_commands += 1;
        self.wait_ready(self.geometry.chip_erase, now(), Op::ChipErase, 0).map_err(failed(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi_nor::OpTime;

    #[test]
    fn picks_the_largest_aligned_type() {
        let t = OpTime { typ_ns: 0, max_ns: 0 };
        let types = [
            EraseType { size: 4096, opcode: 0x20, time: t },
            EraseType { size: 32768, opcode: 0x52, time: t },
            EraseType { size: 65536, opcode: 0xD8, time: t },
        ];
        let mut a = 0x7000u32;
        let end = 0x31000u64;
        let mut ops = Vec::new();
        while u64::from(a) < end {
            let e = largest_fitting(&types, a, end - u64::from(a)).unwrap();
            ops.push(e.opcode);
            a += e.size;
        }
        assert_eq!(ops, [0x20, 0x52, 0xD8, 0xD8, 0x20]);
        assert_eq!(largest_fitting(&types, 0x800, 0x1000), None);
    }
}
