//! [`DmaBuffer`]: page-aligned, zeroed, anonymous memory for DMA, locked in
//! RAM when the system allows it.
//!
//! The memory is reference-counted inside (one count per live mapping): if
//! the buffer is dropped while a mapping of it still exists (a leaked
//! [`Mapping`](super::Mapping), or a lazy unmap whose IOTLB flush has not
//! happened yet), the memory is released only after the last of them, so a
//! device can never reach memory that was returned to the system.

use super::error::DmaError;
use super::PAGE_SIZE;
use std::ptr::NonNull;
use std::sync::Arc;

/// The mmap'ed memory of a [`DmaBuffer`]; munmap'ed when the last reference goes.
#[derive(Debug)]
pub(crate) struct Region {
    ptr: NonNull<u8>,
    map_len: usize,
    locked: bool,
}

// SAFETY: the region is plain memory owned by this value; access to its bytes
// is governed by the `DmaBuffer` borrows (`&`/`&mut`), never through `Region`.
unsafe impl Send for Region {}
// SAFETY: as above; `Region` itself exposes no access to the bytes.
unsafe impl Sync for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`map_len` are exactly what mmap returned; nobody refers
        // to the memory any more (this is the last reference).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.map_len) };
    }
}

/// Page-aligned, page-multiple, zeroed anonymous memory for DMA.
///
/// - Allocated with `mmap` (so it starts on a page and is zeroed), then
///   `mlock`ed best effort: [`is_locked`](DmaBuffer::is_locked) says whether
///   that worked (it needs `RLIMIT_MEMLOCK` room or `CAP_IPC_LOCK`); a failed
///   `mlock` never fails the allocation.
/// - [`len`](DmaBuffer::len) is the length asked for; the memory behind it is
///   rounded up to whole pages ([`capacity`](DmaBuffer::capacity)).
/// - [`phys`](DmaBuffer::phys) is the address a mapping starts from. **On the
///   lab, a physical address is the host (virtual) address**, which is what
///   `phys` returns. On Linux without an IOMMU driver for the device (VFIO), a
///   user process has no bus addresses at all: the value is only meaningful to
///   the lab's DMA engines.
/// - Freed (`munmap`) on drop, or after the last mapping of it ended if one
///   outlives it.
#[derive(Debug)]
pub struct DmaBuffer {
    region: Arc<Region>,
    len: usize,
}

impl DmaBuffer {
    /// The largest buffer: 1 GiB.
    pub const MAX_LEN: usize = 1 << 30;

    /// A zeroed buffer of `len` bytes (1..=[`MAX_LEN`](DmaBuffer::MAX_LEN)).
    pub fn new(len: usize) -> Result<DmaBuffer, DmaError> {
        if len == 0 {
            return Err(DmaError::ZeroLength);
        }
        if len > Self::MAX_LEN {
            return Err(DmaError::BufferTooLarge { len, max: Self::MAX_LEN });
        }
        let map_len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        // SAFETY: an anonymous private mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(DmaError::OutOfMemory { len: map_len, errno });
        }
        let Some(ptr) = NonNull::new(p.cast::<u8>()) else {
            return Err(DmaError::OutOfMemory { len: map_len, errno: 0 });
        };
        // SAFETY: the range was just mapped by us.
        let locked = unsafe { libc::mlock(p, map_len) } == 0;
        Ok(DmaBuffer { region: Arc::new(Region { ptr, map_len, locked }), len })
    }

    /// The length asked for, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a buffer has at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes of memory behind the buffer (`len` rounded up to pages).
    pub fn capacity(&self) -> usize {
        self.region.map_len
    }

    /// Whether `mlock` succeeded (the pages cannot be swapped out).
    pub fn is_locked(&self) -> bool {
        self.region.locked
    }

    /// The address of the first byte: on the lab, the physical address (see
    /// the type's docs). Page-aligned.
    pub fn phys(&self) -> u64 {
        self.region.ptr.as_ptr() as u64
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len <= map_len` bytes of live memory owned by the region;
        // `&self` excludes `&mut` access, and no mapping exists while `&self`
        // is available to safe code (a `Mapping` borrows the buffer mutably).
        unsafe { std::slice::from_raw_parts(self.region.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.region.ptr.as_ptr(), self.len) }
    }

    /// A reference on the memory, held by mappings (and lazy flush-queue
    /// entries) so the memory outlives any device access.
    pub(crate) fn region(&self) -> &Arc<Region> {
        &self.region
    }
}
