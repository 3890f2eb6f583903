//! The C library's own functions, found once with `dlsym(RTLD_NEXT, …)`:
//! what every hook calls for what is not the lab's.

/// The next definition of C function `$name` (the C library's), as a
/// function pointer of type `$ty`. Aborts with a message if there is none.
macro_rules! real {
    ($name:ident : $ty:ty) => {{
        static PTR: ::std::sync::atomic::AtomicUsize = ::std::sync::atomic::AtomicUsize::new(0);
        let mut p = PTR.load(::std::sync::atomic::Ordering::Relaxed);
        if p == 0 {
            p = $crate::real::lookup(concat!(stringify!($name), "\0").as_bytes());
            PTR.store(p, ::std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: `p` is the address of the C library's `$name`, whose C
        // prototype `$ty` spells out.
        #[allow(unused_unsafe)]
        let f = unsafe { ::std::mem::transmute::<usize, $ty>(p) };
        f
    }};
}
pub(crate) use real;

/// The address of the next definition of the NUL-terminated `name`.
pub(crate) fn lookup(name: &[u8]) -> usize {
    // SAFETY: `name` is NUL-terminated.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    if p == 0 {
        let msg = b"wirespeed-shim: a C library function it wraps is missing\n";
        // SAFETY: writing a constant buffer to stderr, then aborting.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::abort();
        }
    }
    p
}
