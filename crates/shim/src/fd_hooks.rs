//! The descriptor calls: `open` and its variants, `fopen`, `close`,
//! `fclose`, `ioctl`, `read`, `write`, `fcntl`, `dup`. A served node's open
//! gives the program a duplicate of the open file's eventfd, registered in
//! the [`table`](crate::table); calls on it go to the file, everything else
//! to the C library untouched.

use crate::guard;
use crate::real::real;
use crate::state::{self, Served};
use crate::table::{self, Entry};
use libc::{c_char, c_int, c_ulong, c_void, mode_t, size_t, ssize_t, FILE};
use std::collections::BTreeSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use wirespeed_labhost::{user_mem, Errno, FdInstaller, NodeFile};

fn set_errno(e: Errno) {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = e };
}

fn fail<T: From<i8>>(e: Errno) -> T {
    set_errno(e);
    T::from(-1)
}

/// A duplicate of `file`'s eventfd at the lowest free number, registered.
fn install(
    file: Arc<dyn NodeFile>,
    entry_of: impl FnOnce(Arc<dyn NodeFile>) -> Entry,
    cloexec: bool,
) -> Result<i32, Errno> {
    let cmd = if cloexec { libc::F_DUPFD_CLOEXEC } else { libc::F_DUPFD };
    let fcntl = real!(fcntl: unsafe extern "C" fn(c_int, c_int, ...) -> c_int);
    // SAFETY: duplicating a descriptor the file owns.
    let fd = unsafe { fcntl(file.readiness().as_raw_fd(), cmd, 0 as c_int) };
    if fd < 0 {
        // SAFETY: errno is this thread's.
        return Err(unsafe { *libc::__errno_location() });
    }
    table::insert(fd, Arc::new(entry_of(file)));
    Ok(fd)
}

/// Installs the files GPIO ioctls create (line requests).
struct Installer<'a> {
    path: &'a Arc<str>,
}

impl FdInstaller for Installer<'_> {
    fn install(&self, file: Arc<dyn NodeFile>, cloexec: bool) -> Result<i32, Errno> {
        let path = Arc::clone(self.path);
        install(file, |file| Entry { file, dev: None, path, nonblocking: Arc::new(AtomicBool::new(false)) }, cloexec)
    }
}

/// Opens a served path; `None` for the C library's.
fn open_served(path: *const c_char, flags: c_int) -> Option<c_int> {
    if guard::inside() {
        return None;
    }
    let served = state::lookup(path)?;
    Some(guard::run(|| match served {
        Served::Node(node) => {
            // SAFETY: `lookup` read it as a NUL-terminated UTF-8 path.
            let shown: Arc<str> = unsafe { std::ffi::CStr::from_ptr(path) }.to_string_lossy().into();
            let dev = node.char_dev();
            let opened = node.open(flags).and_then(|file| {
                let nonblocking = Arc::new(AtomicBool::new(flags & libc::O_NONBLOCK != 0));
                install(
                    file,
                    |file| Entry { file, dev: Some(dev), path: shown, nonblocking },
                    flags & libc::O_CLOEXEC != 0,
                )
            });
            opened.unwrap_or_else(fail)
        }
        Served::File(contents) => {
            if flags & libc::O_ACCMODE != libc::O_RDONLY {
                return fail(libc::EACCES);
            }
            memfd_with(contents, flags & libc::O_CLOEXEC != 0).unwrap_or_else(fail)
        }
        Served::Link(_) | Served::Dir => fail(libc::EISDIR),
        Served::Missing => fail(libc::ENOENT),
    }))
}

/// A sealed-in-spirit memfd holding `contents`, at offset 0.
fn memfd_with(contents: &[u8], cloexec: bool) -> Result<c_int, Errno> {
    let flags = if cloexec { libc::MFD_CLOEXEC } else { 0 };
    // SAFETY: a constant name; the calls below use the new descriptor only.
    unsafe {
        let fd = libc::memfd_create(c"wirespeed-sysfs".as_ptr(), flags);
        if fd < 0 {
            return Err(*libc::__errno_location());
        }
        let written = libc::pwrite(fd, contents.as_ptr().cast(), contents.len(), 0);
        if written != contents.len() as ssize_t {
            let e = *libc::__errno_location();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;

/// `open(2)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires; `mode`
/// is read only when `flags` creates a file.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(open: OpenFn)(path, flags, mode) }
}

/// `open64(2)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires; `mode`
/// is read only when `flags` creates a file.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(open64: OpenFn)(path, flags, mode) }
}

/// `open` as `_FORTIFY_SOURCE` calls it.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(__open_2: unsafe extern "C" fn(*const c_char, c_int) -> c_int)(path, flags) }
}

/// `open64` as `_FORTIFY_SOURCE` calls it.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(__open64_2: unsafe extern "C" fn(*const c_char, c_int) -> c_int)(path, flags) }
}

/// `openat(2)`: served paths are absolute, so `dirfd` does not matter for them.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires;
/// `dirfd` and `mode` are passed on for the paths the shim does not serve.
#[no_mangle]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(openat: OpenatFn)(dirfd, path, flags, mode) }
}

/// `openat64(2)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires;
/// `dirfd` and `mode` are passed on for the paths the shim does not serve.
#[no_mangle]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    if let Some(r) = open_served(path, flags) {
        return r;
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real!(openat64: OpenatFn)(dirfd, path, flags, mode) }
}

/// `fopen(3)` (glibc's opens its file without calling `open`).
///
/// # Safety
///
/// `path` and `mode` are NUL-terminated strings, as for the C library's `fopen`.
#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: the program's arguments.
    unsafe { fopen_any(path, mode, real!(fopen: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE)) }
}

/// `fopen64(3)`.
///
/// # Safety
///
/// `path` and `mode` are NUL-terminated strings, as for the C library's `fopen64`.
#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: the program's arguments.
    unsafe { fopen_any(path, mode, real!(fopen64: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE)) }
}

/// # Safety
/// `path` and `mode` are NUL-terminated (or `path` null).
unsafe fn fopen_any(
    path: *const c_char,
    mode: *const c_char,
    real: unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE,
) -> *mut FILE {
    if !guard::inside() && !mode.is_null() && state::lookup(path).is_some() {
        // SAFETY: `mode` is NUL-terminated.
        let m = unsafe { std::ffi::CStr::from_ptr(mode) }.to_bytes();
        let flags = match (m.first(), m.contains(&b'+')) {
            (Some(b'r'), false) => libc::O_RDONLY,
            (Some(b'r'), true) => libc::O_RDWR,
            (_, false) => libc::O_WRONLY,
            (_, true) => libc::O_RDWR,
        } | if m.contains(&b'e') { libc::O_CLOEXEC } else { 0 };
        if let Some(fd) = open_served(path, flags) {
            if fd < 0 {
                return std::ptr::null_mut();
            }
            // SAFETY: a descriptor just opened for the program.
            let f = unsafe { libc::fdopen(fd, mode) };
            if f.is_null() {
                // SAFETY: as above.
                unsafe { close(fd) };
            }
            return f;
        }
    }
    // SAFETY: the program's arguments, passed on.
    unsafe { real(path, mode) }
}

/// `close(2)`.
///
/// # Safety
///
/// No pointers: any number is accepted, as by the C library's `close`. As with
/// it, closing a descriptor other code in the process still owns (an `OwnedFd`)
/// is the caller's bug.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if !guard::inside() {
        // The open file goes when its last descriptor does (the table holds the Arc).
        guard::run(|| drop(table::remove(fd)));
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(close: unsafe extern "C" fn(c_int) -> c_int)(fd) }
}

/// `fclose(3)`: glibc closes the descriptor without calling `close`.
///
/// # Safety
///
/// `stream` is an open `FILE` from `fopen`/`fdopen` (the C library's or this
/// shim's), not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut FILE) -> c_int {
    if !guard::inside() && !stream.is_null() {
        // SAFETY: the program's stream.
        let fd = unsafe { libc::fileno(stream) };
        guard::run(|| drop(table::remove(fd)));
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(fclose: unsafe extern "C" fn(*mut FILE) -> c_int)(stream) }
}

static UNKNOWN_IOCTLS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// `ioctl(2)`. The request is 32 bits to the kernel, whatever the caller's type.
///
/// # Safety
///
/// `arg` is what the request takes: the integer some requests pass, or a pointer
/// to memory of the size and direction the request number encodes, as the kernel
/// would read or write it.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if !guard::inside() {
        if let Some(entry) = table::get(fd) {
            let request = u64::from(request as u32);
            return guard::run(|| {
                // SAFETY: the program's argument for its request, as the kernel would take it.
                match unsafe { entry.file.ioctl(request, arg, &Installer { path: &entry.path }) } {
                    Ok(v) => v,
                    Err(libc::ENOTTY) => {
                        let first = UNKNOWN_IOCTLS.lock().unwrap_or_else(|e| e.into_inner()).insert(request as u32);
                        if first {
                            state::say(&format!(
                                "ioctl 0x{request:08x} on {} is not served by the lab: ENOTTY",
                                entry.path
                            ));
                        }
                        fail(libc::ENOTTY)
                    }
                    Err(e) => fail(e),
                }
            });
        }
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(ioctl: unsafe extern "C" fn(c_int, c_ulong, ...) -> c_int)(fd, request, arg) }
}

fn read_served(fd: c_int, buf: *mut c_void, count: size_t) -> Option<ssize_t> {
    if guard::inside() {
        return None;
    }
    let entry = table::get(fd)?;
    Some(guard::run(|| {
        let slice: &mut [u8] = if count == 0 || buf.is_null() {
            &mut []
        } else if !user_mem::writable(buf as usize, count) {
            // The kernel's copy_to_user: EFAULT, not a fault in the program.
            return fail(libc::EFAULT);
        } else {
            // SAFETY: the program passes `count` writable bytes at `buf`.
            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), count) }
        };
        match entry.file.read(slice, entry.nonblocking.load(Ordering::Relaxed)) {
            Ok(n) => n as ssize_t,
            Err(e) => fail(e),
        }
    }))
}

/// `read(2)`.
///
/// # Safety
///
/// `buf` is valid for writes of `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    if let Some(r) = read_served(fd, buf, count) {
        return r;
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(read: unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t)(fd, buf, count) }
}

/// `read` as `_FORTIFY_SOURCE` calls it.
///
/// # Safety
///
/// `buf` is valid for writes of `count` bytes (`buflen`, the size the compiler
/// knew, is at least `count` or the C library aborts).
#[no_mangle]
pub unsafe extern "C" fn __read_chk(fd: c_int, buf: *mut c_void, count: size_t, buflen: size_t) -> ssize_t {
    if let Some(r) = read_served(fd, buf, count.min(buflen)) {
        return r;
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe {
        real!(__read_chk: unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t)(fd, buf, count, buflen)
    }
}

/// `write(2)`.
///
/// # Safety
///
/// `buf` is valid for reads of `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    if !guard::inside() {
        if let Some(entry) = table::get(fd) {
            return guard::run(|| {
                let slice: &[u8] = if count == 0 || buf.is_null() {
                    &[]
                } else if !user_mem::readable(buf as usize, count) {
                    return fail(libc::EFAULT);
                } else {
                    // SAFETY: the program passes `count` readable bytes at `buf`.
                    unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) }
                };
                match entry.file.write(slice) {
                    Ok(n) => n as ssize_t,
                    Err(e) => fail(e),
                }
            });
        }
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(write: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t)(fd, buf, count) }
}

/// Keeps the table right for `fcntl` commands that make or change
/// descriptors; the call itself always runs on the real descriptor.
fn fcntl_served(fd: c_int, cmd: c_int, arg: c_ulong, result: c_int) -> c_int {
    if result < 0 || guard::inside() {
        return result;
    }
    let Some(entry) = table::get(fd) else { return result };
    guard::run(|| match cmd {
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            table::insert(result, entry);
            result
        }
        libc::F_SETFL => {
            entry.nonblocking.store(arg as c_int & libc::O_NONBLOCK != 0, Ordering::Relaxed);
            result
        }
        libc::F_GETFL => {
            // The eventfd behind may be non-blocking for the shim's own use.
            let nb = if entry.nonblocking.load(Ordering::Relaxed) { libc::O_NONBLOCK } else { 0 };
            (result & !libc::O_NONBLOCK) | nb
        }
        _ => result,
    })
}

/// `fcntl(2)`.
///
/// # Safety
///
/// `arg` is what `cmd` takes: an integer, or a pointer valid for the struct
/// (`flock`, `f_owner_ex`, ...) that `cmd` reads or writes.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    let r = unsafe { real!(fcntl: unsafe extern "C" fn(c_int, c_int, ...) -> c_int)(fd, cmd, arg) };
    fcntl_served(fd, cmd, arg, r)
}

/// `fcntl64(2)` (glibc 2.28+).
///
/// # Safety
///
/// `arg` is what `cmd` takes: an integer, or a pointer valid for the struct
/// (`flock64`, `f_owner_ex`, ...) that `cmd` reads or writes.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    let r = unsafe { real!(fcntl64: unsafe extern "C" fn(c_int, c_int, ...) -> c_int)(fd, cmd, arg) };
    fcntl_served(fd, cmd, arg, r)
}

fn dup_served(old: c_int, new: c_int) -> c_int {
    if new >= 0 && !guard::inside() {
        guard::run(|| {
            let previous = table::remove(new);
            if let Some(entry) = table::get(old) {
                table::insert(new, entry);
            }
            drop(previous);
        });
    }
    new
}

/// `dup(2)`.
///
/// # Safety
///
/// No pointers: any number is accepted, as by the C library's `dup`.
#[no_mangle]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    let new = unsafe { real!(dup: unsafe extern "C" fn(c_int) -> c_int)(old) };
    dup_served(old, new)
}

/// `dup2(2)`.
///
/// # Safety
///
/// No pointers; as with the C library's `dup2`, `new` is closed first, so it must
/// not be a descriptor other code in the process still owns.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    let r = unsafe { real!(dup2: unsafe extern "C" fn(c_int, c_int) -> c_int)(old, new) };
    if r >= 0 && old != new {
        dup_served(old, r)
    } else {
        r
    }
}

/// `dup3(2)`.
///
/// # Safety
///
/// No pointers; as with the C library's `dup3`, `new` is closed first, so it must
/// not be a descriptor other code in the process still owns.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    let r = unsafe { real!(dup3: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int)(old, new, flags) };
    dup_served(old, r)
}
