//! [`LabStartError`]: a lab whose interrupt thread could not be started.

use std::fmt;

/// The interrupt thread of a lab ([`Lab::try_new`](crate::Lab::try_new)) or
/// of a [`Scheduler`](crate::Scheduler) could not be created (the process is
/// out of threads or memory). Nothing was started.
#[derive(Debug)]
pub struct LabStartError {
    /// The name the thread was to have.
    pub thread: String,
    /// What the operating system said.
    pub source: std::io::Error,
}

impl fmt::Display for LabStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot start the lab's interrupt thread {:?}: {}; the process is out of threads or memory \
             (see ulimit -u and the memory limits)",
            self.thread, self.source
        )
    }
}

impl std::error::Error for LabStartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
