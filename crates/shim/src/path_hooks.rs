//! Path queries programs make before they open a node: `access` (libgpiod
//! 1.6 checks the sysfs `dev` file), `realpath` (libgpiod 2.x resolves
//! `/sys/dev/char/M:m/subsystem`; glibc resolves links with internal calls
//! no preload can see, so the answer is given here), and `scandir` of
//! `/dev` (how `gpiodetect` finds chips), which gains the served nodes.
//! `opendir`/`readdir` of `/dev` (`ls /dev`, Python's `os.listdir`) are not
//! served: they show the host's `/dev`.

use crate::guard;
use crate::real::real;
use crate::state::{self, Served};
use libc::{c_char, c_int, c_void, dirent, size_t};
use std::ffi::CStr;

fn set_errno(e: i32) -> c_int {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = e };
    -1
}

fn access_served(path: *const c_char, mode: c_int) -> Option<c_int> {
    if guard::inside() {
        return None;
    }
    guard::run(|| match state::lookup(path)? {
        Served::Missing => Some(set_errno(libc::ENOENT)),
        Served::File(_) | Served::Link(_) | Served::Dir if mode & libc::W_OK != 0 => Some(set_errno(libc::EACCES)),
        _ => Some(0),
    })
}

/// `access(2)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires.
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    if let Some(r) = access_served(path, mode) {
        return r;
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(access: unsafe extern "C" fn(*const c_char, c_int) -> c_int)(path, mode) }
}

/// `faccessat(2)`: served paths are absolute.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires.
#[no_mangle]
pub unsafe extern "C" fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    if let Some(r) = access_served(path, mode) {
        return r;
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe {
        real!(faccessat: unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int)(dirfd, path, mode, flags)
    }
}

/// `euidaccess(3)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires.
#[no_mangle]
pub unsafe extern "C" fn euidaccess(path: *const c_char, mode: c_int) -> c_int {
    if let Some(r) = access_served(path, mode) {
        return r;
    }
    // SAFETY: the C library's own function with the caller's arguments, under
    // the same contract (this function's `# Safety`).
    unsafe { real!(euidaccess: unsafe extern "C" fn(*const c_char, c_int) -> c_int)(path, mode) }
}

/// The canonical form of a served path: a link's target, else the path.
fn resolved(path: *const c_char) -> Option<Result<Vec<u8>, i32>> {
    if guard::inside() {
        return None;
    }
    guard::run(|| {
        let served = state::lookup(path)?;
        Some(match served {
            Served::Missing => Err(libc::ENOENT),
            Served::Link(target) => Ok(target.as_bytes().to_vec()),
            // SAFETY: `lookup` read it as NUL-terminated.
            _ => Ok(unsafe { CStr::from_ptr(path) }.to_bytes().to_vec()),
        })
    })
}

/// Copies `path` into `out` (`PATH_MAX` bytes) or into a `malloc`ed buffer
/// the caller frees.
fn give(path: &[u8], out: *mut c_char) -> *mut c_char {
    let buf = if out.is_null() {
        // SAFETY: a plain allocation the program frees with free().
        let p = unsafe { libc::malloc(path.len() + 1) }.cast::<c_char>();
        if p.is_null() {
            set_errno(libc::ENOMEM);
            return p;
        }
        p
    } else if path.len() >= libc::PATH_MAX as usize {
        set_errno(libc::ENAMETOOLONG);
        return std::ptr::null_mut();
    } else {
        out
    };
    // SAFETY: `buf` has room for the path and its NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(path.as_ptr().cast::<c_char>(), buf, path.len());
        *buf.add(path.len()) = 0;
    }
    buf
}

/// `realpath(3)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires; `out`
/// is null (the result
/// is then `malloc`ed, for the caller to `free`) or valid for writes of
/// `PATH_MAX` bytes.
#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, out: *mut c_char) -> *mut c_char {
    match resolved(path) {
        Some(Ok(p)) => give(&p, out),
        Some(Err(e)) => {
            set_errno(e);
            std::ptr::null_mut()
        }
        // SAFETY: the C library's own function with the caller's arguments, under
        // the same contract (this function's `# Safety`).
        None => unsafe { real!(realpath: unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut c_char)(path, out) },
    }
}

/// `realpath` as `_FORTIFY_SOURCE` calls it.
///
/// # Safety
///
/// As for [`realpath`]: `path` is NUL-terminated and `out` is null or valid for
/// writes of `PATH_MAX` bytes (`outlen` is the size the compiler knew).
#[no_mangle]
pub unsafe extern "C" fn __realpath_chk(path: *const c_char, out: *mut c_char, outlen: size_t) -> *mut c_char {
    // SAFETY: the fortified check only guards `out`'s size, which `give` respects (PATH_MAX).
    let _ = outlen;
    // SAFETY: the caller's arguments, with `realpath`'s contract (this function's own).
    unsafe { realpath(path, out) }
}

/// `canonicalize_file_name(3)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string, as the C library's function requires; the result is
/// `malloc`ed, for the caller to `free`.
#[no_mangle]
pub unsafe extern "C" fn canonicalize_file_name(path: *const c_char) -> *mut c_char {
    // SAFETY: the same call with a malloc'ed result.
    unsafe { realpath(path, std::ptr::null_mut()) }
}

type Filter = Option<unsafe extern "C" fn(*const dirent) -> c_int>;
type Compar = Option<unsafe extern "C" fn(*mut *const dirent, *mut *const dirent) -> c_int>;
type ScandirFn = unsafe extern "C" fn(*const c_char, *mut *mut *mut dirent, Filter, Compar) -> c_int;

/// `scandir(3)` of `/dev` lists the served nodes too (once, in order).
///
/// # Safety
///
/// As for the C library's `scandir`: `dir` is a NUL-terminated string, `list` is
/// valid for a write of one pointer, and `filter` and `compar` are `None` or
/// functions safe to call with the `dirent`s listed.
#[no_mangle]
pub unsafe extern "C" fn scandir(
    dir: *const c_char,
    list: *mut *mut *mut dirent,
    filter: Filter,
    compar: Compar,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe { scandir_any(dir, list, filter, compar, real!(scandir: ScandirFn)) }
}

/// `scandir64(3)` (the same `dirent` layout on 64-bit Linux).
///
/// # Safety
///
/// As for the C library's `scandir64`: `dir` is a NUL-terminated string, `list`
/// is valid for a write of one pointer, and `filter` and `compar` are `None` or
/// functions safe to call with the `dirent`s listed.
#[no_mangle]
pub unsafe extern "C" fn scandir64(
    dir: *const c_char,
    list: *mut *mut *mut dirent,
    filter: Filter,
    compar: Compar,
) -> c_int {
    // SAFETY: the program's arguments.
    unsafe { scandir_any(dir, list, filter, compar, real!(scandir64: ScandirFn)) }
}

/// [`scandir`] and [`scandir64`], with `real` the C library's function of the same name.
///
/// # Safety
///
/// As for [`scandir`]: `dir` is NUL-terminated, `list` is valid for a write of
/// one pointer, `filter` and `compar` are `None` or safe to call on `dirent`s.
unsafe fn scandir_any(
    dir: *const c_char,
    list: *mut *mut *mut dirent,
    filter: Filter,
    compar: Compar,
    real: ScandirFn,
) -> c_int {
    // SAFETY: passed on; the program's list pointer is valid.
    let n = unsafe { real(dir, list, filter, compar) };
    if n < 0 || guard::inside() || dir.is_null() || list.is_null() {
        return n;
    }
    // SAFETY: NUL-terminated.
    let d = unsafe { CStr::from_ptr(dir) }.to_bytes();
    if d != b"/dev" && d != b"/dev/" {
        return n;
    }
    guard::run(|| {
        // SAFETY: `*list` holds `n` entries the C library allocated.
        unsafe { add_entries(list, n, filter, compar) }
    })
}

/// Appends the served `/dev` names `filter` accepts and that are not there
/// yet to the `n` entries at `*list`, then sorts with `compar`.
///
/// # Safety
/// `*list` is scandir's result: `n` malloc'ed entries in a malloc'ed array.
unsafe fn add_entries(list: *mut *mut *mut dirent, n: c_int, filter: Filter, compar: Compar) -> c_int {
    let mut count = n as usize;
    // SAFETY: the caller's contract.
    let existing: Vec<Vec<u8>> =
        (0..count).map(|i| unsafe { CStr::from_ptr((**(*list).add(i)).d_name.as_ptr()) }.to_bytes().to_vec()).collect();
    for name in state::dev_names() {
        if existing.iter().any(|e| e == name.as_bytes()) || name.len() >= 256 {
            continue;
        }
        // SAFETY: a zeroed dirent is valid; it is filled before use.
        let entry = unsafe { libc::calloc(1, std::mem::size_of::<dirent>()) }.cast::<dirent>();
        if entry.is_null() {
            break;
        }
        // SAFETY: `entry` is a fresh dirent with room for the name.
        unsafe {
            (*entry).d_ino = 1;
            (*entry).d_type = libc::DT_CHR;
            (*entry).d_reclen = std::mem::size_of::<dirent>() as u16;
            std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), (*entry).d_name.as_mut_ptr(), name.len());
            if let Some(f) = filter {
                if f(entry) == 0 {
                    libc::free(entry.cast::<c_void>());
                    continue;
                }
            }
            let grown = libc::realloc((*list).cast::<c_void>(), (count + 1) * std::mem::size_of::<*mut dirent>());
            if grown.is_null() {
                libc::free(entry.cast::<c_void>());
                break;
            }
            *list = grown.cast::<*mut dirent>();
            *(*list).add(count) = entry;
        }
        count += 1;
    }
    if let Some(c) = compar {
        // SAFETY: qsort over the array with the program's comparison, as scandir does.
        unsafe {
            libc::qsort(
                (*list).cast::<c_void>(),
                count,
                std::mem::size_of::<*mut dirent>(),
                Some(std::mem::transmute::<
                    unsafe extern "C" fn(*mut *const dirent, *mut *const dirent) -> c_int,
                    unsafe extern "C" fn(*const c_void, *const c_void) -> c_int,
                >(c)),
            )
        };
    }
    count as c_int
}
