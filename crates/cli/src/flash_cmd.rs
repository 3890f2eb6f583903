//! `wirespeed flash probe|read|write|verify|erase`: a SPI NOR flash from the
//! shell, on a spidev node or on a chip of the lab (optionally backed by an
//! image file). The target is opened in [`crate::flash_target`], the work is
//! in [`crate::flash_ops`], the errors are in
//! [`crate::flash_error`].

use crate::flash_error::FlashError;
use crate::flash_ops::{self, Flash, Report};
use crate::flash_target;
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

const EXAMPLES: &str = "\
Targets (one of them):
  --lab CHIP           an emulated chip in memory (gone when the command ends)
  --lab CHIP:IMAGE     an emulated chip backed by the file IMAGE (created erased, 0xFF, when missing;
                       every change is written through to it): a flash that outlives the command
  --dev /dev/spidevB.C a real chip on a spidev node (bus B, chip select C; `wirespeed list` shows them)
Lab chips: W25Q128JV, MX25L12835F, GD25Q64C, SST25VF016B, W25Q256JV (any case). The lab's chip
times are the datasheet's: a 4 KiB sector erase takes ~45 ms, a 256-byte page ~0.4 ms.

Numbers (--offset, --length) take decimal, 0x hex, or K/M suffixes: 4096, 0x1000, 4K, 1M.

Examples:
  wirespeed flash --lab w25q128jv probe
      name, JEDEC ID, size, erase sizes, page size, SFDP revision and block protection
  wirespeed flash --dev /dev/spidev0.0 --hz 20000000 probe --json
      the same for a real chip at 20 MHz, as one JSON object
  wirespeed flash --dev /dev/spidev0.0 read -o backup.bin
      the whole chip into backup.bin
  wirespeed flash --lab w25q128jv:flash.bin write firmware.bin --offset 0x10000
      a file smaller than the chip, written at 0x10000: the sectors it covers are read, erased only
      where a bit must go from 0 to 1 (bytes around it kept), programmed, and verified
  wirespeed flash --dev /dev/spidev0.0 write backup.bin
      a chip-size image, whole; sectors that already hold it are skipped
  wirespeed flash --dev /dev/spidev0.0 write backup.bin --offset 0x200000 --length 0x10000
      only that window of a chip-size image
  wirespeed flash --dev /dev/spidev0.0 verify backup.bin
      compares the chip with the file; the first differing address if any
  wirespeed flash --lab w25q128jv:flash.bin erase --offset 0x1000 --length 8K
      two 4 KiB sectors (the range must be a multiple of the smallest erase size)
  wirespeed flash --dev /dev/spidev0.0 erase --chip --unprotect
      clears the block protection, then erases the whole chip (C7)

Ctrl-C during a read, write, verify or erase stops at the next sector boundary and prints the
--offset to resume from (not during --chip: the chip finishes its erase by itself).
Progress bars (bytes/s, ETA) are drawn on stderr when it is a terminal; --json hides them and
prints one JSON object at the end (operation, chip, offset, bytes, elapsed_s, and a write's report).";

/// `wirespeed flash` options.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLES)]
pub struct FlashArgs {
    /// An emulated chip: its datasheet part name (any case), optionally
    /// `:IMAGE`, a file that backs it (created erased when missing).
    #[arg(long, value_name = "CHIP[:IMAGE]", global = true, conflicts_with = "dev")]
    lab: Option<String>,
    /// A spidev node /dev/spidevB.C with a SPI NOR flash on it.
    #[arg(long, value_name = "DEVICE", global = true)]
    dev: Option<PathBuf>,
    /// SPI clock in Hz (default: 10 MHz for --dev, 50 MHz for --lab).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    hz: Option<u32>,
    /// No progress bars; one JSON object on stdout at the end.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: FlashCommand,
}

/// An optional byte range of the chip.
#[derive(Debug, Args, Clone, Copy)]
pub struct Range {
    /// First chip address (decimal, 0x hex, K/M suffixes).
    #[arg(long, value_parser = parse_number, value_name = "N")]
    pub offset: Option<u64>,
    /// Number of bytes (decimal, 0x hex, K/M suffixes).
    #[arg(long, value_parser = parse_number, value_name = "N")]
    pub length: Option<u64>,
}

/// `wirespeed flash` subcommands.
#[derive(Debug, Subcommand)]
pub enum FlashCommand {
    /// Identifies the chip: name, JEDEC ID, size, erase and page sizes, SFDP revision, protection.
    #[command(after_long_help = EXAMPLES)]
    Probe,
    /// Reads the chip (default: all of it) into a file.
    #[command(after_long_help = EXAMPLES)]
    Read {
        /// The file to write what was read into.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: PathBuf,
        #[command(flatten)]
        range: Range,
    },
    /// Writes a file to the chip: erases only what must be, programs, verifies.
    ///
    /// A file the chip's size is an image of the whole chip: --offset and
    /// --length then pick a window of it (the same addresses in the file and
    /// the chip). Any other size is refused unless --offset or --length say
    /// where it goes: its first --length bytes (default: all) are written at
    /// chip address --offset (default 0). Bytes of the covered sectors
    /// outside the range are kept.
    #[command(after_long_help = EXAMPLES)]
    Write {
        /// The image file.
        file: PathBuf,
        #[command(flatten)]
        range: Range,
        /// Clear the block protection (status register BP bits) first.
        #[arg(long)]
        unprotect: bool,
    },
    /// Compares the chip with a file (same layout rules as write).
    #[command(after_long_help = EXAMPLES)]
    Verify {
        /// The image file.
        file: PathBuf,
        #[command(flatten)]
        range: Range,
    },
    /// Erases a range (a multiple of the smallest erase size) or the whole chip.
    #[command(after_long_help = EXAMPLES)]
    Erase {
        #[command(flatten)]
        range: Range,
        /// Erase the whole chip with one chip-erase command.
        #[arg(long, conflicts_with_all = ["offset", "length"])]
        chip: bool,
        /// Clear the block protection (status register BP bits) first.
        #[arg(long)]
        unprotect: bool,
    },
}

/// Parses 4096, 0x1000, 4K, 4KiB, 1M, 1MiB.
pub fn parse_number(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let lower = t.to_ascii_lowercase();
    let (digits, mul) = [("kib", 1u64 << 10), ("mib", 1 << 20), ("k", 1 << 10), ("m", 1 << 20)]
        .iter()
        .find_map(|(suf, m)| lower.strip_suffix(suf).map(|d| (d.to_owned(), *m)))
        .unwrap_or((lower.clone(), 1));
    let v = match digits.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => digits.parse::<u64>(),
    }
    .map_err(|_| format!("{s:?} is not a number: give decimal (4096), hex (0x1000) or K/M (4K, 1M)"))?;
    v.checked_mul(mul).ok_or_else(|| format!("{s} is too large"))
}

/// Runs `wirespeed flash`.
pub fn run(args: FlashArgs) -> Result<(), FlashError> {
    let target = flash_target::target_of(args.lab.as_deref(), args.dev.as_deref(), args.hz)?;
    let show = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut flash = Flash::open(&target, show)?;
    let t0 = Instant::now();
    let mut unprotected = false;
    let (operation, offset, bytes, report) = match &args.command {
        FlashCommand::Probe => {
            let p = flash_target::probe_info(&mut flash.nor)?;
            if args.json {
                println!("{}", p);
            } else {
                print!("{}", flash_target::probe_text(&flash.nor, &p));
            }
            return Ok(());
        }
        FlashCommand::Read { output, range } => {
            let (off, len) = flash.read_to(output, *range)?;
            ("read", off, len, None)
        }
        FlashCommand::Write { file, range, unprotect } => {
            let r = flash.write_file(file, *range, *unprotect)?;
            unprotected = r.unprotected;
            ("write", r.offset, r.bytes, Some(r))
        }
        FlashCommand::Verify { file, range } => {
            let (off, len) = flash.verify_file(file, *range)?;
            ("verify", off, len, None)
        }
        FlashCommand::Erase { range, chip, unprotect } => {
            let (off, len, cleared) = flash.erase_range(*range, *chip, *unprotect)?;
            unprotected = cleared;
            (if *chip { "chip_erase" } else { "erase" }, off, len, None)
        }
    };
    let elapsed = t0.elapsed().as_secs_f64();
    if args.json {
        let mut o = json!({
            "operation": operation,
            "chip": flash.nor.name(),
            "target": target.to_string(),
            "offset": offset,
            "bytes": bytes,
            "elapsed_s": elapsed,
            "unprotected": unprotected,
        });
        if let Some(r) = &report {
            o["report"] = report_json(r);
        }
        println!("{o}");
    } else {
        println!("{}", summary(operation, &flash, offset, bytes, elapsed, report.as_ref()));
        if unprotected && report.is_none() {
            println!("block protection was cleared first (--unprotect)");
        }
    }
    Ok(())
}

fn report_json(r: &Report) -> Value {
    json!({
        "sectors_skipped": r.sectors_skipped,
        "sectors_program_only": r.sectors_program_only,
        "sectors_erased": r.sectors_erased,
        "erase_commands": r.erases(),
        "erases_by_size": r.erases_by_size.iter().map(|(s, c)| json!({"size": s, "count": c})).collect::<Vec<_>>(),
        "pages_programmed": r.pages_programmed,
        "bytes_read": r.bytes_read,
        "bytes_verified": r.bytes_verified,
        "commands": r.commands,
        "verified": r.verified,
        "unprotected": r.unprotected,
    })
}

fn summary(op: &str, f: &Flash, off: u64, bytes: u64, s: f64, report: Option<&Report>) -> String {
    let rate = if s > 0.0 { format!(", {}/s", flash_ops::human(bytes as f64 / s)) } else { String::new() };
    let what = match op {
        "read" => "read",
        "write" => "wrote",
        "verify" => "verified",
        _ => "erased",
    };
    let mut t = format!(
        "{what} {} ({bytes} bytes) at {off:#x} of {} in {s:.2} s{rate}",
        flash_ops::human(bytes as f64),
        f.nor.name()
    );
    if let Some(r) = report {
        let erases: Vec<String> = r
            .erases_by_size
            .iter()
            .filter(|(_, c)| *c > 0)
            .map(|(s, c)| format!("{c} x {}", flash_ops::human(f64::from(*s))))
            .collect();
        t.push_str(&format!(
            "\nsectors: {} already held the data, {} programmed without erase, {} erased ({}); {} page(s) \
             programmed; {} bytes read back and verified",
            r.sectors_skipped,
            r.sectors_program_only,
            r.sectors_erased,
            if erases.is_empty() { "no erase command".to_owned() } else { erases.join(", ") },
            r.pages_programmed,
            r.bytes_verified
        ));
        if r.unprotected {
            t.push_str("\nblock protection was cleared first (--unprotect)");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::parse_number;

    #[test]
    fn numbers_take_hex_and_suffixes() {
        assert_eq!(parse_number("4096"), Ok(4096));
        assert_eq!(parse_number("0x1000"), Ok(4096));
        assert_eq!(parse_number("4K"), Ok(4096));
        assert_eq!(parse_number("1MiB"), Ok(1 << 20));
        assert!(parse_number("x").unwrap_err().contains("0x1000"));
    }
}
