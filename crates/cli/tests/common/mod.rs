//! What the CLI's integration tests share: running the built `wirespeed`.

use std::process::{Command, Output};

/// Runs the `wirespeed` binary under test with `args`, backtraces off (a
/// panic must show as "panicked", not as a trace to scroll past).
pub fn wirespeed(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirespeed"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running wirespeed")
}
