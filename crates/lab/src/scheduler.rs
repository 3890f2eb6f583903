//! The lab's interrupt thread: runs hardware events at their due time.
//!
//! A model that knows *when* something will happen (a burst ends, a CAN frame's
//! EOF passes) schedules a closure for that instant. The thread sleeps until
//! just before the earliest one (1 ns timer slack, minus a wake-up margin it
//! learns from its own sleeps), spins to its instant and runs it: hardware
//! raises an interrupt on time, whatever the host's timer latency. The closure typically
//! raises an [`IrqLine`](crate::IrqLine) or drives a [`Pin`](crate::Pin),
//! which wakes the software waiting on it. That wake-up is a real thread
//! wake-up, as an interrupt is on a real system.

use crate::start_error::LabStartError;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wirespeed_time::realtime::{pin_current_thread, CpuList};
use wirespeed_time::{now, thread_cpu_ns, Instant};

type Task = Box<dyn FnOnce(Instant) + Send>;

/// Identifies a scheduled event, for [`Scheduler::cancel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId(u64);

#[derive(Default)]
struct State {
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    tasks: HashMap<u64, Task>,
    next_id: u64,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Bumped whenever an event earlier than all others is scheduled: the
    /// thread watches it while it spins toward an event, which a condition
    /// variable cannot tell it.
    earlier: AtomicU64,
    /// The thread is spinning (not waiting on `wake`): a new earliest event
    /// needs no notification, the bump of `earlier` is enough.
    spinning: AtomicBool,
}

thread_local! {
    /// The scheduler whose interrupt thread this is (null elsewhere).
    static RUNNING: std::cell::Cell<*const Shared> = const { std::cell::Cell::new(std::ptr::null()) };
    /// What waking interrupt threads has cost this thread.
    static WAKE_COST: std::cell::Cell<WakeCost> = const { std::cell::Cell::new(WakeCost { wakes: 0, ns: 0, cpu_ns: 0 }) };
    /// This thread asked for [`WakeCost::cpu_ns`].
    static COUNT_WAKE_CPU: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What waking the lab's interrupt threads has cost the calling thread so far.
///
/// Software that arms a hardware event earlier than every other one (a
/// transfer's end on an interrupt-driven transfer, a CAN frame's
/// arbitration after TXREQ) while the interrupt thread is not spinning
/// notifies that thread: a system call, and when the thread sleeps on
/// another CPU of a virtual machine an inter-processor interrupt — several
/// microseconds that no hardware charges the software that writes its
/// registers. Benchmarks read it before and after a run to show how much of
/// a thread's elapsed time (`ns`) and of its CPU time (`cpu_ns`) was this
/// cost of the emulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeCost {
    /// Notifications of the interrupt thread.
    pub wakes: u64,
    /// Wall-clock time spent in them, ns: what they add to a message's
    /// latency. It includes any time the notifying thread was not running
    /// meanwhile (the woken thread may preempt it on its own CPU).
    pub ns: u64,
    /// The notifying thread's CPU time in them, ns: what they add to its
    /// CPU. Subtract this, not `ns`, from a thread's CPU time. Counted only
    /// on a thread that asked ([`WakeCost::count_cpu_on_this_thread`]), 0
    /// elsewhere: reading a thread's CPU clock is a system call on each side
    /// of the notification, which would lengthen every one of them.
    pub cpu_ns: u64,
}

impl std::ops::Add for WakeCost {
    type Output = WakeCost;
    fn add(self, o: WakeCost) -> WakeCost {
        WakeCost { wakes: self.wakes + o.wakes, ns: self.ns + o.ns, cpu_ns: self.cpu_ns + o.cpu_ns }
    }
}

impl WakeCost {
    /// From now on, also count the calling thread's CPU time in its
    /// notifications (`on`), or stop.
    pub fn count_cpu_on_this_thread(on: bool) {
        COUNT_WAKE_CPU.with(|c| c.set(on));
    }

    /// The calling thread's totals.
    pub fn of_this_thread() -> WakeCost {
        WAKE_COST.with(|c| c.get())
    }

    /// What was spent since `before` (an earlier reading on the same thread).
    pub fn since(self, before: WakeCost) -> WakeCost {
        WakeCost {
            wakes: self.wakes.saturating_sub(before.wakes),
            ns: self.ns.saturating_sub(before.ns),
            cpu_ns: self.cpu_ns.saturating_sub(before.cpu_ns),
        }
    }
}

/// Whether the calling thread is `shared`'s interrupt thread.
fn on_interrupt_thread(shared: &Arc<Shared>) -> bool {
    RUNNING.with(|r| std::ptr::eq(r.get(), Arc::as_ptr(shared)))
}

/// Handle to a lab's interrupt thread. Cloning shares the thread; it stops
/// when the last handle is dropped.
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

struct Owner {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).shutdown = true;
        self.shared.wake.notify_all();
        // The last handle may go with a task's temporary reference, on the
        // interrupt thread itself: it then stops after that task, unjoined.
        let own_thread = on_interrupt_thread(&self.shared);
        if let Some(t) = self.thread.take() {
            if !own_thread {
                let _ = t.join();
            }
        }
    }
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pending = self.shared.state.lock().map(|s| s.tasks.len()).unwrap_or(0);
        f.debug_struct("Scheduler").field("pending", &pending).finish()
    }
}

impl Scheduler {
    /// Starts an interrupt thread named `name`.
    ///
    /// # Panics
    /// If the thread cannot be created (the process is out of threads or
    /// memory), as [`std::thread::spawn`] does; [`try_start`](Scheduler::try_start)
    /// returns that as an error.
    pub fn start(name: &str) -> Scheduler {
        Scheduler::try_start(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts an interrupt thread named `name`, or says why it could not be created.
    pub fn try_start(name: &str) -> Result<Scheduler, LabStartError> {
        Scheduler::try_start_on(std::thread::Builder::new(), name, None)
    }

    /// [`Scheduler::try_start`] on a thread `builder` makes (this names it;
    /// a test can hand it a builder whose thread cannot be created), placed
    /// on `cpus` before it runs anything.
    pub(crate) fn try_start_on(
        builder: std::thread::Builder,
        name: &str,
        cpus: Option<&CpuList>,
    ) -> Result<Scheduler, LabStartError> {
        Scheduler::spawn(builder, name, Margin::INITIAL_NS, cpus)
    }

    /// Starts the thread with the wake-up margin's starting estimate, on
    /// `cpus` if given.
    fn spawn(
        builder: std::thread::Builder,
        name: &str,
        initial_margin_ns: u64,
        cpus: Option<&CpuList>,
    ) -> Result<Scheduler, LabStartError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            earlier: AtomicU64::new(0),
            spinning: AtomicBool::new(false),
        });
        let worker = shared.clone();
        let (placed_tx, placed_rx) = std::sync::mpsc::sync_channel(1);
        let place = cpus.cloned();
        let thread = builder
            .name(name.to_owned())
            .spawn(move || {
                let placed = place.as_ref().map_or(Ok(()), pin_current_thread);
                let ok = placed.is_ok();
                let _ = placed_tx.send(placed);
                if ok {
                    run(&worker, initial_margin_ns);
                }
            })
            .map_err(|source| LabStartError { thread: name.to_owned(), cpus: None, source })?;
        let placed = placed_rx.recv().unwrap_or_else(|_| Err(std::io::Error::other("the thread ended before it ran")));
        if let Err(source) = placed {
            let _ = thread.join();
            return Err(LabStartError { thread: name.to_owned(), cpus: cpus.cloned(), source });
        }
        let owner = Arc::new(Owner { shared: shared.clone(), thread: Some(thread) });
        Ok(Scheduler { shared, _owner: owner })
    }

    /// Runs `task` on the interrupt thread at `at` (at once if `at` has passed).
    /// The task receives the instant it actually runs.
    pub fn schedule(&self, at: Instant, task: impl FnOnce(Instant) + Send + 'static) -> TimerId {
        let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let id = st.next_id;
        st.next_id += 1;
        let earliest = st.due.peek().map(|Reverse((t, _))| *t);
        st.due.push(Reverse((at, id)));
        st.tasks.insert(id, Box::new(task));
        drop(st);
        // The interrupt thread looks at the queue again after each task:
        // waking it from its own task would only cost a system call.
        if earliest.is_none_or(|e| at < e) && !on_interrupt_thread(&self.shared) {
            // A spinning thread sees the bump; one that stopped spinning
            // takes the lock and so sees the event (pushed under it) anyway.
            self.shared.earlier.fetch_add(1, Ordering::SeqCst);
            if !self.shared.spinning.load(Ordering::SeqCst) {
                // The wall-clock reads nest inside the CPU clock's, whose
                // own cost (a system call) is the emulation's too.
                let cpu = COUNT_WAKE_CPU.with(|c| c.get()).then(thread_cpu_ns);
                let t0 = now();
                self.shared.wake.notify_one();
                let t1 = now();
                let cpu_ns = cpu.map_or(0, |c0| thread_cpu_ns().saturating_sub(c0));
                let this = WakeCost { wakes: 1, ns: t1.ns_since(t0), cpu_ns };
                WAKE_COST.with(|c| c.set(c.get() + this));
            }
        }
        TimerId(id)
    }

    /// A handle that tells whether this interrupt thread has stopped (every
    /// [`Scheduler`] clone dropped), without keeping it alive: for tests
    /// that a lab's parts do not keep each other alive in a cycle.
    pub fn watch(&self) -> SchedulerWatch {
        SchedulerWatch(Arc::downgrade(&self._owner))
    }

    /// Cancels a scheduled event; false if it already ran or was cancelled.
    pub fn cancel(&self, id: TimerId) -> bool {
        let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        st.tasks.remove(&id.0).is_some()
    }
}

/// See [`Scheduler::watch`].
#[derive(Clone, Debug)]
pub struct SchedulerWatch(std::sync::Weak<Owner>);

impl SchedulerWatch {
    /// Whether every handle is gone and the thread has been stopped.
    pub fn is_stopped(&self) -> bool {
        self.0.strong_count() == 0
    }
}

/// How long before an event the interrupt thread wakes up: a running
/// quantile of how late its timed sleeps end, plus a little, bounded.
///
/// The estimate moves by fixed steps (a stochastic-approximation quantile:
/// up `QUANTILE_UP` steps when a wake-up is later than it, down one when
/// earlier), so it settles near the 90th percentile and a single very late
/// wake-up (the thread preempted on a busy host) moves it by microseconds,
/// not by the outlier's size. It is also bounded by `MAX_NS`: lateness
/// beyond that is preemption, which spinning does not cure — and a margin
/// that large would keep the thread spinning between every pair of events
/// (it would never sleep, so never learn that the margin could shrink),
/// taking a core from the software whose interrupts it delivers.
struct Margin {
    late_ns: u64,
}

impl Margin {
    const INITIAL_NS: u64 = 60_000;
    const SLACK_NS: u64 = 3_000;
    const MAX_NS: u64 = 100_000;
    const STEP_NS: u64 = 250;
    const QUANTILE_UP: u64 = 9;

    fn ns(&self) -> u64 {
        self.late_ns + Self::SLACK_NS
    }

    /// A wake-up came `late` ns after the instant asked for.
    fn observe(&mut self, late: u64) {
        if late > self.late_ns {
            let up = (Self::QUANTILE_UP * Self::STEP_NS).min(late - self.late_ns);
            self.late_ns = (self.late_ns + up).min(Self::MAX_NS);
        } else {
            self.late_ns -= Self::STEP_NS.min(self.late_ns - late);
        }
    }
}

fn run(shared: &Shared, initial_margin_ns: u64) {
    RUNNING.with(|r| r.set(shared));
    // The interrupt thread sleeps with a timer slack of 1 ns (DESIGN.md).
    let _ = wirespeed_time::realtime::set_current_timer_slack_ns(1);
    let mut margin = Margin { late_ns: initial_margin_ns };
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if st.shutdown {
            return;
        }
        let Some(&Reverse((at, id))) = st.due.peek() else {
            st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        if !st.tasks.contains_key(&id) {
            st.due.pop();
            continue;
        }
        let t = now();
        if t < at {
            // Sleep until the wake-up margin before the event, then spin to
            // it: an interrupt reaches software on time, and what waiting for
            // it costs is the waiter's own wake-up, as on a real system.
            let left = at.ns_since(t);
            if left > margin.ns() {
                let wake_at = at.as_ns() - margin.ns();
                let (g, res) = shared
                    .wake
                    .wait_timeout(st, Duration::from_nanos(left - margin.ns()))
                    .unwrap_or_else(|e| e.into_inner());
                st = g;
                if res.timed_out() {
                    margin.observe(now().as_ns().saturating_sub(wake_at));
                }
            } else {
                shared.spinning.store(true, Ordering::SeqCst);
                let seen = shared.earlier.load(Ordering::SeqCst);
                drop(st);
                // Until the event, or until an earlier one is scheduled.
                while now() < at && shared.earlier.load(Ordering::Relaxed) == seen {
                    std::hint::spin_loop();
                }
                shared.spinning.store(false, Ordering::SeqCst);
                st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            }
            continue;
        }
        st.due.pop();
        let task = st.tasks.remove(&id);
        drop(st);
        if let Some(task) = task {
            // A model's bug must not silence the lab: the panic hook has
            // reported it, and every later interrupt is still delivered.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(now())));
        }
        st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn runs_tasks_in_time_order_never_early() {
        let s = Scheduler::start("test-irq");
        let (tx, rx) = mpsc::channel();
        let base = now();
        for (i, off_us) in [(0u32, 3_000u64), (1, 1_000), (2, 2_000)] {
            let tx = tx.clone();
            let at = base.add_ns(off_us * 1_000);
            s.schedule(at, move |ran| tx.send((i, at, ran)).unwrap());
        }
        let got: Vec<_> = (0..3).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![1, 2, 0]);
        for (_, at, ran) in got {
            assert!(ran >= at, "a lab event ran before its time");
        }
    }

    #[test]
    fn an_event_earlier_than_all_others_costs_a_counted_wake_up_and_a_later_one_none() {
        let s = Scheduler::start("test-irq");
        let settle = || std::thread::sleep(Duration::from_millis(50));
        settle();
        WakeCost::count_cpu_on_this_thread(true);
        let before = WakeCost::of_this_thread();
        // Asleep with nothing to do: an event must wake it.
        s.schedule(now().add_ns(2_000_000_000), |_| {});
        assert_eq!(WakeCost::of_this_thread().since(before).wakes, 1);
        settle();
        // Asleep toward that event: a later one needs no wake-up.
        s.schedule(now().add_ns(3_000_000_000), |_| {});
        assert_eq!(WakeCost::of_this_thread().since(before).wakes, 1);
        // An earlier one does, and it runs on time.
        let (tx, rx) = mpsc::channel();
        let at = now().add_ns(1_000_000_000);
        s.schedule(at, move |ran| tx.send(ran).unwrap());
        let cost = WakeCost::of_this_thread().since(before);
        assert_eq!(cost.wakes, 2);
        assert!(cost.ns > 0);
        assert!(cost.cpu_ns > 0, "{cost:?}");
        // Not asked: the wall time only.
        WakeCost::count_cpu_on_this_thread(false);
        settle();
        let before = WakeCost::of_this_thread();
        s.schedule(now().add_ns(500_000_000), |_| {});
        let cost = WakeCost::of_this_thread().since(before);
        assert_eq!((cost.wakes, cost.cpu_ns), (1, 0), "{cost:?}");
        assert!(cost.ns > 0);
        assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap() >= at);
    }

    #[test]
    fn margin_ignores_outliers_and_stays_bounded() {
        let mut m = Margin { late_ns: Margin::INITIAL_NS };
        // A long stretch of 3 ms preemptions: the margin climbs to its cap, no further.
        for _ in 0..1_000 {
            m.observe(3_000_000);
        }
        assert_eq!(m.ns(), Margin::MAX_NS + Margin::SLACK_NS, "capped");
        for i in 0..20_000u64 {
            // Mostly 10..20 µs late, one in fifty preempted for 3 ms.
            let late = if i % 50 == 0 { 3_000_000 } else { 10_000 + (i * 7919) % 10_000 };
            m.observe(late);
        }
        assert!((15_000..=25_000).contains(&m.late_ns), "settles near the 90th percentile: {}", m.late_ns);
    }

    #[test]
    fn an_event_scheduled_while_the_thread_spins_runs_without_waiting_for_the_spin() {
        // A 20 ms margin and events 8 ms ahead, so that the spins are long
        // enough to be seen even on a loaded machine under valgrind (no
        // timed sleep here moves the estimate).
        let s = Scheduler::spawn(std::thread::Builder::new(), "test-irq", 20_000_000, None).unwrap();
        let (mut caught, mut on_time) = (0, 0);
        for _ in 0..200 {
            if caught == 10 {
                break;
            }
            // Due within the margin: the thread spins toward it.
            let later = now().add_ns(8_000_000);
            s.schedule(later, |_| {});
            // Yielding, not spinning: where threads take turns on one CPU
            // (valgrind), a spinning waiter would hold the turn the
            // interrupt thread needs to start its spin.
            while !s.shared.spinning.load(Ordering::SeqCst) && now() < later {
                std::thread::yield_now();
            }
            if now() >= later {
                continue; // the spin was not seen in time: no verdict
            }
            caught += 1;
            let (tx, rx) = mpsc::channel();
            s.schedule(now(), move |ran| tx.send(ran).unwrap());
            let ran = rx.recv_timeout(Duration::from_secs(5)).unwrap();
            on_time += usize::from(ran < later);
            while now() < later.add_ns(100_000) {
                std::thread::yield_now();
            }
        }
        assert!(caught >= 3, "the interrupt thread was seen spinning only {caught} times");
        assert!(on_time * 2 >= caught, "events waited for the spin: {on_time} of {caught} on time");
    }

    #[test]
    fn a_panicking_task_does_not_stop_later_events() {
        let s = Scheduler::start("test-irq");
        s.schedule(now(), |_| panic!("a device model's bug (expected by this test)"));
        let (tx, rx) = mpsc::channel();
        s.schedule(now().add_ns(1_000_000), move |_| tx.send(()).unwrap());
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "the interrupt thread died with the task");
    }

    #[test]
    fn cancelled_task_never_runs() {
        let s = Scheduler::start("test-irq");
        let (tx, rx) = mpsc::channel::<()>();
        let id = s.schedule(now().add_ns(20_000_000), move |_| tx.send(()).unwrap());
        assert!(s.cancel(id));
        assert!(!s.cancel(id));
        assert!(rx.recv_timeout(Duration::from_millis(60)).is_err());
    }
}
