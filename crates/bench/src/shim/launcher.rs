//! How a benchmark starts a program under the shim. The bench crate cannot
//! depend on the CLI, which knows where `libwirespeed_shim.so` is and how
//! to preload it (`lab_run::command`): the CLI hands a [`Launcher`] in.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// The function behind a [`Launcher`]: `(board file, program, args)` → a
/// command that runs the program with the shim serving that board.
pub type LaunchFn = dyn Fn(&Path, &OsStr, &[OsString]) -> Result<Command, String> + Send + Sync;

/// Builds commands that run a program with the shim preloaded and a board
/// file named. Cheap to clone.
#[derive(Clone)]
pub struct Launcher(Arc<LaunchFn>);

impl Launcher {
    /// A launcher from the function that builds the command.
    pub fn new(f: impl Fn(&Path, &OsStr, &[OsString]) -> Result<Command, String> + Send + Sync + 'static) -> Launcher {
        Launcher(Arc::new(f))
    }

    /// The command that runs `program args` on the board file `board`.
    pub fn command(&self, board: &Path, program: &OsStr, args: &[OsString]) -> Result<Command, String> {
        (self.0)(board, program, args)
    }
}

impl fmt::Debug for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Launcher(..)")
    }
}
