//! [`LabStartError`]: a lab whose interrupt thread could not be started.

use std::fmt;
use wirespeed_time::realtime::CpuList;

/// The interrupt thread of a lab ([`Lab::try_new`](crate::Lab::try_new)) or
/// of a [`Scheduler`](crate::Scheduler) could not be created (the process is
/// out of threads or memory), or not placed on the CPUs it was given
/// ([`LabConfig::interrupt_thread_cpus`](crate::LabConfig::interrupt_thread_cpus)).
/// Nothing was started.
#[derive(Debug)]
pub struct LabStartError {
    /// The name the thread was to have.
    pub thread: String,
    /// The CPUs the thread was to run on, when placing it there failed
    /// (`None`: the thread could not be created).
    pub cpus: Option<CpuList>,
    /// What the operating system said.
    pub source: std::io::Error,
}

impl fmt::Display for LabStartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cpus {
            None => write!(
                f,
                "cannot start the lab's interrupt thread {:?}: {}; the process is out of threads or memory \
                 (see ulimit -u and the memory limits)",
                self.thread, self.source
            ),
            Some(cpus) => write!(
                f,
                "cannot run the lab's interrupt thread {:?} on CPUs {:?}: {}; give CPUs this process may \
                 use (taskset -p shows them)",
                self.thread,
                cpus.cpus(),
                self.source
            ),
        }
    }
}

impl std::error::Error for LabStartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
