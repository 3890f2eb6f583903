//! `wirespeed.gpio`: GPIO shaped like python gpiod 2.x, on the kernel's GPIO
//! character device (`/dev/gpiochipN`, uAPI v2) and on the emulated lab.
//!
//! The native part: `Chip` (`chip.rs`), `LineRequest` (`request.rs`), the
//! exceptions (`error.rs`). `wirespeed/gpio.py` adds python gpiod's enums
//! (`wirespeed.gpio.line`: `Direction`, `Value`, `Bias`, `Drive`, `Edge`,
//! `Clock`, with gpiod's values), the `LineSettings`, `ChipInfo`,
//! `LineInfo` and `EdgeEvent` dataclasses and `request_lines()`; the native
//! code makes and reads those (`pytypes.rs`, `settings.rs`, `events.rs`).
//!
//! Porting a python gpiod script: `import gpiod` → `import wirespeed.gpio as
//! gpiod`, `from gpiod.line import …` → `from wirespeed.gpio.line import …`.
//! The differences are listed in `wirespeed/gpio.py`'s docstring.

mod chip;
mod error;
mod events;
mod pytypes;
mod request;
mod settings;
pub mod source;
mod wait;

use pyo3::prelude::*;

pub use chip::PyChip;
pub use error::{ChipClosedError, RequestReleasedError};
pub use request::PyLineRequest;

/// Adds the `gpio` submodule to `parent`.
pub fn register(py: Python<'_>, parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(py, "gpio")?;
    m.add_class::<PyChip>()?;
    m.add_class::<PyLineRequest>()?;
    m.add("ChipClosedError", py.get_type::<ChipClosedError>())?;
    m.add("RequestReleasedError", py.get_type::<RequestReleasedError>())?;
    parent.add_submodule(&m)?;
    Ok(())
}
