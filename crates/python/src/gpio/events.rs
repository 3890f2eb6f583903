//! Edge events to Python: `EdgeEvent(event_type, timestamp_ns, line_offset,
//! global_seqno, line_seqno)` as python gpiod's.
//!
//! Timestamps are the kernel's: `CLOCK_MONOTONIC` nanoseconds (the lab
//! stamps events with the same clock). Lines requested with
//! `event_clock=Clock.REALTIME` get `CLOCK_REALTIME` nanoseconds: the
//! monotonic stamp moved by the clocks' offset when the event is read (the
//! kernel reads the realtime clock at the edge instead; the two differ only
//! if the realtime clock is stepped in between).

use super::pytypes::{edge_event_type, EDGE_EVENT_FALLING, EDGE_EVENT_RISING};
use pyo3::prelude::*;
use pyo3::types::PyList;
use wirespeed::gpio::{EdgeEvent, EdgeKind};

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; both clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC`, now, in ns.
pub fn realtime_offset_ns() -> i128 {
    let m1 = clock_ns(libc::CLOCK_MONOTONIC);
    let r = clock_ns(libc::CLOCK_REALTIME);
    let m2 = clock_ns(libc::CLOCK_MONOTONIC);
    r - (m1 + (m2 - m1) / 2)
}

/// The events as a list of `wirespeed.gpio.EdgeEvent`; `realtime(offset)`
/// says whether a line's stamps are on the realtime clock.
pub fn to_list<'py>(
    py: Python<'py>,
    events: &[EdgeEvent],
    realtime: impl Fn(u32) -> bool,
) -> PyResult<Bound<'py, PyList>> {
    let ty = edge_event_type(py)?;
    let mut offset: Option<i128> = None;
    let list = PyList::empty(py);
    for e in events {
        let mut ts = i128::from(e.timestamp.as_ns());
        if realtime(e.offset) {
            ts += *offset.get_or_insert_with(realtime_offset_ns);
        }
        let kind = match e.kind {
            EdgeKind::Rising => EDGE_EVENT_RISING,
            EdgeKind::Falling => EDGE_EVENT_FALLING,
        };
        list.append(ty.call1((kind, ts.max(0) as u64, e.offset, e.seqno, e.line_seqno))?)?;
    }
    Ok(list)
}
