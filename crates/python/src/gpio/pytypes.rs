//! The Python-side types of `wirespeed.gpio` (defined in `wirespeed/gpio.py`:
//! the enums, `LineSettings`, `ChipInfo`, `LineInfo`, `EdgeEvent`, shaped as
//! python gpiod's), looked up once and kept.
//!
//! The enums carry python gpiod's integer values, so a value of gpiod's own
//! enums (or a plain int) is accepted wherever one of ours is.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

const MODULE: &str = "wirespeed.gpio";

macro_rules! py_type {
    ($fn:ident, $name:literal) => {
        #[doc = concat!("`wirespeed.gpio.", $name, "`.")]
        pub fn $fn(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
            static T: PyOnceLock<Py<PyType>> = PyOnceLock::new();
            T.import(py, MODULE, $name)
        }
    };
}

py_type!(value_type, "Value");
py_type!(chip_info_type, "ChipInfo");
py_type!(line_info_type, "LineInfo");
py_type!(edge_event_type, "EdgeEvent");

// python gpiod's integer values (gpiod._ext constants).
pub const VALUE_INACTIVE: i64 = 0;
pub const VALUE_ACTIVE: i64 = 1;
pub const DIRECTION_AS_IS: i64 = 1;
pub const DIRECTION_INPUT: i64 = 2;
pub const DIRECTION_OUTPUT: i64 = 3;
pub const BIAS_AS_IS: i64 = 1;
pub const BIAS_UNKNOWN: i64 = 2;
pub const BIAS_DISABLED: i64 = 3;
pub const BIAS_PULL_UP: i64 = 4;
pub const BIAS_PULL_DOWN: i64 = 5;
pub const DRIVE_PUSH_PULL: i64 = 1;
pub const DRIVE_OPEN_DRAIN: i64 = 2;
pub const DRIVE_OPEN_SOURCE: i64 = 3;
pub const EDGE_NONE: i64 = 1;
pub const EDGE_RISING: i64 = 2;
pub const EDGE_FALLING: i64 = 3;
pub const EDGE_BOTH: i64 = 4;
pub const CLOCK_MONOTONIC: i64 = 1;
pub const CLOCK_REALTIME: i64 = 2;
pub const CLOCK_HTE: i64 = 3;
pub const EDGE_EVENT_RISING: i64 = 1;
pub const EDGE_EVENT_FALLING: i64 = 2;

/// `Value.ACTIVE` / `Value.INACTIVE`.
pub fn value(py: Python<'_>, active: bool) -> PyResult<Bound<'_, PyAny>> {
    static MEMBERS: PyOnceLock<[Py<PyAny>; 2]> = PyOnceLock::new();
    let m = MEMBERS.get_or_try_init(py, || -> PyResult<_> {
        let t = value_type(py)?;
        Ok([t.call1((VALUE_INACTIVE,))?.unbind(), t.call1((VALUE_ACTIVE,))?.unbind()])
    })?;
    Ok(m[usize::from(active)].bind(py).clone())
}

/// The integer of an enum member (`.value`), or of a plain int; `what` names the setting in errors.
pub fn enum_int(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    let v = match obj.getattr("value") {
        Ok(v) => v,
        Err(_) => obj.clone(),
    };
    v.extract::<i64>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{what}: expected a wirespeed.gpio.line enum member, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
        ))
    })
}
