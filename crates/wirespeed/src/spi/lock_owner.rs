//! Which bus locks ([`BusLock`](super::BusLock)) the current thread holds, so
//! that a sync call or a second `lock_bus` from the holder returns
//! [`SpiError::LockedByCaller`](super::SpiError::LockedByCaller) instead of
//! waiting for itself. A thread may hold several buses' locks, and release
//! them in any order. Read only on the slow path (the bus was busy); the
//! record is gone once the thread's locals are (nothing is checked then).

use super::bus::BusInner;
use crate::sync::thread_local;
use std::cell::RefCell;

thread_local! {
    /// The ids of the buses whose locks this thread holds.
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread holds `inner`'s bus lock.
pub(crate) fn holds(inner: &BusInner) -> bool {
    holds_id(inner.id())
}

/// Whether this thread holds the lock of the bus with [`id`](BusInner::id) `id`.
pub(crate) fn holds_id(id: usize) -> bool {
    HELD.try_with(|held| held.borrow().contains(&id)).unwrap_or(false)
}

/// Records that this thread took `inner`'s lock.
pub(crate) fn enter(inner: &BusInner) {
    let _ = HELD.try_with(|held| held.borrow_mut().push(inner.id()));
}

/// Records that this thread released `inner`'s lock.
pub(crate) fn leave(inner: &BusInner) {
    let _ = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        if let Some(i) = held.iter().position(|&id| id == inner.id()) {
            held.swap_remove(i);
        }
    });
}
