//! E2 `spi`: back-to-back sync messages (seed 000's 72-bit status read),
//! `classic` against `fast`, side by side; plus what each mechanism is worth.
//!
//! Every rig is its own lab with a loopback on CS 0 at the same clock;
//! prepared and unprepared messages are sent over the same rig, so that the
//! style is all that differs between them.
//! Rounds of every policy are interleaved (A B A B …): by default 10, more
//! for long messages, each about 50 ms of wire ([`SpiOptions::rounds_for`]).
//! Within a round each series sends its messages in timed chunks of
//! [`interleave::CHUNK`], and its per-message figures are medians over all
//! its chunks, so that a stall of the host spoils the chunk it falls in,
//! not the figure. Fast's unprepared and prepared series and linux-6.9's
//! take turns chunk by chunk ([`interleave`]; their ratios are this
//! report's closest), classic's chunks take turns with the kick probe's
//! ([`kick_probe::beside_classic`]), and each ablation series sends its
//! chunks alone (beside another, a switch that wakes a thread would leave
//! its wake-ups to that one's chunks). The instant-wire series are timed a
//! round at a time, the median over rounds. Each round starts with
//! one untimed message: a rig left idle through the other series' rounds
//! longer than its policy's `idle_delay` has been torn down, and the
//! power-up would fall on whichever of its series came first (measured at
//! 4096 bytes and 20 MHz in 200 rounds with ablation: the prepared
//! instant-wire series took about 0.44 µs per message in the rounds it came
//! first on its rig, about 0.34 in the others; before those rounds its rig
//! had been idle through 14 other series' rounds of some 49 ms of wire each,
//! twice over, about 1.4 s, where fast's `idle_delay` is 1 s). Instant-wire rounds send at least
//! [`INSTANT_WIRE_MIN_PER_ROUND`] messages, more than their share of
//! `msgs_per_policy` when that is small: they take no wire time.
//! CS figures come from the lab's bus trace, as the seed's author read
//! them from a scope.
//!
//! JSON keys: `clock_hz` (the SCLK the controller ran: the requested
//! `requested_hz` rounded down to what its divider makes), `classic` and
//! `fast` (each `elapsed_us_per_msg`,
//! `wire_us_per_msg`, `overhead_us_per_msg`, `bus_utilization`,
//! `cs_to_clock_us`, `cs_high_gap_us`, `pump_wakeups_per_msg` (the wake-ups
//! the stack's signals caused: messages handed to the pump, a power-up
//! after teardown), `pump_kicks_per_msg` (classic: one, as 5.18 queues the
//! pump's work after every message; a kick while the last is still pending
//! wakes nobody, as `kthread_queue_work` queues a pending item once, so
//! `pump_wakeups_per_msg` reads below it when the pump wakes slower than a
//! message runs), `pump_kicks_coalesced_per_msg` (those kicks that found
//! one pending: kicks = the wake-ups they caused + these),
//! `pump_kick_wait_max_us` (the longest a kick waited, from the end of the
//! message that made it, for the pump thread to run: a kick coalesces only
//! when the pending one waited longer than a message takes, so this shows
//! how long the host kept the woken pump from running),
//! `pump_wakeups_per_msg_bound` (classic only, null for the others: the
//! wake-ups per kick that classic's kicks get from this host and lab, the
//! pump taken out: a bare thread kicked after every message of a classic
//! bus whose own pump is never kicked, in chunks of
//! [`interleave::CHUNK`] messages that alternate with classic's own
//! ([`kick_probe::beside_classic`]), so that both meet the host's stalls
//! alike; classic's pump may read above it by chance, with
//! `pump_wakeups_bound_detail`: its `kicks`, `wakeups`, `period_us` and
//! `kick_wait_max_us`), `pump_idle_timer_wakeups` (the pump's idle timer
//! expiring during the rounds: a time-driven re-check, at most one per
//! second of traffic with the default `idle_delay`, whatever the rate),
//! `ctx_switches_per_msg`, `cpu_us_per_msg`, and `lab_wake_us_per_msg` /
//! `lab_wakes_per_msg`: the sending thread's wake-ups of the lab's
//! interrupt thread when it arms a transfer's interrupt, the emulation's
//! cost inside the elapsed time and the CPU, which hardware never charges),
//! `overhead_ratio` (and `overhead_ratio_without_lab_wakes`, each side's
//! overhead less its lab wake-ups),
//! `prepared_speedup` (and `prepared_speedup_bound`: unprepared elapsed
//! over wire time, the most that any preparation could gain at this size
//! and clock, since a message cannot take less than its bits; and
//! `instant_wire`: the same comparison with an infinitely fast wire, i.e.
//! software cost alone; beside it `unprepared_mapped_us_per_msg`, unprepared
//! with `bounce_dma` off, and `prepared_speedup_over_mapped`: behind a
//! translating IOMMU an unprepared fast DMA transfer of up to `BOUNCE_MAX`
//! bytes goes through bounce buffers mapped once, so it skips the mapping
//! as a prepared one does, and `prepared_speedup` there is what the
//! prepared message saves besides: the copies in and out of the bounce
//! buffers and the validation; the latter shows what a kept mapping is
//! worth against mapping per transfer), `ablation` (`[{switch, overhead_us_per_msg}]`), and
//! `async` (`{sync, async, async_unpipelined}` each `{bus_utilization,
//! msgs_per_s, wire_s, elapsed_s}` (medians over repetitions); `async_unpipelined` is async with `pipelined_pump` off,
//! that switch's share: it acts only on queued messages, so its entry in
//! `ablation`, measured on the sync loop, stays at `fast`'s overhead).
//!
//! `host_steal_pct`: the hypervisor's steal during the measured rounds, %
//! of all CPUs' time (null where the kernel does not report it). A vCPU the
//! host takes away stalls the sender wherever it is, asleep or running, for
//! milliseconds: on a VM that is the tail of every policy's per-message
//! overhead, which no software removes.
//!
//! With `latency_samples` (`--plot`) a sampling pass after the rounds times
//! every message of classic, linux-6.9 and fast on its own ([`samples`]),
//! for [`SpiReport::latency_plot`]; the figures above never include it.

pub mod interleave;
pub mod kick_probe;
pub mod rig;
pub mod samples;
pub mod target;
mod throughput;

use crate::stats::{median, round as r};
use crate::table::Table;
use crate::usage::HostSteal;
use interleave::Member;
use kick_probe::{beside_classic, KickProbe, KickRound};
use rig::{round, traced_cs_figures, Rig, Round, Style};
use serde_json::{json, Value};
use target::Target;
use wirespeed::spi::{Policy, PreparedMessage};
use wirespeed_time::now;

/// The largest message the scenario and [`trace_sample`] send, in bytes
/// (16 times spidev's default buffer size). Every message's buffers are
/// allocated and its bus trace recorded (one event per byte).
pub const MAX_SIZE: usize = 65_536;

/// The most bus-trace events the traced messages of one recording may take
/// (its capacity holds one message more, to spare): the CS figures trace
/// fewer messages when they are large, and [`trace_sample`] refuses more
/// than [`max_traced_msgs`].
pub const MAX_TRACE_EVENTS: usize = 1 << 23;

/// Trace events one message of `size` bytes may record: a word per byte,
/// its CS edges, and room to spare.
fn trace_events_per_msg(size: usize) -> usize {
    size + 4
}

/// The most messages of `size` bytes one trace holds.
pub fn max_traced_msgs(size: usize) -> u64 {
    (MAX_TRACE_EVENTS / trace_events_per_msg(size)) as u64
}

/// The trace capacity for `msgs` messages of `size` bytes (one spare; `msgs`
/// at most [`max_traced_msgs`]).
pub(crate) fn trace_capacity(size: usize, msgs: u64) -> usize {
    (msgs as usize + 1) * trace_events_per_msg(size)
}

/// The most threads the sync/async comparison starts (every one shares the
/// one bus; the machines this runs on have a few CPUs).
pub const MAX_ASYNC_THREADS: usize = 256;

/// Options of the `spi` scenario.
#[derive(Clone, Debug)]
pub struct SpiOptions {
    /// Bytes per transfer (seed 000: 9 = 72 bits), 1..=[`MAX_SIZE`].
    pub size: usize,
    /// SCLK in Hz.
    pub hz: u32,
    /// Messages per policy, split over `rounds`.
    pub msgs: u64,
    /// Interleaved rounds.
    pub rounds: u32,
    /// Measure each switch's share (fast with one switch off at a time).
    pub ablation: bool,
    /// Threads of the sync/async comparison (0 skips it), at most
    /// [`MAX_ASYNC_THREADS`].
    pub async_threads: usize,
    /// Messages per thread in the sync/async comparison.
    pub async_msgs: usize,
    /// Messages each thread keeps in flight when async.
    pub async_window: usize,
    /// Messages traced per policy for the CS figures (at most `msgs`, and
    /// fewer for messages so large that the trace would pass
    /// [`MAX_TRACE_EVENTS`]).
    pub trace_msgs: u64,
    /// Where the messages go (the lab by default; a spidev node with `--dev`).
    pub target: Target,
    /// Also time `msgs` messages one by one per policy after the measured
    /// rounds, for a latency histogram ([`SpiReport::latency_plot`]); off by
    /// default (it costs time, and nothing else: the figures are taken first).
    pub latency_samples: bool,
}

/// The wire time the default message counts aim at, per policy (and for all
/// threads of the sync/async comparison together).
const DEFAULT_WIRE_BUDGET_NS: u64 = 10_000_000_000;

/// The wire time a default round aims at ([`SpiOptions::rounds_for`]).
pub const ROUND_WIRE_NS: u64 = 50_000_000;

/// The fewest messages a default round holds, however long they are.
pub const MIN_MSGS_PER_ROUND: u64 = 10;

/// The wire time of one `size`-byte message at `hz`, ns (at least 1).
fn wire_ns(size: usize, hz: u32) -> u64 {
    (size as u64).saturating_mul(8_000_000_000).div_ceil(u64::from(hz.max(1))).max(1)
}

impl SpiOptions {
    /// The default messages per policy for `size`-byte messages at `hz`:
    /// 20,000, or as many as take about 10 s of wire if fewer, at least 100.
    pub fn messages_for(size: usize, hz: u32) -> u64 {
        let wire_ns = wire_ns(size, hz);
        (DEFAULT_WIRE_BUDGET_NS / wire_ns).clamp(100, SpiOptions::default().msgs)
    }

    /// The default rounds for `msgs` messages of `size` bytes at `hz`: 10,
    /// or more for long messages, as many as keep each round to about
    /// 50 ms of wire ([`ROUND_WIRE_NS`]) while it still holds at least
    /// [`MIN_MSGS_PER_ROUND`] messages. This was chosen when a round's
    /// figure was its mean per message and the reported figure the median
    /// over rounds (before [`interleave`]'s chunks): a stall of the host
    /// (here a few a second, each up to milliseconds) spoiled the round it
    /// fell in, so short rounds left the median to the rounds it missed.
    /// Measured on `--size 64 --hz 1000000 --count 6000`, three runs each,
    /// A B A B: fast's overhead 0.89–2.10 µs in 10 rounds of 600
    /// messages (0.3 s), 0.71–0.75 in 62 rounds of about 100 (50 ms).
    pub fn rounds_for(size: usize, hz: u32, msgs: u64) -> u32 {
        let default = u64::from(SpiOptions::default().rounds);
        let by_wire = msgs.saturating_mul(wire_ns(size, hz)).div_ceil(ROUND_WIRE_NS);
        let most = (msgs / MIN_MSGS_PER_ROUND).max(1);
        let rounds = by_wire.min(most).max(default.min(msgs.max(1)));
        u32::try_from(rounds).unwrap_or(u32::MAX)
    }

    /// The default messages per thread of the sync/async comparison: 10,000,
    /// or as many as take about 10 s of wire for all `threads`, at least 50.
    pub fn thread_messages_for(size: usize, hz: u32, threads: usize) -> usize {
        let wire_ns = wire_ns(size, hz);
        let n = DEFAULT_WIRE_BUDGET_NS / wire_ns / threads.max(1) as u64;
        (n as usize).clamp(50, SpiOptions::default().async_msgs)
    }
}

impl Default for SpiOptions {
    fn default() -> Self {
        SpiOptions {
            size: 9,
            hz: 20_000_000,
            msgs: 20_000,
            rounds: 10,
            ablation: true,
            async_threads: 4,
            async_msgs: 10_000,
            async_window: 8,
            trace_msgs: 2_000,
            target: Target::default(),
            latency_samples: false,
        }
    }
}

/// Figures of one policy.
#[derive(Clone, Debug)]
pub struct PolicyFigures {
    pub elapsed_us_per_msg: f64,
    pub wire_us_per_msg: f64,
    pub cs_to_clock_us: f64,
    pub cs_high_gap_us: f64,
    pub pump_wakeups_per_msg: f64,
    /// Kicks asked of the pump per message (classic: one; a kick while one
    /// is pending wakes nobody, so `pump_wakeups_per_msg` may be lower).
    pub pump_kicks_per_msg: f64,
    /// Kicks per message that found one pending and woke nobody.
    pub pump_kicks_coalesced_per_msg: f64,
    /// The longest any kick of the rounds waited for the pump to run, µs
    /// (0 for a policy that does not kick).
    pub pump_kick_wait_max_us: f64,
    /// What the host allows kicks at this policy's pace: see
    /// [`kick_probe`] (classic only: no other policy kicks).
    pub pump_wakeups_ceiling: Option<WakeupCeiling>,
    /// Idle-timer expiries of the pump during the rounds (per time, not
    /// per message: at most one per `idle_delay` of traffic).
    pub pump_idle_timer_wakeups: u64,
    pub ctx_switches_per_msg: f64,
    pub cpu_us_per_msg: f64,
    /// Time the sending thread spent waking the lab's interrupt thread
    /// (part of the elapsed time and the CPU: the emulation's cost).
    pub lab_wake_us_per_msg: f64,
    pub lab_wakes_per_msg: f64,
}

impl PolicyFigures {
    fn overhead(&self) -> f64 {
        self.elapsed_us_per_msg - self.wire_us_per_msg
    }
    /// The overhead less the lab's wake-ups (the emulation's share of it).
    fn overhead_without_lab_wakes(&self) -> f64 {
        self.overhead() - self.lab_wake_us_per_msg
    }
    fn utilization(&self) -> f64 {
        self.wire_us_per_msg / self.elapsed_us_per_msg
    }
    fn to_json(&self) -> Value {
        json!({
            "elapsed_us_per_msg": r(self.elapsed_us_per_msg, 3),
            "wire_us_per_msg": r(self.wire_us_per_msg, 3),
            "overhead_us_per_msg": r(self.overhead(), 3),
            "bus_utilization": r(self.utilization(), 4),
            "cs_to_clock_us": r(self.cs_to_clock_us, 3),
            "cs_high_gap_us": r(self.cs_high_gap_us, 3),
            "pump_wakeups_per_msg": r(self.pump_wakeups_per_msg, 5),
            "pump_kicks_per_msg": r(self.pump_kicks_per_msg, 5),
            "pump_kicks_coalesced_per_msg": r(self.pump_kicks_coalesced_per_msg, 5),
            "pump_kick_wait_max_us": r(self.pump_kick_wait_max_us, 1),
            "pump_wakeups_per_msg_bound": self.pump_wakeups_ceiling.map(|c| r(c.wakeups_per_kick(), 5)),
            "pump_wakeups_bound_detail": self.pump_wakeups_ceiling.map(|c| c.to_json()),
            "pump_idle_timer_wakeups": self.pump_idle_timer_wakeups,
            "ctx_switches_per_msg": r(self.ctx_switches_per_msg, 4),
            "cpu_us_per_msg": r(self.cpu_us_per_msg, 3),
            "lab_wake_us_per_msg": r(self.lab_wake_us_per_msg, 3),
            "lab_wakes_per_msg": r(self.lab_wakes_per_msg, 4),
        })
    }
}

/// [`kick_probe`]'s figures over the rounds: a bare thread kicked as
/// classic kicks its pump, after every message of a classic bus whose own
/// pump is never kicked, in chunks alternating with classic's messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WakeupCeiling {
    pub kicks: u64,
    pub wakeups: u64,
    /// The median over rounds of the kicks' period: the probe's classic
    /// messages, µs each.
    pub period_us: f64,
    /// The longest any kick waited for the probe's thread to run, µs.
    pub kick_wait_max_us: f64,
}

impl WakeupCeiling {
    fn of(rounds: &[KickRound]) -> Option<WakeupCeiling> {
        if rounds.is_empty() {
            return None;
        }
        let period_us = |k: &KickRound| k.elapsed_ns as f64 / 1e3 / k.kicks.max(1) as f64;
        Some(WakeupCeiling {
            kicks: rounds.iter().map(|k| k.kicks).sum(),
            wakeups: rounds.iter().map(|k| k.wakeups).sum(),
            period_us: median(&rounds.iter().map(period_us).collect::<Vec<_>>()),
            kick_wait_max_us: rounds.iter().map(|k| k.wait_max_ns).max().unwrap_or(0) as f64 / 1e3,
        })
    }

    /// The wake-ups per kick the bare thread got beside classic (classic's
    /// pump can read above it: both meet the host's stalls by chance).
    pub fn wakeups_per_kick(&self) -> f64 {
        self.wakeups as f64 / self.kicks.max(1) as f64
    }

    fn to_json(self) -> Value {
        json!({
            "kicks": self.kicks,
            "wakeups": self.wakeups,
            "period_us": r(self.period_us, 3),
            "kick_wait_max_us": r(self.kick_wait_max_us, 1),
        })
    }
}

/// The report of the `spi` scenario.
#[derive(Clone, Debug)]
pub struct SpiReport {
    pub options: SpiOptions,
    /// The SCLK the controller ran (`options.hz` rounded down to what its
    /// divider can make).
    pub clock_hz: u32,
    pub classic: PolicyFigures,
    /// Linux 6.9 ([`Policy::linux69`]): the strongest baseline.
    pub linux69: PolicyFigures,
    pub fast: PolicyFigures,
    pub unprepared_us_per_msg: f64,
    pub prepared_us_per_msg: f64,
    /// Unprepared and prepared µs per message on an instant wire (software alone).
    pub software_us_per_msg: (f64, f64),
    /// Unprepared µs per message on an instant wire with `bounce_dma` off:
    /// every DMA transfer maps and unmaps its own buffers.
    pub software_mapped_us_per_msg: f64,
    pub ablation: Vec<(String, f64)>,
    pub throughput: Option<throughput::Comparison>,
    /// Every sampled message's latency per policy, if
    /// [`SpiOptions::latency_samples`] asked for them.
    pub latency_samples: Option<samples::LatencySamples>,
    /// The hypervisor's steal during the measured rounds, % of all CPUs'
    /// time (`None` where the kernel does not report it).
    pub host_steal_pct: Option<f64>,
}

/// One style of message sent over one of the run's rigs, and what it timed.
struct Series {
    rig: usize,
    style: Style,
    /// Its timed chunks (instant-wire series: its rounds, whole).
    timed: Vec<Round>,
}

impl Series {
    fn figures(&self, wire_us: f64, cs: (f64, f64)) -> PolicyFigures {
        let per =
            |f: &dyn Fn(&Round) -> f64| median(&self.timed.iter().map(|r| f(r) / r.msgs as f64).collect::<Vec<_>>());
        let msgs: u64 = self.timed.iter().map(|r| r.msgs).sum();
        let wakeups: u64 = self.timed.iter().map(|r| r.pump_wakeups).sum();
        let kicks: u64 = self.timed.iter().map(|r| r.pump_kicks).sum();
        let coalesced: u64 = self.timed.iter().map(|r| r.pump_kicks_coalesced).sum();
        PolicyFigures {
            elapsed_us_per_msg: per(&|r| r.elapsed_ns as f64 / 1e3),
            wire_us_per_msg: wire_us,
            cs_to_clock_us: cs.0,
            cs_high_gap_us: cs.1,
            pump_wakeups_per_msg: wakeups as f64 / msgs as f64,
            pump_kicks_per_msg: kicks as f64 / msgs as f64,
            pump_kicks_coalesced_per_msg: coalesced as f64 / msgs as f64,
            pump_kick_wait_max_us: self.timed.iter().map(|r| r.pump_kick_wait_max_ns).max().unwrap_or(0) as f64 / 1e3,
            pump_wakeups_ceiling: None,
            pump_idle_timer_wakeups: self.timed.iter().map(|r| r.pump_timer_wakeups).sum(),
            ctx_switches_per_msg: per(&|r| r.usage.ctx_switches as f64),
            cpu_us_per_msg: per(&|r| r.usage.cpu_ns as f64 / 1e3),
            lab_wake_us_per_msg: per(&|r| r.lab_wakes.ns as f64 / 1e3),
            lab_wakes_per_msg: per(&|r| r.lab_wakes.wakes as f64),
        }
    }
}

impl SpiOptions {
    /// Checks the options as [`run`] does, without running anything (a
    /// caller with side effects of its own, such as a sample trace, checks first).
    pub fn check(&self) -> Result<(), String> {
        if self.size == 0 || self.msgs == 0 || self.rounds == 0 {
            return Err(format!(
                "size, msgs and rounds must be at least 1 (got size {}, msgs {}, rounds {})",
                self.size, self.msgs, self.rounds
            ));
        }
        check_size(self.size)?;
        if self.msgs < u64::from(self.rounds) {
            return Err(format!(
                "{} messages in {} rounds: each round needs at least 1 message (give at least as many messages as rounds)",
                self.msgs, self.rounds
            ));
        }
        if self.async_threads > MAX_ASYNC_THREADS {
            return Err(format!(
                "{} threads: the sync/async comparison runs at most {MAX_ASYNC_THREADS}",
                self.async_threads
            ));
        }
        if self.async_threads > 0 && self.async_msgs == 0 {
            return Err(format!(
                "{} threads with 0 messages per thread: send at least 1 (or run 0 threads to skip the comparison)",
                self.async_threads
            ));
        }
        Ok(())
    }
}

/// The fewest messages an instant-wire round sends, however few the
/// round's share of `msgs`: its messages take no wire time, and rounds of a
/// few dozen (some 10 µs each) read slower than long ones (measured at 4096
/// bytes and 20 MHz without ablation, where no rig idles past its
/// `idle_delay`: 30 per round, prepared 0.39–0.40 µs and unprepared
/// 0.48–0.51; 610 per round, 0.37 and 0.44), as a round's first messages
/// find what the other series used in the caches.
pub const INSTANT_WIRE_MIN_PER_ROUND: u64 = 500;

/// The series that take turns chunk by chunk ([`interleave`]): fast
/// unprepared, fast prepared and linux-6.9, the ones the report sets against
/// each other most closely (`overhead_ratio_vs_linux69`, `prepared_speedup`).
const CHUNKED: [usize; 3] = [1, 2, 5];

/// One round of the `group` series (indices into `series` and `pms`,
/// distinct), `msgs` messages each in [`interleave::alternate`]'s chunks,
/// after one untimed message each (as every round starts); each chunk goes
/// to its series' `timed`.
fn chunked_round(
    rigs: &[Rig],
    series: &mut [Series],
    pms: &mut [PreparedMessage],
    group: &[usize],
    size: usize,
    msgs: u64,
) -> Result<(), String> {
    let mut slots: Vec<Option<&mut PreparedMessage>> = pms.iter_mut().map(Some).collect();
    let mut members = Vec::with_capacity(group.len());
    for &i in group {
        let pm = slots[i].take().ok_or_else(|| format!("series {i} twice in one chunked group"))?;
        let (rig, style) = (&rigs[series[i].rig], series[i].style);
        round(rig, style, size, 1, pm)?;
        members.push(Member { rig, style, pm });
    }
    let chunks = interleave::alternate(&mut members, size, msgs)?;
    for (&i, c) in group.iter().zip(chunks) {
        series[i].timed.extend(c);
    }
    Ok(())
}

/// Runs the scenario.
pub fn run(o: &SpiOptions) -> Result<SpiReport, String> {
    o.check()?;
    // Rigs: 0 classic, 1 fast, 2 fast on an instant wire (software cost
    // alone), 3 linux-6.9, 4 fast without bounce buffers on the instant
    // wire (every transfer maps its own), then one per ablation switch.
    // Off the lab's block there is no instant wire: rigs 2 and 4 are then
    // more fast rigs on the target, and the instant-wire figures are left
    // out (null).
    let t = &o.target;
    let mapping = Policy { bounce_dma: false, ..Policy::fast() };
    let mut rigs = vec![
        Rig::on(t, Policy::classic(), o.hz, false)?,
        Rig::on(t, Policy::fast(), o.hz, false)?,
        Rig::on(t, Policy::fast(), o.hz, t.is_lab_block())?,
        Rig::on(t, Policy::linux69(), o.hz, false)?,
        Rig::on(t, mapping, o.hz, t.is_lab_block())?,
    ];
    let on = |rig, style| Series { rig, style, timed: Vec::new() };
    // Series: 0 classic, 1 fast, 2 fast prepared, 3/4 the same two on the
    // instant wire, 5 linux-6.9, 6 unprepared without bounce buffers on the
    // instant wire, then the ablation series.
    let mut series = vec![
        on(0, Style::Unprepared),
        on(1, Style::Unprepared),
        on(1, Style::Prepared),
        on(2, Style::Unprepared),
        on(2, Style::Prepared),
        on(3, Style::Unprepared),
        on(4, Style::Unprepared),
    ];
    const ABLATION_FROM: usize = 7;
    if o.ablation {
        for s in Policy::SWITCHES {
            let mut p = Policy::fast();
            p.set(s, false);
            rigs.push(Rig::on(t, p, o.hz, false)?);
            series.push(on(rigs.len() - 1, Style::Unprepared));
        }
    }
    let clock_hz = rigs[0].bus.caps().actual_speed_hz(o.hz);
    let wire_us = (o.size * 8) as f64 / f64::from(clock_hz) * 1e6;
    let mut pms = series.iter().map(|s| rigs[s.rig].prepared(o.size)).collect::<Result<Vec<_>, _>>()?;
    // Warm-up: first-touch costs (shards, caches, the wake-margin measurement) stay out of the rounds.
    for (s, pm) in series.iter().zip(pms.iter_mut()) {
        round(&rigs[s.rig], s.style, o.size, 200, pm)?;
    }
    // Classic with its pump never kicked: the kick probe's messages.
    let probe_rig = Rig::on(t, Policy { quiet_pump: true, ..Policy::classic() }, o.hz, false)?;
    let mut probe_pm = probe_rig.prepared(o.size)?;
    round(&probe_rig, Style::Unprepared, o.size, 200, &mut probe_pm)?;
    let probe = KickProbe::start().map_err(|e| format!("cannot start the kick probe's thread: {e}"))?;
    let mut ceiling = Vec::with_capacity(o.rounds as usize);
    let (steal0, t0) = (HostSteal::now(), now());
    // A B C … then … C B A: each series runs as often early as late in a round.
    for k in 0..o.rounds {
        let order: Vec<usize> =
            if k % 2 == 0 { (0..series.len()).collect() } else { (0..series.len()).rev().collect() };
        // The rounds split the messages exactly.
        let per_round = o.msgs / u64::from(o.rounds) + u64::from(u64::from(k) < o.msgs % u64::from(o.rounds));
        for i in order {
            // The group runs once a round, in the place of its first series.
            if i == CHUNKED[0] {
                let mut group = CHUNKED;
                if k % 2 == 1 {
                    group.reverse();
                }
                chunked_round(&rigs, &mut series, &mut pms, &group, o.size, per_round)?;
                continue;
            }
            if CHUNKED.contains(&i) {
                continue;
            }
            let rig = &rigs[series[i].rig];
            let style = series[i].style;
            // Untimed: a rig idle through the other series' rounds for longer
            // than its policy's `idle_delay` was torn down, and whichever of
            // its series comes first in the round would pay the power-up.
            round(rig, style, o.size, 1, &mut pms[i])?;
            if i == 0 {
                // Classic beside the probe that measures its pump's ceiling.
                round(&probe_rig, style, o.size, 1, &mut probe_pm)?;
                let classic = (rig, &mut pms[i]);
                let (chunks, kicks) =
                    beside_classic(classic, (&probe, &probe_rig, &mut probe_pm), style, o.size, per_round)?;
                ceiling.push(kicks);
                series[i].timed.extend(chunks);
            } else if rig.instant_wire {
                let n = per_round.max(INSTANT_WIRE_MIN_PER_ROUND);
                series[i].timed.push(round(rig, style, o.size, n, &mut pms[i])?);
            } else {
                // An ablation series, in chunks of its own: alternating with
                // another, a switch that wakes a thread would leave its
                // wake-ups to that one's chunks.
                let mut alone = [Member { rig, style, pm: &mut pms[i] }];
                series[i].timed.extend(interleave::alternate(&mut alone, o.size, per_round)?.into_iter().flatten());
            }
        }
    }
    drop((probe, probe_pm, probe_rig));
    let host_steal_pct = steal0.zip(HostSteal::now()).map(|(a, b)| b.pct_since(a, now().ns_since(t0)));
    // No more traced than measured, and for large messages fewer, so that
    // the trace stays within bounds.
    let traced = o.trace_msgs.min(o.msgs).min(max_traced_msgs(o.size)).max(1);
    let classic = PolicyFigures {
        pump_wakeups_ceiling: WakeupCeiling::of(&ceiling),
        ..series[0].figures(wire_us, traced_cs_figures(&rigs[0], o.size, traced)?)
    };
    let fast = series[1].figures(wire_us, traced_cs_figures(&rigs[1], o.size, traced)?);
    let linux69 = series[5].figures(wire_us, traced_cs_figures(&rigs[3], o.size, traced)?);
    let prepared = series[2].figures(wire_us, (f64::NAN, f64::NAN));
    let (soft_unprepared, soft_prepared, soft_mapped) = if t.is_lab_block() {
        let soft = |i: usize| series[i].figures(0.0, (f64::NAN, f64::NAN)).elapsed_us_per_msg;
        (soft(3), soft(4), soft(6))
    } else {
        (f64::NAN, f64::NAN, f64::NAN)
    };
    let ablation = if o.ablation {
        Policy::SWITCHES
            .iter()
            .zip(&series[ABLATION_FROM..])
            .map(|(name, s)| ((*name).to_owned(), s.figures(wire_us, (f64::NAN, f64::NAN)).overhead()))
            .collect()
    } else {
        Vec::new()
    };
    let latency_samples = if o.latency_samples {
        Some(samples::sample([&rigs[0], &rigs[3], &rigs[1]], o.size, o.msgs, o.rounds)?)
    } else {
        None
    };
    // The labs' threads stop before the throughput runs start theirs.
    drop((series, pms, rigs));
    let throughput = if o.async_threads > 0 {
        Some(throughput::compare(t, 2, o.async_threads, o.async_msgs, o.size, o.hz, o.async_window)?)
    } else {
        None
    };
    Ok(SpiReport {
        options: o.clone(),
        clock_hz,
        software_us_per_msg: (soft_unprepared, soft_prepared),
        software_mapped_us_per_msg: soft_mapped,
        unprepared_us_per_msg: fast.elapsed_us_per_msg,
        prepared_us_per_msg: prepared.elapsed_us_per_msg,
        classic,
        linux69,
        fast,
        ablation,
        throughput,
        latency_samples,
        host_steal_pct,
    })
}

impl SpiReport {
    /// Unprepared elapsed over prepared elapsed (fast policy).
    pub fn prepared_speedup(&self) -> f64 {
        self.unprepared_us_per_msg / self.prepared_us_per_msg
    }

    /// Unprepared elapsed over wire time: the most any preparation could
    /// gain at this message size and clock.
    pub fn prepared_speedup_bound(&self) -> f64 {
        self.unprepared_us_per_msg / self.fast.wire_us_per_msg
    }

    /// Fast overhead / classic overhead.
    pub fn overhead_ratio(&self) -> f64 {
        self.fast.overhead() / self.classic.overhead()
    }

    /// Fast overhead / linux-6.9 overhead: against today's kernel.
    pub fn overhead_ratio_vs_linux69(&self) -> f64 {
        self.fast.overhead() / self.linux69.overhead()
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "scenario": "spi",
            "target": self.options.target.to_string(),
            "iommu": match &self.options.target {
                Target::Lab(mode) => Value::from(target::iommu_name(*mode)),
                _ => Value::Null,
            },
            "size_bytes": self.options.size,
            "clock_hz": self.clock_hz,
            "requested_hz": self.options.hz,
            "msgs_per_policy": self.options.msgs,
            "rounds": self.options.rounds,
            "classic": self.classic.to_json(),
            "linux69": self.linux69.to_json(),
            "fast": self.fast.to_json(),
            "overhead_ratio": r(self.overhead_ratio(), 4),
            "overhead_ratio_vs_linux69": r(self.overhead_ratio_vs_linux69(), 4),
            "overhead_ratio_without_lab_wakes": r(
                self.fast.overhead_without_lab_wakes() / self.classic.overhead_without_lab_wakes(),
                4
            ),
            "linux69_overhead_ratio_vs_classic": r(self.linux69.overhead() / self.classic.overhead(), 4),
            "host_steal_pct": self.host_steal_pct.map(|p| r(p, 3)),
            "prepared_speedup": r(self.prepared_speedup(), 4),
            "prepared_speedup_bound": r(self.prepared_speedup_bound(), 4),
            "prepared_us_per_msg": r(self.prepared_us_per_msg, 3),
            "unprepared_us_per_msg": r(self.unprepared_us_per_msg, 3),
            "instant_wire": {
                "unprepared_us_per_msg": r(self.software_us_per_msg.0, 3),
                "prepared_us_per_msg": r(self.software_us_per_msg.1, 3),
                "prepared_speedup": r(self.software_us_per_msg.0 / self.software_us_per_msg.1, 4),
                "unprepared_mapped_us_per_msg": r(self.software_mapped_us_per_msg, 3),
                "prepared_speedup_over_mapped": r(self.software_mapped_us_per_msg / self.software_us_per_msg.1, 4),
            },
            "ablation": self.ablation.iter().map(|(s, o)| json!({"switch": s, "overhead_us_per_msg": r(*o, 3)})).collect::<Vec<_>>(),
        });
        if let Some(c) = &self.throughput {
            let fig = |t: &throughput::Throughput| json!({"bus_utilization": r(t.bus_utilization, 4), "msgs_per_s": r(t.msgs_per_s, 0), "wire_s": r(t.wire_s, 6), "elapsed_s": r(t.elapsed_s, 6)});
            v["async"] = json!({
                "threads": self.options.async_threads,
                "msgs_per_thread": self.options.async_msgs,
                "sync": fig(&c.sync),
                "async": fig(&c.async_),
                "async_unpipelined": fig(&c.async_unpipelined),
            });
        }
        v
    }

    /// The human form.
    pub fn table(&self) -> String {
        let mut t =
            Table::new(&["per message", "classic (5.18)", "linux-6.9", "fast", "fast/classic", "fast/linux-6.9"]);
        let row = |t: &mut Table, name: &str, c: f64, l: f64, f: f64, digits: i32| {
            t.row(vec![
                name.into(),
                format!("{:.*}", digits as usize, c),
                format!("{:.*}", digits as usize, l),
                format!("{:.*}", digits as usize, f),
                crate::table::ratio(f, c, digits, 3),
                crate::table::ratio(f, l, digits, 3),
            ]);
        };
        let (c, l, f) = (&self.classic, &self.linux69, &self.fast);
        row(&mut t, "elapsed (µs)", c.elapsed_us_per_msg, l.elapsed_us_per_msg, f.elapsed_us_per_msg, 3);
        row(&mut t, "wire (µs)", c.wire_us_per_msg, l.wire_us_per_msg, f.wire_us_per_msg, 3);
        row(&mut t, "overhead (µs)", c.overhead(), l.overhead(), f.overhead(), 3);
        row(&mut t, "bus utilization", c.utilization(), l.utilization(), f.utilization(), 3);
        row(&mut t, "CS → first clock (µs)", c.cs_to_clock_us, l.cs_to_clock_us, f.cs_to_clock_us, 3);
        row(&mut t, "CS high gap (µs)", c.cs_high_gap_us, l.cs_high_gap_us, f.cs_high_gap_us, 3);
        row(&mut t, "pump kicks", c.pump_kicks_per_msg, l.pump_kicks_per_msg, f.pump_kicks_per_msg, 4);
        row(&mut t, "pump wake-ups", c.pump_wakeups_per_msg, l.pump_wakeups_per_msg, f.pump_wakeups_per_msg, 4);
        row(
            &mut t,
            "pump kicks coalesced",
            c.pump_kicks_coalesced_per_msg,
            l.pump_kicks_coalesced_per_msg,
            f.pump_kicks_coalesced_per_msg,
            5,
        );
        row(&mut t, "context switches", c.ctx_switches_per_msg, l.ctx_switches_per_msg, f.ctx_switches_per_msg, 3);
        row(&mut t, "CPU (µs)", c.cpu_us_per_msg, l.cpu_us_per_msg, f.cpu_us_per_msg, 3);
        let mut out = format!(
            "E2 spi: {} sync messages of {} bytes at {} MHz{} per policy, {} interleaved rounds (medians over chunks of {} messages)\n\n{}",
            self.options.msgs,
            self.options.size,
            f64::from(self.clock_hz) / 1e6,
            if self.clock_hz == self.options.hz {
                String::new()
            } else {
                format!(" (asked {} MHz)", f64::from(self.options.hz) / 1e6)
            },
            self.options.rounds,
            interleave::CHUNK,
            t.render()
        );
        out.push_str(&format!(
            "\nclassic's pump: the longest a kick waited for the thread to run: {:.1} µs (a message took {:.3} µs)\n",
            c.pump_kick_wait_max_us, c.elapsed_us_per_msg,
        ));
        if let Some(b) = &c.pump_wakeups_ceiling {
            out.push_str(&format!(
                "the host's ceiling: a bare thread kicked as classic kicks, after messages like classic's ({:.3} µs each) sent in chunks between classic's own, woke for {:.5} of {} kicks (longest wait {:.1} µs); classic's pump: {:.5}\n",
                b.period_us,
                b.wakeups_per_kick(),
                b.kicks,
                b.kick_wait_max_us,
                c.pump_wakeups_per_msg,
            ));
        }
        out.push_str(&format!(
            "\nprepared messages (fast): {:.3} µs vs unprepared {:.3} µs per message: speedup {:.3} (at most {:.3}: the wire alone takes {:.3} µs)\n",
            self.prepared_us_per_msg,
            self.unprepared_us_per_msg,
            self.prepared_speedup(),
            self.prepared_speedup_bound(),
            self.fast.wire_us_per_msg
        ));
        out.push_str(&format!(
            "pump idle-timer re-checks during the rounds (time-driven, not per message): classic {}, linux-6.9 {}, fast {}\n",
            c.pump_idle_timer_wakeups, l.pump_idle_timer_wakeups, f.pump_idle_timer_wakeups
        ));
        if let Some(p) = self.host_steal_pct {
            out.push_str(&format!(
                "host steal during the rounds: {p:.3} % of CPU time (a stolen vCPU stalls the sender, asleep or running: the tail of every policy's overhead)\n"
            ));
        }
        let (su, sp) = self.software_us_per_msg;
        out.push_str(&format!(
            "software alone (instant wire): prepared {sp:.3} µs vs unprepared {su:.3} µs: speedup {:.3}\n",
            su / sp
        ));
        let sm = self.software_mapped_us_per_msg;
        out.push_str(&format!(
            "  unprepared with its buffers mapped per transfer (bounce_dma off) {sm:.3} µs: prepared speedup over it {:.3}\n",
            sm / sp
        ));
        if !self.ablation.is_empty() {
            let mut a = Table::new(&["fast with one switch off", "overhead (µs/msg)", "vs fast"]);
            for (s, o) in &self.ablation {
                a.row(vec![s.clone(), format!("{o:.3}"), format!("{:+.3}", o - f.overhead())]);
            }
            out.push('\n');
            out.push_str(&a.render());
        }
        if let Some(c) = &self.throughput {
            let mut t = Table::new(&[
                &format!("{} threads × {} msgs", self.options.async_threads, self.options.async_msgs),
                "bus utilization",
                "msgs/s",
                "wire (ms)",
                "elapsed (ms)",
            ]);
            for (name, f) in
                [("sync", &c.sync), ("async", &c.async_), ("async, pump not pipelined", &c.async_unpipelined)]
            {
                t.row(vec![
                    name.into(),
                    format!("{:.3}", f.bus_utilization),
                    format!("{:.0}", f.msgs_per_s),
                    format!("{:.2}", f.wire_s * 1e3),
                    format!("{:.2}", f.elapsed_s * 1e3),
                ]);
            }
            out.push('\n');
            out.push_str(&t.render());
        }
        out
    }
}

/// Refuses a message size above [`MAX_SIZE`].
fn check_size(size: usize) -> Result<(), String> {
    if size > MAX_SIZE {
        return Err(format!("size {size} bytes: at most {MAX_SIZE} bytes per message"));
    }
    Ok(())
}

/// Runs `msgs` sync messages of `size` bytes with `policy` on a fresh lab and
/// returns the bus trace (for `wirespeed lab trace` and `--vcd`).
pub fn trace_sample(policy: Policy, size: usize, hz: u32, msgs: u64) -> Result<wirespeed_lab::trace::Trace, String> {
    if size == 0 || msgs == 0 {
        return Err(format!("size {size} bytes, {msgs} messages: trace at least 1 message of at least 1 byte"));
    }
    check_size(size)?;
    let max = max_traced_msgs(size);
    if msgs > max {
        return Err(format!("{msgs} messages of {size} bytes: a trace holds at most {max} of that size"));
    }
    let rig = Rig::new(policy, hz, false)?;
    let block = rig.block.as_ref().ok_or("the lab rig has its block")?;
    let mut pm = rig.prepared(size)?;
    round(&rig, Style::Unprepared, size, 10, &mut pm)?;
    block.trace_start(trace_capacity(size, msgs));
    round(&rig, Style::Unprepared, size, msgs, &mut pm)?;
    block.trace_stop();
    Ok(block.trace_take())
}

#[cfg(test)]
mod tests {
    use super::SpiOptions;

    #[test]
    fn default_counts_shrink_for_long_messages_only() {
        assert_eq!(SpiOptions::messages_for(9, 20_000_000), 20_000);
        assert_eq!(SpiOptions::messages_for(4096, 1_000_000), 305);
        assert_eq!(SpiOptions::messages_for(65_536, 1_000), 100);
        assert_eq!(SpiOptions::thread_messages_for(9, 20_000_000, 4), 10_000);
        assert_eq!(SpiOptions::thread_messages_for(4096, 1_000_000, 4), 76);
    }

    #[test]
    fn default_rounds_hold_about_50_ms_of_wire_and_at_least_10_messages() {
        // 20,000 × 3.6 µs: 72 ms of wire in all, the 10 rounds stay.
        assert_eq!(SpiOptions::rounds_for(9, 20_000_000, 20_000), 10);
        // 19,531 × 512 µs = 10 s: 200 rounds of about 98 messages.
        assert_eq!(SpiOptions::rounds_for(64, 1_000_000, 19_531), 200);
        // 305 × 32.8 ms: 50 ms rounds would hold one message each; 10 per round.
        assert_eq!(SpiOptions::rounds_for(4096, 1_000_000, 305), 30);
        for (size, hz, msgs) in [(9, 20_000_000, 1), (9, 20_000_000, 7), (65_536, 1_000, 100), (4096, 1_000_000, 19)] {
            let rounds = SpiOptions::rounds_for(size, hz, msgs);
            let o = SpiOptions { size, hz, msgs, rounds, async_threads: 0, ..SpiOptions::default() };
            assert!(rounds >= 1 && u64::from(rounds) <= msgs, "{rounds} rounds for {msgs} messages");
            o.check().unwrap_or_else(|e| panic!("the default rounds refused: {e}"));
        }
    }
}
