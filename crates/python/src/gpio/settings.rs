//! `LineSettings` (python gpiod's dataclass, `wirespeed.gpio.LineSettings`)
//! to the stack's [`LineSettings`], and the `config` mappings of
//! `request_lines` / `reconfigure_lines`.
//!
//! Any object with gpiod's attribute names is accepted (so gpiod's own
//! `LineSettings` works too); `None` means the defaults.

use super::error::os_error;
use super::pytypes::*;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::time::Duration;
use wirespeed::gpio::{Bias, Direction, Drive, Edge, LineSettings};

/// One line's settings as given, before `Direction.AS_IS` is resolved.
#[derive(Clone, Copy, Debug, Default)]
pub struct Given {
    /// `None`: `Direction.AS_IS` (keep the line's current direction).
    pub direction: Option<Direction>,
    /// The stack settings (direction filled in by [`Given::resolve`]).
    pub settings: LineSettings,
    /// `Clock.REALTIME`: timestamps converted to `CLOCK_REALTIME`.
    pub realtime: bool,
}

impl Given {
    /// The settings with `AS_IS` resolved: the line's `current` direction,
    /// input when edge detection is asked for (as libgpiod does).
    pub fn resolve(&self, current: impl FnOnce() -> PyResult<Direction>) -> PyResult<LineSettings> {
        let mut s = self.settings;
        s.direction = match self.direction {
            Some(d) => d,
            None if s.edge != Edge::None => Direction::Input,
            None => current()?,
        };
        Ok(s)
    }
}

fn attr<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match obj.getattr(name) {
        Ok(v) if v.is_none() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(obj.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

fn bad(what: &str, v: i64) -> PyErr {
    PyValueError::new_err(format!("invalid {what}: {v}"))
}

/// A debounce period: a `timedelta`, or seconds as a number; truncated to
/// whole microseconds as python gpiod does.
pub fn duration_us(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    let us = if obj.hasattr("microseconds")? && obj.hasattr("days")? {
        let days: i64 = obj.getattr("days")?.extract()?;
        let secs: i64 = obj.getattr("seconds")?.extract()?;
        let us: i64 = obj.getattr("microseconds")?.extract()?;
        days.saturating_mul(86_400_000_000).saturating_add(secs * 1_000_000).saturating_add(us)
    } else if let Ok(s) = obj.extract::<f64>() {
        (s * 1e6) as i64
    } else {
        return Err(PyTypeError::new_err("debounce_period: expected a datetime.timedelta or seconds"));
    };
    u64::try_from(us).map_err(|_| PyValueError::new_err("debounce_period: must not be negative"))
}

/// Reads one `LineSettings` object (`None`: the defaults).
pub fn given(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Given> {
    let mut g = Given::default();
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(g);
    };
    if let Some(v) = attr(obj, "direction")? {
        g.direction = match enum_int(&v, "direction")? {
            DIRECTION_AS_IS => None,
            DIRECTION_INPUT => Some(Direction::Input),
            DIRECTION_OUTPUT => Some(Direction::Output),
            n => return Err(bad("direction", n)),
        };
    }
    let s = &mut g.settings;
    if let Some(v) = attr(obj, "edge_detection")? {
        s.edge = match enum_int(&v, "edge_detection")? {
            EDGE_NONE => Edge::None,
            EDGE_RISING => Edge::Rising,
            EDGE_FALLING => Edge::Falling,
            EDGE_BOTH => Edge::Both,
            n => return Err(bad("edge_detection", n)),
        };
    }
    if let Some(v) = attr(obj, "bias")? {
        s.bias = match enum_int(&v, "bias")? {
            BIAS_AS_IS => Bias::AsIs,
            BIAS_DISABLED => Bias::Disabled,
            BIAS_PULL_UP => Bias::PullUp,
            BIAS_PULL_DOWN => Bias::PullDown,
            BIAS_UNKNOWN => return Err(PyValueError::new_err("invalid bias: Bias.UNKNOWN cannot be requested")),
            n => return Err(bad("bias", n)),
        };
    }
    if let Some(v) = attr(obj, "drive")? {
        s.drive = match enum_int(&v, "drive")? {
            DRIVE_PUSH_PULL => Drive::PushPull,
            DRIVE_OPEN_DRAIN => Drive::OpenDrain,
            DRIVE_OPEN_SOURCE => Drive::OpenSource,
            n => return Err(bad("drive", n)),
        };
    }
    if let Some(v) = attr(obj, "active_low")? {
        s.active_low = v.is_truthy()?;
    }
    if let Some(v) = attr(obj, "debounce_period")? {
        s.debounce = Duration::from_micros(duration_us(&v)?);
    }
    if let Some(v) = attr(obj, "event_clock")? {
        g.realtime = match enum_int(&v, "event_clock")? {
            CLOCK_MONOTONIC => false,
            CLOCK_REALTIME => true,
            CLOCK_HTE => {
                return Err(os_error(
                    libc::EOPNOTSUPP,
                    "event_clock=Clock.HTE: no hardware timestamp engine (use MONOTONIC or REALTIME)",
                ))
            }
            n => return Err(bad("event_clock", n)),
        };
    }
    if let Some(v) = attr(obj, "output_value")? {
        s.output_value = v.is_truthy()?;
    }
    Ok(g)
}

/// A line as named in a config: its offset or its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineId {
    /// An offset on the chip.
    Offset(u32),
    /// A line name (or an offset as a string).
    Name(String),
}

impl LineId {
    /// Reads an `int` or `str`.
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Option<LineId>> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Some(LineId::Name(s.to_cow()?.into_owned())));
        }
        if obj.is_instance_of::<pyo3::types::PyInt>() {
            let n: i64 = obj.extract()?;
            let off = u32::try_from(n).map_err(|_| PyValueError::new_err(format!("invalid line offset {n}")))?;
            return Ok(Some(LineId::Offset(off)));
        }
        Ok(None)
    }

    /// Back to Python (as given).
    pub fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            LineId::Offset(o) => o.into_pyobject(py)?.into_any(),
            LineId::Name(n) => PyString::new(py, n).into_any(),
        })
    }
}

/// The entries of a `config` mapping, as python gpiod's `config_iter`: a key
/// is an offset, a name, or an iterable of them sharing the settings.
pub fn config_entries<'py>(config: &Bound<'py, PyAny>) -> PyResult<Vec<(LineId, Option<Bound<'py, PyAny>>)>> {
    let dict = config
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("config: expected a dict mapping lines to LineSettings"))?;
    let mut out = Vec::new();
    for (k, v) in dict.iter() {
        let v = (!v.is_none()).then_some(v);
        if let Some(id) = LineId::extract(&k)? {
            out.push((id, v));
            continue;
        }
        let iter = k.try_iter().map_err(|_| {
            PyTypeError::new_err("config keys: expected a line offset, a line name, or a tuple of them")
        })?;
        for sub in iter {
            let sub = sub?;
            let id = LineId::extract(&sub)?
                .ok_or_else(|| PyTypeError::new_err("config keys: a tuple may hold line offsets and names only"))?;
            out.push((id, v.clone()));
        }
    }
    Ok(out)
}
