//! `bench flash`'s comparison with flashrom: flashrom's write + verify of
//! the same image onto the same lab chip, through the shim.
//!
//! In a scratch directory:
//! - `lab.toml`: the lab W25Q128JV on `/dev/spidev0.0` (bus 0, CS 0), real
//!   wire (`instant_wire = false`), backed by `flash.bin`, default clock
//!   the benchmark's `speed_hz` (and its `time_scale` when not 1);
//! - `flash.bin`: the chip's whole 16 MiB as they were before our full
//!   write (the seeded random bytes in `[0, size)`, the lab chip's contents
//!   beyond — erased, `FF`);
//! - `image.bin`: 16 MiB, the new image in `[0, size)` and the bytes of
//!   `flash.bin` beyond;
//! - `layout.txt`: one region, `00000000:<size − 1> img`.
//!
//! Then, timed from spawn to exit (process start, the shim loading the
//! board and the 16 MiB image, probing included):
//! `flashrom -p linux_spi:dev=/dev/spidev0.0,spispeed=<speed_hz / 1000>
//! -c W25Q128.V -l layout.txt -i img --noverify-all -V -w image.bin`.
//! flashrom 1.3 reads the included region to compare, erases and writes
//! the blocks that differ, and with `-N` (`--noverify-all`) reads back and
//! verifies only the included region: the same job as our smart write of
//! `size` bytes at 0 (compare, erase, program, verify). `-V` prints each
//! erase block's range, from which the erase size flashrom used is
//! inferred ([`erase_kib`]); it adds a few bytes of output per block.
//!
//! Where flashrom's time goes (measured at 64 KiB, real chip times, 50 MHz:
//! 2.1 s against our 0.30 s): it erases with the chip's first erase
//! function, 4 KiB (`20`), for every block, 45 ms each, and polls an erase's
//! status in 10 ms steps (~50 ms a block) where we use 64 KiB erases (150 ms
//! for 16 sectors); each block is erased, checked erased and programmed
//! (~59 ms per 4 KiB block); and before verifying it pauses for 1 s ("work
//! around chips which need some time to calm down", flashrom.c). Its
//! process start, the shim's board load and the probe take ~0.1 s.
//!
//! flashrom must exit with 0 and `flash.bin`'s region must equal the image
//! afterwards, else the run is an error, not a number.

use crate::shim::scratch::Scratch;
use crate::shim::Launcher;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// flashrom's name of the chip.
pub const FLASHROM_CHIP: &str = "W25Q128.V";
/// The device node flashrom opens.
const DEVICE: &str = "/dev/spidev0.0";

/// Why the flashrom run gave no figure.
#[derive(Debug)]
pub enum FlashromError {
    /// flashrom is not on `PATH` nor in `/usr/sbin`, `/sbin`, `/usr/local/sbin`.
    NotInstalled,
    /// A scratch file could not be written or read.
    Io(String),
    /// The launcher could not build the command (no shim, …).
    Launch(String),
    /// flashrom failed: its exit status and the end of its output.
    Failed(String),
    /// flashrom exited with 0 but the chip does not hold the image.
    Mismatch(String),
}

impl fmt::Display for FlashromError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlashromError::NotInstalled => f.write_str(
                "bench flash: flashrom is not installed (Debian: apt-get install flashrom); pass --no-flashrom to run \
                 without the comparison",
            ),
            FlashromError::Io(s) => write!(f, "bench flash: flashrom run: {s}"),
            FlashromError::Launch(s) => write!(f, "bench flash: flashrom run: {s}"),
            FlashromError::Failed(s) => write!(f, "bench flash: flashrom failed: {s}"),
            FlashromError::Mismatch(s) => write!(f, "bench flash: after flashrom's write: {s}"),
        }
    }
}

impl std::error::Error for FlashromError {}

/// flashrom's result.
#[derive(Debug, Clone)]
pub struct FlashromRun {
    /// Wall time from spawn to exit, s.
    pub elapsed_s: f64,
    /// The erase block size flashrom used, KiB (`None`: not found in its `-V` output).
    pub erase_kib: Option<u64>,
}

/// The layout file: one region `img` over `[0, size)`.
pub fn layout_text(size: usize) -> String {
    format!("{:08x}:{:08x} img\n", 0, size.saturating_sub(1))
}

/// The board file: the chip `chip` (the lab's name) on `/dev/spidev0.0`.
pub fn board_text(chip: &str, speed_hz: u32, time_scale: f64) -> String {
    let scale = if time_scale == 1.0 { String::new() } else { format!("time_scale = {time_scale:?}\n") };
    format!(
        "# Written by `wirespeed bench flash` for its flashrom run.\n\
         [lab]\ninstant_wire = false\n\n[[spi]]\nbus = 0\n\n[[spi.device]]\ncs = 0\nkind = \"spi-nor\"\n\
         chip = \"{chip}\"\nimage = \"flash.bin\"\nmax_speed_hz = {speed_hz}\n{scale}"
    )
}

/// The erase block size in KiB flashrom used, from its `-V` output: the
/// most frequent size of the blocks it marked erased (`0xSTART-0xEND:…E…`).
pub fn erase_kib(verbose: &str) -> Option<u64> {
    let mut sizes: Vec<(u64, u64)> = Vec::new();
    let mut rest = verbose;
    while let Some(i) = rest.find("0x") {
        rest = &rest[i + 2..];
        let Some((start, after)) = hex_then(rest, "-0x") else { continue };
        let Some((end, after)) = hex_then(after, ":") else { continue };
        let flags: String = after.chars().take_while(char::is_ascii_uppercase).collect();
        if flags.contains('E') && end >= start {
            let size = end - start + 1;
            match sizes.iter_mut().find(|(s, _)| *s == size) {
                Some((_, n)) => *n += 1,
                None => sizes.push((size, 1)),
            }
        }
    }
    sizes.iter().max_by_key(|(_, n)| *n).map(|(s, _)| s / 1024)
}

/// A hex number at the start of `s` followed by `sep`: (value, what follows).
fn hex_then<'a>(s: &'a str, sep: &str) -> Option<(u64, &'a str)> {
    let n = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
    let v = u64::from_str_radix(&s[..n], 16).ok()?;
    s[n..].strip_prefix(sep).map(|rest| (v, rest))
}

/// flashrom's path: on `PATH`, else in the sbin directories (not on a
/// normal user's `PATH` on Debian).
pub fn find_flashrom() -> Result<PathBuf, FlashromError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("flashrom"))
        .find(|p| p.is_file())
        .ok_or(FlashromError::NotInstalled)
}

/// A flashrom run set up (files written, command built), ready to time.
#[derive(Debug)]
pub struct Prepared {
    dir: Scratch,
    cmd: Command,
    image: Vec<u8>,
}

/// What the run writes: the chip's full contents before, the image at 0.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The lab chip's name (a board file's `chip`).
    pub chip: &'a str,
    /// The whole chip before the write (its size).
    pub before: &'a [u8],
    /// The image written at 0.
    pub image: &'a [u8],
    /// SPI clock requested, Hz.
    pub speed_hz: u32,
    /// The chip's time scale.
    pub time_scale: f64,
}

fn io(path: &Path, e: std::io::Error) -> FlashromError {
    FlashromError::Io(format!("{}: {e}", path.display()))
}

/// Writes the files and builds the command; errors here come before any
/// timed run (flashrom missing, no shim).
pub fn prepare(launcher: &Launcher, job: &Job) -> Result<Prepared, FlashromError> {
    if job.image.is_empty() || job.image.len() > job.before.len() {
        return Err(FlashromError::Io(format!(
            "an image of {} bytes on a chip of {}",
            job.image.len(),
            job.before.len()
        )));
    }
    let flashrom = find_flashrom()?;
    let dir = Scratch::new("flashrom").map_err(|e| FlashromError::Io(format!("scratch directory: {e}")))?;
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).map_err(|e| io(&dir.join(name), e));
    let board = dir.join("lab.toml");
    write("lab.toml", board_text(job.chip, job.speed_hz, job.time_scale).as_bytes())?;
    write("flash.bin", job.before)?;
    let mut full = job.before.to_vec();
    full[..job.image.len()].copy_from_slice(job.image);
    write("image.bin", &full)?;
    write("layout.txt", layout_text(job.image.len()).as_bytes())?;
    let programmer = format!("linux_spi:dev={DEVICE},spispeed={}", job.speed_hz / 1000);
    let args: Vec<OsString> =
        ["-p", &programmer, "-c", FLASHROM_CHIP, "-l", "layout.txt", "-i", "img", "--noverify-all", "-V", "-w"]
            .into_iter()
            .chain(["image.bin"])
            .map(OsString::from)
            .collect();
    let mut cmd = launcher.command(&board, flashrom.as_os_str(), &args).map_err(FlashromError::Launch)?;
    cmd.current_dir(dir.path());
    Ok(Prepared { dir, cmd, image: job.image.to_vec() })
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Prepared {
    /// Runs flashrom, timed from spawn to exit, and checks its result.
    pub fn run(mut self) -> Result<FlashromRun, FlashromError> {
        let t0 = Instant::now();
        let out = self.cmd.output().map_err(|e| FlashromError::Failed(format!("cannot run flashrom: {e}")))?;
        let elapsed_s = t0.elapsed().as_secs_f64();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(FlashromError::Failed(format!("{}\n{}\n{}", out.status, tail(&stdout, 15), tail(&stderr, 15))));
        }
        let path = self.dir.join("flash.bin");
        let now = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let held = now.get(..self.image.len()).unwrap_or(&now);
        if held != self.image.as_slice() {
            let first = held.iter().zip(&self.image).position(|(a, b)| a != b).unwrap_or(held.len());
            return Err(FlashromError::Mismatch(format!(
                "the chip differs from the image at 0x{first:06x} (flashrom said:\n{})",
                tail(&stdout, 10)
            )));
        }
        Ok(FlashromRun { elapsed_s, erase_kib: erase_kib(&stdout) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_has_one_region_over_the_image() {
        assert_eq!(layout_text(65536), "00000000:0000ffff img\n");
        assert_eq!(layout_text(1 << 20), "00000000:000fffff img\n");
    }

    #[test]
    fn board_names_the_chip_image_and_clock() {
        let b = board_text("w25q128jv", 50_000_000, 1.0);
        assert!(
            b.contains("kind = \"spi-nor\"")
                && b.contains("image = \"flash.bin\"")
                && b.contains("max_speed_hz = 50000000")
        );
        assert!(!b.contains("time_scale"));
        assert!(board_text("w25q128jv", 50_000_000, 0.01).contains("time_scale = 0.01"));
    }

    /// Prepares a run whose "flashrom" is `sh -c script` (None: no flashrom here).
    fn fake(script: &'static str) -> Option<Prepared> {
        let launcher = Launcher::new(move |_, _, _| {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            Ok(c)
        });
        let before = vec![0xFFu8; 8192];
        let image = vec![0x5Au8; 4096];
        let job = Job { chip: "w25q128jv", before: &before, image: &image, speed_hz: 50_000_000, time_scale: 1.0 };
        match prepare(&launcher, &job) {
            Err(FlashromError::NotInstalled) => None,
            r => Some(r.unwrap()),
        }
    }

    #[test]
    fn a_failed_or_wrong_write_is_an_error_not_a_figure() {
        let Some(p) = fake("echo boom; exit 3") else { return };
        let e = p.run().unwrap_err();
        assert!(matches!(&e, FlashromError::Failed(s) if s.contains("boom")), "{e}");
        let Some(p) = fake("exit 0") else { return };
        let e = p.run().unwrap_err();
        assert!(matches!(&e, FlashromError::Mismatch(s) if s.contains("0x000000")), "{e}");
        let Some(p) = fake("printf '\\132%.0s' $(seq 4096) | dd of=flash.bin conv=notrunc status=none") else { return };
        assert!(p.run().is_ok());
    }

    #[test]
    fn erase_size_is_the_most_frequent_erased_block() {
        let v = "Trying erase function 0... 0x000000-0x000fff:EW, 0x001000-0x001fff:EW, 0x002000-0x002fff:S, \
                 0x003000-0x00ffff:E\n";
        assert_eq!(erase_kib(v), Some(4));
        assert_eq!(erase_kib("0x000000-0x00ffff:S\n"), None);
        assert_eq!(erase_kib("no blocks"), None);
    }
}
