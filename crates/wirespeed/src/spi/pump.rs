//! The pump thread: runs queued work and tears the bus down when idle.
//!
//! It sleeps until there is queued work, or until `idle_delay` after the last
//! message if the controller is powered. It is woken by: an async submit, a
//! sync message that found the bus busy, a power-up after teardown (once per
//! idle period), and — only with `quiet_pump` off — after every message run
//! in its caller's thread (a kick: it finds nothing to do and sleeps again).
//!
//! It keeps the bus busy (`pipelined_pump`): while one message's first
//! transfer is on the wire, it takes the next from the queue and completes
//! the async message before it, so between two queued messages the bus
//! waits for neither.

use super::bus::BusInner;
use super::controller::InFlight;
use super::error::SpiError;
use super::exec::{BusHw, DeviceState, MessageSource, MsgRef};
use super::prepared::AsyncJob;
use crate::sync::{thread, thread_local, Arc, Condvar, Mutex, Ordering};
use std::ptr::NonNull;
use std::time::Duration;
use wirespeed_time::{now, Instant};

/// A result the pump hands to a caller blocked on it; lives on the
/// caller's stack.
pub(crate) struct Handoff<T> {
    value: Mutex<Option<T>>,
    cv: Condvar,
}

impl<T> Handoff<T> {
    fn new() -> Self {
        Handoff { value: Mutex::new(None), cv: Condvar::new() }
    }

    /// Stores the value and wakes the owner. The wake-up is sent with the
    /// lock held: once the owner sees the value it returns and the handoff
    /// is gone, so nothing may touch it after the lock is released.
    fn put(&self, v: T) {
        let mut g = self.value.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(v);
        self.cv.notify_one();
    }

    /// Blocks until the value is stored.
    fn take(&self) -> T {
        let mut g = self.value.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(v) = g.take() {
                return v;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A sync message waiting on the pump; lives on the caller's stack.
pub(crate) struct SyncJob<'a> {
    dev: &'a DeviceState,
    msg: NonNull<dyn MessageSource + 'a>,
    done: Handoff<Result<(), SpiError>>,
}

/// Work for the pump.
pub(crate) enum Job {
    /// A caller waits for this message (pointer to its stack).
    Sync(NonNull<SyncJob<'static>>),
    /// An owned message with a completion slot.
    Async(AsyncJob),
    /// A caller waits until everything queued before this has run (see
    /// [`wait_for_queued`]); lives on the caller's stack.
    Fence(NonNull<Handoff<()>>),
}

/// Blocks until every job queued on `inner` before this call has run.
/// Returns at once if the queue is empty or the pump has stopped.
pub(crate) fn wait_for_queued(inner: &BusInner) {
    if inner.queue_len.load(Ordering::Acquire) == 0 {
        return;
    }
    let fence = Handoff::new();
    if inner.enqueue(Job::Fence(NonNull::from(&fence))).is_ok() {
        fence.take();
    }
}

// SAFETY: a `Job::Sync` points to a `SyncJob` (a `Job::Fence` to a
// `Handoff`) whose owner blocks until the pump has stored a result and will
// not touch the job afterwards; the message it points to is only used by
// the pump in between.
unsafe impl Send for Job {}

thread_local! {
    /// The id of the bus whose pump runs on this thread, 0 elsewhere.
    static PUMP_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether this thread is `inner`'s pump (running a completion callback).
pub(crate) fn is_pump_of(inner: &BusInner) -> bool {
    is_pump_id(inner.id())
}

/// Whether this thread is the pump of the bus with [`id`](BusInner::id) `id`.
pub(crate) fn is_pump_id(id: usize) -> bool {
    id != 0 && PUMP_OF.with(std::cell::Cell::get) == id
}

/// Hands a sync message to the pump and waits for it.
pub(crate) fn sync_via_pump<M: MessageSource + ?Sized>(
    inner: &BusInner,
    dev: &DeviceState,
    msg: &mut M,
) -> Result<(), SpiError> {
    let mut mref = MsgRef(msg);
    let job = SyncJob { dev, msg: NonNull::from(&mut mref as &mut (dyn MessageSource + '_)), done: Handoff::new() };
    if inner.enqueue(Job::Sync(NonNull::from(&job).cast::<SyncJob<'static>>())).is_err() {
        return Err(SpiError::BusGone);
    }
    job.done.take()
}

pub(crate) fn spawn(inner: Arc<BusInner>) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new().name(format!("spi-pump-{}", inner.caps.name)).spawn(move || run(&inner))
}

/// When the bus counts as idle: `idle_delay` after the last activity
/// (`u64::MAX`, never, for an idle delay too long to count in ns).
fn idle_at(inner: &BusInner) -> u64 {
    let delay = u64::try_from(inner.policy.idle_delay.as_nanos()).unwrap_or(u64::MAX);
    inner.last_activity_ns.load(Ordering::Relaxed).saturating_add(delay)
}

/// If the pump thread unwinds (a controller driver panicked outside a
/// message, e.g. powering down), nothing may wait for it: queued and later
/// async work fails with [`SpiError::BusGone`] instead of hanging, while
/// sync calls on an idle bus still run in the caller's thread.
struct PumpExit<'a>(&'a BusInner);

impl Drop for PumpExit<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.shutdown.store(true, Ordering::Release);
            let left: Vec<Job> = {
                let mut q = self.0.queue.lock().unwrap_or_else(|e| e.into_inner());
                // An empty queue keeps the caller-context sync path open.
                self.0.queue_len.store(0, Ordering::Release);
                q.drain(..).collect()
            };
            for job in left {
                complete(job, Err(SpiError::BusGone));
            }
        }
    }
}

fn run(inner: &BusInner) {
    PUMP_OF.with(|p| p.set(inner.id()));
    let _exit = PumpExit(inner);
    let mut q = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if inner.shutdown.load(Ordering::Acquire) {
            // Work accepted before the last handle went is sent, as the
            // kernel's spi_stop_queue waits for its queue to empty; nothing
            // can be queued after this (no handle is left to submit with).
            drop(q);
            drain_queue(inner, &mut inner.lock_hw());
            return;
        }
        if q.is_empty() {
            // A pending kick is taken up here: with nothing queued, 5.18's
            // kthread marks the controller idle and goes back to sleep. One
            // clock read serves the kick's wait and the idle timer.
            let kick = inner.kick_pending_since_ns.swap(0, Ordering::Relaxed);
            let powered = inner.powered.load(Ordering::Acquire);
            let t = if kick != 0 || powered { now().as_ns() } else { 0 };
            if kick != 0 {
                inner.pump_kick_wait_max_ns.fetch_max(t.saturating_sub(kick), Ordering::Relaxed);
            }
            if powered {
                let idle_at = idle_at(inner);
                if t >= idle_at {
                    drop(q);
                    teardown_if_idle(inner);
                    q = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                inner.pump_sleeping.store(true, Ordering::Relaxed);
                let (g, res) =
                    inner.pump_cv.wait_timeout(q, Duration::from_nanos(idle_at - t)).unwrap_or_else(|e| e.into_inner());
                q = g;
                if res.timed_out() {
                    inner.pump_timer_wakeups.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                inner.pump_sleeping.store(true, Ordering::Relaxed);
                q = inner.pump_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            inner.pump_sleeping.store(false, Ordering::Relaxed);
            continue;
        }
        // Take the bus first, then jobs: see the ordering note in bus.rs.
        drop(q);
        let mut hw = inner.lock_hw();
        drain_queue(inner, &mut hw);
        drop(hw);
        q = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
    }
}

/// A job that ran and waits to be completed.
struct Ran {
    job: Job,
    result: Result<(), SpiError>,
    end: Instant,
}

impl Ran {
    fn complete(self, inner: &BusInner) {
        if let Job::Async(aj) = &self.job {
            inner.finish(aj.submitted, self.end, false, &self.result);
        }
        complete(self.job, self.result);
    }
}

fn pop(inner: &BusInner) -> Option<Job> {
    let job = inner.queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
    if job.is_some() {
        inner.queue_len.fetch_sub(1, Ordering::AcqRel);
    }
    job
}

/// Runs queued jobs, the bus held, until the queue is empty; every job is
/// completed before this returns. With `pipelined_pump`, the next job is
/// taken from the queue while a job's first transfer is on the wire, and an
/// async job is completed (statistics, waking its waiter or running its
/// callback) only then, while the job after it shifts. A sync job is
/// completed at once: its caller sends nothing more until it wakes, while an
/// async submitter's next messages are queued already, so the bus need not
/// wait for its wake-up.
fn drain_queue(inner: &BusInner, hw: &mut BusHw) {
    let pipelined = inner.policy.pipelined_pump;
    let mut next = pop(inner);
    let mut unfinished: Option<Ran> = None;
    while let Some(job) = next.take() {
        let ran = {
            let mut overlap = || {
                if let Some(done) = unfinished.take() {
                    done.complete(inner);
                }
                next = pop(inner);
            };
            let mut in_flight = if pipelined { InFlight::new(&mut overlap) } else { InFlight::none() };
            run_job(inner, hw, job, &mut in_flight)
        };
        if pipelined && matches!(ran.job, Job::Async(_)) {
            unfinished = Some(ran);
        } else {
            ran.complete(inner);
        }
        if next.is_none() {
            next = pop(inner);
        }
        if next.is_none() {
            // Nothing to overlap with: complete now (its waiter or callback may send more).
            if let Some(done) = unfinished.take() {
                done.complete(inner);
                next = pop(inner);
            }
        }
    }
}

fn run_job(inner: &BusInner, hw: &mut BusHw, job: Job, in_flight: &mut InFlight<'_>) -> Ran {
    match job {
        Job::Fence(_) => {
            in_flight.run();
            Ran { job, result: Ok(()), end: now() }
        }
        Job::Sync(ptr) => {
            // SAFETY: see `unsafe impl Send for Job`.
            let sj = unsafe { ptr.as_ref() };
            // SAFETY: the message is exclusively ours until `done` is set.
            let msg = unsafe { &mut *sj.msg.as_ptr() };
            let (result, end) = inner.run_locked(hw, sj.dev, msg, in_flight);
            Ran { job, result, end }
        }
        Job::Async(mut aj) => {
            let (result, end) = inner.run_locked(hw, &aj.dev, &mut aj.msg, in_flight);
            Ran { job: Job::Async(aj), result, end }
        }
    }
}

fn complete(job: Job, r: Result<(), SpiError>) {
    match job {
        // SAFETY: the owner is blocked in `take` until `put`, and
        // `put` touches the handoff for the last time.
        Job::Sync(ptr) => unsafe { ptr.as_ref() }.done.put(r),
        Job::Async(aj) => aj.complete(r),
        // SAFETY: as for `Sync`: the fence's owner waits in `take` until this `put`.
        Job::Fence(ptr) => unsafe { ptr.as_ref() }.put(()),
    }
}

fn teardown_if_idle(inner: &BusInner) {
    let mut hw = inner.lock_hw();
    if hw.powered && now().as_ns() >= idle_at(inner) && inner.queue_len.load(Ordering::Acquire) == 0 {
        let _ = super::exec::release_held_cs(&mut hw);
        hw.set_power(false);
        hw.powered = false;
        inner.powered.store(false, Ordering::Release);
        inner.teardowns.fetch_add(1, Ordering::Relaxed);
    }
}
