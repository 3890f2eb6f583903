//! Messages from Python: [`PyTransfer`] (one transfer with the kernel's
//! knobs), `SpiDev.message` (run at once), [`PyPreparedMessage`]
//! (validated once, run many times, its buffers reused) and
//! [`PyPending`] (a submitted message: `wait()` or `await`).

use crate::buffer::Buf;
use crate::data::{bytes_arg, Bytes};
use crate::errors;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use wirespeed::spi::{OwnedTransfer, PreparedMessage, SpiDevice, SpiError, Transfer};

/// One transfer of a message.
///
/// - `tx`: bytes to send (any bytes-like object, or a sequence of ints); none: zeros are sent.
/// - `rx_len`: bytes to receive (with `tx`: its length, full duplex).
/// - `rx`: a writable buffer to receive into (instead of `rx_len`).
/// - `speed_hz`, `bits_per_word`: 0 = the device's; `delay_ns`: wait after it;
///   `cs_change`: release CS after it (inside a message), or keep CS active after the
///   message (on the last one); `cs_change_delay_ns`: how long CS stays released
///   (`None`: the policy's default, the kernel's 10 µs under the kernel presets; 0: none);
///   `word_delay_ns`: pause between words.
///
/// ```python
/// from wirespeed import Transfer
/// # a NOR flash's JEDEC ID: write 0x9f, then read 3 bytes, CS held across both
/// cmd, jedec = dev.message([Transfer(tx=b"\x9f"), Transfer(rx_len=3)])
/// ```
#[pyclass(name = "Transfer", module = "wirespeed", frozen)]
#[derive(Debug)]
pub struct PyTransfer {
    /// Bytes to send (or None).
    #[pyo3(get)]
    tx: Option<Py<PyAny>>,
    /// A writable buffer to receive into (or None).
    #[pyo3(get)]
    rx: Option<Py<PyAny>>,
    /// Bytes to receive into a new `bytes` (or None).
    #[pyo3(get)]
    rx_len: Option<usize>,
    /// Clock for this transfer (0: the device's).
    #[pyo3(get)]
    speed_hz: u32,
    /// Bits per word (0: the device's).
    #[pyo3(get)]
    bits_per_word: u8,
    /// Wait after this transfer (ns).
    #[pyo3(get)]
    delay_ns: u32,
    /// Kernel `cs_change`.
    #[pyo3(get)]
    cs_change: bool,
    /// CS inactive time of a `cs_change` (ns; None: the device's).
    #[pyo3(get)]
    cs_change_delay_ns: Option<u32>,
    /// Pause between words (ns).
    #[pyo3(get)]
    word_delay_ns: u32,
}

#[pymethods]
impl PyTransfer {
    #[new]
    #[pyo3(signature = (tx = None, rx_len = None, *, rx = None, speed_hz = 0, bits_per_word = 0, delay_ns = 0,
                        cs_change = false, cs_change_delay_ns = None, word_delay_ns = 0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tx: Option<Py<PyAny>>,
        rx_len: Option<usize>,
        rx: Option<Py<PyAny>>,
        speed_hz: u32,
        bits_per_word: u8,
        delay_ns: u32,
        cs_change: bool,
        cs_change_delay_ns: Option<u32>,
        word_delay_ns: u32,
    ) -> PyResult<Self> {
        if tx.is_none() && rx.is_none() && rx_len.is_none() {
            return Err(PyValueError::new_err("Transfer: give tx (bytes to send), rx_len or rx (bytes to receive)"));
        }
        if rx.is_some() && rx_len.is_some() {
            return Err(PyValueError::new_err("Transfer: give rx (a buffer to fill) or rx_len, not both"));
        }
        Ok(PyTransfer {
            tx,
            rx,
            rx_len,
            speed_hz,
            bits_per_word,
            delay_ns,
            cs_change,
            cs_change_delay_ns,
            word_delay_ns,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let tx = self.tx.as_ref().map(|t| t.bind(py).len().map_or("?".into(), |n| n.to_string()));
        let rx = self.rx.as_ref().map(|t| t.bind(py).len().map_or("?".into(), |n| n.to_string()));
        format!(
            "Transfer(tx={} bytes, rx={}, speed_hz={}, delay_ns={}, cs_change={})",
            tx.unwrap_or_else(|| "no".into()),
            rx.or(self.rx_len.map(|n| format!("{n} bytes"))).unwrap_or_else(|| "none".into()),
            self.speed_hz,
            self.delay_ns,
            if self.cs_change { "True" } else { "False" }
        )
    }
}

impl PyTransfer {
    fn knobs<'a>(&self, t: Transfer<'a>) -> Transfer<'a> {
        let t = t.speed_hz(self.speed_hz).bits_per_word(self.bits_per_word).delay_after_ns(self.delay_ns);
        let t = t.word_delay_ns(self.word_delay_ns);
        if self.cs_change {
            t.cs_change(self.cs_change_delay_ns)
        } else {
            t
        }
    }

    fn owned_knobs(&self, t: OwnedTransfer) -> OwnedTransfer {
        let t = t.speed_hz(self.speed_hz).bits_per_word(self.bits_per_word).delay_after_ns(self.delay_ns);
        let t = t.word_delay_ns(self.word_delay_ns);
        if self.cs_change {
            t.cs_change(self.cs_change_delay_ns)
        } else {
            t
        }
    }
}

/// Where a transfer's received bytes go.
enum Rx {
    None,
    Buf(Buf),
    Vec(Vec<u8>),
}

fn length_error(i: usize, tx: usize, rx: usize) -> PyErr {
    PyValueError::new_err(format!(
        "transfer {i}: tx is {tx} bytes but rx is {rx} bytes; a full-duplex transfer needs equal lengths"
    ))
}

/// Runs `transfers` as one message on `dev`; one result per transfer.
pub fn run_message(py: Python<'_>, dev: &SpiDevice, transfers: &[PyRef<'_, PyTransfer>]) -> PyResult<Py<PyList>> {
    if transfers.is_empty() {
        return Err(PyValueError::new_err("message: empty message: give at least one Transfer"));
    }
    let mut txs: Vec<Option<Bytes>> = Vec::with_capacity(transfers.len());
    let mut rxs: Vec<Rx> = Vec::with_capacity(transfers.len());
    for (i, t) in transfers.iter().enumerate() {
        let tx = t.tx.as_ref().map(|o| bytes_arg(o.bind(py), format_args!("transfer {i} tx"), true)).transpose()?;
        let txlen = tx.as_ref().map(|b| b.as_slice().len());
        let rx = match (&t.rx, t.rx_len) {
            (Some(o), _) => {
                let b = Buf::get(o.bind(py), true)?;
                if let Some(n) = txlen.filter(|&n| n != b.len()) {
                    return Err(length_error(i, n, b.len()));
                }
                Rx::Buf(b)
            }
            (None, Some(n)) => {
                if let Some(m) = txlen.filter(|&m| m != n) {
                    return Err(length_error(i, m, n));
                }
                Rx::Vec(vec![0; n])
            }
            (None, None) => Rx::None,
        };
        txs.push(tx);
        rxs.push(rx);
    }
    {
        let mut ts: Vec<Transfer<'_>> = Vec::with_capacity(transfers.len());
        for ((t, tx), rx) in transfers.iter().zip(&txs).zip(rxs.iter_mut()) {
            let tx = tx.as_ref().map(|b| b.as_slice());
            let rx: Option<&mut [u8]> = match rx {
                Rx::None => None,
                Rx::Buf(b) => Some(b.as_mut_slice()),
                Rx::Vec(v) => Some(v.as_mut_slice()),
            };
            let x = match (tx, rx) {
                (Some(tx), Some(rx)) => Transfer::duplex(tx, rx),
                (Some(tx), None) => Transfer::write(tx),
                (None, Some(rx)) => Transfer::read(rx),
                (None, None) => Transfer::write(&[]),
            };
            ts.push(t.knobs(x));
        }
        py.detach(|| dev.sync(&mut ts)).map_err(errors::spi)?;
    }
    let out = PyList::empty(py);
    for (t, rx) in transfers.iter().zip(rxs) {
        match rx {
            Rx::None => out.append(py.None())?,
            Rx::Buf(b) => {
                drop(b);
                out.append(t.rx.as_ref().map(|o| o.clone_ref(py)))?
            }
            Rx::Vec(v) => out.append(PyBytes::new(py, &v))?,
        }
    }
    Ok(out.unbind())
}

/// A prepared message and its completion, shared with its pending submission.
#[derive(Debug, Default)]
struct Slot {
    /// The message (None while submitted).
    msg: Option<PreparedMessage>,
    /// Submissions made, and the result of the last one completed.
    submitted: u64,
    completed: u64,
    result: Option<Result<(), SpiError>>,
}

#[derive(Debug, Default)]
struct Shared {
    slot: Mutex<Slot>,
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn in_flight() -> PyErr {
    PyRuntimeError::new_err("the message is submitted and not finished: wait for its Pending first")
}

/// A message validated once: `run()` it any number of times with no
/// validation; change what it sends with `set_tx`; read
/// what came back with `rx(i)`, `results()` or `readinto(i, buffer)`.
/// Transfers given an `rx` buffer get it filled after every run.
///
/// ```python
/// status = dev.prepare([Transfer(tx=b"\x05\x00")])   # a flash's status register
/// for _ in range(1000):
///     status.run()
///     if status.rx(0)[1] & 1 == 0:
///         break
/// ```
///
/// It keeps the settings of the `SpiDev` it was prepared on (a later
/// change of `mode` or `max_speed_hz` does not apply to it).
#[pyclass(name = "PreparedMessage", module = "wirespeed", frozen)]
#[derive(Debug)]
pub struct PyPreparedMessage {
    dev: SpiDevice,
    shared: Arc<Shared>,
    /// Buffers given as `rx`, filled after every run.
    outs: Vec<Option<Py<PyAny>>>,
    /// Transfer lengths (for errors and `rx`).
    lens: Vec<usize>,
}

impl PyPreparedMessage {
    /// Prepares `transfers` for `dev`.
    pub fn new(dev: SpiDevice, transfers: &[PyRef<'_, PyTransfer>]) -> PyResult<Self> {
        let py = match transfers.first() {
            Some(t) => t.py(),
            None => return Err(PyValueError::new_err("prepare: empty message: give at least one Transfer")),
        };
        let mut owned = Vec::with_capacity(transfers.len());
        let mut outs = Vec::with_capacity(transfers.len());
        let mut lens = Vec::with_capacity(transfers.len());
        for (i, t) in transfers.iter().enumerate() {
            let tx = t
                .tx
                .as_ref()
                .map(|o| bytes_arg(o.bind(py), format_args!("transfer {i} tx"), true).map(|b| b.as_slice().to_vec()))
                .transpose()?;
            let rxlen = match (&t.rx, t.rx_len) {
                (Some(o), _) => Some(Buf::get(o.bind(py), true)?.len()),
                (None, n) => n,
            };
            let o = match (tx, rxlen) {
                (Some(tx), Some(n)) => {
                    if tx.len() != n {
                        return Err(length_error(i, tx.len(), n));
                    }
                    OwnedTransfer::duplex(tx)
                }
                (Some(tx), None) => OwnedTransfer::write(tx),
                (None, Some(n)) => OwnedTransfer::read(n),
                (None, None) => OwnedTransfer::write(Vec::new()),
            };
            lens.push(rxlen.unwrap_or(0).max(t.tx.as_ref().map_or(0, |o| o.bind(py).len().unwrap_or(0))));
            owned.push(t.owned_knobs(o));
            outs.push(t.rx.as_ref().map(|o| o.clone_ref(py)));
        }
        let msg = dev.prepare(owned).map_err(errors::invalid)?;
        let shared = Arc::new(Shared::default());
        shared.lock().msg = Some(msg);
        Ok(PyPreparedMessage { dev, shared, outs, lens })
    }

    /// Copies received bytes into the `rx` buffers given.
    fn fill_outs(&self, py: Python<'_>) -> PyResult<()> {
        if self.outs.iter().all(Option::is_none) {
            return Ok(());
        }
        let slot = self.shared.lock();
        let msg = slot.msg.as_ref().ok_or_else(in_flight)?;
        for (i, out) in self.outs.iter().enumerate() {
            if let (Some(out), Some(rx)) = (out, msg.rx(i)) {
                let mut b = Buf::get(out.bind(py), true)?;
                let dst = b.as_mut_slice();
                let n = dst.len().min(rx.len());
                dst[..n].copy_from_slice(&rx[..n]);
            }
        }
        Ok(())
    }

    /// The results of the last run, one per transfer.
    fn results_list(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.fill_outs(py)?;
        let slot = self.shared.lock();
        let msg = slot.msg.as_ref().ok_or_else(in_flight)?;
        let out = PyList::empty(py);
        for i in 0..msg.len() {
            match (&self.outs[i], msg.rx(i)) {
                (Some(o), _) => out.append(o.clone_ref(py))?,
                (None, Some(rx)) => out.append(PyBytes::new(py, rx))?,
                (None, None) => out.append(py.None())?,
            }
        }
        Ok(out.unbind())
    }

    /// Submits the message of `this`.
    pub fn submit_bound(this: &Bound<'_, PyPreparedMessage>) -> PyResult<PyPending> {
        let me = this.get();
        let generation = {
            let mut slot = me.shared.lock();
            let msg = slot.msg.take().ok_or_else(in_flight)?;
            slot.submitted += 1;
            let generation = slot.submitted;
            drop(slot);
            let shared = me.shared.clone();
            me.dev.submit_with(msg, move |msg, result| {
                let mut slot = shared.lock();
                slot.msg = Some(msg);
                slot.completed += 1;
                slot.result = Some(result);
                drop(slot);
                shared.done.notify_all();
            });
            generation
        };
        Ok(PyPending { message: this.clone().unbind(), generation })
    }
}

#[pymethods]
impl PyPreparedMessage {
    /// Runs the message and waits for it (GIL released), with no validation.
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        let (dev, shared) = (&self.dev, &self.shared);
        py.detach(|| {
            let mut slot = shared.lock();
            match slot.msg.as_mut() {
                Some(m) => Ok(dev.run(m)),
                None => Err(()),
            }
        })
        .map_err(|()| in_flight())?
        .map_err(errors::spi)?;
        self.fill_outs(py)
    }

    /// Queues the message for the bus's thread; see `SpiDev.submit`.
    fn submit(slf: &Bound<'_, Self>) -> PyResult<PyPending> {
        PyPreparedMessage::submit_bound(slf)
    }

    /// The bytes transfer `i` received in the last run (None for a write-only transfer).
    fn rx<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let slot = self.shared.lock();
        let msg = slot.msg.as_ref().ok_or_else(in_flight)?;
        if i >= msg.len() {
            return Err(PyIndexError::new_err(format!("transfer {i} does not exist: the message has {}", msg.len())));
        }
        Ok(msg.rx(i).map(|r| PyBytes::new(py, r)))
    }

    /// Copies what transfer `i` received into a writable buffer; returns the bytes copied.
    fn readinto(&self, py: Python<'_>, i: usize, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut b = Buf::get(buffer, true)?;
        let slot = self.shared.lock();
        let msg = slot.msg.as_ref().ok_or_else(in_flight)?;
        let rx = msg.rx(i).ok_or_else(|| {
            PyIndexError::new_err(format!("transfer {i} receives nothing (the message has {} transfers)", msg.len()))
        })?;
        let dst = b.as_mut_slice();
        let n = dst.len().min(rx.len());
        dst[..n].copy_from_slice(&rx[..n]);
        let _ = py;
        Ok(n)
    }

    /// One result per transfer of the last run, as `SpiDev.message` returns them.
    fn results(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.results_list(py)
    }

    /// Replaces what transfer `i` sends (same length) for the next runs.
    fn set_tx(&self, i: usize, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_arg(data, "set_tx", true)?;
        let data = data.as_slice();
        let mut slot = self.shared.lock();
        let msg = slot.msg.as_mut().ok_or_else(in_flight)?;
        let n = msg.len();
        let tx = msg.tx_mut(i).ok_or_else(|| {
            PyIndexError::new_err(format!("transfer {i} sends nothing (the message has {n} transfers)"))
        })?;
        if tx.len() != data.len() {
            return Err(PyValueError::new_err(format!(
                "set_tx: transfer {i} sends {} bytes, not {}: a prepared message keeps its lengths",
                tx.len(),
                data.len()
            )));
        }
        tx.copy_from_slice(data);
        Ok(())
    }

    /// Expected time on the wire of one run, in ns.
    #[getter]
    fn wire_ns(&self) -> PyResult<u64> {
        let slot = self.shared.lock();
        Ok(slot.msg.as_ref().ok_or_else(in_flight)?.wire_ns())
    }

    fn __len__(&self) -> usize {
        self.lens.len()
    }

    fn __repr__(&self) -> String {
        format!("<wirespeed.PreparedMessage of {} transfers>", self.lens.len())
    }
}

/// A submitted message: `wait()` blocks (GIL released) and returns its
/// results; `await pending` does the same from asyncio without blocking
/// the event loop.
///
/// ```python
/// pending = dev.submit([Transfer(tx=b"\x9f", rx_len=1)])
/// ...                           # the bus works meanwhile
/// (reply,) = pending.wait()
///
/// async def main():
///     (reply,) = await dev.submit(prepared)
/// ```
#[pyclass(name = "Pending", module = "wirespeed", frozen)]
#[derive(Debug)]
pub struct PyPending {
    message: Py<PyPreparedMessage>,
    generation: u64,
}

#[pymethods]
impl PyPending {
    /// Waits for the message (at most `timeout` seconds: `TimeoutError` after);
    /// returns its results, one per transfer, as `SpiDev.message` does.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyList>> {
        let limit = match timeout {
            Some(t) if !(t >= 0.0 && t.is_finite()) => {
                return Err(PyValueError::new_err(format!("timeout must be a number of seconds >= 0, not {t}")))
            }
            Some(t) => Some(Duration::from_secs_f64(t)),
            None => None,
        };
        let msg = self.message.get();
        let shared = msg.shared.clone();
        let generation = self.generation;
        let result = py.detach(move || {
            let deadline = limit.map(|l| std::time::Instant::now() + l);
            let mut slot = shared.lock();
            while slot.completed < generation {
                slot = match deadline {
                    None => shared.done.wait(slot).unwrap_or_else(|e| e.into_inner()),
                    Some(d) => {
                        let left = d.saturating_duration_since(std::time::Instant::now());
                        if left.is_zero() {
                            return None;
                        }
                        shared.done.wait_timeout(slot, left).unwrap_or_else(|e| e.into_inner()).0
                    }
                };
            }
            Some(slot.result.clone().unwrap_or(Ok(())))
        });
        match result {
            None => Err(PyTimeoutError::new_err("the message did not complete in time")),
            Some(Err(e)) => Err(errors::spi(e)),
            Some(Ok(())) => msg.results_list(py),
        }
    }

    /// Whether the message has completed.
    fn done(&self) -> bool {
        self.message.get().shared.lock().completed >= self.generation
    }

    /// The `PreparedMessage` submitted (runnable again once this completes).
    #[getter]
    fn message(&self, py: Python<'_>) -> Py<PyPreparedMessage> {
        self.message.clone_ref(py)
    }

    fn __await__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let asyncio = py.import("asyncio")?;
        let lp = asyncio.call_method0("get_running_loop").map_err(|_| {
            PyTypeError::new_err("await a Pending inside a running asyncio event loop (or call wait())")
        })?;
        let wait = slf.getattr("wait")?;
        let fut = lp.call_method1("run_in_executor", (py.None(), wait))?;
        Ok(fut.call_method0("__await__")?.unbind())
    }

    fn __repr__(&self) -> String {
        format!("<wirespeed.Pending {}>", if self.done() { "done" } else { "in flight" })
    }
}
