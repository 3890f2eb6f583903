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
    loop {
        if inner.shutdown.load(Ordering::Acquire) {
            // Work accepted before the last handle went is sent, as the
            // kernel's spi_stop_queue waits for its queue to empty; nothing
            // can be queued after this (no handle is left to submit with).
            drain_queue(inner, &mut inner.lock_hw());
            return;
        }
        let q = inner.queue.lock().unwrap_or_else(|e| e.into_inner());
        if !q.is_empty() {
            // Take the bus first, then jobs: see the ordering note in bus.rs.
            drop(q);
            drain_queue(inner, &mut inner.lock_hw());
            continue;
        }
        // Nothing queued: 5.18's kthread marks the controller idle and
        // sleeps again; the controller is powered down `idle_delay` after
        // the last message.
        let powered = inner.powered.load(Ordering::Acquire);
        let (t, idle_at) = if powered { (now().as_ns(), idle_at(inner)) } else { (0, u64::MAX) };
        if t >= idle_at {
            drop(q);
            teardown_if_idle(inner);
            continue;
        }
        // Set under the queue lock: a job queued from here on finds the
        // pump asleep and signals it.
        inner.pump_sleeping.store(true, Ordering::Relaxed);
        drop(q);
        sleep(inner, powered.then(|| Duration::from_nanos(idle_at - t)));
        inner.pump_sleeping.store(false, Ordering::Relaxed);
    }
}

/// Sleeps until signalled, or for `timeout`, as 5.18's kthread worker
/// does: a signal is its pending work, taken under the worker's own lock as
/// soon as the thread runs. A pending kick is taken here too, so a kick
/// waits for the pump's wake-up alone, never for the queue's lock (which
/// the caller's next message takes meanwhile), as `kthread_worker_fn`
/// takes its work off the list before the work locks anything of the
/// controller's.
fn sleep(inner: &BusInner, timeout: Option<Duration>) {
    let mut pending = inner.worker.lock().unwrap_or_else(|e| e.into_inner());
    if !*pending {
        pending = match timeout {
            Some(d) => {
                let (g, res) = inner.pump_cv.wait_timeout(pending, d).unwrap_or_else(|e| e.into_inner());
                if res.timed_out() {
                    inner.pump_timer_wakeups.fetch_add(1, Ordering::Relaxed);
                }
                g
            }
            None => inner.pump_cv.wait(pending).unwrap_or_else(|e| e.into_inner()),
        };
    }
    *pending = false;
    let kick = inner.kick_pending_since_ns.swap(0, Ordering::Relaxed);
    drop(pending);
    if kick != 0 {
        inner.pump_kick_wait_max_ns.fetch_max(now().as_ns().saturating_sub(kick), Ordering::Relaxed);
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
            inner.finish(aj.submitted, self.end, super::bus::RanIn::Pump, &self.result);
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
