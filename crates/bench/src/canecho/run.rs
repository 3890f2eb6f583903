//! One policy's runs: the timed echo run (traced) and the load run (CPU).

use super::rig::{named_thread_cpu_ns, Rig, Traffic};
use crate::stats::{median, percentile};
use crate::usage::{thread_cpu_ns, HostSteal, ProcessUsage};
use std::collections::HashMap;
use std::time::Duration;
use wirespeed::spi::Policy;
use wirespeed_drivers::can::CanId;
use wirespeed_drivers::mcp251xfd::{Config, Mcp251xfd};
use wirespeed_lab::can::tools::pair_echoes;
use wirespeed_lab::can::INTERMISSION_BITS;
use wirespeed_lab::trace::{cs_windows, TraceEvent};
use wirespeed_time::{now, Instant};

/// What the echo thread reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoOutcome {
    pub echoed: u64,
    pub thread_cpu_ns: u64,
    /// The pump thread's CPU time when the echo loop ended (same instant as
    /// `thread_cpu_ns`; 0 without a pump thread).
    pub pump_cpu_ns_at_end: u64,
    pub last_send: Option<Instant>,
    pub rx_frames: u64,
    pub rx_overflows: u64,
    pub rx_dropped: u64,
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
    gen_done: impl Fn() -> bool,
) -> Result<EchoOutcome, String> {
    let cpu0 = thread_cpu_ns();
    let mut out = EchoOutcome::default();
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
    // The pump's share stops here too: what follows (collecting the last
    // completions) is outside the measurement for both threads.
    out.pump_cpu_ns_at_end = named_thread_cpu_ns(pump);
    // Collect the last completions (after the measurement).
    std::thread::sleep(Duration::from_millis(5));
    let _ = d.poll();
    let _ = d.reap_tef();
    let s = d.stats();
    if std::env::var_os("CANECHO_DEBUG").is_some() {
        eprintln!("{:?}\n{:?}", d.int_wait_stats(), s);
    }
    out.rx_frames = s.rx_frames;
    out.rx_overflows = s.rx_overflows;
    out.rx_dropped = s.rx_dropped;
    Ok(out)
}

fn spawn_echo(
    rig: &mut Rig,
    cfg: Config,
    count: u64,
    id: u16,
    pump: String,
) -> Result<std::thread::JoinHandle<Result<EchoOutcome, String>>, String> {
    let int = rig.int.take().ok_or("INT line already taken")?;
    let d = Mcp251xfd::new(rig.spi.clone(), int, super::rig::INT_LINE, cfg).map_err(|e| e.to_string())?;
    let gen = rig.gen.clone();
    std::thread::Builder::new()
        .name("canecho".into())
        .spawn(move || echo_thread(d, count, id, &pump, move || gen.is_done()))
        .map_err(|e| e.to_string())
}

fn driver_config(t: &Traffic, policy: &Policy) -> Config {
    // canecho asks for no TX timestamps (no SO_TIMESTAMPING): TEF completions are UINCs only.
    let mut cfg = Config { nominal_bitrate: t.bitrate, tx_timestamps: false, ..Config::default() };
    // Polling ahead of a predicted interrupt goes with the core's adaptive
    // completion; without it (classic) the IRQ thread always sleeps on the
    // interrupt, as the seed's kernel does.
    if !policy.adaptive_completion {
        cfg.int_wait.poll_budget_permille = 0;
    }
    cfg
}

/// Figures of the timed run.
#[derive(Clone, Debug, Default)]
pub struct Timed {
    pub gaps_us: Vec<f64>,
    pub irq_low_us: Vec<f64>,
    pub int_delivery_us: Vec<f64>,
    pub cs_to_clock_us: Vec<f64>,
    pub cs_high_gap_us: Vec<f64>,
    pub limits_us: Vec<f64>,
    pub transfers_per_frame: Vec<u64>,
    /// Per echo: RX EOF → INT asserted, INT → first CS, first CS → echo SOF (µs).
    pub breakdown_us: [Vec<f64>; 3],
    pub frames_sent: u64,
    pub frames_echoed: u64,
    pub payload_mismatches: u64,
    /// The echo thread's CPU time over the run's length, % (what waiting
    /// for the interrupt costs, polling ahead included).
    pub echo_cpu_pct: f64,
}

/// The timed run: `t.count` frames, each echoed, with the SPI bus traced.
pub fn timed(policy: Policy, name: &'static str, t: &Traffic, echo_offset: i32) -> Result<Timed, String> {
    let cfg = driver_config(t, &policy);
    let mut rig = Rig::new(policy, name, t, (2 * t.count as usize).max(16))?;
    let handle = spawn_echo(&mut rig, cfg, t.count, echo_id(t.id, echo_offset), format!("spi-pump-{name}"))?;
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
    let words: Vec<(Instant, Instant)> = trace
        .events
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::Word { start, end, .. } => Some((start, end)),
            _ => None,
        })
        .collect();
    let mcfg = rig.model.config();
    let bit_ns = 1_000_000_000 / u64::from(t.bitrate);
    let fixed_ns = mcfg.store_delay_ns + mcfg.tx_start_delay_ns + u64::from(INTERMISSION_BITS) * bit_ns;
    let mut out = Timed {
        frames_sent: rig.gen.frames_sent(),
        echo_cpu_pct: echo.thread_cpu_ns as f64 * 100.0 / run_ns as f64,
        ..Timed::default()
    };
    out.frames_echoed = report.pairs.len() as u64;
    out.payload_mismatches = report.payload_mismatches() as u64;
    out.gaps_us = report.gaps_us();
    let mut patterns: HashMap<Vec<u64>, usize> = HashMap::new();
    for (i, p) in report.pairs.iter().enumerate() {
        let (eof, sof) = (p.request.stamp.eof, p.echo.stamp.sof);
        let wire: u64 = words.iter().filter(|w| w.0 >= eof && w.0 < sof).map(|w| w.1.ns_since(w.0)).sum();
        out.limits_us.push((wire + fixed_ns) as f64 / 1e3);
        let first: Vec<_> = windows.iter().filter(|w| w.asserted_at >= eof && w.asserted_at < sof).collect();
        if first.len() >= 2 {
            if let Some(d) = first[0].deasserted_at {
                out.cs_high_gap_us.push(first[1].asserted_at.ns_since(d) as f64 / 1e3);
            }
        }
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
    }
    out.int_delivery_us = rig.probe.lateness().iter().map(|&n| n as f64 / 1e3).collect();
    out.irq_low_us = rig.probe.intervals().iter().map(|(f, r)| r.ns_since(*f) as f64 / 1e3).collect();
    Ok(out)
}

/// Figures of the load run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Load {
    pub elapsed_ns: u64,
    pub echo_thread_cpu_ns: u64,
    pub pump_thread_cpu_ns: u64,
    pub process_cpu_ns: u64,
    pub frames_sent: u64,
    pub frames_received: u64,
    pub frames_echoed: u64,
    /// RX FIFO overflow events (each may have lost several frames).
    pub rx_overflows: u64,
    /// Frames read but dropped on a full driver queue.
    pub rx_dropped: u64,
    /// CPU time the hypervisor took from this machine during the run, in %
    /// of all CPUs' time (`None`: not reported). The lab's bus keeps real
    /// time while a stolen CPU stands still, so steal can lose frames.
    pub host_steal_pct: Option<f64>,
}

/// The load run: back-to-back frames, CPU per thread.
pub fn load(policy: Policy, name: &'static str, t: &Traffic, echo_offset: i32) -> Result<Load, String> {
    let cfg = driver_config(t, &policy);
    let mut rig = Rig::new(policy, name, t, 16)?;
    let pump = format!("spi-pump-{name}");
    let handle = spawn_echo(&mut rig, cfg, t.count, echo_id(t.id, echo_offset), pump.clone())?;
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
        pump_thread_cpu_ns: pump_cpu,
        process_cpu_ns: u.cpu_ns,
        frames_sent: rig.gen.frames_sent(),
        frames_received: out.rx_frames,
        frames_echoed: out.echoed,
        rx_overflows: out.rx_overflows,
        rx_dropped: out.rx_dropped,
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
    use super::echo_id;

    #[test]
    fn echo_id_stays_standard_for_any_offset() {
        assert_eq!(echo_id(0x077, -1), 0x076);
        assert_eq!(echo_id(0, -1), 1, "above for id 0");
        assert_eq!(echo_id(0x077, i32::MAX), 0, "an offset past the range is a valid id, not an overflow");
        assert_eq!(echo_id(0x7FF, i32::MIN), 0x7FF);
    }
}
