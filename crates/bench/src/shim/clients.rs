//! The C and Python clients of `bench shim`: compiled or written into the
//! scratch directory, started under the shim, then asked for one round at
//! a time (a line on their stdin; they answer `round <ns per ioctl>`), so
//! that the benchmark can interleave their rounds with the in-process ones.

use super::error::ShimError;
use super::launcher::Launcher;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The C client's source (protocol in its header comment).
pub const C_SOURCE: &str = include_str!("client.c");
/// The Python client's source (same protocol).
pub const PY_SOURCE: &str = include_str!("client.py");

/// How a client runs.
#[derive(Debug, Clone, Copy)]
pub struct ClientJob<'a> {
    /// The device node, e.g. `/dev/spidev0.0`.
    pub dev: &'a str,
    /// Messages per round.
    pub count: usize,
    /// Untimed messages first.
    pub warmup: usize,
    /// The clock the client sets, Hz.
    pub speed_hz: u32,
}

impl ClientJob<'_> {
    fn args(&self) -> Vec<OsString> {
        [self.dev.to_owned(), self.count.to_string(), self.warmup.to_string(), self.speed_hz.to_string()]
            .into_iter()
            .map(OsString::from)
            .collect()
    }
}

/// The C compiler: `$CC`, else `cc`.
fn compiler() -> OsString {
    std::env::var_os("CC").filter(|c| !c.is_empty()).unwrap_or_else(|| "cc".into())
}

/// Compiles the C client (`-O2`) into `dir`; returns the binary's path.
pub fn compile_c(dir: &Path) -> Result<PathBuf, ShimError> {
    let src = dir.join("client.c");
    let bin = dir.join("client");
    std::fs::write(&src, C_SOURCE).map_err(|e| ShimError::Io(format!("{}: {e}", src.display())))?;
    let cc = compiler();
    let out = Command::new(&cc).arg("-O2").arg("-o").arg(&bin).arg(&src).output().map_err(|e| {
        if e.kind() == ErrorKind::NotFound {
            ShimError::NoCompiler(cc.to_string_lossy().into_owned())
        } else {
            ShimError::Compile(format!("cannot run {}: {e}", cc.to_string_lossy()))
        }
    })?;
    if !out.status.success() {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        return Err(ShimError::Compile(text.trim_end().to_owned()));
    }
    Ok(bin)
}

/// Writes the Python client into `dir` and checks `python3` runs.
pub fn prepare_python(dir: &Path) -> Result<PathBuf, ShimError> {
    let src = dir.join("client.py");
    std::fs::write(&src, PY_SOURCE).map_err(|e| ShimError::Io(format!("{}: {e}", src.display())))?;
    match Command::new("python3").arg("-c").arg("import ctypes, fcntl").output() {
        Ok(o) if o.status.success() => Ok(src),
        Ok(o) => Err(ShimError::Client {
            client: "Python",
            detail: format!(
                "python3 cannot import ctypes and fcntl: {}",
                String::from_utf8_lossy(&o.stderr).trim_end()
            ),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(ShimError::NoPython),
        Err(e) => Err(ShimError::Client { client: "Python", detail: format!("cannot run python3: {e}") }),
    }
}

/// A client running under the shim, waiting for rounds to be asked for.
#[derive(Debug)]
pub struct Running {
    client: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The client's stderr (a file: nothing blocks on it).
    stderr: PathBuf,
}

impl Running {
    /// Starts the C client `bin` under the shim (it warms up at once).
    pub fn c(launcher: &Launcher, board: &Path, bin: &Path, job: &ClientJob) -> Result<Running, ShimError> {
        Running::start(launcher, board, "C", bin.as_os_str(), &[], job)
    }

    /// Starts the Python client `script` under the shim.
    pub fn python(launcher: &Launcher, board: &Path, script: &Path, job: &ClientJob) -> Result<Running, ShimError> {
        Running::start(launcher, board, "Python", OsStr::new("python3"), &[script.as_os_str().to_owned()], job)
    }

    fn start(
        launcher: &Launcher,
        board: &Path,
        client: &'static str,
        program: &OsStr,
        first: &[OsString],
        job: &ClientJob,
    ) -> Result<Running, ShimError> {
        let mut args = first.to_vec();
        args.extend(job.args());
        let mut cmd = launcher.command(board, program, &args).map_err(ShimError::Launch)?;
        let stderr = board.with_file_name(format!("{}.stderr", client.to_lowercase()));
        let file = File::create(&stderr).map_err(|e| ShimError::Io(format!("{}: {e}", stderr.display())))?;
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(file).spawn().map_err(|e| {
            ShimError::Client { client, detail: format!("cannot run {}: {e}", program.to_string_lossy()) }
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ShimError::Client { client, detail: "no pipes to the client".into() });
        };
        Ok(Running { client, child, stdin: Some(stdin), stdout: BufReader::new(stdout), stderr })
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default().trim_end().to_owned()
    }

    /// Ends the client and returns the error `detail` with its exit status and stderr.
    fn fail(&mut self, detail: String) -> ShimError {
        self.stdin = None;
        let _ = self.child.kill();
        let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
        ShimError::Client { client: self.client, detail: format!("{detail} ({status})\n{}", self.stderr_text()) }
    }

    /// Asks for one round and returns its ns per ioctl.
    pub fn round(&mut self) -> Result<f64, ShimError> {
        let asked = match self.stdin.as_mut() {
            Some(w) => w.write_all(b"go\n").and_then(|()| w.flush()),
            None => Err(ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = asked {
            return Err(self.fail(format!("it stopped reading: {e}")));
        }
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(self.fail("it exited before its round".into())),
            Ok(_) => match parse_rounds(&line) {
                Ok(v) if v.len() == 1 => Ok(v[0]),
                Ok(_) => Err(self.fail(format!("unexpected output line {line:?}"))),
                Err(e) => Err(self.fail(e)),
            },
            Err(e) => Err(self.fail(format!("cannot read its output: {e}"))),
        }
    }

    /// Closes its stdin and checks that it exits with 0.
    pub fn finish(mut self) -> Result<(), ShimError> {
        self.stdin = None;
        match self.child.wait() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(ShimError::Client { client: self.client, detail: format!("{s}\n{}", self.stderr_text()) }),
            Err(e) => Err(ShimError::Client { client: self.client, detail: format!("wait: {e}") }),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A client left behind by an error: end it (finish() has waited already).
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `round <ns>` lines of a client's output, in order.
pub fn parse_rounds(stdout: &str) -> Result<Vec<f64>, String> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.strip_prefix("round ")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("unexpected output line {l:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shim::scratch::Scratch;

    #[test]
    fn the_c_client_compiles_without_warnings() {
        let dir = Scratch::new("shim-cc-test").unwrap();
        std::fs::write(dir.join("client.c"), C_SOURCE).unwrap();
        let out = Command::new(compiler())
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(dir.join("client"))
            .arg(dir.join("client.c"))
            .output()
            .expect("cc runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(compile_c(dir.path()).unwrap().is_file());
    }

    #[test]
    fn the_clients_refuse_bad_arguments_without_a_device() {
        let dir = Scratch::new("shim-args-test").unwrap();
        let bin = compile_c(dir.path()).unwrap();
        let out = Command::new(&bin).args(["/dev/null", "x", "1", "1"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let out = Command::new(&bin).args(["/nonexistent/spidev9.9", "1", "1", "1"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/spidev9.9"));
        if let Ok(py) = prepare_python(dir.path()) {
            let out = Command::new("python3").arg(&py).args(["/nonexistent/spidev9.9", "1", "1", "1"]).output();
            let out = out.unwrap();
            assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }

    #[test]
    fn round_lines_parse_and_anything_else_is_refused() {
        assert_eq!(parse_rounds("round 812.5\nround 790.0\n"), Ok(vec![812.5, 790.0]));
        assert!(parse_rounds("round 1\nwirespeed-shim: oops\n").is_err());
        assert!(parse_rounds("round nan\n").is_err());
        assert_eq!(parse_rounds(""), Ok(vec![]));
    }
}
