//! One policy's runs: the timed echo run (traced) and the load run (CPU).

use super::rig::{named_thread_cpu_ns, Rig, Traffic};
use crate::stats::{median, percentile};
use crate::usage::{thread_cpu_ns, thread_preemptions, thread_sleeps, HostSteal, ProcessUsage};
use std::collections::HashMap;
use std::time::Duration;
use wirespeed::spi::Policy;
use wirespeed_drivers::can::CanId;
use wirespeed_drivers::mcp251xfd::{Config, IntWaitStats, Mcp251xfd};
use wirespeed_lab::can::tools::pair_echoes;
use wirespeed_lab::can::INTERMISSION_BITS;
use wirespeed_lab::devices::mcp2518fd::ErrataHits;
use wirespeed_lab::spi::{Clocked, SpiController};
use wirespeed_lab::trace::{cs_windows, TraceEvent};
use wirespeed_lab::WakeCost;
use wirespeed_time::realtime::{current_thread_is_realtime, CpuList};
use wirespeed_time::{now, Instant};

/// What the echo thread reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoOutcome {
    pub echoed: u64,
    pub thread_cpu_ns: u64,
    /// Times the echo thread was preempted during the loop.
    pub preempted: u64,
    /// Times the echo thread slept (or yielded) during the loop.
    pub slept: u64,
    /// The pump thread's CPU time when the echo loop ended (same instant as
    /// `thread_cpu_ns`; 0 without a pump thread).
    pub pump_cpu_ns_at_end: u64,
    pub last_send: Option<Instant>,
    pub rx_frames: u64,
    pub rx_overflows: u64,
    pub rx_dropped: u64,
    /// How many times one of the driver's erratum workarounds fired.
    pub errata_recovered: u64,
    /// What waking the lab's interrupt thread cost the echo thread (part
    /// of `thread_cpu_ns`: the emulation's cost, not the stack's).
    pub lab_wakes: WakeCost,
    /// What the SPI block clocked while the echo loop ran.
    pub clocked: Clocked,
    /// How the driver's INT waits ended.
    pub int_wait: IntWaitStats,
    /// The echo thread ran under a realtime policy.
    pub realtime: bool,
}

/// `a`'s and `b`'s counts of INT waits added up (the learned period,
/// jitter and oversleep are `b`'s, the later round's).
pub fn add_int_waits(a: IntWaitStats, b: IntWaitStats) -> IntWaitStats {
    IntWaitStats {
        polled: a.polled + b.polled,
        woken: a.woken + b.woken,
        immediate: a.immediate + b.immediate,
        timed_sleeps: a.timed_sleeps + b.timed_sleeps,
        early: a.early + b.early,
        poll_misses: a.poll_misses + b.poll_misses,
        ..b
    }
}

/// How the INT waits in `w` ended, as JSON (the counts only).
pub fn int_wait_json(w: &IntWaitStats) -> serde_json::Value {
    serde_json::json!({
        "polled": w.polled,
        "woken": w.woken,
        "immediate": w.immediate,
        "timed_sleeps": w.timed_sleeps,
        "early": w.early,
        "poll_misses": w.poll_misses,
    })
}

/// `n` as a percentage of the INT waits in `w` (0 when there were none).
pub fn int_wait_share(w: &IntWaitStats, n: u64) -> f64 {
    let waits = w.polled + w.woken + w.immediate;
    if waits == 0 {
        0.0
    } else {
        n as f64 * 100.0 / waits as f64
    }
}

/// The echo id: one below the request's (above for id 0), so that at full
/// bus load the echo wins arbitration against the generator instead of
/// starving behind it (canecho.c answers with id + 1).
pub fn echo_id(id: u16, offset: i32) -> u16 {
    let e = i32::from(id).saturating_add(offset);
    if (0..=0x7FF).contains(&e) {
        e as u16
    } else {
        i32::from(id).saturating_sub(offset).clamp(0, 0x7FF) as u16
    }
}

/// Runs the echo loop (the IRQ thread and canecho in one thread) until
/// `count` frames were echoed or nothing arrived for `idle` once the
/// generator is done.
fn echo_thread(
    mut d: Mcp251xfd,
    count: u64,
    id: u16,
    pump: &str,
    block: &SpiController,
    gen_done: impl Fn() -> bool,
    count_wake_cpu: bool,
) -> Result<EchoOutcome, String> {
    // The load run compares CPU without the lab's wake-ups, so it counts
    // their CPU; the timed run measures latency, which that counting (a
    // system call each side of a wake-up) would lengthen.
    WakeCost::count_cpu_on_this_thread(count_wake_cpu);
    let cpu0 = thread_cpu_ns();
    let preempted0 = thread_preemptions();
    let slept0 = thread_sleeps();
    let wake0 = WakeCost::of_this_thread();
    let clocked0 = block.clocked();
    let mut out = EchoOutcome { realtime: current_thread_is_realtime(), ..EchoOutcome::default() };
    let echo = CanId::Standard(id);
    while out.echoed < count {
        match d.recv(Some(Duration::from_millis(200))).map_err(|e| e.to_string())? {
            Some(f) => {
                let e = f.with_id(echo).map_err(|e| e.to_string())?;
                d.send(&e).map_err(|e| e.to_string())?;
                out.echoed += 1;
                out.last_send = Some(now());
            }
            None if gen_done() => break,
            None => {}
        }
    }
    out.thread_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    out.preempted = thread_preemptions().saturating_sub(preempted0);
    out.slept = thread_sleeps().saturating_sub(slept0);
    out.lab_wakes = WakeCost::of_this_thread().since(wake0);
    out.clocked = block.clocked().since(clocked0);
    // The pump's share stops here too: what follows (collecting the last
    // completions) is outside the measurement for both threads.
    out.pump_cpu_ns_at_end = named_thread_cpu_ns(pump);
    // Collect the last completions (after the measurement).
    std::thread::sleep(Duration::from_millis(5));
    let _ = d.poll();
    let _ = d.reap_tef();
    let s = d.stats();
    out.int_wait = d.int_wait_stats();
    out.rx_frames = s.rx_frames;
    out.rx_overflows = s.rx_overflows;
    out.rx_dropped = s.rx_dropped;
    out.errata_recovered = s.errata_recovered;
    Ok(out)
}

fn spawn_echo(
    rig: &mut Rig,
    cfg: Config,
    count: u64,
    id: u16,
    pump: String,
    count_wake_cpu: bool,
) -> Result<std::thread::JoinHandle<Result<EchoOutcome, String>>, String> {
    let int = rig.int.take().ok_or("INT line already taken")?;
    let d = Mcp251xfd::new(rig.spi.clone(), int, super::rig::INT_LINE, cfg).map_err(|e| e.to_string())?;
    let gen = rig.gen.clone();
    let block = rig.block.clone();
    std::thread::Builder::new()
        .name(format!("echo-{}", pump.trim_start_matches("spi-pump-")))
        .spawn(move || echo_thread(d, count, id, &pump, &block, move || gen.is_done(), count_wake_cpu))
        .map_err(|e| e.to_string())
}

fn driver_config(t: &Traffic, policy: &Policy) -> Config {
    // canecho asks for no TX timestamps (no SO_TIMESTAMPING): TEF completions are UINCs only.
    let mut cfg = Config { nominal_bitrate: t.bitrate, tx_timestamps: false, ..Config::default() };
    // Polling ahead of a predicted interrupt goes with the core's own
    // adaptive completion (the measured wake-up cost); the kernel presets
    // (5.18; 6.9, whose spi-imx polls by a fixed 30 µs rule) wait for the
    // interrupt in a threaded IRQ handler, as the kernel's mcp251xfd does.
    if !policy.adaptive_completion || policy.poll_below_ns.is_some() {
        cfg.int_wait.poll_budget_permille = 0;
    }
    cfg
}

/// Bits of an MCP2518FD instruction before its data: 4-bit instruction and
/// 12-bit address (`lab/src/devices/mcp2518fd/spi.rs`, module docs).
const CMD_BITS: u64 = 16;

/// The physical limit of one echo (RX EOF → echo SOF) in parts, ns: a lower
/// bound no driver can beat on the lab's MCP2518FD ([`echo_limit`]).
/// `spi_wire + chip_fixed + intermission_unoverlapped` is the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EchoLimit {
    /// SPI bits that must shift one after another between the RX object's
    /// store and the TX request taking effect.
    pub spi_bits: u64,
    /// Their wire time (plus the first READ command's bits that do not fit
    /// within the store delay).
    pub spi_wire_ns: f64,
    /// The chip model's store and TX-start delays.
    pub chip_fixed_ns: f64,
    /// The bus intermission (3 bit times after EOF).
    pub intermission_ns: f64,
    /// The part of the intermission that the SPI work and the chip's delays
    /// (which start at EOF too) do not cover.
    pub intermission_unoverlapped_ns: f64,
}

impl EchoLimit {
    /// The limit, ns.
    pub fn total_ns(&self) -> f64 {
        self.spi_wire_ns + self.chip_fixed_ns + self.intermission_unoverlapped_ns
    }
}

/// The physical limit of echoing a classic frame of `len` data bytes: what
/// must happen one after another between the request's EOF and the echo's
/// SOF on the lab's MCP2518FD, with nothing charged for software, for
/// chip-select timing or for INT (a GPIO, no SPI).
///
/// 1. The chip stores the frame at EOF + `store_delay_ns` (`txrx.rs`
///    `rx_from_bus`): R1 (DLC at byte 4) and the data (from byte 8 without RX
///    timestamps) are in RAM from then on (`receive`), not before.
/// 2. The driver reads the DLC and the payload (it must copy them; the
///    echo's ID does not depend on the request here, so neither the RX ID
///    word nor the TX ID word counts: the latter can be written beforehand).
///    The READ's 16 command bits may shift while the store is under way
///    (`spi.rs`: each data byte is read at the instant its first bit
///    shifts), its data bytes not. The cheaper of one READ over bytes
///    4..8+len (3 unused R1 bytes) and two READs (DLC; payload: 16 more
///    command bits, 24 fewer data bits) counts.
/// 3. It writes them to the TX object (DLC into T1, payload; the cheaper of
///    one WRITE and two, as for the read) and then
/// 4. writes FIFOCON byte 1 = UINC | TXREQ (16 + 8 bits; RAM and the SFRs are
///    not contiguous, so a separate access). The datasheet's order: object,
///    then request.
/// 5. The message is eligible `tx_start_delay_ns` after the request
///    (`registers.rs` `uinc`/`set_txreq`: `ready_at`; `txrx.rs`
///    `tx_candidate`), and the bus arbitrates then, at the earliest at EOF +
///    3 bit times of intermission (`can/bus.rs`: `idle_at`, `rearm`), which
///    runs from EOF alongside 1–4: only what they leave uncovered counts.
///
/// The limit is `max(chain, intermission)` with `chain = store + SPI + TX
/// start`, SPI at `spi_bit_ns` per bit (the clock the driver's transfers ran
/// at). It assumes the driver cannot know the DLC before reading it (no
/// guessed T1 written beforehand).
///
/// The lab is more lenient than silicon in ways this bound does not credit
/// (a driver exploiting them could beat it; the mcp251xfd driver does not):
/// a byte takes effect at its word's first bit (`lab/src/spi/model.rs`
/// calls `exchange` with the word's start), so the TXREQ byte acts 8 bits
/// early; the TX object is read at arbitration (`tx_candidate` →
/// `frame_at`), so bytes written during the TX-start delay, after the
/// request, would still go out; and a byte clocked just before the store
/// but worked out after the interrupt thread applied it reads the stored
/// frame (`mcp2518fd/mod.rs`: applied events are not rolled back).
pub fn echo_limit(
    len: usize,
    spi_bit_ns: f64,
    intermission_ns: f64,
    store_delay_ns: f64,
    tx_start_delay_ns: f64,
) -> EchoLimit {
    let l = len as u64 * 8;
    // Bytes 4 (DLC) and 8..8+len of the object, in one access or two.
    let (read_data, write) = if len == 0 {
        (8, CMD_BITS + 8)
    } else {
        ((32 + l).min(8 + CMD_BITS + l), (CMD_BITS + 32 + l).min(2 * CMD_BITS + 8 + l))
    };
    let request = CMD_BITS + 8;
    let spi_bits = read_data + write + request;
    let read_cmd_uncovered = (CMD_BITS as f64 * spi_bit_ns - store_delay_ns).max(0.0);
    let spi_wire_ns = spi_bits as f64 * spi_bit_ns + read_cmd_uncovered;
    let chip_fixed_ns = store_delay_ns + tx_start_delay_ns;
    EchoLimit {
        spi_bits,
        spi_wire_ns,
        chip_fixed_ns,
        intermission_ns,
        intermission_unoverlapped_ns: (intermission_ns - spi_wire_ns - chip_fixed_ns).max(0.0),
    }
}

/// Figures of the timed run.
#[derive(Clone, Debug, Default)]
pub struct Timed {
    pub gaps_us: Vec<f64>,
    pub irq_low_us: Vec<f64>,
    pub int_delivery_us: Vec<f64>,
    pub cs_to_clock_us: Vec<f64>,
    pub cs_high_gap_us: Vec<f64>,
    /// The physical limit of an echo of this run's frames ([`echo_limit`]).
    pub limit: EchoLimit,
    pub transfers_per_frame: Vec<u64>,
    /// Per echo: RX EOF → INT asserted, INT → first CS, first CS → echo SOF (µs).
    pub breakdown_us: [Vec<f64>; 3],
    /// Per echo, INT → first CS split in two (µs): how late the lab's
    /// interrupt thread drove INT (no software could see it before), and
    /// the rest, from that drive to the driver's first CS.
    pub int_split_us: [Vec<f64>; 2],
    /// Per echo: the least gap the transfers this driver made for it allow
    /// ([`driver_floor_ns`]), µs.
    pub driver_floor_us: Vec<f64>,
    pub frames_sent: u64,
    pub frames_echoed: u64,
    pub payload_mismatches: u64,
    /// The echo thread's CPU time over the run's length, % (what waiting
    /// for the interrupt costs, polling ahead included).
    pub echo_cpu_pct: f64,
    /// How many times one of the driver's erratum workarounds fired.
    pub errata_recovered: u64,
    /// How many times each of the chip model's errata changed what the
    /// driver saw (the lab's backdoor, over the rig's life: the driver's
    /// setup and the run).
    pub errata_hits: ErrataHits,
    /// How the driver's INT waits ended.
    pub int_wait: IntWaitStats,
    /// Times the echo thread was preempted.
    pub echo_preemptions: u64,
    /// Rounds whose echo thread ran under a realtime policy, of `rounds`.
    pub realtime_rounds: u64,
    pub rounds: u64,
}

impl Timed {
    /// Adds the figures of another round of the same policy: samples
    /// pooled, counts summed, the echo thread's CPU share weighted by frames.
    pub fn merge(self, o: Timed) -> Timed {
        let mut s = self;
        if s.frames_sent == 0 {
            return o;
        }
        let (na, nb) = (s.frames_sent as f64, o.frames_sent as f64);
        s.echo_cpu_pct = (s.echo_cpu_pct * na + o.echo_cpu_pct * nb) / (na + nb).max(1.0);
        s.gaps_us.extend(o.gaps_us);
        s.irq_low_us.extend(o.irq_low_us);
        s.int_delivery_us.extend(o.int_delivery_us);
        s.cs_to_clock_us.extend(o.cs_to_clock_us);
        s.cs_high_gap_us.extend(o.cs_high_gap_us);
        for (a, b) in s.breakdown_us.iter_mut().zip(o.breakdown_us) {
            a.extend(b);
        }
        for (a, b) in s.int_split_us.iter_mut().zip(o.int_split_us) {
            a.extend(b);
        }
        s.driver_floor_us.extend(o.driver_floor_us);
        s.frames_sent += o.frames_sent;
        s.frames_echoed += o.frames_echoed;
        s.payload_mismatches += o.payload_mismatches;
        s.errata_recovered += o.errata_recovered;
        s.errata_hits = s.errata_hits.plus(o.errata_hits);
        s.echo_preemptions += o.echo_preemptions;
        s.realtime_rounds += o.realtime_rounds;
        s.rounds += o.rounds;
        s.int_wait = add_int_waits(s.int_wait, o.int_wait);
        if s.transfers_per_frame.is_empty() {
            s.transfers_per_frame = o.transfers_per_frame;
        }
        // The lowest limit of the rounds is still a lower bound for all.
        if o.limit.total_ns() < s.limit.total_ns() {
            s.limit = o.limit;
        }
        s
    }
}

/// The timed run: `t.count` frames, each echoed, with the SPI bus traced.
pub fn timed(
    policy: Policy,
    name: &'static str,
    t: &Traffic,
    echo_offset: i32,
    lab_cpus: Option<&CpuList>,
) -> Result<Timed, String> {
    let cfg = driver_config(t, &policy);
    let mut rig = Rig::new(policy, name, t, (2 * t.count as usize).max(16), lab_cpus)?;
    let handle = spawn_echo(&mut rig, cfg, t.count, echo_id(t.id, echo_offset), format!("spi-pump-{name}"), false)?;
    rig.block.trace_start((t.count as usize * 400).max(4096));
    let start = now().add_ns(2_000_000);
    rig.gen.start(start);
    let echo = handle.join().map_err(|_| "echo thread panicked")??;
    let run_ns = echo.last_send.map_or(1, |l| l.ns_since(start).max(1));
    std::thread::sleep(Duration::from_millis(5));
    let trace = rig.block.trace_take();
    let recs = rig.rec.records();
    let report = pair_echoes(&recs, rig.gen.node());
    let windows = cs_windows(&trace);
    // The SPI clock the driver's transfers ran at: the shortest bit time on
    // the wire (the shortest gives the lowest, so still true, bound).
    let spi_bit_ns = trace
        .events
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::Word { start, end, bits, .. } if bits > 0 => Some(end.ns_since(start) as f64 / f64::from(bits)),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    let spi_bit_ns = if spi_bit_ns.is_finite() { spi_bit_ns } else { 0.0 };
    let mcfg = rig.model.config();
    let limit = echo_limit(
        t.len,
        spi_bit_ns,
        rig._can.nominal_bits_ns(u64::from(INTERMISSION_BITS)) as f64,
        mcfg.store_delay_ns as f64,
        mcfg.tx_start_delay_ns as f64,
    );
    let mut out = Timed {
        frames_sent: rig.gen.frames_sent(),
        echo_cpu_pct: echo.thread_cpu_ns as f64 * 100.0 / run_ns as f64,
        errata_recovered: echo.errata_recovered,
        errata_hits: rig.model.errata_hits(),
        int_wait: echo.int_wait,
        echo_preemptions: echo.preempted,
        realtime_rounds: u64::from(echo.realtime),
        rounds: 1,
        limit,
        ..Timed::default()
    };
    out.frames_echoed = report.pairs.len() as u64;
    out.payload_mismatches = report.payload_mismatches() as u64;
    out.gaps_us = report.gaps_us();
    let mut patterns: HashMap<Vec<u64>, usize> = HashMap::new();
    for (i, p) in report.pairs.iter().enumerate() {
        let (eof, sof) = (p.request.stamp.eof, p.echo.stamp.sof);
        let first: Vec<_> = windows.iter().filter(|w| w.asserted_at >= eof && w.asserted_at < sof).collect();
        if first.len() >= 2 {
            if let Some(d) = first[0].deasserted_at {
                out.cs_high_gap_us.push(first[1].asserted_at.ns_since(d) as f64 / 1e3);
            }
        }
        // The request took effect at least the TX-start delay before SOF:
        // a transfer begun after that did not make the echo.
        let request_by = sof.as_ns().saturating_sub(mcfg.tx_start_delay_ns);
        let bits: u64 = first.iter().filter(|w| w.asserted_at.as_ns() < request_by).map(|w| w.bits).sum();
        out.driver_floor_us.push(driver_floor_ns(&limit, bits, spi_bit_ns) / 1e3);
        let next_eof = report.pairs.get(i + 1).map(|n| n.request.stamp.eof);
        if let Some(end) = next_eof {
            let bits: Vec<u64> =
                windows.iter().filter(|w| w.asserted_at >= eof && w.asserted_at < end).map(|w| w.bits).collect();
            *patterns.entry(bits).or_default() += 1;
        }
    }
    out.transfers_per_frame =
        patterns.into_iter().max_by_key(|(b, n)| (*n, b.len())).map(|(b, _)| b).unwrap_or_default();
    out.cs_to_clock_us = windows.iter().filter_map(|w| w.cs_to_clock_ns()).map(|n| n as f64 / 1e3).collect();
    let falls: Vec<Instant> = rig.probe.intervals().iter().map(|(f, _)| *f).collect();
    for p in &report.pairs {
        let (eof, sof) = (p.request.stamp.eof, p.echo.stamp.sof);
        let Some(&int) = falls.iter().find(|&&f| f >= eof && f < sof) else { continue };
        let Some(first) = windows.iter().find(|w| w.asserted_at >= int && w.asserted_at < sof) else { continue };
        let us = |a: Instant, b: Instant| b.ns_since(a) as f64 / 1e3;
        for (v, x) in
            out.breakdown_us.iter_mut().zip([us(eof, int), us(int, first.asserted_at), us(first.asserted_at, sof)])
        {
            v.push(x);
        }
        if let Some(late) = rig.probe.lateness_of(int) {
            let to_cs = first.asserted_at.ns_since(int);
            // A driver already busy with an earlier frame may select the
            // chip before the lab gets to this INT: none of it is its own.
            let late = late.min(to_cs);
            out.int_split_us[0].push(late as f64 / 1e3);
            out.int_split_us[1].push((to_cs - late) as f64 / 1e3);
        }
    }
    out.int_delivery_us = rig.probe.lateness().iter().map(|&n| n as f64 / 1e3).collect();
    out.irq_low_us = rig.probe.intervals().iter().map(|(f, r)| r.ns_since(*f) as f64 / 1e3).collect();
    Ok(out)
}

/// The least gap the driver's own transfers allow an echo: the chip's
/// store and TX-start delays (`limit.chip_fixed_ns`) and the wire time of
/// the `bits` it clocked from the request's EOF until its TX request took
/// effect (transfers begun at least the TX-start delay before the echo's
/// SOF), one after another, or the bus intermission if that is longer; no software,
/// chip-select timing or interrupt latency. [`echo_limit`] counts the bits
/// any driver must move; this counts the ones this driver did move, so an
/// SPI core's share of a gap is what lies above it.
pub fn driver_floor_ns(limit: &EchoLimit, bits: u64, spi_bit_ns: f64) -> f64 {
    (limit.chip_fixed_ns + bits as f64 * spi_bit_ns).max(limit.intermission_ns)
}

/// Figures of the load run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Load {
    pub elapsed_ns: u64,
    pub echo_thread_cpu_ns: u64,
    /// The part of `echo_thread_cpu_ns` spent waking the lab's interrupt
    /// thread, and how many wake-ups.
    pub echo_lab_wakes: WakeCost,
    /// What the SPI block clocked during the run (the driver's transfers,
    /// whichever thread ran them).
    pub spi_clocked: Clocked,
    pub pump_thread_cpu_ns: u64,
    pub process_cpu_ns: u64,
    pub frames_sent: u64,
    pub frames_received: u64,
    pub frames_echoed: u64,
    /// RX FIFO overflow events (each may have lost several frames).
    pub rx_overflows: u64,
    /// Frames read but dropped on a full driver queue.
    pub rx_dropped: u64,
    /// How many times one of the driver's erratum workarounds fired.
    pub errata_recovered: u64,
    /// How many times each of the chip model's errata changed what the
    /// driver saw (as [`Timed::errata_hits`]).
    pub errata_hits: ErrataHits,
    /// Times the echo thread slept (or yielded): its voluntary context switches.
    pub echo_sleeps: u64,
    /// Times the echo thread was preempted.
    pub echo_preemptions: u64,
    /// How the driver's INT waits ended.
    pub int_wait: IntWaitStats,
    /// CPU time the hypervisor took from this machine during the run, in %
    /// of all CPUs' time (`None`: not reported). The lab's bus keeps real
    /// time while a stolen CPU stands still, so steal can lose frames.
    pub host_steal_pct: Option<f64>,
    /// The wire time below which the bus polled a transfer rather than
    /// sleep on its interrupt, at the end of the run (ns; `None`: the policy
    /// always sleeps). The last round's.
    pub poll_below_ns: Option<u64>,
}

impl Load {
    /// Adds another round of the same policy (times and counts summed).
    pub fn merge(self, o: Load) -> Load {
        let steal = match (self.host_steal_pct, o.host_steal_pct) {
            (Some(a), Some(b)) => {
                let n = (self.elapsed_ns + o.elapsed_ns).max(1) as f64;
                Some((a * self.elapsed_ns as f64 + b * o.elapsed_ns as f64) / n)
            }
            (a, b) => a.or(b),
        };
        Load {
            elapsed_ns: self.elapsed_ns + o.elapsed_ns,
            echo_thread_cpu_ns: self.echo_thread_cpu_ns + o.echo_thread_cpu_ns,
            echo_lab_wakes: self.echo_lab_wakes + o.echo_lab_wakes,
            spi_clocked: self.spi_clocked + o.spi_clocked,
            pump_thread_cpu_ns: self.pump_thread_cpu_ns + o.pump_thread_cpu_ns,
            process_cpu_ns: self.process_cpu_ns + o.process_cpu_ns,
            frames_sent: self.frames_sent + o.frames_sent,
            frames_received: self.frames_received + o.frames_received,
            frames_echoed: self.frames_echoed + o.frames_echoed,
            rx_overflows: self.rx_overflows + o.rx_overflows,
            rx_dropped: self.rx_dropped + o.rx_dropped,
            errata_recovered: self.errata_recovered + o.errata_recovered,
            errata_hits: self.errata_hits.plus(o.errata_hits),
            echo_preemptions: self.echo_preemptions + o.echo_preemptions,
            echo_sleeps: self.echo_sleeps + o.echo_sleeps,
            int_wait: add_int_waits(self.int_wait, o.int_wait),
            host_steal_pct: steal,
            poll_below_ns: o.poll_below_ns.or(self.poll_below_ns),
        }
    }
}

/// The load run: back-to-back frames, CPU per thread.
pub fn load(
    policy: Policy,
    name: &'static str,
    t: &Traffic,
    echo_offset: i32,
    lab_cpus: Option<&CpuList>,
) -> Result<Load, String> {
    let cfg = driver_config(t, &policy);
    let mut rig = Rig::new(policy, name, t, 16, lab_cpus)?;
    let pump = format!("spi-pump-{name}");
    let handle = spawn_echo(&mut rig, cfg, t.count, echo_id(t.id, echo_offset), pump.clone(), true)?;
    let start = now().add_ns(2_000_000);
    std::thread::sleep(Duration::from_millis(1));
    let pump0 = named_thread_cpu_ns(&pump);
    let u0 = ProcessUsage::now();
    let steal0 = HostSteal::now();
    rig.gen.start(start);
    let out = handle.join().map_err(|_| "echo thread panicked")??;
    let u = ProcessUsage::now().since(u0);
    let pump_cpu = out.pump_cpu_ns_at_end.saturating_sub(pump0);
    let end = out.last_send.unwrap_or_else(now);
    let elapsed_ns = end.ns_since(start).max(1);
    Ok(Load {
        elapsed_ns,
        host_steal_pct: steal0.zip(HostSteal::now()).map(|(a, b)| b.pct_since(a, elapsed_ns)),
        echo_thread_cpu_ns: out.thread_cpu_ns,
        echo_lab_wakes: out.lab_wakes,
        spi_clocked: out.clocked,
        pump_thread_cpu_ns: pump_cpu,
        process_cpu_ns: u.cpu_ns,
        frames_sent: rig.gen.frames_sent(),
        frames_received: out.rx_frames,
        frames_echoed: out.echoed,
        rx_overflows: out.rx_overflows,
        rx_dropped: out.rx_dropped,
        errata_recovered: out.errata_recovered,
        errata_hits: rig.model.errata_hits(),
        echo_preemptions: out.preempted,
        echo_sleeps: out.slept,
        int_wait: out.int_wait,
        poll_below_ns: rig._spi_bus.poll_below_ns(),
    })
}

/// `{median, p99, max}` of a sample, rounded to 0.1 µs.
pub fn summary(xs: &[f64]) -> serde_json::Value {
    let r = |x: f64| crate::stats::round(x, 1);
    if xs.is_empty() {
        return serde_json::json!({ "median": null, "p99": null, "max": null });
    }
    serde_json::json!({
        "median": r(median(xs)),
        "p99": r(percentile(xs, 99.0)),
        "max": r(xs.iter().copied().fold(f64::MIN, f64::max)),
    })
}

#[cfg(test)]
mod tests {
    use super::{echo_id, echo_limit};

    #[test]
    fn the_echo_limit_counts_what_must_follow_one_another() {
        // The bench's configuration: 8 bytes, the driver's SPI at 200 MHz / 12
        // (60 ns a bit), 250 kbit/s (intermission 12 µs), the model's
        // default delays (store 1 µs, TX start 2 µs).
        let l = echo_limit(8, 60.0, 12_000.0, 1_000.0, 2_000.0);
        // Read: DLC, then a second READ for the payload (16 + 8 + 64 bits, the
        // first command under the store; one READ over bytes 4..16 is 96);
        // write: 8 + 16 + 64 bits the same way (one WRITE is 112); request 24.
        assert_eq!(l.spi_bits, (8 + 16 + 64) + (16 + 8 + 16 + 64) + 24);
        assert_eq!(l.spi_bits, 216);
        assert!((l.spi_wire_ns - 12_960.0).abs() < 1e-6, "{l:?}");
        assert!((l.chip_fixed_ns - 3_000.0).abs() < 1e-6);
        assert_eq!(l.intermission_unoverlapped_ns, 0.0, "the chain outlasts the intermission");
        assert!((l.total_ns() - 15_960.0).abs() < 1e-6);
        // At 125 kbit/s the intermission (24 µs) outlasts the chain: the limit is it.
        let slow = echo_limit(8, 60.0, 24_000.0, 1_000.0, 2_000.0);
        assert!((slow.intermission_unoverlapped_ns - 8_040.0).abs() < 1e-6);
        assert!((slow.total_ns() - 24_000.0).abs() < 1e-6);
        // A READ command longer than the store delay: the rest of it counts.
        let sclk = echo_limit(8, 100.0, 12_000.0, 1_000.0, 2_000.0);
        assert!((sclk.spi_wire_ns - (216.0 * 100.0 + 600.0)).abs() < 1e-6);
        // No payload: the DLC alone, each way; 4 bytes: one access and two cost the same.
        assert_eq!(echo_limit(0, 60.0, 0.0, 1_000.0, 2_000.0).spi_bits, 8 + 24 + 24);
        assert_eq!(echo_limit(4, 60.0, 0.0, 1_000.0, 2_000.0).spi_bits, (8 + 16 + 32) + (16 + 8 + 16 + 32) + 24);
    }

    #[test]
    fn echo_id_stays_standard_for_any_offset() {
        assert_eq!(echo_id(0x077, -1), 0x076);
        assert_eq!(echo_id(0, -1), 1, "above for id 0");
        assert_eq!(echo_id(0x077, i32::MAX), 0, "an offset past the range is a valid id, not an overflow");
        assert_eq!(echo_id(0x7FF, i32::MIN), 0x7FF);
    }
}
