//! A per-thread flag set while the shim's own code runs: a C library call
//! the shim makes itself (reading the board file, the lab's image files)
//! goes straight to the C library instead of back into the shim.

use std::cell::Cell;

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside the shim.
pub(crate) fn inside() -> bool {
    INSIDE.with(Cell::get)
}

/// Runs `f` with the flag set; nested calls keep it set.
pub(crate) fn run<R>(f: impl FnOnce() -> R) -> R {
    let was = INSIDE.with(|c| c.replace(true));
    let r = f();
    INSIDE.with(|c| c.set(was));
    r
}
