//! Where the array lives: memory only, or memory mirrored to a host file.
//!
//! With a file, every change to the array (a completed or cut program or
//! erase, a backdoor poke) is written through at once with one positioned
//! write (`pwrite`) per changed range; [`Backing::flush`] asks the OS to put
//! it on disk (`fsync`). Nothing is held back for drop.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Why an image file could not back a chip.
#[derive(Debug)]
pub enum ImageError {
    /// Opening, creating, reading or sizing the file failed.
    Io {
        /// The image file.
        path: PathBuf,
        /// What the OS said.
        error: io::Error,
    },
    /// The file exists but is not exactly the chip's size.
    Size {
        /// The image file.
        path: PathBuf,
        /// The chip's size in bytes.
        expected: u64,
        /// The file's size in bytes.
        found: u64,
    },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io { path, error } => write!(f, "flash image {}: {error}", path.display()),
            ImageError::Size { path, expected, found } => {
                write!(f, "flash image {} is {found} bytes, the chip is {expected}", path.display())
            }
        }
    }
}

impl std::error::Error for ImageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImageError::Io { error, .. } => Some(error),
            ImageError::Size { .. } => None,
        }
    }
}

#[derive(Debug)]
pub(super) struct Backing {
    pub(super) data: Vec<u8>,
    file: Option<File>,
    /// The last write-through error, kept for the backdoor.
    pub(super) io_error: Option<io::Error>,
}

impl Backing {
    pub(super) fn memory(size: u32) -> Backing {
        Backing { data: vec![0xFF; size as usize], file: None, io_error: None }
    }

    pub(super) fn file(size: u32, path: &Path) -> Result<Backing, ImageError> {
        let io_err = |error| ImageError::Io { path: path.to_path_buf(), error };
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io_err)?;
        let found = file.metadata().map_err(io_err)?.len();
        let mut data = vec![0xFF; size as usize];
        if found == 0 {
            file.write_all_at(&data, 0).map_err(io_err)?;
        } else if found != u64::from(size) {
            return Err(ImageError::Size { path: path.to_path_buf(), expected: size.into(), found });
        } else {
            file.read_exact_at(&mut data, 0).map_err(io_err)?;
        }
        Ok(Backing { data, file: Some(file), io_error: None })
    }

    /// Writes `data[start..end]` through to the file, if any.
    pub(super) fn write_through(&mut self, start: usize, end: usize) {
        if let Some(f) = &self.file {
            if let Err(e) = f.write_all_at(&self.data[start..end], start as u64) {
                self.io_error = Some(e);
            }
        }
    }

    pub(super) fn flush(&self) -> io::Result<()> {
        self.file.as_ref().map_or(Ok(()), File::sync_data)
    }
}
