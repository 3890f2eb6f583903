//! Removal safety for line handles at the cost of one uncontended load.
//!
//! A GPIO chip can go away (a USB expander unplugged, a driver unbound)
//! while other threads use its lines. The 6.9 kernel made that safe by
//! claiming an SRCU read lock around every access: two atomic
//! read-modify-writes and two full barriers per toggle, ~11 % on a Pi 5
//! (seed 002). wirespeed keeps the safety without the tax:
//!
//! **Accessor** (every get/set on a [`LineRequest`](super::LineRequest)),
//! all on its own handle's cache line:
//! 1. `slot.busy = true` (plain store);
//! 2. a *light* fence — a compiler barrier only;
//! 3. load `slot.flags`, the handle's copy of the chip's state (written by
//!    the remover only, so the line stays the accessor's: uncontended);
//!    non-zero means "removing" (or "no membarrier": take the slow path);
//! 4. the access; 5. `slot.busy = false` (release store).
//!
//! The slot shares its cache line with the backend pointer that the access
//! reads anyway, so the guard adds no line to an access's footprint.
//!
//! **Remover** ([`Chip::remove`](super::Chip::remove), or the backend telling
//! the stack its device left): sets `REMOVING` in the chip's state and in
//! every handle's `flags`, issues the *heavy* fence —
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which runs a full barrier
//! on every CPU running this process — then waits until every handle's
//! `busy` is false (acquire loads), and only then frees the backend state.
//! (The chip keeps its list of handles under a lock the remover holds
//! throughout, so no handle appears unmarked half-way through.)
//!
//! Why it is sound: this is Dekker's protocol with an asymmetric fence pair.
//! The membarrier makes every thread's compiler barrier act as a full fence
//! ordered against the remover's, so for each access either the remover
//! sees its `busy = true` (and waits for the release store that ends it), or
//! the access sees `REMOVING` (and fails with `ChipGone` before touching the
//! backend). Where membarrier is unavailable the chip starts with the `HEAVY`
//! bit set and accessors use a real `SeqCst` fence (correct, slower).
//! The loom model (`gpio::loom_model`, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p wirespeed --release gpio_loom`)
//! checks the protocol with both fences as `SeqCst` fences — the guarantee
//! membarrier provides — and loom's `UnsafeCell` tracking proves the freed
//! state is never touched concurrently.
//!
//! A handle's slot has one owner thread at a time (line handles are `Send`
//! but not `Sync`), so the slot is written with plain stores, never a
//! read-modify-write.
//!
//! Two comparison guards exist for the benchmark: [`Interlock`], the 6.9
//! kernel's scheme (a shared reader count, RMW + full barrier in and out),
//! and [`Unguarded`], no protection at all (the downstream patch; requesting
//! it is `unsafe`).

use super::sync::{fence, spin_wait, AtomicBool, AtomicU8, AtomicUsize, Ordering, UnsafeCell};
use crate::asym_fence as asym;

/// `state` bit: removal has begun; every new access fails.
pub(crate) const REMOVING: u8 = 1;
/// `state` bit: no asymmetric fence available; accessors use a full fence.
pub(crate) const HEAVY: u8 = 2;

/// Keeps a value on its own cache line (no false sharing between handles).
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct CachePadded<T>(pub T);

/// The per-chip half of the guard.
#[derive(Debug)]
pub struct RemovalState {
    state: CachePadded<AtomicU8>,
    readers: CachePadded<AtomicUsize>,
}

/// The per-handle half of the [`Revocable`] guard: "this handle is inside
/// an access", and the handle's copy of the chip's state bits.
/// Made only by [`RemovalState::new_slot`], which copies the chip's state
/// bits (a default slot would skip the fence on a system without membarrier).
#[derive(Debug)]
pub struct Slot {
    busy: AtomicBool,
    flags: AtomicU8,
}

impl RemovalState {
    /// State for a new chip, using membarrier if the kernel offers it.
    pub fn new() -> RemovalState {
        RemovalState::with_heavy(!asym::light_is_enough())
    }

    /// State for a new chip; `heavy`: accessors use a full fence.
    pub(crate) fn with_heavy(heavy: bool) -> RemovalState {
        RemovalState {
            state: CachePadded(AtomicU8::new(if heavy { HEAVY } else { 0 })),
            readers: CachePadded(AtomicUsize::new(0)),
        }
    }

    /// A slot for a new handle of this chip, not in an access.
    pub fn new_slot(&self) -> Slot {
        let heavy = self.state.0.load(Ordering::Relaxed) & HEAVY;
        Slot { busy: AtomicBool::new(false), flags: AtomicU8::new(heavy) }
    }

    /// Whether removal has begun.
    pub fn is_removing(&self) -> bool {
        self.state.0.load(Ordering::Acquire) & REMOVING != 0
    }

    /// Removal, step 1: from now on every access through `slots` (every
    /// handle of the chip) fails. Returns false if removal had already begun
    /// (someone else is removing).
    pub fn begin<'a>(&self, slots: impl IntoIterator<Item = &'a Slot>) -> bool {
        let old = self.state.0.fetch_or(REMOVING, Ordering::SeqCst);
        for s in slots {
            s.flags.fetch_or(REMOVING, Ordering::Relaxed);
        }
        asym::heavy();
        old & REMOVING == 0
    }

    /// Removal, step 2: waits until `slot` is not inside an access.
    pub fn drain_slot(&self, slot: &Slot) {
        while slot.busy.load(Ordering::Acquire) {
            spin_wait();
        }
    }

    /// Removal, step 3: waits until no [`Interlock`] reader is inside an access.
    pub fn drain_readers(&self) {
        while self.readers.0.load(Ordering::Acquire) != 0 {
            spin_wait();
        }
    }
}

impl Default for RemovalState {
    fn default() -> Self {
        RemovalState::new()
    }
}

/// A value (a backend's request state) that accessors use between
/// [`AccessGuard::enter`] and [`AccessGuard::exit`], and the remover frees
/// once the chip's accesses are drained.
#[derive(Debug)]
pub struct Guarded<T> {
    cell: UnsafeCell<Option<T>>,
}

// SAFETY: shared access to the inner value happens only inside a guarded
// access (T: Sync makes &T usable from several threads); the one mutation
// (`take_drained`) is ordered after every access by the removal protocol.
unsafe impl<T: Send + Sync> Sync for Guarded<T> {}

impl<T> Guarded<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Guarded<T> {
        Guarded { cell: UnsafeCell::new(Some(value)) }
    }

    /// Runs `f` on the value (`None` once taken).
    ///
    /// # Safety
    /// The caller is inside an access that [`AccessGuard::enter`] admitted on
    /// the chip whose removal frees this value, and has not exited it.
    #[inline]
    pub unsafe fn with<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        // SAFETY: per the contract, no `take_drained` runs concurrently.
        self.cell.with(|p| f(unsafe { (*p).as_ref() }))
    }

    /// Takes the value out (the free of the protected state).
    ///
    /// # Safety
    /// Either removal has begun on the owning chip and every slot that may
    /// access this value was drained since, or the caller owns the only
    /// handle that accesses it and is not inside an access.
    pub unsafe fn take_drained(&self) -> Option<T> {
        // SAFETY: per the contract, no access to the value is in flight or can start.
        self.cell.with_mut(|p| unsafe { (*p).take() })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// How a line handle protects its accesses against chip removal. Sealed:
/// [`Revocable`] (wirespeed's, the default), [`Interlock`], [`Unguarded`].
pub trait AccessGuard: sealed::Sealed + Send + Sync + 'static {
    /// Guard name for reports.
    const NAME: &'static str;
    /// Starts an access; false if the chip is being removed (nothing held then).
    fn enter(slot: &Slot, st: &RemovalState) -> bool;
    /// Ends an access that `enter` admitted.
    fn exit(slot: &Slot, st: &RemovalState);
}

/// Guards whose handles are safe against removal (requesting is safe).
pub trait SoundGuard: AccessGuard {}

/// wirespeed's guard: a plain store to the handle's own slot, a compiler
/// barrier and one load from that same cache line per access (see the
/// module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Revocable;

impl sealed::Sealed for Revocable {}
impl SoundGuard for Revocable {}

impl AccessGuard for Revocable {
    const NAME: &'static str = "wirespeed";

    #[inline(always)]
    fn enter(slot: &Slot, _st: &RemovalState) -> bool {
        slot.busy.store(true, Ordering::Relaxed);
        asym::light();
        let s = slot.flags.load(Ordering::Relaxed);
        if s == 0 {
            return true;
        }
        enter_slow(slot, s)
    }

    #[inline(always)]
    fn exit(slot: &Slot, _st: &RemovalState) {
        slot.busy.store(false, Ordering::Release);
    }
}

#[cold]
#[inline(never)]
fn enter_slow(slot: &Slot, s: u8) -> bool {
    if s & REMOVING == 0 {
        // No asymmetric fence on this system: a full one, then look again.
        fence(Ordering::SeqCst);
        if slot.flags.load(Ordering::Relaxed) & REMOVING == 0 {
            return true;
        }
    }
    slot.busy.store(false, Ordering::Release);
    false
}

/// The 6.9 kernel's scheme, for comparison: every access increments a
/// reader count shared by all handles of the chip (an SRCU-like read-side
/// claim: RMW with a full barrier), checks the chip, and decrements it after.
#[derive(Debug, Clone, Copy, Default)]
pub struct Interlock;

impl sealed::Sealed for Interlock {}
impl SoundGuard for Interlock {}

impl AccessGuard for Interlock {
    const NAME: &'static str = "interlock";

    #[inline(always)]
    fn enter(_slot: &Slot, st: &RemovalState) -> bool {
        // A locked RMW and a SeqCst load: on x86 a `lock xadd` (the full
        // barrier of the kernel's srcu_read_lock) and a plain load.
        st.readers.0.fetch_add(1, Ordering::SeqCst);
        // Loom models SeqCst RMWs and loads as AcqRel (a documented loom
        // limitation), so the ordering the C++ model gives these two
        // SeqCst operations is spelled out as a fence for the model only.
        #[cfg(loom)]
        fence(Ordering::SeqCst);
        if st.state.0.load(Ordering::SeqCst) & REMOVING != 0 {
            st.readers.0.fetch_sub(1, Ordering::Release);
            return false;
        }
        true
    }

    #[inline(always)]
    fn exit(_slot: &Slot, st: &RemovalState) {
        // The second locked RMW (the barrier of srcu_read_unlock).
        st.readers.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// No protection (what the downstream patch of seed 002 went back to):
/// an access racing a removal may touch freed state. Only for measurement;
/// requesting lines with it is `unsafe`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unguarded;

impl sealed::Sealed for Unguarded {}

impl AccessGuard for Unguarded {
    const NAME: &'static str = "none";

    #[inline(always)]
    fn enter(_slot: &Slot, _st: &RemovalState) -> bool {
        true
    }

    #[inline(always)]
    fn exit(_slot: &Slot, _st: &RemovalState) {}
}

/// Whether this process has the asymmetric fence (membarrier), i.e. whether
/// [`Revocable`] costs a compiler barrier (true) or a full fence (false).
pub fn asymmetric_fence_available() -> bool {
    asym::light_is_enough()
}
