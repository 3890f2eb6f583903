//! `wirespeed.gpio.LineRequest`: python gpiod's `gpiod.LineRequest`.
//!
//! The stack's request is `Send` but not `Sync`: it sits behind a mutex,
//! taken only around Rust calls (never while Python code runs or the GIL is
//! released), so it is never contended for long and cannot deadlock with
//! the GIL. Waits sleep outside it, with the GIL released (see `wait`).

use super::error::{released, to_py};
use super::events;
use super::pytypes::value;
use super::settings::{config_entries, duration_us, given, LineId};
use super::wait::{WaitFds, Woke};
use pyo3::exceptions::{PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use wirespeed::gpio::{EdgeEvent, EdgeKind, GpioError, LineConfig, LineRequest, MAX_EVENT_BUFFER};
use wirespeed_labhost::Board;
use wirespeed_time::Instant;

/// Events `read_edge_events()` returns at most when not told (libgpiod's default buffer).
const DEFAULT_MAX_EVENTS: usize = 64;

#[derive(Debug)]
struct Live {
    req: LineRequest,
    /// By request index: timestamps on `CLOCK_REALTIME`.
    realtime: Vec<bool>,
    /// The request's event descriptor (owned by `req`).
    fd: RawFd,
    waits: Arc<WaitFds>,
    /// The lab board serving the chip, kept alive with the request.
    _board: Option<Arc<Board>>,
}

/// Lines requested from a chip, as python gpiod's `gpiod.LineRequest`.
///
/// Made by `Chip.request_lines` (or `wirespeed.gpio.request_lines`);
/// `release()` (or leaving a `with` block, or dropping it) frees the lines.
/// After `release()` every method raises `RequestReleasedError`.
///
/// `fileno()` is a descriptor that polls readable while edge events wait:
/// on a real chip the kernel's request descriptor, on the lab an eventfd
/// the lab keeps readable while its queue holds events. Use it with
/// `select`, `selectors`, or asyncio's `loop.add_reader`.
///
/// Example::
///
///     from datetime import timedelta
///     from wirespeed.gpio import Chip, LineSettings
///     from wirespeed.gpio.line import Direction, Edge
///     with Chip("/dev/gpiochip0", lab=lab).request_lines(
///         {"TICK": LineSettings(direction=Direction.INPUT, edge_detection=Edge.BOTH,
///                               debounce_period=timedelta(microseconds=100))}) as req:
///         while req.wait_edge_events(timedelta(seconds=1)):
///             for ev in req.read_edge_events():
///                 print(ev.event_type, ev.timestamp_ns, ev.line_offset)
#[pyclass(name = "LineRequest", module = "wirespeed.gpio", frozen)]
#[derive(Debug)]
pub struct PyLineRequest {
    live: Mutex<Option<Live>>,
    chip_name: String,
    offsets: Vec<u32>,
    lines: Vec<LineId>,
    name_map: HashMap<String, u32>,
}

impl PyLineRequest {
    pub(crate) fn new(
        req: LineRequest,
        chip_name: String,
        lines: Vec<LineId>,
        name_map: HashMap<String, u32>,
        realtime: Vec<bool>,
        board: Option<Arc<Board>>,
    ) -> PyResult<PyLineRequest> {
        let fd = req.event_fd().map_err(to_py)?;
        let waits = Arc::new(WaitFds::new(fd, req.gone_fd())?);
        let offsets = req.offsets().to_vec();
        Ok(PyLineRequest {
            live: Mutex::new(Some(Live { req, realtime, fd, waits, _board: board })),
            chip_name,
            offsets,
            lines,
            name_map,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the live request (no Python inside `f`).
    fn with<R>(&self, f: impl FnOnce(&Live) -> Result<R, GpioError>) -> PyResult<R> {
        let g = self.lock();
        let live = g.as_ref().ok_or_else(released)?;
        f(live).map_err(to_py)
    }

    fn waits(&self) -> PyResult<Arc<WaitFds>> {
        Ok(self.lock().as_ref().ok_or_else(released)?.waits.clone())
    }

    /// An offset of the request from an offset or a requested line name.
    fn offset_of(&self, line: &Bound<'_, PyAny>) -> PyResult<u32> {
        match LineId::extract(line)? {
            Some(LineId::Offset(o)) => Ok(o),
            Some(LineId::Name(n)) => {
                self.name_map.get(&n).copied().ok_or_else(|| PyValueError::new_err(format!("unknown line name: {n}")))
            }
            None => Err(PyTypeError::new_err("a line is an offset (int) or a name (str)")),
        }
    }

    fn index_of(&self, offset: u32) -> PyResult<usize> {
        self.offsets
            .iter()
            .position(|&o| o == offset)
            .ok_or_else(|| to_py(GpioError::NotRequested { offset, requested: self.offsets.clone() }))
    }

    fn read_now(&self, max: usize) -> PyResult<(Vec<EdgeEvent>, Vec<bool>)> {
        self.with(|l| {
            let blank =
                EdgeEvent { offset: 0, kind: EdgeKind::Rising, timestamp: Instant::ZERO, seqno: 0, line_seqno: 0 };
            let mut buf = vec![blank; max];
            // A backend may return fewer than are pending (the kernel's, 16 a read).
            let mut n = 0;
            while n < max {
                let got = l.req.read_edge_events(&mut buf[n..])?;
                if got == 0 {
                    break;
                }
                n += got;
            }
            buf.truncate(n);
            Ok((buf, l.realtime.clone()))
        })
    }
}

/// A timeout as gpiod takes it: `None` (no limit), a `timedelta`, or seconds.
fn timeout_of(t: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    match t.filter(|t| !t.is_none()) {
        None => Ok(None),
        Some(t) => Ok(Some(Duration::from_micros(duration_us(t).map_err(|_| {
            PyValueError::new_err("timeout: expected None, a non-negative datetime.timedelta, or seconds")
        })?))),
    }
}

fn warn(py: Python<'_>, msg: &str) -> PyResult<()> {
    let msg = CString::new(msg).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<PyUserWarning>(), &msg, 2)
}

#[pymethods]
impl PyLineRequest {
    /// True until the request is released.
    fn __bool__(&self) -> bool {
        self.lock().is_some()
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().waits()?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) {
        self.release();
    }

    /// Releases the lines; a thread waiting for events on this request wakes
    /// with `RequestReleasedError`. Releasing twice is harmless.
    fn release(&self) {
        let live = self.lock().take();
        if let Some(l) = live {
            l.waits.signal_released();
            drop(l);
        }
    }

    /// The logical value (`Value.ACTIVE` / `Value.INACTIVE`) of a requested line (offset or name).
    fn get_value<'py>(&self, py: Python<'py>, line: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let off = self.offset_of(line)?;
        let v = self.with(|l| l.req.value(off))?;
        value(py, v)
    }

    /// The logical values of `lines` (offsets or names; default: every
    /// requested line, in request order), read at once.
    #[pyo3(signature = (lines = None))]
    fn get_values<'py>(&self, py: Python<'py>, lines: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyList>> {
        let idx: Vec<usize> = match lines.filter(|l| !l.is_none()) {
            None => (0..self.offsets.len()).collect(),
            Some(ls) => {
                let mut v = Vec::new();
                for l in ls.try_iter()? {
                    v.push(self.index_of(self.offset_of(&l?)?)?);
                }
                v
            }
        };
        let mask = idx.iter().fold(0u64, |m, &i| m | 1 << i);
        let bits = if mask == 0 { 0 } else { self.with(|l| l.req.values(mask))? };
        let out = PyList::empty(py);
        for i in idx {
            out.append(value(py, bits & (1 << i) != 0)?)?;
        }
        Ok(out)
    }

    /// Sets a requested output line (offset or name) to a `Value` (or bool).
    fn set_value(&self, line: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let off = self.offset_of(line)?;
        let v = value.is_truthy()?;
        self.with(|l| l.req.set_value(off, v))
    }

    /// Sets several output lines at once: `{line: Value}`.
    fn set_values(&self, values: &Bound<'_, PyDict>) -> PyResult<()> {
        let mut pairs = Vec::with_capacity(values.len());
        for (k, v) in values.iter() {
            pairs.push((self.offset_of(&k)?, v.is_truthy()?));
        }
        self.with(|l| l.req.set_many(&pairs))
    }

    /// Replaces the lines' settings, as gpiod's `reconfigure_lines`: lines
    /// `config` leaves out (or maps to `None`) get the default settings;
    /// lines not in the request are ignored with a warning.
    fn reconfigure_lines(&self, py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut per: HashMap<u32, Option<Bound<'_, PyAny>>> = HashMap::new();
        for (id, settings) in config_entries(config)? {
            let off = match &id {
                LineId::Offset(o) => Some(*o),
                LineId::Name(n) => self.name_map.get(n).copied(),
            };
            match off.filter(|o| self.offsets.contains(o)) {
                Some(o) => {
                    per.insert(o, settings);
                }
                None => {
                    let what = match id {
                        LineId::Offset(o) => format!("Line offset '{o}'"),
                        LineId::Name(n) => format!("Line name '{n}'"),
                    };
                    warn(py, &format!("{what} was not included in original request."))?;
                }
            }
        }
        let mut givens = Vec::with_capacity(self.offsets.len());
        for &off in &self.offsets {
            givens.push((off, given(per.get(&off).and_then(|s| s.as_ref()))?));
        }
        self.with(|l| {
            let mut cfg = LineConfig::new();
            for (off, g) in &givens {
                let current = l.req.settings(*off)?.direction;
                let s = g.resolve(|| Ok(current)).expect("infallible");
                cfg = cfg.line(*off, s);
            }
            l.req.reconfigure(&cfg)
        })?;
        let mut g = self.lock();
        if let Some(l) = g.as_mut() {
            l.realtime = givens.iter().map(|(_, g)| g.realtime).collect();
        }
        Ok(())
    }

    /// Waits, with the GIL released, until edge events are ready to read:
    /// True, or False once `timeout` (a `timedelta` or seconds; 0: just
    /// look; `None`: no limit) passes.
    #[pyo3(signature = (timeout = None))]
    fn wait_edge_events(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let t = timeout_of(timeout)?;
        let waits = self.waits()?;
        match waits.wait(py, t)? {
            Woke::Events => Ok(true),
            Woke::Timeout => Ok(false),
            Woke::Released => Err(released()),
            Woke::Gone => Err(to_py(GpioError::ChipGone { chip: self.chip_name.clone() })),
        }
    }

    /// Reads up to `max_events` (default 64) pending edge events, as a list
    /// of `EdgeEvent`; blocks (GIL released) until at least one arrives, as
    /// gpiod's does.
    #[pyo3(signature = (max_events = None))]
    fn read_edge_events<'py>(&self, py: Python<'py>, max_events: Option<usize>) -> PyResult<Bound<'py, PyList>> {
        let max = max_events.unwrap_or(DEFAULT_MAX_EVENTS).clamp(1, MAX_EVENT_BUFFER);
        loop {
            let (evs, realtime) = self.read_now(max)?;
            if !evs.is_empty() {
                let offsets = &self.offsets;
                return events::to_list(py, &evs, |off| {
                    offsets.iter().position(|&o| o == off).is_some_and(|i| realtime.get(i).copied().unwrap_or(false))
                });
            }
            match self.waits()?.wait(py, None)? {
                Woke::Released => return Err(released()),
                Woke::Gone => return Err(to_py(GpioError::ChipGone { chip: self.chip_name.clone() })),
                Woke::Events | Woke::Timeout => {}
            }
        }
    }

    /// The descriptor that polls readable while edge events wait (owned by
    /// the request: do not close it; invalid after `release()`).
    fn fileno(&self) -> PyResult<RawFd> {
        Ok(self.lock().as_ref().ok_or_else(released)?.fd)
    }

    /// Same as `fileno()`.
    #[getter]
    fn fd(&self) -> PyResult<RawFd> {
        self.fileno()
    }

    /// The chip's name (`gpiochip0`).
    #[getter]
    fn chip_name(&self) -> PyResult<String> {
        self.waits()?;
        Ok(self.chip_name.clone())
    }

    /// Number of requested lines.
    #[getter]
    fn num_lines(&self) -> PyResult<usize> {
        self.waits()?;
        Ok(self.offsets.len())
    }

    /// The requested offsets (lines requested by name mapped to offsets).
    #[getter]
    fn offsets(&self) -> PyResult<Vec<u32>> {
        self.waits()?;
        Ok(self.offsets.clone())
    }

    /// The requested lines as given (offsets or names).
    #[getter]
    fn lines<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.waits()?;
        let l = PyList::empty(py);
        for id in &self.lines {
            l.append(id.to_py(py)?)?;
        }
        Ok(l)
    }

    fn __str__(&self) -> String {
        match self.lock().as_ref() {
            Some(l) => format!(
                "<LineRequest chip=\"{}\" num_lines={} offsets={:?} fd={}>",
                self.chip_name,
                self.offsets.len(),
                self.offsets,
                l.fd
            ),
            None => "<LineRequest RELEASED>".into(),
        }
    }

    fn __repr__(&self) -> String {
        self.__str__()
    }
}
