//! Checks of the program's pointers before the nodes read or write through
//! them: where the kernel's `copy_from_user`/`copy_to_user` return EFAULT
//! for an address that is not mapped (or not writable), the shim must too,
//! instead of faulting in the program. The probe is `process_vm_readv` /
//! `process_vm_writev` on this process, which fail with EFAULT rather than
//! raising SIGSEGV; permissions are per page, so one byte per page is checked.

use std::ffi::c_void;

/// Pages checked per system call (stack arrays: no allocation per ioctl).
const BATCH: usize = 64;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
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
        libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), count, 0) == remote.len() as isize
            && (!write
                || libc::process_vm_writev(libc::getpid(), &local, 1, remote.as_ptr(), count, 0)
                    == remote.len() as isize)
    }
}

fn check(addr: usize, len: usize, write: bool) -> bool {
    if len == 0 {
        return true;
    }
    let Some(last) = addr.checked_add(len - 1) else { return false };
    if addr == 0 {
        return false;
    }
    let page = page_size();
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
pub(crate) fn readable(addr: usize, len: usize) -> bool {
    check(addr, len, false)
}

/// Whether the program's `len` bytes at `addr` can be written (EFAULT if not).
pub(crate) fn writable(addr: usize, len: usize) -> bool {
    check(addr, len, true)
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
    }
}
