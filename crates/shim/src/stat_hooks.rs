//! `stat` and its many names: a served node is a character device with its
//! device number (libgpiod checks `S_ISCHR` and compares the number with
//! sysfs), a sysfs file a regular file, a sysfs directory a directory.
//! glibc 2.33+ exports `stat`, `fstat`, `lstat`, `fstatat` (and `…64`);
//! programs built against older glibc (manylinux wheels such as python
//! gpiod's) call `__xstat`, `__fxstat`, `__lxstat`, `__fxstatat`; `statx`
//! is there for newer tools.

use crate::guard;
use crate::real::real;
use crate::state::{self, Served};
use crate::table;
use libc::{c_char, c_int, c_uint};
use wirespeed_labhost::CharDev;

type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;
type FstatatFn = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int;

/// What `stat` reports for a served path.
enum Kind {
    Char(CharDev),
    File(usize),
    Dir,
    Link(usize),
}

fn kind_of(path: *const c_char, follow: bool) -> Option<Result<Kind, i32>> {
    if guard::inside() {
        return None;
    }
    guard::run(|| {
        Some(match state::lookup(path)? {
            Served::Node(n) => Ok(Kind::Char(n.char_dev())),
            Served::File(c) => Ok(Kind::File(c.len())),
            Served::Dir => Ok(Kind::Dir),
            Served::Link(target) if !follow => Ok(Kind::Link(target.len())),
            Served::Link(target) => match state::follow(target) {
                Some(Served::Dir) => Ok(Kind::Dir),
                Some(Served::File(c)) => Ok(Kind::File(c.len())),
                _ => Err(libc::ENOENT),
            },
            Served::Missing => Err(libc::ENOENT),
        })
    })
}

fn fill(kind: &Kind, buf: *mut libc::stat) {
    // SAFETY: an all-zero `struct stat` is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let (mode, rdev, size) = match *kind {
        Kind::Char(d) => (libc::S_IFCHR | 0o660, libc::makedev(d.major, d.minor), 0),
        Kind::File(len) => (libc::S_IFREG | 0o444, 0, len),
        Kind::Dir => (libc::S_IFDIR | 0o755, 0, 0),
        Kind::Link(len) => (libc::S_IFLNK | 0o777, 0, len),
    };
    st.st_mode = mode;
    st.st_rdev = rdev;
    st.st_size = size as libc::off_t;
    st.st_nlink = 1;
    st.st_blksize = 4096;
    // devtmpfs is device 0:5 on most systems; sysfs differs, which no checker looks at.
    st.st_dev = libc::makedev(0, 5);
    st.st_ino = u64::from(rdev as u32) ^ (size as u64) << 32 | u64::from(mode);
    // SAFETY: the program's buffer.
    unsafe { buf.write(st) };
}

fn answer(kind: Result<Kind, i32>, buf: *mut libc::stat) -> c_int {
    match kind {
        Ok(k) if !buf.is_null() => {
            fill(&k, buf);
            0
        }
        Ok(_) => set_errno(libc::EFAULT),
        Err(e) => set_errno(e),
    }
}

fn set_errno(e: i32) -> c_int {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = e };
    -1
}

fn fstat_served(fd: c_int, buf: *mut libc::stat) -> Option<c_int> {
    if guard::inside() || buf.is_null() {
        return None;
    }
    let dev = table::get(fd)?.dev?;
    fill(&Kind::Char(dev), buf);
    Some(0)
}

macro_rules! path_stat {
    ($name:ident, $follow:expr) => {
        #[doc = concat!("`", stringify!($name), "(2)`.")]
        ///
        /// # Safety
        ///
        /// `path` is a NUL-terminated string and `buf` is valid for a write of a
        /// `struct stat`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut libc::stat) -> c_int {
            if let Some(k) = kind_of(path, $follow) {
                return answer(k, buf);
            }
            // SAFETY: the C library's own function with the caller's arguments, under
            // the same contract (this function's `# Safety`).
            unsafe { real!($name: StatFn)(path, buf) }
        }
    };
}
path_stat!(stat, true);
path_stat!(stat64, true);
path_stat!(lstat, false);
path_stat!(lstat64, false);

macro_rules! fd_stat {
    ($name:ident) => {
        #[doc = concat!("`", stringify!($name), "(2)`.")]
        ///
        /// # Safety
        ///
        /// `buf` is valid for a write of a `struct stat`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut libc::stat) -> c_int {
            if let Some(r) = fstat_served(fd, buf) {
                return r;
            }
            // SAFETY: the C library's own function with the caller's arguments, under
            // the same contract (this function's `# Safety`).
            unsafe { real!($name: FstatFn)(fd, buf) }
        }
    };
}
fd_stat!(fstat);
fd_stat!(fstat64);

macro_rules! at_stat {
    ($name:ident) => {
        #[doc = concat!("`", stringify!($name), "(2)`: served paths are absolute; `AT_EMPTY_PATH` stats `dirfd`.")]
        ///
        /// # Safety
        ///
        /// `path` is a NUL-terminated string (empty with `AT_EMPTY_PATH`) and `buf` is
        /// valid for a write of a `struct stat`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int) -> c_int {
            // SAFETY: `path` is NUL-terminated when not null.
            let empty = !path.is_null() && unsafe { *path } == 0;
            if empty && flags & libc::AT_EMPTY_PATH != 0 {
                if let Some(r) = fstat_served(dirfd, buf) {
                    return r;
                }
            } else if let Some(k) = kind_of(path, flags & libc::AT_SYMLINK_NOFOLLOW == 0) {
                return answer(k, buf);
            }
            // SAFETY: the C library's own function with the caller's arguments, under
            // the same contract (this function's `# Safety`).
            unsafe { real!($name: FstatatFn)(dirfd, path, buf, flags) }
        }
    };
}
at_stat!(fstatat);
at_stat!(fstatat64);

macro_rules! old_path_stat {
    ($name:ident, $modern:ident) => {
        #[doc = concat!("`", stringify!($name), "`: glibc before 2.33 compiled `stat` to it.")]
        ///
        /// # Safety
        ///
        /// `path` is a NUL-terminated string and `buf` is valid for a write of a
        /// `struct stat`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(_ver: c_int, path: *const c_char, buf: *mut libc::stat) -> c_int {
            // SAFETY: the same call under its modern name.
            unsafe { $modern(path, buf) }
        }
    };
}
old_path_stat!(__xstat, stat);
old_path_stat!(__xstat64, stat64);
old_path_stat!(__lxstat, lstat);
old_path_stat!(__lxstat64, lstat64);

macro_rules! old_fd_stat {
    ($name:ident, $modern:ident) => {
        #[doc = concat!("`", stringify!($name), "`: glibc before 2.33 compiled `fstat` to it.")]
        ///
        /// # Safety
        ///
        /// `buf` is valid for a write of a `struct stat`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(_ver: c_int, fd: c_int, buf: *mut libc::stat) -> c_int {
            // SAFETY: the same call under its modern name.
            unsafe { $modern(fd, buf) }
        }
    };
}
old_fd_stat!(__fxstat, fstat);
old_fd_stat!(__fxstat64, fstat64);

/// `__fxstatat`: glibc before 2.33 compiled `fstatat` to it.
///
/// # Safety
///
/// `path` is a NUL-terminated string (empty with `AT_EMPTY_PATH`) and `buf` is
/// valid for a write of a `struct stat`.
#[no_mangle]
pub unsafe extern "C" fn __fxstatat(
    _ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: the same call under its modern name.
    unsafe { fstatat(dirfd, path, buf, flags) }
}

/// `__fxstatat64`.
///
/// # Safety
///
/// `path` is a NUL-terminated string (empty with `AT_EMPTY_PATH`) and `buf` is
/// valid for a write of a `struct stat64` (the same layout on 64-bit Linux).
#[no_mangle]
pub unsafe extern "C" fn __fxstatat64(
    _ver: c_int,
    dirfd: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: the same call under its modern name.
    unsafe { fstatat64(dirfd, path, buf, flags) }
}

/// `statx(2)`.
///
/// # Safety
///
/// `path` is a NUL-terminated string (empty with `AT_EMPTY_PATH`) and `buf` is
/// valid for a write of a `struct statx`.
#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    // SAFETY: `path` is NUL-terminated when not null.
    let empty = !path.is_null() && unsafe { *path } == 0;
    let kind = if empty && flags & libc::AT_EMPTY_PATH != 0 {
        (!guard::inside()).then(|| table::get(dirfd).and_then(|e| e.dev)).flatten().map(|d| Ok(Kind::Char(d)))
    } else {
        kind_of(path, flags & libc::AT_SYMLINK_NOFOLLOW == 0)
    };
    match kind {
        Some(Ok(k)) if !buf.is_null() => {
            // SAFETY: an all-zero `struct stat` is valid; `buf` is the program's.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            fill(&k, &mut st);
            // SAFETY: an all-zero `struct statx` is valid.
            let mut x: libc::statx = unsafe { std::mem::zeroed() };
            x.stx_mask = libc::STATX_BASIC_STATS;
            x.stx_mode = st.st_mode as u16;
            x.stx_nlink = 1;
            x.stx_blksize = 4096;
            x.stx_size = st.st_size as u64;
            x.stx_ino = st.st_ino;
            x.stx_rdev_major = libc::major(st.st_rdev);
            x.stx_rdev_minor = libc::minor(st.st_rdev);
            x.stx_dev_minor = 5;
            // SAFETY: the program's buffer.
            unsafe { buf.write(x) };
            0
        }
        Some(Ok(_)) => set_errno(libc::EFAULT),
        Some(Err(e)) => set_errno(e),
        // SAFETY: the C library's own function with the caller's arguments, under
        // the same contract (this function's `# Safety`).
        None => unsafe {
            real!(statx: unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int)(
                dirfd, path, flags, mask, buf,
            )
        },
    }
}
