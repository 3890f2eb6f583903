//! Loom model of the removal guard (the real `guard` code, built on loom's
//! atomics and `UnsafeCell`). Run:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target-loom \
//!     cargo test -p wirespeed --release --lib gpio_loom
//! ```
//!
//! The asymmetric fence pair (compiler barrier + membarrier) is modelled as
//! two `SeqCst` fences, which is the ordering membarrier guarantees. Each
//! model checks, over every interleaving and every weak-memory outcome loom
//! explores: an access never overlaps the free of the guarded state (loom's
//! `UnsafeCell` reports any such race), an access that starts after removal
//! completed is refused, and removal terminates.

use super::guard::{AccessGuard, Guarded, Interlock, RemovalState, Revocable, Slot};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

struct World {
    st: RemovalState,
    slots: [Slot; 2],
    data: Guarded<Box<u32>>,
    removed: AtomicBool,
}

fn world(heavy: bool) -> Arc<World> {
    let st = RemovalState::with_heavy(heavy);
    Arc::new(World {
        slots: [st.new_slot(), st.new_slot()],
        st,
        data: Guarded::new(Box::new(7)),
        removed: AtomicBool::new(false),
    })
}

/// One accessor: `n` accesses on slot `i`.
fn accessor<G: AccessGuard>(w: &World, i: usize, n: usize) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        let removal_completed = w.removed.load(Ordering::SeqCst);
        if G::enter(&w.slots[i], &w.st) {
            assert!(!removal_completed, "an access was admitted after removal completed");
            // SAFETY: inside an admitted access — exactly what the model checks.
            unsafe { w.data.with(|v| assert_eq!(**v.expect("state freed during an access"), 7)) };
            G::exit(&w.slots[i], &w.st);
            ok += 1;
        }
    }
    ok
}

fn remover(w: &World, drain: bool) {
    assert!(w.st.begin(&w.slots));
    if drain {
        for s in &w.slots {
            w.st.drain_slot(s);
        }
        w.st.drain_readers();
    }
    // SAFETY: removal began and (when `drain`) every slot was drained.
    drop(unsafe { w.data.take_drained() });
    w.removed.store(true, Ordering::SeqCst);
}

fn run<G: AccessGuard>(heavy: bool, accessors: usize, accesses: usize, drain: bool) {
    loom::model(move || {
        let w = world(heavy);
        let handles: Vec<_> = (0..accessors)
            .map(|i| {
                let w = w.clone();
                thread::spawn(move || accessor::<G>(&w, i, accesses))
            })
            .collect();
        remover(&w, drain);
        for h in handles {
            h.join().unwrap();
        }
        // After removal nothing is admitted.
        assert!(!G::enter(&w.slots[0], &w.st));
    });
}

#[test]
fn gpio_loom_revocable_one_accessor_two_accesses() {
    run::<Revocable>(false, 1, 2, true);
}

#[test]
fn gpio_loom_revocable_two_accessors() {
    run::<Revocable>(false, 2, 1, true);
}

#[test]
fn gpio_loom_revocable_heavy_mode() {
    run::<Revocable>(true, 1, 2, true);
}

#[test]
fn gpio_loom_interlock() {
    run::<Interlock>(false, 1, 2, true);
}

/// The model has teeth: a remover that frees without draining is caught.
#[test]
#[should_panic]
fn gpio_loom_catches_free_without_drain() {
    run::<Revocable>(false, 1, 1, false);
}
