//! Spreads a comparison over several memory placements, so that a figure
//! does not hang on where the stack or the code of one variant happened to
//! land.
//!
//! Why: a CPU guesses whether a load depends on an earlier store from the
//! low 12 bits of their addresses, and indexes its branch predictors and
//! micro-op cache by code address bits. Two variants of a loop that differ
//! by a few instructions can then differ by a percent or two for reasons
//! that come and go with the stack's random placement (ASLR) or with an
//! unrelated change elsewhere in the binary that shifts the code. Measured
//! on the `gpio` scenario's guard ratio, 2-core test VM:
//! - stack: with ASLR off and the stack moved in 16-byte steps over 4 KiB,
//!   256 runs read 1.0077 at the median but 0.989–1.035 at the extremes;
//! - code: a "guard" that was one `nop` read 0.985–1.000 against the
//!   unguarded loop in one build: the unguarded copy sat at an unlucky
//!   address;
//! - heap: with stack and code rotated, one build still read 0.979–1.006
//!   from one process to the next within ten minutes: the objects the loop
//!   touches (the lab chip's line, its pin, the probe) are allocated once
//!   per process, so their addresses relative to the ones the variants
//!   differ in (the handle's slot) were one draw per run.
//!
//! So a benchmark rotates, from one interleaved group of variants to the
//! next, the stack offset ([`with_offset`]: the group runs below a pad of
//! one of [`OFFSETS`] sizes), the copy of its hot loop ([`code_pad`]:
//! each of [`CODE_COPIES`] copies starts at a different address) and the
//! set of long-lived objects it works on ([`spaced`]: [`HEAP_PLACEMENTS`]
//! sets, each allocated behind a spacer of a different size), the same
//! for every variant of a group.
//!
//! ```
//! use wirespeed_bench::placement::{with_offset, OFFSETS};
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
/// the offsets differ both in their 256-byte block within a 4 KiB page and
/// in their 16-byte position within it.
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

/// How many sets of long-lived objects a benchmark rotates through (see
/// [`spaced`]). Prime, so that cycling it beside [`OFFSETS`] and a
/// three-way order goes through every combination.
pub const HEAP_PLACEMENTS: usize = 7;

/// A value built right after a spacer allocation, kept alive with it.
#[derive(Debug)]
pub struct Spaced<T> {
    /// The value.
    pub value: T,
    _spacer: Vec<u8>,
}

/// Builds `make()` behind a live spacer of `(k % HEAP_PLACEMENTS) × 528 + 16`
/// bytes (528 = 512 + 16), so that the objects `make` allocates land at
/// another offset within a 4 KiB page than those of another `k` (with an
/// allocator that carves fresh memory in order, as glibc's does for
/// objects allocated once at start-up).
pub fn spaced<T>(k: usize, make: impl FnOnce() -> T) -> Spaced<T> {
    let spacer = std::hint::black_box(vec![0u8; (k % HEAP_PLACEMENTS) * 528 + 16]);
    Spaced { value: make(), _spacer: spacer }
}

/// How many copies of a hot loop a benchmark keeps (see [`code_pad`]).
pub const CODE_COPIES: usize = 8;

/// Put first in a `#[inline(never)]` function generic over `const C:
/// usize`: `C × 80` bytes of padding, jumped over, so that the code after
/// it sits at a different address in each copy (80 = 64 + 16: the copies
/// differ in their 16-byte position within a cache line and in the line).
/// Distinct code also keeps the compiler from merging the copies. Costs one
/// taken jump per call. Pads only on x86-64 and AArch64.
#[inline(always)]
pub fn code_pad<const C: usize>() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a jump over bytes that are never executed; no memory, stack
    // or flags touched.
    unsafe {
        std::arch::asm!("jmp 2f", ".skip {n}, 0xcc", "2:", n = const C * 80, options(nomem, nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above (0 bytes are never executed).
    unsafe {
        std::arch::asm!("b 2f", ".skip {n}", "2:", n = const C * 80, options(nomem, nostack, preserves_flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn after_pad<const C: usize>() -> u32 {
        code_pad::<C>();
        std::hint::black_box(7)
    }

    type Boxes = Vec<Spaced<Box<[u8; 1000]>>>;

    /// `HEAP_PLACEMENTS` boxes built with placement `k(i)`, kept alive by
    /// the caller (freed boxes would be handed out again, last freed first,
    /// to the next set), and their addresses.
    fn boxes(k: impl Fn(usize) -> usize) -> (Boxes, Vec<usize>) {
        let mut sets = Vec::with_capacity(HEAP_PLACEMENTS);
        for i in 0..HEAP_PLACEMENTS {
            sets.push(spaced(k(i), || Box::new([0u8; 1000])));
        }
        let addresses = sets.iter().map(|s| &*s.value as *const [u8; 1000] as usize).collect();
        (sets, addresses)
    }

    /// Run by [`spaced_values_spread_over_more_page_offsets_than_same_spacers`]
    /// in a fresh process: a benchmark places its rigs at start-up, on a
    /// heap nothing has fragmented yet, which a test thread of a running
    /// suite cannot have.
    #[test]
    #[ignore = "run by spaced_values_spread_over_more_page_offsets_than_same_spacers in a child process"]
    fn print_box_addresses() {
        let (_same_sets, same) = boxes(|_| 0);
        let (_rotated_sets, rotated) = boxes(|i| i);
        println!("SAME {same:?}");
        println!("ROTATED {rotated:?}");
    }

    #[test]
    fn spaced_values_spread_over_more_page_offsets_than_same_spacers() {
        let exe = std::env::current_exe().expect("the test binary's path");
        let out = std::process::Command::new(exe)
            .args(["placement::tests::print_box_addresses", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .output()
            .expect("running the test binary again");
        let text = String::from_utf8_lossy(&out.stdout);
        let list = |tag: &str| -> Vec<usize> {
            let line = text
                .lines()
                .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
                .unwrap_or_else(|| panic!("no {tag} in {text}"));
            line.trim_matches(|c| c == ' ' || c == '[' || c == ']').split(", ").map(|n| n.parse().unwrap()).collect()
        };
        let (same, rotated) = (list("SAME "), list("ROTATED "));
        let span = |a: &[usize]| a.iter().max().unwrap() - a.iter().min().unwrap();
        // The spacers add 528 × (0 + 1 + … + 6) bytes between the first
        // and the last box.
        assert!(span(&rotated) >= span(&same) + 8 * 1024, "same spacers {same:x?}, rotated {rotated:x?}");
        let mut offsets: Vec<usize> = rotated.iter().map(|a| a % 4096).collect();
        offsets.sort();
        offsets.dedup();
        assert_eq!(offsets.len(), HEAP_PLACEMENTS, "page offsets {offsets:?}");
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn code_copies_are_distinct_functions_that_run() {
        let copies: [fn() -> u32; 4] = [after_pad::<0>, after_pad::<1>, after_pad::<2>, after_pad::<7>];
        assert!(copies.iter().all(|f| f() == 7), "the padding is jumped over");
        let mut addrs: Vec<usize> = copies.iter().map(|&f| f as *const () as usize).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 4, "padded copies must not be merged into one function");
    }
}
