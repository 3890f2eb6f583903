//! The board the program runs on: loaded from `WIRESPEED_LAB` on the first
//! access to a path the shim may serve, and what each such path is.

use crate::guard;
use std::ffi::CStr;
use std::sync::{Arc, OnceLock};
use wirespeed_labhost::sysfs::Sysfs;
use wirespeed_labhost::{Board, Node};

static BOARD: OnceLock<Option<Board>> = OnceLock::new();

/// What a path the shim serves is.
pub(crate) enum Served<'a> {
    /// A device node.
    Node(&'a Arc<dyn Node>),
    /// A sysfs file with these contents.
    File(&'a [u8]),
    /// A sysfs symbolic link to this path.
    Link(&'a str),
    /// A sysfs directory.
    Dir,
    /// A device node path of the kind the shim serves, while the board file
    /// could not be loaded: `ENOENT`.
    Missing,
}

/// Writes one line to stderr (the shim's only way to speak).
pub(crate) fn say(line: &str) {
    let text = format!("wirespeed-shim: {line}\n");
    // SAFETY: a valid buffer of its length.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}

extern "C" fn at_exit() {
    guard::run(|| {
        if let Some(Some(board)) = BOARD.get() {
            if let Err(e) = board.finish() {
                say(&format!("at exit: {e}"));
            }
        }
    });
}

/// The board, loaded on first use; `None` (said once on stderr) when
/// `WIRESPEED_LAB` is unset or its file is wrong.
pub(crate) fn board() -> Option<&'static Board> {
    BOARD
        .get_or_init(|| {
            guard::run(|| {
                let Some(path) = std::env::var_os("WIRESPEED_LAB") else {
                    say("WIRESPEED_LAB is not set: no lab devices are served (set it to a board file, e.g. examples/lab.toml)");
                    return None;
                };
                let trace = std::env::var_os("WIRESPEED_TRACE").filter(|t| !t.is_empty()).map(Into::into);
                let options = wirespeed_labhost::board::BoardOptions { trace };
                match Board::load_with(std::path::Path::new(&path), options) {
                    Ok(board) => {
                        // SAFETY: registers a plain function with no captured state.
                        unsafe { libc::atexit(at_exit) };
                        Some(board)
                    }
                    Err(e) => {
                        say(&e.to_string());
                        None
                    }
                }
            })
        })
        .as_ref()
}

/// Whether `path` is one the shim could serve (cheap: no board needed).
fn candidate(path: &[u8]) -> bool {
    path.starts_with(b"/dev/") || path.starts_with(b"/sys/")
}

/// Whether `path` names a device node of a kind the shim serves.
fn node_like(path: &str) -> bool {
    path.starts_with("/dev/spidev") || path.starts_with("/dev/gpiochip")
}

/// What `path` is to the shim, or `None` for the C library's paths.
pub(crate) fn lookup(path: *const libc::c_char) -> Option<Served<'static>> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the program passes a NUL-terminated path.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if !candidate(bytes) {
        return None;
    }
    let path = std::str::from_utf8(bytes).ok()?;
    let Some(board) = board() else {
        return node_like(path).then_some(Served::Missing);
    };
    if let Some((_, node)) = board.nodes().iter().find(|(p, _)| p == path) {
        return Some(Served::Node(node));
    }
    lookup_sysfs(board.sysfs(), path)
}

fn lookup_sysfs<'a>(sysfs: &'a Sysfs, path: &str) -> Option<Served<'a>> {
    if let Some(contents) = sysfs.file(path) {
        Some(Served::File(contents))
    } else if let Some(target) = sysfs.link(path) {
        Some(Served::Link(target))
    } else if sysfs.is_dir(path) {
        Some(Served::Dir)
    } else {
        None
    }
}

/// What the link target `target` is (a served directory, usually).
pub(crate) fn follow(target: &str) -> Option<Served<'static>> {
    lookup_sysfs(board()?.sysfs(), target)
}

/// The names under `/dev` the board serves (`spidev0.0`, `gpiochip0`, …).
pub(crate) fn dev_names() -> Vec<String> {
    board()
        .map(|b| b.nodes().iter().filter_map(|(p, _)| p.strip_prefix("/dev/").map(str::to_owned)).collect())
        .unwrap_or_default()
}
