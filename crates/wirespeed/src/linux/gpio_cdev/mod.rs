//! Linux GPIO character device backend (uAPI v2): `/dev/gpiochipN`.
//!
//! [`open`] gives a stack [`Chip`]; line requests are `GPIO_V2_GET_LINE_IOCTL`
//! file descriptors, values go through `GPIO_V2_LINE_GET_VALUES_IOCTL` /
//! `GPIO_V2_LINE_SET_VALUES_IOCTL`, reconfiguration through
//! `GPIO_V2_LINE_SET_CONFIG_IOCTL`, and edge events are read from the
//! request descriptor (non-blocking; it is also the pollable event fd).
//! Timestamps are `CLOCK_MONOTONIC`, the clock of [`wirespeed_time::now`].
//!
//! Per-line settings that differ from the first line's go into the
//! request's attributes (flags, output values and debounce, each with a line
//! mask); at most 10 attributes fit, so a request mixing more distinct
//! settings is refused as invalid.
//!
//! When the kernel unregisters the chip, its calls fail with `ENODEV`, which
//! maps to [`GpioError::ChipGone`] (the kernel's own interlock keeps that
//! safe); [`Chip::remove`] releases the descriptors from the stack's side.

pub mod uapi;

use crate::gpio::fd::errno;
use crate::gpio::{
    Bias, Chip, ChipBackend, ChipInfo, Direction, Drive, Edge, EdgeEvent, EdgeKind, GpioError, LineConfig, LineInfo,
    LineSettings, RequestBackend, RequestConfig,
};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Duration;
use uapi::*;
use wirespeed_time::Instant;

/// Opens `/dev/gpiochipN` (or any GPIO character device path).
pub fn open(path: impl AsRef<Path>) -> Result<Chip, GpioError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| GpioError::invalid("device path", &shown, "a path without NUL bytes"))?;
    // SAFETY: `c` is a valid NUL-terminated path; a non-negative result is a descriptor we own.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(open_error(errno(), &shown));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let backend = CdevChip { fd, path: shown };
    backend.chip_info().map_err(|e| match e {
        GpioError::Os { errno: libc::ENOTTY, .. } => GpioError::NotFound { path: backend.path.clone() },
        e => e,
    })?;
    Chip::from_backend(Box::new(backend))
}

/// Opens `/dev/gpiochip{n}`.
pub fn open_number(n: u32) -> Result<Chip, GpioError> {
    open(format!("/dev/gpiochip{n}"))
}

/// Maps an `open()` errno.
pub(crate) fn open_error(e: i32, path: &str) -> GpioError {
    match e {
        libc::EACCES | libc::EPERM => GpioError::PermissionDenied { path: path.to_owned() },
        libc::ENOENT | libc::ENODEV | libc::ENXIO | libc::ENOTDIR => GpioError::NotFound { path: path.to_owned() },
        e => GpioError::Os { op: "open", errno: e },
    }
}

/// Maps an errno from an ioctl or read on a chip or request descriptor.
pub(crate) fn call_error(op: &'static str, e: i32, chip: &str) -> GpioError {
    match e {
        libc::ENODEV | libc::ENXIO => GpioError::ChipGone { chip: chip.to_owned() },
        libc::EACCES => GpioError::PermissionDenied { path: chip.to_owned() },
        libc::EINVAL => GpioError::InvalidConfig {
            what: op,
            value: "rejected by the kernel".into(),
            allowed: "see the chip's capabilities",
        },
        e => GpioError::Os { op, errno: e },
    }
}

fn ioctl<T>(fd: RawFd, req: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `req` encodes `size_of::<T>()` and `arg` points to a valid, writable T.
    let r = unsafe { libc::ioctl(fd, req as libc::Ioctl, arg as *mut T) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

fn cstr(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// uAPI flags for a line's settings.
pub fn settings_to_flags(s: &LineSettings) -> u64 {
    let mut f = match s.direction {
        Direction::Input => GPIO_V2_LINE_FLAG_INPUT,
        Direction::Output => GPIO_V2_LINE_FLAG_OUTPUT,
    };
    if s.active_low {
        f |= GPIO_V2_LINE_FLAG_ACTIVE_LOW;
    }
    f |= match s.bias {
        Bias::AsIs => 0,
        Bias::Disabled => GPIO_V2_LINE_FLAG_BIAS_DISABLED,
        Bias::PullUp => GPIO_V2_LINE_FLAG_BIAS_PULL_UP,
        Bias::PullDown => GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN,
    };
    f |= match s.drive {
        Drive::PushPull => 0,
        Drive::OpenDrain => GPIO_V2_LINE_FLAG_OPEN_DRAIN,
        Drive::OpenSource => GPIO_V2_LINE_FLAG_OPEN_SOURCE,
    };
    f |= match s.edge {
        Edge::None => 0,
        Edge::Rising => GPIO_V2_LINE_FLAG_EDGE_RISING,
        Edge::Falling => GPIO_V2_LINE_FLAG_EDGE_FALLING,
        Edge::Both => GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING,
    };
    f
}

/// Line settings from uAPI flags and a debounce period.
pub fn flags_to_settings(f: u64, debounce_us: u32) -> LineSettings {
    LineSettings {
        direction: if f & GPIO_V2_LINE_FLAG_OUTPUT != 0 { Direction::Output } else { Direction::Input },
        output_value: false,
        bias: if f & GPIO_V2_LINE_FLAG_BIAS_PULL_UP != 0 {
            Bias::PullUp
        } else if f & GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN != 0 {
            Bias::PullDown
        } else if f & GPIO_V2_LINE_FLAG_BIAS_DISABLED != 0 {
            Bias::Disabled
        } else {
            Bias::AsIs
        },
        drive: if f & GPIO_V2_LINE_FLAG_OPEN_DRAIN != 0 {
            Drive::OpenDrain
        } else if f & GPIO_V2_LINE_FLAG_OPEN_SOURCE != 0 {
            Drive::OpenSource
        } else {
            Drive::PushPull
        },
        active_low: f & GPIO_V2_LINE_FLAG_ACTIVE_LOW != 0,
        edge: match (f & GPIO_V2_LINE_FLAG_EDGE_RISING != 0, f & GPIO_V2_LINE_FLAG_EDGE_FALLING != 0) {
            (true, true) => Edge::Both,
            (true, false) => Edge::Rising,
            (false, true) => Edge::Falling,
            (false, false) => Edge::None,
        },
        debounce: Duration::from_micros(u64::from(debounce_us)),
    }
}

fn push_attr(
    cfg: &mut gpio_v2_line_config,
    id: u32,
    value: gpio_v2_line_attribute_value,
    mask: u64,
) -> Result<(), GpioError> {
    let n = cfg.num_attrs as usize;
    if n == GPIO_V2_LINE_NUM_ATTRS_MAX {
        return Err(GpioError::invalid(
            "line settings",
            "more distinct per-line settings than fit",
            "at most 10 attributes (distinct flag sets, output values, debounce periods)",
        ));
    }
    cfg.attrs[n] = gpio_v2_line_config_attribute { attr: gpio_v2_line_attribute { id, padding: 0, u: value }, mask };
    cfg.num_attrs += 1;
    Ok(())
}

/// The uAPI line config for `config` (lines in request order): line 0's
/// flags are the default; other flag sets, output values and debounce
/// periods are attributes with line masks.
pub fn build_line_config(config: &LineConfig) -> Result<gpio_v2_line_config, GpioError> {
    let lines = config.lines();
    let mut cfg: gpio_v2_line_config = zeroed();
    let default_flags = lines.first().map_or(0, |l| settings_to_flags(&l.1));
    cfg.flags = default_flags;
    let mut flag_sets: Vec<(u64, u64)> = Vec::new();
    let mut debounces: Vec<(u32, u64)> = Vec::new();
    let (mut out_mask, mut out_values) = (0u64, 0u64);
    for (i, (_, s)) in lines.iter().enumerate() {
        let bit = 1u64 << i;
        let f = settings_to_flags(s);
        if f != default_flags {
            match flag_sets.iter_mut().find(|e| e.0 == f) {
                Some(e) => e.1 |= bit,
                None => flag_sets.push((f, bit)),
            }
        }
        if s.direction == Direction::Output {
            out_mask |= bit;
            out_values |= u64::from(s.output_value) << i;
        }
        let us = s.debounce.as_micros() as u32;
        if us != 0 {
            match debounces.iter_mut().find(|e| e.0 == us) {
                Some(e) => e.1 |= bit,
                None => debounces.push((us, bit)),
            }
        }
    }
    for (f, mask) in flag_sets {
        push_attr(&mut cfg, GPIO_V2_LINE_ATTR_ID_FLAGS, gpio_v2_line_attribute_value { flags: f }, mask)?;
    }
    if out_mask != 0 {
        push_attr(
            &mut cfg,
            GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES,
            gpio_v2_line_attribute_value { values: out_values },
            out_mask,
        )?;
    }
    for (us, mask) in debounces {
        let mut v = gpio_v2_line_attribute_value { flags: 0 };
        v.debounce_period_us = us;
        push_attr(&mut cfg, GPIO_V2_LINE_ATTR_ID_DEBOUNCE, v, mask)?;
    }
    Ok(cfg)
}

/// The uAPI request for `config`.
pub fn build_request(config: &RequestConfig) -> Result<gpio_v2_line_request, GpioError> {
    let mut req: gpio_v2_line_request = zeroed();
    for (i, off) in config.lines.offsets().enumerate().take(GPIO_V2_LINES_MAX) {
        req.offsets[i] = off;
    }
    req.num_lines = config.lines.lines().len() as u32;
    let name = config.consumer.as_bytes();
    let n = name.len().min(GPIO_MAX_NAME_SIZE - 1);
    req.consumer[..n].copy_from_slice(&name[..n]);
    req.config = build_line_config(&config.lines)?;
    req.event_buffer_size = config.event_buffer_size;
    Ok(req)
}

/// A stack edge event from a uAPI one.
pub fn convert_event(e: &gpio_v2_line_event) -> Option<EdgeEvent> {
    let kind = match e.id {
        GPIO_V2_LINE_EVENT_RISING_EDGE => EdgeKind::Rising,
        GPIO_V2_LINE_EVENT_FALLING_EDGE => EdgeKind::Falling,
        _ => return None,
    };
    Some(EdgeEvent {
        offset: e.offset,
        kind,
        timestamp: Instant::from_ns(e.timestamp_ns),
        seqno: e.seqno,
        line_seqno: e.line_seqno,
    })
}

struct CdevChip {
    fd: OwnedFd,
    path: String,
}

impl CdevChip {
    fn chip_info(&self) -> Result<ChipInfo, GpioError> {
        let mut info: gpiochip_info = zeroed();
        ioctl(self.fd.as_raw_fd(), GPIO_GET_CHIPINFO_IOCTL, &mut info)
            .map_err(|e| call_error("GPIO_GET_CHIPINFO_IOCTL", e, &self.path))?;
        Ok(ChipInfo { name: cstr(&info.name), label: cstr(&info.label), lines: info.lines })
    }

    fn raw_line_info(&self, offset: u32) -> Result<gpio_v2_line_info, GpioError> {
        let mut li: gpio_v2_line_info = zeroed();
        li.offset = offset;
        ioctl(self.fd.as_raw_fd(), GPIO_V2_GET_LINEINFO_IOCTL, &mut li)
            .map_err(|e| call_error("GPIO_V2_GET_LINEINFO_IOCTL", e, &self.path))?;
        Ok(li)
    }
}

impl ChipBackend for CdevChip {
    fn info(&self) -> Result<ChipInfo, GpioError> {
        self.chip_info()
    }

    fn line_info(&self, offset: u32) -> Result<LineInfo, GpioError> {
        let li = self.raw_line_info(offset)?;
        let mut debounce = 0;
        for a in li.attrs.iter().take((li.num_attrs as usize).min(GPIO_V2_LINE_NUM_ATTRS_MAX)) {
            if a.id == GPIO_V2_LINE_ATTR_ID_DEBOUNCE {
                // SAFETY: the kernel sets the debounce member for this attribute id.
                debounce = unsafe { a.u.debounce_period_us };
            }
        }
        Ok(LineInfo {
            offset,
            name: cstr(&li.name),
            used: li.flags & GPIO_V2_LINE_FLAG_USED != 0,
            consumer: cstr(&li.consumer),
            settings: flags_to_settings(li.flags, debounce),
        })
    }

    fn request(&self, config: &RequestConfig) -> Result<Box<dyn RequestBackend>, GpioError> {
        let mut req = build_request(config)?;
        if let Err(e) = ioctl(self.fd.as_raw_fd(), GPIO_V2_GET_LINE_IOCTL, &mut req) {
            if e == libc::EBUSY {
                for off in config.lines.offsets() {
                    if let Ok(li) = self.line_info(off) {
                        if li.used {
                            return Err(GpioError::LineBusy { offset: off, consumer: li.consumer });
                        }
                    }
                }
                let first = config.lines.offsets().next().unwrap_or(0);
                return Err(GpioError::LineBusy { offset: first, consumer: String::new() });
            }
            return Err(call_error("GPIO_V2_GET_LINE_IOCTL", e, &self.path));
        }
        // SAFETY: on success the kernel returns a new descriptor we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(req.fd) };
        // Events are read without blocking; sleeping happens in ppoll.
        // SAFETY: fcntl on our own descriptor with integer arguments.
        unsafe {
            let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        Ok(Box::new(CdevRequest { fd, chip: self.path.clone() }))
    }
}

struct CdevRequest {
    fd: OwnedFd,
    chip: String,
}

impl RequestBackend for CdevRequest {
    fn get_values(&self, mask: u64) -> Result<u64, GpioError> {
        let mut v = gpio_v2_line_values { bits: 0, mask };
        ioctl(self.fd.as_raw_fd(), GPIO_V2_LINE_GET_VALUES_IOCTL, &mut v)
            .map_err(|e| call_error("GPIO_V2_LINE_GET_VALUES_IOCTL", e, &self.chip))?;
        Ok(v.bits & mask)
    }

    fn set_values(&self, mask: u64, bits: u64) -> Result<(), GpioError> {
        let mut v = gpio_v2_line_values { bits, mask };
        ioctl(self.fd.as_raw_fd(), GPIO_V2_LINE_SET_VALUES_IOCTL, &mut v).map_err(|e| match e {
            libc::EPERM => GpioError::WrongDirection {
                offset: mask.trailing_zeros(),
                needs: "an output (offset is the request index)",
            },
            e => call_error("GPIO_V2_LINE_SET_VALUES_IOCTL", e, &self.chip),
        })
    }

    fn reconfigure(&self, config: &LineConfig) -> Result<(), GpioError> {
        let mut cfg = build_line_config(config)?;
        ioctl(self.fd.as_raw_fd(), GPIO_V2_LINE_SET_CONFIG_IOCTL, &mut cfg)
            .map_err(|e| call_error("GPIO_V2_LINE_SET_CONFIG_IOCTL", e, &self.chip))
    }

    fn event_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn read_events(&self, out: &mut [EdgeEvent]) -> Result<usize, GpioError> {
        let mut raw = [gpio_v2_line_event::default(); 16];
        let want = out.len().min(raw.len());
        if want == 0 {
            return Ok(0);
        }
        let bytes = want * std::mem::size_of::<gpio_v2_line_event>();
        // SAFETY: reads at most `bytes` into `raw`, which holds that many.
        let r = unsafe { libc::read(self.fd.as_raw_fd(), raw.as_mut_ptr().cast(), bytes) };
        if r < 0 {
            let e = errno();
            if e == libc::EAGAIN || e == libc::EINTR {
                return Ok(0);
            }
            return Err(call_error("read(line request)", e, &self.chip));
        }
        let got = r as usize / std::mem::size_of::<gpio_v2_line_event>();
        let mut n = 0;
        for e in raw[..got].iter().filter_map(convert_event) {
            out[n] = e;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
