//! `wirespeed.lab`: the emulated bench, built from a board file (the same
//! TOML the `LD_PRELOAD` shim reads) or from a string, whose devices open
//! with the same classes as real hardware: `wirespeed.SpiDev(lab=…)`,
//! `wirespeed.gpio.Chip(…, lab=…)`.
//!
//! With `WIRESPEED_LAB=board.toml` in the environment, `SpiDev()` and the
//! GPIO classes given no `lab` open that board's nodes instead of the
//! system's (the board is built once per process: [`env_board`]).

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use wirespeed_labhost::{Board, NodeFile};

/// The environment variable naming the board that stands in for the system's nodes.
pub const ENV_VAR: &str = "WIRESPEED_LAB";

/// A built lab board: its `/dev/spidevB.C` and `/dev/gpiochipN` nodes.
///
/// ```python
/// import wirespeed
/// lab = wirespeed.lab.load("examples/lab.toml")
/// with wirespeed.SpiDev(lab=lab) as spi:
///     spi.open(0, 1)                 # the bench's loopback
///     assert spi.xfer2([1, 2, 3]) == [1, 2, 3]
/// ```
#[pyclass(name = "Lab", module = "wirespeed.lab", frozen)]
#[derive(Debug)]
pub struct PyLab {
    /// The board: its nodes (`board.nodes()`), GPIO chips (`board.gpio_chip(i)`), lab.
    pub board: Arc<Board>,
    /// Where it came from (a path, or `<string>`).
    pub name: String,
}

impl PyLab {
    /// Opens the node at `path` (`/dev/spidev0.1`, `/dev/gpiochip0`).
    pub fn open_node(&self, path: &str) -> PyResult<Arc<dyn NodeFile>> {
        open_node(&self.board, &self.name, path)
    }
}

/// Opens the node at `path` of `board` (named `name` in errors).
pub fn open_node(board: &Board, name: &str, path: &str) -> PyResult<Arc<dyn NodeFile>> {
    let Some((_, node)) = board.nodes().iter().find(|(p, _)| p == path) else {
        let have: Vec<&str> = board.nodes().iter().map(|(p, _)| p.as_str()).collect();
        return Err(PyOSError::new_err((
            libc::ENOENT,
            format!("{path}: no such node on the lab board {name} (it serves {})", have.join(", ")),
        )));
    };
    node.open(libc::O_RDWR).map_err(|e| PyOSError::new_err((e, format!("{path} on the lab board {name}: open failed"))))
}

fn board_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl PyLab {
    /// Builds a board from TOML text (the board-file format of `examples/lab.toml`);
    /// flash images named in it are relative to `base_dir`.
    ///
    /// ```python
    /// lab = wirespeed.lab.Lab.from_toml('''
    /// [[spi]]
    /// bus = 0
    /// [[spi.device]]
    /// cs = 0
    /// kind = "loopback"
    /// ''')
    /// ```
    #[classmethod]
    #[pyo3(signature = (text, base_dir = None, name = None))]
    fn from_toml(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        text: &str,
        base_dir: Option<PathBuf>,
        name: Option<String>,
    ) -> PyResult<PyLab> {
        from_toml_impl(py, text, base_dir, name)
    }

    /// The device nodes it serves, e.g. `["/dev/spidev0.0", "/dev/spidev0.1", "/dev/gpiochip0"]`.
    fn nodes(&self) -> Vec<String> {
        self.board.nodes().iter().map(|(p, _)| p.clone()).collect()
    }

    /// Where the board came from (its file, or `<string>`).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Syncs the flash images (and writes traces asked for). Safe to call more than once.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        let board = self.board.clone();
        py.detach(move || board.finish()).map_err(|e| PyOSError::new_err(e.to_string()))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.finish(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<wirespeed.lab.Lab {} serving {}>", self.name, self.nodes().join(", "))
    }
}

fn from_toml_impl(py: Python<'_>, text: &str, base_dir: Option<PathBuf>, name: Option<String>) -> PyResult<PyLab> {
    let name = name.unwrap_or_else(|| "<string>".to_owned());
    let base = base_dir.unwrap_or_default();
    let text = text.to_owned();
    let (n, b) = (name.clone(), base.clone());
    let board = py.detach(move || Board::from_str(&text, &n, &b)).map_err(board_error)?;
    Ok(PyLab { board: Arc::new(board), name })
}

/// Reads, checks and builds the board file at `path` (relative image paths
/// are taken from the working directory, as the shim does).
///
/// ```python
/// lab = wirespeed.lab.load("examples/lab.toml")
/// ```
#[pyfunction]
fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyLab> {
    let name = path.display().to_string();
    let board = py.detach(move || Board::load(Path::new(&path))).map_err(board_error)?;
    Ok(PyLab { board: Arc::new(board), name })
}

/// Builds a board from TOML text; see `Lab.from_toml`.
#[pyfunction]
#[pyo3(signature = (text, base_dir = None, name = None))]
fn from_toml(py: Python<'_>, text: &str, base_dir: Option<PathBuf>, name: Option<String>) -> PyResult<PyLab> {
    from_toml_impl(py, text, base_dir, name)
}

/// The board `WIRESPEED_LAB` names, built on first use and shared by
/// everything opened without a `lab` argument; `None` when it is unset.
#[pyfunction]
fn from_env(py: Python<'_>) -> PyResult<Option<PyLab>> {
    Ok(env_board(py)?.map(|(board, name)| PyLab { board, name }))
}

/// The board of `WIRESPEED_LAB` (built once per path per process) and its name.
pub fn env_board(py: Python<'_>) -> PyResult<Option<(Arc<Board>, String)>> {
    static CACHE: Mutex<Option<(String, Arc<Board>)>> = Mutex::new(None);
    let Some(path) = std::env::var_os(ENV_VAR).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let name = path.to_string_lossy().into_owned();
    let board = py.detach(|| {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((p, b)) = cache.as_ref() {
            if *p == name {
                return Ok(b.clone());
            }
        }
        let b = Arc::new(Board::load(Path::new(&path))?);
        *cache = Some((name.clone(), b.clone()));
        Ok::<_, wirespeed_labhost::BoardError>(b)
    });
    let board = board.map_err(|e| PyValueError::new_err(format!("{ENV_VAR}={name}: {e}")))?;
    Ok(Some((board, name)))
}

/// The board to open nodes on: `lab` when given, else `WIRESPEED_LAB`'s,
/// else `None` (the system's nodes).
pub fn board_for(py: Python<'_>, lab: Option<&PyLab>) -> PyResult<Option<(Arc<Board>, String)>> {
    match lab {
        Some(l) => Ok(Some((l.board.clone(), l.name.clone()))),
        None => env_board(py),
    }
}

/// Adds the `lab` submodule to `parent`.
pub fn register(py: Python<'_>, parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(py, "lab")?;
    m.add_class::<PyLab>()?;
    m.add_function(wrap_pyfunction!(load, &m)?)?;
    m.add_function(wrap_pyfunction!(from_toml, &m)?)?;
    m.add_function(wrap_pyfunction!(from_env, &m)?)?;
    m.add("ENV_VAR", ENV_VAR)?;
    parent.add_submodule(&m)?;
    Ok(())
}
