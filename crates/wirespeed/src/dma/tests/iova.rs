//! The IOVA allocators: alignment, exhaustion, refused frees, magazines,
//! depot exchange, thread exit, and a multi-thread no-double-handout stress.

use super::Rng;
use crate::dma::{GlobalLockAllocator, IovaAllocator, MagazineAllocator, MAGAZINE_SIZE, PTE_LINE_PAGES};
use std::collections::HashSet;
use std::sync::Barrier;
use std::sync::{Arc, Mutex};

const P: u64 = 4096;

#[test]
fn global_allocations_are_naturally_aligned_and_exhaust() {
    let a = GlobalLockAllocator::new(P, 33 * P).unwrap(); // pages 1..33: 32 pages
    let x = a.alloc(3).unwrap();
    assert_eq!(x % (4 * P), 0, "3 pages align to 4");
    let y = a.alloc(8).unwrap();
    assert_eq!(y % (8 * P), 0);
    assert_eq!(a.outstanding_pages(), 11);
    assert_eq!(a.alloc(0), None);
    assert_eq!(a.alloc(17), None, "larger than the space");
    let mut singles = Vec::new();
    while let Some(i) = a.alloc(1) {
        singles.push(i);
    }
    assert_eq!(singles.len(), 32 - 11);
    for i in singles {
        a.free(i, 1);
    }
    a.free(x, 3);
    a.free(y, 8);
    assert_eq!(a.outstanding(), 0);
    assert_eq!(a.free_ranges(), 1, "frees coalesce back into one range");
}

#[test]
fn global_refuses_bad_frees_and_changes_nothing() {
    let a = GlobalLockAllocator::new(P, 65 * P).unwrap();
    let x = a.alloc(2).unwrap();
    a.free(x, 2);
    a.free(x, 2); // double free
    a.free(0, 1); // outside
    a.free(x + 1, 1); // misaligned
    a.free(u64::MAX - P + 1, 5); // overflow
    let s = a.stats();
    assert_eq!(s.bad_frees, 4);
    assert_eq!(a.free_ranges(), 1);
    assert_eq!(s.global_outstanding, 0);
    assert!(GlobalLockAllocator::new(0, P).is_err());
    assert!(GlobalLockAllocator::new(P, P).is_err());
    assert!(GlobalLockAllocator::new(P + 1, 4 * P).is_err());
}

#[test]
fn magazines_cache_size_classes_and_use_the_depot() {
    let a = MagazineAllocator::new(1 << 20, 1 << 32).unwrap();
    let x = a.alloc(3).unwrap();
    assert_eq!(x % (4 * P), 0);
    a.free(x, 3);
    assert_eq!(a.alloc(4), Some(x), "3 and 4 pages share the 4-page class: a cache hit");
    a.free(x, 4);
    assert_eq!(a.stats().cache_hits, 1);
    // More than a thread's three magazines' worth of frees go to the depot,
    // and come back (a whole number of PTE-line runs: every fresh IOVA is handed out).
    let n = 4 * MAGAZINE_SIZE + 4;
    assert_eq!(n as u64 % PTE_LINE_PAGES, 0);
    let got: Vec<u64> = (0..n).map(|_| a.alloc(1).unwrap()).collect();
    for &i in &got {
        a.free(i, 1);
    }
    let s = a.stats();
    assert!(s.depot_puts >= 1, "{s:?}");
    assert!(a.depot_magazines() >= 1);
    let again: HashSet<u64> = (0..n).map(|_| a.alloc(1).unwrap()).collect();
    assert_eq!(again, got.iter().copied().collect::<HashSet<_>>(), "all served from the caches");
    let s = a.stats();
    assert!(s.depot_gets >= 1, "{s:?}");
    // The 3-page range took a run of two 4-page ranges (one PTE line).
    assert_eq!(s.global_allocs, 2 + n as u64, "no global allocation the second time");
    for i in again {
        a.free(i, 1);
    }
    // Sizes above 32 pages bypass the caches.
    let big = a.alloc(33).unwrap();
    a.free(big, 33);
    assert_eq!(a.stats().global_frees, 1);
    a.drain_caches();
    assert_eq!(a.global().outstanding(), 0);
    assert_eq!(a.cached(), 0);
}

#[test]
fn a_threads_cache_returns_when_it_exits() {
    let a = Arc::new(MagazineAllocator::new(1 << 20, 1 << 32).unwrap());
    let a2 = a.clone();
    std::thread::spawn(move || {
        let v: Vec<u64> = (0..300).map(|_| a2.alloc(2).unwrap()).collect();
        for i in v {
            a2.free(i, 2);
        }
        assert!(a2.cached() >= 254);
    })
    .join()
    .unwrap();
    // Full magazines went to the depot, the rest to the tree: nothing is
    // left in a dead thread's slot.
    let s = a.stats();
    assert_eq!(s.cached as usize, a.depot_magazines() * MAGAZINE_SIZE, "{s:?}");
    assert_eq!(s.outstanding(), 0);
    assert_eq!(s.cache_frees, 300);
    a.drain_caches();
    assert_eq!(a.global().outstanding(), 0);
}

#[test]
fn exhaustion_reclaims_other_threads_caches() {
    let a = Arc::new(MagazineAllocator::new(64 * P, 128 * P).unwrap()); // 64 pages, one aligned block
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let a2 = a.clone();
    let t = std::thread::spawn(move || {
        let v: Vec<u64> = (0..64).map(|_| a2.alloc(1).unwrap()).collect();
        for i in v {
            a2.free(i, 1); // all cached in this (living) thread's magazines
        }
        done_tx.send(()).unwrap();
        rx.recv().unwrap();
    });
    done_rx.recv().unwrap();
    let big = a.alloc(64);
    assert!(big.is_some(), "drained the other thread's magazines");
    tx.send(()).unwrap();
    t.join().unwrap();
    a.free(big.unwrap(), 64);
    a.drain_caches();
    assert_eq!(a.global().outstanding(), 0);
}

/// Several threads allocate and free random sizes (cached classes and
/// larger) from a small space; even threads mostly allocate, odd ones
/// mostly free what anyone allocated, so IOVAs cross threads through the
/// depot, magazines spill to the tree and the space runs out now and then.
/// A shared set of handed-out pages catches any page handed out twice while
/// outstanding.
fn stress(a: Arc<dyn IovaAllocator>, threads: u64, ops: u64) {
    #[derive(Default)]
    struct Live {
        ranges: Vec<(u64, u64)>,
        pages: HashSet<u64>,
    }
    let live: Arc<Mutex<Live>> = Arc::default();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (a, live) = (a.clone(), live.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                let alloc_weight = if t % 2 == 0 { 3 } else { 1 };
                for _ in 0..ops {
                    let full = live.lock().unwrap().ranges.len() >= 256;
                    if !full && rng.below(4) < alloc_weight {
                        let pages = match rng.below(16) {
                            0 => 33 + rng.below(16),
                            _ => 1 + rng.below(32),
                        };
                        if let Some(iova) = a.alloc(pages) {
                            assert_eq!(iova % (pages.next_power_of_two() * P), 0, "natural alignment");
                            let mut l = live.lock().unwrap();
                            for p in 0..pages {
                                assert!(l.pages.insert(iova / P + p), "page {:#x} handed out twice", iova + p * P);
                            }
                            l.ranges.push((iova, pages));
                        }
                    } else {
                        let mut l = live.lock().unwrap();
                        if l.ranges.is_empty() {
                            continue;
                        }
                        let i = rng.below(l.ranges.len() as u64) as usize;
                        let (iova, pages) = l.ranges.swap_remove(i);
                        for p in 0..pages {
                            l.pages.remove(&(iova / P + p));
                        }
                        drop(l);
                        a.free(iova, pages);
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let rest = std::mem::take(&mut live.lock().unwrap().ranges);
    for (iova, pages) in rest {
        a.free(iova, pages);
    }
}

#[test]
fn magazine_stress_never_hands_out_a_range_twice() {
    let ops = if cfg!(debug_assertions) { 20_000 } else { 200_000 };
    // 65536 pages: room for the 256 live ranges and a few magazines' worth
    // of cached ones, small enough that the caches (the freeing threads'
    // grow) exhaust it now and then, so draining happens too.
    let a = Arc::new(MagazineAllocator::new(1 << 28, (1 << 28) + 65536 * P).unwrap());
    stress(a.clone(), 4, ops);
    let s = a.stats();
    assert!(s.depot_puts > 0 && s.depot_gets > 0, "the depot was exercised: {s:?}");
    assert_eq!(s.bad_frees, 0, "{s:?}");
    assert_eq!(s.outstanding(), 0, "{s:?}");
    a.drain_caches();
    assert_eq!(a.global().outstanding(), 0);
    assert_eq!(a.global().free_ranges(), 1);
}

#[test]
fn magazine_stress_in_a_small_space_drains_and_never_hands_out_twice() {
    let ops = if cfg!(debug_assertions) { 20_000 } else { 200_000 };
    // 4096 pages: the freeing threads' caches exhaust it again and again.
    let a = Arc::new(MagazineAllocator::new(1 << 28, (1 << 28) + 4096 * P).unwrap());
    stress(a.clone(), 4, ops);
    let s = a.stats();
    assert!(s.cache_drains > 0, "exhaustion drained the caches: {s:?}");
    assert_eq!(s.bad_frees, 0, "{s:?}");
    assert_eq!(s.outstanding(), 0, "{s:?}");
    a.drain_caches();
    assert_eq!(a.global().outstanding(), 0);
    assert_eq!(a.global().free_ranges(), 1);
}

#[test]
fn global_stress_never_hands_out_a_range_twice() {
    let ops = if cfg!(debug_assertions) { 10_000 } else { 100_000 };
    let a = Arc::new(GlobalLockAllocator::new(1 << 26, (1 << 26) + 16384 * P).unwrap());
    stress(a.clone(), 4, ops);
    assert_eq!(a.outstanding(), 0);
    assert_eq!(a.free_ranges(), 1);
    assert_eq!(a.stats().bad_frees, 0);
}

/// Two threads take their first IOVAs in turn; each gets one aligned run of
/// a PTE line's pages, so their leaf PTEs never share a cache line. (Taken
/// one by one from the global allocator, their IOVAs would interleave.)
#[test]
fn threads_take_fresh_iovas_in_whole_pte_lines() {
    let a = MagazineAllocator::new(1 << 20, 1 << 32).unwrap();
    let turns = Barrier::new(2);
    let take = |first: bool| {
        let mut got = Vec::new();
        if first {
            got.push(a.alloc(1).unwrap());
        }
        turns.wait();
        if !first {
            got.push(a.alloc(1).unwrap());
        }
        turns.wait();
        while got.len() < PTE_LINE_PAGES as usize {
            got.push(a.alloc(1).unwrap());
        }
        let line = got[0] / (PTE_LINE_PAGES * P);
        assert!(got.iter().all(|i| i / (PTE_LINE_PAGES * P) == line), "{got:x?} spans PTE lines");
        let distinct: HashSet<u64> = got.iter().copied().collect();
        assert_eq!(distinct.len(), got.len());
        line
    };
    let (first, second) = std::thread::scope(|s| {
        let one = s.spawn(|| take(true));
        let two = s.spawn(|| take(false));
        (one.join().unwrap(), two.join().unwrap())
    });
    assert_ne!(first, second, "two threads' IOVAs share a PTE line");
}

/// A thread that cycles a lazy flush queue's worth of IOVAs (256, and one
/// mapping in flight) keeps them: its three magazines hold 381, so the
/// depot is never used (with Linux's two, every cycle trades a magazine).
#[test]
fn a_flush_queues_worth_stays_in_the_thread() {
    let a = MagazineAllocator::new(1 << 20, 1 << 32).unwrap();
    for _ in 0..10 {
        let got: Vec<u64> = (0..257).map(|_| a.alloc(1).unwrap()).collect();
        for i in got {
            a.free(i, 1);
        }
    }
    let s = a.stats();
    assert_eq!((s.depot_gets, s.depot_puts, s.depot_spills), (0, 0, 0), "{s:?}");
}
