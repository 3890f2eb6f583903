//! [`Bus`]: one controller, its queue, its pump thread, its statistics.
//!
//! The sync path: when the bus is idle (nobody holds it and nothing is
//! queued), a message runs in the caller's thread — no queue, no hand-off, no
//! wake-up. When the bus is busy, the message is queued and the caller waits.
//! The pump thread runs queued work only; it is never woken by a sync message
//! that ran in the caller's thread (except the first one after an idle
//! teardown, which powers the controller up: the pump re-arms its idle
//! timer), and it tears the controller down once, `idle_delay` after the
//! last message.
//!
//! The async path hands a message to the pump thread, except that with
//! `async_in_caller` a short message without a callback, submitted to an
//! idle bus, runs in the submitter's thread as a sync message does.
//!
//! Ordering: the pump takes a job from the queue only while holding the bus,
//! and a caller runs in its own thread only if, holding the bus, it sees the
//! queue empty. So every message submitted before a sync call (or an async
//! one run in the caller's thread) from the same thread has completed before
//! that call runs.

use super::bounce::BounceSlot;
use super::controller::{Controller, ControllerCaps, InFlight};
use super::device::DeviceConfig;
use super::error::{BusStartError, InvalidMessage, SpiError};
use super::exec::{
    ensure_powered, execute, recover_from_panic, BusHw, DeviceState, ExecCtx, Face, MessageSource, DRIVER_PANICKED,
};
use super::message::{MessageBackend, MessagePlanner};
use super::policy::Policy;
use super::poll_budget::PollBudget;
use super::prepared::{AsyncJob, Finished};
use super::pump;
use super::stats::{MessageRecord, Stats, StatsSnapshot};
use super::wakeup::IrqCost;
use super::SpiDevice;
use crate::sync::{
    thread, Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, TryLockError,
};
use std::collections::VecDeque;
use wirespeed_time::{now, Instant};

/// The longest message (wire time) that `async_in_caller` runs in the
/// submitting thread. A hand-off to the pump costs two wake-ups (the pump's,
/// then the waiter's or the callback's), tens of µs of CPU and latency on a
/// busy host; above this much wire time, what the submitter can do while
/// the message shifts is worth more.
pub const ASYNC_IN_CALLER_MAX_NS: u64 = 100_000;

/// Where a message ran, for [`BusInner::finish`]: its statistics count a
/// sync message run in its caller's thread as immediate (5.18's
/// `spi_sync_immediate`), and classic kicks the pump after any message its
/// caller ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RanIn {
    /// A sync message, in its caller's thread.
    CallerSync,
    /// An async message, in its submitter's thread (`async_in_caller`).
    CallerAsync,
    /// On the pump thread.
    Pump,
}

pub(crate) struct BusInner {
    pub hw: Mutex<BusHw>,
    pub caps: ControllerCaps,
    /// The controller's DMA engine, if it has one (prepared messages map their buffers in it).
    pub dma: Option<super::controller::DmaSupport>,
    /// A message-level backend's planner (None on controller-level buses).
    pub planner: Option<std::sync::Arc<dyn MessagePlanner>>,
    pub policy: Policy,
    pub stats: Stats,
    pub irq_cost: IrqCost,
    pub queue: Mutex<VecDeque<pump::Job>>,
    pub queue_len: AtomicUsize,
    /// Whether the pump has been signalled since it last woke: 5.18's
    /// kthread worker with its work queued. The pump sleeps on `pump_cv`
    /// under this lock alone, never under `queue`.
    pub worker: Mutex<bool>,
    pub pump_cv: Condvar,
    /// Whether the pump is asleep or about to be: set under `queue` once it
    /// found the queue empty, cleared when it wakes. An enqueue that reads it
    /// (under `queue`) as clear finds the pump awake, to see the job.
    pub pump_sleeping: AtomicBool,
    /// When the message that made the pending kick ended (ns on the stack's
    /// clock, `CLOCK_MONOTONIC`, never 0); 0: no kick pending. Classic's wake
    /// after each message; read and written under `worker`.
    pub kick_pending_since_ns: AtomicU64,
    pub pump_wakeups: AtomicU64,
    /// Kicks asked for (classic: one per message run in its caller's thread).
    pub pump_kicks: AtomicU64,
    /// Kicks that found one pending and so woke nobody.
    pub pump_kicks_coalesced: AtomicU64,
    /// The longest a kick has waited for the pump to run, ns, since last taken.
    pub pump_kick_wait_max_ns: AtomicU64,
    pub pump_timer_wakeups: AtomicU64,
    pub last_activity_ns: AtomicU64,
    pub powered: AtomicBool,
    pub teardowns: AtomicU64,
    pub shutdown: AtomicBool,
}

/// Device ids are unique in the process, not per bus, so that a prepared
/// message can never pass for another bus's device with the same number.
static NEXT_DEVICE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl BusInner {
    pub(crate) fn ctx(&self) -> ExecCtx<'_> {
        ExecCtx { policy: &self.policy, stats: &self.stats, irq_cost: &self.irq_cost }
    }

    /// The bus's identity for thread-local checks (its address; never 0).
    pub(crate) fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Takes the bus. A panic while it was held (user code under a
    /// `BusLock`; drivers' panics are caught in `run_locked`) leaves nothing
    /// to distrust, since every message sets up what it needs: the poison is
    /// cleared, or it would turn the caller-context fast path off for good.
    pub(crate) fn lock_hw(&self) -> MutexGuard<'_, BusHw> {
        self.hw.lock().unwrap_or_else(|e| {
            self.hw.clear_poison();
            e.into_inner()
        })
    }

    /// Takes the bus if no one holds it (poison as in [`lock_hw`](Self::lock_hw)).
    fn try_lock_hw(&self) -> Option<MutexGuard<'_, BusHw>> {
        match self.hw.try_lock() {
            Ok(hw) => Some(hw),
            Err(TryLockError::Poisoned(p)) => {
                self.hw.clear_poison();
                Some(p.into_inner())
            }
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Refuses a call that would wait for the bus while this very thread
    /// keeps it: from a completion callback of this bus (on its pump), or
    /// from the holder of its `BusLock`.
    pub(crate) fn check_may_wait(&self) -> Result<(), SpiError> {
        if pump::is_pump_of(self) {
            Err(SpiError::CalledFromCallback)
        } else if super::lock_owner::holds(self) {
            Err(SpiError::LockedByCaller)
        } else {
            Ok(())
        }
    }

    /// Runs a message with the bus held; handles power-up and activity
    /// stamps. `in_flight` runs while the message's first transfer shifts,
    /// or before returning if none started. Returns the result and the
    /// instant the message ended.
    pub(crate) fn run_locked<M: MessageSource + ?Sized>(
        &self,
        hw: &mut BusHw,
        dev: &DeviceState,
        msg: &mut M,
        in_flight: &mut InFlight<'_>,
    ) -> (Result<(), SpiError>, Instant) {
        // A panic in the controller driver (or a chip-select pin) fails this
        // message and leaves the bus usable, whichever thread runs it: no
        // waiter hangs on a dead pump, no lock stays poisoned, and the
        // hardware is put back in a known state first. Powering up is part
        // of the message: a panic there fails it, and the next one powers up again.
        hw.transfer = 0;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if ensure_powered(hw) {
                // Once per idle period: the pump re-arms its idle timer. A pump
                // that read `powered` as false before this store finds the
                // signal pending when it goes to sleep.
                self.powered.store(true, Ordering::Release);
                self.signal_pump();
            }
            execute(hw, dev, &self.ctx(), msg, in_flight)
        }))
        .unwrap_or_else(|_| {
            let index = hw.transfer;
            recover_from_panic(hw, dev);
            Err(SpiError::Controller { index, reason: DRIVER_PANICKED })
        });
        let end = now();
        in_flight.run();
        self.last_activity_ns.store(end.as_ns(), Ordering::Relaxed);
        (r, end)
    }

    /// Wakes the pump thread; every wake-up the stack causes is counted.
    pub(crate) fn signal_pump(&self) {
        let pending = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        self.wake_pump(pending);
    }

    /// [`signal_pump`](Self::signal_pump) with the worker's lock held.
    fn wake_pump(&self, mut pending: MutexGuard<'_, bool>) {
        self.pump_wakeups.fetch_add(1, Ordering::Relaxed);
        *pending = true;
        drop(pending);
        self.pump_cv.notify_one();
    }

    /// Queues `job` for the pump, or hands it back if the pump has stopped
    /// (checked under the queue lock, which the pump's exit drains under:
    /// no job can slip in after that drain and wait for ever).
    // The job comes back whole, in place, on the one cold path (a bus being
    // dropped): boxing it would cost the hot path an allocation per message.
    #[allow(clippy::result_large_err)]
    pub(crate) fn enqueue(&self, job: pump::Job) -> Result<(), pump::Job> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if self.shutdown.load(Ordering::Acquire) {
            return Err(job);
        }
        q.push_back(job);
        self.queue_len.fetch_add(1, Ordering::AcqRel);
        // Fast: a pump that is running will find the job, so only a sleeping
        // pump is signalled. Classic signals on every queued message, as
        // queueing the pump's work did.
        let signal = !self.policy.quiet_pump || self.pump_sleeping.load(Ordering::Relaxed);
        drop(q);
        if signal {
            self.signal_pump();
        }
        Ok(())
    }

    /// The sync path for an already validated message.
    pub(crate) fn sync<M: MessageSource + ?Sized>(&self, dev: &DeviceState, msg: &mut M) -> Result<(), SpiError> {
        let t0 = now();
        if self.policy.sync_in_caller {
            if let Some(mut hw) = self.idle_hw() {
                if !self.policy.direct_sync {
                    // 5.18: __spi_sync's bus_lock_spinlock, __spi_queued_transfer's
                    // and __spi_pump_messages' queue_lock (the message queued, then
                    // taken off again in this thread).
                    self.queue_round_trips(3);
                }
                let (r, end) = self.run_locked(&mut hw, dev, msg, &mut InFlight::none());
                if !self.policy.direct_sync {
                    // spi_finalize_current_message reads cur_msg under the queue
                    // lock (its second round, with the pump kick, is `finish`'s).
                    self.queue_round_trips(1);
                }
                drop(hw);
                self.finish(t0, end, RanIn::CallerSync, &r);
                return r;
            }
        }
        self.check_may_wait()?;
        let r = pump::sync_via_pump(self, dev, msg);
        self.finish(t0, now(), RanIn::Pump, &r);
        r
    }

    /// The async path: with `async_in_caller`, a message without a callback
    /// whose wire time is at most [`ASYNC_IN_CALLER_MAX_NS`] runs at once in
    /// the submitting thread when the bus is idle, as a sync message does,
    /// and is handed back here, with its result, rather than through its
    /// completion slot. Anything else is queued for the pump thread (`None`).
    pub(crate) fn submit(&self, mut job: AsyncJob) -> Option<Finished> {
        if self.policy.async_in_caller && job.callback.is_none() && job.msg.wire_ns() <= ASYNC_IN_CALLER_MAX_NS {
            if let Some(mut hw) = self.idle_hw() {
                let (r, end) = self.run_locked(&mut hw, &job.dev, &mut job.msg, &mut InFlight::none());
                drop(hw);
                self.finish(job.submitted, end, RanIn::CallerAsync, &r);
                return Some((job.msg, r));
            }
        }
        if let Err(pump::Job::Async(job)) = self.enqueue(pump::Job::Async(job)) {
            job.complete(Err(SpiError::BusGone));
        }
        None
    }

    /// The bus, if it is idle: held by nobody and nothing queued, so every
    /// message submitted before has completed and one may run in this thread.
    #[inline(always)]
    fn idle_hw(&self) -> Option<MutexGuard<'_, BusHw>> {
        let hw = self.try_lock_hw()?;
        if self.queue_len.load(Ordering::Acquire) == 0 {
            Some(hw)
        } else {
            None
        }
    }

    /// Wakes the pump to look for work, as 5.18's `kthread_queue_work` after
    /// each finalized message: under the queue lock, and only if no kick is
    /// pending already (a work item is queued once; checked under the
    /// worker's lock, under which the pump takes it). The kick is no job: a
    /// sync message after it still runs in its caller's thread, as in 5.18,
    /// where the kthread finds the queue empty and marks the controller idle.
    fn kick_pump(&self, end: Instant) {
        let _q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.pump_kicks.fetch_add(1, Ordering::Relaxed);
        let pending = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        if self.kick_pending_since_ns.load(Ordering::Relaxed) != 0 {
            self.pump_kicks_coalesced.fetch_add(1, Ordering::Relaxed);
        } else {
            self.kick_pending_since_ns.store(end.as_ns().max(1), Ordering::Relaxed);
            self.wake_pump(pending);
        }
    }

    /// Takes and releases the queue lock `n` times: the kernel's queue
    /// bookkeeping for a sync message it runs in the caller's thread
    /// (policy `direct_sync` off).
    fn queue_round_trips(&self, n: u32) {
        for _ in 0..n {
            drop(self.queue.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Accounts for a finished message (and, in classic, wakes the pump).
    #[inline(always)]
    pub(crate) fn finish(&self, t0: Instant, end: Instant, ran: RanIn, r: &Result<(), SpiError>) {
        self.stats.message(MessageRecord {
            immediate: ran == RanIn::CallerSync,
            ok: r.is_ok(),
            timeout: matches!(r, Err(SpiError::Timeout { .. })),
            latency_ns: end.ns_since(t0),
        });
        // Classic: spi_finalize_current_message queues the pump's work to look
        // for more (kthread_queue_work). When the pump ran the message it just
        // loops on; when the caller did, the pump is woken for it (seed 001).
        if !self.policy.quiet_pump && ran != RanIn::Pump {
            self.kick_pump(end);
        }
    }
}

/// Stops the pump thread when the last handle to a bus goes away.
pub(crate) struct PumpOwner {
    inner: Arc<BusInner>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for PumpOwner {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::Release);
        *self.inner.worker.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.inner.pump_cv.notify_all();
        if let Some(t) = self.thread.take() {
            // The last handle can go on the pump thread itself (dropped by a
            // completion callback): the pump then finishes its queue and
            // exits on its own; joining would wait for this very thread.
            if t.thread().id() != thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// An SPI bus: a controller with its queue, pump thread and statistics.
/// Clones share the bus.
///
/// ```
/// use wirespeed::spi::{Bus, DeviceConfig, Policy, Transfer};
/// use wirespeed::backend::lab::LabSpi;
/// use wirespeed_lab::{Lab, LabConfig, devices::Loopback};
///
/// let lab = Lab::new(LabConfig::default());
/// let block = lab.spi_controller(Default::default());
/// block.attach(0, Loopback::new());
/// let bus = Bus::new(LabSpi::new(block), Policy::fast());
/// let dev = bus.device(DeviceConfig::new(0, 20_000_000)).unwrap();
/// let mut rx = [0u8; 3];
/// dev.sync(&mut [Transfer::duplex(&[1, 2, 3], &mut rx)]).unwrap();
/// assert_eq!(rx, [1, 2, 3]);
/// ```
#[derive(Clone)]
pub struct Bus {
    pub(crate) inner: Arc<BusInner>,
    pub(crate) _owner: Arc<PumpOwner>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus").field("controller", &self.inner.caps.name).field("policy", &self.inner.policy).finish()
    }
}

impl Bus {
    /// A bus on `controller`, run with `policy`. Starts the pump thread.
    ///
    /// # Panics
    /// If the pump thread cannot be created (the process is out of threads
    /// or memory), as [`std::thread::spawn`] does; [`try_new`](Bus::try_new)
    /// returns that as an error.
    pub fn new(controller: impl Controller, policy: Policy) -> Bus {
        Bus::try_new(controller, policy).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A bus on `controller`, run with `policy`, or why its pump thread could
    /// not be started.
    pub fn try_new(controller: impl Controller, policy: Policy) -> Result<Bus, BusStartError> {
        let caps = controller.caps().clone();
        Bus::start(Face::Controller(Box::new(controller)), caps, None, policy)
    }

    /// A bus on a message-level backend (such as Linux spidev,
    /// [`crate::linux::spidev::Spidev`]), run with `policy`: the same
    /// devices, messages, queue and statistics as on a controller, with
    /// chip select and timing left to the backend. The policy's switches
    /// that drive the controller (CS deadlines, FIFO preload, completion
    /// mode, redundant setup) have nothing to act on there.
    ///
    /// # Panics
    /// If the pump thread cannot be created, as [`Bus::new`];
    /// [`try_with_message_backend`](Bus::try_with_message_backend) returns that as an error.
    pub fn with_message_backend(backend: impl MessageBackend, policy: Policy) -> Bus {
        Bus::try_with_message_backend(backend, policy).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`with_message_backend`](Bus::with_message_backend), or why its pump thread could not be started.
    pub fn try_with_message_backend(backend: impl MessageBackend, policy: Policy) -> Result<Bus, BusStartError> {
        let caps = backend.caps().clone();
        let planner = backend.planner();
        Bus::start(Face::Messages(Box::new(backend)), caps, Some(planner), policy)
    }

    fn start(
        face: Face,
        caps: ControllerCaps,
        planner: Option<std::sync::Arc<dyn MessagePlanner>>,
        policy: Policy,
    ) -> Result<Bus, BusStartError> {
        let dma = match &face {
            Face::Controller(c) => c.dma(),
            Face::Messages(_) => None,
        };
        let hw = BusHw {
            face,
            caps: caps.clone(),
            dma: dma.clone(),
            bounce: BounceSlot::default(),
            setup: None,
            powered: true,
            cs_held: None,
            transfer: 0,
            poll_budget: PollBudget::default(),
        };
        let inner = Arc::new(BusInner {
            hw: Mutex::new(hw),
            caps,
            dma,
            planner,
            stats: Stats::new(policy.lockfree_stats),
            policy,
            irq_cost: IrqCost::measured(),
            queue: Mutex::new(VecDeque::with_capacity(64)),
            queue_len: AtomicUsize::new(0),
            worker: Mutex::new(false),
            pump_cv: Condvar::new(),
            pump_sleeping: AtomicBool::new(false),
            kick_pending_since_ns: AtomicU64::new(0),
            pump_wakeups: AtomicU64::new(0),
            pump_kicks: AtomicU64::new(0),
            pump_kicks_coalesced: AtomicU64::new(0),
            pump_kick_wait_max_ns: AtomicU64::new(0),
            pump_timer_wakeups: AtomicU64::new(0),
            last_activity_ns: AtomicU64::new(now().as_ns()),
            powered: AtomicBool::new(true),
            teardowns: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
        });
        let thread =
            pump::spawn(inner.clone()).map_err(|source| BusStartError { controller: inner.caps.name, source })?;
        Ok(Bus { _owner: Arc::new(PumpOwner { inner: inner.clone(), thread: Some(thread) }), inner })
    }

    /// A device on this bus. Fails if the controller cannot serve its settings.
    pub fn device(&self, cfg: DeviceConfig) -> Result<SpiDevice, InvalidMessage> {
        super::plan::check_device(&cfg, &self.inner.caps)?;
        let id = NEXT_DEVICE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(SpiDevice::new(
            self.clone(),
            DeviceState { id, cfg, last_cs_off: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)) },
        ))
    }

    /// The policy the bus runs with.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The controller's capabilities.
    pub fn caps(&self) -> &ControllerCaps {
        &self.inner.caps
    }

    /// Statistics summed over every thread.
    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats.snapshot()
    }

    /// How many times the stack has woken the pump thread with a signal:
    /// for queued work, and on the first message after an idle teardown
    /// (so that the pump re-arms its idle timer).
    pub fn pump_wakeups(&self) -> u64 {
        self.inner.pump_wakeups.load(Ordering::Relaxed)
    }

    /// How many times the stack asked the pump to look for work after a
    /// message it did not run (classic: every message run in its caller's
    /// thread, as 5.18's `spi_finalize_current_message` queues the pump's
    /// work). A kick while the last one is still pending wakes nobody, as
    /// `kthread_queue_work` queues a work item once: [`pump_wakeups`](Bus::pump_wakeups)
    /// counts those that did.
    pub fn pump_kicks(&self) -> u64 {
        self.inner.pump_kicks.load(Ordering::Relaxed)
    }

    /// How many of the [`pump_kicks`](Bus::pump_kicks) found the last kick
    /// still pending (the pump had not run since) and so woke nobody: each
    /// kick either signalled the pump or is counted here.
    pub fn pump_kicks_coalesced(&self) -> u64 {
        self.inner.pump_kicks_coalesced.load(Ordering::Relaxed)
    }

    /// The longest a kick has waited for the pump thread to run, since the
    /// last call (which starts the next span afresh); zero if no kick was
    /// taken up meanwhile. From the end of the message that made the kick to
    /// the pump's taking it: a kick coalesces (see
    /// [`pump_kicks_coalesced`](Bus::pump_kicks_coalesced)) only when the
    /// pending one waited longer than the next message took, so a bus with
    /// coalesced kicks shows here how long the pump was kept from running.
    pub fn take_pump_kick_wait_max(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.inner.pump_kick_wait_max_ns.swap(0, Ordering::Relaxed))
    }

    /// How many times the pump's idle timer has expired: once per idle
    /// period, plus, while messages keep coming, at most one re-check per
    /// [`Policy::idle_delay`](super::Policy::idle_delay) whatever the message
    /// rate (the timer is not re-armed per message, which would cost a
    /// syscall each).
    pub fn pump_timer_wakeups(&self) -> u64 {
        self.inner.pump_timer_wakeups.load(Ordering::Relaxed)
    }

    /// How many times idle teardown powered the controller down.
    pub fn teardowns(&self) -> u64 {
        self.inner.teardowns.load(Ordering::Relaxed)
    }

    /// The current estimate of an interrupt wake-up's cost, in ns.
    pub fn irq_wakeup_cost_ns(&self) -> u64 {
        self.inner.irq_cost.get_ns()
    }

    /// The wire time below which this bus polls a transfer instead of
    /// sleeping on the interrupt, ns: the policy's fixed threshold, or the
    /// measured wake-up latency plus the sleep's own CPU; `None` if the
    /// policy always sleeps (no adaptive completion).
    pub fn poll_below_ns(&self) -> Option<u64> {
        let p = &self.inner.policy;
        p.adaptive_completion.then(|| self.inner.irq_cost.poll_below_ns(p))
    }
}
