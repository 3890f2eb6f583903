//! The atomics and cell the removal guard uses: the crate's (std's, or
//! loom's under `--cfg loom`, see `crate::sync`) plus an `UnsafeCell` and a
//! back-off that follow loom's API in both builds.

pub(crate) use crate::sync::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Backs off inside a remover's wait loop.
#[cfg(loom)]
pub(crate) fn spin_wait() {
    loom::thread::yield_now();
}

/// Backs off inside a remover's wait loop (removal is rare; the accessor it
/// waits for is finishing one register access).
#[cfg(not(loom))]
pub(crate) fn spin_wait() {
    std::thread::yield_now();
}

/// `std::cell::UnsafeCell` with loom's access API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
