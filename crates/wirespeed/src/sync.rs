//! The locks, condition variables, atomics, `Arc`, threads and thread-locals
//! of the crate's shared-state code (the SPI core, the GPIO removal guard,
//! the regmap flat cache): std's, re-exported as they are, or loom's when the
//! crate is built with `--cfg loom`, so that the loom models check the real
//! code (e.g. `spi/loom_model.rs`, the caller/pump hand-off). Statics (id
//! counters) stay std atomics: loom's cannot be built in a `const`.
//!
//! Under loom, `Mutex` is a thin wrapper with the std calls the core uses
//! (`clear_poison` is a no-op: a loom lock is never poisoned), and
//! `Condvar::wait_timeout` never times out: the model runs with an idle delay
//! long enough that the pump's timer never matters, so nothing but a signal
//! wakes a sleeper.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
#[cfg(not(loom))]
pub(crate) use std::thread;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(loom)]
pub(crate) use std::sync::TryLockError;

/// `loom::thread_local!` for the core's `const`-initialised thread-locals
/// (loom's macro takes a plain expression): one value per loom thread, where
/// std's would be shared by every thread of the model.
#[cfg(loom)]
macro_rules! loom_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr };) => {
        loom::thread_local!($(#[$attr])* $vis static $name: $t = $init);
    };
}
#[cfg(loom)]
pub(crate) use loom_thread_local as thread_local;

/// `loom::sync::Mutex` with the std calls the core makes.
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(v: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(v))
    }

    pub(crate) fn lock(&self) -> std::sync::LockResult<MutexGuard<'_, T>> {
        self.0.lock()
    }

    pub(crate) fn try_lock(&self) -> std::sync::TryLockResult<MutexGuard<'_, T>> {
        self.0.try_lock()
    }

    /// A loom lock is never poisoned.
    pub(crate) fn clear_poison(&self) {}
}
