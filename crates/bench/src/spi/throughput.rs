//! Several threads sharing one bus: sync calls against async submits.
//!
//! Seed 000's maintainer reply: submitting asynchronously keeps the bus busy,
//! because the next message can start as soon as one completes. Each thread
//! sends its messages either with `run` (sync) or by keeping a window of
//! prepared messages submitted (async); bus utilization is wire time over
//! elapsed time. Async runs a third time with the pump's pipelining off
//! (`pipelined_pump`), the one switch that acts only on queued messages.

use super::rig::Rig;
use crate::stats::median;
use std::collections::VecDeque;
use std::sync::Barrier;
use wirespeed::spi::Policy;
use wirespeed_time::now;

/// How the threads send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each message waited for in turn.
    Sync,
    /// A window of messages in flight per thread.
    Async,
}

/// Result of one multi-threaded run.
#[derive(Clone, Copy, Debug)]
pub struct Throughput {
    pub bus_utilization: f64,
    pub msgs_per_s: f64,
}

/// Sync, async, and async without the pump's pipelining, side by side.
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    pub sync: Throughput,
    pub async_: Throughput,
    pub async_unpipelined: Throughput,
}

/// Runs the three ways `reps` times, interleaved; each figure is a median.
pub fn compare(
    reps: usize,
    threads: usize,
    msgs: usize,
    size: usize,
    hz: u32,
    window: usize,
) -> Result<Comparison, String> {
    let unpipelined = Policy { pipelined_pump: false, ..Policy::fast() };
    let ways = [(Mode::Sync, Policy::fast()), (Mode::Async, Policy::fast()), (Mode::Async, unpipelined)];
    let mut runs: [Vec<Throughput>; 3] = Default::default();
    for _ in 0..reps.max(1) {
        for ((mode, policy), out) in ways.iter().zip(runs.iter_mut()) {
            out.push(run(*mode, policy.clone(), threads, msgs, size, hz, window)?);
        }
    }
    let med = |v: &[Throughput]| Throughput {
        bus_utilization: median(&v.iter().map(|t| t.bus_utilization).collect::<Vec<_>>()),
        msgs_per_s: median(&v.iter().map(|t| t.msgs_per_s).collect::<Vec<_>>()),
    };
    Ok(Comparison { sync: med(&runs[0]), async_: med(&runs[1]), async_unpipelined: med(&runs[2]) })
}

/// Runs `threads` threads, each sending `msgs` messages of `size` bytes.
pub fn run(
    mode: Mode,
    policy: Policy,
    threads: usize,
    msgs: usize,
    size: usize,
    hz: u32,
    window: usize,
) -> Result<Throughput, String> {
    let rig = Rig::new(policy, hz, false)?;
    let start = Barrier::new(threads + 1);
    let t0 = std::thread::scope(|sc| -> Result<u64, String> {
        let mut handles = Vec::new();
        for _ in 0..threads {
            let dev = rig.dev.clone();
            let start = &start;
            let msgs_per_thread = msgs;
            let mut pms = (0..window.max(1)).map(|_| rig.prepared(size)).collect::<Result<Vec<_>, _>>()?;
            handles.push(sc.spawn(move || -> Result<(), String> {
                start.wait();
                match mode {
                    Mode::Sync => {
                        let pm = &mut pms[0];
                        for _ in 0..msgs_per_thread {
                            dev.run(pm).map_err(|e| e.to_string())?;
                        }
                    }
                    Mode::Async => {
                        // Double buffering: two halves of the window in flight; wait
                        // for the older half (its last message first: messages to
                        // one device complete in order, so one wake-up covers the
                        // half) and submit it again.
                        let half = (pms.len() / 2).max(1);
                        let mut inflight = VecDeque::with_capacity(pms.len());
                        let mut done = Vec::with_capacity(half);
                        let mut sent = 0;
                        for pm in pms.drain(..) {
                            if sent < msgs_per_thread {
                                inflight.push_back(dev.submit(pm));
                                sent += 1;
                            }
                        }
                        while !inflight.is_empty() {
                            let n = half.min(inflight.len());
                            // Sleep once, on the newest of the half; the older ones
                            // are then done and their waits return at once.
                            let newest = inflight.remove(n - 1).map(|p| p.wait());
                            done.extend(inflight.drain(..n - 1).map(|p| p.wait()).chain(newest));
                            for (pm, r) in done.drain(..) {
                                r.map_err(|e| e.to_string())?;
                                if sent < msgs_per_thread {
                                    inflight.push_back(dev.submit(pm));
                                    sent += 1;
                                }
                            }
                        }
                    }
                }
                Ok(())
            }));
        }
        start.wait();
        let t0 = now();
        for h in handles {
            h.join().map_err(|_| "a sender thread panicked".to_owned())??;
        }
        Ok(now().ns_since(t0))
    })?;
    let elapsed_s = t0 as f64 / 1e9;
    let total = (threads * msgs) as f64;
    let actual_hz = f64::from(rig.bus.caps().actual_speed_hz(hz));
    let wire_s = total * (size * 8) as f64 / actual_hz;
    Ok(Throughput { bus_utilization: wire_s / elapsed_s, msgs_per_s: total / elapsed_s })
}
