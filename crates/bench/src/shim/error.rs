//! Why `bench shim` could not produce its figures.

use std::fmt;

/// A failure of the shim benchmark: each names what to do about it.
#[derive(Debug)]
pub enum ShimError {
    /// Options out of range.
    Options(String),
    /// The C compiler (`$CC`, else `cc`) is not installed.
    NoCompiler(String),
    /// The C client did not compile: the compiler's output.
    Compile(String),
    /// `python3` is not on `PATH`.
    NoPython,
    /// The launcher could not build the command (no shim, …).
    Launch(String),
    /// A client could not be started, failed or printed something else than rounds.
    Client {
        /// `C` or `Python`.
        client: &'static str,
        /// What happened, with the client's stderr.
        detail: String,
    },
    /// The in-process measurement failed (board file, node, ioctl).
    InProcess(String),
    /// A scratch file could not be written.
    Io(String),
}

impl fmt::Display for ShimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShimError::Options(s) => write!(f, "bench shim: {s}"),
            ShimError::NoCompiler(cc) => write!(
                f,
                "bench shim: the C compiler `{cc}` is not installed; the benchmark compiles its C client with it \
                 (Debian: apt-get install gcc, or set CC)"
            ),
            ShimError::Compile(out) => write!(f, "bench shim: the C client did not compile:\n{out}"),
            ShimError::NoPython => write!(
                f,
                "bench shim: python3 is not on PATH (Debian: apt-get install python3), or pass --no-python to skip the \
                 Python client"
            ),
            ShimError::Launch(s) => write!(f, "bench shim: {s}"),
            ShimError::Client { client, detail } => write!(f, "bench shim: the {client} client: {detail}"),
            ShimError::InProcess(s) => write!(f, "bench shim: in-process run: {s}"),
            ShimError::Io(s) => write!(f, "bench shim: {s}"),
        }
    }
}

impl std::error::Error for ShimError {}

impl From<ShimError> for String {
    fn from(e: ShimError) -> String {
        e.to_string()
    }
}
