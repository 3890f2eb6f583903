//! Programming: page program, or SST byte program and AAI word program.

use super::error::{Error, Op};
use super::geometry::ProgramKind;
use super::SpiNor;
use wirespeed::spi::Transfer;
use wirespeed::time::now;

const WREN: [u8; 1] = [0x06];
const WRDI: [u8; 1] = [0x04];

fn failed(addr: u32) -> impl Fn(Error) -> Error {
    move |e| Error::ProgramFailed { addr, source: Box::new(e) }
}

impl SpiNor {
    /// Programs `data` at `addr` (bits only go from 1 to 0: erase first).
    /// Fails with [`Error::Protected`] before sending anything if the BP
    /// bits cover the range; a bus error or a timeout during a page comes
    /// back as [`Error::ProgramFailed`] with that page's address.
    pub fn program(&mut self, addr: u32, data: &[u8]) -> Result<(), Error> {
        self.check_range(addr, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        self.check_unprotected(addr, data.len() as u32)?;
        match self.geometry.program {
            ProgramKind::Page => self.program_pages(addr, data),
            ProgramKind::ByteAndAai => self.program_sst(addr, data),
        }
    }

    fn program_pages(&mut self, addr: u32, data: &[u8]) -> Result<(), Error> {
        let page = self.geometry.page_size.max(1);
        let mut off = 0usize;
        while off < data.len() {
            let a = addr + off as u32;
            let n = ((page - a % page) as usize).min(data.len() - off);
            let (cmd, l) = self.cmd(0x02, a);
            self.dev
                .sync(&mut [
                    Transfer::write(&WREN).cs_change(None),
                    Transfer::write(&cmd[..l]),
                    Transfer::write(&data[off..off + n]),
                ])
                .map_err(|e| failed(a)(e.into()))?;
            self.stats.program_commands += 1;
            self.wait_ready(self.geometry.page_program, now(), Op::Program, a).map_err(failed(a))?;
            off += n;
        }
        Ok(())
    }

    fn program_sst(&mut self, addr: u32, data: &[u8]) -> Result<(), Error> {
        let mut i = 0usize;
        while i < data.len() {
            let a = addr + i as u32;
            if a % 2 == 1 || data.len() - i == 1 {
                let (cmd, l) = self.cmd(0x02, a);
                self.dev
                    .sync(&mut [
                        Transfer::write(&WREN).cs_change(None),
                        Transfer::write(&cmd[..l]),
                        Transfer::write(&data[i..i + 1]),
                    ])
                    .map_err(|e| failed(a)(e.into()))?;
                self.stats.program_commands += 1;
                self.wait_ready(self.geometry.page_program, now(), Op::Program, a).map_err(failed(a))?;
                i += 1;
                continue;
            }
            let words = (data.len() - i) / 2;
            let r = self.aai_run(a, &data[i..i + 2 * words]);
            // End AAI mode whatever happened (best effort after an error).
            let end = self.dev.sync(&mut [Transfer::write(&WRDI)]);
            r?;
            end.map_err(|e| failed(a)(e.into()))?;
            i += 2 * words;
        }
        Ok(())
    }

    /// AAI word program of `data` (even length) from the even address `addr`.
    fn aai_run(&mut self, addr: u32, data: &[u8]) -> Result<(), Error> {
        for (k, w) in data.chunks_exact(2).enumerate() {
            let a = addr + 2 * k as u32;
            let r = if k == 0 {
                let (cmd, l) = self.cmd(0xAD, a);
                self.dev.sync(&mut [
                    Transfer::write(&WREN).cs_change(None),
                    Transfer::write(&cmd[..l]),
                    Transfer::write(w),
                ])
            } else {
                self.dev.sync(&mut [Transfer::write(&[0xAD, w[0], w[1]])])
            };
            r.map_err(|e| failed(a)(e.into()))?;
            self.stats.program_commands += 1;
            self.wait_ready(self.geometry.page_program, now(), Op::Program, a).map_err(failed(a))?;
        }
        Ok(())
    }
}
