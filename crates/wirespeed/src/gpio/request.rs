//! [`LineRequest`]: requested lines — values, reconfiguration, edge events.
//!
//! Every access runs inside the handle's removal guard (see `guard`): after
//! the chip's removal has begun it fails with [`GpioError::ChipGone`] without
//! touching the backend. A handle is `Send` but not `Sync` (one thread uses
//! it at a time, which is what lets the guard be a plain store).

use super::backend::{EdgeEvent, RequestBackend};
use super::chip::{ChipCore, RequestShared};
use super::config::{Direction, LineConfig, LineSettings, RequestConfig};
use super::error::GpioError;
use super::fd::wait_readable;
use super::guard::{AccessGuard, RemovalState, Revocable, Slot};
use super::irq::WaitState;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;
use wirespeed_time::{now, Instant};

/// Requested lines of one chip, guarded against the chip's removal by `G`
/// (wirespeed's [`Revocable`] unless chosen otherwise). Dropping it releases the lines.
pub struct LineRequest<G: AccessGuard = Revocable> {
    core: Arc<ChipCore>,
    shared: Arc<RequestShared>,
    offsets: Vec<u32>,
    settings: RefCell<Vec<LineSettings>>,
    pub(crate) waits: WaitState,
    _not_sync: PhantomData<(G, Cell<()>)>,
}

impl<G: AccessGuard> fmt::Debug for LineRequest<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineRequest")
            .field("chip", &self.core.name)
            .field("offsets", &self.offsets)
            .field("guard", &G::NAME)
            .finish()
    }
}

/// Ends a guarded access, also on unwind.
struct Exit<'a, G: AccessGuard> {
    slot: &'a Slot,
    st: &'a RemovalState,
    _g: PhantomData<G>,
}

impl<G: AccessGuard> Drop for Exit<'_, G> {
    #[inline(always)]
    fn drop(&mut self) {
        G::exit(self.slot, self.st);
    }
}

impl<G: AccessGuard> LineRequest<G> {
    pub(crate) fn new(core: Arc<ChipCore>, shared: Arc<RequestShared>, config: &RequestConfig) -> LineRequest<G> {
        LineRequest {
            core,
            shared,
            offsets: config.lines.offsets().collect(),
            settings: RefCell::new(config.lines.lines().iter().map(|l| l.1).collect()),
            waits: WaitState::default(),
            _not_sync: PhantomData,
        }
    }

    /// Runs `f` on the backend inside a guarded access.
    #[inline(always)]
    fn access<R>(&self, f: impl FnOnce(&dyn RequestBackend) -> Result<R, GpioError>) -> Result<R, GpioError> {
        let shared = &*self.shared;
        let st = &self.core.removal;
        if !G::enter(&shared.slot, st) {
            return Err(self.core.gone_error());
        }
        let _exit = Exit::<G> { slot: &shared.slot, st, _g: PhantomData };
        // SAFETY: `enter` admitted this access and `_exit` ends it after `f`.
        unsafe {
            shared.backend.with(|b| match b {
                Some(b) => f(&**b),
                None => Err(self.core.gone_error()),
            })
        }
    }

    /// The requested offsets, in request order.
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    #[inline(always)]
    fn index_of(&self, offset: u32) -> Result<u32, GpioError> {
        match self.offsets.iter().position(|&o| o == offset) {
            Some(i) => Ok(i as u32),
            None => Err(self.not_requested(offset)),
        }
    }

    #[cold]
    fn not_requested(&self, offset: u32) -> GpioError {
        GpioError::NotRequested { offset, requested: self.offsets.clone() }
    }

    fn full_mask(&self) -> u64 {
        if self.offsets.len() == 64 {
            u64::MAX
        } else {
            (1u64 << self.offsets.len()) - 1
        }
    }

    /// Sets one line's logical value.
    #[inline(always)]
    pub fn set_value(&self, offset: u32, value: bool) -> Result<(), GpioError> {
        let i = self.index_of(offset)?;
        self.access(|b| b.set_values(1 << i, u64::from(value) << i))
    }

    /// Reads one line's logical value.
    #[inline(always)]
    pub fn value(&self, offset: u32) -> Result<bool, GpioError> {
        let i = self.index_of(offset)?;
        self.access(|b| b.get_values(1 << i)).map(|v| v & (1 << i) != 0)
    }

    /// Sets several lines at once: bit `i` of `mask`/`bits` is the `i`-th
    /// requested line (as in the kernel's uAPI v2).
    pub fn set_values(&self, mask: u64, bits: u64) -> Result<(), GpioError> {
        if mask & !self.full_mask() != 0 {
            return Err(GpioError::invalid("value mask", format!("{mask:#x}"), "bits of requested lines only"));
        }
        self.access(|b| b.set_values(mask, bits))
    }

    /// Reads several lines at once (bit `i`: the `i`-th requested line).
    pub fn values(&self, mask: u64) -> Result<u64, GpioError> {
        if mask & !self.full_mask() != 0 {
            return Err(GpioError::invalid("value mask", format!("{mask:#x}"), "bits of requested lines only"));
        }
        self.access(|b| b.get_values(mask))
    }

    /// Sets lines by offset: `values` pairs an offset with its logical value
    /// (each offset at most once).
    pub fn set_many(&self, values: &[(u32, bool)]) -> Result<(), GpioError> {
        let (mut mask, mut bits) = (0u64, 0u64);
        for &(off, v) in values {
            let i = self.index_of(off)?;
            if mask & (1 << i) != 0 {
                return Err(GpioError::invalid("line values", format!("offset {off} twice"), "each offset once"));
            }
            mask |= 1 << i;
            bits |= u64::from(v) << i;
        }
        self.access(|b| b.set_values(mask, bits))
    }

    /// Replaces the configuration of all the request's lines. `config` must
    /// list exactly the requested offsets (in any order).
    pub fn reconfigure(&self, config: &LineConfig) -> Result<(), GpioError> {
        config.validate()?;
        let mut ordered = Vec::with_capacity(self.offsets.len());
        for &off in &self.offsets {
            match config.lines().iter().find(|l| l.0 == off) {
                Some(&(_, s)) => ordered.push(s),
                None => {
                    return Err(GpioError::invalid(
                        "reconfiguration",
                        format!("line {off} missing"),
                        "every requested line, no other",
                    ))
                }
            }
        }
        if config.lines().len() != self.offsets.len() {
            return Err(GpioError::invalid(
                "reconfiguration",
                "lines not in the request",
                "every requested line, no other",
            ));
        }
        let in_order = self.offsets.iter().zip(&ordered).fold(LineConfig::new(), |c, (&o, &s)| c.line(o, s));
        self.access(|b| b.reconfigure(&in_order))?;
        *self.settings.borrow_mut() = ordered;
        Ok(())
    }

    /// The settings of a requested line, as last configured through this handle.
    pub fn settings(&self, offset: u32) -> Result<LineSettings, GpioError> {
        let i = self.index_of(offset)?;
        Ok(self.settings.borrow()[i as usize])
    }

    pub(crate) fn is_output(&self, offset: u32) -> Result<bool, GpioError> {
        Ok(self.settings(offset)?.direction == Direction::Output)
    }

    /// A descriptor that polls readable while edge events are pending, for
    /// your own poll/epoll loop. It is owned by the request (do not close
    /// it) and invalid once the chip is gone; [`LineRequest::gone_fd`] turns
    /// readable then.
    pub fn event_fd(&self) -> Result<RawFd, GpioError> {
        self.access(|b| Ok(b.event_fd()))
    }

    /// A descriptor that polls readable once the chip is gone.
    pub fn gone_fd(&self) -> RawFd {
        self.core.gone.raw()
    }

    /// Moves pending edge events into `out` without blocking; returns how many.
    pub fn read_edge_events(&self, out: &mut [EdgeEvent]) -> Result<usize, GpioError> {
        if out.is_empty() {
            return Ok(0);
        }
        self.access(|b| b.read_events(out))
    }

    /// The next pending edge event, without blocking.
    ///
    /// Takes exactly one event from the backend: the events after it stay in
    /// the backend's queue, so [`LineRequest::event_fd`] polls readable while
    /// any of them waits (a handle-side buffer would hide them from it).
    pub fn try_edge_event(&self) -> Result<Option<EdgeEvent>, GpioError> {
        let mut buf = [EdgeEvent {
            offset: 0,
            kind: super::backend::EdgeKind::Rising,
            timestamp: Instant::ZERO,
            seqno: 0,
            line_seqno: 0,
        }];
        let n = self.access(|b| b.read_events(&mut buf))?;
        Ok((n == 1).then_some(buf[0]))
    }

    /// Sleeps until an edge event arrives or `timeout` passes (`None`: no
    /// timeout). `Ok(None)` on timeout. Always sleeps (no polling); see
    /// [`LineRequest::wait_edge`] for the adaptive wait.
    pub fn wait_edge_event(&self, timeout: Option<Duration>) -> Result<Option<EdgeEvent>, GpioError> {
        let deadline = timeout.map(|t| now().add_ns(t.as_nanos().min(u128::from(u64::MAX)) as u64));
        self.sleep_for_event(deadline)
    }

    /// Sleeps for the next event until `deadline`: on the backend's event
    /// signal if it has one (a futex), else in `ppoll` on its descriptor.
    /// The sleep is outside any access, so removal never waits for a
    /// sleeper; the remover wakes it (signal, or the `gone` descriptor).
    pub(crate) fn sleep_for_event(&self, deadline: Option<Instant>) -> Result<Option<EdgeEvent>, GpioError> {
        let signal = self.shared.signal.as_deref();
        loop {
            // Read before looking, so that an event queued after the look
            // has moved the count and the wait returns at once.
            let seen = signal.map(|s| (s, s.sequence()));
            if let Some(e) = self.try_edge_event()? {
                return Ok(Some(e));
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let t = now();
                    if t >= d {
                        return Ok(None);
                    }
                    Some(Duration::from_nanos(d.ns_since(t)))
                }
            };
            match seen {
                Some((s, seen)) => s.wait(seen, left),
                None => {
                    // The descriptor number is copied inside an access; if
                    // removal closes it meanwhile, `gone` wakes the sleep.
                    let fd = self.access(|b| Ok(b.event_fd()))?;
                    wait_readable(&[fd, self.core.gone.raw()], left)?;
                }
            }
        }
    }
}

impl<G: AccessGuard> Drop for LineRequest<G> {
    fn drop(&mut self) {
        self.core.release(&self.shared);
    }
}
