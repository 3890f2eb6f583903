//! Sleeping until an instant, without the timer slack.
//!
//! `clock_nanosleep` lets the kernel fire a normal thread's timer up to its
//! timer slack late (50 µs by default) so that it can batch wake-ups; a
//! `timerfd` timer has no slack: it fires at its instant, and the thread
//! wakes as soon as the scheduler runs it. Measured on this project's VMs,
//! for 80 µs sleeps at normal priority: median overshoot 88 → 37 µs, 95th
//! percentile 112 → 58 µs. So a delay's sleep is a blocking `read` of a
//! timerfd the thread keeps (one descriptor per thread that ever sleeps in a
//! delay, created on its first sleep and closed when it exits), without
//! changing the thread's timer slack; where no timerfd can be made (the
//! descriptor limit reached, say) it falls back to `clock_nanosleep`.
//!
//! A process forked without exec (Python's `multiprocessing` does this)
//! inherits the forking thread's descriptors, its timer among them: one timer
//! shared by two processes, each re-arming it under the other's sleep. So a
//! timer belongs to the process that made it; the child makes its own.

use crate::clock::{now, Instant};
use std::cell::RefCell;

/// The calling thread's timer (`None`: it could not be made), and the
/// process that made it.
struct ThreadTimer {
    fd: Option<libc::c_int>,
    pid: libc::pid_t,
}

impl ThreadTimer {
    /// A new timer for the calling thread of process `pid`.
    fn new(pid: libc::pid_t) -> ThreadTimer {
        // SAFETY: plain system call; the descriptor is owned by ThreadTimer.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        ThreadTimer { fd: (fd >= 0).then_some(fd), pid }
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        if let Some(fd) = self.fd {
            // SAFETY: the descriptor is ours (in a forked child: this
            // process's copy) and closed once.
            unsafe { libc::close(fd) };
        }
    }
}

thread_local! {
    static TIMER: RefCell<Option<ThreadTimer>> = const { RefCell::new(None) };
}

/// The calling thread's timer descriptor, made on first use and made again
/// in a forked child (closing the inherited copy); `None` if it cannot be.
fn thread_timer_fd(timer: &RefCell<Option<ThreadTimer>>) -> Option<libc::c_int> {
    let mut timer = timer.borrow_mut();
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    if !matches!(&*timer, Some(t) if t.pid == pid) {
        *timer = Some(ThreadTimer::new(pid));
    }
    timer.as_ref().and_then(|t| t.fd)
}

fn timespec(at: Instant) -> libc::timespec {
    let ns = at.as_ns();
    libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

/// Sleeps until `at` on `CLOCK_MONOTONIC`; the instant it returned, or the
/// error number (`EINTR`: a signal interrupted it).
pub(crate) fn sleep_until(at: Instant) -> Result<Instant, i32> {
    match TIMER.try_with(thread_timer_fd) {
        Ok(Some(fd)) => timer_sleep(fd, at),
        // No timerfd (or the thread is exiting): the slack-bound sleep.
        _ => nanosleep_until(at),
    }
}

fn timer_sleep(fd: libc::c_int, at: Instant) -> Result<Instant, i32> {
    // An all-zero value would disarm the timer and the read below would never
    // return; 1 ns is just as much in the past.
    let at = Instant::from_ns(at.as_ns().max(1));
    let spec = libc::itimerspec { it_interval: timespec(Instant::ZERO), it_value: timespec(at) };
    // SAFETY: `spec` is a valid itimerspec; the old value may be null.
    if unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) } != 0 {
        return Err(errno());
    }
    let mut expirations = 0u64;
    // SAFETY: reads 8 bytes into a u64. A timer set in the past expires at once.
    let n = unsafe { libc::read(fd, (&mut expirations as *mut u64).cast(), 8) };
    if n == 8 {
        Ok(now())
    } else {
        Err(errno())
    }
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, at)`.
fn nanosleep_until(at: Instant) -> Result<Instant, i32> {
    let ts = timespec(at);
    // SAFETY: `ts` is a valid timespec; the remainder pointer may be null with TIMER_ABSTIME.
    let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(now())
    } else {
        Err(rc)
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_wakes_before_the_instant_and_a_past_instant_returns_at_once() {
        for ns in [0u64, 1_000, 50_000, 300_000] {
            let at = now().add_ns(ns);
            let woke = sleep_until(at).unwrap();
            assert!(woke >= at, "woke {} ns early", at.ns_since(woke));
        }
        for past in [Instant::from_ns(1), Instant::ZERO] {
            // On a thread, so that a sleep that never ends fails the test
            // instead of hanging it.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let t = now();
                let _ = tx.send(sleep_until(past).map(|woke| woke.ns_since(t)));
            });
            let took = rx.recv_timeout(std::time::Duration::from_secs(5));
            assert!(matches!(took, Ok(Ok(ns)) if ns < 50_000_000), "sleep until {past:?}: {took:?}");
        }
    }

    #[test]
    fn each_thread_sleeps_on_its_own_timer() {
        // Two threads sleeping to different instants at once: each wakes
        // at its own (a shared timer would let one re-arm the other's).
        let base = now();
        let hs: Vec<_> = [2_000_000u64, 20_000_000]
            .into_iter()
            .map(|d| {
                std::thread::spawn(move || {
                    let at = base.add_ns(d);
                    let woke = sleep_until(at).unwrap();
                    (d, woke.ns_since(base))
                })
            })
            .collect();
        for h in hs {
            let (asked, took) = h.join().unwrap();
            assert!(took >= asked, "asked {asked} ns, woke after {took} ns");
        }
    }

    #[test]
    fn a_forked_child_does_not_share_the_parents_timer() {
        // A child forked without exec (Python's multiprocessing does this)
        // inherits the forking thread's descriptors, its timer's among them.
        // Here the parent sleeps 500 ms; meanwhile the child sleeps 10 ms. On
        // a shared timer the child's re-arm cuts the parent's sleep short at
        // the child's instant, or the child takes the one expiration and the
        // parent never wakes.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // This thread's timer exists from here on.
            sleep_until(now()).unwrap();
            // SAFETY: the child only sleeps and exits, without unwinding.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: plain system calls; _exit skips the parent's atexit state.
                unsafe {
                    libc::usleep(50_000);
                    let _ = sleep_until(now().add_ns(10_000_000));
                    libc::_exit(0);
                }
            }
            let at = now().add_ns(500_000_000);
            let woke = sleep_until(at);
            let _ = tx.send((pid, woke.map(|w| w >= at)));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(5));
        if let Ok((pid, _)) = got {
            // SAFETY: the child is ours; reap it whether it exited or not.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        assert!(matches!(got, Ok((_, Ok(true)))), "the parent's 500 ms sleep: {got:?}");
    }

    #[test]
    fn the_timer_ignores_the_threads_slack() {
        // With a 5 ms slack a nanosleep fires anywhere up to 5 ms late (at the
        // end of the range unless another interrupt comes first); the timer
        // fires on time. The median of several sleeps: one wake-up on a
        // loaded machine may be late either way.
        std::thread::spawn(|| {
            crate::realtime::set_current_timer_slack_ns(5_000_000).unwrap();
            let mut over: Vec<u64> = (0..21)
                .map(|_| {
                    let at = now().add_ns(200_000);
                    sleep_until(at).unwrap().ns_since(at)
                })
                .collect();
            over.sort_unstable();
            assert!(over[10] < 1_500_000, "median overshoot {} ns with a 5 ms slack: {over:?}", over[10]);
        })
        .join()
        .unwrap();
    }
}
