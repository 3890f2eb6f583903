//! E1 `canecho` (seed 000's own experiment): a `cangen`-like generator on a
//! virtual CAN bus sends frames to an MCP2518FD model; the mcp251xfd driver,
//! in one thread playing the IRQ thread and `canecho`, receives each frame
//! and sends it back. Run once per SPI-core policy (`classic` = Linux 5.18,
//! the seed's kernel A; `linux69` = Linux 6.9, today's kernel; `fast` = every
//! mechanism on), each on its own lab and bus.
//!
//! Two runs per policy, each split into `rounds` (by default one per 100
//! timed frames, at most 10: fewer frames per rig would leave fast's INT
//! wait too little time to learn the interrupts' period) interleaved
//! rounds — classic, linux-6.9, fast, classic, … (each followed by its
//! run on the ideal chip when the errata are compared) — whose samples are
//! pooled per policy:
//! - the **timed run** (default 1000 frames of 8 bytes, 10 ms apart, at
//!   250 kbit/s) with the SPI bus traced: `gap_us` (the request's EOF to the
//!   echo's SOF, from the bus recorder), `irq_low_us` (INT low per frame, from
//!   a probe on the lab pin), `cs_to_clock_us`, `cs_high_gap_us` (CS high
//!   between the first and second access after the frame), the bit lengths of
//!   the frame's SPI transfers, and the **physical limit** of an echo
//!   (`gap_limit_us`, `gap_vs_limit` = median gap / limit), a lower bound
//!   no driver can beat on the lab's MCP2518FD: what must happen one after
//!   another from the request's EOF to the echo's SOF, counting no software,
//!   no chip-select timing and no interrupt latency (`run::echo_limit`):
//!   the chip's store delay (the RX object is in RAM at EOF + 1 µs), the SPI
//!   bits that carry the frame's DLC and payload out of the RX object and
//!   into the TX object and then request it (UINC | TXREQ), at the SPI clock
//!   the driver ran — the first READ command may shift during the store, the
//!   echo's fixed ID can be written beforehand — and the chip's TX-start
//!   delay (2 µs); plus whatever part of the bus intermission (3 bit times
//!   from EOF, which runs alongside all that) they leave uncovered
//!   (`gap_limit_parts_us`: `spi_wire`, `chip_fixed`,
//!   `intermission_unoverlapped`, summing to the limit;
//!   `gap_limit_spi_bits`). For 8 bytes at 250 kbit/s and the driver's
//!   16.7 MHz SPI: 216 bits, 13.0 + 3.0 + 0 = 16.0 µs. Beside it, what
//!   this driver's own transfers allow (`run::driver_floor_ns`):
//!   `gap_driver_floor_us`, the median over echoes of the chip's delays plus
//!   the wire time of the transfers it made between EOF and SOF (about 408
//!   bits, 27.5 µs: it reads C1INT and FIFOSTA and the whole RX object,
//!   as Linux's driver does), no software counted; `gap_vs_limit_bound`,
//!   that floor over the limit, the lowest `gap_vs_limit` any SPI core can
//!   give this driver; and at the top `gap_ratio_bound`, fast's floor over
//!   classic's median gap, the lowest `gap_ratio` any SPI core can reach
//!   with it. And where each
//!   gap went (`gap_breakdown_us`, medians): EOF → INT asserted, INT → the
//!   driver's first CS (the interrupt's delivery and the wake-up), first CS
//!   → echo SOF (SPI, software between messages, the model's TX start);
//!   INT → first CS split in two: `int_late_by_lab`, how late the lab's
//!   interrupt thread drove that INT (the emulation's share, which no
//!   software could see sooner: the chip model stores the frame and drives
//!   its pin after the 1 µs the model says, on a thread woken from a sleep
//!   of up to 10 ms; `int_delivery_us` is the same over every fall of INT,
//!   TX-done ones included), and `int_driven_to_first_cs`, the rest;
//!   and `timed_echo_thread_cpu_pct`, what the echo thread's waiting cost.
//!   With `fast` the driver's INT wait polls ahead of a predicted interrupt
//!   within its CPU budget (`IntWaitConfig`); with the kernel presets it
//!   always sleeps on the interrupt, as the kernel's threaded IRQ does.
//!   `int_wait` counts how the driver's INT waits ended: `polled`, `woken`,
//!   `immediate` (asserted already), `timed_sleeps`, `early` (the
//!   interrupt came during a timed sleep, before its poll window: woken)
//!   and `poll_misses` (`load_int_wait`: the same in the load run, where
//!   frames come back to back and fast's budget rarely affords polling);
//! - the **load run** (back-to-back frames, 20,000 by default) for CPU:
//!   `irq_thread_cpu_pct` is the CPU time of the threads that do the IRQ
//!   path's work — the echo thread (`CLOCK_THREAD_CPUTIME_ID`) plus the SPI
//!   core's pump thread (`/proc/self/task/*/schedstat`), which under the
//!   kernel presets runs the driver's TX messages (submitted as Linux's
//!   driver does, `spi_async`: seed 000's step 8; fast runs them in the
//!   echo thread on its idle bus, `async_in_caller`, as the seed's kernel C
//!   replaced that `spi_async` with a sync call) and, in classic, wakes
//!   after every message it did not run (the seed counted only its IRQ
//!   thread, 13.3 %, which pumped its own `spi_sync` messages; its pump
//!   thread ran the TX) —
//!   over the run's elapsed time; both parts are reported too. Part of it
//!   is the emulation's, not the stack's: arming a lab event earlier than
//!   the one the lab's sleeping interrupt thread waits for (each
//!   interrupt-driven transfer's end, in classic) wakes that thread, a
//!   system call and on this VM an inter-processor interrupt that hardware
//!   never charges. The lab counts it per thread ([`wirespeed_lab::WakeCost`];
//!   the notifying thread's CPU time in the notifications, `cpu_ns`, not
//!   their wall time, which also holds the woken thread's run whenever it
//!   preempts the notifier on its CPU): `lab_wake_cpu_pct`, `lab_wakes_per_echo`, and
//!   `irq_thread_cpu_pct_without_lab_wakes`; `cpu_ratio` and
//!   `cpu_ratio_vs_linux69` compare the CPU without it (as measured, with
//!   it: `*_with_lab_wakes`). Per echo: `irq_thread_cpu_us_per_echo_without_lab_wakes`,
//!   and what the SPI block clocked for the driver's transfers
//!   (`load_spi_bits_per_echo`, `load_spi_wire_us_per_echo`, the lab's
//!   [`wirespeed_lab::spi::Clocked`]). A policy that polls its transfers
//!   (fast, as the seed's kernel C) spends at least that wire time on the
//!   CPU, so `cpu_ratio` cannot go below `cpu_ratio_bound` (fast's wire
//!   time over classic's CPU); `cpu_ratio_beyond_wire` is the rest, the
//!   software's share (the two add up to `cpu_ratio`).
//!   `cpu_ratio_bound_sleeping` is the same for a policy that sleeps
//!   wherever a sleep is cheaper than the wire: one sleep for INT, and per
//!   transfer the lesser of its wire time and a sleep's CPU (the wake-up
//!   probe's `sleep_cpu_us`), no software counted. The seed's 0.33
//!   came from a 1.2 GHz Cortex-A53 whose kernel A spent ~120 µs of CPU
//!   an echo beside a similar wire time (its IRQ thread alone); this
//!   host's classic spent 44–73 µs in the full runs of 2026-11-28 (at
//!   SCHED_FIFO 50, its pump thread's TX included; the driver's
//!   `cs_change`s at 0 ns, as Linux's), so fast's wire alone (27.4 µs) is
//!   0.37–0.62 of it, and 0.33 is out of reach of a policy that polls. Beside them, `load_host_steal_pct`: the CPU
//!   time a hypervisor took from this machine during the run (`/proc/stat`). The lab's bus runs in real time while a
//!   stolen CPU stands still, so frames lost under load follow steal.
//!
//! **Where the emulated hardware runs.** Each lab's interrupt thread
//! (the CAN bus, the chip's timers, the SPI block's interrupt) is a thread
//! of this process: by default the scheduler may run it on the echo
//! thread's CPU, and then it preempts the echo thread in the middle of its
//! transfers, a cost hardware never charges. `timed_echo_preemptions_per_echo`
//! and `load_echo_preemptions_per_echo` count the echo thread's involuntary
//! context switches (`getrusage(RUSAGE_THREAD)`): what the lab (or anything
//! else) took from it. `load_echo_sleeps_per_echo` counts its voluntary
//! ones: each time it slept — on INT, on a transfer's interrupt, on the
//! pump's completion of its TX — every one a wake-up's CPU on the bill
//! (classic: the INT and each transfer; linux-6.9: the INT alone, its pump
//! thread runs the TX; fast: the INT, and its two long transfers unless
//! its polling budget polls them, about 2.6–2.7 an echo in all).
//! `--lab-cpus LIST` ([`CanechoOptions::lab_cpus`]) keeps them apart: the
//! labs' interrupt threads on those CPUs, the stack's threads (echo, SPI
//! pump) on the others; `placement` in the JSON says
//! which. Apart, fast's core may find the interrupt cheap enough to sleep
//! through its longer transfers (its adaptive completion), and its CPU can
//! then fall below the wire time: `cpu_ratio_bound` holds only while fast
//! polls every transfer.
//!
//! **How the IRQ path is scheduled.** The kernel seed 000 measured runs
//! both threads of this path at SCHED_FIFO 50: the threaded interrupt
//! handler (`request_threaded_irq` → `setup_irq_thread` → `sched_set_fifo`)
//! and the SPI controller's message pump, because `mcp251xfd_probe` sets
//! `spi->rt = true` (→ `spi_set_thread_rt`, the same `sched_set_fifo`). So
//! does this experiment, for every policy alike
//! ([`CanechoOptions::irq_priority`], `--irq-priority`, default
//! [`IRQ_THREAD_PRIORITY`]): the echo thread, the SPI core's pump thread and
//! the labs' interrupt threads inherit SCHED_FIFO 50 from the thread that
//! starts them. At equal realtime priority a waking lab thread cannot
//! preempt the running echo thread, so the scheduler puts it on another
//! CPU, as hardware runs beside the CPU; at SCHED_OTHER (`--irq-priority 0`)
//! it preempts the echo thread in the middle of its transfers instead
//! (about two to six times per echo here). `scheduling` in the JSON says
//! what the runs had, `echo_thread_realtime` per policy what the echo
//! thread had; a refusal (no privilege) is reported and the runs go on.
//! `wakeup_probe` is the SPI core's one-time measurement of a wake-up
//! (latency, and the sleeping thread's CPU), and `poll_below_us` per policy
//! the wire time below which that bus polled a transfer rather than sleep
//! on its interrupt (fast: the two added up, refined by its interrupt
//! waits, and above it fast still polls while its bus's polling budget,
//! 0.3 % of wall time, has room: the timed run's sparse echoes poll, the
//! load run's mostly sleep; linux-6.9: spi-imx's 30 µs; classic: none, it
//! always sleeps).
//!
//! **The chip as the silicon is.** The MCP2518FD model runs with its errata
//! on (`model.errata` lists them: the TBC read-CRC, the FIFOCI index, no
//! CERRIF on the way back to error-active, the SPI clock limit, ECC, sleep,
//! MAB errors); each policy reports `errata_recovered`, how many times one
//! of the driver's workarounds fired (in the load run; `timed_errata_recovered`
//! for the timed run), and beside it what the chip did, from the lab's
//! backdoor: `chip_errata_hits` (`timed_chip_errata_hits`), how many times
//! each erratum changed what the driver saw, by counter (`tbc_read_crc`,
//! `fifoci`, `cerrif_suppressed`, `spi_clock`, `ecc_sec`, `ecc_ded`,
//! `reset_ignored`, `mab`; counted from the rig's start, the driver's setup
//! included). A policy that reads FIFOSTA sooner after a store meets the
//! `fifoci` erratum's window more often, so the counts differ by policy.
//! By default every policy also runs on the ideal chip
//! (errata off) right after its errata-on run, and the report gives those
//! runs (`errata_off`) and what the errata changed in the ratios
//! (`errata_effect_pct`); `--no-errata` runs the ideal chip alone.
//!
//! `CanechoReport::latency_plot` draws the timed run's gaps as histograms
//! (`--plot`), the physical limit as the floor.
//!
//! The echo answers with the request's id − 1 (configurable), so that at
//! full load the echo wins arbitration instead of starving behind a
//! generator that is always ready (`canecho.c` uses id + 1).

mod plot;
mod rig;
mod run;

use crate::stats::{median, round};
use crate::table::Table;
use run::{int_wait_json, int_wait_share, summary, Load, Timed};
use serde_json::json;
use wirespeed::spi::Policy;
use wirespeed_lab::devices::mcp2518fd::{Errata, ErrataHits};
use wirespeed_time::realtime::{current_thread_cpus, pin_current_thread, CpuList, FifoGuard, FifoPriority};

pub use rig::Traffic;

/// Options of the experiment.
#[derive(Clone, Debug)]
pub struct CanechoOptions {
    /// Frames in the timed run.
    pub frames: u64,
    /// Payload bytes (0..=8).
    pub len: usize,
    /// Standard identifier of the generated frames.
    pub id: u16,
    /// Gap between frames in the timed run, µs (cangen -g, in µs).
    pub gap_us: u64,
    /// Nominal bit rate.
    pub bitrate: u32,
    /// Frames in the load run (0: skip it).
    pub load_frames: u64,
    /// Echo id = request id + this.
    pub echo_id_offset: i32,
    /// The MCP2518FD model with its silicon errata (the default) or as an
    /// ideal chip (`--no-errata`).
    pub errata: bool,
    /// With errata on, also run every policy on the ideal chip, interleaved
    /// (each policy's errata-on run next to its errata-off run), and report
    /// what the errata cost (`errata_off`, `errata_effect_pct`).
    pub compare_errata: bool,
    /// Each policy's runs are split into this many rounds, interleaved
    /// with the other policies' (and with the errata-off runs): figures
    /// pool the rounds' samples. 0: one per 100 timed frames, 1..=10
    /// ([`CanechoOptions::rounds_to_run`]).
    pub rounds: u64,
    /// Keep the emulated hardware and the software apart: each lab's
    /// interrupt thread runs on these CPUs, and the stack's threads (the
    /// echo thread, the SPI pump) on the others this process may use
    /// (`None`: all threads wherever the scheduler puts them).
    pub lab_cpus: Option<CpuList>,
    /// The IRQ path's scheduling: `Some(p)` runs the echo thread, the SPI
    /// core's pump thread and the labs' interrupt threads at SCHED_FIFO `p`
    /// ([`IRQ_THREAD_PRIORITY`] by default, as the kernel runs them); `None`
    /// leaves every thread at the policy this process has (SCHED_OTHER,
    /// unless `--realtime` changed it).
    pub irq_priority: Option<FifoPriority>,
}

/// The SCHED_FIFO priority the kernel gives the threads seed 000 measured:
/// a threaded interrupt handler (`kernel/irq/manage.c`, `setup_irq_thread`:
/// `sched_set_fifo`, `MAX_RT_PRIO / 2`) and the SPI controller's message
/// pump once a device asks for it (`spi_set_thread_rt`, the same call;
/// `mcp251xfd_probe` sets `spi->rt = true`).
pub const IRQ_THREAD_PRIORITY: u32 = 50;

impl Default for CanechoOptions {
    fn default() -> Self {
        CanechoOptions {
            frames: 1000,
            len: 8,
            id: 0x077,
            gap_us: 10_000,
            bitrate: 250_000,
            load_frames: 20_000,
            echo_id_offset: -1,
            errata: true,
            compare_errata: true,
            rounds: 0,
            lab_cpus: None,
            irq_priority: Some(FifoPriority::new(IRQ_THREAD_PRIORITY).expect("50 is within 1..=99")),
        }
    }
}

impl CanechoOptions {
    /// The rounds the runs are split into: [`CanechoOptions::rounds`], or
    /// if 0 one per 100 timed frames, 1..=10.
    pub fn rounds_to_run(&self) -> u64 {
        if self.rounds == 0 {
            (self.frames / 100).clamp(1, 10)
        } else {
            self.rounds
        }
    }

    /// The `--quick` settings: 300 frames, a 3,000-frame load run.
    pub fn quick() -> CanechoOptions {
        CanechoOptions { frames: 300, load_frames: 3_000, ..CanechoOptions::default() }
    }
}

/// One policy's figures.
#[derive(Clone, Debug)]
pub struct PolicyReport {
    pub timed: Timed,
    pub load: Load,
}

impl PolicyReport {
    fn median_gap(&self) -> f64 {
        median(&self.timed.gaps_us)
    }
    /// The physical limit of an echo, µs (`run::echo_limit`).
    fn limit(&self) -> f64 {
        self.timed.limit.total_ns() / 1e3
    }
    fn pct(&self, ns: u64) -> f64 {
        ns as f64 * 100.0 / self.load.elapsed_ns as f64
    }
    fn irq_cpu_pct(&self) -> f64 {
        self.pct(self.load.echo_thread_cpu_ns + self.load.pump_thread_cpu_ns)
    }
    /// The part of [`irq_cpu_pct`](Self::irq_cpu_pct) the echo thread spent
    /// waking the lab's interrupt thread (the emulation's cost).
    fn lab_wake_pct(&self) -> f64 {
        self.pct(self.load.echo_lab_wakes.cpu_ns)
    }
    /// [`irq_cpu_pct`](Self::irq_cpu_pct) without the lab's wake-ups.
    fn irq_cpu_pct_without_lab_wakes(&self) -> f64 {
        self.irq_cpu_pct() - self.lab_wake_pct()
    }
    fn per_echo_us(&self, ns: u64) -> f64 {
        ns as f64 / 1e3 / self.load.frames_echoed.max(1) as f64
    }
    /// The IRQ path's CPU per echo in the load run, lab wake-ups left out, µs.
    fn cpu_us_per_echo(&self) -> f64 {
        let ns = self.load.echo_thread_cpu_ns + self.load.pump_thread_cpu_ns;
        self.per_echo_us(ns.saturating_sub(self.load.echo_lab_wakes.cpu_ns))
    }
    /// The median over echoes of the least gap the driver's own transfers
    /// allow (`run::driver_floor_ns`), µs.
    fn driver_floor(&self) -> f64 {
        median(&self.timed.driver_floor_us)
    }
    /// The median gap over the physical limit (`gap_vs_limit`).
    fn gap_vs_limit(&self) -> f64 {
        self.median_gap() / self.limit()
    }
    /// The driver's floor over the physical limit: the lowest
    /// [`gap_vs_limit`](Self::gap_vs_limit) any SPI core can give this driver.
    fn gap_vs_limit_bound(&self) -> f64 {
        self.driver_floor() / self.limit()
    }
    /// The SPI wire time the driver's transfers took per echo in the load
    /// run (what the block clocked), µs.
    fn wire_us_per_echo(&self) -> f64 {
        self.per_echo_us(self.load.spi_clocked.wire_ns)
    }
    /// One SPI bit's wire time in the load run (what the block clocked), ns.
    fn spi_bit_ns(&self) -> f64 {
        self.load.spi_clocked.wire_ns as f64 / self.load.spi_clocked.bits.max(1) as f64
    }
    /// The same wire time over the load run's length, %.
    fn wire_pct(&self) -> f64 {
        self.pct(self.load.spi_clocked.wire_ns)
    }
    /// Frames never read from the chip (lost to RX FIFO overflow) plus
    /// frames read but dropped because the driver's queue was full.
    fn frames_lost(&self) -> u64 {
        self.load.frames_sent.saturating_sub(self.load.frames_received) + self.load.rx_dropped
    }

    fn to_json(&self) -> serde_json::Value {
        let r1 = |x: f64| round(x, 1);
        let t = &self.timed;
        json!({
            "gap_us": summary(&t.gaps_us),
            "irq_low_us": r1(median(&t.irq_low_us)),
            "int_delivery_us": r1(median(&t.int_delivery_us)),
            "int_wait": int_wait_json(&t.int_wait),
            "load_int_wait": int_wait_json(&self.load.int_wait),
            "gap_breakdown_us": {
                "eof_to_int": r1(median(&t.breakdown_us[0])),
                "int_to_first_cs": r1(median(&t.breakdown_us[1])),
                "int_late_by_lab": r1(median(&t.int_split_us[0])),
                "int_driven_to_first_cs": r1(median(&t.int_split_us[1])),
                "first_cs_to_sof": r1(median(&t.breakdown_us[2])),
            },
            "cs_to_clock_us": round(median(&t.cs_to_clock_us), 2),
            "cs_high_gap_us": round(median(&t.cs_high_gap_us), 2),
            "spi_transfers_per_frame": t.transfers_per_frame,
            "frames_sent": t.frames_sent,
            "frames_echoed": t.frames_echoed,
            "payload_mismatches": t.payload_mismatches,
            "gap_limit_us": r1(self.limit()),
            "gap_vs_limit": round(self.gap_vs_limit(), 2),
            "gap_limit_parts_us": {
                "spi_wire": round(t.limit.spi_wire_ns / 1e3, 2),
                "chip_fixed": round(t.limit.chip_fixed_ns / 1e3, 2),
                "intermission_unoverlapped": round(t.limit.intermission_unoverlapped_ns / 1e3, 2),
            },
            "gap_limit_spi_bits": t.limit.spi_bits,
            "gap_driver_floor_us": r1(self.driver_floor()),
            "gap_vs_limit_bound": round(self.gap_vs_limit_bound(), 2),
            "irq_thread_cpu_pct": round(self.irq_cpu_pct(), 2),
            "echo_thread_cpu_pct": round(self.pct(self.load.echo_thread_cpu_ns), 2),
            "timed_echo_thread_cpu_pct": round(t.echo_cpu_pct, 2),
            "timed_echo_preemptions_per_echo": round(t.echo_preemptions as f64 / t.frames_echoed.max(1) as f64, 3),
            "load_echo_preemptions_per_echo": round(self.load.echo_preemptions as f64 / self.load.frames_echoed.max(1) as f64, 3),
            "load_echo_sleeps_per_echo": round(self.load.echo_sleeps as f64 / self.load.frames_echoed.max(1) as f64, 3),
            "pump_thread_cpu_pct": round(self.pct(self.load.pump_thread_cpu_ns), 2),
            "lab_wake_cpu_pct": round(self.lab_wake_pct(), 2),
            "irq_thread_cpu_pct_without_lab_wakes": round(self.irq_cpu_pct_without_lab_wakes(), 2),
            "lab_wakes_per_echo": round(self.load.echo_lab_wakes.wakes as f64 / self.load.frames_echoed.max(1) as f64, 2),
            "irq_thread_cpu_us_per_echo_without_lab_wakes": r1(self.cpu_us_per_echo()),
            "load_spi_wire_us_per_echo": r1(self.wire_us_per_echo()),
            "load_spi_bits_per_echo": r1(self.load.spi_clocked.bits as f64 / self.load.frames_echoed.max(1) as f64),
            "process_cpu_pct": round(self.pct(self.load.process_cpu_ns), 2),
            "frames_lost": self.frames_lost(),
            "rx_overflow_events": self.load.rx_overflows,
            "load_frames_sent": self.load.frames_sent,
            "load_frames_echoed": self.load.frames_echoed,
            "load_elapsed_s": round(self.load.elapsed_ns as f64 / 1e9, 3),
            "load_host_steal_pct": self.load.host_steal_pct.map(|p| round(p, 1)),
            "errata_recovered": self.load.errata_recovered,
            "timed_errata_recovered": self.timed.errata_recovered,
            "chip_errata_hits": hits_json(self.load.errata_hits),
            "timed_chip_errata_hits": hits_json(self.timed.errata_hits),
            "poll_below_us": self.load.poll_below_ns.map(|ns| r1(ns as f64 / 1e3)),
            "echo_thread_realtime": t.rounds > 0 && t.realtime_rounds == t.rounds,
        })
    }
}

/// The experiment's result.
#[derive(Clone, Debug)]
pub struct CanechoReport {
    pub options: CanechoOptions,
    /// The runs on the chip as configured (errata on by default).
    pub runs: Runs,
    /// The same runs on the ideal chip (errata off), when compared.
    pub errata_off: Option<Box<Runs>>,
    /// The CPUs the stack's threads ran on, when kept off the lab's
    /// ([`CanechoOptions::lab_cpus`]).
    pub stack_cpus: Option<CpuList>,
    /// How the IRQ path's threads were scheduled.
    pub scheduling: Scheduling,
    /// The SPI core's one-time measurement of a wake-up, from which fast's
    /// adaptive completion starts (its `poll_below_us` is where it ended).
    pub wakeup: wirespeed::spi::Wakeup,
}

/// The scheduling the runs had ([`CanechoOptions::irq_priority`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scheduling {
    /// The SCHED_FIFO priority asked for, if any.
    pub requested: Option<u32>,
    /// Why the system refused it (the runs then went on at the process's policy).
    pub refused: Option<String>,
}

impl Scheduling {
    /// The priority the IRQ path ran at, if it ran at SCHED_FIFO by this request.
    pub fn fifo_priority(&self) -> Option<u32> {
        self.requested.filter(|_| self.refused.is_none())
    }

    /// Switches the calling thread, and so every thread it starts while the
    /// guard lives, to SCHED_FIFO at `priority`; a refusal is recorded.
    fn enter(priority: Option<FifoPriority>) -> (Scheduling, Option<FifoGuard>) {
        let requested = priority.map(FifoPriority::get);
        match priority.map(FifoGuard::enter) {
            None => (Scheduling { requested, refused: None }, None),
            Some(Ok(g)) => (Scheduling { requested, refused: None }, Some(g)),
            Some(Err(e)) => (Scheduling { requested, refused: Some(e.to_string()) }, None),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "irq_path": match self.fifo_priority() {
                Some(p) => format!("SCHED_FIFO {p}"),
                None => "process default".to_owned(),
            },
            "requested_fifo_priority": self.requested,
            "refused": self.refused,
        })
    }
}

impl std::ops::Deref for CanechoReport {
    type Target = Runs;
    fn deref(&self) -> &Runs {
        &self.runs
    }
}

/// Runs the experiment.
pub fn run(o: &CanechoOptions) -> Result<CanechoReport, String> {
    if o.len > 8 {
        return Err(format!("--len {}: classic CAN frames carry 0..=8 bytes", o.len));
    }
    if o.id > 0x7FF {
        return Err(format!("--id {:#x}: standard identifiers are 0..=0x7ff", o.id));
    }
    if o.frames == 0 {
        return Err("--frames 0: at least one frame is needed".into());
    }
    let gap_ns = o
        .gap_us
        .checked_mul(1_000)
        .ok_or_else(|| format!("--gap-us {}: at most {} µs (the gap is counted in ns)", o.gap_us, u64::MAX / 1_000))?;
    let timed_t = Traffic { id: o.id, len: o.len, gap_ns, count: o.frames, bitrate: o.bitrate, errata: o.errata };
    let load_t = Traffic { gap_ns: 0, count: o.load_frames, ..timed_t };
    let compare = o.errata && o.compare_errata;
    let rounds = o.rounds_to_run();
    let offset = o.echo_id_offset;
    let lab = o.lab_cpus.as_ref();
    let placed = lab.map(Placement::apart).transpose()?;
    let stack_cpus = placed.as_ref().map(|p| p.stack.clone());
    let (scheduling, fifo) = Scheduling::enter(o.irq_priority);
    let [tc, tl, tf] = pooled(&timed_t, rounds, compare, |p, n, t| run::timed(p, n, t, offset, lab), Timed::merge)?;
    let [lc, ll, lf] = pooled(&load_t, rounds, compare, |p, n, t| run::load(p, n, t, offset, lab), Load::merge)?;
    drop(fifo);
    drop(placed);
    let report = |timed, load| PolicyReport { timed, load };
    let errata_off = match ((tc.1, lc.1), (tl.1, ll.1), (tf.1, lf.1)) {
        ((Some(ct), Some(cl)), (Some(lt), Some(ll)), (Some(ft), Some(fl))) => {
            Some(Box::new(Runs { classic: report(ct, cl), linux69: report(lt, ll), fast: report(ft, fl) }))
        }
        _ => None,
    };
    let runs = Runs { classic: report(tc.0, lc.0), linux69: report(tl.0, ll.0), fast: report(tf.0, lf.0) };
    Ok(CanechoReport {
        options: o.clone(),
        runs,
        errata_off,
        stack_cpus,
        scheduling,
        wakeup: wirespeed::spi::thread_wakeup(),
    })
}

/// The calling thread (and so every thread it starts) kept off a lab's
/// CPUs while this lives; its CPUs as they were afterwards.
struct Placement {
    before: CpuList,
    stack: CpuList,
}

impl Placement {
    /// Moves the calling thread to the CPUs it may use other than `lab`'s.
    fn apart(lab: &CpuList) -> Result<Placement, String> {
        let before = current_thread_cpus().map_err(|e| format!("cannot read this thread's CPUs: {e}"))?;
        if let Some(c) = lab.cpus().iter().find(|c| !before.cpus().contains(c)) {
            return Err(format!("--lab-cpus: CPU {c} is not one this process may use ({:?})", before.cpus()));
        }
        let rest: Vec<usize> = before.cpus().iter().copied().filter(|c| !lab.cpus().contains(c)).collect();
        let stack = CpuList::new(&rest).map_err(|_| {
            format!(
                "--lab-cpus {:?} leaves the stack no CPU of this process's {:?}: leave it at least one",
                lab.cpus(),
                before.cpus()
            )
        })?;
        pin_current_thread(&stack).map_err(|e| format!("cannot move this thread to CPUs {:?}: {e}", stack.cpus()))?;
        Ok(Placement { before, stack })
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        let _ = pin_current_thread(&self.before);
    }
}

/// Runs each policy (classic, linux-6.9, fast) `rounds` times on a share
/// of `base.count` frames, interleaved — and, with `compare`, each run
/// followed by the same on the ideal chip (A B A B …, so that drift
/// between runs does not pass for the errata's cost) — and pools each
/// policy's rounds with `merge`: per policy (errata as set, ideal chip).
fn pooled<T: Default>(
    base: &Traffic,
    rounds: u64,
    compare: bool,
    run: impl Fn(Policy, &'static str, &Traffic) -> Result<T, String>,
    merge: impl Fn(T, T) -> T,
) -> Result<[(T, Option<T>); 3], String> {
    let policies = [(Policy::classic(), "spiA"), (Policy::linux69(), "spiL"), (Policy::fast(), "spiC")];
    let mut out: [(T, Option<T>); 3] = std::array::from_fn(|_| (T::default(), compare.then(T::default)));
    for r in 0..rounds {
        let t = Traffic { count: base.count / rounds + u64::from(r < base.count % rounds), ..*base };
        if t.count == 0 {
            continue;
        }
        for ((policy, name), (on, off)) in policies.iter().zip(out.iter_mut()) {
            *on = merge(std::mem::take(on), run(policy.clone(), name, &t)?);
            if let Some(off) = off {
                *off = merge(std::mem::take(off), run(policy.clone(), name, &Traffic { errata: false, ..t })?);
            }
        }
    }
    Ok(out)
}

/// The three policies' figures on one kind of chip.
#[derive(Clone, Debug)]
pub struct Runs {
    pub classic: PolicyReport,
    pub linux69: PolicyReport,
    pub fast: PolicyReport,
}

impl Runs {
    /// Median gap, fast / classic.
    pub fn gap_ratio(&self) -> f64 {
        self.fast.median_gap() / self.classic.median_gap()
    }
    /// IRQ-path CPU, fast / classic, each without its lab wake-ups (the
    /// emulation's cost, not the stack's).
    pub fn cpu_ratio(&self) -> f64 {
        self.fast.irq_cpu_pct_without_lab_wakes() / self.classic.irq_cpu_pct_without_lab_wakes()
    }
    /// Median gap, fast / linux-6.9.
    pub fn gap_ratio_vs_linux69(&self) -> f64 {
        self.fast.median_gap() / self.linux69.median_gap()
    }
    /// The lowest [`gap_ratio`](Self::gap_ratio) any SPI core could give
    /// this driver: fast's driver floor (its transfers' wire time and the
    /// chip's delays, nothing else) over classic's median gap.
    pub fn gap_ratio_bound(&self) -> f64 {
        self.fast.driver_floor() / self.classic.median_gap()
    }
    /// IRQ-path CPU, fast / linux-6.9, each without its lab wake-ups.
    pub fn cpu_ratio_vs_linux69(&self) -> f64 {
        self.fast.irq_cpu_pct_without_lab_wakes() / self.linux69.irq_cpu_pct_without_lab_wakes()
    }
    /// The lowest [`cpu_ratio`](Self::cpu_ratio) a policy that polls its
    /// transfers can reach: it spends at least their wire time on the CPU,
    /// so fast's SPI wire time over classic's CPU (both per second of
    /// their load runs, as `cpu_ratio`).
    pub fn cpu_ratio_bound(&self) -> f64 {
        self.fast.wire_pct() / self.classic.irq_cpu_pct_without_lab_wakes()
    }
    /// Fast's CPU beyond the wire time it polls, over classic's CPU: the
    /// software's share of [`cpu_ratio`](Self::cpu_ratio), which is this
    /// plus [`cpu_ratio_bound`](Self::cpu_ratio_bound).
    pub fn cpu_ratio_beyond_wire(&self) -> f64 {
        (self.fast.irq_cpu_pct_without_lab_wakes() - self.fast.wire_pct())
            / self.classic.irq_cpu_pct_without_lab_wakes()
    }
    /// [`cpu_ratio`](Self::cpu_ratio) as measured, lab wake-ups included.
    pub fn cpu_ratio_with_lab_wakes(&self) -> f64 {
        self.fast.irq_cpu_pct() / self.classic.irq_cpu_pct()
    }
    /// [`cpu_ratio_vs_linux69`](Self::cpu_ratio_vs_linux69) as measured, lab wake-ups included.
    pub fn cpu_ratio_vs_linux69_with_lab_wakes(&self) -> f64 {
        self.fast.irq_cpu_pct() / self.linux69.irq_cpu_pct()
    }
}

/// The chip model's erratum counters as one JSON object, by name.
fn hits_json(h: ErrataHits) -> serde_json::Value {
    h.counts().into_iter().map(|(name, n)| (name.to_string(), json!(n))).collect()
}

/// Relative change from `base` to `x`, %.
fn change_pct(x: f64, base: f64) -> f64 {
    (x / base - 1.0) * 100.0
}

impl CanechoReport {
    /// The lowest gap ratio against linux-6.9 any implementation could
    /// reach on this lab: the physical limit over linux-6.9's median gap.
    pub fn gap_ratio_vs_linux69_bound(&self) -> f64 {
        self.fast.limit() / self.linux69.median_gap()
    }

    /// The lowest [`cpu_ratio`](Runs::cpu_ratio) a policy reaches that
    /// sleeps instead of polling wherever a sleep is cheaper, with no
    /// software at all: per echo, one sleep for INT (every policy's) and,
    /// for each of the driver's transfers (fast's usual pattern in the
    /// timed run), the lesser of its wire time and one sleep, a sleep
    /// costing the CPU the SPI core's wake-up probe measured
    /// (`wakeup_probe.sleep_cpu_us`); over classic's CPU per echo.
    pub fn cpu_ratio_bound_sleeping(&self) -> f64 {
        let f = &self.fast;
        let bit_ns = f.spi_bit_ns();
        let sleep_ns = self.wakeup.sleep_cpu_ns as f64;
        let transfers_ns: f64 = f.timed.transfers_per_frame.iter().map(|&b| (b as f64 * bit_ns).min(sleep_ns)).sum();
        (sleep_ns + transfers_ns) / 1e3 / self.classic.cpu_us_per_echo()
    }

    /// One JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let o = &self.options;
        json!({
            "scenario": "canecho",
            "options": {
                "frames": o.frames, "len": o.len, "id": o.id, "gap_us": o.gap_us, "bitrate": o.bitrate,
                "load_frames": o.load_frames, "echo_id_offset": o.echo_id_offset,
                "errata": o.errata, "compare_errata": o.compare_errata,
                "rounds": o.rounds_to_run(),
            },
            "placement": {
                "lab_cpus": o.lab_cpus.as_ref().map(|l| l.cpus().to_vec()),
                "stack_cpus": self.stack_cpus.as_ref().map(|l| l.cpus().to_vec()),
            },
            "scheduling": self.scheduling.to_json(),
            "wakeup_probe": {
                "latency_us": round(self.wakeup.latency_ns as f64 / 1e3, 1),
                "sleep_cpu_us": round(self.wakeup.sleep_cpu_ns as f64 / 1e3, 1),
            },
            "classic": self.classic.to_json(),
            "linux69": self.linux69.to_json(),
            "fast": self.fast.to_json(),
            "gap_ratio": round(self.gap_ratio(), 3),
            "gap_ratio_bound": round(self.gap_ratio_bound(), 3),
            "cpu_ratio": round(self.cpu_ratio(), 3),
            "gap_ratio_vs_linux69": round(self.gap_ratio_vs_linux69(), 3),
            "gap_ratio_vs_linux69_bound": round(self.gap_ratio_vs_linux69_bound(), 3),
            "cpu_ratio_vs_linux69": round(self.cpu_ratio_vs_linux69(), 3),
            "cpu_ratio_bound": round(self.cpu_ratio_bound(), 3),
            "cpu_ratio_bound_sleeping": round(self.cpu_ratio_bound_sleeping(), 3),
            "cpu_ratio_beyond_wire": round(self.cpu_ratio_beyond_wire(), 3),
            "cpu_ratio_with_lab_wakes": round(self.cpu_ratio_with_lab_wakes(), 3),
            "cpu_ratio_vs_linux69_with_lab_wakes": round(self.cpu_ratio_vs_linux69_with_lab_wakes(), 3),
            "linux69_gap_ratio_vs_classic": round(self.linux69.median_gap() / self.classic.median_gap(), 3),
            "linux69_cpu_ratio_vs_classic": round(
                self.linux69.irq_cpu_pct_without_lab_wakes() / self.classic.irq_cpu_pct_without_lab_wakes(),
                3
            ),
            "model": { "errata": if o.errata { Errata::ALL.names() } else { Errata::NONE.names() } },
            "errata_off": self.errata_off.as_ref().map(|r| json!({
                "classic": r.classic.to_json(),
                "linux69": r.linux69.to_json(),
                "fast": r.fast.to_json(),
                "gap_ratio": round(r.gap_ratio(), 3),
                "cpu_ratio": round(r.cpu_ratio(), 3),
                "gap_ratio_vs_linux69": round(r.gap_ratio_vs_linux69(), 3),
                "cpu_ratio_vs_linux69": round(r.cpu_ratio_vs_linux69(), 3),
            })),
            "errata_effect_pct": self.errata_off.as_ref().map(|r| json!({
                "gap_ratio": round(change_pct(self.gap_ratio(), r.gap_ratio()), 1),
                "cpu_ratio": round(change_pct(self.cpu_ratio(), r.cpu_ratio()), 1),
            })),
        })
    }

    /// The seed's table: A = classic (5.18), 6.9 = linux-6.9, C = fast.
    pub fn table(&self) -> String {
        let (a, l, c) = (&self.classic, &self.linux69, &self.fast);
        let mut t = Table::new(&["", "A (classic)", "6.9", "C (fast)", "C/A", "C/6.9", "seed A", "seed C"]);
        let ratio = |y: f64, x: f64| crate::table::ratio(y, x, 1, 2);
        let mut row = |name: &str, f: &dyn Fn(&PolicyReport) -> f64, sa: &str, sc: &str| {
            let (x, m, y) = (f(a), f(l), f(c));
            t.row(vec![
                name.into(),
                format!("{x:.1}"),
                format!("{m:.1}"),
                format!("{y:.1}"),
                ratio(y, x),
                ratio(y, m),
                sa.into(),
                sc.into(),
            ]);
        };
        row("RX EOF → echo SOF (µs)", &|p| p.median_gap(), "380", "152");
        row("IRQ line low (µs)", &|p| median(&p.timed.irq_low_us), "160", "55");
        row("INT asserted late by the lab (µs)", &|p| median(&p.timed.int_delivery_us), "-", "-");
        row("  the RX INT of an echo (µs)", &|p| median(&p.timed.int_split_us[0]), "-", "-");
        row("RX INT driven → driver's first CS (µs)", &|p| median(&p.timed.int_split_us[1]), "-", "-");
        row(
            "INT found by polling (% of waits)",
            &|p| int_wait_share(&p.timed.int_wait, p.timed.int_wait.polled),
            "-",
            "-",
        );
        row(
            "  came during the timed sleep before it (%)",
            &|p| int_wait_share(&p.timed.int_wait, p.timed.int_wait.early),
            "-",
            "-",
        );
        row("CS → first clock (µs)", &|p| median(&p.timed.cs_to_clock_us), "10", "2.6");
        row("CS high, 1st → 2nd access (µs)", &|p| median(&p.timed.cs_high_gap_us), "25", "5");
        row("IRQ thread CPU at full load (%)", &|p| p.irq_cpu_pct_without_lab_wakes(), "13.3", "4.4");
        row("  + waking the lab's interrupt thread (%)", &|p| p.lab_wake_pct(), "-", "-");
        row("IRQ path CPU per echo at full load (µs)", &|p| p.cpu_us_per_echo(), "-", "-");
        row("  of it, SPI wire the driver's transfers took (µs)", &|p| p.wire_us_per_echo(), "-", "-");
        let mut s = t.render();
        let lim = &c.timed.limit;
        s.push_str(&format!(
            "\nphysical limit of an echo: {:.1} µs, a lower bound no driver can beat on this chip (fast is {:.2}× it): \
             the {} SPI bits that must follow one another\n(read DLC and payload, write them to the TX object, \
             request it) {:.1} µs + the chip's store and TX-start delays {:.1} µs + the part of the bus intermission \
             they leave uncovered {:.1} µs\n",
            c.limit(),
            c.gap_vs_limit(),
            lim.spi_bits,
            lim.spi_wire_ns / 1e3,
            lim.chip_fixed_ns / 1e3,
            lim.intermission_unoverlapped_ns / 1e3,
        ));
        s.push_str(&format!(
            "what this driver's own transfers allow: {:.1} µs (their wire time and the chip's delays, no software; {:.2}× the limit): \
             C's gap is {:.2}× it; gap C/A {:.3}, bound {:.3} (C's floor over A's gap)\n",
            c.driver_floor(),
            c.gap_vs_limit_bound(),
            c.median_gap() / c.driver_floor(),
            self.gap_ratio(),
            self.gap_ratio_bound(),
        ));
        s.push_str(&format!(
            "CPU C/A {:.3}, bound {:.3}: a policy that polls its transfers spends at least their wire time on the CPU \
             ({:.1} µs an echo, against A's {:.1} µs of CPU); beyond the wire, C's CPU is {:.3}× A's; \
             sleeping wherever a {:.1} µs sleep costs less than the wire, no software: {:.3}\n",
            self.cpu_ratio(),
            self.cpu_ratio_bound(),
            c.wire_us_per_echo(),
            a.cpu_us_per_echo(),
            self.cpu_ratio_beyond_wire(),
            self.wakeup.sleep_cpu_ns as f64 / 1e3,
            self.cpu_ratio_bound_sleeping(),
        ));
        s.push_str(&match (&self.scheduling.fifo_priority(), &self.scheduling.refused) {
            (Some(p), _) => format!(
                "IRQ path (echo thread, SPI pump) and the lab's interrupt threads at SCHED_FIFO {p}, as the kernel runs an IRQ thread and an rt SPI pump\n"
            ),
            (None, Some(why)) => format!("IRQ path at the process's scheduling: SCHED_FIFO refused ({why})\n"),
            (None, None) => "IRQ path at the process's scheduling (--irq-priority 0)\n".to_owned(),
        });
        s.push_str(&format!(
            "SPI transfers per frame: A {:?}, 6.9 {:?}, C {:?}\n",
            a.timed.transfers_per_frame, l.timed.transfers_per_frame, c.timed.transfers_per_frame
        ));
        s.push_str(&format!(
            "frames echoed: A {}/{}, 6.9 {}/{}, C {}/{}; payload mismatches: A {}, 6.9 {}, C {}; lost under load: A {}, 6.9 {}, C {}\n",
            a.timed.frames_echoed,
            a.timed.frames_sent,
            l.timed.frames_echoed,
            l.timed.frames_sent,
            c.timed.frames_echoed,
            c.timed.frames_sent,
            a.timed.payload_mismatches,
            l.timed.payload_mismatches,
            c.timed.payload_mismatches,
            a.frames_lost(),
            l.frames_lost(),
            c.frames_lost()
        ));
        s.push_str(&format!(
            "MCP2518FD errata: {}; driver workarounds fired (load run): A {}, 6.9 {}, C {}\n",
            if self.options.errata { Errata::ALL.names().join(", ") } else { "off (an ideal chip)".into() },
            a.load.errata_recovered,
            l.load.errata_recovered,
            c.load.errata_recovered
        ));
        if let Some(r) = &self.errata_off {
            s.push_str(&format!(
                "the same runs on an ideal chip (interleaved): gap C/A {:.3} (errata on {:.3}, {:+.1} %), CPU C/A {:.3} (errata on {:.3}, {:+.1} %)\n",
                r.gap_ratio(),
                self.gap_ratio(),
                change_pct(self.gap_ratio(), r.gap_ratio()),
                r.cpu_ratio(),
                self.cpu_ratio(),
                change_pct(self.cpu_ratio(), r.cpu_ratio()),
            ));
        }
        if let (Some(sa), Some(sl), Some(sc)) = (a.load.host_steal_pct, l.load.host_steal_pct, c.load.host_steal_pct) {
            s.push_str(&format!(
                "CPU time the hypervisor stole during the load runs: A {sa:.1} %, 6.9 {sl:.1} %, C {sc:.1} % (the lab's bus keeps real time while a stolen CPU stands still)\n"
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_time::realtime::current_thread_is_realtime;

    #[test]
    fn the_lab_can_be_kept_off_the_stacks_cpus_and_bad_lists_are_refused_before_anything_runs() {
        let mine = current_thread_cpus().unwrap();
        let o = |cpus: &[usize]| CanechoOptions {
            frames: 10,
            gap_us: 3_000,
            load_frames: 100,
            compare_errata: false,
            lab_cpus: Some(CpuList::new(cpus).unwrap()),
            ..CanechoOptions::default()
        };
        let all = run(&o(mine.cpus())).map(|_| ()).expect_err("no CPU left for the stack");
        assert!(all.contains("leaves the stack no CPU"), "{all}");
        let stranger = (0..wirespeed_time::realtime::MAX_CPUS).find(|c| !mine.cpus().contains(c)).unwrap();
        let e = run(&o(&[stranger])).map(|_| ()).expect_err("a CPU this process may not use");
        assert!(e.contains(&format!("CPU {stranger} is not one this process may use")), "{e}");
        assert_eq!(current_thread_cpus().unwrap(), mine, "a refused run leaves this thread's CPUs as they were");
        let [.., lab] = mine.cpus() else { unreachable!("a CPU list is never empty") };
        if mine.cpus().len() < 2 {
            return;
        }
        let r = run(&o(&[*lab])).unwrap();
        let stack: Vec<usize> = mine.cpus().iter().copied().filter(|c| c != lab).collect();
        assert_eq!(r.to_json()["placement"], json!({"lab_cpus": [lab], "stack_cpus": stack}));
        assert_eq!(r.fast.timed.frames_echoed, 10, "every frame echoed with the lab apart");
        assert_eq!(current_thread_cpus().unwrap(), mine, "the run gives this thread its CPUs back");
    }

    #[test]
    fn without_an_irq_priority_the_echo_thread_keeps_the_process_policy() {
        if current_thread_is_realtime() {
            return; // nothing to tell apart
        }
        let o = CanechoOptions {
            frames: 10,
            gap_us: 3_000,
            load_frames: 100,
            compare_errata: false,
            irq_priority: None,
            ..CanechoOptions::default()
        };
        let j = run(&o).unwrap().to_json();
        assert_eq!(j["scheduling"]["irq_path"], "process default");
        for p in ["classic", "linux69", "fast"] {
            assert_eq!(j[p]["echo_thread_realtime"], false, "{p}");
        }
    }

    #[test]
    fn a_small_run_echoes_everything_and_reports_every_key() {
        let o = CanechoOptions { frames: 20, gap_us: 3_000, load_frames: 200, ..CanechoOptions::default() };
        let was_realtime = current_thread_is_realtime();
        let r = run(&o).unwrap();
        let j = r.to_json();
        assert_eq!(current_thread_is_realtime(), was_realtime, "the run gives this thread its policy back");
        assert_eq!(j["scheduling"]["requested_fifo_priority"], IRQ_THREAD_PRIORITY);
        // Root (as here and in CI) may run at SCHED_FIFO; elsewhere the refusal is reported.
        let fifo = r.scheduling.fifo_priority().is_some();
        assert_eq!(fifo, j["scheduling"]["refused"].is_null(), "{}", j["scheduling"]);
        if fifo {
            assert_eq!(j["scheduling"]["irq_path"], "SCHED_FIFO 50");
        }
        for p in ["classic", "linux69", "fast"] {
            assert_eq!(j[p]["echo_thread_realtime"], fifo || was_realtime, "{p}: the echo thread as asked");
        }
        assert!(j["fast"]["poll_below_us"].as_f64().is_some_and(|us| us > 0.0), "fast adapts its completion");
        assert_eq!(j["linux69"]["poll_below_us"], 30.0, "spi-imx's polling_limit_us");
        assert!(j["classic"]["poll_below_us"].is_null(), "5.18 always sleeps");
        for p in ["classic", "linux69", "fast"] {
            let v = &j[p];
            for k in [
                "gap_us",
                "irq_low_us",
                "cs_to_clock_us",
                "cs_high_gap_us",
                "spi_transfers_per_frame",
                "frames_sent",
                "frames_echoed",
                "payload_mismatches",
                "gap_limit_us",
                "gap_vs_limit",
                "irq_thread_cpu_pct",
                "irq_thread_cpu_pct_without_lab_wakes",
                "lab_wake_cpu_pct",
                "lab_wakes_per_echo",
                "process_cpu_pct",
                "frames_lost",
                "load_host_steal_pct",
                "errata_recovered",
                "timed_errata_recovered",
                "timed_echo_preemptions_per_echo",
                "load_echo_preemptions_per_echo",
                "load_echo_sleeps_per_echo",
                "load_int_wait",
            ] {
                assert!(!v[k].is_null(), "{p}.{k} missing: {v}");
            }
            assert_eq!(v["frames_sent"], 20);
            assert_eq!(v["load_frames_sent"], 200);
            let limit = v["gap_limit_us"].as_f64().unwrap();
            assert!(limit >= 12.0, "the 12 µs intermission is a floor of the limit: {v}");
            let parts = &v["gap_limit_parts_us"];
            let sum: f64 = ["spi_wire", "chip_fixed", "intermission_unoverlapped"]
                .iter()
                .map(|k| parts[k].as_f64().unwrap_or_else(|| panic!("{p}.gap_limit_parts_us.{k} missing: {v}")))
                .sum();
            assert!((sum - limit).abs() <= 0.1, "the parts sum to the limit: {v}");
            assert!(v["gap_limit_spi_bits"].as_u64().unwrap() > 0);
            for k in ["eof_to_int", "int_to_first_cs", "int_late_by_lab", "int_driven_to_first_cs", "first_cs_to_sof"] {
                assert!(v["gap_breakdown_us"][k].is_number(), "{p}.gap_breakdown_us.{k} missing: {v}");
            }
        }
        // INT → first CS, split into the lab's lateness and the rest: the
        // probe saw every echo's RX INT, and the driver, which can see INT
        // only after the probe has, selects the chip after that (a split
        // that took another fall's lateness, or none, would read 0 here).
        for (p, pr) in [("classic", &r.classic), ("linux69", &r.linux69), ("fast", &r.fast)] {
            let t = &pr.timed;
            let [late, rest] = &t.int_split_us;
            assert_eq!(late.len(), t.breakdown_us[1].len(), "{p}: an echo's INT the probe did not see");
            assert!(median(rest) > 0.0, "{p}: the driver selected the chip before the lab drove INT: {rest:?}");
        }
        // A limit is a limit: no echo comes in under it. (This driver moves
        // 408 bits over SPI before its request takes effect — the flag
        // halves of C1INT and FIFOSTA, the RX object, the TX object, UINC |
        // TXREQ — 24.5 µs at 16.7 MHz, so none of its echoes can come
        // before ~27.5 µs even with no software at all: a margin of ~11 µs
        // over the 16 µs limit.)
        for (p, pr) in [("classic", &r.classic), ("linux69", &r.linux69), ("fast", &r.fast)] {
            let limit_us = pr.limit();
            let min = pr.timed.gaps_us.iter().copied().fold(f64::INFINITY, f64::min);
            eprintln!("{p}: shortest gap {min:.2} µs, limit {limit_us:.2} µs");
            assert!(min >= limit_us, "{p}: an echo came {min:.2} µs after EOF, under the {limit_us:.2} µs limit");
            // The driver's transfers carry at least the bits the limit counts.
            let floor_us = pr.driver_floor();
            assert!(
                floor_us >= limit_us,
                "{p}: the driver's floor {floor_us:.2} µs is under the {limit_us:.2} µs limit"
            );
        }
        for k in [
            "gap_ratio",
            "cpu_ratio",
            "gap_ratio_vs_linux69",
            "cpu_ratio_vs_linux69",
            "gap_ratio_vs_linux69_bound",
            "gap_ratio_bound",
            "cpu_ratio_bound",
            "cpu_ratio_bound_sleeping",
            "cpu_ratio_beyond_wire",
        ] {
            assert!(j[k].is_number(), "{k} missing: {j}");
        }
        // Sleeping through a transfer is counted only where it is cheaper
        // than its wire: never above the same transfers' whole wire plus
        // the INT's sleep.
        let sleeping = r.cpu_ratio_bound_sleeping();
        let pattern_bits: u64 = r.fast.timed.transfers_per_frame.iter().sum();
        let pattern_ns = pattern_bits as f64 * r.fast.spi_bit_ns();
        let most = (pattern_ns + r.wakeup.sleep_cpu_ns as f64) / 1e3 / r.classic.cpu_us_per_echo();
        assert!(sleeping > 0.0 && sleeping <= most * 1.001, "cpu_ratio_bound_sleeping {sleeping}, at most {most}");
        // Every echo's transfers were clocked: at least the 408 bits before
        // its request takes effect (above) each, and their wire time is
        // part of fast's CPU, which polls them.
        for p in ["classic", "linux69", "fast"] {
            let bits = j[p]["load_spi_bits_per_echo"].as_f64().unwrap();
            assert!(bits >= 408.0, "{p}: {bits} SPI bits an echo: {j}");
        }
        // So `cpu_ratio_bound` is a bound: fast's CPU is not below its wire time.
        let (cpu, wire) = (r.fast.cpu_us_per_echo(), r.fast.wire_us_per_echo());
        assert!(wire > 0.0 && cpu >= wire, "fast polls its transfers: {cpu} µs CPU, {wire} µs wire an echo");
        // The kernel presets sleep on every interrupt; every policy's waits
        // reach the report.
        for (p, pr) in [("classic", &r.classic), ("linux69", &r.linux69), ("fast", &r.fast)] {
            let w = pr.timed.int_wait;
            assert!(w.polled + w.woken + w.immediate > 0, "{p}: {w:?}");
            assert!(p == "fast" || (w.polled, w.timed_sleeps) == (0, 0), "{p} polled for INT: {w:?}");
            assert_eq!(j[p]["int_wait"]["woken"], w.woken, "{p}");
            let l = pr.load.int_wait;
            assert!(l.polled + l.woken + l.immediate > 0, "{p}: load run {l:?}");
            assert!(p == "fast" || (l.polled, l.timed_sleeps) == (0, 0), "{p} polled for INT under load: {l:?}");
            assert_eq!(j[p]["load_int_wait"]["woken"], l.woken, "{p}");
        }
        // Classic sleeps on INT and on the interrupt of each transfer its
        // echo thread runs (about five an echo: the status message's three
        // and the RX UINC); fast polls most of its transfers.
        let sleeps = |p: &str| j[p]["load_echo_sleeps_per_echo"].as_f64().unwrap();
        assert!(sleeps("classic") >= 3.0, "{j}");
        assert!(sleeps("fast") < sleeps("classic"), "{j}");
        assert_eq!(j["placement"], json!({"lab_cpus": null, "stack_cpus": null}));
        assert!(r.table().contains("RX EOF → echo SOF"));
        assert_eq!(j["model"]["errata"].as_array().map(Vec::len), Some(Errata::ALL.names().len()), "{j}");
        for p in ["classic", "linux69", "fast"] {
            assert_eq!(j["errata_off"][p]["frames_echoed"], 20, "every frame echoed on the ideal chip too: {j}");
            assert_eq!(j["errata_off"][p]["payload_mismatches"], 0, "{j}");
            assert_eq!(j[p]["payload_mismatches"], 0, "errata on: {j}");
            let off = j["errata_off"][p]["chip_errata_hits"].as_object().expect("an object of counters");
            assert_eq!(off.len(), 8, "{off:?}");
            assert!(off.values().all(|n| n == 0), "the ideal chip has no errata to hit: {off:?}");
        }
        // Each run's own counts, under each counter's name.
        for (key, hits) in
            [("chip_errata_hits", r.fast.load.errata_hits), ("timed_chip_errata_hits", r.fast.timed.errata_hits)]
        {
            for (name, n) in hits.counts() {
                assert_eq!(j["fast"][key][name], n, "{key}.{name}: {j}");
            }
        }
        assert!(j["errata_effect_pct"]["cpu_ratio"].is_number(), "{j}");
        // classic sleeps on every transfer's interrupt: arming it wakes the
        // lab's interrupt thread, and the lab counts what that cost.
        assert!(j["classic"]["lab_wakes_per_echo"].as_f64().unwrap() > 0.0, "{j}");
        assert!(j["cpu_ratio_with_lab_wakes"].is_number(), "{j}");
        assert!(run(&CanechoOptions { len: 9, ..o }).is_err());
    }
}
