//! What an interrupt wake-up costs on this machine, as the core measured it.
//!
//! Adaptive completion polls when a transfer's expected wire time is below
//! this cost. The estimate starts from a one-time measurement of a thread
//! wake-up (a condition-variable ping-pong, done once per process) and is
//! refined by every transfer that did wait on an interrupt: its completion
//! was seen that long after the wire went quiet.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use wirespeed_time::now;

/// A running estimate of the interrupt wake-up cost, in ns.
#[derive(Debug)]
pub struct IrqCost {
    ns: AtomicU64,
}

impl IrqCost {
    /// Starts from the process-wide wake-up measurement.
    pub fn measured() -> IrqCost {
        IrqCost { ns: AtomicU64::new(thread_wakeup_ns()) }
    }

    /// The current estimate.
    #[inline]
    pub fn get_ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed)
    }

    /// Folds in one observed wake-up (exponential average, weight 1/8).
    pub fn observe(&self, ns: u64) {
        let old = self.get_ns();
        let new = old - old / 8 + ns / 8;
        self.ns.store(new.max(1_000), Ordering::Relaxed);
    }
}

/// The wake-up cost assumed when it cannot be measured.
const UNMEASURED_WAKEUP_NS: u64 = 20_000;

/// The median one-way latency of waking a sleeping thread, measured once.
pub fn thread_wakeup_ns() -> u64 {
    static MEASURED: OnceLock<u64> = OnceLock::new();
    *MEASURED.get_or_init(measure_wakeup)
}

fn measure_wakeup() -> u64 {
    struct Ping {
        slot: Mutex<(u64, bool)>,
        cv: Condvar,
    }
    let ping = Arc::new(Ping { slot: Mutex::new((0, false)), cv: Condvar::new() });
    let p2 = ping.clone();
    let rounds = 21;
    let probe = std::thread::Builder::new().name("wakeup-probe".into()).spawn(move || {
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let mut g = p2.slot.lock().unwrap_or_else(|e| e.into_inner());
            while !g.1 {
                g = p2.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            samples.push(now().as_ns().saturating_sub(g.0));
            g.1 = false;
            p2.cv.notify_all();
        }
        samples
    });
    let Ok(waiter) = probe else {
        // No thread to wake: the machine cannot measure one, so assume a
        // typical one (the bus will fail to start for the same reason).
        return UNMEASURED_WAKEUP_NS;
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
    let mut samples = waiter.join().unwrap_or_else(|_| vec![UNMEASURED_WAKEUP_NS]);
    samples.sort_unstable();
    samples[samples.len() / 2].max(1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_moves_toward_observations() {
        let c = IrqCost { ns: AtomicU64::new(10_000) };
        for _ in 0..100 {
            c.observe(50_000);
        }
        assert!(c.get_ns() > 45_000, "{}", c.get_ns());
        assert!(thread_wakeup_ns() >= 1_000);
    }
}
