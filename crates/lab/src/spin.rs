//! A small spin lock for the lab's block models.
//!
//! A model's lock is held for a few hundred nanoseconds at most and never
//! across a sleep, and it is almost never contended (software and the lab's
//! interrupt thread rarely touch one block at the same instant). Releasing it
//! is a plain store, which makes an emulated register access cheaper than
//! with a futex-based mutex: the emulation's own cost is counted as bus
//! overhead by every benchmark, so it should be as small as it can be.
//! A waiter that spins too long yields its CPU.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A mutual-exclusion lock that spins, then yields.
#[derive(Debug, Default)]
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is serialized by `locked` (acquire on lock,
// release on unlock), exactly as for std's Mutex.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the value; no thread holds a guard then.
unsafe impl<T: Send> Send for SpinLock<T> {}

/// Exclusive access to the value of a [`SpinLock`]; released on drop.
#[derive(Debug)]
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// A guard hands out `&T` to whoever shares it: it may be shared between
    /// threads only if `T` may (`&mut T` is `Sync` exactly when `T` is).
    _shares_t: PhantomData<&'a mut T>,
}

impl<T> SpinLock<T> {
    /// A new, unlocked lock.
    pub const fn new(value: T) -> SpinLock<T> {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Takes the lock.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_slow();
        }
        SpinGuard { lock: self, _shares_t: PhantomData }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 1_000 {
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

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, and `&mut self` that no
        // other reference through this guard exists.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `IS_SYNC` is the inherent constant where `T: Sync` holds, else the
    /// trait's default.
    struct Probe<T: ?Sized>(PhantomData<T>);
    trait NotSync {
        const IS_SYNC: bool = false;
    }
    impl<T: ?Sized> NotSync for Probe<T> {}
    impl<T: ?Sized + Sync> Probe<T> {
        const IS_SYNC: bool = true;
    }

    #[test]
    fn a_guard_is_shared_between_threads_only_if_its_value_may_be() {
        // A Cell may move between threads but not be shared: through a shared
        // guard two threads would reach one Cell at once.
        let cell = <Probe<SpinGuard<'static, std::cell::Cell<u8>>>>::IS_SYNC;
        let plain = <Probe<SpinGuard<'static, u8>>>::IS_SYNC;
        assert_eq!((cell, plain), (false, true), "(guard of a Cell, guard of a u8) Sync");
    }

    #[test]
    fn exclusive_under_contention() {
        // A non-atomic read-modify-write inside the lock: any overlap of two
        // holders loses increments and the total comes out short.
        let lock = SpinLock::new((0u64, 0u64));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100_000 {
                        let mut g = lock.lock();
                        let v = g.0;
                        std::hint::black_box(&mut g.1);
                        g.0 = v + 1;
                    }
                });
            }
        });
        assert_eq!(lock.lock().0, 400_000);
    }
}
