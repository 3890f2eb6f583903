//! Page-aligned host memory for the tests of the IOMMU and the DMA engines.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Zeroed, page-aligned host memory, freed on drop.
pub(crate) struct Pages {
    ptr: *mut u8,
    layout: Layout,
}

impl Pages {
    /// `n` zeroed pages.
    pub fn new(n: usize) -> Pages {
        let layout = Layout::from_size_align(n * 4096, 4096).expect("a page-aligned layout");
        // SAFETY: the layout has a non-zero size for n > 0, which every test asks for.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Pages { ptr, layout }
    }

    /// The memory's physical (= host) address.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` holds `layout.size()` initialized bytes, ours until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
