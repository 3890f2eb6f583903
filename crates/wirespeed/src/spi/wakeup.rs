//! What an interrupt wake-up costs on this machine, as the core measured it.
//!
//! Adaptive completion weighs a sleep on the interrupt against polling.
//! Sleeping through a transfer adds the wake-up's latency to it and saves
//! its wire time less the sleep's own CPU (entering the sleep, switching
//! out and back in); so it polls while the wire time is below the two
//! together ([`IrqCost::poll_below_ns`]). Both start from a one-time
//! measurement (a condition-variable ping-pong, once per process): the
//! median one-way latency, and the median CPU time the waiting thread spent
//! per wait. The latency is refined by every transfer that did wait on an
//! interrupt: its completion was seen that long after the wire went quiet.

use super::policy::Policy;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A running estimate of the interrupt wake-up cost, in ns.
#[derive(Debug)]
pub struct IrqCost {
    ns: AtomicU64,
    /// The CPU a sleeping wait costs the thread that sleeps, ns (measured once).
    sleep_cpu_ns: u64,
}

impl IrqCost {
    /// Starts from the process-wide wake-up measurement.
    pub fn measured() -> IrqCost {
        let w = thread_wakeup();
        IrqCost { ns: AtomicU64::new(w.latency_ns), sleep_cpu_ns: w.sleep_cpu_ns }
    }

    /// The current estimate of the wake-up latency.
    #[inline]
    pub fn get_ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed)
    }

    /// The wire time below which adaptive completion polls under `policy`:
    /// its fixed threshold, or the wake-up latency plus the sleep's own CPU
    /// (below that, sleeping would add more latency than it saves CPU).
    #[inline]
    pub fn poll_below_ns(&self, policy: &Policy) -> u64 {
        policy.poll_below_ns.unwrap_or_else(|| self.get_ns().saturating_add(self.sleep_cpu_ns))
    }

    /// Folds in one observed wake-up (exponential average, weight 1/8).
    pub fn observe(&self, ns: u64) {
        let old = self.get_ns();
        // One outlier (a wake-up preempted, a DMA transfer's first IOTLB
        // walks) moves the estimate by at most 3/8 of itself: it may be the
        // last observation for a long time once the estimate says "poll".
        let ns = ns.min(old.saturating_mul(4));
        let new = old - old / 8 + ns / 8;
        self.ns.store(new.max(1_000), Ordering::Relaxed);
    }
}

/// The wake-up cost assumed when it cannot be measured.
const UNMEASURED_WAKEUP_NS: u64 = 20_000;

/// What waking a sleeping thread costs, measured once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakeup {
    /// Median one-way latency: from the notification to the woken thread
    /// running, ns.
    pub latency_ns: u64,
    /// Median CPU time the sleeping thread spent per wait (going to sleep,
    /// being switched out and back in), ns.
    pub sleep_cpu_ns: u64,
}

/// The wake-up assumed when it cannot be measured (and under loom).
const UNMEASURED: Wakeup = Wakeup { latency_ns: UNMEASURED_WAKEUP_NS, sleep_cpu_ns: UNMEASURED_WAKEUP_NS };

/// The wake-up's latency and the sleep's CPU, measured once per process.
pub fn thread_wakeup() -> Wakeup {
    static MEASURED: OnceLock<Wakeup> = OnceLock::new();
    *MEASURED.get_or_init(measure_wakeup)
}

/// Under `--cfg loom` the clock steps (see `wirespeed_time::now`), so there
/// is nothing to measure: the models take the typical wake-up, the same on
/// every machine, and explore the same paths everywhere.
#[cfg(loom)]
fn measure_wakeup() -> Wakeup {
    UNMEASURED
}

#[cfg(not(loom))]
fn measure_wakeup() -> Wakeup {
    use std::sync::{Arc, Condvar, Mutex};
    use wirespeed_time::{now, thread_cpu_ns};
    fn median(mut xs: Vec<u64>) -> u64 {
        xs.sort_unstable();
        xs.get(xs.len() / 2).copied().unwrap_or(UNMEASURED_WAKEUP_NS)
    }
    struct Ping {
        slot: Mutex<(u64, bool)>,
        cv: Condvar,
    }
    let ping = Arc::new(Ping { slot: Mutex::new((0, false)), cv: Condvar::new() });
    let p2 = ping.clone();
    let rounds = 21;
    let probe = std::thread::Builder::new().name("wakeup-probe".into()).spawn(move || {
        let mut latency = Vec::with_capacity(rounds);
        let mut cpu = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let mut g = p2.slot.lock().unwrap_or_else(|e| e.into_inner());
            let cpu0 = thread_cpu_ns();
            let mut slept = false;
            while !g.1 {
                slept = true;
                g = p2.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            latency.push(now().as_ns().saturating_sub(g.0));
            if slept {
                cpu.push(thread_cpu_ns().saturating_sub(cpu0));
            }
            g.1 = false;
            p2.cv.notify_all();
        }
        (latency, cpu)
    });
    let Ok(waiter) = probe else {
        // No thread to wake: the machine cannot measure one, so assume a
        // typical one (the bus will fail to start for the same reason).
        return UNMEASURED;
    };
    for _ in 0..rounds {
        std::thread::sleep(std::time::Duration::from_micros(200));
        let mut g = ping.slot.lock().unwrap_or_else(|e| e.into_inner());
        while g.1 {
            g = ping.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        *g = (now().as_ns(), true);
        ping.cv.notify_all();
    }
    let Ok((latency, cpu)) = waiter.join() else { return UNMEASURED };
    Wakeup { latency_ns: median(latency).max(1_000), sleep_cpu_ns: median(cpu) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_moves_toward_observations() {
        let c = IrqCost { ns: AtomicU64::new(10_000), sleep_cpu_ns: 3_000 };
        for _ in 0..100 {
            c.observe(50_000);
        }
        assert!(c.get_ns() > 45_000, "{}", c.get_ns());
        assert!(thread_wakeup().latency_ns >= 1_000);
        assert_eq!(c.poll_below_ns(&Policy::fast()), c.get_ns() + 3_000, "the sleep's CPU is added to the latency");
        assert_eq!(c.poll_below_ns(&Policy::linux69()), 30_000, "a fixed threshold stands");
    }

    #[test]
    fn one_outlier_moves_the_estimate_by_at_most_three_eighths() {
        let c = IrqCost { ns: AtomicU64::new(8_000), sleep_cpu_ns: 3_000 };
        c.observe(10_000_000);
        assert_eq!(c.get_ns(), 11_000, "8 µs - 1 µs + min(10 ms, 32 µs) / 8");
        c.observe(2_000);
        assert!(c.get_ns() < 11_000);
    }

    #[test]
    fn a_sleep_costs_its_thread_some_cpu_but_less_than_the_pause_that_caused_it() {
        let w = thread_wakeup();
        // The waiter slept through a 200 µs pause between pings: its CPU
        // is the sleep's overhead (microseconds), never the pause.
        assert!(w.sleep_cpu_ns > 0 && w.sleep_cpu_ns < 200_000, "{w:?}");
    }
}
