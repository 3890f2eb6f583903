//! [`Chip`]: an opened GPIO chip — info, line info, line requests, removal.

use super::backend::{ChipBackend, ChipInfo, LineInfo, RequestBackend};
use super::config::RequestConfig;
use super::error::GpioError;
use super::fd::EventFd;
use super::guard::{AccessGuard, Guarded, RemovalState, Revocable, Slot, SoundGuard, Unguarded};
use super::request::LineRequest;
use super::signal::EventSignal;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

/// One request's state shared between its handle and the chip's remover.
// One cache line holds all an access touches here: the slot the guard
// writes and the backend pointer the access reads (repr(C): in this order,
// at the start of a 128-byte-aligned block, so no other handle shares it).
#[repr(C, align(128))]
pub(crate) struct RequestShared {
    pub(crate) slot: Slot,
    pub(crate) backend: Guarded<Box<dyn RequestBackend>>,
    /// The backend's event signal, if it has one (kept here, outside the
    /// backend, so that sleepers and the remover may use it at any time).
    pub(crate) signal: Option<Arc<EventSignal>>,
}

pub(crate) struct ChipCore {
    pub(crate) removal: RemovalState,
    pub(crate) name: String,
    lines: u32,
    backend: RwLock<Option<Box<dyn ChipBackend>>>,
    /// Live requests. Held by the remover for its whole run, so a request
    /// cannot be created or released half-way through a removal.
    requests: Mutex<Vec<Arc<RequestShared>>>,
    /// Readable once the chip is gone: wakes handles sleeping for events.
    pub(crate) gone: EventFd,
}

impl ChipCore {
    fn lock_requests(&self) -> MutexGuard<'_, Vec<Arc<RequestShared>>> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn gone_error(&self) -> GpioError {
        GpioError::ChipGone { chip: self.name.clone() }
    }

    /// Removes the chip: fails every later access, waits for the accesses in
    /// flight, then frees every request's backend state and the chip's.
    /// Returns after all of that (at once if the chip is already gone).
    pub(crate) fn remove(&self) {
        let mut reqs = self.lock_requests();
        if !self.removal.begin(reqs.iter().map(|r| &r.slot)) {
            return; // Already removed: the earlier remover finished under this lock.
        }
        for r in reqs.iter() {
            self.removal.drain_slot(&r.slot);
        }
        self.removal.drain_readers();
        // Wake handles sleeping on a signal: their next access fails.
        for s in reqs.iter().filter_map(|r| r.signal.as_ref()) {
            s.notify();
        }
        let mut freed: Vec<Box<dyn RequestBackend>> = Vec::with_capacity(reqs.len());
        for r in reqs.drain(..) {
            // SAFETY: removal began and every slot was drained after it, so no
            // access to this backend is in flight and none can start.
            if let Some(b) = unsafe { r.backend.take_drained() } {
                freed.push(b);
            }
        }
        let chip_backend = self.backend.write().unwrap_or_else(|e| e.into_inner()).take();
        drop(freed);
        drop(chip_backend);
        self.gone.signal();
    }

    /// Called by a request handle's drop: unregisters and frees its backend.
    pub(crate) fn release(&self, shared: &Arc<RequestShared>) {
        let mut reqs = self.lock_requests();
        reqs.retain(|r| !Arc::ptr_eq(r, shared));
        // SAFETY: the handle being dropped is the only one that accesses this
        // backend and is not inside an access; a remover would hold the lock.
        let b = unsafe { shared.backend.take_drained() };
        drop(reqs);
        drop(b);
    }
}

/// An opened GPIO chip. Cheap to clone; line requests keep the chip's
/// bookkeeping alive, not its backend (removal frees that).
#[derive(Clone)]
pub struct Chip {
    core: Arc<ChipCore>,
}

impl fmt::Debug for Chip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chip").field("name", &self.core.name).field("gone", &self.is_gone()).finish()
    }
}

/// Lets a backend tell the core its device went away (see [`Chip::removal_handle`]).
#[derive(Clone, Debug)]
pub struct RemovalHandle {
    core: Weak<ChipCore>,
}

impl fmt::Debug for ChipCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChipCore").field("name", &self.name).finish()
    }
}

impl RemovalHandle {
    /// Removes the chip as [`Chip::remove`] does (no-op if it no longer exists).
    pub fn remove(&self) {
        if let Some(core) = self.core.upgrade() {
            core.remove();
        }
    }
}

impl Chip {
    /// A chip served by `backend` (the lab's and Linux's open functions call this).
    pub fn from_backend(backend: Box<dyn ChipBackend>) -> Result<Chip, GpioError> {
        let info = backend.info()?;
        Ok(Chip {
            core: Arc::new(ChipCore {
                removal: RemovalState::new(),
                name: info.name,
                lines: info.lines,
                backend: RwLock::new(Some(backend)),
                requests: Mutex::new(Vec::new()),
                gone: EventFd::new()?,
            }),
        })
    }

    fn with_backend<R>(&self, f: impl FnOnce(&dyn ChipBackend) -> Result<R, GpioError>) -> Result<R, GpioError> {
        let b = self.core.backend.read().unwrap_or_else(|e| e.into_inner());
        match b.as_deref() {
            Some(b) if !self.core.removal.is_removing() => f(b),
            _ => Err(self.core.gone_error()),
        }
    }

    /// The chip's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// Name, label and line count.
    pub fn info(&self) -> Result<ChipInfo, GpioError> {
        self.with_backend(|b| b.info())
    }

    /// One line's state: name, consumer, settings.
    pub fn line_info(&self, offset: u32) -> Result<LineInfo, GpioError> {
        self.check_offset(offset)?;
        self.with_backend(|b| b.line_info(offset))
    }

    fn check_offset(&self, offset: u32) -> Result<(), GpioError> {
        if offset >= self.core.lines {
            return Err(GpioError::OffsetOutOfRange { offset, lines: self.core.lines });
        }
        Ok(())
    }

    /// Requests lines, protected against chip removal by wirespeed's guard.
    pub fn request_lines(&self, config: &RequestConfig) -> Result<LineRequest, GpioError> {
        self.request_lines_with::<Revocable>(config)
    }

    /// Requests lines with a chosen sound guard ([`Revocable`] or
    /// [`Interlock`](super::Interlock)); for comparing guards.
    pub fn request_lines_with<G: SoundGuard>(&self, config: &RequestConfig) -> Result<LineRequest<G>, GpioError> {
        self.request_inner::<G>(config)
    }

    /// Requests lines with no removal protection at all.
    ///
    /// # Safety
    /// The chip must not be removed ([`Chip::remove`], or its device going
    /// away) while the returned handle exists: an access racing the removal
    /// would use freed backend state.
    pub unsafe fn request_lines_unguarded(&self, config: &RequestConfig) -> Result<LineRequest<Unguarded>, GpioError> {
        self.request_inner::<Unguarded>(config)
    }

    fn request_inner<G: AccessGuard>(&self, config: &RequestConfig) -> Result<LineRequest<G>, GpioError> {
        config.validate()?;
        for off in config.lines.offsets() {
            self.check_offset(off)?;
        }
        let mut reqs = self.core.lock_requests();
        let backend = self.with_backend(|b| b.request(config))?;
        let signal = backend.event_signal();
        let shared =
            Arc::new(RequestShared { slot: self.core.removal.new_slot(), backend: Guarded::new(backend), signal });
        reqs.push(shared.clone());
        drop(reqs);
        Ok(LineRequest::new(self.core.clone(), shared, config))
    }

    /// Removes the chip (as when its device is unplugged or its driver
    /// unbound): every later access through any handle fails with
    /// [`GpioError::ChipGone`]; returns once the accesses in flight have
    /// ended and the backend state is freed.
    pub fn remove(&self) {
        self.core.remove();
    }

    /// Whether the chip is gone.
    pub fn is_gone(&self) -> bool {
        self.core.removal.is_removing()
    }

    /// For backends: a handle to call when the device disappears.
    pub fn removal_handle(&self) -> RemovalHandle {
        RemovalHandle { core: Arc::downgrade(&self.core) }
    }
}
