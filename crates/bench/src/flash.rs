//! E7: writing a flash image with the SPI NOR driver's smart write
//! ([`SpiNor::write`]), against the least time the chip allows.
//!
//! Setup: the lab's WSPI controller at `speed_hz` (50 MHz) with a lab
//! W25Q128JV on CS 0 at the datasheet's typical times × `time_scale` (1:
//! real times), driven by the stack's lab controller driver, the SPI core
//! (policy `fast`) and `wirespeed_drivers::spi_nor`. The chip first holds
//! random data (seeded); nothing is timed before the first write.
//!
//! 1. **Full write**: a random image of `size` bytes (another seed) is
//!    written at address 0 and verified with [`SpiNor::write`]; every
//!    sector differs and needs an erase.
//! 2. **Partial write**: a second image, equal to the first except for
//!    `changed_percent` % of its 4 KiB sectors (rounded, at least one),
//!    chosen at random over the image (scattered) and filled with new
//!    random bytes, is written the same way.
//!
//! # The chip limit
//! `chip_limit_s` of a write is the least time the chip allows for the
//! same job (read to compare, erase and program what differs, read back
//! what was written), computed from the two images, not from what the
//! driver did:
//!
//! - per 4 KiB sector: equal → nothing; only 1→0 changes → program only;
//!   otherwise erase. Erases: at each sector to erase, the largest erase
//!   type aligned there whose sectors all need erasing (64 KiB, 32 KiB,
//!   4 KiB): the fewest erase commands that erase exactly those sectors;
//! - pages (256 B) to program: in erased sectors the pages not all `FF`,
//!   in program-only sectors the pages that differ;
//! - time = the chip's **typical** times (its table row, × `time_scale`)
//!   of those erases and page programs, plus the **wire time** at the
//!   controller's actual clock of: each erase (`06` + opcode and 3 address
//!   bytes), each page program (`06` + `02`, 3 address bytes, the data),
//!   one read command of the whole range rounded to sectors (4 + n bytes,
//!   the compare) and one read of the sectors erased or programmed (the
//!   verify). No status polls, no gaps between commands, no host time.
//!
//! The lab chip takes exactly its typical times (no random times here),
//! so nothing doing this job can finish sooner: `ratio = elapsed / limit`
//! is ≥ 1, and what exceeds 1 is software, bus gaps and waits that end
//! late. `bus_commands` are the chip-select windows the write sent (the
//! driver's count: write enables, erases, programs, reads, status reads).
//! `status_polls_per_page` = status polls during page-program waits ÷
//! pages programmed, over both writes. The two writes are one after the
//! other by nature (the second depends on what the first left), not
//! interleaved; run the scenario again to see their spread.
//!
//! # flashrom
//! With [`FlashOptions::flashrom`] (the CLI's default; `--no-flashrom`
//! skips it), after our two writes flashrom 1.3 does the full write's job —
//! write + verify of the same image over the same initial contents, on the
//! same lab chip model at the same clock and time scale — through the
//! `LD_PRELOAD` shim ([`crate::flash_flashrom`] has the files and the
//! command): `flashrom_s` is its wall time from spawn to exit,
//! `flashrom_ratio` = `flashrom_s / elapsed_s` (ours, full write), and
//! `flashrom_erase_kib` the erase block size its `-V` output shows (1.3
//! uses the chip's first erase function, 4 KiB, for every block). flashrom's
//! time includes its process start and probe (tens of ms) and its fixed 1 s
//! pause before verifying besides the write; ours is the write alone. The
//! table shows flashrom's time against the same chip limit as the full
//! write's. Without flashrom the three keys are `null`.

use crate::flash_flashrom::{self, FlashromRun};
use crate::shim::Launcher;
use crate::stats::round;
use crate::table::Table;
use serde_json::{json, Value};
use wirespeed::backend::lab::LabSpi;
use wirespeed::spi::{Bus, DeviceConfig, Policy};
use wirespeed_drivers::spi_nor::{SpiNor, WriteReport};
use wirespeed_lab::devices::spi_nor::{ChipSpec, W25Q128JV};
use wirespeed_lab::devices::{SpiNor as NorModel, SpiNorOptions};
use wirespeed_lab::{Lab, LabConfig};
use wirespeed_time::now;

const SECTOR: usize = 4096;

/// Options of the flash experiment.
#[derive(Debug, Clone)]
pub struct FlashOptions {
    /// Image size in bytes (a multiple of 4096, at most the chip's 16 MiB).
    pub size: usize,
    /// SPI clock requested.
    pub speed_hz: u32,
    /// Multiplies the chip's times and the driver's waits alike (1: the datasheet's).
    pub time_scale: f64,
    /// Percent of the image's sectors the second image changes.
    pub changed_percent: f64,
    /// Seed of the random contents and of the changed sectors' choice.
    pub seed: u64,
    /// Run flashrom's write of the same image through the shim this
    /// launcher starts programs under (module docs); `None`: no comparison.
    pub flashrom: Option<Launcher>,
}

impl Default for FlashOptions {
    fn default() -> Self {
        FlashOptions {
            size: 1 << 20,
            speed_hz: 50_000_000,
            time_scale: 1.0,
            changed_percent: 10.0,
            seed: 7,
            flashrom: None,
        }
    }
}

/// One timed write.
#[derive(Debug, Clone)]
pub struct WriteRun {
    /// Wall time of [`SpiNor::write`], s.
    pub elapsed_s: f64,
    /// The chip limit of the same job (module docs), s.
    pub chip_limit_s: f64,
    /// The wire-time part of the limit, s.
    pub wire_s: f64,
    /// What the driver did.
    pub report: WriteReport,
    /// Sectors the image changes.
    pub sectors_changed: u64,
}

impl WriteRun {
    /// elapsed / limit.
    pub fn ratio(&self) -> f64 {
        self.elapsed_s / self.chip_limit_s
    }
}

/// The experiment's result.
#[derive(Debug, Clone)]
pub struct FlashReport {
    /// The chip's name.
    pub chip: &'static str,
    /// Image size, bytes.
    pub size: usize,
    /// SPI clock requested, Hz.
    pub speed_hz: u32,
    /// The clock the controller produces, Hz.
    pub clock_hz: u32,
    /// Time scale.
    pub time_scale: f64,
    /// The full write.
    pub full: WriteRun,
    /// The partial write.
    pub partial: WriteRun,
    /// Typical times the driver waits (from the chip's SFDP): page, 4K, 32K, 64K erase, µs.
    pub driver_typ_us: Vec<(String, f64)>,
    /// The chip's own typical times, same order, µs.
    pub chip_typ_us: Vec<(String, f64)>,
    /// flashrom's write of the full image (`None`: not run).
    pub flashrom: Option<FlashromRun>,
}

impl FlashReport {
    /// flashrom's time over ours, full write (`None`: flashrom not run).
    pub fn flashrom_ratio(&self) -> Option<f64> {
        self.flashrom.as_ref().map(|f| f.elapsed_s / self.full.elapsed_s)
    }

    /// Status polls per page programmed, over both writes.
    pub fn status_polls_per_page(&self) -> f64 {
        let polls = self.full.report.program_status_polls + self.partial.report.program_status_polls;
        let pages = self.full.report.pages_programmed + self.partial.report.pages_programmed;
        polls as f64 / pages.max(1) as f64
    }
}

/// A small seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// The chip limit of writing `new` over `old` at an address aligned to
/// sectors (module docs): (total s, wire s).
pub fn chip_limit(spec: &ChipSpec, old: &[u8], new: &[u8], clock_hz: u32, time_scale: f64) -> (f64, f64) {
    let sec = spec.erase[0].size as usize;
    let page = spec.page_size.max(1) as usize;
    let sectors = old.len().div_ceil(sec);
    let mut erase = vec![false; sectors];
    let mut touched = 0u64;
    let mut page_bytes: Vec<u64> = Vec::new();
    for i in 0..sectors {
        let (o, n) = (&old[i * sec..((i + 1) * sec).min(old.len())], &new[i * sec..((i + 1) * sec).min(new.len())]);
        if o == n {
            continue;
        }
        touched += n.len() as u64;
        let program_only = o.iter().zip(n).all(|(o, n)| n & !o == 0);
        erase[i] = !program_only;
        for (po, pn) in o.chunks(page).zip(n.chunks(page)) {
            let needed = if program_only { po != pn } else { pn.iter().any(|&b| b != 0xFF) };
            if needed {
                page_bytes.push(pn.len() as u64);
            }
        }
    }
    let mut chip_ns = 0u64;
    let mut erases = 0u64;
    let mut i = 0usize;
    while i < sectors {
        if !erase[i] {
            i += 1;
            continue;
        }
        let a = i * sec;
        let e = spec
            .erase
            .iter()
            .rev()
            .find(|e| {
                let k = e.size as usize / sec;
                a.is_multiple_of(e.size as usize) && i + k <= sectors && erase[i..i + k].iter().all(|&x| x)
            })
            .unwrap_or(&spec.erase[0]);
        chip_ns += e.time.typ_ns;
        erases += 1;
        i += e.size as usize / sec;
    }
    chip_ns += page_bytes.len() as u64 * spec.page_program.typ_ns;
    let wire_bytes = erases * (1 + 4)
        + page_bytes.iter().map(|b| 1 + 4 + b).sum::<u64>()
        + (4 + old.len() as u64)
        + if touched > 0 { 4 + touched } else { 0 };
    let wire_s = wire_bytes as f64 * 8.0 / f64::from(clock_hz);
    (chip_ns as f64 * time_scale * 1e-9 + wire_s, wire_s)
}

fn timed_write(f: &mut SpiNor, image: &[u8]) -> Result<(f64, WriteReport), String> {
    let t0 = now();
    let r = f.write(0, image, &mut |_| {}).map_err(|e| format!("write: {e}"))?;
    Ok((now().ns_since(t0) as f64 * 1e-9, r))
}

/// Runs the experiment.
pub fn run(opts: &FlashOptions) -> Result<FlashReport, String> {
    let spec = &W25Q128JV;
    if opts.size == 0 || !opts.size.is_multiple_of(SECTOR) || opts.size > spec.size as usize {
        return Err(format!("size must be a non-zero multiple of {SECTOR} up to {} bytes", spec.size));
    }
    if !(opts.time_scale.is_finite() && opts.time_scale > 0.0) {
        return Err("time scale must be positive".into());
    }
    if !(opts.changed_percent.is_finite() && (0.0..=100.0).contains(&opts.changed_percent)) {
        return Err("changed percent must be within 0..=100".into());
    }
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let block = lab.spi_controller(Default::default());
    let chip = NorModel::with_options(spec, SpiNorOptions { time_scale: opts.time_scale, random_times_seed: None });
    block.attach(0, chip.clone());
    let bus = Bus::try_new(LabSpi::new(block), Policy::fast()).map_err(|e| e.to_string())?;
    let clock_hz = bus.caps().actual_speed_hz(opts.speed_hz);
    let dev = bus.device(DeviceConfig::new(0, opts.speed_hz)).map_err(|e| format!("SPI device: {e}"))?;
    let mut f = SpiNor::probe(dev).map_err(|e| format!("probe: {e}"))?;
    f.set_time_scale(opts.time_scale);

    let mut rng = Rng::new(opts.seed);
    let before = rng.bytes(opts.size);
    chip.poke(0, &before);
    let image = rng.bytes(opts.size);
    // flashrom's files and command first: a missing flashrom or shim fails
    // before the timed runs, not after.
    let flashrom = match &opts.flashrom {
        Some(launcher) => {
            let whole = chip.peek(0, spec.size as usize);
            let job = flash_flashrom::Job {
                chip: spec.name,
                before: &whole,
                image: &image,
                speed_hz: opts.speed_hz,
                time_scale: opts.time_scale,
            };
            Some(flash_flashrom::prepare(launcher, &job).map_err(|e| e.to_string())?)
        }
        None => None,
    };

    // 1. Full write.
    let (limit, wire) = chip_limit(spec, &before, &image, clock_hz, opts.time_scale);
    let (elapsed, report) = timed_write(&mut f, &image)?;
    if chip.peek(0, opts.size) != image {
        return Err("the chip does not hold the first image".into());
    }
    let full = WriteRun {
        elapsed_s: elapsed,
        chip_limit_s: limit,
        wire_s: wire,
        report,
        sectors_changed: (opts.size / SECTOR) as u64,
    };

    // 2. Partial write: scattered sectors changed.
    let sectors = opts.size / SECTOR;
    let n = ((sectors as f64 * opts.changed_percent / 100.0).round() as usize).clamp(1, sectors);
    let mut order: Vec<usize> = (0..sectors).collect();
    for i in (1..sectors).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut second = image.clone();
    for &s in &order[..n] {
        second[s * SECTOR..(s + 1) * SECTOR].copy_from_slice(&rng.bytes(SECTOR));
    }
    let changed = image.chunks(SECTOR).zip(second.chunks(SECTOR)).filter(|(a, b)| a != b).count() as u64;
    let (limit, wire) = chip_limit(spec, &image, &second, clock_hz, opts.time_scale);
    let (elapsed, report) = timed_write(&mut f, &second)?;
    if chip.peek(0, opts.size) != second {
        return Err("the chip does not hold the second image".into());
    }
    let partial = WriteRun { elapsed_s: elapsed, chip_limit_s: limit, wire_s: wire, report, sectors_changed: changed };

    // 3. flashrom's write of the first image over the same initial contents.
    let flashrom = flashrom.map(|p| p.run()).transpose().map_err(|e| e.to_string())?;

    let g = f.geometry();
    let us = |ns: u64| ns as f64 / 1e3;
    let mut driver_typ_us = vec![("page program".to_string(), us(g.page_program.typ_ns))];
    driver_typ_us.extend(g.erase.iter().map(|e| (format!("erase {} KiB", e.size / 1024), us(e.time.typ_ns))));
    let mut chip_typ_us = vec![("page program".to_string(), us(spec.page_program.typ_ns))];
    chip_typ_us.extend(spec.erase.iter().map(|e| (format!("erase {} KiB", e.size / 1024), us(e.time.typ_ns))));

    Ok(FlashReport {
        chip: spec.name,
        size: opts.size,
        speed_hz: opts.speed_hz,
        clock_hz,
        time_scale: opts.time_scale,
        full,
        partial,
        driver_typ_us,
        chip_typ_us,
        flashrom,
    })
}

fn write_json(w: &WriteRun) -> Value {
    let r = &w.report;
    let erases: serde_json::Map<String, Value> =
        r.erases_by_size.iter().map(|e| (format!("{}", e.size), json!(e.count))).collect();
    json!({
        "elapsed_s": round(w.elapsed_s, 4),
        "chip_limit_s": round(w.chip_limit_s, 4),
        "wire_s": round(w.wire_s, 4),
        "ratio": round(w.ratio(), 4),
        "bus_commands": r.commands,
        "sectors_changed": w.sectors_changed,
        "sectors_skipped": r.sectors_skipped,
        "sectors_erased": r.sectors_erased,
        "sectors_program_only": r.sectors_program_only,
        "erases_by_size": erases,
        "pages_programmed": r.pages_programmed,
        "bytes_read": r.bytes_read,
        "bytes_verified": r.bytes_verified,
        "program_status_polls": r.program_status_polls,
        "erase_status_polls": r.erase_status_polls,
    })
}

impl FlashReport {
    /// The report as one JSON object: `{"scenario": "flash", "flash": {…}}`.
    pub fn to_json(&self) -> Value {
        let mut flash = write_json(&self.full);
        let mut partial = write_json(&self.partial);
        partial["ratio_vs_full"] = json!(round(self.partial.elapsed_s / self.full.elapsed_s, 4));
        let typ = |v: &[(String, f64)]| -> Value {
            v.iter().map(|(k, t)| (k.clone(), json!(round(*t, 1)))).collect::<serde_json::Map<_, _>>().into()
        };
        let o = flash.as_object_mut().expect("object");
        o.insert("partial".into(), partial);
        o.insert("status_polls_per_page".into(), json!(round(self.status_polls_per_page(), 3)));
        o.insert("chip".into(), json!(self.chip));
        o.insert("size".into(), json!(self.size));
        o.insert("speed_hz".into(), json!(self.speed_hz));
        o.insert("clock_hz".into(), json!(self.clock_hz));
        o.insert("time_scale".into(), json!(self.time_scale));
        o.insert("driver_typical_us".into(), typ(&self.driver_typ_us));
        o.insert("chip_typical_us".into(), typ(&self.chip_typ_us));
        let fr = self.flashrom.as_ref();
        o.insert("flashrom_s".into(), json!(fr.map(|f| round(f.elapsed_s, 4))));
        o.insert("flashrom_ratio".into(), json!(self.flashrom_ratio().map(|r| round(r, 3))));
        o.insert("flashrom_erase_kib".into(), json!(fr.and_then(|f| f.erase_kib)));
        json!({ "scenario": "flash", "flash": flash })
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let mut t = Table::new(&["write", "elapsed", "chip limit", "ratio", "erases", "pages", "commands"]);
        for (name, w) in [("full", &self.full), ("partial", &self.partial)] {
            let r = &w.report;
            let erases: Vec<String> = r
                .erases_by_size
                .iter()
                .filter(|e| e.count > 0)
                .map(|e| format!("{}×{}K", e.count, e.size / 1024))
                .collect();
            t.row(vec![
                format!("{name} ({} sectors changed)", w.sectors_changed),
                format!("{:.3} s", w.elapsed_s),
                format!("{:.3} s", w.chip_limit_s),
                format!("{:.3}", w.ratio()),
                if erases.is_empty() { "-".into() } else { erases.join(" ") },
                r.pages_programmed.to_string(),
                r.commands.to_string(),
            ]);
        }
        if let Some(fr) = &self.flashrom {
            t.row(vec![
                "flashrom -w, same image as full (through the shim)".into(),
                format!("{:.3} s", fr.elapsed_s),
                format!("{:.3} s", self.full.chip_limit_s),
                format!("{:.3}", fr.elapsed_s / self.full.chip_limit_s),
                fr.erase_kib.map_or("-".into(), |k| format!("{k}K blocks")),
                "-".into(),
                "-".into(),
            ]);
        }
        let flashrom = match self.flashrom_ratio() {
            Some(r) => format!("flashrom / ours (full write): {r:.2}\n"),
            None => String::new(),
        };
        let typ: Vec<String> = self
            .driver_typ_us
            .iter()
            .zip(&self.chip_typ_us)
            .map(|((k, d), (_, c))| format!("{k} {:.0}/{:.0} µs", d, c))
            .collect();
        format!(
            "flash: smart write of {} KiB on the lab {} at {} Hz (clock {} Hz), time scale {}\n{}\
             partial / full elapsed: {:.3}; status polls per page: {:.2}\n{flashrom}\
             typical times, driver (SFDP) / chip: {}\n",
            self.size / 1024,
            self.chip,
            self.speed_hz,
            self.clock_hz,
            self.time_scale,
            t.render(),
            self.partial.elapsed_s / self.full.elapsed_s,
            self.status_polls_per_page(),
            typ.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_has_the_keys_and_respects_the_limit() {
        let opts = FlashOptions { size: 64 * 1024, time_scale: 0.01, ..FlashOptions::default() };
        let r = run(&opts).unwrap();
        let j = r.to_json();
        assert_eq!(j["scenario"], "flash");
        let f = &j["flash"];
        for k in ["elapsed_s", "chip_limit_s", "ratio", "bus_commands", "status_polls_per_page"] {
            assert!(f[k].is_number(), "{k}");
        }
        for k in ["elapsed_s", "chip_limit_s", "ratio", "ratio_vs_full"] {
            assert!(f["partial"][k].is_number(), "partial.{k}");
        }
        assert!(r.full.ratio() >= 1.0 && r.partial.ratio() >= 1.0, "{j}");
        // 16 sectors, 10 % of them: 2 changed, each a 4K erase and 16 pages.
        assert_eq!(r.full.report.erases(), 1);
        assert_eq!(r.partial.sectors_changed, 2);
        assert_eq!((r.partial.report.erases(), r.partial.report.pages_programmed), (2, 32));
        assert!(r.table().contains("partial"));
        assert!(run(&FlashOptions { size: 1000, ..opts }).is_err());
    }

    #[test]
    fn limit_counts_whole_blocks_and_needed_pages() {
        let spec = &W25Q128JV;
        let old = vec![0u8; 128 * 1024];
        let mut new = vec![0xFFu8; 128 * 1024];
        new[5] = 1; // one page to program in the first block
        let (t, wire) = chip_limit(spec, &old, &new, 50_000_000, 1.0);
        let chip = 2.0 * 0.150 + 0.0004;
        let bytes = 2 * 5 + (5 + 256) + 2 * (4 + 128 * 1024);
        assert!((wire - bytes as f64 * 8.0 / 50e6).abs() < 1e-12);
        assert!((t - chip - wire).abs() < 1e-9);
    }
}
