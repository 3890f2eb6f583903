//! The host's ceiling on classic's pump wake-ups per message.
//!
//! Classic kicks its pump after every message, as 5.18's
//! `spi_finalize_current_message` queues the pump's work; a kick that finds
//! the last one still pending wakes nobody (`kthread_queue_work` queues a
//! pending item once). Between a kick and the pump taking it nothing of the
//! stack runs: the pump sleeps on its worker lock's condition variable and
//! takes the kick as soon as the OS runs it. So a kick coalesces exactly
//! when the OS runs the woken thread later than one message after the kick.
//!
//! [`KickProbe`] measures that ceiling with the pump taken out: a thread
//! sleeps as the pump sleeps (a pending flag under a lock, a condition
//! variable) and is kicked as classic kicks (under that lock, and not again
//! while a kick is pending), once after every message of a classic bus
//! whose own pump is never kicked (`quiet_pump` on): the same messages, the
//! same lab and its interrupt thread, the same pace. Its wake-ups per kick
//! are what classic's kicks can cause on this host and this lab, whatever
//! the pump does once woken.
//!
//! The host's stalls come and go (here the guest kernel's kdamond takes a
//! CPU for about a millisecond several times a second): measured apart, in
//! another stretch of time, the ceiling would meet other stalls than
//! classic did. So
//! [`beside_classic`] runs classic's round and the probe in alternating
//! chunks of [`CHUNK`] messages, shorter than such a stall, and neither
//! waits for its woken thread between chunks: both meet the same host.

use super::interleave::{in_chunks, CHUNK};
use super::rig::{round_with, send, Rig, Round, Style};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use wirespeed::spi::PreparedMessage;
use wirespeed_time::now;

#[derive(Debug)]
struct Shared {
    pending: Mutex<bool>,
    cv: Condvar,
    /// When the pending kick was made (ns), 0 when none is pending.
    kicked_at_ns: AtomicU64,
    /// The longest a kick waited for the sleeper to run (ns).
    wait_max_ns: AtomicU64,
    stop: AtomicBool,
}

/// A sleeping thread kicked as classic kicks its pump.
#[derive(Debug)]
pub struct KickProbe {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What [`KickProbe::round`]s counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KickRound {
    pub kicks: u64,
    /// How long the round took, messages and kicks (ns).
    pub elapsed_ns: u64,
    /// Kicks that found none pending and woke the sleeper.
    pub wakeups: u64,
    /// The longest a kick waited for the sleeper to run (ns); filled in by
    /// [`KickProbe::settle`].
    pub wait_max_ns: u64,
}

impl std::ops::AddAssign for KickRound {
    fn add_assign(&mut self, o: KickRound) {
        self.kicks += o.kicks;
        self.elapsed_ns += o.elapsed_ns;
        self.wakeups += o.wakeups;
        self.wait_max_ns = self.wait_max_ns.max(o.wait_max_ns);
    }
}

impl KickProbe {
    /// Starts the sleeping thread.
    pub fn start() -> std::io::Result<KickProbe> {
        let shared = Arc::new(Shared {
            pending: Mutex::new(false),
            cv: Condvar::new(),
            kicked_at_ns: AtomicU64::new(0),
            wait_max_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let sleeper = shared.clone();
        let thread = std::thread::Builder::new().name("kick-probe".into()).spawn(move || sleep_loop(&sleeper))?;
        Ok(KickProbe { shared, thread: Some(thread) })
    }

    /// Runs `send` (one message) `msgs` times, kicking after each. The last
    /// kick may still be pending on return, as classic's may be after its
    /// last message: a kick of the next round finds it so and coalesces.
    pub fn round(&self, msgs: u64, mut send: impl FnMut() -> Result<(), String>) -> Result<KickRound, String> {
        let mut wakeups = 0;
        let t0 = now();
        for _ in 0..msgs {
            send()?;
            if self.kick() {
                wakeups += 1;
            }
        }
        Ok(KickRound { kicks: msgs, elapsed_ns: now().ns_since(t0), wakeups, wait_max_ns: 0 })
    }

    /// Waits until the last kick is taken; returns the longest any kick
    /// waited since the last call (ns).
    pub fn settle(&self) -> u64 {
        while self.shared.kicked_at_ns.load(Ordering::Acquire) != 0 {
            std::thread::yield_now();
        }
        // The sleeper records the wait under the lock it took the kick under.
        drop(self.shared.pending.lock().unwrap_or_else(|e| e.into_inner()));
        self.shared.wait_max_ns.swap(0, Ordering::Relaxed)
    }

    /// Classic's kick: under the sleeper's lock, and only if none is pending.
    fn kick(&self) -> bool {
        let mut pending = self.shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared.kicked_at_ns.load(Ordering::Relaxed) != 0 {
            return false;
        }
        self.shared.kicked_at_ns.store(now().as_ns().max(1), Ordering::Relaxed);
        *pending = true;
        drop(pending);
        self.shared.cv.notify_one();
        true
    }
}

/// Classic's round of `msgs` messages sent in `style` on `classic`, in
/// [`CHUNK`]s that alternate with as many of the probe's kicks, each after
/// a message sent the same way on `probe_rig` (a classic bus whose pump is
/// never kicked). Returns classic's chunks, each timed on its own, and the
/// probe's round, whole.
pub fn beside_classic(
    classic: (&Rig, &mut PreparedMessage),
    probe: (&KickProbe, &Rig, &mut PreparedMessage),
    style: Style,
    size: usize,
    msgs: u64,
) -> Result<(Vec<Round>, KickRound), String> {
    let ((rig, pm), (probe, probe_rig, probe_pm)) = (classic, probe);
    let (tx, mut rx) = (vec![0xA5u8; size], vec![0u8; size]);
    let mut chunks = Vec::with_capacity(msgs.div_ceil(CHUNK) as usize);
    let mut kicks = KickRound::default();
    in_chunks(msgs, |chunk| {
        chunks.push(round_with(rig, style, (&tx, &mut rx), chunk, pm)?);
        kicks += probe.round(chunk, || send(probe_rig, style, &tx, &mut rx, probe_pm))?;
        Ok(())
    })?;
    kicks.wait_max_ns = probe.settle();
    Ok((chunks, kicks))
}

fn sleep_loop(s: &Shared) {
    loop {
        let mut pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        while !*pending {
            pending = s.cv.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
        *pending = false;
        let kicked = s.kicked_at_ns.swap(0, Ordering::AcqRel);
        if kicked != 0 {
            s.wait_max_ns.fetch_max(now().as_ns().saturating_sub(kicked), Ordering::Relaxed);
        }
        drop(pending);
        if s.stop.load(Ordering::Acquire) {
            return;
        }
    }
}

impl Drop for KickProbe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        *self.shared.pending.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.cv.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kicks_faster_than_any_wake_up_coalesce() {
        // Back to back, a kick comes well within a microsecond of the last:
        // no OS runs a woken thread that fast, so most find one pending.
        let probe = KickProbe::start().unwrap();
        let r = probe.round(10_000, || Ok(())).unwrap();
        assert_eq!(r.kicks, 10_000);
        assert!(r.wakeups >= 1 && r.wakeups < r.kicks / 2, "{r:?}");
    }

    #[test]
    fn spaced_kicks_wake_the_sleeper_and_its_wait_is_recorded() {
        let probe = KickProbe::start().unwrap();
        let spaced = || {
            wirespeed_time::spin_for_ns(5_000_000);
            Ok(())
        };
        let r = probe.round(10, spaced).unwrap();
        // A host stall of milliseconds may coalesce a few, not most.
        assert!(r.wakeups >= 3, "{r:?}");
        assert!(probe.settle() > 0, "{r:?}");
        // Settled: the next round's kick finds none pending, and the
        // longest wait starts afresh.
        let again = probe.round(1, || Ok(())).unwrap();
        assert_eq!((again.kicks, again.wakeups), (1, 1), "{again:?}");
        probe.settle();
        assert_eq!(probe.settle(), 0);
    }

    #[test]
    fn beside_classic_runs_every_message_of_both_in_alternating_chunks() {
        use wirespeed::spi::Policy;
        use wirespeed_lab::trace::cs_windows;
        let classic = Rig::new(Policy::classic(), 20_000_000, false).unwrap();
        let quiet = Rig::new(Policy { quiet_pump: true, ..Policy::classic() }, 20_000_000, false).unwrap();
        let (mut pm, mut probe_pm) = (classic.prepared(4).unwrap(), quiet.prepared(4).unwrap());
        let probe = KickProbe::start().unwrap();
        let msgs = 2 * CHUNK + 7;
        let blocks = [classic.block.as_ref().unwrap(), quiet.block.as_ref().unwrap()];
        for b in blocks {
            b.trace_start(super::super::trace_capacity(4, msgs));
        }
        let (chunks, k) =
            beside_classic((&classic, &mut pm), (&probe, &quiet, &mut probe_pm), Style::Unprepared, 4, msgs).unwrap();
        assert_eq!(chunks.iter().map(|c| c.msgs).collect::<Vec<_>>(), [CHUNK, CHUNK, 7]);
        let sum = |f: fn(&Round) -> u64| chunks.iter().map(f).sum::<u64>();
        assert_eq!((sum(|c| c.pump_kicks), k.kicks), (msgs, msgs));
        assert_eq!(sum(|c| c.pump_wakeups) + sum(|c| c.pump_kicks_coalesced), msgs, "{chunks:?}");
        assert!(k.wakeups >= 1 && k.wakeups <= msgs && k.wait_max_ns > 0, "{k:?}");
        assert!(chunks.iter().all(|c| c.elapsed_ns > 0) && k.elapsed_ns > 0, "{chunks:?} {k:?}");
        // The probe's bus never kicks its own pump.
        assert_eq!(quiet.bus.pump_kicks(), 0);
        // On the wires: classic's first chunk, then the probe's, then
        // classic's second.
        let [cw, pw] = blocks.map(|b| {
            b.trace_stop();
            cs_windows(&b.trace_take())
        });
        assert_eq!((cw.len(), pw.len()), (msgs as usize, msgs as usize));
        let n = CHUNK as usize;
        assert!(cw[n - 1].asserted_at < pw[0].asserted_at, "the probe began before classic's first chunk ended");
        assert!(pw[n - 1].asserted_at < cw[n].asserted_at, "classic's second chunk began inside the probe's first");
    }

    #[test]
    fn a_failed_message_ends_the_round_with_its_error() {
        let probe = KickProbe::start().unwrap();
        let mut sent = 0;
        let r = probe.round(5, || {
            sent += 1;
            if sent == 3 {
                Err("bus gone".into())
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("bus gone".to_string()));
        assert_eq!(sent, 3);
    }
}
