//! The lazy-mode flush timer of a domain: one thread, started on first use,
//! that sleeps until the armed deadline, flushes every thread's queue with
//! one `invalidate_all`, and then waits with no timeout until an unmap arms
//! it again (Linux: `fq_timer`, armed when an entry is queued and the timer
//! is off). It never wakes while nothing is queued.
//!
//! Arming is one relaxed load on the unmap path while the timer is already
//! armed; the unmapping thread reads `armed` under its queue's lock and the
//! thread clears it before it scans the queues, so an entry is either seen
//! by the running scan or arms the timer again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// What the timer thread runs when it fires.
pub(crate) trait FlushTarget: Send + Sync + 'static {
    /// Flushes every queue (one `invalidate_all` if anything is queued).
    fn timer_flush(&self);
}

#[derive(Debug)]
pub(crate) struct Flusher {
    /// The timer is armed (or being armed).
    pub(crate) armed: AtomicBool,
    timeout: Duration,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct State {
    deadline: Option<Instant>,
    shutdown: bool,
    thread: Option<JoinHandle<()>>,
    thread_id: Option<ThreadId>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Flusher {
    pub(crate) fn new(timeout: Duration) -> Flusher {
        Flusher { armed: AtomicBool::new(false), timeout, state: Mutex::new(State::default()), cv: Condvar::new() }
    }

    /// Sets the deadline (now + timeout) unless one is set, starting the
    /// thread if needed. `false` if the thread could not be started (the
    /// caller then flushes at once) or the flusher is shut down.
    pub(crate) fn arm<T: FlushTarget>(self: &Arc<Self>, target: std::sync::Weak<T>) -> bool {
        let mut st = lock(&self.state);
        if st.shutdown {
            return false;
        }
        if st.deadline.is_none() {
            st.deadline = Some(Instant::now() + self.timeout);
        }
        if st.thread.is_none() {
            let me = Arc::clone(self);
            let spawned = std::thread::Builder::new().name("wirespeed-dma-flush".into()).spawn(move || me.run(target));
            match spawned {
                Ok(h) => {
                    st.thread_id = Some(h.thread().id());
                    st.thread = Some(h);
                }
                Err(_) => {
                    st.deadline = None;
                    return false;
                }
            }
        }
        self.cv.notify_one();
        true
    }

    fn run<T: FlushTarget>(&self, target: std::sync::Weak<T>) {
        let mut st = lock(&self.state);
        loop {
            if st.shutdown {
                return;
            }
            let Some(deadline) = st.deadline else {
                st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let now = Instant::now();
            if now < deadline {
                st = self.cv.wait_timeout(st, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
                continue;
            }
            st.deadline = None;
            drop(st);
            // Cleared before the scan: an entry queued from here on re-arms.
            self.armed.store(false, Ordering::SeqCst);
            match target.upgrade() {
                Some(t) => t.timer_flush(),
                None => return,
            }
            st = lock(&self.state);
        }
    }

    /// Stops the thread and waits for it (unless called on it).
    pub(crate) fn shutdown(&self) {
        let (handle, id) = {
            let mut st = lock(&self.state);
            st.shutdown = true;
            (st.thread.take(), st.thread_id)
        };
        self.cv.notify_all();
        if let Some(h) = handle {
            if id != Some(std::thread::current().id()) {
                let _ = h.join();
            }
        }
    }
}
