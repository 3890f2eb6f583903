//! The work of `wirespeed flash`: opening the target, each operation in
//! sector-sized steps (progress bars, Ctrl-C between steps).

use crate::flash_cmd::Range;
use crate::flash_error::{driver, FlashError};
use crate::flash_target::{open_probe, Target};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirespeed_drivers::spi_nor::{Error as NorError, Phase, Progress, SpiNor, WriteReport};
use wirespeed_lab::Lab;

/// Bytes per read step.
const READ_STEP: usize = 64 * 1024;

/// An opened, probed flash.
pub struct Flash {
    /// The driver.
    pub nor: SpiNor,
    _lab: Option<Lab>,
    show: bool,
}

/// What a write did: the driver's reports, summed over the windows.
#[derive(Debug, Default)]
pub struct Report {
    pub offset: u64,
    pub bytes: u64,
    pub sectors_skipped: u64,
    pub sectors_program_only: u64,
    pub sectors_erased: u64,
    /// (erase size, commands), smallest first.
    pub erases_by_size: Vec<(u32, u64)>,
    pub pages_programmed: u64,
    pub bytes_read: u64,
    pub bytes_verified: u64,
    pub commands: u64,
    pub verified: bool,
    pub unprotected: bool,
}

impl Report {
    fn add(&mut self, w: &WriteReport) {
        self.sectors_skipped += w.sectors_skipped;
        self.sectors_program_only += w.sectors_program_only;
        self.sectors_erased += w.sectors_erased;
        for e in &w.erases_by_size {
            match self.erases_by_size.iter_mut().find(|(s, _)| *s == e.size) {
                Some((_, c)) => *c += e.count,
                None => self.erases_by_size.push((e.size, e.count)),
            }
        }
        self.pages_programmed += w.pages_programmed;
        self.bytes_read += w.bytes_read;
        self.bytes_verified += w.bytes_verified;
        self.commands += w.commands;
    }

    /// All erase commands.
    pub fn erases(&self) -> u64 {
        self.erases_by_size.iter().map(|(_, c)| c).sum()
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// From now on, the first Ctrl-C sets [`STOP`] (a second one kills as usual).
fn catch_sigint() {
    // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
}

fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Bytes with a binary unit: "4.0 KiB".
pub fn human(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut v = n;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, FlashError> {
    std::fs::read(path).map_err(|error| FlashError::NoFile { path: path.to_owned(), error })
}

impl Flash {
    /// Opens `target` and probes the chip on it.
    pub fn open(target: &Target, show: bool) -> Result<Flash, FlashError> {
        let (nor, lab) = open_probe(target)?;
        Ok(Flash { nor, _lab: lab, show })
    }

    fn size(&self) -> u64 {
        u64::from(self.nor.geometry().size)
    }

    fn bar(&self, what: &str, len: u64) -> ProgressBar {
        let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        if self.show {
            pb.set_draw_target(ProgressDrawTarget::stderr());
        }
        let style = ProgressStyle::with_template(
            "{msg:8} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} ({elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        pb.set_style(style);
        pb.set_message(what.to_owned());
        pb
    }

    /// Resolves the range against the chip (default: from 0 to the end).
    fn chip_range(&self, r: Range) -> Result<(u64, u64), FlashError> {
        let size = self.size();
        let off = r.offset.unwrap_or(0);
        let len = r.length.unwrap_or(size.saturating_sub(off));
        if off.checked_add(len).is_none_or(|e| e > size) || off >= size {
            return Err(FlashError::OutOfRange { what: "the chip", offset: off, length: len, size });
        }
        Ok((off, len))
    }

    /// Where a file's bytes go: (chip offset, file offset, length).
    fn file_plan(&self, path: &Path, file_len: u64, r: Range) -> Result<(u64, u64, u64), FlashError> {
        let size = self.size();
        if file_len == size {
            let (off, len) = self.chip_range(r)?;
            return Ok((off, off, len));
        }
        if r.offset.is_none() && r.length.is_none() {
            return Err(FlashError::SizeMismatch { path: path.to_owned(), file: file_len, chip: size });
        }
        let off = r.offset.unwrap_or(0);
        let len = r.length.unwrap_or(file_len);
        if len > file_len {
            return Err(FlashError::OutOfRange { what: "the file", offset: 0, length: len, size: file_len });
        }
        self.chip_range(Range { offset: Some(off), length: Some(len) })?;
        Ok((off, 0, len))
    }

    /// Reads the range into `out`.
    pub fn read_to(&mut self, out: &Path, r: Range) -> Result<(u64, u64), FlashError> {
        let (off, len) = self.chip_range(r)?;
        catch_sigint();
        let pb = self.bar("read", len);
        let mut buf = vec![0u8; len as usize];
        let mut done = 0usize;
        for chunk in buf.chunks_mut(READ_STEP) {
            if stopped() {
                break;
            }
            self.nor.read((off as usize + done) as u32, chunk).map_err(driver("read"))?;
            done += chunk.len();
            pb.inc(chunk.len() as u64);
        }
        pb.finish_and_clear();
        std::fs::write(out, &buf[..done]).map_err(|error| FlashError::File { path: out.to_owned(), error })?;
        if (done as u64) < len {
            let next = off + done as u64;
            return Err(FlashError::Interrupted {
                op: "read",
                next,
                end: off + len,
                hint: format!(
                    "{} holds the {done} bytes read; read the rest with --offset {next:#x} --length {:#x} -o OTHER",
                    out.display(),
                    off + len - next
                ),
            });
        }
        Ok((off, len))
    }

    /// Compares the chip with `want` from `addr`, with a bar.
    fn compare(&mut self, addr: u64, want: &[u8]) -> Result<(), FlashError> {
        let pb = self.bar("verify", want.len() as u64);
        let mut buf = vec![0u8; READ_STEP.min(want.len())];
        for (i, w) in want.chunks(READ_STEP).enumerate() {
            let a = addr + (i * READ_STEP) as u64;
            if stopped() {
                pb.finish_and_clear();
                let end = addr + want.len() as u64;
                return Err(FlashError::Interrupted {
                    op: "verify",
                    next: a,
                    end,
                    hint: format!("verify the rest with --offset {a:#x} (and --length {:#x})", end - a),
                });
            }
            let got = &mut buf[..w.len()];
            self.nor.read(a as u32, got).map_err(driver("verify read"))?;
            if let Some(k) = got.iter().zip(w).position(|(g, w)| g != w) {
                pb.finish_and_clear();
                return Err(FlashError::Mismatch { addr: a + k as u64, chip: got[k], file: w[k] });
            }
            pb.inc(w.len() as u64);
        }
        pb.finish_and_clear();
        Ok(())
    }

    /// Verifies the file against the chip.
    pub fn verify_file(&mut self, path: &Path, r: Range) -> Result<(u64, u64), FlashError> {
        let data = read_file(path)?;
        let (off, foff, len) = self.file_plan(path, data.len() as u64, r)?;
        catch_sigint();
        self.compare(off, &data[foff as usize..(foff + len) as usize])?;
        Ok((off, len))
    }

    /// Fails with [`FlashError::Protected`] if `[off, off+len)` is protected,
    /// unless `unprotect` (then clears it). Whether it cleared anything.
    fn check_protection(&mut self, off: u64, len: u64, unprotect: bool) -> Result<bool, FlashError> {
        let p = self.nor.protection().map_err(driver("status read"))?;
        let (s, e) = (u64::from(p.range.0), u64::from(p.range.1));
        if !p.any() || s >= off + len || e <= off {
            return Ok(false);
        }
        if !unprotect {
            return Err(FlashError::Protected { range: p.range, sr1: p.sr1 });
        }
        self.nor.unprotect().map_err(driver("unprotect"))?;
        Ok(true)
    }

    /// The erase unit at `a` for a range ending at `end`: the largest erase
    /// size aligned there that fits, else the smallest.
    fn unit(&self, a: u64, end: u64) -> u64 {
        let types = &self.nor.geometry().erase;
        types
            .iter()
            .rev()
            .map(|e| u64::from(e.size))
            .find(|&s| a.is_multiple_of(s) && a + s <= end)
            .unwrap_or_else(|| types.first().map_or(4096, |e| u64::from(e.size)))
    }

    /// Writes the file with the driver's smart write ([`SpiNor::write`]:
    /// read, compare per sector, erase and program only what differs,
    /// verify what changed), one window of the largest erase size at a time
    /// so that Ctrl-C stops between two.
    pub fn write_file(&mut self, path: &Path, r: Range, unprotect: bool) -> Result<Report, FlashError> {
        let data = read_file(path)?;
        let (off, foff, len) = self.file_plan(path, data.len() as u64, r)?;
        let image = data.len() as u64 == self.size();
        let data = &data[foff as usize..(foff + len) as usize];
        let unprotected = self.check_protection(off, len, unprotect)?;
        let mut rep = Report { offset: off, bytes: len, unprotected, ..Report::default() };
        catch_sigint();
        let end = off + len;
        let window = u64::from(self.nor.geometry().erase.last().map_or(65536, |e| e.size));
        let pb = self.bar("write", len);
        let mut a = off;
        while a < end {
            if stopped() {
                pb.finish_and_clear();
                let hint = if image {
                    format!(
                        "resume with --offset {a:#x} --length {:#x}, or rerun the same command (sectors that already \
                         hold the data are skipped)",
                        end - a
                    )
                } else {
                    "rerun the same command to resume: sectors that already hold the data are skipped".to_owned()
                };
                return Err(FlashError::Interrupted { op: "write", next: a, end, hint });
            }
            let hi = end.min((a / window + 1) * window);
            let chunk = &data[(a - off) as usize..(hi - off) as usize];
            let (done, n) = (a - off, hi - a);
            let bar = pb.clone();
            let mut progress = |p: Progress| {
                let (name, from, to) = match p.phase {
                    Phase::Read => ("read", 0.0, 0.1),
                    Phase::Erase => ("erase", 0.1, 0.5),
                    Phase::Program => ("program", 0.5, 0.9),
                    Phase::Verify => ("verify", 0.9, 1.0),
                };
                let f = if p.total == 0 { 1.0 } else { p.done as f64 / p.total as f64 };
                bar.set_message(name);
                bar.set_position(done + (n as f64 * (from + (to - from) * f)) as u64);
            };
            let w = self.nor.write(a as u32, chunk, &mut progress).map_err(|e| match e {
                NorError::VerifyFailed { addr } => {
                    let mut got = [0u8; 1];
                    let _ = self.nor.read(addr, &mut got);
                    FlashError::Mismatch {
                        addr: u64::from(addr),
                        chip: got[0],
                        file: data[(u64::from(addr) - off) as usize],
                    }
                }
                e => driver("write")(e),
            })?;
            rep.add(&w);
            pb.set_position(hi - off);
            a = hi;
        }
        pb.finish_and_clear();
        rep.verified = true;
        Ok(rep)
    }

    /// Erases the range, or the chip; whether the block protection was cleared first.
    pub fn erase_range(&mut self, r: Range, chip: bool, unprotect: bool) -> Result<(u64, u64, bool), FlashError> {
        let size = self.size();
        if chip {
            let cleared = self.check_protection(0, size, unprotect)?;
            let pb = ProgressBar::new_spinner();
            if !self.show {
                pb.set_draw_target(ProgressDrawTarget::hidden());
            }
            let typ = self.nor.geometry().chip_erase.typ_ns as f64 / 1e9;
            pb.set_message(format!("chip erase (typically {typ:.0} s; Ctrl-C cannot stop it)"));
            pb.enable_steady_tick(Duration::from_millis(200));
            self.nor.chip_erase().map_err(driver("chip erase"))?;
            pb.finish_and_clear();
            return Ok((0, size, cleared));
        }
        if r.offset.is_none() && r.length.is_none() {
            return Err(FlashError::NothingToErase);
        }
        let (off, len) = self.chip_range(r)?;
        let g = self.nor.geometry().erase.first().map_or(1, |e| e.size);
        if !off.is_multiple_of(u64::from(g)) || !len.is_multiple_of(u64::from(g)) {
            return Err(FlashError::Unaligned { offset: off, length: len, granularity: g });
        }
        let cleared = self.check_protection(off, len, unprotect)?;
        catch_sigint();
        let end = off + len;
        let pb = self.bar("erase", len);
        let mut a = off;
        while a < end {
            if stopped() {
                pb.finish_and_clear();
                let hint = format!("resume with --offset {a:#x} --length {:#x}", end - a);
                return Err(FlashError::Interrupted { op: "erase", next: a, end, hint });
            }
            let u = self.unit(a, end);
            self.nor.erase(a as u32, u as u32).map_err(driver("erase"))?;
            pb.inc(u);
            a += u;
        }
        pb.finish_and_clear();
        Ok((off, len, cleared))
    }
}
