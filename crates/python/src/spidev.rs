//! `wirespeed.SpiDev`: py-spidev's class over wirespeed's spidev backend,
//! on a real `/dev/spidevB.C` or on a lab board's node.

use crate::data::{bytes_arg, Bytes};
use crate::errors::{self, closed, os_error};
use crate::lab::{self, PyLab};
use crate::message::{self, PyPending, PyPreparedMessage, PyTransfer};
use crate::node::{NodeHandle, NodeIo};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyTuple};
use std::sync::{Mutex, MutexGuard};
use wirespeed::linux::spidev::uapi::{
    SPI_IOC_RD_BITS_PER_WORD, SPI_IOC_RD_MAX_SPEED_HZ, SPI_IOC_RD_MODE32, SPI_IOC_WR_BITS_PER_WORD,
    SPI_IOC_WR_MAX_SPEED_HZ, SPI_IOC_WR_MODE32,
};
use wirespeed::linux::spidev::{Limits, Spidev, BUFSIZ_SYSFS};
use wirespeed::spi::{Bus, DeviceConfig, Mode, ModeFlags, Policy, SpiDevice, Transfer};

const SPI_CS_HIGH: u32 = ModeFlags::CS_HIGH.bits();
const SPI_LSB_FIRST: u32 = ModeFlags::LSB_FIRST.bits();
const SPI_3WIRE: u32 = ModeFlags::THREE_WIRE.bits();
const SPI_LOOP: u32 = ModeFlags::LOOP.bits();
const SPI_NO_CS: u32 = ModeFlags::NO_CS.bits();

/// An open node.
#[derive(Debug)]
struct Open {
    path: String,
    node: NodeHandle,
    bus: Bus,
    dev: SpiDevice,
    /// Bytes per piece where a long read or write may drop CS (spidev's
    /// `bufsiz`, rounded down to the kernel's buffer alignment).
    piece: usize,
    bufsiz: usize,
}

/// What py-spidev keeps per object.
#[derive(Debug, Default)]
struct State {
    open: Option<Open>,
    /// The node's mode bits (CPOL/CPHA and flags).
    mode: u32,
    bits_per_word: u8,
    max_speed_hz: u32,
    read0: bool,
}

fn config(mode: u32, bits: u8, speed: u32) -> DeviceConfig {
    let clock = match mode & 3 {
        0 => Mode::Mode0,
        1 => Mode::Mode1,
        2 => Mode::Mode2,
        _ => Mode::Mode3,
    };
    let mut cfg = DeviceConfig::new(0, speed.max(1)).mode(clock).flags(ModeFlags::from_bits_truncate(mode));
    // A transfer's own speed may be above the node's default, as with
    // py-spidev: the kernel's controller driver clamps it.
    cfg.max_speed_hz = u32::MAX;
    cfg.bits_per_word = if bits == 0 { 8 } else { bits };
    cfg
}

fn flag_name(bit: u32) -> &'static str {
    match bit {
        SPI_CS_HIGH => "cshigh",
        SPI_LSB_FIRST => "lsbfirst",
        SPI_3WIRE => "threewire",
        SPI_LOOP => "loop",
        _ => "no_cs",
    }
}

/// A py-spidev compatible SPI device: `open(bus, device)` opens
/// `/dev/spidev<bus>.<device>`, or that node of a lab board (`lab=`, or
/// the board `WIRESPEED_LAB` names).
///
/// ```python
/// from wirespeed import SpiDev          # was: from spidev import SpiDev
/// spi = SpiDev()
/// spi.open(0, 1)
/// spi.max_speed_hz = 1_000_000
/// spi.mode = 0
/// print(spi.xfer2([0x9f, 0, 0, 0]))
/// spi.close()
/// ```
///
/// Beyond py-spidev: any buffer (`bytes`, `bytearray`, `memoryview`,
/// `array`, numpy) goes in without per-byte conversion; `read`,
/// `readinto`, `write` and `transfer` return buffers; long reads and
/// writes are cut at spidev's `bufsiz` (chip select dropping between the
/// pieces, as py-spidev's `xfer3` does) instead of refused; the GIL is
/// released while the bus works; `message`, `prepare` and `submit` run
/// multi-transfer messages.
#[pyclass(name = "SpiDev", module = "wirespeed", subclass, frozen)]
#[derive(Debug)]
pub struct PySpiDev {
    lab: Option<Py<PyLab>>,
    state: Mutex<State>,
}

impl PySpiDev {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open device and its piece size.
    fn device(&self) -> PyResult<(SpiDevice, usize)> {
        let st = self.lock();
        let open = st.open.as_ref().ok_or_else(closed)?;
        Ok((open.dev.clone(), open.piece))
    }

    /// The device, for the message API.
    pub(crate) fn spi_device(&self) -> PyResult<SpiDevice> {
        self.device().map(|(d, _)| d)
    }

    /// Writes mode bits `mode` to the node (read back and compared, as
    /// py-spidev does), then uses them.
    fn set_mode_bits(&self, mode: u32, what: &str) -> PyResult<()> {
        let mut st = self.lock();
        let open = st.open.as_ref().ok_or_else(closed)?;
        let node = &open.node;
        if let Err(e) = node.write_value::<u32>(SPI_IOC_WR_MODE32 as u64, mode) {
            let detail = if e == libc::EINVAL {
                format!("the controller refuses mode {mode:#x} (setting {what})")
            } else {
                format!("setting {what} (mode {mode:#x}) failed")
            };
            return Err(os_error(e, format!("{}: {detail}: {}", open.path, std::io::Error::from_raw_os_error(e))));
        }
        let got = node.read_value::<u32>(SPI_IOC_RD_MODE32 as u64).map_err(|e| os_error(e, "SPI_IOC_RD_MODE32"))?;
        if got != mode {
            return Err(os_error(
                libc::EINVAL,
                format!("{}: attempted to set mode {mode:#x} but mode {got:#x} returned", open.path),
            ));
        }
        st.mode = mode;
        self.reconfigure(&mut st)
    }

    /// A new device on the open bus with the current settings.
    fn reconfigure(&self, st: &mut State) -> PyResult<()> {
        let cfg = config(st.mode, st.bits_per_word, st.max_speed_hz);
        if let Some(open) = st.open.as_mut() {
            open.dev = open.bus.device(cfg).map_err(errors::invalid)?;
        }
        Ok(())
    }

    fn flag(&self, bit: u32) -> bool {
        self.lock().mode & bit != 0
    }

    fn set_flag(&self, bit: u32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let name = flag_name(bit);
        let on = value
            .cast::<PyBool>()
            .map_err(|_| PyTypeError::new_err(format!("The {name} attribute must be boolean")))?
            .is_true();
        let mode = self.lock().mode;
        let mode = if on { mode | bit } else { mode & !bit };
        self.set_mode_bits(mode, name)
    }

    /// Runs `transfers` with the GIL released.
    fn run(py: Python<'_>, dev: &SpiDevice, transfers: &mut [Transfer<'_>]) -> PyResult<()> {
        py.detach(|| dev.sync(transfers)).map_err(errors::spi)
    }

    /// A py-spidev `xfer`/`xfer2`/`xfer3`.
    fn xfer_impl(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        opts: (u32, u16, u8),
        what: &str,
        cut: bool,
    ) -> PyResult<Py<PyAny>> {
        let (dev, piece) = self.device()?;
        let mut buf = match bytes_arg(values, what, false)? {
            Bytes::Buf(b) => b.as_slice().to_vec(),
            Bytes::Vec(v) => v,
        };
        if buf.is_empty() {
            return Err(PyTypeError::new_err(format!("{what}: empty argument list: give at least one byte")));
        }
        let (speed_hz, delay_usecs, bits) = opts;
        let knobs = |t| knobs(t, (speed_hz, delay_usecs, bits));
        if cut {
            let mut ts: Vec<Transfer<'_>> = buf.chunks_mut(piece).map(|c| knobs(Transfer::in_place(c))).collect();
            mark_cs_changes(&mut ts);
            Self::run(py, &dev, &mut ts)?;
        } else {
            Self::run(py, &dev, &mut [knobs(Transfer::in_place(&mut buf))])?;
        }
        if cut {
            // xfer3 returns a tuple.
            return Ok(PyTuple::new(py, buf.iter().copied())?.into_any().unbind());
        }
        // py-spidev writes the result into a list argument and returns it;
        // a tuple gives a tuple; anything else a new list.
        if let Ok(list) = values.cast::<PyList>() {
            if list.len() == buf.len() {
                for (i, b) in buf.iter().enumerate() {
                    list.set_item(i, b)?;
                }
                return Ok(list.clone().into_any().unbind());
            }
        }
        if values.cast::<PyTuple>().is_ok() {
            return Ok(PyTuple::new(py, buf.iter().copied())?.into_any().unbind());
        }
        Ok(PyList::new(py, buf.iter().copied())?.into_any().unbind())
    }

    /// Writes `data` in pieces (CS dropping between them).
    fn write_pieces(&self, py: Python<'_>, data: &[u8], what: &str) -> PyResult<()> {
        if data.is_empty() {
            return Err(PyTypeError::new_err(format!("{what}: empty argument list: give at least one byte")));
        }
        let (dev, piece) = self.device()?;
        let mut ts: Vec<Transfer<'_>> = data.chunks(piece).map(Transfer::write).collect();
        mark_cs_changes(&mut ts);
        Self::run(py, &dev, &mut ts)
    }

    /// Reads into `rx` in pieces.
    fn read_pieces(&self, py: Python<'_>, rx: &mut [u8]) -> PyResult<()> {
        let (dev, piece) = self.device()?;
        if rx.is_empty() {
            return Ok(());
        }
        let mut ts: Vec<Transfer<'_>> = rx.chunks_mut(piece).map(Transfer::read).collect();
        mark_cs_changes(&mut ts);
        Self::run(py, &dev, &mut ts)
    }

    fn do_open(&self, py: Python<'_>, bus: i64, device: i64) -> PyResult<()> {
        let (Ok(bus), Ok(device)) = (u32::try_from(bus), u32::try_from(device)) else {
            return Err(PyValueError::new_err(format!(
                "bus and device are numbers 0 and up (/dev/spidev<bus>.<device>), got bus {bus}, device {device}"
            )));
        };
        self.open_path_impl(py, format!("/dev/spidev{bus}.{device}"))
    }

    fn open_path_impl(&self, py: Python<'_>, path: String) -> PyResult<()> {
        // Whatever was open is closed first (py-spidev leaks its descriptor).
        drop(self.lock().open.take());
        let lab = self.lab.as_ref().map(|l| l.get());
        let (node, bufsiz) = match lab::board_for(py, lab)? {
            Some((board, name)) => {
                let file = lab::open_node(&board, &name, &path)?;
                let bufsiz = board
                    .sysfs()
                    .file(&format!("/sys/{BUFSIZ_SYSFS}"))
                    .and_then(|b| std::str::from_utf8(b).ok()?.trim().parse().ok())
                    .unwrap_or(Limits::DEFAULT_BUFSIZ);
                (NodeHandle::Lab(file), bufsiz)
            }
            None => {
                let node = NodeHandle::open_fd(&path).map_err(|e| open_error(e, &path))?;
                let bufsiz = std::fs::read_to_string(format!("/sys/{BUFSIZ_SYSFS}"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(Limits::DEFAULT_BUFSIZ);
                (node, bufsiz)
            }
        };
        let ioctl_error = |op: &str, e: i32| {
            if e == libc::ENOTTY || e == libc::EINVAL {
                os_error(e, format!("{path}: not a spidev node (it refuses {op})"))
            } else {
                os_error(e, format!("{path}: {op} failed: {}", std::io::Error::from_raw_os_error(e)))
            }
        };
        let mode = node.read_value::<u32>(SPI_IOC_RD_MODE32 as u64).map_err(|e| ioctl_error("SPI_IOC_RD_MODE32", e))?;
        let bits = node
            .read_value::<u8>(SPI_IOC_RD_BITS_PER_WORD as u64)
            .map_err(|e| ioctl_error("SPI_IOC_RD_BITS_PER_WORD", e))?;
        let speed = node
            .read_value::<u32>(SPI_IOC_RD_MAX_SPEED_HZ as u64)
            .map_err(|e| ioctl_error("SPI_IOC_RD_MAX_SPEED_HZ", e))?;
        let limits = Limits::with_bufsiz(bufsiz);
        let backend = Spidev::with_io(NodeIo(node.clone()), path.clone(), limits).map_err(errors::open)?;
        let bus = Bus::try_with_message_backend(backend, Policy::fast())
            .map_err(|e| os_error(e.source.raw_os_error().unwrap_or(libc::EAGAIN), e.to_string()))?;
        let dev = bus.device(config(mode, bits, speed)).map_err(errors::invalid)?;
        let piece = (limits.bufsiz / limits.align * limits.align).max(limits.align.min(limits.bufsiz)).max(1);
        let mut st = self.lock();
        *st = State {
            open: Some(Open { path, node, bus, dev, piece, bufsiz }),
            mode,
            bits_per_word: bits,
            max_speed_hz: speed,
            read0: st.read0,
        };
        Ok(())
    }
}

/// py-spidev's per-call knobs: speed, delay (µs), bits per word.
fn knobs(t: Transfer<'_>, (speed_hz, delay_usecs, bits): (u32, u16, u8)) -> Transfer<'_> {
    t.speed_hz(speed_hz).delay_after_ns(u32::from(delay_usecs) * 1000).bits_per_word(bits)
}

/// Marks every transfer but the last `cs_change`: CS drops between the
/// pieces of a long read or write, as between py-spidev's ioctls.
fn mark_cs_changes(ts: &mut [Transfer<'_>]) {
    let n = ts.len();
    for t in ts.iter_mut().take(n.saturating_sub(1)) {
        t.cs_change = true;
    }
}

fn open_error(e: i32, path: &str) -> PyErr {
    let hint = match e {
        libc::ENOENT | libc::ENODEV | libc::ENXIO => {
            "no such spidev node; is spidev loaded and the device in the device tree? (For the emulated bench, \
             pass lab=wirespeed.lab.load(\"board.toml\") or set WIRESPEED_LAB=board.toml)"
        }
        libc::EACCES | libc::EPERM => {
            "permission denied; add yourself to the node's group (often `spi`) or add a udev rule: \
             SUBSYSTEM==\"spidev\", GROUP=\"spi\", MODE=\"0660\""
        }
        _ => "open failed",
    };
    os_error(e, format!("{path}: {hint}"))
}

fn int_attr(value: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("The {name} attribute must be an integer, not bool")));
    }
    value.extract::<i64>().map_err(|_| PyTypeError::new_err(format!("The {name} attribute must be an integer")))
}

#[pymethods]
impl PySpiDev {
    /// `SpiDev(bus=None, client=None, *, lab=None)`: opens `/dev/spidev<bus>.<client>` when `bus` is
    /// given; `lab` serves the nodes from a lab board instead of the system.
    #[new]
    #[pyo3(signature = (bus = None, client = None, *, lab = None))]
    fn new(py: Python<'_>, bus: Option<i64>, client: Option<i64>, lab: Option<Py<PyLab>>) -> PyResult<Self> {
        let this = PySpiDev { lab, state: Mutex::new(State::default()) };
        if let Some(bus) = bus.filter(|&b| b >= 0) {
            this.do_open(py, bus, client.unwrap_or(-1))?;
        }
        Ok(this)
    }

    /// `open(bus, device)`: connects to `/dev/spidev<bus>.<device>` (of the lab board, with one).
    #[pyo3(signature = (bus, device))]
    fn open(&self, py: Python<'_>, bus: i64, device: i64) -> PyResult<()> {
        self.do_open(py, bus, device)
    }

    /// `open_path(path)`: connects to a spidev node by path (a lab board's node with a lab).
    fn open_path(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        self.open_path_impl(py, path.to_string_lossy().into_owned())
    }

    /// `close()`: disconnects; settings read back as 0/False until the next `open`.
    fn close(&self) {
        let old = std::mem::take(&mut *self.lock());
        drop(old);
    }

    /// The node's file descriptor (real nodes; a lab node has none: `OSError`).
    fn fileno(&self) -> PyResult<i32> {
        let st = self.lock();
        let open = st.open.as_ref().ok_or_else(closed)?;
        open.node.raw_fd().ok_or_else(|| os_error(libc::EBADF, format!("{}: a lab node has no descriptor", open.path)))
    }

    /// `readbytes(n) -> list[int]`: reads `n` bytes (more than `bufsiz` in pieces, CS dropping between).
    fn readbytes(&self, py: Python<'_>, n: i64) -> PyResult<Py<PyList>> {
        let n = usize::try_from(n).map_err(|_| PyValueError::new_err(format!("readbytes: length {n} is negative")))?;
        let mut rx = vec![0u8; n];
        self.read_pieces(py, &mut rx)?;
        Ok(PyList::new(py, rx)?.unbind())
    }

    /// `writebytes(values)`: writes a list of ints (more than `bufsiz` in pieces).
    fn writebytes(&self, py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_arg(values, "writebytes", false)?;
        self.write_pieces(py, data.as_slice(), "writebytes")
    }

    /// `writebytes2(values)`: writes a buffer (any, as its raw bytes) or a sequence of ints, in pieces of `bufsiz`.
    fn writebytes2(&self, py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_arg(values, "writebytes2", true)?;
        self.write_pieces(py, data.as_slice(), "writebytes2")
    }

    /// `xfer(values, speed_hz=0, delay_usecs=0, bits_per_word=0) -> list[int]`: one full-duplex
    /// transfer, CS held; as `xfer2` (py-spidev's default build makes them the same).
    #[pyo3(signature = (values, speed_hz = 0, delay_usecs = 0, bits_per_word = 0))]
    fn xfer(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        speed_hz: u32,
        delay_usecs: u16,
        bits_per_word: u8,
    ) -> PyResult<Py<PyAny>> {
        self.xfer_impl(py, values, (speed_hz, delay_usecs, bits_per_word), "xfer", false)
    }

    /// `xfer2(values, speed_hz=0, delay_usecs=0, bits_per_word=0) -> list[int]`: one full-duplex
    /// transfer, CS held across it. A list argument is filled with the result and returned, as py-spidev does.
    #[pyo3(signature = (values, speed_hz = 0, delay_usecs = 0, bits_per_word = 0))]
    fn xfer2(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        speed_hz: u32,
        delay_usecs: u16,
        bits_per_word: u8,
    ) -> PyResult<Py<PyAny>> {
        self.xfer_impl(py, values, (speed_hz, delay_usecs, bits_per_word), "xfer2", false)
    }

    /// `xfer3(values, speed_hz=0, delay_usecs=0, bits_per_word=0) -> tuple[int, ...]`: any length,
    /// in pieces of `bufsiz` (CS dropping between them).
    #[pyo3(signature = (values, speed_hz = 0, delay_usecs = 0, bits_per_word = 0))]
    fn xfer3(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        speed_hz: u32,
        delay_usecs: u16,
        bits_per_word: u8,
    ) -> PyResult<Py<PyAny>> {
        self.xfer_impl(py, values, (speed_hz, delay_usecs, bits_per_word), "xfer3", true)
    }

    /// `read(n) -> bytes`: reads `n` bytes (in pieces of `bufsiz` beyond it).
    fn read(&self, py: Python<'_>, n: i64) -> PyResult<Py<pyo3::types::PyBytes>> {
        let n = usize::try_from(n).map_err(|_| PyValueError::new_err(format!("read: length {n} is negative")))?;
        let mut rx = Vec::new();
        rx.try_reserve_exact(n).map_err(|_| PyValueError::new_err(format!("read: cannot allocate {n} bytes")))?;
        rx.resize(n, 0);
        self.read_pieces(py, &mut rx)?;
        Ok(pyo3::types::PyBytes::new(py, &rx).unbind())
    }

    /// `readinto(buffer) -> int`: fills a writable buffer (bytearray, memoryview, numpy …); returns its length.
    fn readinto(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut b = crate::buffer::Buf::get(buffer, true)?;
        let rx = b.as_mut_slice();
        let n = rx.len();
        self.read_pieces(py, rx)?;
        Ok(n)
    }

    /// `write(data)`: writes any bytes-like object (its raw bytes), in pieces of `bufsiz` beyond it.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_arg(data, "write", true)?;
        self.write_pieces(py, data.as_slice(), "write")
    }

    /// `transfer(data, out=None, speed_hz=0, delay_usecs=0, bits_per_word=0) -> bytes | None`:
    /// one full-duplex transfer, CS held: returns what came back as `bytes`, or fills `out`
    /// (a writable buffer of the same length) and returns None.
    #[pyo3(signature = (data, out = None, speed_hz = 0, delay_usecs = 0, bits_per_word = 0))]
    fn transfer(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        speed_hz: u32,
        delay_usecs: u16,
        bits_per_word: u8,
    ) -> PyResult<Option<Py<pyo3::types::PyBytes>>> {
        let (dev, _) = self.device()?;
        let tx = bytes_arg(data, "transfer", true)?;
        let tx = tx.as_slice();
        if tx.is_empty() {
            return Err(PyValueError::new_err("transfer: no data: give at least one byte"));
        }
        let knobs = |t| knobs(t, (speed_hz, delay_usecs, bits_per_word));
        match out {
            Some(out) => {
                let mut rx = crate::buffer::Buf::get(out, true)?;
                let rx = rx.as_mut_slice();
                if rx.len() != tx.len() {
                    return Err(PyValueError::new_err(format!(
                        "transfer: out is {} bytes but data is {} bytes; they must be the same length",
                        rx.len(),
                        tx.len()
                    )));
                }
                Self::run(py, &dev, &mut [knobs(Transfer::duplex(tx, rx))])?;
                Ok(None)
            }
            None => {
                let mut rx = vec![0u8; tx.len()];
                Self::run(py, &dev, &mut [knobs(Transfer::duplex(tx, &mut rx))])?;
                Ok(Some(pyo3::types::PyBytes::new(py, &rx).unbind()))
            }
        }
    }

    /// `message(transfers) -> list`: runs `Transfer`s as one message (CS held across
    /// them unless a transfer says `cs_change`); one result per transfer: the bytes read
    /// (`rx_len`), the `rx` buffer given (filled), or None (write only).
    fn message(&self, py: Python<'_>, transfers: Vec<PyRef<'_, PyTransfer>>) -> PyResult<Py<PyList>> {
        let dev = self.spi_device()?;
        message::run_message(py, &dev, &transfers)
    }

    /// `prepare(transfers) -> PreparedMessage`: validates a message once; `run()` it any
    /// number of times with no validation and no allocation.
    fn prepare(&self, transfers: Vec<PyRef<'_, PyTransfer>>) -> PyResult<PyPreparedMessage> {
        let dev = self.spi_device()?;
        PyPreparedMessage::new(dev, &transfers)
    }

    /// `submit(message) -> Pending`: queues a `PreparedMessage` (or a list of `Transfer`s)
    /// for the bus's thread and returns at once; `wait()` or `await` the result.
    fn submit(&self, py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<PyPending> {
        if let Ok(p) = message.cast::<PyPreparedMessage>() {
            return PyPreparedMessage::submit_bound(p);
        }
        let transfers: Vec<PyRef<'_, PyTransfer>> = message
            .extract()
            .map_err(|_| PyTypeError::new_err("submit: expected a PreparedMessage or a list of Transfer"))?;
        let dev = self.spi_device()?;
        let prepared = Bound::new(py, PyPreparedMessage::new(dev, &transfers)?)?;
        PyPreparedMessage::submit_bound(&prepared)
    }

    /// Whether it is open.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().open.is_none()
    }

    /// spidev's `bufsiz`: bytes per ioctl each way (0 when closed).
    #[getter]
    fn bufsiz(&self) -> usize {
        self.lock().open.as_ref().map_or(0, |o| o.bufsiz)
    }

    /// SPI mode as two bit pattern of clock polarity and phase [CPOL|CPHA]: 0..3.
    #[getter]
    fn get_mode(&self) -> u32 {
        self.lock().mode & 3
    }

    #[setter]
    fn set_mode(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let value = value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        let m = int_attr(value, "mode")?;
        if !(0..=3).contains(&m) {
            return Err(PyValueError::new_err(format!(
                "The mode attribute must be an integer between 0 and 3, not {m}"
            )));
        }
        let mode = (self.lock().mode & !3) | m as u32;
        self.set_mode_bits(mode, "mode")
    }

    /// Bits per word (8 to 32).
    #[getter]
    fn get_bits_per_word(&self) -> u8 {
        self.lock().bits_per_word
    }

    #[setter]
    fn set_bits_per_word(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let value = value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        let bits = int_attr(value, "bits_per_word")?;
        if !(8..=32).contains(&bits) {
            return Err(PyValueError::new_err(format!("invalid bits_per_word {bits} (8 to 32)")));
        }
        let bits = bits as u8;
        let mut st = self.lock();
        let open = st.open.as_ref().ok_or_else(closed)?;
        if st.bits_per_word != bits {
            open.node
                .write_value::<u8>(SPI_IOC_WR_BITS_PER_WORD as u64, bits)
                .map_err(|e| os_error(e, format!("{}: the controller refuses {bits} bits per word", open.path)))?;
            st.bits_per_word = bits;
            self.reconfigure(&mut st)?;
        }
        Ok(())
    }

    /// Maximum (default) speed in Hz.
    #[getter]
    fn get_max_speed_hz(&self) -> u32 {
        self.lock().max_speed_hz
    }

    #[setter]
    fn set_max_speed_hz(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let value = value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        let hz = int_attr(value, "max_speed_hz")?;
        let hz = u32::try_from(hz)
            .ok()
            .filter(|&h| h > 0)
            .ok_or_else(|| PyValueError::new_err(format!("max_speed_hz must be 1 to 4294967295 Hz, not {hz}")))?;
        let mut st = self.lock();
        let open = st.open.as_ref().ok_or_else(closed)?;
        if st.max_speed_hz != hz {
            open.node
                .write_value::<u32>(SPI_IOC_WR_MAX_SPEED_HZ as u64, hz)
                .map_err(|e| os_error(e, format!("{}: the node refuses max_speed_hz {hz}", open.path)))?;
            st.max_speed_hz = hz;
            self.reconfigure(&mut st)?;
        }
        Ok(())
    }

    /// CS active high.
    #[getter]
    fn get_cshigh(&self) -> bool {
        self.flag(SPI_CS_HIGH)
    }
    #[setter]
    fn set_cshigh(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_flag(SPI_CS_HIGH, value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?)
    }

    /// LSB first.
    #[getter]
    fn get_lsbfirst(&self) -> bool {
        self.flag(SPI_LSB_FIRST)
    }
    #[setter]
    fn set_lsbfirst(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_flag(SPI_LSB_FIRST, value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?)
    }

    /// SI/SO signals shared.
    #[getter]
    fn get_threewire(&self) -> bool {
        self.flag(SPI_3WIRE)
    }
    #[setter]
    fn set_threewire(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_flag(SPI_3WIRE, value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?)
    }

    /// Loopback configuration.
    #[getter(r#loop)]
    fn get_loop(&self) -> bool {
        self.flag(SPI_LOOP)
    }
    #[setter(r#loop)]
    fn set_loop(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_flag(SPI_LOOP, value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?)
    }

    /// Disable chip select.
    #[getter]
    fn get_no_cs(&self) -> bool {
        self.flag(SPI_NO_CS)
    }
    #[setter]
    fn set_no_cs(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.set_flag(SPI_NO_CS, value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?)
    }

    /// py-spidev's workaround flag (read 0 bytes after a transfer in CS_HIGH mode); kept for
    /// compatibility, not needed: CS is released by the message itself.
    #[getter]
    fn get_read0(&self) -> bool {
        self.lock().read0
    }
    #[setter]
    fn set_read0(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let value = value.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        let on =
            value.cast::<PyBool>().map_err(|_| PyTypeError::new_err("The read0 attribute must be boolean"))?.is_true();
        self.lock().read0 = on;
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let st = self.lock();
        match &st.open {
            Some(o) => format!(
                "<wirespeed.SpiDev {} mode={} bits_per_word={} max_speed_hz={}>",
                o.path,
                st.mode & 3,
                st.bits_per_word,
                st.max_speed_hz
            ),
            None => "<wirespeed.SpiDev (closed)>".to_owned(),
        }
    }
}
