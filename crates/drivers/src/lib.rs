//! Device drivers, written against the stack's traits only: they never know whether they run on the lab or on Linux.
