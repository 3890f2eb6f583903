//! The lab GPIO chip as a [`ChipBackend`]: [`open`] turns a
//! `wirespeed_lab::gpio::GpioChip` into a stack [`Chip`].
//!
//! The glue keeps what the hardware does not know — which lines are
//! requested and by whom, active-low, logical edges — in one state per lab
//! chip shared by every `open` of it, so a second open sees the first's
//! requests as busy lines. Edge events from the lab land in a per-request
//! queue, stamped with the lab clock; sleeping handles wake on the queue's
//! [`EventSignal`] (a futex), and its eventfd serves whoever polls it.
//! When the lab chip is removed (its backdoor), the glue removes the stack
//! chip first: the lab callback returns only after every in-flight access
//! ended.

use crate::gpio::fd::EventFd;
use crate::gpio::{
    Bias, Chip, ChipBackend, ChipInfo, Direction, Drive, Edge, EdgeEvent, EdgeKind, EventSignal, GpioError, LineConfig,
    LineInfo, LineSettings, RequestBackend, RequestConfig,
};
use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use wirespeed_lab::gpio::{self as lab, GpioChip, LabGpioError, LineEvent, LineSetup, RemoveCallbackId};
use wirespeed_time::now;

/// Opens a lab GPIO chip as a stack [`Chip`].
///
/// The lab chip's removal marks the stack chip removed; dropping the stack
/// chip withdraws that registration, so opening and dropping a chip any
/// number of times leaves nothing behind.
pub fn open(chip: &GpioChip) -> Result<Chip, GpioError> {
    if chip.is_removed() {
        return Err(GpioError::ChipGone { chip: chip.name().to_owned() });
    }
    let glue = glue_for(chip);
    // The registration is made once the stack chip exists (`on_remove` runs
    // the callback at once if the lab chip is gone by then); the chip's
    // backend keeps its id, to withdraw it when dropped.
    let registration = Arc::new(OnceLock::new());
    let c = Chip::from_backend(Box::new(LabChip { chip: chip.clone(), glue, registration: registration.clone() }))?;
    let handle = c.removal_handle();
    let _ = registration.set(chip.on_remove(move || handle.remove()));
    Ok(c)
}

#[derive(Clone, Default)]
struct LineUse {
    consumer: Option<String>,
    settings: LineSettings,
}

/// Software-side state of one lab chip, shared by all its opens.
struct Glue {
    lines: Mutex<Vec<LineUse>>,
}

impl Glue {
    fn lock(&self) -> MutexGuard<'_, Vec<LineUse>> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn glue_for(chip: &GpioChip) -> Arc<Glue> {
    static ALL: OnceLock<Mutex<HashMap<u64, Weak<Glue>>>> = OnceLock::new();
    let mut all = ALL.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|_, w| w.strong_count() > 0);
    if let Some(g) = all.get(&chip.id()).and_then(Weak::upgrade) {
        return g;
    }
    let g = Arc::new(Glue { lines: Mutex::new(vec![LineUse::default(); chip.num_lines() as usize]) });
    all.insert(chip.id(), Arc::downgrade(&g));
    g
}

fn map_err(chip: &GpioChip, e: LabGpioError) -> GpioError {
    match e {
        LabGpioError::Removed => GpioError::ChipGone { chip: chip.name().to_owned() },
        LabGpioError::OffsetOutOfRange { offset, lines } => GpioError::OffsetOutOfRange { offset, lines },
    }
}

/// Hardware setup for logical settings (active-low flips values and edges).
fn to_lab(s: &LineSettings, current: &LineSetup) -> LineSetup {
    let edge = match (s.edge, s.active_low) {
        (Edge::None, _) => lab::EdgeDetect::None,
        (Edge::Both, _) => lab::EdgeDetect::Both,
        (Edge::Rising, false) | (Edge::Falling, true) => lab::EdgeDetect::Rising,
        (Edge::Falling, false) | (Edge::Rising, true) => lab::EdgeDetect::Falling,
    };
    LineSetup {
        output: s.direction == Direction::Output,
        value: s.output_value ^ s.active_low,
        pull: match s.bias {
            Bias::AsIs => current.pull,
            Bias::Disabled => lab::Pull::None,
            Bias::PullUp => lab::Pull::Up,
            Bias::PullDown => lab::Pull::Down,
        },
        drive: match s.drive {
            Drive::PushPull => lab::Drive::PushPull,
            Drive::OpenDrain => lab::Drive::OpenDrain,
            Drive::OpenSource => lab::Drive::OpenSource,
        },
        edge,
        debounce_ns: s.debounce.as_nanos() as u64,
    }
}

struct LabChip {
    chip: GpioChip,
    glue: Arc<Glue>,
    /// The `on_remove` registration that removes the stack chip (set by
    /// [`open`] right after the chip is made).
    registration: Arc<OnceLock<RemoveCallbackId>>,
}

impl Drop for LabChip {
    fn drop(&mut self) {
        if let Some(&id) = self.registration.get() {
            self.chip.forget_on_remove(id);
        }
    }
}

impl ChipBackend for LabChip {
    fn info(&self) -> Result<ChipInfo, GpioError> {
        Ok(ChipInfo {
            name: self.chip.name().to_owned(),
            label: self.chip.label().to_owned(),
            lines: self.chip.num_lines(),
        })
    }

    fn line_info(&self, offset: u32) -> Result<LineInfo, GpioError> {
        let hw = self.chip.setup(offset).map_err(|e| map_err(&self.chip, e))?;
        let lines = self.glue.lock();
        let u = &lines[offset as usize];
        let mut settings = match &u.consumer {
            Some(_) => u.settings,
            None => LineSettings::default(),
        };
        settings.direction = if hw.output { Direction::Output } else { Direction::Input };
        settings.bias = match hw.pull {
            lab::Pull::None => Bias::Disabled,
            lab::Pull::Up => Bias::PullUp,
            lab::Pull::Down => Bias::PullDown,
        };
        Ok(LineInfo {
            offset,
            name: format!("lab{offset}"),
            used: u.consumer.is_some(),
            consumer: u.consumer.clone().unwrap_or_default(),
            settings,
        })
    }

    fn request(&self, config: &RequestConfig) -> Result<Box<dyn RequestBackend>, GpioError> {
        let mut lines = self.glue.lock();
        for off in config.lines.offsets() {
            if let Some(c) = &lines[off as usize].consumer {
                return Err(GpioError::LineBusy { offset: off, consumer: c.clone() });
            }
        }
        let offsets: Vec<u32> = config.lines.offsets().collect();
        let queue = Arc::new(EventQueue::new(config.effective_event_buffer(), offsets.len())?);
        let req = LabRequest {
            chip: self.chip.clone(),
            glue: self.glue.clone(),
            offsets,
            active_low: Arc::new(AtomicU64::new(0)),
            outputs: AtomicU64::new(0),
            queue,
        };
        if let Err(e) = req.apply(&config.lines, &mut lines) {
            // Dropping `req` releases its lines, which takes the glue's lock.
            drop(lines);
            return Err(e);
        }
        for (off, _) in config.lines.lines() {
            lines[*off as usize].consumer = Some(config.consumer.clone());
        }
        drop(lines);
        for (i, &off) in req.offsets.iter().enumerate() {
            let q = Arc::downgrade(&req.queue);
            let al = req.active_low.clone();
            let listener = move |e: LineEvent| {
                if let Some(q) = q.upgrade() {
                    let logical_rising = e.rising ^ (al.load(Ordering::Relaxed) & (1 << i) != 0);
                    q.push(i, e.offset, logical_rising, e);
                }
            };
            self.chip.set_listener(off, Some(Arc::new(listener))).map_err(|e| map_err(&self.chip, e))?;
        }
        Ok(Box::new(req))
    }
}

struct Queue {
    events: VecDeque<EdgeEvent>,
    seqno: u32,
    line_seqno: Vec<u32>,
    /// Someone asked for the descriptor: keep it readable while events wait.
    fd_in_use: bool,
    /// The descriptor was signalled and not drained since.
    fd_readable: bool,
}

/// Edge events of one request. Sleeping handles wait on `signal` (a futex);
/// the eventfd is kept readable while events wait only once someone asked
/// for it (`event_fd`), so the usual wait costs no descriptor system call.
struct EventQueue {
    q: Mutex<Queue>,
    cap: usize,
    fd: EventFd,
    signal: Arc<EventSignal>,
}

impl EventQueue {
    fn new(cap: usize, lines: usize) -> Result<EventQueue, GpioError> {
        Ok(EventQueue {
            q: Mutex::new(Queue {
                events: VecDeque::with_capacity(cap),
                seqno: 0,
                line_seqno: vec![0; lines],
                fd_in_use: false,
                fd_readable: false,
            }),
            cap: cap.max(1),
            fd: EventFd::new()?,
            signal: Arc::new(EventSignal::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, index: usize, offset: u32, rising: bool, e: LineEvent) {
        let mut q = self.lock();
        q.seqno = q.seqno.wrapping_add(1);
        q.line_seqno[index] = q.line_seqno[index].wrapping_add(1);
        if q.events.len() == self.cap {
            q.events.pop_front(); // Full: the oldest goes, as in the kernel; seqno shows the gap.
        }
        let ev = EdgeEvent {
            offset,
            kind: if rising { EdgeKind::Rising } else { EdgeKind::Falling },
            timestamp: e.at,
            seqno: q.seqno,
            line_seqno: q.line_seqno[index],
        };
        q.events.push_back(ev);
        self.make_fd_readable(&mut q);
        drop(q);
        self.signal.notify();
    }

    fn make_fd_readable(&self, q: &mut Queue) {
        if q.fd_in_use && !q.fd_readable && !q.events.is_empty() {
            self.fd.signal();
            q.fd_readable = true;
        }
    }
}

struct LabRequest {
    chip: GpioChip,
    glue: Arc<Glue>,
    offsets: Vec<u32>,
    active_low: Arc<AtomicU64>,
    outputs: AtomicU64,
    queue: Arc<EventQueue>,
}

impl LabRequest {
    /// Programs the hardware for `config` (offsets in request order).
    fn apply(&self, config: &LineConfig, lines: &mut [LineUse]) -> Result<(), GpioError> {
        let (mut al, mut out) = (0u64, 0u64);
        let at = now();
        for (i, (off, s)) in config.lines().iter().enumerate() {
            let current = self.chip.setup(*off).map_err(|e| map_err(&self.chip, e))?;
            self.chip.configure(*off, &to_lab(s, &current), at).map_err(|e| map_err(&self.chip, e))?;
            lines[*off as usize].settings = *s;
            al |= u64::from(s.active_low) << i;
            out |= u64::from(s.direction == Direction::Output) << i;
        }
        self.active_low.store(al, Ordering::Relaxed);
        self.outputs.store(out, Ordering::Relaxed);
        Ok(())
    }
}

impl RequestBackend for LabRequest {
    #[inline]
    fn get_values(&self, mask: u64) -> Result<u64, GpioError> {
        let al = self.active_low.load(Ordering::Relaxed);
        let mut bits = 0;
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            m &= m - 1;
            let v = self.chip.value(self.offsets[i as usize]).map_err(|e| map_err(&self.chip, e))?;
            bits |= u64::from(v ^ (al >> i & 1 != 0)) << i;
        }
        Ok(bits)
    }

    #[inline]
    fn set_values(&self, mask: u64, bits: u64) -> Result<(), GpioError> {
        let not_out = mask & !self.outputs.load(Ordering::Relaxed);
        if not_out != 0 {
            let offset = self.offsets[not_out.trailing_zeros() as usize];
            return Err(GpioError::WrongDirection { offset, needs: "an output" });
        }
        let phys = bits ^ self.active_low.load(Ordering::Relaxed);
        let mut m = mask;
        while m != 0 {
            let i = m.trailing_zeros();
            m &= m - 1;
            self.chip.set_output(self.offsets[i as usize], phys >> i & 1 != 0).map_err(|e| map_err(&self.chip, e))?;
        }
        Ok(())
    }

    fn reconfigure(&self, config: &LineConfig) -> Result<(), GpioError> {
        let mut lines = self.glue.lock();
        self.apply(config, &mut lines)
    }

    fn event_fd(&self) -> RawFd {
        let mut q = self.queue.lock();
        q.fd_in_use = true;
        self.queue.make_fd_readable(&mut q);
        self.queue.fd.raw()
    }

    fn event_signal(&self) -> Option<Arc<EventSignal>> {
        Some(self.queue.signal.clone())
    }

    fn read_events(&self, out: &mut [EdgeEvent]) -> Result<usize, GpioError> {
        let mut q = self.queue.lock();
        let mut n = 0;
        while n < out.len() {
            match q.events.pop_front() {
                Some(e) => {
                    out[n] = e;
                    n += 1;
                }
                None => break,
            }
        }
        if q.events.is_empty() && q.fd_readable {
            self.queue.fd.drain();
            q.fd_readable = false;
        }
        Ok(n)
    }
}

impl Drop for LabRequest {
    fn drop(&mut self) {
        let mut lines = self.glue.lock();
        for &off in &self.offsets {
            let _ = self.chip.set_listener(off, None);
            lines[off as usize] = LineUse::default();
        }
    }
}
