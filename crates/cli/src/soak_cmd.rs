//! `wirespeed soak`: every mechanism at once on two lab buses, with faults
//! injected, every message checked.

use clap::Args;

/// The soak run's options.
#[derive(Debug, Args)]
pub struct SoakArgs {}

/// Runs the soak.
pub fn run(_args: SoakArgs) -> Result<(), String> {
    Err("soak: not built yet".into())
}
