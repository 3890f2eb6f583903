//! Checks of the program's pointers before the nodes read or write through
//! them: where the kernel's `copy_from_user`/`copy_to_user` return EFAULT
//! for an address that is not mapped (or not writable), the shim must too,
//! instead of faulting in the program. The probe is `process_vm_readv` /
//! `process_vm_writev` on this process, which fail with EFAULT rather than
//! raising SIGSEGV; permissions are per page, so one byte per page is checked.
//!
//! A probe costs microseconds, more than the rest of an emulated ioctl
//! (measured: 6.4 µs an ioctl with a probe at every call, 0.5 µs without),
//! and programs pass the same buffers again and again: so addresses no
//! program can map (below 64 KiB, beyond the user half, a range that wraps)
//! fail without a system call, and each thread remembers the last
//! [`REMEMBERED`] page ranges it probed. A remembered range is not probed
//! again: a program that unmaps or write-protects memory it has already
//! passed to an ioctl, then passes it again, faults in the shim as it would
//! fault on its own access (the kernel would return EFAULT).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Page ranges each thread remembers as probed.
pub const REMEMBERED: usize = 8;

/// The lowest address a program can map (Linux's default `vm.mmap_min_addr`).
const MIN_ADDR: usize = 64 * 1024;

/// One past the highest user address (the lower half of a 64-bit address space).
#[cfg(target_pointer_width = "64")]
const USER_END: usize = 1 << 47;
#[cfg(not(target_pointer_width = "64"))]
const USER_END: usize = usize::MAX;

/// A probed range of pages: first and last page number, and whether it was
/// probed writable.
#[derive(Clone, Copy)]
struct Probed {
    first: usize,
    last: usize,
    write: bool,
}

/// A range that contains no page (`first > last`).
const NONE: Probed = Probed { first: 1, last: 0, write: false };

thread_local! {
    static PROBED: [Cell<Probed>; REMEMBERED] = const { [const { Cell::new(NONE) }; REMEMBERED] };
    static NEXT: Cell<usize> = const { Cell::new(0) };
}

/// Pages checked per system call (stack arrays: no allocation per ioctl).
const BATCH: usize = 64;

fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let known = PAGE.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let p = usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096);
    PAGE.store(p, Ordering::Relaxed);
    p
}

/// Whether this thread probed pages `first..=last` (writable, if `write`) before.
fn remembered(first: usize, last: usize, write: bool) -> bool {
    PROBED
        .with(|ranges| ranges.iter().map(Cell::get).any(|p| p.first <= first && last <= p.last && (p.write || !write)))
}

fn remember(first: usize, last: usize, write: bool) {
    let next = NEXT.with(|n| n.replace((n.get() + 1) % REMEMBERED));
    PROBED.with(|ranges| ranges[next].set(Probed { first, last, write }));
}

/// Reads one byte at each of `remote`'s addresses into `bytes`, then (if
/// `write`) writes them back there; false when any is not accessible.
fn probe(remote: &[libc::iovec], bytes: &mut [u8], write: bool) -> bool {
    let local = libc::iovec { iov_base: bytes.as_mut_ptr().cast::<c_void>(), iov_len: remote.len() };
    let count = remote.len() as libc::c_ulong;
    // SAFETY: `local` is our buffer of `remote.len()` bytes; the remote
    // addresses are checked by the kernel, which returns EFAULT instead of
    // faulting. The bytes written back are those just read there.
    unsafe {
        let pid = libc::getpid();
        libc::process_vm_readv(pid, &local, 1, remote.as_ptr(), count, 0) == remote.len() as isize
            && (!write || libc::process_vm_writev(pid, &local, 1, remote.as_ptr(), count, 0) == remote.len() as isize)
    }
}

fn check(addr: usize, len: usize, write: bool) -> bool {
    if len == 0 {
        return true;
    }
    let Some(last) = addr.checked_add(len - 1) else { return false };
    if addr < MIN_ADDR || last >= USER_END {
        return false;
    }
    let page = page_size();
    let (first_page, last_page) = (addr / page, last / page);
    if remembered(first_page, last_page, write) {
        return true;
    }
    if !probe_pages(addr, last, page, write) {
        return false;
    }
    remember(first_page, last_page, write);
    true
}

/// Probes the first byte of the range and of every later page it touches.
fn probe_pages(addr: usize, last: usize, page: usize, write: bool) -> bool {
    // The first byte, then the first byte of every later page the range touches.
    let mut pages = std::iter::once(addr).chain((addr / page * page + page..=last).step_by(page));
    let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 1 };
    let (mut remote, mut bytes) = ([empty; BATCH], [0u8; BATCH]);
    loop {
        let mut n = 0;
        for (slot, a) in remote.iter_mut().zip(pages.by_ref()) {
            slot.iov_base = a as *mut c_void;
            n += 1;
        }
        if n == 0 {
            return true;
        }
        if !probe(&remote[..n], &mut bytes[..n], write) {
            return false;
        }
    }
}

/// Whether the program's `len` bytes at `addr` can be read (EFAULT if not).
pub fn readable(addr: usize, len: usize) -> bool {
    check(addr, len, false)
}

/// Whether the program's `len` bytes at `addr` can be written (EFAULT if not).
pub fn writable(addr: usize, len: usize) -> bool {
    check(addr, len, true)
}

/// Reads a `T` from the program's ioctl argument (EFAULT if not mapped).
///
/// # Safety
/// `arg` points to `size_of::<T>()` bytes (the ioctl's size field says so,
/// and the program passes that much), and any bytes are a valid `T`.
pub(crate) unsafe fn get<T: Copy>(arg: *mut c_void) -> Result<T, crate::Errno> {
    if !readable(arg as usize, std::mem::size_of::<T>()) {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract (and the memory is mapped, checked
    // above); unaligned, as a user pointer may be.
    Ok(unsafe { std::ptr::read_unaligned(arg.cast::<T>()) })
}

/// Writes a `T` back to the program's ioctl argument (EFAULT if not
/// mapped writable).
///
/// # Safety
/// `arg` points to `size_of::<T>()` bytes the program lets the ioctl write.
pub(crate) unsafe fn put<T: Copy>(arg: *mut c_void, value: T) -> Result<i32, crate::Errno> {
    if !writable(arg as usize, std::mem::size_of::<T>()) {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's contract (the memory is mapped writable, checked
    // above); unaligned, as a user pointer may be.
    unsafe { std::ptr::write_unaligned(arg.cast::<T>(), value) };
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_memory_passes_and_unmapped_or_read_only_memory_does_not() {
        let mut buf = vec![7u8; 3 * page_size() + 5];
        let a = buf.as_mut_ptr() as usize;
        assert!(readable(a, buf.len()) && writable(a, buf.len()));
        assert!(buf.iter().all(|&b| b == 7), "the probe leaves the bytes as they were");
        assert!(!readable(0, 1) && !readable(8, 4) && !writable(8, 4));
        assert!(!readable(usize::MAX - 2, 8), "a range that wraps");
        assert!(readable(0, 0), "nothing to read");
        static RODATA: [u8; 4] = [1, 2, 3, 4];
        let r = RODATA.as_ptr() as usize;
        assert!(readable(r, 4) && !writable(r, 4));
        assert!(!readable(usize::MAX / 2, 4), "beyond the user half: no probe needed");
    }

    #[test]
    fn a_remembered_range_is_not_probed_again_and_a_new_one_is() {
        let page = page_size();
        // SAFETY: a fresh private anonymous mapping of two pages, ours alone.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        let a = m as usize;
        assert!(writable(a, 2 * page));
        // Write-protect the second page: a range already probed writable is
        // remembered (no probe: the documented trade-off), a new one is probed.
        // SAFETY: our mapping.
        assert_eq!(unsafe { libc::mprotect((a + page) as *mut c_void, page, libc::PROT_READ) }, 0);
        assert!(writable(a + page, 4), "remembered from the probe of both pages");
        // Other ranges push it out: the page is probed again, and found read-only.
        let spare: Vec<Vec<u8>> = (0..REMEMBERED).map(|_| vec![0u8; 3 * page]).collect();
        for v in &spare {
            assert!(writable(v.as_ptr() as usize + page, 1));
        }
        assert!(!writable(a + page, 4), "probed again after being forgotten");
        // SAFETY: our mapping, no longer used.
        unsafe { libc::munmap(m, 2 * page) };
    }
}
