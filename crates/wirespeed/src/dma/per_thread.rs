//! Per-thread slots keyed by owner (an allocator or a domain): the stack's
//! stand-in for the kernel's per-CPU data.
//!
//! One thread-local table per thread maps an owner id to that thread's slot
//! for the owner. The lookup is a scan of a short vector (one entry per live
//! owner the thread used) with no lock and no allocation; the first use by a
//! thread allocates its slot (`make`). When the thread exits, the table calls
//! [`ThreadSlot::thread_exit`] on each slot, so an owner gets back what the
//! thread cached. Entries of owners that were dropped are removed the next
//! time the thread meets a new owner.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A thread's slot for one owner.
pub(crate) trait ThreadSlot: Any + Send + Sync {
    /// The thread is exiting: hand back what the slot holds.
    fn thread_exit(&self);
    /// Whether the owner still exists (dead owners' entries are purged).
    fn owner_alive(&self) -> bool;
}

struct Entry {
    owner: u64,
    ty: TypeId,
    /// Keeps the slot alive; `ptr` points into it.
    slot: Arc<dyn ThreadSlot>,
    ptr: *const (),
}

struct Table(Vec<Entry>);

impl Drop for Table {
    fn drop(&mut self) {
        for e in self.0.drain(..) {
            e.slot.thread_exit();
        }
    }
}

std::thread_local! {
    static TABLE: RefCell<Table> = const { RefCell::new(Table(Vec::new())) };
}

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A fresh owner id (never reused in the process).
pub(crate) fn new_owner_id() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// Runs `f` on this thread's slot of `owner`, creating it with `make` on the
/// thread's first use. `None` when the thread-local table is gone (the
/// thread is exiting) or busy: the caller then takes its slow path.
///
/// The table is not borrowed while `f` runs, so `f` may use other owners'
/// slots. The caller must keep `owner` alive (`owner_alive() == true` for
/// its slot) for the duration of the call.
pub(crate) fn with<S: ThreadSlot, R>(owner: u64, make: impl FnOnce() -> Arc<S>, f: impl FnOnce(&S) -> R) -> Option<R> {
    let ptr = TABLE
        .try_with(|t| {
            // The common case reads the table only (no write of the borrow flag).
            if let Ok(t) = t.try_borrow() {
                if let Some(e) = t.0.iter().find(|e| e.owner == owner) {
                    return (e.ty == TypeId::of::<S>()).then_some(e.ptr as *const S);
                }
            }
            let mut t = t.try_borrow_mut().ok()?;
            if let Some(e) = t.0.iter().find(|e| e.owner == owner) {
                return (e.ty == TypeId::of::<S>()).then_some(e.ptr as *const S);
            }
            t.0.retain(|e| e.slot.owner_alive());
            let slot = make();
            let ptr = Arc::as_ptr(&slot);
            t.0.push(Entry { owner, ty: TypeId::of::<S>(), slot, ptr: ptr as *const () });
            Some(ptr)
        })
        .ok()
        .flatten()?;
    // SAFETY: `ptr` points into the `Arc<S>` held by this thread's table
    // entry (its type checked above). The entry is removed only when the
    // table is dropped (thread exit: not while this thread runs `f`) or when
    // the owner is dead (the caller keeps it alive), so the slot outlives `f`.
    // `S: Sync`, so a shared reference is fine.
    Some(f(unsafe { &*ptr }))
}
