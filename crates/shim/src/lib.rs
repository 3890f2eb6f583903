//! `libwirespeed_shim.so`: loaded with `LD_PRELOAD`, it serves
//! `/dev/spidevB.C` and `/dev/gpiochipN` to an unmodified program from an
//! in-process lab described by the board file `WIRESPEED_LAB` names
//! (`examples/lab.toml`); every other path and descriptor goes to the C
//! library untouched. `wirespeed lab run --config lab.toml -- PROGRAM …`
//! sets it up.
//!
//! What it wraps (each a C library symbol the program calls):
//! - `open`, `open64`, `openat`, `openat64` (and the `_FORTIFY_SOURCE`
//!   `__open_2` family), `fopen`, `fopen64`: a served node opens as a real
//!   descriptor (a duplicate of an eventfd the lab file owns), recorded as
//!   the lab's; a served sysfs file opens as a memfd holding its contents;
//! - `ioctl`, `read` (`__read_chk`), `write` on the lab's descriptors: the
//!   kernel's spidev and GPIO character device behaviour
//!   (`wirespeed_labhost`); an ioctl it does not serve is `ENOTTY` with one
//!   stderr line per request number;
//! - `close`, `fclose`, `dup`, `dup2`, `dup3`, `fcntl`, `fcntl64`: keep the
//!   record of the lab's descriptors right (`O_NONBLOCK` included);
//! - `stat`, `lstat`, `fstat`, `fstatat` (and `…64`, the pre-2.33 `__xstat`
//!   family, `statx`): a node is a character device with spidev's major
//!   (153) or a GPIO chip's (254);
//! - `access`, `faccessat`, `euidaccess`, `realpath`, `__realpath_chk`,
//!   `canonicalize_file_name`, `scandir`, `scandir64`: what libgpiod checks
//!   (see `path_hooks`).
//!
//! `poll`, `ppoll`, `select` and `epoll` are not wrapped and need not be:
//! a GPIO line request's descriptor is a real eventfd the lab makes
//! readable exactly while events wait, so the kernel answers them.
//!
//! Limits: statically linked programs and programs that make raw
//! `syscall()`s bypass `LD_PRELOAD` entirely; a relative path (`spidev0.0`
//! opened from `/dev`) is not recognised; after `fork` the child keeps its
//! descriptors but not the lab's threads (edge events and clocks stop).

mod fd_hooks;
mod guard;
mod path_hooks;
mod real;
mod stat_hooks;
mod state;
mod table;
