//! Counts allocations: of the test thread ([`get`]) and of every thread
//! of the process ([`process`], for work that other threads do, such as the
//! SPI pump's).
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! { static COUNT: Cell<u64> = const { Cell::new(0) }; }
static PROCESS: AtomicU64 = AtomicU64::new(0);

struct Counting;
// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        PROCESS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

pub fn get() -> u64 {
    COUNT.with(Cell::get)
}

/// Allocations of every thread of the process so far (other tests running
/// at the same time count too: compare within one test that runs alone).
#[allow(dead_code)]
pub fn process() -> u64 {
    PROCESS.load(Ordering::Relaxed)
}
