//! `wirespeed.gpio.Chip`: python gpiod's `gpiod.Chip`, on the kernel's GPIO
//! character device or on a lab board.

use super::error::{chip_closed, os_error, to_py};
use super::pytypes::*;
use super::request::PyLineRequest;
use super::settings::{config_entries, given, LineId};
use super::source::{self, Opened};
use crate::lab::PyLab;
use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use wirespeed::gpio::{Bias, ChipInfo, Direction, Drive, Edge, LineInfo, RequestConfig};

/// An open chip's state, shared with nothing (requests keep what they need).
#[derive(Debug)]
pub(crate) struct Open {
    opened: Opened,
    info: ChipInfo,
}

impl Open {
    /// Line `offset`'s name ("" if unnamed).
    fn line_name(&self, offset: u32) -> PyResult<String> {
        match &self.opened.names {
            Some(names) => Ok(names.get(offset as usize).cloned().unwrap_or_default()),
            None => Ok(self.opened.chip.line_info(offset).map_err(to_py)?.name),
        }
    }

    fn line_info(&self, offset: u32) -> PyResult<LineInfo> {
        let mut info = self.opened.chip.line_info(offset).map_err(to_py)?;
        if let Some(names) = &self.opened.names {
            info.name = names.get(offset as usize).cloned().unwrap_or_default();
        }
        Ok(info)
    }

    fn check_offset(&self, offset: u32) -> PyResult<u32> {
        if offset >= self.info.lines {
            return Err(PyValueError::new_err(format!(
                "line offset {offset} out of range: {} has {} lines (0..{})",
                self.info.name, self.info.lines, self.info.lines
            )));
        }
        Ok(offset)
    }

    /// python gpiod's `line_offset_from_id`: an offset (checked), a line
    /// name, or an offset written as a string.
    fn offset_of(&self, id: &LineId) -> PyResult<u32> {
        match id {
            LineId::Offset(o) => self.check_offset(*o),
            LineId::Name(name) => {
                for off in 0..self.info.lines {
                    if self.line_name(off)? == *name {
                        return Ok(off);
                    }
                }
                match name.trim().parse::<u32>() {
                    Ok(o) => self.check_offset(o),
                    Err(_) => Err(os_error(libc::ENOENT, format!("no line named {name:?} on {}", self.info.name))),
                }
            }
        }
    }
}

/// A GPIO chip, as python gpiod's `gpiod.Chip`.
///
/// `Chip(path, lab=None)`: `path` is a GPIO character device
/// (`"/dev/gpiochip0"`; `"gpiochip0"` means the same). With `lab=` (a
/// `wirespeed.lab.Lab`), the path names one of the lab board's chips;
/// without it, if the environment variable `WIRESPEED_LAB` names a board
/// file that serves the path, that board's chip is opened (the board is
/// built once per process and shared with `SpiDev`); otherwise the
/// kernel's device.
///
/// Example::
///
///     import wirespeed
///     from wirespeed.gpio import Chip, LineSettings
///     from wirespeed.gpio.line import Direction, Value
///     lab = wirespeed.lab.load("examples/lab.toml")
///     with Chip("/dev/gpiochip0", lab=lab) as chip:
///         print(chip.get_info())           # <ChipInfo name="gpiochip0" label="wirespeed-lab" num_lines=32>
///         with chip.request_lines({"LED": LineSettings(direction=Direction.OUTPUT)}, consumer="blink") as led:
///             led.set_value("LED", Value.ACTIVE)
#[pyclass(name = "Chip", module = "wirespeed.gpio", frozen)]
#[derive(Debug)]
pub struct PyChip {
    path: String,
    open: Mutex<Option<Arc<Open>>>,
}

impl PyChip {
    fn state(&self) -> PyResult<Arc<Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(chip_closed)
    }
}

fn direction_int(d: Direction) -> i64 {
    match d {
        Direction::Input => DIRECTION_INPUT,
        Direction::Output => DIRECTION_OUTPUT,
    }
}

fn line_info_py<'py>(py: Python<'py>, i: &LineInfo) -> PyResult<Bound<'py, PyAny>> {
    let s = &i.settings;
    let bias = match s.bias {
        Bias::AsIs => BIAS_UNKNOWN,
        Bias::Disabled => BIAS_DISABLED,
        Bias::PullUp => BIAS_PULL_UP,
        Bias::PullDown => BIAS_PULL_DOWN,
    };
    let drive = match s.drive {
        Drive::PushPull => DRIVE_PUSH_PULL,
        Drive::OpenDrain => DRIVE_OPEN_DRAIN,
        Drive::OpenSource => DRIVE_OPEN_SOURCE,
    };
    let edge = match s.edge {
        Edge::None => EDGE_NONE,
        Edge::Rising => EDGE_RISING,
        Edge::Falling => EDGE_FALLING,
        Edge::Both => EDGE_BOTH,
    };
    let debounce_us = s.debounce.as_micros() as u64;
    let args = (
        i.offset,
        i.name.as_str(),
        i.used,
        i.consumer.as_str(),
        direction_int(s.direction),
        s.active_low,
        bias,
        drive,
        edge,
        CLOCK_MONOTONIC,
        debounce_us != 0,
        debounce_us,
    );
    line_info_type(py)?.call1(args)
}

#[pymethods]
impl PyChip {
    #[new]
    #[pyo3(signature = (path, lab = None))]
    fn new(py: Python<'_>, path: std::path::PathBuf, lab: Option<&Bound<'_, PyLab>>) -> PyResult<PyChip> {
        let path = path.to_string_lossy().into_owned();
        let lab = lab.map(|l| (l.get().board.clone(), l.get().name.clone()));
        let opened = source::open(py, &path, lab)?;
        let info = opened.chip.info().map_err(to_py)?;
        Ok(PyChip { path, open: Mutex::new(Some(Arc::new(Open { opened, info }))) })
    }

    /// True while the chip is open.
    fn __bool__(&self) -> bool {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().state()?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) {
        self.close();
    }

    /// Closes the chip. Its line requests stay valid (as in gpiod).
    fn close(&self) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// The path the chip was opened with.
    #[getter]
    fn path(&self) -> PyResult<String> {
        self.state()?;
        Ok(self.path.clone())
    }

    /// Whether the chip is a lab board's (`lab=` or `WIRESPEED_LAB`).
    #[getter]
    fn is_lab(&self) -> PyResult<bool> {
        Ok(self.state()?.opened.board.is_some())
    }

    /// `ChipInfo(name, label, num_lines)`.
    fn get_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let st = self.state()?;
        let i = st.opened.chip.info().map_err(to_py)?;
        chip_info_type(py)?.call1((i.name, i.label, i.lines))
    }

    /// The offset of a line given by offset, name, or offset as a string.
    /// An unknown name raises `OSError(ENOENT)` (as gpiod), an offset out of
    /// range `ValueError`.
    fn line_offset_from_id(&self, id: &Bound<'_, PyAny>) -> PyResult<u32> {
        let st = self.state()?;
        st.offset_of(&line_id(id)?)
    }

    /// A snapshot `LineInfo` of a line (offset or name).
    fn get_line_info<'py>(&self, py: Python<'py>, line: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let st = self.state()?;
        let off = st.offset_of(&line_id(line)?)?;
        line_info_py(py, &st.line_info(off)?)
    }

    /// Not supported: line info watches (use `get_line_info`).
    #[pyo3(signature = (*_args))]
    fn watch_line_info(&self, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        Err(PyNotImplementedError::new_err("wirespeed.gpio does not watch line info (use get_line_info)"))
    }

    /// Not supported: line info watches.
    #[pyo3(signature = (*_args))]
    fn unwatch_line_info(&self, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.watch_line_info(_args)
    }

    /// Not supported: line info watches.
    #[pyo3(signature = (*_args))]
    fn wait_info_event(&self, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.watch_line_info(_args)
    }

    /// Not supported: line info watches.
    #[pyo3(signature = (*_args))]
    fn read_info_event(&self, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.watch_line_info(_args)
    }

    /// Requests lines for exclusive use, as gpiod's `Chip.request_lines`.
    ///
    /// `config` maps an offset, a name, or a tuple of them to a
    /// `LineSettings` (or `None`: the defaults); `output_values` maps lines
    /// to `Value`s that override the settings' `output_value` (lines it
    /// leaves out are INACTIVE, as in gpiod). A line already requested
    /// raises `OSError(EBUSY)`; a bad offset or setting `ValueError`.
    #[pyo3(signature = (config, consumer = None, event_buffer_size = None, output_values = None))]
    fn request_lines(
        &self,
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        consumer: Option<&str>,
        event_buffer_size: Option<u32>,
        output_values: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyLineRequest> {
        let st = self.state()?;
        let mut values: Option<HashMap<u32, bool>> = None;
        if let Some(ov) = output_values.filter(|d| !d.is_empty()) {
            let mut m = HashMap::new();
            for (k, v) in ov.iter() {
                m.insert(st.offset_of(&line_id(&k)?)?, v.is_truthy()?);
            }
            values = Some(m);
        }
        let mut cfg = RequestConfig::new(consumer.unwrap_or("?"));
        if let Some(n) = event_buffer_size {
            cfg = cfg.event_buffer_size(n);
        }
        let mut seen = HashSet::new();
        let mut lines = Vec::new();
        let mut name_map: HashMap<String, u32> = HashMap::new();
        let mut realtime = Vec::new();
        for (id, settings) in config_entries(config)? {
            let off = st.offset_of(&id)?;
            if !seen.insert(off) {
                return Err(PyValueError::new_err(format!(
                    "line must be configured exactly once - offset {off} repeats"
                )));
            }
            match &id {
                LineId::Name(n) => {
                    name_map.insert(n.clone(), off);
                }
                LineId::Offset(_) => {
                    let name = st.line_name(off)?;
                    if !name.is_empty() {
                        name_map.entry(name).or_insert(off);
                    }
                }
            }
            let mut g = given(settings.as_ref())?;
            if let Some(v) = &values {
                g.settings.output_value = v.get(&off).copied().unwrap_or(false);
            }
            let s = g.resolve(|| Ok(st.opened.chip.line_info(off).map_err(to_py)?.settings.direction))?;
            cfg = cfg.line(off, s);
            realtime.push(g.realtime);
            lines.push(id);
        }
        if lines.is_empty() {
            return Err(PyValueError::new_err("request_lines: config names no lines"));
        }
        let req = st.opened.chip.request_lines(&cfg).map_err(to_py)?;
        let _ = py;
        PyLineRequest::new(req, st.info.name.clone(), lines, name_map, realtime, st.opened.board.clone())
    }

    fn __repr__(&self) -> String {
        match self.state() {
            Ok(_) => format!("wirespeed.gpio.Chip({:?})", self.path),
            Err(_) => "<Chip CLOSED>".into(),
        }
    }

    fn __str__(&self) -> String {
        match self.state() {
            Ok(st) => format!(
                "<Chip path=\"{}\" lab={} info=<ChipInfo name=\"{}\" label=\"{}\" num_lines={}>>",
                self.path,
                st.opened.board.is_some(),
                st.info.name,
                st.info.label,
                st.info.lines
            ),
            Err(_) => "<Chip CLOSED>".into(),
        }
    }
}

/// An offset or a name.
fn line_id(obj: &Bound<'_, PyAny>) -> PyResult<LineId> {
    LineId::extract(obj)?
        .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("a line is an offset (int) or a name (str)"))
}
