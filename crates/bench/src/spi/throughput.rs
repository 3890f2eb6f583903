//! Several threads sharing one bus: sync calls against async submits.
//!
//! Seed 000's maintainer reply: submitting asynchronously keeps the bus busy,
//! because the next message can start as soon as one completes. Each thread
//! sends its messages either with `run` (sync) or by keeping a window of
//! prepared messages submitted (async); bus utilization is wire time over
//! elapsed time. Async runs a third time with the pump's pipelining off
//! (`pipelined_pump`), the one switch that acts only on queued messages.

use super::rig::Rig;
use super::target::Target;
use crate::stats::median;
use std::collections::VecDeque;
use std::sync::{Barrier, Condvar, Mutex};
use wirespeed::spi::Policy;
use wirespeed_time::{now, Instant};

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
    /// The run's wire time: every message's bits at the clock run.
    pub wire_s: f64,
    /// The run's elapsed time, from the first sender's start to the last one's end.
    pub elapsed_s: f64,
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
    target: &Target,
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
            out.push(run(target, *mode, policy.clone(), threads, msgs, size, hz, window)?);
        }
    }
    let med = |v: &[Throughput]| Throughput {
        bus_utilization: median(&v.iter().map(|t| t.bus_utilization).collect::<Vec<_>>()),
        msgs_per_s: median(&v.iter().map(|t| t.msgs_per_s).collect::<Vec<_>>()),
        wire_s: median(&v.iter().map(|t| t.wire_s).collect::<Vec<_>>()),
        elapsed_s: median(&v.iter().map(|t| t.elapsed_s).collect::<Vec<_>>()),
    };
    Ok(Comparison { sync: med(&runs[0]), async_: med(&runs[1]), async_unpipelined: med(&runs[2]) })
}

/// Runs `threads` threads, each sending `msgs` messages of `size` bytes.
#[allow(clippy::too_many_arguments)]
pub fn run(
    target: &Target,
    mode: Mode,
    policy: Policy,
    threads: usize,
    msgs: usize,
    size: usize,
    hz: u32,
    window: usize,
) -> Result<Throughput, String> {
    let rig = Rig::on(target, policy, hz, false)?;
    let start = Barrier::new(threads);
    // Whether every sender started: each waits for it before the barrier,
    // which only a full set passes, and returns at once if one could not.
    let all_started = (Mutex::new(None::<bool>), Condvar::new());
    let elapsed_ns = std::thread::scope(|sc| -> Result<u64, String> {
        let mut handles = Vec::new();
        let mut failed = None;
        for k in 0..threads {
            let dev = rig.dev.clone();
            let (start, all_started) = (&start, &all_started);
            let msgs_per_thread = msgs;
            let mut pms = match (0..window.max(1)).map(|_| rig.prepared(size)).collect::<Result<Vec<_>, _>>() {
                Ok(pms) => pms,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let sender = std::thread::Builder::new().spawn_scoped(sc, move || -> Result<(Instant, Instant), String> {
                let go = all_started.0.lock().unwrap_or_else(|e| e.into_inner());
                let go = all_started.1.wait_while(go, |go| go.is_none()).unwrap_or_else(|e| e.into_inner());
                if *go != Some(true) {
                    return Err("another sender could not be started".to_owned());
                }
                drop(go);
                start.wait();
                let t0 = now();
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
                Ok((t0, now()))
            });
            match sender {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failed = Some(format!("cannot start sender thread {} of {threads}: {e}", k + 1));
                    break;
                }
            }
        }
        *all_started.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(failed.is_none());
        all_started.1.notify_all();
        if let Some(e) = failed {
            return Err(e);
        }
        // The run: from the first sender's start to the last one's end, as
        // the senders read them (this thread may wake late at either end).
        let (mut first, mut last) = (Instant::from_ns(u64::MAX), Instant::ZERO);
        for h in handles {
            let (t0, t1) = h.join().map_err(|_| "a sender thread panicked".to_owned())??;
            (first, last) = (first.min(t0), last.max(t1));
        }
        Ok(last.ns_since(first))
    })?;
    let elapsed_s = elapsed_ns as f64 / 1e9;
    let total = (threads * msgs) as f64;
    let actual_hz = f64::from(rig.bus.caps().actual_speed_hz(hz));
    let wire_s = total * (size * 8) as f64 / actual_hz;
    Ok(Throughput { bus_utilization: wire_s / elapsed_s, msgs_per_s: total / elapsed_s, wire_s, elapsed_s })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn the_timed_interval_holds_every_message_of_the_run() {
        // The wire time is a lower bound of the time the run took (no message
        // shifts faster than its bits): a utilization above 1 is a clock read
        // after the first messages went. Short runs, where that would show.
        for _ in 0..50 {
            for mode in [Mode::Sync, Mode::Async] {
                let t = run(&Target::default(), mode, Policy::fast(), 4, 20, 9, 20_000_000, 8).unwrap();
                assert!(t.bus_utilization <= 1.0, "{mode:?}: bus utilization {}", t.bus_utilization);
            }
        }
    }

    #[test]
    fn senders_the_system_cannot_start_are_an_error_not_a_hang() {
        const NAME: &str = "spi::throughput::tests::senders_the_system_cannot_start_are_an_error_not_a_hang";
        if std::env::var("WIRESPEED_BENCH_CHILD").as_deref() == Ok(NAME) {
            // Every thread's stack takes 256 MiB (RUST_MIN_STACK) of an
            // address space capped at 8 GiB: the rig's threads start, 256
            // senders cannot.
            let cap = libc::rlimit { rlim_cur: 8 << 30, rlim_max: 8 << 30 };
            // SAFETY: `cap` is a valid rlimit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &cap) }, 0);
            let e = run(&Target::default(), Mode::Sync, Policy::fast(), 256, 1, 9, 20_000_000, 1)
                .expect_err("256 senders of 256 MiB each started in 8 GiB");
            assert!(e.contains("of 256"), "{e}");
            return;
        }
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env("WIRESPEED_BENCH_CHILD", NAME)
            .env("RUST_MIN_STACK", (256u64 << 20).to_string())
            .env("RUST_BACKTRACE", "0")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let limit = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the comparison hung when a sender thread could not start");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "child failed: {status:?}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
