//! `wirespeed.ad7606`: the AD7606 driver (`wirespeed_drivers::ad7606`) for
//! Python, on a lab board or on real `/dev` nodes.
//!
//! ```python
//! lab = wirespeed.lab.load("examples/lab.toml")
//! adc = wirespeed.ad7606.Ad7606(lab=lab, spi=(0, 2), convst=("/dev/gpiochip0", 8),
//!                               busy=("/dev/gpiochip0", 9))
//! codes, t_ns = adc.sample()            # 8 ints, CONVST instant (CLOCK_MONOTONIC ns)
//! volts = adc.volts(codes)              # 8 floats
//! codes, stamps, overruns = adc.read(10_000, 50_000)   # array('h') n*8, array('Q') n
//! ```
//!
//! Every call into the driver runs with the GIL released. The SPI node is
//! opened as `wirespeed.SpiDev` opens one (the same spidev ioctls on a lab
//! node or a real one), the lines as `wirespeed.gpio.Chip` opens them.

use crate::errors;
use crate::lab::{self, PyLab};
use crate::node::{NodeHandle, NodeIo};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use wirespeed::gpio::{Edge, LineRequest, LineSettings, RequestConfig};
use wirespeed::linux::spidev::{Limits, Spidev};
use wirespeed::spi::{Bus, Policy};
use wirespeed_drivers::ad7606::{self as drv, Busy, Config, Error, Range, SampleRing, CHANNELS};
use wirespeed_labhost::Board;

/// The driver's error as a Python exception: `ValueError` for a setting
/// refused before anything is sent, `TimeoutError` for BUSY that never
/// fell, the SPI layer's `OSError`s, `OSError(EIO)` for a GPIO failure.
fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    match e {
        Error::InvalidConfig { .. } => PyValueError::new_err(text),
        Error::BusyTimeout { .. } => PyTimeoutError::new_err(text),
        Error::Spi(s) => {
            let inner = errors::spi(s);
            Python::attach(|py| {
                let e = PyOSError::new_err((libc::EIO, text));
                e.set_cause(py, Some(inner));
                e
            })
        }
        Error::Gpio { .. } => PyOSError::new_err((libc::EIO, text)),
        Error::RingInUse | Error::Thread(_) => PyRuntimeError::new_err(text),
    }
}

/// The SPI node's path from `(bus, cs)` or a path string.
fn spi_path(spi: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(p) = spi.extract::<String>() {
        return Ok(p);
    }
    match spi.extract::<(u32, u32)>() {
        Ok((bus, cs)) => Ok(format!("/dev/spidev{bus}.{cs}")),
        Err(_) => Err(PyValueError::new_err(format!(
            "spi: a (bus, chip select) pair such as (0, 2) or a path such as \"/dev/spidev0.2\", not {}",
            spi.repr()?
        ))),
    }
}

/// `(chip path, offset)`.
fn line_arg(v: &Bound<'_, PyAny>, what: &str) -> PyResult<(String, u32)> {
    v.extract::<(String, u32)>().map_err(|_| {
        let r = v.repr().map(|r| r.to_string()).unwrap_or_default();
        PyValueError::new_err(format!(
            "{what}: a (chip path, line offset) pair such as (\"/dev/gpiochip0\", 8), not {r}"
        ))
    })
}

/// Opens the spidev node at `path` (on `board` when given) as a stack bus.
fn open_bus(board: Option<&(Arc<Board>, String)>, path: &str) -> PyResult<Bus> {
    let node = match board {
        Some((b, name)) => NodeHandle::Lab(lab::open_node(b, name, path)?),
        None => NodeHandle::open_fd(path).map_err(|e| errors::os_error(e, format!("{path}: open failed")))?,
    };
    let backend = Spidev::with_io(NodeIo(node), path.to_owned(), Limits::with_bufsiz(Limits::DEFAULT_BUFSIZ))
        .map_err(errors::open)?;
    Bus::try_with_message_backend(backend, Policy::fast())
        .map_err(|e| errors::os_error(e.source.raw_os_error().unwrap_or(libc::EAGAIN), e.to_string()))
}

/// Requests one line of the chip at `path`.
fn request(
    py: Python<'_>,
    board: Option<&(Arc<Board>, String)>,
    path: &str,
    cfg: RequestConfig,
) -> PyResult<LineRequest> {
    let opened = crate::gpio::source::open(py, path, board.cloned())?;
    opened.chip.request_lines(&cfg).map_err(|e| PyOSError::new_err((libc::EIO, format!("{path}: {e}"))))
}

/// The driver and the ring `read` fills (kept between calls).
#[derive(Debug)]
struct State {
    adc: drv::Ad7606,
    ring: Option<SampleRing>,
}

/// An AD7606 on a spidev node with CONVST and (optionally) BUSY on GPIO lines.
///
/// `Ad7606(spi=(0, 2), convst=("/dev/gpiochip0", 8), busy=("/dev/gpiochip0", 9),
/// busy_mode="auto", range=10, oversampling=1, speed_hz=20_000_000, lab=None)`:
/// `busy_mode` "auto" waits on BUSY when `busy` is given (the driver polls
/// or sleeps, whichever its figures say is faster) and the datasheet's
/// maximum conversion time otherwise; "edge" requires `busy`; "predicted"
/// never reads BUSY. `range` is the part's strapping: 10 (±10 V) or 5 (±5 V).
/// `max_lag_us`: how late `read` may start a conversion and still catch it
/// up (at least a period); later periods are overruns.
#[pyclass(name = "Ad7606", module = "wirespeed.ad7606", frozen)]
#[derive(Debug)]
pub struct PyAd7606 {
    state: Mutex<State>,
    lsb_volts: f64,
    overruns: std::sync::atomic::AtomicU64,
    /// The lab board serving the nodes, kept alive with the driver.
    _board: Option<Arc<Board>>,
}

impl PyAd7606 {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyAd7606 {
    #[new]
    #[pyo3(signature = (spi = None, convst = None, busy = None, *, busy_mode = "auto", range = 10.0,
                        oversampling = 1, speed_hz = 20_000_000, max_lag_us = 1000, lab = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        spi: Option<&Bound<'_, PyAny>>,
        convst: Option<&Bound<'_, PyAny>>,
        busy: Option<&Bound<'_, PyAny>>,
        busy_mode: &str,
        range: f64,
        oversampling: u8,
        speed_hz: u32,
        max_lag_us: u64,
        lab: Option<&Bound<'_, PyLab>>,
    ) -> PyResult<PyAd7606> {
        let range = if range == 10.0 {
            Range::Pm10V
        } else if range == 5.0 {
            Range::Pm5V
        } else {
            return Err(PyValueError::new_err(format!("range: 10 (±10 V) or 5 (±5 V), not {range}")));
        };
        let max_lag = std::time::Duration::from_micros(max_lag_us);
        let cfg = Config { range, oversampling, max_lag, ..Config::default() };
        cfg.validate().map_err(to_py)?;
        let spi_path = match spi {
            Some(s) => spi_path(s)?,
            None => return Err(PyValueError::new_err("spi: the ADC's spidev node is needed, e.g. spi=(0, 2)")),
        };
        let convst = match convst {
            Some(c) => line_arg(c, "convst")?,
            None => {
                return Err(PyValueError::new_err(
                    "convst: CONVST's line is needed, e.g. convst=(\"/dev/gpiochip0\", 8)",
                ))
            }
        };
        let busy = busy.filter(|b| !b.is_none()).map(|b| line_arg(b, "busy")).transpose()?;
        let busy = match (busy_mode, busy) {
            ("auto", b) | ("edge", b @ Some(_)) => b,
            ("edge", None) => {
                return Err(PyValueError::new_err("busy_mode=\"edge\" needs busy=(chip path, line offset)"));
            }
            ("predicted", _) => None,
            (m, _) => {
                return Err(PyValueError::new_err(format!("busy_mode: \"auto\", \"edge\" or \"predicted\", not {m:?}")))
            }
        };
        let board = lab::board_for(py, lab.map(|l| l.get()))?;
        // Only the lab's nodes are checked against the board: with no lab
        // (and no WIRESPEED_LAB), the system's /dev nodes are opened.
        let bus = open_bus(board.as_ref(), &spi_path)?;
        let dev = bus.device(drv::device_config(0, speed_hz)).map_err(errors::invalid)?;
        let convst_req = request(
            py,
            board.as_ref(),
            &convst.0,
            RequestConfig::new("ad7606-convst").line(convst.1, LineSettings::output(false)),
        )?;
        let busy = match busy {
            Some((path, offset)) => Busy::Edge(request(
                py,
                board.as_ref(),
                &path,
                RequestConfig::new("ad7606-busy").line(offset, LineSettings::input().edge(Edge::Falling)),
            )?),
            None => Busy::Predicted,
        };
        let adc = py.detach(move || drv::Ad7606::new(dev, convst_req, busy, cfg)).map_err(to_py)?;
        Ok(PyAd7606 {
            state: Mutex::new(State { adc, ring: None }),
            lsb_volts: range.volts() / 32768.0,
            overruns: Default::default(),
            _board: board.map(|(b, _)| b),
        })
    }

    /// One conversion of the eight channels: `(codes, timestamp_ns)`, codes
    /// a tuple of 8 ints (V1..V8, −32768..32767), the timestamp the CONVST
    /// instant on `CLOCK_MONOTONIC` (`time.monotonic_ns()`'s clock).
    fn sample<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let s = py.detach(|| self.lock().adc.sample()).map_err(to_py)?;
        let codes = PyTuple::new(py, s.codes)?;
        PyTuple::new(py, [codes.into_any(), s.timestamp.as_ns().into_pyobject(py)?.into_any()])
    }

    /// Volts of `codes` (any sequence of ints, e.g. a `sample()`'s codes or
    /// a numpy row); with no argument, of a new sample. A list of floats.
    #[pyo3(signature = (codes = None))]
    fn volts(&self, py: Python<'_>, codes: Option<Vec<i64>>) -> PyResult<Vec<f64>> {
        let codes = match codes {
            Some(c) => c,
            None => {
                py.detach(|| self.lock().adc.sample()).map_err(to_py)?.codes.iter().map(|&c| i64::from(c)).collect()
            }
        };
        Ok(codes.iter().map(|&c| c as f64 * self.lsb_volts).collect())
    }

    /// Samples `n` sets at `rate_hz` (paced on the monotonic clock, in this
    /// thread with the GIL released): `(codes, timestamps_ns, overruns)`,
    /// `codes` an `array('h')` of `8 · got` values (row-major: set, channel),
    /// `timestamps_ns` an `array('Q')` of `got`, where `got = n − overruns`
    /// (periods the sampler missed). `numpy.frombuffer(codes, numpy.int16).reshape(-1, 8)`.
    fn read<'py>(&self, py: Python<'py>, n: usize, rate_hz: f64) -> PyResult<Bound<'py, PyTuple>> {
        if !(1..=1 << 26).contains(&n) {
            return Err(PyValueError::new_err(format!("n: 1..=67108864 sample sets, not {n}")));
        }
        let (codes, stamps, overruns) = py
            .detach(|| {
                let mut st = self.lock();
                let st = &mut *st;
                if st.ring.as_ref().is_none_or(|r| r.capacity() < n) {
                    st.ring = Some(SampleRing::new(n)?);
                }
                let ring = st.ring.as_ref().expect("just made");
                while ring.pop().is_some() {}
                let report = st.adc.run(rate_hz, Some(n as u64), ring, &AtomicBool::new(false))?;
                let got = ring.len();
                let mut codes = vec![0i16; got * CHANNELS];
                let mut stamps = vec![0u64; got];
                let got = ring.drain_into(&mut codes, &mut stamps);
                codes.truncate(got * CHANNELS);
                stamps.truncate(got);
                Ok::<_, Error>((codes, stamps, report.overruns()))
            })
            .map_err(to_py)?;
        self.overruns.fetch_add(overruns, std::sync::atomic::Ordering::Relaxed);
        let array = py.import("array")?.getattr("array")?;
        let c = array.call1(("h",))?;
        c.call_method1(
            "frombytes",
            (PyBytes::new(py, &codes.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>()),),
        )?;
        let t = array.call1(("Q",))?;
        t.call_method1(
            "frombytes",
            (PyBytes::new(py, &stamps.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>()),),
        )?;
        PyTuple::new(py, [c, t, overruns.into_pyobject(py)?.into_any()])
    }

    /// Overruns of every `read` so far (periods missed, sets dropped).
    #[getter]
    fn overruns(&self) -> u64 {
        self.overruns.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets read so far.
    #[getter]
    fn samples(&self) -> u64 {
        self.lock().adc.samples()
    }

    /// How the end of a conversion is waited for: "poll", "sleep" or "predicted".
    #[getter]
    fn busy_mode(&self) -> String {
        format!("{:?}", self.lock().adc.busy_mode()).to_lowercase()
    }

    /// The input range, V (10.0 or 5.0).
    #[getter]
    fn range(&self) -> f64 {
        self.lock().adc.config().range.volts()
    }

    /// The oversampling ratio.
    #[getter]
    fn oversampling(&self) -> u8 {
        self.lock().adc.config().oversampling
    }

    /// The highest rate `read` accepts at this oversampling, Hz.
    #[getter]
    fn max_rate_hz(&self) -> PyResult<f64> {
        self.lock().adc.config().max_rate_hz().map_err(to_py)
    }

    fn __repr__(&self) -> String {
        let st = self.lock();
        let c = st.adc.config();
        format!(
            "<wirespeed.ad7606.Ad7606 ±{} V oversampling {} busy {:?}>",
            c.range.volts(),
            c.oversampling,
            st.adc.busy_mode()
        )
    }
}

/// Adds the `ad7606` submodule to `parent`.
pub fn register(py: Python<'_>, parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(py, "ad7606")?;
    m.add_class::<PyAd7606>()?;
    m.add("CHANNELS", CHANNELS)?;
    parent.add_submodule(&m)?;
    Ok(())
}
