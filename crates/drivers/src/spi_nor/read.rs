//! Reading and verifying.

use super::error::Error;
use super::SpiNor;
use wirespeed::spi::{InvalidMessage, SpiError, Transfer};

/// Bytes compared per read by [`SpiNor::verify`].
const VERIFY_CHUNK: usize = 4096;

impl SpiNor {
    /// Reads `buf.len()` bytes from `addr`: `03`, one message per piece
    /// of at most [`MAX_READ_PIECE`](super::MAX_READ_PIECE) bytes (fewer
    /// if the backend's message limit is smaller).
    pub fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.check_range(addr, buf.len() as u64)?;
        let mut off = 0;
        while off < buf.len() {
            let n = (buf.len() - off).min(self.read_piece);
            let (cmd, l) = self.cmd(0x03, addr + off as u32);
            match self.dev.sync(&mut [Transfer::write(&cmd[..l]), Transfer::read(&mut buf[off..off + n])]) {
                Ok(()) => {}
                Err(SpiError::Invalid(InvalidMessage::MessageTooLarge { limit, .. }))
                    if limit > l && limit - l < self.read_piece =>
                {
                    self.read_piece = limit - l;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            self.stats.read_messages += 1;
            off += n;
        }
        Ok(())
    }

    /// Reads back `data.len()` bytes from `addr` and compares: the offset
    /// (from `addr`) of the first byte that differs, `None` if all match.
    pub fn verify(&mut self, addr: u32, data: &[u8]) -> Result<Option<usize>, Error> {
        self.check_range(addr, data.len() as u64)?;
        let mut buf = vec![0u8; data.len().min(VERIFY_CHUNK)];
        for (i, want) in data.chunks(VERIFY_CHUNK).enumerate() {
            let got = &mut buf[..want.len()];
            self.read(addr + (i * VERIFY_CHUNK) as u32, got)?;
            if let Some(k) = got.iter().zip(want).position(|(g, w)| g != w) {
                return Ok(Some(i * VERIFY_CHUNK + k));
            }
        }
        Ok(None)
    }
}
