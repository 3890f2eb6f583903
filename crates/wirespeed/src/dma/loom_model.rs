//! Loom models of the magazine/depot exchange: the real `ClassCache`,
//! `Depot` and `GlobalLockAllocator`, on loom's mutexes (see `sync.rs`),
//! with magazines of 2 entries so that a handful of operations crosses the
//! depot. The per-thread slot lookup (`per_thread.rs`) is std thread-local
//! code outside the model: each model thread owns its `ClassCache`, as a
//! thread owns its slot. Run:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p wirespeed --release --lib dma_loom
//! ```
//!
//! Each model ends by returning every IOVA to the global allocator: one
//! handed out twice would be refused there as a double free (`bad_frees`),
//! one lost would stay outstanding; the space must coalesce back to one range.

use super::iova::{ClassCache, Depot, GlobalLockAllocator, IovaAllocator};
use crate::sync::{thread, Arc};

const P: u64 = 4096;

/// A cache (magazines of 2) whose `loaded`, `prev` and `spare` are all full.
fn full_cache(global: &GlobalLockAllocator, depot: &Depot) -> ClassCache {
    let mut c = ClassCache::new(1, 2);
    for _ in 0..6 {
        let iova = global.alloc(1).expect("space for the setup");
        c.free(iova, depot, global);
    }
    c
}

/// Everything back into `global`, then: nothing lost, nothing duplicated.
fn assert_conserved(global: &GlobalLockAllocator, depot: &Depot, caches: &mut [ClassCache], held: &[u64]) {
    for c in caches.iter_mut() {
        c.flush(global);
    }
    let mut mags = depot.take_full();
    global.free_batch(mags.iter_mut().flat_map(|m| m.take_all().map(|i| (i, 1))));
    global.free_batch(held.iter().map(|&i| (i, 1)));
    let s = global.stats();
    assert_eq!(s.bad_frees, 0, "an IOVA was handed out twice");
    assert_eq!(global.outstanding(), 0, "an IOVA was lost");
    assert_eq!(global.free_ranges(), 1);
}

/// A full magazine goes into the depot on one thread while another thread
/// with empty magazines allocates (from the depot or the global tree).
#[test]
fn dma_loom_depot_hands_a_full_magazine_to_another_thread() {
    loom::model(|| {
        let global = Arc::new(GlobalLockAllocator::new(P, 11 * P).unwrap());
        let depot = Arc::new(Depot::new(1));
        let mut a = full_cache(&global, &depot);
        let extra = global.alloc(1).unwrap();
        let (g, d) = (global.clone(), depot.clone());
        let ta = thread::spawn(move || {
            a.free(extra, &d, &g); // every magazine full: loaded goes to the depot
            a
        });
        let (g, d) = (global.clone(), depot.clone());
        let tb = thread::spawn(move || {
            let mut b = ClassCache::new(1, 2);
            let x = b.alloc(&d).or_else(|| g.alloc(1)).unwrap();
            let y = b.alloc(&d).or_else(|| g.alloc(1)).unwrap();
            assert_ne!(x, y);
            (b, [x, y])
        });
        let a = ta.join().unwrap();
        let (b, held) = tb.join().unwrap();
        assert_conserved(&global, &depot, &mut [a, b], &held);
    });
}

/// Two threads push full magazines into a depot with room for one: one
/// fits, the other's entries spill to the global tree; nothing is lost.
#[test]
fn dma_loom_depot_bounded_push_spills_without_loss() {
    loom::model(|| {
        let global = Arc::new(GlobalLockAllocator::new(P, 17 * P).unwrap());
        let depot = Arc::new(Depot::new(1));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let mut c = full_cache(&global, &depot);
                let extra = global.alloc(1).unwrap();
                let (g, d) = (global.clone(), depot.clone());
                thread::spawn(move || {
                    c.free(extra, &d, &g);
                    c
                })
            })
            .collect();
        let mut caches: Vec<ClassCache> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let c = caches.iter().map(|c| c.counts).fold((0, 0), |acc, k| (acc.0 + k.depot_puts, acc.1 + k.depot_spills));
        assert_eq!(c, (1, 1), "one magazine fits the depot, the other spills");
        assert_conserved(&global, &depot, &mut caches, &[]);
    });
}

/// Two threads with empty magazines race for the depot's one full
/// magazine: one gets it, the other falls back to the tree; all IOVAs distinct.
#[test]
fn dma_loom_depot_one_full_magazine_two_takers() {
    loom::model(|| {
        let global = Arc::new(GlobalLockAllocator::new(P, 9 * P).unwrap());
        let depot = Arc::new(Depot::new(1));
        let mut setup = full_cache(&global, &depot);
        let extra = global.alloc(1).unwrap();
        setup.free(extra, &depot, &global); // one full magazine now in the depot
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (g, d) = (global.clone(), depot.clone());
                thread::spawn(move || {
                    let mut c = ClassCache::new(1, 2);
                    let x = c.alloc(&d).or_else(|| g.alloc(1)).unwrap();
                    (c, x)
                })
            })
            .collect();
        let (mut caches, held): (Vec<ClassCache>, Vec<u64>) = handles.into_iter().map(|h| h.join().unwrap()).unzip();
        assert_ne!(held[0], held[1]);
        let gets: u64 = caches.iter().map(|c| c.counts.depot_gets).sum();
        assert_eq!(gets, 1, "exactly one thread took the magazine");
        caches.push(setup);
        assert_conserved(&global, &depot, &mut caches, &held);
    });
}
