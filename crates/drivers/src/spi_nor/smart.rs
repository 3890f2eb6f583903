//! Smart write: read, compare per sector, erase and program only what
//! differs, verify what was written.

use super::error::{Error, Op};
use super::geometry::{EraseType, ProgramKind};
use super::{SpiNor, MAX_READ_PIECE};
use wirespeed::spi::Transfer;
use wirespeed::time::now;

/// Bytes programmed per step when the part has no pages (SST byte/AAI parts).
const SST_CHUNK: usize = 256;

/// The phase a [`Progress`] report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading the chip's current content to compare.
    Read,
    /// Erasing sectors and blocks.
    Erase,
    /// Programming pages.
    Program,
    /// Reading back what was written.
    Verify,
}

/// One progress report of [`SpiNor::write`]: `done` of `total` bytes of
/// `phase` (erase: bytes erased; program: bytes of the pages programmed).
/// Each phase starts with `done == 0` and ends with `done == total` (a
/// phase with nothing to do reports `0 / 0` once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Bytes done in this phase.
    pub done: u64,
    /// Bytes this phase has to do.
    pub total: u64,
}

/// Erases of one size made by a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraseCount {
    /// Bytes per erase.
    pub size: u32,
    /// Erase commands of this size.
    pub count: u64,
}

/// What [`SpiNor::write`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Smallest-erase-size sectors already holding the wanted bytes.
    pub sectors_skipped: u64,
    /// Sectors that differed but needed only 1→0 changes: programmed, not erased.
    pub sectors_program_only: u64,
    /// Sectors that needed an erase.
    pub sectors_erased: u64,
    /// Erase commands by size, one entry per erase type of the part, smallest first.
    pub erases_by_size: Vec<EraseCount>,
    /// Pages programmed (SST parts: 256-byte chunks).
    pub pages_programmed: u64,
    /// Bytes read to compare (the range rounded out to whole sectors).
    pub bytes_read: u64,
    /// Bytes read back and compared after writing (the sectors erased or programmed).
    pub bytes_verified: u64,
    /// WIP polls made while waiting for page programs.
    pub program_status_polls: u64,
    /// WIP polls made while waiting for erases.
    pub erase_status_polls: u64,
    /// Chip-select windows (commands) sent, counted by the driver (page parts;
    /// write enables and status polls included).
    pub commands: u64,
}

impl WriteReport {
    /// All erase commands.
    pub fn erases(&self) -> u64 {
        self.erases_by_size.iter().map(|e| e.count).sum()
    }
}

/// What one sector needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Nothing,
    Program,
    Erase,
}

fn need(old: &[u8], new: &[u8]) -> Need {
    if old == new {
        Need::Nothing
    } else if old.iter().zip(new).all(|(o, n)| n & !o == 0) {
        Need::Program
    } else {
        Need::Erase
    }
}

/// The erases for the sectors flagged in `erase` (sector `i` at `base + i
/// * sector`): at each flagged sector, the largest erase type aligned there
/// whose every sector is flagged. Returns `(address, type)` in address order.
pub(crate) fn plan_erases(types: &[EraseType], base: u32, sector: u32, erase: &[bool]) -> Vec<(u32, EraseType)> {
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < erase.len() {
        if !erase[i] {
            i += 1;
            continue;
        }
        let a = base + i as u32 * sector;
        let e = types
            .iter()
            .rev()
            .find(|e| {
                let n = (e.size / sector) as usize;
                a.is_multiple_of(e.size) && i + n <= erase.len() && erase[i..i + n].iter().all(|&x| x)
            })
            .copied()
            .unwrap_or(types[0]);
        out.push((a, e));
        i += (e.size / sector).max(1) as usize;
    }
    out
}

/// Merges `[start, end)` ranges given in address order into contiguous runs.
fn runs(ranges: impl IntoIterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

impl SpiNor {
    /// Writes `data` at `addr` with as little erasing and programming as
    /// the chip's current content allows, then verifies:
    ///
    /// 1. **Read** the range rounded out to whole sectors of the smallest
    ///    erase size (pieces of up to [`MAX_READ_PIECE`] bytes). Bytes of
    ///    those sectors outside the range keep their current value
    ///    (read-modify-write).
    /// 2. **Compare** per sector: equal sectors are skipped; a sector whose
    ///    new content only clears bits (`new & !old == 0`) is programmed
    ///    without erasing (only the pages that differ); any other sector
    ///    is erased.
    /// 3. **Erase**: at each sector to erase, the largest erase type aligned
    ///    there whose sectors all need erasing (a whole 64 KiB block: one
    ///    block erase; otherwise 32 KiB or 4 KiB).
    /// 4. **Program**: in erased sectors the pages not all `0xFF`; in
    ///    program-only sectors the pages that differ.
    /// 5. **Verify**: the sectors erased or programmed are read back and
    ///    compared ([`Error::VerifyFailed`] with the first differing address).
    ///
    /// The block protection is checked once, before anything is changed
    /// ([`Error::Protected`]). `progress` is called at each phase's start
    /// and end and after each read piece, erase and page.
    pub fn write(&mut self, addr: u32, data: &[u8], progress: &mut dyn FnMut(Progress)) -> Result<WriteReport, Error> {
        self.check_range(addr, data.len() as u64)?;
        let mut report = WriteReport {
            erases_by_size: self.geometry.erase.iter().map(|e| EraseCount { size: e.size, count: 0 }).collect(),
            ..WriteReport::default()
        };
        if data.is_empty() {
            return Ok(report);
        }
        let Some(&smallest) = self.geometry.erase.first() else {
            return Err(Error::Unsupported { what: "write without an erase command" });
        };
        let sector = smallest.size;
        let start = addr - addr % sector;
        let end64 = (u64::from(addr) + data.len() as u64).div_ceil(u64::from(sector)) * u64::from(sector);
        let end64 = end64.min(u64::from(self.geometry.size));
        let span = (end64 - u64::from(start)) as usize;
        let stats0 = self.stats;
        self.check_unprotected(start, span as u32)?;
        let mut commands = 1u64;

        // 1. Read.
        let mut old = vec![0u8; span];
        progress(Progress { phase: Phase::Read, done: 0, total: span as u64 });
        let mut off = 0usize;
        while off < span {
            let n = (span - off).min(MAX_READ_PIECE);
            self.read(start + off as u32, &mut old[off..off + n])?;
            off += n;
            progress(Progress { phase: Phase::Read, done: off as u64, total: span as u64 });
        }
        report.bytes_read = span as u64;
        let mut new = old.clone();
        let rel = (addr - start) as usize;
        new[rel..rel + data.len()].copy_from_slice(data);

        // 2. Compare.
        let sec = sector as usize;
        let needs: Vec<Need> = old.chunks(sec).zip(new.chunks(sec)).map(|(o, n)| need(o, n)).collect();
        for n in &needs {
            match n {
                Need::Nothing => report.sectors_skipped += 1,
                Need::Program => report.sectors_program_only += 1,
                Need::Erase => report.sectors_erased += 1,
            }
        }
        let erase_flags: Vec<bool> = needs.iter().map(|n| *n == Need::Erase).collect();

        // 3. Erase.
        let plan = plan_erases(&self.geometry.erase, start, sector, &erase_flags);
        let erase_total: u64 = plan.iter().map(|(_, e)| u64::from(e.size)).sum();
        let mut erased = 0u64;
        progress(Progress { phase: Phase::Erase, done: 0, total: erase_total });
        let polls0 = self.stats.status_polls;
        for &(a, e) in &plan {
            self.erase_one(a, e)?;
            if let Some(c) = report.erases_by_size.iter_mut().find(|c| c.size == e.size) {
                c.count += 1;
            }
            erased += u64::from(e.size);
            progress(Progress { phase: Phase::Erase, done: erased, total: erase_total });
        }
        report.erase_status_polls = self.stats.status_polls - polls0;
        for (i, &f) in erase_flags.iter().enumerate() {
            if f {
                old[i * sec..(i + 1) * sec].fill(0xFF);
            }
        }

        // 4. Program: pages (or SST chunks) where the chip now differs from `new`.
        let unit = match self.geometry.program {
            ProgramKind::Page => self.geometry.page_size.max(1) as usize,
            ProgramKind::ByteAndAai => SST_CHUNK,
        };
        let mut pages: Vec<(u32, u32)> = Vec::new();
        for (i, n) in needs.iter().enumerate() {
            if *n == Need::Nothing {
                continue;
            }
            let s = i * sec;
            let mut p = s;
            while p < s + sec {
                let q = (p + unit - (start as usize + p) % unit).min(s + sec);
                if old[p..q] != new[p..q] {
                    pages.push((start + p as u32, start + q as u32));
                }
                p = q;
            }
        }
        report.pages_programmed = pages.len() as u64;
        let prog_total: u64 = pages.iter().map(|(s, e)| u64::from(e - s)).sum();
        let mut programmed = 0u64;
        progress(Progress { phase: Phase::Program, done: 0, total: prog_total });
        let polls0 = self.stats.status_polls;
        for &(s, e) in &pages {
            let bytes = &new[(s - start) as usize..(e - start) as usize];
            match self.geometry.program {
                ProgramKind::Page => self.program_page(s, bytes)?,
                ProgramKind::ByteAndAai => self.program(s, bytes)?,
            }
            programmed += u64::from(e - s);
            progress(Progress { phase: Phase::Program, done: programmed, total: prog_total });
        }
        report.program_status_polls = self.stats.status_polls - polls0;

        // 5. Verify the sectors touched.
        let touched = runs(
            needs
                .iter()
                .enumerate()
                .filter(|(_, n)| **n != Need::Nothing)
                .map(|(i, _)| (start + (i * sec) as u32, start + ((i + 1) * sec) as u32)),
        );
        let verify_total: u64 = touched.iter().map(|(s, e)| u64::from(e - s)).sum();
        let mut verified = 0u64;
        progress(Progress { phase: Phase::Verify, done: 0, total: verify_total });
        let mut buf = vec![0u8; MAX_READ_PIECE.min(verify_total as usize)];
        for &(s, e) in &touched {
            let mut a = s;
            while a < e {
                let n = ((e - a) as usize).min(MAX_READ_PIECE);
                self.read(a, &mut buf[..n])?;
                let want = &new[(a - start) as usize..(a - start) as usize + n];
                if let Some(k) = buf[..n].iter().zip(want).position(|(g, w)| g != w) {
                    return Err(Error::VerifyFailed { addr: a + k as u32 });
                }
                a += n as u32;
                verified += n as u64;
                progress(Progress { phase: Phase::Verify, done: verified, total: verify_total });
            }
        }
        report.bytes_verified = verified;

        let d = |a: u64, b: u64| a - b;
        commands += d(self.stats.read_messages, stats0.read_messages)
            + 2 * d(self.stats.erase_commands, stats0.erase_commands)
            + 2 * d(self.stats.program_commands, stats0.program_commands)
            + d(self.stats.status_polls, stats0.status_polls);
        report.commands = commands;
        Ok(report)
    }

    /// One erase command of type `e` at `a` (`06` then the erase), then the WIP wait.
    fn erase_one(&mut self, a: u32, e: EraseType) -> Result<(), Error> {
        let failed = |x: Error| Error::EraseFailed { addr: a, source: Box::new(x) };
        let (cmd, l) = self.cmd(e.opcode, a);
        self.dev
            .sync(&mut [Transfer::write(&[0x06]).cs_change(None), Transfer::write(&cmd[..l])])
            .map_err(|x| failed(x.into()))?;
        self.stats.erase_commands += 1;
        self.wait_ready(e.time, now(), Op::Erase, a).map_err(failed)
    }

    /// One page program (`06` then `02`, `bytes` inside one page), then the WIP wait.
    fn program_page(&mut self, a: u32, bytes: &[u8]) -> Result<(), Error> {
        let failed = |x: Error| Error::ProgramFailed { addr: a, source: Box::new(x) };
        let (cmd, l) = self.cmd(0x02, a);
        self.dev
            .sync(&mut [Transfer::write(&[0x06]).cs_change(None), Transfer::write(&cmd[..l]), Transfer::write(bytes)])
            .map_err(|x| failed(x.into()))?;
        self.stats.program_commands += 1;
        self.wait_ready(self.geometry.page_program, now(), Op::Program, a).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed::backend::lab::LabSpi;
    use wirespeed::spi::{Bus, DeviceConfig, Policy};
    use wirespeed_lab::devices::spi_nor::W25Q128JV;
    use wirespeed_lab::devices::{SpiNor as NorModel, SpiNorOptions};
    use wirespeed_lab::{Lab, LabConfig};

    const SCALE: f64 = 0.001;
    const SECTOR: usize = 4096;

    struct Rig {
        _lab: Lab,
        chip: NorModel,
        f: SpiNor,
    }

    fn rig(scale: f64) -> Rig {
        let lab = Lab::new(LabConfig::default());
        let block = lab.spi_controller(Default::default());
        let chip = NorModel::with_options(&W25Q128JV, SpiNorOptions { time_scale: scale, random_times_seed: None });
        block.attach(0, chip.clone());
        let bus = Bus::new(LabSpi::new(block), Policy::fast());
        let dev = bus.device(DeviceConfig::new(0, 50_000_000)).unwrap();
        let mut f = SpiNor::probe(dev).unwrap();
        f.set_time_scale(scale);
        Rig { _lab: lab, chip, f }
    }

    fn random(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 24) as u8
            })
            .collect()
    }

    fn count(r: &WriteReport, size: u32) -> u64 {
        r.erases_by_size.iter().find(|e| e.size == size).map_or(0, |e| e.count)
    }

    #[test]
    fn plan_uses_whole_blocks_only() {
        let t = crate::spi_nor::OpTime { typ_ns: 0, max_ns: 0 };
        let types = [
            EraseType { size: 4096, opcode: 0x20, time: t },
            EraseType { size: 32768, opcode: 0x52, time: t },
            EraseType { size: 65536, opcode: 0xD8, time: t },
        ];
        // 24 sectors from 0x8000: a whole 32K block, then one sector.
        let mut flags = vec![false; 24];
        flags[..8].iter_mut().for_each(|f| *f = true); // 0x8000..0x10000: one 32K block
        flags[8 + 3] = true; // 0x13000: a sector
        let ops: Vec<(u32, u32)> =
            plan_erases(&types, 0x8000, 4096, &flags).iter().map(|(a, e)| (*a, e.size)).collect();
        assert_eq!(ops, [(0x8000, 32768), (0x13000, 4096)]);
        let all = vec![true; 32];
        let ops: Vec<u32> = plan_erases(&types, 0, 4096, &all).iter().map(|(_, e)| e.size).collect();
        assert_eq!(ops, [65536, 65536]);
    }

    #[test]
    fn full_write_onto_random_content() {
        let mut r = rig(SCALE);
        let len = 128 * 1024;
        r.chip.poke(0, &random(len, 1));
        let image = random(len, 2);
        let mut phases = Vec::new();
        let rep =
            r.f.write(0, &image, &mut |p| {
                if phases.last() != Some(&p.phase) {
                    phases.push(p.phase);
                }
                assert!(p.done <= p.total);
            })
            .unwrap();
        assert_eq!(phases, [Phase::Read, Phase::Erase, Phase::Program, Phase::Verify]);
        assert_eq!(r.chip.peek(0, len), image);
        assert_eq!((rep.sectors_skipped, rep.sectors_erased), (0, 32));
        assert_eq!((count(&rep, 65536), count(&rep, 32768), count(&rep, 4096)), (2, 0, 0));
        assert_eq!(rep.pages_programmed, 512);
        assert_eq!(rep.bytes_verified, len as u64);
        // Writing the same again changes nothing.
        let again = r.f.write(0, &image, &mut |_| {}).unwrap();
        assert_eq!((again.sectors_skipped, again.erases(), again.pages_programmed), (32, 0, 0));
    }

    #[test]
    fn only_the_differing_sectors_are_erased_and_programmed() {
        let mut r = rig(SCALE);
        let len = 256 * 1024;
        let old = random(len, 3);
        r.chip.poke(0x10000, &old);
        let mut image = old.clone();
        let changed = [3usize, 17, 18, 40, 63, 9];
        for (k, &s) in changed.iter().enumerate() {
            image[s * SECTOR..(s + 1) * SECTOR].copy_from_slice(&random(SECTOR, 10 + k as u64));
        }
        // One page of sector 9 left as it was, one page all 0xFF: neither is programmed.
        image[9 * SECTOR..9 * SECTOR + 256].copy_from_slice(&old[9 * SECTOR..9 * SECTOR + 256]);
        image[9 * SECTOR + 256..9 * SECTOR + 512].fill(0xFF);
        let rep = r.f.write(0x10000, &image, &mut |_| {}).unwrap();
        assert_eq!(r.chip.peek(0x10000, len), image);
        assert_eq!((rep.sectors_skipped, rep.sectors_erased, rep.sectors_program_only), (58, 6, 0));
        assert_eq!((count(&rep, 4096), rep.erases()), (6, 6));
        // Sector 9: its unchanged page was erased, so it is programmed again; the 0xFF one is not.
        assert_eq!(rep.pages_programmed, 6 * 16 - 1);
        assert_eq!(rep.bytes_verified, 6 * SECTOR as u64);
    }

    #[test]
    fn clearing_bits_only_programs_without_erasing() {
        let mut r = rig(SCALE);
        let len = 64 * 1024;
        let mut old = random(len, 4);
        old[5000] = 0xFF;
        old[40_000] = 0xA5;
        r.chip.poke(0, &old);
        let mut image = old.clone();
        image[5000] &= 0x0F;
        image[5001] = 0;
        image[40_000] &= 0xFE;
        let rep = r.f.write(0, &image, &mut |_| {}).unwrap();
        assert_eq!(r.chip.peek(0, len), image);
        assert_eq!((rep.erases(), rep.sectors_program_only, rep.pages_programmed), (0, 2, 2));
        assert_eq!(r.f.stats().erase_commands, 0);
    }

    #[test]
    fn unaligned_range_keeps_its_neighbours() {
        let mut r = rig(SCALE);
        let old = random(0x4000, 5);
        r.chip.poke(0, &old);
        let data = random(5000, 6);
        let rep = r.f.write(0x1234, &data, &mut |_| {}).unwrap();
        let mut want = old.clone();
        want[0x1234..0x1234 + 5000].copy_from_slice(&data);
        assert_eq!(r.chip.peek(0, 0x4000), want);
        assert_eq!((rep.bytes_read, rep.sectors_erased), (2 * SECTOR as u64, 2));
        // Out of range is refused before anything is sent.
        let size = r.f.geometry().size;
        assert!(matches!(r.f.write(size - 10, &data, &mut |_| {}), Err(Error::OutOfRange { .. })));
    }

    #[test]
    fn power_cut_during_write_is_caught_by_verify_and_a_second_write_completes() {
        let scale = 0.01; // sector erase 450 µs, 64K block 1.5 ms
        let mut r = rig(scale);
        let len = 128 * 1024;
        r.chip.poke(0, &random(len, 7));
        let image = random(len, 8);
        let chip = r.chip.clone();
        let f = &mut r.f;
        let res = std::thread::scope(|s| {
            let w = s.spawn(|| f.write(0, &image, &mut |_| {}));
            // Cut the power in the middle of an erase (at least 100 µs of it left).
            let limit = now().add_ns(5_000_000_000);
            loop {
                assert!(now() < limit, "no erase seen");
                if let Some((_, due)) = chip.busy_window() {
                    let n = now();
                    if due > n && due.ns_since(n) > 100_000 {
                        chip.power_cut(n);
                        break;
                    }
                }
                std::hint::spin_loop();
            }
            w.join().unwrap()
        });
        assert!(matches!(res, Err(Error::VerifyFailed { .. })), "{res:?}");
        assert_ne!(r.chip.peek(0, len), image);
        let rep = r.f.write(0, &image, &mut |_| {}).unwrap();
        assert_eq!(r.chip.peek(0, len), image);
        assert!(rep.sectors_erased >= 1);
    }
}
