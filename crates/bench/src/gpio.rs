//! E3 `gpio`: what removal safety costs on a GPIO toggle (seed 002).
//!
//! The seed's test: one line driven high and low `toggles` times per pass
//! (1,000,000 by default), `passes` passes (10), mean and standard deviation
//! of a pass's time in µs. It runs for three guards, interleaved within each
//! pass (the order rotates from pass to pass):
//! - `none`: no protection (the downstream patch; unsound if the chip goes);
//! - `interlock`: the 6.9 kernel's per-access read-side claim — a reader
//!   count shared by the chip's handles, incremented and decremented with
//!   full barriers around every access;
//! - `wirespeed`: the stack's guard — stores to the handle's own slot and
//!   one load from that same cache line (its copy of the chip's state).
//!
//! All three run the very same code: the stack's `LineRequest::set_value`
//! on the lab chip, monomorphised over the guard type, nothing else differs.
//!
//! Interleaving: on a shared machine the speed drifts by several percent
//! within a second, more than the effect measured. So each guard's pass of
//! `toggles` runs as `slices` slices (200 by default, 5,000 toggles each)
//! interleaved with the other guards' slices (A B C, B C A, …); a pass's
//! time is the sum of its slices, so drift lands on all three guards alike. Both wall time (the
//! seed's measure, reported as `mean_us`) and the thread's CPU time
//! (`cpu_mean_us`, immune to preemption by other processes) are recorded.
//! `overhead_vs_none` is the median, over all slice groups, of a guard's
//! slice time divided by the unguarded slice run beside it: a preemption
//! that lands on one slice moves one ratio, not the figure. Why 200 slices:
//! single slice ratios scatter by several percent, and the median of more
//! groups scatters less; on the 2-core test VM, in one quiet hour,
//! wirespeed's figure spread over 1.005–1.013 in 14 runs with 50 slices and
//! 1.0047–1.0094 in 13 runs with 200 (a placebo guard, a second copy of the
//! unguarded code, read 0.995–1.004 with 50). What finer slicing cannot
//! remove is a run-to-run spread that is not preemption (another hour: 11
//! runs read 1.006–1.027, and where taken the thread-CPU ratio equalled the
//! wall one to 0.0002); "Placement" below is what was found of its cause.
//! Much smaller slices start to measure each slice's
//! warm-up (the request is made afresh per slice, so that all three guards
//! drive the very same line).
//!
//! Placement: the figure also moved with where the stack, the code and
//! the long-lived heap objects of the loop happened to land (see
//! [`crate::placement`]): 10 runs read 0.9925–1.0114 with ASLR on; a
//! "guard" of one `nop` read 0.985–1.000 against the unguarded loop in one
//! build; builds that differed only by a block of dead code read
//! 1.001–1.036; and one build read 0.979–1.039 from one process to the
//! next (0.979–1.006 in full runs, as `placement` quotes, up to 1.039 in
//! runs of 4 passes), the high readings with a fast unguarded loop (36 ns
//! per set against 41 ns). So each slice group runs at the next of 16 stack
//! offsets, on the next of 7 rigs (lab chip, the stack's chip and the probe,
//! each allocated behind a spacer of another size) and, every 48 groups,
//! on the next of 8 copies of the loop at different code addresses; all
//! three guards of a group at the same placement. With that, the one-`nop`
//! guard read 0.9996–1.0000 (stack and code rotation), and wirespeed's guard
//! 1.0048–1.0092 in 16 runs over four builds that differ by dead code, the
//! unguarded loop at 36–42 ns per set in them: the guard's two stores and
//! load cost ≈ 0.3 ns per set, the same whichever placement the process
//! drew.
//!
//! The toggled line's pad has a probe attached (a lab device counting
//! edges), so every toggle is a real level change on the board that the
//! bench checks was seen.
//!
//! The report also carries `spi_gpio_cs` (see [`spi_cs`]): SPI bus
//! utilization with a native and with a GPIO chip select, interleaved.

pub mod spi_cs;

use crate::placement::{code_pad, spaced, with_offset, Spaced, CODE_COPIES, HEAP_PLACEMENTS, OFFSETS};
use crate::stats::{mean, median, round, stddev};
use crate::table::Table;
use crate::usage::thread_cpu_ns;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wirespeed::backend::lab::gpio::open;
use wirespeed::gpio::{
    AccessGuard, Chip, GpioError, Interlock, LineRequest, LineSettings, RequestConfig, Revocable, Unguarded,
};
use wirespeed_lab::gpio::{GpioChip, GpioChipConfig};
use wirespeed_lab::{Lab, LabConfig, PinSink};
use wirespeed_time::{now, Instant};

/// Options of the `gpio` scenario.
#[derive(Clone, Debug)]
pub struct GpioOptions {
    /// High/low cycles per pass.
    pub toggles: u64,
    /// Passes (each runs all three guards).
    pub passes: u32,
    /// Slices each pass is cut into for interleaving (1: whole passes).
    pub slices: u32,
    /// Attach the edge-counting probe to the pad (default true).
    pub probe: bool,
    /// The `spi_gpio_cs` part (`rounds: 0` skips it).
    pub spi: spi_cs::SpiCsOptions,
}

impl Default for GpioOptions {
    fn default() -> Self {
        GpioOptions { toggles: 1_000_000, passes: 10, slices: 200, probe: true, spi: spi_cs::SpiCsOptions::default() }
    }
}

/// One guard's figures.
#[derive(Clone, Debug)]
pub struct GuardFigures {
    /// Guard name (`none`, `interlock`, `wirespeed`).
    pub name: &'static str,
    /// Each pass's time, µs.
    pub pass_us: Vec<f64>,
    /// Mean pass time (wall clock), µs.
    pub mean_us: f64,
    /// Each pass's thread CPU time, µs.
    pub cpu_pass_us: Vec<f64>,
    /// Mean pass time (thread CPU time), µs.
    pub cpu_mean_us: f64,
    /// `cpu_mean_us / none.cpu_mean_us`.
    pub cpu_overhead_vs_none: f64,
    /// Standard deviation of the pass time, µs.
    pub stddev_us: f64,
    /// `mean_us / none.mean_us`.
    pub overhead_vs_none: f64,
    /// Mean cost of one `set_value`, ns.
    pub ns_per_set: f64,
}

/// Result of the `gpio` scenario.
#[derive(Clone, Debug)]
pub struct GpioReport {
    /// Options used.
    pub options: GpioOptions,
    /// No protection.
    pub none: GuardFigures,
    /// The kernel-style interlock.
    pub interlock: GuardFigures,
    /// wirespeed's guard.
    pub wirespeed: GuardFigures,
    /// Whether the asymmetric fence (membarrier) was available.
    pub membarrier: bool,
    /// SPI with a native vs a GPIO chip select (None if skipped).
    pub spi_gpio_cs: Option<spi_cs::SpiCsFigures>,
}

struct Probe(AtomicU64);

impl PinSink for Probe {
    fn drive(&self, _high: bool, _at: Instant) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

const LINE: u32 = 0;

fn config() -> RequestConfig {
    RequestConfig::new("bench-gpio").line(LINE, LineSettings::output(false))
}

/// Wall and thread-CPU time of a slice, µs.
#[derive(Clone, Copy, Default)]
struct Times {
    wall_us: f64,
    cpu_us: f64,
}

/// The seed's loop. Generic over the guard: the only difference between
/// the three variants; and over `C`, which of the copies at different code
/// addresses runs (see [`crate::placement`]). Kept apart from the timing so
/// that nothing but the request and the count lives across its calls.
#[inline(never)]
fn toggle<G: AccessGuard, const C: usize>(req: &LineRequest<G>, toggles: u64) -> Result<(), GpioError> {
    code_pad::<C>();
    for _ in 0..toggles {
        req.set_value(LINE, true)?;
        req.set_value(LINE, false)?;
    }
    Ok(())
}

/// Times one slice of [`toggle`], copy `copy % CODE_COPIES`.
fn toggle_slice<G: AccessGuard>(req: &LineRequest<G>, toggles: u64, copy: usize) -> Result<Times, GpioError> {
    const _: () = assert!(CODE_COPIES == 8, "one arm per copy below");
    let run = match copy % CODE_COPIES {
        0 => toggle::<G, 0>,
        1 => toggle::<G, 1>,
        2 => toggle::<G, 2>,
        3 => toggle::<G, 3>,
        4 => toggle::<G, 4>,
        5 => toggle::<G, 5>,
        6 => toggle::<G, 6>,
        _ => toggle::<G, 7>,
    };
    let c0 = thread_cpu_ns();
    let t0 = now();
    run(req, toggles)?;
    let wall_us = now().us_since(t0);
    let cpu_us = thread_cpu_ns().saturating_sub(c0) as f64 / 1_000.0;
    Ok(Times { wall_us, cpu_us })
}

fn measure<G: AccessGuard>(
    req: Result<LineRequest<G>, GpioError>,
    hw: &GpioChip,
    probe: Option<&Probe>,
    toggles: u64,
    copy: usize,
) -> Result<Times, String> {
    let req = req.map_err(|e| format!("requesting the bench line: {e}"))?;
    let before = probe.map(|p| p.0.load(Ordering::Relaxed));
    let us = toggle_slice(&req, toggles, copy).map_err(|e| format!("{} toggle failed: {e}", G::NAME))?;
    if let (Some(p), Some(b)) = (probe, before) {
        let seen = p.0.load(Ordering::Relaxed) - b;
        if seen != 2 * toggles {
            return Err(format!("{}: the probe saw {seen} edges, expected {}", G::NAME, 2 * toggles));
        }
    }
    if hw.value(LINE) != Ok(false) {
        return Err(format!("{}: the line did not end low", G::NAME));
    }
    Ok(us)
}

/// The long-lived objects the loop works on: a lab chip, the stack's view
/// of it and the probe on the toggled pad. Several are made, each at its
/// own heap placement (see [`crate::placement`]).
struct Rig {
    hw: GpioChip,
    chip: Chip,
    probe: Option<Arc<Probe>>,
}

impl Rig {
    fn new(lab: &Lab, probe: bool) -> Result<Rig, String> {
        let hw = lab.gpio_chip(GpioChipConfig { lines: 8, ..GpioChipConfig::default() });
        let chip = open(&hw).map_err(|e| format!("opening the lab chip: {e}"))?;
        let probe = probe.then(|| Arc::new(Probe(AtomicU64::new(0))));
        if let Some(p) = &probe {
            hw.output_pin(LINE).connect(p.clone(), now());
        }
        Ok(Rig { hw, chip, probe })
    }
}

/// Runs guard `which`'s slice of `toggles` on `rig`, code copy `copy`.
fn run_guard(which: usize, rig: &Rig, toggles: u64, copy: usize) -> Result<Times, String> {
    let (chip, hw, probe) = (&rig.chip, &rig.hw, rig.probe.as_deref());
    match which {
        // SAFETY: the bench never removes the chip while this request lives
        // (the request is dropped at the end of `measure`).
        0 => measure::<Unguarded>(unsafe { chip.request_lines_unguarded(&config()) }, hw, probe, toggles, copy),
        1 => measure::<Interlock>(chip.request_lines_with::<Interlock>(&config()), hw, probe, toggles, copy),
        _ => measure::<Revocable>(chip.request_lines_with::<Revocable>(&config()), hw, probe, toggles, copy),
    }
}

/// Runs the scenario.
pub fn run(opts: &GpioOptions) -> Result<GpioReport, String> {
    if opts.toggles == 0 || opts.passes == 0 || opts.slices == 0 || u64::from(opts.slices) > opts.toggles {
        return Err(format!(
            "toggles ({}), passes ({}) and slices ({}) must be at least 1, with no more slices than toggles",
            opts.toggles, opts.passes, opts.slices
        ));
    }
    if opts.spi.rounds != 0 {
        opts.spi.validate()?;
    }
    let lab = Lab::try_new(LabConfig::default()).map_err(|e| e.to_string())?;
    let rigs = (0..HEAP_PLACEMENTS).map(|k| spaced(k, || Rig::new(&lab, opts.probe))).collect::<Vec<Spaced<_>>>();
    let rigs = rigs.iter().map(|r| r.value.as_ref().map_err(Clone::clone)).collect::<Result<Vec<&Rig>, String>>()?;
    // Warm-up: one short slice of each guard on each rig.
    for rig in &rigs {
        for g in 0..3 {
            run_guard(g, rig, opts.toggles.min(20_000), 0)?;
        }
    }
    let slices = u64::from(opts.slices);
    let mut wall: [Vec<f64>; 3] = Default::default();
    let mut cpu: [Vec<f64>; 3] = Default::default();
    let mut turn = 0usize;
    // Per slice group, each guard's time over the unguarded one's, measured side by side.
    let mut slice_ratio: [Vec<f64>; 3] = Default::default();
    for _pass in 0..opts.passes {
        let mut acc = [Times::default(); 3];
        for s in 0..slices {
            // Slices split the pass's toggles exactly.
            let n = opts.toggles / slices + u64::from(s < opts.toggles % slices);
            let mut group = [0.0f64; 3];
            // Order (turn % 3), stack offset (turn % 16) and rig (turn % 7)
            // go through all 336 triples; the code copy moves on every 48.
            let copy = turn / (3 * OFFSETS);
            let rig = rigs[turn % HEAP_PLACEMENTS];
            for k in 0..3 {
                let g = (turn + k) % 3;
                let t = with_offset(turn, || run_guard(g, rig, n, copy))?;
                acc[g].wall_us += t.wall_us;
                acc[g].cpu_us += t.cpu_us;
                group[g] = t.wall_us;
            }
            for g in 0..3 {
                slice_ratio[g].push(group[g] / group[0]);
            }
            turn += 1;
        }
        for g in 0..3 {
            wall[g].push(acc[g].wall_us);
            cpu[g].push(acc[g].cpu_us);
        }
    }
    let spi_gpio_cs = if opts.spi.rounds == 0 { None } else { Some(spi_cs::run(&opts.spi)?) };
    let none_cpu = mean(&cpu[0]);
    let sets = 2.0 * opts.toggles as f64;
    let fig = |name: &'static str, g: usize| GuardFigures {
        name,
        pass_us: wall[g].clone(),
        mean_us: mean(&wall[g]),
        stddev_us: stddev(&wall[g]),
        overhead_vs_none: median(&slice_ratio[g]),
        cpu_pass_us: cpu[g].clone(),
        cpu_mean_us: mean(&cpu[g]),
        cpu_overhead_vs_none: mean(&cpu[g]) / none_cpu,
        ns_per_set: mean(&wall[g]) * 1_000.0 / sets,
    };
    Ok(GpioReport {
        options: opts.clone(),
        none: fig("none", 0),
        interlock: fig("interlock", 1),
        wirespeed: fig("wirespeed", 2),
        membarrier: !chip_is_heavy(),
        spi_gpio_cs,
    })
}

/// Whether wirespeed's guard had to fall back to a full fence per access.
fn chip_is_heavy() -> bool {
    !wirespeed::gpio::asymmetric_fence_available()
}

impl GuardFigures {
    fn to_json(&self) -> Value {
        json!({
            "mean_us": round(self.mean_us, 1),
            "stddev_us": round(self.stddev_us, 1),
            "overhead_vs_none": round(self.overhead_vs_none, 4),
            "ns_per_set": round(self.ns_per_set, 2),
            "cpu_mean_us": round(self.cpu_mean_us, 1),
            "cpu_overhead_vs_none": round(self.cpu_overhead_vs_none, 4),
        })
    }
}

impl GpioReport {
    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut j = json!({
            "scenario": "gpio",
            "toggles_per_pass": self.options.toggles,
            "passes": self.options.passes,
            "slices": self.options.slices,
            "probe": self.options.probe,
            "placements": { "stack_offsets": OFFSETS, "code_copies": CODE_COPIES, "heap_placements": HEAP_PLACEMENTS },
            "membarrier": self.membarrier,
            "none": self.none.to_json(),
            "interlock": self.interlock.to_json(),
            "wirespeed": self.wirespeed.to_json(),
        });
        if let Some(s) = &self.spi_gpio_cs {
            j["spi_gpio_cs"] = s.to_json();
        }
        j
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let mut t = Table::new(&["guard", "mean µs/pass", "stddev µs", "ns/set", "vs none", "cpu vs none"]);
        for g in [&self.none, &self.interlock, &self.wirespeed] {
            t.row(vec![
                g.name.to_string(),
                format!("{:.0}", g.mean_us),
                format!("{:.0}", g.stddev_us),
                format!("{:.2}", g.ns_per_set),
                format!("{:.4}", g.overhead_vs_none),
                format!("{:.4}", g.cpu_overhead_vs_none),
            ]);
        }
        let mut out = format!(
            "gpio: {} passes of {} high/low toggles, guards interleaved in {} slices per pass over {} stack offsets x {} rigs x {} code copies (membarrier: {})\n{}",
            self.options.passes,
            self.options.toggles,
            self.options.slices,
            OFFSETS,
            HEAP_PLACEMENTS,
            CODE_COPIES,
            self.membarrier,
            t.render()
        );
        if let Some(s) = &self.spi_gpio_cs {
            let mut t = Table::new(&["chip select", "utilization", "µs/message", "vs native"]);
            for r in s.rows() {
                t.row(r);
            }
            out.push_str(&format!(
                "\nspi_gpio_cs: {} rounds each of {} back-to-back {}-byte sync messages at {} MHz, native/GPIO interleaved, medians\n{}",
                s.options.rounds,
                s.options.messages,
                spi_cs::MESSAGE_BYTES,
                spi_cs::SPEED_HZ / 1_000_000,
                t.render()
            ));
            out.push_str(&format!("GpioCs edge {:.2} ns vs bare line write {:.2} ns\n", s.cs_set_ns, s.line_set_ns));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_reports_every_guard_and_verifies_edges() {
        let spi = spi_cs::SpiCsOptions { rounds: 2, messages: 50, sets: 2_000 };
        let r = run(&GpioOptions { toggles: 2_000, passes: 2, slices: 4, probe: true, spi }).unwrap();
        let j = r.to_json();
        for k in ["none", "interlock", "wirespeed"] {
            for f in ["mean_us", "stddev_us", "overhead_vs_none"] {
                assert!(j[k][f].as_f64().is_some_and(|v| v.is_finite() && v >= 0.0), "{k}.{f} in {j}");
            }
            assert_eq!(r.none.pass_us.len(), 2);
        }
        for f in ["native_cs_utilization", "gpio_cs_utilization"] {
            let u = j["spi_gpio_cs"][f].as_f64().unwrap_or(-1.0);
            // Utilization cannot exceed 1: the lab shifts bits in real time.
            assert!(u > 0.0 && u <= 1.0, "spi_gpio_cs.{f} = {u} in {j}");
        }
        assert_eq!(r.spi_gpio_cs.as_ref().unwrap().gpio_rounds.len(), 2);
        assert!(r.table().contains("wirespeed") && r.table().contains("spi_gpio_cs"));
        let spi = spi_cs::SpiCsOptions { rounds: 0, ..spi_cs::SpiCsOptions::default() };
        let r = run(&GpioOptions { toggles: 100, passes: 1, slices: 1, probe: false, spi }).unwrap();
        assert!(r.to_json().get("spi_gpio_cs").is_none(), "rounds 0 skips the SPI part");
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(run(&GpioOptions { toggles: 0, ..GpioOptions::default() }).is_err());
        assert!(run(&GpioOptions { toggles: 5, slices: 10, ..GpioOptions::default() }).is_err());
        assert!(spi_cs::run(&spi_cs::SpiCsOptions { messages: 0, ..spi_cs::SpiCsOptions::default() }).is_err());
    }
}
