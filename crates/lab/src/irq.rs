//! [`IrqLine`]: a level-triggered interrupt line between a lab block and the
//! software that waits on it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

struct Inner {
    name: &'static str,
    level: AtomicBool,
    raised: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

/// A level-triggered interrupt line. The hardware side raises and lowers it;
/// the software side checks it or sleeps until it is raised. Clones share the line.
#[derive(Clone)]
pub struct IrqLine {
    inner: Arc<Inner>,
}

impl fmt::Debug for IrqLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IrqLine")
            .field("name", &self.inner.name)
            .field("level", &self.is_raised())
            .field("raised", &self.raise_count())
            .finish()
    }
}

impl IrqLine {
    /// A new, lowered line.
    pub fn new(name: &'static str) -> IrqLine {
        IrqLine {
            inner: Arc::new(Inner {
                name,
                level: AtomicBool::new(false),
                raised: AtomicU64::new(0),
                lock: Mutex::new(()),
                cv: Condvar::new(),
            }),
        }
    }

    /// Hardware side: raise the line and wake every waiter.
    pub fn raise(&self) {
        if self.set_raised() {
            self.wake();
        }
    }

    /// Hardware side, first half of [`IrqLine::raise`] for a caller holding
    /// a lock: sets the level (no system call). Returns whether the line
    /// rose; if so, call [`IrqLine::wake`] once the lock is released.
    pub fn set_raised(&self) -> bool {
        let rose = !self.inner.level.swap(true, Ordering::AcqRel);
        if rose {
            self.inner.raised.fetch_add(1, Ordering::Relaxed);
        }
        rose
    }

    /// Hardware side, second half of [`IrqLine::raise`]: wakes every waiter
    /// (a waiter that finds the line low again goes back to sleep).
    pub fn wake(&self) {
        // Taking the lock orders this after any waiter's check of the level
        // (it releases the lock only inside the wait); notifying after
        // releasing it spares a woken waiter finding the lock still held
        // and sleeping again until the unlock wakes it a second time.
        drop(self.inner.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.inner.cv.notify_all();
    }

    /// Hardware side: lower the line.
    pub fn lower(&self) {
        self.inner.level.store(false, Ordering::Release);
    }

    /// Whether the line is raised now.
    pub fn is_raised(&self) -> bool {
        self.inner.level.load(Ordering::Acquire)
    }

    /// How many times the line went from low to high.
    pub fn raise_count(&self) -> u64 {
        self.inner.raised.load(Ordering::Relaxed)
    }

    /// Software side: sleep until the line is raised. Returns false on timeout.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        if self.is_raised() {
            return true;
        }
        let mut guard = self.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        while !self.is_raised() {
            match deadline {
                None => guard = self.inner.cv.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    guard = self.inner.cv.wait_timeout(guard, left).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_wakes_on_raise_and_times_out_when_low() {
        let irq = IrqLine::new("t");
        assert!(!irq.wait(Some(Duration::from_millis(5))));
        let hw = irq.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            hw.raise();
        });
        assert!(irq.wait(Some(Duration::from_secs(5))));
        t.join().unwrap();
        assert_eq!(irq.raise_count(), 1);
        irq.raise();
        assert_eq!(irq.raise_count(), 1, "raising a raised line is not an edge");
        irq.lower();
        assert!(!irq.is_raised());
    }
}
