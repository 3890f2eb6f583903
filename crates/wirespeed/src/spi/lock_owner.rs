//! Which bus lock ([`BusLock`](super::BusLock)) the current thread holds, so
//! that a sync call or a second `lock_bus` from the holder returns
//! [`SpiError::LockedByCaller`](super::SpiError::LockedByCaller) instead of
//! waiting for itself. Read only on the slow path (the bus was busy).

use super::bus::BusInner;
use std::cell::Cell;

thread_local! {
    /// The id of the bus whose lock this thread holds (0: none).
    static HELD: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread holds `inner`'s bus lock.
pub(crate) fn holds(inner: &BusInner) -> bool {
    HELD.get() == inner.id()
}

/// Records that this thread took `inner`'s lock; returns what to restore.
pub(crate) fn enter(inner: &BusInner) -> usize {
    HELD.replace(inner.id())
}

/// Records that this thread released the lock taken by the matching `enter`.
pub(crate) fn leave(outer: usize) {
    HELD.set(outer);
}
