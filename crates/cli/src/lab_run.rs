//! `wirespeed lab run`: runs an unmodified program with the shim
//! (`libwirespeed_shim.so`) preloaded, so that its `/dev/spidevB.C` and
//! `/dev/gpiochipN` are the lab devices a board file describes.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The shim's file name.
pub const SHIM_FILE: &str = "libwirespeed_shim.so";

/// Where the shim is: `$WIRESPEED_SHIM`, else next to this executable
/// (`target/release/` after `cargo build --release -p wirespeed-shim`), else
/// in its parent (`target/release/deps/` for test binaries).
pub fn find_shim() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("WIRESPEED_SHIM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("WIRESPEED_SHIM={} is not a file", p.display())) };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dirs: Vec<&Path> = exe.parent().into_iter().flat_map(|d| [Some(d), d.parent()]).flatten().collect();
    for d in &dirs {
        let p = d.join(SHIM_FILE);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!(
        "{SHIM_FILE} is not next to {} : build it with `cargo build --release -p wirespeed-shim`, or set WIRESPEED_SHIM to its path",
        exe.display()
    ))
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// A command that runs `program args` with the shim and board file `config`
/// (and `trace`, a VCD file the shim writes at the program's exit).
pub fn command(config: &Path, trace: Option<&Path>, program: &OsStr, args: &[OsString]) -> Result<Command, String> {
    let shim = absolute(&find_shim()?)?;
    let mut preload = OsString::from(shim.as_os_str());
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|p| !p.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(program);
    cmd.args(args).env("LD_PRELOAD", preload).env("WIRESPEED_LAB", absolute(config)?);
    match trace {
        Some(t) => cmd.env("WIRESPEED_TRACE", absolute(t)?),
        None => cmd.env_remove("WIRESPEED_TRACE"),
    };
    Ok(cmd)
}

/// Checks `config` as the shim will read it: the error names the file, the
/// line and what is allowed.
pub fn check_config(config: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("cannot read {}: {e}", config.display()))?;
    wirespeed_labhost::config::parse(&text, &config.display().to_string()).map_err(|e| e.to_string())?;
    Ok(())
}

/// Checks `config` ([`check_config`]), then runs the program and returns
/// its exit status.
pub fn run(config: &Path, trace: Option<&Path>, program: &OsStr, args: &[OsString]) -> Result<ExitStatus, String> {
    check_config(config)?;
    let mut cmd = command(config, trace, program, args)?;
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", Path::new(program).display()))?;
    if let Some(t) = trace {
        match std::fs::metadata(t) {
            Ok(m) => eprintln!("wirespeed: bus trace in {} ({} bytes)", t.display(), m.len()),
            Err(_) => eprintln!("wirespeed: no trace was written to {} (did the program exit normally?)", t.display()),
        }
    }
    Ok(status)
}
