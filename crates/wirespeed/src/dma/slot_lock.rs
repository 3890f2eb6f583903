//! [`SlotLock`]: the lock of a thread's own slot data (its magazines, its
//! lazy flush queue) — the stand-in for the spinlock of Linux's per-CPU
//! `iova_rcache` and `iova_fq`, which only their CPU takes in the common case.
//!
//! Taking it uncontended is one compare-and-swap on a line the thread owns;
//! releasing it is a plain release store (std's futex mutex releases with an
//! atomic swap: a second locked instruction per use, on the hot path of
//! every map and unmap). Another thread takes it only to drain, flush or
//! read statistics; a waiter spins briefly, then yields its CPU.
//!
//! Under `--cfg loom` the flag and the cell are loom's, so the model at the
//! end of this file checks that the lock excludes (loom's cell reports any
//! access to the value that the flag's ordering does not separate).

use crate::sync::{AtomicBool, Ordering};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

#[cfg(loom)]
use loom::cell::UnsafeCell;
#[cfg(not(loom))]
use std::cell::UnsafeCell;

/// A mutual-exclusion lock that spins, then yields; never poisoned.
#[derive(Debug, Default)]
pub(crate) struct SlotLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is serialized by `locked` (acquire on lock,
// release on unlock), as for std's Mutex.
unsafe impl<T: Send> Sync for SlotLock<T> {}

/// Exclusive access to the value of a [`SlotLock`]; released on drop.
pub(crate) struct SlotGuard<'a, T> {
    lock: &'a SlotLock<T>,
    /// loom's record of this access to the value, alive as long as the guard.
    #[cfg(loom)]
    access: loom::cell::MutPtr<T>,
    /// Shared between threads only if `T` may be (`&mut T` is `Sync` exactly when `T` is).
    _t: PhantomData<&'a mut T>,
}

impl<T> SlotLock<T> {
    pub(crate) fn new(value: T) -> SlotLock<T> {
        SlotLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    #[inline]
    pub(crate) fn lock(&self) -> SlotGuard<'_, T> {
        if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_slow();
        }
        SlotGuard {
            lock: self,
            #[cfg(loom)]
            access: self.value.get_mut(),
            _t: PhantomData,
        }
    }

    #[cold]
    fn lock_slow(&self) {
        #[cfg(not(loom))]
        let mut spins = 0u32;
        loop {
            // Read-only spinning keeps the line shared while the holder works.
            // loom lets a relaxed load read a stale `true` again and again, so
            // the model spins on the compare-and-swap alone (which always sees
            // the latest value): the acquire/release pairing it checks is the
            // same. The swap is the strong one: loom explores every spurious
            // failure of a weak one, without end in a loop (on x86 both are
            // the same `lock cmpxchg`).
            #[cfg(not(loom))]
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 200 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
            #[cfg(loom)]
            crate::sync::thread::yield_now();
        }
    }
}

impl<T> Deref for SlotGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        #[cfg(loom)]
        // SAFETY: the guard proves the lock is held; loom checks it.
        return unsafe { self.access.deref() };
        #[cfg(not(loom))]
        // SAFETY: the guard proves the lock is held.
        unsafe {
            &*self.lock.value.get()
        }
    }
}

impl<T> DerefMut for SlotGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(loom)]
        // SAFETY: the guard proves the lock is held; loom checks it.
        return unsafe { self.access.deref() };
        #[cfg(not(loom))]
        // SAFETY: the guard proves the lock is held, and `&mut self` that it is not shared.
        unsafe {
            &mut *self.lock.value.get()
        }
    }
}

impl<T> Drop for SlotGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SlotLock;

    /// Threads add to a plain (non-atomic) pair under the lock; without mutual
    /// exclusion (or with relaxed orderings on a weakly ordered CPU) the
    /// increments race and the totals come out short or the pair torn.
    #[test]
    fn excludes_under_contention() {
        const THREADS: usize = 4;
        const ROUNDS: u64 = 100_000;
        let lock = SlotLock::new((0u64, 0u64));
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ROUNDS {
                        let mut g = lock.lock();
                        let a = g.0;
                        std::hint::black_box(&mut *g);
                        g.0 = a + 1;
                        g.1 += 2;
                        assert_eq!(g.1, 2 * g.0, "the pair was torn: another thread was inside");
                    }
                });
            }
        });
        let g = lock.lock();
        assert_eq!(*g, (THREADS as u64 * ROUNDS, 2 * THREADS as u64 * ROUNDS));
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::SlotLock;
    use crate::sync::{thread, Arc};

    /// A thread increments twice under the lock while the main thread
    /// increments once and reads: loom's cell fails the model on any access
    /// the lock's acquire/release does not order, and the total must be
    /// exact. (Two threads: with two spinners loom can alternate their
    /// yields without end, which no real scheduler does.)
    #[test]
    fn dma_loom_slot_lock_excludes() {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(|| {
            let lock = Arc::new(SlotLock::new(0u32));
            let l = lock.clone();
            let writer = thread::spawn(move || {
                *l.lock() += 1;
                *l.lock() += 1;
            });
            let seen = {
                let mut g = lock.lock();
                *g += 1;
                *g
            };
            assert!((1..=3).contains(&seen));
            writer.join().unwrap();
            assert_eq!(*lock.lock(), 3);
        });
    }
}
