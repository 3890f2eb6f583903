//! Runs a piece of a benchmark with the stack shifted by one of
//! [`OFFSETS`] fixed amounts, so that a figure does not depend on where
//! address-space randomisation happened to put the process's stack.
//!
//! Why: the CPU guesses whether a load depends on an earlier store from the
//! low 12 bits of their addresses. When a stack slot and a heap object a
//! loop touches share those bits, every iteration may pay a false
//! dependency — a few cycles that come and go with the stack's random
//! placement. A comparison measured at one placement can then read a few
//! percent off in either direction (the `gpio` scenario's guard ratio, with
//! ASLR off and the stack moved in 16-byte steps over 4 KiB: 1.0077 at most
//! placements, 0.989–1.035 at a few). Rotating the offset from one
//! interleaved group to the next spreads every comparison over placements.
//!
//! ```
//! use wirespeed_bench::stack_offset::{with_offset, OFFSETS};
//! let depths: Vec<usize> = (0..OFFSETS).map(|k| with_offset(k, || {
//!     let here = 0u8;
//!     std::hint::black_box(&here) as *const u8 as usize
//! })).collect();
//! // Every offset puts the closure's frame somewhere else.
//! let mut distinct = depths.clone();
//! distinct.sort();
//! distinct.dedup();
//! assert_eq!(distinct.len(), OFFSETS);
//! ```

/// How many different stack offsets [`with_offset`] rotates through.
pub const OFFSETS: usize = 16;

/// Runs `f` below a pad of `(k % OFFSETS) × 272` bytes: 272 = 256 + 16, so
/// the 16 offsets differ both in their 256-byte block within a 4 KiB page
/// and in their 16-byte position within it.
pub fn with_offset<R>(k: usize, f: impl FnOnce() -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    let mut call = || out = f.take().map(|f| f());
    let call: &mut dyn FnMut() = &mut call;
    match k % OFFSETS {
        0 => padded::<0>(call),
        1 => padded::<272>(call),
        2 => padded::<544>(call),
        3 => padded::<816>(call),
        4 => padded::<1088>(call),
        5 => padded::<1360>(call),
        6 => padded::<1632>(call),
        7 => padded::<1904>(call),
        8 => padded::<2176>(call),
        9 => padded::<2448>(call),
        10 => padded::<2720>(call),
        11 => padded::<2992>(call),
        12 => padded::<3264>(call),
        13 => padded::<3536>(call),
        14 => padded::<3808>(call),
        _ => padded::<4080>(call),
    }
    out.expect("with_offset runs its closure exactly once")
}

#[inline(never)]
fn padded<const N: usize>(f: &mut dyn FnMut()) {
    let pad = [0u8; N];
    // The pad must exist in this frame, below which `f` runs.
    std::hint::black_box(&pad);
    f();
    std::hint::black_box(&pad);
}
