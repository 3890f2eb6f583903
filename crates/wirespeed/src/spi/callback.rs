//! The completion callback of an async message, kept inside the queued job
//! so that [`submit_with`](super::SpiDevice::submit_with) allocates nothing.
//!
//! A stream is a callback that reads the message and submits it again, once
//! per message, so boxing every callback would put an allocation on that
//! hot path. A closure of at most [`INLINE_BYTES`] bytes, aligned to at most
//! a machine word (a channel sender and a device handle, say), is stored in
//! the [`Callback`] itself; a larger one is boxed and its box stored instead.
//!
//! ```ignore
//! let cb = Callback::new(move |msg, result| tx.send((msg, result)).unwrap());
//! cb.call(msg, Ok(())); // or drop(cb): the closure is dropped, not called
//! ```

use super::{PreparedMessage, SpiError};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Words of storage a callback has in place.
const WORDS: usize = 6;

/// The largest closure a [`Callback`] holds without a heap allocation.
pub(crate) const INLINE_BYTES: usize = WORDS * size_of::<usize>();

/// What a completion callback is called with.
type Args = (PreparedMessage, Result<(), SpiError>);

/// A `FnOnce(PreparedMessage, Result<(), SpiError>) + Send` closure, stored
/// in place when it fits.
pub(crate) struct Callback {
    /// The closure (or its box), written by [`Callback::new`] and moved out
    /// by `call`, or dropped in place by `drop`: exactly one of the two runs.
    data: MaybeUninit<[usize; WORDS]>,
    call: unsafe fn(*mut u8, Args),
    drop: unsafe fn(*mut u8),
    /// The raw storage would make a `Callback` `Send` and `Sync` whatever it
    /// holds: `new` takes only `Send` closures, and this marker takes `Sync`
    /// away, since a closure need not be `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callback").finish_non_exhaustive()
    }
}

/// Whether `F` fits the storage of a [`Callback`].
const fn fits<F>() -> bool {
    size_of::<F>() <= INLINE_BYTES && align_of::<F>() <= align_of::<usize>()
}

/// Moves the `F` at `p` out and calls it.
///
/// # Safety
/// `p` holds a valid `F` that nothing reads or drops afterwards.
unsafe fn call_in_place<F: FnOnce(PreparedMessage, Result<(), SpiError>)>(p: *mut u8, (msg, r): Args) {
    // SAFETY: by the caller's contract, `p` holds an `F`, read once.
    let f = unsafe { p.cast::<F>().read() };
    f(msg, r);
}

/// Drops the `F` at `p` in place.
///
/// # Safety
/// `p` holds a valid `F` that nothing reads or drops afterwards.
unsafe fn drop_in_place<F>(p: *mut u8) {
    // SAFETY: by the caller's contract.
    unsafe { std::ptr::drop_in_place(p.cast::<F>()) }
}

impl Callback {
    /// Stores `f`, in place if it fits, else boxed.
    pub(crate) fn new<F>(f: F) -> Callback
    where
        F: FnOnce(PreparedMessage, Result<(), SpiError>) + Send + 'static,
    {
        if fits::<F>() {
            Callback::in_place(f)
        } else {
            Callback::in_place(Box::new(f))
        }
    }

    fn in_place<F>(f: F) -> Callback
    where
        F: FnOnce(PreparedMessage, Result<(), SpiError>) + Send + 'static,
    {
        assert!(fits::<F>(), "only closures that fit are stored in place (a box always does)");
        let mut data = MaybeUninit::<[usize; WORDS]>::uninit();
        // SAFETY: the storage is large and aligned enough for `F` (checked above).
        unsafe { data.as_mut_ptr().cast::<F>().write(f) };
        Callback { data, call: call_in_place::<F>, drop: drop_in_place::<F>, _not_sync: PhantomData }
    }

    /// Whether a closure of type `F` is stored without a heap allocation.
    #[cfg(test)]
    pub(crate) fn is_in_place<F>(_: &F) -> bool {
        fits::<F>()
    }

    /// Calls the closure, consuming it.
    pub(crate) fn call(self, msg: PreparedMessage, r: Result<(), SpiError>) {
        // The closure moves out in `call`: `Drop` must not run on it again.
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `new` wrote an `F` matching `call`; `me` is never used again.
        unsafe { (me.call)(me.data.as_mut_ptr().cast(), (msg, r)) }
    }
}

impl Drop for Callback {
    fn drop(&mut self) {
        // SAFETY: `new` wrote an `F` matching `drop`; `call` (which would
        // have moved it out) did not run, or this would not.
        unsafe { (self.drop)(self.data.as_mut_ptr().cast()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::controller::test_caps;
    use crate::spi::{DeviceConfig, OwnedTransfer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn message(tx: u8) -> PreparedMessage {
        PreparedMessage::new(
            7,
            vec![OwnedTransfer::write(vec![tx])],
            &DeviceConfig::new(0, 1_000_000),
            &test_caps(),
            None,
        )
        .unwrap()
    }

    /// Counts its drops; its closure's captures are what is dropped.
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What a callback of [`counted_callback`] saw: the TX byte and whether
    /// the result was Ok.
    type Seen = Arc<std::sync::Mutex<Option<(u8, bool)>>>;

    /// Builds a callback capturing a `Counted` and `pad` (to choose in
    /// place or boxed); the callback records the TX byte it was given.
    fn counted_callback<P: Send + 'static>(pad: P) -> (Callback, bool, Arc<AtomicUsize>, Seen) {
        let drops = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(None));
        let (counted, out) = (Counted(drops.clone()), seen.clone());
        let f = move |mut m: PreparedMessage, r: Result<(), SpiError>| {
            let _keep = (&counted, &pad);
            *out.lock().unwrap() = Some((m.tx_mut(0).unwrap()[0], r.is_ok()));
        };
        let in_place = Callback::is_in_place(&f);
        (Callback::new(f), in_place, drops, seen)
    }

    #[test]
    fn the_documented_inline_size_holds() {
        // `SpiDevice::submit_with` promises 48 bytes on 64-bit targets.
        if size_of::<usize>() == 8 {
            assert_eq!(INLINE_BYTES, 48);
        }
        let (dev, tx) = (size_of::<crate::spi::SpiDevice>(), size_of::<std::sync::mpsc::SyncSender<PreparedMessage>>());
        assert!(dev + tx + size_of::<u32>() <= INLINE_BYTES, "device {dev} + sender {tx} + a count must fit");
    }

    #[test]
    fn small_closures_are_stored_in_place_and_large_ones_boxed() {
        let (_, small, ..) = counted_callback(());
        let (_, large, ..) = counted_callback([0u8; INLINE_BYTES]);
        let (_, over_aligned, ..) = counted_callback(0u128);
        assert!(small, "a closure of two Arcs must fit in {INLINE_BYTES} bytes");
        assert!(!large, "a closure larger than the storage must be boxed");
        assert_eq!(over_aligned, align_of::<u128>() <= align_of::<usize>(), "alignment decides too");
    }

    fn called_once<P: Send + 'static>(pad: P) {
        let (cb, in_place, drops, seen) = counted_callback(pad);
        cb.call(message(0x5A), Err(SpiError::BusGone));
        assert_eq!(*seen.lock().unwrap(), Some((0x5A, false)), "in place: {in_place}");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "captures dropped once after the call (in place: {in_place})");
    }

    #[test]
    fn a_called_closure_gets_its_arguments_and_its_captures_are_dropped_once() {
        called_once(());
        called_once([1u8; INLINE_BYTES]);
    }

    fn dropped_uncalled<P: Send + 'static>(pad: P) {
        let (cb, in_place, drops, seen) = counted_callback(pad);
        // Moved around as a queued job is.
        let moved = vec![cb];
        drop(moved);
        assert_eq!(*seen.lock().unwrap(), None, "in place: {in_place}");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "in place: {in_place}");
    }

    #[test]
    fn a_closure_dropped_uncalled_drops_its_captures_once_and_never_runs() {
        dropped_uncalled(());
        dropped_uncalled([1u8; INLINE_BYTES]);
    }

    #[test]
    fn a_panicking_closure_drops_its_captures_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = Counted(drops.clone());
        let cb = Callback::new(move |_, _| {
            let _keep = &counted;
            panic!("a callback panics (expected by this test)");
        });
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb.call(message(1), Ok(()))));
        assert!(r.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
