//! The asymmetric fence pair: a *light* fence for the side that runs all
//! the time (a compiler barrier) and a *heavy* fence for the side that runs
//! rarely (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: a full barrier on
//! every CPU running this process). Together they order a store before a
//! load on both sides, as two `SeqCst` fences would (Dekker's protocol),
//! while the frequent side pays no locked instruction.
//!
//! Users: the GPIO removal guard (`gpio/guard.rs`) and the DMA layer's
//! per-thread slot lock (`dma/slot_lock.rs`). Where membarrier is not
//! available ([`light_is_enough`] is false) the frequent side must use a
//! real `SeqCst` fence instead of [`light`]; [`heavy`] is then a local fence.
//! Under `--cfg loom` both are loom `SeqCst` fences: the guarantee
//! membarrier gives, which the users' loom models check their protocols against.

/// Under loom the pair is always the two SeqCst fences.
#[cfg(loom)]
pub(crate) fn light_is_enough() -> bool {
    true
}

/// The frequent side. Under loom: a SeqCst fence (what membarrier guarantees).
#[cfg(loom)]
#[inline(always)]
pub(crate) fn light() {
    loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
}

/// The rare side. Under loom: a SeqCst fence.
#[cfg(loom)]
pub(crate) fn heavy() {
    loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
}

#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, fence, Ordering};
#[cfg(not(loom))]
use std::sync::OnceLock;

#[cfg(not(loom))]
const MEMBARRIER_CMD_QUERY: libc::c_long = 0;
#[cfg(not(loom))]
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
#[cfg(not(loom))]
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

#[cfg(not(loom))]
fn membarrier(cmd: libc::c_long) -> libc::c_long {
    // SAFETY: membarrier takes plain integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_long, 0 as libc::c_long) }
}

/// Whether this process registered for private expedited membarrier
/// (once; the answer never changes afterwards).
#[cfg(not(loom))]
pub(crate) fn light_is_enough() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        let cmds = membarrier(MEMBARRIER_CMD_QUERY);
        cmds >= 0
            && cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED != 0
            && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    })
}

/// The frequent side: a compiler barrier (the CPU barrier is the rare side's membarrier).
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn light() {
    compiler_fence(Ordering::SeqCst);
}

/// The rare side: a full barrier on every CPU running this process.
/// Without membarrier, a local full fence: enough only when the frequent
/// side uses a full fence too (its users check [`light_is_enough`]).
#[cfg(not(loom))]
pub(crate) fn heavy() {
    fence(Ordering::SeqCst);
    if light_is_enough() {
        let r = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
        // Registration succeeded, so the command cannot fail (EINTR is not a
        // membarrier error); should it ever, nothing safe remains to do.
        assert_eq!(r, 0, "membarrier failed after successful registration");
    }
}
