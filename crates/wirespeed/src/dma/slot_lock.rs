//! [`SlotLock`]: the lock of a thread's own slot data (its magazines, its
//! lazy flush queue) — the stand-in for the spinlock of Linux's per-CPU
//! `iova_rcache` and `iova_fq`, which only their CPU takes in the common case.
//!
//! Taking it uncontended is one compare-and-swap on a line the thread owns;
//! releasing it is a plain release store (std's futex mutex releases with an
//! atomic swap: a second locked instruction per use, on the hot path of
//! every map and unmap). Another thread takes it only to drain, flush or
//! read statistics; a waiter spins briefly, then yields its CPU.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// Shared between threads only if `T` may be (`&mut T` is `Sync` exactly when `T` is).
    _t: PhantomData<&'a mut T>,
}

impl<T> SlotLock<T> {
    pub(crate) const fn new(value: T) -> SlotLock<T> {
        SlotLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    #[inline]
    pub(crate) fn lock(&self) -> SlotGuard<'_, T> {
        if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_slow();
        }
        SlotGuard { lock: self, _t: PhantomData }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 200 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }
}

impl<T> Deref for SlotGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SlotGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, and `&mut self` that it is not shared.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SlotGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}
